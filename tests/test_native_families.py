"""The native library's kernel families: each family's self-test runs the first time a solver binds it (not at load),
its verdict is kept with the library, and a family whose test fails leaves that family alone on the NumPy path (the
cloth is then the same as with Compute set to NumPy), with the reason in ``status()``; nothing raises."""
import os
import sys

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, make_solver, native
from solvers.builder import grid_cloth
from solvers.collision.colliders.shapes import frame_colliders
from solvers.native import selftest
from solvers.native.mesh_frame import frame_supports

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from profile_mesh_collider import box_mesh  # noqa: E402


@pytest.fixture
def fresh(monkeypatch):
    """A freshly loaded library (no family tested yet) before the test, a clean loader after it."""
    monkeypatch.delenv("SOFTSIM_COMPUTE", raising=False)
    native_library()
    native.reload()
    yield monkeypatch
    native.reload()


def box_drape(compute, frames=4, n=9):
    """A small cloth (n x n, 3 m) dropped on the 12-triangle box on a ground: (solver, state, the last colliders)."""
    vertices, triangles = box_mesh(0)
    v, e, t = grid_cloth(n, 3.0, height=0.55)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD", compute=compute))
    state = State.at_rest(body.model)
    previous = None
    for _ in range(frames):
        current = [MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.2, "Box"),
                   GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2)]
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, current))
        previous = current
    return body, state, previous


def test_families_are_tested_when_first_bound_and_only_then(fresh):
    calls = []
    for family, tests in list(selftest.FAMILIES.items()):
        fresh.setitem(selftest.FAMILIES, family, tuple(
            (lambda library, test=test, family=family: calls.append(family) or test(library)) for test in tests))
    library = native.load()
    assert native.status() == ("native", native.status()[1]) and library.verdicts == {} and calls == []
    body, state, colliders = box_drape("AUTO", frames=1)
    assert set(library.verdicts) == {"contacts", "substeps", "mesh"}  # no self-collision, solids or implicit test
    assert all(problem == "" for problem in library.verdicts.values())
    assert sorted(calls) == sorted(set(calls))  # each once
    box_drape("AUTO", frames=1)
    assert library.ready("mesh") and sorted(calls) == sorted(set(calls))  # kept, not run again
    assert colliders[0].shared.native is not None
    with pytest.raises(ValueError, match="unknown kernel family"):
        library.ready("meshes")


def test_a_failing_family_alone_falls_back_to_numpy(fresh):
    fresh.setitem(selftest.FAMILIES, "mesh", (lambda library: "mesh closest weights differs from NumPy by 0.5",))
    body, state, colliders = box_drape("AUTO")
    where, reason = native.status()
    assert where == "native"
    assert reason.endswith("; mesh on NumPy: self-test failed: mesh closest weights differs from NumPy by 0.5")
    library = native.load()
    assert library.ready("contacts") and library.ready("substeps") and not library.ready("mesh")
    assert body.native_contacts is not None  # the rest stays native
    assert colliders[0].shared.native is None and not frame_supports(colliders, library)
    assert frame_supports(colliders)  # what the frame call itself could take
    _, reference, _ = box_drape("NUMPY")
    assert np.min(state.x[:, 2]) < 0.52  # the cloth reached the box (its top at 0.5 m)
    assert_same(state.x, reference.x)
    assert_same(state.v, reference.v)


def test_a_family_test_that_raises_counts_as_failed(fresh):
    def broken(library):
        raise ValueError("triangles: index 9 out of range [0, 9)")

    fresh.setitem(selftest.FAMILIES, "substeps", (broken,))
    body, state, _ = box_drape("AUTO", frames=1)
    assert not native.load().ready("substeps")
    assert native.status()[1].endswith("; substeps on NumPy: self-test failed: ValueError: triangles: index 9 out of "
                                       "range [0, 9)")
    assert body._cloth_frame() is None  # no whole-frame call without its kernels
    assert np.all(np.isfinite(state.x))


@pytest.mark.parametrize("family", ["self", "solids"])
def test_the_self_collision_and_solid_families_fall_back_too(fresh, family):
    from solvers.colouring import colour_constraints
    from solvers.collision.response.self_contact import SelfCollision

    fresh.setitem(selftest.FAMILIES, family, (lambda library: "differs",))
    library = native.load()
    if family == "self":
        v, e, t = grid_cloth(6, 1.0)
        sc = SelfCollision(build_model(v, e, t), 0.01)
        assert sc.native_pass is None and getattr(sc, "native_pairs", None) is None
    else:
        tets, x, _, _ = selftest.tet_block()
        colours = [c for c in colour_constraints(tets.indices, len(x)) if len(c) >= 2]
        assert tets.native_sweep(library, colours, len(x)) is None  # the NumPy sweeps
    assert native.status()[1].endswith(f"; {family} on NumPy: self-test failed: differs")


def test_every_family_passes_its_self_test(fresh):
    library = native.load()
    assert selftest.run_all(library) == ""
    assert all(library.ready(family) for family in selftest.FAMILIES)
    assert native.status()[1] == native.status()[1].split(";")[0]  # no family named as failed


def test_the_warm_up_loads_and_tests_what_a_cloth_bake_binds_first(fresh):
    thread = native.warm_up("AUTO")
    thread.join()
    library = native.load()
    assert library is not None and set(library.verdicts) == set(native.library.WARM_UP_FAMILIES)
    assert all(problem == "" for problem in library.verdicts.values())


def test_no_warm_up_on_the_numpy_path(fresh):
    assert native.warm_up("NUMPY") is None
    fresh.setenv("SOFTSIM_COMPUTE", "NUMPY")
    assert native.warm_up("AUTO") is None


def test_a_reload_waits_for_a_running_warm_up(fresh):
    """The warm-up's load must not land after a reload (it would bring back the library a test pointed away from)."""
    thread = native.warm_up("AUTO")
    native.reload()
    assert not thread.is_alive()
    assert native.library._LOADER.done is False
