"""Solver settings as a plain dataclass: the only thing a solver knows of the user's choices.

``operators/bridge.py`` is the one place that turns Blender properties into a SolverConfig.
"""
from dataclasses import dataclass
from typing import Optional

SOLVERS = ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER", "PBD", "XPBD", "PROJECTIVE", "NEWTON")
CONSTRAINT_SCHEMES = ("GAUSS_SEIDEL", "JACOBI")
LINEAR_SOLVERS = ("CG", "JACOBI")


@dataclass
class SolverConfig:
    solver: str = "XPBD"
    """One of SOLVERS."""
    constraint_scheme: str = "GAUSS_SEIDEL"
    """PBD/XPBD sweep: one of CONSTRAINT_SCHEMES."""
    linear_solver: str = "CG"
    """Linear solve inside IMPLICIT_EULER: one of LINEAR_SOLVERS."""
    linear_tolerance: float = 1e-8
    """IMPLICIT_EULER: the linear solve stops at ||b - A v|| <= linear_tolerance * ||b||."""
    substeps: int = 10
    """Solver steps per scene frame (>= 1)."""
    iterations: int = 5
    """Constraint sweeps (PBD/XPBD) or solver iterations per step (>= 1)."""
    stiffness: float = 1.0e4
    """Stiffness of every edge spring [N/m]; XPBD compliance = 1 / stiffness."""
    volume_stiffness: float = 1.0e4
    """Stiffness of every tet volume constraint C = 6 (V - V0) [N/m^5 in XPBD units]."""
    damping: float = 0.1
    """Linear velocity damping [1/s]: v is scaled by exp(-damping * dt) every step."""
    gravity: tuple = (0.0, 0.0, -9.81)
    """Gravitational acceleration [m/s^2]."""
    jacobi_relaxation: float = 0.2
    """Weight of a particle's own position in a Jacobi sweep (GAMES103 lab: 0.2); >= 0."""
    tether_stretch: Optional[float] = None
    """PBD/XPBD pin tethers: a particle may move at most (1 + this) x its rest geodesic distance from its
    nearest pin (a strain limit, 0.01 = 1%); None turns tethers off."""
    max_speed: float = 1000.0
    """A particle faster than this [m/s] means the simulation exploded."""
