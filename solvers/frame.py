"""Advancing a body by one scene frame: substeps, kinematic pins, divergence checks."""
import numpy as np

from .model import State, StepStats


class SimulationDiverged(RuntimeError):
    """The state became non-finite or impossibly fast; the message says what to change."""


def advance_frame(solver, state: State, frame_dt: float, substeps: int, colliders=(), pin_targets=None) -> StepStats:
    """Advance ``state`` in place by ``frame_dt`` seconds in ``substeps`` equal solver steps.

    pin_targets: (particle_count, 3) world positions [m] at the end of the frame, of which only the
    pinned rows (``inv_mass == 0``) are used: pinned particles move linearly to them over the substeps
    and carry the matching velocity. Returns the last step's StepStats, with the Newton counters summed and
    the smallest collider distance taken over all substeps.
    Raises SimulationDiverged if a position becomes non-finite or a speed exceeds ``config.max_speed``.
    """
    dt = frame_dt / substeps
    pinned = np.nonzero(solver.model.inv_mass == 0.0)[0]
    start = state.x[pinned].copy()
    end = start if pin_targets is None else np.asarray(pin_targets, float)[pinned]
    stats = StepStats()
    newton_iterations, halvings, min_distance = 0, 0, float("inf")
    for k in range(1, substeps + 1):
        target = start + (end - start) * (k / substeps)
        state.v[pinned] = (target - state.x[pinned]) / dt
        stats = solver.step(state, dt, colliders, measure=(k == substeps))
        state.x[pinned] = target  # exact, free of round-off from x += v dt
        check_finite(state, solver.config.max_speed)
        newton_iterations += stats.newton_iterations
        halvings += stats.line_search_halvings
        min_distance = min(min_distance, stats.min_distance) if stats.min_distance == stats.min_distance else min_distance
    stats.newton_iterations, stats.line_search_halvings = newton_iterations, halvings
    stats.min_distance = min_distance if min_distance < float("inf") else float("nan")
    return stats


def check_finite(state: State, max_speed: float) -> None:
    if not (np.all(np.isfinite(state.x)) and np.all(np.isfinite(state.v))):
        raise SimulationDiverged("positions became NaN or infinite")
    speed = float(np.sqrt(np.max(np.einsum("ij,ij->i", state.v, state.v))))
    if speed > max_speed:
        raise SimulationDiverged(f"a vertex reached {speed:.3g} m/s (limit {max_speed:g} m/s): the simulation exploded")
