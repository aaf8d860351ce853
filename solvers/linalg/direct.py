"""Sparse direct solves of symmetric positive definite systems (SuperLU through scipy, or LAPACK's banded Cholesky
after a reverse Cuthill-McKee ordering)."""
from time import perf_counter

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cholesky_banded
from scipy.linalg.lapack import dpbtrf, dpbtrs, spbtrf, spbtrs
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

from .iterative import pcg

BAND_MEMORY_LIMIT = 16 * 2**20
"""Largest banded Cholesky factor tried [bytes]. Past the last-level cache the banded solve streams its factor from
memory and SuperLU's sparser factor wins. Measured on the 2-core bench machine (32 MB L3), PD's matrix of the lab
cloth, three right-hand sides: 64x64, band 4.2 MB: banded 0.46 ms vs SuperLU 0.58 ms; 96x96, 14 MB: 1.46 vs 1.94 ms;
128x128, 33 MB: 30.6 vs 12.0 ms (that one on a busy machine)."""

NEWTON_BAND_MEMORY_LIMIT = 128 * 2**20
"""Largest banded Cholesky factor ``NewtonSolves`` uses [bytes]: with one solve per factorization the factorization's
flops count, not the solve's cache misses (a 96x96 cloth's 120 MB band factors 1.8x faster than SuperLU)."""

BAND_MIN_UNKNOWNS = 2000
"""Below this many unknowns both solves take tens of microseconds (21x21 cloth, 439 unknowns: 0.035 vs 0.037 ms; a
1k-tet sphere, 299: 0.029 vs 0.030 ms), so SuperLU stays: switching would change results at round-off for no speed."""
BAND_FILL_RATIO = 1.6
"""For a matrix solved many times (``factorize_spd_for_many``) the solves' work counts, which is proportional to the
factor's entries: banded Cholesky is chosen only when its band holds at most this many times as many entries as
SuperLU's factors (L + U). Measured, the band solve is as fast or faster up to 1.54x (5k-tet sphere: 0.183 vs 0.194 ms)
and slower at 2.17x (21k-tet sphere, 25 MB: 3.5 vs 2.4 ms); cloth grids: 0.94x-1.31x, banded 18-22% faster."""
BAND_FLOP_RATIO = 2.0
"""For a matrix factorized for one solve (``NewtonSolves``) the factorization's work counts: banded Cholesky is chosen
when its flops (``banded_cholesky_flops``) are at most this many times SuperLU's work, its flops (``superlu_flops``)
plus SUPERLU_FLOPS_PER_ENTRY per factor entry. LAPACK's blocked band factorization runs at 2-6 GFlop/s here, rising
with the bandwidth, SuperLU at 1-2 on its flops. Measured on the 2-core bench machine under load, one BLAS thread, one
factorization (band flops / SuperLU flops; banded vs SuperLU ms): NEWTON's first matrix of the cube tetrahedralized
at resolution 4 (1.5x; 1.6 vs 2.8 ms), 6 (1.4x; 37 vs 70), 8 (1.2x; 163 vs 508), 10 (1.2x; 884 vs 2555), the lab
cloth 21x21 (1.1x; 2.7 vs 22), 32x32 (1.1x; 29 vs 102), 64x64 (1.3x; 385 vs 986); grid matrices with 8 neighbours
(tests/test_newton_solves.py) 24x24 (3.3x; 1.3 vs 2.9), 64x64 (6.2x; 111 vs 133), 96x96 (9.3x; 429 vs 408): all
banded but the last (a tie). A 3D mesh's band grows faster with its size than SuperLU's minimum-degree fill (band flops
~ n^(7/3) against ~ n^2 for a tet mesh), so large solids end up on SuperLU through their flops."""
SUPERLU_FLOPS_PER_ENTRY = 200.0
"""SuperLU's cost per entry of its factors beyond their flops (symbolic work, supernode bookkeeping, scattered memory),
in flops of its numeric rate: fitted to the grids above, where its flops alone (0.1-0.3 GFlop/s of them) would
predict it 5-10x faster than it is."""


def banded_cholesky_flops(n: int, bandwidth: int) -> float:
    """Floating-point operations of LAPACK's Cholesky of an (n, n) band of half-width ``bandwidth``: column j
    updates the c_j (c_j + 1) / 2 entries below it with c_j = min(bandwidth, n - 1 - j) (a multiply and an add each)."""
    c = np.minimum(bandwidth, n - 1 - np.arange(n, dtype=np.float64))
    return float(np.sum(c * (c + 1.0)))


def superlu_flops(A: sp.spmatrix) -> float:
    """Floating-point operations of SuperLU's factorization of A's sparsity pattern (``_structural_lu``): step j updates
    the c_j x r_j block below and right of its pivot, c_j and r_j the off-diagonal entries of column j of L and row j
    of U (a multiply and an add each; SuperLU computes both triangles, the band Cholesky one)."""
    return _flops_of(_structural_lu(A))


def _flops_of(lu) -> float:
    c = np.diff(lu.L.indptr) - 1  # L holds its unit diagonal
    r = np.bincount(lu.U.indices, minlength=lu.U.shape[0]) - 1  # U's row counts (CSC: indices are rows)
    return 2.0 * float(np.dot(c.astype(np.float64), r))


def prefer_banded(A: sp.spmatrix, bandwidth: int, lu=None, solves_per_factor: str = "one") -> bool:
    """Whether the banded Cholesky of A (its RCM ``bandwidth``) does less work than SuperLU: the one rule of
    ``NewtonSolves`` and ``factorize_spd_for_many``. ``lu``: SuperLU's factors of A's pattern if already computed.

    solves_per_factor "one" (Newton's steps: each factor solves one right-hand side): the factorization's work decides,
    band within NEWTON_BAND_MEMORY_LIMIT and its flops at most BAND_FLOP_RATIO times SuperLU's work (flops plus
    SUPERLU_FLOPS_PER_ENTRY per factor entry); "many" (Projective
    Dynamics' constant matrix): the solves' work, i.e. the factors' entries, decides, at least BAND_MIN_UNKNOWNS rows,
    band within BAND_MEMORY_LIMIT and at most BAND_FILL_RATIO times SuperLU's entries. Depends on A's pattern only, so
    a bake repeats exactly."""
    n = A.shape[0]
    entries = (bandwidth + 1) * n
    if solves_per_factor == "many":
        if n < BAND_MIN_UNKNOWNS or entries * 8 > BAND_MEMORY_LIMIT:
            return False
        lu = _structural_lu(A) if lu is None else lu
        return entries <= BAND_FILL_RATIO * (lu.L.nnz + lu.U.nnz)
    if entries * 8 > NEWTON_BAND_MEMORY_LIMIT:
        return False
    lu = _structural_lu(A) if lu is None else lu
    superlu_work = _flops_of(lu) + SUPERLU_FLOPS_PER_ENTRY * (lu.L.nnz + lu.U.nnz)
    return banded_cholesky_flops(n, bandwidth) <= BAND_FLOP_RATIO * superlu_work


def factorize_spd(A: sp.spmatrix):
    """A solve function x = solve(b) for a sparse SPD matrix, factorized once (reuse it for many b).

    SuperLU with the minimum-degree ordering of A^T + A and no pivoting off the diagonal: for an SPD matrix
    that is a symmetric LDL^T-like factorization with far less fill than the default COLAMD ordering.
    """
    return _superlu(A).solve


def _superlu(A: sp.spmatrix):
    return splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})


class BandedCholesky:
    """x = solve(b) for a sparse SPD matrix A (n, n) through a banded Cholesky factor of P A P^T, P the reverse
    Cuthill-McKee ordering (scipy.sparse.csgraph), which packs a mesh's matrix into a narrow band
    (a 64x64 cloth grid: bandwidth 126, two grid rows, of 4094 unknowns). b: (n,) or (n, k); returns the same shape.
    ``plan(A)`` gives the ordering and the bandwidth without building the factor.
    """

    def __init__(self, A: sp.spmatrix, ordering=None, max_bandwidth: int = None):
        A = sp.csr_matrix(A)
        self.perm = _rcm(A) if ordering is None else ordering
        ab = self.band_of(A, self.perm)
        self.bandwidth = ab.shape[0] - 1
        if max_bandwidth is not None and self.bandwidth > max_bandwidth:
            raise BandTooWide(f"bandwidth {self.bandwidth} > {max_bandwidth}")
        self.factor = cholesky_banded(ab, lower=False, check_finite=False)

    @staticmethod
    def band_of(A: sp.csr_matrix, perm: np.ndarray) -> np.ndarray:
        """LAPACK's upper band storage of P A P^T (P the ordering ``perm``): ab (bandwidth + 1, n) with
        ab[bandwidth + i - j, j] = (P A P^T)[i, j] for i <= j, its diagonal in the last row."""
        P = A[perm][:, perm].tocoo()
        upper = P.row <= P.col
        row, col = P.row[upper], P.col[upper]
        bandwidth = int((col - row).max(initial=0))
        ab = np.zeros((bandwidth + 1, A.shape[0]))
        ab[bandwidth + row - col, col] = P.data[upper]
        return ab

    @classmethod
    def of_band(cls, ab: np.ndarray, perm: np.ndarray):
        """The factor of a band already built (``band_of``'s layout, ordering ``perm``); ab is overwritten."""
        self = cls.__new__(cls)
        self.perm, self.bandwidth = perm, ab.shape[0] - 1
        self.factor = cholesky_banded(ab, lower=False, overwrite_ab=True, check_finite=False)
        return self

    @staticmethod
    def plan(A: sp.spmatrix):
        """(RCM ordering, bandwidth) of A, without building the factor."""
        A = sp.csr_matrix(A)
        perm = _rcm(A)
        inverse = np.empty_like(perm)
        inverse[perm] = np.arange(len(perm))
        coo = A.tocoo()
        return perm, int(np.abs(inverse[coo.row] - inverse[coo.col]).max(initial=0))

    def __call__(self, b: np.ndarray) -> np.ndarray:
        rhs = np.asfortranarray(b[self.perm].reshape(len(self.perm), -1))  # LAPACK wants columns contiguous
        x, info = dpbtrs(self.factor, rhs, lower=0, overwrite_b=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dpbtrs failed (info {info})")
        out = np.empty(x.shape)
        out[self.perm] = x
        return out.reshape(b.shape)


def _structural_lu(A: sp.spmatrix):
    """SuperLU's factors for A's sparsity pattern, whatever its values: factorized on the diagonally dominant matrix of
    that pattern (off-diagonal entries -1), since the first Newton matrix of a cloth at rest holds exact zeros (flat
    bending) that SuperLU would skip."""
    S = sp.csr_matrix(A, copy=True)
    S.data[:] = -1.0
    S.setdiag(0.0)
    S = S - sp.diags(np.asarray(S.sum(axis=1)).ravel() - 1.0)
    return _superlu(S)


class BandTooWide(ValueError):
    """The ordering given to ``BandedCholesky`` leaves the matrix wider than its ``max_bandwidth``."""


class NewtonSolves:
    """x = solve(A, b) for a sequence of sparse SPD matrices of one size with (mostly) one sparsity pattern, one
    right-hand side each: Newton's steps, where each factorization is used once.

    The first matrix plans the sequence: the banded Cholesky after reverse Cuthill-McKee is chosen when its band fits
    NEWTON_BAND_MEMORY_LIMIT and its factorization costs at most BAND_FLOP_RATIO times SuperLU's work for that
    sparsity pattern (``prefer_banded``); the ordering and bandwidth are kept. A later matrix that the kept ordering
    leaves wider (contacts between particles far apart in the mesh, e.g. self-contact) is factorized by SuperLU. The
    choice depends on the matrices only, so a bake repeats exactly. Measured, one factorization of NEWTON's matrix of
    the lab cloth (n x n, first step), SuperLU vs banded: 21x21 5.4 vs 3.1 ms, 32x32 19 vs 8.4, 48x48 81 vs 31, 64x64
    191 vs 98 (band 35 MB, 1.17x SuperLU's entries), 96x96 754 vs 424 ms (120 MB); the factorization is 60-75% of a
    NEWTON step at 64x64 and about half of one of a cube tetrahedralized at resolution 10.

    The banded factorization runs in OpenBLAS's threads, SuperLU in one. On a machine whose cores are all busy the
    threads wait on each other: on the 2-core bench machine under load, 2 threads vs 1, the cube at resolution 6 took
    314 vs 38 ms, at 10 1737 vs 431 ms, the 64x64 cloth 1537 vs 256 ms (SuperLU 70, 1570, 629 ms either way), which
    is how the banded solve once measured slower than SuperLU on solids. BAND_FLOP_RATIO is from one-thread timings,
    and frames run with one BLAS thread (``linalg.threads``).

    NEWTON calls ``solve_blocks`` with the block data of its pattern: there the band is filled without building A.
    Given the pattern's ``weak`` blocks (a cloth's bending between hinge wings), ``solve_blocks`` solves by conjugate
    gradients preconditioned with the narrower band of the other blocks (``NarrowBand``) where that plans cheaper, and
    factorizes the full band where it does not or where PCG does not reach ``pcg_tolerance``.
    With ``single`` it is factorized in single precision and refined in double (``solve_band_refined``), 1.6-2x faster
    than the double-precision factorization on the lab cloth (64x64: 62 vs 115 ms, one BLAS thread, shared machine)."""

    def __init__(self, single: bool = False, weak: np.ndarray = None, narrow: bool = True, lag: bool = True):
        self.weak = None if weak is None or not np.any(weak) else np.asarray(weak, bool)
        """A mask over the blocks of the pattern ``solve_blocks`` is given: the weak couplings (``NarrowBand``), or
        None."""
        self.narrow = bool(narrow)
        """Whether ``solve_blocks`` may solve by the narrow band's PCG where it plans cheaper (``NarrowBand``); False
        keeps every solve on the full band's factor (the exact path)."""
        self._narrow = None  # (pattern, its NarrowBand or None where the full band is planned cheaper)
        self.pcg_tolerance = NEWTON_FORCING
        """Relative residual |b - A x| / |b| the narrow band's PCG solves to (``NarrowBand.solve``): NEWTON_FORCING,
        an inexact Newton direction (REFINE_TOLERANCE solves each system as exactly as the factorizations do)."""
        self.factorizations = 0
        """Factorizations done by ``solve_blocks`` (the narrow band's, the full band's, SuperLU's)."""
        self.pcg_iterations = 0
        """Conjugate-gradient iterations done by ``solve_blocks`` on the narrow band."""
        self.factor_seconds = 0.0
        """Wall time [s] of the narrow band's factorizations (filling the band and factorizing it), for profiling."""
        self.pcg_seconds = 0.0
        """Wall time [s] of the narrow band's conjugate-gradient iterations, for profiling."""
        self.plan = None
        """(unknowns, RCM ordering or None for SuperLU, bandwidth) of the sequence."""
        self.method = None
        """The last solve's method: "banded Cholesky", SINGLE_REFINED, "SuperLU", NARROW_BAND or LAGGED."""
        self._scatter = None  # (pattern, ordering, its BandScatter) of solve_blocks
        self._lagged = None  # (unknowns, the solve of the last factor) of solve_blocks (LAGGED)
        self.lag = bool(lag)
        """Whether ``solve_blocks`` tries the last factor first (``LAGGED``): on SuperLU, and on the full band where
        there are no weak blocks (a cloth's sequence, whose matrices change more, keeps factorizing its band)."""
        self.single = single
        """Whether ``solve_blocks`` tries the single-precision factor first (until it once does not suffice), refined
        to REFINE_TOLERANCE in double precision. NEWTON turns it on: on the 31 x 31 box drape (frames 1-36) factorized on
        its full band, a Newton iteration took 11.0 against 12.1-12.5 ms. Off by default here, for a caller that wants
        the double factor alone."""

    def _plan(self, A: sp.spmatrix) -> None:
        """Plan the sequence on its first matrix A (``plan``), without factorizing it."""
        ordering, bandwidth = BandedCholesky.plan(A)
        self.plan = (A.shape[0], ordering if prefer_banded(A, bandwidth) else None, bandwidth)

    def __call__(self, A: sp.spmatrix, b: np.ndarray) -> np.ndarray:
        n = A.shape[0]
        if self.plan is None or self.plan[0] != n:
            self._plan(A)
        _, ordering, bandwidth = self.plan
        if ordering is not None:
            try:
                solve = BandedCholesky(A, ordering, max_bandwidth=bandwidth)
                self.method = "banded Cholesky"
                return solve(b)
            except BandTooWide:
                pass
        self.method = "SuperLU"
        solve = _superlu(A).solve
        self._lagged = (n, solve)  # the first factor of a sequence on SuperLU serves solve_blocks too (LAGGED)
        return solve(b)

    def solve_blocks(self, pattern, data: np.ndarray, contact, b: np.ndarray) -> np.ndarray:
        """x = A^-1 b for A given as a ``BlockPattern``'s block data (block_count, 3, 3) plus ``contact`` = (rows,
        cols, blocks) of further blocks at reduced block rows and columns, or None: what ``__call__`` solves, without
        building A where the plan is banded. The band is filled by a ``BandScatter`` kept per pattern, factorized in
        single precision and refined to REFINE_TOLERANCE (``solve_band_refined``); SuperLU where the plan chose it or a
        contact block leaves the band."""
        n = b.shape[0]
        if self.plan is None or self.plan[0] != n:
            self._plan(block_matrix(pattern, data, contact))  # the first matrix of the sequence plans it
        _, ordering, bandwidth = self.plan
        if ordering is not None and self.narrow and self.weak is not None and len(self.weak) == pattern.block_count:
            x = self._solve_narrow(pattern, data, contact, b, bandwidth)
            if x is not None:
                return x
        if ordering is not None:
            if self.lag and self.weak is None:
                x = self._solve_lagged(pattern, data, contact, b)
                if x is not None:
                    return x
            self.factorizations += 1
            if self._scatter is None or self._scatter[0] is not pattern or self._scatter[1] is not ordering:
                self._scatter = (pattern, ordering, BandScatter(pattern.block_rows, pattern.block_cols, ordering, bandwidth))
            try:
                x, self.method, solve = solve_band_refined(self._scatter[2], data, contact,
                                                           pcg_matvec(pattern, data, contact), b, self.single)
                # Once single precision has not sufficed, the rest of the sequence (similar matrices) skips it.
                self.single = self.method == SINGLE_REFINED
                self._lagged = (n, solve)
                return x
            except BandTooWide:
                pass
        if self.lag:
            x = self._solve_lagged(pattern, data, contact, b)
            if x is not None:
                return x
        self.method = "SuperLU"
        self.factorizations += 1
        solve = _superlu(block_matrix(pattern, data, contact)).solve
        self._lagged = (n, solve)
        return solve(b)

    def _solve_lagged(self, pattern, data, contact, b):
        """x by conjugate gradients preconditioned with the factor of an earlier matrix of the sequence (``LAGGED``),
        to ``pcg_tolerance`` within LAGGED_MAX_ITERATIONS, or None where no factor of this size is kept or they do
        not reach it (the caller factorizes this matrix, and keeps its factor)."""
        n = b.shape[0]
        lagged = self._lagged
        if lagged is None or lagged[0] != n:
            return None
        x, iterations, residual = pcg(pcg_matvec(pattern, data, contact), lagged[1], b, self.pcg_tolerance,
                                      LAGGED_MAX_ITERATIONS)
        self.pcg_iterations += iterations
        if residual > self.pcg_tolerance:
            return None
        self.method = LAGGED
        return x

    def _solve_narrow(self, pattern, data, contact, b, bandwidth):
        """x by the narrow band's PCG (``NarrowBand.solve``), or None where it is not planned, a contact block leaves
        its band or it does not converge (the caller factorizes the full band). Planned once per pattern: the narrow
        band when NARROW_MIN_GAIN times its planned flops (``NarrowBand.planned_flops``) are at most the full band's
        factorization's."""
        if self._narrow is None or self._narrow[0] is not pattern:
            band = NarrowBand(pattern, self.weak)
            full = banded_cholesky_flops(3 * pattern.free_count, bandwidth)
            self._narrow = (pattern, band if NARROW_MIN_GAIN * band.planned_flops() <= full else None)
        band = self._narrow[1]
        if band is None:
            return None
        try:
            x, iterations = band.solve(pattern, data, contact, b, self.pcg_tolerance)
        except (BandTooWide, np.linalg.LinAlgError):
            return None
        self.factorizations += 1
        self.pcg_iterations += iterations
        self.factor_seconds += band.factor_seconds
        self.pcg_seconds += band.pcg_seconds
        if x is not None:
            self.method = NARROW_BAND
        return x


def block_matrix(pattern, data, contact) -> sp.csr_matrix:
    """The CSR matrix of a ``BlockPattern``'s block data plus contact blocks (``NewtonSolves.solve_blocks``), with
    every entry of the pattern stored, zero or not (the band planned from it holds every later matrix's)."""
    A = pattern.matrix(data).tocsr()
    if contact is None or not len(contact[0]):
        return A
    rows, cols, blocks = contact
    local = np.arange(3)
    i = np.broadcast_to((3 * rows)[:, None, None] + local[None, :, None], blocks.shape)
    j = np.broadcast_to((3 * cols)[:, None, None] + local[None, None, :], blocks.shape)
    A = A.tocoo()
    return sp.coo_matrix((np.concatenate([A.data, blocks.ravel()]), (np.concatenate([A.row, i.ravel()]),
                                                                     np.concatenate([A.col, j.ravel()]))),
                         shape=A.shape).tocsr()


def block_matrix_of(blocks, n: int) -> sp.csr_matrix:
    """The (n, n) CSR matrix of (rows, cols, blocks) 3x3 blocks at block rows and columns (duplicates summed)."""
    rows, cols, values = blocks
    local = np.arange(3)
    i = np.broadcast_to((3 * np.asarray(rows))[:, None, None] + local[None, :, None], values.shape)
    j = np.broadcast_to((3 * np.asarray(cols))[:, None, None] + local[None, None, :], values.shape)
    return sp.coo_matrix((values.ravel(), (i.ravel(), j.ravel())), shape=(n, n)).tocsr()


def pcg_matvec(pattern, data, contact):
    """v -> A v (n,) for A = block data plus contact blocks, for many products (conjugate gradients, the refinement of
    ``solve_band_refined``): the pattern's BSR matrix (its 3x3-block product is ~4x faster than CSR's here) plus the
    contact blocks' CSR matrix, each built once."""
    A = pattern.matrix(data)
    if contact is None or not len(contact[0]):
        return lambda v: A @ v
    C = block_matrix_of(contact, A.shape[0])
    return lambda v: A @ v + C @ v


def _rcm(A: sp.csr_matrix) -> np.ndarray:
    return reverse_cuthill_mckee(A, symmetric_mode=True).astype(np.int64)


def factorize_spd_for_many(A: sp.spmatrix):
    """Like ``factorize_spd``, for a matrix that will be solved many times (Projective Dynamics' constant matrix): the
    banded Cholesky where ``prefer_banded`` (solves_per_factor "many": at least BAND_MIN_UNKNOWNS rows, band within
    BAND_MEMORY_LIMIT and at most BAND_FILL_RATIO times SuperLU's factor entries, where it measured faster), else
    SuperLU. The choice depends on A only, so a bake repeats exactly. Both give the same x up to round-off. The
    method's name is on the function as ``.method``."""
    lu = _superlu(A)
    if A.shape[0] >= BAND_MIN_UNKNOWNS:
        ordering, bandwidth = BandedCholesky.plan(A)
        if prefer_banded(A, bandwidth, lu, "many"):
            return _named(BandedCholesky(A, ordering), "banded Cholesky")
    return _named(lu.solve, "SuperLU")


class DiagonalShifts:
    """Factorizations of A + diag(d) for one sparse SPD matrix A (n, n) and many shifts d (n,) >= 0: a matrix
    refactorized whenever some of its diagonal entries change (Projective Dynamics' contact weights, a new set almost
    every step while a cloth slides over a box). Each factor serves a few solves, so the factorization's work decides
    the method (``prefer_banded``, solves_per_factor "one"), once for A's pattern: LAPACK's banded Cholesky under A's
    RCM ordering, A's band built once and each shift added to its diagonal (no CSR conversion or permutation per
    factorization), or SuperLU of A + diag(d). Depends on A's pattern only, so a bake repeats exactly.

    Measured (one factorization, 2-core bench machine): the 31 x 31 box-drape cloth's 961 unknowns (RCM half-width 61)
    SuperLU 1.8 ms, a banded Cholesky built from the matrix 0.87 ms, from the kept band ~0.3 ms."""

    def __init__(self, A: sp.spmatrix):
        self.A = sp.csr_matrix(A)
        ordering, bandwidth = BandedCholesky.plan(self.A)
        self.method = "banded Cholesky" if prefer_banded(self.A, bandwidth, solves_per_factor="one") else "SuperLU"
        if self.method == "banded Cholesky":
            self.ordering = ordering
            self.band = BandedCholesky.band_of(self.A, ordering)

    def factorize(self, shift: np.ndarray):
        """x = solve(b) for A + diag(shift), shift (n,); its method's name on it as ``.method``."""
        shift = np.asarray(shift, np.float64)
        if self.method == "SuperLU":
            return _named(factorize_spd(self.A + sp.diags(shift)), "SuperLU")
        ab = self.band.copy()
        ab[-1] += shift[self.ordering]
        return _named(BandedCholesky.of_band(ab, self.ordering), "banded Cholesky")


def _named(solve, method: str):
    def named(b):
        return solve(b)

    named.method = method
    return named


REFINE_TOLERANCE = 1e-10
"""Relative residual |b - A x| / |b| (2-norms) to which ``NewtonSolves.solve_blocks`` refines the solution of its
single-precision band factor. A double-precision factorization leaves about 1e-13; 1e-10 changes a Newton direction by
far less than the stopping rule can see (max|p| / h against 0.01 m/s, p of order 1e-3 m)."""
REFINE_MAX_STEPS = 8
"""Refinement steps tried before the matrix is factorized in double precision instead. Each step gains about three
digits on the lab cloth's matrices (5e-5 after the single-precision solve, 1e-10 after 2-3 steps)."""


class BandScatter:
    """Where the entries of a ``BlockPattern``'s block data (block_count, 3, 3) go in LAPACK's upper band storage of
    P A P^T (``ordering`` P of A's scalar rows, ``bandwidth`` its half-width), found once per pattern and ordering, so
    that each Newton matrix goes into the band by one scatter instead of a CSR conversion and a permutation.

    ``positions`` (k,) int64 are flat indices into ab (bandwidth + 1, n), ``entries`` (k,) int64 the flat indices into
    data.ravel() that go there: the upper triangle of P A P^T, each position once (the pattern is symmetric)."""

    def __init__(self, block_rows, block_cols, ordering, bandwidth):
        n = len(ordering)
        self.n, self.bandwidth = n, int(bandwidth)
        self.ordering = np.asarray(ordering, np.int64)
        self.inverse = np.empty(n, np.int64)
        self.inverse[self.ordering] = np.arange(n)
        rows = self.inverse.reshape(-1, 3)
        self.block_first, self.block_last = rows.min(axis=1), rows.max(axis=1)
        """Per block row: the first and the last position of its three scalar rows in P A P^T (``leaves_band``)."""
        self.entries, self.positions = self._map(np.asarray(block_rows, np.int64), np.asarray(block_cols, np.int64))
        self.fortran_positions = self.fortran(self.positions)
        """``positions`` in ab's Fortran order (column j of the band contiguous, as LAPACK reads it): a C-ordered ab is
        transposed into a copy by every LAPACK call (~10 ms on the 64 x 64 cloth's narrow band)."""

    def fortran(self, positions: np.ndarray) -> np.ndarray:
        """Flat indices into a C-ordered ab (bandwidth + 1, n) -> the same entries' flat indices in Fortran order."""
        row, col = np.divmod(positions, self.n)
        return col * (self.bandwidth + 1) + row

    def empty_band(self, dtype=np.float64):
        """(ab, flat): a zero band (bandwidth + 1, n) in Fortran order and its flat view (for the ``fortran`` indices)."""
        columns = np.zeros((self.n, self.bandwidth + 1), dtype)
        return columns.T, columns.reshape(-1)

    def leaves_band(self, block_rows, block_cols) -> bool:
        """Whether a block (r, c) of these leaves the band: _map's test without the map (its farthest entry at or
        above the diagonal is row first[r], column last[c])."""
        if len(block_rows) == 0:
            return False
        return bool(np.max(self.block_last[block_cols] - self.block_first[block_rows]) > self.bandwidth)

    def _map(self, block_rows, block_cols):
        local = np.arange(3)
        i = self.inverse[((3 * block_rows)[:, None, None] + local[None, :, None] + 0 * local[None, None, :]).ravel()]
        j = self.inverse[((3 * block_cols)[:, None, None] + 0 * local[None, :, None] + local[None, None, :]).ravel()]
        entries = np.flatnonzero(i <= j)
        i, j = i[entries], j[entries]
        if np.any(j - i > self.bandwidth):
            raise BandTooWide(f"a block leaves the band of half-width {self.bandwidth}")
        return entries, (self.bandwidth + i - j) * self.n + j

    def band(self, data, contact=None, dtype=np.float64):
        """ab (bandwidth + 1, n) of ``dtype`` from block data (block_count, 3, 3) plus ``contact`` = (rows, cols,
        blocks): further blocks at reduced block rows and columns (c,), (c,), (c, 3, 3), or None. Raises BandTooWide
        where a contact block leaves the band."""
        extra = None
        if contact is not None and len(contact[0]):  # first: a contact block out of the band spares the fill
            rows, cols, blocks = contact
            rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
            if self.leaves_band(rows, cols):
                raise BandTooWide(f"a block leaves the band of half-width {self.bandwidth}")
            entries, positions = self._map(rows, cols)
            extra = (self.fortran(positions), blocks.reshape(-1)[entries])
        ab, flat = self.empty_band(dtype)
        flat[self.fortran_positions] = data.reshape(-1)[self.entries]
        if extra is not None:
            np.add.at(flat, *extra)
        return ab

    def solve(self, factor, b, single):
        """x (n,) in A's order from the band Cholesky factor of P A P^T and b (n,)."""
        rhs = b[self.ordering]
        if single:
            x, info = spbtrs(factor, rhs.astype(np.float32), lower=0, overwrite_b=1)
        else:
            x, info = dpbtrs(factor, rhs, lower=0, overwrite_b=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"band solve failed (info {info})")
        out = np.empty(self.n)
        out[self.ordering] = x
        return out


def solve_band_refined(scatter: BandScatter, data, contact, matvec, b, single: bool = True):
    """x = A^-1 b for the SPD matrix with block data ``data`` and ``contact`` blocks (``BandScatter.band``):
    with ``single``, a single-precision band Cholesky (half the work and memory of double precision's), then iterative
    refinement x += solve(b - A x) with the residual in double precision (``matvec``(x) = A x) until |b - A x| <=
    REFINE_TOLERANCE |b|. Where the single-precision factor fails (a pivot <= 0 in single precision), the refinement
    stops gaining (a residual no smaller than the one before) or does not reach the tolerance in REFINE_MAX_STEPS, and
    without ``single``, the double-precision factor solves. Returns (x, method name, the factor's solve r -> A^-1 r)."""
    if single:
        factor, info = spbtrf(scatter.band(data, contact, np.float32), lower=0, overwrite_ab=1)
        if info == 0:
            x = scatter.solve(factor, b, True)
            limit = REFINE_TOLERANCE * float(np.linalg.norm(b))
            last = np.inf
            for _ in range(REFINE_MAX_STEPS + 1):
                r = b - matvec(x)
                size = float(np.linalg.norm(r))
                if size <= limit:
                    return x, SINGLE_REFINED, lambda r: scatter.solve(factor, r, True)
                if not size < last:  # diverging or stuck (nan included): single precision is too coarse here
                    break
                last = size
                x += scatter.solve(factor, r, True)
    factor, info = dpbtrf(scatter.band(data, contact), lower=0, overwrite_ab=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpbtrf failed (info {info}): the Newton matrix is not positive definite")
    return scatter.solve(factor, b, False), "banded Cholesky", lambda r: scatter.solve(factor, r, False)


SINGLE_REFINED = "banded Cholesky (single, refined)"

NEWTON_FORCING = 1e-5
"""Relative residual |b - A x| / |b| to which NEWTON's directions are solved by the narrow band's PCG: an inexact
Newton method with Eisenstat and Walker's forcing term held constant. The direction only has to be good enough for the
line search and the stopping rule (max|p| / h against newton_tolerance, 0.4 mm a step at 0.01 m/s and 24 fps); p is
of order 1e-3 m. Measured on the 64 x 64 lab cloth, frames 25-32 from the saved state of bench/profile_newton.py: the
same 222 Newton iterations as at REFINE_TOLERANCE, positions within 7.5e-7 m after eight frames, 2.2x fewer PCG
iterations (1245 against 2683), 16-17% less time a frame (635-663 against 759-798 ms, three runs each). 1e-4 took
the same time and 1e-3 more Newton iterations (230). Falling onto the sphere (12 frames, the exact path against this
one), the 16 x 16 cloth's positions differ by 2.5e-5 m and the 24 x 24 and 32 x 32 cloths' by 3-6 cm: a folding
cloth's motion amplifies small differences; the exact path itself moves by 7-8 cm when newton_tolerance goes from 0.01
to 0.009 m/s."""


LAGGED = "factor of an earlier matrix, PCG"
"""``NewtonSolves.method`` of a solve by conjugate gradients preconditioned with the factor of an earlier matrix of the
sequence (``NewtonSolves.lag``). A solid's Newton matrices change little from one iteration and one frame to the next,
and their factorization is most of a Newton iteration (a 15.6k-tet sphere on SuperLU: 0.54 s, against 6 ms a solve
with the factor): the old factor preconditions the new matrix well enough that conjugate gradients reach
NEWTON_FORCING in ~10 iterations. Measured, ico spheres dropped onto the ground, 40 frames at NEWTON's defaults, the
same Newton iterations and positions within 1e-7 m of the factorized path's at every frame: 15.6k tets (SuperLU) 983
against 201 ms a frame (57 factorizations against 1, 362 PCG iterations), 5k tets (band half-width 542) 89 against
45 ms (61 against 2). A cloth's matrices change more (contacts, compressed springs, folds): tried on the 64 x 64 lab
cloth's narrow band it did not pay (docs/design.md), so a sequence with weak blocks keeps factorizing its band."""
LAGGED_MAX_ITERATIONS = 40
"""Conjugate-gradient iterations tried with the earlier factor before the matrix is factorized anew (and its factor
kept). Measured on the 15.6k-tet sphere with a first version of the SuperLU path: 10 took 246 ms a frame (3
factorizations, 288 iterations), 20 280 ms, 40 228 ms (1, 358)."""

NARROW_BAND = "narrow band PCG"
"""``NewtonSolves.method`` of a solve by conjugate gradients preconditioned with the narrow band (``NarrowBand``)."""
NARROW_MAX_ITERATIONS = 40
"""Conjugate-gradient iterations ``NarrowBand.solve`` tries before the system is factorized on the full band instead.
On the 64 x 64 lab cloth (bending 0.001) the narrow band's PCG reaches REFINE_TOLERANCE in 11-14, NEWTON_FORCING in
5-6."""
NARROW_EXPECTED_ITERATIONS = 6
"""The iterations ``NewtonSolves`` plans with when it weighs the narrow band against the full one: what PCG takes to
NEWTON_FORCING (5-6 on the 64 x 64 lab cloth, 6.2 on average on the 31 x 31 box drape). With it the 31 x 31 box drape
and the 32 x 32 lab cloth move to the narrow band (box drape frames 1-36: 8.9-9.5 against 9.9-10.3 ms a Newton
iteration; lab cloth 24 frames onto the sphere: 2.8-3.1 against 3.1-3.4 s) and the 21 x 21 lab cloth stays on its full
band (1.15-1.27 against 1.25-1.29 s, within noise)."""
NARROW_ITERATION_FLOPS = 2.0e6
"""The cost of one conjugate-gradient iteration beyond its band solve [flops of the band factorization's rate]: the
matrix product, the vector updates and the Python calls around them (~0.3 ms at ~6 GFlop/s, one BLAS thread). With it
and NARROW_EXPECTED_ITERATIONS the 21 x 21 lab cloth stays on its full band and the 32 x 32 and larger move to the
narrow one. Measured with the narrow band forced and PCG to REFINE_TOLERANCE, 24 frames of the cloth dropped onto the
sphere, full vs narrow band (machine under load): 21 x 21 1.23 vs 1.32-1.44 s, 32 x 32 3.61 vs 3.35-3.43 s, 48 x 48
11.8 vs 6.5-8.2 s."""
NARROW_MIN_GAIN = 1.5
"""The narrow band is used when the full band's factorization is planned to cost at least this many times the narrow
band's factorization plus NARROW_EXPECTED_ITERATIONS iterations."""


class NarrowBand:
    """A preconditioner for a ``BlockPattern``'s matrices A = S + W whose weak blocks W (``weak``, a mask over the
    pattern's blocks: couplings only small terms make, such as a cloth's bending between the two wings of a hinge)
    are what widens A's band: P = S + diag(|W| 1), the strong blocks plus, on each scalar row's diagonal, the sum of
    the absolute values of the row's weak entries, factorized by LAPACK's banded Cholesky in the ordering of the strong
    blocks' graph (reverse Cuthill-McKee), whose band is narrower. P - A = diag(|W| 1) - W is diagonally dominant with a
    non-negative diagonal, hence positive semi-definite (Gershgorin), so P >= A > 0: P is SPD whatever W holds, and the
    eigenvalues of P^-1 A lie in (0, 1], close to 1 when |W| is small against A's own stiffness (inertia, stretching).
    Dropping W without the diagonal term leaves an indefinite matrix on the lab cloth.

    The 64 x 64 lab cloth: bending's wing couplings join grid rows two apart, the full band is two rows (half-width
    380 of 12282 unknowns) and the strong blocks' one row (194): the factorization does 0.26 of the flops, and
    conjugate gradients on A reach a relative residual of 1e-10 in 11-14 iterations."""

    def __init__(self, pattern, weak: np.ndarray):
        weak = np.asarray(weak, bool)
        strong = ~weak
        nf = pattern.free_count
        rows, cols = pattern.block_rows[strong], pattern.block_cols[strong]
        graph = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(nf, nf))
        vertices = reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)
        position = np.empty(nf, np.int64)
        position[vertices] = np.arange(nf)
        self.ordering = (3 * vertices[:, None] + np.arange(3)).ravel()
        self.bandwidth = 3 * int(np.abs(position[rows] - position[cols]).max(initial=0)) + 2
        self.scatter = BandScatter(rows, cols, self.ordering, self.bandwidth)
        self.strong = np.flatnonzero(strong)
        self.weak = np.flatnonzero(weak)
        self._weak_rows = pattern.block_rows[weak]
        index = np.full(pattern.block_count, -1, np.int64)
        index[self.strong] = np.arange(len(self.strong))
        self._diagonal = index[pattern.diagonal_slot]  # each block row's diagonal block among the strong ones
        self.nf = nf
        # The band straight from A's block data: the scatter's entries of the strong blocks mapped to A's data, and
        # where P's diagonal goes (scalar row 3 r + a: flat position bandwidth * n + its place in the ordering).
        entries = self.scatter.entries
        self._data_entries = self.strong[entries // 9] * 9 + entries % 9
        n = len(self.ordering)
        self._diagonal_positions = self.scatter.fortran(self.bandwidth * n + self.scatter.inverse[np.arange(n)])
        self._diagonal_entries = (pattern.diagonal_slot[:, None] * 9 + 4 * np.arange(3)[None, :]).ravel()
        self._compensation = (None, None)  # (A's weak blocks, their compensation), kept while those blocks are unchanged
        self._buffers = {}  # dtype -> the band array (bandwidth + 1, n) each factorization overwrites
        self.factor_seconds = 0.0
        """Wall time [s] the last ``solve`` spent filling and factorizing P's band."""
        self.pcg_seconds = 0.0
        """Wall time [s] the last ``solve`` spent in conjugate gradients (the rest of it)."""

    def preconditioner_data(self, data: np.ndarray) -> np.ndarray:
        """P's block data over the strong blocks (s, 3, 3) from A's (block_count, 3, 3)."""
        kept = data[self.strong]
        axes = np.arange(3)
        kept[self._diagonal[:, None], axes, axes] += self.compensation(data)
        return kept

    def compensation(self, data: np.ndarray) -> np.ndarray:
        """diag(|W| 1) as (nf, 3): per block row, the sums of its weak entries' absolute values. Kept while A's weak
        blocks hold the same numbers (in NEWTON they are a flat cloth's bending, the same at every iteration)."""
        weak = data[self.weak]
        kept, compensation = self._compensation
        if kept is not None and np.array_equal(kept, weak):
            return compensation
        row_sums = np.abs(weak).sum(axis=2)  # (w, 3): per weak block, its three rows' |entries|
        compensation = np.zeros((self.nf, 3))
        for a in range(3):
            compensation[:, a] = np.bincount(self._weak_rows, row_sums[:, a], minlength=self.nf)
        self._compensation = (weak, compensation)
        return compensation

    def band(self, data: np.ndarray, contact=None, dtype=np.float64) -> np.ndarray:
        """P's band (``BandScatter.band`` of ``preconditioner_data``), filled straight from A's block data: the same
        numbers without the copy of the strong blocks (P's diagonal is summed in double precision, then stored). The
        array is reused by the next call of the same dtype (the factorization overwrites it)."""
        buffer = self._buffers.get(np.dtype(dtype))
        if buffer is None:
            buffer = self._buffers[np.dtype(dtype)] = self.scatter.empty_band(dtype)
        ab, flat = buffer
        flat.fill(0.0)
        values = data.reshape(-1)
        flat[self.scatter.fortran_positions] = values[self._data_entries]
        flat[self._diagonal_positions] = values[self._diagonal_entries] + self.compensation(data).ravel()
        if contact is not None and len(contact[0]):
            rows, cols, blocks = contact
            entries, positions = self.scatter._map(np.asarray(rows, np.int64), np.asarray(cols, np.int64))
            np.add.at(flat, self.scatter.fortran(positions), blocks.reshape(-1)[entries])
        return ab

    def planned_flops(self, iterations: int = None) -> float:
        """The factorization's flops plus ``iterations`` (NARROW_EXPECTED_ITERATIONS) iterations': each a solve with
        the factor (4 n bandwidth) and NARROW_ITERATION_FLOPS."""
        n = len(self.ordering)
        iterations = NARROW_EXPECTED_ITERATIONS if iterations is None else iterations
        return banded_cholesky_flops(n, self.bandwidth) + iterations * (4.0 * n * self.bandwidth + NARROW_ITERATION_FLOPS)

    def solve(self, pattern, data, contact, b, tolerance: float = REFINE_TOLERANCE):
        """x = A^-1 b for A = the pattern's block data plus ``contact`` blocks (``BandScatter.band``) by conjugate
        gradients on A preconditioned with P (``preconditioner_data``, the contact blocks in full) to a relative
        residual ``tolerance`` (REFINE_TOLERANCE unless given). P is factorized in single precision (in double where that
        fails): a preconditioner's round-off changes how many iterations reach the tolerance, not what they reach, and
        single precision halves the factorization and each solve with the factor (64 x 64 lab cloth, frames 25 and 26,
        the same PCG iterations: 2.9 vs 5.6 s and 2.2 vs 3.8 s, machine under load). The wall times of the
        factorization (filling the band included) and of the iterations are kept in ``factor_seconds`` and
        ``pcg_seconds``.
        Returns (x, iterations) or (None, iterations) when NARROW_MAX_ITERATIONS did not reach it; raises BandTooWide
        where a contact block leaves the narrow band and LinAlgError where P's factorization fails."""
        began = perf_counter()
        self.factor_seconds = self.pcg_seconds = 0.0
        factor, info = spbtrf(self.band(data, contact, np.float32), lower=0, overwrite_ab=1)
        single = info == 0
        if not single:
            factor, info = dpbtrf(self.band(data, contact), lower=0, overwrite_ab=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the narrow band's factorization failed (info {info})")
        factored = perf_counter()
        self.factor_seconds = factored - began
        x, iterations, residual = pcg(pcg_matvec(pattern, data, contact), lambda r: self.scatter.solve(factor, r, single),
                                      b, tolerance, NARROW_MAX_ITERATIONS)
        self.pcg_seconds = perf_counter() - factored
        return (x if residual <= tolerance else None), iterations
