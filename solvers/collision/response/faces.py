"""Faces against sphere colliders: the position-level response that keeps a triangle's interior outside a sphere.

``collider_contacts.resolve_contacts`` keeps the *vertices* at least ``radius + thickness`` from a sphere's centre;
between vertices a face can still dip into it (the sphere shows through a coarse cloth).
``collider_contacts.resolve_collider_contacts`` calls the face push (``Sphere.resolve_faces`` ->
``resolve_sphere_faces``) between two vertex projections, so the vertex projection stays the final word on every vertex
(a face push near where a sphere meets the ground must not leave a vertex below the ground). For every triangle whose
closest point q = sum_k b_k x_k to the centre c (exact, barycentric weights b, ``primitives.closest_weights``) lies
within rho = radius + thickness:

    depth = rho - |q - c|,   n = (q - c) / |q - c|,
    dx_k = b_k w_k / (sum_j b_j^2 w_j) * delta,   delta = depth n (+ friction, below),   w_k = inv_mass_k,

the position-based correction of a point with barycentric weights: it moves q by exactly delta (sum_k b_k dx_k =
delta), heavier and pinned (w = 0) corners less or not at all. A triangle whose corners are all pinned is skipped.

Friction as for vertex contacts (Macklin et al. 2014, as ``resolve_contacts``): the closest point's tangential
motion over the step, t = tangential part of (q + depth n - q_prev), q_prev = sum_k b_k x_prev_k, is removed up to
``friction * depth`` (delta -= min(1, friction depth / |t|) t), the sphere's own motion over the step taken off.

Neighbouring triangles share corners, so all hits of a pass are applied at once (Jacobi) and each vertex takes the
mean of its hit triangles' corrections (a vertex of six triangles resting on the sphere would otherwise be pushed
six times). A mean undershoots where neighbours disagree, so the pass repeats (``FACE_PASSES``; a face push can also
move a neighbour's corner), each pass from the new positions. Ground planes need nothing: a flat face cannot dip
below a plane its corners are above.

Pads: on a cloth resting on a sphere every vertex sits on the sphere after the vertex projection, so every face
around it dips in by its sagitta and the passes above run on thousands of faces every step (they were more than
half of a 64 x 64 XPBD cloth's step), only for the next step's vertex projection to pull the vertices back in. So
the vertex contacts keep each vertex a little further out instead, at sqrt(rho^2 + pad2) from the centre
(``shapes.padded_radius``), with pad2 from ``sphere_pads``: the largest squared reach s^2 of the triangles around
it at rest, times PAD_STRETCH^2. A triangle whose corners are all that far out cannot reach into the sphere: for
p = sum_k b_k x_k, |p - c|^2 = sum_k b_k r_k^2 - sum_{k<l} b_k b_l L_kl^2, and the last sum is at most s^2 = R^2 (the
circumradius) on an acute triangle and L_max^2 / 4 on a right or obtuse one (``_reach2``). The cull below applies
the same bound to the faces as they are now, so the passes only run on faces that stretched past the allowance or
whose vertices the pad's cap (``shapes.PAD_LIMIT``) left short. The cost: a vertex rests up to its faces'
sagitta above the sphere, plus the shear allowance (4.6 mm on the 64 x 64 lab cloth's 16 cm quads on a 2.7 m
sphere, of which 2.3 mm is the exact sagitta; the 1% cap, 27 mm, on the 21 x 21 one's 50 cm quads): where faces rest
flat on the sphere the sagitta is exactly where their vertices must be; a vertex on the sphere's top under a tent
of faces floats by up to the whole pad.

Velocity: the position-based solvers and PROJECTIVE derive v = (x - x_prev) / dt after this, mass-spring adds the
correction to v (v += dx / dt) like the vertex projection. Either way a face only gets back out what it moved into
the sphere during the step, plus at most ~20% where a corner carries more than its share (b_k / sum b_j^2 <= ~1.2
for equal masses), so the response does not bounce (tests/test_face_contact.py measures it).
"""
import numpy as np

from ..narrow_phase.primitives import _cross, closest_weights

FACE_PASSES = 4
"""Jacobi passes per call at most; measured on the 21 x 21 lab cloth on its sphere, 4 passes leave a residual depth
below a tenth of a millimetre per step (the next step continues from there). Fewer run when a pass finds no face
deeper than FACE_TOLERANCE."""

FACE_TOLERANCE = 1e-7
"""A pass whose deepest face lies less than this fraction of rho inside the sphere stops the passes without moving
anything (0.27 um on the lab's 2.7 m sphere: far below what a frame can show, far above round-off)."""

PAD_STRETCH = 1.4
"""``sphere_pads`` allow a triangle's reach to grow this much over its rest value before the passes take over. A
quad grid without shear springs shears freely where it drapes over a sphere, and shear lengthens one diagonal:
measured on the 64 x 64 lab cloth (XPBD defaults, 48 frames), the passes still ran on ~510 faces a call with 1.05,
235 with 1.15, 90 with 1.25 and 25 with 1.4 (the cap, PAD_LIMIT, stops it mattering on coarse cloth)."""

REFIT_GROWTH = 1.25
"""The cached bound on the longest edge (see ``_Topology.longest_edge``) is recomputed from the edges once the
motion since the last exact value could have stretched an edge by this factor."""


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
    """Which triangles tri (m, 3) pass the cull with their own reach (``_reach2``), (m,) bool."""
    r2_min = np.minimum(np.minimum(r2[tri[:, 0]], r2[tri[:, 1]]), r2[tri[:, 2]])
    return r2_min - _reach2(x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]) < rho * rho


def _reach2(a, b, c):
    """max over the triangle's points p = sum_k b_k x_k of sum_{k<l} b_k b_l L_kl^2 [m^2], per triangle (m,), for
    corners a, b, c (m, 3): the squared circumradius R^2 of an acute triangle, L_max^2 / 4 of a right or obtuse one
    (the maximum of R^2 - |p - O|^2 over the triangle, O the circumcentre). It bounds how far the triangle reaches
    in past its corners: |p - c|^2 >= min_k |x_k - c|^2 - _reach2 for any point c."""
    ab, bc, ca = _norm2(b - a), _norm2(c - b), _norm2(a - c)
    longest = np.maximum(np.maximum(ab, bc), ca)
    acute = 2.0 * longest < ab + bc + ca  # L_max^2 < the sum of the other two squares
    if not acute.any():  # the usual case on a quad grid: right triangles
        return 0.25 * longest
    normal = _cross(b - a, c - a)
    area4 = np.maximum(4.0 * _norm2(normal), 1e-300)  # 16 area^2
    return np.where(acute, np.minimum(ab * bc * ca / area4, longest / 3.0), 0.25 * longest)


def sphere_pads(rest_positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Each particle's sphere pad [m^2], (n,): the largest ``_reach2`` of the triangles around it at rest, times
    PAD_STRETCH^2 (zero for a particle in no triangle). Pass it as ``pad2`` to ``collider_contacts.resolve_contacts``
    and ``ContactConstraints`` (module docstring)."""
    x = np.asarray(rest_positions, float)
    pad2 = np.zeros(len(x))
    triangles = _as_triangles(triangles)
    if len(triangles):
        reach2 = PAD_STRETCH**2 * _reach2(x[triangles[:, 0]], x[triangles[:, 1]], x[triangles[:, 2]])
        for k in range(3):
            np.maximum.at(pad2, triangles[:, k], reach2)
    return pad2


def _norm2(u):
    return np.einsum("ij,ij->i", u, u)


def _dot3(u, v):
    """Column-wise dot products of (3, m) arrays (structure of arrays), (m,)."""
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def resolve_face_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray, colliders,
                          passes: int = FACE_PASSES) -> int:
    """Push every triangle (t, 3) out of each collider that reaches between corners (``Collider.resolve_faces``), in
    place on x; returns the contacts found."""
    return sum(c.resolve_faces(x, x_prev, inv_mass, triangles, passes) for c in colliders)


def resolve_sphere_faces(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray, sphere,
                         passes: int = FACE_PASSES) -> int:
    """Push every triangle that reaches within ``radius + thickness`` of the sphere's centre back out, in place.

    x (n, 3): positions at the end of the step [m]; x_prev (n, 3): at its start (for friction, relative to the
    sphere's motion); inv_mass (n,) [1/kg], 0 for pinned particles (never moved); triangles (t, 3) int. Returns the
    number of triangles in contact found in the first pass.
    """
    triangles = _as_triangles(triangles)
    if len(triangles) == 0 or len(x) == 0:
        return 0
    topology = _topology(triangles)
    center = np.asarray(sphere.center, float)
    rho = float(sphere.radius + sphere.thickness)
    r2, near = _near(x, topology, center, rho)
    if near is None or len(near) == 0:
        return 0
    tri = triangles[near]
    keep = _own_bound(x, r2, tri, rho)
    keep &= inv_mass[tri].max(axis=1) > 0.0  # a triangle of pins only is the pins' business
    tri = tri[keep]
    if len(tri) == 0:
        return 0
    drift = np.zeros(3) if sphere.start is None else center - sphere.start.center
    return _push_out(x, x_prev, inv_mass, tri, center, rho, float(sphere.friction), passes, drift)


def _push_out(x, x_prev, inv_mass, tri, center, rho, friction, passes, drift) -> int:
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
    for k in range(passes):
        G = X[:, corner]  # (3 coords, 3 corners, m)
        A = G[:, 0]
        v, wt, e1, e2 = closest_weights(p, A, G[:, 1], G[:, 2])
        b = np.stack([1.0 - v - wt, v, wt])  # (3 corners, m)
        q = A + v * e1 + wt * e2
        r = q - p
        dist = np.sqrt(_dot3(r, r))
        weight = b * w  # b_k w_k
        norm = _dot3(b, weight)  # sum_j b_j^2 w_j; 0: a closest point on pinned corners only, the pins' business
        hit = (dist < rho) & (norm > 0.0)
        hits = int(np.count_nonzero(hit))
        if hits == 0:
            break
        depth = np.where(hit, rho - dist, 0.0)
        if depth.max() < tolerance:
            break
        if k == 0:
            contacts = hits
        # A face through the very centre is pushed along its own normal rather than divided by zero.
        normal = r / np.where(dist > 1e-12, dist, 1.0)
        through = np.flatnonzero(hit & (dist <= 1e-12))
        if len(through):
            face = _cross(e1[:, through].T, e2[:, through].T).T
            normal[:, through] = face / np.maximum(np.sqrt(_dot3(face, face)), 1e-300)
        delta = depth * normal  # (3, m)
        if friction > 0.0:
            moved = q + delta - np.einsum("km,ikm->im", b, prev) - drift.reshape(3, 1)  # relative to the sphere
            tangential = moved - _dot3(moved, normal) * normal
            slide = np.sqrt(_dot3(tangential, tangential))
            keep = np.clip(1.0 - friction * depth / np.maximum(slide, 1e-15), 0.0, 1.0)
            delta -= np.where(slide > 1e-15, 1.0 - keep, 0.0) * tangential
        coeff = weight * np.divide(1.0, norm, out=np.zeros_like(norm), where=hit)  # b_k w_k / sum_j b_j^2 w_j
        count = np.bincount(flat_corner, (coeff > 0.0).ravel(), minlength=V)
        np.maximum(count, 1.0, out=count)  # vertices in no hit get a zero sum
        step2 = np.zeros(V)
        for axis in range(3):
            dx = np.bincount(flat_corner, (coeff * delta[axis]).ravel(), minlength=V)
            dx /= count
            X[axis] += dx
            step2 += dx * dx
        if k + 1 < passes:
            # A triangle's distance to the centre changes by at most its corners' largest move, so the next pass
            # needs only the triangles within rho + that move.
            reach = dist < rho + float(np.sqrt(step2.max()))
            if np.count_nonzero(reach) < 0.75 * len(reach):
                corner, w = corner[:, reach], w[:, reach]
                flat_corner = corner.ravel()
                if prev is not None:
                    prev = prev[:, :, reach]
    x[vertices] = X.T
    return contacts
