"""The position-level pushes of a mesh collider's corners and edges out of a body's faces, what
``MeshCollider.resolve_faces`` runs in each Jacobi pass: collider corner against body triangle and collider edge
against body edge (the candidates from ``mesh_broad_phase``), each pair moved to ``thickness`` on the side it came
from, with friction on its slip, as ``faces.py`` does for spheres.
"""
import numpy as np

from .primitives import _cross, _dot, closest_points_segments, point_triangle_closest

_NONE = np.zeros(0, np.int64)


class MeshFacePushes:
    """The corner and edge pushes of ``MeshCollider`` (a mixin; ``MeshCollider.resolve_faces`` has the formulas).
    Uses the collider's vertices (m, 3) [m], thickness [m], friction, shared (``mesh_broad_phase._Shared``: its
    corners and sharp edges) and ``face_pairs``."""

    def _face_passes(self, x, x_prev, inv_mass, triangles, edges, start, passes: int) -> int:
        """Up to ``passes`` Jacobi passes of the corner then the edge pushes, in place on x, stopping after a pass
        that moved nothing; returns the pairs that pushed in the first pass.

        A pass after the first evaluates only the pairs that pushed in the previous one and those with a body point
        that moved since they were last evaluated: any other pair sees the very positions it saw then (the collider
        does not move within a call), so it would again find no depth. Exactly the passes of every pair, at a
        fraction of the cost once few pairs push (a cloth at rest on a box: a few dozen of thousands)."""
        found = 0
        known = None  # the pairs of the last pass, and per kind (corners, edges) what it needs for the next
        for k in range(passes):
            found_pairs = self.face_pairs(x, triangles)
            pairs = (found_pairs.corner_triangle, found_pairs.edge_edge)
            same = known is not None and pairs[0] is known[0][0] and pairs[1] is known[0][1]
            moved = 0
            hits = []
            for kind, (push, stencil) in enumerate(((self._push_corners, triangles[pairs[0][1]]),
                                                    (self._push_edges, edges[pairs[1][1]]))):
                among = None
                if same:
                    before, hit = known[1][kind]
                    changed = np.any(x != before, axis=1)
                    among = np.union1d(hit, np.flatnonzero(changed[stencil].any(axis=1)))
                before = x.copy()
                if kind == 0:
                    hit = push(x, x_prev, inv_mass, triangles, start, pairs[0], among)
                else:
                    hit = push(x, x_prev, inv_mass, edges, start, pairs[1], among)
                hits.append((before, hit))
                moved += len(hit)
            known = (pairs, hits)
            if k == 0:
                found = moved
            if moved == 0:
                break
        return found

    def _push_corners(self, x, x_prev, inv_mass, triangles, start, pairs, among=None):
        """One Jacobi pass of the corner pairs (corner (k,), body triangle (k,)) ``pairs``, or of their entries
        ``among`` (indices into them); returns the indices into ``pairs`` of the pairs that pushed."""
        corners = self.shared.corners
        c = self.vertices[corners]
        ci, ti = pairs
        if among is not None:
            ci, ti = ci[among], ti[among]
        if len(ci) == 0:
            return _NONE
        tri = triangles[ti]
        a, b, cc = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
        p = c[ci]
        bary, interior = point_triangle_closest(p, a, b, cc)
        q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * cc
        normal = _cross(b - a, cc - a)
        normal /= np.maximum(np.sqrt(_dot(normal, normal)), 1e-300)[:, None]
        # Side at the step's start: the corner where it was against the triangle where it was.
        pa, pb, pc = x_prev[tri[:, 0]], x_prev[tri[:, 1]], x_prev[tri[:, 2]]
        q_prev = bary[:, :1] * pa + bary[:, 1:2] * pb + bary[:, 2:] * pc
        n_prev = _cross(pb - pa, pc - pa)
        corner_start = start.vertices[corners][ci]
        side = np.where(_dot(corner_start - q_prev, n_prev) < 0.0, -1.0, 1.0)
        facing = side[:, None] * normal
        r = p - q
        dist = np.sqrt(_dot(r, r))
        # Inside the triangle's prism the gap is along the face normal; beside it, the distance to the closest point
        # on its border, if the corner is on its own side (beyond the plane it is the neighbouring face's business).
        gap = np.where(interior, _dot(r, facing), dist)
        direction = np.where(interior[:, None], -facing, -r / np.maximum(dist, 1e-300)[:, None])
        depth = np.where(interior | (_dot(r, facing) >= 0.0), self.thickness - gap, 0.0)
        hit = self._apply(x, inv_mass, tri, bary, direction, depth, (q - q_prev) - (p - corner_start))
        return hit if among is None else among[hit]

    def _push_edges(self, x, x_prev, inv_mass, edges, start, pairs, among=None):
        """One Jacobi pass of the edge pairs (collider edge (k,), body edge (k,)) ``pairs`` of the body's edges
        (e, 2), or of their entries ``among``; returns the indices into ``pairs`` of the pairs that pushed."""
        mine = self.shared.edges
        p1, q1 = self.vertices[mine[:, 0]], self.vertices[mine[:, 1]]
        ei, bi = pairs
        index = np.arange(len(ei)) if among is None else among
        if among is not None:
            ei, bi = ei[among], bi[among]
        if len(ei) == 0:
            return _NONE
        body = edges[bi]
        a, b = x[body[:, 0]], x[body[:, 1]]
        s, t, interior = closest_points_segments(p1[ei], q1[ei], a, b)
        keep = interior
        if not keep.any():
            return _NONE
        ei, body, s, t, a, b, index = ei[keep], body[keep], s[keep], t[keep], a[keep], b[keep], index[keep]
        d1, d2 = q1[ei] - p1[ei], b - a
        normal = _cross(d1, d2)
        length = np.sqrt(_dot(normal, normal))
        ok = length > 1e-12 * np.sqrt(_dot(d1, d1) * _dot(d2, d2))
        if not ok.any():
            return _NONE
        ei, body, s, t, a, b, normal, length = ei[ok], body[ok], s[ok], t[ok], a[ok], b[ok], normal[ok], length[ok]
        index = index[ok]
        normal /= length[:, None]
        # Side: the collider edge's point against the body edge's point at the step's start, along the same normal.
        sp, sq = start.vertices[mine[ei, 0]], start.vertices[mine[ei, 1]]
        pa, pb = x_prev[body[:, 0]], x_prev[body[:, 1]]
        side = np.where(_dot((sp + s[:, None] * (sq - sp)) - (pa + t[:, None] * (pb - pa)), normal) < 0.0, -1.0, 1.0)
        collider_point = p1[ei] + s[:, None] * (q1[ei] - p1[ei])
        body_point = a + t[:, None] * (b - a)
        gap = side * _dot(collider_point - body_point, normal)
        weights = np.stack([1.0 - t, t], axis=1)
        slip = (body_point - (pa + t[:, None] * (pb - pa))) - (collider_point - (sp + s[:, None] * (sq - sp)))
        return index[self._apply(x, inv_mass, body, weights, -(side[:, None] * normal), self.thickness - gap, slip)]

    def _apply(self, x, inv_mass, stencil, weights, direction, depth, slip):
        """Move the body points sum_k weights_k x_stencil_k of the pairs with depth > 0 by depth [m] along direction,
        less the friction on their slip (k, 3) [m] (the body point's motion over the step relative to the collider's
        point): its part across direction is taken off up to ``friction * depth``, as ``faces.py`` does for spheres.
        Mass-weighted over the stencil, Jacobi mean per particle, in place on x; returns the indices (h,) of the pairs
        that moved."""
        hit = depth > 0.0
        w = inv_mass[stencil] * weights
        norm = np.einsum("kj,kj->k", weights, w)
        hit &= norm > 0.0
        if not hit.any():
            return _NONE
        stencil, w, norm, direction, depth = stencil[hit], w[hit], norm[hit], direction[hit], depth[hit]
        delta = depth[:, None] * direction
        if self.friction > 0.0:
            across = slip[hit] - _dot(slip[hit], direction)[:, None] * direction
            slide = np.sqrt(_dot(across, across))
            delta -= np.minimum(1.0, self.friction * depth / np.maximum(slide, 1e-15))[:, None] * across
        coef = w / norm[:, None]  # (k, s)
        flat = stencil.ravel()
        count = np.maximum(np.bincount(flat, (coef > 0.0).ravel(), minlength=len(x)), 1.0)
        for axis in range(3):
            x[:, axis] += np.bincount(flat, (coef * delta[:, axis, None]).ravel(), minlength=len(x)) / count
        return np.flatnonzero(hit)
