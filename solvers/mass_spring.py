"""Mass-spring systems with force-based time integration: explicit, symplectic and implicit Euler.

Every model edge is a Hooke spring (GAMES201 lecture 2):

    f_ij = -k_ij (|x_i - x_j| - l_ij) (x_i - x_j) / |x_i - x_j|,    k_ij [N/m] per edge from ``solvers.material``
                                                                  (cloth: config.stiffness; solids: from E, nu)

plus gravity on free particles, and for a cloth (triangles, no tets) with ``config.bending_stiffness`` k_b > 0
the isometric bending force f = -dE/dx of ``solvers.energies.IsometricBending`` (Bergou et al. 2006), one hinge
per interior edge. For a flat rest sheet E = 1/2 x^T (Q (x) I3) x with the constant sparse
Q = sum_h c_h K_h K_h^T (``bending_matrix``), so f = -Q x; a curved rest shape uses the energy's gradient.
With a = f / m (a = 0 for pinned particles, ``inv_mass == 0``):

* EXPLICIT_EULER (forward):    v+ = v + dt a(x),   x+ = x + dt v
* SYMPLECTIC_EULER:            v+ = v + dt a(x),   x+ = x + dt v+
* IMPLICIT_EULER (backward), linearised once per step around x (one Newton step, Baraff & Witkin 1998):

      [M + dt^2 K] v+ = M v + dt f(x),    x+ = x + dt v+

  K = -df/dx is assembled from one 3x3 block per spring,
  K_e = k [ max(1 - l0/l, 0) (I - n n^T) + n n^T ],  n = (x_i - x_j) / l,
  the clamp (Choi & Ko 2002) keeping K positive semi-definite, so the system matrix is symmetric
  positive definite. Bending adds its Hessian: the constant c K K^T (x) I3 per hinge for a flat rest sheet, the
  energy's PSD-projected Hessian otherwise. Pinned particles are not unknowns: their (kinematic) velocity moves to the
  right-hand side, b_F = M_F v_F + dt f_F - dt^2 K_FP v_P. ``config.linear_solver`` picks the solve:

  'CG'      conjugate gradients preconditioned with the inverse 3x3 block diagonal;
  'JACOBI'  block Jacobi, v <- v + D^-1 (b - A v) = D^-1 (b - R v), D the 3x3 block diagonal of A.
            Point (scalar) Jacobi may diverge here (A is not diagonally dominant for springs that are
            not axis-aligned); block Jacobi always converges because 2D - A = M + dt^2 * (the
            "signless" spring Laplacian) is positive definite.

  Both start from the current velocity and stop when ||b - A v|| <= config.linear_tolerance ||b - A v^n||,
  a reduction of the step's own initial residual (an inexact Newton step: the system is itself a
  linearization, so solving it far beyond its own accuracy buys nothing), or after
  ``max(config.iterations, MIN_LINEAR_ITERATIONS)`` iterations (``config.iterations`` can only raise
  that ceiling, it is never the stopping rule). StepStats reports the iterations used and the true
  final residual relative to the initial one.

  An inexact solve must not create momentum: for a body without pins the springs' K has zero row sums
  (they only pull particles relative to each other), so 1^T A v = 1^T M v and the total momentum of the
  solution is 1^T b - 1^T r. Adding to every velocity the uniform delta = (sum of the residual's 3-vectors)
  / (total mass) makes the residual's net force zero, which gives exactly the momentum of an exact solve
  (tests/test_scenarios.py checks it on an asymmetric solid).

Every step ends as in position_based.py: contacts are projected out of the colliders
(``resolve_contacts``), the projection is added to the velocity (v += dx_contact / dt, as in GAMES103
lab 1), and v is scaled by exp(-damping dt).

Stability of the explicit integrators (seed 003: dt <= c sqrt(m/k)) is estimated by
``explicit_stable_substep``; see there for the bound and its constant.
"""
import math

import numpy as np
import scipy.sparse as sp

from .base import Solver
from .linalg import BlockPattern, block_cg, block_jacobi, inverse_3x3
from .colliders import resolve_contacts
from .face_contact import resolve_face_contacts
from .constraints.volume import volume_constraint
from .energies.base import element_stencil
from .energies.bending import IsometricBending, hinges_from_triangles
from .material import material_arrays
from .model import State, StepStats, measure_stats
from .self_collision import self_collision_for

MASS_SPRING_SOLVERS = ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER")

MIN_LINEAR_ITERATIONS = 1000
"""Ceiling on linear iterations per implicit step is max(config.iterations, MIN_LINEAR_ITERATIONS)."""


class MassSpringSolver(Solver):
    """``config.solver`` 'EXPLICIT_EULER', 'SYMPLECTIC_EULER' or 'IMPLICIT_EULER' on springs along every edge.

    Tet bodies are simulated by their tet edges as springs with the stiffness ``solvers/material.py`` derives
    from Young's modulus. IMPLICIT_EULER adds each tet's volume energy 1/2 k_v C^2, C = 6 (V - V0), with XPBD's
    k_v (the part of lambda the springs do not carry), so a solid keeps its volume and resists inverting; the
    explicit integrators have springs only (Poisson's ratio 1/4 whatever ``config.poisson_ratio`` says; their
    stability bound covers springs, plus bending when given). Cloth bodies (no tets) get isometric bending from
    ``config.bending_stiffness`` in all three integrators (module docstring). ``step`` advances the state
    in place and returns StepStats (``iterations`` = linear iterations, 0 for the explicit integrators;
    ``linear_residual`` = final relative residual of the implicit solve, nan otherwise).
    """

    def __init__(self, model, config):
        super().__init__(model, config)
        if config.solver not in MASS_SPRING_SOLVERS:
            raise ValueError(f"MassSpringSolver runs {', '.join(MASS_SPRING_SOLVERS)}, not {config.solver!r}")
        if config.solver == "IMPLICIT_EULER" and config.linear_solver not in ("CG", "JACOBI"):
            raise ValueError(f"linear solver must be 'CG' or 'JACOBI', not {config.linear_solver!r}")
        self.method = config.solver
        n = model.particle_count
        edges = model.edge_indices
        e_count = len(edges)
        self.i, self.j = edges[:, 0], edges[:, 1]
        self.rest_length = model.edge_rest_length
        self.k = material_arrays(model, config).edge_stiffness
        self.gravity = np.asarray(config.gravity, float)
        self.free = model.inv_mass > 0.0
        self.free_col = self.free[:, None].astype(float)
        self.self_collision = self_collision_for(model, config)
        """SelfCollision of a cloth with ``config.use_self_collision``, else None."""
        # scatter @ (e, 3) per-spring vectors: +row to particle i, -row to particle j.
        self.scatter = sp.csr_matrix(
            (np.concatenate([np.ones(e_count), -np.ones(e_count)]),
             (np.concatenate([self.i, self.j]), np.tile(np.arange(e_count), 2))),
            shape=(n, e_count),
        )
        self.has_pins = bool(np.any(~self.free))
        self.bending = cloth_bending(model, config.bending_stiffness)
        self.bending_matrix = None
        if self.bending is not None and self.bending.is_constant_hessian:
            self.bending_matrix = bending_matrix(self.bending, n)  # f = -Q x, one sparse product per step
        self.tets = np.zeros((0, 4), np.int64)
        if self.method == "IMPLICIT_EULER":
            volume_stiffness = material_arrays(model, config).tet_volume_stiffness
            keep = volume_stiffness > 0.0
            self.tets, self.k_volume = model.tet_indices[keep], volume_stiffness[keep]
            self.six_rest_volume = 6.0 * model.tet_rest_volume[keep]
            self._prepare_implicit()

    # ------------------------------------------------------------------ forces

    def _springs(self, x):
        """Unit directions n (e, 3), lengths l (e,) and the spring force on particle i, f_e (e, 3)."""
        d = x.take(self.i, axis=0) - x.take(self.j, axis=0)
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        # A spring of zero length has no direction: it pushes nowhere (and the clamp zeroes its K_e).
        n = d / np.where(length > 1e-12, length, 1.0)[:, None]
        f = (-self.k * (length - self.rest_length))[:, None] * n
        return n, length, f

    def _volumes(self, x):
        """C = 6 (V - V0) per tet (m,) and its gradients grad_C (m, 4, 3) [m^2] (the XPBD volume constraint's)."""
        return volume_constraint(x[self.tets], self.six_rest_volume)

    def forces(self, x: np.ndarray) -> np.ndarray:
        """Total force [N] on every particle at positions ``x``: springs, tet volumes (implicit Euler) and gravity
        on free particles, (n, 3)."""
        return self._forces_from(x, self._springs(x)[2])

    def _forces_from(self, x, fe):
        """``forces`` with the springs' forces on particle i, fe (e, 3), already computed."""
        f = self.scatter @ fe + (self.model.mass[:, None] * self.gravity) * self.free_col
        if self.bending_matrix is not None:
            f -= self.bending_matrix @ x
        elif self.bending is not None:
            f -= self.bending.gradient(x)
        if len(self.tets):
            C, grad = self._volumes(x)
            per_corner = -(self.k_volume * C)[:, None, None] * grad
            for axis in range(3):
                f[:, axis] += np.bincount(self.tets.ravel(), per_corner[..., axis].ravel(), minlength=len(x))
        return f

    def energy(self, state: State) -> float:
        """Kinetic + spring + volume + gravitational energy [J] of the free and pinned particles (reference z = 0)."""
        _, length, _ = self._springs(state.x)
        kinetic = 0.5 * float(np.sum(self.model.mass * np.einsum("ij,ij->i", state.v, state.v)))
        spring = 0.5 * float(np.sum(self.k * (length - self.rest_length) ** 2))
        if len(self.tets):
            spring += 0.5 * float(np.sum(self.k_volume * self._volumes(state.x)[0] ** 2))
        if self.bending is not None:
            spring += self.bending.value(state.x)
        potential = -float(np.sum((self.model.mass * self.free) * (state.x @ self.gravity)))
        return kinetic + spring + potential

    # ------------------------------------------------------------------ step

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        x, v = state.x, state.v
        x_prev = x.copy()
        iterations, residual = 0, float("nan")
        if self.method == "IMPLICIT_EULER":
            iterations, residual = self._implicit_velocity(x, v, dt)
            x += dt * v
        else:
            a = self.forces(x) * self.model.inv_mass[:, None]
            if self.method == "EXPLICIT_EULER":
                x += dt * v
                v += dt * a
            else:
                v += dt * a
                x += dt * v
        if colliders:
            before = x.copy()
            # Faces vs spheres first: the vertex projection after it is the final word on every vertex (ground too).
            resolve_face_contacts(x, x_prev, self.model.inv_mass, self.model.triangle_indices, colliders)  # faces vs spheres
            resolve_contacts(x, x_prev, self.model.inv_mass, colliders)
            v += (x - before) / dt
        if self.self_collision is not None:
            # Like the contacts: the projection is a velocity change too, except the part that resolve also adds to
            # x_prev (velocity-free recovery of pairs closer than thickness).
            before, prev_before = x.copy(), x_prev.copy()
            self.self_collision.resolve_beside_colliders(x, x_prev, colliders)
            v += ((x - before) - (x_prev - prev_before)) / dt
        if self.config.damping > 0.0:
            v *= np.exp(-self.config.damping * dt)
        if not measure:
            return StepStats(iterations=iterations, linear_residual=residual)
        return measure_stats(self.model, x, iterations=iterations, linear_residual=residual)

    # ------------------------------------------------------------------ implicit Euler

    def _prepare_implicit(self):
        """Sparsity pattern of A_FF = M_F + dt^2 K_FF (3x3 blocks, pinned particles eliminated), built once.

        Every spring contributes +K_e to blocks (i, i) and (j, j) and -K_e to (i, j) and (j, i); blocks
        touching a pinned particle are dropped (the (free, pinned) ones reach the right-hand side through
        ``_pinned_load``).
        """
        self.tet_rows, self.tet_cols = element_stencil(self.tets)
        # Bending's blocks come last, in the energy's element_stencil order (its rows, cols).
        self.bend_rows, self.bend_cols = (self.bending.rows, self.bending.cols) if self.bending is not None else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.pattern = BlockPattern(
            np.concatenate([self.i, self.j, self.i, self.j, self.tet_rows, self.bend_rows]),
            np.concatenate([self.i, self.j, self.j, self.i, self.tet_cols, self.bend_cols]), self.free,
        )
        self.free_index = self.pattern.free_index
        self.nf = self.pattern.free_count
        self.mass_free = self.model.mass[self.free_index]
        self.max_linear_iterations = max(int(self.config.iterations), MIN_LINEAR_ITERATIONS)

    def _stiffness_blocks(self, n, length):
        """K_e = k [max(1 - l0/l, 0) (I - n n^T) + n n^T] for every spring, shape (e, 3, 3)."""
        nn = n[:, :, None] * n[:, None, :]
        # A spring of zero length is fully compressed: the clamp gives it no stiffness at all.
        ok = length > 1e-12
        stretch = np.where(ok, np.clip(1.0 - self.rest_length / np.where(ok, length, 1.0), 0.0, None), 0.0)
        eye = np.eye(3)[None]
        return self.k[:, None, None] * (stretch[:, None, None] * (eye - nn) + nn)

    def _volume_blocks(self, x):
        """Gauss-Newton stiffness of the tet volume energy, k_v grad_C_a grad_C_b^T, in element_stencil order (16 m, 3, 3).

        The dropped term k_v C d2C/dx2 is indefinite; without it the blocks are PSD and the system stays SPD."""
        _, grad = self._volumes(x)
        outer = self.k_volume[:, None, None, None, None] * grad[:, :, None, :, None] * grad[:, None, :, None, :]
        return outer.reshape(-1, 3, 3)

    def _implicit_velocity(self, x, v, dt):
        """Solve [M + dt^2 K] v+ = M v + dt f for the free particles; writes v+ into ``v``."""
        n, length, fe = self._springs(x)
        Ke = self._stiffness_blocks(n, length)
        if self.nf == 0:
            return 0, 0.0
        f = self._forces_from(x, fe)
        volume_blocks = self._volume_blocks(x) if len(self.tets) else np.zeros((0, 3, 3))
        # Constant for a flat rest sheet (the energy returns the same read-only blocks), projected PSD otherwise.
        bend_blocks = self.bending.hessian(x).blocks if self.bending is not None else np.zeros((0, 3, 3))
        free = self.free_index
        b = self.mass_free[:, None] * v[free] + dt * f[free]
        if self.has_pins:
            b -= dt**2 * self._pinned_load(Ke, volume_blocks, bend_blocks, v)[free]
        data = dt**2 * self.pattern.assemble(np.concatenate([Ke, Ke, -Ke, -Ke, volume_blocks, bend_blocks]))
        data[self.pattern.diagonal_slot] += self.mass_free[:, None, None] * np.eye(3)
        A = self.pattern.matrix(data)
        D_inv = inverse_3x3(self.pattern.diagonal_blocks(data))
        solve = block_cg if self.config.linear_solver == "CG" else block_jacobi
        v_free, iterations, residual = solve(A, D_inv, b.ravel(), v[free].ravel(), self.config.linear_tolerance, self.max_linear_iterations)
        v_free = v_free.reshape(-1, 3)
        if not self.has_pins:
            net_force = (b - (A @ v_free.ravel()).reshape(-1, 3)).sum(axis=0)
            v_free += net_force / self.mass_free.sum()
        v[free] = v_free
        return iterations, residual

    def _pinned_load(self, Ke, volume_blocks, bend_blocks, v):
        """K v_P: the stiffness matrix times the velocities of the pinned particles only, (n, 3)."""
        vp = v * (~self.free)[:, None]
        y = np.einsum("eab,eb->ea", Ke, vp[self.i] - vp[self.j])
        load = self.scatter @ y
        for blocks, rows, cols in ((volume_blocks, self.tet_rows, self.tet_cols),
                                   (bend_blocks, self.bend_rows, self.bend_cols)):
            if len(blocks):
                per_block = np.einsum("kab,kb->ka", blocks, vp[cols])
                for axis in range(3):
                    load[:, axis] += np.bincount(rows, per_block[:, axis], minlength=len(v))
        return load


# ---------------------------------------------------------------------- cloth bending


def cloth_bending(model, bending_stiffness: float):
    """IsometricBending on the hinges of a cloth's triangles with modulus ``bending_stiffness`` [N m]; None for a
    body with tets, without interior edges, or with bending_stiffness 0."""
    if not bending_stiffness > 0.0 or model.tet_count or len(model.triangle_indices) == 0:
        return None
    hinges = hinges_from_triangles(model.triangle_indices)
    if len(hinges) == 0:
        return None
    return IsometricBending(model.rest_positions, hinges, bending_stiffness)


def bending_matrix(bending, particle_count: int) -> sp.csr_matrix:
    """Q = sum_h c_h K_h K_h^T scattered to particles, (n, n) [N/m], CSR: a flat rest sheet's bending energy is
    1/2 sum_d x[:, d]^T Q x[:, d] and its force -Q x (n, 3). Q is PSD with zero row sums (sum_a K_a = 0)."""
    h = bending.hinges
    values = bending.c[:, None, None] * bending.K[:, :, None] * bending.K[:, None, :]  # (h, 4, 4)
    rows = np.repeat(h, 4, axis=1).ravel()  # (a, b) -> h[a]
    cols = np.tile(h, (1, 4)).ravel()  # (a, b) -> h[b]
    return sp.csr_matrix((values.ravel(), (rows, cols)), shape=(particle_count, particle_count))


# ---------------------------------------------------------------------- stability of the explicit integrators


def highest_frequency_bound(model, stiffness, bending_stiffness: float = 0.0) -> float:
    """Upper bound on the highest angular frequency omega_max [rad/s] of the spring network, 0 if no free spring.

    ``stiffness`` [N/m] is one value for every edge or an array (edge_count,), e.g.
    ``material_arrays(model, config).edge_stiffness`` (a solid's springs differ per edge).
    ``bending_stiffness`` [N m]: a cloth's ``config.bending_stiffness`` (ignored for bodies with tets), whose
    hinges add their Hessian, at most Q (x) I3 with Q = ``bending_matrix`` (the PSD-projected hinge Hessian
    c [(1 - r0/|y|)+ (I - n n^T) + n n^T] is <= c I in y), to the springs'. Gershgorin on the sum adds
    sum over free j of |Q_ij| / sqrt(m_i m_j) to row i.

    omega_max^2 is the largest eigenvalue of M^-1 K over the free particles. For any configuration (with
    the clamp of ``MassSpringSolver``) K_e <= k I, so it is at most that of the scalar spring Laplacian,
    and Gershgorin's theorem on the symmetric M^-1/2 L M^-1/2 bounds that by

        omega_max^2 <= max over free i of  sum over springs (i, j) of  k_ij (1/m_i + [j free] / sqrt(m_i m_j)).

    It is exact for one mass on a spring to a pin (k/m) and for two free masses (2k/m).
    """
    free = model.inv_mass > 0.0
    i, j = model.edge_indices[:, 0], model.edge_indices[:, 1]
    m = model.mass
    off = np.where(free[i] & free[j], 1.0 / np.sqrt(m[i] * m[j]), 0.0)
    stiffness = np.broadcast_to(np.asarray(stiffness, np.float64), i.shape)
    row = np.bincount(i, stiffness * (1.0 / m[i] + off), minlength=model.particle_count)
    row += np.bincount(j, stiffness * (1.0 / m[j] + off), minlength=model.particle_count)
    bending = cloth_bending(model, bending_stiffness)
    if bending is not None:
        Q = bending_matrix(bending, model.particle_count).tocoo()
        both_free = free[Q.row] & free[Q.col]
        row += np.bincount(Q.row[both_free], np.abs(Q.data[both_free]) / np.sqrt(m[Q.row[both_free]] * m[Q.col[both_free]]),
                           minlength=model.particle_count)
    row = row[free]
    return float(np.sqrt(row.max())) if len(row) else 0.0


def explicit_stable_substep(model, stiffness, solver: str = "SYMPLECTIC_EULER", damping: float = 0.0,
                            bending_stiffness: float = 0.0) -> float:
    """Largest step dt [s] for which the explicit integrators are stable on ``model``; inf if nothing can oscillate.

    ``stiffness`` [N/m]: a scalar for every edge or a per-edge array; ``bending_stiffness`` [N m] the cloth's
    (``config.bending_stiffness``; see ``highest_frequency_bound``).

    SYMPLECTIC_EULER (the default): a mode of angular frequency omega is stable iff omega dt < 2, so

        dt_max = 2 / omega_max  =  c sqrt(m_eff / k_eff),  c = 2,
        k_eff / m_eff = max over free i of sum over springs (i, j) of k (1/m_i + [j free]/sqrt(m_i m_j))

    (seed 003's dt <= c sqrt(m/k) with c = 2; see ``highest_frequency_bound``). Exact for one spring with a
    pinned end; the true limit (largest eigenvalue at rest) is 1.35x higher on grid_cloth and 1.7x on a
    cube of 5 tets, which is how conservative the bound is there.

    EXPLICIT_EULER (forward): every undamped mode grows by sqrt(1 + omega^2 dt^2) per step, so there is no
    stable step without damping (returns 0.0). With v scaled by exp(-damping dt) per step a mode is stable iff
    exp(-damping dt) (1 + omega^2 dt^2) <= 1, which holds for dt <= damping / omega_max^2 (returned).
    """
    omega = highest_frequency_bound(model, stiffness, bending_stiffness)
    if omega == 0.0:
        return math.inf
    if solver == "EXPLICIT_EULER":
        return max(float(damping), 0.0) / omega**2
    return 2.0 / omega


def substeps_needed(frame_dt: float, model, stiffness, solver: str = "SYMPLECTIC_EULER", damping: float = 0.0,
                    bending_stiffness: float = 0.0) -> int:
    """Fewest substeps per frame that keep ``solver`` (an explicit integrator) stable; 0 if none does.
    Pass ``bending_stiffness=config.bending_stiffness`` for a cloth with bending."""
    limit = explicit_stable_substep(model, stiffness, solver, damping, bending_stiffness)
    if limit == math.inf:
        return 1
    if limit <= 0.0:
        return 0
    return max(1, math.ceil(frame_dt / limit * (1.0 + 1e-9)))
