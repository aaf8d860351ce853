"""Continuous collision detection (solvers/collision/narrow_phase/ccd.py) on the public CCD benchmark's queries (Wang et
al. 2021, tests/data/ccd-queries, exact ground truth) and on analytic cases."""
import pathlib
import time

import numpy as np
import pytest

from solvers.collision import edge_edge_ccd, point_triangle_ccd
from solvers.collision.narrow_phase.ccd import TOLERANCE

DATA = pathlib.Path(__file__).parent / "data" / "ccd-queries"


def load_queries(path):
    """The queries of one benchmark file: (points (n, 8, 3) [start four, end four], truth (n,) bool).

    Rows are x, y, z as numerator/denominator pairs and the truth; converting each to a float rounds twice, within
    an ulp or two of the exact rational, far below ccd.TOLERANCE."""
    raw = np.loadtxt(path, delimiter=",", dtype=float).reshape(-1, 8, 7)
    return raw[:, :, 0:6:2] / raw[:, :, 1:6:2], raw[:, 0, 6] == 1


@pytest.mark.parametrize("kind, ccd", [("vertex-face", point_triangle_ccd), ("edge-edge", edge_edge_ccd)])
def test_benchmark_queries_have_no_false_negatives(kind, ccd):
    files = sorted(DATA.glob(f"*/{kind}/*.csv"))
    assert len(files) >= 10
    queries = touching = false_positives = 0
    seconds = 0.0
    for path in files:
        points, truth = load_queries(path)
        start = time.perf_counter()
        toi = ccd(*(points[:, i] for i in range(8)))
        seconds += time.perf_counter() - start
        assert toi.shape == truth.shape and toi.dtype == np.float64
        hit = np.isfinite(toi)
        assert np.all((toi[hit] >= 0.0) & (toi[hit] <= 1.0))
        missed = np.flatnonzero(truth & ~hit)
        assert not len(missed), f"{path.relative_to(DATA)}: false negatives at queries {missed[:10]}"
        queries += len(truth)
        touching += int(truth.sum())
        false_positives += int(np.sum(~truth & hit))
    print(f"\n{kind}: {queries} queries ({touching} touching), false positives {false_positives} of "
          f"{queries - touching}, {1e6 * seconds / queries:.1f} us per query")
    assert touching > 0 and queries - touching > 0


def test_point_falling_onto_still_triangle():
    """Time of impact = gap / speed, never late and early by at most TOLERANCE / speed."""
    rng = np.random.default_rng(1)
    n = 200
    a, b, c = np.array([-1.0, -1.0, 0.0]), np.array([2.0, -1.0, 0.0]), np.array([-1.0, 2.0, 0.0])
    tri = [np.tile(v, (n, 1)) for v in (a, b, c)]
    gap = rng.uniform(0.01, 1.0, n)
    speed = rng.uniform(0.02, 5.0, n)  # over the step
    p0 = np.column_stack([rng.uniform(-0.5, 0.5, (n, 2)), gap])
    p1 = p0 - np.column_stack([np.zeros((n, 2)), speed])
    toi = point_triangle_ccd(p0, *tri, p1, *tri)
    exact = gap / speed
    touches = exact <= 1.0
    clear = exact > 1.0 + TOLERANCE / speed  # ends more than the tolerance above the triangle
    assert touches.sum() > 50 and clear.sum() > 20
    assert np.all(np.isinf(toi[clear]))
    assert np.all(toi[touches] <= exact[touches] + 1e-12)
    assert np.all(toi[touches] >= exact[touches] - TOLERANCE / speed[touches] - 1e-12)
    # the triangle moving up instead of the point down: the same times (only the relative motion counts)
    lift = p1 - p0
    toi_moving = point_triangle_ccd(p0, *tri, p0, *(v - lift for v in tri))
    assert np.array_equal(np.isinf(toi_moving), np.isinf(toi))
    assert np.all(np.abs(toi_moving[touches] - toi[touches]) <= TOLERANCE / speed[touches] + 1e-12)


def test_point_touching_only_at_the_end_of_the_step_is_a_hit():
    n = 3
    tri = [np.tile(v, (n, 1)) for v in ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])]
    p0 = np.array([[0.2, 0.2, 0.5], [0.0, 0.0, 1.0], [0.5, 0.5, 0.25]])  # interior, corner, on the long edge
    p1 = p0 * [1.0, 1.0, 0.0]
    toi = point_triangle_ccd(p0, *tri, p1, *tri)
    assert np.all(np.isfinite(toi)) and np.all(toi <= 1.0) and np.all(toi > 0.99)


def test_coplanar_point_sliding_into_triangle_edge():
    """A point in the triangle's plane moving into its edge: distance reaches 0 at t = 0.5 (degenerate for
    root-finding CCD)."""
    tri = [np.array([v]) for v in ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])]
    toi = point_triangle_ccd(np.array([[0.25, -0.5, 0.0]]), *tri, np.array([[0.25, 0.5, 0.0]]), *tri)
    assert 0.5 - TOLERANCE <= toi[0] <= 0.5
    # the same motion one millimetre above the plane misses
    miss = point_triangle_ccd(np.array([[0.25, -0.5, 1e-3]]), *tri, np.array([[1.5, -0.5, 1e-3]]), *tri)
    assert np.isinf(miss[0])


def test_parallel_edges_sliding_past_each_other():
    """Parallel edges (the degenerate case of the line-line distance): sliding along their common line they touch
    end to end; sliding side by side at a distance they never do."""
    n = 1
    a0, b0 = np.array([[0.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    c0, d0 = np.array([[2.0, 0.0, 0.0]]), np.array([[3.0, 0.0, 0.0]])
    shift = np.array([[-3.0, 0.0, 0.0]])
    toi = edge_edge_ccd(a0, b0, c0, d0, a0, b0, c0 + shift, d0 + shift)
    assert 1.0 / 3.0 - TOLERANCE <= toi[0] <= 1.0 / 3.0  # c reaches b after moving 1 of 3
    lifted = np.array([[0.0, 0.01, 0.0]])
    miss = edge_edge_ccd(a0, b0, c0 + lifted, d0 + lifted, a0, b0, c0 + lifted + shift, d0 + lifted + shift)
    assert np.isinf(miss[0])
    # overlapping parallel edges approaching sideways: touch when the gap closes
    side = edge_edge_ccd(a0, b0, a0 + [[0.5, 0.2, 0.0]], b0 + [[0.5, 0.2, 0.0]],
                         a0, b0, a0 + [[0.5, -0.2, 0.0]], b0 + [[0.5, -0.2, 0.0]])
    assert 0.5 - TOLERANCE / 0.4 <= side[0] <= 0.5
    assert n == len(toi)


def test_crossing_edges_and_a_near_miss():
    a0, b0 = np.array([[-1.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    c0, d0 = np.array([[0.0, -1.0, 1.0]]), np.array([[0.0, 1.0, 1.0]])
    down = np.array([[0.0, 0.0, -2.0]])
    toi = edge_edge_ccd(a0, b0, c0, d0, a0, b0, c0 + down, d0 + down)
    assert 0.5 - TOLERANCE / 2.0 <= toi[0] <= 0.5
    # stopping 1 micrometre short of the other edge (plus the tolerance) is a miss
    short = np.array([[0.0, 0.0, -(1.0 - 2 * TOLERANCE)]])
    assert np.isinf(edge_edge_ccd(a0, b0, c0, d0, a0, b0, c0 + short, d0 + short)[0])


def test_min_distance_hits_earlier():
    rng = np.random.default_rng(2)
    n = 100
    tri = [np.tile(v, (n, 1)) for v in ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])]
    p0 = np.column_stack([rng.uniform(0.1, 0.4, (n, 2)), rng.uniform(0.2, 0.5, n)])
    p1 = p0 * [1.0, 1.0, -1.0]
    toi0 = point_triangle_ccd(p0, *tri, p1, *tri)
    toi1 = point_triangle_ccd(p0, *tri, p1, *tri, min_distance=0.05)
    assert np.all(np.isfinite(toi0)) and np.all(toi1 < toi0)
    speed = 2.0 * p0[:, 2]
    assert np.allclose(toi1, (p0[:, 2] - 0.05) / speed, atol=TOLERANCE / speed.min())
    # a pass at 0.1 above the triangle: a miss with no margin, a hit with a margin of 0.2
    p0 = np.column_stack([rng.uniform(0.1, 0.4, (n, 2)), np.full(n, 0.1)])
    p1 = p0 + [2.0, 2.0, 0.0]
    assert np.all(np.isinf(point_triangle_ccd(p0, *tri, p1, *tri)))
    assert np.all(point_triangle_ccd(p0, *tri, p1, *tri, min_distance=0.2) == 0.0)


def test_no_relative_motion_and_empty_input():
    tri = [np.array([v]) for v in ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])]
    p = np.array([[0.2, 0.2, 0.3]])
    move = np.array([[5.0, -2.0, 7.0]])
    assert np.isinf(point_triangle_ccd(p, *tri, p + move, *(v + move for v in tri))[0])
    empty = np.zeros((0, 3))
    assert point_triangle_ccd(*[empty] * 8).shape == (0,)
    assert edge_edge_ccd(*[empty] * 8).shape == (0,)


@pytest.mark.parametrize("which", ["point-triangle", "edge-edge"])
def test_distance_hessians_match_finite_differences(which):
    """The closed-form gradients and Hessians of the squared distances (primitives.py) against central differences
    of the gradient, on random pairs (all distance types occur); ipctk checks them too (test_ccd_reference.py)."""
    from solvers.collision.narrow_phase.primitives import edge_edge_distance_squared, point_triangle_distance_squared
    f = point_triangle_distance_squared if which == "point-triangle" else edge_edge_distance_squared
    x = np.random.default_rng(9).normal(size=(4, 200, 3))
    d2, grad, hess = f(*x)
    h = 1e-6
    flat = x.transpose(1, 0, 2).reshape(-1, 12)
    for j in range(12):  # 12 coordinates, each vectorized over all pairs
        step = np.zeros(12)
        step[j] = h
        up = f(*(flat + step).reshape(-1, 4, 3).transpose(1, 0, 2))
        down = f(*(flat - step).reshape(-1, 4, 3).transpose(1, 0, 2))
        assert np.allclose((up[0] - down[0]) / (2 * h), grad[:, j], atol=1e-6)
        assert np.allclose((up[1] - down[1]) / (2 * h), hess[:, :, j], atol=1e-4, rtol=1e-4)
