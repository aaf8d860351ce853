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
they find: the Verlet lists keep the pairs within thickness + the skins of their two elements (exact distance, so a
sheet's own neighbours stay out), until some element's motion since the build could exceed its skin
(``SelfCollision._candidates`` says why that is exact). Each particle's skin follows its own motion (SKIN_MOTION / 2
steps of it, up to half MAX_SKIN_FRACTION of an edge), so a fast corner neither forces a rebuild every step nor
widens the lists of the slow rest; when only a few elements outrun their skins, those skins grow (their pairs
re-queried at the build's positions) instead of a rebuild. Every call
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
A pass sweeps the active pairs colour by colour (Gauss-Seidel; the pairs of one colour share no moved particle):
each colour's pairs are measured again where the colours before them left the particles, and each still short of its
target takes RELAXATION of that correction; momentum is conserved pair by pair. ``passes`` passes, then up to
MAX_PASSES on the pairs still through each other or short of target by > PASS_TOLERANCE thickness.

Friction (after the passes, per pair that was pushed by a total depth delta): the relative tangential motion over
the step, t = tangential part of (p - p_prev) - sum_k b_k (x_k - x_k_prev), is reduced by at most friction * delta
(as ``collider_contacts.resolve_contacts`` does for colliders), with the same mass weights: dissipative,
momentum-conserving.

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
never adds kinetic energy; it only runs when the passes left a crossing.

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

Cost: the list rebuilds dominate (k-d tree joins and the exact distances of what they find, whenever skins run
out: most of what the joins find are the sheet's own neighbours, dropped by the exact test), then the response and
the fail-safe's crossing tests, each ~0.3-0.4 s a frame on the folding 64 x 64 lab cloth (bench/profile_self_collision.py
frames 21-36 from a saved state, XPBD 30 x 1: 1.9 s a frame, 1.7 of them self-collision: rebuilds 0.7, the lists'
check and skin growths 0.35, response 0.4, fail-safe 0.3, friction and impact zones ~0; the same run before the box
tests, the restricted passes and the skin growth took 2.6 s). With the native library, the lists' build, their
per-call check (boxes, whether they hold, the near filter), the stencils and the fail-safe's witnesses run in C
(``solvers/native/src/self_collision.c``, ``self_response.c``; the same pairs and numbers): the same frames 1.9 s a
frame before, 0.87 after (self-collision 1.75 -> 0.71 s: rebuilds 0.24, the lists' check and skin growths 0.16,
response 0.21, fail-safe 0.08; the two versions alternated on a loaded machine), and the Blender bake of that scene
(100 frames, bench_cloth's self-collision row) 512 ms a frame against built-in Cloth's 198 with its self-collision on
(0.39x; before 798 against 204, 0.26x; the two runs back to back on a loaded machine, another run after 453 against
229, 0.51x). In C as well, bit for bit: the passes
(``solvers/native/src/self_pass.c``), the skin growths, the candidate selection, the response's and the
fail-safe's set-up and the friction step (``src/self_select.c``; about 1,100 Python-level calls a substep), with the
lists' builds on several threads (``native/threads.py``); around self-collision, XPBD/PBD's native contact step
(prediction, contacts, the end-of-step collider push, round-off-equal to NumPy's over a sphere, and velocity); and a
whole call, everything but a list's refresh and the impact zones, is one C call of those kernels
(``native.self_step.SelfStep``, ``native_step``; the 64 x 64 lab cloth below, engine, runs alternated: frames 62-71
69.5 -> 63.5 ms a frame, 22-31 as it folds 234 -> 227, the 100 frames 105 -> 100). The
profile's frames 31-36 from the crumpled state at frame 30 (under cProfile, 2 cores): 0.180 s a frame, self-collision
0.143 of it (rebuilds 0.050, about 3 a frame, the edge-edge build's grid scan the most; the list check 0.032; the
response 0.036; the fail-safe 0.020; 20 rebuilds, 48 skin growths, 53833 pairs listed, 0 crossings); the Blender bake
of that scene 158 ms a frame against built-in Cloth's 95 with its self-collision on (0.60x). Self-collision
still makes that bake several times slower, so it is off by default. It runs on every substep because that is the cheapest schedule measured. Called on
every 6th substep only (the built-in Cloth's 5 a frame at 30 substeps) with the sides and witnesses still read at the
substep's start, the lab cloth crossed itself from frame 23 on (7 to 526 pairs by frame 28), on every 2nd from frame 27
on (45, 98). Read from the positions of the previous call instead (a checkpoint k substeps back, the velocity change
spread over those k substeps), it kept 0 crossings at every frame but cost more, since every list, reach and skin
grows with the motion between calls (frames 21-30 from the saved state above, one run each on an idle machine): every
substep 1.88 s a frame (32 rebuilds, 85k pairs listed at the end), every 2nd 2.30 s (24, 367k), every 3rd 3.25 s (21,
918k); every 6th 11.8 s a frame over frames 21-36 (beside another run; 1.9M pairs listed).

Modules: ``self_broad_phase`` (the Verlet lists), ``impact_zones`` (the fail-safe), this one (the response)."""
import numpy as np

from ...native.kernels import KeepOut
from ..broad_phase.self_broad_phase import MAX_SKIN_FRACTION, SKIN_FRACTION, SelfBroadPhase
from ..broad_phase.self_pairs import _pair_keys, _row_max, _Stencils
from ..narrow_phase.crossings import triangle_edges
from .impact_zones import COLLIDER_SLACK, ImpactZones

DEFAULT_FRICTION = 0.3
"""Friction coefficient of cloth on itself (dimensionless); the solvers use it (no setting of its own yet)."""
PASSES = 4
"""Passes of the normal response per call (each a Gauss-Seidel sweep over colours of pairs, ``_passes``)."""
MAX_PASSES = 16
"""Passes go on beyond PASSES (up to this) while a pair is still on the wrong side of each other, or short of its
target by more than PASS_TOLERANCE * thickness."""
PASS_TOLERANCE = 0.1
RELAXATION = 0.6
"""The share of its shortfall a pair takes back when its colour comes in a pass (``_passes``): a pass sweeps the
colours of the active pairs in turn (pairs of one colour share no moved particle), each pair measured again at the
positions the colours before it left. A full share (1) put a vertex that tunnelled through a face beside another one
back at 1.8 x thickness (the face moved twice); 0.5 let Implicit Euler's two-layer stack come to 0.07 x thickness, and
0.7 and 0.8 to 0.62 and 0.68 x with Python 3.11's NumPy (0.95 and 0.84 x with 3.13's); 0.6 keeps it at 0.94 and 0.93 x
(the Jacobi average: 0.90 x). Against the Jacobi average (every pair's correction scaled by 1 / the most active pairs any
of its particles is in, ``_scale``), which converges slowly where every particle is in several pairs: the 32 x 32 cloth
dropped into a pile (tools/compare.py fold, Blender, 48 frames) 9.50 -> 3.60 s (built-in Cloth 0.77 s), its
impact-zone calls 994 -> 5 (engine, 239 -> 90 ms a frame), max strain 6.7%; the 64 x 64 lab cloth with self-collision
in Blender 59.7 ms a frame against built-in Cloth's 61.5 (best of three), max strain 23.8 -> 20.1%, 0 crossings."""
RECOVERY = 0.1
"""A pair closer than thickness at the start of a step is moved apart by at most this fraction of thickness in it,
without velocity (see ``SelfCollision.resolve``)."""
CONTACT_BAND = 1e-6
"""[m] A particle this close to a collider's surface (thickness included) rests on it (``resolve_beside_colliders``)."""
CONTACT_MASS_FACTOR = 100.0
"""How much heavier a particle resting on a collider is in the self-collision response."""


class SelfCollision(SelfBroadPhase, ImpactZones):
    """Cloth self-collision of one body (``model.collision_triangles``, else ``model.triangle_indices``):
    vertex-triangle and edge-edge proximity.

    thickness [m]: the distance the body keeps from itself (>= 0; 0 still keeps sides: no tunnelling).
    friction: dimensionless, >= 0. passes: Jacobi passes of the normal response. skin [m]: the broad phase's
    smallest spare distance (default SKIN_FRACTION of the mean rest edge). edges: also keep edges apart from edges.
    compute: ``SolverConfig.compute``; with the native library loaded, the lists are built in C
    (``solvers/native/src/self_collision.c``, the same pairs).
    """

    native_pass = None
    """``solvers.native.self_kernels.SelfPass`` of the body when the native library loaded (the response's passes then
    run in C, bit for bit), else None."""

    native_step = None
    """``solvers.native.self_step.SelfStep`` of the body when the native library loaded: a call runs as one C call
    (the same kernels in the same order as the flow below, bit for bit), coming back to Python to refresh a list, grow
    the response's buffers or freeze impact zones."""

    use_native_step = True
    """Whether ``native_step`` runs the calls it can (the list built, colliders ``KeepOut`` takes); False runs the flow
    below call by call (tests compare the two)."""

    _keep_out_touched = None
    """During a native ``_respond`` beside colliders ``KeepOut`` takes: ``KeepOut.bind_touched`` on the native pass's
    touched particles (a bare C call, checked once a call of ``_respond``), else None."""

    def __init__(self, model, thickness: float, friction: float = DEFAULT_FRICTION, passes: int = PASSES,
                 skin: float = None, edges: bool = True, compute: str = "AUTO"):
        if thickness < 0.0 or friction < 0.0:
            raise ValueError(f"thickness and friction must be >= 0, got {thickness} and {friction}")
        triangles = model.collision_triangles if len(model.collision_triangles) else model.triangle_indices
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.edges = triangle_edges(self.triangles) if edges else np.zeros((0, 2), np.int64)
        self.inv_mass = model.inv_mass
        self.thickness = float(thickness)
        self.friction = float(friction)
        self.passes = int(passes)
        self.last_candidates = 0
        """Pairs the last ``resolve`` watched: within its reach after the exact distance test."""
        self._found = None  # the candidates ((v, t), (e1, e2)) the lists gave the last ``_respond``
        self.rebuilds = 0
        """Broad phases run so far (tree queries); the other calls reused the pair lists."""
        self.grown = 0
        """Calls so far that grew the skins of a few elements instead of rebuilding the lists (``_grow``)."""
        self.zones = 0
        """Calls so far in which the fail-safe had to freeze impact zones (see ``_fail_safe``)."""
        self._list = None
        self._heavy = None
        """During ``resolve_beside_colliders``: the particles weighing CONTACT_MASS_FACTOR more, (n,) bool."""
        self.pad2 = None
        """The particles' sphere pads [m^2] (n,) (``faces.sphere_pads``), or None: depths in the colliders are
        measured to the padded surface, the one the collider contacts put the particles on, so that a particle the
        response moves keeps the faces around it out of a sphere too."""
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
        from ...native import library as native_library

        library = native_library.load(compute)
        if library is not None and library.ready("self"):  # its self-test failed: NumPy (status() says why)
            from ...native.self_kernels import SelfCallKernels, SelfPairQuery, SelfPass, SelfSelect

            self.native_pairs = SelfPairQuery(library, np.ascontiguousarray(self.triangles),
                                              np.ascontiguousarray(self.edges), count)
            self.native_check = SelfCallKernels(library, np.ascontiguousarray(self.triangles),
                                              np.ascontiguousarray(self.edges), count)
            self.native_pass = SelfPass(library, np.ascontiguousarray(self.triangles),
                                        np.ascontiguousarray(self.edges), count)
            self.native_select = SelfSelect(library, np.ascontiguousarray(self.triangles),
                                            np.ascontiguousarray(self.edges), count)
            if len(self.edges):
                self.native_check.bind_adjacency(self.vertex_edge_start, self.vertex_edges, self.edge_triangle_start,
                                                 self.edge_triangles)
            from ...native.self_step import SelfStep

            self.native_step = SelfStep(self, (RECOVERY * self.thickness, min(self.thickness, RECOVERY * self.thickness),
                                               PASS_TOLERANCE, RELAXATION, MAX_PASSES, CONTACT_BAND,
                                               COLLIDER_SLACK * self.thickness, CONTACT_MASS_FACTOR))
        x0 = model.rest_positions
        if skin is None:
            e = self.edges if len(self.edges) else triangle_edges(self.triangles)
            skin = SKIN_FRACTION * float(np.mean(np.linalg.norm(x0[e[:, 0]] - x0[e[:, 1]], axis=1)))
        self.skin = float(skin)
        self.max_skin = max(self.skin, self.skin / SKIN_FRACTION * MAX_SKIN_FRACTION)
        # Pairs closer than thickness at rest are neighbours, not collisions (Müller's rule).
        (v, t, _), (e1, e2, _) = self._query(x0, self.thickness)
        self.excluded_vt = np.sort(_pair_keys(v, t, len(self.triangles)))
        self.excluded_ee = np.sort(_pair_keys(e1, e2, len(self.edges)))

    def exclude_pairs_at(self, x: np.ndarray) -> None:
        """Also treat as neighbours the pairs closer than thickness at positions x (n, 3): a sewn cloth's rest shape
        with its seams closed (``sewing.sewn_positions``), where the panels' edges meet."""
        if len(self.triangles) == 0:
            return
        (v, t, _), (e1, e2, _) = self._query(x, self.thickness)
        self.excluded_vt = np.union1d(self.excluded_vt, _pair_keys(v, t, len(self.triangles)))
        self.excluded_ee = np.union1d(self.excluded_ee, _pair_keys(e1, e2, len(self.edges)))

    # ------------------------------------------------------------------ broad phase

    # ------------------------------------------------------------------ response

    def resolve(self, x: np.ndarray, x_prev: np.ndarray, true_start: np.ndarray = None) -> int:
        """Push the body's vertices, edges and faces apart, in place on ``x`` (n, 3) [m]; returns the pairs corrected.

        ``x_prev`` (n, 3) [m]: positions at the step's start (sides, the gap to keep, friction's motion). The
        velocity-free part of the correction (recovery of pairs that started the step closer than thickness) is added
        to ``x_prev`` too, in place, so a solver that derives v from x - x_prev gives it no velocity.
        ``true_start`` (n, 3) [m]: where the step really started when pre-stabilization moved some of x_prev onto
        collider planes (``_true_sides``), or None.
        """
        step = self._step_for()
        if step is not None:
            return step.resolve(x, x_prev, None, true_start)
        return self._resolve(x, x_prev, (), true_start)

    def _step_for(self):
        """``native_step`` when this call can run as one C call (the list built; that ``KeepOut`` takes the colliders
        is the caller's check), else None. Not for a copy of this object (``copy.copy``): the step is bound to the original's
        lists and buffers."""
        step = self.native_step
        if step is None or not self.use_native_step or self._list is None or step.collision is not self \
                or self.native_pass is None or self.native_select is None or self.native_check is None:
            return None  # (tests take some of the bindings away)
        return step

    def _resolve(self, x, x_prev, colliders, true_start=None):
        if len(self.triangles) == 0:
            return 0
        x_start = x_prev.copy()
        corrected = self._respond(x, x_prev, colliders, true_start)
        if self._may_cross():
            self._fail_safe(x, x_prev, x_start, colliders)
        return corrected

    def _may_cross(self) -> bool:
        """After ``_respond``: whether the fail-safe can find a new crossing. Not when no candidate pair with a free
        particle was within its reach (thickness + m_A + m_B) at x (then the response moved nothing either): a new
        crossing needs a pair that touched during the step x_start -> x (its witness), and such a pair is within
        m_A + m_B < its reach at x. The fail-safe's witnesses would be none (their list check, on the same x and
        step, holds as the candidates' did). In a free fall, nearly every substep. Pairs of pinned particles alone,
        which the response leaves out and the fail-safe does not, keep it."""
        if self.last_candidates > 0 or not self.thickness > 0.0:
            return True
        (v, t), (a, b) = self._found
        pinned = self.inv_mass == 0.0
        if not pinned.any() or (len(v) == 0 and len(a) == 0):
            return False
        tri, edges = self.triangles[t], self.edges
        vt = pinned[v] & pinned[tri[:, 0]] & pinned[tri[:, 1]] & pinned[tri[:, 2]]
        ee = pinned[edges[a, 0]] & pinned[edges[a, 1]] & pinned[edges[b, 0]] & pinned[edges[b, 1]]
        return bool(vt.any() or ee.any())

    def resolve_beside_colliders(self, x: np.ndarray, x_prev: np.ndarray, colliders, true_start=None) -> int:
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
        them (up to 103 crossing pairs a frame on that cloth). ``true_start``: as ``resolve``'s."""
        if not colliders or len(self.triangles) == 0:
            return self.resolve(x, x_prev, true_start)
        if self.native_pass is not None and KeepOut.supports(colliders):
            keep_out = self._native_keep_out(len(x))  # the same distances in C (src/contact.c)
            keep_out.pose(colliders)
            step = self._step_for()
            if step is not None:
                return step.resolve(x, x_prev, keep_out, true_start, colliders)
            resting = keep_out.resting(x, CONTACT_BAND)
        else:
            resting = np.zeros(len(x), bool)
            for collider in colliders:
                resting |= collider.within(x, CONTACT_BAND, self.pad2)
        inv_mass = self.inv_mass
        try:
            self.inv_mass = np.where(resting, inv_mass / CONTACT_MASS_FACTOR, inv_mass)
            self._heavy = resting
            corrected = self._resolve(x, x_prev, colliders, true_start)
        finally:
            self.inv_mass = inv_mass
            self._heavy = None
        return corrected

    def _keep_out_of_colliders(self, x, moved, colliders):
        """Bring the particles ``moved`` (indices) that a pass pushed deeper than COLLIDER_SLACK * thickness into a
        collider back to that depth (along its normal), in place; from then on they weigh CONTACT_MASS_FACTOR times
        more (``self.inv_mass`` is the call's own copy), so the next passes move the layer above them instead. The
        collider contacts of the next step take them the rest of the way out.

        moved None: the particles the native pass touched last (``SelfPass.touched``). With the native library
        (``native_pass``) and ground planes, spheres and mesh colliders with their native queries
        (``KeepOut.supports``), in C (``native.kernels.KeepOut``, bit for bit; on the native pass's touched particles
        the call bound by ``_bind_keep_out``); other colliders take the loop below."""
        if moved is None:
            if self._keep_out_touched is not None:
                self._keep_out_touched()
                return
            moved = self.native_pass.touched()
        slack = COLLIDER_SLACK * self.thickness
        if self.native_pass is not None and len(moved) and colliders and KeepOut.supports(colliders):
            keep_out = self._native_keep_out(len(x))
            keep_out.pose(colliders)
            keep_out.run(x, moved, self.inv_mass, self._heavy, slack, CONTACT_MASS_FACTOR)
            return
        moved = moved[self.inv_mass[moved] > 0.0]
        for collider in colliders:
            if len(moved) == 0:
                return
            d, n = collider.distance_and_normal(x[moved], None if self.pad2 is None else self.pad2[moved])
            inside = d < -slack
            if np.any(inside):
                which = moved[inside]
                x[which] -= (d[inside] + slack)[:, None] * n[inside]
                which = which[~self._heavy[which]]
                self.inv_mass[which] /= CONTACT_MASS_FACTOR
                self._heavy[which] = True

    def _native_keep_out(self, particle_count: int):
        """The body's ``native.kernels.KeepOut`` for the current pads (made on first use)."""
        keep_out = self.__dict__.get("_native_keep_out_of")
        if keep_out is None or keep_out[0] is not self.pad2:
            keep_out = self._native_keep_out_of = (self.pad2, KeepOut(self.native_pass.library, particle_count,
                                                                       self.pad2))
        return keep_out[1]

    def _bind_keep_out(self, x, colliders):
        """``KeepOut.bind_touched`` on the native pass's touched particles at x (n, 3) [m] with this call's inverse
        masses and heavy flags, or None when ``KeepOut`` does not take the colliders (or there are none)."""
        if not colliders or not KeepOut.supports(colliders):
            return None
        keep_out = self._native_keep_out(len(x))
        keep_out.pose(colliders)
        return keep_out.bind_touched(x, self.native_pass.touched_mask, self.inv_mass, self._heavy,
                                     COLLIDER_SLACK * self.thickness, CONTACT_MASS_FACTOR)

    def _respond(self, x, x_prev, colliders=(), true_start=None):
        vt, ee, reach = self._candidates(x, x_prev)
        self._found = (vt, ee)
        native = self.native_pass
        if native is not None:
            # ``_watched``, the passes and the friction step in C (src/self_select.c, src/self_pass.c: bit for bit),
            # the collider check between the two halves of each pass a bare C call bound once here (~190 checks a
            # frame on the folded 64 x 64 lab cloth).
            self.last_candidates = native.setup(x, x_prev, vt, ee, reach, self.inv_mass, self.thickness,
                                                RECOVERY * self.thickness, self.native_select)
            if self.last_candidates == 0:
                return 0
            if true_start is not None:  # _true_sides' twin
                native.true_sides(x_prev, true_start, min(self.thickness, RECOVERY * self.thickness))
            self._keep_out_touched = self._bind_keep_out(x, colliders)
            try:
                _, ever = self._native_passes(x, x_prev, colliders)
                if self.friction > 0.0 and native.friction(x, x_prev, self.friction) and colliders:
                    self._keep_out_of_colliders(x, None, colliders)
            finally:
                self._keep_out_touched = None
            return int(np.count_nonzero(ever))
        vt, ee, side, target, approach_target, first = self._watched(x, x_prev, vt, ee, reach)
        if true_start is not None:
            self._true_sides(x_prev, true_start, vt, ee, side, approach_target, target)
        self.last_candidates = count = len(side)
        if count == 0:
            return 0
        w = self.inv_mass
        k_vt = len(vt[0])

        def evaluate(pos, st=None):
            """Stencils, gaps, push directions, C = gap - target and W = sum coef^2 w of the pairs at ``pos`` (sorted;
            st: their stencils at x if already made)."""
            if st is None:
                a, b = pos[pos < k_vt], pos[pos >= k_vt] - k_vt
                st = self._stencils(x, (vt[0][a], vt[1][a]), (ee[0][b], ee[1][b]))
            sd = side[pos]
            signed = sd * st.plane
            # Closest points inside both elements: the distance along the normal on the pair's own side (negative
            # when they went through each other). Otherwise (an edge or corner of a face, an end of an edge, parallel
            # edges): the distance, only on the pair's own side; beyond it the pair went round a border, or a
            # neighbouring element's pair is the one that sees the crossing.
            edge_ok = ~st.interior & ((signed >= 0.0) | ~st.ok) & (st.dist > 1e-12)
            gap = np.where(st.interior, signed, np.where(edge_ok, st.dist, np.inf))
            W = np.einsum("kj,kj->k", st.coef**2, w[st.idx])
            return st, gap, _directions(st, sd), gap - target[pos], W

        depth, ever = self._passes(x, x_prev, count, first, side, target, approach_target, evaluate, colliders)
        if self.friction > 0.0 and np.any(ever):
            st = self._friction_of(x, x_prev, vt, ee, side, depth, ever)
            if colliders:
                self._keep_out_of_colliders(x, _particles(st.idx, st.coef, len(x)), colliders)
        return int(np.count_nonzero(ever))

    def _watched(self, x, x_prev, vt, ee, reach):
        """The candidates vt = (v, t), ee = (e1, e2) with their reaches (k,) [m] (``_candidates``) that the response
        watches, and what it needs of them: (vt, ee, side, target, approach_target, first), the pairs within reach at x
        (n, 3) [m] with a particle that moves, their sides (c,) (+-1), targets and approach targets (c,) [m] from their
        stencils at x_prev (n, 3) [m], and their stencils at x (``self_pairs._Stencils``). ``SelfPass.setup`` is its
        native twin."""
        w = self.inv_mass
        now = self._stencils(x, vt, ee)
        k = len(vt[0])
        keep = (now.dist <= reach) & (_row_max(w, now.idx) > 0.0)
        vt = (vt[0][keep[:k]], vt[1][keep[:k]])
        ee = (ee[0][keep[k:]], ee[1][keep[k:]])
        first = now.take(keep)
        # Side and gap at the step's start.
        before = self._stencils(x_prev, vt, ee)
        side = np.where(before.ok & (np.abs(before.plane) > 1e-12), np.sign(before.plane),
                        np.where(first.plane < 0.0, -1.0, 1.0))
        # Approach removal changes velocities: restore at most the gap the pair had at the start. Recovery towards
        # thickness (at most RECOVERY * thickness per step) is also added to x_prev, so it moves the pair without
        # giving it any velocity (Macklin et al. 2014's stabilization): no energy gain either way.
        approach_target = np.minimum(self.thickness, before.dist)
        target = np.minimum(self.thickness, before.dist + RECOVERY * self.thickness)
        return vt, ee, side, target, approach_target, first

    def _true_sides(self, x_prev, true_start, vt, ee, side, approach_target, target) -> None:
        """The watched pairs' sides read where the step really started, in place on side, approach_target and target
        (c,) (``_watched``'s), for a start x_prev (n, 3) [m] that pre-stabilization moved onto collider planes from
        true_start (n, 3) [m] (``ContactConstraints.stabilize``). ``SelfPass.true_sides`` is its native twin.

        Only a pair with a particle that moved can differ. Where its side at true_start (its plane distance beyond
        1e-12) is not the one at x_prev, the move took one element past the other: the pair keeps its true side, the
        approach target becomes minus its distance at x_prev (the move is no approach, so it gives no velocity) and
        the target RECOVERY * thickness (at most thickness), so the passes put it back on its side, velocity-free.
        Every other pair keeps its gaps at x_prev: what the move brought within thickness is recovered
        velocity-free too. Read wholly at true_start, a layer lying within thickness above a layer moved out of a
        collider's thickness took the move as velocity (the upper of two layers laid 4 mm apart inside the ground's
        1 cm jumped 10-48 cm); read wholly at x_prev, the layers swapped (the 64 x 64 lab cloth crossed itself, 2-4
        pairs from frame 29 on)."""
        changed = np.flatnonzero(true_start.ravel() != x_prev.ravel())  # ~10x faster than any(axis=1) on (n, 3)
        if not len(changed):
            return
        moved = np.zeros(len(x_prev), bool)
        moved[changed // 3] = True
        (v, t), (a, b) = vt, ee
        k_vt = len(v)
        tri, ea, eb = self.triangles[t], self.edges[a], self.edges[b]
        touched = np.concatenate([moved[v] | moved[tri[:, 0]] | moved[tri[:, 1]] | moved[tri[:, 2]],
                                  moved[ea[:, 0]] | moved[ea[:, 1]] | moved[eb[:, 0]] | moved[eb[:, 1]]])
        pick = np.flatnonzero(touched)
        if not len(pick):
            return
        pick_vt, pick_ee = pick[pick < k_vt], pick[pick >= k_vt] - k_vt
        truth = self._stencils(true_start, (v[pick_vt], t[pick_vt]), (a[pick_ee], b[pick_ee]))
        true_side = np.where(truth.ok & (np.abs(truth.plane) > 1e-12), np.sign(truth.plane), side[pick])
        flipped = pick[true_side != side[pick]]
        if not len(flipped):
            return
        f_vt, f_ee = flipped[flipped < k_vt], flipped[flipped >= k_vt] - k_vt
        before = self._stencils(x_prev, (v[f_vt], t[f_vt]), (a[f_ee], b[f_ee]))
        side[flipped] = -side[flipped]
        approach_target[flipped] = -before.dist
        target[flipped] = min(self.thickness, RECOVERY * self.thickness)

    def _friction_of(self, x, x_prev, vt, ee, side, depth, ever):
        """The friction step after the passes: ``_friction`` on the watched pairs vt, ee (``_watched``) ever corrected
        (ever (c,) bool), with their sides (c,) and friction depths (c,) [m], at x (n, 3) [m] in place (x_prev: the
        step's start). Returns those pairs' stencils. ``SelfPass.friction`` is its native twin."""
        pos = np.nonzero(ever)[0]
        k_vt = len(vt[0])
        a, b = pos[pos < k_vt], pos[pos >= k_vt] - k_vt
        st = self._stencils(x, (vt[0][a], vt[1][a]), (ee[0][b], ee[1][b]))
        self._friction(x, x_prev, st.idx, st.coef, _directions(st, side[pos]), depth[pos])
        return st

    def _native_passes(self, x, x_prev, colliders):
        """The passes of ``_passes`` in C (``self_kernels.SelfPass``, ``src/self_pass.c``: the same operations in the
        same order, bit for bit) on the pairs its ``setup`` kept, the collider check between the two halves of each
        pass in Python as there. Returns (depth, ever) as ``_passes`` does."""
        native = self.native_pass
        for k in range(MAX_PASSES):
            if native.run(x, self.thickness, PASS_TOLERANCE, RELAXATION, k >= self.passes) == 0:
                break
            if colliders:
                self._keep_out_of_colliders(x, None, colliders)
            native.finish(x_prev)
        return native.depth, native.ever

    def _passes(self, x, x_prev, count, first, side, target, approach_target, evaluate, colliders):
        """The Gauss-Seidel passes of ``_respond`` over its ``count`` watched pairs (``first``: their stencils at x): returns
        each pair's friction depth (count,) [m] and whether it was ever corrected (count,)."""
        depth = np.zeros(count)
        ever = np.zeros(count, bool)
        pair_idx = first.idx
        changed = None
        for k in range(MAX_PASSES):
            # Only pairs with a particle the last pass moved can have changed: the others keep their C >= 0 (not
            # active), so they are skipped, the result the same (on the folding lab cloth a pass moves a few hundred
            # of the ~5k pairs within reach). The first pass reads the stencils already made at x.
            if changed is None:
                pos = np.arange(count)
                st, gap, _, C, W = evaluate(pos, first)
            else:
                pos = np.flatnonzero(_row_max(changed, pair_idx))
                st, gap, _, C, W = evaluate(pos)
            active = (C < 0.0) & (W > 0.0)
            # Beyond ``passes``, go on only with the pairs still through each other (their side would be lost) or
            # short of their target by more than PASS_TOLERANCE * thickness (large steps: implicit Euler, PD). Every
            # pair a pass moved a particle of is measured again, also one that was within tolerance before: the
            # corrections of the others can push it in (measured on implicit Euler's two-layer stack: when only the
            # pairs violating at pass PASSES were kept in play, the layers ended 0.6-3.4 mm apart at a 5 mm thickness
            # in some steps, depending on the round-off of the solve before).
            violating = active & ((gap < 0.0) | (C < -PASS_TOLERANCE * self.thickness))
            if k >= self.passes:
                active = violating
            if not np.any(active):
                break
            # Gauss-Seidel over colours: each colour's pairs measured again where the colours before left x, and
            # moved by RELAXATION of their shortfall (one colour's pairs share no moved particle).
            batch = np.flatnonzero(active)
            colour = _colours(st.idx[batch], st.coef[batch], len(x))
            moved = np.zeros(len(pos), bool)  # the pairs corrected, by batch position
            idx, coef = np.zeros((len(pos), 4), np.int64), np.zeros((len(pos), 4))
            impulse, gap_at, C_at = np.zeros((len(pos), 3)), np.zeros(len(pos)), np.zeros(len(pos))
            for c in range(int(colour.max(initial=-1)) + 1):
                part = batch[colour == c]
                st_c, gap_c, direction_c, C_c, W_c = evaluate(pos[part])
                go = (C_c < 0.0) & (W_c > 0.0)
                part = part[go]
                idx[part], coef[part], gap_at[part], C_at[part] = st_c.idx[go], st_c.coef[go], gap_c[go], C_c[go]
                impulse[part] = (RELAXATION * -C_c[go] / W_c[go])[:, None] * direction_c[go]
                moved[part] = True
                _add_each(x, self.inv_mass, idx[part], coef[part], impulse[part])
            if not moved.any():
                break
            idx, coef, impulse, gap_at, C_at = idx[moved], coef[moved], impulse[moved], gap_at[moved], C_at[moved]
            changed = np.zeros(len(x), bool)
            changed[idx.ravel()] = True  # _keep_out_of_colliders moves only some of these
            if colliders:
                self._keep_out_of_colliders(x, _particles(idx, coef, len(x)), colliders)
            # The share of this correction beyond the approach removal is recovery: velocity-free.
            approach = np.clip(approach_target[pos[moved]] - gap_at, 0.0, -C_at)
            recovery = 1.0 - approach / -C_at
            if np.any(recovery > 0.0):
                self._apply(x_prev, idx, coef, recovery[:, None] * impulse)
            depth[pos[moved]] += approach * RELAXATION  # friction's normal depth: the velocity-changing part only
            ever[pos[moved]] = True
        return depth, ever

    def _stencils(self, x, vt, ee):
        """The contact stencils (``self_pairs._Stencils``) of the pairs vt = (v, t), ee = (e1, e2) at x: in C when the
        native library loaded (``self_kernels.SelfCallKernels.stencils``, the same numbers)."""
        if self.native_check is not None:
            return self.native_check.stencils(x, vt, ee)
        return _Stencils(x, vt, ee, self.triangles, self.edges)

    # ------------------------------------------------------------------ fail-safe

    def _scale(self, count, idx, coef):
        """Per-pair Jacobi scale 1 / (the largest number of active pairs any of its moved particles is in), (k,): the
        friction step's (``_friction``), whose pairs all cut their slip at once. The update is then an average of the
        pairs' own cuts, so it never overshoots (a sum of barycentric weights as the count was tried for the normal
        response: two vertices over one face pushed it twice and overshot by 17%). The normal response sweeps colours
        instead (RELAXATION says why; over-relaxing this average was measured too: 1.5-2.3x faster in a pile, but two
        sheets thrown at each other bounced apart)."""
        used = (coef != 0.0).ravel()
        load = np.bincount(idx.ravel()[used], minlength=count).astype(float)
        loaded = np.where(coef != 0.0, load[idx], 0.0)
        most = loaded[:, 0].copy()
        for j in range(1, loaded.shape[1]):  # not .max(axis=1): a reduction along a short axis is ~10x slower
            np.maximum(most, loaded[:, j], out=most)
        return 1.0 / np.maximum(1.0, most)

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


def _directions(st, side):
    """Push directions (k, 3) of stencils ``st`` with sides (k,): side * normal where the closest points are inside both
    elements, else along r (r / |r|, r itself where |r| <= 1e-12)."""
    return np.where(st.interior[:, None], side[:, None] * st.n, st.r / np.where(st.dist > 1e-12, st.dist, 1.0)[:, None])


def _colours(idx, coef, count):
    """Colours (k,) of the pairs with stencils idx (k, 4) and weights coef (k, 4) among count particles: pair i takes
    1 + the largest colour of the pairs before it that share a particle of nonzero weight with it (0 if none), so one
    colour's pairs share none, and the pairs before a pair in its particles' lists all come in earlier colours. Found
    as rounds (round r: every pair left that comes first, among those left, at each of its particles); the native
    pass computes the same colours pair by pair (src/self_pass.c)."""
    k = len(idx)
    colour = np.full(k, -1, np.int64)
    left = np.arange(k)
    used = coef != 0.0
    owner = np.broadcast_to(np.arange(k)[:, None], idx.shape)
    r = 0
    while len(left):
        first = np.full(count, k)
        mask = used[left]
        np.minimum.at(first, idx[left][mask], owner[left][mask])
        ready = np.all(~mask | (first[idx[left]] == owner[left]), axis=1)
        colour[left[ready]] = r
        left = left[~ready]
        r += 1
    return colour


def _add_each(x, inv_mass, idx, coef, impulse):
    """x_j += (inv_mass_j coef_j) J for the pairs' particles in order (pair by pair, corner by corner), J = impulse
    (k, 3): the pairs of one colour, whose moved particles differ (np.add.at: a particle of weight 0 may repeat)."""
    weight = (inv_mass[idx] * coef).ravel()
    flat = idx.ravel()
    for axis in range(3):
        np.add.at(x[:, axis], flat, weight * np.repeat(impulse[:, axis], 4))


def _particles(idx, coef, count):
    """The particles (sorted, each once) of stencils idx (k, 4) with a nonzero weight coef (k, 4), among count:
    np.unique(idx[coef != 0]) through a mask (a hash-based unique per pass cost more)."""
    mask = np.zeros(count, bool)
    mask[idx[coef != 0.0]] = True
    return np.flatnonzero(mask)


def self_collision_for(model, config):
    """The SelfCollision a solver runs for ``model`` under ``config``, or None: only CLOTH (faces, no tets) with
    ``config.use_self_collision`` on, at distance ``config.thickness``."""
    if not getattr(config, "use_self_collision", False) or model.tet_count or len(model.triangle_indices) == 0:
        return None
    return SelfCollision(model, config.thickness, compute=getattr(config, "compute", "AUTO"))
