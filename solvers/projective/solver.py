"""PROJECTIVE: Projective Dynamics (Bouaziz, Martin, Liu, Kavan, Pauly 2014), Anderson-accelerated.

A step of length h from (x^n, v^n) minimizes implicit Euler's incremental potential with PD's energies

    Phi(x) = 1/(2 h^2) |x - y|_M^2 + sum_c w_c/2 |A_c x - p_c(x)|^2,    y = x^n + h v^n + h^2 g,

p_c(x) the projection of A_c x onto constraint c's manifold (``constraints.py``: edge springs for cloth,
isometric bending of cloth hinges, corotated strain + volume per tet for solids). It alternates

    local:  p_c = projection of A_c x_k, every element at once;
    global: (M/h^2 + L) x_{k+1} = M y/h^2 + sum_c w_c A_c^T p_c,    L = sum_c w_c A_c^T A_c,

for ``config.iterations`` iterations from x_0 = y. Each one lowers Phi (the local step minimizes over p, the
global over x), so the fixed point is implicit Euler's solution with these energies.

Energy check: implicit Euler never gains energy, but a few iterations from y can. Each local step projects the
edges of an iterate that is ahead of the solution (y is where the motion was heading), so the springs pull the
particles on in that direction: a hanging curtain whose middle band was thrown at 6 m/s gained 65% of its kinetic,
gravitational and spring energy within half a frame at 2 iterations (17.1 -> 28.3 J), and the hem later swung
far above the pins. So a step iterates past ``config.iterations``, up to ENERGY_CHECK_ITERATIONS, while its
iterate (v = (x - x^n)/h) has more of that energy than the step's start; the pinned particles are put at their
targets for both, so the work the pins do as they move counts as energy the step may gain. Measured: the curtain
then only loses energy (2 to 9 iterations per step); the lab drape averages 2.1 iterations per step (max 7), and
a step costs 20-30% more for the one extra local step and the energy sums. The contact planes' penalty (below) is
in Phi (Anderson's safeguard needs the objective it minimizes) but not in the checked energy: it stands in for a
hard constraint whose depth the end-of-step projection removes. The matrix is scalar (nf, nf) over the free
particles, the same for x, y and z, and constant for a given h and contact set: it is factorized once per h
(``linalg.factorize_spd_for_many``: SuperLU with a minimum degree ordering, or a banded Cholesky after reverse
Cuthill-McKee where that measured faster: large enough, a band that fits the cache and is not much larger than
SuperLU's factors), again when the contact set changes (``linalg.direct.DiagonalShifts``: the contact weights added
to the kept band of M/h^2 + L, or SuperLU where that factorizes faster), and each global step is one solve with three
right-hand sides.
Pinned particles (inv_mass 0) are eliminated: they sit on x^n + h v^n (``advance_frame`` sets v so that this is
their target) and their L-columns move to the right-hand side.

After the last iteration, free particles are projected out of every collider with friction
(``ProjectedContactSolver.finish_step``, as XPBD), and v = (x - x^n)/h, damped by exp(-damping h). The velocity is
the position change, so a contact projection never adds kinetic energy. A cloth's contacts with the ground are left
to that projection alone. A solid's are in the solve as normal-only planes (below): left to the projection, the solve
relaxed the layer of tets an impact had squashed by moving its bottom particles into the ground (they are light, and
L dominates M/h^2), the projection pushed them back, and the layer stayed squashed for good. A 1 m cube dropped on the
ground at the defaults (tet resolution 10) rested with 20% edge strain, its top 1 cm low and +1.5% volume enclosed by
its corners, the same after 10 s; with the planes: 0.03% strain, -0.004% volume. The same push put energy into a
bounce: the 0.4 m cube dropped 2.2 m came back to 0.66 m (0.86 m at 20 iterations), above implicit Euler's 0.26 m
(NEWTON); with the planes 0.20 m at 20 iterations, and at the default 2 it stays on the ground (each iteration
short of the fixed point damps, the stiff contact planes most).

Colliders that reach between a triangle's corners (mesh colliders, spheres) are in the minimization too (Bouaziz et
al. 2014, section 5; ``contacts_in_solve``): without that, where the solve pulls a cloth over a box's rim every step
the projection pushes it back every step, storing energy in the springs. At the start of a step every free particle
that the prediction y puts within its step's motion of such a collider gets its contact plane (``Collider.contact``,
as PBD's ``ContactConstraints``), and every particle the last step's end-of-step projection moved gets a plane
through where that left it (``collision.response.held_planes``: mostly vertices of faces pushed off a mesh collider's
edges, which no vertex plane sees). Each is a unilateral constraint (``PlaneContacts``): one scalar row e_i, whose
projection is the particle moved onto the plane where it is inside and left where it is outside, so the matrix gains a
diagonal weight per contact and is refactorized when the set changes (~0.3 ms on a 31 x 31 cloth; at rest on a box every
step, as a tenth of the held particles changes each step). After the last iteration, friction takes off the
tangential motion of each contact up to friction * h^2 lambda / m (``PlaneContacts.apply_friction``), then the
end-of-step projection is the exact guard. Measured on the Blender box drape (a 31 x 31 cloth landing on a cube, 48
frames): the projection stored 39 J a step on average (up to 209 J) without the planes, 0.02 J (max 0.05 J) with
them: 0 box edges through the cloth instead of 2, 1.8% strain instead of 47%, 300 instead of 570 ms a frame at
rest. Such a plane's weight enters the scalar matrix in every direction, so within a step's few iterations it also
holds the particle near its iterate along the plane, a tangential drag: bodies dropped on a frictionless ground
drifted 33-159 mm with such planes (the projection alone: under 1 mm), and a sheet landing on its edge stopped dead
instead of crumpling. On a mesh collider or a sphere that drag remains (friction hides it at the add-on's default
0.2), weaker than the normal-only planes' weight (SCALAR_CONTACT_WEIGHT against CONTACT_WEIGHT): each step starts it
again where the last left the particle, and at the same weight it held a cloth stretched on a frictionless sphere. The
ground's planes under a solid share one normal n, so they are normal-only (``PlaneContacts``): their
weights enter only the matrix of the coordinate along n, and the global step is solved in a frame with n as an axis,
two tangential coordinates with M/h^2 + L (+ the other planes' weights), the normal one with the ground's weights
added (a second factorization per contact set; a cube at rest keeps its set, so it is factorized once). A ground
at another angle in the same step stays with the projection.

Internal damping of a solid (``config.internal_damping`` tau [s]): Rayleigh damping proportional to the tets' shear
stiffness, the damping force -D (v - v_rigid) = -D (x - x_ref) / h with D = tau sum_t w_s A_t^T A_t (tau times the
strain term's share of L, w_s = 2 mu V0) and x_ref = x^n + h v_rigid, i.e. the term

    1 / (2 h) |x - x_ref|_D^2    added to Phi,

so the global matrix becomes M/h^2 + L + D/h, still constant per h and factorized once. v_rigid is the rigid motion
of the step's start velocities (``rigid_velocity``: the mean velocity and the angular velocity about the centre of
mass): D measures velocity gradients, which a rotation has too, and damping v itself would brake a spinning body.
Only the shear part damps: the volume term carries most of L for a nearly incompressible solid (w_v = 3 lambda V0, 13.5
times w_s at nu = 0.45), and with it a resting body kept the bottom layer that the contact projection pushes back every
step squashed (the 5 kg ball below at 8 x 5, when the ground was outside the solve: -0.66% -> -2.2% volume with all
of L, -0.75% with the shear part). Measured: the 0.4 m cube of 2 kg dropped 2.2 m onto the ground at 16 x 20 (near
the fixed point) comes back to 0.20 m without it and stays on the ground at the default 0.01 s (at the default 16 x 2
it stays there even without it); a 1 m bar's axial vibration in its second second 5.7% -> 2.0% (0.22% at 0.03 s), a
slow spin keeps its angular momentum to 4e-5.

Stiffness: cloth springs w_e = config.stiffness [N/m] (Hooke, E = k/2 (l - L)^2: the same small-stretch stiffness
as the other solvers); cloth bending config.bending_stiffness [N m] (``IsometricBending``); solids w_s = 2 mu V0,
w_v = 3 lambda V0 from Young's modulus and Poisson's ratio (``TetStrain``: linear elasticity at small strain).

Acceleration (``ACCELERATIONS``, the constructor's ``acceleration``): ANDERSON (default; window 5, every
accepted iterate lowers Phi, Peng et al. 2018), CHEBYSHEV (Wang 2015, with the spectral radius rho of the plain
iteration estimated on the first step at each h from ``RHO_PROBE_ITERATIONS`` plain iterations), or NONE.
Anderson won on the 64 x 64 lab cloth (stiffness 1e4 N/m, 8 substeps, mean over 5 states of a run): it lowers
the relative energy gap (Phi_k - Phi*)/(Phi_0 - Phi*) in 5 / 10 / 20 iterations to 10^-0.44 / -0.70 / -1.01,
against 10^-0.31 / -0.41 / -0.53 plain and 10^-0.37 / -0.57 / -0.77 Chebyshev (probed rho 0.97 .. 0.98). An
Anderson iteration costs 1.4 .. 1.7 plain ones (Chebyshev 1.0 .. 1.1), so per unit time it ties with Chebyshev up
to ~10 iterations and leads beyond (at 24 substeps, 20 iterations: 10^-1.26 against 10^-0.76); it needs no rho
and never accepts an iterate that raises Phi.
"""
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..base import ProjectedContactSolver
from ..collision.response.collider_contacts import ContactConstraints
from ..collision.response.contact_set import ContactSet, find_contacts, point_contacts
from ..collision.response.held_planes import HeldPlanes
from ..linalg import factorize_spd_for_many
from ..linalg.direct import DiagonalShifts
from ..energies import hinges_from_triangles
from ..material import hinge_bending_stiffness, material_arrays
from ..soft_pins import GoalAttachment, has_goals
from ..model import State, StepStats, measure_stats
from ..native import library as native_library
from ..native.implicit_kernels import SphereProjection, TetTargets
from ..native.kernels import AnalyticContacts
from .acceleration import Anderson, Chebyshev, Plain
from ..energies.pressure import gas_pressure
from ..sewing import seam_force
from .constraints import EdgeSprings, HingeBending, SewingSprings, TetStrain

ACCELERATIONS = ("CHEBYSHEV", "ANDERSON", "NONE")
DEFAULT_ACCELERATION = "ANDERSON"
RHO_PROBE_ITERATIONS = 40
"""Plain iterations of the first step at a new h, from whose residual ratios Chebyshev's rho is estimated."""
RHO_MAX = 0.9999
"""Ceiling of the estimated rho: omega -> 2 as rho -> 1, and an overestimated rho diverges."""
CHEBYSHEV_GAMMA = 0.9
"""Wang 2015's under-relaxation."""
CHEBYSHEV_DELAY = 2
"""Iterations with omega = 1 before the Chebyshev sequence starts."""
ENERGY_CHECK_ITERATIONS = 12
"""Iterations a step may take (or ``config.iterations`` if more) while its iterate has more energy than its start."""
ENERGY_SLACK = 1e-3
"""Energy gain the energy check lets through, as a fraction of the start's kinetic + elastic energy (round-off, the
first-order pin work)."""
ANDERSON_WINDOW = 5
"""Differences Anderson acceleration keeps (3, 5 and 10 measured within 0.03 decades of each other, lab cloth)."""
CONTACT_WEIGHT = 3.0
"""Weight of a normal-only contact plane (a solid on the ground), as a multiple of its particle's diagonal of
M/h^2 + L (``PlaneContacts``): it holds the particle off the plane without touching its motion along it. Measured with
one weight for every plane on the Blender box drape (31 x 31 cloth on a cube, 48 frames): 3 -> 1.8% largest strain, 10
-> 2.7%, 30 -> 9.4%; at 100 the cloth blew up at frame 40, at 1000 at frame 19."""
SCALAR_CONTACT_WEIGHT = 0.5
"""The same multiple for a plane that weighs in every direction (colliders reaching between corners, held planes).
Within a step's few iterations its weight also holds the particle near its last iterate along the plane, a drag even
on a frictionless collider, and each step starts it again where the last one left the particle: on a frictionless
sphere the cloth's resting part hung on while the rest pulled, and the strain grew step by step. The 64 x 64 lab cloth
(PROJECTIVE 8 x 5, frictionless sphere, 60 frames, engine): largest strain 55% at 3 (its elastic energy from 21 to
1170 J between frames 33 and 55, the cloth nearly at rest), 19% at 1, 11% at 0.5, 7.6% at 0.3, 3.4% at 0.1, 14% with
these planes left to the end-of-step projection. The box drape (31 x 31, 72 frames, engine): 3.4% at 3, 2.2% at 1,
1.6% at 0.5, 3.2% at 0.3, 8.4% at 0.2; the end-of-step projection's work on it (48 frames, Air Drag 1) 0.021 J a step
on average at 3, 0.004 J at 0.5. 0.5 is good on both; the lab cloth's energy still creeps up (15 to 110 J over frames
30-96) where the drag remains."""


@dataclass
class ProjectiveLog:
    """Per-iteration record of the last step, for tests and diagnostics."""

    residuals: list = field(default_factory=list)
    """|G(x_k) - x_k| / |G(x_k) - x^n| over the free particles, per iteration (G = one plain local-global update)."""
    energies: list = field(default_factory=list)
    """Phi(x_k) [J] per iterate, from x_0 = y (only when ``log_energy`` is set, or the accelerator needs it)."""


class ProjectiveSolver(ProjectedContactSolver):
    """``config.solver == 'PROJECTIVE'`` on one Model. ``acceleration`` is one of ACCELERATIONS."""

    def __init__(self, model, config, acceleration: str = DEFAULT_ACCELERATION):
        super().__init__(model, config)
        if acceleration not in ACCELERATIONS:
            raise ValueError(f"acceleration must be one of {ACCELERATIONS}, got {acceleration!r}")
        self.acceleration = acceleration
        self.energy_check = True
        """Iterate past ``config.iterations`` (up to ENERGY_CHECK_ITERATIONS) while the step would gain energy."""
        self.log_energy = False
        """Record Phi at every iterate in ``log.energies`` (costs one more local step per step)."""
        n = model.particle_count
        free = model.inv_mass > 0.0
        self.free, self.pinned = np.nonzero(free)[0], np.nonzero(~free)[0]
        sets = []
        if model.tet_count:
            material = material_arrays(model, config)
            sets.append(TetStrain(model.rest_positions, model.tet_indices, model.tet_rest_volume,
                                  material.tet_mu, material.tet_lambda))
        else:
            springs = ~self.seams  # seams pull to zero length instead (SewingSprings below)
            stiffness = material_arrays(model, config).edge_stiffness  # config.stiffness under the stiffness_group map
            sets.append(EdgeSprings(model.edge_indices[springs], model.edge_rest_length[springs], stiffness[springs],
                                    model.rest_positions))
            if self.seams.any():
                sets.append(SewingSprings(model.edge_indices[self.seams], config.stiffness, seam_force(config), n))
            if config.bending_stiffness > 0.0 and len(model.triangle_indices):
                hinges = hinges_from_triangles(model.triangle_indices)
                if len(hinges):
                    sets.append(HingeBending(model.rest_positions, hinges,
                                             hinge_bending_stiffness(model, hinges, config.bending_stiffness)))
        if has_goals(model):
            sets.append(GoalAttachment(model))  # soft pins (solvers/soft_pins.py)
        self.sets = sets
        self.pressure = gas_pressure(model, config)
        """The gas of a closed cloth with ``config.pressure`` (``energies/pressure.py``), or None. Its energy is no PD
        constraint (not a distance to a manifold): the local step evaluates its force at the iterate, and the global
        step takes it as a load, f(x_k) on the right-hand side (a fixed-point iteration that converges while the gas
        is soft next to M/h^2 + L); Phi and the energy check include its energy."""
        L = sp.csr_matrix((n, n))
        for c in sets:
            L = L + c.laplacian
        L_rows = L.tocsr()[self.free]
        self.L_free = L_rows[:, self.free].tocsc()
        self.L_pinned = L_rows[:, self.pinned].tocsr()
        self.damping = None
        """A solid's internal damping (module docstring): (D (n, n), its free rows, its free and its pinned columns of
        those) [N s/m], D = tau * the tets' shear part of L; None without internal damping (and for cloth)."""
        if model.tet_count and config.internal_damping > 0.0:
            tets = sets[0]
            D = (tets.A.T @ sp.diags(np.repeat(config.internal_damping * tets.w_strain, 3)) @ tets.A).tocsr()
            D_rows = D[self.free]
            self.damping = (D, D_rows, D_rows[:, self.free].tocsc(), D_rows[:, self.pinned].tocsr())
        self.native = native_library.load(config.compute)
        """The native kernel library when ``config.compute`` allows it and it loaded, else None (all NumPy); with it,
        the local step of the sets projected onto spheres (edge springs, curved hinges) and their share of the global
        right-hand side run in C (``native.implicit_kernels.SphereProjection``, the same arithmetic in the same order),
        and the tet strain set's projection (``TetTargets``: its per-tet SVD, volume projection and targets)."""
        self.native_contacts = None
        """With the native library and no self-collision: ``finish_step``'s contacts with ground planes and spheres in
        C (``native.kernels.AnalyticContacts.resolve``, XPBD's twin of ``resolve_collider_contacts``); other colliders
        take the NumPy path for that step."""
        if self.native is not None and self.self_collision is None and self.native.ready("contacts"):
            self.native_contacts = AnalyticContacts(self.native, np.ascontiguousarray(model.inv_mass, np.float64),
                                                    self.pad2, model.triangle_indices)
        # Per projected set: A's free columns, their transpose (the right-hand side's A^T q), its pinned columns, and
        # its native twin (or None).
        self.projected = []
        implicit = self.native is not None and self.native.ready("implicit")
        for c in sets:
            if c.A is not None:
                A_free = c.A[:, self.free].tocsr()
                A_free_T = A_free.T.tocsr()
                native = None
                if implicit and hasattr(c, "sphere_targets"):
                    native = SphereProjection(self.native, A_free, A_free_T, *c.sphere_targets())
                if implicit and isinstance(c, TetStrain) and len(c.w_strain) >= 2:
                    c.native = TetTargets(self.native, c.w_strain, c.w_volume)
                self.projected.append((c, A_free, A_free_T, c.A[:, self.pinned].tocsr(), native))
        # Pure quadratic terms (flat bending) enter Phi as 1/2 x^T Q x
        # = 1/2 x_F Q_FF x_F + x_F Q_FP x_P + 1/2 x_P Q_PP x_P (per coordinate).
        self.quadratic = []
        for c in sets:
            if c.quadratic is not None:
                Q_rows = c.quadratic[self.free]
                self.quadratic.append((Q_rows[:, self.free].tocsr(), Q_rows[:, self.pinned].tocsr(),
                                       c.quadratic[self.pinned][:, self.pinned].tocsr()))
        self.mass_free = model.mass[self.free]
        self.gravity = np.asarray(config.gravity, float)
        self._factors = {}
        self._shifts = {}
        """Per h: ``DiagonalShifts`` of M/h^2 + L, which factorizes it with each contact set's weights added."""
        self._contact_factor = None
        """(key, solve) of the last contact set's matrix."""
        self.contact_factorizations = 0
        """Matrices factorized for a new contact set, over the solver's life (a cost figure for tests and benches)."""
        self._diagonals = {}
        self.contacts_in_solve = True
        """Contact planes inside the solve (``PlaneContacts``; module docstring): of the colliders that reach between
        corners, and a solid's on the ground (normal-only, so a frictionless ground exerts no tangential drag)."""
        self.held = HeldPlanes(n, float(model.edge_rest_length.max(initial=0.0)) + config.thickness, config.thickness)
        """The planes that hold the particles the last end-of-step projection moved
        (``collision.response.held_planes``)."""
        self._free_index = np.full(n, -1, np.int64)
        self._free_index[self.free] = np.arange(len(self.free))
        self.rho = {}
        """Chebyshev's estimated spectral radius per step length h."""
        self.log = ProjectiveLog()

    # ------------------------------------------------------------------ the two half-steps

    def factor(self, h: float, contacts=None):
        """The solve function of (M/h^2 + L + C) over the free particles (nf, 3) -> (nf, 3): factorized once per h
        without contacts; with contacts (``PlaneContacts``, C their diagonal of weights) once per contact set, the
        last set's factor kept (a resting contact set repeats from step to step)."""
        if contacts is not None:
            key = (h, contacts.key)
            if self._contact_factor is None or self._contact_factor[0] != key:
                self._contact_factor = (key, self._contact_solve(h, contacts))
            return self._contact_factor[1]
        solve = self._factors.get(h)
        if solve is None:
            if len(self._factors) >= 4:  # advance_frame keeps h fixed; a changing h must not pile up factors
                self._factors.clear()
            solve = self._factors[h] = factorize_spd_for_many(self._matrix(h))
        return solve

    def _matrix(self, h: float):
        """M/h^2 + L (+ D/h with internal damping) over the free particles (nf, nf), CSC."""
        return (self._stiffness(h) + sp.diags(self.mass_free / (h * h))).tocsc()

    def _shifted(self, h: float, weights):
        """The solve function of M/h^2 + L + diag(weights) (weights (nf,) >= 0: contact planes' weights): factorized
        for this one contact set, so by the method that factorizes fastest (``DiagonalShifts``), the matrix's band
        kept per h."""
        shifts = self._shifts.get(h)
        if shifts is None:
            if len(self._shifts) >= 4:  # as ``factor``'s: a changing h must not pile up bands
                self._shifts.clear()
            shifts = self._shifts[h] = DiagonalShifts(self._matrix(h))
        return shifts.factorize(weights)

    def _contact_solve(self, h: float, contacts):
        """The solve function of the global matrix with ``contacts``: M/h^2 + L + C in every direction, C the planes
        that weigh in every direction; the normal-only planes (all with normal ``contacts.axis``) add their weights to
        the matrix of the coordinate along that axis only, so the system is solved in the frame (t1, t2, axis): the
        two tangential coordinates with one matrix, the normal one with the other."""
        if contacts.diagonal.any():
            tangential = self._shifted(h, contacts.diagonal)
            self.contact_factorizations += 1
        else:
            tangential = self.factor(h)
        if contacts.axis is None:
            return tangential
        normal = self._shifted(h, contacts.diagonal + contacts.normal_diagonal)
        self.contact_factorizations += 1
        frame = _frame_with_axis(contacts.axis)

        def solve(b):
            local = b @ frame
            local[:, :2] = tangential(np.ascontiguousarray(local[:, :2]))
            local[:, 2:] = normal(np.ascontiguousarray(local[:, 2:]))
            return local @ frame.T

        return solve

    def _stiffness(self, h: float):
        """The constant part of the global matrix besides M/h^2 over the free particles: L_FF, plus D_FF / h with
        internal damping."""
        return self.L_free if self.damping is None else self.L_free + self.damping[2] / h

    def _contacts(self, y, x_start, h, colliders):
        """The step's contact planes (``PlaneContacts``) of the free particles that the prediction y (n, 3) puts
        within their step's motion of a collider (the point contacts of ``collision.find_contacts``: the planes of
        ``Collider.contact`` from x_start (n, 3)), or None. A collider whose surface reaches between corners gets
        planes that weigh in every direction; any other (the ground) normal-only planes, if all its contacts share
        one normal and it is the first such normal of the step (a second ground at another angle stays with the
        end-of-step projection)."""
        found = find_contacts(y, x_start, self.model.inv_mass, colliders, self.pad2)
        sets, axis = [], None
        for c in found.points:
            if c.collider.reaches_between_corners:
                sets.append((c.collider, c.particles, c.normal, c.offset, False))
                continue
            if not np.allclose(c.normal, c.normal[0], rtol=0.0, atol=1e-12):
                continue
            if axis is None:
                axis = c.normal[0]
            if np.allclose(c.normal[0], axis, rtol=0.0, atol=1e-12):
                sets.append((c.collider, c.particles, c.normal, c.offset, True))
        held, normal, offset = self.held.planes()
        if len(held):
            sets.append((None, held, normal, offset, False))
        if not sets:
            return None
        diagonal = self._diagonals.get(h)
        if diagonal is None:
            diagonal = self._diagonals[h] = self._stiffness(h).diagonal() + self.mass_free / (h * h)
        return PlaneContacts(sets, self._free_index, diagonal, axis)

    def _prepare(self, y, h, with_energy=True, x_ref=None):
        """What a step towards y (n, 3) keeps fixed: the pinned particles' share of every A x (and of Phi), and with
        internal damping its reference positions x_ref (n, 3) [m] (module docstring)."""
        step = _Step(y=y, h2=h * h, y_free=y[self.free])
        y_pinned = y[self.pinned]
        step.b0 = (self.mass_free / step.h2)[:, None] * step.y_free
        if len(self.pinned):
            step.b0 -= self.L_pinned @ y_pinned
        if self.damping is not None and x_ref is not None:
            _, D_rows, _, D_pinned = self.damping
            step.x_ref = x_ref
            step.b0 += (D_rows @ x_ref - (D_pinned @ y_pinned if len(self.pinned) else 0.0)) / h
        step.z_pinned = [A_pinned @ y_pinned if len(self.pinned) else 0.0 for _, _, _, A_pinned, _ in self.projected]
        if with_energy:
            for Q_free, Q_pinned, Q_pp in self.quadratic:
                step.quadratic.append((Q_free, Q_pinned @ y_pinned, 0.5 * float(np.sum(y_pinned * (Q_pp @ y_pinned)))))
        return step

    def local(self, step, x_free, with_energy=False):
        """Targets q = W p of every projected set at the free positions x_free (nf, 3) and, if asked, Phi [J]."""
        targets, energy = [], 0.0
        x_rows = np.ascontiguousarray(x_free)  # SuperLU's solves return Fortran order; the native twins read rows
        for (c, A_free, _, _, native), z_pinned in zip(self.projected, step.z_pinned):
            if native is not None:
                q, length = native.project(x_rows, None if np.isscalar(z_pinned) else z_pinned)
                e = c.energy_of(length) if with_energy else None
            else:
                q, e = c.project(A_free @ x_free + z_pinned, with_energy)
            targets.append(q)
            if with_energy:
                energy += e
        if step.contacts is not None:
            q, e = step.contacts.project(x_free, with_energy)
            targets.append(q)
            step.contact_energy = e
        gas_energy = 0.0
        if self.pressure is not None:
            x_all = step.y.copy()  # pinned rows sit on their targets
            x_all[self.free] = x_free
            step.gas_force = self.pressure.force(x_all)[self.free]
            gas_energy = self.pressure.value(x_all) if with_energy else 0.0
        if not with_energy:
            return targets, None
        energy += gas_energy
        if step.contacts is not None:
            energy += step.contact_energy
        for Q_free, offset, constant in step.quadratic:
            energy += float(np.sum(x_free * (0.5 * (Q_free @ x_free) + offset))) + constant
        if step.x_ref is not None:
            d = step.y - step.x_ref  # the pinned rows sit on their targets
            d[self.free] = x_free - step.x_ref[self.free]
            step.damping_energy = 0.5 / np.sqrt(step.h2) * float(np.einsum("ij,ij->", d, self.damping[0] @ d))
            energy += step.damping_energy
        d = x_free - step.y_free
        energy += 0.5 / step.h2 * float(np.einsum("i,ij,ij->", self.mass_free, d, d))
        return targets, energy

    def global_solve(self, step, solve, targets):
        """(M/h^2 + L_FF) x_F = M y_F/h^2 - L_FP x_P + sum A_F^T q, solved for x_F (nf, 3) (with internal damping the
        matrix and the constant part of the right-hand side carry its term too, ``_stiffness`` and ``_prepare``)."""
        b = step.b0
        for (_, _, A_free_T, _, native), q in zip(self.projected, targets):
            b = native.scatter(q, np.ascontiguousarray(b)) if native is not None else b + A_free_T @ q
        if step.contacts is not None:
            b = b + step.contacts.AT @ targets[-1]
        if step.gas_force is not None:
            b = b + step.gas_force
        return solve(b)

    def objective(self, x, y, h):
        """PD's Phi(x) [J] of a step of length h towards y (both (n, 3), pinned rows of x = those of y)."""
        return self.local(self._prepare(y, h), x[self.free], True)[1]

    # ------------------------------------------------------------------ one step

    def _accelerator(self, h):
        if self.acceleration == "NONE":
            return Plain()
        if self.acceleration == "ANDERSON":
            return Anderson(ANDERSON_WINDOW)
        return Chebyshev(self.rho[h], CHEBYSHEV_GAMMA, CHEBYSHEV_DELAY)

    def _stabilize(self, x_start, colliders):
        """Move the step's start x_start (n, 3) of every free particle that begins the step inside a still collider's
        thickness onto its contact plane, in place (pre-stabilization: PBD's ``ContactConstraints.stabilize`` on the
        contacts it starts inside): the end-of-step push out of it then adds no velocity (a cloth laid on the ground
        at z = 0 flew 0.7 m up). Moving colliders keep the velocity their motion gives. Returns the start from before
        the move for self-collision (``start_before_stabilizing``) where it moved any particle, else None."""
        still = [c for c in colliders if c.start is None]
        inside = point_contacts(x_start, x_start, self.model.inv_mass, still, self.pad2) if still else []
        if not inside:
            return None
        true_start = self.start_before_stabilizing(x_start)
        ContactConstraints(ContactSet(points=inside)).stabilize(x_start)
        return true_start

    def step(self, state: State, dt: float, colliders=(), measure: bool = True) -> StepStats:
        x, v = state.x, state.v
        h = float(dt)
        free = self.free
        self.attach_native_queries(colliders)
        x_start = x.copy()
        true_start = self._stabilize(x_start, colliders)
        y = x + h * v
        y[free] += (h * h) * self.gravity
        iterations = self.config.iterations
        probing = self.acceleration == "CHEBYSHEV" and h not in self.rho
        if probing:
            iterations = max(iterations, RHO_PROBE_ITERATIONS)
        checked = self.energy_check and not probing
        ceiling = max(iterations, ENERGY_CHECK_ITERATIONS) if checked else iterations
        # One iteration has nothing to accelerate (and Anderson's energy check would only cost time).
        accelerator = Plain() if probing or ceiling == 1 else self._accelerator(h)
        accelerator.start()
        with_energy = self.log_energy or accelerator.needs_energy or checked
        self.log = ProjectiveLog()
        self.accelerator = accelerator

        # The colliders whose contact planes go into the solve (module docstring): those reaching between corners, and
        # for a solid the ground too (normal-only planes; a cloth has no layer of elements for the projection to
        # squash, and would pay a factorization per changed contact set); ``planar`` also get held planes.
        planar = [c for c in colliders if c.reaches_between_corners] if self.contacts_in_solve else []
        in_solve = list(colliders) if self.contacts_in_solve and self.model.tet_count else planar
        x[:] = y  # pinned rows stay on their targets; free rows start at y (Bouaziz et al.'s initial guess)
        residual, done = 0.0, 0
        if len(free):
            x_ref = None if self.damping is None else x_start + h * rigid_velocity(x_start, v, self.model.mass, free)
            step = self._prepare(y, h, with_energy, x_ref)
            step.contacts = self._contacts(y, x_start, h, in_solve) if in_solve else None
            solve = self.factor(h, step.contacts)
            x_free = step.y_free.copy()
            start_free = x_start[free]
            if checked:
                start_energy, moving = self._start_energy(step, start_free, v[free])
                budget = start_energy + ENERGY_SLACK * moving + 1e-12 * abs(start_energy)
            targets, energy = self.local(step, x_free, with_energy)
            if with_energy:
                self.log.energies.append(energy)
            for k in range(ceiling):
                done = k + 1
                x_hat = self.global_solve(step, solve, targets)
                change = _norm(x_hat - x_free)
                residual = change / max(_norm(x_hat - start_free), 1e-300)
                self.log.residuals.append(residual)
                x_free = accelerator.next(x_free, x_hat, change)
                if k + 1 == ceiling and not with_energy:
                    break
                targets, new_energy = self.local(step, x_free, with_energy)
                if with_energy:
                    if accelerator.needs_energy and new_energy > energy:
                        # Peng et al. 2018's safeguard: the plain update never raises Phi.
                        accelerator.rejected()
                        x_free = x_hat
                        targets, new_energy = self.local(step, x_free, True)
                    energy = new_energy
                    self.log.energies.append(energy)
                if k + 1 >= iterations and (not checked or self._end_energy(step, x_free, start_free, energy) <= budget):
                    break
            x[free] = x_free
            if step.contacts is not None:
                step.contacts.apply_friction(x, x_start, free, self.mass_free, h)
            if probing:
                self.rho[h] = estimate_rho(self.log.residuals)

        solved = x.copy() if planar else None
        self.finish_step(x, x_start, v, h, colliders, true_start=true_start)
        if planar:
            self.held.remember(solved, x, self.model.inv_mass, planar, self.pad2)
        stats = measure_stats(self.model, x) if measure else StepStats()
        stats.iterations = done
        stats.pd_residual = residual
        return stats

    # ------------------------------------------------------------------ the energy check

    def _start_energy(self, step, start_free, v_free):
        """(Kinetic + gravitational + PD elastic energy, kinetic + elastic energy) [J] of the step's start: the free
        particles at start_free with velocities v_free (nf, 3), the pinned ones already where the step puts them, so
        that the elastic energy includes the work the pins do as they move (to first order in the step). The second
        figure, free of gravity's arbitrary zero, scales the slack."""
        _, phi = self.local(step, start_free, True)
        kinetic = 0.5 * float(np.einsum("i,ij,ij->", self.mass_free, v_free, v_free))
        elastic = self._elastic(step, start_free, phi)
        return kinetic + elastic + self._gravitational(start_free), kinetic + elastic

    def _end_energy(self, step, x_free, start_free, phi) -> float:
        """The same energy at the iterate x_free (nf, 3) whose Phi is phi, with v = (x - x^n)/h."""
        d = x_free - start_free
        kinetic = 0.5 / step.h2 * float(np.einsum("i,ij,ij->", self.mass_free, d, d))
        return kinetic + self._elastic(step, x_free, phi) + self._gravitational(x_free)

    def _elastic(self, step, x_free, phi) -> float:
        """PD's elastic energy at x_free: Phi without its inertia term, without the contact planes' penalty (the
        last ``local`` was at x_free), which stands in for a hard constraint: the end-of-step projection removes the
        depth it measures, and a start that lies a little inside a plane found from y must not raise the budget; and
        without the internal damping term, which is dissipation, not stored energy."""
        d = x_free - step.y_free
        contact = step.contact_energy if step.contacts is not None else 0.0
        return phi - 0.5 / step.h2 * float(np.einsum("i,ij,ij->", self.mass_free, d, d)) - contact - step.damping_energy

    def _gravitational(self, x_free) -> float:
        return -float(np.einsum("i,ij,j->", self.mass_free, x_free, self.gravity))


@dataclass
class _Step:
    """Per-step constants (see ``ProjectiveSolver._prepare``)."""

    y: np.ndarray
    h2: float
    y_free: np.ndarray
    b0: np.ndarray = None
    z_pinned: list = field(default_factory=list)
    quadratic: list = field(default_factory=list)
    contacts: object = None
    """PlaneContacts of the step, or None."""
    contact_energy: float = 0.0
    """The contact planes' share of Phi at the last ``local`` [J]."""
    x_ref: np.ndarray = None
    """The internal damping's reference positions (n, 3) [m], or None."""
    damping_energy: float = 0.0
    """The internal damping term's share of Phi at the last ``local`` [J]."""
    gas_force: np.ndarray = None
    """The gas's force (nf, 3) [N] on the free particles at the last ``local``'s iterate, or None without gas."""


class PlaneContacts:
    """Unilateral contact planes as Projective Dynamics constraints (Bouaziz et al. 2014, section 5, collisions).

    Contact j keeps free particle r_j on the side n_j . x >= o_j of its plane: E_j = w_j/2 |x_r - p_j|^2, p_j the
    projection of x_r onto that half-space (x_r itself where it is outside, so E_j = 0 there). A_j = e_r is one
    scalar row, so the global matrix gains w_j on r's diagonal: it changes only with the contact set, which is found
    once per step (``ProjectiveSolver._contacts``). A particle near two colliders carries two planes.

    A normal-only plane (a set marked so; all of them share the normal ``axis``) has E_j = w_j/2 (n . x_r - o_j)^2
    where inside, 0 outside: A_j = n^T e_r, so its weight enters only the matrix of the coordinate along n, and its
    target is w_j n n^T p_j. It holds the particle off the plane without touching its motion along it, which a plane
    of the scalar kind would drag (its weight holds the particle near its last iterate in every direction); the
    solver solves the global system in a frame with n as an axis (``ProjectiveSolver._contact_solve``). The ground's
    planes are of this kind, those of colliders reaching between corners (whose normals differ) of the scalar kind.

    sets: (collider, particles (k,), normals (k, 3), offsets (k,) [m], normal_only) of the step's point contacts;
    free_index (n,): each particle's row among the free ones; diagonal (nf,) [N/m]: each free particle's diagonal of
    the global matrix, whose multiple is a contact's weight (CONTACT_WEIGHT for a normal-only plane,
    SCALAR_CONTACT_WEIGHT for the others); axis (3,): the normal of the normal-only planes (None if there are none).
    """

    def __init__(self, sets, free_index, diagonal, axis=None):
        self.groups = []
        rows, normals, offsets, only, start = [], [], [], [], 0
        for collider, particles, normal, offset, normal_only in sets:
            rows.append(free_index[particles])
            normals.append(normal)
            offsets.append(offset)
            only.append(np.full(len(particles), bool(normal_only)))
            self.groups.append((collider, slice(start, start + len(particles))))
            start += len(particles)
        self.rows = np.concatenate(rows)
        self.normal = np.concatenate(normals)
        self.offset = np.concatenate(offsets)
        self.normal_only = np.concatenate(only)
        self.w = diagonal[self.rows] * np.where(self.normal_only, CONTACT_WEIGHT, SCALAR_CONTACT_WEIGHT)
        nf = len(free_index[free_index >= 0])
        self.diagonal = np.bincount(self.rows[~self.normal_only], self.w[~self.normal_only], nf)
        """Weights [N/m] (nf,) of the planes that weigh in every direction."""
        self.normal_diagonal = np.bincount(self.rows[self.normal_only], self.w[self.normal_only], nf)
        """Weights [N/m] (nf,) of the normal-only planes, in the matrix of the coordinate along ``axis``."""
        self.axis = None if axis is None or not self.normal_only.any() else np.asarray(axis, float)
        self.key = self.rows.tobytes() + self.normal_only.tobytes()
        self.AT = sp.csr_matrix((np.ones(len(self.rows)), (self.rows, np.arange(len(self.rows)))), shape=(nf, len(self.rows)))

    def depth(self, x_free):
        """How far (k,) [m] each particle x_free[r] (nf, 3) lies inside its plane, 0 outside."""
        return np.maximum(self.offset - np.einsum("ij,ij->i", x_free[self.rows], self.normal), 0.0)

    def project(self, x_free, with_energy=False):
        """Targets q = w p (k, 3) [N] at the free positions x_free (nf, 3) and, if asked, the planes' energy [J]."""
        depth = self.depth(x_free)
        q = self.w[:, None] * (x_free[self.rows] + depth[:, None] * self.normal)
        if self.axis is not None:  # normal-only: w n n^T p
            along = np.einsum("ij,ij->i", q[self.normal_only], self.normal[self.normal_only])
            q[self.normal_only] = along[:, None] * self.normal[self.normal_only]
        return q, (0.5 * float(np.dot(self.w, depth * depth)) if with_energy else 0.0)

    def apply_friction(self, x, x_start, free, mass_free, h):
        """Position-level Coulomb friction of the planes' normal forces (Macklin et al. 2014, section 6.1, as
        ``collision.response.collider_contacts``): each contact's tangential motion over the step relative to its
        collider loses up to friction * h^2 lambda / m [m], lambda = w * depth [N] its plane's force at the solve's end,
        in place on x (n, 3) (free: the free particles' indices (nf,), mass_free (nf,) [kg]). The solve leaves almost no
        depth for the end-of-step projection, whose friction follows its depth, so the contact's normal force sets it
        here."""
        depth = self.depth(x[free])
        for collider, rows in self.groups:
            if collider is None or collider.friction <= 0.0:
                continue
            r = self.rows[rows]
            pushed = (h * h) * self.w[rows] * depth[rows] / mass_free[r]
            touched = pushed > 0.0
            if not touched.any():
                continue
            i, n = free[r[touched]], self.normal[rows][touched]
            moved = x[i] - x_start[i] - collider.motion(x_start[i])
            tangential = moved - np.einsum("ij,ij->i", moved, n)[:, None] * n
            slide = np.sqrt(np.einsum("ij,ij->i", tangential, tangential))
            budget = collider.friction * pushed[touched]
            x[i] -= (np.where(slide > 1e-15, np.minimum(1.0, budget / np.maximum(slide, 1e-15)), 0.0))[:, None] * tangential


def rigid_velocity(x, v, mass, free) -> np.ndarray:
    """The rigid motion (n, 3) [m/s] of velocities v at positions x (both (n, 3)): v_c + omega x (x - c), with c and
    v_c the centre of mass of the free particles (indices ``free``; mass (n,) [kg]) and its velocity, omega = I^-1 L,
    L their angular momentum and I their inertia tensor about c (least squares: a straight line of particles keeps
    no spin about itself). Evaluated at every particle, the pinned ones too."""
    m = mass[free]
    total = float(m.sum())
    if total <= 0.0:
        return np.zeros_like(v)
    c = m @ x[free] / total
    v_c = m @ v[free] / total
    r = x[free] - c
    momentum = m @ np.cross(r, v[free] - v_c)
    inertia = np.eye(3) * float(np.einsum("i,ij,ij->", m, r, r)) - np.einsum("i,ij,ik->jk", m, r, r)
    omega = np.linalg.lstsq(inertia, momentum, rcond=1e-12)[0]
    return v_c + np.cross(omega, x - c)


def _frame_with_axis(axis) -> np.ndarray:
    """An orthonormal frame (3, 3) whose columns are two tangents and the unit vector ``axis`` (3,), last."""
    n = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1)
    return np.stack([t1, np.cross(n, t1), n], axis=1)


def _norm(a: np.ndarray) -> float:
    """Frobenius norm; einsum rather than BLAS (``np.linalg.norm``), which is slow on busy machines when threaded."""
    return float(np.sqrt(np.einsum("ij,ij->", a, a)))


def estimate_rho(residuals) -> float:
    """Spectral radius of the plain iteration from its relative residuals: the geometric mean ratio over the last
    half of the probe (the plain residual shrinks like rho^k once the slowest modes dominate), capped at RHO_MAX.

    Residuals at round-off level (below 1e-12) are left out: their ratios say nothing about the iteration.
    """
    r = np.asarray(residuals, float)
    r = r[: np.argmax(r < 1e-12)] if np.any(r < 1e-12) else r
    tail = r[len(r) // 2:]
    if len(tail) < 2 or tail[0] <= 0.0:
        return 0.0
    ratio = (tail[-1] / tail[0]) ** (1.0 / (len(tail) - 1))
    return float(min(max(ratio, 0.0), RHO_MAX))
