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


def keep_out_scene(rng, seed, pads):
    """The keep-out kernels' scene: the particles of ``selftest.contact_scene`` around its sphere and on its ground,
    some pinned (inverse mass 0), some already heavy; colliders in either order by seed. Draws from ``rng``.
    Returns (model, x (n, 3), colliders, pad2 or None, inv_mass (n,), heavy (n,) bool)."""
    from solvers.collision.response import faces
    from solvers.collision.response.self_contact import CONTACT_MASS_FACTOR
    from solvers.native.selftest import contact_scene

    model, x, _, colliders = contact_scene(n=9, seed=seed, moving=seed % 2 == 1, thickness=0.01)
    n = len(x)
    sphere, ground = colliders
    rel = x - sphere.center
    x = np.ascontiguousarray(sphere.center + rel / np.linalg.norm(rel, axis=1)[:, None]
                             * rng.uniform(sphere.radius - 0.05, sphere.radius + 0.05, n)[:, None])
    x[rng.random(n) < 0.3, 2] = ground.point[2] + rng.uniform(-0.05, 0.02, 1)[0]
    pad2 = faces.sphere_pads(model.rest_positions, model.triangle_indices) if pads else None
    inv_mass = np.where(rng.random(n) < 0.1, 0.0, model.inv_mass)
    heavy = rng.random(n) < 0.2
    inv_mass[heavy] /= CONTACT_MASS_FACTOR
    return model, x, (colliders[::-1] if seed % 3 == 0 else colliders), pad2, inv_mass, heavy
