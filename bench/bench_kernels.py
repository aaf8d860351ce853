"""Kernel benchmark: nanoseconds per constraint update of the position-based sweeps, against a memory copy.

On the 64 x 64 lab cloth (``bench_cloth``'s scene: 10 m square, two corners pinned, quad edges, stiffness
1e4 N/m), in the state it reaches after a few frames of the add-on's default XPBD (so tethers have work to do),
each kernel runs on its own, many times, and reports the best time per update:

- ``XPBD GS sweep`` / ``PBD GS sweep``: one Gauss-Seidel sweep over all distance constraints (every colour,
  then the tail of tiny colours, if any); one update = one distance constraint projected once;
- ``XPBD Jacobi sweep``: one Jacobi sweep (all constraints from the same positions, then scattered);
- ``bending ...``: one Gauss-Seidel sweep over the isometric bending hinges (``constraints/bending.py``, the
  add-on's default bending_stiffness 1e-3 N m, always compliant) three ways: ``batch by batch`` (the plain
  ``corrections`` per colour, gathering and scattering (m, 4, 3) corners), ``sparse products, A @ x`` (two SciPy
  sparse products per colour through ``@``) and ``sparse products, direct`` (``BendingColourSweep``: the same
  products through SciPy's CSR kernel called directly, skipping ``@``'s Python dispatch, what the solvers run); one
  update = one hinge projected once. (A colour-ordered structure-of-arrays kernel like the distance one measured
  1.2-1.6x slower than the sparse products: a hinge colour holds at most n / 4 hinges, so each of ~12 colours
  reorders all 3 n coordinates for little arithmetic.)
- ``face push``: one ``resolve_face_contacts`` call (its cull and its passes, ``solvers/collision/response/faces.py``)
  against the lab's sphere, on the snapshot (the cloth lies on it); one update = one triangle the cull keeps.
- ``pin tethers``: one pass of ``PinTethers.apply`` (one update = one particle-to-pin tether checked, and
  projected when it is past its limit).

Memory reference: ``copy`` is ``np.copyto`` of as many bytes as the kernel must at least move per update
(``BYTES_PER_UPDATE``: the indices and positions it reads, the positions it writes, its per-constraint
constants and multipliers), so ``copy ns / kernel ns`` is the fraction of this machine's memory speed the
kernel reaches. Large-copy bandwidth (64 MB, out of cache) is printed for reference.

Run: ``python bench/bench_kernels.py [--n 64] [--diagonals]``.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver  # noqa: E402
from solvers.collision.response.faces import FACE_PASSES, _candidates, resolve_face_contacts  # noqa: E402

WIDTH, HEIGHT, SPHERE_RADIUS, GROUND_Z, FPS = 10.0, 3.0, 2.7, -3.0, 24
WARM_FRAMES = 12  # half a second of the default XPBD before the snapshot: the cloth drapes, tethers engage
BYTES_PER_UPDATE = {
    # 2 int64 indices + 2 positions read + 2 written (3 float64 each) + rest length, 1/(w_i+w_j+alpha), w_i, w_j
    # + lambda read and written
    "distance": 2 * 8 + 2 * 24 + 2 * 24 + 4 * 8 + 2 * 8,
    # particle and pin index + limit + 2 positions read (writes are rare: only tethers past their limit)
    "tether": 2 * 8 + 8 + 2 * 24,
    # 4 int64 indices + 4 positions read + 4 written + K (4) and w K (4) + 1/(s+alpha), alpha, r0
    # + lambda (3) read and written
    "bending": 4 * 8 + 4 * 24 + 4 * 24 + 8 * 8 + 3 * 8 + 2 * 24,
    # per pass: 3 int64 indices + 3 positions read + 3 inverse masses; once: 3 positions written
    "face": FACE_PASSES * (3 * 8 + 3 * 24 + 3 * 8) + 3 * 24,
}


def lab_scene(n: int, diagonals: bool):
    vertices, edges, triangles = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=diagonals)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    colliders = [Sphere(np.zeros(3), SPHERE_RADIUS), GroundPlane(np.array([0.0, 0.0, GROUND_Z]), np.array([0.0, 0.0, 1.0]))]
    return model, colliders


def snapshot(model, colliders, frames: int = WARM_FRAMES) -> np.ndarray:
    """Positions after ``frames`` frames of the add-on's default XPBD (30 substeps x 1, tethers at 1%)."""
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01)
    solver = make_solver(model, config)
    state = State.at_rest(model)
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / FPS, config.substeps, colliders)
    return state.x.copy()


def sweep_once(solver, sweep, x, dt, lams):
    """One sweep of one constraint set, as ``PositionBasedSolver.step`` runs it in an iteration."""
    if getattr(sweep, "fast", None) is not None:
        sweep.fast.sweep(x, dt, lams, solver.compliant)
    else:
        solver._gauss_seidel(sweep.batches, x, dt, lams)
    if sweep.tail is not None:
        lab_average = not solver.compliant and solver.scheme == "JACOBI"
        solver._jacobi(sweep.tail, x, dt, lams[-1], lab_average)


def best_seconds(job, reset, repeats: int = 15, inner: int = 20) -> float:
    """Best over ``repeats`` of the mean time of ``inner`` calls of job(), each after reset() (reset's time,
    measured the same way, is subtracted)."""
    def timed(fn):
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            best = min(best, (time.perf_counter() - start) / inner)
        return best

    both = timed(lambda: (reset(), job()))
    alone = timed(reset)
    return max(both - alone, 0.0)


def copy_seconds(nbytes: int) -> float:
    src = np.ones(max(nbytes // 8, 1))
    dst = np.empty_like(src)
    return best_seconds(lambda: np.copyto(dst, src), lambda: None)


def run(n: int = 64, diagonals: bool = False, verbose: bool = True) -> list:
    model, colliders = lab_scene(n, diagonals)
    x0 = snapshot(model, colliders)
    dt = 1.0 / FPS / 30
    rows = []
    x = x0.copy()

    def reset():
        np.copyto(x, x0)

    for label, solver_name, scheme in (("XPBD GS sweep", "XPBD", "GAUSS_SEIDEL"), ("PBD GS sweep", "PBD", "GAUSS_SEIDEL"),
                                       ("XPBD Jacobi sweep", "XPBD", "JACOBI")):
        config = SolverConfig(solver=solver_name, constraint_scheme=scheme, stiffness=1.0e4, substeps=30, iterations=1)
        solver = make_solver(model, config)
        sweep = solver.sweeps[0]
        updates = len(model.edge_indices)
        lams = sweep.new_multipliers()
        seconds = best_seconds(lambda solver=solver, sweep=sweep, lams=lams: sweep_once(solver, sweep, x, dt, lams), reset)
        batches = len(sweep.batches) + (sweep.tail is not None)
        rows.append(dict(kernel=label, updates=updates, batches=batches, seconds=seconds, kind="distance"))

    rows += bending_rows(model, x, dt, reset)
    rows += face_rows(model, colliders, x, x0, reset)

    config = SolverConfig(solver="XPBD", stiffness=1.0e4, substeps=30, iterations=1, tether_stretch=0.01)
    tethers = make_solver(model, config).tethers
    updates = sum(len(slot[0]) for slot in tethers.slots)
    reset()
    tethers.apply(x, passes=1)
    moved = int(np.count_nonzero(np.any(x != x0, axis=1)))
    seconds = best_seconds(lambda: tethers.apply(x, passes=1), reset)
    rows.append(dict(kernel=f"pin tethers ({moved} of {updates} past their limit)", updates=updates,
                     batches=len(tethers.slots), seconds=seconds, kind="tether"))

    for row in rows:
        nbytes = BYTES_PER_UPDATE[row["kind"]] * row["updates"]
        row["ns_per_update"] = 1e9 * row["seconds"] / row["updates"]
        row["copy_ns_per_update"] = 1e9 * copy_seconds(nbytes) / row["updates"]
        row["fraction_of_copy"] = row["copy_ns_per_update"] / row["ns_per_update"]
        if verbose:
            print(f"  {row['kernel']:44s} {row['ns_per_update']:7.1f} ns/update", file=sys.stderr, flush=True)
    return rows


def bending_rows(model, x, dt, reset, stiffness: float = 1.0e-3) -> list:
    """The bending sweep two ways (see the module docstring) on the same colours and state."""
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, substeps=30, iterations=1, bending_stiffness=stiffness)
    solver = make_solver(model, config)
    sweep = next(s for s in solver.sweeps if getattr(s.batches[0] if s.batches else None, "multiplier_shape", ()) == (3,))
    bending = sweep.batches
    full = bending[0].__class__(np.concatenate([b.indices for b in bending]), np.concatenate([b.K for b in bending]),
                                np.concatenate([b.compliance for b in bending]),
                                np.concatenate([b.rest_norm for b in bending]), model.inv_mass)
    bounds = np.cumsum([0] + [len(b) for b in bending])
    colours = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    updates = int(bounds[-1])
    lams = [np.zeros((len(b), 3)) for b in bending]

    def batch_by_batch():
        solver._gauss_seidel(bending, x, dt, lams)

    fast = full.colour_sweep(colours, len(x))
    rows = []
    for label, job in (("bending batch by batch", batch_by_batch),
                       ("bending sparse products, A @ x", lambda: fast._sparse_sweep(x, dt, lams)),
                       ("bending sparse products, direct (solvers)", lambda: fast.sweep(x, dt, lams, True))):
        rows.append(dict(kernel=label, updates=updates, batches=len(colours), seconds=best_seconds(job, reset),
                         kind="bending"))
    return rows


def face_rows(model, colliders, x, x0, reset) -> list:
    """One face push against the sphere on the snapshot (see the module docstring)."""
    sphere = [c for c in colliders if isinstance(c, Sphere)]
    triangles = model.triangle_indices
    updates = max(len(_candidates(x0, triangles, sphere[0].center, sphere[0].radius + sphere[0].thickness)), 1)
    seconds = best_seconds(lambda: resolve_face_contacts(x, x0, model.inv_mass, triangles, sphere), reset)
    return [dict(kernel=f"face push ({FACE_PASSES} passes at most)", updates=updates, batches=FACE_PASSES,
                 seconds=seconds, kind="face")]


def bandwidth_gb_s(nbytes: int = 64 << 20) -> float:
    """Out-of-cache copy bandwidth [GB/s], counting bytes read plus bytes written."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    return 2 * nbytes / 1e9 / best_seconds(lambda: np.copyto(dst, src), lambda: None, repeats=5, inner=3)


def markdown(rows: list) -> str:
    lines = [
        "| kernel | updates | batches | us per sweep | ns/update | copy ns/update | % of copy speed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['updates']} | {r['batches']} | {1e6 * r['seconds']:.1f} | "
                     f"{r['ns_per_update']:.1f} | {r['copy_ns_per_update']:.2f} | {100 * r['fraction_of_copy']:.0f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="grid resolution (n x n vertices)")
    parser.add_argument("--diagonals", action="store_true", help="add each quad's diagonal as an edge")
    args = parser.parse_args(argv)
    rows = run(args.n, args.diagonals)
    edges = "quad edges and diagonals" if args.diagonals else "quad edges"
    print(f"Lab cloth {args.n}x{args.n}, {edges}, after {WARM_FRAMES} frames of default XPBD; "
          f"large-copy bandwidth {bandwidth_gb_s():.1f} GB/s (read + write).\n")
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
