"""Point placement for the tetrahedralizer: the BCC interior lattice and surface Steiner points."""
import numpy as np
from scipy.spatial import cKDTree

_NEAR = 0.5
"""Lattice points closer than _NEAR * h to the surface are not interior points (they would make slivers)."""
_KEEP = 0.6
"""Surface Steiner points keep _KEEP * h away from input vertices and from each other."""
_SAMPLE = 0.25
"""Surface sample spacing (for distances and snapping) as a fraction of h."""


def _bcc_lattice(lo, hi, h):
    """BCC lattice covering the box [lo, hi] (3,) with one cell of margin: cube corners and centres, (p, 3)."""
    centre = 0.5 * (lo + hi)
    half = np.ceil(0.5 * (hi - lo) / h).astype(int) + 1
    axes = [centre[i] + h * np.arange(-half[i], half[i] + 1) for i in range(3)]
    corners = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    mids = np.stack(np.meshgrid(*[ax[:-1] + 0.5 * h for ax in axes], indexing="ij"), -1).reshape(-1, 3)
    return np.concatenate([corners, mids])


def _surface_samples(v, f, used, spacing):
    """Points on the surface no farther than about ``spacing`` apart: the vertices plus, on triangles
    longer than that, a barycentric grid. Shape (s, 3). Triangles are grouped by grid level."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    longest = np.sqrt(np.max([np.sum((b - a) ** 2, 1), np.sum((c - b) ** 2, 1), np.sum((a - c) ** 2, 1)], axis=0))
    level = np.ceil(longest / spacing).astype(np.int64)
    out = [v[used]]
    for n in np.unique(level[level >= 2]):
        sel = level == n
        i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        keep = i + j <= n
        wb, wc = i[keep] / n, j[keep] / n
        wa = 1.0 - wb - wc
        pts = wa[None, :, None] * a[sel, None] + wb[None, :, None] * b[sel, None] + wc[None, :, None] * c[sel, None]
        out.append(pts.reshape(-1, 3))
    return np.concatenate(out)


def _edge_samples(v, f, h):
    """Points splitting surface edges longer than 1.5 h into pieces of about h, shape (s, 3)."""
    e = np.unique(np.sort(f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1), axis=0)
    length = np.linalg.norm(v[e[:, 1]] - v[e[:, 0]], axis=1)
    pieces = np.rint(length / h).astype(np.int64)
    long = pieces >= 2
    if not long.any():
        return np.zeros((0, 3))
    e, pieces = e[long], pieces[long]
    inner = pieces - 1
    edge = np.repeat(np.arange(len(e)), inner)
    k = np.arange(inner.sum()) - np.repeat(np.cumsum(inner) - inner, inner) + 1
    t = (k / pieces[edge])[:, None]
    return (1.0 - t) * v[e[edge, 0]] + t * v[e[edge, 1]]


def _thin(points, radius):
    """Mask of a subset of points (p, 3) at least ``radius`` apart, earlier points winning.

    A maximal independent set of the "closer than radius" graph, found in rounds: a point is kept when
    no undecided neighbour has a lower index, and then its neighbours are dropped.
    """
    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    state = np.zeros(len(points), np.int8)  # 0 undecided, 1 kept, -1 dropped
    while len(pairs):
        i, j = pairs[:, 0], pairs[:, 1]  # i < j
        blocked = np.zeros(len(points), bool)
        blocked[j] = True  # j has an undecided neighbour of lower index
        winner = (state == 0) & ~blocked
        state[winner] = 1
        lose = np.concatenate([j[winner[i]], i[winner[j]]])
        state[lose] = -1
        live = (state[i] == 0) & (state[j] == 0)
        pairs = pairs[live]
    return state >= 0
