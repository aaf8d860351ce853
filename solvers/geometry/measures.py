"""Input checks and measures of triangle surfaces and tets: closed-manifold check, enclosed volume, tet quality.

Units: coordinates are in whatever length unit the input uses (Blender: metres); volumes in its cube.
"""
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..model import tet_volumes

_TET_EDGES = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


class TetrahedralizeError(ValueError):
    """The surface cannot be filled with tets; the message says what is wrong and what to change."""


def _as_mesh(vertices, triangles):
    """Validated (vertices (n, 3) float64, triangles (t, 3) int64)."""
    v = np.ascontiguousarray(vertices, np.float64).reshape(-1, 3)
    f = np.ascontiguousarray(triangles, np.int64).reshape(-1, 3)
    if len(f) == 0:
        raise TetrahedralizeError("the mesh has no faces; a soft body needs a closed surface")
    if f.min() < 0 or f.max() >= len(v):
        raise TetrahedralizeError("a face refers to a vertex index that does not exist")
    if not np.all(np.isfinite(v)):
        raise TetrahedralizeError("the mesh has vertices with non-finite coordinates")
    return v, f


def check_closed_manifold(triangles) -> None:
    """Raise TetrahedralizeError unless every edge of ``triangles`` (t, 3) joins exactly two faces.

    An edge used by one triangle is a boundary edge (the mesh is open); by more than two, non-manifold.
    Also rejects faces that repeat a vertex and closed meshes whose neighbouring faces disagree in
    orientation (the winding number would then be meaningless).
    """
    f = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(f) == 0:
        raise TetrahedralizeError("the mesh has no faces; a soft body needs a closed surface")
    repeated = int(np.sum((f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 2] == f[:, 0])))
    if repeated:
        raise TetrahedralizeError(f"{repeated} face(s) use the same vertex twice; delete degenerate geometry first")
    directed = f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    lo, hi = directed.min(1), directed.max(1)
    key = lo * (int(f.max()) + 1) + hi  # one int64 per undirected edge: faster than np.unique(axis=0)
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    boundary = int(np.sum(counts == 1))
    nonmanifold = int(np.sum(counts > 2))
    if boundary and nonmanifold:
        raise TetrahedralizeError(
            f"the mesh is open and non-manifold: {boundary} boundary edges and {nonmanifold} edges shared by "
            "more than two faces; close the holes (Fill), separate touching parts, or use role CLOTH"
        )
    if boundary:
        raise TetrahedralizeError(
            f"the mesh is open: {boundary} boundary edges; close the holes (Fill) or use role CLOTH"
        )
    if nonmanifold:
        raise TetrahedralizeError(
            f"non-manifold: {nonmanifold} edges shared by more than two faces; separate the parts that touch "
            "(Select > All by Trait > Non Manifold)"
        )
    # Closed manifold: each edge is used twice, consistently oriented iff once in each direction.
    forward = np.bincount(inverse, weights=(directed[:, 0] < directed[:, 1]), minlength=len(counts))
    flipped = int(np.sum(forward != 1))
    if flipped:
        raise TetrahedralizeError(
            f"inconsistent normals: {flipped} edges join faces facing opposite ways; "
            "recalculate normals (Mesh > Normals > Recalculate Outside)"
        )


def _signed_volumes(v, f):
    """Signed volume [length^3] of the cone from the origin over each triangle, shape (t,)."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0


def mesh_volume(vertices, triangles) -> float:
    """Signed volume [length^3] enclosed by a closed surface (divergence theorem).

    vertices (n, 3), triangles (t, 3). Positive for outward-oriented (counter-clockwise seen from
    outside) triangles, negative for inward-oriented ones.
    """
    v, f = _as_mesh(vertices, triangles)
    # Shifting to the centroid keeps the cancellation small for meshes far from the origin.
    return float(_signed_volumes(v - v[f].reshape(-1, 3).mean(0), f).sum())


def volume_centroid(vertices, triangles) -> np.ndarray:
    """Centroid (3,) of the solid a closed surface bounds (its centre of mass at uniform density; divergence
    theorem: each triangle's cone from a reference point, weighted by its signed volume; either orientation)."""
    v, f = _as_mesh(vertices, triangles)
    centre = v[f].reshape(-1, 3).mean(0)  # as mesh_volume: small cancellation far from the origin
    u = v - centre
    volumes = _signed_volumes(u, f)
    return centre + (u[f].sum(axis=1) / 4.0 * volumes[:, None]).sum(axis=0) / volumes.sum()


def _component_volumes(v, f):
    """Signed enclosed volume of each connected part of the surface, shape (parts,)."""
    n = len(v)
    e = f[:, [0, 1, 1, 2]].reshape(-1, 2)
    graph = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    part = label[f[:, 0]]
    _, part = np.unique(part, return_inverse=True)
    centre = v[f].reshape(-1, 3).mean(0)
    return np.bincount(part, weights=_signed_volumes(v - centre, f))


def _checked_input(vertices, triangles, resolution, min_quality):
    """Validate a tetrahedralization's input; raises TetrahedralizeError.

    Returns (v, f, used vertex indices, bounding box lo and hi of the used vertices, enclosed volume,
    lattice spacing h = largest side / resolution).
    """
    v, f = _as_mesh(vertices, triangles)
    if int(resolution) < 1:
        raise TetrahedralizeError(f"resolution must be at least 1, got {resolution}")
    if not 0.0 <= min_quality < 1.0:
        raise TetrahedralizeError(f"min_quality must be in [0, 1), got {min_quality}")
    check_closed_manifold(f)
    used = np.unique(f)
    lo, hi = v[used].min(0), v[used].max(0)
    side = float(np.max(hi - lo))
    parts = _component_volumes(v, f)
    if side <= 0.0 or np.max(np.abs(parts)) <= 1e-9 * side**3:
        raise TetrahedralizeError("the mesh encloses no volume (it is flat or its faces cancel); give it thickness")
    return v, f, used, lo, hi, abs(float(parts.sum())), side / int(resolution)


def tet_quality(x, tets) -> np.ndarray:
    """Shape quality 6*sqrt(2)*|V| / l_rms^3 of each tet, shape (k,): 1 regular, 0 flat.

    x (n, 3) positions, tets (k, 4). l_rms is the root mean square of the six edge lengths; the measure
    is scale invariant and falls to 0 for every kind of degenerate tet (slivers, needles, caps).
    """
    p = x[tets]
    l2 = sum(np.sum((p[:, i] - p[:, j]) ** 2, axis=1) for i, j in _TET_EDGES) / 6.0
    vol = np.abs(tet_volumes(x, tets))
    return 6.0 * np.sqrt(2.0) * vol / np.maximum(l2, 1e-300) ** 1.5
