"""Distance primitives between points, segments and triangles, the one copy every contact routine uses.

- ``closest_weights`` / ``closest_points_on_triangles`` / ``point_triangle_closest``: the closest point of a triangle
  to a point, with its barycentric weights (structure-of-arrays (3, m) corners for the hot loops, rows (m, 3) for
  the rest).
- ``closest_points_segments``: the closest points of two segments.

Derivatives: for the squared distance D = |p - q|^2 with q the closest point (barycentric weights b of a triangle's
corners, or s, t on two segments), the envelope theorem gives dD/dp = 2 (p - q) and dD/dx_k = -2 b_k (p - q) for the
triangle's corners (the closest point is a minimizer over a convex set), in every region (interior, edge, corner);
``point_triangle_distance`` and ``segment_distance`` return those gradients.

Pure NumPy, no per-element Python loops. Lengths in metres.
"""
import numpy as np

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


def point_triangle_closest(p, a, b, c):
    """Barycentric weights of the closest point on each triangle (a, b, c) to p, and whether it is interior.

    p, a, b, c: (k, 3) [m]. Returns (bary (k, 3), interior (k,) bool): closest point = bary[:, 0] a +
    bary[:, 1] b + bary[:, 2] c; ``interior`` is False where it lies on an edge or a corner (``closest_weights``).
    """
    v, w, _, _ = closest_weights(p.T, a.T, b.T, c.T)
    bary = np.stack([np.maximum(1.0 - v - w, 0.0), v, w], axis=1)  # 1 - v - w rounds to -1e-17 on edge BC
    return bary, (v > 0.0) & (w > 0.0) & (v + w < 1.0)


def point_triangle_distance(p, a, b, c):
    """Distances (k,) [m] of points p to triangles (a, b, c) (all (k, 3)) and their gradients (k, 4, 3) with respect
    to (p, a, b, c) (module docstring; where the distance is 0 the gradient is 0)."""
    bary, _ = point_triangle_closest(p, a, b, c)
    r = p - bary[:, :1] * a - bary[:, 1:2] * b - bary[:, 2:] * c
    d = np.sqrt(_dot(r, r))
    unit = r / np.where(d > 0.0, d, 1.0)[:, None]
    grad = np.concatenate([unit[:, None], -bary[:, :, None] * unit[:, None]], axis=1)
    return d, grad


def closest_points_segments(p1, q1, p2, q2):
    """Closest points p1 + s (q1 - p1) and p2 + t (q2 - p2) of segment pairs (all (k, 3) [m]).

    Returns (s (k,), t (k,), interior (k,) bool): s, t in [0, 1] (Ericson 5.1.9, vectorized); ``interior`` when both
    lie strictly inside their segments and the segments are not parallel.
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.maximum(_dot(d1, d1), 1e-300), np.maximum(_dot(d2, d2), 1e-300)
    b, c, f = _dot(d1, d2), _dot(d1, r), _dot(d2, r)
    denom = a * e - b * b
    ok = denom > 1e-12 * a * e
    s = np.where(ok, np.clip((b * f - c * e) / np.where(ok, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0.0, np.clip(-c / a, 0.0, 1.0), np.where(t > 1.0, np.clip((b - c) / a, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    return s, t, ok & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)


def segment_distance(p1, q1, p2, q2):
    """Distances (k,) [m] between segments p1q1 and p2q2 (all (k, 3)) and their gradients (k, 4, 3) with respect to
    (p1, q1, p2, q2) (module docstring; where the distance is 0 the gradient is 0)."""
    s, t, _ = closest_points_segments(p1, q1, p2, q2)
    r = p1 + s[:, None] * (q1 - p1) - p2 - t[:, None] * (q2 - p2)
    d = np.sqrt(_dot(r, r))
    unit = r / np.where(d > 0.0, d, 1.0)[:, None]
    weights = np.stack([1.0 - s, s, -(1.0 - t), -t], axis=1)
    return d, weights[:, :, None] * unit[:, None]
