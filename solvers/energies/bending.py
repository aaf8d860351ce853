"""Isometric (quadratic) bending of triangle meshes (Bergou, Wardetzky, Harmon, Zorin, Grinspun 2006,
"A Quadratic Bending Model for Inextensible Surfaces").

A hinge is an interior edge (x0, x1) with its two opposite vertices x2 (triangle (x0, x1, x2)) and x3
(triangle (x0, x1, x3)). From the REST positions, once:

    K = [-(cot b0 + cot b1), -(cot a0 + cot a1), cot a0 + cot b0, cot a1 + cot b1]     (dimensionless)
    c = k / (A0 + A1)                                                                [N/m]

a0, a1 the rest angles at x0 in the two triangles, b0, b1 those at x1, A0, A1 the rest areas [m^2], k the
bending stiffness [N m]. Then, at positions x [m]:

    y = sum_i K_i x_i   [m],   r0 = |y at rest|,   E = sum_hinges c/2 (|y| - r0)^2   [J]

Why y measures bending: per triangle, cot a0 x1 + cot b0 x0 over (cot a0 + cot b0) is the foot of the
height from x2, and |e| = h (cot a0 + cot b0), so y = |e| (u2 + u3) with u2, u3 the unit in-plane
normals of the edge pointing to x2 and x3. K sums to 0 and annihilates every planar affine image of a flat
rest hinge, so E measures bending only (no stretching, no rigid motion). Folding a flat hinge by an angle
theta isometrically gives |y| = 2 |e| sin(theta/2) ~ |e| theta, hence

    E ~ 1/2 k |e|^2 / (A0 + A1) theta^2,

a third of the discrete-shells hinge energy (Grinspun, Hirani, Desbrun, Schröder 2003; A_e = (A0 + A1)/3).
The third is chosen so that k is the continuum bending modulus: on an equilateral mesh, rolled in any
direction, the sum equals 1/2 k \\int kappa^2 dA (the discrete-shells weight gives 3 times that).

For a flat rest shape (r0 = 0) E = c/2 |y|^2 = 1/2 x^T Q x is Bergou's quadratic energy: its Hessian
c K K^T (x) I3 is constant (``is_constant_hessian``; Projective Dynamics can prefactor it). For a curved rest
shape E keeps the rest curvature MAGNITUDE |y| = r0 only: y and -y (a hinge folded the other way by the
same angle) have the same energy, so the sign of the rest curvature is not kept.

Units of the stiffness: k [N m] = [J] is the plate bending modulus D (E h^3 / (12 (1 - nu^2)) for a shell of
thickness h). How close the sum is to the continuum 1/2 k \\int kappa^2 dA depends on the mesh: hinge
energies concentrate the curvature on the edges that cross the bending direction (Wardetzky et al. 2007,
"Discrete quadratic curvature energies"). grid_cloth (all diagonals one way) matches the continuum when
rolled across a grid axis and is 3 times stiffer rolled across its diagonals; see tests/test_elastic_energies.py.
"""
import numpy as np
import scipy.sparse as sp

from .base import BlockHessian, Energy, PositionCache, element_stencil, scatter


def hinges_from_triangles(triangles) -> np.ndarray:
    """One hinge (x0, x1, x2, x3) per edge shared by exactly two triangles, (h, 4) int64.

    (x0, x1) is the shared edge as directed in the first (lower index) triangle, x2 that triangle's opposite
    vertex and x3 the second triangle's. Boundary edges (one triangle) and non-manifold edges (three or more)
    give no hinge: a non-manifold edge has no single dihedral angle.
    """
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(tri) == 0:
        return np.zeros((0, 4), np.int64)
    # Triangle (a, b, c) has the directed edges (a, b), (b, c), (c, a) with opposite vertices c, a, b.
    start, end, opposite = tri.ravel(), np.roll(tri, -1, axis=1).ravel(), np.roll(tri, -2, axis=1).ravel()
    key = np.minimum(start, end) * (tri.max() + 1) + np.maximum(start, end)  # one int64 per undirected edge
    order = np.argsort(key, kind="stable")  # stable: the first triangle of an edge comes first
    _, first, counts = np.unique(key[order], return_index=True, return_counts=True)
    pair = first[counts == 2]
    a, b = order[pair], order[pair + 1]
    return np.stack([start[a], end[a], opposite[a], opposite[b]], axis=1)


def _cotangent(u: np.ndarray, v: np.ndarray, double_area: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """cot of the angle between u and v (h, 3): u.v / |u x v|, with |u x v| = twice the triangle's area."""
    return np.divide(np.einsum("hd,hd->h", u, v), double_area, out=np.zeros(len(u)), where=valid)


def hinge_weights(rest_positions: np.ndarray, hinges: np.ndarray):
    """Bergou's K (h, 4), the rest areas A0, A1 (h,) [m^2] of each hinge's triangles, and which hinges are valid.

    Degenerate triangles (zero area, e.g. a zero-length edge) have no angles: their hinges get K = 0 and so
    no bending energy, rather than infinite cotangents.
    """
    x0, x1, x2, x3 = (rest_positions[hinges[:, i]] for i in range(4))
    e = x1 - x0
    double_area0 = np.linalg.norm(np.cross(e, x2 - x0), axis=1)
    double_area1 = np.linalg.norm(np.cross(e, x3 - x0), axis=1)
    longest = np.max([np.einsum("hd,hd->h", d, d) for d in (e, x2 - x0, x2 - x1, x3 - x0, x3 - x1)], axis=0)
    valid = (double_area0 > 1e-12 * longest) & (double_area1 > 1e-12 * longest)
    cot_a0 = _cotangent(e, x2 - x0, double_area0, valid)
    cot_a1 = _cotangent(e, x3 - x0, double_area1, valid)
    cot_b0 = _cotangent(-e, x2 - x1, double_area0, valid)
    cot_b1 = _cotangent(-e, x3 - x1, double_area1, valid)
    K = np.stack([-(cot_b0 + cot_b1), -(cot_a0 + cot_a1), cot_a0 + cot_b0, cot_a1 + cot_b1], axis=1)
    K[:, 0] = -K[:, 1:].sum(axis=1)  # the same value, but summing to 0 to the last bit: y is translation-free
    return K, 0.5 * double_area0, 0.5 * double_area1, valid


class IsometricBending(Energy):
    """Quadratic bending energy of hinges; see the module docstring for the formula.

    rest_positions: (n, 3) [m]; hinges: (h, 4) int (``hinges_from_triangles``); stiffness: (h,) or scalar
    bending modulus [N m].
    """

    def __init__(self, rest_positions, hinges, stiffness):
        X = np.asarray(rest_positions, np.float64)
        self.hinges = np.asarray(hinges, np.int64).reshape(-1, 4)
        self._y = PositionCache()  # y at the last x: a line search's trial, then its gradient
        h = len(self.hinges)
        stiffness = np.broadcast_to(np.asarray(stiffness, np.float64), (h,))
        self.K, area0, area1, valid = hinge_weights(X, self.hinges)
        self.c = np.divide(stiffness, area0 + area1, out=np.zeros(h), where=valid)
        self.rest_norm = np.linalg.norm(self.curvature_vector(X), axis=1)
        # A flat rest hinge gives y = 0 up to rounding; snap it to exactly 0 (|y|/|e| is ~ the fold angle), so
        # that flat sheets get the exactly constant Hessian.
        edge = np.linalg.norm(X[self.hinges[:, 1]] - X[self.hinges[:, 0]], axis=1)
        self.rest_norm[self.rest_norm <= 1e-9 * edge] = 0.0
        self.is_constant_hessian = bool(np.all(self.rest_norm == 0.0))
        self.rows, self.cols = element_stencil(self.hinges)
        self._spread = None  # (particle_count, h) CSR with K_a at (corner a, hinge): sums per-hinge vectors by corner
        self._constant_blocks = None
        if self.is_constant_hessian:
            self._constant_blocks = self._blocks(self.c[:, None, None] * np.eye(3))  # H_y = c I
            self._constant_blocks.flags.writeable = False  # shared by every call

    def curvature_vector(self, x: np.ndarray) -> np.ndarray:
        """y = sum_i K_i x_i per hinge, (h, 3) [m]; computed from x_i - x0 (sum K = 0) for accuracy far from 0. The
        array is shared by calls at equal x (read only)."""
        return self._y.get(x, self._curvature_vector_of)

    def _curvature_vector_of(self, x):
        # K1 (x1 - x0) + K2 (x2 - x0) + K3 (x3 - x0), added in that order (as ``_curvature_vector_reference``'s einsum
        # does), from one gather of the corners per column: ~3x faster than the (h, 4, 3) gather and einsum.
        x0 = x.take(self.hinges[:, 0], axis=0)
        y = self.K[:, 1:2] * (x.take(self.hinges[:, 1], axis=0) - x0)
        y += self.K[:, 2:3] * (x.take(self.hinges[:, 2], axis=0) - x0)
        y += self.K[:, 3:4] * (x.take(self.hinges[:, 3], axis=0) - x0)
        return y

    def _curvature_vector_reference(self, x):
        """``curvature_vector`` as one einsum over the gathered corners: the reference the faster form is tested
        against."""
        corners = x[self.hinges]
        return np.einsum("hk,hkd->hd", self.K[:, 1:], corners[:, 1:] - corners[:, :1])

    def _spread_by_corner(self, per_hinge: np.ndarray, particle_count: int) -> np.ndarray:
        """sum over hinges of K_a v_h into each corner a: (h, 3) -> (particle_count, 3), in hinge order per particle as
        ``scatter`` adds (the same sums to the bit)."""
        if self._spread is None or self._spread.shape[0] != particle_count:
            h = len(self.hinges)
            self._spread = sp.csr_matrix((self.K.ravel(), (self.hinges.ravel(), np.repeat(np.arange(h), 4))),
                                         shape=(particle_count, h))
        return self._spread @ per_hinge

    def _norm_and_ratio(self, y: np.ndarray):
        """|y| and r0/|y| (0 where r0 = 0 or |y| = 0, so nothing divides by zero)."""
        norm = np.linalg.norm(y, axis=1)
        ratio = np.divide(self.rest_norm, norm, out=np.zeros_like(norm), where=norm > 0.0)
        return norm, ratio

    def value(self, x: np.ndarray) -> float:
        norm = np.linalg.norm(self.curvature_vector(x), axis=1)
        return float(0.5 * np.dot(self.c, (norm - self.rest_norm) ** 2))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        y = self.curvature_vector(x)
        _, ratio = self._norm_and_ratio(y)
        # dE/dy = c (|y| - r0) y/|y| = c (1 - r0/|y|) y; at y = 0 that is 0 (for r0 > 0 the cone's tip, where
        # 0 is the symmetric choice of subgradient).
        dE_dy = (self.c * (1.0 - ratio))[:, None] * y
        if len(self.hinges) and int(self.hinges.max()) >= len(x):
            raise IndexError("a hinge refers to a particle beyond x")
        return self._spread_by_corner(dE_dy, len(x))

    def _gradient_by_scatter(self, x: np.ndarray) -> np.ndarray:
        """``gradient`` by ``scatter`` of K_a dE/dy per corner: the reference the sparse product is tested against."""
        y = self._curvature_vector_reference(x)
        _, ratio = self._norm_and_ratio(y)
        dE_dy = (self.c * (1.0 - ratio))[:, None] * y
        return scatter(self.hinges, self.K[:, :, None] * dE_dy[:, None, :], len(x))

    def _blocks(self, H_y: np.ndarray) -> np.ndarray:
        """Blocks (a, b) = K_a K_b H_y of the per-hinge 12x12 K K^T (x) H_y, (16 h, 3, 3), stencil order."""
        KK = self.K[:, :, None] * self.K[:, None, :]
        return (KK[:, :, :, None, None] * H_y[:, None, None]).reshape(-1, 3, 3)

    def hessian(self, x: np.ndarray, project: bool = True) -> BlockHessian:
        if self._constant_blocks is not None:
            return BlockHessian(self.rows, self.cols, self._constant_blocks)
        y = self.curvature_vector(x)
        norm, ratio = self._norm_and_ratio(y)
        unit = np.divide(y, norm[:, None], out=np.zeros_like(y), where=norm[:, None] > 0.0)
        # H_y = c [(1 - r0/|y|)(I - n n^T) + n n^T], as for a Hooke spring of rest length r0 in y-space.
        tangent = 1.0 - ratio
        # At y = 0 with r0 > 0 (a cone's tip) there is no Hessian; use the projected one, 0 (there n = 0 too).
        tangent[(norm == 0.0) & (self.rest_norm > 0.0)] = 0.0
        if project:
            tangent = np.maximum(tangent, 0.0)  # the exact PSD projection: eigenvalues c*tangent (x2) and c
        nn = unit[:, :, None] * unit[:, None, :]
        H_y = self.c[:, None, None] * (tangent[:, None, None] * (np.eye(3) - nn) + nn)
        return BlockHessian(self.rows, self.cols, self._blocks(H_y))
