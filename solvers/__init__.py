"""Soft Sim's pure simulation engine: NumPy/SciPy only, never bpy (tests/test_layering.py checks)."""
from .builder import ModelError, build_model, grid_cloth
from .colliders import GroundPlane, Sphere, deepest_penetration
from .config import SolverConfig
from .frame import SimulationDiverged, advance_frame
from .model import Model, State, StepStats, measure_stats

AVAILABLE_SOLVERS = ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER", "PBD", "XPBD")
"""Solvers that ``make_solver`` can build in this version; the UI offers only these."""


def make_solver(model: Model, config: SolverConfig):
    """The solver ``config.solver`` bound to ``model``. Raises ValueError for a solver not available."""
    if config.solver in ("PBD", "XPBD"):
        from .position_based import PositionBasedSolver

        return PositionBasedSolver(model, config)
    if config.solver in ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER"):
        from .mass_spring import MassSpringSolver

        return MassSpringSolver(model, config)
    raise ValueError(f"solver {config.solver!r} is not available in this version (available: {', '.join(AVAILABLE_SOLVERS)})")


__all__ = [
    "AVAILABLE_SOLVERS", "GroundPlane", "Model", "ModelError", "SimulationDiverged", "SolverConfig", "Sphere",
    "State", "StepStats", "advance_frame", "build_model", "deepest_penetration", "grid_cloth", "make_solver",
    "measure_stats",
]
