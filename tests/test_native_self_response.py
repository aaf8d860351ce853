"""Self-collision's per-call native kernels (solvers/native/src/self_response.c, ``self_kernels.SelfCallKernels``) against
their NumPy twins: the element boxes of ``SelfBroadPhase._boxes`` and the filter of ``SelfBroadPhase._candidates``,
bit for bit (they only compare, take minima and maxima, and add in the twin's order); the contact stencils of
``self_pairs._Stencils``, bit for bit on x86-64 (the same operations in the same order, also in batches whose closest
points all lie on triangle borders, where the twin sums its dot products in another order); bad input refused with
ValueError."""
import numpy as np
import pytest

from native_helpers import BITWISE, TOLERANCE, native_library
from solvers.collision.broad_phase.self_pairs import _Stencils
from solvers.native.selftest import self_list_scene, self_response
from solvers.native.self_kernels import SelfCallKernels


@pytest.fixture(scope="module")
def library():
    return native_library()


def _check(library, sc, n):
    return SelfCallKernels(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), n)


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


def test_list_holds_equals_its_numpy_twin(library):
    x, sc, motion, moved = self_list_scene(2)
    check = _check(library, sc, len(x))
    skins = sc._list["skins"]
    answers = set()
    for scale in np.linspace(0.0, 3.0, 31):
        for a, b in ((moved * scale, motion * scale), (moved * scale, np.zeros_like(motion)),
                     (np.zeros_like(moved), motion * scale)):
            want = sc._list_holds(a, b)
            assert check.list_holds(a, b, skins) == want
            answers.add(want)
    # One element just over its skin, of each kind: a vertex, a triangle's corner, an edge's end.
    zero = np.zeros(len(x))
    vertices = np.arange(len(x))[:, None]
    for element, skin in zip((vertices, sc.triangles, sc.edges), skins):
        over = zero.copy()
        over[element[3]] = np.nextafter(skin[3], np.inf) if element.shape[1] == 1 else 2.0 * skin[3]
        assert not sc._list_holds(over, zero) and not check.list_holds(over, zero, skins)
        over[element[3]] = skin[3] if element.shape[1] == 1 else 0.0
        assert sc._list_holds(over, zero) == check.list_holds(over, zero, skins)
    assert answers == {True, False}


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


STENCIL_FIELDS = ("idx", "coef", "r", "n", "dist", "plane", "ok", "interior")


def _assert_same_stencils(native, numpy):
    for name in STENCIL_FIELDS:
        got, want = getattr(native, name), getattr(numpy, name)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if BITWISE:
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=0.0, atol=TOLERANCE, err_msg=name)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_stencils_equal_their_numpy_twin(library, seed):
    x, sc, _, _ = self_list_scene(seed)
    check = _check(library, sc, len(x))
    vt, ee = sc._list["vt"], sc._list["ee"]
    assert len(vt[0]) and len(ee[0])
    _assert_same_stencils(check.stencils(x, vt, ee), _Stencils(x, vt, ee, sc.triangles, sc.edges))
    # Batches of every size the response passes hand over, down to single pairs, and each kind alone.
    rng = np.random.default_rng(seed)
    for size in (0, 1, 2, 5, 40):
        a = np.sort(rng.choice(len(vt[0]), min(size, len(vt[0])), replace=False))
        b = np.sort(rng.choice(len(ee[0]), min(size, len(ee[0])), replace=False))
        for pair_vt, pair_ee in (((vt[0][a], vt[1][a]), (ee[0][b], ee[1][b])),
                                 ((vt[0][a], vt[1][a]), (ee[0][:0], ee[1][:0])),
                                 ((vt[0][:0], vt[1][:0]), (ee[0][b], ee[1][b]))):
            _assert_same_stencils(check.stencils(x, pair_vt, pair_ee),
                                  _Stencils(x, pair_vt, pair_ee, sc.triangles, sc.edges))


def test_stencils_of_border_batches_and_degenerate_elements(library):
    x, sc, _, _ = self_list_scene(6)
    check = _check(library, sc, len(x))
    vt, ee = sc._list["vt"], sc._list["ee"]
    whole = _Stencils(x, vt, ee, sc.triangles, sc.edges)
    k = len(vt[0])
    border = np.nonzero(~whole.interior[:k] & whole.ok[:k])[0]
    assert len(border) > 3
    for rows in (border, border[:1], border[::3]):  # batches with no pair inside (the twin's other summation order)
        pair_vt = (vt[0][rows], vt[1][rows])
        _assert_same_stencils(check.stencils(x, pair_vt, (ee[0][:0], ee[1][:0])),
                              _Stencils(x, pair_vt, (ee[0][:0], ee[1][:0]), sc.triangles, sc.edges))
    # Collapsed triangles and edges (no normal), and parallel edges: a copy of x with one triangle's corners on a
    # line, one edge of zero length, and two edges moved parallel.
    y = x.copy()
    t0 = sc.triangles[vt[1][0]]
    y[t0[2]] = 0.5 * (y[t0[0]] + y[t0[1]])
    e0 = sc.edges[ee[0][0]]
    y[e0[1]] = y[e0[0]]
    e1, e2 = sc.edges[ee[0][-1]], sc.edges[ee[1][-1]]
    y[e2[1]] = y[e2[0]] + (y[e1[1]] - y[e1[0]])
    mixed_vt = (np.concatenate([vt[0][:1], vt[0][border[:3]]]), np.concatenate([vt[1][:1], vt[1][border[:3]]]))
    mixed_ee = (ee[0][[0, -1]], ee[1][[0, -1]])
    numpy = _Stencils(y, mixed_vt, mixed_ee, sc.triangles, sc.edges)
    assert not numpy.ok[0] and not numpy.ok[-2]
    _assert_same_stencils(check.stencils(y, mixed_vt, mixed_ee), numpy)


def _step(x, sc, seed, scale):
    """A step ending at x (n, 3): (x_start, lo, hi, motion, moved, slack) as ImpactZones._new_crossings makes them."""
    rng = np.random.default_rng(seed)
    x_start = np.ascontiguousarray(x - rng.normal(scale=scale, size=x.shape))
    step = x - x_start
    step -= step.mean(axis=0)
    motion = np.sqrt(np.einsum("ij,ij->i", step, step))
    back = x - step
    lo, hi = np.ascontiguousarray(np.minimum(x, back).T), np.ascontiguousarray(np.maximum(x, back).T)
    return x_start, lo, hi, motion, sc._moved(x), 1e-12 + 1e-9 * float(motion.max())


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.001, 0.01, 0.05, 0.1])
def test_witnesses_equal_their_numpy_twin(library, seed, scale):
    x, sc, _, _ = self_list_scene(seed)
    check = _check(library, sc, len(x))
    x_start, lo, hi, motion, moved, slack = _step(x, sc, seed, scale)
    lst = sc._list
    v, t, e1, e2 = sc._witnesses(x, x_start, lo, hi, motion, moved, slack)
    pos = check.witnesses(x, x_start, lo, hi, motion, moved + motion, lst["vt"], lst["ee"], lst["dist"], slack)
    k = len(lst["vt"][0])
    a, b = pos[pos < k], pos[pos >= k] - k
    np.testing.assert_array_equal(lst["vt"][0][a], v)
    np.testing.assert_array_equal(lst["vt"][1][a], t)
    np.testing.assert_array_equal(lst["ee"][0][b], e1)
    np.testing.assert_array_equal(lst["ee"][1][b], e2)
    if scale == 0.05:  # some pairs kept, of both kinds, and some dropped
        assert 0 < len(a) < k and 0 < len(b) < len(lst["dist"]) - k


def test_witnesses_of_border_batches(library):
    # A list of only pairs whose closest points lie on a triangle's border at both ends of the step: the twin's
    # distances then sum their border dot products in the rows' order. The witnesses are a filter, so this compares
    # the sets; the distances themselves are held bit for bit by the stencil tests (the same closest points).
    x, sc, _, _ = self_list_scene(7)
    x_start, lo, hi, motion, moved, slack = _step(x, sc, 7, 0.1)
    lst = sc._list
    vt = lst["vt"]
    inside = [_Stencils(y, vt, (lst["ee"][0][:0], lst["ee"][1][:0]), sc.triangles, sc.edges).interior
              for y in (x, x_start)]
    border = np.nonzero(~inside[0] & ~inside[1])[0]
    assert len(border) > 3
    empty = np.zeros(0, np.int64)
    sc._list = dict(lst, vt=(vt[0][border], vt[1][border]), ee=(empty, empty),
                    dist=np.zeros(len(border)))
    check = _check(library, sc, len(x))
    v, t, _, _ = sc._witnesses(x, x_start, lo, hi, motion, moved, slack)
    pos = check.witnesses(x, x_start, lo, hi, motion, moved + motion, sc._list["vt"], sc._list["ee"],
                          sc._list["dist"], slack)
    np.testing.assert_array_equal(sc._list["vt"][0][pos], v)
    np.testing.assert_array_equal(sc._list["vt"][1][pos], t)
    assert len(v) > 0


def test_library_self_test_runs_the_list_upkeep(library):
    assert self_response(library) == ""


def test_bad_input_is_refused(library):
    x, sc, motion, moved = self_list_scene()
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    bad = tri.copy()
    bad[2, 0] = -1
    with pytest.raises(ValueError, match="triangles"):
        SelfCallKernels(library, bad, edges, len(x))
    with pytest.raises(ValueError, match="edges"):
        SelfCallKernels(library, tri, edges[:, :1].copy(), len(x))
    check = SelfCallKernels(library, tri, edges, len(x))
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
    with pytest.raises(ValueError, match="e2"):
        check.stencils(x, vt, (ee[0], bad_b))
    with pytest.raises(ValueError, match="^t: index"):
        check.stencils(x, (vt[0], bad_t), ee)
    with pytest.raises(ValueError, match="^v: dtype"):
        check.stencils(x, (vt[0].astype(np.int32), vt[1]), ee)
    with pytest.raises(ValueError, match="^e2: shape"):
        check.stencils(x, vt, (ee[0][:-1].copy(), ee[1]))
    with pytest.raises(ValueError, match="^e1: index"):
        check.stencils(x, vt, (bad_b, ee[1]))
    x_start, lo, hi, motion, moved, slack = _step(x, sc, 1, 0.01)
    with pytest.raises(ValueError, match="x_start"):
        check.witnesses(x, x_start[:-1], lo, hi, motion, moved, vt, ee, dist, slack)
    with pytest.raises(ValueError, match="^hi"):
        check.witnesses(x, x_start, lo, hi.T, motion, moved, vt, ee, dist, slack)
    with pytest.raises(ValueError, match="bound"):
        check.witnesses(x, x_start, lo, hi, motion, moved.astype(np.float32), vt, ee, dist, slack)
    with pytest.raises(ValueError, match=r"vt\[1\]"):
        check.witnesses(x, x_start, lo, hi, motion, moved, (vt[0], bad_t), ee, dist, slack)
    with pytest.raises(ValueError, match="skin_t"):
        check.list_holds(moved, motion, (lst["skins"][0], lst["skins"][1][:-1], lst["skins"][2]))
    with pytest.raises(ValueError, match="^motion"):
        check.list_holds(moved, motion.reshape(-1, 1), lst["skins"])
