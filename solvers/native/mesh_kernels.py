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

from .kernels import F64, checked, checked_indices
from .library import pointer

POSES = 4
"""Grids kept per collider: the poses a substep asks from (start and end), with room for the next substep's."""
MAX_CELLS = 1 << 20
"""Cells of a grid at most (the cell size grows until the grid fits)."""
CELLS_PER_AXIS = 128
"""A grid's cells are at least the collider's longest extent over this."""


def grid_shape(corners: np.ndarray):
    """The grid over triangles with corners (t, 3, 3) [m]: ((origin x, y, z, cell size h, upper x, y, z) (7,), dims
    (3,) int64). h is the median largest box side of the triangles (a triangle then spans a few cells), at least the
    longest extent / CELLS_PER_AXIS, doubled until the grid has at most MAX_CELLS cells."""
    low, high = corners.min(axis=(0, 1)), corners.max(axis=(0, 1))
    extent = high - low
    sides = (corners.max(axis=1) - corners.min(axis=1)).max(axis=1)
    h = max(float(np.median(sides)), float(extent.max()) / CELLS_PER_AXIS, 1e-9)
    while True:
        dims = np.floor(extent / h).astype(np.int64) + 1
        if int(np.prod(dims)) <= MAX_CELLS:
            return np.concatenate([low, [h], high]).astype(np.float64), dims
        h *= 2.0


class _Grid:
    """The grid of one pose: its vertices (kept alive: their address is the kernel's), shape and CSR buffers."""

    def __init__(self, library, vertices, triangles):
        self.vertices = vertices
        self.grid, self.dims = grid_shape(vertices[triangles])
        cells = int(np.prod(self.dims))
        self.cell_start = np.zeros(cells + 1, np.int64)
        capacity = 4 * len(triangles) + 16
        while True:
            self.entry_tri = np.zeros(capacity, np.int64)
            need = library.softsim_mesh_grid_build(pointer(vertices), pointer(triangles), len(triangles),
                                                   pointer(self.grid), pointer(self.dims), pointer(self.cell_start),
                                                   capacity, pointer(self.entry_tri))
            if need <= capacity:
                break
            capacity = int(need)


class MeshClosest:
    """The native ``MeshCollider._closest`` of one collider's triangles (t, 3) over m vertices."""

    def __init__(self, library, triangles, vertex_count: int):
        self.library = library
        self.m = int(vertex_count)
        self.triangles = checked_indices("triangles", triangles, self.m, (None, 3))
        self.stamp = np.zeros(len(self.triangles) + 1, np.int64)
        """[0]: the last query's number; [1 + f]: the last query that tested triangle f."""
        self.grids = []
        self._outputs(0)

    def _outputs(self, count: int) -> None:
        self.out_row = np.zeros(count, np.int64)
        self.out_tri = np.zeros(count, np.int64)
        self.out_bary = np.zeros((count, 3))
        self.out_q = np.zeros((count, 3))
        self.out_d = np.zeros(count)
        self.out_interior = np.zeros(count, np.int64)

    def grid_for(self, vertices) -> _Grid:
        """The grid of the pose ``vertices`` (m, 3) float64 C-contiguous, built on its first ask."""
        for grid in self.grids:
            if grid.vertices is vertices:
                return grid
        checked("vertices", vertices, F64, (self.m, 3))
        if not np.all(np.isfinite(vertices)):
            raise ValueError("vertices: must be finite")
        if len(self.grids) >= POSES:
            self.grids.pop(0)
        self.grids.append(_Grid(self.library, vertices, self.triangles))
        return self.grids[-1]

    def closest(self, vertices, x, points, limit: float):
        """``_closest``'s answer for the rows ``points`` (k,) int64 of x (n, 3) float64 against the pose
        ``vertices`` (m, 3): (rows of x (j,), triangle (j,), bary (j, 3), closest point (j, 3), unsigned distance
        (j,) [m], interior (j,) bool) for the j points with a triangle within limit [m], in the order of points."""
        checked("x", x, F64, (None, 3))
        points = checked_indices("points", points, len(x), (None,))
        grid = self.grid_for(vertices)
        if len(self.out_row) < len(points):
            self._outputs(max(len(points), 2 * len(self.out_row)))
        found = self.library.softsim_mesh_closest(
            pointer(x), pointer(points), len(points), pointer(vertices), pointer(self.triangles), pointer(grid.grid),
            pointer(grid.dims), pointer(grid.cell_start), pointer(grid.entry_tri), float(limit), pointer(self.stamp),
            pointer(self.out_row), pointer(self.out_tri), pointer(self.out_bary), pointer(self.out_q),
            pointer(self.out_d), pointer(self.out_interior))
        return (self.out_row[:found].copy(), self.out_tri[:found].copy(), self.out_bary[:found].copy(),
                self.out_q[:found].copy(), self.out_d[:found].copy(), self.out_interior[:found] != 0)


def attach(library, colliders) -> None:
    """Give every mesh collider among ``colliders`` (``reaches_between_corners`` and a ``shared`` with a ``native``
    slot, ``mesh_broad_phase._Shared``) its ``MeshClosest``, once per topology; with library None, nothing."""
    if library is None:
        return
    for collider in colliders:
        shared = getattr(collider, "shared", None)
        if shared is not None and hasattr(shared, "native") and shared.native is None and len(collider.triangles):
            shared.native = MeshClosest(library, collider.triangles, len(collider.vertices))


__all__ = ["MeshClosest", "attach", "grid_shape"]
