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
from solvers.native.mesh_kernels import MAX_CELLS, MeshClosest, _median, grid_shape, grid_shape_of
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
    rng = np.random.default_rng(11)
    centres = rng.uniform(-1.0, 1.0, size=(2000, 1, 3))
    tiny = (centres + rng.uniform(-0.01, 0.01, size=(2000, 3, 3))).reshape(-1, 3)
    large = rng.uniform(-1.0, 1.0, size=(120, 3))
    vertices = np.concatenate([tiny, large])
    triangles = np.concatenate([np.arange(len(tiny)).reshape(-1, 3), len(tiny) + np.arange(120).reshape(-1, 3)])
    reference, native = _pair(library, vertices, triangles)
    x = np.random.default_rng(3).uniform(-1.1, 1.1, size=(1500, 3))
    _assert_same(reference._closest(x, 0.05), native._closest(x, 0.05))
    grid = native.shared.native.grids[0]
    assert grid.cell_start[-1] > 4 * len(triangles) + 16  # grown past the first capacity
    _, dims = grid_shape(np.array([[[0.0, 0.0, 0.0], [1e4, 0.0, 0.0], [0.0, 1e-3, 1e-3]]] * 3))
    assert np.prod(dims) <= MAX_CELLS


def test_grid_shape_is_the_triangles_boxes_median_side():
    """grid_shape's cell size is the median of the triangles' largest box sides and its bounds the corners' extremes:
    the same values as the reductions over the corners array written out."""
    rng = np.random.default_rng(5)
    corners = rng.normal(size=(301, 3, 3)) * rng.uniform(0.01, 2.0, size=(301, 1, 1))
    grid, dims = grid_shape(corners)
    low, high = corners.min(axis=(0, 1)), corners.max(axis=(0, 1))
    h = float(np.median((corners.max(axis=1) - corners.min(axis=1)).max(axis=1)))
    h = max(h, float((high - low).max()) / 128, 1e-9)
    while np.prod(np.floor((high - low) / h) + 1) > min(MAX_CELLS, 8 * len(corners) + 64):
        h *= 2.0
    assert np.array_equal(grid, np.concatenate([low, [h], high]))
    assert np.array_equal(dims, np.floor((high - low) / h).astype(np.int64) + 1)
    # from the vertices and triangles, one coordinate at a time: the same numbers, finer or not
    vertices = corners.reshape(-1, 3)
    triangles = np.arange(len(vertices)).reshape(-1, 3)[rng.permutation(len(corners))]
    for finer in (1.0, 4.0):
        want, got = grid_shape(vertices[triangles], finer), grid_shape_of(vertices, triangles, finer)
        assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])


def test_the_grids_median_is_numpys():
    """The grid's cell size takes the median of the triangles' box sides (``mesh_kernels._median``): np.median's number,
    odd and even counts, ties, sizes over six decades."""
    rng = np.random.default_rng(3)
    for k in [*range(1, 40), 1000, 1001, 49152]:
        for _ in range(5):
            values = rng.random(k) * 10.0 ** rng.uniform(-3, 3)
            if k > 2 and rng.random() < 0.4:
                values = np.round(values, 1)  # ties
            assert _median(values) == float(np.median(values)), k


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


def _cloth_over_box(drop, seed=1):
    v, _, t = grid_cloth(31, 3.0, height=0.51)
    rng = np.random.default_rng(seed)
    x = v + rng.normal(scale=0.02, size=v.shape)
    x[:, 2] += drop - 0.02 * np.cos(3.0 * x[:, 0])
    return np.ascontiguousarray(x), np.ascontiguousarray(t, np.int64)


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize("drop", [0.0, 0.05, -0.3])
def test_face_pairs_equal_their_numpy_twin(library, level, drop):
    """Corner-triangle and edge-edge pairs of a crumpled cloth over a box (lying on it, above it, cut through by
    it): the same pairs in the same order (body element, then feature) and distances, found anew and refreshed."""
    x, t = _cloth_over_box(drop)
    reference, native = _pair(library, *subdivided_box(level))
    for step in range(3):
        want, got = reference.face_pairs(x, t), native.face_pairs(x, t)
        assert len(want.edge_distance) > 10
        for a, b in zip(got.corner_triangle + got.edge_edge, want.corner_triangle + want.edge_edge):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(got.corner_distance, want.corner_distance, rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(got.edge_distance, want.edge_distance, rtol=RTOL, atol=1e-15)
        x = x.copy()
        x[::7] += 0.03 * (step + 1)  # a few points beyond their allowances: a refresh
    # A moving collider's pairs (the travel widens every reach).
    vertices, triangles = subdivided_box(level)
    lists = []
    for query in (None, MeshClosest):
        moving = MeshCollider(vertices + [0.0, 0.0, 0.04], triangles, 0.01).moving_from(
            MeshCollider(vertices, triangles, 0.01))
        if query is not None:
            moving.shared.native = query(library, moving.triangles, len(moving.vertices))
        lists.append(moving.face_pairs(x, t))
    for a, b in zip(lists[1].corner_triangle + lists[1].edge_edge, lists[0].corner_triangle + lists[0].edge_edge):
        np.testing.assert_array_equal(a, b)


def test_face_pair_buffers_grow(library):
    """A reach wide enough for thousands of pairs: the pair buffers grow until they hold them."""
    x, t = _cloth_over_box(0.0)
    reference, native = _pair(library, *subdivided_box(2))
    want, got = reference.face_pairs(x, t, reach=0.4), native.face_pairs(x, t, reach=0.4)
    assert len(got.edge_distance) > 3000
    np.testing.assert_array_equal(got.edge_edge[1], want.edge_edge[1])
    np.testing.assert_allclose(got.edge_distance, want.edge_distance, rtol=RTOL, atol=1e-15)


def test_face_pairs_refuse_bad_input(library):
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, 0.01)
    query = MeshClosest(library, collider.triangles, len(collider.vertices))
    x, t = _cloth_over_box(0.0)
    edges = collider._body_edges(t)
    corners, sharp = collider.shared.corners, collider.shared.edges
    rows, reach = np.arange(len(t), dtype=np.int64), np.full(len(t), 0.04)
    edge_rows, edge_reach = np.arange(len(edges), dtype=np.int64), np.full(len(edges), 0.04)

    def call(**changed):
        arguments = dict(vertices=collider.vertices, corners=corners, sharp=sharp, travel=0.0, x=x, triangles=t,
                         tri_rows=rows, tri_reach=reach, edges=edges, edge_rows=edge_rows, edge_reach=edge_reach)
        arguments.update(changed)
        return query.face_pairs(**arguments)

    assert len(call()[1][0]) > 0
    with pytest.raises(ValueError, match="tri_rows"):
        call(tri_rows=rows + 1)
    with pytest.raises(ValueError, match="edge_rows"):
        call(edge_rows=edge_rows.astype(np.int32))
    with pytest.raises(ValueError, match="tri_reach"):
        call(tri_reach=reach[:-1])
    with pytest.raises(ValueError, match="body triangles"):
        call(triangles=np.where(t == 0, len(x), t))
    with pytest.raises(ValueError, match="body edges"):
        call(edges=np.ascontiguousarray(edges[:, ::-1]) * 2)
    with pytest.raises(ValueError, match="x"):
        call(x=x[:, :2].copy())
    other = MeshClosest(library, collider.triangles, len(collider.vertices))
    with pytest.raises(ValueError, match="corners"):
        other.face_pairs(collider.vertices, corners + 8, sharp, 0.0, x, t, rows, reach, edges, edge_rows, edge_reach)
    with pytest.raises(ValueError, match="sharp edges"):
        other.face_pairs(collider.vertices, corners, sharp.astype(np.float64), 0.0, x, t, rows, reach, edges,
                         edge_rows, edge_reach)


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize("friction", [0.0, 0.3])
def test_face_pushes_equal_their_numpy_twin(library, level, friction):
    """The corner and edge pushes of a crumpled cloth pressed onto a box (its start a step above), measured and
    applied: the same pairs kept, the same geometry, the same positions after a whole ``resolve_faces``."""
    x, t = _cloth_over_box(-0.01)
    x_prev = x + [0.003, -0.002, 0.01]
    inv_mass = np.ones(len(x))
    inv_mass[::13] = 0.0
    reference, native = _pair(library, *subdivided_box(level))
    reference.friction = native.friction = friction
    pairs = reference.face_pairs(x, t)
    edges = reference._body_edges(t)
    for kind in ("_corner_pushes", "_edge_pushes"):
        body = t if kind == "_corner_pushes" else edges
        which = pairs.corner_triangle if kind == "_corner_pushes" else pairs.edge_edge
        want = getattr(reference, kind)(x, x_prev, body, reference, which)
        got = getattr(native, kind)(x, x_prev, body, native, which)
        assert len(want) > 5
        for field in ("stencil", "weights", "direction", "depth", "slip", "origin"):
            assert_same(getattr(got, field), getattr(want, field))
        y, z = x.copy(), x.copy()
        moved = reference._apply(y, inv_mass, want, want.depth, want.slip)
        assert moved > 0 and native._apply(z, inv_mass, got, got.depth, got.slip) == moved
        assert_same(z, y)
    y, z = x.copy(), x.copy()
    assert reference.resolve_faces(y, x_prev, inv_mass, t) == native.resolve_faces(z, x_prev, inv_mass, t) > 0
    assert_same(z, y)


def test_face_pushes_refuse_bad_input(library):
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, 0.01)
    query = MeshClosest(library, collider.triangles, len(collider.vertices))
    x, t = _cloth_over_box(-0.01)
    corners, v = collider.shared.corners, collider.vertices
    ci, ti = np.zeros(3, np.int64), np.arange(3, dtype=np.int64)
    assert len(query.corner_pushes(x, x, t, v, v, corners, ci, ti, 0.01)[3]) <= 3
    with pytest.raises(ValueError, match="x_prev"):
        query.corner_pushes(x, x[:-1].copy(), t, v, v, corners, ci, ti, 0.01)
    with pytest.raises(ValueError, match="feature pairs"):
        query.corner_pushes(x, x, t, v, v, corners, ci + len(corners), ti, 0.01)
    with pytest.raises(ValueError, match="body pairs"):
        query.corner_pushes(x, x, t, v, v, corners, ci, ti[:2].copy(), 0.01)
    with pytest.raises(ValueError, match="start vertices"):
        query.corner_pushes(x, x, t, v, v[:4].copy(), corners, ci, ti, 0.01)
    with pytest.raises(ValueError, match="body edges"):
        query.edge_pushes(x, x, t, v, v, collider.shared.edges, ci, ti, 0.01)
    stencil, weights = np.array([[0, 1, 2]], np.int64), np.full((1, 3), 1.0 / 3.0)
    direction, depth, slip = np.array([[0.0, 0.0, 1.0]]), np.array([0.01]), np.zeros((1, 3))
    inv_mass = np.ones(len(x))
    assert query.apply(x.copy(), inv_mass, stencil, weights, direction, depth, slip, 0.2) == 1
    with pytest.raises(ValueError, match="stencil"):
        query.apply(x, inv_mass, stencil + len(x), weights, direction, depth, slip, 0.2)
    with pytest.raises(ValueError, match="stencil"):
        query.apply(x, inv_mass, np.zeros((1, 4), np.int64), np.zeros((1, 4)), direction, depth, slip, 0.2)
    with pytest.raises(ValueError, match="inv_mass"):
        query.apply(x, inv_mass[:-1].copy(), stencil, weights, direction, depth, slip, 0.2)
    with pytest.raises(ValueError, match="weights"):
        query.apply(x, inv_mass, stencil, weights[:, :2].copy(), direction, depth, slip, 0.2)
    with pytest.raises(ValueError, match="slip"):
        query.apply(x, inv_mass, stencil, weights, direction, depth, slip.astype(np.float32), 0.2)


def test_kept_planes_equal_their_numpy_twin(library):
    """A still box's kept contact planes asked along a cloth's steps (drifting, landing, crossing): the same stale
    points re-measured and the same answers (``kept_planes.kept_contact``)."""
    x, _ = _cloth_over_box(0.02)
    reference, native = _pair(library, *subdivided_box(2))
    rng = np.random.default_rng(4)
    x_prev = x.copy()
    for _step in range(6):
        x_new = x_prev + rng.normal(scale=0.004, size=x.shape) + [0.0, 0.0, -0.006]
        for _ask in range(2):  # the second ask answers from the planes the first kept
            want, got = reference.contact(x_new, x_prev), native.contact(x_new, x_prev)
            assert_same(got[0], want[0])
            assert_same(got[1], want[1])
            assert np.isfinite(want[0]).sum() > 100
        x_prev = x_new
    planes = native.shared.kept_planes[0.01].items[0]
    np.testing.assert_array_equal(planes.d0, reference.shared.kept_planes[0.01].items[0].d0)


def test_kept_planes_refuse_bad_input(library):
    from solvers.collision.colliders.kept_planes import KeptPlanes

    vertices, triangles = box()
    query = MeshClosest(library, np.asarray(triangles, np.int64), len(vertices))
    x = np.zeros((5, 3))
    planes = KeptPlanes.unmeasured(x)
    assert len(query.kept_stale(planes, x, x, 0.002, 0.06)) == 5  # nothing measured yet
    with pytest.raises(ValueError, match="x_prev"):
        query.kept_stale(planes, x, x[:4].copy(), 0.002, 0.06)
    with pytest.raises(ValueError, match="x0"):
        query.kept_stale(KeptPlanes.unmeasured(x[:4]), x, x, 0.002, 0.06)
    bad = KeptPlanes.unmeasured(x)
    bad.d0 = bad.d0.astype(np.float32)
    with pytest.raises(ValueError, match="d0"):
        query.kept_planes(bad, x, 0.05)
    with pytest.raises(ValueError, match="x"):
        query.kept_planes(planes, np.zeros((5, 3), np.float32), 0.05)


def test_known_arrays_are_checked_again_when_they_change(library):
    """Addresses of arrays seen before are kept (``mesh_kernels._Known``), but an array reshaped in place since, or
    another array in its place, is checked again."""
    vertices, triangles = box()
    query = MeshClosest(library, np.asarray(triangles, np.int64), len(vertices))
    vertices = np.ascontiguousarray(vertices, float)
    x = np.full((4, 3), 0.3)
    points = np.arange(4, dtype=np.int64)
    assert len(query.closest(vertices, x, points, 0.5)[0]) == 4
    x.shape = (12,)
    with pytest.raises(ValueError, match="x"):
        query.closest(vertices, x, np.zeros(0, np.int64), 0.5)
    x.shape = (4, 3)
    assert len(query.closest(vertices, x, points, 0.5)[0]) == 4
    with pytest.raises(ValueError, match="x"):
        query.closest(vertices, x[:, ::-1], points, 0.5)
