"""Advancing a body by one scene frame: substeps, kinematic pins and moving colliders, divergence checks."""
import numpy as np

from .forces.fields import uniform_air_velocity
from .forces.loads import BodyLoads, apply_loads
from .linalg.threads import one_blas_thread
from .model import State, StepStats


class SimulationDiverged(RuntimeError):
    """The state became non-finite or impossibly fast; the message says what to change."""


class StepNotConverged(SimulationDiverged):
    """A solver step's own iteration failed (e.g. NEWTON, ``solvers.newton.NewtonNotConverged``) and left the state
    unusable; ``advance_frame`` retries such a step as two half steps before giving up."""


MAX_STEP_SPLITS = 4
"""A substep that fails to converge is split in halves at most this deep (down to 1/16 of the substep)."""


def advance_frame(solver, state: State, frame_dt: float, substeps: int, colliders=(), pin_targets=None,
                  fields=None) -> StepStats:
    """Advance ``state`` in place by ``frame_dt`` seconds in ``substeps`` equal solver steps.

    pin_targets: (particle_count, 3) world positions [m] at the end of the frame, of which only the
    pinned rows (``inv_mass == 0``) are used: pinned particles move linearly to them over the substeps
    and carry the matching velocity. colliders: at their pose at the frame's end, each with ``start`` its pose at
    the frame's start if it moves (``collision.frame_colliders``); they move linearly over the substeps like the
    pins: substep k sees each collider from fraction (k - 1) / substeps to k / substeps (``Collider.over``).
    A step that raises StepNotConverged (NEWTON on a hard frame) is retried
    from its start as two half steps, recursively down to 1 / 2**MAX_STEP_SPLITS of the substep: a smaller step
    makes the incremental potential more convex (the inertia term grows as 1/dt^2), so Newton converges where a
    full step did not. Returns the last step's StepStats, with the Newton counters summed, the smallest collider
    distance taken over all substeps, and ``split_steps`` = the extra steps that splitting took.
    Raises SimulationDiverged if a position becomes non-finite or a speed exceeds ``config.max_speed``, and the
    StepNotConverged of a step still failing at the smallest split. BLAS runs on one thread meanwhile
    (``linalg.threads``).
    fields: the force fields of the frame (``forces.FrameFields``) or None; with them, or with ``config.air_drag`` on a
    cloth, every step starts with the loads of ``forces.loads`` (``body_loads``).
    """
    with one_blas_thread():
        run = FrameRun(solver, state, substeps, pin_targets, fields)
        run.run(frame_dt / substeps, colliders)
        return run.finish()


class FrameRun:
    """One body's frame in progress, one substep at a time: what ``advance_frame`` does between a frame and solver
    steps, shared with ``scene.advance_scene_frame`` (which steps several bodies in lockstep).

    substeps: the frame's step count K; pin_targets: as ``advance_frame``'s (None: the pins stay where they are);
    fields: the frame's force fields (``forces.FrameFields``) or None."""

    def __init__(self, solver, state: State, substeps: int, pin_targets=None, fields=None):
        self.solver, self.state, self.substeps = solver, state, substeps
        self.fields = fields
        self.loads = body_loads(solver)
        self.pinned = np.nonzero(solver.model.inv_mass == 0.0)[0]
        self.start = state.x[self.pinned].copy()
        self.end = self.start if pin_targets is None else np.asarray(pin_targets, float)[self.pinned]
        # Soft pins (solvers/soft_pins.py): their targets move from where they were at the frame's start.
        model = solver.model
        self.goals = np.asarray(getattr(model, "goal_particles", np.zeros(0, np.int64)))
        self.goal_start = model.goal_positions.copy() if len(self.goals) else None
        self.goal_end = None if pin_targets is None or not len(self.goals) else np.asarray(pin_targets, float)[self.goals]
        self.totals = StepStats(min_distance=float("inf"))
        self.stats = StepStats()

    def substep(self, k: int, dt: float, colliders=()) -> None:
        """Step k of 1..K (``dt`` = frame_dt / K seconds): pins moved from fraction (k - 1) / K to k / K of their way,
        colliders seen ``over`` the same fractions, a step that does not converge split (``_step``)."""
        t0, t1 = (k - 1) / self.substeps, k / self.substeps
        self.posed_substep(k, dt, [c.over(t0, t1) for c in colliders])

    def run(self, dt: float, colliders=()) -> None:
        """Every substep of the frame (``substep`` for k = 1 .. K), in one native call when the solver has one for
        this frame (``native_frame``, e.g. a cloth's XPBD: the same steps bit for bit), else one by one."""
        native = getattr(self.solver, "native_frame", None)
        if native is not None and native(self, dt, colliders):
            return
        for k in range(1, self.substeps + 1):
            self.substep(k, dt, colliders)

    def fields_act(self) -> bool:
        """Whether force fields act on the body this frame (air alone does not count)."""
        if self.fields is None or not self.fields.start or self.loads is None:
            return False
        return self.loads.weight > 0.0

    def substep_winds(self):
        """The air velocity (K, 3) [m/s] each substep's loads see (``apply_loads`` at the substep's middle, times the
        body's field weight) when every field acting this frame is a WIND that blows the same everywhere and the body
        has air to catch it (``fields.uniform_air_velocity``); None otherwise. A native frame takes such wind as one
        vector a substep."""
        if not self.fields_act() or self.loads.air is None:
            return None
        K, fields = self.substeps, self.fields
        winds = np.empty((K, 3))
        for k in range(1, K + 1):
            middle = 0.5 * ((k - 1) / K + k / K)
            wind = uniform_air_velocity(fields.at(middle), fields.time + middle * fields.duration)
            if wind is None:
                return None
            winds[k - 1] = self.loads.weight * wind
        return winds

    def substep_fields(self):
        """The force fields of every substep as the native frame takes them (``native.kernels.ClothFrame.prepare``):
        (table (K, f, FIELD_ROW) float64, times (K,) [s], the body's field weight), each substep's fields at its
        middle and the time there, as ``apply_loads`` computes them (``native.kernels.field_table``); None when no
        field acts this frame."""
        if not self.fields_act():
            return None
        from .native.kernels import FIELD_ROW, field_table

        K, fields = self.substeps, self.fields
        table, times = np.zeros((K, len(fields.start), FIELD_ROW)), np.empty(K)
        for k in range(1, K + 1):
            middle = 0.5 * ((k - 1) / K + k / K)
            field_table(fields.at(middle), table[k - 1])
            times[k - 1] = fields.time + middle * fields.duration
        return table, times, self.loads.weight

    def posed_substep(self, k: int, dt: float, colliders=()) -> None:
        """``substep`` with the colliders already posed over the substep (``Collider.over``), so that bodies stepping
        in lockstep share one posed list."""
        t0, t1 = (k - 1) / self.substeps, k / self.substeps
        start, end = self.start, self.end
        apply_loads(self.loads, self.fields, self.state, dt, t0, t1)
        if self.goal_end is not None:  # a soft pin's spring pulls toward its target at the step's end
            self.solver.model.goal_positions[:] = self.goal_start + (self.goal_end - self.goal_start) * t1
        self.stats = _step(self.solver, self.state, dt, colliders, k == self.substeps,
                           self.pinned, start + (end - start) * t0, start + (end - start) * t1, self.totals, 0)

    def finish(self) -> StepStats:
        """The frame's StepStats: the last step's, with the counters of every step (see ``advance_frame``)."""
        stats, totals = self.stats, self.totals
        stats.newton_iterations, stats.line_search_halvings = totals.newton_iterations, totals.line_search_halvings
        stats.split_steps = totals.split_steps
        stats.min_distance = totals.min_distance if totals.min_distance < float("inf") else float("nan")
        return stats


def body_loads(solver):
    """The solver's ``forces.BodyLoads`` (built once per solver, for its model and config)."""
    loads = getattr(solver, "_body_loads", None)
    if loads is None:
        loads = BodyLoads(solver.model, solver.config)
        library = getattr(solver, "native", None)
        if library is not None and library.ready("substeps"):  # the loads in C (``native.kernels``)
            from .native.kernels import AirLoads, FieldLoads

            inv_mass = np.ascontiguousarray(solver.model.inv_mass, np.float64)
            if loads.air is not None:
                loads.native = AirLoads(library, loads.air, inv_mass, loads.gravity)
            loads.fields_native = FieldLoads(library, inv_mass, np.ascontiguousarray(loads.gravity, np.float64),
                                             loads.native)
        solver._body_loads = loads
    return loads


def _step(solver, state, dt, colliders, measure, pinned, pin_from, pin_to, totals, depth) -> StepStats:
    """One solver step of length ``dt`` moving the pins from ``pin_from`` to ``pin_to``; split on StepNotConverged.
    Adds the step's counters to ``totals``."""
    saved = state.copy() if depth < MAX_STEP_SPLITS else None
    try:
        state.v[pinned] = (pin_to - state.x[pinned]) / dt
        stats = solver.step(state, dt, colliders, measure=measure)
    except StepNotConverged:
        if saved is None:
            raise
        state.x[:], state.v[:] = saved.x, saved.v
        middle = 0.5 * (pin_from + pin_to)
        totals.split_steps += 1
        _step(solver, state, 0.5 * dt, [c.over(0.0, 0.5) for c in colliders], False, pinned, pin_from, middle, totals,
              depth + 1)
        return _step(solver, state, 0.5 * dt, [c.over(0.5, 1.0) for c in colliders], measure, pinned, middle, pin_to,
                     totals, depth + 1)
    state.x[pinned] = pin_to  # exact, free of round-off from x += v dt
    check_finite(state, solver.config.max_speed)
    totals.newton_iterations += stats.newton_iterations
    totals.line_search_halvings += stats.line_search_halvings
    if stats.min_distance == stats.min_distance:
        totals.min_distance = min(totals.min_distance, stats.min_distance)
    return stats


def check_finite(state: State, max_speed: float) -> None:
    squares = np.einsum("ij,ij->i", state.v, state.v)
    fastest = float(np.max(squares)) if len(squares) else 0.0
    # A NaN or infinity in v reaches the largest square, one in x the sum: two reductions where the element-wise
    # tests take four; a finite sum that overflows only sends it to those tests.
    if not (np.isfinite(fastest) and np.isfinite(state.x.sum())):
        if not (np.all(np.isfinite(state.x)) and np.all(np.isfinite(state.v))):
            raise SimulationDiverged("positions became NaN or infinite")
    speed = float(np.sqrt(fastest))
    if speed > max_speed:
        raise SimulationDiverged(f"a vertex reached {speed:.3g} m/s (limit {max_speed:g} m/s): the simulation exploded")
