"""Self-collision's whole call in one C call (``native.self_step.SelfStep``, src/self_step.c) against the flow it
stands for (``SelfCollision`` call by call with ``use_native_step`` False, itself tested against NumPy): the same bits,
frame after frame, on scenes that take every way back to Python (a list refreshed at the selection and at the
witnesses, the response's buffers grown, impact zones, more new crossings than their buffer holds, a step whose start
pre-stabilization moved), over ground planes and spheres, a mesh collider and no collider at all, and for bodies
meeting each other; a library whose struct differs from the binding's is refused."""
import collections
from types import SimpleNamespace

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.response.self_contact import SelfCollision
from solvers.native import self_step
from solvers.native.mesh_kernels import attach
from test_bodies import run_two_cloths
from test_mesh_collider import box
from test_native_self_collision import _lab
from test_self_collision import fold_scene


@pytest.fixture(scope="module")
def library():
    return native_library()


@pytest.fixture
def calls(monkeypatch):
    """Every softsim_self_step call of the test as (stage, returned code), and how many calls had a true start, kept
    pairs within reach, particles resting on a collider, more crossings than their buffer: a Counter."""
    seen = collections.Counter()
    made = self_step.SelfStep.__init__

    def recording(step, *args):
        made(step, *args)
        function = step.function

        def call(address, stage):
            code = function(address, stage)
            seen[(stage, code)] += 1
            seen["true start"] += bool(step.s.true_start)
            seen["pairs kept"] += code == self_step.DONE and step.s.kept > 0
            seen["heavy"] += code == self_step.DONE and step.s.collider_count > 0 and bool(step.heavy.any())
            seen["overflow"] += code == self_step.CROSSINGS and step.s.crossings > step.s.crossing_capacity
            return code

        step.function = call

    monkeypatch.setattr(self_step.SelfStep, "__init__", recording)
    return seen


def _returned(calls, code) -> int:
    """How many calls returned ``code``, from any stage."""
    return sum(count for key, count in calls.items() if isinstance(key, tuple) and key[1] == code)


def _both(monkeypatch, run):
    """run() once as one C call a step and once call by call: their results."""
    fused = run()
    with monkeypatch.context() as patch:
        patch.setattr(SelfCollision, "use_native_step", False)
        flow = run()
    return fused, flow


def _states(state):
    return state.x.copy(), state.v.copy()


def test_the_lab_cloth_over_a_sphere_is_the_same_as_call_by_call(library, calls, monkeypatch):
    def run():
        sc, state, most = _lab(12, "AUTO", 14)
        return _states(state), (sc.rebuilds, sc.grown, sc.zones, most)

    (fused, fused_counts), (flow, flow_counts) = _both(monkeypatch, run)
    assert_same(fused[0], flow[0])
    assert_same(fused[1], flow[1])
    assert fused_counts == flow_counts
    start, select_given, setup = self_step.START, self_step.SELECT_GIVEN, self_step.SETUP
    assert calls[(start, self_step.DONE)] and calls[(start, self_step.LIST)] and calls[(select_given, self_step.DONE)]
    assert calls[(start, self_step.CAPACITY)] and calls[(setup, self_step.DONE)]
    assert calls["true start"]


@pytest.mark.parametrize("scene", ["swing", "fold PROJECTIVE"])
def test_folds_with_impact_zones_are_the_same_as_call_by_call(library, calls, monkeypatch, scene):
    """The cloth swinging onto itself over the ground and Projective Dynamics' pile (its large steps leave crossings to
    the fail-safe): lists refreshed at the witnesses, impact zones, more crossings than their buffer."""
    def run():
        if scene == "swing":
            sc, state, _ = _lab(12, "AUTO", 20, sphere=False)
            return _states(state), sc.zones
        _, state, _ = fold_scene("PROJECTIVE", True)
        return _states(state), None

    (fused, fused_zones), (flow, flow_zones) = _both(monkeypatch, run)
    assert_same(fused[0], flow[0])
    assert_same(fused[1], flow[1])
    assert fused_zones == flow_zones
    assert calls[(self_step.WITNESS_GIVEN, self_step.DONE)] + calls[(self_step.WITNESS_GIVEN, self_step.CROSSINGS)]
    assert _returned(calls, self_step.CROSSINGS)
    assert calls["overflow"]


def _falling(colliders, frames):
    """A 14 x 14 cloth, 1 m, pinned at one corner, swinging down onto itself (and onto ``colliders``)."""
    vertices, edges, triangles = grid_cloth(14, 1.0, height=0.6, diagonals=False)
    pinned = np.zeros(len(vertices), bool)
    pinned[0] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=0.2, quads=grid_quads(14))
    config = SolverConfig(solver="XPBD", substeps=10, use_self_collision=True, thickness=0.02, compute="AUTO")
    solver = make_solver(model, config)
    state = State.at_rest(model)
    state.v[:, 0] = 1.0
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, colliders)
    return _states(state), solver.self_collision


def test_a_cloth_without_colliders_is_the_same_as_call_by_call(library, calls, monkeypatch):
    (fused, sc), (flow, _) = _both(monkeypatch, lambda: _falling([], 16))
    assert_same(fused[0], flow[0])
    assert_same(fused[1], flow[1])
    assert calls["pairs kept"] > 50 and _returned(calls, self_step.CROSSINGS) and not calls["heavy"]
    assert sc.native_step is not None and sc.use_native_step


def test_a_cloth_over_a_mesh_collider_is_the_same_as_call_by_call(library, calls, monkeypatch):
    """Over a box (a mesh collider with its native queries) on a ground: the resting test and keep-out in C ask the
    box's nearest triangles."""
    def run():
        vertices, triangles = box()
        mesh = MeshCollider(vertices * [0.2, 0.2, 0.4], triangles.copy(), 0.01, 0.2, "Box")
        attach(library, [mesh])
        assert mesh.shared.native is not None
        return _falling([mesh, GroundPlane([0.0, 0.0, -0.05], [0.0, 0.0, 1.0], 0.01, 0.2)], 16)

    (fused, _), (flow, _) = _both(monkeypatch, run)
    assert_same(fused[0], flow[0])
    assert_same(fused[1], flow[1])
    assert calls["pairs kept"] > 50 and calls["heavy"] > 10 and calls["true start"]


def test_bodies_meeting_each_other_are_the_same_as_call_by_call(library, calls, monkeypatch):
    fused, flow = _both(monkeypatch, lambda: run_two_cloths(8))
    assert fused == flow
    assert calls[(self_step.START, self_step.DONE)]


def test_a_copy_runs_the_flow_call_by_call(library):
    """A copy of a SelfCollision (``copy.copy``: its lists replaced, as the self-tests do) does not take the original's
    step, which is bound to the original's lists and buffers."""
    import copy

    _, sc = _falling([], 4)
    assert sc._step_for() is sc.native_step is not None
    twin = copy.copy(sc)
    twin._list = copy.deepcopy(sc._list)
    assert twin._step_for() is None


def test_a_library_with_another_struct_is_refused(library):
    _, sc = _falling([], 0)
    fake = SimpleNamespace(softsim_self_step_size=lambda: 8, softsim_self_step=None)
    collision = SimpleNamespace(native_pass=SimpleNamespace(library=fake))
    with pytest.raises(RuntimeError, match="struct"):
        self_step.SelfStep(collision, ())
    assert sc.native_step is not None
