"""Soft Sim's pure simulation engine: NumPy/SciPy only, never bpy (tests/test_layering.py checks)."""
from .builder import ModelError, build_model, grid_cloth
from .collision import GroundPlane, MeshCollider, Sphere, deepest_penetration, frame_colliders
from .config import SolverConfig
from .frame import SimulationDiverged, advance_frame
from .model import Model, State, StepStats, measure_stats
from .registry import AVAILABLE_SOLVERS, REGISTRY, SOLVERS, make_solver

__all__ = [
    "AVAILABLE_SOLVERS", "GroundPlane", "MeshCollider", "Model", "ModelError", "REGISTRY", "SOLVERS", "SimulationDiverged",
    "SolverConfig", "Sphere", "State", "StepStats", "advance_frame", "build_model", "deepest_penetration", "frame_colliders",
    "grid_cloth", "make_solver", "measure_stats",
]
