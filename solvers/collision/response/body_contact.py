"""Contact between bodies of one scene (position-level solvers): one shared surface, self-collision's machinery on it.

``BodyContact(bodies)`` is built once per scene from its bodies' models and solvers; ``resolve(xs, x_prevs,
colliders)`` runs after every lockstep substep of ``scene.advance_scene_frame``, when every body has taken its own
step (its own colliders, its own contacts), and moves the bodies' positions in place.

The surface: every body's collision triangles (a cloth's ``collision_triangles`` or ``triangle_indices``; a solid's
boundary faces of its tets, ``tet_surface``, and its mesh's faces as drawn: ``surface_triangles``) over the particles
they use, concatenated into one index space (interior particles of a solid take no part: they are in no triangle). On
it one ``SelfCollision`` does what it does for a single cloth (``self_contact`` has the details): its Verlet-list
broad phase over all bodies' vertices, triangles and edges at once (one k-d tree join per rebuild, so the cost grows
with the elements near each other, not with the pairs of bodies), the exact vertex-triangle and edge-edge response
with sides kept from the step's start, friction, and the impact-zone fail-safe. A pair filter
(``SelfBroadPhase.body``) keeps the pairs of two different bodies always and the pairs within one body only when that
body's own self-collision is on; the scene then turns that body's own self-collision off (``solver.self_collision =
None``), so it does not run twice, and then runs the face push the solver runs after self-collision
(``collider_contacts.resolve_deep_faces``) on every body.

The response is mass-weighted: a pair's correction moves each particle by its inverse mass (XPBD's weights), so a
2 kg cube's surface particles move less than the light cloth vertices under them, and linear momentum is kept: the
weight of one body is carried by the other. The distance kept is one for the whole surface: the largest of the
bodies' ``thickness`` (for two bodies the larger of the two; a body's own pairs are kept at that distance too). Pairs
closer than it at rest (Müller's rule) are dropped, within a body and between bodies that start overlapping.
"""
import numpy as np

from ...base import FACE_ALLOWANCE
from ...builder import triangles_not_in
from .collider_contacts import resolve_deep_faces
from .self_contact import DEFAULT_FRICTION, SelfCollision


def tet_surface(tets: np.ndarray) -> np.ndarray:
    """The boundary faces (f, 3) of positively oriented tets (t, 4), wound outward: the faces that belong to one tet."""
    tets = np.asarray(tets, np.int64).reshape(-1, 4)
    a, b, c, d = tets.T
    # Outward windings of the four faces of a positively oriented tet (d on the side of (b - a) x (c - a)).
    faces = np.concatenate([np.stack(f, 1) for f in ((a, c, b), (b, c, d), (a, d, c), (a, b, d))])
    key = np.sort(faces, axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return faces[counts[inverse.ravel()] == 1]


def surface_triangles(model) -> np.ndarray:
    """The triangles (t, 3) of ``model`` that meet other bodies: a solid's tet boundary and the triangles of its mesh
    as drawn (its ``collision_triangles``, over the mesh's vertices, which are its first particles) that are not
    boundary faces; else its collision triangles (both splits of every quad), else its triangles.

    A solid's drawn mesh is coarser than its tet boundary (a Blender cube's 12 triangles over 8 corners, its tet
    boundary ~1200 triangles at resolution 10): where the boundary dents under a load between the corners, the flat
    drawn face does not, and a body kept clear of the boundary alone shows through the face the user sees."""
    if model.tet_count:
        boundary = tet_surface(model.tet_indices)
        drawn = np.asarray(model.collision_triangles, np.int64).reshape(-1, 3)
        if len(drawn) == 0:
            return boundary
        return np.concatenate([boundary, triangles_not_in(drawn, boundary)])
    if len(model.collision_triangles):
        return np.asarray(model.collision_triangles, np.int64)
    return np.asarray(model.triangle_indices, np.int64).reshape(-1, 3)


class _Surface:
    """The concatenated surface as a model-like object for ``SelfCollision``."""

    def __init__(self, rest_positions, inv_mass, triangles):
        self.rest_positions, self.inv_mass, self.collision_triangles = rest_positions, inv_mass, triangles
        self.triangle_indices = triangles


class BodyContact:
    """Contact between the bodies of one scene. bodies: a sequence of (model, config, solver), solver a
    ``base.ProjectedContactSolver`` bound to model; a solver whose own self-collision is on has it turned off here and
    its body's own pairs handled on the shared surface instead.
    After the response, every body's faces left deeper than FACE_ALLOWANCE * thickness in a collider that reaches
    between corners are pushed back to that depth (``collider_contacts.resolve_deep_faces``), as ``finish_step`` does.

    Attributes: ``particles`` [(k_b,) int per body]: the body's particles on the surface; ``contact``: the
    SelfCollision over the shared surface (its counters ``rebuilds``, ``zones``, ``last_candidates``)."""

    def __init__(self, bodies):
        bodies = list(bodies)
        self.taken = []
        """(solver, its own self-collision) of the bodies whose self-collision this contact took over (``release``)."""
        self.particles, triangles, bodies_of, self_on = [], [], [], []
        self.whole = []
        """Per body, whether every particle is on the surface (``particles`` is then every index, in order)."""
        rest, inv_mass, pad2 = [], [], []
        offset = 0
        for b, (model, _config, solver) in enumerate(bodies):
            tris = surface_triangles(model)
            used = np.unique(tris)
            local = np.full(model.particle_count, -1, np.int64)
            local[used] = np.arange(len(used))
            self.particles.append(used)
            self.whole.append(len(used) == model.particle_count)  # every particle on the surface (a cloth's)
            triangles.append(local[tris] + offset)
            bodies_of.append(np.full(len(used), b))
            own = getattr(solver, "self_collision", None) is not None
            self_on.append(own)
            if own:
                self.taken.append((solver, solver.self_collision))
                solver.self_collision = None  # its pairs are kept on the shared surface (not twice)
            rest.append(model.rest_positions[used])
            inv_mass.append(model.inv_mass[used])
            pad = getattr(solver, "pad2", None)
            pad2.append(pad[used] if pad is not None else np.zeros(len(used)))
            offset += len(used)
        self.bodies = bodies
        sizes = np.array([len(p) for p in self.particles])
        self.box_starts = (np.cumsum(sizes) - sizes)[sizes > 0]
        """The first row of each body with a surface in the bodies' surface particles one after the other (``apart``:
        a body without surface meets none)."""
        self.self_on = np.array(self_on, bool)
        self.thickness = max(float(config.thickness) for _, config, _ in bodies)
        surface = _Surface(np.concatenate(rest), np.concatenate(inv_mass), np.concatenate(triangles))
        # The kernels the bodies were set to run: NumPy when every body asks for it (the add-on's preference sets all).
        compute = "NUMPY" if all(getattr(config, "compute", "AUTO") == "NUMPY" for _, config, _ in bodies) else "AUTO"
        self.contact = SelfCollision(surface, self.thickness, DEFAULT_FRICTION, compute=compute)
        self.contact.pad2 = np.concatenate(pad2)
        body = np.concatenate(bodies_of)
        # Müller's rule (pairs closer than thickness at rest are neighbours, left alone) holds between bodies too: the
        # rest positions are where the bake starts, so two bodies built overlapping (a copy left in place) pass
        # through each other where they overlap instead of being torn apart (pushing coincident copies apart along
        # undefined normals made them explode); bodies that start apart always keep apart.
        self.contact.body, self.contact.self_bodies = body, self.self_on

    def release(self) -> None:
        """Give the bodies' solvers back the self-collision this contact took over (they step alone again)."""
        for solver, own in self.taken:
            solver.self_collision = own
        self.taken = []

    def apart(self, xs, x_prevs) -> bool:
        """Whether ``resolve`` has nothing to do for the bodies at ``xs`` after a step from ``x_prevs`` (each (n_b, 3)
        [m] per body): no body's own pairs are kept here and no two bodies came within thickness of each other over
        the step. The test: the boxes around each body's surface at x and x_prev (so around its motion in the step, a
        straight line per particle) grown by thickness / 2 overlap for no pair; then no pair is near and none went
        through the other. Bodies apart cost a box per body, not a broad phase."""
        if self.self_on.any():
            return False
        starts = self.box_starts
        if len(starts) < 2:
            return True
        x = np.concatenate([xb if whole else xb[p] for xb, p, whole in zip(xs, self.particles, self.whole)])
        x_prev = np.concatenate([xb if whole else xb[p] for xb, p, whole in zip(x_prevs, self.particles, self.whole)])
        # reduceat: a body's box in one call for all (an axis-0 min of an (n, 3) array is several times slower)
        lo = np.minimum(np.minimum.reduceat(x, starts), np.minimum.reduceat(x_prev, starts)) - 0.5 * self.thickness
        hi = np.maximum(np.maximum.reduceat(x, starts), np.maximum.reduceat(x_prev, starts)) + 0.5 * self.thickness
        overlap = np.all((lo[:, None] <= hi[None]) & (lo[None] <= hi[:, None]), axis=2)
        return not np.triu(overlap, 1).any()

    def resolve(self, xs, x_prevs, colliders=()) -> int:
        """Push the bodies apart, in place on every ``xs[b]`` (n_b, 3) [m] and ``x_prevs[b]`` (their positions at the
        step's start; the velocity-free part of the response is added to them, as ``SelfCollision.resolve`` does).
        colliders: every collider of the step (particles resting on one weigh more, none is pushed deep into one).
        Returns the pairs corrected."""
        if self.apart(xs, x_prevs):
            return 0
        x = np.concatenate([xb[p] for xb, p in zip(xs, self.particles)])
        x_prev = np.concatenate([xb[p] for xb, p in zip(x_prevs, self.particles)])
        corrected = self.contact.resolve_beside_colliders(x, x_prev, colliders)
        start = 0
        for b, p in enumerate(self.particles):
            xs[b][p], x_prevs[b][p] = x[start:start + len(p)], x_prev[start:start + len(p)]
            start += len(p)
            model, config, _ = self.bodies[b]
            if colliders and len(model.triangle_indices):
                # As the body's own finish_step does after its self-collision: the response may move faces into a sphere.
                resolve_deep_faces(xs[b], x_prevs[b], model.inv_mass, model.triangle_indices, colliders,
                                   FACE_ALLOWANCE * config.thickness)
        return corrected
