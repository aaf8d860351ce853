"""Python bindings of the implicit solvers' native kernels (``src/implicit.c``).

- ``SphereProjection`` <-> a Projective Dynamics set projected onto spheres (``projective.constraints.EdgeSprings``,
  the curved hinges of ``HingeBending``): ``project`` is the set's ``project(A_free @ x_free + z_pinned)`` (its
  targets q = w p, and the lengths |A x| its energy is computed from, by the set itself: ``energy_of``), ``scatter``
  is ``b + A_free_T @ q`` of ``ProjectiveSolver.global_solve``;
- ``BlockMatrix`` <-> a scipy BSR matrix of 3x3 blocks in ``A @ x`` (``sparsetools.bsr_matvec``), for the implicit
  mass-spring solver's CG and Jacobi solves (``linalg.iterative``), which only use ``A @ x``; its ``block_cg`` is
  ``linalg.iterative.block_cg`` on it wholly in C (``src/block_cg.c``);
- ``BlockAssembly`` <-> ``linalg.pattern.BlockPattern.assemble`` (scipy's csr_matvecs of its ``sum_matrix`` with the
  energies' Hessian blocks), the implicit mass-spring solver's assembly of its Newton matrix;
- ``RotationSVD`` <-> ``linalg.eigen3.rotation_svd`` (src/eigen3.c), the per-tet SVD of Projective Dynamics' tet
  strain set (``projective.constraints.TetStrain``).

Both repeat their twin's arithmetic in its order: bit for bit equal (tests/test_native_implicit.py).

Built once per solver (``SphereProjection``) or once per linear solve's matrix (``BlockMatrix``, whose data changes
with every linearization): the constructor checks every array it hands to C (dtype, C-contiguity, shape, every index
within range, CSR/BSR row pointers from 0 to the entry count, non-decreasing) and raises ValueError naming it; it
keeps int64 copies of scipy's int32 index arrays. Per call only the vectors passed in are checked (dtype, shape,
contiguity). Outputs are fresh arrays the caller may keep (the targets live until the next global solve).
"""
import numpy as np
import scipy.sparse as sp

from .kernels import F64, I64, checked, checked_indices
from .library import pointer


def _row_pointers(name: str, indptr, rows: int, entries: int) -> np.ndarray:
    """indptr as int64 (rows + 1,), from 0 to ``entries``, non-decreasing; else ValueError naming it."""
    indptr = np.ascontiguousarray(indptr, dtype=np.int64) if isinstance(indptr, np.ndarray) else indptr
    indptr = checked(name, indptr, I64, (rows + 1,))
    if indptr[0] != 0 or indptr[-1] != entries or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}: must run from 0 to {entries}, non-decreasing")
    return indptr


def _csr(name: str, matrix, shape: tuple):
    """(indptr, indices, data) of a scipy CSR matrix of ``shape``, checked, as int64 / float64 C-contiguous arrays."""
    if not sp.issparse(matrix) or matrix.format != "csr":
        raise ValueError(f"{name}: expected a scipy CSR matrix, got {type(matrix).__name__}")
    if matrix.shape != shape:
        raise ValueError(f"{name}: shape must be {shape}, got {matrix.shape}")
    data = checked(f"{name}.data", matrix.data, F64, (None,))
    indices = np.ascontiguousarray(matrix.indices, dtype=np.int64)
    checked_indices(f"{name}.indices", indices, shape[1], (len(data),))
    indptr = _row_pointers(f"{name}.indptr", matrix.indptr, shape[0], len(data))
    return indptr, indices, data


class SphereProjection:
    """The native local step of one PD set projected onto spheres, and its scatter into the right-hand side.

    A_free (r, nf) CSR: the set's rows over the free particles; A_free_T (nf, r) CSR its transpose (as the solver
    keeps them); weighted_radius (r,) = w R [N]; fallback (r, 3): the unit direction a row of zero length is
    projected along; tiny [m]: the length at or below which a row has no direction (the set's own threshold).
    """

    def __init__(self, library, A_free, A_free_T, weighted_radius, fallback, tiny: float):
        self.library = library
        r, nf = A_free.shape
        self.rows, self.nf = r, nf
        self.A = _csr("A_free", A_free, (r, nf))
        self.AT = _csr("A_free_T", A_free_T, (nf, r))
        self.weighted_radius = checked("weighted_radius", weighted_radius, F64, (r,))
        self.fallback = checked("fallback", fallback, F64, (r, 3))
        self.tiny = float(tiny)
        self.zeros = np.zeros((r, 3))  # z_pinned without pins (NumPy adds the scalar 0.0: the same bits)
        self._a = tuple(pointer(a) for a in self.A)
        self._at = tuple(pointer(a) for a in self.AT)

    def project(self, x_free, z_pinned=None):
        """(q (r, 3) [N], length (r,) [m]): the targets w p and |A x| at the free positions x_free (nf, 3), with the
        pinned particles' share z_pinned (r, 3) of A x (None: no pins)."""
        x_free = checked("x_free", x_free, F64, (self.nf, 3))
        z_pinned = self.zeros if z_pinned is None else checked("z_pinned", z_pinned, F64, (self.rows, 3))
        q = np.empty((self.rows, 3))
        length = np.empty(self.rows)
        self.library.softsim_pd_sphere_project(self.rows, *self._a, pointer(x_free), pointer(z_pinned),
                                               pointer(self.weighted_radius), pointer(self.fallback), self.tiny,
                                               pointer(length), pointer(q))
        return q, length

    def scatter(self, q, b):
        """b + A_free_T @ q, a new (nf, 3) array: q (r, 3) the targets, b (nf, 3) the right-hand side so far."""
        q = checked("q", q, F64, (self.rows, 3))
        b = checked("b", b, F64, (self.nf, 3))
        out = np.empty((self.nf, 3))
        self.library.softsim_pd_scatter_add(self.nf, *self._at, pointer(q), pointer(b), pointer(out))
        return out


class BlockMatrix:
    """``A @ x`` of a scipy BSR matrix A (3 m, 3 k) with 3x3 blocks, in C; ``matrix`` is A itself (for everything
    else). x: (3 k,) float64 C-contiguous; returns a new (3 m,) array."""

    def __init__(self, library, matrix):
        if not sp.issparse(matrix) or matrix.format != "bsr" or matrix.blocksize != (3, 3):
            raise ValueError(f"matrix: expected a scipy BSR matrix of 3x3 blocks, got {type(matrix).__name__}"
                             f"{'' if not sp.issparse(matrix) else ' ' + matrix.format}")
        self.library = library
        self.matrix = matrix
        self.shape = matrix.shape
        m, k = matrix.shape[0] // 3, matrix.shape[1] // 3
        self.block_rows = m
        self.blocks = checked("matrix.data", matrix.data, F64, (None, 3, 3))
        self.indices = np.ascontiguousarray(matrix.indices, dtype=np.int64)
        checked_indices("matrix.indices", self.indices, k, (len(self.blocks),))
        self.indptr = _row_pointers("matrix.indptr", matrix.indptr, m, len(self.blocks))
        self._fixed = (m, pointer(self.indptr), pointer(self.indices), pointer(self.blocks))

    def __matmul__(self, x):
        x = checked("x", x, F64, (self.shape[1],))
        y = np.empty(self.shape[0])
        self.library.softsim_bsr3_matvec(*self._fixed, pointer(x), pointer(y))
        return y

    def block_cg(self, D_inv, b, x, tol: float, max_iterations: int, atol: float = 0.0):
        """``linalg.iterative.block_cg(self.matrix, D_inv, b, x, tol, max_iterations, atol)`` in C (src/block_cg.c),
        bit for bit: (x (3 m,), iterations, |b - A x| / |r0|). A square; D_inv (m, 3, 3) the inverses of its
        diagonal blocks; b, x (3 m,) float64, x the start (not changed)."""
        if self.shape[0] != self.shape[1]:
            raise ValueError(f"block_cg: the matrix must be square, got {self.shape}")
        m = self.block_rows
        D_inv = checked("D_inv", np.ascontiguousarray(D_inv), F64, (m, 3, 3))
        b = checked("b", np.ascontiguousarray(b), F64, (3 * m,))
        x = checked("x", np.array(x, order="C"), F64, (3 * m,))  # a copy: the solve writes it
        if int(max_iterations) != max_iterations:
            raise ValueError(f"max_iterations: must be an integer, got {max_iterations!r}")
        work = np.empty((4, 3 * m))
        residual = np.zeros(1)
        iterations = self.library.softsim_block_cg(*self._fixed, pointer(D_inv), pointer(b), pointer(x), float(tol),
                                                   float(atol), int(max_iterations), pointer(work), pointer(residual))
        return x, int(iterations), float(residual[0])


class BlockAssembly:
    """``linalg.pattern.BlockPattern.assemble`` in C (``softsim_csr9_matvecs``, scipy's csr_matvecs in its order, so the
    same bits): built once per pattern (its ``sum_matrix`` checked: CSR, row pointers, every column within range);
    ``__call__(blocks)`` takes the triplets' blocks (entry_count, 3, 3) float64 C-contiguous and returns a new
    (block_count, 3, 3) array of summed block data."""

    def __init__(self, library, pattern):
        self.library = library
        self.rows, self.entries = pattern.block_count, pattern.entry_count
        self.sum_matrix = _csr("pattern.sum_matrix", pattern.sum_matrix, (self.rows, self.entries))
        self._fixed = (self.rows, *(pointer(a) for a in self.sum_matrix))

    def __call__(self, blocks):
        blocks = checked("blocks", blocks, F64, (self.entries, 3, 3))
        out = np.empty((self.rows, 3, 3))
        self.library.softsim_csr9_matvecs(*self._fixed, pointer(blocks), pointer(out))
        return out


class RotationSVD:
    """``linalg.eigen3.rotation_svd`` in C: F (3, 3, m) float64 C-contiguous (structure of arrays, entry (i, j) of
    every matrix the row [i, j]) -> (U (3, 3, m), S (3, m), V (3, 3, m)), new arrays, bit for bit the twin's."""

    def __init__(self, library):
        self.library = library

    def __call__(self, F):
        F = checked("F", F, F64, (3, 3, None))
        m = F.shape[2]
        U, S, V = np.empty((3, 3, m)), np.empty((3, m)), np.empty((3, 3, m))
        self.library.softsim_rotation_svd(m, pointer(F), pointer(U), pointer(S), pointer(V))
        return U, S, V


class TetTargets:
    """Projective Dynamics' tet targets in C (``softsim_tet_targets``): the twin of ``TetStrain.project``'s NumPy
    (``rotation_svd``, ``project_unit_product``, the einsum of U diag(w_s + w_v s) V^T), bit for bit. Built per
    TetStrain set with its weights w_strain, w_volume (m,) float64, m >= 2 (over a tet axis of length 1 NumPy's
    einsum sums in another order); ``__call__(F)`` takes F (3, 3, m) float64 C-contiguous (the set's deformation
    gradients, structure of arrays) and returns new arrays q (3 m, 3) (the targets' rows), S (3, m) (the singular
    values) and s (3, m) (the closest ones with s0 s1 s2 = 1)."""

    def __init__(self, library, w_strain, w_volume):
        self.function = library.softsim_tet_targets
        m = len(w_strain) if isinstance(w_strain, np.ndarray) else -1
        self.w_strain = checked("w_strain", w_strain, F64, (m,))
        self.w_volume = checked("w_volume", w_volume, F64, (m,))
        if m < 2:
            raise ValueError("TetTargets: a set of fewer than 2 tets stays on NumPy (its einsum sums in another order)")
        self.m = m
        self.U, self.V, self.work = np.empty((3, 3, m)), np.empty((3, 3, m)), np.empty((11, m))

    def __call__(self, F):
        m = self.m
        F = checked("F", F, F64, (3, 3, m))
        q, S, s = np.empty((3 * m, 3)), np.empty((3, m)), np.empty((3, m))
        self.function(m, pointer(F), pointer(self.w_strain), pointer(self.w_volume), pointer(self.U), pointer(S),
                      pointer(self.V), pointer(s), pointer(self.work), pointer(q))
        return q, S, s
