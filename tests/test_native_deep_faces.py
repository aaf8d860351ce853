"""The native collider work around self-collision against its NumPy twins: the sphere face push with the contact
radius lowered by an allowance (``AnalyticContacts.deep_faces`` <-> ``collider_contacts.resolve_deep_faces``), the
face push on faces that start inside the sphere (``AnalyticContacts.finish``'s push <-> ``faces.resolve_sphere_faces``),
and the keep-out of self-collision's passes (``KeepOut`` <-> ``SelfCollision._keep_out_of_colliders``); the
bindings' validation."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from native_helpers import assert_same, keep_out_scene, native_library
from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.colliders.mesh_collider import MeshCollider
from solvers.collision.response import faces
from solvers.collision.response.collider_contacts import resolve_deep_faces
from solvers.collision.response.impact_zones import COLLIDER_SLACK
from solvers.collision.response.self_contact import CONTACT_MASS_FACTOR, SelfCollision
from solvers.native.kernels import AnalyticContacts, KeepOut
from solvers.native.selftest import contact_scene, deep_scene


@pytest.fixture(scope="module")
def library():
    return native_library()


def _mesh(z=-5.0):
    """A mesh collider: one triangle far below the scenes."""
    return MeshCollider(np.array([[0.0, 0.0, z], [1.0, 0.0, z], [0.0, 1.0, z]]), np.array([[0, 1, 2]]))


def _push(library, model, x, x_prev, colliders, allowance, passes=faces.FACE_PASSES):
    """(C result, NumPy result, C contacts, NumPy contacts) of resolve_deep_faces from copies of x."""
    binding = AnalyticContacts(library, model.inv_mass, None, model.triangle_indices)
    binding.face_passes = passes
    binding.pose(colliders)
    y, z = x.copy(), x.copy()
    found = binding.deep_faces(y, x_prev, allowance)
    if passes == faces.FACE_PASSES:
        expected = resolve_deep_faces(z, x_prev, model.inv_mass, model.triangle_indices, colliders, allowance)
    else:  # the twin's pushes with other pass counts
        expected = sum(faces.resolve_sphere_faces(z, x_prev, model.inv_mass, model.triangle_indices,
                                                  dataclasses.replace(c, thickness=c.thickness - allowance), passes)
                       for c in colliders if c.reaches_between_corners)
    return y, z, found, expected


@pytest.mark.parametrize("friction", [0.0, 0.3])
@pytest.mark.parametrize("passes", [1, 2, 3, 4])
def test_faces_starting_inside_the_sphere_are_pushed_as_in_numpy(library, friction, passes):
    """Vertices 2-12 mm inside the sphere, the step's start 1 mm above: every face is hit, and one vertex's faces
    meet the sphere's closest point on an edge, where the corner weight 1 - v - w rounds to 5.6e-17 instead of 0 and
    counts the face in that vertex's mean. The C push sums the closest point's dot products in the order NumPy's
    einsum does on _push_out's gathers, so it meets the same rounding (another order moves that vertex by 0.2 mm from
    the second pass on, with friction)."""
    model, x, x_prev, colliders = deep_scene(friction)
    y, z, found, expected = _push(library, model, x, x_prev, colliders[:1], 0.0, passes)
    assert found == expected == len(model.triangle_indices)
    assert_same(y, z)


@pytest.mark.parametrize("allowance", [0.0, 0.002, 0.004])
@pytest.mark.parametrize("moving", [False, True])
def test_deep_faces_equal_their_numpy_twin(library, allowance, moving):
    """Sphere and ground plane (the ground has no face push), still and moving (friction against the sphere's
    drift), thickness lowered by the allowance."""
    model, x, x_prev, colliders = deep_scene(0.3, moving=moving)
    y, z, found, expected = _push(library, model, x, x_prev, colliders, allowance)
    assert found == expected > 0
    assert_same(y, z)


@pytest.mark.parametrize("seed", range(8))
def test_face_push_on_irregular_faces_equals_numpy(library, seed):
    """Random cloths crumpled through the sphere: faces reaching in at their interiors, edges and corners, and a
    single triangle (every candidate on the border branch, where the twin's dot products change order)."""
    rng = np.random.default_rng(seed)
    model, x, _, colliders = contact_scene(n=5 + seed % 4, seed=seed, moving=False, friction=0.2 * (seed % 3),
                                           thickness=0.004)
    sphere = colliders[0]
    rel = x - sphere.center
    r = np.linalg.norm(rel, axis=1)
    x = np.ascontiguousarray(sphere.center + rel / r[:, None] * rng.uniform(0.97, 1.03, len(x))[:, None]
                             * sphere.radius + rng.normal(scale=0.01, size=x.shape))
    x_prev = np.ascontiguousarray(x + rng.normal(scale=0.002, size=x.shape))
    y, z, found, expected = _push(library, model, x, x_prev, colliders, 0.001)
    assert found == expected > 0
    assert_same(y, z)
    # One triangle whose closest point to the centre lies on its edge BC (the border branch alone: the twin then
    # adds the border's dot products in another order), B and C 1 mm inside the sphere, A outside.
    free = np.flatnonzero((model.inv_mass[model.triangle_indices] > 0.0).all(axis=1))[seed]
    one = dataclasses.replace(model, triangle_indices=model.triangle_indices[free:free + 1].copy())
    a, b, c = one.triangle_indices[0]
    x1 = x.copy()
    direction = np.array([1.0, 0.0, 0.0]) + rng.normal(scale=0.1, size=3)
    direction /= np.linalg.norm(direction)
    side = np.cross(direction, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    x1[b] = sphere.center + (sphere.radius - 0.001) * direction + rng.uniform(0.03, 0.06) * side
    x1[c] = sphere.center + (sphere.radius - 0.001) * direction - rng.uniform(0.03, 0.06) * side
    x1[a] = sphere.center + (sphere.radius + 0.05) * direction + rng.normal(scale=0.02, size=3)
    for friction in (0.0, 0.3):
        y, z, found, expected = _push(library, one, x1, x_prev, [dataclasses.replace(sphere, friction=friction)], 0.0)
        assert found == expected == 1
        assert_same(y, z)
        assert not np.array_equal(y, x1)


def _lab(n, compute, frames):
    """The lab cloth n x n (2 m) pinned at two corners over a sphere and the ground, self-collision on (2 cm): the
    solver and its state after ``frames`` frames."""
    vertices, edges, triangles = grid_cloth(n, 2.0, height=1.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0, quads=grid_quads(n))
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=10, iterations=1, tether_stretch=0.01,
                          use_self_collision=True, thickness=0.02, compute=compute)
    colliders = [Sphere(np.zeros(3), 0.5, friction=0.3), GroundPlane(np.array([0.0, 0.0, -1.0]),
                                                                     np.array([0.0, 0.0, 1.0]))]
    solver = make_solver(model, config)
    state = State.at_rest(model)
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, colliders)
    return solver, state, colliders


def test_deep_faces_on_a_crumpled_self_colliding_state(library):
    """The state the push meets after self-collision: the lab cloth folded over its sphere, with the allowance the
    solvers use and a larger one (more faces deep enough)."""
    solver, state, colliders = _lab(12, "AUTO", 16)
    model = solver.model
    x_prev = state.x - state.v / 240.0
    for allowance in (0.4 * 0.02, 0.0, -0.01):  # negative: a thicker shell, the whole draped region pushed
        y, z, found, expected = _push(library, model, np.ascontiguousarray(state.x), x_prev, colliders, allowance)
        assert found == expected
        assert_same(y, z)
    assert found > 10


def _keep_out_numpy(x, moved, colliders, inv_mass, heavy, pad2, thickness):
    twin = SimpleNamespace(native_pass=None, inv_mass=inv_mass, _heavy=heavy, pad2=pad2, thickness=thickness)
    SelfCollision._keep_out_of_colliders(twin, x, moved, colliders)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("pads", [False, True])
def test_keep_out_equals_its_numpy_twin(library, seed, pads):
    """Particles around the sphere and on the ground, some pinned, some already heavy, several passes of random
    moved sets (each particle may be pushed back by both colliders)."""
    rng = np.random.default_rng(seed)
    _, x, order, pad2, inv_mass, heavy = keep_out_scene(rng, seed, pads)
    n = len(x)
    native = KeepOut(library, n, pad2)
    native.pose(order)
    y, z = x.copy(), x.copy()
    im_c, im_n, heavy_c, heavy_n = inv_mass.copy(), inv_mass.copy(), heavy.copy(), heavy.copy()
    for _ in range(3):
        moved = np.flatnonzero(rng.random(n) < 0.5)
        native.run(y, moved, im_c, heavy_c, COLLIDER_SLACK * 0.01, CONTACT_MASS_FACTOR)
        _keep_out_numpy(z, moved, order, im_n, heavy_n, pad2, 0.01)
    assert not np.array_equal(y, x)
    assert_same(y, z)
    assert_same(im_c, im_n)
    assert np.array_equal(heavy_c, heavy_n)


def test_keep_out_in_the_response_takes_c_for_analytic_colliders(library, monkeypatch):
    """SelfCollision._keep_out_of_colliders runs ``KeepOut`` with the native library and ground planes and spheres,
    and its own loop with a mesh collider without its native queries in the list (with them:
    tests/test_native_keep_out_mesh.py)."""
    calls = []
    monkeypatch.setattr(KeepOut, "run", lambda self, *a: calls.append(a) or 0)
    model, x, _, colliders = contact_scene(n=5, moving=False, thickness=0.01)
    sc = SelfCollision(model, 0.01, compute="AUTO")
    assert sc.native_pass is not None
    sc._heavy = np.zeros(len(x), bool)
    sc._keep_out_of_colliders(x, np.arange(len(x)), colliders)
    assert len(calls) == 1
    sc._keep_out_of_colliders(x, np.arange(len(x)), colliders + [_mesh()])
    assert len(calls) == 1


def test_lab_frames_with_deep_faces_equal_on_both_compute_paths(library):
    """The cloth folding over its sphere with friction: self-collision, its keep-out and the deep-face push on the
    native path against the NumPy path."""
    native_solver, native_state, _ = _lab(10, "AUTO", 12)
    numpy_solver, numpy_state, _ = _lab(10, "NUMPY", 12)
    assert native_solver.native_contacts is not None and getattr(numpy_solver, "native_contacts", None) is None
    assert_same(native_state.x, numpy_state.x)
    assert_same(native_state.v, numpy_state.v)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(moved=a["moved"].astype(np.int32)), "moved: dtype"),
    (lambda a: a.update(moved=np.array([0, 99999], np.int64)), "strictly increasing"),
    (lambda a: a.update(moved=np.array([-1, 2], np.int64)), "strictly increasing"),
    (lambda a: a.update(moved=np.array([3, 2], np.int64)), "strictly increasing"),
    (lambda a: a.update(moved=np.array([2, 2], np.int64)), "strictly increasing"),
    (lambda a: a.update(inv_mass=a["inv_mass"][:-1].copy()), "inv_mass: shape"),
    (lambda a: a.update(heavy=a["heavy"].astype(np.uint8)), "heavy: dtype"),
    (lambda a: a.update(x=a["x"].astype(np.float32)), "x: dtype"),
    (lambda a: a.update(slack=-1.0), "slack"),
    (lambda a: a.update(mass_factor=0.0), "mass_factor"),
])
def test_keep_out_refuses_bad_input(library, change, message):
    model, x, _, colliders = contact_scene(n=5, moving=False)
    native = KeepOut(library, len(x))
    native.pose(colliders)
    args = dict(x=x.copy(), moved=np.arange(3, dtype=np.int64), inv_mass=model.inv_mass.copy(),
                heavy=np.zeros(len(x), bool), slack=0.001, mass_factor=100.0)
    change(args)
    before = args["x"].copy()
    with pytest.raises(ValueError, match=message):
        native.run(args["x"], args["moved"], args["inv_mass"], args["heavy"], args["slack"], args["mass_factor"])
    assert np.array_equal(args["x"], before)
    with pytest.raises(ValueError, match="pad2"):
        KeepOut(library, len(x), np.zeros(len(x) - 1))
    with pytest.raises(ValueError, match="ground planes, spheres and mesh colliders"):
        native.pose(colliders + [_mesh()])


def test_deep_faces_refuse_bad_positions(library):
    model, x, x_prev, colliders = deep_scene(0.3)
    binding = AnalyticContacts(library, model.inv_mass, None, model.triangle_indices)
    binding.pose(colliders)
    with pytest.raises(ValueError, match="x: shape"):
        binding.deep_faces(x[:-1].copy(), x_prev, 0.001)
    with pytest.raises(ValueError, match="x_prev: dtype"):
        binding.deep_faces(x.copy(), x_prev.astype(np.float32), 0.001)
