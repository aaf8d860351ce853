"""Sparse linear algebra shared by the implicit solvers: fixed block patterns with Dirichlet DOFs
eliminated, block-preconditioned CG and Jacobi, and direct factorizations."""
from .direct import factorize_spd, factorize_spd_for_many
from .iterative import block_cg, block_jacobi, inverse_3x3
from .pattern import BlockPattern

__all__ = ["BlockPattern", "block_cg", "block_jacobi", "factorize_spd", "factorize_spd_for_many", "inverse_3x3"]
