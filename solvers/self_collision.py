"""Cloth self-collision: vertex-triangle and edge-edge proximity, a vectorized broad phase, a position-level response.

``SelfCollision(model, thickness, friction)`` is built once per body and ``resolve(x, x_prev)`` runs at the end
of every solver step, after the collider contacts, moving ``x`` in place (x_prev: the positions at the step's
start). Pinned particles (inv_mass 0) are never moved.

Broad phase: ``scipy.spatial.cKDTree`` joins (vertices with triangle centroids by ``sparse_distance_matrix``, edge
midpoints with each other by ``query_pairs``) within thickness + a skin + the bounding-sphere radii, kept as Verlet
lists until the motion since the join could exceed the skin (``SelfCollision._candidates`` says why that is exact);
every call then keeps the listed pairs whose bounding spheres are within thickness + twice the step's relative
motion (so a vertex that went through a triangle within the step is still found). Pairs that share a vertex, and
pairs closer than ``thickness`` in the rest shape (a fine mesh with a large thickness: its own neighbours; Müller's
Ten Minute Physics lesson does the same), are dropped.

Narrow phase (every pass): the exact closest point q = sum_k b_k x_k on the triangle (Ericson, "Real-Time
Collision Detection" 5.1.5, vectorized), b its barycentric weights. Each pair keeps the vertex on the SIDE of the
triangle's plane it was on at x_prev (s = sign of the plane distance at x_prev), so a vertex that tunnelled through
in one step is put back where it came from. The gap is

    closest point inside the triangle:   g = s n . (p - q),  direction d = s n        (n the unit face normal)
    closest point on an edge or corner:  g = |p - q|,        direction d = (p - q)/g  (only on the vertex's own
                                         side; a vertex beyond the plane but outside the triangle went round
                                         the border, or is the business of the neighbouring triangle)

and a pair is active when g < target, target = min(thickness, gap at x_prev + RECOVERY thickness). Only the part up
to the gap the pair had at the step's start changes velocities (it removes approach, never gives a separation speed:
no energy gain); the rest (a pair squeezed closer than thickness, or created that close, moved back towards it) is
velocity-free, see below. The correction is XPBD's for the constraint C = g - target
with gradient d at the vertex and -b_k d at the corners:

    dx_p = w_p lambda d,  dx_k = -b_k w_k lambda d,  lambda = -C / (w_p + sum_k b_k^2 w_k)

which changes the relative position p - q along d by exactly -C and conserves linear momentum (sum_k b_k = 1).
All active pairs are corrected at once (Jacobi), each pair's whole correction scaled by 1 / (the largest number of
active pairs any of its particles is in), which keeps momentum conservation and never overshoots. ``passes``
passes, then up to MAX_PASSES on the pairs still through each other or short of target by > PASS_TOLERANCE thickness.

Friction (after the passes, per pair that was pushed by a total depth delta): the relative tangential motion over
the step, t = tangential part of (p - p_prev) - sum_k b_k (x_k - x_k_prev), is reduced by at most friction * delta
(as ``colliders.resolve_contacts`` does for colliders), with the same mass weights: dissipative, momentum-conserving.

Edge-edge pairs (two edges of the body sharing no vertex) are handled the same way: the closest points of the two
segments (Ericson 5.1.9) give the stencil (coef 1 - s, s, -(1 - t), -t), the side is the sign of the orientation
(p1 - p2) . (d1 x d2) at x_prev, which flips exactly when the edges pass through each other. Without them, sharp
element-scale creases let edges cross with no vertex near a face (measured: dozens of crossings in the crumple scene).
The gap a pair had at x_prev is restored with velocity (approach removal); recovering from below thickness towards it
(at most RECOVERY * thickness per step) is also added to x_prev, so it moves the pair but gives it no velocity
(Macklin et al. 2014, "Unified particle physics", stabilization).

What holds (tests/test_self_collision.py): zero exact edge-triangle crossings at every frame for a 16 x 16 sheet
crumpling onto itself on the ground (XPBD, thickness 1/4 of an edge) and a two-layer stack on the ground (XPBD,
IMPLICIT_EULER, PROJECTIVE; layers stay >= 0.8 thickness apart); no response raises the kinetic energy of the step's
motion and every response keeps linear momentum. What does not (measured): IMPLICIT_EULER (2 substeps) and PROJECTIVE
(8 substeps) on the crumple scene end with 70-370 crossing pairs; at thickness 1/8 of an edge XPBD does too; a pair
already on the wrong side when a step starts is kept there (sides come from x_prev).

Cost (64 x 64 lab cloth, XPBD 30 x 1 with tethers, 48 frames, CPU time on the 2-core dev machine): the XPBD step
7.7 ms per substep, this module 123 ms per substep (16x; default therefore off). Where it goes (frames 28-30, the
crumpled drape): ~7000 watched pairs per call; Verlet-list rebuilds (two k-d tree joins, vertex-centroid and
edge-midpoint, ~100 ms each) on about half the substeps, because the cloth swinging from its pins moves more than
the skin relative to its mean; the exact narrow phase over the lists (~22k vertex-triangle, ~107k edge-edge
candidates, filtered by bounding spheres every call) and 4-16 Jacobi passes.
"""
import numpy as np
from scipy.spatial import cKDTree

DEFAULT_FRICTION = 0.3
"""Friction coefficient of cloth on itself (dimensionless); the solvers use it (no setting of its own yet)."""
PASSES = 4
"""Jacobi passes of the normal response per call."""
MAX_PASSES = 16
"""Passes go on beyond PASSES (up to this) while a pair is still on the wrong side of each other, or short of its
target by more than PASS_TOLERANCE * thickness."""
PASS_TOLERANCE = 0.1
RECOVERY = 0.1
"""A pair closer than thickness at the start of a step is moved apart by at most this fraction of thickness in it,
without velocity (see ``SelfCollision.resolve``)."""
SKIN_FRACTION = 0.3
"""The broad phase's spare distance (Verlet skin) as a fraction of the mean rest edge length."""


def closest_point_barycentric(p, a, b, c):
    """Barycentric weights of the closest point on each triangle (a, b, c) to p, and whether it is interior.

    p, a, b, c: (k, 3) [m]. Returns (bary (k, 3), interior (k,) bool): closest point = bary[:, 0] a +
    bary[:, 1] b + bary[:, 2] c; ``interior`` is False where it lies on an edge or a corner (Voronoi regions of
    Ericson's ClosestPtPointTriangle; degenerate triangles give an edge or corner point).
    """
    ab, ac, ap = b - a, c - a, p - a
    bp, cp = p - b, p - c

    def dot(u, v):
        return np.einsum("ij,ij->i", u, v)

    d1, d2 = dot(ab, ap), dot(ac, ap)
    d3, d4 = dot(ab, bp), dot(ac, bp)
    d5, d6 = dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2

    def ratio(num, den):
        return num / np.where(den != 0.0, den, 1.0)

    k = len(p)
    bary = np.empty((k, 3))
    # Interior first, then each region overwrites in the reverse of Ericson's test order (his first test wins).
    denom = va + vb + vc
    v_in, w_in = ratio(vb, denom), ratio(vc, denom)
    bary[:, 0], bary[:, 1], bary[:, 2] = 1.0 - v_in - w_in, v_in, w_in
    interior = np.ones(k, bool)
    regions = []
    w_bc = ratio(d4 - d3, (d4 - d3) + (d5 - d6))
    regions.append(((va <= 0.0) & (d4 - d3 >= 0.0) & (d5 - d6 >= 0.0), np.stack([0.0 * w_bc, 1.0 - w_bc, w_bc], 1)))
    w_ac = ratio(d2, d2 - d6)
    regions.append(((vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0), np.stack([1.0 - w_ac, 0.0 * w_ac, w_ac], 1)))
    regions.append(((d6 >= 0.0) & (d5 <= d6), np.array([0.0, 0.0, 1.0])))
    v_ab = ratio(d1, d1 - d3)
    regions.append(((vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0), np.stack([1.0 - v_ab, v_ab, 0.0 * v_ab], 1)))
    regions.append(((d3 >= 0.0) & (d4 <= d3), np.array([0.0, 1.0, 0.0])))
    regions.append(((d1 <= 0.0) & (d2 <= 0.0), np.array([1.0, 0.0, 0.0])))
    for mask, value in regions:
        if value.ndim == 1:
            bary[mask] = value
        else:
            bary[mask] = value[mask]
        interior &= ~mask
    return bary, interior


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


def closest_points_segments(p1, q1, p2, q2):
    """Closest points p1 + s (q1 - p1) and p2 + t (q2 - p2) of segment pairs (all (k, 3) [m]).

    Returns (s (k,), t (k,), interior (k,) bool): s, t in [0, 1] (Ericson 5.1.9, vectorized); ``interior`` when both
    lie strictly inside their segments and the segments are not parallel.
    """
    def dot(u, v):
        return np.einsum("ij,ij->i", u, v)

    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.maximum(dot(d1, d1), 1e-300), np.maximum(dot(d2, d2), 1e-300)
    b, c, f = dot(d1, d2), dot(d1, r), dot(d2, r)
    denom = a * e - b * b
    ok = denom > 1e-12 * a * e
    s = np.where(ok, np.clip((b * f - c * e) / np.where(ok, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0.0, np.clip(-c / a, 0.0, 1.0), np.where(t > 1.0, np.clip((b - c) / a, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    return s, t, ok & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)


def _triangle_edges(triangles):
    """Unique undirected edges (e, 2) of triangles (t, 3), each as (low, high)."""
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    return np.unique(np.sort(edges, axis=1), axis=0) if len(edges) else np.zeros((0, 2), np.int64)


def _pair_keys(i, j, count):
    return i * count + j


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
        bary, interior_vt = closest_point_barycentric(p, a, b, c)
        n_vt = np.cross(b - a, c - a)
        A, B = edges[e1], edges[e2]
        p1, q1, p2, q2 = x[A[:, 0]], x[A[:, 1]], x[B[:, 0]], x[B[:, 1]]
        s_, t_, interior_ee = closest_points_segments(p1, q1, p2, q2)
        n_ee = np.cross(q1 - p1, q2 - p2)
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


class SelfCollision:
    """Cloth self-collision of one body (``model.triangle_indices``): vertex-triangle and edge-edge proximity.

    thickness [m]: the distance the body keeps from itself (>= 0; 0 still keeps sides: no tunnelling).
    friction: dimensionless, >= 0. passes: Jacobi passes of the normal response. skin [m]: the broad phase's
    spare distance (default SKIN_FRACTION of the mean rest edge). edges: also keep edges apart from edges.
    """

    def __init__(self, model, thickness: float, friction: float = DEFAULT_FRICTION, passes: int = PASSES,
                 skin: float = None, edges: bool = True):
        if thickness < 0.0 or friction < 0.0:
            raise ValueError(f"thickness and friction must be >= 0, got {thickness} and {friction}")
        self.triangles = np.asarray(model.triangle_indices, np.int64).reshape(-1, 3)
        self.edges = _triangle_edges(self.triangles) if edges else np.zeros((0, 2), np.int64)
        self.inv_mass = model.inv_mass
        self.thickness = float(thickness)
        self.friction = float(friction)
        self.passes = int(passes)
        self.last_candidates = 0
        """Pairs the last ``resolve`` watched: within its reach after the exact distance test."""
        self.rebuilds = 0
        """Broad phases run so far (tree queries); the other calls reused the pair lists."""
        self._list = None
        self.excluded_vt = self.excluded_ee = np.zeros(0, np.int64)
        if len(self.triangles) == 0:
            return
        x0 = model.rest_positions
        if skin is None:
            e = self.edges if len(self.edges) else _triangle_edges(self.triangles)
            skin = SKIN_FRACTION * float(np.mean(np.linalg.norm(x0[e[:, 0]] - x0[e[:, 1]], axis=1)))
        self.skin = float(skin)
        # Pairs closer than thickness at rest are neighbours, not collisions (Müller's rule).
        vt, ee = self._query(x0, self.thickness)
        st = _Stencils(x0, vt, ee, self.triangles, self.edges)
        close = st.dist < self.thickness * (1.0 + 1e-9)
        k = len(vt[0])
        self.excluded_vt = np.sort(_pair_keys(vt[0][close[:k]], vt[1][close[:k]], len(self.triangles)))
        self.excluded_ee = np.sort(_pair_keys(ee[0][close[k:]], ee[1][close[k:]], len(self.edges)))

    # ------------------------------------------------------------------ broad phase

    def _spheres(self, x):
        """Bounding spheres of the triangles (centroid, radius) and of the edges (midpoint, half length) at x."""
        centroid, radius = _bounding_spheres(x, self.triangles)
        p, q = x[self.edges[:, 0]], x[self.edges[:, 1]]
        mid = 0.5 * (p + q)
        half = 0.5 * np.sqrt(np.einsum("ij,ij->i", q - p, q - p))
        return centroid, radius, mid, half

    def _query(self, x, reach: float, spheres=None):
        """Vertex-triangle pairs (v, t) and edge-edge pairs (e1, e2), e1 < e2, within ``reach`` of each other at x
        (by bounding spheres), without pairs that share a vertex and without rest-close pairs."""
        centroid, radius, mid, half = self._spheres(x) if spheres is None else spheres
        tri = self.triangles
        found = cKDTree(centroid, balanced_tree=False, compact_nodes=False).sparse_distance_matrix(
            cKDTree(x, balanced_tree=False, compact_nodes=False), reach + float(radius.max()) * (1.0 + 1e-9),
            output_type="ndarray")
        t, v, dist = found["i"].astype(np.int64), found["j"].astype(np.int64), found["v"]
        keep = (dist <= reach + radius[t]) & (tri[t] != v[:, None]).all(axis=1)
        t, v = t[keep], v[keep]
        keep = _drop(self.excluded_vt, v, t, len(tri))
        vt = (v[keep], t[keep])
        if len(self.edges) < 2:
            return vt, (np.zeros(0, np.int64), np.zeros(0, np.int64))
        pairs = cKDTree(mid, balanced_tree=False, compact_nodes=False).query_pairs(
            reach + 2.0 * float(half.max()) * (1.0 + 1e-9), output_type="ndarray").astype(np.int64)
        e1, e2 = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
        d = mid[e1] - mid[e2]
        A, B = self.edges[e1], self.edges[e2]
        keep = (np.einsum("ij,ij->i", d, d) <= (reach + half[e1] + half[e2]) ** 2)
        keep &= (A[:, 0] != B[:, 0]) & (A[:, 0] != B[:, 1]) & (A[:, 1] != B[:, 0]) & (A[:, 1] != B[:, 1])
        e1, e2 = e1[keep], e2[keep]
        keep = _drop(self.excluded_ee, e1, e2, len(self.edges))
        return vt, (e1[keep], e2[keep])

    def _candidates(self, x, x_prev):
        """Pairs that may be within thickness of each other at ``x``, or went through each other since x_prev:
        ((v, t), (e1, e2), reach).

        Verlet lists (as in molecular dynamics): the tree queries run with ``skin`` to spare, and their pair lists
        are reused until the vertices have moved, relative to their mean motion, by more than the skin allows. A
        pair not in a list was at least thickness + skin apart at the build; since then each point of it moved at
        most delta relative to the common mean, so it is at least thickness + skin - 2 delta apart now, which is more
        than reach = thickness + 2 m when 2 delta + 2 m <= skin (m: this step's largest motion relative to the mean,
        2 m the most a pair can have gone through each other). Listed pairs are then tested against the current
        bounding spheres with that reach.
        """
        step = x - x_prev
        step = step - step.mean(axis=0)
        motion = float(np.sqrt(np.max(np.einsum("ij,ij->i", step, step))))
        if self._list is not None:
            moved = x - self._list[2]
            moved = moved - moved.mean(axis=0)
            delta = float(np.sqrt(np.max(np.einsum("ij,ij->i", moved, moved))))
        spheres = self._spheres(x)
        if self._list is None or 2.0 * delta + 2.0 * motion > self._list[3]:
            skin = max(self.skin, 4.0 * motion)
            vt, ee = self._query(x, self.thickness + skin, spheres)
            self._list = (vt, ee, x.copy(), skin)
            self.rebuilds += 1
        (v, t), (e1, e2) = self._list[0], self._list[1]
        centroid, radius, mid, half = spheres
        reach = self.thickness + 2.0 * motion
        d = x[v] - centroid[t]
        near = np.einsum("ij,ij->i", d, d) <= (reach + radius[t]) ** 2
        d = mid[e1] - mid[e2]
        near_e = np.einsum("ij,ij->i", d, d) <= (reach + half[e1] + half[e2]) ** 2
        return (v[near], t[near]), (e1[near_e], e2[near_e]), reach

    # ------------------------------------------------------------------ response

    def resolve(self, x: np.ndarray, x_prev: np.ndarray) -> int:
        """Push the body's vertices, edges and faces apart, in place on ``x`` (n, 3) [m]; returns the pairs corrected.

        ``x_prev`` (n, 3) [m]: positions at the step's start (sides, the gap to keep, friction's motion). The
        velocity-free part of the correction (recovery of pairs that started the step closer than thickness) is added
        to ``x_prev`` too, in place, so a solver that derives v from x - x_prev gives it no velocity.
        """
        if len(self.triangles) == 0:
            return 0
        vt, ee, reach = self._candidates(x, x_prev)
        w = self.inv_mass
        now = _Stencils(x, vt, ee, self.triangles, self.edges)
        k = len(vt[0])
        keep = (now.dist <= reach) & (w[now.idx] > 0.0).any(axis=1)
        vt = (vt[0][keep[:k]], vt[1][keep[:k]])
        ee = (ee[0][keep[k:]], ee[1][keep[k:]])
        self.last_candidates = len(vt[0]) + len(ee[0])
        if self.last_candidates == 0:
            return 0
        plane_now = now.plane[keep]

        # Side and gap at the step's start.
        before = _Stencils(x_prev, vt, ee, self.triangles, self.edges)
        side = np.where(before.ok & (np.abs(before.plane) > 1e-12), np.sign(before.plane), np.where(plane_now < 0.0, -1.0, 1.0))
        # Approach removal changes velocities: restore at most the gap the pair had at the start. Recovery towards
        # thickness (at most RECOVERY * thickness per step) is also added to x_prev, so it moves the pair without
        # giving it any velocity (Macklin et al. 2014's stabilization): no energy gain either way.
        approach_target = np.minimum(self.thickness, before.dist)
        target = np.minimum(self.thickness, before.dist + RECOVERY * self.thickness)

        count = len(side)
        k_vt = len(vt[0])

        def evaluate(pos):
            """Stencils, gaps, push directions, C = gap - target and W = sum coef^2 w of the pairs at ``pos`` (sorted)."""
            a, b = pos[pos < k_vt], pos[pos >= k_vt] - k_vt
            st = _Stencils(x, (vt[0][a], vt[1][a]), (ee[0][b], ee[1][b]), self.triangles, self.edges)
            sd = side[pos]
            signed = sd * st.plane
            # Closest points inside both elements: the distance along the normal on the pair's own side (negative
            # when they went through each other). Otherwise (an edge or corner of a face, an end of an edge, parallel
            # edges): the distance, only on the pair's own side; beyond it the pair went round a border, or a
            # neighbouring element's pair is the one that sees the crossing.
            edge_ok = ~st.interior & ((signed >= 0.0) | ~st.ok) & (st.dist > 1e-12)
            gap = np.where(st.interior, signed, np.where(edge_ok, st.dist, np.inf))
            direction = np.where(st.interior[:, None], sd[:, None] * st.n,
                                 st.r / np.where(st.dist > 1e-12, st.dist, 1.0)[:, None])
            W = np.einsum("kj,kj->k", st.coef**2, w[st.idx])
            return st, gap, direction, gap - target[pos], W

        depth = np.zeros(count)
        ever = np.zeros(count, bool)
        live = np.arange(count)
        for k in range(MAX_PASSES):
            st, gap, direction, C, W = evaluate(live)
            active = (C < 0.0) & (W > 0.0)
            # Beyond ``passes``, go on only with the pairs still through each other (their side would be lost) or
            # short of their target by more than PASS_TOLERANCE * thickness (large steps: implicit Euler, PD).
            violating = active & ((gap < 0.0) | (C < -PASS_TOLERANCE * self.thickness))
            if k >= self.passes:
                active = violating
            if not np.any(active):
                break
            idx, coef = st.idx[active], st.coef[active]
            scale = self._scale(len(x), idx, coef)
            lam = -C[active] / W[active] * scale
            impulse = lam[:, None] * direction[active]
            self._apply(x, idx, coef, impulse)
            # The share of this correction beyond the approach removal is recovery: velocity-free.
            approach = np.clip(approach_target[live[active]] - gap[active], 0.0, -C[active])
            recovery = 1.0 - approach / -C[active]
            if np.any(recovery > 0.0):
                self._apply(x_prev, idx, coef, recovery[:, None] * impulse)
            depth[live[active]] += approach * scale  # friction's normal depth: the velocity-changing part only
            ever[live[active]] = True
            if k + 1 >= self.passes:
                live = live[violating]
        if self.friction > 0.0 and np.any(ever):
            pos = np.nonzero(ever)[0]
            st, _, direction, _, _ = evaluate(pos)
            self._friction(x, x_prev, st.idx, st.coef, direction, depth[pos])
        return int(np.count_nonzero(ever))

    def _scale(self, count, idx, coef):
        """Per-pair Jacobi scale 1 / (the largest number of active pairs any of its moved particles is in), (k,).

        The update is then an average of the pairs' own projections, so it never overshoots (a sum of barycentric
        weights as the count was tried: two vertices over one face pushed it twice and overshot by 17%)."""
        used = (coef != 0.0).ravel()
        load = np.bincount(idx.ravel()[used], minlength=count).astype(float)
        return 1.0 / np.maximum(1.0, np.where(coef != 0.0, load[idx], 0.0).max(axis=1))

    def _apply(self, x, idx, coef, impulse):
        """x_j += w_j coef_j J for every pair's particles, J = impulse (k, 3) (summed per particle)."""
        weight = (self.inv_mass[idx] * coef).ravel()
        flat = idx.ravel()
        for axis in range(3):
            x[:, axis] += np.bincount(flat, weight * np.repeat(impulse[:, axis], 4), minlength=len(x))

    def _friction(self, x, x_prev, idx, coef, direction, depth):
        """Cut each pair's relative tangential motion over the step by at most friction * depth."""
        relative = np.einsum("kj,kjd->kd", coef, (x - x_prev)[idx])
        tangential = relative - np.einsum("ij,ij->i", relative, direction)[:, None] * direction
        slide = np.sqrt(np.einsum("ij,ij->i", tangential, tangential))
        cut = np.where(slide > 1e-15, np.minimum(1.0, self.friction * depth / np.maximum(slide, 1e-15)), 0.0)
        W = np.einsum("kj,kj->k", coef**2, self.inv_mass[idx])
        scale = self._scale(len(x), idx, coef)
        ok = W > 0.0
        impulse = -(cut * scale / np.where(ok, W, 1.0) * ok)[:, None] * tangential
        self._apply(x, idx, coef, impulse)


def self_collision_for(model, config):
    """The SelfCollision a solver runs for ``model`` under ``config``, or None: only CLOTH (faces, no tets) with
    ``config.use_self_collision`` on, at distance ``config.thickness``."""
    if not getattr(config, "use_self_collision", False) or model.tet_count or len(model.triangle_indices) == 0:
        return None
    return SelfCollision(model, config.thickness)
