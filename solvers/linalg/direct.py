"""Sparse direct solves of symmetric positive definite systems (SuperLU through scipy)."""
import scipy.sparse as sp
from scipy.sparse.linalg import splu


def factorize_spd(A: sp.spmatrix):
    """A solve function x = solve(b) for a sparse SPD matrix, factorized once (reuse it for many b).

    SuperLU with the minimum-degree ordering of A^T + A and no pivoting off the diagonal: for an SPD matrix
    that is a symmetric LDL^T-like factorization with far less fill than the default COLAMD ordering.
    """
    lu = splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    return lu.solve
