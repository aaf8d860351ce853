"""The pair geometry and k-d tree joins of cloth self-collision: what the Verlet lists (``self_broad_phase``), the
response (``self_contact``), the fail-safe (``impact_zones``) and NEWTON's self barrier (``self_barrier``) share.

- bounding spheres and exact vertex-triangle and edge-edge distances of element pairs (``_vt_distance``,
  ``_ee_distance``) and their contact stencils (``_Stencils``);
- ``cKDTree`` joins of elements in classes of size (``_self_join``, ``_join_points``, ``_join``);
- axis-aligned box tests, one axis at a time (``_overlapping``), and pair keys and sets (``_pair_keys``, ``_drop``).
"""
import numpy as np
from scipy.spatial import cKDTree

from ..narrow_phase.primitives import _cross, closest_points_segments, point_triangle_closest

LONG_FACTOR = 1.5
"""``_join`` (NEWTON's self barrier): elements larger than this times the median size are joined on their own."""
CLASS_GROWTH = 1.25
"""The broad phase's joins take elements in classes of size (sphere radius with the skin), each this many times
larger than the last from the median up (``_classes``)."""

def _unit_normals(a, b, c):
    """Unit normals (k, 3) of triangles (a, b, c) and a mask (k,) of the non-degenerate ones."""
    n = np.cross(b - a, c - a)
    length = np.sqrt(np.einsum("ij,ij->i", n, n))
    ok = length > 1e-20
    return n / np.where(ok, length, 1.0)[:, None], ok


def _bounding_spheres(x, triangles):
    """Centroids (t, 3) and radii (t,) (largest centroid-to-corner distance) of the triangles at x."""
    a, b, c = x[triangles[:, 0]], x[triangles[:, 1]], x[triangles[:, 2]]
    centroid = (a + b + c) / 3.0
    r2 = np.maximum(np.maximum(np.einsum("ij,ij->i", a - centroid, a - centroid),
                               np.einsum("ij,ij->i", b - centroid, b - centroid)),
                    np.einsum("ij,ij->i", c - centroid, c - centroid))
    return centroid, np.sqrt(r2)


def _vt_distance(x, v, tri):
    """Exact distances (k,) of the vertices v (k,) to the triangles tri (k, 3) at x."""
    if len(v) == 0:
        return np.zeros(0)
    p, a, b, c = x[v], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
    bary, _ = point_triangle_closest(p, a, b, c)
    r = p - bary[:, :1] * a - bary[:, 1:2] * b - bary[:, 2:] * c
    return np.sqrt(np.einsum("ij,ij->i", r, r))


def _ee_distance(x, A, B):
    """Exact distances (k,) of the segments A (k, 2) and B (k, 2) at x."""
    if len(A) == 0:
        return np.zeros(0)
    p1, q1, p2, q2 = x[A[:, 0]], x[A[:, 1]], x[B[:, 0]], x[B[:, 1]]
    s, t, _ = closest_points_segments(p1, q1, p2, q2)
    r = p1 + s[:, None] * (q1 - p1) - p2 - t[:, None] * (q2 - p2)
    return np.sqrt(np.einsum("ij,ij->i", r, r))


def _join(centre, radius, points, reach, long):
    """Pairs (i, j) of spheres (centre (k, 3), radius (k,)) with points (m, 3) (or, points None, with each other:
    i < j) within ``reach`` of each other: |centre_i - point_j| <= reach + radius_i (+ radius_j among spheres).

    k-d tree joins; spheres with a radius above ``long`` are joined on their own, so a few long elements do not
    widen the query of all the others."""
    def tree(p):
        return cKDTree(p, balanced_tree=False, compact_nodes=False)

    short = radius <= long
    out_i, out_j = [], []
    s_idx, l_idx = np.nonzero(short)[0], np.nonzero(~short)[0]
    if points is None:
        target = tree(centre)
        if len(s_idx):
            r_s = float(radius[s_idx].max())
            found = tree(centre[s_idx]).query_pairs(reach + 2.0 * r_s * (1.0 + 1e-9), output_type="ndarray")
            out_i.append(s_idx[found[:, 0]]), out_j.append(s_idx[found[:, 1]])
        if len(l_idx):
            found = tree(centre[l_idx]).sparse_distance_matrix(
                target, reach + (float(radius[l_idx].max()) + float(radius.max())) * (1.0 + 1e-9), output_type="ndarray")
            i, j = l_idx[found["i"]], found["j"].astype(np.int64)
            keep = short[j] | (i < j)  # long-long pairs once
            out_i.append(i[keep]), out_j.append(j[keep])
    else:
        target = tree(points)
        for group in (s_idx, l_idx):
            if len(group):
                found = tree(centre[group]).sparse_distance_matrix(
                    target, reach + float(radius[group].max()) * (1.0 + 1e-9), output_type="ndarray")
                out_i.append(group[found["i"]]), out_j.append(found["j"].astype(np.int64))
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i, j = np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)
    d = centre[i] - (centre[j] if points is None else points[j])
    limit = reach + radius[i] + (radius[j] if points is None else 0.0)
    keep = np.einsum("ij,ij->i", d, d) <= limit * limit
    i, j = i[keep], j[keep]
    if points is None:
        i, j = np.minimum(i, j), np.maximum(i, j)
        keep = i != j
        i, j = i[keep], j[keep]
    return i, j


def _classes(radius):
    """Index groups of ``radius`` (k,) by size: up to the median, then each CLASS_GROWTH times larger (empty ones
    left out)."""
    if len(radius) == 0:
        return []
    start = float(np.median(radius))
    bounds = [start if start > 0.0 else float(radius.max())]
    while 0.0 < bounds[-1] < radius.max():
        bounds.append(CLASS_GROWTH * bounds[-1])
    which = np.searchsorted(np.array(bounds), radius)
    return [g for g in (np.nonzero(which == k)[0] for k in range(len(bounds))) if len(g)]


def _tree(p):
    return cKDTree(p, balanced_tree=False, compact_nodes=False)


def _self_join(centre, radius, reach):
    """Pairs (i, j), i < j, of spheres (centre (k, 3), radius (k,)) within ``reach`` of each other:
    |centre_i - centre_j| <= reach + radius_i + radius_j.

    As ``_join`` among spheres, with the spheres in classes of radius (``_classes``): each pair of classes is joined
    within reach + the two classes' largest radii, so large elements (stretched, or fast ones carrying a large skin)
    widen only their own queries. Joins between classes return the distances, so their exact sphere test needs no
    positions. Measured on the 64 x 64 lab cloth's edges (both splits): 1.5-1.9x faster than two classes split at
    1.5 x the median."""
    groups = _classes(radius)
    trees = [_tree(centre[g]) for g in groups]
    top = [float(radius[g].max()) for g in groups]
    out_i, out_j = [], []
    for a, (group_a, tree_a) in enumerate(zip(groups, trees)):
        if a == 0:
            found = tree_a.query_pairs((reach + 2.0 * top[0]) * (1.0 + 1e-9), output_type="ndarray")
            i, j = group_a[found[:, 0]], group_a[found[:, 1]]
            d = centre[i] - centre[j]
            limit = reach + radius[i] + radius[j]
            keep = np.einsum("ij,ij->i", d, d) <= limit * limit
            out_i.append(i[keep]), out_j.append(j[keep])
        for b in range(max(a, 1), len(groups)):
            found = tree_a.sparse_distance_matrix(trees[b], (reach + top[a] + top[b]) * (1.0 + 1e-9), output_type="ndarray")
            i, j = group_a[found["i"]], groups[b][found["j"]]
            keep = found["v"] <= (reach + radius[i] + radius[j]) * (1.0 + 1e-12)
            if a == b:
                keep &= i < j
            out_i.append(i[keep]), out_j.append(j[keep])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i, j = np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)
    return np.minimum(i, j), np.maximum(i, j)


def _join_points(centre, radius, points, point_radius, reach):
    """Pairs (i, j) of spheres (centre (k, 3), radius (k,)) and points (m, 3) with their own radii (m,) that overlap
    within ``reach``: |centre_i - point_j| <= reach + radius_i + point_radius_j.

    k-d tree joins of each class of spheres with each class of points (``_classes``), each within reach + the two
    classes' largest radii: a few large elements (stretched, or fast ones carrying a large skin) do not widen the
    queries of all the others. The joins return the distances, so the exact sphere test needs no positions."""
    out_i, out_j = [], []
    groups_b = _classes(point_radius)
    trees_b = [_tree(points[g]) for g in groups_b]
    for group_a in _classes(radius):
        tree_a = _tree(centre[group_a])
        for group_b, tree_b in zip(groups_b, trees_b):
            bound = reach + float(radius[group_a].max()) + float(point_radius[group_b].max())
            found = tree_a.sparse_distance_matrix(tree_b, bound * (1.0 + 1e-9), output_type="ndarray")
            i, j = group_a[found["i"]], group_b[found["j"]]
            keep = found["v"] <= (reach + radius[i] + point_radius[j]) * (1.0 + 1e-12)
            out_i.append(i[keep]), out_j.append(j[keep])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)


def _row_max(values, index):
    """Largest of ``values`` (n,) over each row of ``index`` (k, m), shape (k,): a loop over the few columns (numpy's
    reduction along a short last axis, values[index].max(axis=1), is about ten times slower)."""
    out = values[index[:, 0]]
    for j in range(1, index.shape[1]):
        np.maximum(out, values[index[:, j]], out=out)
    return out


def _overlapping(lo_a, hi_a, ia, lo_b, hi_b, ib, reach=0.0):
    """Positions (j,) in ``ia``/``ib`` (k,) of the pairs of boxes (box ia[j] of (lo_a, hi_a), box ib[j] of (lo_b, hi_b),
    each (3, m) per axis) that are within ``reach`` (k,) or a scalar [m] of each other on every axis: a necessary
    condition for any two points of the boxes to be within reach. One axis at a time on the pairs the previous axes
    kept (about ten times faster than testing all three axes of every pair)."""
    keep = np.arange(len(ia))
    # A hair of slack, so that round-off never drops a pair the exact distance test would keep.
    reach = np.broadcast_to(np.asarray(reach, float) * (1.0 + 1e-9) + 1e-12, (len(ia),))
    for axis in range(3):
        la, ha, lb, hb = lo_a[axis], hi_a[axis], lo_b[axis], hi_b[axis]
        close = (la[ia] <= hb[ib] + reach) & (lb[ib] <= ha[ia] + reach)
        keep, ia, ib, reach = keep[close], ia[close], ib[close], reach[close]
    return keep


def _csr_rows(start, keys):
    """Every entry of the CSR rows ``keys`` (k,) of an index with row starts ``start``: (rows, entries), rows[i] the
    position in ``keys`` whose row holds flat entry entries[i]."""
    degree = start[keys + 1] - start[keys]
    rows = np.repeat(np.arange(len(keys)), degree)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(degree) - degree, degree)
    return rows, start[keys][rows] + offset


def _pair_keys(i, j, count):
    return i * count + j


def _unique_pairs(i, j, count):
    """The pairs (i, j) without repeats, sorted by key."""
    key = np.unique(_pair_keys(i, j, count))
    return key // count, key % count


def _drop(excluded, i, j, count):
    """Mask (k,) of the pairs (i, j) not in the sorted key array ``excluded``."""
    if len(excluded) == 0:
        return np.ones(len(i), bool)
    key = _pair_keys(i, j, count)
    at = np.minimum(np.searchsorted(excluded, key), len(excluded) - 1)
    return excluded[at] != key


class _Stencils:
    """Vertex-triangle and edge-edge pairs as one list of 4-particle stencils (k, 4) with weights (k, 4).

    The stencil's relative vector r = sum_j coef_j x_idx_j is p - q (vertex minus closest point on the triangle:
    coef 1, -b0, -b1, -b2) or c1 - c2 (closest points of the edges: coef 1 - s, s, -(1 - t), -t); the weights sum
    to 0, so a correction dx_j = w_j coef_j lambda d conserves linear momentum.
    """

    def __init__(self, x, vt, ee, triangles, edges):
        v, t = vt
        e1, e2 = ee
        tri = triangles[t]
        p, a, b, c = x[v], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
        bary, interior_vt = point_triangle_closest(p, a, b, c)
        n_vt = _cross(b - a, c - a)
        A, B = edges[e1], edges[e2]
        p1, q1, p2, q2 = x[A[:, 0]], x[A[:, 1]], x[B[:, 0]], x[B[:, 1]]
        s_, t_, interior_ee = closest_points_segments(p1, q1, p2, q2)
        n_ee = _cross(q1 - p1, q2 - p2)
        self.idx = np.concatenate([np.column_stack([v, tri]), np.column_stack([A, B])])
        self.coef = np.concatenate([np.column_stack([np.ones(len(v)), -bary]),
                                    np.column_stack([1.0 - s_, s_, t_ - 1.0, -t_])])
        self.r = np.einsum("kj,kjd->kd", self.coef, x[self.idx])
        n = np.concatenate([n_vt, n_ee])
        length = np.sqrt(np.einsum("ij,ij->i", n, n))
        scale = np.concatenate([np.sqrt(np.einsum("ij,ij->i", b - a, b - a) * np.einsum("ij,ij->i", c - a, c - a)),
                                np.sqrt(np.einsum("ij,ij->i", q1 - p1, q1 - p1) * np.einsum("ij,ij->i", q2 - p2, q2 - p2))])
        # Degenerate triangles and (nearly) parallel edges have no normal: distance only, no side.
        self.ok = length > 1e-6 * scale
        self.n = n / np.where(self.ok, length, 1.0)[:, None]
        self.interior = np.concatenate([interior_vt, interior_ee]) & self.ok
        self.dist = np.sqrt(np.einsum("ij,ij->i", self.r, self.r))
        self.plane = np.einsum("ij,ij->i", self.r, self.n)  # signed distance along the normal (same for all s, t)

    def take(self, rows):
        """The stencils of ``rows`` (an index array or a mask), as a new _Stencils."""
        out = _Stencils.__new__(_Stencils)
        for name in ("idx", "coef", "r", "ok", "n", "interior", "dist", "plane"):
            setattr(out, name, getattr(self, name)[rows])
        return out
