"""The one interface every solver shares."""
from .config import SolverConfig
from .face_contact import sphere_pads
from .model import Model, State, StepStats
from .self_collision import self_collision_for


class Solver:
    """A time integrator bound to one Model, so it can precompute (colourings, factorizations).

    ``step(state, dt, colliders, measure=True)`` advances ``state`` in place by ``dt`` seconds and returns
    StepStats; with ``measure=False`` the strain and volume figures are left out (they cost a pass over
    every element, and ``advance_frame`` only needs them after a frame's last substep).
    Pinned particles (``inv_mass == 0``) are kinematic: they move by their current velocity, which
    the caller sets (see ``solvers.frame.advance_frame``); solvers apply no force to them.
    """

    def __init__(self, model: Model, config: SolverConfig):
        self.model = model
        self.config = config

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        raise NotImplementedError


class ProjectedContactSolver(Solver):
    """A Solver that ends each step by projecting positions out of the colliders (PBD/XPBD, Projective Dynamics,
    the mass-spring integrators; NEWTON keeps contacts inside its solve instead). Builds what that needs once."""

    def __init__(self, model: Model, config: SolverConfig):
        super().__init__(model, config)
        self.self_collision = self_collision_for(model, config)
        """SelfCollision of a cloth with ``config.use_self_collision``, else None."""
        self.pad2 = sphere_pads(model.rest_positions, model.triangle_indices)
        """Per-particle sphere pads [m^2] that keep the faces out of spheres (``face_contact.sphere_pads``)."""
