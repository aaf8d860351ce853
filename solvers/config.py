"""Solver settings as a plain dataclass: the only thing a solver knows of the user's choices.

``operators/bridge.py`` is the one place that turns Blender properties into a SolverConfig, and the
add-on's properties take their defaults from this dataclass, so pure tests, benches and users run the
same settings unless they say otherwise.
"""
from dataclasses import asdict, dataclass
from typing import Optional

CONSTRAINT_SCHEMES = ("GAUSS_SEIDEL", "JACOBI")
LINEAR_SOLVERS = ("CG", "JACOBI")
MASS_DISTRIBUTIONS = ("ELEMENT", "UNIFORM")
COMPUTE_MODES = ("AUTO", "NUMPY")
"""``SolverConfig.compute`` (the same tuple as ``solvers.native.COMPUTE_MODES``)."""


@dataclass
class SolverConfig:
    solver: str = "XPBD"
    """A name in ``solvers.registry.SOLVERS``."""
    constraint_scheme: str = "GAUSS_SEIDEL"
    """PBD/XPBD sweep: one of CONSTRAINT_SCHEMES."""
    linear_solver: str = "CG"
    """Linear solve inside IMPLICIT_EULER: one of LINEAR_SOLVERS."""
    linear_tolerance: float = 1e-3
    """IMPLICIT_EULER: the linear solve stops at ||b - A v|| <= linear_tolerance * ||b - A v^n|| (the step's own
    initial residual; see solvers/mass_spring.py)."""
    substeps: Optional[int] = None
    """Solver steps per scene frame (>= 1); None: the solver's own default (``registry``: XPBD 30, NEWTON 1, ...)."""
    iterations: Optional[int] = None
    """Constraint sweeps per step (PBD/XPBD), local-global iterations (PROJECTIVE: at least these, more while a step
    would gain energy), a ceiling raiser for implicit Euler's linear iterations; None: the solver's own default (1;
    PROJECTIVE 2)."""
    stiffness: float = 1.0e4
    """Stiffness of every edge spring of a body without tets (cloth, ropes) [N/m]; XPBD compliance = 1 / stiffness."""
    youngs_modulus: float = 1.0e5
    """Young's modulus E [Pa] of a body with tets (a solid), for every solver (see ``solvers.material``)."""
    poisson_ratio: float = 0.4
    """Poisson's ratio nu of a body with tets, in [0, 0.5)."""
    bending_stiffness: float = 1.0e-3
    """Bending modulus of a cloth (triangles, no tets) across each interior edge [N m], in every solver (isometric
    bending, ``solvers/energies/bending.py``; PBD uses it as XPBD compliance too); 0 = none.

    Default 1e-3 N m, the stiff end of real fabric (plate moduli ~1e-5 .. 1e-3 N m). What shows is the bending
    length (k / w)^(1/3), w the areal weight: real fabric (w ~ 2 N/m^2) has a few cm, ~3% of a 1 m cloth. The
    default body (1 kg on the 10 m lab cloth, w = 0.098 N/m^2) gets (1e-3 / 0.098)^(1/3) = 0.22 m, 2% of its size
    and above the 64 x 64 cloth's 0.16 m spacing, so folds get a width of their own; 1e-4 (0.10 m) would fall
    below the mesh spacing and change little."""
    use_self_collision: bool = False
    """CLOTH (a body with faces and no tets) collides with itself, vertices keeping ``thickness`` from its faces
    (``solvers/collision/response/self_contact.py``: PBD, XPBD, the mass-spring solvers and PROJECTIVE; NEWTON keeps the
    IPC barrier of ``solvers/collision/barriers/self_barrier.py`` with reach ``thickness``, at least 1 mm). Off by
    default: on the 64 x 64 lab cloth it costs about 16 times the XPBD substep it follows (see that module), far more
    than a default setting may add to a step (half a step)."""
    thickness: float = 0.01
    """A body's self-collision distance [m] (>= 0): how far its vertices keep from its own faces."""
    damping: float = 0.1
    """Linear velocity damping [1/s]: v is scaled by exp(-damping * dt) every step."""
    internal_damping: float = 0.01
    """A PBD/XPBD/PROJECTIVE solid's internal (material) damping [s]: its strain rates are resisted with this time times the
    material's stiffness (Rayleigh damping proportional to stiffness, Macklin et al. 2016 eq. 26), so a dropped body
    bounces less and stops vibrating sooner, while rigid motion is not damped at all. A mode of angular frequency w
    gets the damping ratio tau w / 2. 0 = none (an elastic body). PROJECTIVE damps in proportion to the tets' shear
    stiffness only (``projective/solver.py``: a cube dropped 2.2 m stays on the ground instead of coming back 0.20 m,
    at 20 iterations).
    Other solvers and cloth do not read it.
    Default 0.01 s: at 0 a PBD/XPBD solid is nearly perfectly elastic (Blender's default ico sphere came
    back to 85% of its drop height) and a body that is not exactly symmetric bounces off sideways like a die: the
    default UV sphere and cube dropped onto friction 0.5 travelled 80 and 105 mm in 48 frames, 16 and 6 mm at 0.01 s
    (pure engine). Cost: ~30% more per step of a solid (the default ico sphere in free flight, 30 substeps).
    Stiffness-proportional damping depends on scale: the default 1 kg, 1 m ball's lowest mode (~2000 rad/s) is
    overdamped at 0.01 s, a 500 kg one of the same size (~90 rad/s) gets a damping ratio 0.45."""
    air_drag: float = 0.0
    """Drag coefficient C_n (dimensionless, >= 0) of a cloth's faces against the air, of density 1.2 kg/m^3
    (``forces/air.py``: F = -1/2 rho C_n A (w.n)|w.n| n plus 2% of that along the face, w the velocity relative to the
    air, which the scene's WIND fields move); 0 = no air (and the WIND fields do not act). Every solver reads it; a
    body with tets does not. A flat plate broadside has about 1.2. Default 0 here, the engine's vacuum (free fall is
    1/2 g t^2 in the engine's tests and benches); the add-on's property defaults to AIR_DRAG_DEFAULT."""
    field_weight: float = 1.0
    """How strongly the scene's force fields act on the body (>= 0): multiplies every field's effect, the air's velocity
    included (``forces/loads.py``); 0 ignores them (the still air's drag stays)."""
    gravity: tuple = (0.0, 0.0, -9.81)
    """Gravitational acceleration [m/s^2]."""
    jacobi_relaxation: float = 0.2
    """Weight of a particle's own position in a Jacobi sweep (GAMES103 lab: 0.2); >= 0."""
    tether_stretch: Optional[float] = None
    """PBD/XPBD pin tethers: a particle may move at most (1 + this) x its rest geodesic distance from its
    nearest pin (a strain limit, 0.01 = 1%); None turns tethers off."""
    newton_tolerance: float = 1e-2
    """NEWTON stops when max |p| / dt < newton_tolerance [m/s] (the stopping rule of Li's solid-sim-tutorial); a step
    whose iterations stall stops under IPC's size-relative tolerance instead (``newton.RELATIVE_TOLERANCE``)."""
    newton_max_iterations: int = 100
    """NEWTON iterations per step before the step fails with NewtonNotConverged."""
    max_speed: float = 1000.0
    """A particle faster than this [m/s] means the simulation exploded."""
    # --- Pressure and sewing (closed cloths, seams): solvers/energies/pressure.py, solvers/sewing.py ---
    pressure: float = 0.0
    """CLOTH with a closed surface: gauge pressure [Pa] of the gas inside at the rest volume V0, an isothermal ideal
    gas (P V = p V0, ``energies/pressure.py``); 0 = no gas. Every solver: PBD/XPBD and the explicit integrators as a
    force, IMPLICIT_EULER and NEWTON as the energy -p V0 ln(V / V0) in the incremental potential, PROJECTIVE as a
    force re-evaluated at every local-global iteration."""
    use_sewing: bool = False
    """CLOTH: its loose edges (edges in no face) are seams that pull their ends together to zero length
    (``solvers/sewing.py``) with the stiffness ``stiffness``, instead of being springs of their modelled length."""
    sewing_force: float = 0.0
    """The most a seam pulls [N]; 0 = no cap (a zero-length spring of ``stiffness``)."""
    # --- end of pressure and sewing ---
    compute: str = "AUTO"
    """Where the hot loops run, read when a solver is built: AUTO = the native kernels (``solvers/native``, C compiled
    ahead of time) when the platform's library loads and passes its self-test, else NumPy; NUMPY = always the NumPy
    code (the reference). Both give the same results (bit for bit on x86-64). ``solvers.native.status(compute)``
    says which runs and why; docs/design.md ("Native kernels") lists the loops that have a native twin."""

    def __post_init__(self):
        from .registry import REGISTRY, SOLVERS

        if self.solver not in SOLVERS:
            raise ValueError(f"unknown solver {self.solver!r}; one of {', '.join(SOLVERS)}")
        if self.substeps is None:
            self.substeps = REGISTRY[self.solver].default_substeps
        if self.iterations is None:
            self.iterations = REGISTRY[self.solver].default_iterations
        if self.constraint_scheme not in CONSTRAINT_SCHEMES:
            raise ValueError(f"unknown constraint_scheme {self.constraint_scheme!r}; one of {', '.join(CONSTRAINT_SCHEMES)}")
        if self.linear_solver not in LINEAR_SOLVERS:
            raise ValueError(f"unknown linear_solver {self.linear_solver!r}; one of {', '.join(LINEAR_SOLVERS)}")
        if self.compute not in COMPUTE_MODES:
            raise ValueError(f"unknown compute {self.compute!r}; one of {', '.join(COMPUTE_MODES)}")
        if not 0.0 <= self.poisson_ratio < 0.5:
            raise ValueError(f"poisson_ratio must be in [0, 0.5), got {self.poisson_ratio}")
        if not self.youngs_modulus > 0.0:
            raise ValueError(f"youngs_modulus must be positive, got {self.youngs_modulus}")
        if not self.internal_damping >= 0.0:
            raise ValueError(f"internal_damping must be >= 0, got {self.internal_damping}")
        if not self.air_drag >= 0.0:
            raise ValueError(f"air_drag must be >= 0, got {self.air_drag}")
        if not self.field_weight >= 0.0:
            raise ValueError(f"field_weight must be >= 0, got {self.field_weight}")
        if not self.thickness >= 0.0:
            raise ValueError(f"thickness must be >= 0, got {self.thickness}")
        if not (self.pressure >= 0.0 and self.sewing_force >= 0.0):
            raise ValueError(f"pressure and sewing_force must be >= 0, got {self.pressure} and {self.sewing_force}")
        if self.substeps < 1 or self.iterations < 1 or self.newton_max_iterations < 1:
            raise ValueError("substeps, iterations and newton_max_iterations must be at least 1")


AIR_DRAG_DEFAULT = 1.0
"""The add-on's default ``air_drag`` (its property's; the engine's SolverConfig default is 0, vacuum): a flat plate's
drag coefficient, rounded (broadside ~1.17-1.28). Why not Blender Cloth's way: its default Air Viscosity 1 is a
linear drag on every vertex whatever the cloth's size, mass or orientation; measured on its default 2 m plane (0.3
kg a vertex, 24 fps) it falls 2.2 m in the first second and 6.9 m in two (vacuum: 4.9 and 19.6 m), edge-on exactly
the same. At 1.0, Soft Sim's default body (1 kg) on the same plane falls flat at about 2 m/s (1.6 m in the first
second, 3.6 m in two: about Blender's in the first second, like a real sheet later), edge-on nearly freely, and a
Wind field acts on it at once, as it does on Blender's cloth."""

DEFAULTS = asdict(SolverConfig())
"""Every setting's default (for the default solver), for the add-on's property declarations."""
