"""Self-collision's per-call native kernels (solvers/native/src/self_response.c, ``self_kernels.SelfListCheck``) against
their NumPy twins: the element boxes of ``SelfBroadPhase._boxes`` and the filter of ``SelfBroadPhase._candidates``,
bit for bit (they only compare, take minima and maxima, and add in the twin's order); bad input refused with
ValueError."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers.native.selftest import self_list_scene, self_response
from solvers.native.self_kernels import SelfListCheck


@pytest.fixture(scope="module")
def library():
    return native_library()


def _check(library, sc, n):
    return SelfListCheck(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), n)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_boxes_equal_their_numpy_twin(library, seed):
    x, sc, motion, _ = self_list_scene(seed)
    check = _check(library, sc, len(x))
    lo = np.ascontiguousarray(x.T)
    hi = lo + motion  # boxes over particle boxes, as the fail-safe sweeps them
    for native, numpy in ((check.boxes(lo), sc._boxes(x)), (check.boxes(lo, hi), sc._boxes(lo, hi))):
        for got, want in zip(native, numpy):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.0, 0.3, 1.0, 3.0])
def test_list_check_equals_its_numpy_twin(library, seed, scale):
    x, sc, motion, moved = self_list_scene(seed)
    motion, moved = motion * scale, moved * scale
    check = _check(library, sc, len(x))
    lst = sc._list
    k, total = len(lst["vt"][0]), len(lst["dist"])
    a, b, reach_a, reach_b = sc._near_pairs(x, motion, moved)
    pos, reach = check.list_check(x, motion, moved, lst["vt"], lst["ee"], lst["dist"], sc.thickness)
    np.testing.assert_array_equal(pos, np.concatenate([a, k + b]))
    np.testing.assert_array_equal(reach, np.concatenate([reach_a, reach_b]))
    if scale == 1.0:  # the filter keeps some pairs and drops others here, of both kinds
        assert 0 < len(a) < k and 0 < len(b) < total - k


def test_candidates_equal_on_both_paths(library):
    x, sc, _, _ = self_list_scene(5)
    rng = np.random.default_rng(5)
    x_prev = x - rng.normal(scale=0.005, size=x.shape)
    numpy_result = sc._candidates(x, x_prev)
    sc.native_check = _check(library, sc, len(x))
    native_result = sc._candidates(x, x_prev)
    assert len(numpy_result[2]) > 0
    for got, want in zip((*native_result[0], *native_result[1], native_result[2]),
                         (*numpy_result[0], *numpy_result[1], numpy_result[2])):
        np.testing.assert_array_equal(got, want)


def test_library_self_test_runs_the_list_upkeep(library):
    assert self_response(library) == ""


def test_bad_input_is_refused(library):
    x, sc, motion, moved = self_list_scene()
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    bad = tri.copy()
    bad[2, 0] = -1
    with pytest.raises(ValueError, match="triangles"):
        SelfListCheck(library, bad, edges, len(x))
    with pytest.raises(ValueError, match="edges"):
        SelfListCheck(library, tri, edges[:, :1].copy(), len(x))
    check = SelfListCheck(library, tri, edges, len(x))
    lo = np.ascontiguousarray(x.T)
    with pytest.raises(ValueError, match="lo"):
        check.boxes(x)
    with pytest.raises(ValueError, match="hi"):
        check.boxes(lo, lo.astype(np.float32))
    lst = sc._list
    vt, ee, dist = lst["vt"], lst["ee"], lst["dist"]
    with pytest.raises(ValueError, match="x"):
        check.list_check(np.asfortranarray(x), motion, moved, vt, ee, dist, sc.thickness)
    with pytest.raises(ValueError, match="motion"):
        check.list_check(x, motion[:-1], moved, vt, ee, dist, sc.thickness)
    with pytest.raises(ValueError, match="moved"):
        check.list_check(x, motion, moved[::-1][::-1].astype(np.float32), vt, ee, dist, sc.thickness)
    bad_t = vt[1].copy()
    bad_t[0] = len(tri)
    with pytest.raises(ValueError, match=r"vt\[1\]"):
        check.list_check(x, motion, moved, (vt[0], bad_t), ee, dist, sc.thickness)
    bad_b = ee[1].copy()
    bad_b[-1] = len(edges)
    with pytest.raises(ValueError, match=r"ee\[1\]"):
        check.list_check(x, motion, moved, vt, (ee[0], bad_b), dist, sc.thickness)
    with pytest.raises(ValueError, match=r"vt\[1\]"):
        check.list_check(x, motion, moved, (vt[0], vt[1][:-1].copy()), ee, dist, sc.thickness)
    with pytest.raises(ValueError, match="dist"):
        check.list_check(x, motion, moved, vt, ee, dist[:-1].copy(), sc.thickness)
