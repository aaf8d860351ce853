"""Benchmark: solvers.geometry.tetrahedralize against TetGen (PyPI ``tetgen``, a bench-only peer) on icospheres.

Run ``python bench/bench_tetrahedralize.py``; a bench runner calls ``run()`` for the rows.
Coverage = total tet volume / volume enclosed by the surface; quality = 6*sqrt(2)*V / l_rms^3 (1 = regular).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from solvers.geometry import mesh_volume, tet_quality, tetrahedralize  # noqa: E402
from solvers.model import tet_volumes  # noqa: E402

SIZES = (1000, 10000, 50000)
"""Target triangle counts; the geodesic sphere of frequency k has 20 k^2 triangles."""


def icosphere(frequency: int, radius: float = 1.0):
    """Geodesic sphere: every icosahedron face split into frequency^2 triangles, projected onto the
    sphere. Returns (vertices (n, 3), triangles (20 frequency^2, 3)), outward oriented."""
    g = (1.0 + 5.0**0.5) / 2.0
    ico_v = np.array(
        [[-1, g, 0], [1, g, 0], [-1, -g, 0], [1, -g, 0], [0, -1, g], [0, 1, g],
         [0, -1, -g], [0, 1, -g], [g, 0, -1], [g, 0, 1], [-g, 0, -1], [-g, 0, 1]], float)
    ico_f = np.array(
        [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2],
         [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5],
         [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]])
    k = frequency
    i, j = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
    ok = i + j <= k
    i, j = i[ok], j[ok]
    local = -np.ones((k + 1, k + 1), np.int64)
    local[i, j] = np.arange(len(i))
    a, b, c = ico_v[ico_f[:, 0]], ico_v[ico_f[:, 1]], ico_v[ico_f[:, 2]]
    wb, wc = (i / k)[None, :, None], (j / k)[None, :, None]
    pts = ((1 - wb - wc) * a[:, None] + wb * b[:, None] + wc * c[:, None]).reshape(-1, 3)
    # Small triangles of one face's grid: "up" (i,j),(i+1,j),(i,j+1) and "down" (i+1,j),(i+1,j+1),(i,j+1).
    ui, uj = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    up = ui + uj <= k - 1
    down = ui + uj <= k - 2
    tris = [np.stack([local[ui[up], uj[up]], local[ui[up] + 1, uj[up]], local[ui[up], uj[up] + 1]], 1),
            np.stack([local[ui[down] + 1, uj[down]], local[ui[down] + 1, uj[down] + 1],
                      local[ui[down], uj[down] + 1]], 1)]
    tris = np.concatenate(tris)
    faces = (tris[None] + (np.arange(20) * len(i))[:, None, None]).reshape(-1, 3)
    # Merge the vertices shared by neighbouring icosahedron faces.
    key = np.round(pts * 1e9).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    v = pts[first]
    v *= radius / np.linalg.norm(v, axis=1, keepdims=True)
    return v, inverse.reshape(-1)[faces]


def _tetgen(v, f):
    """(seconds, tets, coverage, worst quality) of TetGen, or None when the package is missing."""
    try:
        import tetgen
    except ImportError:
        return None
    t0 = time.perf_counter()
    nodes, elems = tetgen.TetGen(v, f.astype(np.int32)).tetrahedralize(
        order=1, mindihedral=10.0, minratio=1.5, quiet=True)[:2]
    seconds = time.perf_counter() - t0
    elems = np.asarray(elems, np.int64)
    vol = np.abs(tet_volumes(nodes, elems))
    return seconds, len(elems), vol.sum() / mesh_volume(v, f), float(tet_quality(nodes, elems).min())


def run(sizes=SIZES, resolution: int = 10) -> list:
    """One dict per mesh: triangles, ours (seconds, tets, coverage %, worst quality), tetgen's (nan if absent)."""
    rows = []
    for target in sizes:
        v, f = icosphere(max(1, int(round((target / 20) ** 0.5))))
        t0 = time.perf_counter()
        tm = tetrahedralize(v, f, resolution=resolution)
        ours = time.perf_counter() - t0
        row = {
            "triangles": len(f),
            "ours_s": ours,
            "ours_tets": len(tm.tets),
            "ours_coverage_pct": 100.0 * tm.coverage,
            "ours_worst_quality": tm.worst_quality,
            # nan (not None) when tetgen is missing, so table writers print "-".
            "tetgen_s": float("nan"),
            "tetgen_tets": float("nan"),
            "tetgen_coverage_pct": float("nan"),
            "tetgen_worst_quality": float("nan"),
        }
        peer = _tetgen(v, f)
        if peer is not None:
            row.update(tetgen_s=peer[0], tetgen_tets=peer[1], tetgen_coverage_pct=100.0 * peer[2],
                       tetgen_worst_quality=peer[3])
        rows.append(row)
    return rows


def main():
    rows = run()
    head = ("triangles", "ours s", "ours tets", "ours cov %", "ours worst q", "tetgen s", "tetgen tets",
            "tetgen cov %", "tetgen worst q")
    print(" | ".join(f"{h:>12s}" for h in head))

    def cell(x, fmt):
        return f"{'-':>12s}" if x is None or x != x else format(x, fmt).rjust(12)

    for r in rows:
        print(" | ".join([
            cell(r["triangles"], "d"), cell(r["ours_s"], ".3f"), cell(r["ours_tets"], "d"),
            cell(r["ours_coverage_pct"], ".3f"), cell(r["ours_worst_quality"], ".4f"), cell(r["tetgen_s"], ".3f"),
            cell(r["tetgen_tets"], "d"), cell(r["tetgen_coverage_pct"], ".3f"), cell(r["tetgen_worst_quality"], ".4f"),
        ]))
    if rows and rows[0]["tetgen_s"] != rows[0]["tetgen_s"]:
        print("(tetgen not installed: pip install -r requirements-bench.txt)")


if __name__ == "__main__":
    main()
