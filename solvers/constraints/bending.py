"""Isometric bending as XPBD constraints, one vector constraint per hinge (Bergou et al. 2006 as compliance).

The energy is ``solvers.energies.bending.IsometricBending``'s, E = sum_h c_h/2 (|y_h| - r0_h)^2 with
y_h = sum_a K_ha x_a [m] and c_h = k / (A0 + A1) [N/m]; this module reuses its K, c and r0 (no second copy of
the cotangent code). Each hinge is the VECTOR constraint (3 components, compliance 1 / c_h)

    C = y - r0 y/|y|   [m]      (= (|y| - r0) n, n = y/|y|; C = y for a flat rest hinge, r0 = 0)

whose energy c/2 |C|^2 is exactly the hinge's. The XPBD update uses the Jacobian dC/dx_a = K_a I (the exact
one for flat rest hinges, where C = y is linear):

    dlambda = -(C + alpha lambda) / (s + alpha),   s = sum_a w_a K_a^2,   alpha = 1 / (c dt^2)
    dx_a = w_a K_a dlambda                          (dlambda and lambda: 3-vectors per hinge)

For a flat rest hinge this solves the hinge's linearized XPBD system exactly in one projection. For a curved
rest hinge the update treats the target point r0 n as fixed during one projection (the local step of
Projective Dynamics); its fixed point has lambda = -c (|y| - r0) n, which is minus dE/dy, so it converges to
the same solution as the scalar constraint |y| - r0 would, without the scalar form's undefined gradient at
y = 0. A hinge with y = 0 and r0 > 0 (the cone's tip) gets C = 0, the energy's own choice of subgradient.

Multipliers are (m, 3): ``multiplier_shape = (3,)`` tells the sweeps in ``solvers/position_based.py``.

PBD (hard constraints) would make a hinge rigid, i.e. the cloth a flat plate; there is no bending setting
without a stiffness. So ``always_compliant``: PBD projects these with the same XPBD compliance as XPBD does
(the edges stay hard), and bending_stiffness means the same N m in both.
"""
import numpy as np
import scipy.sparse as sp

from ..energies.bending import IsometricBending, hinges_from_triangles
from .distance import AlphaCache


class BendingConstraints:
    """A batch of hinge bending constraints bound to the particles' inverse masses.

    indices: (m, 4) int64 hinges (x0, x1, x2, x3) as ``hinges_from_triangles`` gives them; K: (m, 4)
    Bergou's weights (dimensionless, summing to 0); compliance: (m,) 1 / c [m/N], finite, > 0; rest_norm: (m,)
    r0 [m] (0 for a flat rest hinge); inv_mass: (particle_count,) [1/kg].
    Build one from a mesh with ``from_triangles``.
    """

    multiplier_shape = (3,)
    always_compliant = True

    def __init__(self, indices, K, compliance, rest_norm, inv_mass):
        self.indices = np.asarray(indices, np.int64).reshape(-1, 4)
        self.K = np.asarray(K, np.float64).reshape(-1, 4)
        self.compliance = np.asarray(compliance, np.float64).reshape(-1)
        self.rest_norm = np.asarray(rest_norm, np.float64).reshape(-1)
        if not (np.all(np.isfinite(self.compliance)) and np.all(self.compliance > 0.0)):
            raise ValueError("bending compliance must be finite and > 0 (leave hinges of no stiffness out)")
        self.inv_mass = inv_mass
        self.flat_indices = self.indices.ravel()  # matching dx.reshape(-1, 3)
        self.wK = inv_mass[self.indices] * self.K  # (m, 4): dx_a = w_a K_a dlambda
        self.s = np.einsum("ha,ha->h", self.wK, self.K)  # sum_a w_a K_a^2 [1/kg]
        self.curved = bool(np.any(self.rest_norm > 0.0))
        self._alpha_cache = AlphaCache()
        self._cached_alpha, self._cached_inverse = None, None

    @classmethod
    def from_triangles(cls, rest_positions, triangles, inv_mass, stiffness):
        """The hinges of every interior edge of ``triangles`` (t, 3) with bending modulus ``stiffness`` [N m]
        (scalar or per hinge); None if there is no hinge with stiffness (no interior edge, or all degenerate)."""
        hinges = hinges_from_triangles(triangles)
        if len(hinges) == 0:
            return None
        energy = IsometricBending(rest_positions, hinges, stiffness)
        keep = energy.c > 0.0  # degenerate hinges (c = 0) have no energy: no constraint, as zero-stiffness edges
        if not keep.any():
            return None
        return cls(hinges[keep], energy.K[keep], 1.0 / energy.c[keep], energy.rest_norm[keep], inv_mass)

    def __len__(self):
        return len(self.indices)

    def alpha(self, dt: float):
        """XPBD's alpha = compliance / dt^2, (m,), cached on dt."""
        return self._alpha_cache.alpha(self.compliance, dt)

    def subset(self, select) -> "BendingConstraints":
        return BendingConstraints(self.indices[select], self.K[select], self.compliance[select],
                                  self.rest_norm[select], self.inv_mass)

    def _inverse_denominator(self, alpha) -> np.ndarray:
        """1 / (s + alpha), 0 where that is 0 (four pins and alpha = 0); cached while alpha is the same object
        (``alpha(dt)`` returns the same read-only array while dt stays the same)."""
        if alpha is not self._cached_alpha:
            denom = self.s + alpha
            self._cached_inverse = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0.0)
            self._cached_alpha = alpha if isinstance(alpha, np.ndarray) and not alpha.flags.writeable else None
        return self._cached_inverse

    def constraint(self, x) -> np.ndarray:
        """C = y - r0 y/|y| per hinge, (m, 3) [m] (y with C = 0 where y = 0)."""
        corners = x[self.indices]
        y = np.einsum("hk,hkd->hd", self.K[:, 1:], corners[:, 1:] - corners[:, :1])  # sum K = 0: from x_a - x0
        if not self.curved:
            return y
        norm = np.sqrt(np.einsum("hd,hd->h", y, y))
        ratio = np.divide(self.rest_norm, norm, out=np.zeros_like(norm), where=norm > 0.0)
        C = (1.0 - ratio)[:, None] * y
        C[(norm == 0.0)] = 0.0
        return C

    def colour_sweep(self, colours, particle_count: int) -> "BendingColourSweep":
        """The Gauss-Seidel sweep over ``colours`` (lists of hinge indices sharing no particle) as sparse products."""
        return BendingColourSweep(self, colours, particle_count)

    def native_sweep(self, library, colours, particle_count: int):
        """The same Gauss-Seidel sweep as ``colour_sweep`` in C (``solvers.native.kernels.BendingSweep``), for a
        loaded native ``library``."""
        from ..native.kernels import BendingSweep

        return BendingSweep(library, self, colours, particle_count)

    def corrections(self, x, alpha, lam):
        """XPBD update of every hinge from positions ``x`` (n, 3); lam (m, 3) the accumulated multipliers.

        alpha: (m,) or a scalar (0 would be hard bending). Returns dx (m, 4, 3) and dlambda (m, 3).
        """
        C = self.constraint(x)
        dlam = -(C + np.reshape(alpha, (-1, 1)) * lam) * self._inverse_denominator(alpha)[:, None]
        return self.wK[:, :, None] * dlam[:, None, :], dlam


class BendingColourSweep:
    """A Gauss-Seidel sweep of a BendingConstraints set, one colour after another, each as two sparse products.

    Per colour c: A_c (m_c, n) holds K on each hinge's four particles, so y = A_c x; B_c = (W A_c)^T (n, m_c), so the
    colour's corrections dx_a = w_a K_a dlambda land on the particles as x += B_c dlambda. The same update as
    ``corrections`` applied colour after colour (to round-off), ~3x faster than gathering (m, 4, 3) corners.

    The products call SciPy's CSR kernel (``_sparsetools.csr_matvecs``) directly when it is there and gives the
    same result as ``A @ x`` (checked once): ``A @ x`` spends ~80% of a colour's time on the 21 x 21 lab cloth
    in its Python-level dispatch (~35 us a call against ~7 us in the kernel), and the kernel accumulates, so
    x += B_c dlambda needs no temporary. Bit for bit the same results (no particle is in two hinges of a colour, so
    each row of B_c has one entry). A colour-ordered structure-of-arrays form (as ``DistanceColourSweep``) was
    measured too: 20% slower at 21 x 21, even at 64 x 64 (its ~10 passes over (3, 4, m_c) arrays cost more than the
    products' gathers).
    Always compliant (``always_compliant``): ``sweep`` ignores its ``compliant`` flag.
    """

    def __init__(self, constraints: BendingConstraints, colours, particle_count: int):
        self.subsets, self.A, self.B, self.scratch = [], [], [], []
        for colour in colours:
            batch = constraints.subset(np.asarray(colour, np.int64))
            m = len(batch)
            rows = np.repeat(np.arange(m), 4)
            self.A.append(sp.csr_matrix((batch.K.ravel(), (rows, batch.flat_indices)), shape=(m, particle_count)))
            self.B.append(sp.csr_matrix((batch.wK.ravel(), (batch.flat_indices, rows)), shape=(particle_count, m)))
            self.subsets.append(batch)
            self.scratch.append((np.empty((m, 3)), np.empty((m, 3))))
        self._direct = _csr_matvecs if _direct_products_work(self.A, particle_count) else None

    def sweep(self, x, dt: float, lams, compliant: bool) -> None:
        """One sweep in place on x (n, 3); lams: one (m_c, 3) multiplier array per colour (updated in place)."""
        direct = self._direct
        if direct is None or not (x.flags.c_contiguous and x.dtype == np.float64 and x.shape[1:] == (3,)
                                  and self.A and len(x) == self.A[0].shape[1]):  # the C kernel checks no bounds
            self._sparse_sweep(x, dt, lams)
            return
        n = len(x)
        flat = x.reshape(-1)
        for batch, A, B, lam, (y, t) in zip(self.subsets, self.A, self.B, lams, self.scratch):
            m = len(batch)
            alpha = batch.alpha(dt)
            y.fill(0.0)
            direct(m, n, 3, A.indptr, A.indices, A.data, flat, y.reshape(-1))  # y = A x
            if batch.curved:
                _curve(y.T, batch.rest_norm)
            # dlambda = -(y + alpha lambda) / (s + alpha), in t
            np.multiply(alpha[:, None], lam, out=t)
            np.add(y, t, out=t)
            np.multiply(t, batch._inverse_denominator(alpha)[:, None], out=t)
            np.negative(t, out=t)
            direct(n, m, 3, B.indptr, B.indices, B.data, t.reshape(-1), flat)  # x += B dlambda
            np.add(lam, t, out=lam)

    def _sparse_sweep(self, x, dt, lams) -> None:
        """The same sweep through SciPy's ``@`` (non-contiguous x, or no direct kernel)."""
        for batch, A, B, lam in zip(self.subsets, self.A, self.B, lams):
            alpha = batch.alpha(dt)
            y = A @ x
            if batch.curved:
                _curve(y.T, batch.rest_norm)
            dlam = -(y + alpha[:, None] * lam) * batch._inverse_denominator(alpha)[:, None]
            x += B @ dlam
            lam += dlam


def _curve(y, rest_norm) -> None:
    """C = y - r0 y/|y| in place on y (3, m) (any strides), C = 0 where y = 0."""
    norm = np.sqrt(y[0] * y[0] + y[1] * y[1] + y[2] * y[2])
    ratio = np.divide(rest_norm, norm, out=np.zeros_like(norm), where=norm > 0.0)
    y *= 1.0 - ratio
    y[:, norm == 0.0] = 0.0


try:  # SciPy's CSR kernel: y += A x for a dense (n_col, n_vecs) x, C-contiguous float64 (private, hence checked)
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - another SciPy layout: the sweep falls back to A @ x
    _csr_matvecs = None


def _direct_products_work(matrices, particle_count: int) -> bool:
    """Whether ``_csr_matvecs`` exists and gives A @ x for these matrices' index and value types."""
    if _csr_matvecs is None or not matrices:
        return False
    A = matrices[0]
    x = np.random.default_rng(0).normal(size=(particle_count, 3))
    y = np.zeros((A.shape[0], 3))
    try:
        _csr_matvecs(A.shape[0], A.shape[1], 3, A.indptr, A.indices, A.data, x.reshape(-1), y.reshape(-1))
    except Exception:  # pragma: no cover - a changed signature
        return False
    return bool(np.array_equal(y, A @ x))
