"""Cloth self-collision: vertex-triangle and edge-edge proximity, a vectorized broad phase, a position-level response.

``SelfCollision(model, thickness, friction)`` is built once per body and ``resolve(x, x_prev)`` runs at the end
of every solver step, after the collider contacts, moving ``x`` in place (x_prev: the positions at the step's
start). Pinned particles (inv_mass 0) are never moved. The solvers call it as ``resolve_beside_colliders``: particles
resting on a collider count as heavy, so the layer above them is pushed away rather than they into the collider.
Coming after the contacts, it may leave a vertex up to COLLIDER_SLACK * thickness inside a collider
(``resolve_beside_colliders`` has the figures); the next step's contacts take it out.

The surfaces kept apart are ``model.collision_triangles``: for a mesh of quads, both splits of every quad. Blender
draws each quad of the deformed mesh split along one of its diagonals (its loop triangles), not necessarily the
one the solver uses; with only the solver's split kept clear, the drawn split of a sharply folded quad crossed the
layer beside it (tools/compare.py's 32 x 32 buckling cloth in Blender: 18 crossing pairs over the drawn triangles at
worst, 0 over the solver's; with both splits 0 and 0). The four triangles of a quad are the faces of the
tetrahedron its corners span, so nothing gets into the space between the two splits either. Cost: that bake took
88 s with one split and 155 s with both (XPBD, 48 frames, one run each).

Broad phase: ``scipy.spatial.cKDTree`` joins (vertices with triangle centroids, edge midpoints with each other; long
elements joined on their own so one stretched edge does not widen every query), then the exact distances of what
they find: the Verlet lists keep the pairs within thickness + a skin (exact distance, so a sheet's own neighbours stay
out), until the motion since the build could exceed the skin (``SelfCollision._candidates`` says why that is exact).
The skin grows with the measured motion (SKIN_MOTION steps of it, up to MAX_SKIN_FRACTION of an edge). Every call
then watches the listed pairs whose distance at the build, less what their elements moved since, is within their own
reach, thickness + the most the two elements moved relative to each other in the step (so a vertex that went through
a triangle within the step is still found). Pairs that share a vertex, and pairs closer than ``thickness`` in the
rest shape (a fine mesh with a large thickness: its own neighbours; Müller's Ten Minute Physics lesson does the
same), are dropped.

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

Fail-safe (``_fail_safe``, after the response and friction): the exact edge-triangle crossings that are new since
x_prev are found from the listed pairs that can witness them (``_new_crossings`` says why that finds all of them),
and their particles are frozen into rigid impact zones (Provot 1997; Bridson et al. 2002), translation only: each zone
moves from x_prev by its mass-weighted mean motion, zones growing until nothing new crosses. That keeps momentum and
never adds kinetic energy; it only runs when the Jacobi passes left a crossing.

What holds (tests/test_self_collision.py): zero exact edge-triangle crossings at every frame for a 16 x 16 sheet
crumpling onto itself on the ground (XPBD, thickness 1/4 of an edge), a 24 x 24 sheet draped over a small sphere whose
skirt folds onto itself (XPBD; 11-19 crossing pairs without self-collision) and a two-layer stack on the ground (XPBD,
IMPLICIT_EULER, PROJECTIVE; layers stay >= 0.8 thickness apart); the fail-safe undoes a crossing left to it with
momentum kept; no response raises the kinetic energy of the step's motion and every response keeps linear momentum.
Measured (XPBD 30 x 1, 64 x 64, 48 frames, count_self_intersections every frame): the lab cloth (10 m, pinned at two
corners, onto a sphere) 0 crossings at every frame at thickness 0.01 m and at 0.04 m (1/4 of an edge), where the
previous version (no fail-safe) crossed from frame 26 on (11, 99, 225 pairs at frames 26-28); the same cloth dropped
flat from 3 m onto the ground, tilted 8 degrees with 5 cm of noise: 0 crossings at every frame. The crumple
scene also holds in PBD, SYMPLECTIC_EULER, IMPLICIT_EULER and PROJECTIVE (70-370 crossing pairs before the fail-safe
in the last two). What does not: a vertex can stay up to COLLIDER_SLACK * thickness inside a collider
(``resolve_beside_colliders``); a pair already on the wrong side when a step starts is kept there (sides come from
x_prev), and the fail-safe only prevents new crossings, it does not undo old ones (a cloth that starts crossed, or
rest-close pairs excluded by Müller's rule).

Cost (CPU time on the 2-core dev machine shared with other jobs, so +-20%; per substep, against the XPBD step without
self-collision in the same run): lab cloth 75 ms per call vs 10.8 ms per XPBD substep at thickness 0.01 (6.9x; 92 ms
vs 10.4 ms, 8.8x, at 0.04; ~1 list build per 2 substeps), the flat drop 10.4 ms vs 5.4 ms (1.9x); before (no exact
list filter, one global reach): 123 ms vs 7.7 ms (16x) on the lab cloth. Default therefore still off. Where it goes:
the list rebuilds (k-d tree joins and the exact distances of what they find), which happen every 1-3 substeps when the
cloth's free corners whip (up to 0.04 m per substep relative to the mean at frame 25 of the lab scene, a quarter of an
edge): the skin must cover the fastest particle and a larger skin fills the lists with the sheet's own neighbours.
Per-particle skins (only the fast elements re-queried) are the next step; the watched pairs (~6000 in the drape) and
the Jacobi passes cost less. Those figures are from before both splits of every quad were kept (above): that about
doubled them. Now (session 6, bake in Blender, one quiet run) the 64 x 64 lab cloth takes 2754 ms per frame with
self-collision against 204 ms without, and a cProfile of 24 frames puts 88% of it in the list rebuilds (323 of 720
calls rebuilt, 185 ms each: k-d tree joins 28 s and edge-edge exact distances 16 s of 68 s)."""
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from .geometry.intersections import segments_cross_triangles

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
CONTACT_BAND = 1e-6
"""[m] A particle this close to a collider's surface (thickness included) rests on it (``resolve_beside_colliders``)."""
CONTACT_MASS_FACTOR = 100.0
"""How much heavier a particle resting on a collider is in the self-collision response."""
COLLIDER_SLACK = 0.25
"""The self-collision response may push a particle at most this fraction of thickness into a collider (a pass
that pushes it deeper brings it back to that depth). Not to the surface: a particle put exactly on it lies in the
plane of the cloth resting there, at distance 0 from it, and a 32 x 32 cloth buckling onto the ground then showed 6
crossing pairs in Blender (its positions are stored as float32)."""
SKIN_FRACTION = 0.3
"""The broad phase's smallest spare distance (Verlet skin) as a fraction of the mean rest edge length."""
SKIN_MOTION = 4.0
"""The skin is at least this many times the step's largest motion relative to the mean (a few steps per build)."""
LONG_FACTOR = 1.5
"""Broad phase: elements larger than this times the median size are joined on their own (``_join``)."""
MAX_SKIN_FRACTION = 0.6
"""... but at most this fraction of the mean rest edge (beyond it a sheet's own neighbours fill the lists), unless the
step's motion needs more (2.5 m)."""
ZONE_CLAMP_ROUNDS = 4
"""Rounds that move a fail-safe zone out of the colliders (``SelfCollision._clamp_zones``)."""
MAX_ZONE_ROUNDS = 32
"""Rounds of impact-zone growth in the fail-safe before the whole body is moved as one."""


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


def _cross(u, v):
    """Row-wise cross products of (k, 3) arrays (np.cross is several times slower on small arrays)."""
    u0, u1, u2 = u[:, 0], u[:, 1], u[:, 2]
    v0, v1, v2 = v[:, 0], v[:, 1], v[:, 2]
    return np.stack([u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0], axis=1)


def _vt_distance(x, v, tri):
    """Exact distances (k,) of the vertices v (k,) to the triangles tri (k, 3) at x."""
    if len(v) == 0:
        return np.zeros(0)
    p, a, b, c = x[v], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
    bary, _ = closest_point_barycentric(p, a, b, c)
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


def _csr_rows(start, keys):
    """Every entry of the CSR rows ``keys`` (k,) of an index with row starts ``start``: (rows, entries), rows[i] the
    position in ``keys`` whose row holds flat entry entries[i]."""
    degree = start[keys + 1] - start[keys]
    rows = np.repeat(np.arange(len(keys)), degree)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(degree) - degree, degree)
    return rows, start[keys][rows] + offset


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


class SelfCollision:
    """Cloth self-collision of one body (``model.collision_triangles``, else ``model.triangle_indices``):
    vertex-triangle and edge-edge proximity.

    thickness [m]: the distance the body keeps from itself (>= 0; 0 still keeps sides: no tunnelling).
    friction: dimensionless, >= 0. passes: Jacobi passes of the normal response. skin [m]: the broad phase's
    smallest spare distance (default SKIN_FRACTION of the mean rest edge). edges: also keep edges apart from edges.
    """

    def __init__(self, model, thickness: float, friction: float = DEFAULT_FRICTION, passes: int = PASSES,
                 skin: float = None, edges: bool = True):
        if thickness < 0.0 or friction < 0.0:
            raise ValueError(f"thickness and friction must be >= 0, got {thickness} and {friction}")
        triangles = model.collision_triangles if len(model.collision_triangles) else model.triangle_indices
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.edges = _triangle_edges(self.triangles) if edges else np.zeros((0, 2), np.int64)
        self.inv_mass = model.inv_mass
        self.thickness = float(thickness)
        self.friction = float(friction)
        self.passes = int(passes)
        self.last_candidates = 0
        """Pairs the last ``resolve`` watched: within its reach after the exact distance test."""
        self.rebuilds = 0
        """Broad phases run so far (tree queries); the other calls reused the pair lists."""
        self.zones = 0
        """Calls so far in which the fail-safe had to freeze impact zones (see ``_fail_safe``)."""
        self._list = None
        self._heavy = None
        """During ``resolve_beside_colliders``: the particles weighing CONTACT_MASS_FACTOR more, (n,) bool."""
        self.excluded_vt = self.excluded_ee = np.zeros(0, np.int64)
        if len(self.triangles) == 0:
            return
        count = len(model.inv_mass)
        # Adjacency for the fail-safe (CSR): the triangles of each edge (two on a manifold sheet, up to four where
        # both splits of the quads are kept) and the edges of each vertex.
        tri_edges = np.sort(np.concatenate([self.triangles[:, [0, 1]], self.triangles[:, [1, 2]],
                                            self.triangles[:, [2, 0]]]), axis=1)
        if len(self.edges):
            keys = self.edges[:, 0] * count + self.edges[:, 1]
            which = np.searchsorted(keys, tri_edges[:, 0] * count + tri_edges[:, 1])
            owner = np.tile(np.arange(len(self.triangles)), 3)
            order = np.argsort(which, kind="stable")
            self.edge_triangles = owner[order]
            self.edge_triangle_start = np.searchsorted(which[order], np.arange(len(self.edges) + 1))
            ends = np.concatenate([self.edges[:, 0], self.edges[:, 1]])
            order = np.argsort(ends, kind="stable")
            self.vertex_edges = np.tile(np.arange(len(self.edges)), 2)[order]
            self.vertex_edge_start = np.searchsorted(ends[order], np.arange(count + 1))
        x0 = model.rest_positions
        if skin is None:
            e = self.edges if len(self.edges) else _triangle_edges(self.triangles)
            skin = SKIN_FRACTION * float(np.mean(np.linalg.norm(x0[e[:, 0]] - x0[e[:, 1]], axis=1)))
        self.skin = float(skin)
        self.max_skin = max(self.skin, self.skin / SKIN_FRACTION * MAX_SKIN_FRACTION)
        # Pairs closer than thickness at rest are neighbours, not collisions (Müller's rule).
        (v, t, _), (e1, e2, _) = self._query(x0, self.thickness)
        self.excluded_vt = np.sort(_pair_keys(v, t, len(self.triangles)))
        self.excluded_ee = np.sort(_pair_keys(e1, e2, len(self.edges)))

    # ------------------------------------------------------------------ broad phase

    def _spheres(self, x):
        """Bounding spheres of the triangles (centroid, radius) and of the edges (midpoint, half length) at x."""
        centroid, radius = _bounding_spheres(x, self.triangles)
        p, q = x[self.edges[:, 0]], x[self.edges[:, 1]]
        mid = 0.5 * (p + q)
        half = 0.5 * np.sqrt(np.einsum("ij,ij->i", q - p, q - p))
        return centroid, radius, mid, half

    def _query(self, x, reach: float):
        """Vertex-triangle pairs (v, t, distance) and edge-edge pairs (e1, e2, distance), e1 < e2, whose exact
        distance at x is <= ``reach``, without pairs that share a vertex and without rest-close pairs.

        k-d tree joins on bounding spheres (vertices with triangle centroids, edge midpoints with each other), then the
        exact distances of what they find: the joins' spheres are loose (a flat sheet's own neighbours overlap them),
        the exact test keeps the lists short."""
        centroid, radius, mid, half = self._spheres(x)
        tri = self.triangles
        # Long elements (stretched, or a mesh of mixed sizes) would widen every query to their size: the short ones
        # are joined within reach + their own largest size, each long one on its own with its size.
        t, v = _join(centroid, radius, x, reach, LONG_FACTOR * float(np.median(radius)))
        keep = (tri[t] != v[:, None]).all(axis=1)
        t, v = t[keep], v[keep]
        keep = _drop(self.excluded_vt, v, t, len(tri))
        v, t = v[keep], t[keep]
        d_vt = _vt_distance(x, v, tri[t])
        keep = d_vt <= reach
        vt = (v[keep], t[keep], d_vt[keep])
        if len(self.edges) < 2:
            return vt, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        e1, e2 = _join(mid, half, None, reach, LONG_FACTOR * float(np.median(half)))
        A, B = self.edges[e1], self.edges[e2]
        keep = (A[:, 0] != B[:, 0]) & (A[:, 0] != B[:, 1]) & (A[:, 1] != B[:, 0]) & (A[:, 1] != B[:, 1])
        e1, e2 = e1[keep], e2[keep]
        keep = _drop(self.excluded_ee, e1, e2, len(self.edges))
        e1, e2 = e1[keep], e2[keep]
        d_ee = _ee_distance(x, self.edges[e1], self.edges[e2])
        keep = d_ee <= reach
        return vt, (e1[keep], e2[keep], d_ee[keep])

    def _build(self, x, skin):
        """Run the broad phase at x with ``skin`` to spare: the Verlet list (see ``_candidates``)."""
        (v, t, dv), (e1, e2, de) = self._query(x, self.thickness + skin)
        idx = np.concatenate([np.column_stack([v, self.triangles[t]]), np.column_stack([self.edges[e1], self.edges[e2]])])
        split = np.concatenate([np.full(len(v), 1), np.full(len(e1), 2)])  # particles of the first element
        self._list = dict(vt=(v, t), ee=(e1, e2), dist=np.concatenate([dv, de]), idx=idx, split=split,
                          x=x.copy(), skin=skin)
        self.rebuilds += 1

    def _skin_for(self, motion):
        """The skin of a list built for a step with this largest motion relative to the mean [m]."""
        return max(self.skin, min(SKIN_MOTION * motion, self.max_skin), 2.5 * motion)

    def _moved(self, x):
        """Per-particle distance (n,) moved since the list's build, relative to the mean motion."""
        moved = x - self._list["x"]
        moved -= moved.mean(axis=0)
        return np.sqrt(np.einsum("ij,ij->i", moved, moved))

    def _pair_bound(self, per_particle):
        """Per listed pair: the largest ``per_particle`` value over each of its two elements, summed (k,)."""
        g = per_particle[self._list["idx"]]
        first = np.where(self._list["split"] == 1, g[:, 0], np.maximum(g[:, 0], g[:, 1]))
        second = np.where(self._list["split"] == 1, np.maximum(np.maximum(g[:, 1], g[:, 2]), g[:, 3]),
                          np.maximum(g[:, 2], g[:, 3]))
        return first + second

    def _candidates(self, x, x_prev):
        """Pairs that may be within thickness of each other at ``x``, or went through each other since x_prev:
        ((v, t), (e1, e2), reach (k,) per pair).

        Verlet lists (as in molecular dynamics): the broad phase keeps the pairs within thickness + skin (exact
        distance), and its lists are reused until the particles have moved, relative to their mean motion, by more
        than the skin allows. A pair not in a list was more than thickness + skin apart at the build; since then each
        point of it moved at most delta relative to the common mean, so it is more than thickness + skin - 2 delta
        apart now, which is at least thickness + 2 m when 2 delta + 2 m <= skin (m: this step's largest motion
        relative to the mean). A pair's own reach is thickness + m_A + m_B (m_A: the largest motion relative to the
        mean over its first element's particles; m_A + m_B the most the pair can have gone through each other). The skin grows with the
        measured motion (SKIN_MOTION m), so fast cloth rebuilds every few steps, not every step. Listed pairs are
        kept when their distance at the build, less what their two elements moved since, is within reach; those
        get the exact test.
        """
        step = x - x_prev
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        largest = float(motion.max())
        if self._list is not None:
            moved = self._moved(x)
        if self._list is None or 2.0 * float(moved.max()) + 2.0 * largest > self._list["skin"]:
            self._build(x, self._skin_for(largest))
            moved = np.zeros(len(x))
        reach = self.thickness + self._pair_bound(motion)
        near = np.nonzero(self._list["dist"] - self._pair_bound(moved) <= reach)[0]
        k = len(self._list["vt"][0])
        (v, t), (e1, e2) = self._list["vt"], self._list["ee"]
        a, b = near[near < k], near[near >= k] - k
        return (v[a], t[a]), (e1[b], e2[b]), reach[near]

    # ------------------------------------------------------------------ response

    def resolve(self, x: np.ndarray, x_prev: np.ndarray) -> int:
        """Push the body's vertices, edges and faces apart, in place on ``x`` (n, 3) [m]; returns the pairs corrected.

        ``x_prev`` (n, 3) [m]: positions at the step's start (sides, the gap to keep, friction's motion). The
        velocity-free part of the correction (recovery of pairs that started the step closer than thickness) is added
        to ``x_prev`` too, in place, so a solver that derives v from x - x_prev gives it no velocity.
        """
        return self._resolve(x, x_prev, ())

    def _resolve(self, x, x_prev, colliders):
        if len(self.triangles) == 0:
            return 0
        x_start = x_prev.copy()
        corrected = self._respond(x, x_prev, colliders)
        self._fail_safe(x, x_prev, x_start, colliders)
        return corrected

    def resolve_beside_colliders(self, x: np.ndarray, x_prev: np.ndarray, colliders) -> int:
        """``resolve`` for a body that the collider contacts have just projected: particles resting on a collider
        (within CONTACT_BAND of its surface) weigh CONTACT_MASS_FACTOR times their mass in the response, so a layer
        lying on the ground or a sphere pushes the layer above it away instead of being pushed into the collider
        (the ground's reaction; Guendelman et al. 2003 use the same mass scaling for stacks), and a particle that a
        pass pushes deeper than COLLIDER_SLACK * thickness into a collider is brought back to that depth and weighs
        as much from then on (``_keep_out_of_colliders``). Returns the pairs corrected.

        Measured, deepest vertex inside the sphere beyond its thickness, lab cloth on its sphere, cloth thickness
        1 cm: 21 x 21 PROJECTIVE 8 x 5, 60 frames, 13.2 mm -> 2.5 mm (faces 14.4 -> 6.4 mm); XPBD 0.34 mm before.
        The slack is not 0: putting the particles back on the surface gave 0 mm, but they then lay in the plane of
        the cloth resting there, at distance 0 from it, and a 32 x 32 cloth buckling onto the ground showed 6
        crossing pairs in Blender (float32 positions). Before this (self-collision after the contacts, nothing
        more), projecting the colliders once more after the response pushed particles up through the layers above
        them (up to 103 crossing pairs a frame on that cloth)."""
        if not colliders or len(self.triangles) == 0:
            return self.resolve(x, x_prev)
        resting = np.zeros(len(x), bool)
        for collider in colliders:
            d, _ = collider.distance_and_normal(x)
            resting |= d < CONTACT_BAND
        inv_mass = self.inv_mass
        try:
            self.inv_mass = np.where(resting, inv_mass / CONTACT_MASS_FACTOR, inv_mass)
            self._heavy = resting
            corrected = self._resolve(x, x_prev, colliders)
        finally:
            self.inv_mass = inv_mass
            self._heavy = None
        return corrected

    def _keep_out_of_colliders(self, x, moved, colliders):
        """Bring the particles ``moved`` (indices) that a pass pushed deeper than COLLIDER_SLACK * thickness into a
        collider back to that depth (along its normal), in place; from then on they weigh CONTACT_MASS_FACTOR times
        more (``self.inv_mass`` is the call's own copy), so the next passes move the layer above them instead. The
        collider contacts of the next step take them the rest of the way out."""
        moved = moved[self.inv_mass[moved] > 0.0]
        slack = COLLIDER_SLACK * self.thickness
        for collider in colliders:
            if len(moved) == 0:
                return
            d, n = collider.distance_and_normal(x[moved])
            inside = d < -slack
            if np.any(inside):
                which = moved[inside]
                x[which] -= (d[inside] + slack)[:, None] * n[inside]
                which = which[~self._heavy[which]]
                self.inv_mass[which] /= CONTACT_MASS_FACTOR
                self._heavy[which] = True

    def _respond(self, x, x_prev, colliders=()):
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
            if colliders:
                self._keep_out_of_colliders(x, np.unique(idx[coef != 0.0]), colliders)
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
            if colliders:
                self._keep_out_of_colliders(x, np.unique(st.idx[st.coef != 0.0]), colliders)
        return int(np.count_nonzero(ever))

    # ------------------------------------------------------------------ fail-safe

    def _new_crossings(self, x, x_start):
        """Edge-triangle pairs (edge, triangle) crossing at x that did not cross at x_start, (c, 2) int.

        Along the straight motion from x_start to x, a crossing starts when an end of the edge passes through the
        triangle (a vertex-triangle pair at distance 0) or the edge passes through an edge of the triangle (an
        edge-edge pair at distance 0). That pair ("witness") is now at most b apart, b = the largest motion (relative
        to the mean) over its first element plus that over its second, and it is in the Verlet list as long as
        2 delta + 2 m' <= thickness + skin (checked; else the list is rebuilt here). So the listed pairs within b,
        each expanded to the edge-triangle pairs it can witness, contain every new crossing; the exact test
        (``segments_cross_triangles``, as ``count_self_intersections``) picks them out.
        """
        step = x - x_start
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        moved = self._moved(x)
        if 2.0 * float(moved.max()) + 2.0 * float(motion.max()) > self.thickness + self._list["skin"]:
            self._build(x, self._skin_for(float(motion.max())))
            moved = np.zeros(len(x))
        bound = self._pair_bound(motion)
        near = np.nonzero(self._list["dist"] - self._pair_bound(moved) <= bound)[0]
        k = len(self._list["vt"][0])
        vt_pos, ee_pos = near[near < k], near[near >= k] - k
        v, t = self._list["vt"][0][vt_pos], self._list["vt"][1][vt_pos]
        e1, e2 = self._list["ee"][0][ee_pos], self._list["ee"][1][ee_pos]
        keep = _vt_distance(x, v, self.triangles[t]) <= bound[vt_pos]
        v, t = v[keep], t[keep]
        if len(e1):
            keep = _ee_distance(x, self.edges[e1], self.edges[e2]) <= bound[k + ee_pos]
            e1, e2 = e1[keep], e2[keep]
        if len(self.edges) == 0:
            return np.zeros((0, 2), np.int64)
        # Expand: a vertex's edges against the triangle; each edge against the other's triangles.
        rows, entries = _csr_rows(self.vertex_edge_start, v)
        pe = [self.vertex_edges[entries]]
        pt = [t[rows]]
        for a, b in ((e1, e2), (e2, e1)):
            rows, entries = _csr_rows(self.edge_triangle_start, b)
            pe.append(a[rows])
            pt.append(self.edge_triangles[entries])
        pe, pt = np.concatenate(pe), np.concatenate(pt)
        E, T = self.edges[pe], self.triangles[pt]
        keep = ~((T == E[:, :1]).any(axis=1) | (T == E[:, 1:]).any(axis=1))
        pe, pt, E, T = pe[keep], pt[keep], E[keep], T[keep]
        hit = segments_cross_triangles(x[E[:, 0]], x[E[:, 1]], x[T[:, 0]], x[T[:, 1]], x[T[:, 2]])
        if not np.any(hit):
            return np.zeros((0, 2), np.int64)
        pe, pt, E, T = pe[hit], pt[hit], E[hit], T[hit]
        old = segments_cross_triangles(x_start[E[:, 0]], x_start[E[:, 1]], x_start[T[:, 0]], x_start[T[:, 1]],
                                       x_start[T[:, 2]])
        return np.column_stack([pe[~old], pt[~old]])

    def _fail_safe(self, x, x_prev, x_start, colliders=()):
        """Undo any crossing the response left: rigid impact zones (Provot 1997, Bridson et al. 2002), translation only.

        The particles of each new crossing pair are joined into zones (connected components); a zone moves as one
        rigid translation from x_start, by the mass-weighted mean of its particles' motion over the step (x - x_prev),
        and its x_prev is reset to x_start. Inside a zone nothing crosses that did not cross at x_start; zones grow
        and merge until no new crossing is left. The mean keeps linear momentum and never raises the kinetic energy
        (zones holding a pinned particle follow the pins instead). With ``colliders``, a zone's translation is
        changed so that it ends no deeper in them than the response may push (``_clamp_zones``; the colliders' push
        is external, so then momentum is not kept): on the 21 x 21 lab scene in PROJECTIVE 8 x 5, as the add-on
        builds it, zones fired in every substep from frame 60 on and carried the cloth 154 mm into the sphere.
        """
        found = self._new_crossings(x, x_start)
        if len(found) == 0:
            return
        self.zones += 1
        n = len(x)
        free = self.inv_mass > 0.0
        mass = np.where(free, 1.0 / np.where(free, self.inv_mass, 1.0), 0.0)
        x_out, x_prev_out = x.copy(), x_prev.copy()
        velocity = x_out - x_prev_out  # the step's motion the solver turns into velocity
        links = []
        for _ in range(MAX_ZONE_ROUNDS):
            stencil = np.column_stack([self.edges[found[:, 0]], self.triangles[found[:, 1]]])
            links.append(stencil)
            every = np.concatenate(links)
            graph = coo_matrix((np.ones(every.size - len(every)), (np.repeat(every[:, 0], 4), every[:, 1:].ravel())),
                               shape=(n, n))
            _, label = connected_components(graph, directed=False)
            in_zone = np.zeros(n, bool)
            in_zone[every.ravel()] = True
            zone = label[in_zone]
            members = np.nonzero(in_zone)[0]
            m = mass[members]
            pinned = ~free[members]
            zones = int(zone.max()) + 1
            total = np.bincount(zone, m, zones)
            pins = np.bincount(zone, pinned.astype(float), zones)
            shift = np.empty((len(members), 3))
            for axis in range(3):
                free_mean = np.bincount(zone, m * velocity[members, axis], zones) / np.where(total > 0, total, 1.0)
                pin_mean = np.bincount(zone, pinned * (x_out[members, axis] - x_start[members, axis]), zones) / \
                    np.maximum(pins, 1.0)
                shift[:, axis] = np.where(pins > 0, pin_mean, free_mean)[zone]
            if colliders:
                shift = self._clamp_zones(x_start[members], shift, zone, pins[zone] > 0, colliders)
            move = members[free[members]]
            x[move] = x_start[move] + shift[free[members]]
            x_prev[move] = x_start[move]
            found = self._new_crossings(x, x_start)
            if len(found) == 0:
                return
        # Out of rounds: the whole body moves as one (nothing crosses that did not at the start).
        shift = (mass[:, None] * velocity).sum(axis=0) / max(mass.sum(), 1e-300)
        if colliders:
            members = np.nonzero(free)[0]
            shift = self._clamp_zones(x_start[members], np.tile(shift, (len(members), 1)),
                                      np.zeros(len(members), np.int64), np.zeros(len(members), bool), colliders)[0]
        x[free] = x_start[free] + shift
        x_prev[free] = x_start[free]

    def _clamp_zones(self, start, shift, zone, pinned, colliders):
        """Zone translations (one row per member, (m, 3)) changed so that no member of a zone without pins ends
        deeper than COLLIDER_SLACK * thickness inside a collider: each round moves a zone along the normal of its
        deepest member by that member's excess depth (exact for a plane, a few rounds for a sphere). A zone can
        always stay where the step started it (shift 0), which is where it ends if the rounds run out."""
        shift = shift.copy()
        slack = COLLIDER_SLACK * self.thickness
        zones = int(zone.max()) + 1 if len(zone) else 0
        for _ in range(ZONE_CLAMP_ROUNDS):
            deepest = np.zeros(zones)
            push = np.zeros((zones, 3))
            for collider in colliders:
                d, n = collider.distance_and_normal(start + shift)
                excess = -(d + slack)
                inside = (excess > 0.0) & ~pinned
                if not np.any(inside):
                    continue
                # The deepest member of each zone: sorted by excess depth, the last write per zone wins.
                rows = np.nonzero(inside)[0]
                rows = rows[np.argsort(excess[rows])]
                z = zone[rows]
                worse = excess[rows] > deepest[z]
                rows, z = rows[worse], z[worse]
                deepest[z] = excess[rows]
                push[z] = excess[rows, None] * n[rows]
            if not np.any(deepest > 0.0):
                return shift
            shift += push[zone]
        for collider in colliders:  # still inside after the rounds: those zones stay where they started
            d, _ = collider.distance_and_normal(start + shift)
            shift[np.isin(zone, np.unique(zone[(d < -slack) & ~pinned]))] = 0.0
        return shift

    # ------------------------------------------------------------------ helpers

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
