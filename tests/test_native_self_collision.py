"""The native self-collision broad phase (solvers/native/src/self_collision.c, ``self_kernels.SelfPairQuery``)
against its NumPy twin ``SelfBroadPhase._query``: the same pair sets (compared as sets, sorted by pair key), the same
distances, bad input refused with ValueError, and whole frames of a self-colliding cloth equal on both paths."""
import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.broad_phase.self_pairs import _row_max
from solvers.native.selftest import self_pair_scene, self_pairs
from solvers.native.self_kernels import SelfPairQuery

DISTANCE_RTOL = 1e-14
"""Distances: bit for bit on x86-64 except where a batch of the twin lies all on triangle borders (NumPy's einsum then
sums a dot product in another order: src/self_collision.c); a few ulps there."""


@pytest.fixture(scope="module")
def library():
    return native_library()


def _query(library, sc, x):
    return SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))


def _assert_same_pairs(numpy_pairs, native_pairs, count):
    i, j, d = numpy_pairs
    ni, nj, nd = native_pairs
    key = i * count + j
    order = np.argsort(key)
    np.testing.assert_array_equal(ni * count + nj, key[order])
    np.testing.assert_allclose(nd, d[order], rtol=DISTANCE_RTOL, atol=0.0)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("skin_scale", [0.0, 0.05, 0.3])
def test_pairs_equal_their_numpy_twin(library, seed, skin_scale):
    _, x, sc = self_pair_scene(seed=seed, fold=0.3 * seed)
    rng = np.random.default_rng(seed)
    skin = rng.uniform(0.0, skin_scale, len(x))
    skins = (skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges))
    query = _query(library, sc, x)
    for reach in (0.0, sc.thickness, 0.2):
        vt, ee = sc._query(x, reach, skins)
        _assert_same_pairs(vt, query.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt), len(sc.triangles))
        _assert_same_pairs(ee, query.edge_edge(x, reach, skins[2], sc.excluded_ee), len(sc.edges))


def test_rest_close_pairs_are_excluded_as_in_numpy(library):
    # A thickness above an edge: the sheet's own neighbours are rest-close and excluded.
    _, x, _ = self_pair_scene()
    model, _, sc = self_pair_scene(thickness=0.3)
    assert len(sc.excluded_vt) and len(sc.excluded_ee)
    query = _query(library, sc, x)
    vt, ee = sc._query(x, sc.thickness)
    zeros = (np.zeros(len(x)), np.zeros(len(sc.triangles)), np.zeros(len(sc.edges)))
    _assert_same_pairs(vt, query.vertex_triangle(x, sc.thickness, *zeros[:2], sc.excluded_vt), len(sc.triangles))
    _assert_same_pairs(ee, query.edge_edge(x, sc.thickness, zeros[2], sc.excluded_ee), len(sc.edges))


def test_buffers_grow_until_the_output_fits(library):
    _, x, sc = self_pair_scene()
    query = _query(library, sc, x)
    query._entries(1)
    query._pairs(1)
    skins = (np.full(len(x), 0.05), np.full(len(sc.triangles), 0.05), np.full(len(sc.edges), 0.05))
    vt, ee = sc._query(x, sc.thickness, skins)
    _assert_same_pairs(vt, query.vertex_triangle(x, sc.thickness, *skins[:2], sc.excluded_vt), len(sc.triangles))
    assert len(query.out_i) >= len(vt[0]) and len(query.entry_element) >= query.needs[0]


def test_library_self_test_runs_the_broad_phase(library):
    assert self_pairs(library) == ""


def test_bad_input_is_refused(library):
    _, x, sc = self_pair_scene()
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    bad = tri.copy()
    bad[3, 1] = len(x)
    with pytest.raises(ValueError, match="triangles"):
        SelfPairQuery(library, bad, edges, len(x))
    with pytest.raises(ValueError, match="edges"):
        SelfPairQuery(library, tri, edges.astype(np.int32), len(x))
    query = SelfPairQuery(library, tri, edges, len(x))
    s_v, s_t, s_e = np.zeros(len(x)), np.zeros(len(tri)), np.zeros(len(edges))
    with pytest.raises(ValueError, match="x"):
        query.vertex_triangle(x.astype(np.float32), 0.1, s_v, s_t, sc.excluded_vt)
    with pytest.raises(ValueError, match="skin_t"):
        query.vertex_triangle(x, 0.1, s_v, s_t[:-1], sc.excluded_vt)
    with pytest.raises(ValueError, match="skin_e"):
        query.edge_edge(x, 0.1, s_e[::2], sc.excluded_ee)
    with pytest.raises(ValueError, match="excluded_ee"):
        query.edge_edge(x, 0.1, s_e, np.array([5, 3], np.int64))
    with pytest.raises(ValueError, match="excluded_vt"):
        query.vertex_triangle(x, 0.1, s_v, s_t, np.array([len(x) * len(tri)], np.int64))


def _lab(n, compute, frames, sphere=True):
    """The lab cloth n x n (2 m, 1 m up) falling with self-collision on: pinned at two corners over a sphere and the
    ground, or (sphere False) pinned at one corner over the ground alone, where it swings and folds onto itself
    (thousands of candidate pairs a step). Returns (its SelfCollision, the state after ``frames`` frames, the most
    candidates any frame's last step watched)."""
    vertices, edges, triangles = grid_cloth(n, 2.0, height=1.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1] if sphere else [0]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0, quads=grid_quads(n))
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=10, iterations=1, tether_stretch=0.01,
                          use_self_collision=True, thickness=0.02, compute=compute)
    colliders = [Sphere(np.zeros(3), 0.5)] if sphere else []
    colliders.append(GroundPlane(np.array([0.0, 0.0, -1.0]), np.array([0.0, 0.0, 1.0])))
    solver = make_solver(model, config)
    state = State.at_rest(model)
    most = 0
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, colliders)
        most = max(most, solver.self_collision.last_candidates)
    return solver.self_collision, state, most


def test_self_colliding_frames_equal_on_both_compute_paths(library):
    """Self-collision's kernels (lists, checks, stencils, passes, witnesses) against their NumPy twins, bit for bit:
    the cloth folding onto itself over the ground (a ground plane's pushes are the same arithmetic in C and NumPy)."""
    native_sc, native_state, native_most = _lab(12, "AUTO", 20, sphere=False)
    numpy_sc, numpy_state, _ = _lab(12, "NUMPY", 20, sphere=False)
    assert native_sc.native_pairs is not None and numpy_sc.native_pairs is None
    assert native_sc.rebuilds > 1 and native_most > 1000
    assert_same(native_state.x, numpy_state.x)
    assert_same(native_state.v, numpy_state.v)


def test_self_colliding_frames_over_a_sphere_equal_on_both_compute_paths(library):
    """Over a sphere the end-of-step face push runs in C on the native path (``src/contact.c``), which adds its dot
    products in the orders NumPy's einsum takes on the twin's operands (``src/sphere_faces.h``): the frames are equal
    bit for bit on x86-64 (``assert_same``; elsewhere its tolerance)."""
    native_sc, native_state, _ = _lab(12, "AUTO", 14)
    numpy_sc, numpy_state, _ = _lab(12, "NUMPY", 14)
    assert native_sc.native_pairs is not None and numpy_sc.native_pairs is None
    assert native_sc.rebuilds > 1
    assert_same(native_state.x, numpy_state.x)
    assert_same(native_state.v, numpy_state.v)
