"""Self-collision's Verlet-list builds on several threads (``solvers/native/threads.py``, ``SelfPairQuery`` over
``softsim_self_vt_prepare`` / ``_query`` and ``softsim_self_ee_prepare`` / ``_query``): the same bits for any thread
count and slicing, the pair sets still the NumPy twin's, the thread count's parsing, one shared pool, bad arguments
refused, and whole self-colliding frames equal on one and three threads."""
import threading

import numpy as np
import pytest

from native_helpers import native_library
from solvers.collision.broad_phase.self_pairs import _row_max
from solvers.native import self_kernels, threads
from solvers.native.library import pointer
from solvers.native.selftest import self_pair_scene
from solvers.native.self_kernels import SelfPairQuery
from test_native_self_collision import _assert_same_pairs, _lab


@pytest.fixture(scope="module")
def library():
    return native_library()


def _query(library, sc, x, **options):
    return SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x),
                         **options)


def _skins(sc, x, seed, scale):
    skin = np.random.default_rng(seed).uniform(0.0, scale, len(x))
    return skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges)


def _builds(query, sc, x, reach, skins):
    return (*query.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt),
            *query.edge_edge(x, reach, skins[2], sc.excluded_ee))


def _assert_bitwise(expected, result):
    for a, b in zip(expected, result, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def _crumpled():
    """The self-colliding lab cloth (tests/test_native_self_collision.py) after 14 frames: folded over the sphere."""
    sc, state, _ = _lab(12, "NUMPY", 14)
    return np.ascontiguousarray(state.x), sc


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("block", [1, 7, 64])
def test_any_thread_count_gives_the_same_bits_on_random_folds(library, seed, block):
    _, x, sc = self_pair_scene(n=14, seed=seed, fold=0.3 * seed)
    skins = _skins(sc, x, seed, 0.1)
    for reach in (0.0, sc.thickness, 0.2):
        expected = _builds(_query(library, sc, x, threads=1), sc, x, reach, skins)
        assert len(expected[0]) and len(expected[3])
        for count in (2, 3, 5):
            query = _query(library, sc, x, threads=count, block=block, minimum=0)
            _assert_bitwise(expected, _builds(query, sc, x, reach, skins))
            _assert_same_pairs(sc._query(x, reach, skins)[1], _builds(query, sc, x, reach, skins)[3:],
                               len(sc.edges))


def test_any_thread_count_gives_the_same_bits_on_a_crumpled_cloth(library):
    x, sc = _crumpled()
    skins = _skins(sc, x, 4, 0.02)
    for reach in (sc.thickness, 0.1):
        expected = _builds(_query(library, sc, x, threads=1), sc, x, reach, skins)
        numpy_vt, numpy_ee = sc._query(x, reach, skins)
        _assert_same_pairs(numpy_vt, expected[:3], len(sc.triangles))
        _assert_same_pairs(numpy_ee, expected[3:], len(sc.edges))
        assert len(expected[0]) and len(expected[3])
        for count in (2, 3, 5):
            for block in (1, 16):
                query = _query(library, sc, x, threads=count, block=block, minimum=0)
                _assert_bitwise(expected, _builds(query, sc, x, reach, skins))


@pytest.mark.parametrize("runs_from", [0, 10**9])
def test_both_joins_of_the_parts_give_the_same_bits(library, monkeypatch, runs_from):
    # The parts' outputs joined by their runs of blocks (runs_from 0) or by a stable sort (10**9), whatever the size.
    monkeypatch.setattr(self_kernels, "RUNS_JOIN_MINIMUM", runs_from)
    x, sc = _crumpled()
    skins = _skins(sc, x, 6, 0.05)
    expected = _builds(_query(library, sc, x, threads=1), sc, x, sc.thickness, skins)
    assert len(expected[0]) and len(expected[3])
    for count in (2, 3):
        for block in (1, 16):
            query = _query(library, sc, x, threads=count, block=block, minimum=0)
            _assert_bitwise(expected, _builds(query, sc, x, sc.thickness, skins))
            _assert_bitwise(expected, [a for kind in query.pairs(x, sc.thickness, *skins[:2], sc.excluded_vt,
                                                                 skins[2], sc.excluded_ee) for a in kind])


def test_the_one_call_builds_equal_prepare_and_query(library):
    # softsim_self_vt_pairs / _ee_pairs (the single-thread kernels) against the split, in their own order.
    _, x, sc = self_pair_scene(n=12, seed=5)
    skin_v, skin_t, skin_e = _skins(sc, x, 5, 0.1)
    query = _query(library, sc, x, threads=1)
    t, e = len(query.triangles), len(query.edges)
    vt = query._call(library.softsim_self_vt_pairs, (pointer(x), query.n, pointer(query.triangles), t), lambda: (
        pointer(skin_v), pointer(skin_t), sc.thickness, pointer(sc.excluded_vt), len(sc.excluded_vt)))
    ee = query._call(library.softsim_self_ee_pairs, (pointer(x), query.n, pointer(query.edges), e), lambda: (
        pointer(skin_e), sc.thickness, pointer(sc.excluded_ee), len(sc.excluded_ee)))
    _assert_bitwise(vt, query.vertex_triangle(x, sc.thickness, skin_v, skin_t, sc.excluded_vt))
    _assert_bitwise(ee, query.edge_edge(x, sc.thickness, skin_e, sc.excluded_ee))


def test_every_part_grows_its_own_buffers(library):
    _, x, sc = self_pair_scene(n=14, seed=2)
    skins = _skins(sc, x, 2, 0.1)
    expected = _builds(_query(library, sc, x, threads=1), sc, x, sc.thickness, skins)
    query = _query(library, sc, x, threads=3, block=8, minimum=0)
    query._entries(1)
    query._pairs(1)
    _builds(query, sc, x, 0.0, skins)  # makes the parts' buffers
    for part in (1, 2):
        query._grow_outputs(part, 1)
    _assert_bitwise(expected, _builds(query, sc, x, sc.thickness, skins))
    assert all(len(out[0]) > 1 for out in query._part_out)


def _count_parts(monkeypatch):
    """The number of parts of every ``run_ranges`` call the builds make from now on, in a list."""
    parts = []
    run = self_kernels.run_ranges

    def counting(*args, **kwargs):
        result = run(*args, **kwargs)
        parts.append(len(result))
        return result

    monkeypatch.setattr(self_kernels, "run_ranges", counting)
    return parts


def test_small_builds_stay_on_the_callers_thread(library, monkeypatch):
    _, x, sc = self_pair_scene(n=9)
    parts = _count_parts(monkeypatch)
    skins = _skins(sc, x, 1, 0.1)
    _builds(_query(library, sc, x, threads=4), sc, x, sc.thickness, skins)  # 81 vertices, 208 edges: below minimum
    _builds(_query(library, sc, x, threads=4, block=16, minimum=0), sc, x, sc.thickness, skins)
    assert parts == [1, 1, 4, 4]


def test_thread_count_reads_the_environment(monkeypatch):
    monkeypatch.delenv(threads.ENVIRONMENT_VARIABLE, raising=False)
    default = threads.thread_count()
    assert 1 <= default <= threads.DEFAULT_LIMIT
    read_cores = threads.machine_cores.__wrapped__  # (the process reads them once)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: None)  # the machine cannot tell: one core
    assert read_cores() == 1
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 6)
    assert read_cores() == 6
    monkeypatch.setattr(threads, "machine_cores", lambda: 64)
    assert threads.thread_count() == threads.DEFAULT_LIMIT
    monkeypatch.setattr(threads, "machine_cores", lambda: 1)
    assert threads.thread_count() == 1
    for value, count in (("1", 1), ("3", 3), (" 12 ", 12), ("32", 32)):
        monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, value)
        assert threads.thread_count() == count
    for value in ("0", "-2", "two", "1.5", "3 threads"):
        monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, value)
        with pytest.raises(ValueError, match=threads.ENVIRONMENT_VARIABLE):
            threads.thread_count()


def test_thread_count_keeps_to_the_limit_set(monkeypatch):
    """``set_limit`` (the add-on passes the scene's Threads) lowers the machine's count; SOFTSIM_THREADS is above it."""
    monkeypatch.delenv(threads.ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setattr(threads, "machine_cores", lambda: 6)
    monkeypatch.setattr(threads, "_limit", None)
    assert threads.thread_count() == 6
    threads.set_limit(2)
    assert threads.thread_count() == 2
    threads.set_limit(16)
    assert threads.thread_count() == 6
    monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, "3")
    threads.set_limit(1)
    assert threads.thread_count() == 3
    threads.set_limit(None)
    monkeypatch.delenv(threads.ENVIRONMENT_VARIABLE)
    assert threads.thread_count() == 6
    for bad in (0, -1, 2.0, "4", True):
        with pytest.raises(ValueError, match="thread limit"):
            threads.set_limit(bad)


def test_slices_cover_every_element_once():
    for count in (0, 1, 5, 255, 256, 257, 1000, 4096):
        for parts in (1, 2, 3, 5, 8):
            for block in (1, 7, 256):
                seen = np.zeros(count, int)
                ranges = threads.slices(count, parts, block)
                assert 1 <= len(ranges) <= parts
                for first, last, size, stride in ranges:
                    for begin in range(first, last, stride):
                        seen[begin:min(begin + size, last)] += 1
                assert np.all(seen == 1)
    for bad in ((-1, 2, 4), (10, 0, 4), (10, 2, 0)):
        with pytest.raises(ValueError, match="slices"):
            threads.slices(*bad)


def test_run_ranges_uses_one_pool_and_the_callers_thread():
    caller = threading.get_ident()
    pools = set()
    for _ in range(5):
        where = threads.run_ranges(lambda part, *_: (part, threading.get_ident()), 1000, 3, block=10)
        assert [part for part, _ in where] == [0, 1, 2]
        assert where[0][1] == caller
        pools.add(id(threads.executor()))
    assert len(pools) == 1
    assert threads.executor() is threads.executor()
    assert len(threads.executor()._threads) <= threads.POOL_LIMIT
    # One part, or fewer elements than the minimum: a plain call on the caller's thread.
    assert threads.run_ranges(lambda *args: (args, threading.get_ident()), 50, 1) == [((0, 0, 50, 50, 50), caller)]
    assert threads.run_ranges(lambda *args: threading.get_ident(), 50, 4, block=10, minimum=100) == [caller]


def test_run_ranges_raises_a_parts_error_after_every_part_ends():
    finished = []

    def part(index, *_):
        if index == 1:
            raise RuntimeError("part 1 failed")
        finished.append(index)
        return index

    with pytest.raises(RuntimeError, match="part 1"):
        threads.run_ranges(part, 100, 3, block=10)
    assert sorted(finished) == [0, 2]


def test_bad_thread_arguments_are_refused(library, monkeypatch):
    _, x, sc = self_pair_scene()
    for name, value in (("threads", 0), ("threads", -1), ("threads", 1.5), ("threads", True), ("threads", "2"),
                        ("block", 0), ("block", 2.0), ("minimum", -1), ("minimum", 1.0)):
        with pytest.raises(ValueError, match=name):
            _query(library, sc, x, **{name: value})
    query = _query(library, sc, x)
    skins = _skins(sc, x, 1, 0.1)
    monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, "none")
    with pytest.raises(ValueError, match=threads.ENVIRONMENT_VARIABLE):
        query.edge_edge(x, sc.thickness, skins[2], sc.excluded_ee)


def test_self_colliding_frames_equal_on_one_and_three_threads(library, monkeypatch):
    # Every build of these frames split into blocks of 16 elements on three threads, against one thread.
    assert library.ready("self")  # its self-test (which builds on three threads itself) before the count below
    monkeypatch.setattr(self_kernels, "PARALLEL_MINIMUM", 0)
    monkeypatch.setattr(self_kernels, "PARALLEL_BLOCK", 16)
    parts = _count_parts(monkeypatch)
    runs = {}
    for count in ("1", "3"):
        monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, count)
        parts.clear()
        sc, state, _ = _lab(12, "AUTO", 14)
        assert sc.native_pairs is not None and sc.rebuilds > 1
        assert parts and set(parts) == {int(count)}
        runs[count] = state
    for name in ("x", "v"):
        assert getattr(runs["1"], name).tobytes() == getattr(runs["3"], name).tobytes()
