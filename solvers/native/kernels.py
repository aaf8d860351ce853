"""Python bindings of the native kernels: validate once, keep the arrays, call with raw pointers.

Every binding object is built once per solver (never per step). Its constructor checks each array it hands to C:
dtype (float64 or int64 exactly), C-contiguity, shape, and every particle index within [0, n); any problem raises
ValueError naming the array (a wrong index in C would write outside x and crash Blender). It then keeps those
arrays alive in attributes and caches their addresses, so a call is one ctypes call of ~1 us plus the check of
the positions array x passed in (dtype, contiguity, shape: the one array that comes from outside on each call).

Each binding has a NumPy twin that computes the same thing with the same operations in the same order, and
tests/test_native_*.py hold them equal bit for bit:
- ``DistanceSweep``  <-> ``constraints.distance.DistanceColourSweep`` (``DistanceConstraints.corrections`` per colour);
- ``BendingSweep``   <-> ``constraints.bending.BendingColourSweep``;
- ``Tethers``        <-> ``constraints.tether.PinTethers.apply``;
- ``TetStrainSweep`` <-> ``constraints.tet_strain.TetStrainColourSweep`` (``sweep``, ``symmetric_sweep``);
- ``FieldLoads``     <-> ``forces.loads.BodyLoads.apply`` with fields (``fields.field_terms``, ``air_velocity``),
  bit for bit except a falloff's pow / acos (the C library's, within an ulp of NumPy's).
"""
import functools

import numpy as np

from .library import pointer

F64, I64 = np.dtype(np.float64), np.dtype(np.int64)


def checked(name: str, array, dtype, shape: tuple) -> np.ndarray:
    """``array`` itself if it is an ndarray of exactly ``dtype``, C-contiguous, of ``shape`` (None in shape: any
    length); else ValueError naming ``name`` and what is wrong."""
    if not isinstance(array, np.ndarray):
        raise ValueError(f"{name}: expected a numpy array, got {type(array).__name__}")
    if array.dtype != dtype:
        raise ValueError(f"{name}: dtype must be {np.dtype(dtype).name}, got {array.dtype.name}")
    if len(array.shape) != len(shape) or any(want is not None and got != want for got, want in zip(array.shape, shape)):
        wanted = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name}: shape must be {wanted}, got {array.shape}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name}: must be C-contiguous")
    return array


def checked_indices(name: str, array, count: int, shape: tuple) -> np.ndarray:
    """``checked`` int64 indices, each within [0, count)."""
    array = checked(name, array, I64, shape)
    # One pass for both bounds: read as unsigned, a negative index is larger than any count.
    if array.size and array.view(np.uint64).max() >= int(count):
        bad = array[(array < 0) | (array >= count)].ravel()[0]
        raise ValueError(f"{name}: index {bad} out of range [0, {count})")
    return array


def checked_colours(colour_start, constraint_count: int, indices: np.ndarray) -> np.ndarray:
    """colour_start (C + 1,) int64 from 0 to constraint_count, non-decreasing, and no particle twice in one colour
    (which would break the Gauss-Seidel order the NumPy twin follows, not memory safety)."""
    colour_start = checked("colour_start", colour_start, I64, (None,))
    if len(colour_start) < 1 or colour_start[0] != 0 or colour_start[-1] != constraint_count:
        raise ValueError(f"colour_start must run from 0 to {constraint_count}, got {colour_start[:1]} .. {colour_start[-1:]}")
    if np.any(np.diff(colour_start) < 0):
        raise ValueError("colour_start must be non-decreasing")
    for c, (a, b) in enumerate(zip(colour_start[:-1], colour_start[1:])):
        particles = indices[a:b].ravel()
        if len(np.unique(particles)) != len(particles):
            raise ValueError(f"colour {c} has a particle in two of its constraints")
    return colour_start


class _PositionsCheck:
    """The per-call check of x (n, 3) float64 C-contiguous, remembering the last array's address (an array keeps its
    buffer for life, and holding it here keeps it alive)."""

    def __init__(self, particle_count: int):
        self.n = particle_count
        self.last, self.address = None, 0

    def __call__(self, x) -> int:
        if x is self.last:
            return self.address
        checked("x", x, F64, (self.n, 3))
        self.last, self.address = x, pointer(x)
        return self.address


def _concatenate_into(out: np.ndarray, parts) -> None:
    np.concatenate([np.broadcast_to(p, (len(q),) + out.shape[1:]) if np.ndim(p) == 0 else p
                    for p, q in parts], out=out)


class DistanceSweep:
    """A Gauss-Seidel sweep of XPBD distance constraints in C (``softsim_distance_sweep``).

    library: a ``library.NativeLibrary``; constraints: a ``constraints.DistanceConstraints``; colours: list of int
    arrays of constraint indices, no two constraints of a colour sharing a particle; particle_count: n.
    The constraints are stored in colour order; ``sweep`` projects colour after colour, in place on x.
    Multipliers: ``new_multipliers()`` gives one (m_c,) array per colour, views of one buffer the C code reads
    directly (any other list of arrays of those shapes works too, at the cost of a copy in and out).
    """

    def __init__(self, library, constraints, colours, particle_count: int):
        self.function = library.softsim_distance_sweep
        self.library = library  # keeps the shared library loaded while this object lives
        colours = [np.asarray(c, np.int64) for c in colours]
        order = np.concatenate(colours) if colours else np.zeros(0, np.int64)
        # The subsets the NumPy twin projects: alpha and 1 / (w_i + w_j + alpha) come from their own code, so both
        # paths divide the same numbers.
        self.subsets = [constraints.subset(c) for c in colours]
        counts = [len(c) for c in colours]
        self.bind(particle_count, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                  np.ascontiguousarray(constraints.indices[order]), np.ascontiguousarray(constraints.rest_length[order]),
                  np.ascontiguousarray(constraints.w_i[order]), np.ascontiguousarray(constraints.w_j[order]))

    def bind(self, particle_count, colour_start, edges, rest_length, w_i, w_j) -> None:
        """Validate and keep the arrays (see the class docstring for shapes); ValueError on anything wrong."""
        m = len(edges) if isinstance(edges, np.ndarray) else -1
        self.edges = checked_indices("edges", edges, particle_count, (m, 2))
        self.colour_start = checked_colours(colour_start, m, self.edges)
        self.rest_length = checked("rest_length", rest_length, F64, (m,))
        self.w_i, self.w_j = checked("w_i", w_i, F64, (m,)), checked("w_j", w_j, F64, (m,))
        self.alpha, self.inverse_denominator, self.lam = np.zeros(m), np.zeros(m), np.zeros(m)
        starts = self.colour_start
        self.views = [self.lam[a:b] for a, b in zip(starts[:-1], starts[1:])]
        self.positions = _PositionsCheck(particle_count)
        self.colour_count = len(starts) - 1
        self._key = None
        self._pointers = [pointer(a) for a in (self.colour_start, self.edges, self.rest_length, self.w_i, self.w_j,
                                               self.alpha, self.inverse_denominator, self.lam)]

    def new_multipliers(self) -> list:
        """Zeroed multipliers, one (m_c,) view per colour of the buffer the kernel uses directly."""
        self.lam.fill(0.0)
        return list(self.views)

    def _coefficients(self, dt: float, compliant: bool) -> None:
        """alpha and 1 / (w_i + w_j + alpha) for this dt, from each colour's own NumPy code (once per dt)."""
        if self._key == (dt, compliant):
            return
        alphas = [(s.alpha(dt) if compliant else 0.0) for s in self.subsets]
        _concatenate_into(self.alpha, zip(alphas, self.subsets))
        _concatenate_into(self.inverse_denominator, [(s._inverse_denominator(a), s) for s, a in zip(self.subsets, alphas)])
        self._key = (dt, compliant)

    def sweep(self, x, dt: float, lams, compliant: bool) -> None:
        """One sweep in place on x (n, 3) float64 C-contiguous [m]; lams: one (m_c,) multiplier array per colour
        (updated); compliant: XPBD's alpha = compliance / dt^2 (dt [s]), else PBD's hard projection."""
        address = self.positions(x)
        self._coefficients(dt, compliant)
        # lams may go on with the tail's multipliers (``_Sweep.new_multipliers``): only the first len(views) are ours.
        direct = len(lams) >= len(self.views) and all(a is b for a, b in zip(lams, self.views))
        if not direct:
            _concatenate_into(self.lam, zip(lams, self.views))
        p = self._pointers
        self.function(address, self.colour_count, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], 1 if compliant else 0)
        if not direct:
            for lam, view in zip(lams, self.views):
                lam[...] = view


class BendingSweep:
    """A Gauss-Seidel sweep of isometric bending constraints in C (``softsim_bending_sweep``), always compliant.

    library: a ``library.NativeLibrary``; constraints: a ``constraints.BendingConstraints``; colours: list of int
    arrays of hinge indices sharing no particle; particle_count: n. Multipliers are (m_c, 3) per colour
    (``new_multipliers``: views of the kernel's own buffer).
    """

    def __init__(self, library, constraints, colours, particle_count: int):
        self.function = library.softsim_bending_sweep
        self.library = library
        colours = [np.asarray(c, np.int64) for c in colours]
        order = np.concatenate(colours) if colours else np.zeros(0, np.int64)
        self.subsets = [constraints.subset(c) for c in colours]
        counts = [len(c) for c in colours]
        # Each hinge's corners in increasing particle order: the NumPy twin's y = A x sums a row of a canonical
        # (column-sorted) CSR matrix, so the C loop adds the corners in that order too, and rounds the same way.
        hinges = constraints.indices[order]
        corners = np.argsort(hinges, axis=1, kind="stable")
        self.bind(particle_count, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                  np.array([int(s.curved) for s in self.subsets], np.int64),
                  np.ascontiguousarray(np.take_along_axis(hinges, corners, axis=1)),
                  np.ascontiguousarray(np.take_along_axis(constraints.K[order], corners, axis=1)),
                  np.ascontiguousarray(np.take_along_axis(constraints.wK[order], corners, axis=1)),
                  np.ascontiguousarray(constraints.rest_norm[order]))

    def bind(self, particle_count, colour_start, curved, hinges, K, wK, rest_norm) -> None:
        """Validate and keep the arrays: colour_start (C + 1,), curved (C,) int64 0/1, hinges (m, 4) int64 in [0, n),
        K and wK (m, 4) float64, rest_norm (m,) float64 [m]; ValueError on anything wrong."""
        m = len(hinges) if isinstance(hinges, np.ndarray) else -1
        self.hinges = checked_indices("hinges", hinges, particle_count, (m, 4))
        self.colour_start = checked_colours(colour_start, m, self.hinges)
        self.curved = checked("curved", curved, I64, (len(self.colour_start) - 1,))
        self.K, self.wK = checked("K", K, F64, (m, 4)), checked("wK", wK, F64, (m, 4))
        self.rest_norm = checked("rest_norm", rest_norm, F64, (m,))
        self.alpha, self.inverse_denominator, self.lam = np.zeros(m), np.zeros(m), np.zeros((m, 3))
        starts = self.colour_start
        self.views = [self.lam[a:b] for a, b in zip(starts[:-1], starts[1:])]
        self.positions = _PositionsCheck(particle_count)
        self.colour_count = len(starts) - 1
        self._dt = None
        self._pointers = [pointer(a) for a in (self.colour_start, self.curved, self.hinges, self.K, self.wK,
                                               self.rest_norm, self.alpha, self.inverse_denominator, self.lam)]

    def new_multipliers(self) -> list:
        """Zeroed multipliers, one (m_c, 3) view per colour of the buffer the kernel uses directly."""
        self.lam.fill(0.0)
        return list(self.views)

    def _coefficients(self, dt: float) -> None:
        """alpha and 1 / (s + alpha) for this dt, from each colour's own NumPy code (once per dt)."""
        if self._dt != dt:
            alphas = [s.alpha(dt) for s in self.subsets]
            _concatenate_into(self.alpha, zip(alphas, self.subsets))
            _concatenate_into(self.inverse_denominator, [(s._inverse_denominator(a), s) for s, a in zip(self.subsets, alphas)])
            self._dt = dt

    def sweep(self, x, dt: float, lams, compliant: bool = True) -> None:
        """One sweep in place on x (n, 3) float64 C-contiguous [m]; lams: one (m_c, 3) array per colour (updated).
        Bending is always compliant (``BendingConstraints.always_compliant``): ``compliant`` is ignored."""
        address = self.positions(x)
        self._coefficients(dt)
        # lams may go on with the tail's multipliers (``_Sweep.new_multipliers``): only the first len(views) are ours.
        direct = len(lams) >= len(self.views) and all(a is b for a, b in zip(lams, self.views))
        if not direct:
            _concatenate_into(self.lam, zip(lams, self.views))
        p = self._pointers
        self.function(address, self.colour_count, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])
        if not direct:
            for lam, view in zip(lams, self.views):
                lam[...] = view


class Tethers:
    """Pin tethers in C (``softsim_tether_apply``): the ``PinTethers.apply`` of ``tethers`` (a
    ``constraints.PinTethers``, kept as ``twin``), its slots concatenated in order. ``slots`` and ``apply_reference``
    are the twin's."""

    def __init__(self, library, tethers, particle_count: int):
        self.function = library.softsim_tether_apply
        self.library = library
        self.twin, self.slots = tethers, tethers.slots
        self.apply_reference = tethers.apply_reference  # the row-wise NumPy form (tests compare against it)
        counts = [len(particle) for particle, _, _ in tethers.slots]
        concatenated = [np.concatenate([slot[k] for slot in tethers.slots]) if tethers.slots else np.zeros(0)
                        for k in range(3)]
        self.bind(particle_count, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                  np.ascontiguousarray(concatenated[0], np.int64), np.ascontiguousarray(concatenated[1], np.int64),
                  np.ascontiguousarray(concatenated[2], np.float64))

    def bind(self, particle_count, slot_start, particle, pin, limit) -> None:
        """Validate and keep: slot_start (S + 1,) int64, particle and pin (t,) int64 in [0, n), limit (t,) float64 [m];
        no particle twice in a slot and no pin among the tethered particles (the kernel's independence within a
        slot); ValueError on anything wrong."""
        t = len(particle) if isinstance(particle, np.ndarray) else -1
        self.particle = checked_indices("particle", particle, particle_count, (t,))
        self.pin = checked_indices("pin", pin, particle_count, (t,))
        self.limit = checked("limit", limit, F64, (t,))
        self.slot_start = checked_colours(slot_start, t, self.particle[:, None])
        if np.intersect1d(self.particle, self.pin).size:
            raise ValueError("a pin is also a tethered particle")
        self.positions = _PositionsCheck(particle_count)
        self.slot_count = len(self.slot_start) - 1
        # Scratch of the kernel: when each particle was last projected, when each slot last began a visit.
        self.stamp, self.seen = np.zeros(particle_count, np.int64), np.zeros(max(self.slot_count, 1), np.int64)
        self._pointers = [pointer(a) for a in (self.slot_start, self.particle, self.pin, self.limit, self.stamp,
                                               self.seen)]

    def apply(self, x: np.ndarray, passes: int = 3) -> int:
        """``PinTethers.apply`` in place on x (n, 3) float64 C-contiguous [m]; returns the passes run."""
        p = self._pointers
        return self.function(self.positions(x), self.slot_count, p[0], p[1], p[2], p[3], int(passes), p[4], p[5])


# ------------------------------------------------------------------------------------------------------- solids


class TetStrainSweep:
    """A Gauss-Seidel sweep of Neo-Hookean tet constraint pairs in C (``softsim_tet_strain_sweep`` and
    ``softsim_tet_strain_symmetric_sweep``), the twin of ``constraints.tet_strain.TetStrainColourSweep`` with the
    same methods (``sweep`` forward or reversed, ``symmetric_sweep``, ``set_damping``), always compliant.

    library: a ``library.NativeLibrary``; constraints: a ``constraints.TetStrainConstraints``; colours: list of int
    arrays of tet indices sharing no particle; particle_count: n. Multipliers are (m_c, 2) per colour
    (``new_multipliers``: views of the kernel's own buffer).
    """

    def __init__(self, library, constraints, colours, particle_count: int):
        self.function = library.softsim_tet_strain_sweep
        self.symmetric_function = library.softsim_tet_strain_symmetric_sweep
        self.library = library
        colours = [np.asarray(c, np.int64) for c in colours]
        # The twin's per-colour subsets: D, w, kappa and alpha come from their own code, so both paths use the same
        # numbers.
        self.subsets = [constraints.subset(c) for c in colours]
        counts = [len(c) for c in colours]

        def joined(name, shape):
            parts = [getattr(s, name) for s in self.subsets]
            return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros((0,) + shape), np.float64)

        order = np.concatenate(colours) if colours else np.zeros(0, np.int64)
        self.bind(particle_count, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                  np.ascontiguousarray(constraints.indices[order]), joined("D", (4, 3)), joined("w", (4,)),
                  joined("kappa", ()))

    def bind(self, particle_count, colour_start, tets, D, w, kappa) -> None:
        """Validate and keep the arrays: colour_start (C + 1,) int64, tets (m, 4) int64 in [0, n), D (m, 4, 3) [1/m],
        w (m, 4) [1/kg], kappa (m,) float64; ValueError naming the array on anything wrong."""
        m = len(tets) if isinstance(tets, np.ndarray) else -1
        self.tets = checked_indices("tets", tets, particle_count, (m, 4))
        self.colour_start = checked_colours(colour_start, m, self.tets)
        self.D = checked("D", D, F64, (m, 4, 3))
        self.w = checked("w", w, F64, (m, 4))
        self.kappa = checked("kappa", kappa, F64, (m,))
        self.n, self.m = particle_count, m
        self.alpha, self.lam, self.lam_back = np.zeros((m, 4)), np.zeros((m, 2)), np.zeros((m, 2))
        self.x_back = np.zeros((particle_count, 3))  # the backward half of symmetric_sweep
        starts = self.colour_start
        self.views = [self.lam[a:b] for a, b in zip(starts[:-1], starts[1:])]
        self.positions = _PositionsCheck(particle_count)
        self.colour_count = len(starts) - 1
        self._dt = None
        self.damping, self.x_prev, self._prev_address = 0.0, None, None
        self._pointers = [pointer(a) for a in (self.colour_start, self.tets, self.D, self.w, self.kappa, self.alpha,
                                               self.lam, self.x_back, self.lam_back)]

    def new_multipliers(self) -> list:
        """Zeroed multipliers, one (m_c, 2) view per colour of the buffer the kernel uses directly."""
        self.lam.fill(0.0)
        return list(self.views)

    def set_damping(self, gamma: float, x_prev=None) -> None:
        """``TetStrainConstraints.set_damping`` for the sweep: gamma = tau / dt, x_prev (n, 3) float64 C-contiguous,
        the step's start positions (kept and read by the kernel while gamma > 0); ValueError naming x_prev."""
        self.damping = float(gamma)
        if self.damping > 0.0:
            self.x_prev = checked("x_prev", x_prev, F64, (self.n, 3))
            self._prev_address = pointer(self.x_prev)
        else:
            self.x_prev, self._prev_address = None, None

    def _alphas(self, dt: float) -> None:
        """(alpha_D, alpha_H, alpha_D, alpha_H where finite else 0) per tet, from each colour's own NumPy code by
        ``tet_strain.alpha_rows``, as ``TetStrainColourSweep._alphas`` (once per dt)."""
        if self._dt == dt:
            return
        from ..constraints.tet_strain import alpha_rows

        for s, a, b in zip(self.subsets, self.colour_start[:-1], self.colour_start[1:]):
            self.alpha[a:b] = alpha_rows(s.alpha(dt)).T
        self._dt = dt

    def _enter(self, x, dt, lams):
        address = self.positions(x)
        self._alphas(dt)
        # lams may go on with the tail's multipliers (``_Sweep.new_multipliers``): only the first len(views) are ours.
        direct = len(lams) >= len(self.views) and all(a is b for a, b in zip(lams, self.views))
        if not direct:
            _concatenate_into(self.lam, zip(lams, self.views))
        return address, direct

    def _leave(self, lams, direct) -> None:
        if not direct:
            for lam, view in zip(lams, self.views):
                lam[...] = view

    def sweep(self, x, dt: float, lams, compliant: bool = True, reverse: bool = False) -> None:
        """One sweep in place on x (n, 3) float64 C-contiguous [m], colours first to last (reverse: last to first);
        lams: one (m_c, 2) array per colour (updated). Always compliant: ``compliant`` is ignored."""
        address, direct = self._enter(x, dt, lams)
        p = self._pointers
        self.function(address, self.colour_count, p[0], p[1], p[2], p[3], p[4], p[5], p[6], self.damping,
                      self._prev_address, 1 if reverse else 0)
        self._leave(lams, direct)

    def symmetric_sweep(self, x, dt: float, lams) -> None:
        """The mean of a forward and a backward sweep, both from x (positions and multipliers), as
        ``TetStrainColourSweep.symmetric_sweep``."""
        address, direct = self._enter(x, dt, lams)
        p = self._pointers
        self.symmetric_function(address, self.n, self.colour_count, p[0], p[1], p[2], p[3], p[4], p[5], p[6],
                                self.damping, self._prev_address, p[7], p[8])
        self._leave(lams, direct)
class AnalyticContacts:
    """The contact handling of a position-based step against analytic colliders (ground planes and spheres, still or
    moving), and the step's prediction and velocity update, in C (``src/contact.c``). NumPy twins:

    - ``predict``  <-> the top of ``PositionBasedSolver.step`` (v += dt g on free particles, x_prev = x, x += dt v);
    - ``find``     <-> ``collision.find_contacts`` (point contacts; analytic colliders have no face pairs);
    - ``project``  <-> ``collision.response.collider_contacts.ContactConstraints.project``;
    - ``friction`` <-> ``ContactConstraints.apply_friction``;
    - ``finish``   <-> ``collision.response.collider_contacts.resolve_collider_contacts`` when it takes one sweep
      (vertices, the sphere face push of ``collision.response.faces.resolve_sphere_faces``, vertices again);
    - ``velocity`` <-> the end of ``ProjectedContactSolver.finish_step`` (v = (x - x_prev) / dt, damping).

    Built once per solver: inv_mass (n,) float64 [1/kg], pad2 (n,) float64 [m^2] or None (the sphere pads), triangles
    (t, 3) int64 in [0, n) (the collision triangles of the face push). ``pose(colliders)`` before each step fills the
    collider table (``supports`` says whether a list can be posed). The step's contacts and the face push's work
    space are the binding's own buffers; ``x_prev`` is the previous positions buffer ``predict`` fills.
    """

    ROW = 16  # SOFTSIM_COLLIDER_ROW

    def __init__(self, library, inv_mass, pad2, triangles):
        self.library = library
        self.functions = [getattr(library, name) for name in (
            "softsim_predict", "softsim_velocity", "softsim_contacts_find", "softsim_contacts_project",
            "softsim_contacts_friction", "softsim_contacts_finish", "softsim_contacts_deep_faces",
            "softsim_contacts_finish_sweeps", "softsim_contacts_stabilize")]
        triangles = np.ascontiguousarray(np.asarray(triangles, np.int64).reshape(-1, 3))
        pairs = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
        edges = np.ascontiguousarray(np.unique(pairs, axis=0)) if len(pairs) else np.zeros((0, 2), np.int64)
        self.bind(len(inv_mass), inv_mass, pad2, triangles, edges)

    def bind(self, particle_count, inv_mass, pad2, triangles, edges) -> None:
        """Validate and keep: inv_mass (n,) float64, pad2 (n,) float64 or None, triangles (t, 3) and edges (e, 2)
        int64 in [0, n) (edges: the triangles' unique edges, for the face push's bound on the longest edge)."""
        from ..collision.response import collider_contacts as response
        from ..collision.response import faces

        n = particle_count
        self.n = n
        self.inv_mass = checked("inv_mass", inv_mass, F64, (n,))
        self.pad2 = None if pad2 is None else checked("pad2", pad2, F64, (n,))
        self.triangles = checked_indices("triangles", triangles, n, (len(triangles) if isinstance(triangles, np.ndarray) else -1, 3))
        self.edges = checked_indices("edges", edges, n, (len(edges) if isinstance(edges, np.ndarray) else -1, 2))
        self.settings = np.array([faces.FACE_TOLERANCE, response.SWEEP_LENGTH, response.MAX_SWEEPS,
                                  faces.REFIT_GROWTH], np.float64)
        self.face_passes = int(faces.FACE_PASSES)
        t = len(self.triangles)
        self.x_prev = np.zeros((n, 3))
        self.sweep_start, self.sweep_end = np.zeros((n, 3)), np.zeros((n, 3))
        self.topology_state, self.x0 = np.zeros(2), np.zeros((n, 3))
        self.work_i, self.work_d = np.zeros(t + 2 * n, np.int64), np.zeros(8 * t + 5 * n)
        self.positions = _PositionsCheck(n)
        self.velocities = _PositionsCheck(n)
        self.count = 0
        self._capacity(1)
        self._posed = None
        self.deep_rho = None

    def _capacity(self, colliders: int) -> None:
        """The collider table and the contact buffers for this many colliders (n contacts each at most)."""
        colliders = max(colliders, 1)
        cap = self.n * colliders
        self.table = np.zeros((colliders, self.ROW))
        self.rho = np.zeros(colliders)
        self.particle, self.owner = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.normal, self.offset, self.pushed = np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap)
        # resolve_contacts' own contacts (the step's stay readable for tests)
        self.r_particle, self.r_owner = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.r_normal, self.r_distance, self.r_scratch = np.zeros((cap, 3)), np.zeros(cap), np.zeros(cap)
        self.collider_count, self.count = 0, 0
        self._p = {name: pointer(getattr(self, name)) for name in (
            "inv_mass", "triangles", "edges", "settings", "x_prev", "topology_state", "x0", "work_i", "work_d", "table",
            "rho", "particle", "owner", "normal", "offset", "pushed", "r_particle", "r_owner", "r_normal", "r_distance",
            "r_scratch", "sweep_start", "sweep_end")}
        self._p["pad2"] = None if self.pad2 is None else pointer(self.pad2)

    @staticmethod
    def supports(colliders) -> bool:
        """Whether every collider is a ground plane or a sphere (exactly those classes: a subclass may answer the
        protocol differently)."""
        ground, sphere = _analytic_types()
        return all(type(c) is ground or type(c) is sphere for c in colliders)

    def pose(self, colliders) -> None:
        """Fill the collider table from posed colliders (``Collider.over``); a list of the same objects as last time
        is not read again."""
        colliders = list(colliders)
        if self._posed is not None and len(self._posed) == len(colliders) and all(
                a is b for a, b in zip(self._posed, colliders)):
            return
        if len(colliders) > len(self.table):
            self._capacity(len(colliders))
        collider_rows(self.table, colliders)
        self.collider_count = len(colliders)
        self._posed = colliders
        self.deep_rho = None

    def predict(self, x, v, gravity, dt: float) -> np.ndarray:
        """v += dt g on free particles, x_prev = x, x += dt v, in place on x and v (n, 3); gravity (3,) float64
        [m/s^2]. Returns x_prev (the binding's buffer, valid until the next predict)."""
        gravity = checked("gravity", gravity, F64, (3,))
        self.functions[0](self.positions(x), self.velocities(v), self._p["x_prev"], self.n, self._p["inv_mass"],
                          pointer(gravity), float(dt))
        return self.x_prev

    def velocity(self, x, v, dt: float, damping_factor: float = None) -> None:
        """v = (x - x_prev) / dt, times damping_factor unless None, x_prev the buffer of ``predict``."""
        self.functions[1](self.positions(x), self._p["x_prev"], self.velocities(v), self.n, float(dt),
                          1.0 if damping_factor is None else float(damping_factor), 0 if damping_factor is None else 1)

    def _previous(self, x_prev) -> int:
        if x_prev is self.x_prev:
            return self._p["x_prev"]
        checked("x_prev", x_prev, F64, (self.n, 3))
        return pointer(x_prev)

    def find(self, x, x_prev) -> int:
        """The step's point contacts of the posed colliders at the prediction x from x_prev; returns their count."""
        p = self._p
        self.count = self.functions[2](self.positions(x), self._previous(x_prev), self.n, p["inv_mass"], p["pad2"],
                                       self.collider_count, p["table"], 1, p["particle"], p["owner"], p["normal"],
                                       p["offset"], p["pushed"])
        return self.count

    def stabilize(self, x_prev) -> None:
        """Each contact of ``find`` with a still collider whose start lies below its plane: that start put on it
        (``ContactConstraints.stabilize``)."""
        p = self._p
        self.functions[8](self._previous(x_prev), self.count, p["table"], p["particle"], p["owner"], p["normal"],
                          p["offset"])

    def project(self, x) -> None:
        """Every contact of ``find`` below its plane put back on it (``ContactConstraints.project``)."""
        p = self._p
        self.functions[3](self.positions(x), self.count, p["particle"], p["normal"], p["offset"], p["pushed"])

    def friction(self, x, x_prev) -> None:
        """``ContactConstraints.apply_friction`` of the contacts of ``find``."""
        p = self._p
        self.functions[4](self.positions(x), self._previous(x_prev), self.count, p["table"], p["particle"], p["owner"],
                          p["normal"], p["pushed"])

    def finish(self, x, x_prev) -> int:
        """``resolve_collider_contacts`` in place on x when the step takes one sweep; returns the sweeps it takes
        (more than 1: x untouched, the caller runs the NumPy twin)."""
        p = self._p
        return self.functions[5](self.positions(x), self._previous(x_prev), self.n, p["inv_mass"], p["pad2"],
                                 self.collider_count, p["table"], len(self.triangles), p["triangles"], len(self.edges),
                                 p["edges"], self.face_passes, p["settings"], p["r_particle"], p["r_owner"],
                                 p["r_normal"], p["r_distance"], p["r_scratch"], p["topology_state"], p["x0"],
                                 p["work_i"], p["work_d"])

    def finish_sweeps(self, x, x_prev, posed) -> None:
        """``resolve_collider_contacts`` walked in sweeps, in place on x (n, 3) [m] from x_prev (n, 3): ``posed`` holds
        per sweep k (as many as ``finish`` returned) the ground planes and spheres posed over it
        (``collider_contacts.sweep_poses``, the same count and kinds in every sweep)."""
        sweeps = len(posed)
        count = len(posed[0]) if sweeps else 0
        if sweeps < 1 or any(len(colliders) != count for colliders in posed):
            raise ValueError(f"finish_sweeps: one list of colliders per sweep, all of one length, got {posed!r}")
        if count > len(self.table):
            self._capacity(count)
        tables = np.zeros((sweeps, count, self.ROW))
        for table, colliders in zip(tables, posed):
            collider_rows(table, colliders)
        p = self._p
        self.functions[7](self.positions(x), self._previous(x_prev), self.n, p["inv_mass"], p["pad2"], count,
                          pointer(tables), sweeps, len(self.triangles), p["triangles"], len(self.edges), p["edges"],
                          self.face_passes, p["settings"], p["r_particle"], p["r_owner"], p["r_normal"],
                          p["r_distance"], p["r_scratch"], p["topology_state"], p["x0"], p["work_i"], p["work_d"],
                          p["sweep_start"], p["sweep_end"])

    def resolve(self, x, x_prev, colliders) -> None:
        """``collider_contacts.resolve_collider_contacts`` of ``colliders`` (ground planes and spheres, posed here) in
        place on x (n, 3) [m] from x_prev (n, 3): ``finish``, and for a step it says takes several sweeps,
        ``finish_sweeps`` over ``collider_contacts.sweep_poses``."""
        from ..collision.response.collider_contacts import sweep_poses

        self.pose(colliders)
        sweeps = self.finish(x, x_prev)
        if sweeps > 1:
            self.finish_sweeps(x, x_prev, sweep_poses(colliders, sweeps))

    def deep_faces(self, x, x_prev, allowance: float) -> int:
        """``collider_contacts.resolve_deep_faces`` of the posed colliders in place on x (n, 3) [m] from x_prev (n, 3):
        every sphere's face push with its thickness lowered by ``allowance`` [m] (contact radius radius + (thickness
        - allowance), the twin's ``replace`` then ``radius + thickness``); ground planes have none. Returns the
        contacts found. Shares the face push's cached bound on the longest edge with ``finish``, as the twins share
        ``faces._topology``'s entry of one triangles array."""
        p = self._p
        allowance = float(allowance)
        if self.deep_rho != allowance:  # the table's radii for this allowance, once per pose
            for k, c in enumerate(self._posed or ()):
                self.rho[k] = c.radius + (c.thickness - allowance) if self.table[k, 0] == 1.0 else 0.0
            self.deep_rho = allowance
        return self.functions[6](self.positions(x), self._previous(x_prev), self.n, p["inv_mass"], self.collider_count,
                                 p["table"], p["rho"], len(self.triangles), p["triangles"], len(self.edges),
                                 p["edges"], self.face_passes, p["settings"], p["topology_state"], p["x0"],
                                 p["work_i"], p["work_d"])


def collider_rows(table, colliders) -> None:
    """Fill rows of the collider table (k, SOFTSIM_COLLIDER_ROW) float64 from ground planes and spheres (their
    posed objects, ``Collider.over``), one row each in order (``src/contact.c`` documents the row)."""
    from ..collision.colliders.shapes import PAD_LIMIT, GroundPlane

    for row, c in zip(table, colliders):
        row.fill(0.0)
        start = c.start
        row[1] = 0.0 if start is None else 1.0
        row[2] = float(c.friction)
        if type(c) is GroundPlane:
            row[3:6] = c.normal
            row[6] = c.point @ c.normal + c.thickness  # GroundPlane.distance's offset, in its own expression
            if start is not None:
                row[7:10] = c.point - start.point
        else:
            rho = c.radius + c.thickness
            row[0] = 1.0
            row[3:6] = c.center
            row[6] = rho
            row[7] = ((1.0 + PAD_LIMIT) ** 2 - 1.0) * rho * rho  # padded_radius's cap
            if start is not None:
                row[8:11] = start.center
                row[11] = c.radius - start.radius
                row[12:15] = c.center - start.center


KIND_MESH = 2.0
"""The kind ([0]) of a mesh collider's row in a collider table (src/softsim_native.h SOFTSIM_KIND_MESH)."""


@functools.lru_cache(maxsize=1)
def _analytic_types():
    """(GroundPlane, Sphere), imported once: the colliders' checks run several times a substep, and an import statement
    in a function runs the import machinery at each call."""
    from ..collision.colliders.shapes import GroundPlane, Sphere

    return GroundPlane, Sphere


@functools.lru_cache(maxsize=1)
def _mesh_collider_type():
    """MeshCollider, imported once (``_analytic_types`` says why)."""
    from ..collision.colliders.mesh_collider import MeshCollider

    return MeshCollider


@functools.lru_cache(maxsize=1)
def _keep_out_mesh_structure():
    import ctypes

    from .library import _D, _P

    class KeepOutMesh(ctypes.Structure):
        """src/softsim_native.h SoftsimKeepOutMesh, field for field."""
        _fields_ = [("vertices", _P), ("triangles", _P), ("grid", _P), ("dims", _P), ("cell_start", _P), ("entry", _P),
                    ("stamp", _P), ("thickness", _D), ("search_limit", _D)]

    return KeepOutMesh


class KeepOut:
    """``self_contact.SelfCollision._keep_out_of_colliders`` and the resting test of ``resolve_beside_colliders`` over
    ground planes, spheres and mesh colliders in C (``softsim_keep_out``, ``softsim_resting``, ``src/contact.c``), bit
    for bit: a mesh collider's rows ask ``softsim_mesh_closest`` through its native queries (``_Shared.native``), the
    nearest triangles ``MeshCollider.distance_and_normal`` and ``within`` get from them.

    library: a ``library.NativeLibrary``; particle_count: n; pad2 (n,) float64 [m^2] or None (the sphere pads).
    ``pose(colliders)`` fills the collider table (a list of the same objects as last time is not read again);
    ``run`` moves the particles back and updates the response's inverse masses and heavy flags."""

    ROW = AnalyticContacts.ROW

    def __init__(self, library, particle_count: int, pad2=None):
        self.function = library.softsim_keep_out
        self.library = library
        self.n = int(particle_count)
        self.pad2 = None if pad2 is None else checked("pad2", pad2, F64, (self.n,))
        self.table = np.zeros((1, self.ROW))
        self.collider_count = 0
        self.positions = _PositionsCheck(self.n)
        self._posed = None
        self._pad2 = None if self.pad2 is None else pointer(self.pad2)
        self._table = pointer(self.table)
        self._arrays, self._pointers = (None, None), (None, None)
        self._scratch = None
        self._meshes = None  # the posed mesh colliders' structs (a ctypes array), or None without mesh colliders
        self._held = ()  # the arrays those structs address (grids, vertices, stamps), alive while they are posed
        self._mesh_scratch = (None, None)  # int64 (4 n,) and float64 (7 n,) for the mesh rows' queries
        self._mesh_arguments = (None, None, None)

    @staticmethod
    def supports(colliders) -> bool:
        """Whether every collider is a ground plane, a sphere or a mesh collider with its native queries
        (``_Shared.native``; exactly those classes: a subclass may answer the protocol differently)."""
        ground, sphere = _analytic_types()
        mesh = _mesh_collider_type()
        return all(type(c) is ground or type(c) is sphere or (type(c) is mesh and c.shared.native is not None)
                   for c in colliders)

    def pose(self, colliders) -> None:
        """The table of colliders (``supports``): ground planes and spheres as rows of their own, a mesh collider as
        a row of kind SOFTSIM_KIND_MESH naming its struct (its pose's vertices and triangle grid, thickness and
        search reach)."""
        colliders = list(colliders)
        if self._posed is not None and len(self._posed) == len(colliders) and all(
                a is b for a, b in zip(self._posed, colliders)):
            return
        from ..collision.colliders.mesh_collider import SEARCH_MARGIN

        if not self.supports(colliders):
            raise ValueError("KeepOut takes ground planes, spheres and mesh colliders with their native queries only")
        if len(colliders) > len(self.table):
            self.table = np.zeros((len(colliders), self.ROW))
            self._table = pointer(self.table)
        meshes = [k for k, c in enumerate(colliders) if not AnalyticContacts.supports([c])]
        for k, collider in enumerate(colliders):
            if k not in meshes:
                collider_rows(self.table[k:k + 1], [collider])
        structs, held = None, []
        if meshes:
            structs = (_keep_out_mesh_structure() * len(meshes))()
            for index, k in enumerate(meshes):
                collider = colliders[k]
                native = collider.shared.native
                grid = native.grid_for(collider.vertices)  # checks the vertices (float64, (m, 3), finite)
                row = self.table[k]
                row.fill(0.0)
                row[0], row[3] = KIND_MESH, float(index)  # [3]: the struct's index
                struct = structs[index]
                struct.vertices, struct.triangles = pointer(grid.vertices), native.faces.pointer
                struct.grid, struct.dims, struct.cell_start, struct.entry = grid.pointers
                struct.stamp = native.faces.stamp_pointer
                struct.thickness = float(collider.thickness)
                struct.search_limit = float(collider.thickness + SEARCH_MARGIN)  # MeshCollider._closest's limit
                held.append((grid, native.faces))
            if self._mesh_scratch[0] is None:
                self._mesh_scratch = (np.zeros(4 * self.n, I64), np.zeros(7 * self.n))
        self._meshes, self._held = structs, tuple(held)
        self._mesh_arguments = ((None, None, None) if structs is None else
                                (structs, pointer(self._mesh_scratch[0]), pointer(self._mesh_scratch[1])))
        self.collider_count = len(colliders)
        self._posed = colliders

    def resting(self, x, band: float) -> np.ndarray:
        """Whether each particle at x (n, 3) float64 [m] lies within band [m] of a posed collider's surface (its
        distance beyond thickness and pads below band), (n,) bool (``softsim_resting``)."""
        if not (band == band):
            raise ValueError(f"band must be a number, got {band}")
        mask = np.zeros(self.n, np.uint8)
        meshes, scratch_i, scratch_d = self._mesh_arguments
        self.library.softsim_resting(self.positions(x), self.n, self._pad2, self.collider_count, self._table, meshes,
                                     float(band), pointer(mask), scratch_i, scratch_d)
        return mask.view(np.bool_)

    def run(self, x, moved, inv_mass, heavy, slack: float, mass_factor: float) -> int:
        """In place on x (n, 3) float64 [m], inv_mass (n,) float64 [1/kg] and heavy (n,) bool: the particles
        moved (k,) int64 in [0, n), strictly increasing, that are free and deeper than slack [m] inside a posed collider brought
        back to that depth along its normal, their inverse mass divided by mass_factor the first time (heavy set).
        Returns the particles moved back (once per collider)."""
        moved = checked("moved", moved, I64, (None,))  # its range and order: checked by the kernel (-1)
        if inv_mass is not self._arrays[0] or heavy is not self._arrays[1]:  # one response call's arrays, many passes
            checked("inv_mass", inv_mass, F64, (self.n,))
            checked("heavy", heavy, np.dtype(np.bool_), (self.n,))
            self._arrays, self._pointers = (inv_mass, heavy), (pointer(inv_mass), pointer(heavy))
        if not (slack >= 0.0) or not (mass_factor > 0.0):
            raise ValueError(f"slack must be >= 0 and mass_factor > 0, got {slack} and {mass_factor}")
        meshes, scratch_i, scratch_d = self._mesh_arguments
        back = self.function(self.positions(x), self.n, *self._pointers, self._pad2, len(moved), pointer(moved),
                             self.collider_count, self._table, meshes, float(slack), float(mass_factor), scratch_i,
                             scratch_d)
        if back < 0:
            raise ValueError(f"moved must be strictly increasing indices in [0, {self.n})")
        return back

    def bind_touched(self, x, touched, inv_mass, heavy, slack: float, mass_factor: float):
        """``run`` on the particles p with touched[p] set, as a call of no arguments returning the particles moved
        back: everything is checked here once (x (n, 3) float64 [m], touched, inv_mass (n,) float64 [1/kg], heavy
        (n,) bool, slack [m], mass_factor), so each call is the bare C call (``softsim_keep_out_touched``). touched
        (n,) bool is read at each call (self-collision's pass mask, ``self_kernels.SelfPass.touched_mask``); the
        colliders are those posed now. The arrays are held by the call and must keep their buffers meanwhile."""
        checked("x", x, F64, (self.n, 3))
        checked("touched", touched, np.dtype(np.bool_), (self.n,))
        checked("inv_mass", inv_mass, F64, (self.n,))
        checked("heavy", heavy, np.dtype(np.bool_), (self.n,))
        if not (slack >= 0.0) or not (mass_factor > 0.0):
            raise ValueError(f"slack must be >= 0 and mass_factor > 0, got {slack} and {mass_factor}")
        if self._scratch is None:
            self._scratch = np.empty(self.n, I64)
        function = self.library.softsim_keep_out_touched
        meshes, scratch_i, scratch_d = self._mesh_arguments
        arguments = (pointer(x), self.n, pointer(inv_mass), pointer(heavy), self._pad2, pointer(touched),
                     pointer(self._scratch), self.collider_count, self._table, meshes, float(slack), float(mass_factor),
                     scratch_i, scratch_d)

        def call() -> int:
            return function(*arguments)

        call.held = (x, touched, inv_mass, heavy, self.pad2, self._scratch, self.table, self._meshes, self._held,
                     self._mesh_scratch)  # their buffers stay alive
        return call


# ------------------------------------------------------------------------------------------ a cloth's substeps


class BendingJacobi:
    """The Jacobi tail of a bending set in C (``softsim_bending_jacobi``): the twin of
    ``position_based.PositionBasedSolver._jacobi`` on a ``constraints.BendingConstraints`` tail without the lab's
    per-particle average (bending is always compliant, so its tail never takes that form).

    library: a ``library.NativeLibrary``; constraints: the tail's BendingConstraints (its hinges in its own order);
    particle_count: n. Each particle's corrections are added in increasing (hinge, corner) order, the order of its
    row in the twin's CSR scatter matrix, so the sums round the same way."""

    def __init__(self, library, constraints, particle_count: int):
        self.function = library.softsim_bending_jacobi
        self.library = library
        self.twin = constraints
        indices = np.ascontiguousarray(constraints.indices, np.int64)
        self.bind(particle_count, indices, np.ascontiguousarray(constraints.K, np.float64),
                  np.ascontiguousarray(constraints.wK, np.float64), np.ascontiguousarray(constraints.rest_norm, np.float64),
                  *_particle_scatter(indices, particle_count))

    def bind(self, particle_count, hinges, K, wK, rest_norm, scatter_start, scatter_entry, constraint_count) -> None:
        """Validate and keep: hinges (m, 4) int64 in [0, n), K and wK (m, 4), rest_norm (m,) float64, scatter_start
        (n + 1,) int64 from 0 to 4 m non-decreasing, scatter_entry (4 m,) int64 in [0, 4 m) (each particle's entries
        4 h + a), constraint_count (m,) float64 (the largest constraint count over a hinge's particles)."""
        m = len(hinges) if isinstance(hinges, np.ndarray) else -1
        self.hinges = checked_indices("hinges", hinges, particle_count, (m, 4))
        self.K, self.wK = checked("K", K, F64, (m, 4)), checked("wK", wK, F64, (m, 4))
        self.rest_norm = checked("rest_norm", rest_norm, F64, (m,))
        self.scatter_start, self.scatter_entry = _checked_scatter(self.hinges, scatter_start, scatter_entry,
                                                                  particle_count)
        self.constraint_count = checked("constraint_count", constraint_count, F64, (m,))
        self.n, self.m = particle_count, m
        self.curved = int(bool(np.any(self.rest_norm > 0.0)))
        self.alpha, self.inverse_denominator, self.scale = np.zeros(m), np.zeros(m), np.zeros(m)
        self.lam, self.dx = np.zeros((m, 3)), np.zeros((4 * m, 3))
        self.positions = _PositionsCheck(particle_count)
        self._key = None
        self._pointers = [pointer(a) for a in (self.hinges, self.K, self.wK, self.rest_norm, self.alpha,
                                               self.inverse_denominator, self.scale, self.lam, self.scatter_start,
                                               self.scatter_entry, self.dx)]

    def coefficients(self, dt: float, relaxation: float) -> None:
        """alpha, 1 / (s + alpha) (the twin's own code) and 1 / (relaxation + constraint count), once per (dt,
        relaxation)."""
        if self._key == (dt, relaxation):
            return
        alpha = self.twin.alpha(dt)
        self.alpha[:] = alpha
        self.inverse_denominator[:] = self.twin._inverse_denominator(alpha)
        self.scale[:] = 1.0 / (relaxation + self.constraint_count)
        self._key = (dt, relaxation)

    def jacobi(self, x, dt: float, lam, relaxation: float) -> None:
        """One sweep in place on x (n, 3) float64 C-contiguous [m]; lam (m, 3) float64 the tail's multipliers
        (updated); relaxation: ``config.jacobi_relaxation``."""
        address = self.positions(x)
        self.coefficients(dt, relaxation)
        direct = lam is self.lam
        if not direct:
            self.lam[...] = lam
        p = self._pointers
        self.function(address, self.m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], self.curved, self.n, p[8],
                      p[9], p[10])
        if not direct:
            lam[...] = self.lam


def _particle_scatter(indices, particle_count: int):
    """For constraints on indices (m, k) int64 of n particles: scatter_start (n + 1,) and scatter_entry (k m,), each
    particle's flat entries k c + a in increasing order (the order of its row in ``position_based._Jacobi``'s CSR
    scatter matrix), and constraint_count (m,) float64, the largest constraint count over each constraint's particles
    (``_Jacobi.constraint_count``)."""
    flat = indices.ravel()
    count = np.bincount(flat, minlength=particle_count) if len(flat) else np.zeros(particle_count, np.int64)
    return (np.concatenate([[0], np.cumsum(count)]).astype(np.int64), np.argsort(flat, kind="stable").astype(np.int64),
            count.astype(float)[indices].max(axis=1) if len(indices) else np.zeros(0))


def _checked_scatter(indices, scatter_start, scatter_entry, particle_count: int):
    """Validated (scatter_start, scatter_entry) of ``_particle_scatter`` for checked indices (m, k) of n particles:
    scatter_start (n + 1,) int64 from 0 to k m non-decreasing, scatter_entry (k m,) int64 listing each particle's own
    entries, particle after particle; ValueError naming the array otherwise."""
    size = indices.size
    start = checked("scatter_start", scatter_start, I64, (particle_count + 1,))
    if start[0] != 0 or start[-1] != size or np.any(np.diff(start) < 0):
        raise ValueError(f"scatter_start must run from 0 to {size}, non-decreasing")
    entry = checked_indices("scatter_entry", scatter_entry, max(size, 1), (size,))
    if not np.array_equal(indices.ravel()[entry], np.repeat(np.arange(particle_count), np.diff(start))):
        raise ValueError("scatter_entry must list each particle's own entries, particle after particle")
    return start, entry


class TetStrainJacobi:
    """The Jacobi sweep of a tet-strain set in C (``softsim_tet_strain_jacobi``): the twin of
    ``position_based.PositionBasedSolver._jacobi`` on a ``constraints.TetStrainConstraints`` set (its
    ``corrections`` times 1 / (relaxation + constraint count) per tet; these constraints are always compliant, so the
    lab's per-particle average never applies), bit for bit: the same update per tet as the colour
    sweeps (src/tets.c), each particle's corrections summed in increasing (tet, corner) order. Internal damping is
    the set's own (``set_damping`` on the constraints, read at each call).

    library: a ``library.NativeLibrary``; constraints: the set (its tets in its own order, at least 2: with one tet
    NumPy's einsums sum in another order); particle_count: n."""

    def __init__(self, library, constraints, particle_count: int):
        if len(constraints) < 2:
            raise ValueError("TetStrainJacobi: a set of one tet stays on NumPy (its einsums sum in another order)")
        self.function = library.softsim_tet_strain_jacobi
        self.library = library
        self.twin = constraints
        indices = np.ascontiguousarray(constraints.indices, np.int64)
        self.bind(particle_count, indices, np.ascontiguousarray(constraints.D, np.float64),
                  np.ascontiguousarray(constraints.w, np.float64), np.ascontiguousarray(constraints.kappa, np.float64),
                  *_particle_scatter(indices, particle_count))

    def bind(self, particle_count, tets, D, w, kappa, scatter_start, scatter_entry, constraint_count) -> None:
        """Validate and keep: tets (m, 4) int64 in [0, n), D (m, 4, 3) [1/m], w (m, 4) [1/kg], kappa (m,) float64,
        scatter_start (n + 1,) and scatter_entry (4 m,) int64 (``_checked_scatter``), constraint_count (m,) float64;
        ValueError naming the array on anything wrong."""
        m = len(tets) if isinstance(tets, np.ndarray) else -1
        self.tets = checked_indices("tets", tets, particle_count, (m, 4))
        self.D = checked("D", D, F64, (m, 4, 3))
        self.w = checked("w", w, F64, (m, 4))
        self.kappa = checked("kappa", kappa, F64, (m,))
        self.scatter_start, self.scatter_entry = _checked_scatter(self.tets, scatter_start, scatter_entry,
                                                                  particle_count)
        self.constraint_count = checked("constraint_count", constraint_count, F64, (m,))
        self.n, self.m = particle_count, m
        self.alpha, self.scale = np.zeros((m, 4)), np.zeros(m)
        self.lam, self.dx = np.zeros((m, 2)), np.zeros((4 * m, 3))
        self.positions = _PositionsCheck(particle_count)
        self._key = None
        self._pointers = [pointer(a) for a in (self.tets, self.D, self.w, self.kappa, self.alpha, self.scale,
                                               self.lam, self.scatter_start, self.scatter_entry, self.dx)]

    def coefficients(self, dt: float, relaxation: float) -> None:
        """The alphas (``tet_strain.alpha_rows`` of the twin's own ``alpha``) and 1 / (relaxation + constraint count),
        once per (dt, relaxation)."""
        if self._key == (dt, relaxation):
            return
        from ..constraints.tet_strain import alpha_rows

        self.alpha[...] = alpha_rows(self.twin.alpha(dt)).T
        self.scale[:] = 1.0 / (relaxation + self.constraint_count)
        self._key = (dt, relaxation)

    def jacobi(self, x, dt: float, lam, relaxation: float) -> None:
        """One sweep in place on x (n, 3) float64 C-contiguous [m]; lam (m, 2) float64 the set's multipliers
        (updated); relaxation: ``config.jacobi_relaxation``. With the twin's internal damping (gamma > 0) its x_prev
        (n, 3) float64 C-contiguous is checked and read."""
        address = self.positions(x)
        self.coefficients(dt, relaxation)
        damping, prev = float(self.twin.damping), None
        if damping > 0.0:
            prev = pointer(checked("x_prev", self.twin.x_prev, F64, (self.n, 3)))
        direct = lam is self.lam
        if not direct:
            self.lam[...] = checked("lam", lam, F64, (self.m, 2))
        p = self._pointers
        self.function(address, self.m, p[0], p[1], p[2], p[3], p[4], p[5], p[6], damping, prev, self.n, p[7], p[8],
                      p[9])
        if not direct:
            lam[...] = self.lam


class AirLoads:
    """``forces.loads.BodyLoads.apply`` with air and no fields in C (``softsim_air_apply``: ``air.AirDrag.relax`` with
    its refresh of the faces' area vectors, ``AirDrag.area_vectors`` and ``_split``). The twin's cache (``_area``,
    ``_since``) is shared both ways, so NumPy and native calls may alternate.

    library: a ``library.NativeLibrary``; air: the body's ``air.AirDrag``; inv_mass (n,) float64; gravity (3,)."""

    def __init__(self, library, air, inv_mass, gravity):
        from ..forces import air as air_module

        self.function = library.softsim_air_apply
        self.areas_function = library.softsim_air_areas
        self.library = library
        self.air = air
        n = air.particle_count
        corners = air.corners.tocsr()
        corners.sort_indices()
        self.bind(n, np.ascontiguousarray(inv_mass, np.float64), np.ascontiguousarray(gravity, np.float64),
                  np.ascontiguousarray(air.triangles, np.int64), corners.indptr.astype(np.int64),
                  corners.indices.astype(np.int64))
        self.settings = np.array([air_module.AREA_REFRESH_TIME, air_module.AIR_DENSITY,
                                  air_module.TANGENTIAL_FRACTION, air.coefficient], np.float64)
        self._pointers["settings"] = pointer(self.settings)

    def bind(self, particle_count, inv_mass, gravity, triangles, corner_start, corner_face) -> None:
        """Validate and keep: inv_mass (n,), gravity (3,) float64, triangles (t, 3) int64 in [0, n), corner_start
        (n + 1,) int64 from 0 to 3 t non-decreasing, corner_face (3 t,) int64 in [0, t) (each particle's faces)."""
        n = particle_count
        t = len(triangles) if isinstance(triangles, np.ndarray) else -1
        self.n, self.t = n, t
        self.inv_mass = checked("inv_mass", inv_mass, F64, (n,))
        self.gravity = checked("gravity", gravity, F64, (3,))
        self.triangles = checked_indices("triangles", triangles, n, (t, 3))
        self.corner_start = checked("corner_start", corner_start, I64, (n + 1,))
        if self.corner_start[0] != 0 or self.corner_start[-1] != 3 * t or np.any(np.diff(self.corner_start) < 0):
            raise ValueError(f"corner_start must run from 0 to {3 * t}, non-decreasing")
        self.corner_face = checked_indices("corner_face", corner_face, max(t, 1), (3 * t,))
        self.cross, self.area, self.normal = np.zeros((t, 3)), np.zeros(n), np.zeros((n, 3))
        self.state = np.zeros(2)
        self.positions, self.velocities = _PositionsCheck(n), _PositionsCheck(n)
        self._pointers = {name: pointer(getattr(self, name)) for name in (
            "inv_mass", "gravity", "triangles", "corner_start", "corner_face", "cross", "area", "normal", "state")}

    def enter(self) -> None:
        """Take the twin's cache (its last measurement and the step time since) into the kernel's buffers."""
        cached = self.air._area
        if cached is None:
            self.state[0] = 0.0
        else:
            if cached[0] is not self.area:
                self.area[:], self.normal[:] = cached
            self.state[0] = 1.0
        self.state[1] = self.air._since

    def leave(self) -> None:
        """Hand the kernel's cache back to the twin."""
        if self.state[0] != 0.0:
            self.air._area = (self.area, self.normal)
        self.air._since = float(self.state[1])

    def apply(self, x, v, dt: float, wind=None) -> None:
        """v changed in place for one step of dt [s] from positions x (n, 3) float64 C-contiguous (``BodyLoads.apply``
        with air and no fields, or with WIND fields whose air velocity is ``wind`` (3,) [m/s] everywhere:
        ``fields.uniform_air_velocity`` times the body's field weight)."""
        p = self._pointers
        if wind is not None:
            wind = checked("wind", np.ascontiguousarray(wind, np.float64), F64, (3,))
        self.enter()
        self.function(self.positions(x), self.velocities(v), self.n, p["inv_mass"], p["gravity"], float(dt), self.t,
                      p["triangles"], p["corner_start"], p["corner_face"], p["cross"], p["area"], p["normal"],
                      p["state"], p["settings"], None if wind is None else pointer(wind))
        self.leave()

    def area_vectors(self, x):
        """(|a| (n,), a / |a| (n, 3)) at x: ``_split(AirDrag.area_vectors(x))`` (copies)."""
        p = self._pointers
        self.areas_function(self.positions(x), self.n, self.t, p["triangles"], p["corner_start"], p["corner_face"],
                            p["cross"], p["area"], p["normal"])
        return self.area.copy(), self.normal.copy()


FIELD_ROW = 25
"""Doubles per force field in the fields' table of ``softsim_fields_apply`` (softsim_native.h: SOFTSIM_FIELD_ROW and
the row's layout)."""
_FIELD_FLAGS = (("use_min_distance", 1), ("use_max_distance", 2), ("use_radial_min", 4), ("use_radial_max", 8),
                ("use_global_coords", 16), ("use_gravity_falloff", 32))
_FIELD_NUMBERS = ("strength", "falloff_power", "distance_min", "distance_max", "radial_min", "radial_max",
                  "radial_falloff", "flow", "noise")
_FIELD_CHOICES = ((0, "kind", 6), (1, "shape", 3), (2, "falloff_type", 3), (3, "z_direction", 3), (4, "flags", 128))


def field_table(fields, out=None) -> np.ndarray:
    """The rows (len(fields), FIELD_ROW) float64 of ``fields`` (``forces.fields.ForceField``s at one instant) in the
    layout of softsim_native.h (written into ``out`` when given, e.g. one substep of a frame's table)."""
    from ..forces import fields as fields_module

    table = np.zeros((len(fields), FIELD_ROW)) if out is None else out
    for row, f in zip(table, fields):
        flags = sum(bit for name, bit in _FIELD_FLAGS if getattr(f, name))
        if fields_module._uniform(f):
            flags += 64
        row[0] = fields_module.FIELD_KINDS.index(f.kind)
        row[1] = fields_module.SHAPES.index(f.shape)
        row[2] = fields_module.FALLOFFS.index(f.falloff_type)
        row[3] = fields_module.Z_DIRECTIONS.index(f.z_direction)
        row[4] = flags
        row[5:14] = [float(getattr(f, name)) for name in _FIELD_NUMBERS]
        row[14] = ((int(f.seed) * 2654435761) ^ 0x9E3779B9) & 0xFFFFFFFF  # noise._hash's seed term
        row[15:19] = float(f.size), float(f.linear_drag), float(f.harmonic_damping), float(f.rest_length)
        row[19:22] = f.origin
        row[22:25] = f.axis
    return table


def checked_field_table(name: str, table, shape: tuple) -> np.ndarray:
    """``checked`` float64 field rows of ``shape`` (its last entry FIELD_ROW), each row's choices (kind, shape,
    falloff, z direction, flags) and seed term integers within their ranges."""
    table = checked(name, table, F64, shape)
    rows = table.reshape(-1, FIELD_ROW)
    for column, what, count in _FIELD_CHOICES + ((14, "seed term", 2 ** 32),):
        values = rows[:, column]
        bad = ~((values >= 0) & (values < count) & (values == np.floor(values)))
        if np.any(bad):
            raise ValueError(f"{name}: {what} {values[bad][0]!r} is not an integer in [0, {count})")
    return table


class FieldLoads:
    """``forces.loads.BodyLoads.apply`` with force fields in C (``softsim_fields_apply``: ``fields.field_terms``,
    ``fields.air_velocity`` and the air of ``AirLoads``, whose buffers and the twin's cache it shares).

    library: a ``library.NativeLibrary``; inv_mass (n,), gravity (3,) float64; air: the body's ``AirLoads`` or None."""

    def __init__(self, library, inv_mass, gravity, air=None):
        self.function = library.softsim_fields_apply
        self.terms_function, self.air_function = library.softsim_field_terms, library.softsim_air_velocity
        n = len(inv_mass) if isinstance(inv_mass, np.ndarray) else -1
        self.n = n
        self.inv_mass = checked("inv_mass", inv_mass, F64, (n,))
        self.gravity = checked("gravity", gravity, F64, (3,))
        if air is not None and (not isinstance(air, AirLoads) or air.n != n):
            raise ValueError(f"air: expected the AirLoads of {n} particles")
        self.air = air
        self.a0, self.c, self.u = np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3))
        self.positions, self.velocities = _PositionsCheck(n), _PositionsCheck(n)
        self._pointers = {name: pointer(getattr(self, name)) for name in ("inv_mass", "gravity", "a0", "c", "u")}

    def apply(self, x, v, dt: float, fields, t: float, weight: float) -> None:
        """v (n, 3) changed in place for one step of dt [s] from positions x (n, 3) (float64 C-contiguous) at time t
        [s] under ``fields`` (``ForceField``s at that instant, weighted by ``weight`` > 0): ``BodyLoads.apply``."""
        self.apply_table(x, v, dt, field_table(fields), t, weight)

    def apply_table(self, x, v, dt: float, table, t: float, weight: float) -> None:
        """``apply`` with the fields as a table (f, FIELD_ROW) float64 (``field_table``)."""
        table = checked_field_table("table", table, (None, FIELD_ROW))
        p, air = self._pointers, self.air
        address_x, address_v = self.positions(x), self.velocities(v)
        if air is None:
            self.function(address_x, address_v, self.n, p["inv_mass"], p["gravity"], float(dt), float(t),
                          float(weight), len(table), pointer(table), p["a0"], p["c"], p["u"], 0, None, None, None,
                          None, None, None, None, None)
            return
        q = air._pointers
        air.enter()
        self.function(address_x, address_v, self.n, p["inv_mass"], p["gravity"], float(dt), float(t), float(weight),
                      len(table), pointer(table), p["a0"], p["c"], p["u"], air.t, q["triangles"], q["corner_start"],
                      q["corner_face"], q["cross"], q["area"], q["normal"], q["state"], q["settings"])
        air.leave()

    def terms(self, x, v, table, t: float):
        """(a0 (n, 3), c (n,)) of ``fields.field_terms`` at x, v (n, 3) and time t [s] for the fields' table (copies)."""
        table = checked_field_table("table", table, (None, FIELD_ROW))
        self.terms_function(self.positions(x), self.velocities(v), self.n, float(t), len(table), pointer(table),
                            self._pointers["a0"], self._pointers["c"])
        return self.a0.copy(), self.c.copy()

    def air_velocity(self, x, table, t: float) -> np.ndarray:
        """``fields.air_velocity`` (n, 3) at x (n, 3) and time t [s] for the fields' table (a copy)."""
        table = checked_field_table("table", table, (None, FIELD_ROW))
        self.air_function(self.positions(x), self.n, float(t), len(table), pointer(table), self._pointers["u"])
        return self.u.copy()


def check_state(library, x, v, max_speed: float) -> int:
    """``softsim_check_state``: 0 when x and v (n, 3) float64 C-contiguous are finite and no speed exceeds max_speed
    [m/s], 1 for a non-finite value, 2 for a speed past it."""
    n = len(x) if isinstance(x, np.ndarray) else -1
    checked("x", x, F64, (n, 3))
    checked("v", v, F64, (n, 3))
    return library.softsim_check_state(pointer(x), pointer(v), n, float(max_speed))


def _plan_structure():
    import ctypes

    from .library import _D, _I, _P

    names = [  # softsim_native.h, SoftsimClothPlan, in order
        ("n", _I), ("substeps", _I), ("iterations", _I), ("dt", _D), ("damping_factor", _D), ("max_speed", _D),
        ("damped", _I), ("x", _P), ("v", _P), ("x_prev", _P), ("inv_mass", _P), ("gravity", _P),
        ("air_count", _I), ("air_triangles", _P), ("air_corner_start", _P), ("air_corner_face", _P), ("air_cross", _P),
        ("air_area", _P), ("air_normal", _P), ("air_state", _P), ("air_settings", _P), ("air_wind", _P),
        ("field_count", _I), ("field_table", _P), ("field_time", _P), ("field_weight", _D), ("field_a0", _P),
        ("field_c", _P), ("field_u", _P),
        ("pin_count", _I), ("pin_index", _P), ("pin_start", _P), ("pin_end", _P), ("pin_to", _P),
        ("collider_count", _I), ("tables_per_substep", _I), ("collider_table", _P), ("pad2", _P),
        ("c_particle", _P), ("c_owner", _P), ("c_normal", _P), ("c_offset", _P), ("c_pushed", _P),
        ("face_count", _I), ("edge_count", _I), ("face_passes", _I), ("faces", _P), ("edges", _P), ("finish_settings", _P),
        ("r_particle", _P), ("r_owner", _P), ("r_normal", _P), ("r_distance", _P), ("r_scratch", _P),
        ("topology_state", _P), ("x0", _P), ("work_i", _P), ("work_d", _P),
        ("distance_m", _I), ("distance_colours", _I), ("distance_use_alpha", _I), ("distance_start", _P),
        ("distance_edges", _P), ("distance_rest", _P), ("distance_wi", _P), ("distance_wj", _P), ("distance_alpha", _P),
        ("distance_inverse", _P), ("distance_lambda", _P),
        ("bending_m", _I), ("bending_colours", _I), ("bending_start", _P), ("bending_curved", _P), ("bending_hinges", _P),
        ("bending_K", _P), ("bending_wK", _P), ("bending_rest", _P), ("bending_alpha", _P), ("bending_inverse", _P),
        ("bending_lambda", _P),
        ("tail_m", _I), ("tail_curved", _I), ("tail_hinges", _P), ("tail_scatter_start", _P), ("tail_scatter_entry", _P),
        ("tail_K", _P), ("tail_wK", _P), ("tail_rest", _P), ("tail_alpha", _P), ("tail_inverse", _P), ("tail_scale", _P),
        ("tail_lambda", _P), ("tail_dx", _P),
        ("tether_slots", _I), ("tether_start", _P), ("tether_particle", _P), ("tether_pin", _P), ("tether_limit", _P),
        ("tether_stamp", _P), ("tether_seen", _P),
        ("mesh", _P), ("hand_over", _I), ("true_start", _P),
        ("tet_m", _I), ("tet_colours", _I), ("contact_iterations", _I), ("symmetric", _I), ("first_step", _I),
        ("tet_damping", _D), ("tet_start", _P), ("tet_tets", _P), ("tet_D", _P), ("tet_w", _P), ("tet_kappa", _P),
        ("tet_alpha", _P), ("tet_lambda", _P), ("tet_x_back", _P), ("tet_lambda_back", _P),
        ("tet_tail_m", _I), ("tet_tail_tets", _P), ("tet_tail_scatter_start", _P), ("tet_tail_scatter_entry", _P),
        ("tet_tail_D", _P), ("tet_tail_w", _P), ("tet_tail_kappa", _P), ("tet_tail_alpha", _P), ("tet_tail_scale", _P),
        ("tet_tail_lambda", _P), ("tet_tail_dx", _P),
    ]

    class Plan(ctypes.Structure):
        _fields_ = names

    return Plan


class ClothFrame:
    """Whole frames of a cloth's or a solid's XPBD / PBD substeps in one C call (``softsim_cloth_substeps``), built
    from the solver's own validated bindings (so every array the C code reads was checked when those were built):

    contacts: the solver's ``AnalyticContacts`` (prediction, contacts, end-of-step push, velocity, and their buffers);
    distance: a ``DistanceSweep`` or None; bending: a ``BendingSweep`` or None; tail: a ``BendingJacobi`` (the bending
    set's Jacobi tail) or None; tethers: a ``Tethers`` or None; air: an ``AirLoads`` or None; pinned (p,) int64, the
    pinned particles (inv_mass 0); a solid's tets: a ``TetStrainSweep`` and tet_tail, its ``TetStrainJacobi`` tail, or
    None (the solid's rules come with ``prepare``). A frame's force fields come with ``prepare`` (a table a substep,
    applied as ``FieldLoads`` applies them). Twin: ``frame.FrameRun.substep`` of
    ``PositionBasedSolver._native_contact_step`` with those pieces, step after step (the same calls in the same order
    on the same buffers)."""

    def __init__(self, library, contacts, distance, bending, tail, tethers, air, pinned, tets=None, tet_tail=None):
        self.function = library.softsim_cloth_substeps
        self.library = library
        self.contacts, self.distance, self.bending, self.tail = contacts, distance, bending, tail
        self.tets, self.tet_tail = tets, tet_tail
        self.tethers, self.air = tethers, air
        n = contacts.n
        self.n = n
        self.pinned = checked_indices("pinned", np.ascontiguousarray(pinned, np.int64), n, (len(pinned),))
        if np.any(contacts.inv_mass[self.pinned] != 0.0):
            raise ValueError("pinned: every pinned particle must have inv_mass 0")
        p = len(self.pinned)
        self.pin_start, self.pin_end, self.pin_to = np.zeros((p, 3)), np.zeros((p, 3)), np.zeros((p, 3))
        self.status = np.zeros(3, np.int64)
        self.true_start = None
        """(n, 3): a handed-over substep's start from before pre-stabilization (``hand_over``), or None."""
        self.tables = np.zeros((1, 1, contacts.ROW))
        self.positions, self.velocities = _PositionsCheck(n), _PositionsCheck(n)
        self.plan = _plan_structure()()
        self.field_a0, self.field_c, self.field_u = np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3))
        self.field_rows = self.field_times = None
        self.meshes = None
        """The still mesh colliders' binding (``mesh_frame.MeshFrame``), built for the first frame that has one."""
        self._fixed()

    def _fixed(self) -> None:
        """The plan's fields that never change: the sweeps', tethers', air's and pins' arrays."""
        plan, c = self.plan, self.contacts
        plan.n = self.n
        plan.inv_mass = c._p["inv_mass"]
        plan.x_prev = c._p["x_prev"]
        plan.pin_count = len(self.pinned)
        plan.pin_index, plan.pin_start = pointer(self.pinned), pointer(self.pin_start)
        plan.pin_end, plan.pin_to = pointer(self.pin_end), pointer(self.pin_to)
        plan.field_a0, plan.field_c, plan.field_u = (pointer(self.field_a0), pointer(self.field_c),
                                                     pointer(self.field_u))
        if self.air is not None:
            a = self.air._pointers
            plan.air_count = self.air.t
            plan.air_triangles, plan.air_corner_start, plan.air_corner_face = (
                a["triangles"], a["corner_start"], a["corner_face"])
            plan.air_cross, plan.air_area, plan.air_normal = a["cross"], a["area"], a["normal"]
            plan.air_state, plan.air_settings = a["state"], a["settings"]
        if self.distance is not None:
            d, q = self.distance, self.distance._pointers
            plan.distance_m, plan.distance_colours = len(d.edges), d.colour_count
            (plan.distance_start, plan.distance_edges, plan.distance_rest, plan.distance_wi, plan.distance_wj,
             plan.distance_alpha, plan.distance_inverse, plan.distance_lambda) = q
        if self.bending is not None:
            b, q = self.bending, self.bending._pointers
            plan.bending_m, plan.bending_colours = len(b.hinges), b.colour_count
            (plan.bending_start, plan.bending_curved, plan.bending_hinges, plan.bending_K, plan.bending_wK,
             plan.bending_rest, plan.bending_alpha, plan.bending_inverse, plan.bending_lambda) = q
        if self.tail is not None:
            t, q = self.tail, self.tail._pointers
            plan.tail_m, plan.tail_curved = t.m, t.curved
            (plan.tail_hinges, plan.tail_K, plan.tail_wK, plan.tail_rest, plan.tail_alpha, plan.tail_inverse,
             plan.tail_scale, plan.tail_lambda, plan.tail_scatter_start, plan.tail_scatter_entry, plan.tail_dx) = q
        if self.tets is not None:
            t = self.tets
            plan.tet_m, plan.tet_colours = t.m, t.colour_count
            (plan.tet_start, plan.tet_tets, plan.tet_D, plan.tet_w, plan.tet_kappa, plan.tet_alpha, plan.tet_lambda,
             plan.tet_x_back, plan.tet_lambda_back) = t._pointers
        if self.tet_tail is not None:
            t, q = self.tet_tail, self.tet_tail._pointers
            plan.tet_tail_m = t.m
            (plan.tet_tail_tets, plan.tet_tail_D, plan.tet_tail_w, plan.tet_tail_kappa, plan.tet_tail_alpha,
             plan.tet_tail_scale, plan.tet_tail_lambda, plan.tet_tail_scatter_start, plan.tet_tail_scatter_entry,
             plan.tet_tail_dx) = q
        if self.tethers is not None:
            t, q = self.tethers, self.tethers._pointers
            plan.tether_slots = t.slot_count
            (plan.tether_start, plan.tether_particle, plan.tether_pin, plan.tether_limit, plan.tether_stamp,
             plan.tether_seen) = q

    def hand_over(self) -> None:
        """Hand every substep back after its end-of-step push (``run``'s status 4), for the caller's self-collision,
        velocity update, pins and state check of that substep; the substep's start from before pre-stabilization is
        then ``start_before_stabilizing``."""
        self.true_start = np.zeros((self.n, 3))
        self.plan.hand_over, self.plan.true_start = 1, pointer(self.true_start)

    def state_fails(self) -> bool:
        """Whether the frame's state (x, v of ``prepare``) fails the check of ``frame.check_finite`` (a non-finite
        value or a speed past max_speed): ``softsim_check_state`` on the plan's arrays."""
        plan = self.plan
        return bool(self.library.softsim_check_state(plan.x, plan.v, self.n, plan.max_speed))

    def start_before_stabilizing(self):
        """The handed-over substep's start x_prev (n, 3) from before pre-stabilization moved it (the frame's buffer,
        which the next substep overwrites: read it before the next ``run``); None when the substep had no contacts
        (then nothing moved x_prev)."""
        return self.true_start if self.status[2] else None

    def _contacts(self, posed, x=None, body_triangles=None) -> None:
        """The collider tables (one, or one per substep when the colliders move: ``posed`` a list per substep) and
        the contact buffers (``AnalyticContacts.pose`` may have grown them); still mesh colliders (``mesh_frame.still``)
        get rows of their own and ``MeshFrame.prepare`` for a body at x with collision triangles body_triangles."""
        import ctypes

        from .mesh_frame import MeshFrame, framed

        c, plan = self.contacts, self.plan
        count = len(posed[0])
        moving = any(a is not b for step in posed[1:] for a, b in zip(step, posed[0]))
        steps = posed if moving else posed[:1]
        if self.tables.shape[:2] != (len(steps), max(count, 1)):
            self.tables = np.zeros((len(steps), max(count, 1), c.ROW))
        meshes = [i for i, collider in enumerate(posed[0]) if framed(collider)]
        analytic = [i for i in range(count) if i not in meshes]
        if meshes and len(c.table) < count:
            c._capacity(count)  # the contact buffers hold n contacts of every collider, meshes too
            c._posed = None
        rows = [[colliders[i] for i in analytic] for colliders in steps]
        # A substep with the first one's ground planes and spheres takes the first one's rows (meshes' below).
        repeats = [k for k in range(1, len(steps)) if all(a is b for a, b in zip(rows[k], rows[0]))]
        for k in sorted(set(range(len(steps))).difference(repeats)):
            c.pose(rows[k])
            self.tables[k].fill(0.0)
            self.tables[k, analytic] = c.table[:len(analytic)]
        self.tables[repeats] = self.tables[0]
        for i in meshes:  # a mesh row: its kind, moving (a start pose), friction (mesh_frame.h, contact.c)
            self.tables[:, i, 0] = KIND_MESH
            self.tables[:, i, 1] = [float(colliders[i].start is not None) for colliders in steps]
            self.tables[:, i, 2] = [float(colliders[i].friction) for colliders in steps]
        if meshes:
            if self.meshes is None:
                self.meshes = MeshFrame(self.library, self.n, c.triangles, c.edges)
            self.meshes.prepare(posed[0], x, body_triangles, posed)
            plan.mesh = ctypes.addressof(self.meshes.struct)
        else:
            plan.mesh = None
            if self.meshes is not None:
                self.meshes.active = []
        plan.collider_count, plan.tables_per_substep = count, int(moving)
        plan.collider_table = pointer(self.tables)
        p = c._p
        plan.pad2 = p["pad2"]
        (plan.c_particle, plan.c_owner, plan.c_normal, plan.c_offset, plan.c_pushed) = (
            p["particle"], p["owner"], p["normal"], p["offset"], p["pushed"])
        plan.face_count, plan.edge_count, plan.face_passes = len(c.triangles), len(c.edges), c.face_passes
        plan.faces, plan.edges, plan.finish_settings = p["triangles"], p["edges"], p["settings"]
        (plan.r_particle, plan.r_owner, plan.r_normal, plan.r_distance, plan.r_scratch) = (
            p["r_particle"], p["r_owner"], p["r_normal"], p["r_distance"], p["r_scratch"])
        plan.topology_state, plan.x0, plan.work_i, plan.work_d = p["topology_state"], p["x0"], p["work_i"], p["work_d"]

    def prepare(self, x, v, dt: float, substeps: int, iterations: int, compliant: bool, relaxation: float,
                damping_factor, max_speed: float, gravity, pin_start, pin_end, posed, body_triangles=None,
                wind=None, fields=None, solid=(0, False, 0, 0.0)) -> None:
        """Set up a frame: state x, v (n, 3) float64 C-contiguous; dt [s] per substep; the sweeps' coefficients for
        dt; damping_factor (None: undamped); gravity (3,) float64; pin_start, pin_end (p, 3) the pins' positions at
        the frame's start and end; posed: the posed colliders of each substep (``Collider.over``); body_triangles: the
        model's collision triangles array (the one the NumPy pipeline is handed), needed with a still mesh collider;
        wind: the air velocity (substeps, 3) [m/s] of each substep (``FrameRun.substep_winds``; needs the air) or None
        for still air; fields: (table (substeps, f, FIELD_ROW) float64, times (substeps,) float64 [s], weight) the
        force fields of each substep at its middle and their time, and the body's field weight
        (``FrameRun.substep_fields``), or None (then wind or still air). solid: a solid's step rules
        (contact_iterations, symmetric, first_step, tet_damping): the fewest iterations of a step with contacts (0:
        none), whether the last iteration sweeps the tets both ways, the step count of the frame's first substep (the
        tet sweeps' colour order alternates with it) and the internal damping gamma = tau / dt (0: none)."""
        plan = self.plan
        plan.x, plan.v = self.positions(x), self.velocities(v)
        plan.dt, plan.substeps, plan.iterations = float(dt), int(substeps), int(iterations)
        plan.damped = 0 if damping_factor is None else 1
        plan.damping_factor = 1.0 if damping_factor is None else float(damping_factor)
        plan.max_speed = float(max_speed)
        self.gravity = checked("gravity", gravity, F64, (3,))
        plan.gravity = pointer(self.gravity)
        self.pin_start[:], self.pin_end[:] = pin_start, pin_end
        if wind is not None and self.air is None:
            raise ValueError("wind: this cloth frame has no air to catch it")
        self.wind = None if wind is None else checked("wind", np.ascontiguousarray(wind, np.float64), F64,
                                                      (int(substeps), 3))
        plan.air_wind = None if self.wind is None else pointer(self.wind)
        plan.field_count, plan.field_table, plan.field_time, plan.field_weight = 0, None, None, 0.0
        self.field_rows = self.field_times = None
        if fields is not None:
            table, times, weight = fields
            if wind is not None:
                raise ValueError("fields: a frame takes either wind or force fields")
            table = checked_field_table("fields", table, (int(substeps), None, FIELD_ROW))
            self.field_rows, self.field_times = table, checked("field times", times, F64, (int(substeps),))
            plan.field_count, plan.field_weight = table.shape[1], float(weight)
            plan.field_table, plan.field_time = pointer(table), pointer(self.field_times)
        if self.distance is not None:
            self.distance._coefficients(dt, compliant)
            plan.distance_use_alpha = 1 if compliant else 0
        if self.bending is not None:
            self.bending._coefficients(dt)
        if self.tail is not None:
            self.tail.coefficients(dt, relaxation)
        contact_iterations, symmetric, first_step, tet_damping = solid
        plan.contact_iterations, plan.symmetric = int(contact_iterations), int(bool(symmetric))
        plan.first_step, plan.tet_damping = int(first_step), float(tet_damping)
        if self.tets is not None:
            self.tets._alphas(dt)
        if self.tet_tail is not None:
            self.tet_tail.coefficients(dt, relaxation)
        self._contacts(posed, x, body_triangles)

    def run(self, first: int, last: int) -> tuple:
        """Substeps first .. last (1-based); returns (substeps completed, status, sweeps) as softsim_cloth_substeps
        (status 1: the end-of-step push of the next substep needs ``sweeps`` sweeps; 2: the state check failed; 4: the
        next substep is handed over after its end-of-step push, ``hand_over``)."""
        import ctypes

        meshes = self.meshes if self.plan.mesh else None
        total = 0
        while True:
            if self.air is not None:
                self.air.enter()
            if meshes is not None:
                meshes.load()
            done = self.function(ctypes.byref(self.plan), int(first), int(last), pointer(self.status))
            if meshes is not None:
                meshes.store()
            if self.air is not None:
                self.air.leave()
            total += done
            if self.status[0] != 3:
                return total, int(self.status[0]), int(self.status[1])
            meshes.grow()  # a pair buffer was too small: substep first + done restored, run again
            first += done
