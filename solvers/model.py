"""Plain data that every solver shares: the Model (what the body is) and the State (where it is).

No bpy here: the bridge in ``operators/`` fills these from Blender meshes.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class Model:
    """A simulated body: particles, elements and their rest configuration.

    A pinned particle is one with ``inv_mass == 0``; solvers never special-case pins beyond that.
    """

    rest_positions: np.ndarray
    """Rest positions [m], shape (particle_count, 3), float64, world space at build time."""
    mass: np.ndarray
    """Lumped particle masses [kg], shape (particle_count,), float64 (pinned particles keep theirs)."""
    inv_mass: np.ndarray
    """Inverse masses [1/kg], shape (particle_count,), float64; 0 for pinned particles."""
    edge_indices: np.ndarray
    """Particle pairs joined by a distance constraint / spring, shape (edge_count, 2), int64."""
    edge_rest_length: np.ndarray
    """Rest length of each edge [m], shape (edge_count,), float64."""
    triangle_indices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    """Surface triangles, shape (triangle_count, 3), int64 (used for mass lumping and output)."""
    collision_triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    """Triangles self-collision keeps apart, shape (k, 3), int64; empty: ``triangle_indices``. A mesh's quads give
    both their splits here (``builder.both_quad_splits``): Blender draws a bent quad split along either diagonal, so
    the cloth must stay clear of both for the drawn mesh not to pass through itself. A solid: the triangles of its
    mesh as drawn (both splits of its quads), which other bodies keep clear of beside its tet boundary."""
    tet_indices: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    """Positively oriented tetrahedra, shape (tet_count, 4), int64."""
    tet_rest_volume: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Rest volume of each tet [m^3], shape (tet_count,), float64."""
    goal_particles: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Soft pins: particles that a spring pulls toward their target (``goal_positions``) instead of being placed
    there, shape (goal_count,), int64; they keep their mass (``inv_mass > 0``). See ``solvers/soft_pins.py``."""
    goal_stiffness: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Stiffness of each soft pin's spring [N/m], shape (goal_count,), float64."""
    goal_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    """Where each soft pin's spring pulls [m], shape (goal_count, 3), float64: the target at the end of the current
    step, written by ``frame.FrameRun`` before every step (the rest positions until the first)."""
    particle_stiffness_scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per-vertex factor on a cloth's stretch stiffness (the ``stiffness_group`` map), shape (particle_count,) or
    empty (1 everywhere); an edge takes the mean of its ends' factors (``material.edge_stiffness_scale``)."""
    particle_bending_scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per-vertex factor on a cloth's bending stiffness (the ``bending_group`` map), shape (particle_count,) or
    empty (1 everywhere); a hinge takes the mean of its four corners' factors (``material.hinge_bending_stiffness``)."""

    @property
    def particle_count(self) -> int:
        return len(self.rest_positions)

    @property
    def edge_count(self) -> int:
        return len(self.edge_indices)

    @property
    def tet_count(self) -> int:
        return len(self.tet_indices)

    @property
    def pinned(self) -> np.ndarray:
        """Boolean mask of pinned particles, shape (particle_count,)."""
        return self.inv_mass == 0.0


@dataclass(eq=False)
class State:
    """Where the particles are and how fast they move."""

    x: np.ndarray
    """Positions [m], shape (particle_count, 3), float64."""
    v: np.ndarray
    """Velocities [m/s], shape (particle_count, 3), float64."""

    @classmethod
    def at_rest(cls, model: Model) -> "State":
        return cls(model.rest_positions.copy(), np.zeros_like(model.rest_positions))

    def copy(self) -> "State":
        return State(self.x.copy(), self.v.copy())


@dataclass
class StepStats:
    """What one solver step reports: how hard it worked and how well the constraints hold."""

    iterations: int = 0
    """Constraint sweeps or linear-solver iterations used in the step."""
    max_strain: float = 0.0
    """max |l - l0| / l0 over all edges after the step (dimensionless)."""
    rms_strain: float = 0.0
    """Root mean square edge strain after the step (dimensionless)."""
    volume_error: float = float("nan")
    """Relative total tet volume error |V - V0| / V0 after the step; nan without tets."""
    linear_residual: float = float("nan")
    """Relative residual of the last linear solve (implicit solvers); nan when there is none."""
    newton_iterations: int = 0
    """NEWTON: Newton iterations; IMPLICIT_EULER: linearizations (summed over a frame's substeps by ``advance_frame``)."""
    line_search_halvings: int = 0
    """NEWTON and IMPLICIT_EULER: step-size halvings in the line searches (summed like newton_iterations)."""
    newton_residual: float = float("nan")
    """NEWTON: final max |p| / dt [m/s] of the last step; nan for other solvers."""
    min_distance: float = float("nan")
    """NEWTON: smallest distance [m] of a free particle to a collider surface at the end of any substep; nan
    without colliders."""
    split_steps: int = 0
    """Extra solver steps a frame took because a step that did not converge was retried as two half steps
    (``solvers.frame.advance_frame``; NEWTON)."""
    pd_residual: float = float("nan")
    """PROJECTIVE: relative fixed-point residual of the last local-global iteration of the step, |G(x_k) - x_k| /
    |G(x_k) - x^n| over the free particles (G one plain local-global update, x^n the step's start); nan for others."""


def edge_strain(model: Model, x: np.ndarray) -> np.ndarray:
    """Engineering strain (l - l0) / l0 of every edge at positions ``x``, shape (edge_count,)."""
    if model.edge_count == 0:
        return np.zeros(0)
    d = x[model.edge_indices[:, 0]] - x[model.edge_indices[:, 1]]
    return np.linalg.norm(d, axis=1) / model.edge_rest_length - 1.0


def tet_volumes(x: np.ndarray, tet_indices: np.ndarray) -> np.ndarray:
    """Signed volume of every tet [m^3], shape (tet_count,)."""
    p0, p1, p2, p3 = (x[tet_indices[:, k]] for k in range(4))
    return np.einsum("ij,ij->i", np.cross(p1 - p0, p2 - p0), p3 - p0) / 6.0


def orient_tets(x: np.ndarray, tet_indices: np.ndarray) -> np.ndarray:
    """The tets (k, 4) with the negatively oriented ones flipped (two corners swapped), as a new array."""
    tets = np.array(tet_indices, np.int64)
    negative = tet_volumes(x, tets) < 0.0
    tets[negative] = tets[negative][:, [0, 2, 1, 3]]
    return tets


def measure_stats(model: Model, x: np.ndarray, iterations: int = 0, linear_residual: float = float("nan")) -> StepStats:
    """StepStats of positions ``x``: edge strain and (for tet bodies) relative volume error."""
    strain = edge_strain(model, x)
    stats = StepStats(iterations=iterations, linear_residual=linear_residual)
    if len(strain):
        stats.max_strain = float(np.max(np.abs(strain)))
        stats.rms_strain = float(np.sqrt(np.mean(strain**2)))
    if model.tet_count:
        rest = model.tet_rest_volume.sum()
        stats.volume_error = float(abs(tet_volumes(x, model.tet_indices).sum() - rest) / rest)
    return stats
