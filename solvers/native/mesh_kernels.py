"""Python binding of a mesh collider's native nearest-triangle query (``src/mesh_collider.c``).

``MeshClosest`` <-> ``collision.colliders.mesh_collider.MeshCollider._closest``: for every asked point within
``limit`` of the collider, its nearest triangle (the lowest index among equal distances), the barycentric weights of
the closest point, that point, the unsigned distance and whether it is interior. The nearest triangles are the
twin's; the weights, points and distances repeat the twin's arithmetic, to a few ulps where the twin's batch is all
border (``src/mesh_collider.c`` says why; tests/test_native_mesh_collider.py).

One ``MeshClosest`` per collider topology (``_Shared.native``, set by ``attach``): the triangles are checked once
(int64, C-contiguous, indices within the vertex count); the grid over a pose's triangles is built once per pose (the
vertex array, kept while it is one of the last POSES asked: a still collider keeps one for good, a moving one asks
from its substeps' start and end poses) in buffers owned here, grown when the build says it needs more. Per call
the positions, the asked rows and the pose are checked (dtype, contiguity, shape, rows within range).
"""
import numpy as np

from .kernels import F64, I64, checked, checked_indices
from .library import pointer

POSES = 4
"""Grids kept per collider: the poses a substep asks from (start and end), with room for the next substep's."""
MAX_CELLS = 1 << 20
"""Cells of a grid at most (the cell size grows until the grid fits)."""
CELLS_PER_ELEMENT = 8
"""Cells of a grid at most per element gridded (plus 64): a few corners (points, no size of their own) get a few large
cells, not the finest grid the extent allows, which every query would walk cell by cell."""
CELLS_PER_AXIS = 128
"""A grid's cells are at least the collider's longest extent over this."""
MOVING_FINER = 4.0
"""A moving collider's triangle grid (built once per frame halfway between its start and end poses,
``mesh_frame.MeshFrame._fill_moving``) has cells up to this many times finer than the median triangle, not finer
than its longest extent over FINE_CELLS_PER_AXIS (and within the CELLS_PER_ELEMENT and MAX_CELLS bounds): a few large
triangles (a 12-triangle box: 4 cells) would each be tested by every point that asks, every substep; finer cells keep
a point over the box's top from testing its sides (4% of the sliding box drape's frame call). A finely cut collider
keeps its cells (they are already about a triangle across: finer made a 12k-triangle one slower). The answers do not
depend on the grid."""
FINE_CELLS_PER_AXIS = 32
"""A finer grid's (``grid_shape``'s finer > 1) cells are at least the longest extent over this."""


def grid_shape(corners: np.ndarray, finer: float = 1.0):
    """The grid over triangles with corners (t, 3, 3) [m]: ((origin x, y, z, cell size h, upper x, y, z) (7,), dims
    (3,) int64). h is the median largest box side of the triangles (a triangle then spans a few cells), with finer > 1
    that over finer but at least the longest extent / FINE_CELLS_PER_AXIS (never coarser), at least the
    longest extent / CELLS_PER_AXIS, doubled until the grid has at most MAX_CELLS cells and CELLS_PER_ELEMENT per
    triangle (plus 64)."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    lower, upper = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    return _shape(lower.T, upper.T, finer)


def grid_shape_of(vertices: np.ndarray, elements: np.ndarray, finer: float = 1.0):
    """``grid_shape(vertices[elements], finer)``, the same numbers, from one coordinate at a time: each a contiguous
    gather (the (t, 3, 3) corners' strided elementwise minima and reductions took 4 of a 49k-triangle collider's
    ~6 ms grid a frame)."""
    columns = [np.ascontiguousarray(vertices[:, k]) for k in range(3)]
    corner = [np.ascontiguousarray(elements[:, j]) for j in range(3)]
    lower, upper = np.empty((3, len(elements))), np.empty((3, len(elements)))
    for k, column in enumerate(columns):
        a, b, c = column[corner[0]], column[corner[1]], column[corner[2]]
        np.minimum(np.minimum(a, b, out=lower[k]), c, out=lower[k])
        np.maximum(np.maximum(a, b, out=upper[k]), c, out=upper[k])
    return _shape(lower, upper, finer)


def _shape(lower: np.ndarray, upper: np.ndarray, finer: float):
    """``grid_shape`` from the triangles' box corners by axis, lower and upper (3, t) [m]. Min and max are exact, so
    any order of taking them gives these numbers."""
    low, high = lower.min(axis=1), upper.max(axis=1)
    extent = high - low
    box = upper - lower
    sides = np.maximum(np.maximum(box[0], box[1]), box[2])
    h = _median(sides)
    if finer > 1.0:
        h = min(h, max(h / finer, float(extent.max()) / FINE_CELLS_PER_AXIS))
    h = max(h, float(extent.max()) / CELLS_PER_AXIS, 1e-9)
    while True:
        dims = np.floor(extent / h).astype(np.int64) + 1
        if int(np.prod(dims)) <= min(MAX_CELLS, CELLS_PER_ELEMENT * lower.shape[1] + 64):
            return np.concatenate([low, [h], high]).astype(np.float64), dims
        h *= 2.0


def _median(values: np.ndarray) -> float:
    """np.median of values (k,), k > 0 finite, without its per-call overhead: the middle element of the sorted values,
    or the two middle ones' mean (halving is exact, so (a + b) / 2 and 0.5 (a + b) are the same number)."""
    k = len(values)
    middle = np.partition(values, [(k - 1) // 2, k // 2])
    return float(0.5 * (middle[(k - 1) // 2] + middle[k // 2]))


class _Known:
    """The addresses of the float arrays a collider's kernels were handed before (positions, poses, kept planes),
    each checked once: ``ndarray.ctypes.data`` costs microseconds, and a substep hands the same few arrays dozens of
    times. An entry holds its array (alive, so its id stays its own); its dtype and shape are compared on every ask,
    its checks (``kernels.checked``) run again when they differ. At most KNOWN entries, the oldest dropped."""

    def __init__(self):
        self.entries = {}

    def __call__(self, name: str, array, shape: tuple) -> int:
        entry = self.entries.get(id(array))
        if (entry is not None and entry[0] is array and array.dtype == F64 and len(array.shape) == len(shape)
                and all(want is None or got == want for got, want in zip(array.shape, shape))):
            return entry[1]
        checked(name, array, F64, shape)
        if len(self.entries) >= KNOWN:
            self.entries.pop(next(iter(self.entries)))
        self.entries[id(array)] = (array, pointer(array))
        return self.entries[id(array)][1]


KNOWN = 64


class _Grid:
    """The grid of one pose: its vertices (kept alive: their address is the kernel's), shape and CSR buffers."""

    def __init__(self, library, vertices, elements, finer: float = 1.0):
        self.vertices = vertices
        self.grid, self.dims = grid_shape_of(vertices, elements, finer)
        cells = int(np.prod(self.dims))
        self.cell_start = np.zeros(cells + 1, np.int64)
        capacity = 4 * len(elements) + 16
        while True:
            self.entry = np.zeros(capacity, np.int64)
            need = library.softsim_mesh_grid_build(pointer(vertices), pointer(elements), len(elements),
                                                   pointer(self.grid), pointer(self.dims), pointer(self.cell_start),
                                                   capacity, pointer(self.entry))
            if need <= capacity:
                break
            capacity = int(need)
        self.pointers = (pointer(self.grid), pointer(self.dims), pointer(self.cell_start), pointer(self.entry))
        """The addresses of grid, dims, cell_start and entry, in a query's argument order."""


class _Gridded:
    """One kind of a collider's elements as triangles (k, 3) of indices into its m vertices (a corner c as (c, c,
    c), an edge (a, b) as (a, b, b)), checked once, with a grid per pose (the last POSES asked) and the query stamps
    (``src/mesh_collider.c``)."""

    def __init__(self, library, name: str, elements, vertex_count: int):
        self.library = library
        self.m = int(vertex_count)
        self.elements = checked_indices(name, elements, self.m, (None, 3))
        self.stamp = np.zeros(len(self.elements) + 1, np.int64)
        """[0]: the last query's number; [1 + f]: the last query that tested element f."""
        self.pointer, self.stamp_pointer = pointer(self.elements), pointer(self.stamp)
        self.grids = []

    def grid_for(self, vertices, finer: float = 1.0) -> _Grid:
        """The grid of the pose ``vertices`` (m, 3) float64 C-contiguous, built on its first ask (``grid_shape``'s
        finer: the first ask's)."""
        for grid in self.grids:
            if grid.vertices is vertices:
                return grid
        checked("vertices", vertices, F64, (self.m, 3))
        if not np.all(np.isfinite(vertices)):
            raise ValueError("vertices: must be finite")
        if len(self.grids) >= POSES:
            self.grids.pop(0)
        self.grids.append(_Grid(self.library, vertices, self.elements, finer))
        return self.grids[-1]


class _Pairs:
    """Output buffers of a pair kernel (feature, body element, distance), grown when a call returns more pairs."""

    def __init__(self):
        self._grow(0)

    def _grow(self, count: int) -> None:
        self.feature = np.zeros(count, np.int64)
        self.row = np.zeros(count, np.int64)
        self.d = np.zeros(count)

    def run(self, call):
        """call(capacity, feature, row, d pointers) -> pair count, called again with room for all of them."""
        while True:
            count = call(len(self.d), pointer(self.feature), pointer(self.row), pointer(self.d))
            if count <= len(self.d):
                return self.feature[:count].copy(), self.row[:count].copy(), self.d[:count].copy()
            self._grow(int(count * 1.5) + 16)


class MeshClosest:
    """The native queries of one collider's triangles (t, 3) over m vertices: ``MeshCollider._closest`` (``closest``),
    ``MeshFacePairs._pairs_within`` (``face_pairs``) and the corner and edge pushes of ``MeshFacePushes``
    (``corner_pushes``, ``edge_pushes``, ``apply``)."""

    def __init__(self, library, triangles, vertex_count: int):
        self.library = library
        self.m = int(vertex_count)
        self.faces = _Gridded(library, "triangles", triangles, self.m)
        self.triangles = self.faces.elements
        self._outputs(0)
        self.corners = self.sharp = None
        """The corners and sharp edges gridded (``_Gridded``), set on the first ``face_pairs``."""
        self._body = self._corner_ids = self._sharp_ids = None
        self._corner_pairs, self._edge_pairs = _Pairs(), _Pairs()
        self._sums, self._count = np.zeros((0, 3)), np.zeros(0)
        self._stale = np.zeros(0, np.int64)
        self.known = _Known()
        self._rows_size, self._rows_out, self._rows_at = 0, (), ()
        self._all = np.zeros(0, np.int64)
        """0, 1, 2, ...: the rows of every point (``motion``), with its scratch and their addresses."""
        """``contact_rows``' output and scratch buffers (grown on demand) and their addresses."""
        """Scratch of ``apply``: per particle sums (n, 3) and counts (n,)."""

    @property
    def grids(self):
        return self.faces.grids

    def grid_for(self, vertices) -> _Grid:
        return self.faces.grid_for(vertices)

    def _outputs(self, count: int) -> None:
        self.out_row = np.zeros(count, np.int64)
        self.out_tri = np.zeros(count, np.int64)
        self.out_bary = np.zeros((count, 3))
        self.out_q = np.zeros((count, 3))
        self.out_d = np.zeros(count)
        self.out_interior = np.zeros(count, np.int64)
        self._out_pointers = tuple(map(pointer, (self.out_row, self.out_tri, self.out_bary, self.out_q, self.out_d,
                                                 self.out_interior)))

    def closest(self, vertices, x, points, limit: float):
        """``_closest``'s answer for the rows ``points`` (k,) int64 of x (n, 3) float64 against the pose
        ``vertices`` (m, 3): (rows of x (j,), triangle (j,), bary (j, 3), closest point (j, 3), unsigned distance
        (j,) [m], interior (j,) bool) for the j points with a triangle within limit [m], in the order of points."""
        x_at = self.known("x", x, (None, 3))
        points = checked_indices("points", points, len(x), (None,))
        grid = self.faces.grid_for(vertices)
        if len(self.out_row) < len(points):
            self._outputs(max(len(points), 2 * len(self.out_row)))
        found = self.library.softsim_mesh_closest(
            x_at, pointer(points), len(points), self.known("vertices", vertices, (self.m, 3)), self.faces.pointer,
            *grid.pointers,
            float(limit), self.faces.stamp_pointer, *self._out_pointers)
        return (self.out_row[:found].copy(), self.out_tri[:found].copy(), self.out_bary[:found].copy(),
                self.out_q[:found].copy(), self.out_d[:found].copy(), self.out_interior[:found] != 0)

    def contact_rows(self, pose, start, x, x_prev, points, limits):
        """``MeshCollider._contact_rows``' answer in one call (``src/mesh_moving.c``): pose and start are (vertices
        (m, 3), face normals (t, 3), vertex pseudo-normals (m, 3), side pseudo-normals (t, 3, 3)) at the step's end and
        start; the points (k,) int64 of x (n, 3) float64, which moved from x_prev (n, 3); limits (thickness, margin,
        the side query's limit (the start pose's thickness + SIDE_MARGIN), travel) [m]. Returns (rows of x (j,), d
        (j,) [m], normal (j, 3), unsigned distance (j,) [m]) of the j points within thickness + margin, in the order
        of points."""
        x_at = self.known("x", x, (None, 3))
        x_prev_at = self.known("x_prev", x_prev, x.shape)
        points = checked_indices("points", points, len(x), (None,))
        limits = np.array(tuple(limits) + (0.0,), np.float64).reshape(-1)  # drift 0: each pose's own grid
        if limits.shape != (5,) or not np.all(np.isfinite(limits)) or np.any(limits < 0.0):
            raise ValueError("limits: (thickness, margin, side limit, travel), finite and >= 0")
        t = len(self.triangles)
        at = []
        for name, (vertices, face, vertex, side) in (("pose", pose), ("start", start)):
            grid = self.faces.grid_for(vertices)  # checks vertices (float64, (m, 3), finite)
            at.append((self.known(f"{name} vertices", vertices, (self.m, 3)), *grid.pointers,
                       self.known(f"{name} face normals", face, (t, 3)),
                       self.known(f"{name} vertex normals", vertex, (self.m, 3)),
                       self.known(f"{name} side normals", side, (t, 3, 3))))
        k = len(points)
        if self._rows_size < k:
            self._rows_size = size = max(k, 2 * self._rows_size)
            self._rows_out = (np.zeros(size, np.int64), np.zeros(size), np.zeros((size, 3)), np.zeros(size),
                              np.zeros(6 * size, np.int64), np.zeros(14 * size))
            self._rows_at = tuple(map(pointer, self._rows_out))
        found = self.library.softsim_mesh_contact_rows(x_at, x_prev_at, pointer(points), k, self.faces.pointer, *at[0],
                                                       *at[1], self.faces.stamp_pointer, pointer(limits), *self._rows_at)
        row, d, normal, dist = self._rows_out[:4]
        return row[:found].copy(), d[:found].copy(), normal[:found].copy(), dist[:found].copy()

    def motion(self, vertices, start_vertices, x, limit: float):
        """``MeshCollider.motion``'s answer (``src/mesh_moving.c``): the motion (n, 3) [m] from the pose
        start_vertices (m, 3) to vertices (m, 3) of the surface under the points x (n, 3) float64 (each one's nearest
        triangle at vertices within limit [m], at its closest point's weights; zero beyond)."""
        n = len(x)
        x_at = self.known("x", x, (None, 3))
        grid = self.faces.grid_for(vertices)  # checks vertices (float64, (m, 3), finite)
        vertices_at = self.known("vertices", vertices, (self.m, 3))
        start_at = self.known("start vertices", start_vertices, (self.m, 3))
        if len(self._all) < n:
            self._all = np.arange(max(n, 2 * len(self._all)), dtype=np.int64)
            self._motion_work = (np.zeros(3 * len(self._all), np.int64), np.zeros(7 * len(self._all)))
            self._motion_at = (pointer(self._all), *map(pointer, self._motion_work))
        out = np.empty((n, 3))
        self.library.softsim_mesh_motion(x_at, self._motion_at[0], n, self.faces.pointer, vertices_at, *grid.pointers,
                                         start_at, float(limit), 0.0, self.faces.stamp_pointer, pointer(out),
                                         *self._motion_at[1:])
        return out

    def _body_checked(self, x, triangles, edges):
        """A body's triangles (t, 3) and edges (e, 2) checked against x (n, 3) once per pair of arrays: (triangles,
        edges, n, their two addresses)."""
        known = self._body
        if known is None or known[0] is not triangles or known[1] is not edges or known[2] != len(x):
            checked_indices("body triangles", triangles, len(x), (None, 3))
            checked_indices("body edges", edges, len(x), (None, 2))
            self._body = known = (triangles, edges, len(x), pointer(triangles), pointer(edges))
        return known

    def gridded(self, corners, sharp) -> None:
        """The collider's corners (c,) and sharp edges (s, 2) int64 (the same arrays every call: ``_Shared.corners``,
        ``.edges``) checked and gridded (``self.corners``, ``self.sharp``), once per pair of arrays; arrays equal to
        the last ones (a moving collider's, found anew each frame) keep those."""
        if self.corners is not None and _equal(corners, self._corner_ids) and _equal(sharp, self._sharp_ids):
            return
        as_corners = np.ascontiguousarray(np.repeat(checked("corners", corners, I64, (None,))[:, None], 3, axis=1))
        as_edges = np.ascontiguousarray(checked("sharp edges", sharp, I64, (None, 2))[:, [0, 1, 1]])
        self.corners = _Gridded(self.library, "corners", as_corners, self.m)
        self.sharp = _Gridded(self.library, "sharp edges", as_edges, self.m)
        self._corner_ids, self._sharp_ids = corners, sharp
        self._corner_at, self._sharp_at = pointer(corners), pointer(sharp)

    def face_pairs(self, vertices, corners, sharp, travel: float, x, triangles, tri_rows, tri_reach, edges,
                   edge_rows, edge_reach):
        """``_pairs_within``'s answer at the pose ``vertices`` (m, 3), with the collider's corners (c,) and sharp
        edges (s, 2) (the same arrays every call: ``_Shared.corners``, ``.edges``) and the travel [m]: ((corner,
        body triangle, distance), (sharp edge, body edge, distance)), each sorted by body element then feature, for
        the body triangles tri_rows (k,) within tri_reach (k,) [m] and the body edges edge_rows (e,) within
        edge_reach (e,) of a body at x (n, 3) with triangles (t, 3) and edges (e, 2)."""
        self.gridded(corners, sharp)
        x_at = self.known("x", x, (None, 3))
        triangles_at, edges_at = self._body_checked(x, triangles, edges)[3:]
        vertices_at = self.known("vertices", vertices, (self.m, 3))
        tri_rows = checked_indices("tri_rows", tri_rows, len(triangles), (None,))
        edge_rows = checked_indices("edge_rows", edge_rows, len(edges), (None,))
        tri_reach = checked("tri_reach", tri_reach, F64, (len(tri_rows),))
        edge_reach = checked("edge_reach", edge_reach, F64, (len(edge_rows),))
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        corner_pairs = edge_pairs = empty
        if len(self.corners.elements) and len(tri_rows):
            grid = self.corners.grid_for(vertices)
            corner_pairs = self._corner_pairs.run(lambda capacity, f, r, d: self.library.softsim_mesh_corner_pairs(
                x_at, triangles_at, pointer(tri_rows), len(tri_rows), pointer(tri_reach), float(travel), vertices_at,
                self._corner_at, *grid.pointers, self.corners.stamp_pointer, capacity, f, r,
                d))
        if len(self.sharp.elements) and len(edge_rows):
            grid = self.sharp.grid_for(vertices)
            edge_pairs = self._edge_pairs.run(lambda capacity, f, r, d: self.library.softsim_mesh_edge_pairs(
                x_at, edges_at, pointer(edge_rows), len(edge_rows), pointer(edge_reach), float(travel), vertices_at,
                self._sharp_at, *grid.pointers, self.sharp.stamp_pointer, capacity, f, r, d))
        return corner_pairs, edge_pairs

    def _measured(self, kernel, width, x, x_prev, body, body_name, vertices, start_vertices, features, feature_name,
                  fi, bi, thickness: float):
        x_at = self.known("x", x, (None, 3))
        x_prev_at = self.known("x_prev", x_prev, x.shape)
        checked_indices(body_name, body, len(x), (None, width))
        vertices_at = self.known("vertices", vertices, (self.m, 3))
        start_at = self.known("start vertices", start_vertices, (self.m, 3))
        checked_indices(feature_name, features, self.m, features.shape)
        fi = checked_indices("feature pairs", fi, len(features), (None,))
        bi = checked_indices("body pairs", bi, len(body), (len(fi),))
        k = len(fi)
        out = (np.zeros((k, width), np.int64), np.zeros((k, width)), np.zeros((k, 3)), np.zeros(k), np.zeros((k, 3)),
               np.zeros((k, 3)))
        kept = kernel(x_at, x_prev_at, pointer(body), vertices_at, start_at, pointer(features), pointer(fi),
                      pointer(bi), k, float(thickness), *map(pointer, out))
        return tuple(a[:kept] for a in out)

    def corner_pushes(self, x, x_prev, triangles, vertices, start_vertices, corners, ci, ti, thickness: float):
        """``_corner_pushes``' pairs kept, as the fields of a ``mesh_pushes._Pushes``: (stencil (j, 3), weights
        (j, 3), direction (j, 3), depth (j,) [m], slip (j, 3) [m], origin (j, 3) [m]), for the pairs (corner ci (k,),
        body triangle ti (k,)) of a body at x (n, 3) that was at x_prev, its triangles (t, 3), the collider at
        vertices (m, 3) that was at start_vertices, its corners (c,)."""
        return self._measured(self.library.softsim_mesh_corner_pushes, 3, x, x_prev, triangles, "body triangles",
                              vertices, start_vertices, corners, "corners", ci, ti, thickness)

    def edge_pushes(self, x, x_prev, edges, vertices, start_vertices, sharp, ei, bi, thickness: float):
        """``_edge_pushes``' pairs kept (as ``corner_pushes``; stencil and weights (j, 2)), for the pairs (sharp
        edge ei (k,), body edge bi (k,)) with the body's edges (e, 2) and the collider's sharp edges (s, 2)."""
        return self._measured(self.library.softsim_mesh_edge_pushes, 2, x, x_prev, edges, "body edges", vertices,
                              start_vertices, sharp, "sharp edges", ei, bi, thickness)

    def _planes_at(self, planes, n: int):
        """The addresses of a ``KeptPlanes``' x0, normal, d0 and clear, checked."""
        return (self.known("x0", planes.x0, (n, 3)), self.known("normal", planes.normal, (n, 3)),
                self.known("d0", planes.d0, (n,)), self.known("clear", planes.clear, (n,)))

    def kept_stale(self, planes, x, x_prev, drift_limit: float, far_limit: float):
        """The rows (k,) of x (n, 3) (moving from x_prev) whose ``kept_planes.KeptPlanes`` no longer serve:
        drift_limit = KEPT_DRIFT * thickness [m], far_limit = thickness + margin [m] (``kept_contact``)."""
        n = len(x)
        x_at, x_prev_at = self.known("x", x, (n, 3)), self.known("x_prev", x_prev, (n, 3))
        x0, _, d0, clear = self._planes_at(planes, n)
        if len(self._stale) < n:
            self._stale = np.zeros(n, np.int64)
        count = self.library.softsim_kept_stale(x_at, x_prev_at, n, x0, d0, clear, float(drift_limit),
                                                float(far_limit), pointer(self._stale))
        return self._stale[:count].copy()

    def kept_planes(self, planes, x, margin: float):
        """``kept_contact``'s answer from the planes: (d (n,) [m], n (n, 3)) at x (n, 3)."""
        n = len(x)
        x_at = self.known("x", x, (n, 3))
        x0, plane_normal, d0, _ = self._planes_at(planes, n)
        d, normal = np.empty(n), np.empty((n, 3))
        self.library.softsim_kept_planes(x_at, n, x0, plane_normal, d0, float(margin), pointer(d), pointer(normal))
        return d, normal

    def apply(self, x, inv_mass, stencil, weights, direction, depth, slip, friction: float) -> int:
        """``_apply``: the pushes of depth (k,) > 0 [m] along direction (k, 3) of the body points sum_j weights (k, s)
        x[stencil (k, s)], less friction on slip (k, 3) [m], Jacobi mean per particle, in place on x (n, 3) with
        inv_mass (n,); returns the pairs that moved."""
        x_at = self.known("x", x, (None, 3))
        n = len(x)
        inv_mass_at = self.known("inv_mass", inv_mass, (n,))
        k = len(depth)
        width = stencil.shape[1] if stencil.ndim == 2 else 0
        checked_indices("stencil", stencil, n, (k, width))
        if width not in (2, 3):
            raise ValueError(f"stencil: 2 or 3 columns, got {width}")
        checked("weights", weights, F64, (k, width))
        checked("direction", direction, F64, (k, 3))
        checked("depth", depth, F64, (k,))
        checked("slip", slip, F64, (k, 3))
        if len(self._count) < n:
            self._sums, self._count = np.zeros((n, 3)), np.zeros(n)
        return self.library.softsim_mesh_push_apply(
            x_at, n, inv_mass_at, k, width, pointer(stencil), pointer(weights), pointer(direction),
            pointer(depth), pointer(slip), float(friction), pointer(self._sums), pointer(self._count))


def _equal(a, b) -> bool:
    """Whether the index arrays a and b are one array, or hold the same values in the same shape and dtype."""
    return a is b or (a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b))


def attach(library, colliders) -> None:
    """Give every mesh collider among ``colliders`` (``reaches_between_corners`` and a ``shared`` with a ``native``
    slot, ``mesh_broad_phase._Shared``) its ``MeshClosest``, once per topology; with library None, or one whose mesh
    kernels failed their self-test (``NativeLibrary.ready``), nothing."""
    if library is None or not library.ready("mesh"):
        return
    for collider in colliders:
        shared = getattr(collider, "shared", None)
        if shared is not None and hasattr(shared, "native") and shared.native is None and len(collider.triangles):
            shared.native = MeshClosest(library, collider.triangles, len(collider.vertices))


__all__ = ["MOVING_FINER", "MeshClosest", "attach", "grid_shape", "grid_shape_of"]
