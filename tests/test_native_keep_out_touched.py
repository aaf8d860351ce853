"""The keep-out of self-collision's native passes bound once on the pass's touched mask
(``KeepOut.bind_touched``, ``softsim_keep_out_touched``) against ``KeepOut.run`` and the NumPy twin
(``SelfCollision._keep_out_of_colliders``) on the same particles; the response taking it for ground planes and spheres
(mesh colliders: tests/test_native_keep_out_mesh.py); the binding's validation."""
from types import SimpleNamespace

import numpy as np
import pytest

from native_helpers import assert_same, keep_out_scene, native_library
from solvers.collision.colliders.mesh_collider import MeshCollider
from solvers.collision.response.impact_zones import COLLIDER_SLACK
from solvers.collision.response.self_contact import CONTACT_MASS_FACTOR, SelfCollision
from solvers.native.kernels import KeepOut
from solvers.native.selftest import contact_scene


@pytest.fixture(scope="module")
def library():
    return native_library()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pads", [False, True])
def test_bound_keep_out_equals_run_and_its_numpy_twin(library, seed, pads):
    """Several calls of one bound call with the mask changed in place between them (as the passes do), against
    ``run`` on np.flatnonzero(mask) and the NumPy loop on the same indices: the same positions, masses and flags."""
    rng = np.random.default_rng(100 + seed)
    _, x, colliders, pad2, inv_mass, heavy = keep_out_scene(np.random.default_rng(seed), seed, pads)
    n = len(x)
    slack = COLLIDER_SLACK * 0.01
    bound_keep_out, run_keep_out = KeepOut(library, n, pad2), KeepOut(library, n, pad2)
    bound_keep_out.pose(colliders)
    run_keep_out.pose(colliders)
    y, w, z = x.copy(), x.copy(), x.copy()
    im_b, im_r, im_n = inv_mass.copy(), inv_mass.copy(), inv_mass.copy()
    heavy_b, heavy_r, heavy_n = heavy.copy(), heavy.copy(), heavy.copy()
    mask = np.zeros(n, bool)
    call = bound_keep_out.bind_touched(y, mask, im_b, heavy_b, slack, CONTACT_MASS_FACTOR)
    twin = SimpleNamespace(native_pass=None, inv_mass=im_n, _heavy=heavy_n, pad2=pad2, thickness=0.01)
    for share in (0.5, 0.0, 0.3, 1.0):
        mask[:] = rng.random(n) < share
        moved = np.flatnonzero(mask)
        back = call()
        assert back == (run_keep_out.run(w, moved, im_r, heavy_r, slack, CONTACT_MASS_FACTOR) if len(moved) else 0)
        SelfCollision._keep_out_of_colliders(twin, z, moved, colliders)
    assert not np.array_equal(y, x)
    for a, b in ((y, w), (y, z), (im_b, im_r), (im_b, im_n)):
        assert_same(a, b)
    assert np.array_equal(heavy_b, heavy_r) and np.array_equal(heavy_b, heavy_n)


def test_response_binds_the_keep_out_for_ground_planes_and_spheres(library):
    """``_bind_keep_out`` gives a bound call for ground planes and spheres, None for a mesh collider without its
    native queries in the list (with them: tests/test_native_keep_out_mesh.py) or no colliders;
    ``_keep_out_of_colliders(x, None, ...)`` without a bound call reads the pass's touched particles."""
    model, x, _, colliders = contact_scene(n=5, moving=False, thickness=0.01)
    sc = SelfCollision(model, 0.01, compute="AUTO")
    assert sc.native_pass is not None
    sc._heavy = np.zeros(len(x), bool)
    sc.native_pass.touched_mask = np.zeros(len(x), bool)
    assert callable(sc._bind_keep_out(x, colliders))
    mesh = MeshCollider(np.array([[0.0, 0.0, -5.0], [1.0, 0.0, -5.0], [0.0, 1.0, -5.0]]), np.array([[0, 1, 2]]))
    assert sc._bind_keep_out(x, colliders + [mesh]) is None
    assert sc._bind_keep_out(x, []) is None
    y = x.copy()
    sc._keep_out_of_colliders(y, None, colliders + [mesh])  # nothing touched: nothing moves
    assert np.array_equal(x, y)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(x=a["x"].astype(np.float32)), "x: dtype"),
    (lambda a: a.update(x=np.asfortranarray(a["x"])), "x: must be C-contiguous"),
    (lambda a: a.update(touched=a["touched"].astype(np.uint8)), "touched: dtype"),
    (lambda a: a.update(touched=a["touched"][:-1].copy()), "touched: shape"),
    (lambda a: a.update(inv_mass=a["inv_mass"][:-1].copy()), "inv_mass: shape"),
    (lambda a: a.update(inv_mass=[1.0]), "inv_mass: expected a numpy array"),
    (lambda a: a.update(heavy=a["heavy"].astype(np.uint8)), "heavy: dtype"),
    (lambda a: a.update(slack=float("nan")), "slack"),
    (lambda a: a.update(slack=-1.0), "slack"),
    (lambda a: a.update(mass_factor=0.0), "mass_factor"),
])
def test_bind_touched_refuses_bad_input(library, change, message):
    model, x, _, colliders = contact_scene(n=5, moving=False)
    native = KeepOut(library, len(x))
    native.pose(colliders)
    args = dict(x=x.copy(), touched=np.ones(len(x), bool), inv_mass=model.inv_mass.copy(),
                heavy=np.zeros(len(x), bool), slack=0.001, mass_factor=100.0)
    change(args)
    with pytest.raises(ValueError, match=message):
        native.bind_touched(args["x"], args["touched"], args["inv_mass"], args["heavy"], args["slack"],
                            args["mass_factor"])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pads", [False, True])
@pytest.mark.parametrize("band", [0.0, 0.004, 0.02, "a particle's distance"])
def test_resting_particles_equal_their_numpy_twin(library, seed, pads, band):
    """``KeepOut.resting`` (``softsim_resting``) against the NumPy twin of ``SelfCollision.resolve_beside_colliders``:
    each collider's ``distance`` below band, or-ed over the colliders; a third of the particles lifted 0.3 m off
    both colliders, so some rest and some do not; a band equal to a particle's nearest distance leaves it out."""
    _, x, colliders, pad2, _, _ = keep_out_scene(np.random.default_rng(seed), seed, pads)
    x[::3, 2] += 0.3
    distances = [collider.distance(x, pad2) for collider in colliders]
    nearest = np.minimum(*distances)
    if band == "a particle's distance":
        band = float(nearest[np.argsort(nearest)[len(x) // 2]])
    keep_out = KeepOut(library, len(x), pad2)
    keep_out.pose(colliders)
    want = nearest < band
    got = keep_out.resting(x, band)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, want)
    assert 0 < want.sum() < len(x)
    with pytest.raises(ValueError, match="band"):
        keep_out.resting(x, float("nan"))
