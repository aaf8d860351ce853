"""Self-collision's fused per-call kernels against their NumPy twins, bit for bit on x86-64: the candidate selection
(solvers/native/src/self_select.c, ``self_kernels.SelfSelect.select``) against ``SelfBroadPhase._candidates``, the
fail-safe's set-up and witnesses (``SelfSelect.witnesses``) against ``ImpactZones._new_crossings``, the response's
set-up (``SelfPass.setup``) against ``SelfCollision._watched`` and its friction step (``SelfPass.friction``,
src/self_pass.c) against ``SelfCollision._friction_of``; on folded sheets moved by random steps of several sizes (lists
that hold, grow and are rebuilt), on two sheets driven through each other, and on the states of real crumpling (the
fold scene of tests/test_native_self_pass.py). The Verlet list stays sorted by pair key on both paths. Bad input is
refused with ValueError."""
import copy

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.broad_phase.self_pairs import _pair_keys
from solvers.collision.response.self_contact import RECOVERY, SelfCollision
from solvers.config import SolverConfig
from solvers.native.selftest import self_list_scene
from solvers.native.self_kernels import SelfPass, SelfSelect

from test_impact_zones import driven_through, two_sheets

STENCIL_FIELDS = ("idx", "coef", "r", "n", "dist", "plane", "ok", "interior")
LIST_FIELDS = ("dist", "x")


@pytest.fixture(scope="module")
def library():
    return native_library()


def _kernels(library, sc, n):
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    return SelfSelect(library, tri, edges, n), SelfPass(library, tri, edges, n)


def _twins(sc, select):
    """Two shallow copies of ``sc`` with copies of its list: (native, numpy), the first selecting with ``select``, the
    second with NumPy (its per-call checks too); both refresh their lists as ``sc`` does."""
    native, numpy = copy.copy(sc), copy.copy(sc)
    native._list, numpy._list = copy.deepcopy(sc._list), copy.deepcopy(sc._list)
    native.native_select = select
    numpy.native_select = numpy.native_check = None
    return native, numpy


def _assert_same_lists(a, b):
    for name in LIST_FIELDS:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    for pair in ("vt", "ee", "keys", "skins"):
        for got, want in zip(a[pair], b[pair]):
            np.testing.assert_array_equal(got, want, err_msg=pair)


def _assert_sorted_by_key(sc):
    lst = sc._list
    keys = (_pair_keys(*lst["vt"], len(sc.triangles)), _pair_keys(*lst["ee"], len(sc.edges)))
    for got, kept in zip(keys, lst["keys"]):
        assert np.all(np.diff(got) > 0)  # sorted, each pair once
        np.testing.assert_array_equal(got, kept)


def _assert_same_candidates(got, want):
    for a, b in zip((*got[0], *got[1], got[2]), (*want[0], *want[1], want[2])):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.001, 0.01, 0.05])
def test_selection_equals_its_numpy_twin_over_random_steps(library, seed, scale):
    """Steps of several sizes one after another: the list holds, grows or is rebuilt (each seen over the set)."""
    x, sc, _, _ = self_list_scene(seed)
    select, _ = _kernels(library, sc, len(x))
    native, numpy = _twins(sc, select)
    rng = np.random.default_rng(seed)
    refreshed = 0
    for _ in range(4):
        x_prev, x = x, np.ascontiguousarray(x + rng.normal(scale=scale, size=x.shape))
        before = (numpy.rebuilds, numpy.grown)
        got, want = native._candidates(x, x_prev), numpy._candidates(x, x_prev)
        refreshed += (numpy.rebuilds, numpy.grown) != before
        assert (native.rebuilds, native.grown) == (numpy.rebuilds, numpy.grown)
        _assert_same_candidates(got, want)
        _assert_same_lists(native._list, numpy._list)
        _assert_sorted_by_key(native)
        if len(want[2]):
            assert 0 < len(want[0][0]) + len(want[1][0]) < len(numpy._list["dist"])
    assert refreshed < 4 if scale < 0.01 else refreshed > 0  # lists that hold, lists refreshed


def test_selection_motions_equal_their_numpy_twin(library):
    x, sc, _, _ = self_list_scene(2)
    select, _ = _kernels(library, sc, len(x))
    x_prev = np.ascontiguousarray(x - np.random.default_rng(2).normal(scale=0.002, size=x.shape))
    assert select.motion_holds(x, x_prev, sc._list) == sc._list_holds(sc._moved(x), select.motion)
    step = x - x_prev
    step -= step.mean(axis=0)
    np.testing.assert_array_equal(select.motion, np.sqrt(np.einsum("ij,ij->i", step, step)))
    np.testing.assert_array_equal(select.moved, sc._moved(x))
    far = np.ascontiguousarray(x + 1.0)  # a common shift is no motion relative to the mean
    assert select.motion_holds(far, x, sc._list) == sc._list_holds(sc._moved(far), select.motion)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fail_safe_witnesses_equal_their_numpy_twin_through_each_other(library, seed):
    """Two sheets driven through each other: the fused set-up finds the same witnesses and crossings."""
    rng = np.random.default_rng(seed)
    model, x_prev, count = two_sheets()
    sc = SelfCollision(model, thickness=0.005, friction=0.0)
    sc._candidates(x_prev, x_prev)  # the Verlet list the fail-safe reads
    select, _ = _kernels(library, sc, len(x_prev))
    x = np.ascontiguousarray(driven_through(x_prev, count, 0.03, rng))
    native, numpy = _twins(sc, select)
    seen = {}
    for name, twin in (("native", native), ("numpy", numpy)):
        crossings_of = twin._crossings_of

        def recorded(*args, _name=name, _of=crossings_of):
            seen[_name] = args[2:]
            return _of(*args)

        twin._crossings_of = recorded
    got, want = native._new_crossings(x, x_prev), numpy._new_crossings(x, x_prev)
    assert len(want) > 0
    np.testing.assert_array_equal(got, want)
    for a, b in zip(seen["native"], seen["numpy"]):
        np.testing.assert_array_equal(a, b)
    _assert_same_lists(native._list, numpy._list)


def _witnesses_seen(native, numpy, x, x_start):
    """The witnesses (v, t, e1, e2) each of the two finds in ``_new_crossings(x, x_start)``: [native's, numpy's]."""
    seen = []
    for twin in (native, numpy):
        twin._crossings_of = lambda x_, x0, *pairs: seen.append(pairs) or np.zeros((0, 2), np.int64)
        twin._new_crossings(x, x_start)
    return seen


@pytest.mark.parametrize("seed", [1, 3])
@pytest.mark.parametrize("scale", [0.03, 0.05, 0.2])
def test_fail_safe_witnesses_equal_their_numpy_twin_over_random_steps(library, seed, scale):
    x, sc, _, _ = self_list_scene(seed)
    select, _ = _kernels(library, sc, len(x))
    native, numpy = _twins(sc, select)
    x_start = np.ascontiguousarray(x - np.random.default_rng(seed).normal(scale=scale, size=x.shape))
    seen = _witnesses_seen(native, numpy, x, x_start)
    for a, b in zip(*seen):
        np.testing.assert_array_equal(a, b)
    assert len(seen[1][0]) + len(seen[1][2]) > 0
    _assert_same_lists(native._list, numpy._list)


def _watched_pair(library, seed, scale, heavy=False):
    x, sc, _, _ = self_list_scene(seed)
    select, native_pass = _kernels(library, sc, len(x))
    rng = np.random.default_rng(seed)
    x_prev = np.ascontiguousarray(x - rng.normal(scale=scale, size=x.shape))
    vt, ee, reach = sc._candidates(x, x_prev)
    if heavy:  # pinned particles: pairs of pinned particles only are not watched
        sc.inv_mass = sc.inv_mass.copy()
        sc.inv_mass[rng.random(len(x)) < 0.6] = 0.0
    return x, x_prev, sc, native_pass, (vt, ee, reach)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("scale", [0.002, 0.02])
@pytest.mark.parametrize("heavy", [False, True])
def test_response_setup_equals_its_numpy_twin(library, seed, scale, heavy):
    x, x_prev, sc, native, (vt, ee, reach) = _watched_pair(library, seed, scale, heavy)
    count = native.setup(x, x_prev, vt, ee, reach, sc.inv_mass, sc.thickness, RECOVERY * sc.thickness)
    (v, t), (e1, e2), side, target, approach_target, first = sc._watched(x, x_prev, vt, ee, reach)
    assert 0 < count == len(side) <= len(reach)
    if heavy:
        assert count < len(reach)
    for got, want in zip(native.pairs, (v, t, e1, e2)):
        np.testing.assert_array_equal(got, want)
    for got, want in ((native.side, side), (native.target, target), (native.approach_target, approach_target)):
        assert_same(got, want)
    for name, buffer in zip(STENCIL_FIELDS, ("idx", "coef", "r", "normal", "dist", "plane", "ok", "interior")):
        assert_same(getattr(native, buffer)[:count], getattr(first, name))
    assert not np.any(native.ever) and not np.any(native.depth)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("friction", [0.05, 0.3, 5.0])
def test_friction_step_equals_its_numpy_twin(library, seed, friction):
    x, x_prev, sc, native, (vt, ee, reach) = _watched_pair(library, seed, 0.02)
    count = native.setup(x, x_prev, vt, ee, reach, sc.inv_mass, sc.thickness, RECOVERY * sc.thickness)
    (v, t), (e1, e2), side, _, _, _ = sc._watched(x, x_prev, vt, ee, reach)
    rng = np.random.default_rng(seed)
    native.ever[:] = rng.random(count) < 0.5
    native.depth[:] = np.where(native.ever, rng.uniform(0.0, 0.01, count), 0.0)
    sc.friction = friction
    y, z = x.copy(), x.copy()
    assert native.friction(y, x_prev, friction) == np.count_nonzero(native.ever) > 0
    st = sc._friction_of(z, x_prev, (v, t), (e1, e2), side, native.depth.copy(), native.ever.copy())
    assert not np.array_equal(z, x)
    assert_same(y, z)
    touched = np.zeros(len(x), bool)
    touched[st.idx[st.coef != 0.0]] = True
    np.testing.assert_array_equal(native.touched(), np.flatnonzero(touched))


def _fold_states(frames=10, every=7):
    """The fold scene of tests/test_native_self_pass.py (XPBD, 16 x 16, crumpling onto a rough ground), native: every
    ``every``-th self-collision call of its last frames as (x, x_prev, SelfCollision with a copy of the list then)."""
    n = 16
    V, E, T = grid_cloth(n, 0.6, 0.0)
    angle = np.radians(80.0)
    rotation = np.array([[np.cos(angle), 0.0, -np.sin(angle)], [0.0, 1.0, 0.0], [np.sin(angle), 0.0, np.cos(angle)]])
    V = V @ rotation.T
    V[:, 2] += 0.05 - V[:, 2].min()
    model = build_model(V, E, T, total_mass=0.1, quads=grid_quads(n))
    config = SolverConfig(solver="XPBD", use_self_collision=True, thickness=0.01, compute="AUTO")
    solver = make_solver(model, config)
    sc = solver.self_collision
    sc.use_native_step = False  # the flow call by call, whose inputs are recorded (tests/test_native_self_step.py: the same)
    states, calls = [], [0]
    resolve = sc._resolve

    def recorded(x, x_prev, colliders, true_start=None):
        calls[0] += 1
        if calls[0] > 5 * config.substeps and calls[0] % every == 0 and sc._list is not None:
            snapshot = copy.copy(sc)
            snapshot._list = copy.deepcopy(sc._list)
            snapshot.inv_mass = sc.inv_mass.copy()
            states.append((x.copy(), x_prev.copy(), snapshot))
        return resolve(x, x_prev, colliders, true_start)

    sc._resolve = recorded
    state = State.at_rest(model)
    state.v[:] = [-0.4, 0.0, -1.0]
    ground = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], 0.005, 1.0)]
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, ground)
    return states


@pytest.fixture(scope="module")
def fold_states(library):
    return _fold_states()


def test_the_fused_kernels_equal_their_twins_on_crumpled_states(library, fold_states):
    assert len(fold_states) > 10
    watched = 0
    for x, x_prev, sc in fold_states:
        select, native_pass = _kernels(library, sc, len(x))
        native, numpy = _twins(sc, select)
        got, want = native._candidates(x, x_prev), numpy._candidates(x, x_prev)
        _assert_same_candidates(got, want)
        _assert_same_lists(native._list, numpy._list)
        _assert_sorted_by_key(native)
        vt, ee, reach = want
        count = native_pass.setup(x, x_prev, vt, ee, reach, numpy.inv_mass, numpy.thickness,
                                  RECOVERY * numpy.thickness)
        pairs_vt, pairs_ee, side, target, approach_target, _ = numpy._watched(x, x_prev, vt, ee, reach)
        watched += count
        for a, b in zip(native_pass.pairs, (*pairs_vt, *pairs_ee)):
            np.testing.assert_array_equal(a, b)
        assert_same(native_pass.side, side)
        assert_same(native_pass.target, target)
        assert_same(native_pass.approach_target, approach_target)
        seen = _witnesses_seen(native, numpy, x, x_prev)
        for a, b in zip(*seen):
            np.testing.assert_array_equal(a, b)
    assert watched > 100  # the sheet does lie on itself in these states


def test_bad_input_is_refused(library):
    x, sc, _, _ = self_list_scene(1)
    n = len(x)
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    select, native_pass = _kernels(library, sc, n)
    x_prev = x.copy()
    select.select(x, x_prev, sc._list, sc.thickness)
    with pytest.raises(ValueError, match="triangles"):
        SelfSelect(library, tri + n, edges, n)
    with pytest.raises(ValueError, match="edges"):
        SelfSelect(library, tri, edges.astype(np.int32), n)
    with pytest.raises(ValueError, match="x"):
        select.select(x[:-1].copy(), x_prev, sc._list, sc.thickness)
    with pytest.raises(ValueError, match="x"):
        select.witnesses(x, np.asfortranarray(x_prev), sc._list)

    def broken(**changes):
        lst = dict(sc._list)
        lst.update(changes)
        return lst

    (v, t), (a, b) = sc._list["vt"], sc._list["ee"]
    s_v, s_t, s_e = sc._list["skins"]
    bad_lists = {
        "list vt\\[0\\]": broken(vt=(v + n, t)),
        "list vt\\[1\\]": broken(vt=(v, t[:-1])),
        "list ee\\[0\\]": broken(ee=(a.astype(np.float64), b)),
        "list ee\\[1\\]": broken(ee=(a, b + len(edges))),
        "list dist": broken(dist=sc._list["dist"][:-1]),
        "list x": broken(x=sc._list["x"].astype(np.float32)),
        "skin_v": broken(skins=(s_v[:-1], s_t, s_e)),
        "skin_t": broken(skins=(s_v, s_t.astype(np.float32), s_e)),
        "skin_e": broken(skins=(s_v, s_t, np.zeros((len(s_e), 2))[:, 0])),
    }
    for message, lst in bad_lists.items():
        with pytest.raises(ValueError, match=message):
            select.select(x, x_prev, lst, sc.thickness)
        with pytest.raises(ValueError, match=message):
            select.witnesses(x, x_prev, lst)
    vt, ee, reach = sc._candidates(x, x_prev)
    args = dict(x=x, x_prev=x_prev, vt=vt, ee=ee, reach=reach, inv_mass=sc.inv_mass, thickness=sc.thickness,
                recovery=RECOVERY * sc.thickness)
    assert native_pass.setup(**args) > 0
    bad_setups = {
        "v": dict(vt=(vt[0] - n, vt[1])),
        "t": dict(vt=(vt[0], vt[1][:-1])),
        "e1": dict(ee=(ee[0].astype(np.int32), ee[1])),
        "e2": dict(ee=(ee[0], ee[1] + len(edges))),
        "reach": dict(reach=reach[:-1]),
        "inv_mass": dict(inv_mass=sc.inv_mass.astype(np.float32)),
        "shape must be": dict(x_prev=x_prev[:, :2].copy()),
    }
    for message, change in bad_setups.items():
        with pytest.raises(ValueError, match=message):
            native_pass.setup(**{**args, **change})
    with pytest.raises(ValueError, match="x"):
        native_pass.friction(x.ravel(), x_prev, 0.3)


def test_setup_reads_the_candidates_of_its_selection_and_checks_any_other(library):
    x, sc, _, _ = self_list_scene(2)
    select, with_selection = _kernels(library, sc, len(x))
    _, without = _kernels(library, sc, len(x))
    native, _ = _twins(sc, select)
    x_prev = np.ascontiguousarray(x - np.random.default_rng(2).normal(scale=0.02, size=x.shape))
    vt, ee, reach = native._candidates(x, x_prev)
    assert select.last is not None and select.last[2] is reach
    args = (x, x_prev, vt, ee, reach, sc.inv_mass, sc.thickness, RECOVERY * sc.thickness)
    count = with_selection.setup(*args, selected=select)
    assert count == without.setup(*args) > 0
    for a, b in zip(with_selection.pairs + (with_selection.side, with_selection.target),
                    without.pairs + (without.side, without.target)):
        np.testing.assert_array_equal(a, b)
    # Candidates that are not the selection's last ones are checked.
    with pytest.raises(ValueError, match="v"):
        with_selection.setup(x, x_prev, (vt[0] + len(x), vt[1]), ee, reach, sc.inv_mass, sc.thickness, 0.0,
                             selected=select)
    select.witnesses(x, x_prev, native._list)  # any later call of the selection forgets its candidates
    assert select.last is None
