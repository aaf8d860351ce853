"""Projective Dynamics constraint sets (Bouaziz, Martin, Liu, Kavan, Pauly 2014, "Projective Dynamics:
Fusing Constraint Projections for Fast Simulation").

Every set is a sum of quadratic distances to a constraint manifold,

    E(x) = sum_c w_c/2 |A_c x - p_c|^2,    p_c = the projection of A_c x onto the manifold (the local step),

where A_c acts on each coordinate separately (scalar rows, the same for x, y and z), so the global matrix
sum_c w_c A_c^T A_c is an (n, n) scalar matrix shared by the three coordinates. A set offers

- ``laplacian``  sum_c w_c A_c^T A_c, scipy CSR (n, n) [N/m];
- ``A``          the stacked rows of the projected constraints, scipy CSR (r, n); None when nothing is projected;
- ``project(z, with_energy)``  z = A x (r, 3) -> (q, energy): q = W p (r, 3) [N], so that A^T q is the set's
  share of the global right-hand side, and energy [J] = those constraints' E at x (None unless asked);
- ``quadratic``  Q (n, n) CSR of the constraints whose projection is always 0 (E = 1/2 x^T Q x per coordinate:
  nothing to project, they live in the matrix only), or None.

Elements are projected all at once (batched numpy), never in a Python loop. The solver keeps A's free and
pinned columns apart, so that a local step is one sparse product A_F x_F plus a per-step constant.
"""
import numpy as np
import scipy.sparse as sp

from ..energies import IsometricBending
from ..linalg.eigen3 import rotation_svd
from ..linalg.iterative import inverse_3x3

VOLUME_PROJECTION_ITERATIONS = 8
"""Newton iterations projecting singular values onto s0 s1 s2 = 1 (``project_unit_product``)."""
MIN_SINGULAR_VALUE = 1e-3
"""Singular values of a flat or inverted tet are raised to this before the volume projection."""


def _weighted_gram(A: sp.csr_matrix, row_weight: np.ndarray) -> sp.csr_matrix:
    """A^T diag(row_weight) A as CSR (n, n)."""
    return (A.T @ sp.diags(row_weight) @ A).tocsr()


def _weighted_onto_sphere(z, norm, weighted_radius, fallback_direction, tiny):
    """w p for every row: p = R z/|z| the closest point of the sphere of radius R, as w R (z/|z|) = ``weighted_radius``
    times the unit direction; rows with |z| <= ``tiny`` have no direction and use ``fallback_direction`` (unit)."""
    degenerate = norm <= tiny
    if degenerate.any():
        z = z.copy()
        z[degenerate] = fallback_direction[degenerate]
        norm = np.where(degenerate, 1.0, norm)
    return z * (weighted_radius / norm)[:, None]


def _row_norm(z: np.ndarray) -> np.ndarray:
    """|z_r| for z (r, 3); column by column, which is several times faster than a norm over the short axis."""
    return np.sqrt(z[:, 0] * z[:, 0] + z[:, 1] * z[:, 1] + z[:, 2] * z[:, 2])


class EdgeSprings:
    """Hooke springs E = sum_e k_e/2 (|x_i - x_j| - L_e)^2 (Bouaziz et al. 2014), as PD constraints.

    A_e x = x_i - x_j, p_e = L_e (x_i - x_j)/|x_i - x_j| (the closest vector of length L_e), w_e = k_e [N/m].
    edges (e, 2) int, rest_length (e,) [m], stiffness (e,) or scalar [N/m], rest_positions (n, 3) [m] (a spring
    of zero current length is projected along its rest direction).
    """

    quadratic = None

    def __init__(self, edges, rest_length, stiffness, rest_positions):
        edges = np.asarray(edges, np.int64).reshape(-1, 2)
        self.rest_length = np.asarray(rest_length, np.float64)
        self.k = np.broadcast_to(np.asarray(stiffness, np.float64), self.rest_length.shape).copy()
        e = len(edges)
        self.A = sp.csr_matrix((np.tile([1.0, -1.0], e), (np.repeat(np.arange(e), 2), edges.ravel())),
                               shape=(e, len(rest_positions)))
        self.laplacian = _weighted_gram(self.A, self.k)
        rest_d = rest_positions[edges[:, 0]] - rest_positions[edges[:, 1]]
        self.rest_direction = rest_d / np.maximum(_row_norm(rest_d), 1e-300)[:, None]
        self.kL = self.k * self.rest_length

    def project(self, z, with_energy=False):
        length = _row_norm(z)
        energy = self.energy_of(length) if with_energy else None
        return _weighted_onto_sphere(z, length, self.kL, self.rest_direction, 1e-12), energy

    def energy_of(self, length):
        """The springs' energy [J] at lengths |A x| (e,) [m]."""
        return 0.5 * float(np.einsum("i,i->", self.k, (length - self.rest_length) ** 2))

    def sphere_targets(self):
        """(w R (e,) [N], fallback unit directions (e, 3), tiny [m]): what ``project`` hands ``_weighted_onto_sphere``,
        for its native twin (``native.implicit_kernels.SphereProjection``)."""
        return self.kL, self.rest_direction, 1e-12


class HingeBending:
    """Isometric bending (``solvers.energies.IsometricBending``): E = sum_h c_h/2 (|y_h| - r0_h)^2, y_h = sum_a K_ha x_a

    A_h x = y_h (one scalar row per hinge: K_h on its four corners), w_h = c_h [N/m], p_h = r0_h y_h/|y_h| (the
    closest point on the sphere of radius r0_h [m]). A flat rest hinge has r0 = 0 and p = 0: c/2 |y|^2 is Bergou's
    quadratic energy, wholly in the matrix (``quadratic``). Only curved hinges (r0 > 0) are projected (``A``); a
    curved hinge folded flat (y = 0) is projected along its rest y.
    """

    def __init__(self, rest_positions, hinges, stiffness):
        X = np.asarray(rest_positions, np.float64)
        self.bending = bending = IsometricBending(X, hinges, stiffness)
        h = len(bending.hinges)
        A = sp.csr_matrix((bending.K.ravel(), (np.repeat(np.arange(h), 4), bending.hinges.ravel())), shape=(h, len(X)))
        self.laplacian = _weighted_gram(A, bending.c)
        curved = bending.rest_norm > 0.0
        self.quadratic = _weighted_gram(A[~curved], bending.c[~curved]) if not curved.all() else None
        self.A = None
        if curved.any():
            self.A = A[curved].tocsr()
            self.c = bending.c[curved]
            self.rest_norm = bending.rest_norm[curved]
            rest_y = self.A @ X
            self.rest_direction = rest_y / _row_norm(rest_y)[:, None]
            self.weighted_radius = self.c * self.rest_norm

    def project(self, z, with_energy=False):
        norm = _row_norm(z)
        energy = self.energy_of(norm) if with_energy else None
        return _weighted_onto_sphere(z, norm, self.weighted_radius, self.rest_direction, 1e-300), energy

    def energy_of(self, norm):
        """The curved hinges' energy [J] at |y_h| = norm (h,) [m]."""
        return 0.5 * float(np.einsum("i,i->", self.c, (norm - self.rest_norm) ** 2))

    def sphere_targets(self):
        """(c r0 (h,) [N], fallback unit directions (h, 3), tiny [m]) of the curved hinges, as ``project`` uses them,
        for its native twin (``native.implicit_kernels.SphereProjection``)."""
        return self.weighted_radius, self.rest_direction, 1e-300


class TetStrain:
    """Corotated (ARAP) strain plus volume constraints per tet (Bouaziz et al. 2014, sections 4.2 and 5).

    With G (4, 3) the gradients of the linear shape functions (F = Ds Dm^-1, F[d, c] = sum_a x_a[d] G[a, c]),
    row 3t + c of A x is column c of F (one entry per coordinate d), and per tet

        strain:  w_s/2 |F - R|_F^2,      R = the rotation of F's polar decomposition (SVD, det R = +1),
        volume:  w_v/2 |F - F_v|_F^2,    F_v = U diag(s) V^T, s the closest singular values with s0 s1 s2 = 1.

    Weights, so that the small-strain energy is linear elasticity V0 (mu eps:eps + lambda/2 (tr eps)^2) exactly:
    for F = R (I + eps), |F - R|^2 = |eps|^2, so w_s = 2 mu V0; and the singular values 1 + e_i (e_i the
    principal strains) move to 1 + e_i - tr(eps)/3 onto s0 s1 s2 = 1 (to first order), so |F - F_v|^2 =
    3 (tr eps / 3)^2 = (tr eps)^2 / 3 and w_v = 3 lambda V0. Both terms share A_t, so one set carries them: the
    row weight is w_s + w_v and the target q = w_s R + w_v F_v. mu, lambda [Pa] per tet (``material_arrays``);
    a tet of zero rest volume gets no constraint.
    """

    quadratic = None

    def __init__(self, rest_positions, tets, rest_volume, mu, lam):
        X = np.asarray(rest_positions, np.float64)
        tets = np.asarray(tets, np.int64).reshape(-1, 4)
        t = len(tets)
        corners = X[tets]
        Dm = np.swapaxes(corners[:, 1:] - corners[:, :1], 1, 2)  # columns X_a - X_0, (t, 3, 3)
        volume = np.asarray(rest_volume, np.float64)
        valid = volume > 1e-12 * np.max(np.abs(volume), initial=0.0)
        Dm_inv = np.zeros((t, 3, 3))
        Dm_inv[valid] = inverse_3x3(Dm[valid])
        G = np.concatenate([-Dm_inv.sum(axis=1, keepdims=True), Dm_inv], axis=1)  # (t, 4, 3)
        self.w_strain = np.where(valid, 2.0 * np.broadcast_to(mu, (t,)) * volume, 0.0)
        self.w_volume = np.where(valid, 3.0 * np.broadcast_to(lam, (t,)) * volume, 0.0)
        rows = np.broadcast_to(3 * np.arange(t)[:, None, None] + np.arange(3)[None, None, :], (t, 4, 3))
        cols = np.broadcast_to(tets[:, :, None], (t, 4, 3))
        self.A = sp.csr_matrix((G.ravel(), (rows.ravel(), cols.ravel())), shape=(3 * t, len(X)))
        self.laplacian = _weighted_gram(self.A, np.repeat(self.w_strain + self.w_volume, 3))
        self.native = None
        """The whole projection in C (``native.implicit_kernels.TetTargets``, bit for bit the NumPy below), which the
        solver sets when the library loads, or None."""

    def project(self, z, with_energy=False):
        t = len(z) // 3
        F = np.ascontiguousarray(z.reshape(t, 3, 3).transpose(2, 1, 0))  # (3, 3, t): F[d, c] = z[3t + c, d]
        if self.native is not None:
            q, S, s = self.native(F)
        else:
            U, S, V = rotation_svd(F)
            s = project_unit_product(S.T).T
            # w_s U V^T + w_v U diag(s) V^T = U diag(w_s + w_v s) V^T.
            q = np.einsum("dat,at,cat->dct", U, self.w_strain + self.w_volume * s, V).transpose(2, 1, 0).reshape(-1, 3)
        energy = None
        if with_energy:
            energy = 0.5 * float(np.dot(self.w_strain, np.sum((S - 1.0) ** 2, axis=0))
                                 + np.dot(self.w_volume, np.sum((S - s) ** 2, axis=0)))
        return q, energy


def project_unit_product(sigma: np.ndarray) -> np.ndarray:
    """Closest s (m, 3) to singular values sigma (m, 3) with s0 s1 s2 = 1 (the volume-preserving set).

    The optimality condition s - sigma = lambda grad C(s), C = s0 s1 s2 - 1, reads s_i - sigma_i = lambda / s_i on
    C = 0, so s_i(lambda) = (sigma_i + sqrt(sigma_i^2 + 4 lambda)) / 2 (the root near sigma_i) and lambda solves
    P(lambda) = s0 s1 s2 = 1, P increasing. Newton's method on P - 1 inside a bracket (bisection when a step leaves
    it): at lambda = 1 - min sigma every s_i >= 1 (P >= 1), at lambda = 1 - max sigma every s_i <= 1. A last uniform
    scaling by P^(-1/3) (``inverse_cube_root``) puts s on the set (it only matters where P = 1 has no root on this
    branch, a tet squashed to less than a quarter of its largest stretch). Values below MIN_SINGULAR_VALUE (a flat or
    inverted tet) are raised to it first, so the result is on the positive branch. Only +, -, *, /, sqrt and exact
    exponent arithmetic: the native twin (src/eigen3.c, ``softsim_tet_targets``) repeats it bit for bit.
    """
    b = np.maximum(sigma, MIN_SINGULAR_VALUE).T.copy()  # (3, m): column arithmetic is cheaper than row reductions
    b2 = b * b

    def branch(lam):
        root = np.sqrt(np.maximum(b2 + 4.0 * lam, 0.0))
        return 0.5 * (b + root), root

    lam = np.zeros(b.shape[1])
    s, root = branch(lam)
    P = s[0] * s[1] * s[2]
    g = P - 1.0
    edge = -0.25 * b2.min(axis=0)  # below this lambda the smallest s_i is complex
    low = np.where(g > 0.0, np.maximum(1.0 - b.max(axis=0), edge), 0.0)
    high = np.where(g > 0.0, 0.0, np.maximum(1.0 - b.min(axis=0), 0.0))
    for _ in range(VOLUME_PROJECTION_ITERATIONS):
        if np.abs(g).max() < 1e-15:
            break
        slope = P * (1.0 / np.maximum(s * root, 1e-300)).sum(axis=0)  # dP/dlambda = P sum_i 1 / (s_i root_i)
        step = lam - g / slope
        lam = np.where((step >= low) & (step <= high), step, 0.5 * (low + high))
        s, root = branch(lam)
        P = s[0] * s[1] * s[2]
        g = P - 1.0
        low = np.where(g < 0.0, lam, low)
        high = np.where(g > 0.0, lam, high)
    return (s * inverse_cube_root(P)).T


CUBE_ROOT_ITERATIONS = 8
"""Newton iterations of ``inverse_cube_root`` from a start within a factor of 2: the relative error squares each time
(0.6 -> 1e-14 in six), the last two settle the rounding."""


def inverse_cube_root(P: np.ndarray) -> np.ndarray:
    """P^(-1/3) for P (m,) > 0 by Newton's method on P c^3 = 1, c <- (2 P c^3 + 1) / (3 P c^2), from c = 2^-(e // 3)
    (P = f 2^e, f in [0.5, 1): within a factor of 2 of the root), CUBE_ROOT_ITERATIONS times: only exact exponent
    arithmetic, *, + and /, so the native twin gets the same bits (np.cbrt may not). Non-finite P starts from c = 1."""
    _, exponent = np.frexp(P)
    exponent = np.where(np.isfinite(P), exponent, 0)
    c = np.ldexp(1.0, -(exponent // 3))
    for _ in range(CUBE_ROOT_ITERATIONS):
        c2 = c * c
        c = (2.0 * P * (c2 * c) + 1.0) / (3.0 * P * c2)
    return c


class SewingSprings:
    """Seams (``solvers/sewing.py``) as PD constraints: E_e = min over p of k/2 |A_e x - p|^2 + F |p|, A_e x = x_i - x_j.

    That minimum is the capped zero-length spring of ``energies.sewing.SewingSprings`` (1/2 k l^2 up to l = F / k,
    F l - F^2 / (2 k) beyond: the Moreau envelope of F |p|), and its minimizer, the local step, is the soft threshold
    p = d max(0, 1 - F / (k |d|)): 0 (the ends together) while the pull is below the cap. w_e = k [N/m], so the global
    matrix is constant. edges (e, 2) int, stiffness k [N/m], max_force F [N] (inf: no cap), particle_count n.
    """

    quadratic = None

    def __init__(self, edges, stiffness, max_force, particle_count):
        edges = np.asarray(edges, np.int64).reshape(-1, 2)
        e = len(edges)
        self.k = float(stiffness)
        self.max_force = float(max_force)
        self.A = sp.csr_matrix((np.tile([1.0, -1.0], e), (np.repeat(np.arange(e), 2), edges.ravel())),
                               shape=(e, particle_count))
        self.laplacian = _weighted_gram(self.A, np.full(e, self.k))

    def project(self, z, with_energy=False):
        length = _row_norm(z)
        if np.isfinite(self.max_force):
            keep = np.maximum(0.0, 1.0 - self.max_force / np.maximum(self.k * length, 1e-300))
        else:
            keep = np.zeros_like(length)
        p = z * keep[:, None]
        energy = None
        if with_energy:
            r = z - p
            energy = 0.5 * self.k * float(np.einsum("ij,ij->", r, r))
            if np.isfinite(self.max_force):
                energy += self.max_force * float(np.sum(keep * length))
        return self.k * p, energy
