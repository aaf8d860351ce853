"""Faces against sphere colliders: the position-level response that keeps a triangle's interior outside a sphere.

``solvers.colliders.resolve_contacts`` keeps the *vertices* at least ``radius + thickness`` from a sphere's centre;
between vertices a face can still dip into it (the sphere shows through a coarse cloth, issue 10 item 3). The
position-level solvers (position_based.py, mass_spring.py, projective/solver.py) call ``resolve_face_contacts`` just
before it, so the vertex projection stays the final word on every vertex (a face push near where a sphere meets the
ground must not leave a vertex below the ground; it only ever moves vertices away from the sphere, so the vertex
projection after it cannot push a face back in, except where a sphere pokes through the ground). For every triangle whose closest point q = sum_k b_k x_k to the centre c (exact, barycentric
weights b from ``geometry.intersections.closest_points_on_triangles``) lies within rho = radius + thickness:

    depth = rho - |q - c|,   n = (q - c) / |q - c|,
    dx_k = b_k w_k / (sum_j b_j^2 w_j) * delta,   delta = depth n (+ friction, below),   w_k = inv_mass_k,

the position-based correction of a point with barycentric weights: it moves q by exactly delta (sum_k b_k dx_k =
delta), heavier and pinned (w = 0) corners less or not at all. A triangle whose corners are all pinned is skipped.

Friction as for vertex contacts (Macklin et al. 2014, as ``resolve_contacts``): the closest point's tangential
motion over the step, t = tangential part of (q + depth n - q_prev), q_prev = sum_k b_k x_prev_k, is removed up to
``friction * depth`` (delta -= min(1, friction depth / |t|) t).

Neighbouring triangles share corners, so all hits of a pass are applied at once (Jacobi) and each vertex takes the
mean of its hit triangles' corrections (a vertex of six triangles resting on the sphere would otherwise be pushed
six times). A mean undershoots where neighbours disagree, so the pass repeats (``FACE_PASSES``; a face push can also
move a neighbour's corner), each pass from the new positions. Ground planes need nothing: a flat face cannot dip
below a plane its corners are above.

Velocity: the position-based solvers and PROJECTIVE derive v = (x - x_prev) / dt after this, mass-spring adds the
correction to v (v += dx / dt) like the vertex projection. Either way a face only gets back out what it moved into
the sphere during the step, plus at most ~20% where a corner carries more than its share (b_k / sum b_j^2 <= ~1.2
for equal masses), so the response does not bounce (tests/test_face_contact.py measures it).
"""
import numpy as np

from .colliders import Sphere
from .geometry.intersections import _cross, closest_points_on_triangles

FACE_PASSES = 4
"""Jacobi passes per call; measured on the 21 x 21 lab cloth on its sphere, 4 passes leave a residual depth below
a tenth of a millimetre per step (the next step continues from there)."""


def _sum_rows(indices: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Sum (m, k, 3) per-corner vectors into (count, 3) by indices (m, k)."""
    out = np.empty((count, 3))
    flat = indices.ravel()
    rows = values.reshape(-1, 3)
    for axis in range(3):
        out[:, axis] = np.bincount(flat, rows[:, axis], minlength=count)
    return out


_TOPOLOGY = []
"""Recently used (triangles array, its unique edges (e, 2), each triangle's edge ids (t, 3)): solvers pass the same
model.triangle_indices every step, and the edge list halves the work of the cull (about 1.5 edges per triangle)."""


def _topology(triangles):
    for entry in _TOPOLOGY:
        if entry[0] is triangles:
            return entry[1], entry[2]
    pairs = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    edges, inverse = np.unique(pairs, axis=0, return_inverse=True)
    tri_edges = inverse.reshape(3, -1).T.copy()
    _TOPOLOGY.insert(0, (triangles, edges, tri_edges))
    del _TOPOLOGY[8:]
    return edges, tri_edges


def _candidates(x, triangles, center, rho):
    """Indices of the triangles that may reach within rho of the centre (exact cull, no false negatives).

    For p = sum_k b_k x_k on a triangle, with r_k = |x_k - c| and L_kl its edge lengths,
    |p - c|^2 = sum_k b_k r_k^2 - sum_{k<l} b_k b_l L_kl^2 >= min_k r_k^2 - max_kl L_kl^2 / 3
    (sum_{k<l} b_k b_l <= 1/3). A triangle is a candidate when that bound is below rho^2: on a cloth resting on the
    sphere that keeps the triangles whose corners lie within about the sagitta L^2 / (6 rho) of the contact shell.
    First with the longest edge of the mesh (scalar gathers only), then with each survivor's own."""
    edges, tri_edges = _topology(triangles)
    rel = x - center
    r2 = np.einsum("ij,ij->i", rel, rel)
    d = x[edges[:, 0]] - x[edges[:, 1]]
    length2 = np.einsum("ij,ij->i", d, d)
    r2_min = r2[triangles].min(axis=1)
    near = np.nonzero(r2_min - length2.max() / 3.0 < rho * rho)[0]
    if len(near) == 0:
        return near
    return near[r2_min[near] - length2[tri_edges[near]].max(axis=1) / 3.0 < rho * rho]


def resolve_face_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray, colliders,
                          passes: int = FACE_PASSES) -> int:
    """Push every triangle that reaches within ``radius + thickness`` of a Sphere collider's centre back out, in place.

    x (n, 3): positions at the end of the step [m]; x_prev (n, 3): at its start (for friction); inv_mass (n,)
    [1/kg], 0 for pinned particles (never moved); triangles (t, 3) int; colliders: any sequence, only Sphere ones
    act. Returns the number of (triangle, sphere) contacts found in the first pass.
    """
    if not (isinstance(triangles, np.ndarray) and triangles.dtype == np.int64 and triangles.ndim == 2):
        triangles = np.asarray(triangles, np.int64).reshape(-1, 3)  # (model.triangle_indices already is: its
        # identity keys the cached edge list)
    spheres = [c for c in colliders if isinstance(c, Sphere)]
    if not spheres or len(triangles) == 0:
        return 0
    n = len(x)
    contacts = 0
    for sphere in spheres:
        center = sphere.center
        rho = float(sphere.radius + sphere.thickness)
        cand = triangles[_candidates(x, triangles, center, rho)]
        if len(cand) == 0:
            continue
        w = inv_mass[cand]  # (m, 3)
        movable = w.max(axis=1) > 0.0
        cand, w = cand[movable], w[movable]
        for k in range(passes):
            corners = x[cand]
            q, bary = closest_points_on_triangles(center, corners[:, 0], corners[:, 1], corners[:, 2])
            r = q - center
            dist = np.sqrt(np.einsum("ti,ti->t", r, r))
            # A closest point on pinned corners only (sum b_k^2 w_k = 0) cannot be moved: it is the pins' business.
            movable_point = np.einsum("tk,tk->t", bary * bary, w) > 0.0
            hit = np.nonzero((dist < rho) & movable_point)[0]
            if len(hit) == 0:
                break
            if k == 0:
                contacts += len(hit)
            tri, b, wh = cand[hit], bary[hit], w[hit]
            d = dist[hit]
            depth = rho - d
            # A face through the very centre is pushed along its own normal rather than divided by zero.
            normal = r[hit] / np.where(d > 1e-12, d, 1.0)[:, None]
            through = d <= 1e-12
            if through.any():
                face = _cross(corners[hit, 1] - corners[hit, 0], corners[hit, 2] - corners[hit, 0])[through]
                normal[through] = face / np.maximum(np.sqrt(np.einsum("ti,ti->t", face, face)), 1e-300)[:, None]
            delta = depth[:, None] * normal
            if sphere.friction > 0.0:
                q_prev = np.einsum("tk,tki->ti", b, x_prev[tri])
                moved = q[hit] + delta - q_prev
                tangential = moved - np.einsum("ti,ti->t", moved, normal)[:, None] * normal
                slide = np.sqrt(np.einsum("ti,ti->t", tangential, tangential))
                keep = np.clip(1.0 - sphere.friction * depth / np.maximum(slide, 1e-15), 0.0, 1.0)
                delta -= np.where(slide > 1e-15, 1.0 - keep, 0.0)[:, None] * tangential
            weight = b * wh
            coeff = weight / np.einsum("tk,tk->t", b, weight)[:, None]  # b_k w_k / sum_j b_j^2 w_j, (h, 3)
            count = np.bincount(tri.ravel(), (weight > 0.0).ravel().astype(float), minlength=n)
            moved_rows = np.nonzero(count)[0]
            dx = _sum_rows(tri, coeff[:, :, None] * delta[:, None, :], n)[moved_rows] / count[moved_rows, None]
            x[moved_rows] += dx
            if k + 1 < passes:
                # A triangle's distance to the centre changes by at most its corners' largest move, so the next
                # pass needs only the triangles within rho + that move.
                step = float(np.sqrt(np.einsum("ij,ij->i", dx, dx).max()))
                keep_cand = dist < rho + step
                cand, w = cand[keep_cand], w[keep_cand]
    return contacts
