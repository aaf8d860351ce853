"""The one interface every solver shares."""
import numpy as np

from .collision.response.faces import sphere_pads
from .collision.response.collider_contacts import resolve_collider_contacts, resolve_deep_faces
from .collision.response.self_contact import self_collision_for
from .config import SolverConfig
from .model import Model, State, StepStats
from .native import library as native_library
from .native.kernels import AnalyticContacts
from .native.mesh_kernels import attach as attach_mesh_queries
from .sewing import seam_edges, sewn_positions


FACE_ALLOWANCE = 0.4
"""After self-collision, faces deeper than this fraction of the body's thickness in a collider are pushed back to it
(``collision.response.collider_contacts.resolve_deep_faces``)."""
DEEP_FACE_MOTION = 0.5
"""Over colliders other than ground planes and spheres, the face push after self-collision runs only where
self-collision moved some particle by at least this fraction of the allowance (FACE_ALLOWANCE * thickness). The
collider contacts have just pushed every face out to the thickness, and a face's gap to a collider's corner or edge
shrinks by at most the largest move of its particles, so smaller moves leave every face at least half the allowance
short of the push's depth: the push would find nothing (the contacts' face passes leave well under 1 mm undone: on
the box drape the last of their four passes moved no pair by more than 1 mm). On the box drape with self-collision
(31 x 31, 48 frames) self-collision moved some particle in 100 of 1440 steps, by at most 0.03-4.8 mm (median
0.34 mm); the push ran in those 100 steps at ~0.9 ms each (11% of the bake) and found nothing; it now runs in the 9
whose moves reach 2 mm, and the cloth ends at the same bits as with the push run in all 100 steps, or in every
step."""


class Solver:
    """A time integrator bound to one Model, so it can precompute (colourings, factorizations).

    ``step(state, dt, colliders, measure=True)`` advances ``state`` in place by ``dt`` seconds and returns
    StepStats; with ``measure=False`` the strain and volume figures are left out (they cost a pass over
    every element, and ``advance_frame`` only needs them after a frame's last substep).
    ``colliders`` are the colliders of this step (``collision.Collider``): each at its pose at the step's end, with
    ``start`` its pose at the step's start when it moves (``frame.advance_frame`` interpolates them over the frame).
    Pinned particles (``inv_mass == 0``) are kinematic: they move by their current velocity, which
    the caller sets (see ``solvers.frame.advance_frame``); solvers apply no force to them.
    """

    def __init__(self, model: Model, config: SolverConfig):
        self.model = model
        self.config = config

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        raise NotImplementedError

    def attach_native_queries(self, colliders) -> None:
        """Give the mesh colliders among ``colliders`` their nearest-triangle queries, contact planes and face pushes
        in C (``native.mesh_kernels.attach``, once per collider topology; the same answers bit for bit), when
        ``config.compute`` allows the native library and it loaded. Every solver's step calls it first."""
        if colliders:
            library = native_library.load(self.config.compute)
            if library is not None:
                attach_mesh_queries(library, colliders)


class ProjectedContactSolver(Solver):
    """A Solver that ends each step by projecting positions out of the colliders (PBD/XPBD, Projective Dynamics,
    the mass-spring integrators; NEWTON keeps contacts inside its solve instead). Builds what that needs once."""

    def __init__(self, model: Model, config: SolverConfig):
        super().__init__(model, config)
        self.self_collision = self_collision_for(model, config)
        """SelfCollision of a cloth with ``config.use_self_collision``, else None."""
        self.seams = seam_edges(model, config)
        """(edge_count,) bool: the seams of a cloth with ``config.use_sewing`` (``solvers/sewing.py``)."""
        if self.self_collision is not None and self.seams.any():
            self.self_collision.exclude_pairs_at(sewn_positions(model, self.seams))
        self.pad2 = sphere_pads(model.rest_positions, model.triangle_indices)
        """Per-particle sphere pads [m^2] that keep the faces out of spheres
        (``collision.response.faces.sphere_pads``)."""
        if self.self_collision is not None:
            self.self_collision.pad2 = self.pad2
        self.native_contacts = None
        """A solver that has the native library sets this to its ``native.kernels.AnalyticContacts``: ``finish_step``
        then projects out of ground planes and spheres in C (``AnalyticContacts.resolve``, the twin of
        ``resolve_collider_contacts``, bit for bit)."""

    def resolve_self_collision(self, x, x_prev, colliders, true_start=None) -> None:
        """The self-collision part of ``finish_step``, in place on x and x_prev (n, 3) [m] after the collider contacts:
        the response (particles resting on a collider count as heavy), then the faces it left deeper than
        FACE_ALLOWANCE * thickness in a collider pushed back to that depth. Nothing without self-collision.

        ``true_start`` (n, 3): the step's start as it was before pre-stabilization moved some of x_prev onto collider planes
        (``ContactConstraints.stabilize``), or None when x_prev is that start: self-collision reads the sides of the
        pairs that move took past each other from it (``SelfCollision._true_sides``).

        The face push runs where self-collision moved a particle far enough to matter: the collider contacts have just
        put the faces out, and it is the response that can move them back in. Over ground planes and spheres alone it
        always runs (in C with the native library, a few microseconds); over other colliders (mesh colliders: the
        face-pair lists and passes, ~0.9 ms a step on the box drape's 31 x 31 cloth) only where some particle moved by
        DEEP_FACE_MOTION of the allowance or more (which says why nothing is lost)."""
        if self.self_collision is not None:
            analytic = not colliders or AnalyticContacts.supports(colliders)  # ground planes and spheres only
            before = None if analytic else x.copy()
            self.self_collision.resolve_beside_colliders(x, x_prev, colliders, true_start)
            allowance = FACE_ALLOWANCE * self.config.thickness
            if colliders and _moved_at_least(x, before, DEEP_FACE_MOTION * allowance):
                resolve_deep_faces(x, x_prev, self.model.inv_mass, self.model.triangle_indices, colliders, allowance,
                                   self.native_contacts)

    def start_before_stabilizing(self, x_prev):
        """A copy of the step's start x_prev (n, 3) for ``resolve_self_collision`` when there is self-collision (which
        reads the start from before pre-stabilization), else None."""
        return x_prev.copy() if self.self_collision is not None else None

    def finish_step(self, x, x_prev, v, dt: float, colliders, velocity_from_positions: bool = True,
                    true_start=None) -> None:
        """The end of every position-level step, in place: collider contacts (``resolve_collider_contacts``, in C
        with ``native_contacts``), then self-collision (which treats particles resting on a collider as heavy) and
        the faces it left deeper than FACE_ALLOWANCE * thickness in a collider pushed back to that depth, then the
        velocity and damping.

        x (n, 3): positions after the solve [m]; x_prev (n, 3): at the step's start (self-collision may move it: its
        velocity-free recovery of pairs closer than thickness); v (n, 3) [m/s]. ``velocity_from_positions``: v is
        (x - x_prev) / dt (position-based solvers, Projective Dynamics); otherwise the solver set v itself and the
        contact corrections are added to it as velocity changes (the mass-spring integrators). ``true_start``: the step's
        start before pre-stabilization, for self-collision (``resolve_self_collision``)."""
        if not velocity_from_positions:
            before, prev_before = x.copy(), x_prev.copy()
        if colliders:
            if self.native_contacts is not None and self.native_contacts.supports(colliders):
                self.native_contacts.resolve(x, x_prev, colliders)
            else:
                resolve_collider_contacts(x, x_prev, self.model.inv_mass, self.model.triangle_indices, colliders,
                                          self.pad2)
        self.resolve_self_collision(x, x_prev, colliders, true_start)
        if velocity_from_positions:
            v[:] = (x - x_prev) / dt
        else:
            v += ((x - before) - (x_prev - prev_before)) / dt
        if self.config.damping > 0.0:
            v *= np.exp(-self.config.damping * dt)


def _moved_at_least(x, before, distance: float) -> bool:
    """Whether some position of x (n, 3) moved from where it was in ``before`` (a copy taken earlier), by ``distance``
    [m] or more; True when there is no copy."""
    if before is None:
        return True
    if np.array_equal(x, before):  # most steps: self-collision moved nothing (a third of the distances' cost)
        return False
    step = x - before
    return bool(np.max(np.einsum("ij,ij->i", step, step), initial=0.0) >= distance * distance)
