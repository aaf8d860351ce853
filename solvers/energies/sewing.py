"""Sewing springs: a loose edge (in no face) pulls its two ends together to zero length, with a force of at most F.

E(l) = 1/2 k l^2                 for l <= F / k,
       F l - F^2 / (2 k)         beyond                                      [J],   l = |x_i - x_j|

(a zero-rest-length Hooke spring of stiffness k [N/m] whose pull is capped at F [N]: Huber's function of l). It is
convex in d = x_i - x_j: the Hessian in d is k I inside the cap and (F / l)(I - n n^T) beyond, both PSD, so no
projection is needed and Newton / implicit Euler see its exact curvature. F = inf: no cap (the setting's 0).
"""
import numpy as np

from .springs import _EdgeEnergy


class SewingSprings(_EdgeEnergy):
    """Sewing springs on ``edge_indices`` (e, 2) with stiffness k [N/m] and force cap ``max_force`` [N] (inf: none)."""

    def __init__(self, edge_indices, k, max_force=np.inf):
        edges = np.asarray(edge_indices, np.int64).reshape(-1, 2)
        super().__init__(edges, np.zeros(len(edges)), k)
        self.max_force = float(max_force)
        self.reach = self.max_force / self.k
        """l [m] beyond which the pull is capped, per edge."""

    def pull(self, length):
        """The force magnitude [N] at lengths (e,): min(k l, F)."""
        return np.minimum(self.k * length, self.max_force)

    def value(self, x):
        _, length = self._d(x)
        if not np.isfinite(self.max_force):
            return 0.5 * float(np.sum(self.k * length**2))
        inside = length <= self.reach
        e = np.where(inside, 0.5 * self.k * length**2, self.max_force * (length - 0.5 * self.reach))
        return float(np.sum(e))

    def gradient(self, x):
        d, length = self._d(x)
        scale = np.where(length <= self.reach, self.k, self.max_force / np.maximum(length, 1e-300))
        return self._incidence(len(x)) @ (scale[:, None] * d)

    def _eigenvalues(self, length):
        inside = length <= self.reach
        return np.where(inside, self.k, 0.0), np.where(inside, self.k, self.max_force / np.maximum(length, 1e-300))
