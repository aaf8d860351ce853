"""Stable Neo-Hookean elasticity of tetrahedra (Smith, de Goes, Kim 2018, "Stable Neo-Hookean Flesh Simulation").

Per tet t with rest edge matrix Dm = [X1 - X0, X2 - X0, X3 - X0] [m], rest volume V0 = |det Dm| / 6 [m^3] and
deformation gradient F = Ds Dm^-1 (Ds the same edge matrix at the current positions; F is dimensionless):

    Psi(F) = mu'/2 (I_C - 3) + lam'/2 (J - alpha)^2 - mu'/2 log(I_C + 1)          [J/m^3 = Pa]
    I_C = tr(F^T F),   J = det F,   alpha = 1 + 3 mu' / (4 lam')
    E = sum_t V0_t (Psi(F_t) - Psi(I))                                             [J]

mu' = 4/3 mu and lam' = lam + 5/6 mu is the paper's reparametrization: linearising Psi at F = I gives the
quadratic form (3/2) mu' |eps|^2 + (lam' - 5/8 mu') (tr eps)^2 for a symmetric strain eps, i.e. linear
elasticity mu |eps|^2 + lam/2 (tr eps)^2 with the given Lamé parameters mu, lam [Pa]. alpha makes F = I a
stationary point (P(I) = 0). Psi(I) = lam'/2 (1 - alpha)^2 - mu' log 2 is not 0, so it is subtracted: the
energy is 0 at rest and under any rigid motion (it changes no gradient or Hessian).

Why this model: Psi is finite and smooth for every F, including flat (J = 0) and inverted (J < 0) tets, since
there is no log J barrier; J < alpha is simply pushed back towards alpha by the (J - alpha)^2 term. So no
inversion barrier and no line-search filter for inversion are needed (``max_step`` stays 1); the Newton
solver's line search only has to handle collisions.

vec ordering: vec(F) = F.reshape(9) row-major, f[3 i + j] = F[i, j]; positions of a tet are ordered
x.reshape(12) as (corner a, axis l) -> 3 a + l, matching ``element_stencil``.
"""
import numpy as np

from ..linalg.eigen3 import jacobi_eigen, rotation_svd
from ..linalg.iterative import inverse_3x3
from .base import BlockHessian, Energy, element_blocks, element_stencil, project_psd, scatter

# Levi-Civita symbol eps[i, j, k]: det F = 1/6 eps_ijk eps_lmn F_il F_jm F_kn.
LEVI_CIVITA = np.zeros((3, 3, 3))
LEVI_CIVITA[0, 1, 2] = LEVI_CIVITA[1, 2, 0] = LEVI_CIVITA[2, 0, 1] = 1.0
LEVI_CIVITA[0, 2, 1] = LEVI_CIVITA[2, 1, 0] = LEVI_CIVITA[1, 0, 2] = -1.0


def cofactor(F: np.ndarray) -> np.ndarray:
    """dJ/dF for J = det F, (k, 3, 3): its columns are f1 x f2, f2 x f0, f0 x f1 (f_j the columns of F)."""
    f0, f1, f2 = F[:, :, 0], F[:, :, 1], F[:, :, 2]
    return np.stack([np.cross(f1, f2), np.cross(f2, f0), np.cross(f0, f1)], axis=2)


# DET_HESSIAN_BASIS[(i, l), (j, m), (k, n)] = eps_ijk eps_lmn, as a (81, 9) matrix for one matmul per call.
DET_HESSIAN_BASIS = np.einsum("ijk,lmn->iljmkn", LEVI_CIVITA, LEVI_CIVITA).reshape(81, 9)


def determinant_hessian(F: np.ndarray) -> np.ndarray:
    """d2J/dvec(F)2 for J = det F, (k, 9, 9) in the row-major vec ordering.

    H_J[(i, l), (j, m)] = d2J / dF_il dF_jm = sum_kn eps_ijk eps_lmn F_kn (linear in F, since J is cubic).
    """
    return (F.reshape(-1, 9) @ DET_HESSIAN_BASIS.T).reshape(-1, 9, 9)


SVD_CONDITION = 1e-4
"""``NeoHookean.projected_stress_hessian`` takes its analytic eigensystem only where the second singular value of F is at
least this times the first: below, u_1 = F v_1 / sigma_1 loses digits (error ~ 1e-16 sigma_0 / sigma_1) and the tet,
flattened to a segment, is projected by the batched 9x9 eigh instead."""
_PAIRS = ((1, 2, 0), (0, 2, 1), (0, 1, 2))
"""(i, j, k): the twist and flip modes mix F's entries (i, j) and (j, i) in the singular frame, k the third axis."""


def signed_svd(F: np.ndarray):
    """F = U diag(sigma) V^T with U, V rotations (det +1) and sigma_0 >= sigma_1 >= |sigma_2|, sigma_2 < 0 for an
    inverted F (``linalg.eigen3.rotation_svd``, Irving et al. 2004, for matrices stacked first). F: (k, 3, 3). Returns
    (U, sigma, V, ok): (k, 3, 3), (k, 3), (k, 3, 3), and ok (k,) bool, False where sigma_1 < SVD_CONDITION sigma_0 (U
    is not reliable there)."""
    U, sigma, V = rotation_svd(np.ascontiguousarray(F.transpose(1, 2, 0)))
    sigma = sigma.T
    ok = np.isfinite(sigma).all(axis=1) & (sigma[:, 0] > 0.0) & (sigma[:, 1] >= SVD_CONDITION * sigma[:, 0])
    return U.transpose(2, 0, 1), sigma, V.transpose(2, 0, 1), ok


def shape_derivatives(Dm_inv: np.ndarray) -> np.ndarray:
    """D (k, 4, 3) with F = sum_a x_a D[a]^T, i.e. dF_ij/dx_(a,l) = delta_il D[a, j].

    Corners 1..3 are the rows of Dm^-1; corner 0 is minus their sum (F does not change under translation).
    """
    return np.concatenate([-Dm_inv.sum(axis=1, keepdims=True), Dm_inv], axis=1)


def deformation_jacobian(D: np.ndarray) -> np.ndarray:
    """B = dvec(F)/dx (k, 9, 12): B[t, 3 i + j, 3 a + l] = delta_il D[t, a, j]. Constant per tet."""
    return np.einsum("il,taj->tijal", np.eye(3), D).reshape(-1, 9, 12)


class NeoHookean(Energy):
    """Stable Neo-Hookean energy of a tet mesh; see the module docstring for the formula.

    rest_positions: (n, 3) [m]; tet_indices: (k, 4) int; mu, lam: (k,) or scalars [Pa] (Lamé parameters of
    linear elasticity, see ``solvers.material.lame_parameters``; the paper's mu', lam' are derived here).
    """

    def __init__(self, rest_positions, tet_indices, mu, lam):
        X = np.asarray(rest_positions, np.float64)
        self.tets = np.asarray(tet_indices, np.int64).reshape(-1, 4)
        k = len(self.tets)
        mu = np.broadcast_to(np.asarray(mu, np.float64), (k,))
        lam = np.broadcast_to(np.asarray(lam, np.float64), (k,))
        self.mu = 4.0 / 3.0 * mu
        self.lam = lam + 5.0 / 6.0 * mu
        # lam' > 0 for every stable material (bulk modulus lam + 2/3 mu > 0 gives lam' > mu/6); guard 0/0 anyway.
        self.alpha = 1.0 + np.divide(0.75 * self.mu, self.lam, out=np.zeros(k), where=self.lam > 0.0)
        self.rest_density = 0.5 * self.lam * (1.0 - self.alpha) ** 2 - self.mu * np.log(2.0)  # Psi(I)

        Dm = self._edge_matrix(X)
        det = np.linalg.det(Dm) if k else np.zeros(0)
        # A flat rest tet has no Dm^-1 and no volume: it gets V0 = 0 and Dm^-1 = 0, so it adds nothing.
        scale = np.einsum("tij,tij->t", Dm, Dm) ** 1.5
        valid = np.abs(det) > 1e-12 * scale
        self.Dm_inv = np.zeros_like(Dm)
        if np.any(valid):
            self.Dm_inv[valid] = inverse_3x3(Dm[valid])
        self.rest_volume = np.where(valid, np.abs(det) / 6.0, 0.0)
        self.D = shape_derivatives(self.Dm_inv)
        self.B = deformation_jacobian(self.D)
        self.rows, self.cols = element_stencil(self.tets)

    def _edge_matrix(self, x: np.ndarray) -> np.ndarray:
        """[x1 - x0, x2 - x0, x3 - x0] as columns, (k, 3, 3) [m]."""
        corners = x[self.tets]
        return np.swapaxes(corners[:, 1:] - corners[:, :1], 1, 2)

    def deformation_gradient(self, x: np.ndarray) -> np.ndarray:
        """F = Ds Dm^-1 per tet, (k, 3, 3), dimensionless."""
        return self._edge_matrix(x) @ self.Dm_inv

    def volume_ratio(self, x: np.ndarray) -> np.ndarray:
        """J = det F = current / rest signed volume per tet, (k,); negative for an inverted tet."""
        return np.linalg.det(self.deformation_gradient(x)) if len(self.tets) else np.zeros(0)

    def _invariants(self, F: np.ndarray):
        I_C = np.einsum("tij,tij->t", F, F)
        return I_C, np.linalg.det(F)

    def value(self, x: np.ndarray) -> float:
        if len(self.tets) == 0:
            return 0.0
        I_C, J = self._invariants(self.deformation_gradient(x))
        psi = (0.5 * self.mu * (I_C - 3.0) + 0.5 * self.lam * (J - self.alpha) ** 2
               - 0.5 * self.mu * np.log(I_C + 1.0))
        return float(np.dot(self.rest_volume, psi - self.rest_density))

    def first_piola(self, F: np.ndarray) -> np.ndarray:
        """P = dPsi/dF = mu' (1 - 1/(I_C + 1)) F + lam' (J - alpha) dJ/dF, (k, 3, 3) [Pa]."""
        I_C, J = self._invariants(F)
        shear = self.mu * (1.0 - 1.0 / (I_C + 1.0))
        return shear[:, None, None] * F + (self.lam * (J - self.alpha))[:, None, None] * cofactor(F)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        if len(self.tets) == 0:
            return np.zeros_like(x)
        P = self.first_piola(self.deformation_gradient(x))
        # dE/dx_a = V0 P D[a] (column a - 1 of V0 P Dm^-T for a = 1..3); D[0] = -sum keeps the sum 0.
        per_corner = self.rest_volume[:, None, None] * np.einsum("tlj,taj->tal", P, self.D)
        return scatter(self.tets, per_corner, len(x))

    def stress_hessian(self, F: np.ndarray) -> np.ndarray:
        """d2Psi/dvec(F)2, (k, 9, 9) [Pa], row-major vec:

        mu' (1 - 1/(I_C + 1)) I9 + 2 mu'/(I_C + 1)^2 f f^T + lam' (g g^T + (J - alpha) H_J),
        f = vec F, g = vec dJ/dF, H_J = d2J/dvec(F)2.
        """
        I_C, J = self._invariants(F)
        f = F.reshape(-1, 9)
        g = cofactor(F).reshape(-1, 9)
        inv = 1.0 / (I_C + 1.0)
        H = (self.mu * (1.0 - inv))[:, None, None] * np.eye(9)
        H += (2.0 * self.mu * inv ** 2)[:, None, None] * (f[:, :, None] * f[:, None, :])
        H += self.lam[:, None, None] * (g[:, :, None] * g[:, None, :])
        H += (self.lam * (J - self.alpha))[:, None, None] * determinant_hessian(F)
        return H

    def projected_stress_hessian(self, F: np.ndarray, H: np.ndarray = None) -> np.ndarray:
        """``project_psd(stress_hessian(F))`` (k, 9, 9) [Pa] from the analytic eigensystem of stable Neo-Hookean (Smith,
        de Goes, Kim 2019, "Analytic Eigensystems for Isotropic Distortion Energies"), without a 9x9 eigh. H: the
        unprojected ``stress_hessian(F)`` if already computed.

        Psi depends on F only through I_C and J, both unchanged by F -> R F Q for rotations R, Q, so with the signed SVD
        F = U S V^T the Hessian is (U (x) V) H_S (U (x) V)^T (row-major vec: vec(U X V^T) = (U (x) V) vec X), and H_S,
        from the formula of ``stress_hessian`` at S = diag(s), splits into
        - for each pair (i, j) with k the third axis: on (e_ij, e_ji) the block a I2 - c s_k [[0, 1], [1, 0]] (H_J's
          (ij, ji) entry is -s_k), eigenvalues a - c s_k (flip, (e_ij + e_ji) / sqrt 2) and a + c s_k (twist,
          (e_ij - e_ji) / sqrt 2);
        - on the diagonal entries (e_00, e_11, e_22), the scaling block a I3 + b s s^T + lam' g g^T + c K,
          g = (s_1 s_2, s_0 s_2, s_0 s_1), K = [[0, s_2, s_1], [s_2, 0, s_0], [s_1, s_0, 0]] (H_J's (ii, jj) entry is
          s_k), eigen-decomposed by cyclic Jacobi (``linalg.eigen3``),
        with a = mu' (1 - 1/(I_C + 1)), b = 2 mu' / (I_C + 1)^2, c = lam' (J - alpha). The projection adds -lambda e e^T
        for each eigenpair with lambda < 0 (mode e = vec(U E V^T)), so an element that is PSD keeps H exactly. Tets whose
        SVD is unreliable (``signed_svd``'s ok, SVD_CONDITION) are projected by ``project_psd``. Equal to
        ``project_psd`` to round-off (tests/test_neo_hookean_eigensystem.py)."""
        if H is None:
            H = self.stress_hessian(F)
        if len(F) == 0:
            return H
        U, s, V, ok = signed_svd(F)
        I_C = np.einsum("tij,tij->t", F, F)
        J = s[:, 0] * s[:, 1] * s[:, 2]
        inv = 1.0 / (I_C + 1.0)
        a = self.mu * (1.0 - inv)
        b = 2.0 * self.mu * inv**2
        c = self.lam * (J - self.alpha)
        g = np.stack([s[:, 1] * s[:, 2], s[:, 0] * s[:, 2], s[:, 0] * s[:, 1]], axis=1)
        M = (a[:, None, None] * np.eye(3) + b[:, None, None] * (s[:, :, None] * s[:, None, :])
             + self.lam[:, None, None] * (g[:, :, None] * g[:, None, :]))
        for i, j, k in _PAIRS:
            M[:, i, j] += c * s[:, k]
            M[:, j, i] += c * s[:, k]
        mu_scale, Q = jacobi_eigen(np.ascontiguousarray(M.transpose(1, 2, 0)))  # (3, k), (3, 3, k)
        # Eigenvalues of the 9 modes: scaling 0-2, flip 3-5, twist 6-8 (pairs in _PAIRS order).
        s_k = s[:, [k for _, _, k in _PAIRS]]
        lam_modes = np.concatenate([mu_scale.T, a[:, None] - c[:, None] * s_k, a[:, None] + c[:, None] * s_k], axis=1)
        clamp = np.where(ok[:, None], np.maximum(-lam_modes, 0.0), 0.0)
        out = H.copy()
        # -lambda vec(E) vec(E)^T for every mode with lambda < 0, E = U X V^T (X the mode in the singular frame). Near
        # rest most tets clamp twist modes (a + c s_k ~ 0 there), few any other: the modes clamped in more than a
        # quarter of the tets go into one batched product E^T diag(w) E over every clamped tet, the rare ones are added
        # mode by mode in their own tets.
        negative = clamp > 0.0
        counts = negative.sum(axis=0)
        dense = np.flatnonzero(4 * counts > len(F))
        t = np.flatnonzero(negative[:, dense].any(axis=1))
        if len(t):
            E = self._modes(U[t], V[t], Q[:, :, t], dense)
            out[t] += np.swapaxes(E * clamp[t][:, dense, None], 1, 2) @ E
        for mode in np.setdiff1d(np.flatnonzero(counts), dense):
            t = np.flatnonzero(negative[:, mode])
            e = self._modes(U[t], V[t], Q[:, :, t], [mode])[:, 0]
            out[t] += clamp[t, mode, None, None] * (e[:, :, None] * e[:, None, :])
        if not ok.all():
            out[~ok] = project_psd(H[~ok])
        return out

    @staticmethod
    def _modes(U, V, Q, modes):
        """vec(U X V^T) (m, len(modes), 9) of the eigenmodes ``modes`` (0-2 scaling, X = diag(Q[:, mode]); 3-5 flip,
        6-8 twist of the pairs in _PAIRS order) for m tets: U, V (m, 3, 3), Q (3, 3, m) the scaling block's
        eigenvectors (Q[:, e] belongs to eigenvalue e)."""
        E = np.empty((len(U), len(modes), 3, 3))
        root_half = np.sqrt(0.5)
        for n, mode in enumerate(modes):
            if mode < 3:  # sum_d Q[d] u_d v_d^T
                E[:, n] = np.einsum("tid,dt,tjd->tij", U, Q[:, mode], V)
            else:  # (u_i v_j^T +- u_j v_i^T) / sqrt 2: + flip, - twist
                i, j, _ = _PAIRS[mode % 3]
                sign = 1.0 if mode < 6 else -1.0
                E[:, n] = root_half * (U[:, :, i, None] * V[:, None, :, j] + sign * U[:, :, j, None] * V[:, None, :, i])
        return E.reshape(len(U), len(modes), 9)

    def hessian(self, x: np.ndarray, project: bool = True) -> BlockHessian:
        if len(self.tets) == 0:
            return BlockHessian(self.rows, self.cols, np.zeros((0, 3, 3)))
        F = self.deformation_gradient(x)
        H_F = self.stress_hessian(F)
        if project:
            # F is linear in x (dvec(F)/dx = B is constant), so V0 B^T H_F B is PSD whenever H_F is: clamping
            # the 9x9 is enough and cheaper than the 12x12 (Teran et al. 2005 project in F space too). It is
            # not the Frobenius-nearest PSD 12x12 matrix (B^T B is not the identity), only a PSD one. The 9x9's
            # eigensystem is analytic (``projected_stress_hessian``), no batched eigh.
            H_F = self.projected_stress_hessian(F, H_F)
        local = self.rest_volume[:, None, None] * (np.swapaxes(self.B, 1, 2) @ H_F @ self.B)
        return BlockHessian(self.rows, self.cols, element_blocks(local))
