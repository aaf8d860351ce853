"""Cloth self-collision: vertex-triangle and edge-edge proximity, a vectorized broad phase, a position-level response.

``SelfCollision(model, thickness, friction)`` is built once per body and ``resolve(x, x_prev)`` runs at the end
of every solver step, after the collider contacts, moving ``x`` in place (x_prev: the positions at the step's
start). Pinned particles (inv_mass 0) are never moved. The solvers call it as ``resolve_beside_colliders``, which
solves it together with the collider contacts (below, "Colliders").

Colliders (``resolve_beside_colliders``). The collider contacts have projected x just before; the response must not
undo them, and a projection after the response must not push particles through the layers above them (tried: 0 mm
deep, but a 32 x 32 cloth buckling onto the ground crossed itself in up to 103 pairs a frame and the fail-safe fired
every substep). So the contacts are constraints inside the response: (1) particles resting on a collider (within
CONTACT_BAND of its surface) weigh CONTACT_MASS_FACTOR times their mass, so a layer lying on the ground pushes the
layer above it away; (2) every Jacobi pass ends with the particles it moved projected back out of the colliders
(along the collider normal, no friction: the solver's contact pass already applied it), and those count as resting
(heavy) from then on, so the next pass moves the layer above instead. A particle pushed up through the layer above
it is seen by the next pass (the pair's side is kept from x_prev, so it is "through" and violating), which moves
that layer up; (3) friction's tangential moves are projected the same way; (4) the fail-safe's rigid zones (below)
are translated out of the colliders (``_clamp_zones``: along the normal of a zone's deepest member, a few rounds; a
zone that will not come out stays at its start, which was outside), and it re-checks the crossings afterwards, so
whatever the zones do cannot create one. Every step therefore ends with no vertex inside a collider (zones: up to the
ZONE_CLAMP_ROUNDS approximation on a sphere) and no edge-triangle crossing that did not exist at its start.
Measured, the deepest vertex inside a collider after any step (thickness counted as inside), before -> after: lab
cloth 21 x 21 on its sphere (thickness 1 cm) XPBD 30 x 1 1.95 -> 0 mm, PROJECTIVE 8 x 5 31.6 -> 0 mm (a later run
of the old code on today's solvers: 370 mm at frame 34), its deepest face point 14.8 -> 11.3 mm in PROJECTIVE
(faces are ``face_contact``'s business; XPBD 0.2 -> 0.005 mm); the crumple scene (tests) at 16 x 16 XPBD 4.7 -> 0,
PROJECTIVE 7.5 -> 0 mm, at 32 x 32 XPBD 4.0 -> 0 mm; 0 crossing pairs at every frame in all of them, before and
after. The fail-safe fired in 115 of 480 PROJECTIVE lab calls (337 of 800 before) and in 55 of 420 XPBD crumple
calls (59 before). Collider friction is not applied to the in-pass projections, and the contact response is not
momentum-conserving (the colliders are external).

Broad phase: Verlet lists with per-particle skins (``SelfCollision._candidates`` says why they are exact). Every
particle has a reference position (taken when it was last refreshed, in the frame of the mean position) and a skin
(SKIN_FRACTION of the mean rest edge, or SKIN_MOTION times its own motion per step, up to MAX_SKIN_FRACTION of an edge
unless the motion needs more); the list holds the pairs within thickness + their two elements' skins in that
reference configuration. A call refreshes only the particles of the elements whose motion since their reference
outgrew their skin (``_refresh``: ``scipy.spatial.cKDTree`` joins of the refreshed elements against all, on bounding
spheres grown by the skins, large ones joined on their own, then exact distances), so the slow part of a cloth keeps
its list while its whipping corners are re-queried. Every call then watches the listed pairs whose reference
distance, less what their two elements moved since, is within their own reach, thickness + the most the two elements
moved relative to each other in the step (so a vertex that went through a triangle within the step is still found).
Pairs that share a vertex, and pairs closer than ``thickness`` in the rest shape (a fine mesh with a large thickness:
its own neighbours; Müller's Ten Minute Physics lesson does the same), are dropped.

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
in the last two). What does not: a pair already on the wrong side when a step starts is kept there
(sides come from x_prev), and the fail-safe only prevents new crossings, it does not undo old ones (a cloth that
starts crossed, or rest-close pairs excluded by Müller's rule).

Cost (process CPU time per ``resolve_beside_colliders`` call, the same recorded inputs replayed through the old and
the new code on the 2-core dev machine shared with other jobs, +-20%): lab cloth 64 x 64 (XPBD 30 x 1, frames 20-22,
where its free corners whip up to 0.026 m per substep relative to the mean) 148.5 -> 61.2 ms; 21 x 21 (frames 25-28)
15.5 -> 12.4 ms; the 32 x 32 crumple (frames 6-8, a dense pile) 99 -> 102 ms, where the Jacobi passes (a new
``_Stencils`` of ~9000 pairs every pass) and the refreshes share the time. The old broad phase rebuilt the whole list
in 59 of 60 calls of the 64 x 64 segment (the global skin had to cover the fastest particle); now a call refreshes
about 15% of the particles (580 of 4096). Left: the partial refresh still builds k-d trees of all elements and joins
edges on bounding spheres (a fine crumpled sheet has ~40 edge midpoints within reach of each edge, 10x the pairs
kept); the passes recompute the closest points of all live pairs. Default therefore still off."""
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


def _join_sets(ca, ra, cb, rb, reach):
    """Pairs (i, j) of spheres (ca (k, 3), ra (k,)) and (cb (m, 3), rb (m,)) with |ca_i - cb_j| <= reach + ra_i + rb_j.

    k-d tree joins; on each side the spheres larger than LONG_FACTOR times the median radius are joined on their
    own, so a few large ones (long elements, fast particles' skins) do not widen the query of all the others."""
    if len(ca) == 0 or len(cb) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)

    def groups(r):
        long = r > LONG_FACTOR * float(np.median(r))
        return [g for g in (np.nonzero(~long)[0], np.nonzero(long)[0]) if len(g)]

    ga, gb = groups(ra), groups(rb)
    trees_b = [(g, cKDTree(cb[g], balanced_tree=False, compact_nodes=False)) for g in gb]
    out_i, out_j = [], []
    for g in ga:
        tree_a = cKDTree(ca[g], balanced_tree=False, compact_nodes=False)
        for h, tree_b in trees_b:
            limit = reach + (float(ra[g].max()) + float(rb[h].max())) * (1.0 + 1e-9)
            found = tree_a.sparse_distance_matrix(tree_b, limit, output_type="ndarray")
            out_i.append(g[found["i"]]), out_j.append(h[found["j"]])
    i, j = np.concatenate(out_i).astype(np.int64), np.concatenate(out_j).astype(np.int64)
    d = ca[i] - cb[j]
    limit = reach + ra[i] + rb[j]
    keep = np.einsum("ij,ij->i", d, d) <= limit * limit
    return i[keep], j[keep]


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
    """Cloth self-collision of one body (``model.triangle_indices``): vertex-triangle and edge-edge proximity.

    thickness [m]: the distance the body keeps from itself (>= 0; 0 still keeps sides: no tunnelling).
    friction: dimensionless, >= 0. passes: Jacobi passes of the normal response. skin [m]: the broad phase's
    smallest spare distance (default SKIN_FRACTION of the mean rest edge). edges: also keep edges apart from edges.
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
        self.refreshed = 0
        """Particles whose references the broad phase has refreshed so far (summed over its runs)."""
        self.zones = 0
        """Calls so far in which the fail-safe had to freeze impact zones (see ``_fail_safe``)."""
        self._list = None
        self._resting = self._true_inv_mass = None
        self.excluded_vt = self.excluded_ee = np.zeros(0, np.int64)
        if len(self.triangles) == 0:
            return
        count = len(model.inv_mass)
        # Adjacency for the fail-safe: the triangles of each edge (-1: none) and the edges of each vertex (CSR).
        tri_edges = np.sort(np.concatenate([self.triangles[:, [0, 1]], self.triangles[:, [1, 2]],
                                            self.triangles[:, [2, 0]]]), axis=1)
        if len(self.edges):
            keys = self.edges[:, 0] * count + self.edges[:, 1]
            which = np.searchsorted(keys, tri_edges[:, 0] * count + tri_edges[:, 1])
            owner = np.tile(np.arange(len(self.triangles)), 3)
            order = np.argsort(which, kind="stable")
            which, owner = which[order], owner[order]
            first = np.r_[True, which[1:] != which[:-1]]
            self.edge_triangles = np.full((len(self.edges), 2), -1, np.int64)
            self.edge_triangles[which[first], 0] = owner[first]
            second = ~first & np.r_[False, first[:-1]]  # a third triangle on one edge (non-manifold) is ignored
            self.edge_triangles[which[second], 1] = owner[second]
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

    def _element_max(self, per_particle):
        """The largest ``per_particle`` value over each triangle's corners (t,) and each edge's ends (e,)."""
        tri, e = self.triangles, self.edges
        on_tri = np.maximum(np.maximum(per_particle[tri[:, 0]], per_particle[tri[:, 1]]), per_particle[tri[:, 2]])
        on_edge = np.maximum(per_particle[e[:, 0]], per_particle[e[:, 1]]) if len(e) else np.zeros(0)
        return on_tri, on_edge

    def _refresh(self, x, motion, particles=None):
        """Re-run the broad phase for the elements touching ``particles`` (all: None) at x: their reference positions
        become the current ones (in the frame of the mean), their skins follow this step's ``motion`` (per particle,
        ``_skin_for``), and every pair involving an element that holds one of them is dropped and found again against
        all elements (the reference configuration; see ``_candidates``)."""
        n = len(x)
        y = x - x.mean(axis=0)
        skins = self._skin_for(motion)
        if self._list is None or particles is None:
            self._Y, self._s = y.copy(), skins
            dirty = np.ones(n, bool)
        else:
            dirty = np.zeros(n, bool)
            dirty[particles] = True
            self._Y[dirty] = y[dirty]
            self._s[dirty] = skins[dirty]
        self.rebuilds += 1
        self.refreshed += int(np.count_nonzero(dirty))
        Y, sv = self._Y, self._s
        tri, edges = self.triangles, self.edges
        st, se = self._element_max(sv)
        dirty_t, dirty_e = self._element_max(dirty)
        reach = self.thickness
        centroid, radius = _bounding_spheres(Y, tri)
        # Vertex-triangle: dirty vertices against all triangles, clean vertices against dirty triangles.
        dv, dt = np.nonzero(dirty)[0], np.nonzero(dirty_t)[0]
        i1, j1 = _join_sets(Y[dv], sv[dv], centroid, radius + st, reach)
        v1, t1 = dv[i1], j1
        cv = np.nonzero(~dirty)[0]
        i2, j2 = _join_sets(Y[cv], sv[cv], centroid[dt], radius[dt] + st[dt], reach)
        v = np.concatenate([v1, cv[i2]])
        t = np.concatenate([t1, dt[j2]])
        keep = (tri[t] != v[:, None]).all(axis=1)
        v, t = v[keep], t[keep]
        keep = _drop(self.excluded_vt, v, t, len(tri))
        v, t = v[keep], t[keep]
        d_vt = _vt_distance(Y, v, tri[t])
        keep = d_vt <= reach + sv[v] + st[t]
        v, t, d_vt = v[keep], t[keep], d_vt[keep]
        if len(edges) >= 2:
            p, q = Y[edges[:, 0]], Y[edges[:, 1]]
            mid = 0.5 * (p + q)
            half = 0.5 * np.sqrt(np.einsum("ij,ij->i", q - p, q - p)) + se
            de = np.nonzero(dirty_e)[0]
            i, j = _join_sets(mid[de], half[de], mid, half, reach)
            e1, e2 = de[i], j
            keep = ~dirty_e[e2] | (e1 < e2)  # dirty-dirty pairs once
            e1, e2 = np.minimum(e1[keep], e2[keep]), np.maximum(e1[keep], e2[keep])
            A, B = edges[e1], edges[e2]
            keep = (A[:, 0] != B[:, 0]) & (A[:, 0] != B[:, 1]) & (A[:, 1] != B[:, 0]) & (A[:, 1] != B[:, 1])
            e1, e2 = e1[keep], e2[keep]
            keep = _drop(self.excluded_ee, e1, e2, len(edges))
            e1, e2 = e1[keep], e2[keep]
            d_ee = _ee_distance(Y, edges[e1], edges[e2])
            keep = d_ee <= reach + se[e1] + se[e2]
            e1, e2, d_ee = e1[keep], e2[keep], d_ee[keep]
        else:
            e1 = e2 = np.zeros(0, np.int64)
            d_ee = np.zeros(0)
        if self._list is not None and particles is not None:
            (ov, ot), (oe1, oe2) = self._list["vt"], self._list["ee"]
            k = len(ov)
            keep_vt = ~(dirty[ov] | dirty_t[ot])
            keep_ee = ~(dirty_e[oe1] | dirty_e[oe2])
            v, t = np.concatenate([ov[keep_vt], v]), np.concatenate([ot[keep_vt], t])
            e1, e2 = np.concatenate([oe1[keep_ee], e1]), np.concatenate([oe2[keep_ee], e2])
            d_vt = np.concatenate([self._list["dist"][:k][keep_vt], d_vt])
            d_ee = np.concatenate([self._list["dist"][k:][keep_ee], d_ee])
        idx = np.concatenate([np.column_stack([v, tri[t]]), np.column_stack([edges[e1], edges[e2]])])
        split = np.concatenate([np.full(len(v), 1), np.full(len(e1), 2)])  # particles of the first element
        self._list = dict(vt=(v, t), ee=(e1, e2), dist=np.concatenate([d_vt, d_ee]), idx=idx, split=split)

    def _skin_for(self, motion):
        """Per particle: the skin of a reference taken in a step with this motion relative to the mean [m]."""
        return np.maximum(np.maximum(self.skin, np.minimum(SKIN_MOTION * motion, self.max_skin)), 2.5 * motion)

    def _moved(self, x):
        """Per-particle distance (n,) from the reference positions, in the frame of the mean position."""
        moved = x - x.mean(axis=0) - self._Y
        return np.sqrt(np.einsum("ij,ij->i", moved, moved))

    def _expired(self, moved, motion, slack):
        """Particles of the elements whose skin no longer covers moved + motion - slack (see ``_candidates``)."""
        bad = moved + motion > self._s + slack  # vertex elements
        mt, me = self._element_max(moved)
        ct, ce = self._element_max(motion)
        st, se = self._element_max(self._s)
        bad_t = mt + ct > st + slack
        bad_e = me + ce > se + slack
        if not (np.any(bad) or np.any(bad_t) or np.any(bad_e)):
            return None
        bad = bad.copy()
        bad[self.triangles[bad_t].ravel()] = True
        bad[self.edges[bad_e].ravel()] = True
        return np.nonzero(bad)[0]

    def _update_list(self, x, motion, slack):
        """Keep the Verlet list valid for a step with per-particle ``motion``: refresh the expired elements' particles
        (a second expiry right after falls back to a full rebuild). Returns moved (n,) since the references."""
        if self._list is None:
            self._refresh(x, motion)
            return np.zeros(len(x))
        moved = self._moved(x)
        expired = self._expired(moved, motion, slack)
        if expired is None:
            return moved
        self._refresh(x, motion, expired)
        moved = self._moved(x)
        if self._expired(moved, motion, slack) is not None:
            self._refresh(x, motion)
            moved = np.zeros(len(x))
        return moved

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

        Verlet lists with per-particle skins. Every particle i has reference positions Y_i (taken at the call that
        last refreshed it, in the frame of the mean position) and a skin s_i; an element's skin S_A is the largest
        over its particles. The list holds every pair whose distance D in the reference configuration (Y, the
        particles' own reference times mixed) is <= thickness + S_A + S_B. The distance of two elements changes by at
        most the largest motion of each element's particles, so a pair not listed is now more than thickness + S_A +
        S_B - d_A - d_B apart (d_A: the largest distance of A's particles from their references), which is at least
        thickness + m_A + m_B (the pair's reach: m_A the largest motion over A's particles in this step, relative to
        the mean, m_A + m_B the most the pair can have gone through each other) as long as every element has
        d_A + m_A <= S_A. The elements for which that fails are refreshed (``_refresh``: their particles take new
        references and skins, SKIN_MOTION times their own motion, and every element holding one is queried again);
        the slow rest of the cloth keeps its list. Listed pairs are kept when D - d_A - d_B is within reach; those get
        the exact test.
        """
        step = x - x_prev
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        moved = self._update_list(x, motion, 0.0)
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

    def resolve_beside_colliders(self, x: np.ndarray, x_prev: np.ndarray, colliders) -> int:
        """``resolve`` for a body that the collider contacts have just projected, solved together with them (see the
        module docstring, "Colliders"): particles resting on a collider (within CONTACT_BAND of its surface) weigh
        CONTACT_MASS_FACTOR times their mass in the response, every Jacobi pass ends with the moved particles
        projected out of the colliders (those then count as resting too), and the fail-safe's rigid zones are
        translated out of the colliders. Returns the pairs corrected."""
        if not colliders:
            return self.resolve(x, x_prev)
        free = self.inv_mass > 0.0
        resting = np.zeros(len(x), bool)
        for collider in colliders:
            d, _ = collider.distance_and_normal(x)
            resting |= d < CONTACT_BAND
        inv_mass = self.inv_mass
        try:
            self.inv_mass = np.where(resting, inv_mass / CONTACT_MASS_FACTOR, inv_mass)
            self._resting = resting & free
            self._true_inv_mass = inv_mass
            corrected = self._resolve(x, x_prev, colliders)
        finally:
            self.inv_mass = inv_mass
            self._resting = self._true_inv_mass = None
        return corrected

    def _resolve(self, x, x_prev, colliders):
        if len(self.triangles) == 0:
            return 0
        x_start = x_prev.copy()
        corrected = self._respond(x, x_prev, colliders)
        self._fail_safe(x, x_prev, x_start, colliders)
        return corrected

    def _project(self, x, colliders, which=None):
        """Project the free particles ``which`` (all: None) out of the colliders, in place; they then count as resting
        (CONTACT_MASS_FACTOR heavier) for the rest of the call. Returns whether any moved."""
        if not colliders:
            return False
        idx = np.nonzero(self.inv_mass > 0.0)[0] if which is None else which[self.inv_mass[which] > 0.0]
        if len(idx) == 0:
            return False
        moved = False
        for collider in colliders:
            d, n = collider.distance_and_normal(x[idx])
            hit = d < 0.0
            if np.any(hit):
                moved = True
                j = idx[hit]
                x[j] -= d[hit, None] * n[hit]
                new = j[~self._resting[j]]
                if len(new):
                    self._resting[new] = True
                    self.inv_mass[new] = self._true_inv_mass[new] / CONTACT_MASS_FACTOR
        return moved

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
        w = self.inv_mass  # (the resting particles' weights change during the passes: read through this name)
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
            W = np.einsum("kj,kj->k", st.coef**2, self.inv_mass[st.idx])
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
            if colliders:  # collider contacts as constraints inside the passes
                self._project(x, colliders, np.unique(idx))
            if k + 1 >= self.passes:
                live = live[violating]
        if self.friction > 0.0 and np.any(ever):
            pos = np.nonzero(ever)[0]
            st, _, direction, _, _ = evaluate(pos)
            self._friction(x, x_prev, st.idx, st.coef, direction, depth[pos])
            self._project(x, colliders, np.unique(st.idx))
        return int(np.count_nonzero(ever))

    # ------------------------------------------------------------------ fail-safe

    def _new_crossings(self, x, x_start):
        """Edge-triangle pairs (edge, triangle) crossing at x that did not cross at x_start, (c, 2) int.

        Along the straight motion from x_start to x, a crossing starts when an end of the edge passes through the
        triangle (a vertex-triangle pair at distance 0) or the edge passes through an edge of the triangle (an
        edge-edge pair at distance 0). That pair ("witness") is now at most b apart, b = the largest motion (relative
        to the mean) over its first element plus that over its second, and it is in the Verlet list as long as every
        element has d_A + m'_A <= S_A + thickness / 2 (``_candidates``' notation; checked, else the elements for which
        it fails are refreshed here). So the listed pairs within b,
        each expanded to the edge-triangle pairs it can witness, contain every new crossing; the exact test
        (``segments_cross_triangles``, as ``count_self_intersections``) picks them out.
        """
        step = x - x_start
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        moved = self._update_list(x, motion, 0.5 * self.thickness)
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
        start = self.vertex_edge_start
        degree = start[v + 1] - start[v]
        rows = np.repeat(np.arange(len(v)), degree)
        offset = np.arange(len(rows)) - np.repeat(np.cumsum(degree) - degree, degree)
        pe = [self.vertex_edges[start[v][rows] + offset]]
        pt = [t[rows]]
        for a, b in ((e1, e2), (e2, e1)):
            for side in range(2):
                tri = self.edge_triangles[b, side]
                pe.append(a[tri >= 0])
                pt.append(tri[tri >= 0])
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
        (zones holding a pinned particle follow the pins instead).
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

    @staticmethod
    def _clamp_zones(start, shift, zone, pinned, colliders):
        """Zone translations (per member rows, (m, 3)) changed so that no member of a zone without pins ends inside a
        collider: each round moves a zone along the normal of its deepest member by that member's depth (exact for a
        plane, a few rounds for a sphere); a zone whose members started outside can always stay at its start (shift
        0), which is where it ends if the rounds run out."""
        shift = shift.copy()
        zones = int(zone.max()) + 1 if len(zone) else 0
        for _ in range(ZONE_CLAMP_ROUNDS):
            deepest = np.zeros(zones)
            push = np.zeros((zones, 3))
            for collider in colliders:
                d, n = collider.distance_and_normal(start + shift)
                inside = (d < 0.0) & ~pinned
                if not np.any(inside):
                    continue
                # The deepest member of each zone: sort by depth, the last write per zone wins.
                rows = np.nonzero(inside)[0]
                rows = rows[np.argsort(-d[rows])]
                z = zone[rows]
                worse = -d[rows] > deepest[z]
                rows, z = rows[worse], z[worse]
                deepest[z] = -d[rows]
                push[z] = -d[rows, None] * n[rows]
            if not np.any(deepest > 0.0):
                return shift
            shift += push[zone]
        # Not out after the rounds: zones still inside stay where they started (outside, as the step started).
        for collider in colliders:
            d, _ = collider.distance_and_normal(start + shift)
            bad = np.unique(zone[(d < 0.0) & ~pinned])
            shift[np.isin(zone, bad)] = 0.0
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
