"""NEWTON: implicit Euler as optimization, with IPC barrier contact and lagged friction (seed 004).

Each step of length h minimizes the incremental potential over the free particles' positions x

    E(x) = 1/2 |x - x_tilde|_M^2 + h^2 (gravity + elasticity + bending + barriers + friction)(x),
    x_tilde = x^n + h v^n,

then sets v = (x - x^n) / h (Minchen Li's course, lecture 2). Pinned particles are Dirichlet conditions:
they sit on their target x^n + h v^n (``advance_frame`` sets their velocity) and are not unknowns.

Newton's method, exactly as the course's ``step_forward``: start at x^n; direction p = -H^-1 grad E with
H the sum of the terms' PSD-projected Hessians over the free DOFs; stop when max|p| / h < ``newton_tolerance``
[m/s]; otherwise step from alpha = the largest step that crosses no collider (times 0.9, the CCD filter),
halving alpha while E(x + alpha p) > E(x). Every accepted iterate keeps every free particle at a positive
distance from every collider.

Elasticity: a body without tets (cloth, ropes) has seed 004's squared-length spring on every edge with
k = stiffness / 4 (the same small-stretch stiffness as a Hooke spring of ``stiffness`` N/m), plus
isometric bending of its faces when ``bending_stiffness`` > 0. A body with tets (a solid) is stable
Neo-Hookean with Lame parameters from ``youngs_modulus`` and ``poisson_ratio``.

Contact: each collider's barrier reaches d_hat = its thickness, or MIN_BARRIER_REACH if that is larger (a
barrier needs a positive reach; a collider of thickness 0 set up for the other solvers still works). The barrier's force scale is chosen from
the body (the user never tunes it): kappa_i = BARRIER_WEIGHT_FACTOR * M * g for every particle, M the body's
mass and g gravity's magnitude (at least 9.81 m/s^2), so that a single particle's barrier can carry the
whole body's weight at s = d / d_hat ~ 0.8 and a body resting on many particles sits just inside d_hat.
The course's square (1000 kg on 5 particles, kappa * contact area = 25 kN) has the same ratio.
"""
from dataclasses import dataclass

import numpy as np

from .base import Solver
from .energies import (
    ColliderBarrier,
    ColliderFriction,
    Gravity,
    Inertia,
    IsometricBending,
    NeoHookean,
    SquaredLengthSprings,
    hinges_from_triangles,
)
from .energies.barrier import barrier_derivative, surface_distance
from .energies.base import element_stencil
from .energies.face_barrier import FaceColliderBarrier, FaceColliderFriction, face_triangles, move_faces_out
from .colliders import Sphere
from .frame import StepNotConverged
from .linalg import BlockPattern, block_cg, factorize_spd, inverse_3x3
from .material import material_arrays
from .model import State, StepStats, measure_stats

SPRING_K_PER_STIFFNESS = 0.25
"""Seed 004's spring k = stiffness / 4 (see ``SquaredLengthSprings``)."""
BARRIER_WEIGHT_FACTOR = 2.5
"""kappa_i = this * body mass * g [N]; see the module docstring."""
FRICTION_SLIP_SPEED = 1e-3
"""eps_v [m/s]: slower tangential motion than this is treated as sticking (the course's value)."""
DIRECT_SOLVE_MAX_DOFS = 50_000
"""Up to this many free DOFs each Newton system is factorized (SuperLU); above, block-preconditioned CG."""
CG_TOLERANCE = 1e-4
"""Relative residual of the CG solve of a Newton system (an inexact Newton direction is enough)."""
MIN_BARRIER_REACH = 1e-3
"""Smallest barrier reach d_hat [m]: a collider thinner than this (thickness 0) acts as this thick for NEWTON."""
MIN_STEP = 1e-12
"""A line search that has to halve alpha below this has stalled: the step fails."""


class NewtonNotConverged(StepNotConverged):
    """A Newton step did not reach the tolerance in ``newton_max_iterations`` (or its line search stalled)."""

    def __init__(self, message, iterations, residual):
        super().__init__(message)
        self.iterations = iterations
        self.residual = residual


@dataclass
class StepLog:
    """Per-iterate record of the last step (iterate 0 is the start): for tests and diagnostics."""

    residuals: list
    """max |p| / h [m/s] at each iterate."""
    energies: list
    """Incremental potential E at each iterate [kg m^2]."""
    min_distances: list
    """Smallest particle-collider distance [m] at each iterate (nan without colliders)."""

    def append(self, residual, energy, min_distance):
        self.residuals.append(residual)
        self.energies.append(energy)
        self.min_distances.append(min_distance)


class NewtonSolver(Solver):
    """``config.solver == 'NEWTON'`` on one Model; ``step`` returns StepStats with the Newton counters."""

    def __init__(self, model, config):
        super().__init__(model, config)
        self.free = model.inv_mass > 0.0
        n = model.particle_count
        self.inertia = Inertia(model.mass, model.rest_positions)
        self.potentials = [Gravity(model.mass, config.gravity)]
        if model.tet_count:
            material = material_arrays(model, config)
            self.potentials.append(NeoHookean(model.rest_positions, model.tet_indices, material.tet_mu, material.tet_lambda))
        else:
            k = SPRING_K_PER_STIFFNESS * config.stiffness
            self.potentials.append(SquaredLengthSprings(model.edge_indices, model.edge_rest_length, k))
            if config.bending_stiffness > 0.0 and len(model.triangle_indices):
                hinges = hinges_from_triangles(model.triangle_indices)
                if len(hinges):
                    self.potentials.append(IsometricBending(model.rest_positions, hinges, config.bending_stiffness))
        # The fixed stencil: inertia's diagonal, every potential's element blocks, and one more diagonal that
        # collects the contact and friction blocks (they only ever touch a particle's own block).
        stencils = [self.inertia.hessian(model.rest_positions)] + [e.hessian(model.rest_positions) for e in self.potentials]
        # Faces against spheres (energies/face_barrier.py): their triangles' blocks come before the diagonal.
        self.face_triangles = face_triangles(model.triangle_indices, self.free)
        self.face_rows, self.face_cols = element_stencil(self.face_triangles)
        rows = np.concatenate([h.rows for h in stencils] + [self.face_rows, np.arange(n)])
        cols = np.concatenate([h.cols for h in stencils] + [self.face_cols, np.arange(n)])
        self.pattern = BlockPattern(rows, cols, self.free)
        g = max(float(np.linalg.norm(config.gravity)), 9.81)
        self.kappa = np.full(n, BARRIER_WEIGHT_FACTOR * float(model.mass.sum()) * g)

    # ------------------------------------------------------------------ the incremental potential

    def _terms(self, colliders, x_start, dt):
        """Per-step contact terms: a barrier per collider, and lagged friction where the collider has friction."""
        barriers, frictions = [], []
        for collider in colliders:
            barrier = ColliderBarrier(collider, self.kappa, self.free, barrier_reach(collider))
            barriers.append(barrier)
            face = None
            if isinstance(collider, Sphere) and len(self.face_triangles):
                face = FaceColliderBarrier(collider, self.face_triangles, float(self.kappa.max()), barrier_reach(collider))
                barriers.append(face)
                if collider.friction > 0.0:
                    frictions.append(FaceColliderFriction(collider, self.face_triangles, x_start, face, FRICTION_SLIP_SPEED * dt))
            if collider.friction > 0.0:
                d, _ = surface_distance(collider, x_start)
                contact = self.free & (d < barrier.d_hat)
                if contact.any():
                    normal_force = np.where(contact, -barrier_derivative(np.where(contact, d, barrier.d_hat), barrier.d_hat, self.kappa), 0.0)
                    frictions.append(ColliderFriction(collider, x_start, normal_force, FRICTION_SLIP_SPEED * dt))
        return barriers, frictions

    def _value(self, x, terms, h2):
        return self.inertia.value(x) + h2 * sum(term.value(x) for term in terms)

    def _direction(self, x, terms, h2):
        """Newton direction p (n, 3), 0 on pinned particles: solve H_FF p_F = -g_F with the projected Hessian."""
        n = len(x)
        gradient = self.inertia.gradient(x) + h2 * sum(term.gradient(x) for term in terms)
        static = [self.inertia.hessian(x).blocks] + [h2 * e.hessian(x).blocks for e in self.potentials]
        diagonal = np.zeros((n, 3, 3))
        faces = np.zeros((len(self.face_rows), 3, 3))
        for term in terms[len(self.potentials):]:
            if getattr(term, "coupled", False):  # face terms: blocks in the triangles' stencil order
                faces += term.hessian(x).blocks
            else:
                diagonal += term.hessian(x).blocks
        data = self.pattern.assemble(np.concatenate(static + [h2 * faces, h2 * diagonal]))
        rhs = -self.pattern.restrict(gradient)
        if self.pattern.free_count == 0:
            return np.zeros_like(x)
        A = self.pattern.matrix(data)
        if 3 * self.pattern.free_count <= DIRECT_SOLVE_MAX_DOFS:
            p = factorize_spd(A)(rhs)
        else:
            D_inv = inverse_3x3(self.pattern.diagonal_blocks(data))
            p, _, _ = block_cg(A, D_inv, rhs, np.zeros_like(rhs), CG_TOLERANCE, 10 * len(rhs))
        return self.pattern.extend(p, n)

    # ------------------------------------------------------------------ one step

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        x, v = state.x, state.v
        config = self.config
        _move_out_of_colliders(x, self.free, colliders)
        move_faces_out(x, self.face_triangles, self.model.inv_mass, colliders, barrier_reach)
        x_start = x.copy()
        x_tilde = x + dt * v
        self.inertia.x_tilde = x_tilde
        x[~self.free] = x_tilde[~self.free]  # Dirichlet: pinned particles on their targets
        barriers, frictions = self._terms(colliders, x_start, dt)
        terms = self.potentials + barriers + frictions
        h2 = dt * dt

        iterations, halvings = 0, 0
        energy = self._value(x, terms, h2)
        p = self._direction(x, terms, h2)
        residual = float(np.abs(p).max()) / dt if len(p) else 0.0
        self.log = StepLog([residual], [energy], [self._min_distance(x, colliders)])
        while residual > config.newton_tolerance:
            if iterations >= config.newton_max_iterations:
                raise NewtonNotConverged(
                    f"Newton did not converge in {iterations} iterations (residual {residual:.3g} m/s, tolerance "
                    f"{config.newton_tolerance:g} m/s)", iterations, residual)
            alpha = min([1.0] + [b.max_step(x, p) for b in barriers])
            while True:
                trial = x + alpha * p
                trial_energy = self._value(trial, terms, h2)
                if trial_energy <= energy:
                    break
                alpha *= 0.5
                halvings += 1
                if alpha < MIN_STEP:
                    raise NewtonNotConverged(
                        f"Newton's line search stalled after {iterations} iterations (residual {residual:.3g} m/s)",
                        iterations, residual)
            x[:] = trial
            energy = trial_energy
            p = self._direction(x, terms, h2)
            residual = float(np.abs(p).max()) / dt
            iterations += 1
            self.log.append(residual, energy, self._min_distance(x, colliders))

        v[:] = (x - x_start) / dt
        if config.damping > 0.0:
            v *= np.exp(-config.damping * dt)
        min_distance = self._min_distance(x, colliders)
        if measure:
            stats = measure_stats(self.model, x)
        else:
            stats = StepStats()
        stats.iterations = stats.newton_iterations = iterations
        stats.line_search_halvings = halvings
        stats.newton_residual = residual
        stats.min_distance = min_distance
        return stats

    def _min_distance(self, x, colliders) -> float:
        """Smallest distance [m] of a free particle to any collider's surface; nan without colliders."""
        if not colliders or not self.free.any():
            return float("nan")
        return min(float(surface_distance(c, x[self.free])[0].min()) for c in colliders)

    def energy(self, state: State) -> float:
        """Kinetic + gravitational + elastic energy [J] (no contact terms): for checking dissipation."""
        kinetic = 0.5 * float(np.sum(self.model.mass * np.einsum("ij,ij->i", state.v, state.v)))
        return kinetic + sum(term.value(state.x) for term in self.potentials)


def barrier_reach(collider) -> float:
    """The reach d_hat [m] of a collider's barrier: its thickness, at least MIN_BARRIER_REACH."""
    return max(float(collider.thickness), MIN_BARRIER_REACH)


def _move_out_of_colliders(x, free, colliders):
    """Free particles at or below a collider's surface move out along its normal to half its barrier reach.

    IPC needs a start where every distance is positive; a body placed into a collider (or a collider
    animated into a body between frames) would otherwise have an infinite barrier and no valid step.
    """
    for collider in colliders:
        d_hat = barrier_reach(collider)
        d, normal = surface_distance(collider, x)
        inside = free & (d <= 1e-3 * d_hat)
        if inside.any():
            x[inside] += ((0.5 * d_hat - d[inside]))[:, None] * normal[inside]
