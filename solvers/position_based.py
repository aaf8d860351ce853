"""PBD and XPBD: predict positions, project constraints, derive velocities from positions.

Müller et al. 2007 "Position Based Dynamics"; Macklin et al. 2016 "XPBD". The two differ only in the
compliance handed to the shared constraint kernels (``solvers/constraints``): PBD projects every
constraint as hard (alpha = 0), XPBD uses alpha = compliance / dt^2 and accumulates Lagrange
multipliers, which makes its stiffness independent of iteration count and step size.
"""
import numpy as np
import scipy.sparse as sp

from .base import Solver
from .colliders import resolve_contacts
from .colouring import colour_constraints
from .constraints import DistanceConstraints, TetVolumeConstraints
from .model import State, StepStats, measure_stats


class _Sweep:
    """Precomputed data to sweep one constraint set: colours (Gauss-Seidel) or scatter matrix (Jacobi)."""

    def __init__(self, constraints, particle_count: int, scheme: str):
        self.constraints = constraints
        k = constraints.indices.shape[1]
        if scheme == "GAUSS_SEIDEL":
            self.colours = colour_constraints(constraints.indices, particle_count)
        else:
            # scatter @ dx.reshape(-1, 3) sums every constraint's correction into its particles.
            m = len(constraints)
            self.scatter = sp.csr_matrix(
                (np.ones(m * k), (constraints.indices.ravel(), np.arange(m * k))), shape=(particle_count, m * k)
            )
            self.count = np.bincount(constraints.indices.ravel(), minlength=particle_count).astype(float)
            self.constraint_count = self.count[constraints.indices].max(axis=1)


class PositionBasedSolver(Solver):
    """``config.solver`` 'PBD' (hard constraints) or 'XPBD' (compliant constraints).

    Distance constraints on every model edge (compliance 1 / stiffness) and, for tet bodies, volume
    constraints on every tet (compliance 1 / volume_stiffness). ``constraint_scheme`` picks the sweep:
    'GAUSS_SEIDEL' projects one colour at a time, 'JACOBI' projects all constraints from the same
    positions and applies x_i += sum_c dx_ic / (relaxation + n_i) (GAMES103 lab 2's averaged form).
    """

    def __init__(self, model, config):
        super().__init__(model, config)
        self.compliant = config.solver == "XPBD"
        self.scheme = config.constraint_scheme
        sets = [DistanceConstraints(model.edge_indices, model.edge_rest_length, 1.0 / config.stiffness)]
        if model.tet_count:
            sets.append(TetVolumeConstraints(model.tet_indices, model.tet_rest_volume, 1.0 / config.volume_stiffness))
        self.sweeps = [_Sweep(c, model.particle_count, self.scheme) for c in sets]
        self.gravity = np.asarray(config.gravity, float)
        self.free = (model.inv_mass > 0.0)[:, None]

    def step(self, state: State, dt: float, colliders=()) -> StepStats:
        x, v = state.x, state.v
        inv_mass = self.model.inv_mass
        v += dt * self.gravity * self.free
        x_prev = x.copy()
        x += dt * v
        multipliers = [np.zeros(len(s.constraints)) for s in self.sweeps]
        for _ in range(self.config.iterations):
            for sweep, lam in zip(self.sweeps, multipliers):
                alpha = sweep.constraints.compliance / dt**2 if self.compliant else 0.0
                if self.scheme == "GAUSS_SEIDEL":
                    self._gauss_seidel(sweep, x, inv_mass, alpha, lam)
                else:
                    self._jacobi(sweep, x, inv_mass, alpha, lam)
            resolve_contacts(x, x_prev, inv_mass, colliders)
        v[:] = (x - x_prev) / dt
        if self.config.damping > 0.0:
            v *= np.exp(-self.config.damping * dt)
        return measure_stats(self.model, x, iterations=self.config.iterations)

    @staticmethod
    def _gauss_seidel(sweep, x, inv_mass, alpha, lam):
        indices = sweep.constraints.indices
        for colour in sweep.colours:
            dx, dlam = sweep.constraints.corrections(x, inv_mass, colour, alpha, lam[colour])
            particles = indices[colour]
            # No particle appears twice within a colour, so plain fancy-index updates are exact.
            for k in range(particles.shape[1]):
                x[particles[:, k]] += dx[:, k]
            lam[colour] += dlam

    def _jacobi(self, sweep, x, inv_mass, alpha, lam):
        """One Jacobi sweep with relaxation r = ``config.jacobi_relaxation``.

        PBD averages per particle, x_i += sum_c dx_ic / (r + n_i) with n_i the particle's constraint
        count: GAMES103 lab 2's x_i <- (r x_i + sum_e (x_i + dx_ie)) / (r + n_i).
        XPBD must keep x - x_tilde = W grad_C^T lambda, or it converges to the wrong stretch; so it
        scales each constraint's whole update (dlambda and its dx) by 1 / (r + max n over its particles).
        """
        dx, dlam = sweep.constraints.corrections(x, inv_mass, slice(None), alpha, lam)
        relaxation = self.config.jacobi_relaxation
        if self.compliant:
            scale = 1.0 / (relaxation + sweep.constraint_count)
            x += sweep.scatter @ (dx * scale[:, None, None]).reshape(-1, 3)
            lam += dlam * scale
        else:
            x += (sweep.scatter @ dx.reshape(-1, 3)) / np.maximum(relaxation + sweep.count, 1e-12)[:, None]
