"""Several NEWTON bodies solved as one system: one incremental potential, one Newton solve per step.

``NewtonBodies([(model, config), ...])`` concatenates the bodies' particles (``merged_model``) and builds one
``NewtonSolver`` over them (its ``parts``): every body keeps its own elasticity, bending, material and barrier scale,
and one IPC barrier (``collision.barriers.self_barrier.SelfContactBarrier`` with a body per particle) keeps every body's
vertices off the other bodies' triangles and its edges off theirs, at the larger ``thickness`` of the bodies, with CCD
over every Newton step: no accepted iterate has two bodies crossing, and the weight of one is carried by the other
inside the solve (a cube's barrier forces on the cloth under it are in the same minimization as the cloth's springs).
The pairs of two bodies rub with lagged IPC friction (``SelfContactBarrier.lagged_friction``, mu =
``newton.BODY_FRICTION``). Pairs within a body are kept where that body is a cloth with ``use_self_collision`` (without
friction).

What the bodies share: Newton's tolerance and iterations, damping, gravity and the substeps per frame (``group_key``
says which bodies can be solved together). ``gather`` copies the bodies' states into the system's, ``scatter``
copies the system's back into the bodies' State arrays (in place: the operators hold them).
"""
import numpy as np

from .model import Model, State, StepStats, measure_stats
from .newton import NewtonSolver


def group_key(config) -> tuple:
    """The settings NEWTON bodies solved as one system must share (bodies with equal keys are grouped)."""
    return (int(config.substeps), float(config.newton_tolerance), int(config.newton_max_iterations),
            float(config.damping), tuple(float(g) for g in config.gravity))


def merged_model(models) -> Model:
    """The models' particles and elements concatenated in order (each body's indices shifted by the particles before
    it). ``collision_triangles``: each body's own, shifted (the system solver reads the bodies' surfaces per body)."""
    offsets = np.cumsum([0] + [m.particle_count for m in models])[:-1]

    def joined(name, width=None):
        parts = [getattr(m, name) for m in models]
        if width is not None:
            parts = [np.asarray(p, np.int64).reshape(-1, width) + o for p, o in zip(parts, offsets)]
        return np.concatenate(parts)

    return Model(rest_positions=joined("rest_positions"), mass=joined("mass"), inv_mass=joined("inv_mass"),
                 edge_indices=joined("edge_indices", 2), edge_rest_length=joined("edge_rest_length"),
                 triangle_indices=joined("triangle_indices", 3), collision_triangles=joined("collision_triangles", 3),
                 tet_indices=joined("tet_indices", 4), tet_rest_volume=joined("tet_rest_volume"),
                 goal_particles=np.concatenate([np.asarray(m.goal_particles, np.int64) + o for m, o in zip(models, offsets)]),
                 goal_stiffness=joined("goal_stiffness"), goal_positions=joined("goal_positions").reshape(-1, 3))


class NewtonBodies:
    """NEWTON bodies (model, config) with equal ``group_key`` as one system (module docstring).

    Attributes: ``solver`` (NewtonSolver over ``model``, the merged model), ``state`` (the system's State),
    ``offsets`` (each body's first row), ``config`` (the first body's: what they share)."""

    def __init__(self, bodies):
        bodies = list(bodies)
        keys = {group_key(config) for _, config in bodies}
        if len(keys) != 1:
            raise ValueError("NEWTON bodies solved as one system must share substeps, Newton tolerance and iterations, "
                             "damping and gravity")
        self.models = [model for model, _ in bodies]
        self.offsets = [int(o) for o in np.cumsum([0] + [m.particle_count for m in self.models])[:-1]]
        self.model = merged_model(self.models)
        self.config = bodies[0][1]
        parts = [(model, config, offset) for (model, config), offset in zip(bodies, self.offsets)]
        self.solver = NewtonSolver(self.model, self.config, parts)
        self.state = State.at_rest(self.model)

    def rows(self, k: int) -> slice:
        """Rows of body k in the system's arrays."""
        return slice(self.offsets[k], self.offsets[k] + self.models[k].particle_count)

    def gather(self, states) -> None:
        """The system's state from the bodies' States (one per body, in order)."""
        for k, s in enumerate(states):
            self.state.x[self.rows(k)] = s.x
            self.state.v[self.rows(k)] = s.v

    def scatter(self, states) -> None:
        """The bodies' States (in place) from the system's state."""
        for k, s in enumerate(states):
            s.x[:] = self.state.x[self.rows(k)]
            s.v[:] = self.state.v[self.rows(k)]

    def pin_targets(self, targets, states):
        """The system's pin targets (N, 3) from one per body (None: the body's pins stay where they are), or None."""
        if all(t is None for t in targets):
            return None
        return np.concatenate([s.x if t is None else np.asarray(t, float) for t, s in zip(targets, states)])

    def body_stats(self, stats: StepStats) -> list:
        """One StepStats per body from the system's frame: each body's own strain and volume, the solve's counters."""
        out = []
        for k, model in enumerate(self.models):
            own = measure_stats(model, self.state.x[self.rows(k)])
            for name in ("iterations", "newton_iterations", "line_search_halvings", "newton_residual", "min_distance",
                         "split_steps"):
                setattr(own, name, getattr(stats, name))
            out.append(own)
        return out
