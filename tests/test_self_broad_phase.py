"""The Verlet lists of self-collision (solvers/collision/broad_phase/self_broad_phase.py) against brute force.

At every step of random motions of a sheet folded onto itself (a bump travelling over it, noise, the layers parting
and closing, and every few steps a few particles jumping farther than the skin), the candidates the lists give must
hold every vertex-triangle and edge-edge pair (sharing no vertex, not rest-close) whose exact distance is within its
reach, thickness + the most its two elements moved in the step: a search over all pairs finds them.
"""
import numpy as np
import pytest

from solvers import build_model, grid_cloth
from solvers.builder import grid_quads
from solvers.collision.narrow_phase.primitives import closest_points_segments, point_triangle_closest
from solvers.collision.broad_phase.self_pairs import _join_points, _self_join, _Stencils
from solvers.collision.response.self_contact import SelfCollision


def folded_sheet(n, rng):
    """An n x n sheet 1 m wide (both splits of its quads) folded over itself in a wave, 1 cm of noise: (model, x,
    side (n,) +-1 per half)."""
    V, E, T = grid_cloth(n, 1.0, 0.0)
    model = build_model(V, E, T, total_mass=1.0, quads=grid_quads(n))
    x = V.copy()
    side = np.where(V[:, 0] > 0.0, 1.0, -1.0)
    x[:, 2] = 0.15 * np.sin(3.0 * np.pi * (V[:, 0] + 0.5)) + 0.01 * rng.normal(size=len(x))
    x[:, 0] = 0.4 * np.sin(np.pi * (V[:, 0] + 0.5))  # folds the sheet onto itself along x
    return model, x, side


def brute_force(sc, x, motion):
    """Every pair the lists must give at x for per-particle step motions (n,): two sets, (v, t) and (e1, e2)."""
    tri, edges = sc.triangles, sc.edges
    n, m = len(x), len(tri)
    v, t = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
    keep = (tri[t] != v[:, None]).all(axis=1) & ~np.isin(v * m + t, sc.excluded_vt)
    v, t = v[keep], t[keep]
    bary, _ = point_triangle_closest(x[v], x[tri[t, 0]], x[tri[t, 1]], x[tri[t, 2]])
    d = np.linalg.norm(x[v] - np.einsum("kj,kjd->kd", bary, x[tri[t]]), axis=1)
    hit = d <= sc.thickness + motion[v] + motion[tri[t]].max(axis=1)
    vt = set(zip(v[hit].tolist(), t[hit].tolist()))
    e1, e2 = np.triu_indices(len(edges), 1)
    A, B = edges[e1], edges[e2]
    keep = (A[:, :, None] != B[:, None, :]).all(axis=(1, 2)) & ~np.isin(e1 * len(edges) + e2, sc.excluded_ee)
    e1, e2, A, B = e1[keep], e2[keep], A[keep], B[keep]
    s, u, _ = closest_points_segments(x[A[:, 0]], x[A[:, 1]], x[B[:, 0]], x[B[:, 1]])
    d = np.linalg.norm(x[A[:, 0]] + s[:, None] * (x[A[:, 1]] - x[A[:, 0]]) - x[B[:, 0]] - u[:, None] * (x[B[:, 1]] - x[B[:, 0]]),
                       axis=1)
    hit = d <= sc.thickness + motion[A].max(axis=1) + motion[B].max(axis=1)
    return vt, set(zip(e1[hit].tolist(), e2[hit].tolist()))


def candidates_holding_every_pair(sc, x, x_prev, step):
    """``sc._candidates`` for the step x_prev -> x, asserted to hold every pair within reach (``brute_force``):
    returns ((v, t), (e1, e2), the number of pairs within reach)."""
    (v, t), (e1, e2), _ = sc._candidates(x, x_prev)
    got_vt, got_ee = set(zip(v.tolist(), t.tolist())), set(zip(e1.tolist(), e2.tolist()))
    step_motion = (x - x_prev) - (x - x_prev).mean(axis=0)
    want_vt, want_ee = brute_force(sc, x, np.linalg.norm(step_motion, axis=1))
    assert want_vt <= got_vt and want_ee <= got_ee, (step, want_vt - got_vt, want_ee - got_ee)
    return (v, t), (e1, e2), len(want_vt) + len(want_ee)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_verlet_lists_hold_every_pair_within_reach_on_random_motions(seed):
    rng = np.random.default_rng(seed)
    model, x, side = folded_sheet(9, rng)
    sc = SelfCollision(model, thickness=0.02)
    skin = sc.skin
    found = 0
    for step in range(40):
        x_prev = x.copy()
        centre = np.array([0.4 * np.cos(0.3 * step), 0.05 * step - 0.5, 0.0])
        bump = np.exp(-np.sum((x - centre) ** 2, axis=1) / 0.02)
        x = x + 0.01 * bump[:, None] * np.array([0.3, 0.2, 1.0]) + 0.001 * rng.normal(size=x.shape)
        x[:, 2] += 0.004 * side * np.cos(0.4 * step)  # the layers part and close again
        if step % 7 == 3:
            jump = rng.choice(len(x), 3, replace=False)
            x[jump] += rng.normal(size=(3, 3)) * 1.5 * skin
        (v, t), (e1, e2), within = candidates_holding_every_pair(sc, x, x_prev, step)
        found += within
    assert found > 100  # the folded layers did come within reach of each other
    assert 1 < sc.rebuilds < 40, sc.rebuilds  # lists were reused, and rebuilt when the motion asked for it


def test_a_few_particles_outrunning_their_skins_grow_them_and_the_lists_still_hold_every_pair():
    """As above on a finer sheet, with one particle at a time jumping farther than its skin: the elements that ran out
    get a larger skin and their pairs are added (``_grow``) instead of a rebuild of the whole list, and the candidates
    still hold every pair within reach (a search over all pairs)."""
    rng = np.random.default_rng(7)
    model, x, side = folded_sheet(21, rng)
    sc = SelfCollision(model, thickness=0.01)
    found = 0
    for step in range(12):
        x_prev = x.copy()
        x = x + 0.0005 * rng.normal(size=x.shape)
        x[:, 2] += 0.002 * side * np.cos(0.4 * step)
        if step % 3 == 2:
            jump = rng.choice(len(x))
            x[jump] += rng.normal(size=3) * 2.0 * sc.skin
        (v, t), (e1, e2), within = candidates_holding_every_pair(sc, x, x_prev, step)
        found += within
        keys = np.concatenate([v * len(sc.triangles) + t, -1 - (e1 * len(sc.edges) + e2)])
        assert len(np.unique(keys)) == len(keys)  # no pair listed twice
    assert found > 100
    assert sc.grown >= 3 and sc.rebuilds == 1, (sc.grown, sc.rebuilds)


def test_a_fast_corner_gets_its_own_skin_and_the_list_outlives_its_motion():
    """One corner of a resting sheet moving fast: its elements carry a skin of SKIN_MOTION / 2 steps of its motion,
    the others keep half the smallest, and the list outlives several steps of the corner (one skin for all, set by
    the corner, would either be rebuilt every step or widen every element's)."""
    rng = np.random.default_rng(5)
    model, x, _ = folded_sheet(9, rng)
    sc = SelfCollision(model, thickness=0.02)
    corner = 0
    x_prev = x.copy()
    x = x.copy()
    x[corner] += np.array([0.0, 0.0, 0.3 * sc.skin])
    sc._candidates(x, x_prev)
    s_v, _, s_e = sc._list["skins"]
    assert s_v[corner] > 1.5 * sc.skin and np.all(np.delete(s_v, corner) == 0.5 * sc.skin)
    assert np.count_nonzero(s_e > 0.5 * sc.skin) == np.count_nonzero((sc.edges == corner).any(axis=1))
    rebuilds = sc.rebuilds
    for _ in range(3):
        x_prev = x.copy()
        x = x.copy()
        x[corner] += np.array([0.0, 0.0, 0.3 * sc.skin])
        sc._candidates(x, x_prev)
    assert sc.rebuilds == rebuilds


def test_two_layers_closing_within_their_skins_in_one_step_are_still_found():
    """Two sheets 2.2 skins (+ thickness) apart at the build, not listed, each moving 0.9 skin towards the other in
    one step: each has moved less than its skin, but its motion in the step counts too (their reach is thickness +
    1.8 skins, they end 0.4 skin + thickness apart), so the lists are rebuilt and the pairs found."""
    n = 4
    V, E, T = grid_cloth(n, 1.0, 0.0)
    count = len(V)
    thickness, skin = 0.01, 0.02
    x = np.vstack([V, V + np.array([0.0, 0.0, thickness + 2.2 * skin])])
    model = build_model(x, np.vstack([E, E + count]), np.vstack([T, T + count]), total_mass=1.0,
                        quads=np.vstack([grid_quads(n), grid_quads(n) + count]))
    sc = SelfCollision(model, thickness=thickness, skin=skin)
    sc._candidates(x, x)  # the lists at rest: the layers are too far apart to be listed
    assert len(sc._list["dist"]) == 0
    x_prev, x = x, x.copy()
    x[:count, 2] += 0.9 * sc.skin
    x[count:, 2] -= 0.9 * sc.skin
    (v, t), (e1, e2), _ = sc._candidates(x, x_prev)
    want_vt, want_ee = brute_force(sc, x, np.full(len(x), 0.9 * sc.skin))
    assert want_vt and want_vt <= set(zip(v.tolist(), t.tolist()))
    assert want_ee <= set(zip(e1.tolist(), e2.tolist()))


def test_the_joins_by_size_classes_find_exactly_the_overlapping_spheres():
    """Spheres of sizes spread over two orders of magnitude (most small, a few large: fast elements' skins): the
    joins in size classes return exactly the pairs a search over all pairs finds, each once."""
    rng = np.random.default_rng(7)
    centre = rng.uniform(0.0, 1.0, (400, 3))
    radius = np.where(rng.random(400) < 0.9, rng.uniform(0.001, 0.02, 400), rng.uniform(0.02, 0.2, 400))
    points = rng.uniform(0.0, 1.0, (300, 3))
    point_radius = np.where(rng.random(300) < 0.9, 0.01, rng.uniform(0.01, 0.15, 300))
    reach = 0.01
    d = np.linalg.norm(centre[:, None] - centre[None], axis=2)
    i, j = np.nonzero(np.triu(d <= reach + radius[:, None] + radius[None], 1))
    got = _self_join(centre, radius, reach)
    assert sorted(zip(*got)) == sorted(zip(i.tolist(), j.tolist()))
    d = np.linalg.norm(centre[:, None] - points[None], axis=2)
    i, j = np.nonzero(d <= reach + radius[:, None] + point_radius[None])
    got = _join_points(centre, radius, points, point_radius, reach)
    assert sorted(zip(*got)) == sorted(zip(i.tolist(), j.tolist()))


def test_the_candidates_come_in_one_order_whatever_the_lists_history():
    """The same positions give the response the same pairs in the same order from a list built just now and from one
    built steps ago (its Jacobi sums then depend on the pairs alone)."""
    rng = np.random.default_rng(11)
    model, x0, _ = folded_sheet(9, rng)
    old, fresh = SelfCollision(model, thickness=0.02), SelfCollision(model, thickness=0.02)
    x = x0.copy()
    old._candidates(x, x)
    for _ in range(3):
        x_prev, x = x, x + 0.0005 * rng.normal(size=x.shape)
        got_old = old._candidates(x, x_prev)
    got_fresh = fresh._candidates(x, x_prev)
    assert old.rebuilds == 1

    def watched(sc, candidates):
        """The pairs the response acts on, in its order: the candidates within their reach (exact distance)."""
        (v, t), (e1, e2), reach = candidates
        keep = _Stencils(x, (v, t), (e1, e2), sc.triangles, sc.edges).dist <= reach
        k = len(v)
        return v[keep[:k]], t[keep[:k]], e1[keep[k:]], e2[keep[k:]]

    got_old, got_fresh = watched(old, got_old), watched(fresh, got_fresh)
    assert len(got_old[0]) + len(got_old[2]) > 20
    for a, b in zip(got_old, got_fresh):
        assert np.array_equal(a, b)
