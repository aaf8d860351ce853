"""``self_kernels.SelfPairQuery.grow``: a skin growth's vertex-triangle and edge-edge queries at once (side by side on
several threads from GROW_PARALLEL_MINIMUM edges, the edge-edge one into the second set of buffers) give the pairs of
the two separate calls, bit for bit, for any thread count; no edge-edge call without grown edges."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers.native import self_kernels
from solvers.native.self_kernels import SelfPairQuery

from test_native_self_grow import _grown_pair


@pytest.fixture(scope="module")
def library():
    return native_library()


@pytest.mark.parametrize("side_by_side", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("seed", [1, 4])
def test_both_growths_at_once_equal_the_separate_calls(library, threads, seed, side_by_side, monkeypatch):
    native, _, moved, motion = _grown_pair(seed, 3)
    edge_count = len(native.native_pairs.edges)
    # This cloth is below the minimum: the side-by-side path is taken by lowering the minimum to its size.
    assert edge_count < self_kernels.GROW_PARALLEL_MINIMUM
    if side_by_side:
        monkeypatch.setattr(self_kernels, "GROW_PARALLEL_MINIMUM", edge_count)
    lst = native._list
    s_v, s_t, s_e = (s.copy() for s in lst["skins"])
    rng = np.random.default_rng(seed)
    grown_v = np.sort(rng.choice(len(s_v), 5, replace=False))
    grown_t = np.sort(rng.choice(len(s_t), 7, replace=False))
    grown_e = np.sort(rng.choice(len(s_e), 9, replace=False))
    for skin, grown in ((s_v, grown_v), (s_t, grown_t), (s_e, grown_e)):
        skin[grown] += 0.1
    tri, edges = native.native_pairs.triangles, native.native_pairs.edges
    query = SelfPairQuery(library, tri, edges, len(s_v), threads=threads)
    single = SelfPairQuery(library, tri, edges, len(s_v), threads=1)
    x0, thick = lst["x"], native.thickness
    keys = lst["keys"]
    for e in (grown_e, grown_e[:0]):
        vt, ee = query.grow(x0, thick, (s_v, s_t, s_e), native.excluded_vt, native.excluded_ee, keys[0], keys[1],
                            grown_v, grown_t, e)
        want_vt = single.vertex_triangle_grow(x0, thick, s_v, s_t, native.excluded_vt, keys[0], grown_v, grown_t)
        want_ee = single.edge_edge_grow(x0, thick, s_e, native.excluded_ee, keys[1], e)
        assert len(want_vt[0]) and (len(want_ee[0]) or not len(e))
        for got, want in zip(vt + ee, want_vt + want_ee):
            np.testing.assert_array_equal(got, want)
    # The edge-edge side ran on its own buffers only when the two ran side by side.
    assert (query.edge_side is not None) == (side_by_side and threads > 1)
