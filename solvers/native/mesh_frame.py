"""Python binding of the mesh colliders of a cloth's whole-frame call (``src/mesh_frame.c``, ``src/mesh_frame.h``).

``MeshFrame`` <-> the NumPy pipeline of a ``MeshCollider`` that stands still through its frame (``start`` None, no
travel): ``kept_planes.kept_contact`` (with ``MeshCollider._contact_rows``, ``_sides``, ``pseudo_normals``),
``find_contacts`` / ``resolve_contacts`` with its rows joined to the analytic colliders', ``MeshFacePairs.face_pairs``
(the kept Verlet list, ``_refresh``, ``_allowances``) and ``MeshFacePushes._face_passes``. The C code runs them inside
``softsim_cloth_substeps`` (``kernels.ClothFrame``); the kept state is the NumPy objects' own: the body's
``KeptPlanes`` arrays are written in place, the face-pair list (``mesh_face_pairs._FaceList`` in
``_Shared.face_cache``) is copied into this binding's buffers before a call and back after it, so the per-substep
path (a substep walked in sweeps, the next frame of a moving collider) reads what the frame left.

A collider that moves or deforms through the frame (``moving``, with MOVING_IN_FRAME) keeps no planes; its
``MeshCollider.contact`` (``_contact_rows``, ``_sides``), ``motion`` and face pairs with the travel run in C from each
substep's poses, which ``_fill_moving`` prepares from the posed colliders of every substep (``Collider.over``): their
vertices, normals and grids, their addresses in a table the C code reads per substep.

Validation: every array the C code reads is checked here (dtype, contiguity, shape, indices within range, finite
poses) when a frame is prepared; the body's triangles and edges are the ``AnalyticContacts`` binding's, checked
there, and must be the collider's own ``_body_edges`` of those triangles. The pair buffers start at CAPACITY pairs
of each kind and grow when a call says it needs more (status 3: the substep is restored and run again).
"""
import ctypes
from functools import cache

import numpy as np

from .kernels import F64, checked, checked_indices
from .library import pointer
from .mesh_kernels import MOVING_FINER, attach

CAPACITY = 4096
"""Pairs of each kind a collider's list holds at first (grown on demand)."""

_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double

_MESH_FIELDS = [  # mesh_frame.h, SoftsimStillMesh, in order
    ("row", _I), ("m", _I), ("t", _I), ("vertices", _P), ("triangles", _P),
    ("face_grid", _P), ("face_dims", _P), ("face_cell_start", _P), ("face_entry", _P), ("face_stamp", _P),
    ("face_normals", _P), ("vertex_normals", _P), ("side_normals", _P), ("thickness", _D), ("friction", _D),
    ("corner_count", _I), ("corners", _P), ("corner_grid", _P), ("corner_dims", _P), ("corner_cell_start", _P),
    ("corner_entry", _P), ("corner_stamp", _P),
    ("sharp_count", _I), ("sharp", _P), ("sharp_grid", _P), ("sharp_dims", _P), ("sharp_cell_start", _P),
    ("sharp_entry", _P), ("sharp_stamp", _P),
    ("piece_count", _I), ("piece_centres", _P), ("piece_radius", _D),
    ("plane_x0", _P), ("plane_normal", _P), ("plane_d0", _P), ("plane_clear", _P),
    ("list_state", _P), ("reference", _P), ("allowance", _P), ("capacity", _I),
    ("pair_corner", _P), ("pair_triangle", _P), ("pair_corner_d", _P), ("pair_edge", _P), ("pair_body_edge", _P),
    ("pair_edge_d", _P),
    ("cp_stencil", _P), ("cp_weights", _P), ("cp_direction", _P), ("cp_depth", _P), ("cp_slip", _P), ("cp_origin", _P),
    ("ep_stencil", _P), ("ep_weights", _P), ("ep_direction", _P), ("ep_depth", _P), ("ep_slip", _P), ("ep_origin", _P),
    ("at_depth", _P), ("at_slip", _P),
    ("save_reference", _P), ("save_allowance", _P), ("save_pair_corner", _P), ("save_pair_triangle", _P),
    ("save_pair_corner_d", _P), ("save_pair_edge", _P), ("save_pair_body_edge", _P), ("save_pair_edge_d", _P),
    ("save_state", _P), ("save_planes", _P),
    ("moving", _I), ("travel", _D), ("poses", _P), ("start_vertices", _P), ("start_face_normals", _P),
    ("start_vertex_normals", _P), ("start_side_normals", _P), ("start_face_grid", _P), ("start_face_dims", _P),
    ("start_face_cell_start", _P), ("start_face_entry", _P), ("drift", _D),
    ("pose_index", _I), ("cert_tri", _P), ("cert_pose", _P), ("cert_x", _P), ("cert_lower", _P), ("side_tri", _P),
    ("side_pose", _P), ("side_x", _P), ("side_lower", _P), ("pose_shift", _P), ("cert_counts", _P),
    ("cert_tri2", _P), ("side_tri2", _P), ("cert_rest", _P), ("side_rest", _P),
    ("piece_boxes", _P), ("nearest_hint", _P),
    ("lazy", _I), ("edge_count", _I), ("ready", _P), ("vertex_ready", _P), ("asked", _P), ("missing", _P),
    ("missing_count", _P), ("side_edge", _P), ("edge_start", _P), ("edge_faces", _P),
    ("translating", _I), ("offsets", _P), ("bounds", _P), ("far_hint", _I),
]

_FRAME_FIELDS = [  # mesh_frame.h, SoftsimMeshFrame, in order
    ("count", _I), ("meshes", _P), ("settings", _P), ("needs", _P),
    ("stale", _P), ("out_row", _P), ("out_tri", _P), ("out_interior", _P), ("crossing", _P),
    ("out_bary", _P), ("out_q", _P), ("out_d", _P),
    ("side_row", _P), ("side_tri", _P), ("side_interior", _P), ("side_bary", _P), ("side_q", _P), ("side_d", _P),
    ("side", _P), ("plane_d", _P), ("plane_n", _P), ("sums", _P), ("counts", _P),
    ("save_x", _P), ("save_v", _P), ("save_air", _P),
    ("mark", _P), ("beyond", _P), ("tri_rows", _P), ("edge_rows", _P), ("tri_reach", _P), ("edge_reach", _P),
    ("all_points", _P), ("m_row", _P), ("m_d", _P), ("m_normal", _P), ("m_dist", _P), ("m_work_i", _P),
    ("m_work_d", _P), ("motion", _P), ("m_hint", _P),
    ("memo_x", _P), ("memo_d", _P), ("memo_n", _P), ("memo_dist", _P), ("memo_limit", _P), ("memo_state", _P),
    ("memo_rows", _P), ("own_x", _P), ("own_x_prev", _P), ("own_before", _P),
]


_LIST_FIELDS = [name for name, _ in _MESH_FIELDS].index("list_state")
_MOVING_FIELDS = [name for name, _ in _MESH_FIELDS].index("moving")
"""The fields from _LIST_FIELDS up to _MOVING_FIELDS are the buffers of ``_Still`` (pointers, and ``capacity``)."""
POSE_FIELDS = 8
"""Addresses per substep of a moving collider's poses (mesh_frame.h SOFTSIM_POSE_FIELDS)."""
DRIFT = (1e-9, 1e-12)
"""A moving collider's grids are built on its pose at the frame's end and queried travel (1 + DRIFT[0]) +
DRIFT[1] (1 + its largest coordinate) [m] wider: an interpolated pose's vertex lies within the travel of its place
there, up to the rounding of the interpolation (a few ulps of the coordinates). Wider only adds candidates."""


class _MeshStruct(ctypes.Structure):
    _fields_ = _MESH_FIELDS


class _FrameStruct(ctypes.Structure):
    _fields_ = _FRAME_FIELDS


MOVING_IN_FRAME = True
"""Whether the whole-frame call takes mesh colliders that move or deform through the frame (``moving``): each
substep's poses (the end pose and the start pose the step's sides are read at, their normals and grids) are prepared
here and the C code runs the moving collider's pipeline (contact planes without kept planes, the surface's motion in
the contact margin and the friction, the face-pair list with the travel, the pushes from the start pose). False sends
them substep by substep (``PositionBasedSolver.step``)."""


@cache
def _mesh_collider_type():
    """The MeshCollider class, imported on first use (the collision package imports this one's kernels) and then
    kept: ``still``, ``translating`` and ``moving`` ask for it several times a frame for every collider."""
    from ..collision.colliders.mesh_collider import MeshCollider

    return MeshCollider


def moving(collider) -> bool:
    """Whether ``collider`` is a mesh collider with triangles moving or deforming through its frame (``start`` a pose
    of the same vertices)."""
    return (type(collider) is _mesh_collider_type() and collider.start is not None and len(collider.triangles) > 0
            and collider.start.vertices.shape == collider.vertices.shape and collider._own_frame() is None)


def framed(collider) -> bool:
    """Whether the whole-frame call takes ``collider`` as a mesh row: still, translating, or moving with
    MOVING_IN_FRAME."""
    return still(collider) or translating(collider) or (MOVING_IN_FRAME and moving(collider))


def translating(collider) -> bool:
    """Whether ``collider`` is a mesh collider with triangles whose poses through the frame are a still collider's
    translated (``MeshCollider.translation``): the whole-frame call runs its anchor's still pipeline in the anchor's
    frame, the points less each substep's offsets."""
    return type(collider) is _mesh_collider_type() and len(collider.triangles) > 0 and collider._own_frame() is not None


def still(collider) -> bool:
    """Whether ``collider`` is a mesh collider with triangles standing still through its frame
    (``MeshCollider.contact``'s ``kept_contact`` path)."""
    return (type(collider) is _mesh_collider_type() and collider.start is None and collider.shared.travel == 0.0
            and len(collider.triangles) > 0 and collider.translation is None)


SPHERES_BESIDE_MESHES = True
"""Whether the whole-frame call takes spheres beside still mesh colliders (``softsim_mesh_frame_finish`` runs the
sphere face push of src/sphere_faces.h in table order; tests/test_native_mesh_sphere_frame.py holds those frames
equal to the per-substep path and NumPy to round-off, as the sphere-only frames are). A 31 x 31 cloth over a box, a
sphere and the ground: 21-28 ms a frame this way against 254-294 substep by substep (same process, machine loaded).
False sends such colliders substep by substep."""


def frame_supports(colliders, library=None) -> bool:
    """Whether a whole-frame call covers ``colliders``: ground planes and spheres (``AnalyticContacts.supports``), or
    ground planes and mesh colliders, still or, with MOVING_IN_FRAME, moving or deforming (``framed``), with spheres
    too when SPHERES_BESIDE_MESHES; mesh colliders go substep by substep when ``library`` (the frame's
    ``NativeLibrary``) has its mesh kernels refused by their self-test (``NativeLibrary.ready``)."""
    from ..collision.colliders.shapes import GroundPlane, Sphere

    meshes = [c for c in colliders if framed(c)]
    if not meshes:
        return all(type(c) is GroundPlane or type(c) is Sphere for c in colliders)
    if library is not None and not library.ready("mesh"):
        return False
    return all(type(c) is GroundPlane or framed(c) or (SPHERES_BESIDE_MESHES and type(c) is Sphere) for c in colliders)


def _same(a, b) -> bool:
    """The same object, or equal numbers."""
    return a is b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def _settings() -> np.ndarray:
    """The pipeline's constants in mesh_frame.c's order (SoftsimMeshFrame.settings): SEARCH_MARGIN, SIDE_MARGIN, SKIN,
    KEPT_DRIFT, LINEAR_DRIFT, REFRESH_SHARE, MAX_ALLOWANCE, FACE_PASSES, CERTIFICATE_MARGIN."""
    from ..collision.broad_phase.mesh_broad_phase import SKIN
    from ..collision.broad_phase.mesh_face_pairs import MAX_ALLOWANCE, REFRESH_SHARE
    from ..collision.colliders.kept_planes import KEPT_DRIFT
    from ..collision.colliders.mesh_collider import FACE_PASSES, SEARCH_MARGIN, SIDE_MARGIN
    from ..collision.response.mesh_pushes import LINEAR_DRIFT

    return np.array([SEARCH_MARGIN, SIDE_MARGIN, SKIN, KEPT_DRIFT, LINEAR_DRIFT, REFRESH_SHARE, MAX_ALLOWANCE,
                     FACE_PASSES, CERTIFICATE_MARGIN], np.float64)


def allowances(library, x, edges, points, centres, radius: float, travel: float, thickness: float) -> np.ndarray:
    """``MeshFacePairs._allowances`` of the points (k,) of a body at x (n, 3) float64 with edges (e, 2) int64, beside a
    collider's sharp-edge pieces with centres (p, 3) [m] (``_Shared.edge_tree_for``'s tree data), their largest radius,
    the collider's travel and thickness [m]: (k,) [m], in the order of points (``softsim_mesh_allowances``, the face-pair
    list's own in the whole-frame call)."""
    x = checked("x", x, F64, (None, 3))
    edges = checked_indices("edges", edges, len(x), (None, 2))
    points = checked_indices("points", points, len(x), (None,))
    by_axis = np.ascontiguousarray(checked("centres", centres, F64, (None, 3)).T)
    numbers = (radius, travel, thickness)
    if not (np.all(np.isfinite(by_axis)) and np.all(np.isfinite(numbers)) and min(numbers) >= 0.0):
        raise ValueError("centres, radius, travel and thickness: finite, and the last three >= 0")
    settings = _settings()
    boxes, out = np.zeros(6 * max(len(centres), 1)), np.zeros(len(x))
    library.softsim_mesh_allowances(pointer(x), len(x), pointer(edges), len(edges), pointer(by_axis), len(centres),
                                    float(radius), float(travel), float(thickness), pointer(settings), pointer(boxes),
                                    pointer(points), len(points), pointer(out))
    return out[points]


class _Still:
    """One still mesh collider's buffers (kept per collider topology and thickness across frames) and struct."""

    def __init__(self, n: int):
        self.n = n
        self.list_state = np.zeros(3, np.int64)
        self.save_state = np.zeros(5, np.int64)
        self.reference, self.allowance = np.zeros((n, 3)), np.zeros(n)
        self.save_reference, self.save_allowance = np.zeros((n, 3)), np.zeros(n)
        self.save_planes = np.zeros(8 * n)
        self.nearest_hint = np.full(n, -1, np.int64)  # each point's last nearest triangle (C-side only)
        self.lazy = None  # a moving collider's ``_LazyNormals`` of the frame
        self.lazy_m = -1  # the vertex count they were for
        self._pairs(CAPACITY)

    def _pairs(self, capacity: int) -> None:
        self.capacity = capacity
        c = capacity
        self.pair_corner, self.pair_triangle, self.pair_corner_d = np.zeros(c, np.int64), np.zeros(c, np.int64), np.zeros(c)
        self.pair_edge, self.pair_body_edge, self.pair_edge_d = np.zeros(c, np.int64), np.zeros(c, np.int64), np.zeros(c)
        self.save_pair_corner, self.save_pair_triangle = np.zeros(c, np.int64), np.zeros(c, np.int64)
        self.save_pair_corner_d = np.zeros(c)
        self.save_pair_edge, self.save_pair_body_edge = np.zeros(c, np.int64), np.zeros(c, np.int64)
        self.save_pair_edge_d = np.zeros(c)
        self.cp_stencil, self.cp_weights = np.zeros((c, 3), np.int64), np.zeros((c, 3))
        self.ep_stencil, self.ep_weights = np.zeros((c, 2), np.int64), np.zeros((c, 2))
        for kind in ("cp", "ep"):
            for name in ("direction", "slip", "origin"):
                setattr(self, f"{kind}_{name}", np.zeros((c, 3)))
            setattr(self, f"{kind}_depth", np.zeros(c))
        self.at_depth, self.at_slip = np.zeros(c), np.zeros((c, 3))

    def grow(self, pairs: int) -> None:
        """Room for at least ``pairs`` pairs of each kind (the list's content kept)."""
        kept = [(name, getattr(self, name)) for name in ("pair_corner", "pair_triangle", "pair_corner_d", "pair_edge",
                                                          "pair_body_edge", "pair_edge_d")]
        self._pairs(max(int(pairs * 1.5) + 16, 2 * self.capacity))
        for name, old in kept:
            getattr(self, name)[:len(old)] = old


CERTIFICATE_MARGIN = 0.0125
"""[m] How far past a point's nearest triangle a moving collider's query looks, so that its certificate (mesh_query.h
MeshCertificates) proves the same answer for the point's next queries until it and the collider's pose have moved
that far together; a wider margin makes every query dearer. On the bench's boxes sliding under the cloth (engine, 24
frames, two runs each): the level-6 box (49k triangles) 65-74 ms a frame at 0.05 m (``SEARCH_MARGIN``), 55 at
0.025, 46-54 at 0.0125, 51-57 at 0.005, two answers in three certified at 0.05 and 0.0125 alike; level 4 (3k) 15.2
at 0.05, 13.1 at 0.0125; the 12-triangle box 8.2-9.1 either way. The answers do not depend on it."""

LAZY_NORMALS = True
"""Whether the whole-frame call derives a moving collider's normals on first use (``_LazyNormals``) rather than
every pose's normals up front (``FramePoses.normals``): it reads those of the triangles nearest the cloth's points
only, a few per cent of a large collider's."""
LAZY_MIN_TRIANGLES = 512
"""... for a collider of at least this many triangles: a small one's normals of every pose cost less up front than
the lazy set-up (bench/profile_mesh_collider.py, the box sliding under the cloth, best of three, ms a frame lazy /
up front: 12 triangles 9.3-9.5 / 9.1-9.3, 192 10.4-10.8 / 10.3, 768 11.3-11.6 / 12.0-12.2, 3072 13.0 / 15.1-15.2).
Both give the same bits."""


class _LazyNormals:
    """A moving collider's normals in the whole-frame call, derived where the C code reads them (mesh_query.h
    MeshLazyPose): each pose's face and edge normals by the C code itself; the vertices' angle-weighted pseudo-normals,
    whose arccos is NumPy's, here (``compute``), for every pose of the frame at once, when the C code asks for them
    (status 3 with ``needs`` [row, -1]: the substep runs again) and up front for the vertices the collider's frame
    before asked for. Every normal has ``mesh_collider.pose_normals``' bits. The normals arrays are the collider's
    pool's (``PoseBuffers``), element by element: face (t, poses, 3), edge (e, poses, 3), vertex (m, poses, 3) (an
    element's normals of every pose side by side: a frame derives the few elements near the body, and laid out pose by
    pose they would touch a page of every pose's rows each); ready flags (t + e, poses) say which hold a normal of this
    frame."""

    def __init__(self, collider, frame, wanted=None):
        """collider: a moving ``MeshCollider``; frame: its ``FramePoses`` of this frame (vertices checked by the
        caller); wanted: vertex ids whose normals to compute now, or None."""
        shared = collider.shared
        self.frame = frame
        poses, m = frame.vertices.shape[:2]
        self.triangles = checked_indices("triangles", np.ascontiguousarray(collider.triangles, np.int64), m, (None, 3))
        t = len(self.triangles)
        edge_start, edge_faces = shared.edge_faces
        e = len(edge_start) - 1
        self.side_edge = checked_indices("side edges", np.ascontiguousarray(shared.side_edge, np.int64), max(e, 1),
                                         (t, 3))
        self.edge_faces = checked_indices("edge faces", edge_faces, max(t, 1), (3 * t,))
        self.edge_start = checked("edge starts", edge_start, np.dtype(np.int64), (e + 1,))
        if e and (edge_start[0] != 0 or edge_start[-1] != 3 * t or np.any(np.diff(edge_start) < 0)):
            raise ValueError("edge starts: must rise from 0 to 3 t")
        self.ring = shared.vertex_triangles
        take = shared.pose_buffers.take
        self.face, self.edge = take("lazy face", (t, poses, 3)), take("lazy edge", (e, poses, 3))
        self.vertex = take("lazy vertex", (m, poses, 3))
        self.ready = take("lazy ready", (t + e, poses), np.uint8)
        self.ready.fill(0)
        self.vertex_ready, self.asked = np.zeros(m, np.uint8), np.zeros(m, np.uint8)
        self.missing, self.missing_count = np.zeros(m, np.int64), np.zeros(1, np.int64)
        self.edge_count = e
        self.computed = 0
        """Vertices whose normals ``compute`` derived this frame (for tests and profiles)."""
        if wanted is not None and len(wanted):
            self.compute(wanted)

    def attach(self, s) -> None:
        """Point the collider's struct (mesh_frame.h) at these arrays."""
        s.lazy, s.edge_count = 1, self.edge_count
        for name in ("ready", "vertex_ready", "asked", "missing", "missing_count", "side_edge", "edge_start",
                     "edge_faces"):
            setattr(s, name, pointer(getattr(self, name)))

    def compute(self, vertices) -> None:
        """The pseudo-normals of ``vertices`` (ids) at every pose of the frame, marked ready: ``pose_normals`` of the
        triangles around them, numbered anew (each vertex's terms are summed in the same order, so the same bits)."""
        from ..collision.broad_phase.self_pairs import _csr_rows
        from ..collision.colliders.mesh_collider import pose_normals

        wanted = np.unique(np.asarray(vertices, np.int64))
        if not len(wanted):
            return
        start, triangles = self.ring
        around = np.unique(triangles[_csr_rows(start, wanted)[1]])
        used, local = np.unique(self.triangles[around], return_inverse=True)
        local = local.reshape(-1, 3)
        _, normals, _ = pose_normals(self.frame.vertices[:, used], local, np.arange(local.size).reshape(-1, 3))
        self.vertex[wanted] = normals[:, np.searchsorted(used, wanted)].transpose(1, 0, 2)
        self.vertex_ready[wanted] = 1
        self.computed += len(wanted)

    def compute_missing(self) -> None:
        """``compute`` the vertices the C code asked for and found missing (it lists each once: none listed would run
        the substep again to the same end)."""
        count = int(self.missing_count[0])
        if count == 0:
            raise RuntimeError("lazy normals: the C code found vertex normals missing and listed none")
        self.compute(self.missing[:count])
        self.missing_count[0] = 0

    def asked_vertices(self) -> np.ndarray:
        """The vertices whose normals the C code read (or asked for) this frame."""
        return np.flatnonzero(self.asked)


class MeshFrame:
    """The still mesh colliders of a cloth's ``ClothFrame``: n particles, the body's triangles (t, 3) and edges (e, 2)
    of its ``AnalyticContacts`` (checked there). ``prepare`` per frame (which collider rows are still meshes, their
    poses, grids, normals, planes and lists), ``load`` / ``store`` around every C call, ``grow`` on status 3."""

    def __init__(self, library, n: int, triangles, edges):
        self.library = library
        self.n = n
        self.triangles, self.edges = triangles, edges
        self.settings = _settings()
        self.needs = np.zeros(2, np.int64)
        t, e = len(triangles), len(edges)
        ints = ("stale", "out_row", "out_tri", "out_interior", "crossing", "side_row", "side_tri", "side_interior",
                "mark", "beyond")
        for name in ints:
            setattr(self, name, np.zeros(n, np.int64))
        for name in ("out_bary", "out_q", "side_bary", "side_q", "plane_n", "sums", "save_x", "save_v", "own_x",
                     "own_x_prev", "own_before"):
            setattr(self, name, np.zeros((n, 3)))
        for name in ("out_d", "side_d", "side", "plane_d", "counts"):
            setattr(self, name, np.zeros(n))
        self.save_air = np.zeros(2)
        self.all_points, self.m_row = np.arange(n, dtype=np.int64), np.zeros(n, np.int64)
        self.m_d, self.m_normal, self.m_dist = np.zeros(n), np.zeros((n, 3)), np.zeros(n)
        self.m_work_i, self.m_work_d, self.motion = np.zeros(6 * n, np.int64), np.zeros(14 * n), np.zeros((n, 3))
        self.m_hint = np.full(n, -1, np.int64)  # each point's last nearest triangle: a first guess (C-side only)
        # a moving collider's planes of a step's first resolve, reused by its second (C-side only)
        self.memo_x, self.memo_d, self.memo_n, self.memo_dist = np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros(n)
        self.memo_limit, self.memo_state, self.memo_rows = np.zeros(1), np.zeros(4, np.int64), np.zeros(n, np.int64)
        self.tri_rows, self.tri_reach = np.zeros(t, np.int64), np.zeros(t)
        self.edge_rows, self.edge_reach = np.zeros(e, np.int64), np.zeros(e)
        self.struct = _FrameStruct()
        for name, _ in _FRAME_FIELDS[2:]:
            setattr(self.struct, name, pointer(getattr(self, name)))
        self.kept = {}
        """{(id of the collider's shared, thickness): _Still}: buffers kept across frames."""
        self.active = []
        """The frame's (collider, _Still, planes, face-list key) in table order."""
        self.body_triangles = None
        self._edges_checked = {}
        """{id: array} of the body-edge arrays of colliders (``_body_edges``) found equal to ``edges``."""
        self.fast = 0
        """Frames whose still colliders' structs were those of the frame before (the same arrays and buffers)."""

    def prepare(self, colliders, x, body_triangles, posed=None) -> None:
        """The frame's still mesh colliders among ``colliders`` (their table rows are their positions in it), for a
        body at x (n, 3) whose collision triangles are the array ``body_triangles`` (the very array the NumPy pipeline
        is handed: its face-pair lists are kept per array); posed: the posed colliders of every substep
        (``Collider.over``), needed with a moving collider. ValueError for anything the C code cannot take."""
        if body_triangles is not self.body_triangles:  # checked once per array
            if not np.array_equal(np.asarray(body_triangles, np.int64).reshape(-1, 3), self.triangles):
                raise ValueError("body triangles: must be the contacts binding's triangles")
            self.body_triangles = body_triangles
        self.active = []
        rows = [row for row, collider in enumerate(colliders) if framed(collider)]
        meshes = (_MeshStruct * max(1, len(rows)))()
        for row in rows:
            collider = colliders[row]
            attach(self.library, [collider])
            native = collider.shared.native
            if native is None:
                raise ValueError(f"mesh collider {collider.name!r}: no triangles")
            edges = collider._body_edges(body_triangles)
            if self._edges_checked.get(id(edges)) is not edges:  # each collider's array, checked once
                if not np.array_equal(edges, self.edges):
                    raise ValueError("body edges: must be the collider's edges of the body triangles")
                if len(self._edges_checked) >= 64:
                    self._edges_checked.clear()
                self._edges_checked[id(edges)] = edges
            thickness = float(collider.thickness)
            if not (np.isfinite(thickness) and thickness >= 0.0 and np.isfinite(collider.friction)):
                raise ValueError(f"mesh collider {collider.name!r}: thickness and friction must be finite")
            if translating(collider):
                self._prepare_translating(meshes[len(self.active)], row, collider, x, posed)
                continue
            if not still(collider):  # moving: buffers per row (its topology's shared is new every frame)
                if posed is None or len(posed) == 0:
                    raise ValueError(f"mesh collider {collider.name!r}: a moving collider needs its posed substeps")
                key = ("moving", row, thickness, collider.vertices.shape, collider.triangles.shape)
                mine = self.kept.get(key)
                if mine is None:
                    mine = self.kept[key] = _Still(self.n)
                mine.shared = collider.shared
                mine.collider = collider
                self._fill_moving(meshes[len(self.active)], row, collider, native, mine, posed)
                self.active.append((collider, mine, None))
                continue
            self._still_row(meshes[len(self.active)], row, collider, native, x)
        self._meshes = meshes
        self.struct.count = len(self.active)
        self.struct.meshes = ctypes.addressof(meshes)

    def _prepare_translating(self, s, row, collider, x, posed) -> None:
        """The struct of a translating collider (``collider``: its pose of substep 1): its anchor's, as a still
        collider's (``_fill``: the anchor's grids, kept planes and face-pair list), with the offsets of every substep
        (``posed[k][row]``'s ``translation`` and its start's, which the per-substep path reads)."""
        if posed is None or len(posed) == 0:
            raise ValueError(f"mesh collider {collider.name!r}: a translating collider needs its posed substeps")
        first = collider._own_frame()[0]
        anchor = collider._anchored(first)
        attach(self.library, [anchor])
        native = anchor.shared.native
        if native is None:
            raise ValueError(f"mesh collider {collider.name!r}: no native queries for its anchor")
        owns = [step[row]._own_frame() if type(step[row]) is type(collider) else None for step in posed]
        for k, own in enumerate(owns):
            if own is None or own[0] is not first:
                raise ValueError(f"mesh collider {collider.name!r}: substep {k + 1} is not a translation of its anchor")
        offsets = np.array([own[1:] for own in owns], np.float64).reshape(len(posed), 6)
        if not np.all(np.isfinite(offsets)):
            raise ValueError(f"mesh collider {collider.name!r}: its offsets must be finite")
        mine = self._still_row(s, row, anchor, native, x - offsets[0, 3:])  # the body where it lies in its frame
        mine.offsets = offsets
        s.translating, s.offsets = 1, pointer(offsets)

    def _still_row(self, s, row, collider, native, x):
        """The struct of a still collider's row (``_fill``) with its buffers (kept per collider topology and
        thickness) and kept_contact's planes of a body at x (n, 3), picked as it picks them; returns the buffers."""
        from ..collision.colliders.kept_planes import body_planes

        key = (id(collider.shared), float(collider.thickness))
        mine = self.kept.get(key)
        if mine is None or mine.shared is not collider.shared:
            mine = self.kept[key] = _Still(self.n)
            mine.shared = collider.shared
        mine.collider = collider
        planes = body_planes(collider, x)
        self._fill(s, row, collider, native, mine, planes)
        self.active.append((collider, mine, planes))
        return mine

    def _fill(self, s, row, collider, native, mine, planes) -> None:
        n, m = self.n, len(collider.vertices)
        vertices = collider.vertices
        known = getattr(mine, "keep", None)
        if known is not None and (known[0] is vertices or (known[0].shape == vertices.shape
                                                           and np.array_equal(known[0], vertices))):
            vertices = known[0]  # a still collider read anew with the same vertices: the grids of these serve
        grid = native.faces.grid_for(vertices)  # checks vertices (float64, (m, 3), finite)
        # A frame like the last one (the same arrays, grids and buffers, all checked then): its struct again.
        sources = self._sources(row, vertices, grid, collider, native, mine, planes)
        last = getattr(mine, "sources", None)
        if (last is not None and len(last) == len(sources) and all(_same(a, b) for a, b in zip(last, sources))
                and self._grids_current(native, vertices, mine)):
            ctypes.memmove(ctypes.addressof(s), ctypes.addressof(mine.saved), ctypes.sizeof(_MeshStruct))
            mine.struct = s
            self.fast += 1
            return
        mine.sources = None
        t = len(native.triangles)
        face_normals = checked("face normals", np.ascontiguousarray(collider.face_normals, np.float64), F64, (t, 3))
        vertex_normals, side_normals = (np.ascontiguousarray(a, np.float64) for a in collider._feature_normals())
        checked("vertex normals", vertex_normals, F64, (m, 3))
        checked("side normals", side_normals, F64, (t, 3, 3))
        corners = checked_indices("corners", np.ascontiguousarray(collider.shared.corners, np.int64), m, (None,))
        sharp = checked_indices("sharp edges", np.ascontiguousarray(collider.shared.edges, np.int64), m, (None, 2))
        native.gridded(corners, sharp)
        if len(sharp):
            tree, radius = collider.shared.edge_tree_for(vertices)
            centres = np.ascontiguousarray(np.asarray(tree.data, np.float64).T)  # by axis (mesh_frame.h)
        else:
            centres, radius = np.zeros((3, 0)), 0.0
        checked("piece centres", centres, F64, (3, None))
        if not (np.all(np.isfinite(centres)) and np.isfinite(radius)):
            raise ValueError("piece centres: must be finite")
        for name, array, shape in (("planes x0", planes.x0, (n, 3)), ("planes normal", planes.normal, (n, 3)),
                                   ("planes d0", planes.d0, (n,)), ("planes clear", planes.clear, (n,))):
            checked(name, array, F64, shape)
        mine.keep = (vertices, face_normals, vertex_normals, side_normals, corners, sharp, centres, planes, grid)
        s.row, s.m, s.t = row, m, t
        s.vertices, s.triangles = pointer(vertices), native.faces.pointer
        s.face_grid, s.face_dims, s.face_cell_start, s.face_entry = grid.pointers
        s.face_stamp = native.faces.stamp_pointer
        s.face_normals, s.vertex_normals, s.side_normals = map(pointer, (face_normals, vertex_normals, side_normals))
        s.thickness, s.friction = float(collider.thickness), float(collider.friction)
        s.corner_count, s.corners = len(corners), pointer(corners)
        s.sharp_count, s.sharp = len(sharp), pointer(sharp)
        # The grids are kept alive here: the per-substep code between calls may drop them from MeshClosest's own.
        grids = [grid]
        if len(corners):
            grids.append(native.corners.grid_for(vertices))
            s.corner_grid, s.corner_dims, s.corner_cell_start, s.corner_entry = grids[-1].pointers
            s.corner_stamp = native.corners.stamp_pointer
        if len(sharp):
            grids.append(native.sharp.grid_for(vertices))
            s.sharp_grid, s.sharp_dims, s.sharp_cell_start, s.sharp_entry = grids[-1].pointers
            s.sharp_stamp = native.sharp.stamp_pointer
        piece_boxes = np.zeros(6 * centres.shape[1])  # the allowances' scratch (mesh_frame.h)
        bounds = checked("box", np.ascontiguousarray(collider.box(), np.float64), F64, (6,))
        mine.keep = mine.keep + (bounds, piece_boxes, grids, native.faces, native.corners, native.sharp)
        s.piece_count, s.piece_centres, s.piece_radius = centres.shape[1], pointer(centres), float(radius)
        s.piece_boxes, s.nearest_hint, s.bounds = pointer(piece_boxes), pointer(mine.nearest_hint), pointer(bounds)
        s.plane_x0, s.plane_normal, s.plane_d0, s.plane_clear = map(pointer, (planes.x0, planes.normal, planes.d0,
                                                                              planes.clear))
        mine.struct = s
        self._buffers(mine)
        mine.saved = _MeshStruct.from_buffer_copy(s)
        # What the struct was made of, read again: the normals and the corner and sharp-edge grids derived above are
        # the collider's now, so the next frame's read, which takes them over (``MeshCollider.moving_from``), is fast.
        mine.sources = self._sources(row, vertices, grid, collider, native, mine, planes)

    @staticmethod
    def _sources(row, vertices, grid, collider, native, mine, planes) -> tuple:
        """What a still collider's struct is made of (``_fill``): the same objects and numbers, the same struct."""
        return (row, vertices, grid, native.corners, native.sharp, collider.__dict__.get("face_normals"),
                collider.__dict__.get("_pseudo"), collider.shared.corners, collider.shared.edges, planes.x0,
                planes.normal, planes.d0, planes.clear, float(collider.thickness), float(collider.friction),
                mine.capacity)

    def _fill_moving(self, s, row, collider, native, mine, posed) -> None:
        """The struct of a moving collider (``collider``: its pose of substep 1): its topology, thickness, friction,
        travel, corners, sharp edges and pieces, its grids (the triangles' halfway between the frame's start and end
        poses, the corners' and sharp edges' at the frame's end) queried DRIFT wider, and per substep the addresses
        of its poses (mesh_frame.h): the end pose and the start pose of each substep's posed collider
        (``posed[k][row]``, whose vertices and normals the per-substep path reads) with their normals
        (``MeshCollider._normals_at_pose``). Every array is checked here; the arrays are kept alive with the buffers
        until the next prepare."""
        n, m, t = self.n, len(collider.vertices), len(native.triangles)
        corners = checked_indices("corners", np.ascontiguousarray(collider.shared.corners, np.int64), m, (None,))
        sharp = checked_indices("sharp edges", np.ascontiguousarray(collider.shared.edges, np.int64), m, (None, 2))
        native.gridded(corners, sharp)
        first = posed[0][row]
        if len(sharp):
            # the pieces where the per-substep path builds its k-d tree over them (``edge_tree_for``: the first pose
            # that asks, substep 1's end pose, for the first list); their centres are all the C code reads of it
            pieces = collider.shared.edge_pieces
            centres = np.ascontiguousarray(pieces.centres(first.vertices).T, np.float64)
            radius = pieces.radius(first.vertices)
        else:
            centres, radius = np.zeros((3, 0)), 0.0
        checked("piece centres", centres, F64, (3, None))
        if not (np.all(np.isfinite(centres)) and np.isfinite(radius)):
            raise ValueError("piece centres: must be finite")
        travel = float(collider.shared.travel)
        if not (np.isfinite(travel) and travel >= 0.0):
            raise ValueError(f"mesh collider {collider.name!r}: travel must be finite")
        poses = np.zeros((len(posed), POSE_FIELDS), np.int64)
        piece_boxes = np.zeros(6 * centres.shape[1])  # the allowances' scratch (mesh_frame.h)
        keep = [corners, sharp, centres, poses, piece_boxes]
        # The frame before is done with its poses: let go of them, so that the pool (``PoseBuffers``) hands their
        # arrays to this frame's instead of new ones (the struct pointing into them is replaced by this prepare).
        wanted = mine.lazy.asked_vertices() if mine.lazy is not None else None
        mine.keep = mine.lazy = None
        frame = self._frame_of(row, collider, posed, m)
        batch = None
        if frame is not None and LAZY_NORMALS and t >= LAZY_MIN_TRIANGLES:
            mine.lazy = _LazyNormals(collider, frame, wanted if wanted is not None and mine.lazy_m == m else None)
            mine.lazy.attach(s)
            keep.append(mine.lazy)
            batch = (frame.vertices, mine.lazy.face, mine.lazy.vertex, mine.lazy.edge)
            pose_axes = (0, 1, 1, 1)  # the lazy normals: element by element (``_LazyNormals``)
        elif frame is not None:
            batch = (frame.vertices,) + self._frame_normals(frame, collider, m, t)
            pose_axes = (0, 0, 0, 0)
        mine.lazy_m = m
        if batch is not None:  # addresses into the frame's pose arrays, checked once
            keep += list(batch)
            stride = np.arange(len(posed) + 1, dtype=np.int64)
            # pose k's first row of each array
            fields = [pointer(a) + stride * a.strides[axis] for a, axis in zip(batch, pose_axes)]
            poses[:, :4] = np.stack(fields, axis=1)[1:]
            poses[:, 4:] = np.stack(fields, axis=1)[:-1]
        for k, step in enumerate(posed if batch is None else ()):
            end = step[row]
            if type(end) is not type(collider) or end.start is None or end.shared is not collider.shared:
                raise ValueError(f"mesh collider {collider.name!r}: substep {k + 1} is not a pose of its motion")
            fields = []
            for pose in (end, end.start):
                vertices, face, vertex, side = pose._normals_at_pose()
                checked("vertices", vertices, F64, (m, 3))
                checked("face normals", face, F64, (t, 3))
                checked("vertex normals", vertex, F64, (m, 3))
                checked("side normals", side, F64, (t, 3, 3))
                fields += [pointer(vertices), pointer(face), pointer(vertex), pointer(side)]
                keep += [vertices, face, vertex, side]
            poses[k] = fields
        # Every pose of the frame interpolates the frame's start and end (``Collider.over``), poses 0 and K: a vertex
        # lies within the travel of its place at the end, to round-off (DRIFT's margins), and within half of it of
        # its place halfway, where the triangles' grid is built (the C code widens its queries by drift_at). The
        # collider handed here is substep 1's (poses 0 and 1 of K): the frame's ends are the first substep's start
        # and the last one's end. The grids hold arrays of their own (a copy of the end): a grid keeps its vertices,
        # and a pose's view would keep the pool's array of the frame's poses from the next frame (``PoseBuffers``).
        start = posed[0][row].start.vertices
        vertices = np.array(posed[-1][row].vertices, np.float64)
        halfway = start + 0.5 * (vertices - start)
        grids = [native.faces.grid_for(halfway, MOVING_FINER)]  # checks it (float64, (m, 3), finite)
        for kind in (native.corners, native.sharp):
            grids.append(kind.grid_for(vertices) if len(kind.elements) else None)
        if getattr(mine, "planes", None) is None:  # a moving collider keeps no planes: zeros the C code never reads
            mine.planes = (np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n), np.zeros(n))
        mine.keep = tuple(keep) + (vertices, grids, native.faces, native.corners, native.sharp)
        mine.sources = None
        s.row, s.m, s.t = row, m, t
        s.vertices, s.face_normals, s.vertex_normals, s.side_normals = (int(a) for a in poses[0, :4])
        s.triangles = native.faces.pointer
        s.face_grid, s.face_dims, s.face_cell_start, s.face_entry = grids[0].pointers
        s.face_stamp = native.faces.stamp_pointer
        s.thickness, s.friction = float(collider.thickness), float(collider.friction)
        s.corner_count, s.corners = len(corners), pointer(corners)
        s.sharp_count, s.sharp = len(sharp), pointer(sharp)
        if grids[1] is not None:
            s.corner_grid, s.corner_dims, s.corner_cell_start, s.corner_entry = grids[1].pointers
        if grids[2] is not None:
            s.sharp_grid, s.sharp_dims, s.sharp_cell_start, s.sharp_entry = grids[2].pointers
        s.corner_stamp, s.sharp_stamp = native.corners.stamp_pointer, native.sharp.stamp_pointer
        s.piece_count, s.piece_centres, s.piece_radius = centres.shape[1], pointer(centres), float(radius)
        s.piece_boxes = pointer(piece_boxes)
        s.plane_x0, s.plane_normal, s.plane_d0, s.plane_clear = map(pointer, mine.planes)
        s.moving, s.travel, s.poses = 1, travel, pointer(poses)
        s.drift = travel * (1.0 + DRIFT[0]) + DRIFT[1] * (1.0 + float(np.abs(vertices).max(initial=0.0)))
        self._certificates(s, mine, len(posed))
        mine.struct = s
        self._buffers(mine)

    def _certificates(self, s, mine, substeps: int) -> None:
        """A moving collider's certificates of its nearest triangles (mesh_frame.h), none holding yet: they are of
        this frame's poses. The buffers are kept with the collider's (``mine``); ``mine.cert_counts`` adds up the
        answers certified and queried."""
        n = self.n
        if getattr(mine, "cert_tri", None) is None or len(mine.pose_shift) != substeps + 1:
            mine.cert_tri, mine.cert_pose = np.empty(n, np.int64), np.zeros(n, np.int64)
            mine.cert_x, mine.cert_lower = np.zeros((n, 3)), np.zeros(n)
            mine.side_tri, mine.side_pose = np.empty(n, np.int64), np.zeros(n, np.int64)
            mine.side_x, mine.side_lower = np.zeros((n, 3)), np.zeros(n)
            mine.cert_tri2, mine.side_tri2 = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
            mine.cert_rest, mine.side_rest = np.zeros(n), np.zeros(n)
            mine.pose_shift = np.empty(substeps + 1)
            if getattr(mine, "cert_counts", None) is None:
                mine.cert_counts = np.zeros(2, np.int64)
            mine.cert_pointers = tuple(map(pointer, (
                mine.cert_tri, mine.cert_pose, mine.cert_x, mine.cert_lower, mine.side_tri, mine.side_pose,
                mine.side_x, mine.side_lower, mine.pose_shift, mine.cert_counts, mine.cert_tri2, mine.side_tri2,
                mine.cert_rest, mine.side_rest)))
        mine.cert_tri.fill(-2)
        mine.side_tri.fill(-2)
        mine.pose_shift.fill(np.nan)
        mine.pose_shift[0] = 0.0
        s.pose_index = 0
        (s.cert_tri, s.cert_pose, s.cert_x, s.cert_lower, s.side_tri, s.side_pose, s.side_x, s.side_lower,
         s.pose_shift, s.cert_counts, s.cert_tri2, s.side_tri2, s.cert_rest, s.side_rest) = mine.cert_pointers

    @staticmethod
    def _frame_of(row, collider, posed, m):
        """The collider's ``FramePoses`` when every substep k's posed collider (``posed[k - 1][row]``) is pose k of it
        (its start pose k - 1), its vertices (K + 1, m, 3) checked (dtype, shape, contiguity, finite); else None (the
        poses are read one by one)."""
        from ..collision.colliders.mesh_collider import MeshCollider

        first = posed[0][row].vertices
        frame = next((f for f in collider.shared.__dict__.get("frame_poses", ()) if f.index(first) == 1), None)
        if frame is None or frame.substeps != len(posed):
            return None
        views = frame.views
        for k, step in enumerate(posed, 1):
            end = step[row]
            if (type(end) is not MeshCollider or end.vertices is not views[k] or end.start is None
                    or end.start.vertices is not views[k - 1] or end.shared is not collider.shared
                    or end.triangles is not collider.triangles):
                return None
        vertices = checked("pose vertices", frame.vertices, F64, (len(views), m, 3))
        if not np.isfinite(vertices).all():
            raise ValueError(f"mesh collider {collider.name!r}: its poses must be finite")
        return frame

    @staticmethod
    def _frame_normals(frame, collider, m, t):
        """(face normals (K + 1, t, 3), vertex normals (K + 1, m, 3), side normals (K + 1, t, 3, 3)) of every pose of
        ``frame`` (``FramePoses.normals``), checked."""
        p = len(frame.views)
        face, vertex, side = frame.normals(collider.triangles, collider.shared.side_edge, collider.shared.native)
        checked("face normals", face, F64, (p, t, 3))
        checked("vertex normals", vertex, F64, (p, m, 3))
        checked("side normals", side, F64, (p, t, 3, 3))
        return face, vertex, side

    @staticmethod
    def _grids_current(native, vertices, mine) -> bool:
        """Whether the corner and sharp-edge grids of ``vertices`` are still the ones the saved struct points to."""
        kept = mine.keep[-4]
        wanted = [g for g in (native.corners, native.sharp) if g is not None and len(g.elements)]
        return all(any(grid.vertices is vertices and grid in kept for grid in g.grids) for g in wanted)

    @staticmethod
    def _buffers(mine) -> None:
        s = mine.struct
        s.capacity = mine.capacity
        for name, _ in _MESH_FIELDS[_LIST_FIELDS:_MOVING_FIELDS]:
            if name != "capacity":
                setattr(s, name, pointer(getattr(mine, name)))

    def _key(self, collider):
        return (float(collider.thickness), collider.shared.travel), id(self.body_triangles)

    def load(self) -> None:
        """Each collider's face-pair list (``_Shared.face_cache``) into its buffers."""
        for collider, mine, _ in self.active:
            kept = collider.shared.face_cache.get(self._key(collider))
            if kept is None or kept.triangles is not self.body_triangles or kept.reference.shape != (self.n, 3):
                mine.list_state[:] = 0
                continue
            pairs = kept.pairs
            nc, ne = len(pairs.corner_distance), len(pairs.edge_distance)
            if max(nc, ne) > mine.capacity:
                mine.grow(max(nc, ne))
                self._buffers(mine)
            mine.list_state[:] = (1, nc, ne)
            mine.reference[:] = kept.reference
            mine.allowance[:] = kept.allowance
            mine.pair_corner[:nc], mine.pair_triangle[:nc] = pairs.corner_triangle
            mine.pair_corner_d[:nc] = pairs.corner_distance
            mine.pair_edge[:ne], mine.pair_body_edge[:ne] = pairs.edge_edge
            mine.pair_edge_d[:ne] = pairs.edge_distance

    def store(self) -> None:
        """Each collider's face-pair list from its buffers back into ``_Shared.face_cache``."""
        from ..collision.broad_phase.mesh_broad_phase import SLOTS
        from ..collision.broad_phase.mesh_face_pairs import _FaceList
        from ..collision.response.contact_set import FacePairs

        for collider, mine, _ in self.active:
            if not mine.list_state[0]:
                continue
            nc, ne = int(mine.list_state[1]), int(mine.list_state[2])
            pairs = FacePairs(None, (mine.pair_corner[:nc].copy(), mine.pair_triangle[:nc].copy()),
                              (mine.pair_edge[:ne].copy(), mine.pair_body_edge[:ne].copy()),
                              mine.pair_corner_d[:nc].copy(), mine.pair_edge_d[:ne].copy())
            cache, key = collider.shared.face_cache, self._key(collider)
            if key not in cache and len(cache) >= 4 * SLOTS:
                cache.clear()
            cache[key] = _FaceList(self.body_triangles, mine.reference.copy(), mine.allowance.copy(), pairs)

    def grow(self) -> None:
        """After status 3: room for the pairs ``needs`` asks (the list is back in the cache: ``store``), or the vertex
        normals a lazy collider's C code asked for (``needs[1]`` -1)."""
        _, mine, _ = self.active[int(self.needs[0])]
        if self.needs[1] < 0:
            mine.lazy.compute_missing()
            return
        mine.grow(int(self.needs[1]))
        self._buffers(mine)


__all__ = ["CAPACITY", "MOVING_IN_FRAME", "MeshFrame", "allowances", "frame_supports", "framed", "moving", "still",
           "translating"]
