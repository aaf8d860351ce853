"""PBD and XPBD: predict positions, project constraints, derive velocities from positions.

Müller et al. 2007 "Position Based Dynamics"; Macklin et al. 2016 "XPBD". The two differ only in the
compliance handed to the shared constraint kernels (``solvers/constraints``): PBD projects every
constraint as hard (alpha = 0), XPBD uses alpha = compliance / dt^2 and accumulates Lagrange
multipliers, which makes its stiffness independent of iteration count and step size.
"""
import numpy as np
import scipy.sparse as sp

from .base import ProjectedContactSolver
from .collision.response.contact_set import find_contacts
from .collision.response.collider_contacts import ContactConstraints, resolve_collider_contacts
from .colouring import colour_constraints
from .constraints import BendingConstraints, DistanceConstraints, PinTethers, TetStrainConstraints
from .constraints.sewing import SewingConstraints
from .energies.pressure import gas_pressure
from .material import material_arrays
from .model import State, StepStats, measure_stats
from .native import library as native_library
from .native.mesh_frame import frame_supports
from .native.kernels import (AnalyticContacts, BendingJacobi, BendingSweep, ClothFrame, DistanceSweep, TetStrainJacobi,
                             TetStrainSweep, Tethers)
from .sewing import seam_force, with_seams_closed


CONTACT_ITERATIONS = 2
"""Fewest iterations of a solid's step that has collider contacts. With one sweep the ground stops each contact
particle on its own, so the ground's reaction follows the lumped masses of the contact layer and a tetrahedralized
ico sphere left its first bounce spinning; a second sweep, which sees the contact particles back on the ground, lets
the elastic constraints carry the reaction into the body (ico sphere dropped on friction 0.5, 24 frames: XPBD drift
434 -> 49 mm, about the 48 mm of 20 iterations). Steps without contacts keep ``config.iterations``, and so do cloths
(no rigid rotation to start, and a cloth resting on a sphere is in contact nearly every step, where a second sweep
would double the cost)."""

SYMMETRIC_SWEEPS = True
"""In every step of a solid, the last iteration sweeps the tet constraints twice from the same positions, colours
first to last and last to first, and takes the mean (positions and multipliers;
``TetStrainColourSweep.symmetric_sweep``). Earlier iterations sweep once, the colour order alternating over
iterations and steps (``_Sweep.alternate``).

Why: one Gauss-Seidel sweep leaves the colours it projects last satisfied and the earlier ones strained again, so
the residual strain around contact particles, and the slip friction turns into a horizontal impulse, is lopsided in
a direction set by the colour order. The two orders agree to first order and their mean is independent of the order
to second order. Measured on an ico sphere (302 tets) dropped pole-down on friction 0.5 for 24 frames (NEWTON, which
keeps the mesh's symmetry exactly: 0.0 mm): a fixed colour order drifts 170 mm, alternating over steps 38 mm, the
symmetric last sweep 3.2 mm. It is applied in every step, not only with contacts, because alternating orders over
steps of one iteration are unstable on sliver tets: the voxel-remeshed Suzanne (tet quality down to 0.006) grew a
round-off perturbation 1e4-fold per frame in free flight until a vertex reached 1000 m/s; with the symmetric sweep
it does not grow. Cost: Blender's default ico sphere (4928 tets) in free flight 71 -> 92 ms per frame.
Limit: a body balanced on a vertex is still an unstable rest, and an undamped elastic ball still rolls off it
(converged references kick it sideways at the first impact too)."""

MIN_COLOUR_FRACTION = 1.0 / 8.0
"""Gauss-Seidel colours smaller than this fraction of the largest one are not worth a batch each: a
particle shared by many constraints (the pole of a UV sphere, a fan of tets) makes a long tail of tiny
colours. Their constraints are swept together, Jacobi-style, after the big colours."""


class _Jacobi:
    """A constraint set swept Jacobi-style: all projected from the same positions, then applied together."""

    def __init__(self, constraints, particle_count: int, native=None):
        self.constraints = constraints
        m, k = constraints.indices.shape
        # scatter @ dx.reshape(-1, 3) sums every constraint's correction into its particles.
        self.scatter = sp.csr_matrix(
            (np.ones(m * k), (constraints.indices.ravel(), np.arange(m * k))), shape=(particle_count, m * k)
        )
        self.count = np.bincount(constraints.indices.ravel(), minlength=particle_count).astype(float)
        self.constraint_count = self.count[constraints.indices].max(axis=1)
        self.native = None
        """The same sweep in C with a loaded native library (``native``), or None: ``native.kernels.BendingJacobi``
        for bending, ``TetStrainJacobi`` for tets of at least two (with one, NumPy's einsums sum in another order)."""
        if native is None:
            return
        if isinstance(constraints, BendingConstraints) and native.ready("substeps"):
            self.native = BendingJacobi(native, constraints, particle_count)
        elif isinstance(constraints, TetStrainConstraints) and len(constraints) >= 2 and native.ready("solids"):
            self.native = TetStrainJacobi(native, constraints, particle_count)

    def numpy_sweep(self, x, alpha, lam, relaxation: float, lab_average: bool) -> None:
        """One Jacobi sweep in NumPy, in place on x (n, 3) [m] and the multipliers lam, with the set's alpha
        (``PositionBasedSolver._alpha``) and relaxation r (``PositionBasedSolver._jacobi`` says what each form does):
        the reference of ``native``. The lab form scales the positions' corrections only; the multipliers take the
        whole dlambda, as ``DistanceConstraints.jacobi`` does."""
        constraints = self.constraints
        if hasattr(constraints, "jacobi"):  # distances: the same sums gathered once, reduced per particle (test_kernels.py)
            if lab_average:
                constraints.jacobi(x, alpha, lam, particle_divisor=np.maximum(relaxation + self.count, 1e-12))
            else:
                constraints.jacobi(x, alpha, lam, constraint_scale=1.0 / (relaxation + self.constraint_count))
            return
        dx, dlam = constraints.corrections(x, alpha, lam)
        if not lab_average:
            scale = 1.0 / (relaxation + self.constraint_count)
            x += self.scatter @ (dx * scale[:, None, None]).reshape(-1, 3)
            lam += dlam * scale.reshape(scale.shape + (1,) * (dlam.ndim - 1))  # (m,) or (m, 3) multipliers
        else:
            x += (self.scatter @ dx.reshape(-1, 3)) / np.maximum(relaxation + self.count, 1e-12)[:, None]
            lam += dlam


class _Sweep:
    """One constraint set prepared for its sweep.

    Gauss-Seidel: ``batches`` holds one constraint subset per colour (no two share a particle), and
    ``tail`` the constraints of the tiny colours (see MIN_COLOUR_FRACTION), or None.
    Jacobi: ``tail`` holds everything and ``batches`` is empty.
    ``fast``: the set's own whole-sweep kernel over the big colours (``colour_sweep``, e.g.
    ``constraints.distance.DistanceColourSweep``), or None for sets without one or when it does not pay
    (``colouring.colour_order_pays``): those are swept batch by batch. With ``native`` (a loaded
    ``solvers.native`` library) a set that has a native twin (``native_sweep``) gets it as ``fast`` instead: the same
    update in one C call per sweep (a twin that returns None, e.g. tet sets with a single-tet colour, leaves
    ``colour_sweep`` in charge, as on the NumPy path).
    """

    def __init__(self, constraints, particle_count: int, scheme: str, native=None):
        self.batches, self.tail, self.fast = [], None, None
        # Tet sets alternate their colour order over iterations and steps, and sweep both orders at once in the last
        # iteration of every step (SYMMETRIC_SWEEPS).
        self.alternate = isinstance(constraints, TetStrainConstraints)
        if scheme == "GAUSS_SEIDEL":
            colours = colour_constraints(constraints.indices, particle_count)
            largest = max(len(c) for c in colours)
            big = [c for c in colours if len(c) >= MIN_COLOUR_FRACTION * largest]
            small = [c for c in colours if len(c) < MIN_COLOUR_FRACTION * largest]
            self.batches = [constraints.subset(c) for c in big]
            if native is not None and hasattr(constraints, "native_sweep"):
                self.fast = constraints.native_sweep(native, big, particle_count)
            if self.fast is None and hasattr(constraints, "colour_sweep"):  # also where the native twin declines
                self.fast = constraints.colour_sweep(big, particle_count)
            if small:
                self.tail = _Jacobi(constraints.subset(np.concatenate(small)), particle_count, native)
        else:
            self.tail = _Jacobi(constraints, particle_count, native)

    def set_damping(self, gamma: float, x_prev) -> None:
        """Internal damping gamma = tau / dt for this step's sweeps (``TetStrainConstraints.set_damping``) with the
        step's start positions x_prev (n, 3), handed to every batch, the tail and the fast sweep."""
        for batch in self.batches:
            batch.set_damping(gamma, x_prev)
        if self.tail is not None:
            self.tail.constraints.set_damping(gamma, x_prev)
        if self.fast is not None:
            self.fast.set_damping(gamma, x_prev)

    def new_multipliers(self):
        """Lagrange multipliers: one array per batch, then one for the tail."""
        if self.fast is not None and hasattr(self.fast, "new_multipliers"):  # views of a native kernel's own buffer
            tail = [self.tail.constraints] if self.tail else []
            return self.fast.new_multipliers() + [np.zeros((len(c),) + getattr(c, "multiplier_shape", ())) for c in tail]
        sets = self.batches + ([self.tail.constraints] if self.tail else [])
        # A vector constraint (bending) has a vector multiplier: shape (m,) + multiplier_shape.
        return [np.zeros((len(c),) + getattr(c, "multiplier_shape", ())) for c in sets]


def _always_compliant(constraints) -> bool:
    """A set that PBD projects with its XPBD compliance too (bending; see solvers/constraints/bending.py)."""
    return getattr(constraints, "always_compliant", False)


class PositionBasedSolver(ProjectedContactSolver):
    """``config.solver`` 'PBD' (hard constraints) or 'XPBD' (compliant constraints).

    A cloth (no tets) gets distance constraints on its edges (compliance 1 / config.stiffness), hard in PBD. A solid
    (tets) gets one Neo-Hookean constraint pair per tet (``constraints/tet_strain.py``: element-based elasticity with
    the Lamé parameters of Young's modulus and Poisson's ratio, ``material_arrays(...).tet_mu / .tet_lambda``), and no
    edge springs or volume constraints (a spring network is isotropic only on average: an ico sphere dropped
    pole-down tipped over). These are compliant in PBD too, so PBD and XPBD solids are the same material.
    A solid's tet constraints also get ``config.internal_damping`` (``TetStrainConstraints.set_damping``: damping of
    strain rates, not of rigid motion). An XPBD edge of zero stiffness gets no constraint at all. A cloth (triangles,
    no tets) with ``config.bending_stiffness`` > 0 gets one isometric bending constraint per interior edge
    (``constraints/bending.py``), compliant in PBD too. With ``config.tether_stretch`` set, pin tethers limit how far
    particles move from the pins (``constraints/tether.py``).
    ``constraint_scheme`` picks the sweep: 'GAUSS_SEIDEL' projects one colour at a time; 'JACOBI'
    projects all constraints from the same positions, accumulates, and applies (see ``_jacobi``).
    Each iteration sweeps every set, then the tethers, then projects the collider contacts
    (``collision.ContactConstraints``: the point contacts of the step's contact set, ``collision.find_contacts``,
    found once from the predicted positions, also projected before the first sweep); a solid's step with contacts
    runs at least CONTACT_ITERATIONS iterations. Contact friction acts once per step after the iterations;
    ``collision.resolve_collider_contacts`` (``finish_step``) then catches what is left.
    """

    def __init__(self, model, config):
        super().__init__(model, config)
        self.compliant = config.solver == "XPBD"
        self.scheme = config.constraint_scheme
        inv_mass = model.inv_mass
        material = material_arrays(model, config)
        sets = []
        # A solid (tets) gets per-tet Neo-Hookean constraints and no edge springs or volume constraints;
        # a model without tets (cloth, rope) keeps its distance constraints.
        # PBD's edges are hard whatever config.stiffness holds (it is no PBD setting: registry), so every edge gets
        # one; XPBD leaves out an edge of zero stiffness (infinite compliance).
        if model.tet_count:
            edges = np.zeros(0, np.int64)
        elif self.compliant:
            edges = np.nonzero(material.edge_stiffness > 0.0)[0]
        else:
            edges = np.arange(model.edge_count)
        edges = edges[~self.seams[edges]]  # seams pull to zero length instead (SewingConstraints below)
        if len(edges):
            compliance = 1.0 / material.edge_stiffness[edges] if self.compliant else 0.0
            sets.append(DistanceConstraints(model.edge_indices[edges], model.edge_rest_length[edges], inv_mass, compliance))
        if model.tet_count:
            tets = TetStrainConstraints.from_model(model.rest_positions, model.tet_indices, inv_mass,
                                                   material.tet_mu, material.tet_lambda)
            if tets is not None:
                sets.append(tets)
        if config.bending_stiffness > 0.0 and not model.tet_count and len(model.triangle_indices):
            # Cloth bending (constraints/bending.py): XPBD compliance in PBD too, since hard hinges are a rigid plate.
            bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, inv_mass,
                                                        _bending_map(model, config))
            if bending is not None:
                sets.append(bending)
        if self.seams.any():
            sets.append(SewingConstraints(model.edge_indices[self.seams], inv_mass, 1.0 / config.stiffness,
                                          seam_force(config)))
        self.pressure = gas_pressure(model, config)
        """The gas of a closed cloth with ``config.pressure`` (``energies/pressure.py``), or None: its force joins
        gravity in the prediction, re-evaluated every step."""
        self.native = native_library.load(config.compute)
        """The native kernel library (``solvers/native``) when ``config.compute`` allows it and it loaded, else None
        (every sweep in NumPy); ``solvers.native.status(config.compute)`` says why."""
        self.sweeps = [_Sweep(c, model.particle_count, self.scheme, self.native) for c in sets]
        self.tethers = PinTethers(with_seams_closed(model, self.seams), config.tether_stretch) if config.tether_stretch is not None else None
        if self.tethers is not None and self.native is not None:
            self.tethers = Tethers(self.native, self.tethers, model.particle_count)  # the same passes in C
        self.gravity = np.asarray(config.gravity, float)
        self.native_contacts = None
        """With the native library and no gas pressure (whose force joins the NumPy prediction): prediction, collider
        contacts (ground planes and spheres only; other colliders take the NumPy path for that step) and velocity
        update in C (``native.kernels.AnalyticContacts``); self-collision, when on, runs between the contacts and the
        velocity update as in ``finish_step``."""
        if self.native is not None and self.pressure is None and self.native.ready("contacts"):
            self.native_contacts = AnalyticContacts(self.native, np.ascontiguousarray(inv_mass, np.float64), self.pad2,
                                                    model.triangle_indices)
            self._gravity = np.ascontiguousarray(self.gravity, np.float64)
        self.free = (inv_mass > 0.0)[:, None]
        self.goals = _goal_springs(model)
        self._steps = 0  # the tet sweeps alternate their colour order (see _Sweep.alternate)
        self.damped = [sweep for sweep in self.sweeps if sweep.alternate] if config.internal_damping > 0.0 else []
        """The tet sweeps, when the solid has internal damping (``config.internal_damping``, ``set_damping``)."""

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        native = self.native_contacts
        if native is not None and native.supports(colliders):
            return self._native_contact_step(state, dt, colliders, measure)
        x, v = state.x, state.v
        self.attach_native_queries(colliders)
        self._steps += 1
        v += dt * self.gravity * self.free
        if self.pressure is not None:
            v += (dt * self.model.inv_mass)[:, None] * self.pressure.force(x)
        x_prev = x.copy()
        x += dt * v
        multipliers = [sweep.new_multipliers() for sweep in self.sweeps]
        if self.damped:
            for sweep in self.damped:
                sweep.set_damping(self.config.internal_damping / dt, x_prev)
        # The step's contact set; its face pairs are the Verlet lists the end-of-step face push (``finish_step``) reads.
        found = find_contacts(x, x_prev, self.model.inv_mass, colliders, self.pad2, self.model.triangle_indices) if colliders else None
        contacts = ContactConstraints(found) if found else None
        solid_contact = contacts and self.model.tet_count > 0
        iterations = max(self.config.iterations, CONTACT_ITERATIONS) if solid_contact else self.config.iterations
        symmetric = self.model.tet_count > 0 and SYMMETRIC_SWEEPS
        true_start = None
        if contacts:
            true_start = self.start_before_stabilizing(x_prev)
            contacts.stabilize(x_prev)  # a penetration the step began with: its push adds no velocity
            contacts.project(x)  # Gauss-Seidel order: the sweeps start from positions outside the colliders
        self._iterate(x, dt, multipliers, iterations, symmetric, contacts.project if contacts else None)
        if contacts:
            contacts.apply_friction(x, x_prev)  # once per step, on the step's tangential slip
        # Safety net: every vertex (ground too; particles the sweeps pushed in that were no contact candidates), and
        # the faces (``finish_step``).
        self.finish_step(x, x_prev, v, dt, colliders, true_start=true_start)
        if not measure:
            return StepStats(iterations=self.config.iterations)
        return measure_stats(self.model, x, iterations=self.config.iterations)

    def _native_contact_step(self, state: State, dt: float, colliders, measure: bool) -> StepStats:
        """``step`` with the prediction, the contacts of ground planes and spheres and the velocity update in C
        (``native.kernels.AnalyticContacts``: the same operations in the same order as the NumPy path below)."""
        x, v = state.x, state.v
        native = self.native_contacts
        self._steps += 1
        native.pose(colliders)
        x_prev = native.predict(x, v, self._gravity, dt)
        multipliers = [sweep.new_multipliers() for sweep in self.sweeps]
        if self.damped:
            for sweep in self.damped:
                sweep.set_damping(self.config.internal_damping / dt, x_prev)
        contacts = native.find(x, x_prev) > 0
        solid_contact = contacts and self.model.tet_count > 0
        iterations = max(self.config.iterations, CONTACT_ITERATIONS) if solid_contact else self.config.iterations
        symmetric = self.model.tet_count > 0 and SYMMETRIC_SWEEPS
        true_start = None
        if contacts:
            true_start = self.start_before_stabilizing(x_prev)
            native.stabilize(x_prev)
            native.project(x)
        self._iterate(x, dt, multipliers, iterations, symmetric, native.project if contacts else None)
        if contacts:
            native.friction(x, x_prev)
        if colliders:
            native.resolve(x, x_prev, colliders)
        self.resolve_self_collision(x, x_prev, colliders, true_start)  # may move x_prev (the buffer velocity reads) too
        native.velocity(x, v, dt, np.exp(-self.config.damping * dt) if self.config.damping > 0.0 else None)
        if not measure:
            return StepStats(iterations=self.config.iterations)
        return measure_stats(self.model, x, iterations=self.config.iterations)

    def _finish_in_sweeps(self, x, colliders) -> None:
        """``resolve_collider_contacts`` of a substep of ``native_frame`` that is walked in sweeps, in place on x from
        the substep's start (``native_contacts.x_prev``): in C for ground planes and spheres
        (``AnalyticContacts.resolve``, the same operations in the same order), else in NumPy (mesh colliders)."""
        native = self.native_contacts
        if native.supports(colliders):
            native.resolve(x, native.x_prev, colliders)
            return
        resolve_collider_contacts(x, native.x_prev, self.model.inv_mass, self.model.triangle_indices, colliders,
                                  self.pad2)

    def native_frame(self, run, dt: float, colliders=()) -> bool:
        """A whole frame of ``run`` (a ``frame.FrameRun`` at its start) in one C call (``native.kernels.ClothFrame``):
        the same substeps as ``run.substep`` with ``_native_contact_step``, bit for bit, for a cloth or a solid (its
        tet sweeps, their Jacobi tail and a solid step's rules: CONTACT_ITERATIONS, SYMMETRIC_SWEEPS, internal
        damping). False (nothing done) for what that call does not cover: no native library, pressure, soft pins, the
        JACOBI scheme, a set without a native sweep (sewing, tets with a single-tet colour) or a distance set with a
        Jacobi tail, colliders other than ground planes, spheres and
        mesh colliders, still, moving or deforming (``native.mesh_frame.frame_supports``). Force fields
        and air are covered: WIND blowing the same everywhere on a body with air as one air velocity a substep
        (``FrameRun.substep_winds``), any other fields as their table a substep (``FrameRun.substep_fields``,
        ``softsim_fields_apply``). With mesh colliders the frame is the per-substep path with the mesh's queries in C
        (``step`` after ``attach_native_queries``) bit for bit, and their kept planes and face-pair lists are the
        colliders' own. A substep whose end-of-step push must be walked in sweeps is finished between two calls
        (``_finish_in_sweeps``) and the call goes on with the next. With self-collision every substep is handed back
        after its end-of-step push (``ClothFrame.hand_over``): its self-collision (``resolve_self_collision``, with the
        start from before pre-stabilization), velocity update, pins and state check run here, as in
        ``_native_contact_step``."""
        steps = self.native_frame_steps(run, dt, colliders)
        if steps is None:
            return False
        steps.advance(run.substeps)
        return True

    def native_frame_steps(self, run, dt: float, colliders=(), posed=None):
        """``native_frame`` in pieces: the frame set up in C (``ClothFrame.prepare``) and returned as a
        ``NativeFrameSteps`` whose ``advance(k)`` runs its substeps up to k, so that bodies stepping in lockstep
        (``scene.advance_scene_frame``) take one C call a substep each; None (nothing done) for what that call does not
        cover (``native_frame`` lists it). posed: the colliders posed over each substep (``Collider.over``), when the
        caller has them (the bodies of a scene share them), else posed here."""
        frame = self._cloth_frame()
        if frame is None or not frame_supports(colliders, self.native):
            return None
        if self.self_collision is not None:  # its queries of mesh colliders, as ``step`` attaches them
            self.attach_native_queries(colliders)
        wind = run.substep_winds() if frame.air is not None else None
        fields = run.substep_fields() if wind is None else None  # any other fields: their table a substep
        K, state, config = run.substeps, run.state, self.config
        if posed is None:
            by_collider = [c.over_substeps(K) for c in colliders]
            posed = [[poses[k] for poses in by_collider] for k in range(K)]
        damping = np.exp(-config.damping * dt) if config.damping > 0.0 else None
        if frame.air is not None and frame.air is not getattr(run.loads, "native", None):
            return None
        solid = (0, False, 0, 0.0)
        if frame.tets is not None:  # a solid's step rules (``_native_contact_step``)
            solid = (CONTACT_ITERATIONS, SYMMETRIC_SWEEPS, self._steps + 1,
                     config.internal_damping / dt if self.damped else 0.0)
        frame.prepare(state.x, state.v, dt, K, config.iterations, self.compliant, config.jacobi_relaxation, damping,
                      config.max_speed, self._gravity, run.start, run.end, posed, self.model.triangle_indices, wind,
                      fields, solid)
        return NativeFrameSteps(self, run, frame, posed, dt, damping)

    def _cloth_frame(self):
        """The ``ClothFrame`` of this solver (built on first use), or None when its sets and settings are more than
        it covers (``native_frame``)."""
        if hasattr(self, "_frame_kernel"):
            return self._frame_kernel
        self._frame_kernel = None
        if (self.native_contacts is None or self.pressure is not None or self.goals is not None
                or self.scheme != "GAUSS_SEIDEL" or not self.native.ready("substeps")):
            return None
        # The C substep sweeps distances, bending and its tail, then tets and theirs: the sets must come in that order.
        distance = bending = tail = tets = tet_tail = None
        for sweep in self.sweeps:
            if (isinstance(sweep.fast, DistanceSweep) and distance is None and bending is None and tets is None
                    and sweep.tail is None):
                distance = sweep.fast
            elif isinstance(sweep.fast, BendingSweep) and bending is None and tets is None:
                bending = sweep.fast
                tail = sweep.tail.native if sweep.tail is not None else None
                if sweep.tail is not None and tail is None:
                    return None
            elif isinstance(sweep.fast, TetStrainSweep) and tets is None:
                tets = sweep.fast
                tet_tail = sweep.tail.native if sweep.tail is not None else None
                if sweep.tail is not None and tet_tail is None:
                    return None
            else:
                return None
        if self.tethers is not None and not isinstance(self.tethers, Tethers):
            return None
        from .frame import body_loads

        loads = body_loads(self)
        self._frame_kernel = ClothFrame(self.native, self.native_contacts, distance, bending, tail, self.tethers,
                                        getattr(loads, "native", None), np.nonzero(self.model.inv_mass == 0.0)[0],
                                        tets, tet_tail)
        if self.self_collision is not None:  # each substep's self-collision runs here, between two calls
            self._frame_kernel.hand_over()
        return self._frame_kernel

    def _iterate(self, x, dt, multipliers, iterations, symmetric, project) -> None:
        """The step's iterations: every sweep, the tethers, then ``project`` (the contacts), when given."""
        for iteration in range(iterations):
            for sweep, lams in zip(self.sweeps, multipliers):
                reverse = sweep.alternate and (iteration + self._steps) % 2 == 1
                if sweep.alternate and sweep.batches and symmetric and iteration + 1 == iterations:
                    self._symmetric_sweep(sweep, x, dt, lams)
                elif sweep.fast is not None:  # the same update on colour-ordered slices (tests/test_kernels.py)
                    compliant = self.compliant or _always_compliant(sweep.batches[0])
                    if sweep.alternate:
                        sweep.fast.sweep(x, dt, lams, compliant, reverse=reverse)
                    else:
                        sweep.fast.sweep(x, dt, lams, compliant)
                else:
                    self._gauss_seidel(sweep.batches, x, dt, lams, reverse)
                if sweep.tail is not None:
                    # Only the JACOBI scheme of PBD averages per particle (the GAMES103 lab's form); a Gauss-Seidel
                    # sweep's tail must conserve momentum like its colours do.
                    lab_average = not self.compliant and self.scheme == "JACOBI" and not _always_compliant(sweep.tail.constraints)
                    self._jacobi(sweep.tail, x, dt, lams[-1], lab_average)
            if self.tethers is not None:
                # One pass per iteration keeps the sweeps honest; the last iteration's passes settle them.
                self.tethers.apply(x, passes=1 if iteration + 1 < iterations else 8)
            if self.goals is not None:  # soft pins (solvers/soft_pins.py)
                self.goals.project(x, dt, self.model.inv_mass, iteration == 0)
            if project is not None:
                project(x)

    def _alpha(self, constraints, dt):
        # constraints.alpha(dt) is cached on dt, which lets DistanceConstraints reuse 1 / (w_i + w_j + alpha).
        return constraints.alpha(dt) if self.compliant or _always_compliant(constraints) else 0.0

    def _symmetric_sweep(self, sweep, x, dt, lams):
        """The mean of a forward and a backward Gauss-Seidel sweep of the big colours, both from x (see
        SYMMETRIC_SWEEPS); positions and multipliers alike."""
        if sweep.fast is not None and hasattr(sweep.fast, "symmetric_sweep"):
            sweep.fast.symmetric_sweep(x, dt, lams)  # both in one sweep of twice the particles
            return
        x_back, lams_back = x.copy(), [lam.copy() for lam in lams]
        if sweep.fast is not None:
            sweep.fast.sweep(x, dt, lams, True, reverse=False)
            sweep.fast.sweep(x_back, dt, lams_back, True, reverse=True)
        else:
            self._gauss_seidel(sweep.batches, x, dt, lams, reverse=False)
            self._gauss_seidel(sweep.batches, x_back, dt, lams_back, reverse=True)
        x += x_back
        x *= 0.5
        for lam, back in zip(lams[:len(sweep.batches)], lams_back):
            lam += back
            lam *= 0.5

    def _gauss_seidel(self, batches, x, dt, lams, reverse=False):
        pairs = list(zip(batches, lams))
        for batch, lam in (pairs[::-1] if reverse else pairs):
            dx, dlam = batch.corrections(x, self._alpha(batch, dt), lam)
            # No particle appears twice within a colour, so one plain fancy-index update is exact.
            x[batch.flat_indices] += dx.reshape(-1, 3)
            lam += dlam

    def _jacobi(self, sweep: _Jacobi, x, dt, lam, lab_average: bool):
        """One Jacobi sweep with relaxation r = ``config.jacobi_relaxation``.

        With ``lab_average`` (PBD's JACOBI scheme) it averages per particle, x_i += sum_c dx_ic / (r + n_i)
        with n_i the particle's constraint count: GAMES103 lab 2's x_i <- (r x_i + sum_e (x_i + dx_ie)) / (r + n_i).
        The two ends of a constraint then get different fractions of their (mass-weighted) corrections, so
        this form does not conserve momentum: an asymmetric solid dropped on a frictionless ground drifts.
        Otherwise (XPBD, and the tail of any Gauss-Seidel sweep) each constraint's whole update (dlambda and its
        dx) is scaled by 1 / (r + max n over its particles): momentum is conserved, and XPBD keeps
        x - x_tilde = W grad_C^T lambda, without which it converges to the wrong stretch.
        """
        relaxation = self.config.jacobi_relaxation
        if sweep.native is not None and not lab_average:  # the same sums in C, in the scatter's order
            sweep.native.jacobi(x, dt, lam, relaxation)
            return
        sweep.numpy_sweep(x, self._alpha(sweep.constraints, dt), lam, relaxation, lab_average)


class NativeFrameSteps:
    """A frame of ``PositionBasedSolver.native_frame`` set up in C and run in pieces (``native_frame_steps``):
    ``advance(k)`` runs the substeps after the last one run up to substep k; once substep K (``run.substeps``) is done,
    the frame's stats are in ``run.stats``. Between two pieces the caller may move the state's x and v in place (the
    contact between bodies of ``scene.advance_scene_frame`` does), as it could between two substeps of
    ``FrameRun.posed_substep``."""

    def __init__(self, solver, run, frame, posed, dt: float, damping):
        self.solver, self.run, self.frame, self.posed = solver, run, frame, posed
        self.dt, self.damping = dt, damping
        self.done = 0
        """Substeps run so far."""

    def advance(self, last: int) -> None:
        """Run substeps done + 1 .. last (at most ``run.substeps``); raises ``frame.SimulationDiverged`` as
        ``check_finite`` does."""
        from .frame import check_finite

        solver, frame, run, dt = self.solver, self.frame, self.run, self.dt
        state, config = run.state, solver.config
        first = self.done + 1
        while first <= last:
            done, status, _ = frame.run(first, last)
            solver._steps += done
            if status in (1, 4):  # substep first + done, up to its end-of-step push (1: to be walked in sweeps)
                k = first + done
                solver._steps += 1
                if status == 1:
                    solver._finish_in_sweeps(state.x, self.posed[k - 1])
                solver.resolve_self_collision(state.x, solver.native_contacts.x_prev, self.posed[k - 1],
                                              frame.start_before_stabilizing())
                solver.native_contacts.velocity(state.x, state.v, dt, self.damping)
                state.x[run.pinned] = frame.pin_to
                if frame.state_fails():  # the check in C; check_finite raises its error
                    check_finite(state, config.max_speed)
                first = k + 1
            else:
                if status == 2:
                    check_finite(state, config.max_speed)  # raises the error of the NumPy path
                first += done
        self.done = max(self.done, last)
        if self.done == run.substeps:
            self._measure()

    def _measure(self) -> None:
        """The last step's stats into ``run.stats``, measured as ``step`` does: before the pins are put exactly on
        their targets (the prediction x_prev + dt (pin_to - x_prev) / dt, which nothing in the step moves)."""
        run, dt, frame = self.run, self.dt, self.frame
        x = run.state.x
        if len(run.pinned):
            x = x.copy()
            before = self.solver.native_contacts.x_prev[run.pinned]
            x[run.pinned] = before + dt * ((frame.pin_to - before) / dt)
        run.stats = measure_stats(self.solver.model, x, iterations=self.solver.config.iterations)


# --- Per-vertex bending map and soft pins (solvers/material.py, solvers/soft_pins.py) ---

def _bending_map(model, config):
    """The cloth's bending modulus per hinge under its ``bending_group`` map (the scalar without one)."""
    from .energies.bending import hinges_from_triangles
    from .material import hinge_bending_stiffness

    return hinge_bending_stiffness(model, hinges_from_triangles(model.triangle_indices), config.bending_stiffness)


def _goal_springs(model):
    """The soft pins' springs (``solvers/soft_pins.py``), projected as compliant attachments; None without them."""
    from .soft_pins import GoalSprings

    return GoalSprings.of(model)
