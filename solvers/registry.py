"""The one table of solvers: ``make_solver``, the add-on's Solver menu and panel, and the tests all read it.

Each entry names the solver family that runs it and which settings it reads, so the panel shows exactly
those. ``number`` is the solver's fixed enum number in Blender files (never reuse or renumber one).
Menu labels and tooltips are user-facing text and live in the add-on (``operators/bridge.py``).
"""
from dataclasses import dataclass
from importlib import import_module


@dataclass(frozen=True)
class SolverInfo:
    name: str
    number: int
    """Stable enum number stored in .blend files."""
    module: str
    """Module inside ``solvers`` holding the solver class."""
    cls: str
    settings: tuple
    """SolverConfig fields this solver reads beyond the common ones (substeps, mass, damping, pins)."""
    default_substeps: int
    """Substeps per frame of this solver's default (SolverConfig's, and a body's when it switches to this solver
    with the previous default untouched)."""
    default_iterations: int = 1
    """Iterations per substep of this solver's default, used the same way."""
    explicit: bool = False
    """Conditionally stable: the panel shows the largest stable substep."""


_TABLE = (
    SolverInfo("EXPLICIT_EULER", 0, "mass_spring", "MassSpringSolver", ("stiffness", "bending_stiffness", "use_self_collision", "thickness"), 30, explicit=True),
    SolverInfo("SYMPLECTIC_EULER", 1, "mass_spring", "MassSpringSolver", ("stiffness", "bending_stiffness", "use_self_collision", "thickness"), 30, explicit=True),
    SolverInfo("IMPLICIT_EULER", 2, "mass_spring", "MassSpringSolver", ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "linear_solver", "linear_tolerance", "iterations"), 2),
    SolverInfo("PBD", 3, "position_based", "PositionBasedSolver", ("bending_stiffness", "use_self_collision", "thickness", "constraint_scheme", "jacobi_relaxation", "iterations", "tether_stretch", "internal_damping"), 30),
    SolverInfo("XPBD", 4, "position_based", "PositionBasedSolver", ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "constraint_scheme", "jacobi_relaxation", "iterations", "tether_stretch", "internal_damping"), 30),
    # 8 x 5 on the 64 x 64 lab cloth: about XPBD's cost with 11% worst strain at impact (2 x 5: 32-42%).
    SolverInfo("PROJECTIVE", 5, "projective", "ProjectiveSolver", ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "iterations"), 8,
               default_iterations=5),
    SolverInfo("NEWTON", 6, "newton", "NewtonSolver", ("stiffness", "bending_stiffness", "newton_tolerance", "newton_max_iterations"), 1),
)

REGISTRY = {info.name: info for info in _TABLE}
SOLVERS = tuple(info.name for info in _TABLE)
"""Every solver name of the public contract, in enum-number order."""
AVAILABLE_SOLVERS = SOLVERS
"""Solvers that ``make_solver`` can build: every one of the table (a name the tests and the bench parametrize on)."""


def make_solver(model, config):
    """The solver ``config.solver`` bound to ``model``. Raises ValueError for a solver not in the table."""
    info = REGISTRY.get(config.solver)
    if info is None:
        raise ValueError(f"unknown solver {config.solver!r}; one of {', '.join(SOLVERS)}")
    cls = getattr(import_module(f".{info.module}", __package__), info.cls)
    return cls(model, config)
