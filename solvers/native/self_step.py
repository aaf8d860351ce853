"""Self-collision's whole call in one C call (``softsim_self_step``, ``src/self_step.c``).

``SelfStep`` is the twin of the native flow of ``SelfCollision.resolve_beside_colliders`` and ``resolve``: the resting
test and the call's inverse masses (``KeepOut.resting``), the candidate selection (``SelfSelect.select``), the
response's set-up, true sides, passes with the collider keep-out and friction (``SelfPass``), ``_may_cross`` and the
fail-safe's witnesses and new crossings (``SelfSelect.witnesses``, ``SelfCallKernels.new_crossings``): the same
kernels with the same arguments in the same order, so the same bits (tests/test_native_self_step.py). The C side
comes back here only for what Python does: refreshing a Verlet list that no longer holds (``_refresh``), growing the
response's buffers, and the impact zones of new crossings (``_fail_safe``).

Why: between its kernels that flow ran about 90 Python-level calls a substep. On the 64 x 64 lab cloth (engine, runs
alternated) one call a substep instead took frames 62-71 from 69.5 to 63.5 ms a frame, 22-31 (the fold) from 234 to
227, the 100 frames from 105 to 100; what Python still does there is mostly the lists' refreshes.

The struct (``SoftsimSelfStep``, src/softsim_native.h) is mirrored field for field by ``_Structure``; its size is checked
against the library's. Every address in it is a buffer of the body's ``SelfPass``, ``SelfSelect``, ``SelfCallKernels`` or
``KeepOut`` (checked by them) or one owned here; they are written again whenever those objects replace a buffer (the
list after a refresh, the pass's buffers when they grow, the collider table when the colliders change).
"""
import ctypes

import numpy as np

from .kernels import F64, _PositionsCheck, checked
from .library import pointer

_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double


def _fields(kind, names: str):
    return [(name, kind) for name in names.split()]


class _Structure(ctypes.Structure):
    """src/softsim_native.h SoftsimSelfStep, field for field."""
    _fields_ = (_fields(_I, "n t_count e_count") + _fields(_P, "triangles edges inv_mass")
                + _fields(_D, "thickness recovery side_target tolerance relaxation friction")
                + _fields(_I, "passes max_passes") + _fields(_P, "x x_prev true_start x_start")
                + _fields(_I, "collider_count") + _fields(_P, "colliders meshes pad2 mesh_scratch_i mesh_scratch_d")
                + _fields(_D, "band slack mass_factor") + _fields(_P, "inv_call heavy keep_out_scratch x0")
                + _fields(_I, "k") + _fields(_P, "list_v list_t") + _fields(_I, "m")
                + _fields(_P, "list_a list_b dist skin_v skin_t skin_e motion moved out_v out_t out_a out_b out_reach "
                              "out_split select_scratch lo hi bound out_pos")
                + _fields(_I, "pass_capacity")
                + _fields(_P, "kept_v kept_t kept_a kept_b kept_count idx coef r normal pair_dist plane ok interior "
                              "side target approach_target depth ever sides_scratch pick changed touched pos batch "
                              "work_d flags colour order start last t_pos t_idx t_coef t_r t_normal t_dist t_plane "
                              "t_ok t_interior batch_size recovery_share delta load vertex_edge_start vertex_edges "
                              "edge_triangle_start edge_triangles")
                + _fields(_I, "witness_capacity") + _fields(_P, "witness_v witness_t witness_a witness_b")
                + _fields(_I, "crossing_capacity") + _fields(_P, "crossing_edge crossing_triangle")
                + _fields(_I, "candidates split kept corrected witnesses crossings resume"))


START, SELECT_GIVEN, SETUP, WITNESS_GIVEN = 0, 1, 2, 3
"""The stages of softsim_self_step (SOFTSIM_SELF_STAGE_*)."""
DONE, LIST, CAPACITY, CROSSINGS = 0, 1, 2, 3
"""Its return codes (SOFTSIM_SELF_STEP_*)."""


class SelfStep:
    """One body's self-collision call in C. ``collision``: its ``self_contact.SelfCollision``, whose native bindings
    (``native_pass``, ``native_select``, ``native_check``) are in place; ``settings``: (recovery, side target, pass
    tolerance, relaxation, max passes, contact band, collider slack, contact mass factor), the response's
    constants as ``self_contact`` defines them. ``resolve`` is ``SelfCollision._resolve`` with the resting test of
    ``resolve_beside_colliders`` before it when there are colliders (ground planes, spheres and mesh colliders with
    their native queries: ``KeepOut.supports``)."""

    def __init__(self, collision, settings):
        library = collision.native_pass.library
        if library.softsim_self_step_size() != ctypes.sizeof(_Structure):
            raise RuntimeError(f"softsim_self_step: the library's struct is {library.softsim_self_step_size()} bytes, "
                               f"its mirror {ctypes.sizeof(_Structure)} (a library of another build)")
        self.collision = collision
        self.function = library.softsim_self_step
        self.library = library
        recovery, side_target, tolerance, relaxation, max_passes, band, slack, mass_factor = settings
        select, pass_, check = collision.native_select, collision.native_pass, collision.native_check
        n = pass_.n
        self.n = n
        self.s = s = _Structure()
        self.address = ctypes.addressof(s)
        s.n, s.t_count, s.e_count = n, len(pass_.triangles), len(pass_.edges)
        s.triangles, s.edges = pointer(pass_.triangles), pointer(pass_.edges)
        self.inv_mass = checked("inv_mass", collision.inv_mass, F64, (n,))
        s.inv_mass = pointer(self.inv_mass)
        s.thickness, s.recovery, s.side_target = collision.thickness, recovery, side_target
        s.tolerance, s.relaxation, s.max_passes = tolerance, relaxation, max_passes
        s.band, s.slack, s.mass_factor = band, slack, mass_factor
        self.x_start = np.zeros((n, 3))
        self.inv_call = np.zeros(n)
        self.heavy = np.zeros(n, bool)
        self.keep_out_scratch = np.zeros(n, np.int64)
        s.x_start, s.keep_out_scratch = pointer(self.x_start), pointer(self.keep_out_scratch)
        self._colliders_own = (pointer(self.inv_call), pointer(self.heavy))
        s.motion, s.moved = pointer(select.motion), pointer(select.moved)
        s.lo, s.hi, s.bound = pointer(select.lo), pointer(select.hi), pointer(select.bound)
        s.select_scratch = pointer(select._scratch)
        s.out_split = pointer(select._split)
        if s.e_count:
            s.vertex_edge_start, s.vertex_edges, s.edge_triangle_start, s.edge_triangles = check._adjacency_p
        self._x, self._x_prev, self._true_start = _PositionsCheck(n), _PositionsCheck(n), _PositionsCheck(n)
        self._list = self._outputs = self._pass_buffers = self._crossings = self._posed = None
        self._witness = None

    # ------------------------------------------------------------------ the struct's addresses

    def _bind_list(self) -> None:
        """The Verlet list's addresses (``SelfSelect._bind`` checks a new list, and a skin growth's new arrays, once,
        and sizes the selection's outputs) and the witnesses' buffers of its size."""
        collision, s = self.collision, self.s
        select = collision.native_select
        bound = select._bind(collision._list)
        if bound is self._list:
            return
        x0, (k, v, t, m, a, b, dist, s_v, s_t, s_e) = bound
        s.x0, s.k, s.list_v, s.list_t, s.m, s.list_a, s.list_b = x0, k, v, t, m, a, b
        s.dist, s.skin_v, s.skin_t, s.skin_e = dist, s_v, s_t, s_e
        if select._out_p is not self._outputs:
            self._outputs = select._out_p
            s.out_v, s.out_t, s.out_a, s.out_b, s.out_reach = select._out_p[:5]
            s.out_pos = select._witness_p[5]
        if self._witness is None or len(self._witness[0]) < k + m:
            self._witness = [np.zeros(max(k + m, 16), np.int64) for _ in range(4)]
            s.witness_v, s.witness_t, s.witness_a, s.witness_b = (pointer(w) for w in self._witness)
            s.witness_capacity = len(self._witness[0])
        self._list = bound

    def _bind_pass(self) -> None:
        """The response's buffers (``SelfPass``; replaced when they grow)."""
        pass_, s = self.collision.native_pass, self.s
        if pass_._setup_p is self._pass_buffers:
            return
        (s.kept_v, s.kept_t, s.kept_a, s.kept_b, s.kept_count, s.idx, s.coef, s.r, s.normal, s.pair_dist, s.plane, s.ok,
         s.interior, s.side, s.target, s.approach_target, s.depth, s.ever) = pass_._setup_p
        s.sides_scratch, s.pick = pass_._sides_scratch_p, pass_._pick_p
        s.changed, s.touched = pass_._masks_own_p
        s.pos, s.batch = pass_._pos_p, pass_._batch_p
        (s.work_d, s.flags, s.colour, s.order, s.start, s.last, s.t_pos, s.t_idx, s.t_coef, s.t_r, s.t_normal, s.t_dist,
         s.t_plane, s.t_ok, s.t_interior, s.batch_size) = pass_._sweep
        s.recovery_share, s.delta = pass_._recovery_p
        s.load = pass_._scratch[2]
        s.pass_capacity = pass_._capacity
        self._pass_buffers = pass_._setup_p

    def _bind_crossings(self) -> None:
        check, s = self.collision.native_check, self.s
        if check._crossings is not self._crossings:
            self._crossings = check._crossings
            s.crossing_capacity = check._crossings.shape[1]
            s.crossing_edge, s.crossing_triangle = pointer(check._crossings[0]), pointer(check._crossings[1])

    def _bind_colliders(self, keep_out) -> None:
        """The collider table as ``keep_out`` (a posed ``kernels.KeepOut``) holds it."""
        s = self.s
        # A pose that reads the colliders anew makes a new _mesh_arguments tuple; a new table, a new address.
        posed = (keep_out, keep_out._table, keep_out._mesh_arguments)
        if self._posed is not None and all(a is b for a, b in zip(posed, self._posed)):
            return
        meshes, scratch_i, scratch_d = keep_out._mesh_arguments
        s.colliders, s.meshes, s.pad2 = keep_out._table, None if meshes is None else ctypes.addressof(meshes), \
            keep_out._pad2
        s.mesh_scratch_i, s.mesh_scratch_d = scratch_i, scratch_d
        self._posed = posed  # holds the KeepOut: the struct points into its table and meshes

    # ------------------------------------------------------------------ the call

    def resolve(self, x, x_prev, keep_out=None, true_start=None, colliders=()) -> int:
        """``SelfCollision._resolve`` at x, x_prev (n, 3) [m] in place (true_start (n, 3) or None), over the colliders
        ``keep_out`` (a ``kernels.KeepOut``; None: no colliders) has posed from ``colliders``. Returns the pairs
        corrected."""
        collision, s = self.collision, self.s
        s.friction, s.passes = collision.friction, collision.passes  # settings a caller may change between calls
        if collision.inv_mass is not self.inv_mass:
            self.inv_mass = checked("inv_mass", collision.inv_mass, F64, (self.n,))
            s.inv_mass = pointer(self.inv_mass)
        s.x, s.x_prev = self._x(x), self._x_prev(x_prev)
        s.true_start = None if true_start is None else self._true_start(true_start)
        if keep_out is None:
            s.collider_count = 0
            s.inv_call, s.heavy = s.inv_mass, None
        else:
            self._bind_colliders(keep_out)
            s.collider_count = keep_out.collider_count
            s.inv_call, s.heavy = self._colliders_own
        self._bind_list()
        self._bind_pass()
        self._bind_crossings()
        select = collision.native_select
        select.last = select.last_arguments = None  # its buffers are rewritten here
        stage = START
        while True:
            code = self.function(self.address, stage)
            if code == DONE:
                break
            if code == LIST:  # refreshed as _candidates and _new_crossings do, then on from where the step stopped
                stage = s.resume
                select._needs_valid = stage == SELECT_GIVEN  # the selection leaves the element needs, the witnesses not
                moved = collision._refresh(x, select.moved, select.motion)
                if moved is not select.moved:
                    select.moved[:] = moved
                select._needs_valid = False
                self._bind_list()
            elif code == CAPACITY:
                collision.native_pass._grow(s.candidates)
                self._bind_pass()
                stage = SETUP
            elif code == CROSSINGS:
                self._fail_safe(x, x_prev, keep_out, colliders)
                break
            else:
                raise RuntimeError(f"softsim_self_step returned {code}")
        collision.last_candidates = s.kept
        return s.corrected

    def _fail_safe(self, x, x_prev, keep_out, colliders) -> None:
        """The impact zones of the crossings the step found (``ImpactZones._fail_safe`` from its first crossings on),
        with the call's inverse masses and heavy flags when there are colliders."""
        collision, s = self.collision, self.s
        if s.crossings <= s.crossing_capacity:
            found = np.ascontiguousarray(self._crossings[:, :s.crossings].T)
        else:  # more than the buffer holds: the same crossings again, into a grown buffer
            count = s.witnesses
            split = int(np.searchsorted(collision.native_select.out_pos[:count], s.k))
            v, t, a, b = self._witness
            found = collision._crossings_of(x, self.x_start, v[:split].copy(), t[:split].copy(),
                                            a[:count - split].copy(), b[:count - split].copy())
        if keep_out is None:
            collision._fail_safe(x, x_prev, self.x_start, (), found)
            return
        inv_mass, heavy = collision.inv_mass, collision._heavy
        try:
            collision.inv_mass, collision._heavy = self.inv_call, self.heavy
            collision._fail_safe(x, x_prev, self.x_start, colliders, found)
        finally:
            collision.inv_mass, collision._heavy = inv_mass, heavy
