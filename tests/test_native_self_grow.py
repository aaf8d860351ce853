"""A Verlet list's skin growth in C (``softsim_self_vt_grow`` / ``softsim_self_ee_grow`` in
solvers/native/src/self_collision.c, ``self_kernels.SelfPairQuery.vertex_triangle_grow`` / ``edge_edge_grow``) against
its NumPy twin, the k-d tree queries of ``SelfBroadPhase._grow``: the same pairs added to the list (both sorted by
pair key, so compared as arrays) with the same exact distances (bit for bit on x86-64 except where the twin's batch of
vertex-triangle candidates lies all on triangle borders: a few ulps there, DISTANCE_RTOL, as for the build), on folded,
jiggled sheets with a few elements outrunning their skins, and on the lists of real folding (the fold scene run on both
growths, frame after frame: the same positions, no crossings); bad input refused with ValueError."""
import copy

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers.collision.broad_phase.self_broad_phase import GROW_LIMIT
from solvers.collision.response.self_contact import SelfCollision
from solvers.native.selftest import self_pair_scene

from test_native_self_collision import DISTANCE_RTOL
from test_native_self_pass import _fold


@pytest.fixture(scope="module")
def library():
    return native_library()


def _grown_pair(seed, outrun, thickness=0.05):
    """Two SelfCollision of one folded sheet sharing one list built natively at x, the second growing in NumPy; a few
    elements (``outrun`` of the particles, at random) moved beyond their skins since: (native, numpy, moved, motion)."""
    model, x, _ = self_pair_scene(n=30, seed=seed, thickness=thickness)
    native = SelfCollision(model, thickness, compute="AUTO")
    numpy = SelfCollision(model, thickness, compute="AUTO")
    numpy.native_pairs = None
    rng = np.random.default_rng(seed)
    native._build(x, rng.uniform(0.01, 0.05, len(x)))
    numpy._list = copy.deepcopy(native._list)
    motion = rng.uniform(0.0, 0.002, len(x))
    moved = rng.uniform(0.0, 0.002, len(x))
    which = rng.choice(len(x), outrun, replace=False)
    moved[which] += rng.uniform(0.05, 0.15, outrun)
    return native, numpy, moved, motion


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("outrun", [1, 2, 3])
def test_growth_adds_the_pairs_of_its_numpy_twin(library, seed, outrun):
    native, numpy, moved, motion = _grown_pair(seed, outrun)
    before = len(native._list["dist"])
    assert native._grow(moved, motion) and numpy._grow(moved, motion)
    a, b = native._list, numpy._list
    assert len(a["dist"]) > before  # the growth found pairs
    for got, want in zip(a["keys"], b["keys"]):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(a["vt"] + a["ee"], b["vt"] + b["ee"]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(a["dist"], b["dist"], rtol=DISTANCE_RTOL, atol=0.0)
    for got, want in zip(a["skins"], b["skins"]):
        np.testing.assert_array_equal(got, want)


def test_growth_declines_as_its_numpy_twin_does(library):
    """More than GROW_LIMIT of the elements outran their skins: neither grows, the list is left as it was."""
    native, numpy, moved, motion = _grown_pair(2, 1)
    moved[:] = 0.3
    keys = native._list["keys"][0].copy()
    assert not native._grow(moved, motion) and not numpy._grow(moved, motion)
    np.testing.assert_array_equal(native._list["keys"][0], keys)
    assert GROW_LIMIT < 1.0


def test_the_fold_scene_is_the_same_with_the_native_growth_and_never_crosses(library):
    """The lab's crumpling sheet: its lists grow many times; the states equal those of the NumPy growth."""
    frames_native, crossings_native, _, sc = _fold("AUTO", frames=10)
    assert sc.grown > 0
    frames_twin, crossings_twin, _, sc_twin = _fold("AUTO", frames=10, native_growth=False)
    assert sc_twin.grown == sc.grown and sc_twin.rebuilds == sc.rebuilds
    assert crossings_native == crossings_twin == [0] * len(crossings_native)
    for (x, v), (y, u) in zip(frames_native, frames_twin):
        assert_same(x, y)
        assert_same(v, u)


def test_bad_input_is_refused(library):
    native, _, moved, motion = _grown_pair(1, 1)
    query, lst = native.native_pairs, native._list
    x0, (s_v, s_t, s_e), keys = lst["x"], lst["skins"], lst["keys"]
    grown = np.array([3], np.int64)
    none = np.zeros(0, np.int64)
    query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], grown, none)
    query.edge_edge_grow(x0, 0.05, s_e, native.excluded_ee, keys[1], grown)
    with pytest.raises(ValueError, match="grown_v"):
        query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], grown + len(x0), none)
    with pytest.raises(ValueError, match="grown_t"):
        query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], none, grown.astype(np.int32))
    with pytest.raises(ValueError, match="grown_e"):
        query.edge_edge_grow(x0, 0.05, s_e, native.excluded_ee, keys[1], -grown)
    with pytest.raises(ValueError, match="listed_vt"):
        query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0][::-1].copy(), grown, none)
    with pytest.raises(ValueError, match="listed_ee"):
        query.edge_edge_grow(x0, 0.05, s_e, native.excluded_ee, np.array([-1], np.int64), grown)
    with pytest.raises(ValueError, match="excluded_vt"):
        query.vertex_triangle_grow(x0, 0.05, s_v, s_t, np.array([2, 1], np.int64), keys[0], grown, none)
    with pytest.raises(ValueError, match="skin_v"):
        query.vertex_triangle_grow(x0, 0.05, s_v[:-1], s_t, native.excluded_vt, keys[0], grown, none)
    with pytest.raises(ValueError, match="skin_e"):
        query.edge_edge_grow(x0, 0.05, s_e.astype(np.float32), native.excluded_ee, keys[1], grown)
    with pytest.raises(ValueError, match="x"):
        query.edge_edge_grow(x0[:-1].copy(), 0.05, s_e, native.excluded_ee, keys[1], grown)


def test_the_scan_of_a_few_grown_elements_finds_what_the_grid_finds(library):
    """At most GROW_SCAN (256) grown elements of a kind are scanned against every box, more go through the grid: the
    same pairs (the grid's call on 300 vertices and 300 triangles, 300 edges, against the union of scans of 100 at a
    time), the same distances."""
    native, _, _, _ = _grown_pair(3, 1)
    query, lst = native.native_pairs, native._list
    x0, (s_v, s_t, s_e), keys = lst["x"], lst["skins"], lst["keys"]
    rng = np.random.default_rng(5)
    grown_v = np.sort(rng.choice(len(x0), 300, replace=False))
    grown_t = np.sort(rng.choice(len(native.triangles), 300, replace=False))
    grown_e = np.sort(rng.choice(len(native.edges), 300, replace=False))
    none = np.zeros(0, np.int64)
    s_v, s_t, s_e = s_v + 0.05, s_t + 0.05, s_e + 0.05  # grown skins: pairs beyond the listed ones
    v, t, d = query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], grown_v, grown_t)
    parts = [query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], g, none)
             for g in np.split(grown_v, 3)]
    parts += [query.vertex_triangle_grow(x0, 0.05, s_v, s_t, native.excluded_vt, keys[0], none, g)
              for g in np.split(grown_t, 3)]
    key = np.concatenate([p[0] * len(native.triangles) + p[1] for p in parts])
    key, first = np.unique(key, return_index=True)
    assert len(v) > 0
    np.testing.assert_array_equal(v * len(native.triangles) + t, key)
    np.testing.assert_array_equal(d, np.concatenate([p[2] for p in parts])[first])
    a, b, d = query.edge_edge_grow(x0, 0.05, s_e, native.excluded_ee, keys[1], grown_e)
    parts = [query.edge_edge_grow(x0, 0.05, s_e, native.excluded_ee, keys[1], g) for g in np.split(grown_e, 3)]
    key = np.concatenate([p[0] * len(native.edges) + p[1] for p in parts])
    key, first = np.unique(key, return_index=True)
    assert len(a) > 0
    np.testing.assert_array_equal(a * len(native.edges) + b, key)
    np.testing.assert_array_equal(d, np.concatenate([p[2] for p in parts])[first])
