"""Exact intersection tests on triangle meshes, for the cloth quality figures and self-collision's fail-safe.

- ``deepest_face_penetration``: how deep [m] the deepest point of any triangle lies inside a sphere.
- ``count_self_intersections``: the number of (edge, triangle) pairs of a mesh that cross each other, pairs that
  share a vertex excluded: a k-d tree broad phase and an orientation-sign narrow phase.

Pure NumPy/SciPy, no per-element Python loops. Lengths in metres (any unit works: the tests are scale-free).
"""
import numpy as np
from scipy.spatial import cKDTree

from .primitives import _cross, _dot, closest_points_on_triangles

COPLANAR_TOLERANCE = 1e-10
"""Orientation determinants below this times (the pair's length scale)^3 count as zero, so a point on a plane, a
touching edge or a coplanar pair is *not* an intersection. Float determinants of points on a common plane that is
not axis-aligned come out at round-off level (~1e-16 relative) with random signs; counting them would report
crossings in a flat sheet."""


def deepest_face_penetration(x: np.ndarray, triangles: np.ndarray, center, radius: float) -> float:
    """Depth [m] (>= 0) of the deepest point of any triangle inside the sphere (center (3,), radius [m]).

    max over triangles of (radius - distance from the centre to the triangle's closest point), or 0 when no
    triangle reaches inside. x: (n, 3) positions; triangles: (t, 3) indices. A collider's thickness is not counted:
    compare the result with it.
    """
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(triangles) == 0:
        return 0.0
    center = np.asarray(center, float)
    corners = x[triangles]  # (t, 3, 3)
    # Bounding-sphere cull: no point of a triangle is nearer the centre than (centroid distance - centroid radius).
    centroid = corners.mean(axis=1)
    reach = np.sqrt(np.max(np.sum((corners - centroid[:, None, :]) ** 2, axis=2), axis=1))
    near = np.nonzero(np.linalg.norm(centroid - center, axis=1) - reach < radius)[0]
    if len(near) == 0:
        return 0.0
    q, _ = closest_points_on_triangles(center, corners[near, 0], corners[near, 1], corners[near, 2])
    distance = np.sqrt(_dot(q - center, q - center))
    return float(max(radius - distance.min(), 0.0))


def triangle_edges(triangles: np.ndarray) -> np.ndarray:
    """The unique undirected edges (e, 2) of triangles (t, 3), each as (low, high)."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    return np.unique(np.sort(edges, axis=1), axis=0)


def _orient(a, b, c, d):
    """Signed volume (times 6) of the tets (a, b, c, d), rows (m, 3): > 0 when d lies on the side of the plane
    (a, b, c) that its normal (b - a) x (c - a) points to."""
    return _dot(_cross(b - a, c - a), d - a)


def segments_cross_triangles(p, q, a, b, c) -> np.ndarray:
    """Whether each segment pq (m, 3) properly crosses the triangle abc (m, 3), shape (m,) bool.

    True when p and q are strictly on opposite sides of the triangle's plane and the line pq passes strictly inside
    the triangle (the three orientations of pq against the edges agree in sign). Touching (an end on the triangle, a
    crossing through its border) and coplanar pairs give False, within COPLANAR_TOLERANCE.
    """
    scale = np.maximum.reduce([np.abs(v).max(axis=1) for v in (p - a, q - a, b - a, c - a)])
    tol = COPLANAR_TOLERANCE * np.maximum(scale, 1e-300) ** 3
    s1, s2 = _orient(a, b, c, p), _orient(a, b, c, q)
    crosses_plane = ((s1 > tol) & (s2 < -tol)) | ((s1 < -tol) & (s2 > tol))
    u, v, w = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
    inside = ((u > tol) & (v > tol) & (w > tol)) | ((u < -tol) & (v < -tol) & (w < -tol))
    return crosses_plane & inside


def self_intersecting_pairs(x: np.ndarray, triangles: np.ndarray):
    """The (edge, triangle) pairs of the mesh that cross: (edges (e, 2), pairs (k, 2) of [edge index, triangle
    index]). Pairs that share a vertex are never tested (an edge of a triangle, or one meeting it at a corner).

    Broad phase: the pairs whose bounding spheres (edge midpoint, half length) and (triangle centroid, centroid to
    corner) overlap (``_overlapping_spheres``). Narrow phase: ``segments_cross_triangles``. Pairs sorted by edge,
    then triangle.
    """
    x = np.asarray(x, float)
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    edges = triangle_edges(triangles)
    if len(triangles) == 0:
        return edges, np.zeros((0, 2), np.int64)
    p, q = x[edges[:, 0]], x[edges[:, 1]]
    mid = 0.5 * (p + q)
    half = 0.5 * np.sqrt(_dot(q - p, q - p))
    corners = x[triangles]
    centroid = corners.mean(axis=1)
    reach = np.sqrt(np.max(np.sum((corners - centroid[:, None, :]) ** 2, axis=2), axis=1))
    e, t = _overlapping_spheres(mid, half, centroid, reach)
    tri = triangles[t]
    shares = np.any(tri == edges[e, 0:1], axis=1) | np.any(tri == edges[e, 1:2], axis=1)
    e, t = e[~shares], t[~shares]
    hit = segments_cross_triangles(p[e], q[e], x[triangles[t, 0]], x[triangles[t, 1]], x[triangles[t, 2]])
    return edges, np.stack([e[hit], t[hit]], axis=1)


def _overlapping_spheres(a_centre, a_radius, b_centre, b_radius):
    """(i, j) int64 arrays, sorted by i then j, of the pairs of spheres (a_centre (m, 3), a_radius (m,)) and
    (b_centre (k, 3), b_radius (k,)) with |a_i - b_j| <= a_radius_i + b_radius_j.

    The spheres of each side are put in size classes (radii within a factor of 2, by their binary exponent) and each
    pair of classes is joined with k-d trees within its largest radii's sum, so a pair is listed only within twice its
    own reach. One join within the largest radii of all lists nearly every pair of a mesh with a few long edges: a
    128 x 128 cloth stretched to 1 m edges by Projective 2x5 ran out of 10 GB of memory that way."""
    classes = []
    for centre, radius in ((a_centre, a_radius), (b_centre, b_radius)):
        exponent = np.frexp(np.maximum(radius, 1e-300))[1]
        groups = {}
        for value in np.unique(exponent):
            members = np.flatnonzero(exponent == value)
            groups[int(value)] = (members, cKDTree(centre[members]), float(radius[members].max()))
        classes.append(groups)
    found_i, found_j = [], []
    for members_a, tree_a, largest_a in classes[0].values():
        for members_b, tree_b, largest_b in classes[1].values():
            found = tree_a.sparse_distance_matrix(tree_b, largest_a + largest_b, output_type="ndarray")
            i, j = members_a[found["i"]], members_b[found["j"]]
            keep = found["v"] <= a_radius[i] + b_radius[j]
            found_i.append(i[keep])
            found_j.append(j[keep])
    i = np.concatenate(found_i).astype(np.int64) if found_i else np.zeros(0, np.int64)
    j = np.concatenate(found_j).astype(np.int64) if found_j else np.zeros(0, np.int64)
    order = np.lexsort((j, i))
    return i[order], j[order]


def count_self_intersections(x: np.ndarray, triangles: np.ndarray) -> int:
    """Number of (edge, triangle) pairs of the mesh (x (n, 3), triangles (t, 3)) that cross each other.

    Edges are the triangles' edges; pairs sharing a vertex are excluded; touching or coplanar pairs do not count
    (``segments_cross_triangles``). A sheet passing through itself along a curve gives about two pairs per triangle
    the curve runs through (the edges of each sheet that pierce the other).
    """
    return int(len(self_intersecting_pairs(x, triangles)[1]))
