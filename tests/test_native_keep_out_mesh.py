"""Self-collision's keep-out and resting test over mesh colliders in C (``KeepOut`` with mesh rows: ``softsim_keep_out``,
``softsim_keep_out_touched`` and ``softsim_resting`` asking ``softsim_mesh_closest``) against their twins, the loop of
``SelfCollision._keep_out_of_colliders`` and ``MeshCollider.within``: bit for bit where the collider has its native
queries (the nearest triangles they read are the same), to round-off against a collider without them (NumPy's
nearest triangles). A box on a ground, particles within a few mm of either surface, inside and outside, some pinned,
some heavy already; colliders in both orders."""
from types import SimpleNamespace

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider
from solvers.collision.response.impact_zones import COLLIDER_SLACK
from solvers.collision.response.self_contact import CONTACT_BAND, CONTACT_MASS_FACTOR, SelfCollision
from solvers.native.kernels import KeepOut
from solvers.native.mesh_kernels import attach
from solvers.native.selftest import contact_scene
from test_mesh_collider import box

THICKNESS = 0.01


@pytest.fixture(scope="module")
def library():
    return native_library()


def _colliders(library, order):
    """(colliders with the box's native queries, the same without them): a 2 x 2 x 0.5 m box standing on a ground."""
    vertices, triangles = box()
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=THICKNESS, friction=0.2, name="Ground")
    native_box = MeshCollider(vertices.copy(), triangles.copy(), THICKNESS, 0.2, "Box")
    attach(library, [native_box])
    assert native_box.shared.native is not None
    numpy_box = MeshCollider(vertices.copy(), triangles.copy(), THICKNESS, 0.2, "Box")
    pairs = ([native_box, ground], [numpy_box, ground])
    return pairs if order == 0 else tuple(p[::-1] for p in pairs)


def _scene(seed):
    """Particles (n, 3) near the box's faces, edges and corners and near the ground beside it, from 12 mm inside a
    surface to 20 mm outside; inverse masses (n,) with a tenth pinned; heavy flags (n,) with a fifth set."""
    rng = np.random.default_rng(seed)
    n = 400
    vertices, _ = box()
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    on_box = lo + rng.random((n, 3)) * (hi - lo)
    axis, side = rng.integers(0, 3, n), rng.integers(0, 2, n)
    on_box[np.arange(n), axis] = np.where(side == 1, hi[axis], lo[axis])
    outward = np.zeros((n, 3))
    outward[np.arange(n), axis] = np.where(side == 1, 1.0, -1.0)
    x = on_box + rng.uniform(-0.012, 0.02, n)[:, None] * outward
    beside = rng.random(n) < 0.3  # on the ground beside the box
    x[beside, :2] = rng.uniform(1.05, 1.5, (beside.sum(), 2)) * rng.choice([-1.0, 1.0], (beside.sum(), 2))
    x[beside, 2] = rng.uniform(-0.012, 0.02, beside.sum())
    inv_mass = np.where(rng.random(n) < 0.1, 0.0, 2.0)
    heavy = (rng.random(n) < 0.2) & (inv_mass > 0.0)
    inv_mass[heavy] /= CONTACT_MASS_FACTOR
    return np.ascontiguousarray(x), inv_mass, heavy, rng


def _twin_keep_out(x, moved, colliders, inv_mass, heavy):
    twin = SimpleNamespace(native_pass=None, inv_mass=inv_mass, _heavy=heavy, pad2=None, thickness=THICKNESS)
    SelfCollision._keep_out_of_colliders(twin, x, moved, colliders)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [0, 1])
def test_keep_out_over_a_mesh_collider_equals_its_twins(library, seed, order):
    native_colliders, numpy_colliders = _colliders(library, order)
    x, inv_mass, heavy, rng = _scene(seed)
    n = len(x)
    slack = COLLIDER_SLACK * THICKNESS
    keep_out, bound = KeepOut(library, n), KeepOut(library, n)
    keep_out.pose(native_colliders)
    bound.pose(native_colliders)
    c, b, t, u = x.copy(), x.copy(), x.copy(), x.copy()  # C run, C bound, twin (native queries), twin (NumPy)
    masses = [inv_mass.copy() for _ in range(4)]
    flags = [heavy.copy() for _ in range(4)]
    mask = np.zeros(n, bool)
    call = bound.bind_touched(b, mask, masses[1], flags[1], slack, CONTACT_MASS_FACTOR)
    back = 0
    for _ in range(3):
        mask[:] = rng.random(n) < 0.6
        moved = np.flatnonzero(mask)
        back += keep_out.run(c, moved, masses[0], flags[0], slack, CONTACT_MASS_FACTOR)
        call()
        _twin_keep_out(t, moved, native_colliders, masses[2], flags[2])
        _twin_keep_out(u, moved, numpy_colliders, masses[3], flags[3])
    assert back > 50  # particles of both colliders were moved back
    for y, im in ((b, masses[1]), (t, masses[2])):
        assert_same(c, y)
        assert_same(masses[0], im)
    np.testing.assert_allclose(c, u, rtol=0.0, atol=1e-12)
    np.testing.assert_array_equal(masses[0], masses[3])
    for f in flags[1:]:
        np.testing.assert_array_equal(flags[0], f)
    # the free particles of the last pass are left no deeper than slack in the last collider (the one before may
    # have been pushed into it where the box meets the ground)
    last = moved[masses[0][moved] > 0.0]
    assert native_colliders[-1].distance(c[last]).min() >= -slack - 1e-12


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("band", [0.0, CONTACT_BAND, 0.015])
def test_resting_over_a_mesh_collider_equals_its_twins(library, seed, band):
    """``KeepOut.resting`` against ``MeshCollider.within`` (and the ground's) or-ed over the colliders; a third of the
    particles far from both."""
    native_colliders, numpy_colliders = _colliders(library, seed % 2)
    x, _, _, _ = _scene(seed)
    x[::3] *= 1.5  # a third moved off both colliders, outwards from the box's bottom centre
    keep_out = KeepOut(library, len(x))
    keep_out.pose(native_colliders)
    got = keep_out.resting(x, band)
    for colliders in (native_colliders, numpy_colliders):
        want = np.zeros(len(x), bool)
        for collider in colliders:
            want |= collider.within(x, band, None)
        np.testing.assert_array_equal(got, want)
    assert 0 < got.sum() < len(x)


def test_the_response_takes_the_c_keep_out_for_a_mesh_collider_with_native_queries(library):
    """``_bind_keep_out`` binds the C call for ground planes, spheres and mesh colliders with their native queries;
    a mesh collider without them (Compute NumPy) or of another class keeps the loop; ``pose`` refuses those."""
    model, x, _, colliders = contact_scene(n=5, moving=False, thickness=0.01)
    sc = SelfCollision(model, 0.01, compute="AUTO")
    sc._heavy = np.zeros(len(x), bool)
    sc.native_pass.touched_mask = np.zeros(len(x), bool)
    native_box, numpy_box = (c for c in _colliders(library, 0)[0] + _colliders(library, 0)[1]
                             if isinstance(c, MeshCollider))
    assert callable(sc._bind_keep_out(x, colliders + [native_box]))
    assert sc._bind_keep_out(x, colliders + [numpy_box]) is None

    class OtherMesh(MeshCollider):
        pass

    other = OtherMesh(native_box.vertices, native_box.triangles, THICKNESS)
    other.shared.native = native_box.shared.native
    assert not KeepOut.supports([other])
    keep_out = KeepOut(library, len(x))
    for refused in (numpy_box, other):
        with pytest.raises(ValueError, match="mesh colliders with their native queries"):
            keep_out.pose(colliders + [refused])
