"""Lagged friction between the two sides of point-triangle and edge-edge pairs
(solvers/collision/barriers/pair_friction.py): its weights reproduce the closest points, its gradient and Hessian are
the derivatives of its value, its Hessian is PSD, and it only resists relative tangential slip."""
import numpy as np
import pytest

from solvers.collision.barriers.pair_friction import PairFriction, closest_point_weights
from solvers.collision.narrow_phase.primitives import edge_edge_distance_squared, point_triangle_distance_squared


def pairs(edge_edge, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(8, 3))
    stencil = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    distance = edge_edge_distance_squared if edge_edge else point_triangle_distance_squared
    D, g, _ = distance(*(x[stencil[:, k]] for k in range(4)))
    return x, stencil, D, g


@pytest.mark.parametrize("edge_edge", [False, True])
def test_weights_give_the_vector_between_the_closest_points(edge_edge):
    x, stencil, D, g = pairs(edge_edge)
    weights, r = closest_point_weights(g, edge_edge)
    assert np.allclose(np.einsum("kj,kjd->kd", weights, x[stencil]), r, atol=1e-12)
    assert np.allclose(np.einsum("kd,kd->k", r, r), D)
    assert np.allclose(weights.sum(axis=1), 0.0, atol=1e-12)  # a common translation does not slip


@pytest.mark.parametrize("edge_edge", [False, True])
@pytest.mark.parametrize("slip", [3e-4, 0.3])  # within the mollifier's eps (sticking) and beyond it (sliding)
def test_gradient_and_hessian_are_the_derivatives_and_psd(edge_edge, slip):
    x, stencil, _, g = pairs(edge_edge)
    weights, r = closest_point_weights(g, edge_edge)
    friction = PairFriction(stencil, weights, r, np.array([2.0, 5.0]), x, 0.4, 1e-3)
    rng = np.random.default_rng(7)
    y = x + slip * rng.normal(size=x.shape)
    h = 1e-7 * max(slip, 1e-3)
    numeric = np.zeros_like(y)
    for i in range(len(y)):
        for d in range(3):
            e = np.zeros_like(y)
            e[i, d] = h
            numeric[i, d] = (friction.value(y + e) - friction.value(y - e)) / (2 * h)
    assert np.allclose(friction.gradient(y), numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())
    H = friction.hessian(y)
    dense = np.zeros((24, 24))
    for row, col, block in zip(H.rows, H.cols, H.blocks):
        dense[3 * row:3 * row + 3, 3 * col:3 * col + 3] += block
    numeric_h = np.zeros((24, 24))
    for i in range(24):
        e = np.zeros(24)
        e[i] = h
        numeric_h[:, i] = ((friction.gradient(y + e.reshape(-1, 3)) - friction.gradient(y - e.reshape(-1, 3))) / (2 * h)).ravel()
    assert np.allclose(dense, numeric_h, rtol=1e-4, atol=1e-5 * np.abs(numeric_h).max())
    assert np.linalg.eigvalsh(dense).min() > -1e-9 * np.abs(dense).max()


def test_no_force_for_a_common_motion_or_a_normal_approach():
    x, stencil, _, g = pairs(False)
    weights, r = closest_point_weights(g, False)
    friction = PairFriction(stencil, weights, r, np.array([2.0, 5.0]), x, 0.4, 1e-3)
    assert np.abs(friction.gradient(x + [0.3, -0.2, 0.1])).max() < 1e-12  # the pair moves together
    normal = r / np.linalg.norm(r, axis=1)[:, None]
    y = x.copy()
    y[stencil[:, 0]] += 0.05 * normal  # the point moves straight away from the triangle
    assert np.abs(friction.gradient(y)).max() < 1e-12
