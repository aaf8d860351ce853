"""Tet volume constraints C = 6 (V - V0) (Müller, Ten Minute Physics lesson 10; seed 000)."""
import numpy as np


class TetVolumeConstraints:
    """A batch of volume constraints, one per tet, bound to the particles' inverse masses.

    indices: (m, 4) int64 positively oriented tets; rest_volume: (m,) [m^3]; compliance [1 / stiffness].
    """

    def __init__(self, indices, rest_volume, inv_mass, compliance: float):
        self.indices = np.asarray(indices, np.int64)
        self.rest_volume = np.asarray(rest_volume, np.float64)
        self.inv_mass = inv_mass
        self.compliance = float(compliance)
        self.w = inv_mass[self.indices]
        self.six_rest_volume = 6.0 * self.rest_volume
        self.flat_indices = self.indices.ravel()  # matching dx.reshape(-1, 3)

    def __len__(self):
        return len(self.indices)

    def subset(self, select) -> "TetVolumeConstraints":
        return TetVolumeConstraints(self.indices[select], self.rest_volume[select], self.inv_mass, self.compliance)

    @staticmethod
    def gradients(p):
        """grad_C of C = 6 V for tets with corners p (m, 4, 3): shape (m, 4, 3).

        grad_1 = (x4 - x2) x (x3 - x2), grad_2 = (x3 - x1) x (x4 - x1),
        grad_3 = (x4 - x1) x (x2 - x1), grad_4 = (x2 - x1) x (x3 - x1)   (seed 000).
        """
        x1, x2, x3, x4 = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
        return np.stack(
            [np.cross(x4 - x2, x3 - x2), np.cross(x3 - x1, x4 - x1), np.cross(x4 - x1, x2 - x1), np.cross(x2 - x1, x3 - x1)],
            axis=1,
        )

    def corrections(self, x, alpha, lam):
        """dlambda = (-C - alpha lambda) / (sum_k w_k |grad_k|^2 + alpha); dx_k = w_k dlambda grad_k.

        With e_i = x_(i+1) - x1: grad_2 = e2 x e3, grad_3 = e3 x e1, grad_4 = e1 x e2, grad_1 = -(sum of
        the others), and 6 V = e1 . grad_2 (the same formulas as ``gradients``). Written out with component
        products because the batches of a Gauss-Seidel sweep are small and ``np.cross`` costs ~25 us per call.
        """
        p = x[self.indices]
        e = p[:, 1:] - p[:, :1]  # (m, 3, 3): e1, e2, e3
        a, b = e[:, [1, 2, 0]], e[:, [2, 0, 1]]  # grad_(k+2) = a_k x b_k
        grad = np.empty((len(p), 4, 3))
        grad[:, 1:, 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
        grad[:, 1:, 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
        grad[:, 1:, 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
        grad[:, 0] = -grad[:, 1:].sum(axis=1)
        C = np.einsum("ij,ij->i", e[:, 0], grad[:, 1]) - self.six_rest_volume
        denom = np.einsum("ij,ijk,ijk->i", self.w, grad, grad) + alpha
        # A flat tet (zero gradients) or one with four pins gets dx = w * dlambda * grad = 0 whatever dlambda is.
        dlam = -(C + alpha * lam) / np.maximum(denom, 1e-300)
        return (self.w * dlam[:, None])[:, :, None] * grad, dlam
