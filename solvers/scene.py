"""Several bodies in one scene frame: lockstep substeps and contact between the bodies (position-level solvers).

A ``Scene`` holds bodies (each its Model, its solver from ``make_solver``, its State and its own SolverConfig);
``advance_scene_frame`` advances them all by one frame. Every body alone is exactly ``frame.advance_frame`` (the same
``frame.FrameRun``: pins interpolated, colliders seen ``over`` each substep, steps that do not converge split,
``check_finite``); between bodies, after every substep, ``collision.body_contact.BodyContact`` keeps them apart.
"""
from dataclasses import dataclass

import numpy as np

from .base import ProjectedContactSolver
from .collision.body_contact import BodyContact
from .config import SolverConfig
from .frame import FrameRun, SimulationDiverged, check_finite
from .model import Model, State
from .registry import make_solver


@dataclass(eq=False)
class Body:
    """One body of a scene: what it is, its solver (bound to the model) and its configuration, where it is."""

    model: Model
    config: SolverConfig
    solver: ProjectedContactSolver
    state: State


class Scene:
    """Bodies simulated together. ``Scene([(model, config), ...])`` builds each body's solver (``make_solver``) and
    its state at rest (or takes ``states``, and ``solvers`` already built for those models and configs); the solvers
    must be position-level (``base.ProjectedContactSolver``: PBD, XPBD, PROJECTIVE, the mass-spring integrators):
    NEWTON keeps its contacts inside its own solve.

    With two bodies or more the scene owns their contact (``BodyContact``): a body whose self-collision is on has its
    own pairs handled there instead of in its solver. ``substeps``: the scene's substeps per frame, the largest of the
    bodies' ``config.substeps``."""

    def __init__(self, bodies, states=None, solvers=None):
        self.bodies = []
        for i, (model, config) in enumerate(bodies):
            solver = make_solver(model, config) if solvers is None else solvers[i]
            if not isinstance(solver, ProjectedContactSolver):
                raise ValueError(f"body {i}: {config.solver} keeps its contacts inside its own solve; a scene couples only "
                                 "the position-level solvers (PBD, XPBD, PROJECTIVE, the mass-spring integrators)")
            state = State.at_rest(model) if states is None else states[i]
            self.bodies.append(Body(model, config, solver, state))
        if not self.bodies:
            raise ValueError("a scene needs at least one body")
        self.substeps = max(b.config.substeps for b in self.bodies)
        self.contact = BodyContact([(b.model, b.config, b.solver) for b in self.bodies]) if len(self.bodies) > 1 else None
        """The contact between the bodies, None for a single body (then the scene is ``advance_frame``)."""
        self.touched = set()
        """Indices of the bodies that the contact between bodies has moved so far (for reports)."""


def advance_scene_frame(scene: Scene, frame_dt: float, colliders=(), pin_targets=None) -> list:
    """Advance every body of ``scene`` in place by ``frame_dt`` seconds; returns their StepStats (one per body).

    All bodies take the same substeps: K = ``scene.substeps``, the largest of the bodies' ``config.substeps``, each of
    length frame_dt / K, so that contact between bodies is resolved at common times: after substep k every body is at
    time k / K of the frame, and ``BodyContact.resolve`` pushes apart what is near or went through each other over that
    substep (sides read at its start). A body with fewer substeps of its own takes more, never fewer (a smaller step
    is as stable and as accurate). Each body's substep is ``frame.FrameRun.substep`` (pins moved linearly to their
    targets, colliders ``over`` the substep, steps that do not converge split); the contact then moves positions
    and the positions at the substep's start, and the velocities follow: v += (change of x - change of x_prev) / dt,
    as the mass-spring integrators' ``finish_step`` adds its contact corrections. Pinned particles never move in it.

    colliders: one sequence shared by every body, or one sequence per body (a list of sequences, one per body, in
    ``scene.bodies`` order); the contact between bodies treats particles resting on any of them as heavy.
    pin_targets: None, or one per body (each None or (n_b, 3) [m], as ``advance_frame``'s).
    A scene of one body gives exactly ``advance_frame(solver, state, frame_dt, config.substeps, colliders, pins)``.
    Raises ``frame.SimulationDiverged`` as ``advance_frame`` does, with ``body`` the index of the body that failed.
    """
    bodies = scene.bodies
    per_body = _per_body_colliders(colliders, len(bodies))
    pins = [None] * len(bodies) if pin_targets is None else list(pin_targets)
    if len(pins) != len(bodies):
        raise ValueError(f"pin_targets must hold one entry per body ({len(bodies)}), got {len(pins)}")
    K = scene.substeps
    dt = frame_dt / K
    runs = [FrameRun(b.solver, b.state, K, p) for b, p in zip(bodies, pins)]
    every = _distinct([c for cs in per_body for c in cs])
    for k in range(1, K + 1):
        starts = []
        for i, (run, cs) in enumerate(zip(runs, per_body)):
            starts.append(run.state.x.copy())
            _naming(i, run.substep, k, dt, cs)
        if scene.contact is not None:
            t0, t1 = (k - 1) / K, k / K
            xs = [b.state.x for b in bodies]
            before = [x.copy() for x in xs]
            prev_before = [s.copy() for s in starts]
            scene.contact.resolve(xs, starts, [c.over(t0, t1) for c in every])
            for i, (b, x0, s, s0) in enumerate(zip(bodies, before, starts, prev_before)):
                if not np.array_equal(b.state.x, x0):
                    scene.touched.add(i)
                b.state.v += ((b.state.x - x0) - (s - s0)) / dt
                _naming(i, check_finite, b.state, b.config.max_speed)
    return [run.finish() for run in runs]


def _naming(index, call, *args):
    """call(*args), with the index of the body it concerns set as ``body`` on a SimulationDiverged it raises."""
    try:
        return call(*args)
    except SimulationDiverged as error:
        error.body = index
        raise


def _per_body_colliders(colliders, count):
    """One sequence of colliders per body from a shared sequence or from one sequence per body."""
    colliders = list(colliders)
    if colliders and all(isinstance(c, (list, tuple)) for c in colliders):
        if len(colliders) != count:
            raise ValueError(f"colliders per body must hold one sequence per body ({count}), got {len(colliders)}")
        return [list(c) for c in colliders]
    return [colliders] * count


def _distinct(items):
    """``items`` without repeats of the same object, in order."""
    seen, out = set(), []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out

