"""Shared set-up of the native kernel tests (tests/test_native_*.py).

``native_library()`` is the loaded, self-tested library, or skips the test with the reason ``status()`` gives (the
library was not built: ``tools/build_native.py --host``). With SOFTSIM_REQUIRE_NATIVE=1 in the environment (CI, the
sanitizer run) a missing or failing library fails the test instead of skipping it.
"""
import os
import platform

import numpy as np
import pytest

from solvers import native

BITWISE = platform.machine().lower() in ("x86_64", "amd64")
"""On x86-64 (no fused multiply-add anywhere on either side) native and NumPy agree bit for bit; elsewhere a SciPy
build may fuse the bending twin's multiply-adds, so the tests allow TOLERANCE there."""
TOLERANCE = 1e-12


def native_library():
    path, reason = native.status()
    if path != "native":
        if os.environ.get("SOFTSIM_REQUIRE_NATIVE") == "1":
            pytest.fail(f"SOFTSIM_REQUIRE_NATIVE=1 but {reason}")
        pytest.skip(f"native library not built or not usable ({reason}); build it with tools/build_native.py --host")
    return native.load()


def assert_same(native_result, numpy_result, scale=1.0):
    """Bit for bit on x86-64, else within TOLERANCE x scale."""
    native_result, numpy_result = np.asarray(native_result), np.asarray(numpy_result)
    if BITWISE:
        if not np.array_equal(native_result, numpy_result):
            gap = np.max(np.abs(native_result - numpy_result))
            raise AssertionError(f"native differs from NumPy by {gap:.3g} (expected bit for bit on x86-64)")
    else:
        np.testing.assert_allclose(native_result, numpy_result, rtol=0.0, atol=TOLERANCE * scale)


def jittered_cloth(n=9, curved=True, seed=3):
    """A 2 m cloth of n x n vertices (with diagonals), pinned at two corners, curved (z = 0.3 x^2: hinges with a rest
    angle) or flat, and positions jittered by 5 cm: (model, x (n*n, 3), the random generator)."""
    from solvers.builder import build_model, grid_cloth

    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=True)
    vertices = vertices.copy()
    if curved:
        vertices[:, 2] = 0.3 * vertices[:, 0] ** 2
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(vertices + rng.normal(scale=0.05, size=vertices.shape))
    return model, x, rng
