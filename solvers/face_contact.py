"""Faces against sphere colliders: the position-level response that keeps a triangle's interior outside a sphere.

``solvers.colliders.resolve_contacts`` keeps the *vertices* at least ``radius + thickness`` from a sphere's centre;
between vertices a face can still dip into it (the sphere shows through a coarse cloth, issue 10 item 3). The
position-level solvers (position_based.py, mass_spring.py, projective/solver.py) call ``resolve_face_contacts`` just
before it, so the vertex projection stays the final word on every vertex (a face push near where a sphere meets the
ground must not leave a vertex below the ground; it only ever moves vertices away from the sphere, so the vertex
projection after it cannot push a face back in, except where a sphere pokes through the ground). For every
triangle whose closest point q = sum_k b_k x_k to the centre c (exact, barycentric weights b,
``geometry.intersections.closest_weights``, the routine behind ``closest_points_on_triangles``) lies within
rho = radius + thickness:

    depth = rho - |q - c|,   n = (q - c) / |q - c|,
    dx_k = b_k w_k / (sum_j b_j^2 w_j) * delta,   delta = depth n (+ friction, below),   w_k = inv_mass_k,

the position-based correction of a point with barycentric weights: it moves q by exactly delta (sum_k b_k dx_k =
delta), heavier and pinned (w = 0) corners less or not at all. A closest point on pinned corners only (sum_j b_j^2 w_j
= 0) is skipped.

Friction as for vertex contacts (Macklin et al. 2014, as ``resolve_contacts``): the closest point's tangential
motion over the step, t = tangential part of (q + depth n - q_prev), q_prev = sum_k b_k x_prev_k, is removed up to
``friction * depth`` (delta -= min(1, friction depth / |t|) t).

Neighbouring triangles share corners, so all hits of a pass are applied at once (Jacobi) and each vertex takes the
mean of its hit triangles' corrections weighted by depth^2, dx_i = sum_t depth_t^2 dx_it / sum_t depth_t^2 over the
triangles t that move it (a vertex of six triangles resting on the sphere would otherwise be pushed six times). A
plain mean undershoots where neighbours disagree (the deepest triangle of a vertex got a third of its request less
than it needed per pass on the lab cloth); the weighting gives each vertex nearly its deepest triangle's request
and never more than the largest request, so the pass repeats less often (``FACE_PASSES``; a face push can also move a
neighbour's corner), each pass from the new positions. Measured against over-relaxing the plain mean (x 1.2 .. 1.3):
the same residual depth, but vertices pushed up to 0.3 mm past where the converged push leaves them (depth^2
weighting: 0.2 mm at 64 x 64, 0.1 mm at 21 x 21, none on average). Ground planes need nothing: a flat face cannot dip
below a plane its corners are above.

Velocity: the position-based solvers and PROJECTIVE derive v = (x - x_prev) / dt after this, mass-spring adds the
correction to v (v += dx / dt) like the vertex projection. Either way a face only gets back out what it moved into
the sphere during the step, plus at most ~20% where a corner carries more than its share (b_k / sum b_j^2 <= ~1.2
for equal masses), so the response does not bounce (tests/test_face_contact.py measures it).
"""
import numpy as np

from .colliders import Sphere
from .geometry.intersections import _cross, _dot3, closest_weights

FACE_PASSES = 4
"""Jacobi passes per call at most. Even passes (the first, the third) find each triangle's exact closest point; odd
ones push the previous pass's points again (the same barycentric weights b, so q = sum_k b_k x_k is one product
instead of the ~30 operations of ``closest_weights``): the closest point barely slides within a pass, but where it
changes region (a resting right triangle's closest point is the midpoint of its hypotenuse, on the border of the
interior) only an exact pass sees it, so they alternate. Measured on the lab cloth resting on its sphere (18 states
taken just before the push in the default XPBD, the deepest face point left, max over them; CPU time per call on a
busy machine, so roughly):

    21 x 21: plain mean, 4 exact passes (before): 0.0022 mm, 1.9 ms;  this: 0.0010 mm, 0.7 .. 1.3 ms
    64 x 64: plain mean, 4 exact passes (before): 0.0205 mm, 6.6 ms;  this: 0.0026 mm, 3.3 .. 4.3 ms

and from a whole dip at once (``tests/test_face_contact.py``, vertices laid on the sphere at the lab cloths'
spacings, one call): 0.16 m spacing, 3.4 mm dip: 0.85% of it left (before: 2.1%); 0.5 m, 42 mm: 0.35% (before: 1.3%).
Tried: 3 passes (exact, fixed, exact): 0.0035 / 0.0125 mm on those states and 3.3% / 1.3% of a whole dip, within
noise as fast; 3 exact passes: the same depths as that, ~15% slower; exact then fixed, fixed, fixed: 0.060 mm at
64 x 64. The next step continues from what is left. Fewer passes run when one finds no face deeper than
FACE_TOLERANCE."""

FACE_TOLERANCE = 1e-7
"""A pass whose deepest face lies less than this fraction of rho inside the sphere stops the passes without moving
anything (0.27 um on the lab's 2.7 m sphere: far below what a frame can show, far above round-off)."""

REFIT_GROWTH = 1.25
"""The cached bound on the longest edge (see ``_Topology.longest_edge``) is recomputed from the edges once the
motion since the last exact value could have stretched an edge by this factor."""


_AXES = np.arange(3)[:, None]


class _Topology:
    """What the cull needs of one triangles array: its unique edges (as two contiguous index arrays), its corners
    as three contiguous columns (3, t), and a cached upper bound on the longest edge.

    The bound: with L0 the longest edge at positions x0, no edge at x is longer than L0 + 2 max_i |x_i - x0_i|.
    That costs one pass over the n positions instead of a gather of every edge's two ends; the exact value is
    recomputed (and x0 moved to x) once the bound exceeds REFIT_GROWTH L0. It holds for any x of the same shape,
    so two solvers sharing one model's triangles share the entry safely (a loose bound only widens the cull).
    """

    def __init__(self, triangles):
        self.triangles = triangles
        pairs = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
        edges = np.unique(pairs, axis=0)
        self.edge_a, self.edge_b = edges[:, 0].copy(), edges[:, 1].copy()
        self.columns = np.ascontiguousarray(triangles.T)  # (3, t)
        self.x0, self.l0 = None, 0.0

    def longest_edge(self, x) -> float:
        """An upper bound [m] on the longest edge at positions x (n, 3)."""
        if self.x0 is not None and self.x0.shape == x.shape:
            moved = x - self.x0
            np.multiply(moved, moved, out=moved)
            bound = self.l0 + 2.0 * float(np.sqrt(moved.sum(axis=1).max()))
            if bound <= REFIT_GROWTH * self.l0:
                return bound
        if len(self.edge_a) == 0:
            return 0.0
        d = x[self.edge_a] - x[self.edge_b]
        self.l0 = float(np.sqrt(np.einsum("ij,ij->i", d, d).max()))
        self.x0 = np.array(x, np.float64, order="C")
        return self.l0


_TOPOLOGY = []
"""Recently used _Topology entries, keyed by the triangles array's identity: solvers pass the same
model.triangle_indices every step."""


def _topology(triangles) -> _Topology:
    for entry in _TOPOLOGY:
        if entry.triangles is triangles:
            return entry
    entry = _Topology(triangles)
    _TOPOLOGY.insert(0, entry)
    del _TOPOLOGY[8:]
    return entry


def _as_triangles(triangles) -> np.ndarray:
    if isinstance(triangles, np.ndarray) and triangles.dtype == np.int64 and triangles.ndim == 2:
        return triangles  # model.triangle_indices already is: its identity keys the cache
    return np.asarray(triangles, np.int64).reshape(-1, 3)


def _near(x, topology, center, rho):
    """(r2 (n,) squared distances of the vertices from the centre, indices of the triangles with a corner within
    sqrt(rho^2 + L^2 / 3), L a bound on the longest edge), or (r2, None) when no vertex is that near."""
    rel = x - center
    r2 = np.einsum("ij,ij->i", rel, rel)
    length = topology.longest_edge(x)
    limit = rho * rho + length * length / 3.0
    if len(r2) == 0 or r2.min() >= limit:
        return r2, None
    near = r2 < limit
    a, b, c = topology.columns
    return r2, np.flatnonzero(near[a] | near[b] | near[c])


def _candidates(x, triangles, center, rho):
    """Indices of the triangles that may reach within rho of the centre (exact cull, no false negatives).

    For p = sum_k b_k x_k on a triangle, with r_k = |x_k - c| and L_kl its edge lengths,
    |p - c|^2 = sum_k b_k r_k^2 - sum_{k<l} b_k b_l L_kl^2 >= min_k r_k^2 - max_kl L_kl^2 / 3
    (sum_{k<l} b_k b_l <= 1/3). A triangle is a candidate when that bound is below rho^2: on a cloth resting on the
    sphere that keeps the triangles whose corners lie within about the sagitta L^2 / (6 rho) of the contact shell.
    First with a bound on the longest edge of the mesh (one pass over the vertices: an early exit when none is
    near, the usual case away from the sphere), then with each survivor's own edges."""
    triangles = _as_triangles(triangles)
    if len(triangles) == 0:
        return np.zeros(0, np.int64)
    r2, near = _near(x, _topology(triangles), np.asarray(center, float), float(rho))
    if near is None or len(near) == 0:
        return np.zeros(0, np.int64)
    return near[_own_bound(x, r2, triangles[near], rho)]


def _own_bound(x, r2, tri, rho):
    """Which triangles tri (m, 3) pass the cull with their own longest edge, (m,) bool."""
    a, b, c = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
    longest = np.maximum(np.maximum(_norm2(b - a), _norm2(c - b)), _norm2(a - c))
    r2_min = np.minimum(np.minimum(r2[tri[:, 0]], r2[tri[:, 1]]), r2[tri[:, 2]])
    return r2_min - longest / 3.0 < rho * rho


def _norm2(u):
    return np.einsum("ij,ij->i", u, u)


def resolve_face_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray, colliders,
                          passes: int = FACE_PASSES) -> int:
    """Push every triangle that reaches within ``radius + thickness`` of a Sphere collider's centre back out, in place.

    x (n, 3): positions at the end of the step [m]; x_prev (n, 3): at its start (for friction); inv_mass (n,)
    [1/kg], 0 for pinned particles (never moved); triangles (t, 3) int; colliders: any sequence, only Sphere ones
    act. Returns the number of (triangle, sphere) contacts found in the first pass.
    """
    spheres = [c for c in colliders if isinstance(c, Sphere)]
    if not spheres:
        return 0
    triangles = _as_triangles(triangles)
    if len(triangles) == 0 or len(x) == 0:
        return 0
    topology = _topology(triangles)
    contacts = 0
    for sphere in spheres:
        center = np.asarray(sphere.center, float)
        rho = float(sphere.radius + sphere.thickness)
        _, near = _near(x, topology, center, rho)
        if near is None or len(near) == 0:
            continue
        # No second cull with each triangle's own edges (``_own_bound``) here: on the lab cloth resting on its
        # sphere it drops only ~7% of these, for about the cost of a pass over them; and no filter for triangles
        # of pinned corners only: their closest point has sum_j b_j^2 w_j = 0, which the passes skip anyway.
        contacts += _push_out(x, x_prev, inv_mass, triangles[near], center, rho, float(sphere.friction), passes)
    return contacts


def _push_out(x, x_prev, inv_mass, tri, center, rho, friction, passes) -> int:
    """The Jacobi passes for one sphere on the candidate triangles tri (m, 3), in place on x; the first pass's hits.

    Works on the candidates' own vertices as a structure of arrays X (3, V) (corner k of all triangles is the
    (3, m) gather X[:, corner[k]]), sums corrections per vertex with bincount, and writes X back once."""
    n = len(x)
    mark = np.zeros(n, bool)
    mark[tri.ravel()] = True
    vertices = np.flatnonzero(mark)
    V = len(vertices)
    local = np.empty(n, np.int64)
    local[vertices] = np.arange(V)
    corner = local[tri.T]  # (3 corners, m)
    X = np.ascontiguousarray(x[vertices].T)  # (3, V)
    w = inv_mass[tri.T]  # (3, m)
    prev = x_prev[tri.T].transpose(2, 0, 1) if friction > 0.0 else None  # (3 coords, 3 corners, m)
    p = center.reshape(3, 1)
    flat_corner = corner.ravel()
    tolerance = FACE_TOLERANCE * rho
    contacts = 0
    by_axis = (flat_corner[None, :] + V * _AXES).ravel()  # (3 coords x 3 corners x m) bins of the sums
    gathered = np.empty((3, 3 * len(tri)))
    for k in range(passes):
        m = corner.shape[1]
        G = gathered[:, :3 * m].reshape(3, 3, m)  # (3 coords, 3 corners, m)
        np.take(X, flat_corner, axis=1, out=G.reshape(3, -1), mode="clip")  # X[:, corner], ~8x faster
        if k % 2 == 0:  # exact closest points; odd passes keep the previous pass's points (module docstring)
            A = G[:, 0]
            v, wt, e1, e2 = closest_weights(p, A, G[:, 1], G[:, 2])
            b = np.stack([1.0 - v - wt, v, wt])  # (3 corners, m)
            r = A - p
            r += v * e1
            r += wt * e2  # q - p, q the closest point
            weight = b * w  # b_k w_k
            norm = _dot3(b, weight)  # sum_j b_j^2 w_j; 0: a closest point on pinned corners only, the pins' business
            movable = norm > 0.0
            inverse_norm = np.divide(1.0, norm, out=np.zeros_like(norm), where=movable)
            moves = weight > 0.0
        else:  # the previous pass's material points q = sum_k b_k x_k, moved
            r = np.einsum("km,ikm->im", b, G)
            r -= p
        dist = np.sqrt(np.einsum("im,im->m", r, r))
        hit = (dist < rho) & movable
        hits = int(np.count_nonzero(hit))
        if hits == 0:
            break
        depth = np.where(hit, rho - dist, 0.0)
        deepest = float(depth.max())
        if deepest < tolerance:
            break
        if k == 0:
            contacts = hits
        # delta = depth n, n = (q - c) / |q - c|; a face through the very centre is pushed along its own normal.
        if float(dist.min()) > 1e-12:
            delta = r * (depth / dist)
        else:
            delta = r * (depth / np.where(dist > 1e-12, dist, 1.0))
            through = np.flatnonzero(hit & (dist <= 1e-12))
            face = _cross((G[:, 1, through] - G[:, 0, through]).T, (G[:, 2, through] - G[:, 0, through]).T).T
            delta[:, through] = depth[through] * face / np.maximum(np.sqrt(_dot3(face, face)), 1e-300)
        if friction > 0.0:
            normal = delta / np.where(depth > 0.0, depth, 1.0)
            moved = r + p + delta - np.einsum("km,ikm->im", b, prev)  # q + delta - q_prev
            tangential = moved - _dot3(moved, normal) * normal
            slide = np.sqrt(_dot3(tangential, tangential))
            keep = np.clip(1.0 - friction * depth / np.maximum(slide, 1e-15), 0.0, 1.0)
            delta -= np.where(slide > 1e-15, 1.0 - keep, 0.0) * tangential
        # Per vertex, the mean of its hit triangles' corrections weighted by depth^2 (module docstring): a vertex's
        # deepest triangle gets nearly its whole request, where a plain mean left a third of it for the next pass.
        # omega_t = depth_t^2 / deepest^2 (scaled to ~1 against underflow); f_kt = omega_t b_k w_k / sum_j b_j^2 w_j.
        omega = depth * (1.0 / deepest)
        omega *= omega
        coeff = weight * (omega * inverse_norm)
        total = np.bincount(flat_corner, (omega * moves).ravel(), minlength=V)
        total[total == 0.0] = 1.0  # vertices in no hit get a zero sum
        # The three coordinates' sums in one bincount: coordinate i of corner entry j goes to bin i V + vertex.
        dx = np.bincount(by_axis, (coeff[None] * delta[:, None, :]).ravel(), minlength=3 * V).reshape(3, V)
        dx /= total
        X += dx
        if k + 1 < passes and k % 2 == 0:
            # A triangle's distance to the centre changes by at most its corners' largest move, so the next pass
            # needs only the triangles within rho + that move. Only after an exact pass: an odd pass's distance is
            # its material point's, which can lie farther than the triangle's closest point.
            reach = dist < rho + float(np.sqrt(np.einsum("iv,iv->v", dx, dx).max()))
            if np.count_nonzero(reach) < 0.75 * len(reach):
                corner, w = corner[:, reach], w[:, reach]
                b, weight, moves = b[:, reach], weight[:, reach], moves[:, reach]
                movable, inverse_norm = movable[reach], inverse_norm[reach]
                flat_corner = corner.ravel()
                by_axis = (flat_corner[None, :] + V * _AXES).ravel()
                if prev is not None:
                    prev = prev[:, :, reach]
    x[vertices] = X.T
    return contacts

