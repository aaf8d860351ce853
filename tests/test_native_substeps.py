"""A cloth's substeps in C (``src/substep.c``) against their NumPy twins: the bending Jacobi tail
(``kernels.BendingJacobi`` <-> ``PositionBasedSolver._jacobi``), the air (``kernels.AirLoads`` <-> ``BodyLoads.apply``
and ``AirDrag``), the state check (``check_state`` <-> ``frame.check_finite``), and whole frames in one call
(``PositionBasedSolver.native_frame``) equal to the per-substep native path and to Compute NUMPY, with the fallbacks
to the per-substep path for what the whole-frame call does not cover.

Bit for bit (x86-64, ``assert_same``) wherever the arithmetic is the same; against NUMPY with a moving sphere the face
push agrees to round-off only (its twin's einsum order, see tests/test_native_contacts.py), hence FACE_TOLERANCE
there."""
import dataclasses

import numpy as np
import pytest

from native_helpers import assert_same, jittered_cloth, native_library
from solvers import SolverConfig, State, advance_frame, make_solver
from solvers.builder import build_model, grid_cloth
from solvers.collision.response import collider_contacts as response
from solvers.collision.colliders.shapes import GroundPlane, Sphere, frame_colliders
from solvers.constraints import BendingConstraints
from solvers.forces.air import AirDrag, _split
from solvers.forces.fields import ForceField, uniform_air_velocity
from solvers.forces.loads import BodyLoads, FrameFields
from solvers.frame import FrameRun, SimulationDiverged, check_finite
from solvers.native.kernels import AirLoads, BendingJacobi, check_state
from solvers.position_based import PositionBasedSolver, _Jacobi
from solvers.scene import Scene, advance_scene_frame

FACE_TOLERANCE = 1e-9
"""[m] native vs NUMPY over frames with a moving sphere: the sphere face push's twin sums in einsum's order."""


@pytest.fixture(scope="module")
def library():
    return native_library()


def _cloth(n=9, curved=True, seed=3):
    return jittered_cloth(n, curved, seed)


@pytest.mark.parametrize("curved", [False, True])
def test_bending_jacobi_equals_the_numpy_tail(library, curved):
    model, x0, rng = _cloth(curved=curved)
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    tail = bending.subset(rng.permutation(len(bending))[: len(bending) // 3])  # any order of hinges
    n = model.particle_count
    solver = make_solver(model, SolverConfig(solver="XPBD", compute="NUMPY"))
    jacobi = _Jacobi(tail, n)
    native = BendingJacobi(library, tail, n)
    x, y = x0.copy(), x0.copy()
    lam, ref_lam = rng.normal(scale=1e-3, size=(len(tail), 3)), None
    ref_lam = lam.copy()
    for _ in range(3):
        native.jacobi(x, 1.0 / 720.0, lam, solver.config.jacobi_relaxation)
        solver._jacobi(jacobi, y, 1.0 / 720.0, ref_lam, False)
    assert not np.array_equal(x, x0)
    assert_same(x, y)
    assert_same(lam, ref_lam)


def test_bending_jacobi_refuses_bad_arrays(library):
    model, x0, _ = _cloth()
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    native = BendingJacobi(library, bending, model.particle_count)
    n, m = model.particle_count, len(bending)
    args = dict(hinges=native.hinges, K=native.K, wK=native.wK, rest_norm=native.rest_norm,
                scatter_start=native.scatter_start, scatter_entry=native.scatter_entry,
                constraint_count=native.constraint_count)
    for change, message in [(dict(hinges=native.hinges + n), "hinges: index"), (dict(K=native.K[:, :3].copy()), "K: shape"),
                            (dict(scatter_entry=native.scatter_entry[::-1].copy()), "scatter_entry must"),
                            (dict(scatter_start=native.scatter_start[:-1].copy()), "scatter_start: shape"),
                            (dict(constraint_count=np.zeros(m, np.float32)), "constraint_count: dtype")]:
        with pytest.raises(ValueError, match=message):
            native.bind(n, **{**args, **change})
    with pytest.raises(ValueError, match="x: shape"):
        native.jacobi(np.zeros((n + 1, 3)), 1.0 / 720.0, np.zeros((m, 3)), 0.2)


def test_air_equals_its_numpy_twin_over_steps(library):
    """Several steps (the faces re-measured every AREA_REFRESH_TIME), pinned particles left alone, the twin's cache
    shared both ways (native and NumPy steps alternate)."""
    model, x0, rng = _cloth()
    config = SolverConfig(solver="XPBD", air_drag=1.3)
    numpy_loads, native_loads = BodyLoads(model, config), BodyLoads(model, config)
    native_loads.native = AirLoads(library, native_loads.air, np.ascontiguousarray(model.inv_mass), native_loads.gravity)
    x, v = x0.copy(), rng.normal(size=x0.shape)
    y, u = x.copy(), v.copy()
    dt = 1.0 / 720.0
    for step in range(12):
        numpy_loads.apply(x, v, dt, [], 0.0)
        if step % 5 == 4:  # a NumPy step on the native body: the cache goes on
            native_loads.native, saved = None, native_loads.native
            native_loads.apply(y, u, dt, [], 0.0)
            native_loads.native = saved
        else:
            native_loads.apply(y, u, dt, [], 0.0)
        assert_same(u, v)
        x += dt * v
        y += dt * u
    assert native_loads.air._since == numpy_loads.air._since
    area, normal = native_loads.native.area_vectors(x)
    ref_area, ref_normal = _split(AirDrag(model.triangle_indices, model.particle_count, 1.0).area_vectors(x))
    assert_same(area, ref_area)
    assert_same(normal, ref_normal)


def test_air_with_uniform_wind_equals_its_numpy_twin(library):
    """WIND fields that blow the same everywhere (two of them, one turned, the body's field weight 0.7): the air kernel
    takes their air velocity as one vector, bit for bit with ``BodyLoads.apply`` on NumPy; a wind with noise varies
    over the cloth and stays on NumPy (no one vector for it)."""
    model, x0, rng = _cloth()
    config = SolverConfig(solver="XPBD", air_drag=1.3, field_weight=0.7)
    numpy_loads, native_loads = BodyLoads(model, config), BodyLoads(model, config)
    native_loads.native = AirLoads(library, native_loads.air, np.ascontiguousarray(model.inv_mass), native_loads.gravity)
    turned = np.eye(4)
    turned[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]
    fields = [ForceField("WIND", strength=2.0), ForceField("WIND", matrix=turned, strength=1.5)]
    assert uniform_air_velocity(fields, 0.3) is not None
    x, v = x0.copy(), rng.normal(size=x0.shape)
    y, u = x.copy(), v.copy()
    dt = 1.0 / 720.0
    calls = []
    native_apply = native_loads.native.apply
    native_loads.native.apply = lambda *a: calls.append(a) or native_apply(*a)
    for _ in range(6):
        numpy_loads.apply(x, v, dt, fields, 0.3)
        native_loads.apply(y, u, dt, fields, 0.3)
        assert_same(u, v)
        x += dt * v
        y += dt * u
    assert len(calls) == 6
    still = v.copy()
    numpy_loads.apply(x, still, dt, [], 0.3)
    assert not np.allclose(still, v)  # the wind does act
    assert uniform_air_velocity([dataclasses.replace(fields[0], noise=0.5)], 0.3) is None
    assert uniform_air_velocity([ForceField("WIND", falloff_power=1.0)], 0.3) is None
    assert uniform_air_velocity([fields[0], ForceField("FORCE")], 0.3) is None
    with pytest.raises(ValueError, match="wind: shape"):
        native_loads.native.apply(y, u, dt, np.zeros(2))


def test_air_binding_refuses_bad_arrays(library):
    model, _, _ = _cloth()
    air = AirDrag(model.triangle_indices, model.particle_count, 1.0)
    native = AirLoads(library, air, np.ascontiguousarray(model.inv_mass), np.array([0.0, 0.0, -9.81]))
    n, t = model.particle_count, len(model.triangle_indices)
    args = dict(inv_mass=native.inv_mass, gravity=native.gravity, triangles=native.triangles,
                corner_start=native.corner_start, corner_face=native.corner_face)
    for change, message in [(dict(inv_mass=np.zeros(n - 1)), "inv_mass: shape"),
                            (dict(triangles=native.triangles + n), "triangles: index"),
                            (dict(corner_face=native.corner_face + t), "corner_face: index"),
                            (dict(corner_start=native.corner_start * 2), "corner_start must")]:
        with pytest.raises(ValueError, match=message):
            native.bind(n, **{**args, **change})


def test_state_check_matches_check_finite(library):
    x, v = np.zeros((5, 3)), np.zeros((5, 3))
    v[2] = [3.0, 4.0, 0.0]
    assert check_state(library, x, v, 5.0) == 0
    assert check_state(library, x, v, 4.999) == 2
    with pytest.raises(SimulationDiverged):
        check_finite(State(x, v), 4.999)
    x[1, 2] = np.nan
    assert check_state(library, x, v, 5.0) == 1
    with pytest.raises(ValueError, match="v: dtype"):
        check_state(library, x, v.astype(np.float32), 5.0)


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("where", ["x", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_finite_names_non_finite_states_and_passes_huge_finite_ones(where, bad):
    x, v = np.zeros((5, 3)), np.zeros((5, 3))
    {"x": x, "v": v}[where][3, 1] = bad
    with pytest.raises(SimulationDiverged, match="NaN or infinite"):
        check_finite(State(x, v), 10.0)
    x, v = np.full((5, 3), 1e308), np.zeros((5, 3))  # finite, though their sum overflows
    check_finite(State(x, v), 10.0)
    v[4] = [0.0, 0.0, -10.5]
    with pytest.raises(SimulationDiverged, match="10.5 m/s"):
        check_finite(State(x, v), 10.0)


# ------------------------------------------------------------------------------------------------ whole frames


def _lab(n=20, air=0.0, moving=False, friction=0.0, rig=True):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    sphere, ground = (Sphere(np.zeros(3), 2.7, friction=friction, name="sphere"),
                      GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]), name="ground"))
    return model, sphere, ground


def _frames(model, sphere, ground, compute, frames, air=0.0, moving=False, rig=True, whole=True, scheme="GAUSS_SEIDEL",
            fields=None, colliders=None, self_collision=False):
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01,
                          compute=compute, air_drag=air, constraint_scheme=scheme, use_self_collision=self_collision,
                          thickness=0.04 if self_collision else SolverConfig.thickness)
    solver = make_solver(model, config)
    if not whole:
        solver.native_frame = lambda run, dt, colliders=(): False
    state, previous, out, stats = State.at_rest(model), None, [], []
    for f in range(frames):
        current = [sphere, ground] if colliders is None else colliders
        if moving:
            current = [dataclasses.replace(sphere, center=np.array([0.2 * np.sin(f / 3.0), 0.0, 0.1 * f]),
                                           radius=2.7 + 0.05 * np.sin(f / 2.0)),
                       dataclasses.replace(ground, point=np.array([0.0, 0.0, -3.0 + 0.05 * f]))]
        targets = None
        if rig:  # the pins follow a bone: 1 m over 24 frames, and a turn
            targets = model.rest_positions.copy()
            targets[:, 0] += (f + 1) / 24.0
            targets[:, 2] += 0.2 * np.sin((f + 1) / 5.0)
        stats.append(advance_frame(solver, state, 1.0 / 24.0, config.substeps, frame_colliders(previous, current),
                                   targets, fields))
        previous = current
        out.append(state.x.copy())
    return out, stats, solver


def _three_paths(monkeypatch, model, sphere, ground, frames, **kw):
    """``_frames`` in whole frames (recording what each ``native_frame`` call returned), on the per-substep path and
    with Compute NUMPY, each frame's positions bit for bit the same on all three. Returns (what the frame calls
    returned, the whole frames' (positions, stats, solver), the NUMPY run's stats)."""
    taken = []
    original = PositionBasedSolver.native_frame
    monkeypatch.setattr(PositionBasedSolver, "native_frame",
                        lambda self, *a: taken.append(original(self, *a)) or taken[-1])
    whole = _frames(model, sphere, ground, "AUTO", frames, **kw)
    monkeypatch.setattr(PositionBasedSolver, "native_frame", original)
    pieces, _, _ = _frames(model, sphere, ground, "AUTO", frames, whole=False, **kw)
    reference, reference_stats, _ = _frames(model, sphere, ground, "NUMPY", frames, **kw)
    for a, b, c in zip(whole[0], pieces, reference):
        assert_same(a, b)
        assert_same(a, c)
    return taken, whole, reference_stats


@pytest.mark.parametrize("air", [0.0, 1.0])
@pytest.mark.parametrize("rig", [False, True])
def test_whole_frames_equal_numpy_and_the_per_substep_path(library, air, rig, monkeypatch):
    model, sphere, ground = _lab()
    taken, (_, whole_stats, _), reference_stats = _three_paths(monkeypatch, model, sphere, ground, 8, air=air, rig=rig)
    assert len(taken) == 8
    for a, b in zip(whole_stats, reference_stats):
        assert a.max_strain == b.max_strain and a.rms_strain == b.rms_strain and a.iterations == b.iterations


def test_whole_frames_with_moving_colliders(library):
    model, sphere, ground = _lab()
    sphere = dataclasses.replace(sphere, friction=0.5)
    whole, _, _ = _frames(model, sphere, ground, "AUTO", 8, moving=True)
    pieces, _, _ = _frames(model, sphere, ground, "AUTO", 8, moving=True, whole=False)
    reference, _, _ = _frames(model, sphere, ground, "NUMPY", 8, moving=True)
    for a, b, c in zip(whole, pieces, reference):
        assert_same(a, b)
        np.testing.assert_allclose(a, c, rtol=0.0, atol=FACE_TOLERANCE)


def test_a_substep_walked_in_sweeps_is_finished_in_numpy(library, monkeypatch):
    """With a tiny sweep length every step's end-of-step push must be walked in sweeps (the NumPy twin): the frame
    call stops there, NumPy finishes that substep and the call goes on, equal to the per-substep path."""
    monkeypatch.setattr(response, "SWEEP_LENGTH", 1e-4)
    model, sphere, ground = _lab(12)
    whole, _, solver = _frames(model, sphere, ground, "AUTO", 4)
    pieces, _, _ = _frames(model, sphere, ground, "AUTO", 4, whole=False)
    reference, _, _ = _frames(model, sphere, ground, "NUMPY", 4)
    assert solver._cloth_frame() is not None
    for a, b, c in zip(whole, pieces, reference):
        assert_same(a, b)
        np.testing.assert_allclose(a, c, rtol=0.0, atol=FACE_TOLERANCE)


@pytest.mark.parametrize("sweep_length", [None, 1e-4])
def test_self_collision_takes_the_frame_call_substep_by_substep(library, monkeypatch, sweep_length):
    """Self-collision on: the frame call hands every substep back after its end-of-step push (status 4; with a tiny
    sweep length status 1, the push walked in sweeps), self-collision runs there with the step's start from before
    pre-stabilization, and the call goes on. 14 frames of the pinned cloth folding over the sphere (moving, with
    friction): bit for bit the per-substep path and Compute NUMPY."""
    if sweep_length is not None:
        monkeypatch.setattr(response, "SWEEP_LENGTH", sweep_length)
    model, sphere, ground = _lab(16)
    sphere = dataclasses.replace(sphere, friction=0.3)
    taken, (whole, whole_stats, solver), reference_stats = _three_paths(monkeypatch, model, sphere, ground, 14,
                                                                        moving=True, self_collision=True)
    assert taken == [True] * 14 and solver._cloth_frame().plan.hand_over == 1
    for a, b in zip(whole_stats, reference_stats):
        assert a.max_strain == b.max_strain
    centre, radius = np.array([0.2 * np.sin(13 / 3.0), 0.0, 1.3]), 2.7 + 0.05 * np.sin(6.5)  # the last frame's sphere
    assert np.linalg.norm(whole[-1] - centre, axis=1).min() < radius + 0.1  # it reached the sphere
    assert solver.self_collision.rebuilds > 0


@pytest.mark.parametrize("rig", [False, True])
def test_uniform_wind_takes_the_frame_call(library, rig, monkeypatch):
    """A WIND field blowing the same everywhere, its strength and direction animated over the frame, on a cloth with
    air: whole frames in one call (``FrameRun.substep_winds``), bit for bit with the per-substep path and Compute
    NUMPY; and the wind moves the cloth."""
    model, sphere, ground = _lab()
    turned = np.eye(4)
    turned[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]
    fields = FrameFields([ForceField("WIND", strength=3.0)], [ForceField("WIND", matrix=turned, strength=5.0)], 0.5,
                         1.0 / 24.0)
    taken, (whole, whole_stats, _), reference_stats = _three_paths(monkeypatch, model, sphere, ground, 6, air=1.0,
                                                                   rig=rig, fields=fields)
    assert taken == [True] * 6
    still, _, _ = _frames(model, sphere, ground, "AUTO", 6, air=1.0, rig=rig)
    for a, b in zip(whole_stats, reference_stats):
        assert a.max_strain == b.max_strain
    assert np.abs(whole[-1] - still[-1]).max() > 1e-3


def test_what_the_frame_call_does_not_cover_falls_back(library):
    model, sphere, ground = _lab(10)
    gusty = ForceField("WIND", strength=2.0, noise=1.0)  # varies over the cloth: no one air velocity a substep
    force = ForceField("FORCE", strength=2.0)
    for kwargs, covered in ((dict(fields=FrameFields([gusty], [gusty], 0.0, 1.0 / 24.0)), True),
                            (dict(fields=FrameFields([force], [force], 0.0, 1.0 / 24.0)), True),
                            (dict(scheme="JACOBI"), False)):
        # Fields other than uniform wind take the frame call as a table a substep (tests/test_native_fields.py).
        native, _, solver = _frames(model, sphere, ground, "AUTO", 2, air=1.0, **kwargs)
        reference, _, _ = _frames(model, sphere, ground, "NUMPY", 2, air=1.0, **kwargs)
        run = FrameRun(solver, State.at_rest(model), 30, None, kwargs.get("fields"))
        assert solver.native_frame(run, 1.0 / 720.0, [sphere]) == covered
        for a, b in zip(native, reference):
            np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-12)

    class OtherSphere(Sphere):
        pass

    other = OtherSphere(np.zeros(3), 2.7)
    _, _, solver = _frames(model, sphere, ground, "AUTO", 1)
    assert not solver.native_frame(FrameRun(solver, State.at_rest(model), 30), 1.0 / 720.0, [other])


def test_a_scene_of_one_cloth_takes_the_frame_call(library):
    model, sphere, ground = _lab(12)
    config = SolverConfig(solver="XPBD", substeps=30, iterations=1, tether_stretch=0.01, air_drag=1.0)
    scene = Scene([(model, config)])
    solver = make_solver(model, config)
    state = State.at_rest(model)
    for f in range(3):
        targets = model.rest_positions.copy()
        targets[:, 0] += (f + 1) / 24.0
        a = advance_scene_frame(scene, 1.0 / 24.0, [sphere, ground], [targets])[0]
        b = advance_frame(solver, state, 1.0 / 24.0, 30, [sphere, ground], targets)
        assert_same(scene.bodies[0].state.x, state.x)
        assert a.max_strain == b.max_strain


def test_a_diverging_frame_raises_as_numpy_does(library):
    """A speed past max_speed at the same substep: the same error and the same state on both paths."""
    model, sphere, ground = _lab(8)
    states, messages = [], []
    for compute in ("AUTO", "NUMPY"):
        config = SolverConfig(solver="XPBD", substeps=30, iterations=1, max_speed=0.2, compute=compute)
        solver = make_solver(model, config)
        state = State.at_rest(model)
        with pytest.raises(SimulationDiverged, match="m/s") as error:
            advance_frame(solver, state, 1.0 / 24.0, 30, [sphere, ground])
        states.append(state.x.copy())
        messages.append(str(error.value))
    assert_same(states[0], states[1])
    assert messages[0] == messages[1]


def _lockstep_scene(compute):
    """Three XPBD cloths in one scene: a pinned one (the test moves its pins), a second dropped onto it (self-collision
    on: the scene's contact keeps its pairs), a third far aside; air on."""
    bodies = []
    for k, (height, shift) in enumerate(((1.0, 0.0), (1.3, 0.0), (1.0, 8.0))):
        V, E, T = grid_cloth(10, 2.0, height)
        V[:, 0] += shift
        pinned = np.zeros(len(V), bool)
        if k == 0:
            pinned[[0, 9]] = True
        config = SolverConfig(solver="XPBD", substeps=12, iterations=1, tether_stretch=0.01, air_drag=1.0,
                              compute=compute, use_self_collision=k == 1)
        bodies.append((build_model(V, E, T, pinned=pinned, total_mass=0.5), config))
    return Scene(bodies)


@pytest.mark.parametrize("collider", ["sphere", "box"])
def test_bodies_in_lockstep_take_one_frame_call_a_substep_each(library, monkeypatch, collider):
    """Bodies stepping in lockstep take each substep as one C call of their frame (``native_frame_steps``), never
    the per-substep path, with the same positions and velocities as the NumPy path (NumPy contact between them too)
    bit for bit: bodies meeting (the contact moves them between two calls), a body apart, pins moving, air, and a
    moving collider they share: a sphere, or a box mesh (of which each body keeps its own planes and face pairs)."""
    from scenario_scenes import box_mesh
    from solvers.collision.colliders.mesh_collider import MeshCollider

    corners, triangles = box_mesh(1.0, 1.0, 0.4)
    results = {}
    for compute in ("NUMPY", "AUTO"):
        scene = _lockstep_scene(compute)
        # The contact between them runs the kernels the bodies ask for.
        assert (scene.contact.contact.native_pairs is None) == (compute == "NUMPY")
        if compute == "AUTO":
            def refused(*args, **kwargs):
                raise AssertionError("a body covered by the frame call stepped substep by substep")

            monkeypatch.setattr(FrameRun, "posed_substep", refused)
        for f in range(8):
            if collider == "sphere":
                shape = Sphere(np.array([0.0, 0.0, 0.2 - 0.02 * f]), 0.5, friction=0.2)
            else:
                # its top at 0.75 m, sliding under the first cloth as it lands (it hangs to 0.66 m around it)
                shape = MeshCollider(corners + [-0.5 + 0.02 * f, -0.5, 0.35], triangles, 0.01, 0.2, "box")
            targets = [scene.bodies[0].model.rest_positions + [0.0, 0.01 * (f + 1), 0.0], None, None]
            advance_scene_frame(scene, 1.0 / 24.0, [shape], targets)
        monkeypatch.undo()
        results[compute] = [(b.state.x.copy(), b.state.v.copy()) for b in scene.bodies]
        assert scene.touched == {0, 1}  # the first two met, the third stayed apart
    for (x, v), (x_ref, v_ref) in zip(results["AUTO"], results["NUMPY"]):
        assert_same(x, x_ref)
        assert_same(v, v_ref)
