"""Any triangle mesh as a collider (``MeshCollider``), open or closed, moving and deforming through the frame.

Bodies keep ``thickness`` from its triangles on both sides of the surface. What a vertex-only test misses is
covered too: the collider's corners and edges pressing into a body's faces (``resolve_faces``: corner against
triangle and edge against edge, position-level, as ``faces.py`` does for spheres: ``mesh_pushes.py``). The candidate
pairs of every query, and the k-d trees and caches they come from, are ``mesh_broad_phase.py``'s; the kept lists of
corner and edge pairs ``mesh_face_pairs.py``'s; the contact planes a collider standing still keeps between asks
``kept_planes.py``'s.

Sides: which side of the surface a point belongs on is read from where it was at the step's start against its own
nearest triangle, relative to the normal of the feature that holds its nearest point (the triangle's normal inside
it, the angle-weighted pseudo-normal of an edge or a vertex on its border: Baerentzen and Aanaes 2005, exact for a
closed mesh), so a mesh must be consistently oriented (Blender's Recalculate Normals); a closed mesh keeps bodies
outside when its normals point out. (The triangle's own normal cannot tell a point level with a box's top, beside a
side face and 1e-11 m inside its plane, from one inside the box: such a cloth vertex resting on the rim was pushed
into the top.) A point within ON_SURFACE of the surface lies on it, on the normal side (a cloth laid exactly on a
face).

Distances: for a point x the exact unsigned distance to the nearest triangle (``primitives.point_triangle_distance``
on the candidates of a k-d tree over the centres of the triangles' pieces (``samples.Samples``: large triangles cut
into pieces about 25 cm across, so one big face does not widen every query): every triangle with a piece whose centre
lies within the nearest centre's distance plus the largest piece radius), computed for points within
``thickness + SEARCH_MARGIN`` of the surface; farther points report ``inf`` (nothing acts on them). The side a point
is on comes from where it was at the step's start (``contact``; a point farther from the surface than its step's
motion cannot have crossed it and keeps the side it is on), so a body that a thin or fast collider went through is
put back on its own side; ``distance_and_normal`` alone (no history) points away from the nearest surface point.

Motion: the collider's vertices move linearly between its pose at the step's start (``start``) and its own pose; the
k-d tree is built once per pose read from Blender (once per frame; kept across frames while the collider stands
still) and shared by the interpolated substep poses, its query widened by how far any vertex travels between them.
CCD (``time_of_impact``) tests every point against the triangles its swept segment can reach
(``ccd.point_triangle_ccd`` on the relative motion). A collider that only translates (a keyframed location) is its
first still pose moved by an offset (``translation``): its contact planes, face-pair lists and pushes are that
anchor's, asked with the points less the offset, so they are kept from frame to frame as a still collider's are.
"""
from dataclasses import dataclass, field, replace
from functools import cached_property, partial

import numpy as np

from ..barriers.mesh_barrier import MeshContactBarrier
from ..broad_phase.mesh_broad_phase import (SHARP_ANGLE, SKIN, MeshBroadPhase, PoseBuffers, _Shared, sharp_edges,
                                            translated)
from ..broad_phase.mesh_face_pairs import MeshFacePairs
from ..narrow_phase.ccd import point_triangle_ccd
from ..narrow_phase.primitives import _cross, _dot, point_triangle_closest
from ..response.collider_contacts import SWEEP_LENGTH
from ..response.mesh_pushes import MeshFacePushes
from .kept_planes import kept_contact
from .shapes import Collider

__all__ = ["FACE_PASSES", "FRAME_POSES", "FramePoses", "SEARCH_MARGIN", "SHARP_ANGLE", "SIDE_MARGIN", "SKIN", "MeshCollider", "sharp_edges"]

SEARCH_MARGIN = 0.05
"""[m] Points farther than thickness + this from the surface get distance inf: contact, barriers and friction only ever
act within a step's motion of the surface, and CCD (``time_of_impact``) covers longer motions. (Every triangle within a
point's distance is a candidate, so the margin sets the cost on a finely tessellated collider.)"""
SIDE_MARGIN = 0.25
"""[m] A point near the surface at the step's end has its side read from its start position if that lay within
thickness + this of the surface (a step's motion); farther, it counts as on the normal side (outside a closed mesh)."""
FACE_PASSES = 4
"""Jacobi passes of ``resolve_faces`` per call (as ``faces.FACE_PASSES``)."""
ON_SURFACE = 1e-9
"""[m] A point this near the surface lies on it (``contact``, ``_sides``): on the normal side, its plane the face's.
The direction from its nearest point is round-off there: a cloth laid exactly on a box's top read sides at random
and a few of its vertices were pushed 1.3 cm into the box. A point that started the step on the surface may have
crossed it when it ends within its motion plus this: its side is read where it started. (src/mesh_query.h
SOFTSIM_ON_SURFACE, the same.)"""

TRANSLATIONS = True
"""Whether a collider whose poses are a still collider's translated answers in that anchor's frame
(``MeshCollider.translation``: its kept planes and face-pair lists, in C the still pipeline); False: as any moving
collider (the tests of the moving pipeline switch it off for their sliding scenes). On the bench's cloth resting on
the 12-triangle box sliding under it (engine, 48 frames): 6.5 ms a frame against 3.7 this way, the still box 3.1."""


def _within_one_sweep(moved) -> bool:
    """Whether the motions (k, 3) [m] take one sweep of ``collider_contacts.contact_sweeps`` (none longer than
    SWEEP_LENGTH, by its arithmetic): a translating collider pushes faces in its own frame after such motions of the
    free points relative to it; a longer one (NEWTON's whole step against a collider held still) takes the moving
    collider's passes."""
    return not len(moved) or np.ceil(float(np.sqrt(_dot(moved, moved).max())) / SWEEP_LENGTH) <= 1.0


NATIVE_PLANES = True
"""Whether a collider with the native queries (``_Shared.native``) computes its contact planes (``_contact_rows``) and
its motion (``motion``) in one native call each (src/mesh_moving.c); False composes them in Python from the native
nearest-triangle query, the same numbers bit for bit (tests/test_native_mesh_moving.py)."""
POSE_VALUES = 8
"""Poses whose derived values (normals) a collider's ``_Shared`` keeps for other poses of the same vertices."""


def _sums(index: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """(count, 3): the rows of values (k, 3) summed per index (k,) in [0, count), in the order they come, from 0.0
    (``np.add.at`` into zeros, the same bits)."""
    return np.stack([np.bincount(index, values[:, a], minlength=count) for a in range(3)], axis=1)


def _rows_of_three(array: np.ndarray) -> np.ndarray:
    """``array`` as (k, 3) rows: itself when it already has that shape."""
    return array if array.ndim == 2 and array.shape[1] == 3 else array.reshape(-1, 3)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two float64 arrays hold the same bits (-0.0 and 0.0 differ; NaNs of the same bits agree)."""
    return (a is b or (a.shape == b.shape and a.dtype == b.dtype == np.float64 and a.flags.c_contiguous
                       and b.flags.c_contiguous and np.array_equal(a.view(np.int64), b.view(np.int64))))


def pose_normals(vertices: np.ndarray, triangles: np.ndarray, side_edge: np.ndarray):
    """The normals of P poses of one mesh in one pass: vertices (P, m, 3) [m] float64, triangles (t, 3), side_edge
    (t, 3) (``_Shared.side_edge``). Returns (face normals (P, t, 3), vertex pseudo-normals (P, m, 3), side
    pseudo-normals (P, t, 3, 3)), C-contiguous, pose p bit for bit ``MeshCollider.face_normals`` and
    ``_feature_normals`` of a collider at vertices[p]: every step is the per-pose one on the poses' rows laid end to
    end (elementwise ufuncs give each element the same bits whatever the array's length; the row-wise dots are the
    same einsum over (k, 3) rows), and the bincount sums go into bins pose * m + vertex (pose * e + edge), so each
    bin adds its terms in the per-pose order (corner 0 of every triangle, then corner 1, then corner 2)."""
    P, m = vertices.shape[:2]
    t = len(triangles)
    if t == 0:
        return np.zeros((P, 0, 3)), np.zeros((P, m, 3)), np.zeros((P, 0, 3, 3))
    corners = vertices[:, triangles].reshape(P * t, 3, 3)
    normal = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.sqrt(_dot(normal, normal))
    face = normal / np.where(length > 0.0, length, 1.0)[:, None]
    side = [corners[:, (k + 1) % 3] - corners[:, k] for k in range(3)]
    square = [_dot(e, e) for e in side]
    cos = np.empty((3, P * t))
    for k in range(3):
        cos[k] = -_dot(side[k], side[(k + 2) % 3]) / np.maximum(np.sqrt(square[k] * square[(k + 2) % 3]), 1e-300)
    angle = np.arccos(np.clip(cos, -1.0, 1.0)).reshape(3, P, t)  # one arccos over every corner of every pose
    faces = face.reshape(P, 1, t, 3)
    weighted = (angle.transpose(1, 0, 2)[:, :, :, None] * faces).reshape(-1, 3)  # (pose, corner, triangle) rows
    offsets = np.arange(P, dtype=np.int64)[:, None]
    vertex = _sums((triangles.T.ravel()[None] + m * offsets).ravel(), weighted, P * m)
    e = int(side_edge.max()) + 1
    edge = _sums((side_edge.T.ravel()[None] + e * offsets).ravel(), np.broadcast_to(faces, (P, 3, t, 3)).reshape(-1, 3),
                 P * e)
    for a in (vertex, edge):
        a /= np.maximum(np.sqrt(_dot(a, a)), 1e-300)[:, None]
    return (face.reshape(P, t, 3), vertex.reshape(P, m, 3),
            np.ascontiguousarray(edge.reshape(P, e, 3)[:, side_edge]))


POSE_ROWS = 4096
"""Triangles times poses that ``FramePoses.normals`` derives in one pass of ``pose_normals``: all the poses of a small
collider at once (its cost is NumPy's per-call overhead), a large one's a pose or a few at a time (beyond the
caches, one pass over every pose is slower than the poses one by one)."""


class FramePoses:
    """The poses at fractions k / K (k = 0 .. K) of a collider's motion from ``start`` to ``end`` (both (m, 3) [m]),
    built in one pass: ``vertices`` (K + 1, m, 3), pose k bit for bit ``Collider.over``'s interpolation
    start + (k / K) (end - start); ``views`` the K + 1 arrays vertices[k], handed to the posed colliders (the end pose
    of substep k and the start pose of substep k + 1 are one array); their normals (``normals``: ``pose_normals``)
    built on first use for every pose at once, read by the per-pose ``_pose_values`` and, with
    ``native.mesh_frame.LAZY_NORMALS`` False, by the whole-frame call, which hands the C code addresses into them (by
    default it derives the normals it reads itself: ``mesh_frame._LazyNormals``)."""

    def __init__(self, start: np.ndarray, end: np.ndarray, substeps: int, buffers: PoseBuffers = None):
        self.start, self.end, self.substeps = start, end, substeps
        self.buffers = PoseBuffers() if buffers is None else buffers
        fraction = np.array([k / substeps for k in range(substeps + 1)])  # Python's k / K, as ``over`` is handed
        # start + fraction * (end - start), written into a kept array
        self.vertices = np.multiply(fraction[:, None, None], (end - start)[None],
                                    out=self.buffers.take("vertices", (substeps + 1,) + start.shape))
        np.add(start[None], self.vertices, out=self.vertices)
        self.views = list(self.vertices)
        self._index = {id(v): k for k, v in enumerate(self.views)}
        self.values = [{} for _ in self.views]
        """Per pose: what ``MeshCollider._pose_values`` keeps for it."""
        self._normals = None

    def index(self, vertices) -> int:
        """k if ``vertices`` is the array of pose k, else -1."""
        k = self._index.get(id(vertices), -1)
        return k if k >= 0 and self.views[k] is vertices else -1

    def normals(self, triangles, side_edge, native=None):
        """(face normals (K + 1, t, 3), vertex pseudo-normals (K + 1, m, 3), side pseudo-normals (K + 1, t, 3, 3)) of
        every pose (``pose_normals``), built on first use; each pose's ``values`` then holds its rows. native: the
        collider's native queries (``_Shared.native``, or None): with NATIVE_NORMALS, its library computes them
        (``native.pose_kernels.PoseNormals``, the same bits) when the poses are finite."""
        if self._normals is None:
            library = getattr(native, "library", None) if NATIVE_NORMALS else None
            count, (m, t) = len(self.views), (self.vertices.shape[1], len(triangles))
            take = self.buffers.take
            face, vertex, side = take("face", (count, t, 3)), take("vertex", (count, m, 3)), take("side", (count, t, 3, 3))
            step = max(1, POSE_ROWS // max(t, 1))
            if library is not None and np.isfinite(self.vertices).all():
                from ...native.pose_kernels import PoseNormals
                from ...native.threads import run_parts, thread_count

                triangles = np.ascontiguousarray(triangles, np.int64)
                side_edge = np.ascontiguousarray(side_edge, np.int64)

                def poses(first, last):
                    """Poses [first, last), a few a pass, written in place (a kernel, so its scratch, per thread)."""
                    compute = PoseNormals(library)
                    for a in range(first, last, step):
                        rows = slice(a, min(a + step, last))
                        compute(self.vertices[rows], triangles, side_edge, out=(face[rows], vertex[rows], side[rows]))

                # The poses are independent, and the C calls and NumPy's arccos release the GIL: the user's cores
                # share them, each pose the same bits whichever thread computes it. Each thread takes one contiguous
                # range: ``threads.run_ranges``' interleaved poses took 42-72 ms a frame against 32-37 (level-6 box).
                passes = -(-count // step)
                parts = max(1, min(thread_count(), passes // POSES_PER_THREAD))
                bounds = [step * (passes * k // parts) for k in range(parts)] + [count]
                run_parts([partial(poses, bounds[k], bounds[k + 1]) for k in range(parts)])
            else:
                compute = partial(pose_normals, triangles=triangles, side_edge=side_edge)
                for a in range(0, count, step):  # a few poses a pass: their temporaries stay in cache
                    face[a:a + step], vertex[a:a + step], side[a:a + step] = compute(self.vertices[a:a + step])
            self._normals = face, vertex, side
            for k, known in enumerate(self.values):
                known.setdefault("face_normals", face[k])
                known.setdefault("_pseudo", (vertex[k], side[k]))
        return self._normals


POSES_PER_THREAD = 4
"""``FramePoses.normals`` gives each thread at least this many passes of ``pose_normals`` (a thread's start-up is worth
it only beyond a few: a small collider's poses all go in one pass, on the caller's thread)."""

NATIVE_NORMALS = True
"""Whether ``FramePoses.normals`` of a collider with the native queries computes them in C (src/pose_normals.c around
NumPy's arccos), the same bits as ``pose_normals`` (tests/test_native_moving_poses.py)."""

FRAME_POSES = True
"""Whether a moving mesh collider poses its substeps from one ``FramePoses`` per frame (``MeshCollider.over``: every
pose of the frame interpolated and, on first use, its normals computed in one vectorised pass); False interpolates
each pose when asked and derives its normals alone, the same numbers bit for bit (tests/test_native_moving_poses.py)."""

FRAME_POSES_KEPT = 3
"""``FramePoses`` a collider's ``_Shared`` keeps (the frame's, and those of a substep posed again in sweeps)."""

_FIELDS = ("vertices", "triangles", "thickness", "friction", "name", "start", "shared", "translation")
"""``MeshCollider``'s dataclass fields (a posed collider is made with them, without ``replace``'s checks)."""


_POSE_DERIVED = ("radius", "face_normals", "_spheres", "_pseudo")
"""What a collider derives from its pose on first use, shared by a collider of the same pose and triangles."""


@dataclass
class MeshCollider(Collider, MeshBroadPhase, MeshFacePairs, MeshFacePushes):
    """A triangle mesh in world space; bodies stay ``thickness`` away from it on both sides. Its broad phase is
    ``mesh_broad_phase.MeshBroadPhase``, its face-pair lists ``mesh_face_pairs.MeshFacePairs``, its corner and edge
    pushes ``mesh_pushes.MeshFacePushes``; standing still, it keeps its contact planes (``kept_planes``)."""

    vertices: np.ndarray
    """Vertex positions [m], shape (m, 3), world space."""
    triangles: np.ndarray
    """Vertex indices, shape (t, 3) int."""
    thickness: float = 0.0
    friction: float = 0.0
    name: str = ""
    start: object = None
    """The mesh at the start of its motion (same triangles), or None (``Collider.start``)."""
    shared: object = field(default=None, repr=False, compare=False)
    translation: object = field(default=None, repr=False, compare=False)
    """(anchor, offset (3,) [m]) when this pose is the still collider ``anchor`` (start None, no travel) moved by one
    translation (``moving_from``: a keyframed location), else None. Its contact planes, face pairs and pushes are then
    the anchor's, asked in the anchor's frame (``_own_frame``): its kept planes and face-pair lists serve it frame
    after frame as they serve a collider standing still."""

    reaches_between_corners = True

    def __post_init__(self):
        # The arrays given, where they already are what the collider keeps (a still collider's read handed on keeps
        # its identity: ``pose_differs``, ``moving_from``).
        self.vertices = _rows_of_three(np.ascontiguousarray(self.vertices, float))
        self.triangles = _rows_of_three(np.ascontiguousarray(self.triangles, np.int64))
        if self.shared is None:
            self.shared = _Shared(self.vertices, self.triangles)

    # What follows is built on first use: a pose that is never asked (a fresh read replaced by the previous frame's
    # collider, an interpolated pose that only hands on its vertices) costs nothing.

    @cached_property
    def radius(self) -> float:
        """[m] The largest radius of the broad phase's triangle pieces at this pose."""
        return self.shared.triangle_pieces.radius(self.vertices)

    @cached_property
    def face_normals(self) -> np.ndarray:
        """(t, 3) The triangles' unit normals at this pose (zero for a degenerate triangle)."""
        known = self._pose_values()
        if "face_normals" not in known and not self._native_normals(known):
            corners = self.vertices[self.triangles]
            normal = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]) if len(corners) else np.zeros((0, 3))
            length = np.sqrt(_dot(normal, normal))
            known["face_normals"] = normal / np.where(length > 0.0, length, 1.0)[:, None]
        return known["face_normals"]

    def _pose_values(self) -> dict:
        """What has been derived from this pose's vertices (normals), shared with the other poses of the same
        vertices, bit for bit (``_Shared.pose_values``): the start pose of a moving collider's substep is the end pose
        of the substep before, computed anew by the same interpolation."""
        for poses in reversed(self.shared.__dict__.get("frame_poses", ())):
            k = poses.index(self.vertices)
            if k >= 0:
                known = poses.values[k]
                if "face_normals" not in known:  # every pose's normals at once, the same bits as one by one
                    poses.normals(self.triangles, self.shared.side_edge, self.shared.native)
                return known
        entries = self.shared.pose_values
        for vertices, values in entries:
            if vertices is self.vertices:
                return values
        for vertices, values in entries[:-3:-1]:  # the last two poses (``over`` hands repeated poses the same array)
            if same_bits(vertices, self.vertices):
                entries.append((self.vertices, values))
                break
        else:
            values = {}
            entries.append((self.vertices, values))
        if len(entries) > POSE_VALUES:
            del entries[0]
        return values

    def _feature_normals(self):
        """The angle-weighted pseudo-normals (Baerentzen and Aanaes 2005) at this pose: (per vertex (m, 3), per
        triangle side (t, 3, 3), side k opposite corner k): at a vertex the incident faces' normals weighted by their
        angles there, on an edge the sum of its faces' normals, both normalised. Built on first use."""
        known = self.__dict__.get("_pseudo")
        if known is None:
            values = self._pose_values()
            if "_pseudo" not in values:
                self._native_normals(values)
            known = self.__dict__["_pseudo"] = values.get("_pseudo")
        if known is None:
            corners = self.vertices[self.triangles]
            angle = np.zeros((len(corners), 3))
            # The angle at corner k between u = c[k+1] - c[k] = side[k] and w = c[k+2] - c[k] = -side[k+2]: each side
            # measured once (negation is exact, so u.w = -(side[k] . side[k+2]) and w.w = side[k+2] . side[k+2] bit for
            # bit).
            side = [corners[:, (k + 1) % 3] - corners[:, k] for k in range(3)]
            square = [_dot(e, e) for e in side]
            for k in range(3):
                cos = -_dot(side[k], side[(k + 2) % 3]) / np.maximum(np.sqrt(square[k] * square[(k + 2) % 3]), 1e-300)
                angle[:, k] = np.arccos(np.clip(cos, -1.0, 1.0))
            # Sums per vertex and per edge over corner 0 of every triangle, then corner 1, then corner 2: bincount adds
            # in that order from 0.0, as np.add.at over the three corners in turn does, about ten times faster.
            faces = self.face_normals
            weighted = (angle.T[:, :, None] * faces[None]).reshape(-1, 3)
            vertex = _sums(self.triangles.T.ravel(), weighted, len(self.vertices))
            edge = _sums(self.shared.side_edge.T.ravel(), np.tile(faces, (3, 1)),
                         int(self.shared.side_edge.max()) + 1 if len(corners) else 0)
            for a in (vertex, edge):
                a /= np.maximum(np.sqrt(_dot(a, a)), 1e-300)[:, None]
            known = self.__dict__["_pseudo"] = self._pose_values()["_pseudo"] = (vertex, edge[self.shared.side_edge])
        return known

    def _native_normals(self, known: dict) -> bool:
        """Put this pose's face normals and pseudo-normals into ``known`` (its ``_pose_values``) in one native pass
        (``native.pose_kernels.PoseNormals``, ``pose_normals``' bits, which are ``face_normals``' and
        ``_feature_normals``' own) when the collider has its native queries (``_Shared.native``), NATIVE_NORMALS is on
        and the pose is finite; False (nothing done) otherwise. A still collider derives them once: a cube's surface of
        49 152 triangles in 1.7 ms against 12-14 in NumPy, 196 608 in 8.3 against 53-61."""
        library = getattr(self.shared.native, "library", None) if NATIVE_NORMALS else None
        if library is None or len(self.triangles) == 0 or not np.isfinite(self.vertices).all():
            return False
        from ...native.pose_kernels import PoseNormals

        face, vertex, side = PoseNormals(library)(self.vertices[None], self.triangles, self.shared.side_edge)
        known.setdefault("face_normals", face[0])
        known.setdefault("_pseudo", (vertex[0], side[0]))
        return True

    def _normals_at_pose(self):
        """(vertices (m, 3), face normals (t, 3), vertex pseudo-normals (m, 3), side pseudo-normals (t, 3, 3)) of this
        pose, float64 and C-contiguous (the native contact planes' inputs)."""
        known = self._pose_values()
        if "native" not in known:
            vertex, side = self._feature_normals()
            known["native"] = (self.vertices, *(np.ascontiguousarray(a, np.float64) for a in (self.face_normals, vertex, side)))
        return (self.vertices,) + known["native"][1:]

    def pseudo_normals(self, tris, bary):
        """The normal (k, 3) of the feature of triangles tris (k,) that holds the points with barycentric weights bary
        (k, 3): the face's normal inside, an edge's or a vertex's pseudo-normal (``_feature_normals``) on its border.
        (x - q) . n > 0 for the closest surface point q of x tells the outside of a closed, outward-oriented mesh at
        every feature (a point level with a box's top, beside its side face, is outside: the side face's own normal
        cannot say)."""
        normal = self.face_normals[tris].copy()
        zero = bary <= 1e-12
        count = zero.sum(axis=1)
        vertex, side = self._feature_normals()
        rows = np.flatnonzero(count == 1)
        if len(rows):
            normal[rows] = side[tris[rows], np.argmax(zero[rows], axis=1)]
        rows = np.flatnonzero(count >= 2)
        if len(rows):
            normal[rows] = vertex[self.triangles[tris[rows], np.argmax(bary[rows], axis=1)]]
        return normal

    # ----------------------------------------------------------------- motion

    def pose_differs(self, other) -> bool:
        if self.vertices is other.vertices:  # one read handed on (a still collider: operators.bridge)
            return False
        return self.vertices.shape != other.vertices.shape or not np.array_equal(self.vertices, other.vertices)

    def moving_from(self, previous):
        same = previous is not None and previous.vertices.shape == self.vertices.shape
        moving = super().moving_from(previous if same else None)
        same_topology = same and (previous.triangles is self.triangles or (
            previous.triangles.shape == self.triangles.shape and np.array_equal(previous.triangles, self.triangles)))
        if same_topology and moving.start is None and previous.shared.travel == 0.0:
            # Not moved since the previous frame, which did not move either: its trees, pieces and kept candidates
            # (built on this very pose) serve this frame too, and through this read the next one's; so do what the
            # previous frame's collider derived from the pose (normals, bounds).
            self.shared = moving.shared = previous.shared
            kept = previous.shared.still or previous  # (a first frame's read is used as it is)
            moving.__dict__.update({k: v for k, v in kept.__dict__.items() if k in _POSE_DERIVED})
        elif same_topology and previous.shared is not moving.shared:
            moving.shared.adopt_topology(previous.shared)  # a moving collider read anew: the same triangles
            # The previous frame's poses served their frame: dropped, their arrays go back to the pool this frame
            # takes from (``PoseBuffers``); asked again, that collider derives its poses anew.
            previous.shared.__dict__.pop("frame_poses", None)
        if moving.start is None:
            moving.shared.still = moving
        if moving.start is not None:
            # One tree for the frame: built on this pose, queried from every pose in between.
            moving.start = replace(moving.start, shared=moving.shared)
            shift = moving.start.vertices - moving.vertices
            moving.shared.travel = max(moving.shared.travel, float(np.sqrt(_dot(shift, shift).max())) if len(shift) else 0.0)
            if same_topology:
                self._translate(moving, previous)
        return moving

    def _translate(self, moving, previous) -> None:
        """Set ``translation`` on ``moving`` (this read, moving from ``previous``), on its start and on this read (the
        next frame's ``previous``) when this pose and the previous one are one still collider's moved by one
        translation each (``mesh_broad_phase.translated``'s tolerance: the contacts then see the anchor's pose moved
        by the offset of vertex 0, within that round-off of the pose read). The anchor is the previous read's own, or
        the previous read itself when it stood still (the first still read of its ``shared``)."""
        if not TRANSLATIONS:
            return
        if previous.translation is not None:
            anchor, begin = previous.translation
        elif previous.start is None and previous.shared.travel == 0.0:
            anchor, begin = previous.shared.still or previous, np.zeros(3)
        else:
            return
        if not translated(self.vertices, anchor.vertices):
            return
        end = self.vertices[0] - anchor.vertices[0]
        self.translation = moving.translation = (anchor, end)
        moving.start.translation = (anchor, begin)

    def _own_frame(self):
        """(anchor, offset of this pose (3,), offset of the start pose (3,)) [m] when this pose and its start are one
        still collider's translated (``translation``; no start: this pose's offset twice), else None."""
        if self.translation is None:
            return None
        anchor, end = self.translation
        if self.start is None:
            return anchor, end, end
        if self.start.translation is None or self.start.translation[0] is not anchor:
            return None
        return anchor, end, self.start.translation[1]

    def _translation_at(self, s: float):
        """``translation`` of the pose at fraction s of this collider's motion (its offsets interpolated as
        ``interpolate`` interpolates the vertices), or None."""
        own = self._own_frame()
        if own is None:
            return None
        anchor, end, begin = own
        return anchor, begin + s * (end - begin)

    def _untranslated(self):
        """This collider and its start without ``translation`` (the moving collider's pipeline)."""
        start = None if self.start is None else self._posed(self.start.vertices, self.start.start)
        untranslated = self._posed(self.vertices, start)
        untranslated.translation = None
        if start is not None:
            start.translation = None
        return untranslated

    def _anchored(self, anchor):
        """The anchor with this collider's thickness and friction."""
        if anchor.thickness == self.thickness and anchor.friction == self.friction:
            return anchor
        return replace(anchor, thickness=self.thickness, friction=self.friction)

    def frame_poses(self, t0: float, t1: float):
        """The ``FramePoses`` of this frame's motion if (t0, t1) is substep k of K (t0 = (k - 1) / K, t1 = k / K
        exactly, as the solvers pose their substeps), else None. Kept on ``shared`` (``frame_poses``, a list of the
        last FRAME_POSES_KEPT: a moving collider has its own ``_Shared`` each frame, and a substep walked in sweeps
        poses its substep's collider over again) for this start and end pose and K."""
        step = self._substep(t0, t1)
        if step is None:
            return None
        substeps = step[0]
        kept = self.shared.__dict__.setdefault("frame_poses", [])
        for poses in reversed(kept):
            if poses.substeps == substeps and poses.start is self.start.vertices and poses.end is self.vertices:
                return poses
        if self.start.vertices.shape != self.vertices.shape:
            return None
        kept.append(FramePoses(self.start.vertices, self.vertices, substeps, self.shared.pose_buffers))
        del kept[:-FRAME_POSES_KEPT]
        return kept[-1]

    def _substep(self, t0: float, t1: float):
        """(K, k) when (t0, t1) is substep k of K of this collider's motion (``frame_poses``), else None."""
        if not FRAME_POSES or type(self) is not MeshCollider or self.start is None or not t1 > t0:
            return None
        substeps = round(1.0 / (t1 - t0))
        k = round(t1 * substeps)
        if not (1 <= k <= substeps and (k - 1) / substeps == t0 and k / substeps == t1):
            return None
        return substeps, k

    def _posed(self, vertices, start):
        """This collider at the pose ``vertices`` moving from ``start`` (``interpolate``'s collider, without
        ``replace``'s field checks: the pose's array is a C-contiguous float64 (m, 3) view)."""
        posed = object.__new__(MeshCollider)
        posed.__dict__.update({name: self.__dict__[name] for name in _FIELDS if name != "vertices"})
        posed.vertices, posed.start = vertices, start
        return posed

    def __getattr__(self, name):
        """The vertices of a translation's substep pose, taken from its frame's ``FramePoses`` when first read
        (``over``): the contacts of a translation never read them, and the whole-frame call needs none."""
        pending = self.__dict__.get("_pending") if name == "vertices" else None
        if pending is None:
            raise AttributeError(f"'MeshCollider' object has no attribute {name!r}")
        owner, t0, t1, end = pending
        poses = owner.frame_poses(t0, t1)
        k = round(t1 * poses.substeps)
        vertices = self.__dict__["vertices"] = poses.views[k if end else k - 1]
        del self.__dict__["_pending"]
        return vertices

    def over_substeps(self, substeps: int) -> list:
        """``over`` of each substep of a translation at once: the same colliders, the offsets of every substep's end
        and start from one product (``_translation_at``'s arithmetic row by row, so the same bits: k / K is the same
        division as an array's, and a row's product and sum are its elements')."""
        own = self._own_frame() if self.start is not None else None
        if own is None or self.start.vertices.shape != self.vertices.shape:
            return super().over_substeps(substeps)
        anchor, end, begin = own
        offsets = begin + (np.arange(substeps + 1) / substeps)[:, None] * (end - begin)
        fields = self._pose_fields()
        posed = []
        for k in range(1, substeps + 1):
            t0, t1 = (k - 1) / substeps, k / substeps
            if self._substep(t0, t1) is None:
                posed.append(self.over(t0, t1))
                continue
            posed.append(self._pending_substep(t0, t1, (anchor, offsets[k]), (anchor, offsets[k - 1]), fields))
        return posed

    def _pose_fields(self) -> dict:
        """This collider's fields but its vertices, start and translation: what every pose of its motion shares."""
        return {name: self.__dict__[name] for name in _FIELDS if name not in ("vertices", "start", "translation")}

    def _pending_substep(self, t0: float, t1: float, end, begin, fields: dict):
        """A translation's substep (t0, t1) (``over``): its pose and start pose with the translations ``end`` and
        ``begin`` ((anchor, offset (3,) [m])) now, their vertices (``FramePoses``, the same arrays as a moving
        collider's) when something reads them (``__getattr__``). fields: ``_pose_fields``."""
        start, pose = object.__new__(MeshCollider), object.__new__(MeshCollider)
        start.__dict__.update(fields)
        start.start, start._pending, start.translation = None, (self, t0, t1, False), begin
        pose.__dict__.update(fields)
        pose.start, pose._pending, pose.translation = start, (self, t0, t1, True), end
        return pose

    def over(self, t0: float, t1: float):
        own = self._own_frame() if self.start is not None else None
        if (own is not None and self._substep(t0, t1) is not None
                and self.start.vertices.shape == self.vertices.shape):
            return self._pending_substep(t0, t1, self._translation_at(t1), self._translation_at(t0),
                                         self._pose_fields())
        poses = self.frame_poses(t0, t1)
        if poses is not None:
            k = round(t1 * poses.substeps)
            posed = self._posed(poses.views[k], self._posed(poses.views[k - 1], None))
            posed.translation, posed.start.translation = self._translation_at(t1), self._translation_at(t0)
            return posed
        # The start pose of a substep is the end pose of the one before, interpolated anew to the same bits: it takes
        # that pose's very array, so the grids, normals and checked addresses kept for it serve it again.
        posed = super().over(t0, t1)
        if posed is not self:
            kept = self.shared.poses
            for moving in (posed.start, posed):
                for vertices in reversed(kept):  # the last substep's end first
                    if same_bits(vertices, moving.vertices):
                        moving.vertices = vertices
                        break
                else:
                    kept.append(moving.vertices)
                    if len(kept) > 2:
                        del kept[0]
        return posed

    def interpolate(self, other, s: float):
        return replace(other, vertices=self.vertices + s * (other.vertices - self.vertices), start=None, shared=other.shared,
                       translation=other._translation_at(s) if other.start is self else None)

    # ----------------------------------------------------------------- nearest triangles

    def _closest(self, x, margin: float = None, among=None):
        """For every point (of the rows ``among`` of x, default all) within thickness + margin (default
        SEARCH_MARGIN) [m]: its nearest triangle. Returns (rows of x (k,), triangle (k,), bary (k, 3), closest point
        (k, 3), unsigned distance (k,), interior (k,) bool)."""
        if len(self.triangles) == 0 or len(x) == 0 or (among is not None and len(among) == 0):
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, bool)
        limit = self.thickness + (SEARCH_MARGIN if margin is None else margin)
        points = np.arange(len(x)) if among is None else np.asarray(among, np.int64)
        if self.shared.native is not None:  # the same nearest triangles from a grid, in C (native/mesh_kernels.py)
            return self.shared.native.closest(self.vertices, np.ascontiguousarray(x, np.float64), points, limit)
        found, cache = self._candidates(x, points, limit), None
        if found is not None:
            *found, cache = found
        else:  # a few points: a tree query for them, the body's kept candidates left alone
            nearest = self.shared.tree_for(self.vertices).query(x[points])[0]
            # The nearest piece's centre lies on the surface, so it bounds the distance from above (plus the travel
            # since the tree's pose); every triangle that can be nearer has a piece whose centre lies within that
            # bound plus the largest piece radius (``_pairs`` adds it).
            near = np.flatnonzero(nearest - self.radius - self.shared.travel <= limit)
            rows, tris = self._pairs(x[points[near]], np.minimum(nearest[near] + self.shared.travel, limit))
            found = points[near][rows], tris
        rows, tris = found
        if len(rows) == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, bool)
        corners = self.vertices[self.triangles[tris]]
        p = x[rows]
        bary, interior = point_triangle_closest(p, corners[:, 0], corners[:, 1], corners[:, 2])
        q = np.einsum("kj,kjd->kd", bary, corners)
        d = np.sqrt(_dot(p - q, p - q))
        # The nearest of each point's candidates, the lowest triangle among equals (the pairs come sorted by point,
        # then triangle, and lexsort is stable).
        order = np.lexsort((d, rows))
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
        if cache is not None:
            cache.best[rows[first]] = tris[first]  # the next query's bound
        first = first[d[first] <= limit]
        return rows[first], tris[first], bary[first], q[first], d[first], interior[first]

    # ----------------------------------------------------------------- the protocol

    def surface_distance(self, x):
        d = np.full(len(x), np.inf)
        n = np.zeros((len(x), 3))
        n[:, 2] = 1.0
        rows, _, _, q, dist, _ = self._closest(x)
        d[rows] = dist
        r = x[rows] - q
        n[rows] = r / np.where(dist > 0.0, dist, 1.0)[:, None]
        return d, n

    def distance_and_normal(self, x, pad2=None):
        d, n = self.surface_distance(x)
        return d - self.thickness, n

    def distance(self, x, pad2=None):
        return self.distance_and_normal(x)[0]

    def within(self, x, band: float, pad2=None):
        """``Collider.within`` by a nearest-triangle query that looks only a little past thickness + band: a point
        within has the same nearest triangle and distance as in ``distance``'s wider search (SEARCH_MARGIN), the
        same test decides, and the points not found are not within. On the box drape's cloth 84 against 131
        microseconds a call at the resting test's band (self-collision, every step)."""
        rows, _, _, _, dist, _ = self._closest(x, max(float(band), 0.0) * (1.0 + 1e-9) + 1e-12)
        found = np.zeros(len(x), bool)
        found[rows] = dist - self.thickness < band
        return found

    def contact(self, x, x_prev, pad2=None):
        """The contact plane on the side each point came from. The side s is where x_prev lay against its own nearest
        triangle at the start pose: s = sign((x_prev - q0) . N0), N0 the pseudo-normal of the feature holding q0
        (``pseudo_normals``), a label that means "the normal side" or "the other side" of a consistently oriented mesh
        (the outside of a closed mesh whose normals point out). A point that lies farther from the surface than its
        step's motion plus the collider's travel cannot have crossed it, and takes the side it is on at the end pose
        (the same label on a closed mesh; beside an open mesh's border, the side of the border's plane it is on
        now). At the end pose, with q the nearest surface point of x on triangle N: inside that triangle's prism the
        plane's normal is s N; beside it, the direction from q to the point, unless that points to the other side of
        q's feature (then s N)."""
        own = self._own_frame()
        if own is not None:  # a translation of a still collider: its kept planes, in its own frame
            anchor, end, begin = own
            x, x_prev = x - end, x_prev - begin
            moved = x - x_prev
            reach = float(np.sqrt(_dot(moved, moved).max())) if len(x) else 0.0
            return kept_contact(self._anchored(anchor), x, x_prev, max(SEARCH_MARGIN, reach))
        # A point that went into a closed collider during the step lies within its own motion of the surface.
        moved = x - x_prev
        reach = float(np.sqrt(_dot(moved, moved).max())) + self.shared.travel if len(x) else 0.0
        margin = max(SEARCH_MARGIN, reach)
        if self.start is None and self.shared.travel == 0.0:  # standing still: planes kept per point (kept_planes.py)
            return kept_contact(self, x, x_prev, margin)
        # Each point's answer depends on its own x and x_prev alone: the end of a step asks again after the face push
        # has moved a few points, and only those are looked up again.
        memo = self.shared.contact_memo
        if (memo is not None and memo[0] is self.vertices and memo[1] == (self.thickness, margin)
                and memo[2].shape == x.shape and np.array_equal(memo[3], x_prev)):
            d, n = memo[4].copy(), memo[5].copy()
            points = np.flatnonzero(np.any(x != memo[2], axis=1))
            d[points] = np.inf
            n[points] = (0.0, 0.0, 1.0)
        else:
            d = np.full(len(x), np.inf)
            n = np.zeros((len(x), 3))
            n[:, 2] = 1.0
            points = None
        rows, d_rows, n_rows, _ = self._contact_rows(x, x_prev, margin, points)
        d[rows], n[rows] = d_rows, n_rows
        self.shared.contact_memo = (self.vertices, (self.thickness, margin), x.copy(), x_prev.copy(), d.copy(), n.copy())
        return d, n

    def _contact_rows(self, x, x_prev, margin, points):
        """``contact``'s planes of the points (indices into x; None: all) within thickness + margin [m]: (their rows of
        x (k,), d (k,) [m], normal (k, 3), unsigned distance to the surface (k,) [m])."""
        if points is not None and len(points) == 0:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3)), np.zeros(0)
        if NATIVE_PLANES and self.shared.native is not None and len(self.triangles) and len(x):
            # the same planes in one native call (native/mesh_kernels.py, src/mesh_moving.c)
            start = self if self.start is None else self.start
            return self.shared.native.contact_rows(
                self._normals_at_pose(), start._normals_at_pose(), np.ascontiguousarray(x, np.float64),
                np.ascontiguousarray(x_prev, np.float64),
                np.arange(len(x)) if points is None else np.ascontiguousarray(points, np.int64),
                (self.thickness, margin, start.thickness + SIDE_MARGIN, self.shared.travel))
        rows, tris, bary, q, dist, interior = self._closest(x, margin, among=points)
        if len(rows) == 0:
            return rows, np.zeros(0), np.zeros((0, 3)), dist
        r = x[rows] - q
        away = r / np.where(dist > 0.0, dist, 1.0)[:, None]
        outward = _dot(away, self.pseudo_normals(tris, bary))  # > 0: x lies on the normal side of its nearest feature
        # A point farther from the surface than it moved over the step, plus the collider's travel, cannot have
        # crossed the surface: it came from the side it is on. Only the others read their side at the step's start
        # (``_sides``), which costs a second nearest-triangle search.
        moved = x[rows] - x_prev[rows]
        side = np.where((outward < 0.0) & (dist > ON_SURFACE), -1.0, 1.0)
        crossing = np.flatnonzero(dist <= np.sqrt(_dot(moved, moved)) + self.shared.travel + ON_SURFACE)
        side[crossing] = self._sides(x_prev, rows[crossing])
        face = side[:, None] * self.face_normals[tris]
        # Beside the triangle the point is on its own side when it is so against the nearest feature's pseudo-normal.
        use_face = interior | (dist <= ON_SURFACE) | (outward * side < 0.0)
        normal = np.where(use_face[:, None], face, away)
        return rows, _dot(r, normal) - self.thickness, normal, dist

    def _sides(self, x_prev, rows):
        """The side (k,) (+1: the normal side, -1: the other; +1 where no triangle is within SIDE_MARGIN) that the
        points x_prev[rows] lie on at the start pose, against their own nearest triangle there. Kept per point for the
        last x_prev: a step asks for the contacts of the same start positions several times."""
        start = self if self.start is None else self.start
        known = self.shared.sides
        if known is None or known[0] is not start.vertices or not np.array_equal(known[1], x_prev):
            known = (start.vertices, x_prev.copy(), np.full(len(x_prev), np.nan))
            self.shared.sides = known
        side = known[2]
        todo = rows[np.isnan(side[rows])]
        if len(todo):
            side[todo] = 1.0
            found, tris, bary, q, dist, _ = start._closest(x_prev, SIDE_MARGIN, among=todo)
            normal = start.pseudo_normals(tris, bary)
            side[found] = np.where((_dot(x_prev[found] - q, normal) < 0.0) & (dist > ON_SURFACE), -1.0, 1.0)
        return side[rows]

    def motion(self, x):
        out = np.zeros_like(x)
        own = self._own_frame()
        if own is not None:  # a translation: the same everywhere
            out[:] = own[1] - own[2]
            return out
        if self.start is None:
            return out
        if NATIVE_PLANES and self.shared.native is not None and len(self.triangles) and len(x):  # in C: mesh_moving.c
            return self.shared.native.motion(self.vertices, self.start.vertices, np.ascontiguousarray(x, np.float64),
                                             self.thickness + SEARCH_MARGIN)
        rows, tris, bary, _, _, _ = self._closest(x)
        moved = self.vertices[self.triangles[tris]] - self.start.vertices[self.triangles[tris]]
        out[rows] = np.einsum("kj,kjd->kd", bary, moved)
        return out

    def time_of_impact(self, x, dx):
        """First s >= 0 (inf: none within the step, s <= 1) at which x + s dx comes within thickness of a triangle
        moving from ``start`` to here (``ccd.point_triangle_ccd`` on candidate pairs)."""
        toi = np.full(len(x), np.inf)
        start = self if self.start is None else self.start
        if len(x) == 0 or len(self.triangles) == 0:
            return toi
        reach = np.sqrt(_dot(dx, dx)) + self.thickness
        rows, tris = self._pairs(x, reach)
        if len(rows) == 0:
            return toi
        a0, a1 = start.vertices[self.triangles[tris]], self.vertices[self.triangles[tris]]
        hit = point_triangle_ccd(x[rows], a0[:, 0], a0[:, 1], a0[:, 2], x[rows] + dx[rows], a1[:, 0], a1[:, 1], a1[:, 2])
        np.minimum.at(toi, rows, hit)
        return toi

    # ----------------------------------------------------------------- corners and edges against a body's faces

    def face_pairs(self, x, triangles, reach: float = None):
        """``MeshFacePairs.face_pairs`` (the protocol's: ``Collider`` comes first among the bases); of a translation,
        the anchor's kept list asked in its frame (``_own_frame``)."""
        own = self._own_frame()
        if own is None:
            return MeshFacePairs.face_pairs(self, x, triangles, reach)
        pairs = MeshFacePairs.face_pairs(self._anchored(own[0]), x - own[1], triangles, reach)
        return replace(pairs, collider=self)

    def face_barrier(self, triangles, kappa, d_hat, points=None):
        # The body's vertices too (``points``): summed over every triangle within d_hat (mesh_barrier.py says why).
        return MeshContactBarrier(self, triangles, self._body_edges(triangles), kappa, d_hat, points)

    def move_faces_out(self, x, inv_mass, triangles, reach):
        # The side of each pair is read at the collider's start pose with the body held still (x_prev = x).
        replace(self, thickness=0.5 * reach, friction=0.0).resolve_faces(x, x, inv_mass, triangles, passes=8)

    def resolve_faces(self, x, x_prev, inv_mass, triangles, passes=None) -> int:
        """Push a body's triangles (t, 3) off the collider's corners and its edges off the collider's edges, in place
        on x, to ``thickness`` on the side they came from (x_prev); returns the pairs found in the first pass.

        Corner c against body triangle (x_a, x_b, x_c) with closest point q = sum_k b_k x_k: gap g = s n . (c - q) for
        the face normal n and the side s at the step's start; a triangle nearer than thickness moves by
        dx_k = -b_k w_k / (sum_j b_j^2 w_j) (thickness - g) s n (w = inv_mass; pinned corners do not move). Edge
        against edge: the same with the closest points of the two segments and the side of their common normal. All
        pairs of a pass are applied at once, each particle taking the mean of its corrections (Jacobi)."""
        if len(triangles) == 0 or len(self.triangles) == 0:
            return 0
        own = self._own_frame()
        if own is not None and _within_one_sweep((x - x_prev)[inv_mass > 0.0] - (own[1] - own[2])):
            # A translation: the anchor's passes in its frame, their moves added to x. Its face-pair list holds the
            # pairs within reach + 2 SKIN / 3 of the positions asked, every pair that can have crossed while the
            # points moved at most SWEEP_LENGTH in its frame (``collider_contacts.contact_sweeps`` counts it).
            anchor, end, begin = own
            at = x - end
            before = at.copy()
            found = self._anchored(anchor).resolve_faces(at, x_prev - begin, inv_mass, triangles, passes)
            x += at - before
            return found
        if own is not None:  # the moving collider's passes, its face-pair list too (``face_pairs``)
            return self._untranslated().resolve_faces(x, x_prev, inv_mass, triangles, passes)
        start = self if self.start is None else self.start
        return self._face_passes(x, x_prev, inv_mass, triangles, self._body_edges(triangles), start,
                                 FACE_PASSES if passes is None else passes)

