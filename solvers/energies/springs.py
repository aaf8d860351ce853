"""Edge springs: Hooke's law and the squared-length spring of Li's solid-sim-tutorial, with analytically projected Hessians.

Both act on d = x_i - x_j of every edge; the 6x6 element Hessian is [[H, -H], [-H, H]] with H the 3x3
Hessian in d, whose eigenvalues are twice those of H, so clamping H's eigenvalues is the exact PSD
projection (no eigen-solver needed). H = a n n^T + b (I - n n^T) with n = d / |d|.
"""
import numpy as np
import scipy.sparse as sp

from .base import BlockHessian, Energy, PositionCache, scatter


class _EdgeEnergy(Energy):
    """Shared plumbing: edges (e, 2) int, rest_length (e,) [m], k (e,) or scalar; stencil fixed at init."""

    def __init__(self, edge_indices, rest_length, k):
        self.edges = np.asarray(edge_indices, np.int64).reshape(-1, 2)
        self.i, self.j = self.edges[:, 0].copy(), self.edges[:, 1].copy()
        self.rest_length = np.asarray(rest_length, float)
        self.k = np.broadcast_to(np.asarray(k, float), self.rest_length.shape).copy()
        # Blocks per edge in the order (i, i), (j, j), (i, j), (j, i): +H, +H, -H, -H.
        self.rows = np.concatenate([self.i, self.j, self.i, self.j])
        self.cols = np.concatenate([self.i, self.j, self.j, self.i])
        self.particle_count = 0 if len(self.edges) == 0 else int(self.edges.max()) + 1
        self._incidence_matrix = None
        self._edge_vectors = PositionCache()  # (d, length) at the last x: a line search's trial, then its gradient

    def _d(self, x):
        """d = x_i - x_j (e, 3) [m] and |d| (e,) of every edge (the arrays are shared by calls at equal x: read only)."""
        return self._edge_vectors.get(x, self._edge_vectors_of)

    def _edge_vectors_of(self, x):
        d = x.take(self.i, axis=0) - x.take(self.j, axis=0)  # take: the values of x[i], several times faster
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        return d, length

    def _incidence(self, particle_count):
        """(particle_count, e) CSR with +1 at (i, e) and -1 at (j, e): it sums per-edge dE/dd (e, 3) into dE/dx,
        one sparse product (the explicit integrators evaluate the springs' force every substep). Built once."""
        if self._incidence_matrix is None or self._incidence_matrix.shape[0] != particle_count:
            e = len(self.edges)
            self._incidence_matrix = sp.csr_matrix(
                (np.concatenate([np.ones(e), -np.ones(e)]), (np.concatenate([self.i, self.j]), np.tile(np.arange(e), 2))),
                shape=(particle_count, e))
        return self._incidence_matrix

    def _gradient_from(self, x, g_d):
        """Per-edge dE/dd (e, 3) -> dE/dx (n, 3): the incidence product, which adds each particle's terms in edge
        order as ``scatter`` of (g_d, -g_d) does (the same sums to the bit, ~3x faster)."""
        if self.particle_count > len(x):
            raise IndexError("an edge refers to a particle beyond x")
        return self._incidence(len(x)) @ g_d

    def _gradient_by_scatter(self, x, g_d):
        """``_gradient_from`` by ``scatter``: the reference its incidence product is tested against."""
        return scatter(self.edges, np.stack([g_d, -g_d], axis=1), len(x))

    def _blocks(self, n, along, across):
        """H = along n n^T + across (I - n n^T) per edge -> the four blocks per edge, stencil order."""
        nn = n[:, :, None] * n[:, None, :]
        H = along[:, None, None] * nn + across[:, None, None] * (np.eye(3)[None] - nn)
        return np.concatenate([H, H, -H, -H])

    def hessian(self, x, project=True):
        d, length = self._d(x)
        n = d / np.where(length > 1e-12, length, 1.0)[:, None]
        along, across = self._eigenvalues(length)
        if project:
            along, across = np.maximum(along, 0.0), np.maximum(across, 0.0)
        return BlockHessian(self.rows, self.cols, self._blocks(n, along, across))


class HookeSprings(_EdgeEnergy):
    """E = sum_e 1/2 k_e (|x_i - x_j| - L_e)^2  [J], k [N/m] (the mass-spring system of GAMES201 lecture 2).

    H in d: k n n^T + k (1 - L/l) (I - n n^T); the across-term is negative for a compressed spring and is
    clamped at 0 by the projection (Choi and Ko 2002). A zero-length spring has no direction: its
    gradient and Hessian are taken as 0.
    """

    def value(self, x):
        _, length = self._d(x)
        return 0.5 * float(np.sum(self.k * (length - self.rest_length) ** 2))

    def gradient(self, x):
        d, length = self._d(x)
        ok = length > 1e-12
        n = d / np.where(ok, length, 1.0)[:, None]
        return self._incidence(len(x)) @ (np.where(ok, self.k * (length - self.rest_length), 0.0)[:, None] * n)

    def _eigenvalues(self, length):
        safe = np.where(length > 1e-12, length, 1.0)
        across = np.where(length > 1e-12, self.k * (1.0 - self.rest_length / safe), 0.0)
        return self.k, across


class SquaredLengthSprings(_EdgeEnergy):
    """The spring of Li's solid-sim-tutorial: E = sum_e L_e^2 1/2 k_e (|x_i - x_j|^2 / L_e^2 - 1)^2  [J].

    With s = |d|^2 / L^2: dE/dd = 2 k (s - 1) d and H = 2 k [(s - 1) I + 2 d d^T / L^2], i.e. along
    n: 2 k (3 s - 1), across: 2 k (s - 1) (negative when compressed; clamped by the projection, as the
    course's make_PD does numerically). For a small stretch eps the energy is 2 k L^2 eps^2, a Hooke
    spring of stiffness 4 k: the Newton solver uses k = stiffness / 4 (docs/api.md).
    """

    def value(self, x):
        _, length = self._d(x)
        L2 = self.rest_length**2
        return 0.5 * float(np.sum(self.k * L2 * (length**2 / L2 - 1.0) ** 2))

    def gradient(self, x):
        d, length = self._d(x)
        s = length**2 / self.rest_length**2
        return self._gradient_from(x, (2.0 * self.k * (s - 1.0))[:, None] * d)

    def _eigenvalues(self, length):
        s = length**2 / self.rest_length**2
        return 2.0 * self.k * (3.0 * s - 1.0), 2.0 * self.k * (s - 1.0)
