"""The fail-safe of cloth self-collision (solvers/collision/response/impact_zones.py) on its own, without the Jacobi
response.

Two small sheets as one body are driven through each other in one step; the fail-safe alone must leave no edge
crossing a triangle (counted exactly over every pair, ``count_self_intersections``), move each impact zone rigidly
(one translation per zone) by its mass-weighted mean motion (momentum kept, no kinetic energy gained), and leave the
particles outside the zones alone. Its search for new crossings (the Verlet-list witnesses) is checked against the
exact crossings of all pairs.
"""
import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components
from scipy.sparse import coo_matrix

from solvers import build_model, grid_cloth
from solvers.collision.narrow_phase.crossings import count_self_intersections, self_intersecting_pairs
from solvers.collision.response.self_contact import SelfCollision


def two_sheets(n=4, size=0.3, gap=0.02):
    """Two n x n sheets (one body), the upper ``gap`` [m] above the lower, shifted by a third of a cell: (model, x)."""
    V, E, T = grid_cloth(n, size, 0.0)
    count = len(V)
    upper = V + np.array([size / (n - 1) / 3.0, size / (n - 1) / 3.0, gap])
    V2 = np.vstack([V, upper])
    mass = np.concatenate([np.full(count, 1.0), np.full(count, 3.0)])  # unequal, so the mean is a real weighting
    model = build_model(V2, np.vstack([E, E + count]), np.vstack([T, T + count]), total_mass=float(mass.sum()),
                        mass_weights=mass)
    return model, V2, count


def driven_through(x_prev, count, depth, rng):
    """The step's end: the lower sheet's middle pushed up and the upper sheet's pushed down past each other by
    ``depth`` [m] each (a bump, so only part of each sheet crosses), plus a common drift and a little noise."""
    x = x_prev.copy()
    centre = x_prev[:count, :2].mean(axis=0)
    r2 = np.sum((x_prev[:, :2] - centre) ** 2, axis=1)
    bump = np.exp(-r2 / (2.0 * 0.06**2))
    x[:count, 2] += depth * bump[:count]
    x[count:, 2] -= depth * bump[count:]
    return x + np.array([0.01, -0.02, 0.005]) + 1e-3 * rng.normal(size=x.shape)


def momentum(model, x, x_prev):
    return (model.mass[:, None] * (x - x_prev)).sum(axis=0)


def kinetic(model, x, x_prev):
    d = x - x_prev
    return 0.5 * float(np.sum(model.mass * np.einsum("ij,ij->i", d, d)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fail_safe_leaves_no_crossing_and_moves_its_zones_rigidly_with_momentum_kept(seed):
    rng = np.random.default_rng(seed)
    model, x_prev, count = two_sheets()
    T = model.triangle_indices
    collision = SelfCollision(model, thickness=0.005, friction=0.0)
    x = driven_through(x_prev, count, 0.03, rng)
    crossed = count_self_intersections(x, T)
    assert crossed > 10  # the sheets went through each other: without the fail-safe this is what the step leaves
    x_start, before = x_prev.copy(), x.copy()
    collision._candidates(x, x_prev)  # the Verlet list the fail-safe reads
    p0, e0 = momentum(model, x, x_prev), kinetic(model, x, x_prev)
    collision._fail_safe(x, x_prev, x_start)
    assert count_self_intersections(x, T) == 0, crossed
    assert collision.zones == 1
    assert np.allclose(momentum(model, x, x_prev), p0, rtol=0, atol=1e-12)
    assert kinetic(model, x, x_prev) <= e0 * (1.0 + 1e-12)
    # Rigid zones: every moved particle's displacement from the start is its zone's one translation, and the zones
    # are the connected groups of moved particles sharing a crossing pair's stencil (moved = x changed).
    moved = np.nonzero(np.any(x != before, axis=1))[0]
    assert 0 < len(moved) < len(x)
    untouched = np.setdiff1d(np.arange(len(x)), moved)
    assert np.array_equal(x[untouched], before[untouched]) and np.array_equal(x_prev[untouched], x_start[untouched])
    assert np.array_equal(x_prev[moved], x_start[moved])
    shift = x[moved] - x_start[moved]
    # Group the moved particles by their shift: each group moved by its own mass-weighted mean motion over the step.
    _, group = np.unique(np.round(shift, 12), axis=0, return_inverse=True)
    group = group.ravel()
    for g in range(group.max() + 1):
        members = moved[group == g]
        mean = (model.mass[members, None] * (before[members] - x_start[members])).sum(axis=0) / model.mass[members].sum()
        assert np.allclose(shift[group == g], mean, rtol=0, atol=1e-12)
    # Each group is a union of whole mesh-connected pieces of the crossing region, never a single stray particle.
    edges = model.triangle_indices[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(len(x), len(x)))
    _, sheet = connected_components(graph, directed=False)
    assert len(np.unique(sheet[moved])) == 2  # the zones hold particles of both sheets


@pytest.mark.parametrize("seed", [3, 4, 5, 6])
def test_the_new_crossings_found_are_exactly_those_of_all_pairs(seed):
    # The fail-safe's witness search (listed pairs, swept through the step) against the exact test of every
    # edge-triangle pair: crossing at x, not at x_start.
    rng = np.random.default_rng(seed)
    model, x_prev, count = two_sheets(n=5)
    T = model.triangle_indices
    collision = SelfCollision(model, thickness=0.005, friction=0.0)
    x = driven_through(x_prev, count, rng.uniform(0.015, 0.04), rng)
    collision._candidates(x, x_prev)
    edges, now = self_intersecting_pairs(x, T)
    _, then = self_intersecting_pairs(x_prev, T)
    expected = set(map(tuple, now.tolist())) - set(map(tuple, then.tolist()))
    assert len(expected) > 10 and np.array_equal(edges, collision.edges)
    found = collision._new_crossings(x, x_prev)
    assert set(map(tuple, found.tolist())) == expected
