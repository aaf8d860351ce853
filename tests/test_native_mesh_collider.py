"""The mesh collider's native nearest-triangle query (solvers/native/src/mesh_collider.c, ``mesh_kernels.MeshClosest``)
against its NumPy twin ``MeshCollider._closest``: the same nearest triangles (the lowest index among equal distances),
the same weights, closest points and distances, bad input refused with ValueError, and a cloth draped on a box
baked on both compute paths."""
import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, make_solver
from solvers.builder import grid_cloth, ico_sphere
from solvers.collision.colliders.shapes import frame_colliders
from solvers.native.mesh_kernels import MAX_CELLS, MeshClosest, grid_shape
from solvers.native.selftest import mesh_closest
from test_mesh_collider import box

RTOL = 1e-12
"""Weights, points and distances: bit for bit on x86-64 except where a batch of the twin (its candidate set) lies all
on triangle borders, where NumPy's einsum sums the border branch's dot products in another order
(src/mesh_collider.c); a few ulps there. The nearest triangles are compared exactly."""


@pytest.fixture(scope="module")
def library():
    return native_library()


def subdivided_box(level: int):
    """The box of ``box`` cut into a 2**level grid of quads per face (the bench's Simple Subdivision)."""
    from bench.profile_mesh_collider import box_mesh

    return box_mesh(level)


def _pair(library, vertices, triangles, thickness=0.01):
    reference, native = MeshCollider(vertices, triangles, thickness), MeshCollider(vertices, triangles, thickness)
    native.shared.native = MeshClosest(library, native.triangles, len(native.vertices))
    return reference, native


def _assert_same(want, got):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    for a, b in zip(got[2:5], want[2:5]):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-15)
    np.testing.assert_array_equal(got[5], want[5])


def _around_box(seed, count=3000):
    return np.random.default_rng(seed).uniform([-1.3, -1.3, -0.2], [1.3, 1.3, 0.8], size=(count, 3))


@pytest.mark.parametrize("level", [0, 1, 3, 5])
@pytest.mark.parametrize("margin", [0.0, 0.05, 0.4])
def test_nearest_triangles_equal_their_numpy_twin(library, level, margin):
    reference, native = _pair(library, *subdivided_box(level))
    x = _around_box(level)
    for among in (None, np.arange(1, len(x), 3)):
        want = reference._closest(x, margin, among)
        assert len(want[0]) > 8
        _assert_same(want, native._closest(x, margin, among))


def test_ties_go_to_the_lowest_triangle(library):
    """Points on the box's corners, edge midpoints and just off them: several triangles at the same distance."""
    vertices, triangles = box()
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    mids = 0.5 * (vertices[edges[:, 0]] + vertices[edges[:, 1]])
    x = np.concatenate([vertices, mids, vertices + 0.003, mids - 0.002])
    reference, native = _pair(library, vertices, triangles)
    _assert_same(reference._closest(x, 0.05), native._closest(x, 0.05))


def test_irregular_meshes_and_moving_poses(library):
    """An ico sphere (slanted faces), a soup of random triangles with degenerate ones, and the start pose of a
    moving collider (its own grid per pose)."""
    rng = np.random.default_rng(7)
    vertices, triangles = ico_sphere(2, 0.5)
    soup = rng.uniform(-0.5, 0.5, size=(120, 3))
    soup_tris = rng.integers(0, len(soup), size=(80, 3))
    soup_tris[:5, 2] = soup_tris[:5, 1]  # segments
    soup_tris[5:8, 1:] = soup_tris[5:8, :1]  # points
    x = rng.uniform(-0.7, 0.7, size=(2000, 3))
    for v, t in ((vertices, triangles), (soup, soup_tris)):
        reference, native = _pair(library, v, t)
        _assert_same(reference._closest(x, 0.1), native._closest(x, 0.1))
    previous = MeshCollider(vertices, triangles, 0.01)
    moved = MeshCollider(vertices + [0.05, 0.0, -0.02], triangles, 0.01)
    moving = moved.moving_from(previous)
    numpy_moving = MeshCollider(vertices + [0.05, 0.0, -0.02], triangles, 0.01).moving_from(
        MeshCollider(vertices, triangles, 0.01))
    moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
    for pose, twin in ((moving, numpy_moving), (moving.start, numpy_moving.start),
                       (moving.interpolate(moving, 0.5), numpy_moving.interpolate(numpy_moving, 0.5))):
        _assert_same(twin._closest(x, 0.1), pose._closest(x, 0.1))
    assert len(moving.shared.native.grids) == 3


def test_grid_grows_its_entries_and_bounds_its_cells(library):
    """A few large triangles among many small ones: the large ones span many cells, more entries than the first
    guess (the build asks for more and is called again); a long thin mesh keeps within MAX_CELLS."""
    small_v, small_t = ico_sphere(3, 0.05)
    big_v = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    vertices = np.concatenate([small_v, big_v])
    m = len(small_v)
    triangles = np.concatenate([small_t, [[m, m + 1, m + 2], [m, m + 1, m + 3], [m + 1, m + 2, m + 3]]])
    reference, native = _pair(library, vertices, triangles)
    x = np.random.default_rng(3).uniform(-1.1, 1.1, size=(1500, 3))
    _assert_same(reference._closest(x, 0.05), native._closest(x, 0.05))
    grid = native.shared.native.grids[0]
    assert grid.cell_start[-1] > 4 * len(triangles) + 16  # grown past the first capacity
    _, dims = grid_shape(np.array([[[0.0, 0.0, 0.0], [1e4, 0.0, 0.0], [0.0, 1e-3, 1e-3]]] * 3))
    assert np.prod(dims) <= MAX_CELLS


def test_library_self_test_runs_the_query(library):
    assert mesh_closest(library) == ""


def test_bad_input_is_refused(library):
    vertices, triangles = box()
    vertices = np.ascontiguousarray(vertices, float)
    with pytest.raises(ValueError, match="triangles"):
        MeshClosest(library, triangles.astype(np.float64), len(vertices))
    with pytest.raises(ValueError, match="triangles"):
        MeshClosest(library, np.where(triangles == 7, 8, triangles).astype(np.int64), len(vertices))
    with pytest.raises(ValueError, match="triangles"):
        MeshClosest(library, np.asfortranarray(triangles.astype(np.int64)), len(vertices))
    query = MeshClosest(library, triangles.astype(np.int64), len(vertices))
    x = np.zeros((4, 3))
    points = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError, match="x"):
        query.closest(vertices, x.astype(np.float32), points, 0.05)
    with pytest.raises(ValueError, match="x"):
        query.closest(vertices, np.zeros((4, 2)), points, 0.05)
    with pytest.raises(ValueError, match="points"):
        query.closest(vertices, x, np.array([0, 4], np.int64), 0.05)
    with pytest.raises(ValueError, match="points"):
        query.closest(vertices, x, np.array([-1], np.int64), 0.05)
    with pytest.raises(ValueError, match="points"):
        query.closest(vertices, x, points.astype(np.int32), 0.05)
    with pytest.raises(ValueError, match="vertices"):
        query.closest(vertices[:7].copy(), x, points, 0.05)
    with pytest.raises(ValueError, match="vertices"):
        query.closest(np.where(vertices > 0.4, np.nan, vertices), x, points, 0.05)
    rows = query.closest(vertices, x, points, np.nan)[0]  # no length: nothing within it
    assert len(rows) == 0


def _drape(compute: str, frames: int = 16):
    v, e, t = grid_cloth(16, 1.5, height=0.8)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver="XPBD", compute=compute))
    state = State.at_rest(model)
    vertices, triangles = box(half=(0.5, 0.5, 0.25))
    previous = None
    for _ in range(frames):
        read = [MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.2, "Box"),
                GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2)]
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, read))
        previous = read
    return state.x, previous[0]


def test_box_drape_bakes_alike_on_both_compute_paths(library):
    """A cloth dropped onto a box: the native path asks the grid (and keeps no NumPy candidates), lands where the
    NumPy path does, bit for bit, and stays out of the box."""
    x_native, box_native = _drape("AUTO")
    x_numpy, box_numpy = _drape("NUMPY")
    assert box_native.shared.native is not None and box_numpy.shared.native is None
    assert not box_native.shared.pair_caches.items
    assert_same(x_native, x_numpy)  # bit for bit here (no all-border batch of the twin moved a result)
    assert x_native[:, 2].max() < 0.6 and x_native[:, 2].min() > 0.0  # landed
    over = (np.abs(x_native[:, 0]) < 0.45) & (np.abs(x_native[:, 1]) < 0.45)
    assert over.any() and x_native[over, 2].min() >= 0.5 + 0.008  # on the top, at its thickness
