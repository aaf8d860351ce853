"""Exact geometric queries on triangle meshes, for contact and for the cloth quality figures (issue 10).

- ``closest_points_on_triangles``: the closest point of each triangle to a point, with its barycentric weights
  (``closest_weights`` on structure-of-arrays corners, which the face push, ``solvers/face_contact.py``, calls
  directly).
- ``deepest_face_penetration``: how deep [m] the deepest point of any triangle lies inside a sphere.
- ``count_self_intersections``: the number of (edge, triangle) pairs of a mesh that cross each other, pairs that
  share a vertex excluded: a k-d tree broad phase and an orientation-sign narrow phase.

Pure NumPy/SciPy, no per-element Python loops. Lengths in metres (any unit works: the tests are scale-free).
"""
import numpy as np
from scipy.spatial import cKDTree

COPLANAR_TOLERANCE = 1e-10
"""Orientation determinants below this times (the pair's length scale)^3 count as zero, so a point on a plane, a
touching edge or a coplanar pair is *not* an intersection. Float determinants of points on a common plane that is
not axis-aligned come out at round-off level (~1e-16 relative) with random signs; counting them would report
crossings in a flat sheet."""


def _dot(u, v):
    """Row-wise dot products of (m, 3) arrays."""
    return np.einsum("ij,ij->i", u, v)


def _cross(u, v):
    """Row-wise cross products of (m, 3) arrays (np.cross is several times slower on small arrays)."""
    u0, u1, u2 = u[:, 0], u[:, 1], u[:, 2]
    v0, v1, v2 = v[:, 0], v[:, 1], v[:, 2]
    return np.stack([u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0], axis=1)


def closest_points_on_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Closest point of every triangle (a, b, c) to the point p, and its barycentric weights.

    p: (3,) or (m, 3); a, b, c: (m, 3) the corners [m]. Returns (q (m, 3), bary (m, 3)) with
    q = bary[:, 0] a + bary[:, 1] b + bary[:, 2] c, bary >= 0, summing to 1. The point of ``closest_weights``
    (which works on structure-of-arrays (3, m) corners, as the face push does every pass).
    """
    p = np.asarray(p, float)
    A, B, C = a.T, b.T, c.T
    P = p.reshape(3, 1) if p.ndim == 1 else p.T
    v, w, e1, e2 = closest_weights(P, A, B, C)
    q = (A + v * e1 + w * e2).T
    return q, np.stack([1.0 - v - w, v, w], axis=1)


def _dot3(u, v):
    """Column-wise dot products of (3, m) arrays (structure of arrays), (m,): one einsum call, 2x faster than five
    ufunc calls at a few hundred columns, the same at thousands."""
    return np.einsum("im,im->m", u, v)


def _unit_clip(t):
    """min(max(t, 0), 1) in place (np.clip's Python wrapper costs more than the work below ~10^4 values)."""
    np.maximum(t, 0.0, out=t)
    return np.minimum(t, 1.0, out=t)


def closest_weights(p, A, B, C):
    """Barycentric weights (v, w) of B and C (the weight of A is 1 - v - w) of the closest point of each triangle
    (A, B, C), structure of arrays (3, m), to p (3, 1) or (3, m), and the edges e1 = B - A, e2 = C - A (3, m).

    The foot of the perpendicular when it falls inside the triangle (the Gram system of the two edges), else the
    nearest of the three edges' clamped closest points, which covers the vertex regions and degenerate (zero-area)
    triangles without a division by zero: the exact closest point (Ericson, "Real-Time Collision Detection" 5.1.5,
    gets the same point by region tests; where two regions tie, as at a vertex shared by two edges, this may weight
    the same point differently). About 60% of the time of a region-by-region form, since the interior case,
    usual in contact, costs ~15 whole-array operations and only the rest go through the edge tests.
    """
    e1, e2, ap = B - A, C - A, p - A
    d1, d2 = _dot3(e1, ap), _dot3(e2, ap)
    e11, e12, e22 = _dot3(e1, e1), _dot3(e1, e2), _dot3(e2, e2)
    denom = e11 * e22 - e12 * e12
    v = e22 * d1 - e12 * d2
    w = e11 * d2 - e12 * d1
    inside = (v >= 0.0) & (w >= 0.0) & (v + w <= denom) & (denom > 1e-12 * e11 * e22)
    scale = np.divide(1.0, denom, out=np.zeros_like(denom), where=inside)
    v *= scale
    w *= scale
    out = np.flatnonzero(~inside)
    if len(out):
        if len(out) == len(inside):  # every one (np.take copies; slicing nothing is free)
            o1, o2, oap, od1, od2, o11, o22 = e1, e2, ap, d1, d2, e11, e22
        else:
            o1, o2, oap = np.take(e1, out, axis=1), np.take(e2, out, axis=1), np.take(ap, out, axis=1)
            od1, od2, o11, o22 = d1[out], d2[out], e11[out], e22[out]
        e3, bp = o2 - o1, oap - o1  # edge B -> C, p - B
        o33, d3 = _dot3(e3, e3), _dot3(e3, bp)
        t_ab = _unit_clip(od1 / np.maximum(o11, 1e-300))
        t_ac = _unit_clip(od2 / np.maximum(o22, 1e-300))
        t_bc = _unit_clip(d3 / np.maximum(o33, 1e-300))
        # |p - closest|^2 minus |p - A|^2, per edge: |ap - t e|^2 - |ap|^2 = t (t e.e - 2 e.ap)
        s_ab = t_ab * (t_ab * o11 - 2.0 * od1)
        s_ac = t_ac * (t_ac * o22 - 2.0 * od2)
        s_bc = _dot3(bp, bp) - _dot3(oap, oap) + t_bc * (t_bc * o33 - 2.0 * d3)
        use_ac = s_ac < s_ab
        use_bc = s_bc < np.minimum(s_ab, s_ac)
        v[out] = np.where(use_bc, 1.0 - t_bc, np.where(use_ac, 0.0, t_ab))
        w[out] = np.where(use_bc, t_bc, np.where(use_ac, t_ac, 0.0))
    return v, w, e1, e2


def deepest_face_penetration(x: np.ndarray, triangles: np.ndarray, center, radius: float) -> float:
    """Depth [m] (>= 0) of the deepest point of any triangle inside the sphere (center (3,), radius [m]).

    max over triangles of (radius - distance from the centre to the triangle's closest point), or 0 when no
    triangle reaches inside. x: (n, 3) positions; triangles: (t, 3) indices. A collider's thickness is not counted:
    compare the result with it.
    """
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(triangles) == 0:
        return 0.0
    center = np.asarray(center, float)
    corners = x[triangles]  # (t, 3, 3)
    # Bounding-sphere cull: no point of a triangle is nearer the centre than (centroid distance - centroid radius).
    centroid = corners.mean(axis=1)
    reach = np.sqrt(np.max(np.sum((corners - centroid[:, None, :]) ** 2, axis=2), axis=1))
    near = np.nonzero(np.linalg.norm(centroid - center, axis=1) - reach < radius)[0]
    if len(near) == 0:
        return 0.0
    q, _ = closest_points_on_triangles(center, corners[near, 0], corners[near, 1], corners[near, 2])
    distance = np.sqrt(_dot(q - center, q - center))
    return float(max(radius - distance.min(), 0.0))


def triangle_edges(triangles: np.ndarray) -> np.ndarray:
    """The unique undirected edges (e, 2) of triangles (t, 3), each as (low, high)."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    return np.unique(np.sort(edges, axis=1), axis=0)


def _orient(a, b, c, d):
    """Signed volume (times 6) of the tets (a, b, c, d), rows (m, 3): > 0 when d lies on the side of the plane
    (a, b, c) that its normal (b - a) x (c - a) points to."""
    return _dot(_cross(b - a, c - a), d - a)


def segments_cross_triangles(p, q, a, b, c) -> np.ndarray:
    """Whether each segment pq (m, 3) properly crosses the triangle abc (m, 3), shape (m,) bool.

    True when p and q are strictly on opposite sides of the triangle's plane and the line pq passes strictly inside
    the triangle (the three orientations of pq against the edges agree in sign). Touching (an end on the triangle, a
    crossing through its border) and coplanar pairs give False, within COPLANAR_TOLERANCE.
    """
    scale = np.maximum.reduce([np.abs(v).max(axis=1) for v in (p - a, q - a, b - a, c - a)])
    tol = COPLANAR_TOLERANCE * np.maximum(scale, 1e-300) ** 3
    s1, s2 = _orient(a, b, c, p), _orient(a, b, c, q)
    crosses_plane = ((s1 > tol) & (s2 < -tol)) | ((s1 < -tol) & (s2 > tol))
    u, v, w = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
    inside = ((u > tol) & (v > tol) & (w > tol)) | ((u < -tol) & (v < -tol) & (w < -tol))
    return crosses_plane & inside


def self_intersecting_pairs(x: np.ndarray, triangles: np.ndarray):
    """The (edge, triangle) pairs of the mesh that cross: (edges (e, 2), pairs (k, 2) of [edge index, triangle
    index]). Pairs that share a vertex are never tested (an edge of a triangle, or one meeting it at a corner).

    Broad phase: a k-d tree over the edge midpoints and one over the triangle centroids, joined within (largest
    half edge length + largest centroid-to-corner distance); then each pair is kept only if the two bounding spheres
    (midpoint, half length) and (centroid, centroid-to-corner) overlap. Narrow phase: ``segments_cross_triangles``.
    """
    x = np.asarray(x, float)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    edges = triangle_edges(triangles)
    if len(triangles) == 0:
        return edges, np.zeros((0, 2), np.int64)
    p, q = x[edges[:, 0]], x[edges[:, 1]]
    mid = 0.5 * (p + q)
    half = 0.5 * np.sqrt(_dot(q - p, q - p))
    corners = x[triangles]
    centroid = corners.mean(axis=1)
    reach = np.sqrt(np.max(np.sum((corners - centroid[:, None, :]) ** 2, axis=2), axis=1))
    radius = float(half.max() + reach.max())
    found = cKDTree(mid).sparse_distance_matrix(cKDTree(centroid), radius, output_type="ndarray")
    e, t = found["i"].astype(np.int64), found["j"].astype(np.int64)
    keep = found["v"] <= half[e] + reach[t]
    e, t = e[keep], t[keep]
    tri = triangles[t]
    shares = np.any(tri == edges[e, 0:1], axis=1) | np.any(tri == edges[e, 1:2], axis=1)
    e, t = e[~shares], t[~shares]
    hit = segments_cross_triangles(p[e], q[e], x[triangles[t, 0]], x[triangles[t, 1]], x[triangles[t, 2]])
    return edges, np.stack([e[hit], t[hit]], axis=1)


def count_self_intersections(x: np.ndarray, triangles: np.ndarray) -> int:
    """Number of (edge, triangle) pairs of the mesh (x (n, 3), triangles (t, 3)) that cross each other.

    Edges are the triangles' edges; pairs sharing a vertex are excluded; touching or coplanar pairs do not count
    (``segments_cross_triangles``). A sheet passing through itself along a curve gives about two pairs per triangle
    the curve runs through (the edges of each sheet that pierce the other).
    """
    return int(len(self_intersecting_pairs(x, triangles)[1]))
