"""Sparse direct solves of symmetric positive definite systems (SuperLU through scipy, or LAPACK's banded Cholesky
after a reverse Cuthill-McKee ordering)."""
import time

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cholesky_banded
from scipy.linalg.lapack import dpbtrs
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.sparse.linalg import splu

BAND_MEMORY_LIMIT = 16 * 2**20
"""Largest banded Cholesky factor tried [bytes]. Past the last-level cache the banded solve streams its factor from
memory and SuperLU's sparser factor wins. Measured on the 2-core bench machine (32 MB L3), PD's matrix of the lab
cloth, three right-hand sides: 64x64, band 4.2 MB: banded 0.46 ms vs SuperLU 0.58 ms; 96x96, 14 MB: 1.46 vs 1.94 ms;
128x128, 33 MB: 30.6 vs 12.0 ms (session 7, a busy machine)."""

TIMING_TRIALS = 3
"""Solves timed per method by ``factorize_spd_for_many`` (the fastest of them counts)."""


def factorize_spd(A: sp.spmatrix):
    """A solve function x = solve(b) for a sparse SPD matrix, factorized once (reuse it for many b).

    SuperLU with the minimum-degree ordering of A^T + A and no pivoting off the diagonal: for an SPD matrix
    that is a symmetric LDL^T-like factorization with far less fill than the default COLAMD ordering.
    """
    lu = splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    return lu.solve


class BandedCholesky:
    """x = solve(b) for a sparse SPD matrix A (n, n) through a banded Cholesky factor of P A P^T, P the reverse
    Cuthill-McKee ordering (scipy.sparse.csgraph), which packs a mesh's matrix into a narrow band
    (a 64x64 cloth grid: bandwidth 126, two grid rows, of 4094 unknowns). b: (n,) or (n, k); returns the same shape.

    ``fits(A)`` says whether the factor stays under ``BAND_MEMORY_LIMIT`` without building it.
    """

    def __init__(self, A: sp.spmatrix, ordering=None):
        A = sp.csr_matrix(A)
        self.perm = _rcm(A) if ordering is None else ordering
        P = A[self.perm][:, self.perm].tocoo()
        upper = P.row <= P.col
        row, col = P.row[upper], P.col[upper]
        self.bandwidth = int((col - row).max(initial=0))
        n = A.shape[0]
        # LAPACK's upper band storage: ab[bandwidth + i - j, j] = A[i, j] for i <= j.
        ab = np.zeros((self.bandwidth + 1, n))
        ab[self.bandwidth + row - col, col] = P.data[upper]
        self.factor = cholesky_banded(ab, lower=False, check_finite=False)

    @staticmethod
    def fits(A: sp.spmatrix):
        """The RCM ordering of A if its band factor would take at most BAND_MEMORY_LIMIT bytes, else None."""
        A = sp.csr_matrix(A)
        perm = _rcm(A)
        inverse = np.empty_like(perm)
        inverse[perm] = np.arange(len(perm))
        coo = A.tocoo()
        bandwidth = int(np.abs(inverse[coo.row] - inverse[coo.col]).max(initial=0))
        return perm if (bandwidth + 1) * A.shape[0] * 8 <= BAND_MEMORY_LIMIT else None

    def __call__(self, b: np.ndarray) -> np.ndarray:
        rhs = np.asfortranarray(b[self.perm].reshape(len(self.perm), -1))  # LAPACK wants columns contiguous
        x, info = dpbtrs(self.factor, rhs, lower=0, overwrite_b=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"dpbtrs failed (info {info})")
        out = np.empty(x.shape)
        out[self.perm] = x
        return out.reshape(b.shape)


def _rcm(A: sp.csr_matrix) -> np.ndarray:
    return reverse_cuthill_mckee(A, symmetric_mode=True).astype(np.int64)


def factorize_spd_for_many(A: sp.spmatrix, columns: int = 3):
    """Like ``factorize_spd``, for a matrix that will be solved many times (Projective Dynamics' constant matrix):
    builds SuperLU's factor and, when its band fits BAND_MEMORY_LIMIT, the banded Cholesky too, times TIMING_TRIALS
    solves of an (n, columns) right-hand side with each, and returns the faster solve function. Which one wins
    depends on the mesh and the machine's caches (see BAND_MEMORY_LIMIT), so it is measured rather than guessed;
    both give the same x up to round-off. The chosen method's name is on the function as ``.method``."""
    superlu = factorize_spd(A)
    ordering = BandedCholesky.fits(A)
    if ordering is None:
        return _named(superlu, "SuperLU")
    banded = BandedCholesky(A, ordering)
    b = np.ones((A.shape[0], columns))
    if _fastest_time(banded, b) < _fastest_time(superlu, b):
        return _named(banded, "banded Cholesky")
    return _named(superlu, "SuperLU")


def _fastest_time(solve, b) -> float:
    solve(b)  # first call: page in the factor
    best = np.inf
    for _ in range(TIMING_TRIALS):
        start = time.perf_counter()
        solve(b)
        best = min(best, time.perf_counter() - start)
    return best


def _named(solve, method: str):
    def named(b):
        return solve(b)

    named.method = method
    return named
