"""Neo-Hookean tet constraints for PBD/XPBD solids: element-based elasticity instead of edge springs + volume
constraints, so the material is isotropic. After Macklin & Müller 2021, "A Constraint-based Formulation of Stable Neo-Hookean
Materials", with their energy split into two constraints that vanish at rest.

Per tet with rest corners X0..X3, rest edge matrix Dm = [X1 - X0, X2 - X0, X3 - X0] [m], rest volume
V0 = |det Dm| / 6 [m^3], deformation gradient F = Ds Dm^-1 = sum_a x_a d_a^T (dimensionless; d_a the shape
derivatives [1/m], ``energies.neo_hookean.shape_derivatives``), I_C = tr(F^T F), J = det F:

    C_D = sqrt(Q),  Q = I_C - 3 - 2 (J - 1) + kappa (J - 1)^2      compliance alpha_D = 1 / (mu V0)       [1/J]
    C_H = J - 1                                                     compliance alpha_H = 1 / (lam_H V0)    [1/J]

with kappa = 1, lam_H = lam for lam > 0, and kappa = 1 + lam / mu, lam_H = 0 (no hydrostatic row) for lam <= 0
(nu <= 0). mu, lam [Pa] are the user's Lamé parameters (``solvers.material.lame_parameters``).

The energy. sum C^2 / (2 alpha) = V0 Psi with Psi = mu/2 Q + lam/2 (J - 1)^2 = mu/2 (I_C - 3) + lam_c/2 (J - gamma)^2
+ const, lam_c = lam + mu, gamma = 1 + mu / lam_c: exactly the paper's (and Smith et al. 2018's, without the log
term) stable Neo-Hookean density, with lam_c = lam + mu, Smith et al.'s reparametrization of this form to linear
elasticity: at F = I + eps (eps symmetric) Q = 2 eps:eps + O(eps^3), so Psi = mu eps:eps + lam/2 (tr eps)^2 + ...
(tests/test_tet_strain.py checks both identities numerically). Q >= 0 for kappa = 1 (Q >= u^2 (u - 1)^2 (u^2 + 2u + 3)
with u = J^(1/3), by I_C >= 3 J^(2/3); J <= 0 makes every term >= 0), 0 exactly for rotations (and F = 0).

Why not the paper's C_D = sqrt(I_C), C_H = J - gamma. Measured first: neither is 0 at rest (sqrt 3, -mu / lam_c);
their multipliers balance there, so the whole shear stiffness comes from lambda times the change of the gradients,
which Gauss-Newton (XPBD) leaves out of its system: with one or two sweeps per step this acts like an explicit
force, and the ico sphere in free flight (no gravity, E = 1e5, 30 substeps) blew up from a 1e-6 m jitter to 0.4 m in
a second; it dropped pole-down it spun off its first contact (137 mm drift). With C_D = sqrt(Q) the shear is in the
gradient (dC_D/dF is the strain direction near rest) and the same jitter decays (1e-6 -> 3e-7 m).
Near a rotation Q is a difference of O(1) terms: Q < Q_ROUND_OFF counts as 0 (no correction, a strain of ~1e-7).
Limits: F = 0 is a local minimum of this energy (as of the paper's), so a tet squashed uniformly below ~0.3 of its
size collapses to a point instead of recovering; flat and inverted tets (one axis through 0) recover.

Solve. Each tet's two constraints are projected together (the paper's 2x2 system): per-corner gradients
g_a = (dC/dF) d_a, dC_D/dF = (F + (kappa (J - 1) - 1) cof F) / C_D, dC_H/dF = cof F, and

    [s_DD + alpha_D   s_DH          ] [dlambda_D]     [C_D + alpha_D lambda_D]
    [s_DH             s_HH + alpha_H] [dlambda_H] = - [C_H + alpha_H lambda_H],    s_XY = sum_a w_a g_Xa . g_Ya

(alpha = compliance / dt^2; an infinite alpha_H drops the second row), dx_a = w_a (g_Da dlambda_D + g_Ha dlambda_H).
At rest and under any rigid motion C = 0 and dx = 0. Momentum: sum_a d_a = 0, so sum_a dx_a / w_a = 0 (pinned
corners, w = 0, do not move).

PBD. These constraints are ``always_compliant`` (as bending): PBD projects them with the same compliance as XPBD,
so a PBD solid has the Young's modulus and Poisson's ratio it is given, and PBD and XPBD solids behave the same
(every solid edge is in a tet, so no hard edge constraint is left). The alternative, hard C_D = C_H = 0, makes each
tet rigid: a PBD solid would be a rigid body whose stiffness is set by the iteration count (as hard edge springs,
which tipped the ico sphere over by 109 mm). The alpha = 0 system is also singular for a purely volumetric strain
(both gradients along cof F); that alternative has not been measured.

Multipliers are (m, 2) per tet (lambda_D, lambda_H): ``multiplier_shape = (2,)``.
"""
import numpy as np

from ..energies.neo_hookean import shape_derivatives
from ..linalg.iterative import inverse_3x3
from ..colouring import ColourOrder, colour_order_pays
from .distance import AlphaCache


Q_ROUND_OFF = 1e-14
"""C_D^2 below which a tet counts as undeformed (round-off of I_C - 3 - 2 (J - 1) + kappa (J - 1)^2 near a rotation)."""


class TetStrainConstraints:
    """A batch of Neo-Hookean tet constraint pairs (C_D, C_H), bound to the particles' inverse masses.

    indices: (m, 4) int64 tets; rest_positions: (n, 3) [m] (for Dm and V0); inv_mass: (n,) [1/kg];
    mu, lam: (m,) or scalars [Pa], the Lamé parameters of linear elasticity (lam_c = lam + mu is derived here).
    Tets of zero rest volume must be left out (they have no Dm^-1): ``from_model`` does that.
    Attributes: D (m, 4, 3) shape derivatives [1/m]; rest_volume (m,) [m^3]; gamma (m,); compliance (m, 2) [1/J]
    (alpha_D, alpha_H before the division by dt^2); w (m, 4) [1/kg].
    """

    multiplier_shape = (2,)
    always_compliant = True
    damping = 0.0
    """gamma = tau / dt of the step (``set_damping``): 0 means no internal damping."""
    x_prev = None
    """Positions (n, 3) at the start of the step, the reference of the damping term (``set_damping``)."""

    def __init__(self, indices, D, rest_volume, inv_mass, mu, lam):
        self.indices = np.asarray(indices, np.int64).reshape(-1, 4)
        m = len(self.indices)
        self.D = np.asarray(D, np.float64).reshape(m, 4, 3)
        self.rest_volume = np.asarray(rest_volume, np.float64).reshape(m)
        self.mu = np.broadcast_to(np.asarray(mu, np.float64), (m,)).copy()
        self.lam = np.broadcast_to(np.asarray(lam, np.float64), (m,)).copy()
        if not (np.all(self.rest_volume > 0.0) and np.all(self.mu > 0.0) and np.all(self.lam + self.mu > 0.0)):
            raise ValueError("tet constraints need V0 > 0, mu > 0 and lam + mu > 0 (leave degenerate tets out)")
        self.inv_mass = inv_mass
        # lam > 0: kappa = 1, C_H carries lam. lam <= 0 (nu <= 0): kappa = 1 + lam / mu < 1 and C_H has no stiffness.
        self.kappa = np.minimum(1.0 + self.lam / self.mu, 1.0)
        lam_h = np.maximum(self.lam, 0.0)
        # A zero hydrostatic stiffness is an infinite compliance: its row of the 2x2 system is then dropped.
        compliance_h = np.divide(1.0, lam_h * self.rest_volume, out=np.full(m, np.inf), where=lam_h > 0.0)
        self.compliance = np.stack([1.0 / (self.mu * self.rest_volume), compliance_h], axis=1)
        self._alpha_cache = AlphaCache()
        self.w = inv_mass[self.indices]
        self.flat_indices = self.indices.ravel()  # matching dx.reshape(-1, 3)
        self.D_T = np.ascontiguousarray(np.swapaxes(self.D, 1, 2))  # (m, 3, 4)
        self._layout = None  # (D (4, 3, m), w (4, m)) of ``corrections``

    @classmethod
    def from_model(cls, rest_positions, tet_indices, inv_mass, mu, lam, select=None):
        """The constraints of the tets ``select`` (default all) with Lamé parameters mu, lam [Pa] (per tet of
        ``tet_indices`` or scalars); tets of (near) zero rest volume are skipped. None if none is left."""
        tets = np.asarray(tet_indices, np.int64).reshape(-1, 4)
        k = len(tets)
        mu = np.broadcast_to(np.asarray(mu, np.float64), (k,))
        lam = np.broadcast_to(np.asarray(lam, np.float64), (k,))
        keep = np.arange(k) if select is None else np.asarray(select, np.int64).reshape(-1)
        X = np.asarray(rest_positions, np.float64)[tets[keep]]
        Dm = np.swapaxes(X[:, 1:] - X[:, :1], 1, 2)
        det = np.linalg.det(Dm) if len(keep) else np.zeros(0)
        scale = np.einsum("tij,tij->t", Dm, Dm) ** 1.5
        valid = np.abs(det) > 1e-12 * scale
        keep, Dm, det = keep[valid], Dm[valid], det[valid]
        if len(keep) == 0:
            return None
        D = shape_derivatives(inverse_3x3(Dm))
        return cls(tets[keep], D, np.abs(det) / 6.0, inv_mass, mu[keep], lam[keep])

    def __len__(self):
        return len(self.indices)

    def alpha(self, dt: float):
        """XPBD's alpha = compliance / dt^2, (m, 2) (deviatoric, hydrostatic), cached on dt."""
        return self._alpha_cache.alpha(self.compliance, dt)

    def subset(self, select) -> "TetStrainConstraints":
        return TetStrainConstraints(self.indices[select], self.D[select], self.rest_volume[select], self.inv_mass,
                                    self.mu[select], self.lam[select])

    def deformation_gradient(self, x):
        """F (m, 3, 3) at positions x (n, 3): F = sum_a x_a d_a^T."""
        return np.matmul(np.swapaxes(x[self.indices], 1, 2), self.D)

    def constraint(self, x):
        """C (m, 2): (C_D, C_H) at positions x (n, 3); the values of ``gradients`` without the gradients."""
        F = self.deformation_gradient(x)
        f0, f1, f2 = F[:, :, 0], F[:, :, 1], F[:, :, 2]
        J1 = np.einsum("ti,ti->t", f0, np.cross(f1, f2)) - 1.0
        Q = np.einsum("tij,tij->t", F, F) - 3.0 - 2.0 * J1 + self.kappa * J1 * J1
        return np.stack([np.sqrt(np.where(Q > Q_ROUND_OFF, Q, 0.0)), J1], axis=1)

    def gradients(self, x):
        """C (m, 2) and the per-corner gradients g_D, g_H (m, 4, 3) [1/m] at positions x (n, 3)."""
        F = self.deformation_gradient(x)
        f0, f1, f2 = F[:, :, 0], F[:, :, 1], F[:, :, 2]
        cof = np.empty_like(F)  # columns f1 x f2, f2 x f0, f0 x f1 (= dJ/dF)
        for j, (a, b) in enumerate(((f1, f2), (f2, f0), (f0, f1))):
            cof[:, 0, j] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
            cof[:, 1, j] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
            cof[:, 2, j] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
        J1 = np.einsum("ti,ti->t", f0, cof[:, :, 0]) - 1.0
        Q = np.einsum("tij,tij->t", F, F) - 3.0 - 2.0 * J1 + self.kappa * J1 * J1
        # Q is a difference of O(1) terms: a rotated tet at rest gets |Q| ~ 1e-16 of round-off, i.e. C_D ~ 1e-8 of
        # noise in a random direction. Q below Q_ROUND_OFF (a strain of ~7e-8) counts as 0: no correction.
        C_D = np.sqrt(np.where(Q > Q_ROUND_OFF, Q, 0.0))
        # dC_D/dF = (F + (kappa (J - 1) - 1) cof F) / C_D; C_D = 0 (rest, rigid motion) has no direction: 0.
        inv_C_D = np.divide(1.0, C_D, out=np.zeros_like(C_D), where=C_D > 0.0)
        dQ = F + (self.kappa * J1 - 1.0)[:, None, None] * cof
        g_D = np.matmul(self.D, np.swapaxes(dQ, 1, 2)) * inv_C_D[:, None, None]  # g_a = (dC/dF) d_a
        g_H = np.matmul(self.D, np.swapaxes(cof, 1, 2))
        return np.stack([C_D, J1], axis=1), g_D, g_H

    def set_damping(self, gamma: float, x_prev=None) -> None:
        """Internal damping for the step about to be swept: gamma = tau / dt (tau [s], ``SolverConfig.internal_damping``)
        and x_prev (n, 3), the positions at the step's start; gamma 0 turns it off.

        Macklin et al. 2016 (XPBD, eq. 26) with beta = tau / alpha (Rayleigh damping proportional to each constraint's
        stiffness): dlambda = -(C + alpha lambda + gamma grad C . (x - x_prev)) / ((1 + gamma) S + alpha). A rigid
        motion has grad C . (x - x_prev) = 0 to first order, so it is not damped."""
        self.damping = float(gamma)
        self.x_prev = x_prev if gamma > 0.0 else None

    def corrections(self, x, alpha, lam):
        """The coupled XPBD update of every tet from positions x (n, 3); lam (m, 2) the accumulated multipliers;
        alpha (m, 2) (``alpha(dt)``; these constraints are always compliant). Returns dx (m, 4, 3) [m] and
        dlambda (m, 2): ``tet_updates`` (the colour sweep's arithmetic, which src/tets.c repeats) on the tets' corners
        gathered from x, so a Jacobi sweep of this set (``position_based._Jacobi``) is the native one's twin."""
        layout = self._layout
        if layout is None:  # the shape derivatives and inverse masses in tet_updates' layout, kept
            layout = self._layout = (np.ascontiguousarray(np.transpose(self.D, (1, 2, 0))),
                                     np.ascontiguousarray(self.w.T))
        D, w = layout
        m = len(self.indices)
        corners = np.ascontiguousarray(x[self.indices].transpose(2, 1, 0))  # (3, 4, m)
        prev = None
        if self.damping > 0.0:
            prev = np.ascontiguousarray(self.x_prev[self.indices].transpose(2, 1, 0))
        dx, dlam = tet_updates(corners, D, w, self.kappa, alpha_rows(np.broadcast_to(alpha, (m, 2))), lam,
                               self.damping, prev)
        return dx.transpose(2, 1, 0), dlam.T

    def colour_sweep(self, colours, particle_count: int):
        """The fast Gauss-Seidel sweep over ``colours`` (lists of tet indices sharing no particle), a
        ``TetStrainColourSweep``; None when the colours touch too few particles for it to pay
        (``colouring.colour_order_pays``)."""
        if not colour_order_pays(self.indices, colours, particle_count):
            return None
        return TetStrainColourSweep(self, colours, particle_count)

    def native_sweep(self, library, colours, particle_count: int):
        """The same Gauss-Seidel sweeps as ``colour_sweep`` in C (``solvers.native.kernels.TetStrainSweep``), for a
        loaded native ``library``; None where ``colour_sweep`` is None, so both paths sweep the same per-colour
        batches there (``corrections`` on gathered rows, not held equal to the C sweep) and Compute never changes a
        step. Also None when a colour holds a single tet: NumPy's einsum then loops over a corner axis instead of the
        tets and sums in another order (a few ulp apart); only a body whose largest colour has under 8 tets keeps one
        among its big colours."""
        if not colour_order_pays(self.indices, colours, particle_count) or min(len(c) for c in colours) < 2:
            return None
        if not library.ready("solids"):  # its self-test failed: the NumPy sweeps (status() says why)
            return None
        from ..native.kernels import TetStrainSweep

        return TetStrainSweep(library, self, colours, particle_count)


def _cofactor_index():
    """Flat indices into F.reshape(9, m) for cof F[i, j] = F[i+1, j+1] F[i+2, j+2] - F[i+2, j+1] F[i+1, j+2]
    (indices mod 3; column j of cof F is f_(j+1) x f_(j+2), f_k the columns of F): (4 * 9,)."""
    rows = []
    for di, dj in ((1, 1), (2, 2), (2, 1), (1, 2)):
        rows.append([3 * ((i + di) % 3) + (j + dj) % 3 for i in range(3) for j in range(3)])
    return np.array(rows, np.int64).ravel()


_COFACTOR_INDEX = _cofactor_index()


def alpha_rows(alpha: np.ndarray) -> np.ndarray:
    """The compliances alpha (m, 2) (``TetStrainConstraints.alpha``) as the rows ``tet_updates`` reads, (4, m)
    C-contiguous: alpha_D, alpha_H, alpha_D, and alpha_H where finite else 0 (the last two multiply lambda in the
    residual; an infinite alpha_H drops the hydrostatic row)."""
    finite = np.isfinite(alpha[:, 1])
    return np.ascontiguousarray(np.stack([alpha[:, 0], alpha[:, 1], alpha[:, 0], np.where(finite, alpha[:, 1], 0.0)]))


def tet_updates(corners, D, w, kappa, alpha, lam, damping: float = 0.0, prev_corners=None):
    """The coupled XPBD update of m tets in structure of arrays (the 2 x 2 solve of the module docstring, with the
    gradients of ``TetStrainConstraints.gradients`` to round-off; src/tets.c repeats these operations in this order),
    behind ``TetStrainConstraints.corrections`` and the colour sweeps: corners (3, 4, m) [m] (corners[:, a] is corner a),
    D (4, 3, m) [1/m] (d_a[j]), w (4, m) [1/kg], kappa (m,), alpha (4, m) (``alpha_rows``), lam (m, 2) the
    multipliers; with damping = gamma > 0 (``TetStrainConstraints.set_damping``) the corners at the step's start
    prev_corners (3, 4, m). Returns dx (3, 4, m) [m] and dlambda (2, m); nothing is changed in place."""
    m = corners.shape[2]
    # F[i, j] = sum_a x_a[i] d_a[j]
    F = np.einsum("iat,ajt->ijt", corners, D)  # (3, 3, m)
    F9 = F.reshape(9, m)
    T = np.take(F9, _COFACTOR_INDEX, axis=0).reshape(4, 9, m)
    M = np.empty((2, 9, m))  # dQ/dF (times C_D; below), cof F
    cof = M[1]
    np.multiply(T[0], T[1], out=cof)
    cof -= np.multiply(T[2], T[3], out=T[0])
    CJ = np.empty((2, m))  # (C_D, C_H = J - 1)
    J1 = np.einsum("it,it->t", F9[0::3], cof[0::3], out=CJ[1])  # det F = f0 . (f1 x f2)
    J1 -= 1.0
    kJ1 = kappa * J1
    Q = np.einsum("kt,kt->t", F9, F9)
    Q -= 3.0
    Q -= (2.0 - kJ1) * J1  # I_C - 3 - 2 (J - 1) + kappa (J - 1)^2
    # C_D = sqrt(Q), and 0 (no direction, no correction) below Q_ROUND_OFF: as ``gradients``.
    inv_C_D = np.sqrt(np.maximum(Q, Q_ROUND_OFF))
    np.divide(Q > Q_ROUND_OFF, inv_C_D, out=inv_C_D)
    np.multiply(Q, inv_C_D, out=CJ[0])  # C_D
    np.multiply(cof, kJ1 - 1.0, out=M[0])
    M[0] += F9  # F + (kappa (J - 1) - 1) cof F = C_D dC_D/dF
    # g[X, i, a] = sum_j M[X, i, j] d_a[j]: per-corner gradients (X = 0: C_D times g_D, X = 1: g_H)
    g = np.einsum("xijt,ajt->xiat", M.reshape(2, 3, 3, m), D)  # (2, 3, 4, m)
    g[0] *= inv_C_D
    wg = g * w
    s = np.einsum("xiat,yiat->xyt", wg, g)  # s_XY = sum_a w_a g_Xa . g_Ya
    if damping > 0.0:  # internal damping: (1 + gamma) S and gamma grad C . (x - x_prev) (set_damping)
        s *= 1.0 + damping
    # The 2x2 solve of ``corrections`` with r = C + alpha lambda (alpha_H lambda_H left out when alpha_H is
    # infinite, where 1 / (s_HH + alpha_H) = 0 drops the hydrostatic row): dlambda = -S^-1 r by the Schur
    # complement of the hydrostatic row.
    r = np.multiply(alpha[2:], lam.T)
    r += CJ
    if damping > 0.0:  # gamma grad C . (x - x_prev) (g[0] is grad C_D by now)
        r += damping * np.einsum("xiat,iat->xt", g, corners - prev_corners)
    b = s[0, 1]
    inv_d = 1.0 / (s[1, 1] + alpha[1])
    b_inv_d = b * inv_d
    schur = s[0, 0] + alpha[0]
    schur -= b * b_inv_d
    dlam = np.empty((2, m))
    dlam_D, dlam_H = dlam
    np.multiply(b_inv_d, r[1], out=dlam_D)
    dlam_D -= r[0]
    dlam_D /= schur  # dlambda_D = -(r_D - b r_H / d) / schur
    np.multiply(b, dlam_D, out=dlam_H)
    dlam_H += r[1]
    inv_d *= -1.0
    dlam_H *= inv_d  # dlambda_H = -(r_H + b dlambda_D) / d
    return np.einsum("xiat,xt->iat", wg, dlam), dlam  # dx_a = w_a (g_Da dlambda_D + g_Ha dlambda_H)


class TetStrainColourSweep:
    """A Gauss-Seidel sweep of a TetStrainConstraints set, colour by colour, on contiguous slices.

    Each colour's four corners are one contiguous (3, 4, m) view of the
    structure-of-arrays state in that colour's particle order (``colouring.ColourOrder``), and ``tet_updates`` runs
    on views of it instead of a gather and a scatter of (m, 4, 3) rows per colour (``corrections``): a tet set has as
    many colours as its busiest particle has tets (~30), each only a few tets on a small mesh, so the per-call
    overhead is the cost.
    ``sweep(..., reverse=True)`` visits the colours last to first (its own ``ColourOrder``).
    """

    def __init__(self, constraints: TetStrainConstraints, colours, particle_count: int):
        colours = [np.asarray(c, np.int64) for c in colours]
        self.forward = ColourOrder(constraints.indices, colours, particle_count)
        self.backward = ColourOrder(constraints.indices, colours[::-1], particle_count)
        self.subsets = [constraints.subset(c) for c in colours]
        self.D = [np.ascontiguousarray(np.transpose(b.D, (1, 2, 0))) for b in self.subsets]  # (4, 3, m): d_a[j]
        self.w = [np.ascontiguousarray(b.w.T) for b in self.subsets]  # (4, m)
        self._dt = None
        self._constraints, self._colours, self._n = constraints, colours, particle_count
        self._doubled = None
        self.damping, self.x_prev, self._prev_corners = 0.0, None, None  # set_damping

    def set_damping(self, gamma: float, x_prev=None) -> None:
        """``TetStrainConstraints.set_damping`` for the sweep. x_prev (n, 3) is read at the step's first sweep, as
        ``TetStrainConstraints`` and the C sweep read it (after the contacts' pre-stabilization has moved the
        step's start onto the planes, in place), and gathered then once per colour into the kernel's corner layout
        (``prev_corners``)."""
        self.damping = float(gamma)
        self.x_prev = x_prev if gamma > 0.0 else None
        self._prev_corners = None

    @property
    def prev_corners(self):
        """x_prev in the kernel's corner layout, (3, 4, m_c) per colour (4 m_c rows each, fewer than moving the
        state), gathered on first use after ``set_damping``; None without damping."""
        if self._prev_corners is None and self.x_prev is not None:
            self._prev_corners = [
                np.ascontiguousarray(self.x_prev[order[:4 * count]].reshape(4, count, 3).transpose(2, 0, 1))
                for order, count in zip(self.forward.orders, self.forward.counts)]
        return self._prev_corners

    def symmetric_sweep(self, x, dt: float, lams) -> None:
        """The mean of a forward and a backward sweep, both from x (positions and multipliers), at about the cost of
        one sweep: the two are independent, so they run as one forward sweep of two copies of the set on two copies
        of the particles (2 n), whose colour k is the first copy's colour k and the second copy's colour C - 1 - k.
        Each colour's numpy calls thus serve both sweeps (per-call overhead is most of a small colour's cost)."""
        if self._doubled is None:
            c, n, k = self._constraints, self._n, len(self._colours)
            doubled = TetStrainConstraints(np.concatenate([c.indices, c.indices + n]), np.concatenate([c.D, c.D]),
                                           np.tile(c.rest_volume, 2), np.tile(c.inv_mass, 2),
                                           np.tile(c.mu, 2), np.tile(c.lam, 2))
            m = len(c)
            colours = [np.concatenate([self._colours[j], self._colours[k - 1 - j] + m]) for j in range(k)]
            self._doubled = TetStrainColourSweep(doubled, colours, 2 * n)
        k = len(self._colours)
        sizes = [len(colour) for colour in self._colours]
        both = np.concatenate([x, x])
        lams2 = [np.concatenate([lams[j], lams[k - 1 - j]]) for j in range(k)]
        self._doubled.damping = self.damping
        if self.damping > 0.0:  # doubled colour j: colour j's tets, then colour k - 1 - j's (on the copy of x)
            prev = self.prev_corners
            self._doubled._prev_corners = [np.concatenate([prev[j], prev[k - 1 - j]], axis=2) for j in range(k)]
        self._doubled.sweep(both, dt, lams2)
        n = len(x)
        np.add(both[:n], both[n:], out=x)
        x *= 0.5
        for j in range(k):
            lam = lams[j]
            np.add(lams2[j][:sizes[j]], lams2[k - 1 - j][sizes[k - 1 - j]:], out=lam)
            lam *= 0.5

    def _alphas(self, dt):
        if dt != self._dt:
            self._dt = dt
            self.alpha = []
            for b in self.subsets:
                self.alpha.append(alpha_rows(b.alpha(dt)))
        return self.alpha

    def sweep(self, x, dt: float, lams, compliant: bool = True, reverse: bool = False) -> None:
        """One sweep in place on x (n, 3) C-contiguous float64; lams: one (m_c, 2) multiplier array per colour.
        These constraints are always compliant (``compliant`` is ignored)."""
        alphas = self._alphas(dt)
        last = len(self.subsets) - 1

        def project(k, Y):
            c = last - k if reverse else k
            batch, lam = self.subsets[c], lams[c]
            corners = Y[:, :4 * len(batch)].reshape(3, 4, len(batch))  # a view: corners[:, a] is corner a (3, m)
            prev = self.prev_corners[c] if self.damping > 0.0 else None
            dx, dlam = tet_updates(corners, self.D[c], self.w[c], batch.kappa, alphas[c], lam, self.damping, prev)
            corners += dx
            lam += dlam.T

        (self.backward if reverse else self.forward).sweep(x, project)
