"""Tet volume constraints C = 6 (V - V0) (Müller, Ten Minute Physics lesson 10; seed 000)."""
import numpy as np

from .distance import AlphaCache, as_compliance, slice_compliance


class TetVolumeConstraints:
    """A batch of volume constraints, one per tet, bound to the particles' inverse masses.

    indices: (m, 4) int64 positively oriented tets; rest_volume: (m,) [m^3]; compliance [1 / stiffness], a
    scalar for all or an array (m,), one per tet.
    """

    def __init__(self, indices, rest_volume, inv_mass, compliance):
        self.indices = np.asarray(indices, np.int64).reshape(-1, 4)
        self.rest_volume = np.asarray(rest_volume, np.float64)
        self.inv_mass = inv_mass
        self.compliance = as_compliance(compliance, len(self.indices))
        self._alpha_cache = AlphaCache()
        self.w = inv_mass[self.indices]
        self.six_rest_volume = 6.0 * self.rest_volume
        self.flat_indices = self.indices.ravel()  # matching dx.reshape(-1, 3)

    def __len__(self):
        return len(self.indices)

    def alpha(self, dt: float):
        """XPBD's alpha = compliance / dt^2 (scalar or (m,)), cached on dt."""
        return self._alpha_cache.alpha(self.compliance, dt)

    def subset(self, select) -> "TetVolumeConstraints":
        return TetVolumeConstraints(self.indices[select], self.rest_volume[select], self.inv_mass,
                                    slice_compliance(self.compliance, select))

    def corrections(self, x, alpha, lam):
        """dlambda = (-C - alpha lambda) / (sum_k w_k |grad_k|^2 + alpha); dx_k = w_k dlambda grad_k."""
        C, grad = volume_constraint(x[self.indices], self.six_rest_volume)
        denom = np.einsum("ij,ijk,ijk->i", self.w, grad, grad) + alpha
        # A flat tet (zero gradients) or one with four pins gets dx = w * dlambda * grad = 0 whatever dlambda is.
        dlam = -(C + alpha * lam) / np.maximum(denom, 1e-300)
        return (self.w * dlam[:, None])[:, :, None] * grad, dlam


def volume_constraint(p, six_rest_volume):
    """C = 6 (V - V0) (m,) and grad_C (m, 4, 3) [m^2] of tets with corners p (m, 4, 3).

    The gradients of C = 6 V for a tet with corners x1..x4 (seed 000): with e_i = x_(i+1) - x1,
    grad_2 = e2 x e3, grad_3 = e3 x e1, grad_4 = e1 x e2 and grad_1 = -(grad_2 + grad_3 + grad_4), i.e.
    grad_1 = (x4 - x2) x (x3 - x2); and 6 V = e1 . grad_2 = det[e1 e2 e3]. Written out with component
    products because the batches of a Gauss-Seidel sweep are small and ``np.cross`` costs ~25 us per call.
    """
    e = p[:, 1:] - p[:, :1]  # (m, 3, 3): e1, e2, e3
    a, b = e[:, [1, 2, 0]], e[:, [2, 0, 1]]  # grad_(k+2) = a_k x b_k
    grad = np.empty((len(p), 4, 3))
    grad[:, 1:, 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    grad[:, 1:, 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    grad[:, 1:, 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    grad[:, 0] = -grad[:, 1:].sum(axis=1)
    C = np.einsum("ij,ij->i", e[:, 0], grad[:, 1]) - six_rest_volume
    return C, grad
