"""Distance constraints C = |x_i - x_j| - l0 (Müller et al. 2007; compliant form Macklin et al. 2016)."""
import numpy as np


class DistanceConstraints:
    """One distance constraint per edge.

    indices: (m, 2) int64 particle pairs; rest_length: (m,) [m]; compliance: 1 / stiffness [m/N].
    """

    def __init__(self, indices: np.ndarray, rest_length: np.ndarray, compliance: float):
        self.indices = np.asarray(indices, np.int64)
        self.rest_length = np.asarray(rest_length, np.float64)
        self.compliance = float(compliance)

    def __len__(self):
        return len(self.indices)

    def corrections(self, x, inv_mass, select, alpha, lam):
        """XPBD update of the constraints ``select`` (int array or slice).

        For C = |x_i - x_j| - l0 with grad_C_i = n = (x_i - x_j)/|x_i - x_j| = -grad_C_j:
            dlambda = (-C - alpha * lambda) / (w_i + w_j + alpha),   alpha = compliance / dt^2
            dx_i = w_i * dlambda * n,   dx_j = -w_j * dlambda * n
        With alpha = 0 this is PBD's projection dx_i = -w_i / (w_i + w_j) * C * n.
        Returns dx of shape (len(select), 2, 3) and dlambda of shape (len(select),).
        """
        pairs = self.indices[select]
        w = inv_mass[pairs]
        d = x[pairs[:, 0]] - x[pairs[:, 1]]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        C = length - self.rest_length[select]
        denom = w[:, 0] + w[:, 1] + alpha
        # Constraints between two pinned particles, or of zero length, have no direction to push along.
        ok = (denom > 0.0) & (length > 1e-12)
        dlam = np.where(ok, (-C - alpha * lam) / np.where(ok, denom, 1.0), 0.0)
        n = d / np.where(length > 1e-12, length, 1.0)[:, None]
        dx = np.empty((len(pairs), 2, 3))
        dx[:, 0] = (w[:, 0] * dlam)[:, None] * n
        dx[:, 1] = -(w[:, 1] * dlam)[:, None] * n
        return dx, dlam
