"""Both Verlet-list builds at once (``SelfPairQuery.pairs``: the edge-edge prepare step beside the vertex-triangle one,
then every part querying its slice of the vertices and of the edges): the same bits as ``vertex_triangle`` and
``edge_edge`` one after the other, for any thread count and slicing, the pair sets still the NumPy twin's, every
buffer grown when too small, and bad arguments refused."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers.native.selftest import self_pair_scene
from test_native_self_collision import _assert_same_pairs
from test_native_self_threads import _assert_bitwise, _builds, _count_parts, _crumpled, _query, _skins


@pytest.fixture(scope="module")
def library():
    return native_library()


def _pairs(query, sc, x, reach, skins):
    vt, ee = query.pairs(x, reach, skins[0], skins[1], sc.excluded_vt, skins[2], sc.excluded_ee)
    return (*vt, *ee)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_builds_at_once_give_the_separate_builds_bits_on_random_folds(library, seed):
    _, x, sc = self_pair_scene(n=14, seed=seed, fold=0.3 * seed)
    skins = _skins(sc, x, seed, 0.1)
    for reach in (0.0, sc.thickness, 0.2):
        expected = _builds(_query(library, sc, x, threads=1), sc, x, reach, skins)
        assert len(expected[0]) and len(expected[3])
        for count in (1, 2, 3, 5):
            for block in (1, 7, 64):
                query = _query(library, sc, x, threads=count, block=block, minimum=0)
                _assert_bitwise(expected, _pairs(query, sc, x, reach, skins))
                _assert_bitwise(expected, _pairs(query, sc, x, reach, skins))  # buffers reused


def test_both_builds_at_once_on_a_crumpled_cloth_are_the_numpy_pairs(library):
    x, sc = _crumpled()
    skins = _skins(sc, x, 4, 0.02)
    for reach in (sc.thickness, 0.1):
        numpy_vt, numpy_ee = sc._query(x, reach, skins)
        for count in (1, 2, 3):
            got = _pairs(_query(library, sc, x, threads=count, block=16, minimum=0), sc, x, reach, skins)
            _assert_same_pairs(numpy_vt, got[:3], len(sc.triangles))
            _assert_same_pairs(numpy_ee, got[3:], len(sc.edges))
            _assert_bitwise(_builds(_query(library, sc, x, threads=1), sc, x, reach, skins), got)


def test_both_builds_at_once_grow_every_buffer(library):
    _, x, sc = self_pair_scene(n=14, seed=2)
    skins = _skins(sc, x, 2, 0.1)
    expected = _builds(_query(library, sc, x, threads=1), sc, x, sc.thickness, skins)
    query = _query(library, sc, x, threads=3, block=8, minimum=0)
    _pairs(query, sc, x, 0.0, skins)  # makes the edge side and the parts' buffers
    side = query.edge_side
    for q in (query, side):
        q._entries(1)
        q._pairs(1)
        for part in (1, 2):
            q._grow_outputs(part, 1)
    _assert_bitwise(expected, _pairs(query, sc, x, sc.thickness, skins))
    assert all(len(out[0]) > 1 for q in (query, side) for out in q._part_out)
    assert len(query.entry_element) > 1 and len(side.entry_element) > 1


def test_small_or_single_thread_builds_at_once_stay_on_the_callers_thread(library, monkeypatch):
    _, x, sc = self_pair_scene(n=9)
    parts = _count_parts(monkeypatch)
    skins = _skins(sc, x, 1, 0.1)
    _pairs(_query(library, sc, x, threads=4), sc, x, sc.thickness, skins)  # below the minimum: the separate builds
    _pairs(_query(library, sc, x, threads=1, minimum=0), sc, x, sc.thickness, skins)
    assert parts == [1, 1, 1, 1]
    query = _query(library, sc, x, threads=4, block=16, minimum=0)
    _pairs(query, sc, x, sc.thickness, skins)
    assert parts[4:] == [4] and query.edge_side is not None


def test_both_builds_at_once_refuse_bad_arguments(library):
    _, x, sc = self_pair_scene(n=8)
    skins = _skins(sc, x, 1, 0.1)
    query = _query(library, sc, x, threads=2, minimum=0)
    good = dict(x=x, reach=sc.thickness, skin_v=skins[0], skin_t=skins[1], excluded_vt=sc.excluded_vt,
                skin_e=skins[2], excluded_ee=sc.excluded_ee)
    bad = [("x", x[:-1]), ("x", x.astype(np.float32)), ("skin_v", skins[0][:-1]), ("skin_t", skins[1][:-1]),
           ("skin_e", skins[2][:-1]), ("skin_e", skins[2].astype(np.float32)),
           ("excluded_vt", np.array([3, 1], np.int64)), ("excluded_ee", np.array([-1], np.int64)),
           ("excluded_ee", np.array([len(sc.edges) ** 2], np.int64))]
    for name, value in bad:
        with pytest.raises(ValueError):
            query.pairs(**{**good, name: value})
