"""PROJECTIVE: Projective Dynamics (Bouaziz et al. 2014) with Chebyshev acceleration (Wang 2015)."""
from .solver import ProjectiveSolver

__all__ = ["ProjectiveSolver"]
