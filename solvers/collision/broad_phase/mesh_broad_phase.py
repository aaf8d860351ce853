"""The broad phase of a mesh collider (``mesh_collider.MeshCollider``): which of its triangles, edges and corners can
come within reach of a body's points, triangles and edges, and the caches that let a step ask again cheaply.

Triangles and sharp edges (``sharp_edges``) are cut into pieces about 25 cm across (``samples.Samples``), so one big
face does not widen every query; k-d trees over the pieces' centres (and over the sharp edges' corners) are built once
per pose read from Blender (once per frame, ``_Shared``) and shared by the interpolated substep poses, each query
widened by the largest piece radius and by how far any vertex travels between the tree's pose and the asking pose.
Candidates are found ``SKIN`` wider than asked and kept per point until its motion uses that up
(``_Shared.pair_caches`` for points against triangles, one per body; ``mesh_face_pairs`` keeps the corners against a
body's triangles and the edges against its edges in ``_Shared.face_cache``); exact distances are the caller's
business (``MeshCollider._closest``, ``mesh_face_pairs``, ``mesh_pushes``, ``mesh_barrier``).
A point's query is bounded by its exact distance to the triangle it last found nearest, so a body resting on a
finely cut collider asks for the two or three triangles under each point, not for the dozens within the search
margin; the candidates are culled by each triangle's bounding sphere, plane and box (``lower_bounds``). A collider
that has not moved since the previous frame keeps that frame's trees and candidates (``MeshCollider.moving_from``).
"""
import sys
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..narrow_phase.crossings import triangle_edges
from ..narrow_phase.primitives import _cross, _dot, point_triangle_closest
from .samples import Samples

SHARP_ANGLE = 10.0
"""[degrees] Collider edges whose faces bend by less than this take no part in the edge and corner tests
(``sharp_edges``)."""
SKIN = 0.03
"""[m] Candidate pairs are found this much farther than asked and kept until the points that asked have moved far
enough to use it up (``_Shared.pair_caches``, ``_Shared.face_cache``): the k-d tree joins, not the exact distances,
were most of the mesh collider's cost (a 31 x 31 XPBD cloth on a box asks ~8 times per substep)."""


def half_edges(vertex_count: int, triangles) -> tuple:
    """The edges of triangles (t, 3) over vertex_count vertices from their half-edges (0, 1), (1, 2) and (2, 0) of every
    triangle, taken side by side (half-edge j * t + i: side j of triangle i). Returns (the edges (e, 2), low vertex
    first, by ascending key low * vertex_count + high (``np.unique``'s rows), the edge of each half-edge (3t,), the
    half-edges of each edge (e,), the half-edges in edge order (3t,) (within an edge by index), where each edge's run
    starts in that order (e,)). One stable sort of the keys gives them all, where ``np.unique`` with its inverse and a
    stable sort of that inverse take two (of 147k keys for a 49k-triangle collider)."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    tail = np.concatenate([triangles[:, 0], triangles[:, 1], triangles[:, 2]])
    head = np.concatenate([triangles[:, 1], triangles[:, 2], triangles[:, 0]])
    scale = max(int(vertex_count), 1)
    # Each half-edge's vertices low first (two columns: np.minimum and np.maximum, not a sort along rows).
    key = np.minimum(tail, head) * scale + np.maximum(tail, head)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts_run = np.ones(len(key), bool)
    starts_run[1:] = ordered[1:] != ordered[:-1]
    first = np.flatnonzero(starts_run)
    edge = np.empty(len(key), np.int64)
    edge[order] = np.cumsum(starts_run) - 1
    keys = ordered[first]
    edges = np.stack([keys // scale, keys % scale], axis=1)
    return edges, edge, np.diff(np.append(first, len(key))), order, first


def edge_topology(vertex_count: int, triangles, halves=None) -> tuple:
    """What ``sharp_edges`` reads from the triangles (t, 3) alone: (the edges (e, 2) in ``half_edges``' order, the
    edges with exactly two triangles (e,) bool, the first and second of those triangles (p,) (p edges with two)).
    halves: ``half_edges`` of these triangles, if known."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    edges, _, count, order, first = half_edges(vertex_count, triangles) if halves is None else halves
    owner = np.tile(np.arange(len(triangles)), 3)
    pair = count == 2
    return edges, pair, owner[order[first[pair]]], owner[order[first[pair] + 1]]


def sharp_edges(vertices, triangles, min_angle: float = SHARP_ANGLE, topology=None, library=None) -> np.ndarray:
    """The edges (e, 2) of a triangle mesh that can press into a body's face: borders (one triangle), non-manifold
    edges (more than two), and edges whose two triangles' normals differ by more than min_angle [degrees]. An edge
    between two nearly coplanar triangles stays within thickness of both (a 20 cm face of a body bent over a 10 degree
    edge sags 9 mm into it), so the vertex-face contacts cover it; a subdivided box keeps only its 12 edges' pieces.
    topology: ``edge_topology`` of these triangles, if known (a moving collider's, found once); library: the native
    library, which then tests the edges (``native.pose_kernels.flat_edges``, the same answer; a moving collider's
    sharp edges are found anew every frame)."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(triangles) == 0:
        return np.zeros((0, 2), np.int64)
    edges, pair, one, other = edge_topology(len(vertices), triangles) if topology is None else topology
    cos_min = np.cos(np.radians(min_angle))
    flat = np.zeros(len(edges), bool)
    if library is not None:
        from ...native.pose_kernels import flat_edges

        flat[pair] = flat_edges(library, np.ascontiguousarray(vertices, np.float64), np.ascontiguousarray(triangles),
                                one, other, cos_min)
        return edges[~flat]
    corners = vertices[triangles]
    normal = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normal /= np.maximum(np.sqrt(_dot(normal, normal)), 1e-300)[:, None]
    n1, n2 = normal[one], normal[other]
    flat[pair] = _dot(n1, n2) >= cos_min  # a knife edge (opposite normals) is the sharpest
    return edges[~flat]


STRAIGHT_RUN = 1e-5
"""A run of sharp edges is merged into one segment (``straight_runs``) when each inner vertex lies within this fraction
of the run's length of the segment joining the run's ends (or within ``coordinate_noise``)."""

COORDINATE_NOISE = 16 * 2.0**-23
"""Round-off of a collider's vertex positions, as a fraction of its largest coordinate: Blender's meshes are float32,
each coordinate within half a float32 ulp (at most 2**-24 of its size) of where it was computed, and the bridge
moves them to world space. A vertex this near the line of its neighbours lies on it."""


def coordinate_noise(vertices) -> float:
    """[m] How far round-off may put the vertices (m, 3) off the lines and planes they were made on:
    ``COORDINATE_NOISE`` of their largest coordinate (0 for none)."""
    return COORDINATE_NOISE * float(np.abs(vertices).max()) if len(vertices) else 0.0


def _straight_inner(vertices, edges):
    """The vertices in the middle of a straight run of the edges (k, 2): exactly two of the edges meet there, in a
    straight line to 1e-5 rad, or with the vertex within ``coordinate_noise`` of the segment between its two
    neighbours (a box of float32 coordinates at 4 m from the origin, cut into 3 cm pieces along its edges, has
    its pieces' joints up to ~2.4e-7 m off their lines: 1e-5 rad of a 3 cm piece is 3e-7 m). Returns (those vertices
    (i,), the two edges meeting at each (i,), (i,)), vertices ascending."""
    ends = np.concatenate([edges[:, 0], edges[:, 1]])
    count = np.bincount(ends, minlength=len(vertices))
    inner = np.flatnonzero(count == 2)
    # The two edges of each such vertex, and their other ends, in order of vertex.
    order = np.argsort(ends, kind="stable")
    first = np.searchsorted(ends[order], inner)
    other = np.concatenate([edges[:, 1], edges[:, 0]])[order]
    edge = np.tile(np.arange(len(edges)), 2)[order]
    u = vertices[other[first]] - vertices[inner]
    w = vertices[other[first + 1]] - vertices[inner]
    cross = _cross(u, w)
    chord = w - u  # |u x w| = |w - u| times the vertex's distance from the line through its neighbours
    in_line = (_dot(cross, cross) <= 1e-10 * _dot(u, u) * _dot(w, w)) | (
        _dot(cross, cross) <= coordinate_noise(vertices) ** 2 * _dot(chord, chord))
    straight = in_line & (_dot(u, w) < 0.0)
    return inner[straight], edge[first[straight]], edge[first[straight] + 1]


def straight_runs(vertices, edges, inner=None) -> np.ndarray:
    """The sharp edges (k, 2) with each straight run of them (a subdivided box's edge: 2**L pieces in a line) merged into
    the one segment between its ends (sorted), in the place of the run's first edge; a run with an inner vertex
    farther than STRAIGHT_RUN of its length (and than ``coordinate_noise``) from that segment keeps its pieces.

    The edge tests then meet one segment where they met every piece of it: fewer pairs, and no joint where a body
    edge's closest point sits on the end of two pieces at once (neither piece's interior). The corner tests are
    unchanged: ``_Shared.corners`` leaves out a run's inner vertices already. ``inner``: ``_straight_inner`` of these
    edges when known."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    if len(edges) < 2:
        return edges
    inner, a, b = _straight_inner(vertices, edges) if inner is None else inner
    if len(inner) == 0:
        return edges
    k = len(edges)
    _, run = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(k, k)), directed=False)
    # A run's ends: the incidences of its edges at vertices that are not inner (two per chain of edges).
    is_inner = np.zeros(len(vertices), bool)
    is_inner[inner] = True
    ends = np.concatenate([edges[:, 0], edges[:, 1]])
    at_end = np.flatnonzero(~is_inner[ends])
    end_run = np.tile(run, 2)[at_end]
    runs = int(run.max()) + 1
    chain = np.bincount(end_run, minlength=runs) == 2
    # A chain's two ends are neighbours once the incidences are grouped by run.
    order = np.argsort(end_run, kind="stable")
    grouped = ends[at_end[order]]
    segment = np.zeros((runs, 2), np.int64)
    segment[chain] = np.sort(grouped[chain[end_run[order]]].reshape(-1, 2), axis=1)
    # Merged only where every inner vertex lies on the segment to STRAIGHT_RUN of its length (or to the coordinates'
    # round-off): |off| is its distance from the segment's line times the segment's length.
    r = run[a]
    p, q = vertices[segment[r, 0]], vertices[segment[r, 1]]
    along = q - p
    off = _cross(vertices[inner] - p, along)
    length2 = _dot(along, along)
    loose = ~chain[r] | (_dot(off, off) > np.maximum(STRAIGHT_RUN**2 * length2, coordinate_noise(vertices) ** 2) * length2)
    merged = chain.copy()
    merged[r[loose]] = False
    _, first = np.unique(run, return_index=True)
    keep = ~merged[run] | (np.arange(k) == first[run])
    return np.where(merged[run][:, None], segment[run], edges)[keep]


def lower_bounds(p, bounds):
    """Lower bounds (k,) [m] on the distances of points p (k, 3) to triangles given by rows of ``bounds`` (k, 14)
    (``MeshBroadPhase._bounds``): the largest of the distances to the triangle's bounding sphere, its plane and its
    axis-aligned bounding box (the box culls the many coplanar triangles of a finely cut flat face that the plane
    cannot, the plane those of a slanted face that the box cannot)."""
    gap = p - bounds[:, 0:3]
    outside = np.maximum(np.maximum(bounds[:, 8:11] - p, p - bounds[:, 11:14]), 0.0)
    return np.maximum(np.maximum(np.sqrt(_dot(gap, gap)) - bounds[:, 3], np.abs(_dot(p, bounds[:, 4:7]) - bounds[:, 7])),
                      np.sqrt(_dot(outside, outside)))


class _PairCache:
    """Point-triangle candidates kept for the point sets of one size (n) that ``MeshBroadPhase._candidates`` saw:
    point i's entry (the rows == i of rows, tris) holds every triangle with a point within covered[i] [m] of
    x_ref[i] (-inf: none asked yet); best[i] is the triangle last found nearest to point i (-1: none). Made for the
    positions x (n, 3) of a body, x_ref starting there."""

    def __init__(self, x):
        n = len(x)
        self.x_ref = np.array(x, float)
        self.covered = np.full(n, -np.inf)
        self.best = np.full(n, -1, np.int64)
        self.rows = self.tris = np.zeros(0, np.int64)
        """(k,): the entries' points and triangles, sorted by point then triangle."""
        self.lower = np.zeros(0)
        """(k,) [m]: each pair's ``lower_bounds`` where its entry was found (at x_ref, at that pose)."""

    def replace(self, points, x, covered, rows, tris, lower=None):
        """New entries for the points (p,) (unique) at x (p, 3): covered (p,) [m] and the pairs (rows (k,), tris (k,)),
        sorted by point then triangle, with their ``lower_bounds`` at x (k,) [m] (rows None: no triangle)."""
        if not len(points):
            return
        stale = np.zeros(len(self.covered), bool)
        stale[points] = True
        keep = ~stale[self.rows]
        self.x_ref[points] = x
        self.covered[points] = covered
        if rows is None:
            if not keep.all():
                self.rows, self.tris, self.lower = self.rows[keep], self.tris[keep], self.lower[keep]
            return
        kept_rows, kept_tris, kept_lower = self.rows[keep], self.tris[keep], self.lower[keep]
        # Both sorted by point, then triangle, and no pair in both: merged by inserting the new ones where they go.
        scale = int(max(kept_tris.max(initial=0), tris.max(initial=0))) + 1
        at = np.searchsorted(kept_rows * scale + kept_tris, rows * scale + tris)
        self.rows, self.tris = np.insert(kept_rows, at, rows), np.insert(kept_tris, at, tris)
        self.lower = np.insert(kept_lower, at, lower)


SLOT_REACH = 0.3
"""[m] A body's kept caches (``_Slots``) serve points whose mean distance from the cache's reference positions is
at most this; farther, the points get caches of their own."""
SHAPE_DERIVED = ("sharp", "straight_inner", "corners", "edges", "edge_pieces", "triangle_pieces")
"""What a collider derives from its shape alone (``_Shared``'s cached properties): kept from frame to frame while it
only translates (``_Shared.adopt_topology``)."""
TRANSLATION_TOLERANCE = 1e-9
"""Vertices whose moves from the frame before differ by at most this fraction of the coordinates (round-off of a
float32 mesh placed by its object's matrix) moved by one translation: the collider keeps what follows its shape
(``_Shared.adopt_topology``), and a mesh collider's contacts are those of its anchor pose moved by the offset of its
vertex 0 (``MeshCollider.translation``), which lies within that round-off of the pose read."""



def translated(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the vertices a (m, 3) are b (m, 3) moved by one translation, to round-off (TRANSLATION_TOLERANCE of the
    largest coordinate)."""
    if a.shape != b.shape or len(a) == 0:
        return False
    # |v|.max() as max(v.max(), -v.min()), the same number (NaN too), and one scratch array for the shifts: a moving
    # collider is checked on every frame, and each temporary of a 25k-vertex mesh costs its page faults (1.1 -> 0.3 ms).
    shift = np.subtract(a, b)
    shift -= shift[0].copy()
    return _largest_magnitude(shift) <= TRANSLATION_TOLERANCE * (1.0 + _largest_magnitude(a) + _largest_magnitude(b))


def _largest_magnitude(v: np.ndarray) -> float:
    """np.abs(v).max() without the array of magnitudes (NaN where v holds one)."""
    return max(float(v.max()), -float(v.min()))


SLOTS = 8
"""At most this many bodies' caches of one kind are kept per collider (the oldest go first)."""


class _Slots:
    """Caches of one kind (point-triangle candidates, kept contact planes), one per body that asks: a collider under
    several bodies of as many particles (napkins on one table) would otherwise hand each body's cache to the next,
    which finds every entry out of date. A body's cache is the one of its point count whose body asked last from
    positions nearest its points now, within SLOT_REACH on average (a new cache: from its reference positions,
    ``reference(cache)``, (n, 3)). Every cache checks its entries against the positions that ask, so the wrong cache
    costs time, never a wrong answer; bodies lying within SLOT_REACH of each other point for point (stacked layers of
    the same mesh) share one.

    Why the last ask and not the reference: a cache's reference moves only where its entries are measured anew, and a
    collider the body stays out of reach of measures nothing (``kept_planes.kept_contact``). A cloth falling past such
    a collider left it a new cache every SLOT_REACH of its fall, each of them compared at every ask after (four on
    the box drape's boxes beside it, ~60 us a collider a frame)."""

    def __init__(self, reference):
        self.reference = reference
        self.items = []
        self._asked = []
        """Per cache: (its body's point count, about 64 of the points it was last asked from (``_sample``), (k, 3))."""

    def nearest(self, x):
        """The kept cache for the points x (n, 3), or None. (Distances over about 64 of the points: bodies are told
        apart by where they are, not point by point.)"""
        best, best_distance = None, SLOT_REACH
        points = x[_sample(len(x))]
        for i, (count, asked) in enumerate(self._asked):
            if count == len(x):
                distance = float(np.abs(points - asked).max(axis=1).mean()) if len(x) else 0.0
                if distance <= best_distance:
                    best, best_distance = i, distance
        if best is None:
            return None
        self._asked[best] = (len(x), np.array(points))
        return self.items[best]

    def add(self, cache):
        if len(self.items) >= SLOTS:
            self.items.pop(0)
            self._asked.pop(0)
        at = self.reference(cache)
        self.items.append(cache)
        self._asked.append((len(at), np.array(at[_sample(len(at))])))
        return cache

    def sizes(self):
        return [count for count, _ in self._asked]


def _sample(n: int) -> slice:
    """The about 64 of n points that ``_Slots`` tells bodies apart by."""
    return slice(None, None, max(1, n // 64))


def _groups(keys: np.ndarray, count: int):
    """keys (k,) int within [0, count) grouped: (start (count + 1,), order (k,)) int64, the positions of key g are
    order[start[g] : start[g + 1]], ascending."""
    start = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=count), out=start[1:])
    return start, np.argsort(keys, kind="stable").astype(np.int64)


class PoseBuffers:
    """Arrays for a moving collider's ``mesh_collider.FramePoses`` (its poses and their normals, ~150 MB a frame for 49k
    triangles and 30 substeps), handed on from frame to frame (``_Shared.adopt_topology``): a new frame writes into the
    arrays of a frame nobody holds any more, where fresh ones cost their memory's first touch (the kernel clearing
    every page) every frame.

    An array is free when nothing but this pool refers to it: no view of it (a posed collider's vertices, a pose's
    normals), no ``FramePoses`` and no native frame (``native.mesh_frame`` keeps what its C code points into) holds it.
    Every element of a taken array is written before it is read."""

    KEEP = 2
    """Arrays kept per name and shape, at most (a take makes a new one only when every kept one is in use). The frame
    before lets go of its normals (~150 MB a frame for the bench's level-6 box) before the next takes them
    (``MeshCollider.moving_from``, ``native.mesh_frame``): one set serves every frame. The poses' vertices (18 MB) are
    interpolated while the native frame still holds the frame before's: two of those."""

    def __init__(self):
        self._arrays = {}

    def take(self, name: str, shape, dtype=np.float64) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` that nothing else refers to (its values are stale)."""
        kept = self._arrays.setdefault((name, tuple(shape)), [])
        for array in kept:
            if sys.getrefcount(array) <= 3 and array.dtype == dtype:  # this list, ``array``, getrefcount's argument
                return array
        array = np.empty(shape, dtype)
        kept.append(array)
        del kept[:-self.KEEP]
        return array


class _Shared:
    """What every pose of one collider shares: its topology, the broad phase's pieces (``samples.Samples``) and the
    k-d tree of the pose it was built on. The topology and the pieces are built on first use: a collider read anew
    at every frame that has not moved takes over the previous frame's (``MeshCollider.moving_from``), trees, caches
    and all, and never needs its own."""

    def __init__(self, vertices, triangles):
        self.vertices = vertices
        """(m, 3) [m]: the pose the pieces and sharp edges are found on."""
        self.triangles = triangles
        self.tree = self.edge_tree = self.corner_tree = None
        self.sides = None
        """(the start pose's vertex array, x_prev, sides): the last ``MeshCollider._sides`` answer."""
        self.body_edges = {}
        """{id of a body's triangles array: (that array, its edges)} (solvers pass the same array every step)."""
        self.travel = 0.0
        """[m] The most a vertex (so a piece's centre) moves between the tree's pose and any pose that queries it."""
        self.pair_caches = _Slots(lambda cache: cache.x_ref)
        """``_PairCache`` per body: the point-triangle candidates of the bodies ``_closest`` saw."""
        self.still = None
        """The last collider of these that stood still through its frame (``MeshCollider.moving_from``)."""
        self.contact_memo = None
        """(pose's vertex array, (thickness, margin) [m], x, x_prev, d, n): the last ``MeshCollider.contact`` answer of
        a moving collider."""
        self.kept_planes = {}
        """{thickness [m]: ``_Slots`` of ``kept_planes.KeptPlanes``}: the contact planes of a collider standing still."""
        self.poses = []
        """The vertex arrays of the last few interpolated poses (``MeshCollider.over``)."""
        self.pose_buffers = PoseBuffers()
        """Arrays for the frame's poses and their normals (``mesh_collider.FramePoses``), handed on to the same
        collider's next frames (``adopt_topology``)."""
        self.pose_values = []
        """[(a pose's vertex array, {name: value})]: what ``MeshCollider._pose_values`` derived from the last few
        poses (POSE_VALUES), found by the vertices' bits."""
        self.native = None
        """The native nearest-triangle query of these triangles (``solvers.native.mesh_kernels.MeshClosest``, set by a
        solver that has the native library), or None: ``MeshCollider._closest`` then runs in NumPy."""
        self.face_cache = {}
        """{(reach, travel) [m], id of a body's triangles array: ``mesh_face_pairs._FaceList``}: the kept face pairs of
        each reach and body."""

    def adopt_topology(self, other) -> None:
        """Take over what ``other`` (the same collider's triangles, read at another frame) derived from the triangles
        alone: the bodies' edges, the side ids, the edges' topology (``edge_topology``), the faces of each edge and
        the triangles at each vertex (``edge_faces``, ``vertex_triangles``) and the native queries of these triangles
        (``native``), which a collider that moves would otherwise rebuild every frame; and, when its vertices are
        ``other``'s moved by one translation (``translated_from``: a keyframed location), what follows its shape: the
        sharp edges, their straight runs, the corners and the pieces of its edges and triangles (SHAPE_DERIVED)."""
        self.body_edges = other.body_edges
        self.pose_buffers = other.pose_buffers
        for name in ("side_edge", "edge_topology", "edge_faces", "vertex_triangles"):
            if name in other.__dict__:
                self.__dict__.setdefault(name, other.__dict__[name])
        if self.native is None:
            self.native = other.native
        if any(name in other.__dict__ for name in SHAPE_DERIVED) and self.translated_from(other):
            for name in SHAPE_DERIVED:
                if name in other.__dict__:
                    self.__dict__.setdefault(name, other.__dict__[name])

    def translated_from(self, other) -> bool:
        """Whether these vertices are ``other``'s moved by one translation, to round-off (TRANSLATION_TOLERANCE of
        the largest coordinate): the same shape, so the same sharp edges and pieces."""
        return translated(self.vertices, other.vertices)

    @cached_property
    def half_edges(self):
        """``half_edges`` of the triangles (what ``side_edge`` and ``edge_topology`` are read from)."""
        return half_edges(len(self.vertices), self.triangles)

    @cached_property
    def side_edge(self):
        """(t, 3): an id of the edge opposite each triangle's corner k, shared by the triangles on that edge (the edge's
        index in ``half_edges``' order). The side opposite corner k is the triangle's half-edge (k + 1) % 3."""
        edge = self.half_edges[1].reshape(3, -1)
        return np.ascontiguousarray(edge[[1, 2, 0]].T)

    @cached_property
    def edge_faces(self):
        """(start (e + 1,), faces (3 t,)) int64: the faces of edge k (``side_edge``'s ids) are
        faces[start[k] : start[k + 1]], in the order ``mesh_collider.pose_normals`` sums their normals (corner-major,
        then by triangle)."""
        keys = np.ascontiguousarray(self.side_edge.T).ravel()  # side k of triangle i at k t + i
        start, order = _groups(keys, int(keys.max()) + 1 if len(keys) else 0)
        return start, order % max(len(self.triangles), 1)

    @cached_property
    def vertex_triangles(self):
        """(start (m + 1,), triangles (3 t,)) int64: the triangles with a corner at vertex v are
        triangles[start[v] : start[v + 1]], ascending (one with two corners there twice)."""
        corners = np.asarray(self.triangles, np.int64).ravel()  # corner k of triangle i at 3 i + k
        start, order = _groups(corners, len(self.vertices))
        return start, order // 3

    @cached_property
    def edge_topology(self):
        """``edge_topology`` of the triangles (kept across frames by ``adopt_topology``)."""
        return edge_topology(len(self.vertices), self.triangles, self.half_edges)

    @cached_property
    def sharp(self):
        """(s, 2): the sharp edges (``sharp_edges``), as the mesh has them."""
        if len(self.triangles) == 0:
            return sharp_edges(self.vertices, self.triangles)
        return sharp_edges(self.vertices, self.triangles, topology=self.edge_topology,
                           library=getattr(self.native, "library", None))

    @cached_property
    def edges(self):
        """(e, 2): the sharp edges the edge tests meet: ``sharp`` with each straight run one segment
        (``straight_runs``)."""
        sharp = self.sharp
        return straight_runs(self.vertices, sharp, self.straight_inner if len(sharp) >= 2 else None)

    @cached_property
    def straight_inner(self):
        """``_straight_inner`` of the sharp edges (the straight runs' inner vertices and edges), for ``edges`` and
        ``corners``."""
        return _straight_inner(self.vertices, self.sharp)

    @cached_property
    def triangle_pieces(self):
        return Samples(self.vertices, self.triangles)

    @cached_property
    def edge_pieces(self):
        return Samples(self.vertices, self.edges)

    @cached_property
    def corners(self):
        """(c,): the vertices of the sharp edges, less those in the middle of a straight run of them (two sharp edges,
        and no other, meeting there in a straight line, as along a subdivided box's edge). The distance between a
        segment and a triangle that it does not cross is reached at an end of the segment or on an edge of the
        triangle, so a straight run's inner vertices are neither: the corner tests need its ends, the edge tests do
        the rest. (A box under a level-6 Simple Subdivision keeps its 8 corners of 764.) Found on the mesh's own sharp
        edges (``sharp``): each vertex is tested between its two neighbouring pieces."""
        edges = self.sharp
        if len(edges) == 0:
            return np.zeros(0, np.int64)
        count = np.bincount(edges.ravel(), minlength=len(self.vertices))
        count[self.straight_inner[0]] = 0
        return np.flatnonzero(count > 0)

    def tree_for(self, vertices):
        """The k-d tree over the triangles' pieces, built on the first pose that asks (once per frame)."""
        if self.tree is None:
            self.tree = cKDTree(self.triangle_pieces.centres(vertices))
        return self.tree

    def edge_tree_for(self, vertices):
        """The k-d tree over the edges' pieces and their largest radius [m], built on the first pose that asks."""
        if self.edge_tree is None:
            self.edge_tree = (cKDTree(self.edge_pieces.centres(vertices)), self.edge_pieces.radius(vertices))
        return self.edge_tree

    def corner_tree_for(self, vertices):
        """The k-d tree over the corners (``corners``), built on the first pose that asks."""
        if self.corner_tree is None:
            self.corner_tree = cKDTree(vertices[self.corners])
        return self.corner_tree


class MeshBroadPhase:
    """The broad-phase queries of ``MeshCollider`` (a mixin): candidate pairs from the k-d trees of ``shared``
    (``_Shared``). Uses the collider's vertices (m, 3) [m], triangles (t, 3), thickness [m], radius [m] (its
    triangle pieces' largest) and shared."""

    def _pairs(self, x, reach):
        """Candidate (point, triangle) pairs (k,), (k,), each once: every triangle with a point of it within reach (n,)
        [m] of the point. One k-d tree join with the broad phase's pieces, widened by the largest piece radius and
        the travel since the tree's pose."""
        empty = np.zeros(0, np.int64)
        if len(x) == 0 or len(self.triangles) == 0:
            return empty, empty
        tree = self.shared.tree_for(self.vertices)
        radius = np.broadcast_to(np.asarray(reach, float) + self.radius + self.shared.travel, (len(x),))
        # Points joined in classes of similar radius (within a factor 2): one far point must not widen every query.
        size_class = np.floor(np.log2(radius / max(float(radius.min()), 1e-9))).astype(np.int64)
        keys = []
        for c in np.unique(size_class):
            rows = np.flatnonzero(size_class == c)
            found = cKDTree(x[rows]).sparse_distance_matrix(tree, float(radius[rows].max()), output_type="ndarray")
            points, pieces = rows[found["i"].astype(np.int64)], found["j"].astype(np.int64)
            keep = found["v"] <= radius[points]
            keys.append(points[keep] * len(self.triangles) + self.shared.triangle_pieces.owner[pieces[keep]])
        key = np.unique(np.concatenate(keys))
        return key // len(self.triangles), key % len(self.triangles)

    def box(self) -> np.ndarray:
        """The axis-aligned box of this pose's vertices (6,) [m]: lowest x, y, z, then highest. Kept on ``shared`` for
        the vertex array it was taken of (a still collider asks with the same array at every step)."""
        known = self.shared.__dict__.get("box")
        if known is None or known[0] is not self.vertices:
            known = self.shared.box = (self.vertices, np.concatenate([self.vertices.min(axis=0),
                                                                      self.vertices.max(axis=0)]))
        return known[1]

    def far_from(self, x, reach: float) -> bool:
        """Whether the points x (n, 3) [m] all lie farther than reach [m] from this pose's ``box`` along one axis, so
        that no part of the collider is within reach of any of them. A body falling towards a collider, or resting
        beside one of several, then skips that collider's contact planes and face pairs
        (``kept_planes.kept_contact``, ``MeshFacePairs.face_pairs``; src/mesh_frame.c ``body_far``, the same
        arithmetic): their passes over every point of the body cost a box beside the bench's 31 x 31 cloth 0.45 ms a
        frame (the cloth's own step: 1.7), 0.1 with this test. False without points or vertices; an axis where a point
        has a NaN coordinate never separates."""
        if len(x) == 0 or len(self.vertices) == 0:
            return False
        box = self.box()
        low, high = x.min(axis=0), x.max(axis=0)
        return bool(np.any((low - box[3:] > reach) | (box[:3] - high > reach)))

    def _bounds(self):
        """Each triangle's bounding sphere, plane and axis-aligned box at this pose, one row (t, 14) each (one gather
        per query): centre (0:3), radius (3), unit normal (4:7), n . corner (7), low (8:11), high (11:14) [m]
        (``lower_bounds``). Built on first use."""
        known = self.__dict__.get("_spheres")
        if known is None:
            corners = self.vertices[self.triangles]
            centre = corners.mean(axis=1)
            radius = np.sqrt(((corners - centre[:, None]) ** 2).sum(axis=2).max(axis=1))
            normal = self.face_normals
            known = self.__dict__["_spheres"] = np.concatenate(
                [centre, radius[:, None], normal, _dot(normal, corners[:, 0])[:, None], corners.min(axis=1), corners.max(axis=1)],
                axis=1)
        return known

    def _candidates(self, x, points, limit: float):
        """(point (k,) (indices into x), triangle (k,), the body's ``_PairCache``), the pairs sorted by point then
        triangle, for the points (p,) (sorted indices into x (n, 3)): for each a bound ``need`` <= limit [m] on its
        nearest triangle's distance when that is within limit, and every triangle within need of it (none where no
        triangle lies within limit), with no triangle whose bounding sphere lies farther. None when x is a smaller point set than the kept one (a few
        points, friction's motion: the caller asks the tree and keeps the body's entries).

        The bound: the exact distance to the triangle last found nearest to the point (``_PairCache.best``: a step
        asks from nearly the same positions each time, so it is nearly exact), else, for a point with none within
        limit, the nearest piece's centre (a point on the surface) from a k-d tree query, which also tells the points
        no triangle can reach. Kept per point in the body's ``_PairCache`` (``_Shared.pair_caches``): a point whose
        need plus its motion m since its entry was found still lies within what the entry covered reuses it (a
        triangle within r of x lies within r + m of where x was); the others are found anew (``_pairs``) within
        need + SKIN, or recorded as empty as far as the tree proves nothing lies. Every solver step asks for the
        whole body several times from nearly the same positions (contact constraints, the vertex projections before
        and after the face push, the sides at the step's start). The bounding spheres then drop what the skin and a
        loose bound added, before the exact distances."""
        caches = self.shared.pair_caches
        cache = caches.nearest(x)
        if cache is None:
            if any(len(x) < size for size in caches.sizes()):
                return None
            cache = caches.add(_PairCache(x))
        need = np.full(len(points), float(limit))
        best = cache.best[points]
        has = np.flatnonzero(best >= 0)
        if len(has):
            corners = self.vertices[self.triangles[best[has]]]
            bary, _ = point_triangle_closest(x[points[has]], corners[:, 0], corners[:, 1], corners[:, 2])
            gap = x[points[has]] - np.einsum("kj,kjd->kd", bary, corners)
            need[has] = np.minimum(np.sqrt(_dot(gap, gap)), limit)
        moved = x[points] - cache.x_ref[points]
        miss = np.flatnonzero(need + np.sqrt(_dot(moved, moved)) > cache.covered[points])
        if len(miss):
            travel = self.shared.travel
            loose = miss[need[miss] >= limit]  # no triangle known within limit: ask the tree whether any can be
            far = np.zeros(0, np.int64)
            if len(loose):
                nearest = self.shared.tree_for(self.vertices).query(x[points[loose]])[0]
                # Every triangle has a point within the largest piece radius of one of its pieces' centres (plus the
                # travel since the tree's pose), so none lies nearer than lower.
                lower = nearest - self.radius - travel
                out = lower > limit
                far = loose[out]
                need[loose] = np.minimum(nearest + travel, limit)
                need[far] = -np.inf
                cache.replace(points[far], x[points[far]], lower[out] * (1.0 - 1e-12) - 1e-12, None, None)
            again = np.setdiff1d(miss, far, assume_unique=True)
            if len(again):
                rows, tris = self._pairs(x[points[again]], need[again] + SKIN)  # every triangle with a point within that
                # Only those that can lie within it at any pose of the frame (the pieces' join is looser).
                reach = need[again] + SKIN
                lower = lower_bounds(x[points[again]][rows], self._bounds()[tris])
                near = lower <= (reach[rows] + travel) * (1.0 + 1e-12) + 1e-12
                cache.replace(points[again], x[points[again]], reach, points[again][rows[near]], tris[near], lower[near])
        # The bounds are 1-Lipschitz in the point, and a pose of the frame moves a triangle by at most the travel:
        # a pair whose bound where it was found, less that and the point's motion, exceeds need is dropped before
        # the bounds are evaluated where the point is.
        shift = np.zeros(len(x))
        shift[points] = np.sqrt(_dot(moved, moved))
        need_at = np.full(len(x), -np.inf)
        need_at[points] = need * (1.0 + 1e-12) + 1e-12
        rows, tris, found_lower = cache.rows, cache.tris, cache.lower
        if len(points) < len(x):  # only the asked points' entries (the entries are sorted by point)
            first, last = np.searchsorted(rows, points), np.searchsorted(rows, points, side="right")
            count = last - first
            entries = np.repeat(first - np.cumsum(count) + count, count) + np.arange(int(count.sum()))
            rows, tris, found_lower = rows[entries], tris[entries], found_lower[entries]
        maybe = np.flatnonzero(found_lower - shift[rows] - self.shared.travel <= need_at[rows])
        rows, tris = rows[maybe], tris[maybe]
        keep = np.flatnonzero(lower_bounds(x[rows], self._bounds()[tris]) <= need_at[rows])
        return rows[keep], tris[keep], cache

    def edge_pairs(self, x, edges, reach: float):
        """Candidate pairs (collider edge (k,), body edge (k,)), each once, of the collider's edges and a body's edges
        (e, 2) at x that may come within reach [m]: the body edges' midpoints joined with the collider edges' pieces
        (``samples.Samples``) in one k-d tree join."""
        empty = np.zeros(0, np.int64)
        if len(edges) == 0 or len(self.shared.edges) == 0:
            return empty, empty
        a, b = x[edges[:, 0]], x[edges[:, 1]]
        half = 0.5 * np.sqrt(_dot(b - a, b - a))
        tree, piece_radius = self.shared.edge_tree_for(self.vertices)
        # The pieces' radius at the tree's pose; a deforming collider's pieces may grow by up to twice the travel, and
        # their centres lie within the travel of the tree's (built on another pose of the frame). The pairs' exact
        # test (``_pairs_within``) keeps those within reach + the travel: the join reaches that far beyond.
        found = tree.sparse_distance_matrix(cKDTree(0.5 * (a + b)), reach + piece_radius + 4.0 * self.shared.travel
                                            + float(half.max()), output_type="ndarray")
        count = len(edges)
        key = np.unique(self.shared.edge_pieces.owner[found["i"].astype(np.int64)] * count + found["j"].astype(np.int64))
        return key // count, key % count

    def corner_pairs(self, x, triangles, reach: float):
        """Candidate pairs (corner (k,) (an index into ``shared.corners``), body triangle (k,)) of the collider's
        corners and a body's triangles (t, 3) at x that may come within reach [m]: one k-d tree join of the corners
        with the triangles' bounding spheres."""
        empty = np.zeros(0, np.int64)
        if len(triangles) == 0 or len(self.shared.corners) == 0:
            return empty, empty
        body = x[triangles]
        centre = body.mean(axis=1)
        radius = np.sqrt(((body - centre[:, None]) ** 2).sum(axis=2).max(axis=1))
        # The tree's corners lie within the travel of this pose's (it is built on another pose of the frame), and the
        # pairs' exact test (``_pairs_within``) keeps those within reach + the travel: twice the travel beyond reach.
        found = self.shared.corner_tree_for(self.vertices).sparse_distance_matrix(
            cKDTree(centre), reach + float(radius.max()) + 2.0 * self.shared.travel, output_type="ndarray")
        ci, ti = found["i"].astype(np.int64), found["j"].astype(np.int64)
        keep = found["v"] <= reach + radius[ti] + 2.0 * self.shared.travel
        return ci[keep], ti[keep]

    def _body_edges(self, triangles):
        """The edges (e, 2) of a body's triangles (t, 3), kept per triangles array."""
        known = self.shared.body_edges.get(id(triangles))
        if known is None or known[0] is not triangles:
            if len(self.shared.body_edges) >= SLOTS:
                self.shared.body_edges.clear()
            known = self.shared.body_edges[id(triangles)] = (triangles, triangle_edges(triangles))
        return known[1]
