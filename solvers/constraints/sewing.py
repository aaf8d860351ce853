"""Seam constraints for PBD/XPBD: C = |x_i - x_j| (rest length 0) with compliance 1 / k, force capped at F.

The XPBD multiplier of a step is the impulse-like lambda with force lambda / dt^2 (Macklin et al. 2016), so the cap
is |lambda| <= F dt^2: each update dlambda = (-C - alpha lambda) / (w_i + w_j + alpha) is cut back so that the
accumulated lambda stays within it. With no cap (F = inf) this is a zero-length distance constraint. Compliant in
PBD too (``always_compliant``): a seam is a force of the cloth's stiffness, not a hard weld.
"""
import numpy as np

from .distance import AlphaCache


class SewingConstraints:
    """indices (m, 2) particle pairs; inv_mass (n,) [1/kg]; compliance 1 / k [m/N]; max_force F [N] (inf: none)."""

    always_compliant = True

    def __init__(self, indices, inv_mass, compliance: float, max_force=np.inf):
        self.indices = np.asarray(indices, np.int64).reshape(-1, 2)
        self.inv_mass = inv_mass
        self.compliance = float(compliance)
        self.max_force = float(max_force)
        self.i, self.j = self.indices[:, 0].copy(), self.indices[:, 1].copy()
        self.flat_indices = self.indices.ravel()
        self.w_i, self.w_j = inv_mass[self.i], inv_mass[self.j]
        self.w_sum = self.w_i + self.w_j
        self._alpha_cache = AlphaCache()
        self._dt = None

    def __len__(self):
        return len(self.indices)

    def alpha(self, dt: float):
        self._dt = float(dt)  # the cap is a force: the step's length turns it into a multiplier bound
        return self._alpha_cache.alpha(self.compliance, dt)

    def subset(self, select) -> "SewingConstraints":
        return SewingConstraints(self.indices[select], self.inv_mass, self.compliance, self.max_force)

    def corrections(self, x, alpha, lam):
        """dx (m, 2, 3) and dlambda (m,) of one XPBD update, the accumulated lambda kept >= -F dt^2."""
        d = x[self.i] - x[self.j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        denom = self.w_sum + alpha
        dlam = np.divide(-(length + alpha * lam), denom, out=np.zeros_like(length), where=denom > 0.0)
        if np.isfinite(self.max_force) and self._dt is not None:
            dlam = np.maximum(lam + dlam, -self.max_force * self._dt**2) - lam
        scaled = np.where(length > 1e-12, dlam / np.maximum(length, 1e-12), 0.0)[:, None] * d
        dx = np.empty((len(d), 2, 3))
        dx[:, 0] = self.w_i[:, None] * scaled
        dx[:, 1] = -self.w_j[:, None] * scaled
        return dx, dlam
