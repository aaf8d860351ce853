"""Loading the native library, and the NumPy path whenever it cannot be used: missing, not a library, a wrong ABI
version, a failed self-test, or Compute set to NumPy. ``status()`` names the path and the reason in one line, and a
solver built meanwhile runs (and gives the same cloth) on the NumPy path."""
import os

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver, native
from solvers.constraints.bending import BendingColourSweep
from solvers.constraints.distance import DistanceColourSweep
from solvers.native import library as native_module
from solvers.native import selftest
from solvers.native.kernels import BendingSweep, DistanceSweep


@pytest.fixture
def fresh(monkeypatch):
    """A clean loader before and after the test (the environment changes are undone by monkeypatch)."""
    monkeypatch.delenv("SOFTSIM_COMPUTE", raising=False)
    native.reload()
    yield monkeypatch
    native.reload()


def lab_cloth(n=16):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    colliders = [Sphere(np.zeros(3), 2.7), GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]))]
    return model, colliders


def run_cloth(compute, frames=3, solver="XPBD", n=16, **settings):
    model, colliders = lab_cloth(n)
    settings = dict(dict(stiffness=1.0e4, substeps=10, iterations=1, tether_stretch=0.01), **settings)
    config = SolverConfig(solver=solver, compute=compute, **settings)
    solver = make_solver(model, config)
    state = State.at_rest(model)
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, colliders)
    return solver, state


def numpy_sweeps(solver):
    return all(isinstance(s.fast, (DistanceColourSweep, BendingColourSweep)) or s.fast is None for s in solver.sweeps)


def test_missing_library_leaves_numpy_in_charge(fresh, tmp_path):
    path = str(tmp_path / "nowhere" / "softsim_native.so")
    fresh.setenv("SOFTSIM_NATIVE_LIBRARY", path)
    assert native.status() == ("numpy", f"numpy: library not found at {path}")
    solver, state = run_cloth("AUTO", frames=1)
    assert solver.native is None and numpy_sweeps(solver)
    assert np.all(np.isfinite(state.x))


def test_a_file_that_is_no_library_leaves_numpy_in_charge(fresh, tmp_path):
    path = tmp_path / "softsim_native.so"
    path.write_bytes(b"\x7fELF but not really a shared library" * 10)
    fresh.setenv("SOFTSIM_NATIVE_LIBRARY", str(path))
    where, reason = native.status()
    assert where == "numpy" and reason.startswith(f"numpy: cannot load {path}")
    assert "\n" not in reason


def test_compute_numpy_and_the_environment_switch(fresh):
    assert native.status("NUMPY") == ("numpy", "numpy: Compute set to NumPy")
    solver, _ = run_cloth("NUMPY", frames=1)
    assert solver.native is None and numpy_sweeps(solver)
    fresh.setenv("SOFTSIM_COMPUTE", "NUMPY")
    assert native.status() == ("numpy", "numpy: SOFTSIM_COMPUTE=NUMPY in the environment")
    assert native.load("AUTO") is None
    with pytest.raises(ValueError, match="unknown compute"):
        SolverConfig(compute="GPU")


def test_a_failed_self_test_leaves_numpy_in_charge(fresh):
    native_library()
    native.reload()
    fresh.setattr(selftest, "run", lambda library: "distance sweep differs from NumPy by 0.5")
    assert native.status() == ("numpy", "numpy: self-test failed: distance sweep differs from NumPy by 0.5")
    solver, _ = run_cloth("AUTO", frames=1)
    assert solver.native is None and numpy_sweeps(solver)


def test_a_self_test_that_raises_counts_as_failed(fresh):
    native_library()
    native.reload()

    def broken(library):
        raise ValueError("edges: index 9 out of range [0, 9)")

    fresh.setattr(selftest, "run", broken)
    assert native.status() == ("numpy", "numpy: self-test failed: ValueError: edges: index 9 out of range [0, 9)")


def test_a_library_of_another_abi_version_is_refused(fresh):
    native_library()
    native.reload()
    fresh.setattr(native_module, "ABI_VERSION", native_module.ABI_VERSION + 1)
    where, reason = native.status()
    assert where == "numpy" and "has ABI version" in reason


def test_the_library_loads_and_says_so(fresh):
    native_library()
    where, reason = native.status()
    assert where == "native" and reason.startswith("native: softsim_native.") and native.host_platform() in reason
    solver, _ = run_cloth("AUTO", frames=1)
    assert solver.native is not None
    assert [type(s.fast) for s in solver.sweeps] == [DistanceSweep, BendingSweep]


@pytest.mark.parametrize("solver, settings", [
    ("XPBD", {}),
    ("XPBD", dict(bending_stiffness=0.0, damping=0.0)),
    ("PBD", {}),
    ("XPBD", dict(iterations=3)),
])
def test_xpbd_cloth_over_a_sphere_is_the_same_native_and_numpy(fresh, solver, settings):
    """The lab cloth (quad edges, bending, pin tethers) falling onto its sphere: every frame equal on both paths."""
    native_library()
    frames = []
    for compute in ("NUMPY", "AUTO"):
        built, state = run_cloth(compute, frames=6, solver=solver, **settings)
        assert (built.native is not None) == (compute == "AUTO")
        frames.append((state.x.copy(), state.v.copy()))
    (x_numpy, v_numpy), (x_native, v_native) = frames
    assert np.min(np.linalg.norm(x_numpy, axis=1)) < 3.0  # the cloth reached the sphere
    assert_same(x_native, x_numpy, 10.0)
    assert_same(v_native, v_numpy, 1e3)


def test_the_platform_names_and_file_names():
    assert native_module.library_file("linux-x64") == "softsim_native.so"
    assert native_module.library_file("windows-x64") == "softsim_native.dll"
    assert native_module.library_file("macos-arm64") == "softsim_native.dylib"
    assert native_module.default_path("macos-x64").endswith(os.path.join("lib", "macos-x64", "softsim_native.dylib"))
