"""The hash grid of the native self-collision broad phase (solvers/native/src/self_collision.c: entries as element and
cell key with the axes on which the cell is the box's first, the pair's cell tested before the box, branch-free
gathers) against the NumPy twin ``SelfBroadPhase._query`` / ``_grow`` on inputs that stress it: a sheet crumpled into
a ball (many layers in a cell), particles scattered at random in a small cube, two sheets far apart (cell coordinates
clamped at the grid's far end), skins of very different sizes, and the lists of a crumpled state grown through the
grid. The same pair sets and distances as the twin (``test_native_self_collision._assert_same_pairs``); the per-call
list check and witnesses (src/self_response.c, each element's maxima taken once) on a crumpled list equal to theirs;
bad input refused with ValueError."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers import build_model, grid_cloth
from solvers.builder import grid_quads
from solvers.collision.broad_phase.self_pairs import _row_max
from solvers.collision.response.self_contact import SelfCollision
from solvers.native.self_kernels import SelfCallKernels, SelfPairQuery

from test_native_self_collision import _assert_same_pairs


@pytest.fixture(scope="module")
def library():
    return native_library()


def _sheet(n=14, width=2.0, thickness=0.02):
    vertices, edges, triangles = grid_cloth(n, width, diagonals=False)
    model = build_model(vertices, edges, triangles, total_mass=1.0, quads=grid_quads(n))
    return model, vertices, SelfCollision(model, thickness, compute="NUMPY")


def _crumpled(vertices, seed):
    """The sheet (m, 3) [m] wrapped around a ball of about a fifth of its width, with noise: layers over layers."""
    rng = np.random.default_rng(seed)
    u, v = vertices[:, 0], vertices[:, 1]
    span = float(np.ptp(u))
    angle, height = 2.5 * np.pi * u / span, 2.5 * np.pi * v / span
    radius = 0.1 * span * (1.0 + 0.3 * np.sin(3.0 * angle + height))
    x = np.column_stack([radius * np.cos(angle) * np.cos(height), radius * np.sin(angle) * np.cos(height),
                         radius * np.sin(height)])
    return np.ascontiguousarray(x + rng.normal(scale=0.01 * span, size=x.shape))


def _skins(sc, skin):
    return skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges)


def _both(library, sc, x, reach, skins):
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    vt, ee = sc._query(x, reach, skins)
    _assert_same_pairs(vt, query.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt), len(sc.triangles))
    _assert_same_pairs(ee, query.edge_edge(x, reach, skins[2], sc.excluded_ee), len(sc.edges))
    return len(vt[0]), len(ee[0])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_crumpled_sheet_lists_the_pairs_of_its_numpy_twin(library, seed):
    _, vertices, sc = _sheet()
    x = _crumpled(vertices, seed)
    rng = np.random.default_rng(seed)
    for skin in (np.zeros(len(x)), rng.uniform(0.0, 0.03, len(x))):
        counts = _both(library, sc, x, sc.thickness, _skins(sc, skin))
        assert min(counts) > 0


def test_particles_scattered_at_random_list_the_pairs_of_their_numpy_twin(library):
    _, vertices, sc = _sheet(n=10)
    rng = np.random.default_rng(7)
    x = np.ascontiguousarray(rng.uniform(-0.3, 0.3, vertices.shape))
    counts = _both(library, sc, x, sc.thickness, _skins(sc, rng.uniform(0.0, 0.02, len(x))))
    assert min(counts) > 0


def test_far_apart_sheets_with_clamped_cells_list_the_pairs_of_their_numpy_twin(library):
    # Two crumpled sheets 1000 km apart: the grid's cells are about an edge wide, so the far sheet's cell coordinates
    # (x axis) lie beyond the 2^20 the keys hold and are clamped to the last cell.
    model, vertices, _ = _sheet(n=10)
    x = _crumpled(vertices, 4)
    _, _, tri = grid_cloth(10, 2.0, diagonals=False)
    both = np.concatenate([x, x + np.array([1.0e6, 3.0, -1.0])])
    quads = grid_quads(10)
    model = build_model(np.concatenate([vertices, vertices + [3.0, 0.0, 0.0]]),
                        np.concatenate([model.edge_indices, model.edge_indices + len(vertices)]),
                        np.concatenate([tri, tri + len(vertices)]), total_mass=1.0,
                        quads=np.concatenate([quads, quads + len(vertices)]))
    sc = SelfCollision(model, 0.02, compute="NUMPY")
    rng = np.random.default_rng(4)
    counts = _both(library, sc, np.ascontiguousarray(both), sc.thickness,
                   _skins(sc, rng.uniform(0.0, 0.02, len(both))))
    assert min(counts) > 0


def test_skins_of_very_different_sizes_list_the_pairs_of_their_numpy_twin(library):
    _, vertices, sc = _sheet()
    x = _crumpled(vertices, 5)
    rng = np.random.default_rng(5)
    skin = rng.uniform(0.0, 0.005, len(x))
    skin[rng.choice(len(x), 3, replace=False)] = 0.5  # a few fast corners: boxes spanning many cells
    _both(library, sc, x, sc.thickness, _skins(sc, skin))
    _both(library, sc, x, 0.0, _skins(sc, skin))


@pytest.mark.parametrize("grown", [20, 300])
def test_a_crumpled_list_grows_by_the_pairs_of_a_numpy_build(library, grown):
    # A growth adds every admissible pair with a grown element within the new reach that is not listed: the pairs of a
    # NumPy build with the grown skins, less the listed ones. 300 grown elements of each kind are more than the scan
    # takes (GROW_SCAN): the growth then runs through the grid.
    _, vertices, sc = _sheet(n=30)
    x = _crumpled(vertices, grown)
    rng = np.random.default_rng(grown)
    skins = _skins(sc, rng.uniform(0.0, 0.01, len(x)))
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    (v0, t0, _), (a0, b0, _) = sc._query(x, sc.thickness, skins)
    t_count, e_count = len(sc.triangles), len(sc.edges)
    listed = (np.sort(v0 * t_count + t0), np.sort(a0 * e_count + b0))
    grown_v, grown_t, grown_e = (np.sort(rng.choice(count, grown, replace=False)) for count in (len(x), t_count, e_count))
    s_v, s_t, s_e = (s.copy() for s in skins)
    s_v[grown_v] += 0.03
    s_t[grown_t] += 0.03
    s_e[grown_e] += 0.03
    (v, t, d_vt), (a, b, d_ee) = sc._query(x, sc.thickness, (s_v, s_t, s_e))
    keep = (np.isin(v, grown_v) | np.isin(t, grown_t)) & ~np.isin(v * t_count + t, listed[0])
    want_vt = (v[keep], t[keep], d_vt[keep])
    keep = (np.isin(a, grown_e) | np.isin(b, grown_e)) & ~np.isin(a * e_count + b, listed[1])
    want_ee = (a[keep], b[keep], d_ee[keep])
    got_vt = query.vertex_triangle_grow(x, sc.thickness, s_v, s_t, sc.excluded_vt, listed[0], grown_v, grown_t)
    got_ee = query.edge_edge_grow(x, sc.thickness, s_e, sc.excluded_ee, listed[1], grown_e)
    assert len(want_vt[0]) and len(want_ee[0])
    _assert_same_pairs(want_vt, got_vt, t_count)
    _assert_same_pairs(want_ee, got_ee, e_count)


@pytest.mark.parametrize("scale", [0.002, 0.02])
def test_the_list_check_and_witnesses_of_a_crumpled_list_equal_their_numpy_twins(library, scale):
    # The per-call kernels take each element's motion maxima once (caller-owned scratch): the same pairs and reaches.
    _, vertices, sc = _sheet(n=30)
    x = _crumpled(vertices, 8)
    rng = np.random.default_rng(8)
    sc._build(x, rng.uniform(0.005, 0.03, len(x)))
    check = SelfCallKernels(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    lst, k = sc._list, len(sc._list["vt"][0])
    x_start = x - rng.normal(scale=scale, size=x.shape)
    step = x - x_start
    step -= step.mean(axis=0)
    motion = np.sqrt(np.einsum("ij,ij->i", step, step))
    moved = rng.uniform(0.0, 2.0 * scale, len(x))
    a, b, reach_a, reach_b = sc._near_pairs(x, motion, moved)
    pos, reach = check.list_check(x, motion, moved, lst["vt"], lst["ee"], lst["dist"], sc.thickness)
    np.testing.assert_array_equal(pos, np.concatenate([a, k + b]))
    np.testing.assert_array_equal(reach, np.concatenate([reach_a, reach_b]))
    assert len(a) and len(b)
    back = x - step
    lo, hi = np.ascontiguousarray(np.minimum(x, back).T), np.ascontiguousarray(np.maximum(x, back).T)
    slack = 1e-12 + 1e-9 * float(motion.max())
    v, t, e1, e2 = sc._witnesses(x, x_start, lo, hi, motion, moved, slack)
    pos = check.witnesses(x, x_start, lo, hi, motion, moved + motion, lst["vt"], lst["ee"], lst["dist"], slack)
    a, b = pos[pos < k], pos[pos >= k] - k
    for got, want in zip((lst["vt"][0][a], lst["vt"][1][a], lst["ee"][0][b], lst["ee"][1][b]), (v, t, e1, e2)):
        np.testing.assert_array_equal(got, want)
    assert len(a) + len(b)


def test_bad_input_is_refused(library):
    _, vertices, sc = _sheet(n=6)
    x = _crumpled(vertices, 1)
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    skins = _skins(sc, np.zeros(len(x)))
    with pytest.raises(ValueError):
        query.edge_edge(x[:-1], 0.01, skins[2], sc.excluded_ee)  # positions of another particle count
    with pytest.raises(ValueError):
        query.edge_edge(x.astype(np.float32), 0.01, skins[2], sc.excluded_ee)  # dtype
    with pytest.raises(ValueError):
        query.edge_edge(x, 0.01, skins[2][:-1], sc.excluded_ee)  # skins of another edge count
    with pytest.raises(ValueError):
        query.edge_edge(x, 0.01, skins[2], np.array([5, 3], np.int64))  # exclusion keys not sorted
    with pytest.raises(ValueError):
        query.vertex_triangle(x, 0.01, skins[0], skins[1][:-1], sc.excluded_vt)
    with pytest.raises(ValueError):
        query.vertex_triangle(x, 0.01, skins[0], skins[1], np.array([-1], np.int64))  # key out of range
    with pytest.raises(ValueError):
        SelfPairQuery(library, np.array([[0, 1, len(x)]], np.int64), np.ascontiguousarray(sc.edges), len(x))


def test_bodies_on_one_surface_list_and_grow_the_pairs_of_their_numpy_twin(library):
    """Two crumpled sheets on one shared surface, as ``BodyContact`` builds it (``body`` per particle, the first
    body's own pairs kept, the second's not): the native query lists every body's own pairs and the broad phase drops
    those the filter does not keep, so the lists it builds and grows are the NumPy twin's, pair for pair."""
    _, vertices, _ = _sheet(n=12)
    n = len(vertices)
    V, E, T = grid_cloth(12, 2.0, diagonals=False)
    model = build_model(np.vstack([V, V + [3.0, 0.0, 0.0]]), np.vstack([E, E + n]), np.vstack([T, T + n]),
                        total_mass=1.0)
    x = np.ascontiguousarray(np.vstack([_crumpled(vertices, 5), _crumpled(vertices, 6) + [0.02, 0.0, 0.0]]))
    twins = []
    for compute in ("NUMPY", "AUTO"):
        sc = SelfCollision(model, 0.02, compute=compute)
        sc.body, sc.self_bodies = np.repeat([0, 1], n), np.array([True, False])
        twins.append(sc)
    numpy_twin, native = twins
    assert native.native_pairs is not None and numpy_twin.native_pairs is None
    rng = np.random.default_rng(4)
    skins = _skins(numpy_twin, rng.uniform(0.0, 0.01, len(x)))
    vt, ee = numpy_twin._query(x, numpy_twin.thickness, skins)
    got_vt, got_ee = native._query(x, native.thickness, skins)
    _assert_same_pairs(vt, got_vt, len(numpy_twin.triangles))
    _assert_same_pairs(ee, got_ee, len(numpy_twin.edges))
    first_body = numpy_twin.body[numpy_twin.triangles[vt[1], 0]]
    assert np.any((numpy_twin.body[vt[0]] == 0) & (first_body == 0))  # the first body's own pairs listed
    assert np.any(numpy_twin.body[vt[0]] != first_body)  # pairs between the bodies listed
    assert not np.any((numpy_twin.body[vt[0]] == 1) & (first_body == 1))  # the second body's own pairs left out
    # A growth: a particle outran its skin; both twins grow the same elements by the same pairs.
    motion = np.zeros(len(x))
    motion[rng.choice(len(x), 1)] = 0.05
    for sc in twins:
        sc._list = None
        sc._build(x, sc._skin_for(np.zeros(len(x))))
        listed = len(sc._list["dist"])
        assert sc._grow(np.zeros(len(x)), motion)
        assert len(sc._list["dist"]) > listed  # it found new pairs
    for part in ("vt", "ee"):
        for a, b in zip(numpy_twin._list[part], native._list[part]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(native._list["dist"], numpy_twin._list["dist"], rtol=1e-14, atol=0.0)
