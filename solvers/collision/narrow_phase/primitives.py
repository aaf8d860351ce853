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


# Squared distances with exact gradients and Hessians (IPC's distance-type dispatch).
#
# Li et al. 2020 ("Incremental Potential Contact") and the IPC Toolkit pick, per pair, which two features are
# closest (point-point, point-edge, point-plane for a point and a triangle; point-point, point-edge, line-line for
# two edges) and differentiate that type's closed-form squared distance, smooth inside its region:
#
#   point-point   |r|^2                                  r = x_i - x_j
#   point-line    |r|^2 - (r.e)^2 / |e|^2                r = point - e0, e = e1 - e0
#   point-plane   (r.(e1 x e2))^2 / |e1 x e2|^2          r = p - t0, e1 = t1 - t0, e2 = t2 - t0
#   line-line     the same formula                       r = ea0 - eb0, e1 = ea1 - ea0, e2 = eb1 - eb0
#
# Each formula is differentiated in its own difference vectors u = (r, e, ...), which are fixed linear combinations
# u = (C kron I3) x of the 12 coordinates x of the four points, so grad_x = (C kron I3)^T grad_u and
# H_x = (C kron I3)^T H_u (C kron I3). The type codes are the IPC Toolkit's enum values.

POINT_TRIANGLE_TYPES = ("P_T0", "P_T1", "P_T2", "P_E0", "P_E1", "P_E2", "P_T")
"""Point-triangle distance types, by code: closest to a corner, to an edge (0: t0 t1, 1: t1 t2, 2: t2 t0), inside."""

EDGE_EDGE_TYPES = ("EA0_EB0", "EA0_EB1", "EA1_EB0", "EA1_EB1", "EA_EB0", "EA_EB1", "EA0_EB", "EA1_EB", "EA_EB")
"""Edge-edge distance types, by code: which endpoint (0, 1) or interior (no digit) of edges A and B is closest."""

# the difference vectors u of each type as rows of coefficients on the four points
_PT_COEFFS = (
    [[1, -1, 0, 0]], [[1, 0, -1, 0]], [[1, 0, 0, -1]],
    [[1, -1, 0, 0], [0, -1, 1, 0]], [[1, 0, -1, 0], [0, 0, -1, 1]], [[1, 0, 0, -1], [0, 1, 0, -1]],
    [[1, -1, 0, 0], [0, -1, 1, 0], [0, -1, 0, 1]],
)
_EE_COEFFS = (
    [[1, 0, -1, 0]], [[1, 0, 0, -1]], [[0, 1, -1, 0]], [[0, 1, 0, -1]],
    [[-1, 0, 1, 0], [-1, 1, 0, 0]], [[-1, 0, 0, 1], [-1, 1, 0, 0]],
    [[1, 0, -1, 0], [0, 0, -1, 1]], [[0, 1, -1, 0], [0, 0, -1, 1]],
    [[1, 0, -1, 0], [-1, 1, 0, 0], [0, 0, -1, 1]],
)

EDGE_EDGE_PARALLEL_THRESHOLD = 2.5e-16
"""Edges count as parallel (and avoid the line-line formula) where sin^2 of their angle is below this."""


def _skew(v):
    """(k, 3, 3) matrices [v]x with [v]x u = v x u."""
    z = np.zeros(len(v))
    return np.stack([np.stack([z, -v[:, 2], v[:, 1]], 1), np.stack([v[:, 2], z, -v[:, 0]], 1),
                     np.stack([-v[:, 1], v[:, 0], z], 1)], 1)


def _outer(u, v):
    return u[:, :, None] * v[:, None, :]


def _point_point_u(r):
    """|r|^2, gradient (k, 3), Hessian (k, 3, 3) in r."""
    k = len(r)
    return _dot(r, r), 2.0 * r, np.broadcast_to(2.0 * np.eye(3), (k, 3, 3))


def _point_line_u(r, e):
    """|r|^2 - (r.e)^2 / |e|^2, gradient (k, 6), Hessian (k, 6, 6) in (r, e)."""
    s, q = _dot(r, e), _dot(e, e)
    sq, sq2 = (s / q)[:, None], (s * s / (q * q))[:, None]
    f = _dot(r, r) - s * sq[:, 0]
    grad = np.concatenate([2.0 * r - 2.0 * sq * e, -2.0 * sq * r + 2.0 * sq2 * e], axis=1)
    eye = np.eye(3)
    q_ = q[:, None, None]
    ee, er = _outer(e, e), _outer(e, r)
    h_rr = 2.0 * eye - 2.0 * ee / q_
    h_re = -2.0 * (er + s[:, None, None] * eye) / q_ + 4.0 * s[:, None, None] * ee / q_ ** 2
    h_ee = (-2.0 * _outer(r, r) / q_ + 4.0 * s[:, None, None] * (er + er.transpose(0, 2, 1)) / q_ ** 2
            + 2.0 * (s * s)[:, None, None] * eye / q_ ** 2 - 8.0 * (s * s)[:, None, None] * ee / q_ ** 3)
    hess = np.block([[h_rr, h_re], [h_re.transpose(0, 2, 1), h_ee]])
    return f, grad, hess


def _point_plane_u(r, e1, e2):
    """(r.(e1 x e2))^2 / |e1 x e2|^2, gradient (k, 9), Hessian (k, 9, 9) in (r, e1, e2): f = g^2 / h with the
    triple product g = r.n and h = |n|^2, n = e1 x e2."""
    n = _cross(e1, e2)
    g, h = _dot(r, n), _dot(n, n)
    zero = np.zeros_like(r)
    dg = np.concatenate([n, _cross(e2, r), _cross(r, e1)], axis=1)
    dh = np.concatenate([zero, 2.0 * _cross(e2, n), 2.0 * _cross(n, e1)], axis=1)
    z3 = np.zeros((len(r), 3, 3))
    s_e1, s_e2, s_r, s_n = _skew(e1), _skew(e2), _skew(r), _skew(n)
    ddg = np.block([[z3, -s_e2, s_e1], [s_e2, z3, -s_r], [-s_e1, s_r, z3]])
    jac_n = np.concatenate([z3, -s_e2, s_e1], axis=2)  # dn / d(r, e1, e2), (k, 3, 9)
    ddh = 2.0 * np.einsum("kai,kaj->kij", jac_n, jac_n) + np.block([[z3, z3, z3], [z3, z3, -2.0 * s_n],
                                                                     [z3, 2.0 * s_n, z3]])
    g_, h_ = g[:, None], h[:, None]
    f = g * g / h
    grad = 2.0 * g_ / h_ * dg - (g_ / h_) ** 2 * dh
    g3, h3 = g[:, None, None], h[:, None, None]
    gh = _outer(dg, dh)
    hess = (2.0 / h3 * _outer(dg, dg) + 2.0 * g3 / h3 * ddg - 2.0 * g3 / h3 ** 2 * (gh + gh.transpose(0, 2, 1))
            + 2.0 * g3 ** 2 / h3 ** 3 * _outer(dh, dh) - (g3 / h3) ** 2 * ddh)
    return f, grad, hess


_U_FORMULAS = {1: _point_point_u, 2: _point_line_u, 3: _point_plane_u}


def _dispatch(x, types, coeff_table):
    """Squared distance (k,), gradient (k, 12), Hessian (k, 12, 12) of the four points x (4, k, 3), each pair by the
    formula of its type code (``coeff_table[code]``: the rows of C), vectorized per type."""
    k = x.shape[1]
    d2, grad, hess = np.zeros(k), np.zeros((k, 12)), np.zeros((k, 12, 12))
    for code, coeffs in enumerate(coeff_table):
        rows = np.flatnonzero(types == code)
        if not len(rows):
            continue
        c = np.asarray(coeffs, float)
        u = np.einsum("mi,ikj->mkj", c, x[:, rows])
        f, g, h = _U_FORMULAS[len(c)](*u)
        jac = np.kron(c, np.eye(3))  # (3m, 12)
        d2[rows] = f
        grad[rows] = g @ jac
        hess[rows] = jac.T @ (h @ jac)  # batched matmul: einsum's three-operand contraction is ~50x slower here
    return d2, grad, hess


def point_triangle_distance_type(p, a, b, c):
    """Codes (k,) of ``POINT_TRIANGLE_TYPES``: which feature of each triangle (a, b, c) is closest to p (all (k, 3)).

    The IPC Toolkit's rule: for each edge in turn, the point's coordinates along the edge and along the in-plane
    normal pointing away from the triangle; the first edge whose span holds the point from outside wins, then the
    corners, else the interior."""
    normal = _cross(b - a, c - a)
    along, out = [], []
    for start, end in ((a, b), (b, c), (c, a)):
        edge, rel = end - start, p - start
        side = _cross(edge, normal)
        along.append(_dot(edge, rel) / np.maximum(_dot(edge, edge), 1e-300))
        out.append(_dot(side, rel))
    types = np.full(len(p), 6)
    choices = [
        (along[2] <= 0.0) & (along[1] >= 1.0), (along[1] <= 0.0) & (along[0] >= 1.0),
        (along[0] <= 0.0) & (along[2] >= 1.0),
    ]  # P_T2, P_T1, P_T0, lowest priority first
    for code, mask in zip((2, 1, 0), choices):
        types[mask] = code
    for code in (5, 4, 3):  # P_E2, P_E1, P_E0: the first edge wins, so it is written last
        i = code - 3
        types[(along[i] > 0.0) & (along[i] < 1.0) & (out[i] >= 0.0)] = code
    return types


def _edge_edge_parallel_type(ea0, ea1, eb0, eb1):
    ea = ea1 - ea0
    length2 = np.maximum(_dot(ea, ea), 1e-300)
    alpha, beta = _dot(eb0 - ea0, ea) / length2, _dot(eb1 - ea0, ea) / length2
    beta_in = (beta >= 0.0) & (beta <= 1.0)
    # closest feature of A (0, 1: endpoints, 2: interior) and of B, by where B's endpoints project on A's line
    eac = np.where(alpha < 0.0, np.where(beta_in, 2, 0), np.where(alpha > 1.0, np.where(beta_in, 2, 1), 2))
    ebc = np.where(alpha < 0.0, np.where(beta <= alpha, 0, np.where(beta <= 1.0, 1, 2)),
                   np.where(alpha > 1.0, np.where(beta >= alpha, 0, np.where(beta >= 0.0, 1, 2)), 0))
    return np.where(ebc < 2, 2 * eac + ebc, 6 + eac)


def edge_edge_distance_type(ea0, ea1, eb0, eb1):
    """Codes (k,) of ``EDGE_EDGE_TYPES``: which features of edges A (ea0 ea1) and B (eb0 eb1) are closest (all
    (k, 3)). The IPC Toolkit's rule (Sunday's segment-segment distance, parallel edges by projection); a zero-length
    edge is taken as a point against the other edge's line (EA0_EB or EA_EB0), as the toolkit does."""
    u, v, w = ea1 - ea0, eb1 - eb0, ea0 - eb0
    a, b, c, d, e = _dot(u, u), _dot(u, v), _dot(v, v), _dot(u, w), _dot(v, w)
    big_d = a * c - b * b
    s_num = b * e - c * d
    low, high = s_num <= 0.0, s_num >= big_d
    t_num = np.where(low, e, np.where(high, e + b, a * e - b * d))
    t_den = np.where(low | high, c, big_d)
    default = np.where(low, 6, np.where(high, 7, 8))
    at_b0 = np.where(-d <= 0.0, 0, np.where(-d >= a, 2, 4))
    at_b1 = np.where(b - d <= 0.0, 1, np.where(b - d >= a, 3, 5))
    types = np.where(t_num <= 0.0, at_b0, np.where(t_num >= t_den, at_b1, default))
    cross = _cross(u, v)
    parallel = _dot(cross, cross) < EDGE_EDGE_PARALLEL_THRESHOLD * a * c
    if np.any(parallel):
        types[parallel] = _edge_edge_parallel_type(ea0[parallel], ea1[parallel], eb0[parallel], eb1[parallel])
    types[c == 0.0] = 4
    types[a == 0.0] = 6
    types[(a == 0.0) & (c == 0.0)] = 0
    return types


def point_triangle_distance_squared(p, a, b, c):
    """Squared distances (k,) [m^2] of points p to triangles (a, b, c) (all (k, 3)), their gradients (k, 12) and
    Hessians (k, 12, 12) with respect to (p, a, b, c) flattened point by point, each the exact derivative of the
    closed form of the pair's distance type (``point_triangle_distance_type``; the IPC Toolkit's AUTO type)."""
    x = np.stack([np.asarray(v, float) for v in (p, a, b, c)])
    return _dispatch(x, point_triangle_distance_type(*x), _PT_COEFFS)


def edge_edge_distance_squared(a, b, c, d):
    """Squared distances (k,) [m^2] between edges (a, b) and (c, d) (all (k, 3)), their gradients (k, 12) and
    Hessians (k, 12, 12) with respect to (a, b, c, d), each the exact derivative of the closed form of the pair's
    distance type (``edge_edge_distance_type``; the IPC Toolkit's AUTO type; not mollified)."""
    x = np.stack([np.asarray(v, float) for v in (a, b, c, d)])
    return _dispatch(x, edge_edge_distance_type(*x), _EE_COEFFS)
