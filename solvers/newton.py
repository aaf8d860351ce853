"""NEWTON: implicit Euler as optimization, with IPC barrier contact and lagged friction (Li's solid-sim-tutorial).

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

Where the projected Hessian models E poorly (a cloth folding on a collider, a face barrier's curvature) Newton can
stall: the residual stays above the tolerance while accepted steps lower E by a vanishing fraction of what the model
predicts. An iterate reached by such a step (gain below STALL_RATIO of the model's decrease at the CCD-allowed step)
is accepted when max|p| / h is within IPC's tolerance relative to the body's size, RELATIVE_TOLERANCE times its rest
bounding-box diagonal per second (Li et al. 2020; 0.14 m/s for a 10 m cloth). A step converging at Newton's rate
does not stall, so it ends where the course's rule ends it (the course's trajectories are unchanged); a step that
neither converges nor stalls within ``newton_max_iterations`` still fails, and ``advance_frame`` splits it.

Elasticity: a body without tets (cloth, ropes) has the course's squared-length spring on every edge with
k = stiffness / 4 (the same small-stretch stiffness as a Hooke spring of ``stiffness`` N/m), plus
isometric bending of its faces when ``bending_stiffness`` > 0. A body with tets (a solid) is stable
Neo-Hookean with Lame parameters from ``youngs_modulus`` and ``poisson_ratio``.

Contact: each collider's barrier reaches d_hat = its thickness, or MIN_BARRIER_REACH if that is larger (a
barrier needs a positive reach; a collider of thickness 0 set up for the other solvers still works). The barrier's force scale is chosen from
the body (the user never tunes it): kappa_i = BARRIER_WEIGHT_FACTOR * M * g for every particle, M the body's
mass and g gravity's magnitude (at least 9.81 m/s^2), so that a single particle's barrier can carry the
whole body's weight at s = d / d_hat ~ 0.8 and a body resting on many particles sits just inside d_hat.
The course's square (1000 kg on 5 particles, kappa * contact area = 25 kN) has the same ratio.

Moving colliders: the barriers act against each collider at its pose at the step's end, and friction measures slip
relative to the collider's motion over the step. A collider that moved into the body since the last step would leave
particles inside, where the barrier is infinite: before the solve, such particles are moved out to half the reach on
the side they came from relative to the collider's motion (``Collider.contact`` with the particle held still: a
sphere that swept past a particle pushes it out ahead of itself, not through its centre), and faces likewise
(``Collider.move_faces_out``). From there every iterate keeps a positive distance. This is a position-level start, not IPC's
treatment of a moving obstacle (the obstacle's pose as a Dirichlet unknown reached within the solve), so the push at
the start of a step is not part of the minimization.

Self-contact (``use_self_collision``, cloth only): the body's own IPC barrier, vertices against the triangles they are
not a corner of and edges against the edges they share no vertex with (``collision.barriers.self_barrier``; both splits
of every quad, reach d_hat = ``thickness``, at least MIN_BARRIER_REACH, and the same kappa), with CCD over each Newton
step, so no accepted iterate passes the cloth through itself. No friction between the body's own layers.

Several bodies solved as one system (``parts``, built by ``newton_bodies.NewtonBodies``): each body's elasticity and
barrier scale are its own, one such barrier keeps the bodies apart (and a cloth with self-collision off itself), and
the pairs of two bodies have lagged friction (``BODY_FRICTION``).

The contact part of the Hessian (the face barriers and their friction, the self-contact pairs) is assembled from the triangles in contact at
each iteration, apart from the fixed pattern of the elastic terms.
"""
from dataclasses import dataclass

import numpy as np

from .base import Solver
from .collision.barriers.log_barrier import ColliderBarrier, barrier_derivative
from .collision.response.body_contact import surface_triangles
from .collision.barriers.face_barrier import face_triangles
from .collision.barriers.friction import ColliderFriction
from .collision.barriers.self_barrier import SelfContactBarrier
from .collision.response.self_contact import DEFAULT_FRICTION
from .energies import (
    Gravity,
    Inertia,
    IsometricBending,
    NeoHookean,
    OnRows,
    SquaredLengthSprings,
    hinges_from_triangles,
)
from .frame import StepNotConverged
from .linalg import BlockPattern, block_cg, inverse_3x3
from .linalg.direct import NewtonSolves, block_matrix
from .energies.pressure import gas_pressure
from .energies.sewing import SewingSprings
from .material import hinge_bending_stiffness, material_arrays
from .soft_pins import GoalSprings
from .sewing import seam_edges, seam_force, sewn_positions
from .model import State, StepStats, measure_stats
from .native import library as native_library
from .native.ipc_kernels import kernels_for, use_kernels

SPRING_K_PER_STIFFNESS = 0.25
"""The course's spring k = stiffness / 4 (see ``SquaredLengthSprings``)."""
BARRIER_WEIGHT_FACTOR = 2.5
"""kappa_i = this * body mass * g [N]; see the module docstring."""
FRICTION_SLIP_SPEED = 1e-3
"""eps_v [m/s]: slower tangential motion than this is treated as sticking (the course's value)."""
BODY_FRICTION = DEFAULT_FRICTION
"""Coulomb friction coefficient between bodies solved as one system (the position-level bodies' between them, 0.3)."""
DIRECT_SOLVE_MAX_DOFS = 50_000
"""Up to this many free DOFs each Newton system is factorized (SuperLU); above, block-preconditioned CG."""
CG_TOLERANCE = 1e-4
"""Relative residual of the CG solve of a Newton system (an inexact Newton direction is enough)."""
MIN_BARRIER_REACH = 1e-3
"""Smallest barrier reach d_hat [m]: a collider thinner than this (thickness 0) acts as this thick for NEWTON."""
MIN_STEP = 1e-12
"""A line search that has to halve alpha below this has stalled: the step fails."""
MOVE_OUT_ROUNDS = 4
"""Rounds of faces and vertices moved out of the colliders before a step (each can undo the other near a corner)."""
RELATIVE_TOLERANCE = 1e-2
"""IPC's Newton tolerance [1/s] (Li et al. 2020): max|p| / h below this times the body's rest bounding-box diagonal [m]
counts as converged once Newton has stalled (see ``NewtonSolver.step``)."""
STALL_RATIO = 1e-2
"""A Newton step that lowers the energy by less than this fraction of its quadratic model's prediction has stalled."""


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

    def __init__(self, model, config, parts=None):
        """parts: None for one body (``model`` with its ``config``); for several bodies solved as one system
        (``newton_bodies.NewtonBodies``) a sequence of (body model, body config, offset): each body's particles are rows
        [offset, offset + its particle count) of ``model`` (their concatenation), its elasticity, bending and barrier
        scale its own, and ``config`` holds what they share (gravity, damping, Newton's tolerance and iterations)."""
        super().__init__(model, config)
        self.free = model.inv_mass > 0.0
        n = model.particle_count
        several = parts is not None
        parts = [(model, config, 0)] if parts is None else list(parts)
        self.inertia = Inertia(model.mass, model.rest_positions)
        self.potentials = [Gravity(model.mass, config.gravity)]
        for body, body_config, offset in parts:
            own = body_potentials(body, body_config)
            self.potentials += [OnRows(term, offset, body.particle_count) for term in own] if several else own
        goals = GoalSprings.of(model)  # soft pins over the whole system (solvers/soft_pins.py)
        if goals is not None:
            self.potentials.append(goals)
        # The fixed stencil: inertia's diagonal and every potential's element blocks (the diagonal also collects the
        # vertex barriers and their friction, which only ever touch a particle's own block).
        stencils = [self.inertia.hessian(model.rest_positions)] + [e.hessian(model.rest_positions) for e in self.potentials]
        rows = np.concatenate([h.rows for h in stencils] + [np.arange(n)])
        cols = np.concatenate([h.cols for h in stencils] + [np.arange(n)])
        self.pattern = BlockPattern(rows, cols, self.free)
        # Inertia's blocks and those of the potentials with a constant Hessian (a flat sheet's bending) are summed into
        # the pattern once; each iteration sums only the other terms' blocks and the diagonal's.
        constant = [True] + [bool(getattr(e, "is_constant_hessian", False)) for e in self.potentials] + [False]
        sums = _split_sums(self.pattern, [len(h.rows) for h in stencils] + [n], constant)
        self._inertia_data = (sums[0] @ stencils[0].blocks.reshape(-1, 9)).reshape(-1, 3, 3)
        self._constant_data = (sums[1] @ np.concatenate([h.blocks for h, c in zip(stencils[1:], constant[1:]) if c]
                                                        + [np.zeros((0, 3, 3))]).reshape(-1, 9)).reshape(-1, 3, 3)
        self._varying_sum = sums[2]
        self._varying_terms = [e for e, c in zip(self.potentials, constant[1:]) if not c]
        self.face_triangles = face_triangles(np.concatenate([_face_surface(body) + offset for body, _, offset in parts]),
                                             self.free)
        """Surface triangles (a cloth's faces, a solid's tet boundary and its mesh's faces as drawn) with a free corner:
        the ones a face barrier can move."""
        self.reduced = self.pattern.reduced
        g = max(float(np.linalg.norm(config.gravity)), 9.81)
        self.kappa = np.zeros(n)
        for body, _, offset in parts:
            self.kappa[offset:offset + body.particle_count] = BARRIER_WEIGHT_FACTOR * float(body.mass.sum()) * g
        self.size = min(_rest_size(body) for body, _, _ in parts)
        """The (smallest) body's rest bounding-box diagonal [m]: the length IPC's relative Newton tolerance scales
        with."""
        self.solves = NewtonSolves(single=True, weak=_weak_blocks(self.pattern, stencils, constant, self.face_triangles))
        """The solves of the Newton systems (``linalg.direct.NewtonSolves``: conjugate gradients preconditioned with the
        narrow band where the weak couplings widen the band, else banded Cholesky, factorized in single precision and
        refined in double, or SuperLU, or by conjugate gradients preconditioned with an earlier factor where the body
        has no weak blocks, ``LAGGED``); ``solves.narrow = False`` and ``solves.lag = False`` factorize every system
        (the exact path)."""
        self.ipc = kernels_for(native_library.load(config.compute))
        """The contact barriers' distances, CCD and PSD projections in C (``native.ipc_kernels.IPCKernels``) when
        ``config.compute`` allows the native library and it loaded, else None (the barriers stay on NumPy). The
        barriers between bodies and within a cloth take them once here, the colliders' barriers (built every step) in
        ``step``."""
        self.self_contact = []
        """The bodies' barrier between each other and within a cloth with ``use_self_collision``
        (``SelfContactBarrier``), or empty."""
        if several:
            self.self_contact.append(_between_bodies(parts, float(self.kappa.max())))
        elif config.use_self_collision and not model.tet_count and len(model.triangle_indices):
            # both splits of every quad, as the other solvers' self-collision (``Model.collision_triangles``)
            kept = model.collision_triangles if len(model.collision_triangles) else model.triangle_indices
            self.self_contact.append(SelfContactBarrier(kept, model.rest_positions, float(self.kappa.max()),
                                                        max(float(config.thickness), MIN_BARRIER_REACH)))
            seams = seam_edges(model, config)
            if seams.any():  # what touches once the seams are closed is no contact (``sewing.sewn_positions``)
                self.self_contact[-1].exclude_pairs_at(sewn_positions(model, seams))
        use_kernels(self.ipc, self.self_contact)

    # ------------------------------------------------------------------ the incremental potential

    def _barriers(self, colliders):
        """Barrier terms of colliders at fixed poses: per collider its vertex barrier and, where its surface reaches
        between a triangle's corners, its face barrier. Returns [(barrier, index of its collider)]."""
        barriers = []
        points = np.flatnonzero(self.free)
        for k, collider in enumerate(colliders):
            reach = barrier_reach(collider)
            face = None
            if len(self.face_triangles):
                face = collider.face_barrier(self.face_triangles, float(self.kappa.max()), reach, points)
            if face is None or not getattr(face, "covers_points", False):
                barriers.append((ColliderBarrier(collider, self.kappa, self.free, reach), k))
            if face is not None:
                barriers.append((face, k))
        return barriers

    def _frictions(self, colliders, barriers, x_start, dt):
        """Lagged friction of the step's colliders with friction, from the contacts at x_start."""
        frictions = []
        for barrier, k in barriers:
            collider = colliders[k]
            if collider.friction <= 0.0:
                continue
            if getattr(barrier, "coupled", False):  # faces: their own lagged friction, where the barrier has one
                if hasattr(barrier, "lagged_friction"):
                    frictions.append(barrier.lagged_friction(collider, x_start, FRICTION_SLIP_SPEED * dt))
                if not getattr(barrier, "covers_points", False):
                    continue
            # The vertices' friction, lagged: normal forces of the nearest surface at the step's start.
            d, _ = collider.surface_distance(x_start)
            contact = self.free & (d < barrier.d_hat)
            if contact.any():
                normal_force = np.where(contact, -barrier_derivative(np.where(contact, d, barrier.d_hat), barrier.d_hat, self.kappa), 0.0)
                frictions.append(ColliderFriction(collider, x_start, normal_force, FRICTION_SLIP_SPEED * dt))
        return frictions

    def _value(self, x, terms, h2):
        return self.inertia.value(x) + h2 * sum(term.value(x) for term in terms)

    def _direction(self, x, terms, h2):
        """Newton direction p (n, 3), 0 on pinned particles: solve H_FF p_F = -g_F with the projected Hessian.
        Returns (p, decrement) with decrement = -g . p = p^T H p >= 0 [kg m^2]: the decrease of E the quadratic model
        predicts for the full step is half of it."""
        n = len(x)
        gradient = self.inertia.gradient(x) + h2 * sum(term.gradient(x) for term in terms)
        diagonal = np.zeros((n, 3, 3))
        coupled = []
        for term in terms[len(self.potentials):]:
            if getattr(term, "coupled", False):  # face terms: blocks of the triangles in contact
                coupled.append(term.hessian(x))
            else:
                diagonal += term.hessian(x).blocks
        varying = np.concatenate([e.hessian(x).blocks for e in self._varying_terms] + [diagonal])
        data = self._inertia_data + h2 * (self._constant_data + (self._varying_sum @ varying.reshape(-1, 9)).reshape(-1, 3, 3))
        rhs = -self.pattern.restrict(gradient)
        if self.pattern.free_count == 0:
            return np.zeros_like(x), 0.0
        contact = self._contact_blocks(coupled, h2)
        if 3 * self.pattern.free_count <= DIRECT_SOLVE_MAX_DOFS:
            p = self.solves.solve_blocks(self.pattern, data, contact, rhs)
        else:
            D_inv = inverse_3x3(self.pattern.diagonal_blocks(data))
            A = block_matrix(self.pattern, data, contact)
            p, _, _ = block_cg(A, D_inv, rhs, np.zeros_like(rhs), CG_TOLERANCE, 10 * len(rhs))
        return self.pattern.extend(p, n), float(rhs @ p)

    def _contact_blocks(self, hessians, h2):
        """The contact terms' blocks (BlockHessians over their current stencils) times h2 at reduced block rows and
        columns, (rows, cols, blocks), or None: blocks touching a pinned particle are dropped, as in the fixed
        pattern."""
        hessians = [h for h in hessians if len(h.rows)]
        if not hessians:
            return None
        r = self.reduced[np.concatenate([h.rows for h in hessians])]
        c = self.reduced[np.concatenate([h.cols for h in hessians])]
        kept = (r >= 0) & (c >= 0)
        return r[kept], c[kept], h2 * np.concatenate([h.blocks for h in hessians])[kept]

    # ------------------------------------------------------------------ one step

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        self.attach_native_queries(colliders)
        x, v = state.x, state.v
        config = self.config
        ends = [c.at_fraction(1.0) for c in colliders]
        _move_out_of_colliders(x, x, self.free, colliders)
        for _ in range(MOVE_OUT_ROUNDS if len(self.face_triangles) else 0):
            before = x.copy()
            for collider in colliders:  # moving: a face is put back on the side the collider came from
                collider.move_faces_out(x, self.model.inv_mass, self.face_triangles, barrier_reach(collider))
            # A face pushed off a corner can take one of its vertices through the collider's surface: it goes back
            # out on the side it was on before the face push, and the faces are tried again.
            _move_out_of_colliders(x, before, self.free, colliders)
            if np.array_equal(x, before):
                break
        x_start = x.copy()
        x_tilde = x + dt * v
        self.inertia.x_tilde = x_tilde
        x[~self.free] = x_tilde[~self.free]  # Dirichlet: pinned particles on their targets
        h2 = dt * dt
        posed = self._barriers(ends)
        use_kernels(self.ipc, [b for b, _ in posed])
        frictions = self._frictions(colliders, posed, x_start, dt)
        for barrier in self.self_contact:  # between bodies solved as one system
            friction = barrier.lagged_friction(x_start, BODY_FRICTION, FRICTION_SLIP_SPEED * dt)
            if friction is not None:
                frictions.append(friction)
        self.log = StepLog([], [], [])
        iterations, halvings = 0, 0

        barriers = [b for b, _ in posed] + self.self_contact
        terms = self.potentials + barriers + frictions
        energy = self._value(x, terms, h2)
        p, decrement = self._direction(x, terms, h2)
        residual = float(np.abs(p).max()) / dt if len(p) else 0.0
        self.log.append(residual, energy, self._min_distance(x, ends))
        # The course's rule (max|p| / h <= newton_tolerance) ends the loop. Where the projected Hessian is a poor model
        # (compressed springs lost their transverse part, folds) the residual can sit above it for tens of iterations
        # while the energy no longer moves: an accepted step that lowers E by less than STALL_RATIO of what the model
        # predicts for it stalls, and then IPC's rule, relative to the body's size, accepts the iterate.
        stalled_tolerance = max(config.newton_tolerance, RELATIVE_TOLERANCE * self.size)
        while residual > config.newton_tolerance:
            self._check_iterations(iterations, residual)
            alpha = bound = min([1.0] + [b.max_step(x, p) for b in barriers])
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
            # The model's decrease for the longest step the contacts allow: a line search that had to cut far below it
            # and still gained less than STALL_RATIO of it is making no progress.
            stalled = energy - trial_energy < STALL_RATIO * decrement * bound * (1.0 - 0.5 * bound)
            energy = trial_energy
            p, decrement = self._direction(x, terms, h2)
            residual = float(np.abs(p).max()) / dt
            iterations += 1
            self.log.append(residual, energy, self._min_distance(x, ends))
            if stalled and residual <= stalled_tolerance:
                break

        v[:] = (x - x_start) / dt
        if config.damping > 0.0:
            v *= np.exp(-config.damping * dt)
        min_distance = self._min_distance(x, ends)
        if measure:
            stats = measure_stats(self.model, x)
        else:
            stats = StepStats()
        stats.iterations = stats.newton_iterations = iterations
        stats.line_search_halvings = halvings
        stats.newton_residual = residual
        stats.min_distance = min_distance
        return stats

    def _check_iterations(self, iterations, residual):
        if iterations >= self.config.newton_max_iterations:
            raise NewtonNotConverged(
                f"Newton did not converge in {iterations} iterations (residual {residual:.3g} m/s, tolerance "
                f"{self.config.newton_tolerance:g} m/s)", iterations, residual)

    def contact_forces(self, x, collider) -> np.ndarray:
        """The forces (m, 3) [N] this body's barriers press into the vertices of ``collider`` (a mesh collider at a
        fixed pose, e.g. another body's surface) with the body at x: the reactions to the barrier forces on the body
        (no friction). Zero where the collider keeps no face barrier."""
        face = collider.face_barrier(self.face_triangles, float(self.kappa.max()), barrier_reach(collider),
                                     np.flatnonzero(self.free)) if len(self.face_triangles) else None
        if face is None or not hasattr(face, "collider_forces"):
            return np.zeros((len(getattr(collider, "vertices", ())), 3))
        return face.collider_forces(x)

    def _min_distance(self, x, colliders) -> float:
        """Smallest distance [m] of a free particle to any collider's surface; nan without colliders."""
        if not colliders or not self.free.any():
            return float("nan")
        return min(float(c.surface_distance(x[self.free])[0].min()) for c in colliders)

    def energy(self, state: State) -> float:
        """Kinetic + gravitational + elastic energy [J] (no contact terms): for checking dissipation."""
        kinetic = 0.5 * float(np.sum(self.model.mass * np.einsum("ij,ij->i", state.v, state.v)))
        return kinetic + sum(term.value(state.x) for term in self.potentials)


def body_potentials(model, config) -> list:
    """A body's elastic terms (besides gravity): a body without tets (cloth, ropes) the course's squared-length spring
    on every edge with k = stiffness / 4, plus isometric bending of its faces when ``bending_stiffness`` > 0, its
    seams with ``use_sewing`` (instead of those edges' springs) and its gas with ``pressure`` > 0; a body
    with tets stable Neo-Hookean with Lame parameters from its material."""
    if model.tet_count:
        material = material_arrays(model, config)
        return [NeoHookean(model.rest_positions, model.tet_indices, material.tet_mu, material.tet_lambda)]
    seams = seam_edges(model, config)
    springs = ~seams
    stiffness = material_arrays(model, config).edge_stiffness  # config.stiffness under the stiffness_group map
    terms = [SquaredLengthSprings(model.edge_indices[springs], model.edge_rest_length[springs],
                                  SPRING_K_PER_STIFFNESS * stiffness[springs])]
    if config.bending_stiffness > 0.0 and len(model.triangle_indices):
        hinges = hinges_from_triangles(model.triangle_indices)
        if len(hinges):
            terms.append(IsometricBending(model.rest_positions, hinges,
                                          hinge_bending_stiffness(model, hinges, config.bending_stiffness)))
    # Seams and the gas of a closed cloth (``solvers/sewing.py``, ``energies/pressure.py``).
    if seams.any():
        terms.append(SewingSprings(model.edge_indices[seams], config.stiffness, seam_force(config)))
    pressure = gas_pressure(model, config)
    if pressure is not None:
        terms.append(pressure)
    return terms


def _split_sums(pattern, counts, constant):
    """``pattern.sum_matrix`` split by the triplets' terms: (inertia's, the other constant terms', the varying terms'),
    each a CSR matrix (block_count, its triplets). counts: the triplets of each term in the order of the pattern's
    (inertia, the potentials, the diagonal); constant: whether each term's blocks are constant (inertia's are)."""
    bounds = np.cumsum([0] + list(counts))
    columns = [np.arange(bounds[k], bounds[k + 1]) for k in range(len(counts))]
    sums = pattern.sum_matrix.tocsc()
    constant_columns = np.concatenate([c for c, fixed in zip(columns[1:], constant[1:]) if fixed] + [np.zeros(0, int)])
    varying_columns = np.concatenate([c for c, fixed in zip(columns, constant) if not fixed] + [np.zeros(0, int)])
    return sums[:, columns[0]].tocsr(), sums[:, constant_columns].tocsr(), sums[:, varying_columns].tocsr()


def _weak_blocks(pattern, stencils, constant, face_triangles) -> np.ndarray:
    """A mask over ``pattern``'s blocks: the couplings that only the terms with a constant Hessian make (a flat cloth's
    bending, between the two wings of each hinge), not the varying terms' stencils (springs, elasticity), the diagonal
    or two corners of a face the barriers act on (their contact blocks). ``linalg.direct.NarrowBand`` leaves them out
    of its band. stencils/constant: the BlockHessians whose rows and columns make the pattern (the diagonal's last,
    not among them) and whether each is constant."""
    nf = max(pattern.free_count, 1)
    rows = [h.rows for h, fixed in zip(stencils, constant) if not fixed]
    cols = [h.cols for h, fixed in zip(stencils, constant) if not fixed]
    triangles = np.asarray(face_triangles, np.int64).reshape(-1, 3)
    for a in range(3):
        for b in range(3):
            rows.append(triangles[:, a])
            cols.append(triangles[:, b])
    r = pattern.reduced[np.concatenate(rows)]
    c = pattern.reduced[np.concatenate(cols)]
    kept = (r >= 0) & (c >= 0)
    strong = np.concatenate([r[kept] * nf + c[kept], np.arange(pattern.free_count) * (nf + 1)])
    return ~np.isin(pattern.block_rows * nf + pattern.block_cols, strong)


def _face_surface(model) -> np.ndarray:
    """(t, 3) The triangles a body's face barriers keep off colliders: a cloth's faces, a solid's contact surface."""
    if len(model.triangle_indices) or not model.tet_count:
        return np.asarray(model.triangle_indices, np.int64).reshape(-1, 3)
    return surface_triangles(model)


def _rest_size(model) -> float:
    rest = model.rest_positions
    return float(np.linalg.norm(rest.max(axis=0) - rest.min(axis=0))) if len(rest) else 0.0


def _between_bodies(parts, kappa: float) -> SelfContactBarrier:
    """One barrier over every body's contact surface (``surface_triangles``): pairs of two different bodies always,
    pairs within a body when it is a cloth with ``use_self_collision``; reach the largest ``thickness`` of the
    bodies (at least MIN_BARRIER_REACH)."""
    triangles, body, own = [], [], []
    for b, (model, config, offset) in enumerate(parts):
        triangles.append(surface_triangles(model) + offset)
        body.append(np.full(model.particle_count, b))
        own.append(bool(config.use_self_collision) and not model.tet_count)
    rest = np.concatenate([model.rest_positions for model, _, _ in parts])
    d_hat = max(max(float(config.thickness) for _, config, _ in parts), MIN_BARRIER_REACH)
    return SelfContactBarrier(np.concatenate(triangles), rest, kappa, d_hat, body=np.concatenate(body),
                              self_bodies=np.array(own, bool))


def barrier_reach(collider) -> float:
    """The reach d_hat [m] of a collider's barrier: its thickness, at least MIN_BARRIER_REACH."""
    return max(float(collider.thickness), MIN_BARRIER_REACH)


def _move_out_of_colliders(x, x_prev, free, colliders):
    """Free particles at or below a collider's surface (at its pose at the step's end) move out to half its barrier
    reach, in place, along the normal of ``Collider.contact`` for the collider's motion over the step and the
    particles' from x_prev (x_prev = x: held still, so the side the collider came from).

    IPC needs a start where every distance is positive; a body placed into a collider (or a collider
    animated into a body) would otherwise have an infinite barrier and no valid step.
    """
    for collider in colliders:
        d_hat = barrier_reach(collider)
        d, normal = collider.contact(x, x_prev)
        d = d + collider.thickness
        inside = free & (d <= 1e-3 * d_hat)
        if inside.any():
            x[inside] += ((0.5 * d_hat - d[inside]))[:, None] * normal[inside]
