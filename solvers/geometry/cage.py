"""A coarse tet cage around a dense closed surface, whose vertices it then drives by embedding."""
import numpy as np
from scipy.spatial import cKDTree

from ..model import tet_volumes
from .embedding import _embed_nearby, embed_points
from .filtering import _DROP_BUDGET, _drop_slivers, _kept_tets, delaunay_tets
from .lattice import _KEEP, _NEAR, _SAMPLE, _bcc_lattice, _surface_samples, _thin
from .measures import _checked_input, tet_quality, volume_centroid
from .tet_mesh import TetMesh
from .winding import _TriangleTree, _winding_tree

_CAGE_CELL = 0.25
"""Surface samples are first reduced to one per grid cell of this size (times h), so thinning stays cheap."""
_CAGE_INFLATE_MAX = 0.5
"""A cage vertex moves outward at most this fraction of h to take in the surface vertices outside it."""
_MASS_CELLS = 48
"""Grid cells along the largest side of the sampling that spreads the surface's volume over the cage vertices
(``_mass_weights``): ~0.6 s for Suzanne at any resolution, its centre of mass within 1 mm of the surface's."""
_MASS_FLOOR = 0.01
"""A cage vertex carries at least this fraction of the mean vertex mass (one that holds no inside sample would
otherwise be massless)."""


def tetrahedralize_cage(vertices, triangles, resolution: int = 6, min_quality: float = 0.02) -> TetMesh:
    """A coarse tet mesh (a "cage") that holds every vertex of a dense closed surface, with the embedding.

    For simulating dense meshes cheaply (Müller, Ten Minute Physics lesson 11, "skinning"): simulate the
    cage, move every surface vertex with the tet around it by its barycentric coordinates.

    Unlike ``tetrahedralize``, the input vertices are not tet vertices. The cage's points are the interior
    BCC lattice of spacing h = (largest side) / resolution (as in ``tetrahedralize``) plus surface points
    about h apart (the surface's vertices and samples, reduced on a grid and thinned to >= _KEEP * h);
    Delaunay tets whose centroid is inside by winding number are kept, and slivers dropped within the
    volume budget. Between its surface points a curved surface bulges out of the cage's flat faces
    (about l^2 / 8R for faces of size l on curvature radius R), so the cage's boundary vertices are then
    pushed outward along their normals, by as much as the surface vertices near them stick out (at most
    _CAGE_INFLATE_MAX * h), until the surface is inside. Being a convex combination of cage vertices, an
    embedded vertex then never passes a plane that the cage's vertices do not pass.

    Returns a TetMesh with ``surface_count = 0``, every input vertex listed in ``embedded_vertices``
    (with ``embed_tet``, ``embed_weights``), and coverage = cage volume / enclosed volume (> 1 once
    inflated). Raises TetrahedralizeError like ``tetrahedralize``.
    """
    v, f, used, lo, hi, enclosed, h = _checked_input(vertices, triangles, resolution, min_quality)
    tree = _TriangleTree(v, f)

    # Surface points: the vertices first (they hold the corners), then samples on big triangles; one
    # per small grid cell, then thinned so none are closer than _KEEP * h.
    samples = _surface_samples(v, f, used, _SAMPLE * h)
    cell = np.floor((samples - lo) / (_CAGE_CELL * h)).astype(np.int64)
    _, first = np.unique(cell, axis=0, return_index=True)
    anchors = samples[np.sort(first)]
    anchors = anchors[_thin(anchors, _KEEP * h)]

    lattice = _bcc_lattice(lo, hi, h)
    dist, _ = cKDTree(samples).query(lattice)
    interior = lattice[dist >= _NEAR * h]
    interior = interior[np.abs(_winding_tree(interior, tree)) > 0.5]

    points = np.concatenate([anchors, interior])
    tets = delaunay_tets(points)
    inside = np.abs(_winding_tree(points[tets].mean(axis=1), tree)) > 0.5
    tets, quality = _kept_tets(points, tets[inside])
    tets, quality = _drop_slivers(points, tets, quality, len(anchors), min_quality, _DROP_BUDGET * enclosed)
    keep = np.zeros(len(points), bool)
    keep[tets.ravel()] = True
    points, tets = points[keep], (np.cumsum(keep) - 1)[tets]

    points = _inflate_cage(points, tets, v[used], _CAGE_INFLATE_MAX * h, min_quality)
    embed_tet, embed_weights = embed_points(v, points, tets)
    mass_weights = _mass_weights(points, tets, tree, lo, hi, float(np.max(hi - lo)) / _MASS_CELLS,
                                 volume_centroid(v, f))
    return TetMesh(
        vertices=points,
        tets=tets,
        surface_count=0,
        volume=float(tet_volumes(points, tets).sum()),
        mesh_volume=enclosed,
        worst_quality=float(tet_quality(points, tets).min()),
        embedded_vertices=np.arange(len(v), dtype=np.int64),
        embed_tet=embed_tet,
        embed_weights=embed_weights,
        spacing=h,
        mass_weights=mass_weights,
    )


def _mass_weights(points, tets, tree, lo, hi, spacing, centroid):
    """Relative mass of each cage vertex (n,), whose centre of mass is the surface's volume ``centroid`` (3,).

    The surface's own volume, sampled on a grid of ``spacing`` (cell centres inside by winding number), each sample
    spread over the corners of the cage tet holding it by its barycentric coordinates: linear functions are spread
    exactly, so this puts the mass where the surface's volume is, up to the sampling (a wall thinner than two
    cells is over- or under-counted). The first moment is then matched exactly (``_match_first_moment``).
    Why: Suzanne's cage at resolution 6 covers 141% of its volume, and lumped by cage tet volume its
    centre of mass sat 37 mm from the surface's; dropped on a frictionless ground its surface drifted 40 mm as it
    turned. Vertices below _MASS_FLOOR of the mean get it. None if no sample is inside."""
    axes = [np.arange(lo[i] + 0.5 * spacing, hi[i], spacing) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    inside = grid[np.abs(_winding_tree(grid, tree)) > 0.5]
    weights = np.zeros(len(points))
    if len(inside) == 0:
        return None
    tet, bary = embed_points(inside, points, tets)
    np.add.at(weights, tets[tet].ravel(), np.clip(bary, 0.0, None).ravel())
    return _match_first_moment(weights, points, centroid, _MASS_FLOOR * weights.mean())


def _match_first_moment(weights, points, centroid, floor, rounds: int = 4):
    """``weights`` (n,) scaled by 1 + c0 + c . (x - centroid) per vertex, the smallest such change (relative to
    the weights) that puts their centre of mass at ``centroid`` (3,); kept >= ``floor`` (a few rounds, as the
    floor moves it again). The total is unchanged up to the floor (build_model scales to the body's mass)."""
    total = weights.sum()
    w = np.maximum(weights, floor)
    for _ in range(rounds):
        basis = np.c_[np.ones(len(points)), points - centroid]  # (n, 4)
        system = basis.T @ (w[:, None] * basis)
        coefficients = np.linalg.lstsq(system, np.r_[total, 0.0, 0.0, 0.0], rcond=None)[0]
        w = np.maximum(w * (basis @ coefficients), floor)
    return w


def _beyond_boundary(points, cage_points, boundary, candidates: int = 8):
    """For points outside a cage: the boundary face nearest to each and how far the point is beyond its
    plane [length] (> 0 outside). boundary: (b, 3) outward-oriented faces. Returns (height (m,), face (m,)).

    Candidates are the faces with the nearest centroids; the nearest is picked by the distance to each
    candidate's closest point, approximated by clamping the barycentric coordinates of the projection.
    """
    a, b, c = (cage_points[boundary[:, k]] for k in range(3))
    normal = np.cross(b - a, c - a)
    normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
    k = min(candidates, len(boundary))
    _, cand = cKDTree((a + b + c) / 3.0).query(points, k=k)
    cand = cand.reshape(len(points), k)
    rel = points[:, None, :] - a[cand]  # (m, k, 3)
    height = np.einsum("mkj,mkj->mk", rel, normal[cand])
    e1, e2 = b[cand] - a[cand], c[cand] - a[cand]
    d11, d12, d22 = (np.einsum("mkj,mkj->mk", u, w) for u, w in ((e1, e1), (e1, e2), (e2, e2)))
    r1, r2 = np.einsum("mkj,mkj->mk", rel, e1), np.einsum("mkj,mkj->mk", rel, e2)
    det = np.maximum(d11 * d22 - d12 * d12, 1e-300)
    u, w = np.clip((d22 * r1 - d12 * r2) / det, 0.0, None), np.clip((d11 * r2 - d12 * r1) / det, 0.0, None)
    total = np.maximum(u + w, 1.0)
    u, w = u / total, w / total
    closest = a[cand] + u[..., None] * e1 + w[..., None] * e2
    best = np.argmin(np.sum((points[:, None, :] - closest) ** 2, axis=-1), axis=1)
    pick = np.arange(len(points))
    return height[pick, best], cand[pick, best]


def _inflate_cage(points, tets, surface, max_offset, min_quality: float = 0.02, rounds: int = 4):
    """Push the cage's boundary vertices outward until the surface points are inside (see
    ``tetrahedralize_cage``). Each round finds the surface points outside the cage, and for each the
    nearest boundary face and how far the point is beyond it; that face's corners move along their
    area-weighted vertex normals by 1.25 x the largest such distance, in total at most ``max_offset``.
    Vertices of tets that a move would invert, or make worse than 3/4 of the lower of their old quality
    and ``min_quality``, move half as far (after 8 halvings not at all), until no tet is. Returns the new
    points."""
    faces = np.concatenate([tets[:, [1, 2, 3]], tets[:, [0, 3, 2]], tets[:, [0, 1, 3]], tets[:, [0, 2, 1]]])
    _, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True, return_counts=True)
    boundary = faces[counts[inverse.reshape(-1)] == 1]  # outward oriented, as the tets are positive
    floor = 0.75 * np.minimum(tet_quality(points, tets), min_quality)
    total = np.zeros(len(points))
    for _ in range(rounds):
        _, weights = _embed_nearby(surface, points, tets)
        outside = np.flatnonzero(weights.min(axis=1) < -1e-9)
        if len(outside) == 0:
            break
        height, face = _beyond_boundary(surface[outside], points, boundary)
        sel = height > 1e-6 * max_offset
        if not sel.any():
            break
        offset = np.zeros(len(points))
        for k in range(3):
            np.maximum.at(offset, boundary[face[sel], k], height[sel])
        offset = np.clip(1.25 * offset, 0.0, max_offset - total)
        a, b, c = (points[boundary[:, k]] for k in range(3))
        area_normal = np.cross(b - a, c - a)
        normal = np.zeros_like(points)
        for k in range(3):
            np.add.at(normal, boundary[:, k], area_normal)
        normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
        for attempt in range(10):
            moved = points + offset[:, None] * normal
            worse = (tet_volumes(moved, tets) <= 0.0) | (tet_quality(moved, tets) < floor)
            if not worse.any():
                break
            offset[tets[worse].ravel()] *= 0.5 if attempt < 8 else 0.0  # then those vertices stay put
        if not offset.any():
            break
        points, total = points + offset[:, None] * normal, total + offset
    return points
