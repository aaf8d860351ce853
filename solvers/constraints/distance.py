"""Distance constraints C = |x_i - x_j| - l0 (Müller et al. 2007; compliant form Macklin et al. 2016)."""
import numpy as np


class DistanceConstraints:
    """A batch of distance constraints, bound to the particles' inverse masses.

    indices: (m, 2) int64 particle pairs; rest_length: (m,) [m]; inv_mass: (particle_count,) [1/kg];
    compliance: 1 / stiffness [m/N].
    """

    def __init__(self, indices, rest_length, inv_mass, compliance: float):
        self.indices = np.asarray(indices, np.int64)
        self.rest_length = np.asarray(rest_length, np.float64)
        self.inv_mass = inv_mass
        self.compliance = float(compliance)
        self.i, self.j = self.indices[:, 0].copy(), self.indices[:, 1].copy()
        self.flat_indices = self.indices.ravel()  # row-major (i0, j0, i1, j1, ...), matching dx.reshape(-1, 3)
        self.w_i, self.w_j = inv_mass[self.i], inv_mass[self.j]
        self.w_sum = self.w_i + self.w_j
        self._cached_alpha, self._cached_inverse = None, None

    def __len__(self):
        return len(self.indices)

    def _inverse_denominator(self, alpha: float) -> np.ndarray:
        """1 / (w_i + w_j + alpha), 0 where that sum is 0; cached, since alpha only changes with dt."""
        if self._cached_alpha != alpha:
            denom = self.w_sum + alpha
            self._cached_inverse = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0.0)
            self._cached_alpha = alpha
        return self._cached_inverse

    def subset(self, select) -> "DistanceConstraints":
        return DistanceConstraints(self.indices[select], self.rest_length[select], self.inv_mass, self.compliance)

    def corrections(self, x, alpha, lam):
        """XPBD update of every constraint in the batch from positions ``x`` (n, 3).

        For C = |x_i - x_j| - l0 with grad_C_i = n = (x_i - x_j)/|x_i - x_j| = -grad_C_j:
            dlambda = (-C - alpha * lambda) / (w_i + w_j + alpha),   alpha = compliance / dt^2
            dx_i = w_i * dlambda * n,   dx_j = -w_j * dlambda * n
        With alpha = 0 this is PBD's projection dx_i = -w_i / (w_i + w_j) * C * n.
        Returns dx of shape (m, 2, 3) and dlambda of shape (m,).
        """
        d = x[self.i] - x[self.j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        # A zero-length edge has no direction, and an edge between two pins no mobility: both get dlambda = 0.
        safe_length = np.maximum(length, 1e-12)
        dlam = -(length - self.rest_length + alpha * lam) * self._inverse_denominator(alpha)
        scaled = (dlam / safe_length)[:, None] * d
        dx = np.empty((len(d), 2, 3))
        dx[:, 0] = self.w_i[:, None] * scaled
        dx[:, 1] = -self.w_j[:, None] * scaled
        return dx, dlam
