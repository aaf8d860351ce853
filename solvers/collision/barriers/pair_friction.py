"""Lagged IPC friction between the two sides of point-triangle and edge-edge pairs (Li et al. 2020, section 5).

For each pair in contact at the step's start, the closest points are p = sum_k w_k x_k over the pair's four
particles with weights w (point-triangle: 1, -b_1, -b_2, -b_3, b the closest point's barycentric coordinates;
edge-edge: 1 - s, s, -(1 - t), -t), so r = sum_k w_k x_k is the vector between the closest points. With its normal
n = r / |r|, the tangent projector T = I - n n^T, the barrier's normal force lambda = -b'(d) and the relative slip
u = T sum_k w_k (x_k - x^n_k), all but u held at the step's start (lagged, as ``friction.ColliderFriction``):

    D(x) = sum_pairs mu lambda f0(|u|)  [J]

with f0 the mollified slip of ``energies.friction``. Per pair the Hessian is W^T K W with W = [w_0 I ... w_3 I] and K
the PSD 3x3 of the mollified slip, so it is PSD without projection. The weights come from the squared distance's
gradient g (``primitives``): g_k = 2 w_k r, with r = g_0 / 2 (point-triangle, w_0 = 1) or (g_0 + g_1) / 2
(edge-edge, w_0 + w_1 = 1), so w_k = g_k . r / (2 |r|^2).
"""
import numpy as np

from ...energies.base import BlockHessian, element_stencil, scatter
from ...energies.friction import LaggedFriction


def closest_point_weights(g: np.ndarray, edge_edge: bool):
    """(weights (k, 4), r (k, 3)) of pairs from their squared distance's gradient g (k, 12) (module docstring)."""
    g = g.reshape(-1, 4, 3)
    r = 0.5 * (g[:, 0] + g[:, 1]) if edge_edge else 0.5 * g[:, 0]
    D = np.maximum(np.einsum("kd,kd->k", r, r), 1e-300)
    return np.einsum("kjd,kd->kj", g, r) / (2.0 * D)[:, None], r


class PairFriction(LaggedFriction):
    """Friction of pairs in contact at x_start: stencil (k, 4) particles, weights (k, 4) and r (k, 3) as
    ``closest_point_weights``, normal_force (k,) lambda [N], x_start (n, 3) [m], mu, eps [m] the slip below which
    friction sticks. Its Hessian's blocks couple the pair's particles (``coupled``)."""

    coupled = True

    def __init__(self, stencil, weights, r, normal_force, x_start, mu: float, eps: float):
        self.stencil = np.asarray(stencil, np.int64).reshape(-1, 4)
        self.weights = np.asarray(weights, float)
        normal = r / np.maximum(np.linalg.norm(r, axis=1), 1e-300)[:, None]
        self.T = np.eye(3)[None] - normal[:, :, None] * normal[:, None, :]
        self.weight = float(mu) * np.asarray(normal_force, float)
        self.x_start = np.asarray(x_start, float).copy()
        self.eps = float(eps)
        self._rows, self._cols = element_stencil(self.stencil)

    def _slip(self, x):
        moved = x[self.stencil] - self.x_start[self.stencil]  # (k, 4, 3)
        u = np.einsum("kij,kj->ki", self.T, np.einsum("kj,kjd->kd", self.weights, moved))
        return u, np.sqrt(np.einsum("ij,ij->i", u, u))

    def gradient(self, x):
        return scatter(self.stencil, self.weights[:, :, None] * self.slip_force(x)[:, None, :], len(x))

    def hessian(self, x, project=True):
        K = self.slip_blocks(x)  # (k, 3, 3)
        ww = self.weights[:, :, None] * self.weights[:, None, :]  # (k, 4, 4), stencil order: row-major
        blocks = (ww[:, :, :, None, None] * K[:, None, None]).reshape(-1, 3, 3)
        return BlockHessian(self._rows, self._cols, blocks)
