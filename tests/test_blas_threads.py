"""A frame is simulated with BLAS on one thread (solvers/linalg/threads.py) and the threads are given back after it,
in ``advance_frame`` and in ``advance_scene_frame``, whichever way the frame ends."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from solvers import SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.frame import SimulationDiverged
from solvers.scene import Scene, advance_scene_frame


def _blas_threads():
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})


def _recording(solver, seen, fail=False, method="step"):
    """Wrap ``solver.step`` (or another ``method``) so each call records the BLAS thread counts it runs under (and
    fails if asked)."""
    step = getattr(solver, method)

    def recorded(*args, **kwargs):
        seen.append(_blas_threads())
        if fail:
            raise SimulationDiverged("a step that fails, for the test")
        return step(*args, **kwargs)

    setattr(solver, method, recorded)
    return solver


def _cloth(solver="NEWTON", height=1.0):
    v, e, t = grid_cloth(5, 1.0, height)
    pinned = np.zeros(len(v), bool)
    pinned[[0, 4]] = True
    model = build_model(v, e, t, pinned=pinned)
    return model, SolverConfig(solver=solver)


@pytest.mark.parametrize("fail", [False, True])
def test_a_frame_runs_blas_on_one_thread_and_gives_the_threads_back(fail):
    assert _blas_threads(), "numpy and scipy load a BLAS that threadpoolctl sees"
    with threadpool_limits(limits=2, user_api="blas"):  # two threads outside the frame, on any machine
        assert _blas_threads() == [2]
        model, config = _cloth()
        seen = []
        solver = _recording(make_solver(model, config), seen, fail)
        state = State.at_rest(model)
        if fail:
            with pytest.raises(SimulationDiverged):
                advance_frame(solver, state, 1.0 / 24, config.substeps)
        else:
            advance_frame(solver, state, 1.0 / 24, config.substeps)
        assert seen and all(threads == [1] for threads in seen)
        assert _blas_threads() == [2]


def test_a_scene_frame_runs_blas_on_one_thread_and_gives_the_threads_back():
    with threadpool_limits(limits=2, user_api="blas"):
        scene = Scene([_cloth("NEWTON"), _cloth("XPBD", height=2.0)])
        seen = []
        for body in scene.bodies:
            _recording(body.solver, seen)
            if hasattr(body.solver, "native_frame"):  # the XPBD cloth's frame, one C call (the NEWTON body a collider)
                _recording(body.solver, seen, method="native_frame")
        advance_scene_frame(scene, 1.0 / 24)
        assert len(seen) > 1 and all(threads == [1] for threads in seen)
        assert _blas_threads() == [2]
