"""The one table of solvers: ``make_solver``, the add-on's Solver menu and panel, and the tests all read it.

Each entry names the solver family that runs it and which settings it reads, so the panel shows exactly
those. ``number`` is the solver's fixed enum number in Blender files (never reuse or renumber one).
Menu labels and tooltips are user-facing text and live in the add-on (``operators/bridge.py``).
"""
from dataclasses import dataclass
from importlib import import_module


LOADS = ("air_drag", "field_weight")
"""The settings of the external loads, which every solver reads (``solvers/forces/loads.py``)."""


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
    roles: tuple = ("CLOTH", "SOLID")

    def __post_init__(self):
        # Every solver takes the force fields and the air (``forces.loads``, applied by ``frame.FrameRun``).
        object.__setattr__(self, "settings", tuple(self.settings) + tuple(s for s in LOADS if s not in self.settings))
    """The body roles this solver serves: the add-on's Solver menu offers it only for these, and a bake of any other
    role stops with a message. The explicit mass-spring solvers serve cloth only: a solid's tet-edge springs are so
    short and stiff that they need hundreds to thousands of substeps per frame (355 to 7,665 measured)."""


_TABLE = (
    SolverInfo("EXPLICIT_EULER", 0, "mass_spring", "MassSpringSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness"), 30, explicit=True, roles=("CLOTH",)),
    SolverInfo("SYMPLECTIC_EULER", 1, "mass_spring", "MassSpringSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness"), 30, explicit=True, roles=("CLOTH",)),
    SolverInfo("IMPLICIT_EULER", 2, "mass_spring", "MassSpringSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "linear_solver", "linear_tolerance", "iterations"), 2),
    SolverInfo("PBD", 3, "position_based", "PositionBasedSolver",
               ("bending_stiffness", "use_self_collision", "thickness", "constraint_scheme", "jacobi_relaxation", "iterations",
                "tether_stretch", "internal_damping"), 30),
    SolverInfo("XPBD", 4, "position_based", "PositionBasedSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "constraint_scheme", "jacobi_relaxation",
                "iterations", "tether_stretch", "internal_damping"), 30),
    # 16 x 2, not 8 x 5: the same cost per frame, and twice the substeps quarter the volume a resting solid loses.
    # Contacts are projected after each solve, so the solve lets the particles on the ground sink by h^2 W / m
    # (W the weight they carry, m their own mass) before they are pushed back: that compresses the bottom layer of
    # tets, whatever the stiffness or the iterations (a 1 m cube at resolution 4: -0.36% at 5, 20 iterations, at
    # E x 10 and at nu 0.2 alike; -0.09% at 16 substeps). Measured, pure engine, 48 frames at 24 fps, 8 x 5 -> 16 x 2:
    # 1 m cube at resolution 10 resting on the ground -0.93% -> -0.23% (worst at impact 2.85% -> 1.10%), 533 -> 507
    # ms/frame; 64 x 64 lab cloth worst strain 13.4% -> 6.7%, 100 -> 110 ms/frame (the two timed alternately).
    SolverInfo("PROJECTIVE", 5, "projective", "ProjectiveSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "iterations", "internal_damping"), 16,
               default_iterations=2),
    SolverInfo("NEWTON", 6, "newton", "NewtonSolver",
               ("stiffness", "bending_stiffness", "use_self_collision", "thickness", "newton_tolerance", "newton_max_iterations"), 1),
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
