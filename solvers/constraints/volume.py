"""Tet volume constraints C = 6 (V - V0) (Müller's Ten Minute Physics, lesson 10)."""
import numpy as np

from ..colouring import ColourOrder, colour_order_pays
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

    def colour_sweep(self, colours, particle_count: int):
        """The fast Gauss-Seidel sweep over ``colours`` (lists of constraint indices sharing no particle), a
        ``TetVolumeColourSweep``; None when the colours touch too few particles for it to pay
        (``colouring.colour_order_pays``)."""
        if not colour_order_pays(self.indices, colours, particle_count):
            return None
        return TetVolumeColourSweep(self, colours, particle_count)


class TetVolumeColourSweep:
    """A Gauss-Seidel sweep of a TetVolumeConstraints set, colour by colour, on contiguous slices.

    As ``distance.DistanceColourSweep``: each colour's four corners are contiguous (3, m) slices of the
    structure-of-arrays state in that colour's particle order (``ColourOrder``), and the update of
    ``TetVolumeConstraints.corrections`` (the same formulas, to round-off) runs as whole-array operations.
    """

    def __init__(self, constraints: TetVolumeConstraints, colours, particle_count: int):
        colours = [np.asarray(c, np.int64) for c in colours]
        self.order = ColourOrder(constraints.indices, colours, particle_count)
        self.subsets = [constraints.subset(c) for c in colours]
        self.weights = [np.ascontiguousarray(b.w.T) for b in self.subsets]  # (4, m)
        self.scratch = [dict(E=np.empty((3, 3, len(c))), A=np.empty((3, 3, len(c))), B=np.empty((3, 3, len(c))),
                             G=np.empty((3, 4, len(c))), T=np.empty((3, 4, len(c))), q=np.empty((4, len(c))),
                             s=np.empty(len(c))) for c in colours]

    def sweep(self, x, dt: float, lams, compliant: bool) -> None:
        """One sweep in place on x (n, 3) C-contiguous float64; lams: one (m_c,) multiplier array per colour."""
        def project(c, Y):
            batch, w, buf = self.subsets[c], self.weights[c], self.scratch[c]
            m = len(batch)
            corners = Y[:, :4 * m].reshape(3, 4, m)  # a view: corners[:, a] is corner a (3, m)
            E, A, B, G, T, q, s = buf["E"], buf["A"], buf["B"], buf["G"], buf["T"], buf["q"], buf["s"]
            np.subtract(corners[:, 1:], corners[:, :1], out=E)  # e1, e2, e3 (as volume_constraint's e)
            A[:, 0], A[:, 1], A[:, 2] = E[:, 1], E[:, 2], E[:, 0]  # grad_(k+2) = a_k x b_k
            B[:, 0], B[:, 1], B[:, 2] = E[:, 2], E[:, 0], E[:, 1]
            grad = G[:, 1:]
            np.multiply(A[1], B[2], out=grad[0])
            np.multiply(A[2], B[1], out=T[0, 1:])
            grad[0] -= T[0, 1:]
            np.multiply(A[2], B[0], out=grad[1])
            np.multiply(A[0], B[2], out=T[1, 1:])
            grad[1] -= T[1, 1:]
            np.multiply(A[0], B[1], out=grad[2])
            np.multiply(A[1], B[0], out=T[2, 1:])
            grad[2] -= T[2, 1:]
            np.add(G[:, 1], G[:, 2], out=G[:, 0])
            G[:, 0] += G[:, 3]
            np.negative(G[:, 0], out=G[:, 0])
            # C = 6 (V - V0) = e1 . grad_2 - 6 V0
            np.multiply(E[:, 0], G[:, 1], out=T[:, 0])
            C = T[0, 0] + T[2, 0]
            C += T[1, 0]
            C -= batch.six_rest_volume
            # denom = sum_k w_k |grad_k|^2 + alpha
            np.multiply(G, G, out=T)
            np.add(T[0], T[1], out=q)
            q += T[2]
            q *= w
            denom = q.sum(axis=0)
            alpha = batch.alpha(dt) if compliant else 0.0
            if compliant:
                denom += alpha
                C += alpha * lams[c]
            np.maximum(denom, 1e-300, out=s)
            np.negative(C, out=C)
            dlam = np.divide(C, s, out=C)
            np.multiply(w, dlam, out=q)  # (4, m): w_k dlambda
            np.multiply(q, G, out=T)  # dx_k = w_k dlambda grad_k
            np.add(corners, T, out=corners)
            lams[c] += dlam

        self.order.sweep(x, project)


def volume_constraint(p, six_rest_volume):
    """C = 6 (V - V0) (m,) and grad_C (m, 4, 3) [m^2] of tets with corners p (m, 4, 3).

    The gradients of C = 6 V for a tet with corners x1..x4 (Müller's Ten Minute Physics): with e_i = x_(i+1) - x1,
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
