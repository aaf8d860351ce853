"""Mass-spring systems with force-based time integration: explicit, symplectic and implicit Euler.

Elastic model:

* a cloth or rope (no tets), every integrator: a Hooke spring of k = ``config.stiffness`` [N/m] on every edge
  (``solvers.energies.HookeSprings``, GAMES201 lecture 2), f_ij = -k (|x_i - x_j| - l_ij) (x_i - x_j) / |x_i - x_j|, and with
  ``config.bending_stiffness`` > 0 the isometric bending force of ``solvers.energies.IsometricBending`` (Bergou et al.
  2006), one hinge per interior edge (a constant sparse matrix for a flat rest sheet, ``bending_matrix``);
* a solid (tets) in EXPLICIT_EULER and SYMPLECTIC_EULER: the same Hooke springs on its tet edges, stiffness from
  Young's modulus (``material_arrays(...).edge_stiffness``; Poisson's ratio 1/4 whatever the config says): cheap per
  substep, and exactly what the stability bound ``explicit_stable_substep`` covers;
* a solid in IMPLICIT_EULER: no springs, NEWTON's stable Neo-Hookean energy per tet (``solvers.energies.NeoHookean``)
  with the Lamé parameters of ``material_arrays(model, config).tet_mu / .tet_lambda`` [Pa]; lam carries the bulk
  stiffness, so no volume energy is added.

Integrators, with a = f / m (0 for pinned particles) and gravity on free particles:

* EXPLICIT_EULER (forward):    v+ = v + dt a(x),   x+ = x + dt v
* SYMPLECTIC_EULER:            v+ = v + dt a(x),   x+ = x + dt v+
* IMPLICIT_EULER (backward):   x+ = x + dt v+, v+ the minimiser of the incremental potential
  Phi(u) = 1/2 sum_free m |u - v - dt g|^2 + E(x + dt u) [J], found by Newton from u = 0. The first Newton step is
  Baraff & Witkin 1998's linearised step [M + dt^2 K] v+ = M v + dt f(x). K = -df/dx is PSD: per spring
  k [max(1 - l0/l, 0) (I - n n^T) + n n^T] (the clamp of Choi & Ko 2002), per tet the Neo-Hookean Hessian projected
  to PSD, plus bending's. Pinned particles are not unknowns: they move by their kinematic velocity in every
  linearization point and every line-search trial (Dirichlet, as in NEWTON), so K and f of the first step are
  evaluated with the pins at their targets and only the free particles' velocities are searched.
  ``config.linear_solver``: 'CG' (block-Jacobi preconditioned) or 'JACOBI' (block Jacobi, weight 1 on springs, where
  it always converges, and ``_jacobi_weight``'s Gershgorin-bounded weight on a solid, where weight 1 diverged). Both
  stop at ``config.linear_tolerance`` times the linearization's initial residual (an inexact Newton step; the
  re-solves of its contact rounds at the residual the first solve reached) or after
  ``max(config.iterations, MIN_LINEAR_ITERATIONS)`` iterations.

  Every Newton step passes an Armijo backtracking line search on Phi; a shortened step is re-linearised (at most
  NEWTON_ITERATIONS times) and a step with no decrease raises StepNotConverged (``advance_frame`` splits the step).
  Why: on the voxel Suzanne dropped 1.5 m (tests/scenario_scenes.py, 2 substeps) the single linearization added
  27.6 J in one step at landing and later diverged; with the line search the volume error stays at 0.00%.

  A solid's contacts are in the implicit solve (Baraff & Witkin 1998's constraint filter): a free particle that
  would end the step inside a collider gets v . n = -d / dt, eliminated from the system, at most CONTACT_ROUNDS
  rounds per linearization; a contact whose normal impulse comes out negative is released. Projected only after the
  step, the ground crushed the contact layer of a stiff ico sphere (Neo-Hookean: +12.3% volume, 93% strain; in the
  solve: +0.01%, 0.4%). A cloth's contacts are projected after the step, as in the explicit integrators, except
  where the last step's projection pushed its faces off a collider's edges and corners: those particles keep their
  plane for the next solve (``collision.response.held_planes``, as Projective Dynamics), so the solve no longer pulls
  the cloth back over a box's rim every step (box drape at rest: 29% / 20% largest / 99th-percentile strain -> 4% / 1%).
  Friction is a second Newton phase on Phi plus IPC's lagged friction potential (Li et al. 2020), so the whole body
  takes part in stopping the contact particles (taking friction off each contact particle after the solve added up
  to +7 J on the voxel Suzanne and diverged).

  An inexact solve must not create momentum: a uniform velocity correction cancels the residual's net force, so a
  body without pins keeps exactly an exact solve's momentum (tangentially only, against a single contact normal; not
  in the friction phase).

Every step ends as in position_based.py: contacts projected out of the colliders (after an implicit step only what
the solve missed), the projection added to the velocity (v += dx / dt, as in the GAMES103 cloth lab), and v scaled by
exp(-damping dt). The explicit integrators' largest stable step (dt <= c sqrt(m/k), GAMES201 lecture 2) is
``explicit_stable_substep``.
"""
import math
from functools import partial

import numpy as np
import scipy.sparse as sp

from .base import ProjectedContactSolver
from .collision.response.held_planes import HeldPlanes
from .linalg import BlockPattern, block_cg, block_jacobi, inverse_3x3
from .energies.bending import IsometricBending, hinges_from_triangles
from .energies.friction import mollified_slip, mollified_slip_terms
from .energies.neo_hookean import NeoHookean
from .energies.pressure import gas_pressure
from .energies.sewing import SewingSprings
from .energies.springs import HookeSprings
from .material import hinge_bending_stiffness, material_arrays
from .native import library as native_library
from .native.implicit_kernels import BlockAssembly, BlockMatrix
from .native.kernels import AnalyticContacts
from .soft_pins import GoalSprings
from .frame import StepNotConverged
from .model import State, StepStats, measure_stats
from .sewing import seam_force

MASS_SPRING_SOLVERS = ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER")

CONTACT_ROUNDS = 3
"""IMPLICIT_EULER: at most this many rounds of contact-set updates (each one linear solve, warm-started) per step."""

NEWTON_ITERATIONS = 8
"""IMPLICIT_EULER: at most this many linearizations per phase (frictionless, friction) of a step; the first is Baraff and
Witkin's single step, the others happen only when the line search had to shorten a step."""

ARMIJO = 1e-4
"""IMPLICIT_EULER: sufficient-decrease constant c of the backtracking line search, Phi(u + a d) <= Phi(u) + c a g.d."""

MIN_LINE_SEARCH_STEP = 1.0 / 1024
"""IMPLICIT_EULER: a line search that halves the step length below this fraction of the Newton step raises
StepNotConverged (the frame then splits the step, ``solvers.frame.advance_frame``)."""

ROUNDOFF = 1e-12
"""IMPLICIT_EULER: the line search accepts an increase of Phi up to ROUNDOFF (|Phi| + the elastic energy's scale),
its evaluation's round-off (near equilibrium the Newton step's true decrease is below it)."""

FRICTION_SLIP_SPEED = 1e-3
"""IMPLICIT_EULER: eps_v [m/s] of the friction potential: below this tangential speed the Coulomb force ramps
smoothly to 0 (IPC's f0, Li et al. 2020; ``solvers.energies.friction.mollified_slip``)."""

FRICTION_LINEARIZATIONS = 2
"""IMPLICIT_EULER: the friction phase takes at least this many linearizations (each re-weights the friction Hessian
friction J f0'(y)/y at the new tangential speed y; one left the ico sphere's drift at 9.9 mm, two give 1.8 mm)."""

MIN_LINEAR_ITERATIONS = 1000
"""Ceiling on linear iterations per implicit step is max(config.iterations, MIN_LINEAR_ITERATIONS)."""


class MassSpringSolver(ProjectedContactSolver):
    """``config.solver`` 'EXPLICIT_EULER', 'SYMPLECTIC_EULER' or 'IMPLICIT_EULER' (module docstring for the formulas).

    A cloth or rope (no tets), every integrator: a Hooke spring of ``config.stiffness`` [N/m] on every edge, plus
    isometric bending from ``config.bending_stiffness`` [N m]. A solid (tets) in EXPLICIT_EULER or SYMPLECTIC_EULER:
    Hooke springs on its tet edges with the stiffness ``solvers/material.py`` derives from Young's modulus (no
    volume term; Poisson's ratio 1/4 whatever ``config.poisson_ratio`` says); their largest stable step is
    ``explicit_stable_substep`` / ``substeps_needed`` with ``material_arrays(model, config).edge_stiffness``. A solid
    in IMPLICIT_EULER: stable Neo-Hookean elasticity per tet with Lamé parameters mu, lam [Pa] from
    ``config.youngs_modulus`` and ``config.poisson_ratio``, no edge springs and no volume energy (so any Poisson's
    ratio, as in NEWTON). ``step`` advances the state in place and returns StepStats (``iterations`` = linear
    iterations, 0 for the explicit integrators; ``linear_residual`` = final relative residual of the implicit solve,
    nan otherwise; ``newton_iterations`` / ``line_search_halvings`` of the implicit step, 0 otherwise). An implicit
    step whose Newton iteration fails raises StepNotConverged (``advance_frame`` splits it).
    """

    def __init__(self, model, config):
        super().__init__(model, config)
        if config.solver not in MASS_SPRING_SOLVERS:
            raise ValueError(f"MassSpringSolver runs {', '.join(MASS_SPRING_SOLVERS)}, not {config.solver!r}")
        if config.solver == "IMPLICIT_EULER" and config.linear_solver not in ("CG", "JACOBI"):
            raise ValueError(f"linear solver must be 'CG' or 'JACOBI', not {config.linear_solver!r}")
        self.method = config.solver
        n = model.particle_count
        material = material_arrays(model, config)
        self.elastic = None
        """NeoHookean of the tets of a solid in IMPLICIT_EULER (None otherwise): its energy replaces the springs."""
        if model.tet_count and self.method == "IMPLICIT_EULER":
            # A solid in implicit Euler: Neo-Hookean per tet, no springs (its edges all lie in tets).
            self.elastic = NeoHookean(model.rest_positions, model.tet_indices, material.tet_mu, material.tet_lambda)
            spring = np.zeros(model.edge_count, bool)
        else:
            spring = ~self.seams  # seams pull to zero length instead (SewingSprings below)
        self.springs = HookeSprings(model.edge_indices[spring], model.edge_rest_length[spring],
                                    material.edge_stiffness[spring])
        """Hooke springs of a cloth's or an explicitly integrated solid's edges (none for a solid in IMPLICIT_EULER)."""
        self.gravity = np.asarray(config.gravity, float)
        self.free = model.inv_mass > 0.0
        self.free_col = self.free[:, None].astype(float)
        self.has_pins = bool(np.any(~self.free))
        self.bending = cloth_bending(model, config.bending_stiffness)
        self.bending_matrix = None
        if self.bending is not None and self.bending.is_constant_hessian:
            self.bending_matrix = bending_matrix(self.bending, n)  # f = -Q x, one sparse product per step
        self.sewing = SewingSprings(model.edge_indices[self.seams], config.stiffness, seam_force(config)) \
            if self.seams.any() else None
        """A cloth's seams with ``config.use_sewing`` (``solvers/sewing.py``), or None."""
        self.pressure = gas_pressure(model, config)
        """The gas of a closed cloth with ``config.pressure`` (``energies/pressure.py``), or None."""
        self.goals = GoalSprings.of(model)
        """The soft pins' springs (``solvers/soft_pins.py``), or None."""
        self.extra = [e for e in (self.sewing, self.pressure, self.goals) if e is not None]
        """Seams, gas and soft pins: energies whose force ``forces`` takes from their gradient."""
        self.energies = [e for e in (self.springs, self.elastic, self.bending) if e is not None] + self.extra
        """The elastic energy terms, in the order of their Hessian blocks in the implicit system."""
        self.held = None
        """Implicit Euler's cloth: the planes that hold the particles the last step's projection moved
        (``collision.response.held_planes``), contacts of the next solve; None otherwise."""
        self.native = native_library.load(config.compute) if self.method == "IMPLICIT_EULER" else None
        if self.native is not None and not self.native.ready("implicit"):
            self.native = None
        """The native kernel library when ``config.compute`` allows it and it loaded (implicit Euler only), else None:
        with it the linear solves' matrix-vector products run in C (``native.implicit_kernels.BlockMatrix``, scipy's
        BSR product in its order, so the same bits), conjugate gradients wholly (``BlockMatrix.block_cg``), the Newton
        matrix's assembly (``BlockAssembly``) and the end-of-step contacts with ground planes and spheres
        (``native_contacts``, ``finish_step``)."""
        if self.native is not None and self.native.ready("contacts"):
            self.native_contacts = AnalyticContacts(self.native, np.ascontiguousarray(model.inv_mass, np.float64),
                                                    self.pad2, model.triangle_indices)
        if self.method == "IMPLICIT_EULER":
            self._prepare_implicit()
            if self.elastic is None:
                self.held = HeldPlanes(n, float(model.edge_rest_length.max(initial=0.0)) + config.thickness,
                                       config.thickness)

    # ------------------------------------------------------------------ forces

    def forces(self, x: np.ndarray) -> np.ndarray:
        """Total force [N] on every particle at positions ``x``: springs (f = -dE/dx of ``HookeSprings``), bending
        (cloth), Neo-Hookean elasticity (solid) and gravity on free particles, (n, 3)."""
        f = (self.model.mass[:, None] * self.gravity) * self.free_col - self.springs.gradient(x)
        if self.bending_matrix is not None:
            f -= self.bending_matrix @ x
        elif self.bending is not None:
            f -= self.bending.gradient(x)
        if self.elastic is not None:
            f -= self.elastic.gradient(x)
        for term in self.extra:
            f -= term.gradient(x)
        return f

    def energy(self, state: State) -> float:
        """Kinetic + spring + bending + Neo-Hookean + gravitational energy [J] (reference z = 0)."""
        kinetic = 0.5 * float(np.sum(self.model.mass * np.einsum("ij,ij->i", state.v, state.v)))
        elastic = self._elastic_energy(state.x)
        potential = -float(np.sum((self.model.mass * self.free) * (state.x @ self.gravity)))
        return kinetic + elastic + potential

    # ------------------------------------------------------------------ step

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        self.attach_native_queries(colliders)
        x, v = state.x, state.v
        x_prev = x.copy()
        iterations, residual, linearizations, halvings = 0, float("nan"), 0, 0
        if self.method == "IMPLICIT_EULER":
            iterations, residual, linearizations, halvings = self._implicit_velocity(x, v, dt, colliders)
            x += dt * v
        else:
            a = self.forces(x) * self.model.inv_mass[:, None]
            if self.method == "EXPLICIT_EULER":
                x += dt * v
                v += dt * a
            else:
                v += dt * a
                x += dt * v
        # Contact and self-collision corrections are velocity changes too (GAMES103 lab 1), except the part that
        # self-collision also adds to x_prev (velocity-free recovery of pairs closer than thickness).
        solved = x.copy() if self.held is not None else None
        self.finish_step(x, x_prev, v, dt, colliders, velocity_from_positions=False)
        if self.held is not None:
            self.held.remember(solved, x, self.model.inv_mass, _between_corners(colliders), self.pad2, faces_only=True)
        if not measure:
            return StepStats(iterations=iterations, linear_residual=residual, newton_iterations=linearizations,
                             line_search_halvings=halvings)
        stats = measure_stats(self.model, x, iterations=iterations, linear_residual=residual)
        stats.newton_iterations, stats.line_search_halvings = linearizations, halvings
        return stats

    # ------------------------------------------------------------------ implicit Euler

    def _prepare_implicit(self):
        """Sparsity pattern of A_FF = M_F + dt^2 K_FF (3x3 blocks, pinned particles eliminated), built once.

        Every spring contributes +K_e to blocks (i, i) and (j, j) and -K_e to (i, j) and (j, i); the
        Neo-Hookean tets and the bending hinges add their energy's fixed stencil (``element_stencil`` order).
        Blocks touching a pinned particle are dropped: the pins stand at their targets in every linearization
        point, so their motion reaches the free rows through the forces f(x + dt u).
        """
        # Each energy's blocks come in its own stencil order (its rows, cols): springs, elasticity, bending.
        self.energy_stencils = [(e.rows, e.cols) for e in self.energies]
        self.pattern = BlockPattern(np.concatenate([r for r, _ in self.energy_stencils]),
                                    np.concatenate([c for _, c in self.energy_stencils]), self.free)
        self.free_index = self.pattern.free_index
        self.reduced = self.pattern.reduced
        """Each particle's row among the free ones (-1: pinned)."""
        self.nf = self.pattern.free_count
        self.assemble = self.pattern.assemble if self.native is None else BlockAssembly(self.native, self.pattern)
        """The energies' Hessian blocks (b, 3, 3) -> the pattern's block data (``BlockPattern.assemble``; in C with the
        native library, the same bits)."""
        self.mass_free = self.model.mass[self.free_index]
        self.max_linear_iterations = max(int(self.config.iterations), MIN_LINEAR_ITERATIONS)
        # Size [J] of the elastic energy's terms (k L^2 per spring, (mu + lam) V per tet): the round-off of Phi.
        self.energy_scale = float(np.sum(self.springs.k * self.springs.rest_length**2))
        if self.elastic is not None:
            self.energy_scale += float(np.sum(self.elastic.rest_volume * (self.elastic.mu + self.elastic.lam)))
        if self.pressure is not None:
            self.energy_scale += self.pressure.work  # p V0 [J]

    def _energy_blocks(self, x):
        """The PSD-projected Hessian blocks of the springs (K_e = k [max(1 - l0/l, 0) (I - n n^T) + n n^T], the
        clamp of the module docstring), of the Neo-Hookean tets and of the bending hinges, one array per energy in
        ``energy_stencils`` order. A flat rest sheet's bending returns the same constant blocks every call."""
        return [e.hessian(x, project=True).blocks for e in self.energies]

    def _elastic_energy(self, x):
        """Spring + Neo-Hookean + bending energy [J] at positions ``x`` (no kinetic, no gravity)."""
        return float(sum(term.value(x) for term in self.energies))

    def _incremental_potential(self, x, u, v0, dt):
        """Phi(u) = 1/2 sum_F m |u - v0 - dt g|^2 + E(x + dt u) [J], the implicit Euler step's incremental potential
        in velocity form (Phi_x(x') / 1 with x' = x + dt u): u (n, 3) the step's velocity, free and pinned rows,
        v0 (nf, 3) the free particles' velocity at the start. Its minimiser is the exact backward Euler step."""
        shift = u[self.free_index] - v0 - dt * self.gravity
        return 0.5 * float(np.sum(self.mass_free * np.einsum("ij,ij->i", shift, shift))) + self._elastic_energy(x + dt * u)

    def _contact_candidates(self, x_free, colliders, dt):
        """Nearest collider per free particle: (normal (nf, 3), distance (nf,) [m], inf without collider, friction
        (nf,), target normal velocity -max(d, 0) / dt (nf,) [m/s], 0 without collider). A solid's from every collider;
        a cloth's only its held planes (``collision.response.held_planes``): the particles the last step's projection
        pushed off a collider's edges and corners, which the solve would pull back in (the cloth stretched over a box's
        rim: 29% / 20% largest / 99th-percentile strain at rest on the box drape, 4% / 1% with them; frictionless).
        Its other contacts are projected after the step, as before."""
        normal = np.zeros((self.nf, 3))
        distance = np.full(self.nf, np.inf)
        friction = np.zeros(self.nf)
        # A cloth keeps its vertex contacts out of the solve: projected after the step (``resolve_contacts``), friction
        # there. In the solve they were measured worse for cloth: the two-layer stack on the ground (tests/
        # test_self_collision.py) pressed its layers to 3.6 mm apart at a 5 mm thickness; on the box drape they cut the
        # landing's largest strain from 19% to 8% but made a frame 3 times as slow as with the held planes alone.
        pad2 = self.pad2[self.free_index]
        for collider in colliders if self.elastic is not None else ():
            d = collider.distance(x_free, pad2)
            near = np.nonzero(d < distance)[0]
            if len(near):
                d_near, n_near = collider.distance_and_normal(x_free[near], pad2[near])
                distance[near], normal[near], friction[near] = d_near, n_near, collider.friction
        if self.held is not None:
            held, held_normal, offset = self.held.planes()
            rows = self.reduced[held]
            normal[rows] = held_normal
            distance[rows] = np.einsum("ij,ij->i", x_free[rows], held_normal) - offset
            friction[rows] = 0.0
        candidate = np.isfinite(distance)
        # Land exactly on the surface (inelastic, as the projection): v . n = -d / dt, d >= 0 the distance now.
        target = np.where(candidate, -np.maximum(np.where(candidate, distance, 0.0), 0.0) / dt, 0.0)
        return normal, distance, friction, target

    def _implicit_velocity(self, x, v, dt, colliders=()):
        """Backward Euler velocity of the free particles, written into ``v``: Newton on the incremental potential
        (``_incremental_potential``) from u = 0, every linearization solved with the colliders' contacts as
        normal-velocity constraints and every step checked by backtracking; then, if a contact has friction, Newton
        again on the potential plus the contacts' friction potential (module docstring; ``_ImplicitStep``). Returns
        (linear iterations, final relative residual, linearizations, line-search halvings); raises StepNotConverged
        when a phase does not end in a full Newton step within NEWTON_ITERATIONS linearizations."""
        if self.nf == 0:
            return 0, 0.0, 0, 0
        step = _ImplicitStep(self, x, v, dt, colliders)
        step.contact_phase()
        step.friction_phase()
        v[self.free_index] = step.u[self.free_index]
        return step.iterations, step.residual, step.linearizations, step.halvings

    def _constrained_solve(self, A, diagonal, b, v_free, contact, normal, target, solve, tol, ceiling, momentum=True,
                           atol=0.0):
        """Solve A v = b with v . n_i = target_i at the ``contact`` particles (Baraff and Witkin 1998's filter, as an
        elimination: v = S y + z, S = I - n n^T at a contact, I elsewhere, z = target n, solving
        (S A S + (I - S) m) y = S (b - A z)).

        The solve stops at tol times its own starting residual, or at atol [kg m/s]. Returns (v (nf, 3), iterations,
        relative residual, contact impulse A v - b at contacts [N s] (nf, 3) (0 elsewhere), the starting residual
        |rhs - A_c y0| [kg m/s]). Without pins the momentum fix of the module docstring is applied (in the contacts'
        tangent plane when they all share one normal, not at all when their normals differ)."""
        nn = normal[:, :, None] * normal[:, None, :] * contact[:, None, None]
        z = (target * contact)[:, None] * normal
        if contact.any():
            S = np.eye(3)[None] - nn
            S_sparse = _block_diagonal(S)
            m_nn = self.mass_free[:, None, None] * nn
            A_c = (S_sparse @ A @ S_sparse + _block_diagonal(m_nn)).tobsr(blocksize=(3, 3))
            rhs = np.einsum("kab,kb->ka", S, b - (A @ z.ravel()).reshape(-1, 3))
            D = S @ diagonal @ S + m_nn
            start = np.einsum("kab,kb->ka", S, v_free)
        else:
            A_c, rhs, D, start = A, b, diagonal, v_free
        D_inv = inverse_3x3(D)
        if solve is block_jacobi and self.elastic is not None:
            D_inv = D_inv * _jacobi_weight(A_c, D)
        start_residual = float(np.linalg.norm(rhs.ravel() - A_c @ start.ravel()))
        product = A_c if self.native is None else BlockMatrix(self.native, A_c)  # the solve uses only A @ x
        if self.native is not None and solve is block_cg:
            solve = product.block_cg  # the whole CG in C (src/block_cg.c), bit for bit
        else:
            solve = partial(solve, product)
        y, iterations, residual = solve(D_inv, rhs.ravel(), start.ravel(), tol, ceiling, atol)
        v_new = y.reshape(-1, 3) + z
        r = b - (A @ v_new.ravel()).reshape(-1, 3)
        if momentum and not self.has_pins:
            net_force = r.sum(axis=0)
            if contact.any():
                normals = normal[contact]
                if np.allclose(normals, normals[0]):
                    # Tangential part only: a uniform tangential delta keeps every normal constraint.
                    net_force -= (net_force @ normals[0]) * normals[0]
                    delta = net_force / self.mass_free.sum()
                    v_new += delta
                    r -= self.mass_free[:, None] * delta
            else:
                delta = net_force / self.mass_free.sum()
                v_new += delta
                r -= self.mass_free[:, None] * delta
        impulse = np.where(contact[:, None], -r, 0.0)
        return v_new, iterations, residual, impulse, start_residual


class _ImplicitStep:
    """One IMPLICIT_EULER step of a ``MassSpringSolver``: the state its two Newton phases share.

    ``contact_phase`` minimises the incremental potential Phi(u) with the contacts as normal-velocity constraints;
    ``friction_phase`` then minimises Phi + D from that result, D the lagged friction potential of the contacts
    (module docstring). Both run ``_newton``: linearize at x + dt u, solve with contact rounds, backtrack.
    u (n, 3) [m/s] is the step's velocity (free and pinned rows); x (n, 3) [m] the positions at the step's start.
    """

    def __init__(self, solver, x, v, dt, colliders):
        self.solver, self.x, self.dt = solver, x, dt
        free = solver.free_index
        self.v0 = v[free].copy()
        self.pinned = ~solver.free
        self.v_pinned = np.where(self.pinned[:, None], v, 0.0)  # the pins' kinematic velocity
        self.normal, self.distance, self.friction, self.target = solver._contact_candidates(x[free], colliders, dt)
        self.candidate = np.isfinite(self.distance)
        self.contact = np.zeros(solver.nf, bool)
        self.solve = block_cg if solver.config.linear_solver == "CG" else block_jacobi
        # The linearization point is x + dt u. The pins are not unknowns: they sit on their kinematic velocity from the
        # start (Dirichlet, as in NEWTON), the free particles start at u = 0 (Baraff and Witkin's single step). Carried
        # in the Newton direction instead, the pins' motion was measured by the line search as a rise of Phi (a rig
        # moving a collar stretches the cloth below it), the step was cut, the pins got a fraction of their motion
        # per linearization, and a cape pinned to a bone at 0.1 m/s never ended a step.
        self.u = self.v_pinned.copy()
        self.v_free = self.v0.copy()  # warm start of the linear solves
        self.predicted = self.v0 + dt * solver.gravity
        self.iterations = self.linearizations = self.halvings = 0
        self.residual = 0.0
        self.impulse = np.zeros((solver.nf, 3))
        self.sliding = None  # (contact mask (nf,), mu J [N s] (nf,)) in the friction phase

    def contact_phase(self):
        """Newton on Phi with the colliders' contacts as constraints (no friction)."""
        self._newton("frictionless")  # named in StepNotConverged messages; with or without contacts

    def friction_phase(self):
        """Newton on Phi + D from the contact phase's result; nothing if no contact has friction and a positive
        normal impulse. J, the normal impulses [N s] of the frictionless solve, stay fixed (lagged)."""
        J = np.maximum(np.einsum("ij,ij->i", self.impulse, self.normal), 0.0)
        mask = self.contact & (self.friction > 0.0) & (J > 0.0)
        if not mask.any():
            return
        self.sliding = (mask, self.friction * J)
        self.tangent = np.eye(3)[None] - self.normal[:, :, None] * self.normal[:, None, :]  # I - n n^T, (nf, 3, 3)
        self._newton("friction")

    def _friction_terms(self, w):
        """Friction potential D [J], gradient (nf, 3) and PSD Hessian blocks (nf, 3, 3) at free velocities w: per
        contact mu J f0(|w_t|), mu J f1(y)/y w_t and the majorizing mu J f1(y)/y (I - n n^T) (module docstring)."""
        mask, muJ = self.sliding
        vt = w - np.einsum("ij,ij->i", w, self.normal)[:, None] * self.normal
        y = np.linalg.norm(vt, axis=1)
        weight = muJ * mask
        f1_over_y = mollified_slip_terms(y, FRICTION_SLIP_SPEED)[0]
        H = (weight * f1_over_y)[:, None, None] * self.tangent
        return float(np.sum(weight * mollified_slip(y, FRICTION_SLIP_SPEED))), (weight * f1_over_y)[:, None] * vt, H

    def _potential(self, w):
        """Phi(w), plus D(w) in the friction phase [J]."""
        value = self.solver._incremental_potential(self.x, w, self.v0, self.dt)
        return value + self._friction_terms(w[self.solver.free_index])[0] if self.sliding is not None else value

    def _newton(self, phase):
        """Linearize, solve with contacts, backtrack, until a full step (at least FRICTION_LINEARIZATIONS of them
        in the friction phase); StepNotConverged after NEWTON_ITERATIONS linearizations or a too short step."""
        phi = self._potential(self.u)
        for linearization in range(NEWTON_ITERATIONS):
            gradient, A, b, diagonal = self._linearize()
            self._contact_rounds(A, diagonal, b)
            alpha, phi = self._line_search(gradient, phi, phase)
            if alpha == 1.0 and (self.sliding is None or linearization >= FRICTION_LINEARIZATIONS - 1):
                return
        raise StepNotConverged(
            f"implicit Euler: {NEWTON_ITERATIONS} linearizations did not end in a full Newton step "
            f"({phase} phase, last step length {alpha:g}); smaller substeps needed")

    def _linearize(self):
        """The Newton system at x + dt u: (gradient dPhi/du (n, 3), A = M + dt^2 K (+ the friction Hessian) on the
        free rows (BSR), right-hand side b (nf, 3) of A u' = b, A's diagonal blocks (nf, 3, 3))."""
        solver, dt, u, free = self.solver, self.dt, self.u, self.solver.free_index
        self.linearizations += 1
        xk = self.x + dt * u
        f = solver.forces(xk)
        energy_blocks = solver._energy_blocks(xk)
        data = dt**2 * solver.assemble(np.concatenate(energy_blocks))
        data[solver.pattern.diagonal_slot] += solver.mass_free[:, None, None] * np.eye(3)
        u_free = u[free]
        gradient = -dt * f  # dPhi/du: M (u - v0) - dt f(x + dt u) on free rows, -dt f on pinned ones
        gradient[free] += solver.mass_free[:, None] * (u_free - self.v0)
        # [M + dt^2 K] u' = M v0 + dt f + dt^2 K u over the free rows, K u = (A u - M u) / dt^2 (the pins already
        # stand at their targets in x + dt u).
        A = solver.pattern.matrix(data)
        b = solver.mass_free[:, None] * self.v0 + dt * f[free] + (A @ u_free.ravel()).reshape(-1, 3) \
            - solver.mass_free[:, None] * u_free
        if self.sliding is not None:
            _, g_friction, H = self._friction_terms(u_free)
            gradient[free] += g_friction
            data[solver.pattern.diagonal_slot] += H
            A = solver.pattern.matrix(data)
            b += np.einsum("kab,kb->ka", H, u_free) - g_friction
        return gradient, A, b, solver.pattern.diagonal_blocks(data)

    def _solve_contacts(self, A, diagonal, b, accuracy=0.0):
        """Solve A v = b under the current contact set from the last solution; updates v_free, residual, impulse.
        accuracy [kg m/s]: also stop once the residual is this small. Returns the residual at its start."""
        solver = self.solver
        self.v_free, its, self.residual, self.impulse, start = solver._constrained_solve(
            A, diagonal, b, self.v_free, self.contact, self.normal, self.target, self.solve,
            solver.config.linear_tolerance, solver.max_linear_iterations, momentum=self.sliding is None, atol=accuracy)
        self.iterations += its
        return start

    def _contact_rounds(self, A, diagonal, b):
        """Contacts: particles that would end the step inside a collider. Predicted from the velocity before the
        solve, then corrected from its result: add new penetrators, drop contacts the collider would have to pull
        (negative normal impulse). At most CONTACT_ROUNDS rounds; what is left the projection after the step
        handles. The first solve stops at ``linear_tolerance`` times its starting residual; the later ones, which
        start from its result, at the same residual, not at that fraction of their own smaller start (which asked
        hundreds of iterations more of every re-solve on a cloth resting on a box)."""
        accuracy = 0.0
        for round_ in range(CONTACT_ROUNDS):
            approach = np.einsum("ij,ij->i", self.predicted, self.normal)
            add = self.candidate & ~self.contact & (self.distance + self.dt * approach < 0.0)
            if round_ > 0 and not add.any():
                break
            self.contact |= add
            start = self._solve_contacts(A, diagonal, b, accuracy)
            if round_ == 0:
                accuracy = self.solver.config.linear_tolerance * start
            pulling = self.contact & (np.einsum("ij,ij->i", self.impulse, self.normal) < 0.0)
            if pulling.any():
                self.contact &= ~pulling
                self._solve_contacts(A, diagonal, b, accuracy)
            if not self.candidate.any():
                break
            self.predicted = self.v_free

    def _line_search(self, gradient, phi, phase):
        """Backtracking (Armijo) on the potential along u_free -> v_free (the pins stay on their velocity); moves u.
        Returns (step length alpha, potential at the new u [J]); StepNotConverged if alpha falls below
        MIN_LINE_SEARCH_STEP."""
        solver, u = self.solver, self.u
        direction = np.zeros_like(u)
        direction[solver.free_index] = self.v_free - u[solver.free_index]
        slope = float(np.sum(gradient * direction))
        alpha = 1.0
        while True:
            trial = u + alpha * direction
            phi_trial = self._potential(trial)
            if phi_trial <= phi + ARMIJO * alpha * min(slope, 0.0) + ROUNDOFF * (abs(phi) + solver.energy_scale):
                break
            alpha *= 0.5
            self.halvings += 1
            if alpha < MIN_LINE_SEARCH_STEP:
                raise StepNotConverged(f"implicit Euler: no decrease of the incremental potential along the "
                                       f"Newton step ({phase} phase); smaller substeps needed")
        self.u = trial
        return alpha, phi_trial


def _between_corners(colliders) -> list:
    """The colliders whose surface can come between a triangle's corners (mesh colliders, spheres): the ones a cloth
    meets inside the implicit solve."""
    return [c for c in colliders if c.reaches_between_corners]


def _jacobi_weight(A, D) -> float:
    """Weight w <= 1 that makes block Jacobi v <- v + w D^-1 (b - A v) converge on the SPD matrix A (BSR, 3x3
    blocks) with diagonal blocks D (k, 3, 3): it converges iff w lambda_max(D^-1 A) < 2, and block Gershgorin on
    D^-1/2 A D^-1/2 bounds lambda_max by beta = max_i sum_j ||D_i^-1/2 A_ij D_j^-1/2||_F. w = min(1, 1.9 / beta).

    A spring network needs none (beta may exceed 2, but 2 D - A is positive definite: the module docstring); a
    Neo-Hookean solid's stiffness is not so (its off-diagonal blocks can be positive): measured, plain block
    Jacobi diverged on a 72-tet block at E = 1 MPa, dt = 1/48 s."""
    w, V = np.linalg.eigh(D)
    root = np.einsum("kij,kj,klj->kil", V, 1.0 / np.sqrt(np.maximum(w, 1e-300)), V)  # D^-1/2 per block
    A = A.tobsr(blocksize=(3, 3))
    rows = np.repeat(np.arange(len(D)), np.diff(A.indptr))
    scaled = root[rows] @ A.data @ root[A.indices]
    beta = float(np.bincount(rows, np.sqrt(np.einsum("kij,kij->k", scaled, scaled)), minlength=len(D)).max())
    return min(1.0, 1.9 / beta) if beta > 0.0 else 1.0


def _block_diagonal(blocks):
    """A (3k, 3k) BSR matrix with the (k, 3, 3) ``blocks`` on its diagonal."""
    k = len(blocks)
    return sp.bsr_matrix((blocks, np.arange(k, dtype=np.int32), np.arange(k + 1, dtype=np.int32)), shape=(3 * k, 3 * k))


# ---------------------------------------------------------------------- cloth bending


def cloth_bending(model, bending_stiffness: float):
    """IsometricBending on the hinges of a cloth's triangles with modulus ``bending_stiffness`` [N m]; None for a
    body with tets, without interior edges, or with bending_stiffness 0."""
    if not bending_stiffness > 0.0 or model.tet_count or len(model.triangle_indices) == 0:
        return None
    hinges = hinges_from_triangles(model.triangle_indices)
    if len(hinges) == 0:
        return None
    return IsometricBending(model.rest_positions, hinges, hinge_bending_stiffness(model, hinges, bending_stiffness))


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
    """Upper bound on the highest angular frequency omega_max [rad/s] of the spring network, 0 if nothing oscillates.

    ``stiffness`` [N/m] is one value for every edge or an array (edge_count,), e.g.
    ``material_arrays(model, config).edge_stiffness`` (cloth and solid springs alike).
    ``bending_stiffness`` [N m]: a cloth's ``config.bending_stiffness`` (ignored for bodies with tets), whose
    hinges add their Hessian, at most Q (x) I3 with Q = ``bending_matrix`` (the PSD-projected hinge Hessian
    c [(1 - r0/|y|)+ (I - n n^T) + n n^T] is <= c I in y), to the springs'. Gershgorin on the sum adds
    sum over free j of |Q_ij| / sqrt(m_i m_j) to row i. Soft pins (``soft_pins.GoalSprings``: k_g I on their
    particle's diagonal) add k_g / m_i to their row: stiff soft pins can set the limit on their own.

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
    goals = np.asarray(getattr(model, "goal_particles", ()), np.int64)
    if len(goals):
        row += np.bincount(goals, np.asarray(model.goal_stiffness, np.float64) / m[goals], minlength=model.particle_count)
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

    (GAMES201 lecture 2's dt <= c sqrt(m/k) with c = 2; see ``highest_frequency_bound``). Exact for one spring with a
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
