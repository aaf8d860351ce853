"""Python binding of a moving mesh collider's pose normals (``src/pose_normals.c``): ``PoseNormals`` <->
``mesh_collider.pose_normals``, bit for bit (NumPy's arccos between the two C calls: C cannot reproduce the bits of
NumPy's vectorised float64 arccos). ``mesh_collider.FramePoses.normals`` takes it for a collider with the native
queries (``_Shared.native``). Validation: every array the C code reads is checked here (dtype, contiguity, shapes,
indices within range, finite vertices)."""
import numpy as np

from .kernels import F64, checked, checked_indices
from .library import pointer


class PoseNormals:
    """The normals of P poses of one mesh in two native calls around ``np.arccos``. The scratch of the calls (cosines
    and angles, the edges' sums) is kept for the next call of the same sizes."""

    def __init__(self, library):
        self.library = library
        self._scratch = {}

    def _buffer(self, name, shape):
        kept = self._scratch.get(name)
        if kept is None or kept.shape != shape:
            kept = self._scratch[name] = np.empty(shape)
        return kept

    def __call__(self, vertices: np.ndarray, triangles: np.ndarray, side_edge: np.ndarray, out=None):
        """vertices (P, m, 3) [m] float64 C-contiguous, finite; triangles (t, 3) int64 within [0, m); side_edge (t, 3)
        int64 within [0, e) (``_Shared.side_edge``, e its largest id + 1). Returns (face normals (P, t, 3), vertex
        pseudo-normals (P, m, 3), side pseudo-normals (P, t, 3, 3)), ``pose_normals``' bits, written into ``out``
        (those three arrays, float64 C-contiguous, e.g. rows of a larger array) when given. ValueError for anything
        else."""
        if not isinstance(vertices, np.ndarray) or vertices.ndim != 3:
            raise ValueError("pose vertices: expected a (poses, m, 3) array")
        poses, m = vertices.shape[:2]
        checked("pose vertices", vertices, F64, (poses, m, 3))
        if not np.isfinite(vertices).all():
            raise ValueError("pose vertices: must be finite")
        triangles = checked_indices("triangles", triangles, m, (None, 3))
        t = len(triangles)
        side_edge = checked_indices("side edges", side_edge, max(3 * t, 1), (t, 3))
        if out is None:
            face, vertex, side = np.empty((poses, t, 3)), np.empty((poses, m, 3)), np.empty((poses, t, 3, 3))
        else:
            face, vertex, side = out
            for name, array, shape in (("face normals", face, (poses, t, 3)), ("vertex normals", vertex, (poses, m, 3)),
                                       ("side normals", side, (poses, t, 3, 3))):
                checked(name, array, F64, shape)
        if t == 0:
            vertex.fill(0.0)
            return face, vertex, side
        e = int(side_edge.max()) + 1
        cosines = self._buffer("cosines", (3, poses, t))
        self.library.softsim_pose_cosines(pointer(vertices), poses, m, pointer(triangles), t, pointer(face),
                                          pointer(cosines))
        angle = np.arccos(cosines, out=cosines)  # NumPy's bits (elementwise: the same whatever the array's length)
        edge = self._buffer("edge", (poses, e, 3))
        self.library.softsim_pose_sums(poses, m, t, pointer(triangles), pointer(side_edge), e, pointer(face),
                                       pointer(angle), pointer(vertex), pointer(edge), pointer(side))
        return face, vertex, side


def flat_edges(library, vertices: np.ndarray, triangles: np.ndarray, one: np.ndarray, other: np.ndarray,
               cos_min: float) -> np.ndarray:
    """``mesh_broad_phase.sharp_edges``' test in C (``softsim_flat_edges``, the same bits): for the p edges with two
    triangles one (p,), other (p,) of triangles (t, 3) over vertices (m, 3) [m] float64 C-contiguous, whether the two
    unit normals' dot product is at least cos_min; (p,) bool. ValueError for arrays the kernel cannot take."""
    vertices = checked("vertices", vertices, F64, (None, 3))
    triangles = checked_indices("triangles", triangles, len(vertices), (None, 3))
    t = len(triangles)
    one = checked_indices("first triangles", one, max(t, 1), (None,))
    other = checked_indices("second triangles", other, max(t, 1), (len(one),))
    if len(one) and not t:
        raise ValueError("edges: the mesh has no triangles")
    flat, normal = np.zeros(len(one), np.uint8), np.empty((t, 3))
    library.softsim_flat_edges(pointer(vertices), pointer(triangles), t, pointer(one), pointer(other), len(one),
                               float(cos_min), pointer(normal), pointer(flat))
    return flat.astype(bool)


__all__ = ["PoseNormals", "flat_edges"]
