"""The one interface every solver shares."""
from .config import SolverConfig
from .model import Model, State, StepStats


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
