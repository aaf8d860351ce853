"""Several bodies in one scene frame: contact between the bodies, both ways.

A ``Scene`` holds bodies (each its Model, its solver from ``make_solver``, its State and its own SolverConfig);
``advance_scene_frame`` advances them all by one frame. NEWTON bodies step first, the whole frame, those with equal
Newton settings as one system (``newton_bodies.NewtonBodies``), each such solve with the other bodies' surfaces as
mesh colliders (``BodySurface``); the position-level bodies then step in lockstep substeps with the
NEWTON bodies' surfaces moving among their colliders and their barriers' reactions as loads, and after every substep
``collision.response.body_contact.BodyContact`` keeps them apart. Every body alone is exactly ``frame.advance_frame``
(the same ``frame.FrameRun``: pins interpolated, colliders seen ``over`` each substep, steps that do not converge split,
``check_finite``).
"""
from dataclasses import dataclass

import numpy as np

from .base import ProjectedContactSolver
from .collision.colliders.mesh_collider import MeshCollider
from .collision.response.body_contact import BodyContact, surface_triangles
from .collision.response.self_contact import DEFAULT_FRICTION
from .config import SolverConfig
from .frame import FrameRun, SimulationDiverged, advance_frame, check_finite
from .linalg.threads import one_blas_thread
from .model import Model, State
from .newton_bodies import NewtonBodies, group_key
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
    its state at rest (or takes ``states``, and ``solvers`` already built for those models and configs).

    Position-level bodies (``base.ProjectedContactSolver``: PBD, XPBD, PROJECTIVE, the mass-spring integrators) step
    in lockstep substeps; with two or more of them the scene owns their contact (``BodyContact``), and a body whose
    self-collision is on has its own pairs handled there instead of in its solver. NEWTON bodies keep their contacts
    inside their solve: those with equal ``newton_bodies.group_key`` are one system (``units``), with IPC barriers and
    friction between them; each solve steps its own substeps over the whole frame first, seeing every other body as a
    mesh collider (``BodySurface``), and the others then see its bodies as mesh colliders moving over the frame.
    ``substeps``: the lockstep substeps per frame, the largest of the position-level bodies' ``config.substeps``."""

    def __init__(self, bodies, states=None, solvers=None):
        self.bodies = []
        for i, (model, config) in enumerate(bodies):
            solver = make_solver(model, config) if solvers is None else solvers[i]
            state = State.at_rest(model) if states is None else states[i]
            self.bodies.append(Body(model, config, solver, state))
        if not self.bodies:
            raise ValueError("a scene needs at least one body")
        self.lockstep = [i for i, b in enumerate(self.bodies) if isinstance(b.solver, ProjectedContactSolver)]
        """Indices of the position-level bodies, stepped in lockstep substeps."""
        self.alone = [i for i in range(len(self.bodies)) if i not in self.lockstep]
        """Indices of the bodies that step a whole frame in their own solve (NEWTON), in the order they step."""
        self.units = []
        """(body indices, NewtonBodies or None) per solve of the NEWTON bodies, in the order they step: bodies with
        equal ``newton_bodies.group_key`` are one system (NewtonBodies), a body alone in its group its own solver."""
        groups = {}
        for i in self.alone:
            groups.setdefault(group_key(self.bodies[i].config), []).append(i)
        for members in groups.values():
            system = None
            if len(members) > 1:
                system = NewtonBodies([(self.bodies[i].model, self.bodies[i].config) for i in members])
            self.units.append((members, system))
        self.substeps = max((self.bodies[i].config.substeps for i in self.lockstep), default=1)
        together = [self.bodies[i] for i in self.lockstep]
        self.contact = BodyContact([(b.model, b.config, b.solver) for b in together]) if len(together) > 1 else None
        """The contact between the position-level bodies, None for fewer than two."""
        self.surfaces = [BodySurface(b.model) for b in self.bodies] if self.alone and len(self.bodies) > 1 else None
        """Each body's surface, seen as a mesh collider by the others when a body steps alone (None: none does)."""
        self.carried = {}
        """Lockstep body index -> the load (n, 3) [N] applied last frame, half of which carries on (``advance_scene_frame``)."""
        self.touched = set()
        """Indices of the bodies that have met another body so far (for reports)."""

    def thickness_between(self, i: int, j: int) -> float:
        """[m] The distance bodies i and j keep: the larger of their ``thickness``."""
        return max(float(self.bodies[i].config.thickness), float(self.bodies[j].config.thickness))


class BodySurface:
    """A body's surface (``surface_triangles``) over the particles it uses, as a mesh collider for another body."""

    def __init__(self, model: Model):
        triangles = surface_triangles(model)
        self.particles = np.unique(triangles)
        """(k,) The body's particles on its surface."""
        local = np.full(model.particle_count, -1, np.int64)
        local[self.particles] = np.arange(len(self.particles))
        self.triangles = local[triangles]
        """(t, 3) The surface's triangles over ``particles``' rows."""

    def collider(self, x_start: np.ndarray, x_end: np.ndarray, thickness: float, name: str) -> MeshCollider:
        """The surface moving linearly from the body's positions x_start to x_end (n, 3) [m] over the frame (static if
        they are the same array), keeping ``thickness`` [m], with the friction between bodies (DEFAULT_FRICTION)."""
        end = MeshCollider(x_end[self.particles], self.triangles, thickness, DEFAULT_FRICTION, name)
        if x_start is x_end:
            return end
        return end.moving_from(MeshCollider(x_start[self.particles], self.triangles, thickness, DEFAULT_FRICTION, name))


def advance_scene_frame(scene: Scene, frame_dt: float, colliders=(), pin_targets=None, fields=None) -> list:
    """Advance every body of ``scene`` in place by ``frame_dt`` seconds; returns their StepStats (one per body).

    First the NEWTON bodies advance the whole frame with ``frame.advance_frame`` and their own substeps, one solve per
    entry of ``scene.units`` (a system of several bodies sees every collider given to any of them), with the other
    bodies' surfaces as mesh colliders (``BodySurface``) keeping the larger of the two thicknesses: a body that
    stepped before it moving over the frame from where it started to where it ended, every other body standing where
    it is at the frame's start. Its barriers and CCD then keep it off them at every iterate; it treats them as
    immovable (it does not push them: they push it, next).

    Then the position-level bodies take the same substeps: K = ``scene.substeps``, the largest of their
    ``config.substeps``, each of length frame_dt / K, so that contact between them is resolved at common times:
    after substep k every body is at time k / K of the frame, and ``BodyContact.resolve`` pushes apart what is near or
    went through each other over that substep (sides read at its start). A body with fewer substeps of its own takes
    more, never fewer (a smaller step is as stable and as accurate). Each body's substep is
    ``frame.FrameRun.substep`` (pins moved linearly to their targets, colliders ``over`` the substep, steps that do
    not converge split), with the NEWTON bodies' surfaces among its colliders, moving over the frame as they did; the
    contact then moves positions and the positions at the substep's start, and the velocities follow:
    v += (change of x - change of x_prev) / dt, as the mass-spring integrators' ``finish_step`` adds its contact
    corrections. Pinned particles never move in it.

    colliders: one sequence shared by every body, or one sequence per body (a list of sequences, one per body, in
    ``scene.bodies`` order); the contact between bodies treats particles resting on any of them as heavy.
    pin_targets: None, or one per body (each None or (n_b, 3) [m], as ``advance_frame``'s).
    fields: None, one ``forces.FrameFields`` for every body, or a list of one per body (each None or FrameFields); a
    NEWTON system of several bodies takes its first body's fields and air (``newton_bodies``).
    A scene of one body gives exactly ``advance_frame(solver, state, frame_dt, config.substeps, colliders, pins)``.
    Raises ``frame.SimulationDiverged`` as ``advance_frame`` does, with ``body`` the index of the body that failed
    (of a NEWTON system: its first body) and ``system`` the indices of the bodies solved with it.
    BLAS runs on one thread meanwhile (``linalg.threads``).
    """
    with one_blas_thread():
        return _advance_scene_frame(scene, frame_dt, colliders, pin_targets, fields)


def _advance_scene_frame(scene: Scene, frame_dt: float, colliders, pin_targets, fields=None) -> list:
    bodies = scene.bodies
    per_body = _per_body_colliders(colliders, len(bodies))
    pins = [None] * len(bodies) if pin_targets is None else list(pin_targets)
    body_fields = list(fields) if isinstance(fields, (list, tuple)) else [fields] * len(bodies)
    if len(body_fields) != len(bodies):
        raise ValueError(f"fields must hold one entry per body ({len(bodies)}), got {len(body_fields)}")
    if len(pins) != len(bodies):
        raise ValueError(f"pin_targets must hold one entry per body ({len(bodies)}), got {len(pins)}")
    stats = [None] * len(bodies)
    moved = {}  # body index -> its positions at the frame's start, for the bodies that have stepped alone
    loads = {}  # lockstep body index -> forces (n, 3) [N] the bodies that stepped alone press into it
    for members, system in scene.units:
        others = {j: _surface(scene, j, members, moved) for j in range(len(bodies)) if j not in members}
        starts = {i: bodies[i].state.x.copy() for i in members}
        if system is None:
            i = members[0]
            b = bodies[i]
            stats[i] = _naming(i, advance_frame, b.solver, b.state, frame_dt, b.config.substeps,
                               list(per_body[i]) + list(others.values()), pins[i], body_fields[i])
            solver, x = b.solver, b.state.x
        else:
            states = [bodies[i].state for i in members]
            system.gather(states)
            own = _distinct([c for i in members for c in per_body[i]])
            frame = _naming(members[0], advance_frame, system.solver, system.state, frame_dt, system.config.substeps,
                            own + list(others.values()), system.pin_targets([pins[i] for i in members], states),
                            body_fields[members[0]], system=members)
            system.scatter(states)
            for i, s in zip(members, system.body_stats(frame)):
                stats[i] = s
            scene.touched.update(members[k] for k in system.solver.self_contact[0].bodies_in_contact(system.state.x))
            solver, x = system.solver, system.state.x
        moved.update(starts)
        for j in scene.lockstep:
            force = solver.contact_forces(x, others[j])
            if np.any(force):
                scene.touched.update(members + [j])
                loads.setdefault(j, np.zeros_like(bodies[j].state.x))[scene.surfaces[j].particles] += force
    # Each frame's reaction is the force at the frame's end with the other body standing still: a cloth it loads moves
    # away from under it over its own step, and at the next frame's end the body may be in the air (no force), so the
    # force applied alternates. Half of each frame's reaction is applied at once and half is carried on (an average
    # over frames whose impulses sum to the reactions' own, since the halves carried add up to what was not applied):
    # the cube in the hammock then rests instead of bouncing on the cloth every other frame.
    for j in set(loads) | set(scene.carried):
        now = loads.get(j, 0.0)
        loads[j] = 0.5 * (now + scene.carried.get(j, 0.0))
        scene.carried[j] = loads[j]
    if scene.lockstep:
        for i, s in zip(scene.lockstep, _advance_lockstep(scene, frame_dt, per_body, pins, moved, loads, body_fields)):
            stats[i] = s
    return stats


def _surface(scene: Scene, j: int, members, moved: dict) -> MeshCollider:
    """Body j's surface as a collider for body i (an index) or for bodies solved together (a list of indices): moving
    over the frame if j has stepped (``moved`` holds its start), else where it stands."""
    x = scene.bodies[j].state.x
    thickness = max(scene.thickness_between(i, j) for i in np.atleast_1d(members))
    return scene.surfaces[j].collider(moved.get(j, x), x, thickness, f"body {j}")


def _advance_lockstep(scene: Scene, frame_dt: float, per_body, pins, moved, loads, body_fields) -> list:
    """The position-level bodies' frame in lockstep substeps (``advance_scene_frame``); returns their StepStats.
    loads: body index -> forces (n, 3) [N] on its particles, applied over every substep (v += dt F / m)."""
    bodies = [scene.bodies[i] for i in scene.lockstep]
    K = scene.substeps
    dt = frame_dt / K
    runs = [FrameRun(b.solver, b.state, K, pins[i], body_fields[i]) for i, b in zip(scene.lockstep, bodies)]
    own = [list(per_body[i]) + [_surface(scene, j, i, moved) for j in moved] for i in scene.lockstep]
    if len(runs) == 1 and scene.contact is None and scene.lockstep[0] not in loads:
        # A body alone: its frame as ``advance_frame`` takes it (whole in one native call where the solver has one).
        _naming(scene.lockstep[0], runs[0].run, dt, own[0])
        return [runs[0].finish()]
    every = _distinct([c for cs in own for c in cs])
    # Each collider posed once per substep, shared by the bodies.
    by_collider = {id(c): c.over_substeps(K) for c in every}
    posed_over = [{key: poses[k] for key, poses in by_collider.items()} for k in range(K)]
    # A body whose frame the native library covers takes each substep as one C call (``native_frame_steps``: the
    # substeps of ``posed_substep``, bit for bit), the others step here.
    native = []
    for i, run, cs in zip(scene.lockstep, runs, own):
        steps = getattr(run.solver, "native_frame_steps", None)
        if steps is not None:
            steps = _naming(i, steps, run, dt, cs, [[p[id(c)] for c in cs] for p in posed_over])
        native.append(steps)
    for k in range(1, K + 1):
        posed = posed_over[k - 1]
        starts = []
        for i, run, cs, steps in zip(scene.lockstep, runs, own, native):
            if i in loads:
                run.state.v += dt * loads[i] * run.solver.model.inv_mass[:, None]
            starts.append(run.state.x.copy())
            if steps is not None:
                _naming(i, steps.advance, k)
            else:
                _naming(i, run.posed_substep, k, dt, [posed[id(c)] for c in cs])
        xs = [b.state.x for b in bodies]
        # Bodies kept out of each other's reach over the substep: nothing to resolve (each checked its state already).
        if scene.contact is not None and not scene.contact.apart(xs, starts):
            before = [x.copy() for x in xs]
            prev_before = [s.copy() for s in starts]
            scene.contact.resolve(xs, starts, list(posed.values()))
            for i, b, x0, s, s0 in zip(scene.lockstep, bodies, before, starts, prev_before):
                if not np.array_equal(b.state.x, x0):
                    scene.touched.add(i)
                b.state.v += ((b.state.x - x0) - (s - s0)) / dt
                _naming(i, check_finite, b.state, b.config.max_speed)
    return [run.finish() for run in runs]


def _naming(index, call, *args, system=None):
    """call(*args), with the index of the body it concerns set as ``body`` on a SimulationDiverged it raises (and the
    indices of the bodies solved with it as one system as ``system``)."""
    try:
        return call(*args)
    except SimulationDiverged as error:
        error.body = index
        error.system = list(system or [index])
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

