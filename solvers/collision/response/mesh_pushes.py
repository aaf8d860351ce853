"""The position-level pushes of a mesh collider's corners and edges out of a body's faces, what
``MeshCollider.resolve_faces`` runs: collider corner against body triangle and collider edge against body edge (the
candidates from ``mesh_broad_phase``), each pair moved to ``thickness`` on the side it came from, with friction on its
slip, as ``faces.py`` does for spheres.

Each call measures every candidate pair once, exactly (closest points, normal, side, depth: ``_corner_pushes``,
``_edge_pushes``), and pushes; the passes after it reuse that geometry, linearized: a pair's depth changes by the
motion of its body point along its push direction, so a pass costs a gather and a scatter instead of the distance
routines. The collider does not move within a call, and the geometry is reused only while the body points have moved
less than LINEAR_DRIFT * thickness since it was measured (a cloth resting on a box is pushed a millimetre or two per
call, far below its triangles' size); a crumpled or fast body is measured anew every pass.
"""
from dataclasses import dataclass

import numpy as np

from ..narrow_phase.primitives import _cross, _dot, closest_points_segments, point_triangle_closest

LINEAR_DRIFT = 0.2
"""A face pass reuses the pairs' measured geometry while no body point of a pair has moved more than this times
the thickness since (``MeshFacePushes._face_passes``); beyond, the geometry may have changed (a closest point slid off
its triangle, a pair came in) and every pair is measured anew."""


@dataclass
class _Pushes:
    """The pairs of one kind measured at the start of a call: body point sum_k weights_k x_stencil_k, to be moved by
    depth [m] along direction."""

    stencil: np.ndarray
    """(k, s) body particle indices (s = 3: triangle, 2: edge)."""
    weights: np.ndarray
    """(k, s) the body point's weights."""
    direction: np.ndarray
    """(k, 3) unit push direction of the body point."""
    depth: np.ndarray
    """(k,) [m] how far the body point must move along direction to lie at thickness (<= 0: not in contact)."""
    slip: np.ndarray
    """(k, 3) [m] the body point's motion over the step relative to the collider's point."""
    origin: np.ndarray
    """(k, 3) [m] the body point where it was measured."""

    def __len__(self):
        return len(self.depth)

    def shift(self, x):
        """(k, 3) [m] each body point's motion since it was measured, with the body at x (n, 3)."""
        return np.einsum("ks,ksd->kd", self.weights, x[self.stencil]) - self.origin

    def at(self, shift):
        """The pairs' (depth (k,) [m], slip (k, 3) [m]) once their body points have moved by shift (k, 3) [m] (a body
        point's gap grows by its motion along direction)."""
        return self.depth - _dot(shift, self.direction), self.slip + shift


def _drift(shift) -> float:
    """[m] The farthest any body point has moved (``_Pushes.shift``)."""
    return float(np.sqrt(_dot(shift, shift).max(initial=0.0)))


_EMPTY = _Pushes(np.zeros((0, 3), np.int64), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)),
                 np.zeros((0, 3)))


class MeshFacePushes:
    """The corner and edge pushes of ``MeshCollider`` (a mixin; ``MeshCollider.resolve_faces`` has the formulas).
    Uses the collider's vertices (m, 3) [m], thickness [m], friction, shared (``mesh_broad_phase._Shared``: its
    corners and sharp edges) and ``face_pairs``."""

    def _face_passes(self, x, x_prev, inv_mass, triangles, edges, start, passes: int) -> int:
        """Up to ``passes`` Jacobi passes of the corner then the edge pushes, in place on x, stopping after a pass
        that moved nothing; returns the pairs that pushed in the first pass. The first pass measures every candidate
        pair exactly; the later ones move the same pairs by their linearized depth (``_Pushes.at``) while no body
        point of a pair has moved more than LINEAR_DRIFT * thickness since it was measured, else they measure anew."""
        found, measured = 0, None
        for k in range(passes):
            shifts = None if measured is None else [kind.shift(x) for kind in measured]
            if shifts is not None and max(map(_drift, shifts)) <= LINEAR_DRIFT * self.thickness:
                corners, edge_pushes = measured
                moved = self._apply(x, inv_mass, corners, *corners.at(shifts[0]))
                # The edges at the positions the corners left.
                moved += self._apply(x, inv_mass, edge_pushes, *edge_pushes.at(edge_pushes.shift(x)))
            else:  # measured now: corners, then edges at the positions the corners left
                pairs = self.face_pairs(x, triangles)
                corners = self._corner_pushes(x, x_prev, triangles, start, pairs.corner_triangle)
                moved = self._apply(x, inv_mass, corners, corners.depth, corners.slip)
                edge_pushes = self._edge_pushes(x, x_prev, edges, start, pairs.edge_edge)
                moved += self._apply(x, inv_mass, edge_pushes, edge_pushes.depth, edge_pushes.slip)
                measured = (corners, edge_pushes)
            if k == 0:
                found = moved
            if moved == 0:
                break
        return found

    def _corner_pushes(self, x, x_prev, triangles, start, pairs) -> _Pushes:
        """The pushes of the corner pairs (corner (k,), body triangle (k,)) ``pairs`` at x."""
        corners = self.shared.corners
        ci, ti = pairs
        if len(ci) == 0:
            return _EMPTY
        if self.shared.native is not None:  # the same arithmetic in C (native/mesh_kernels.py)
            return _Pushes(*self.shared.native.corner_pushes(x, x_prev, triangles, self.vertices, start.vertices,
                                                             corners, ci, ti, self.thickness))
        tri = triangles[ti]
        a, b, cc = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
        p = self.vertices[corners[ci]]
        bary, interior = point_triangle_closest(p, a, b, cc)
        q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * cc
        normal = _cross(b - a, cc - a)
        normal /= np.maximum(np.sqrt(_dot(normal, normal)), 1e-300)[:, None]
        # Side at the step's start: the corner where it was against the triangle where it was.
        pa, pb, pc = x_prev[tri[:, 0]], x_prev[tri[:, 1]], x_prev[tri[:, 2]]
        q_prev = bary[:, :1] * pa + bary[:, 1:2] * pb + bary[:, 2:] * pc
        n_prev = _cross(pb - pa, pc - pa)
        corner_start = start.vertices[corners[ci]]
        side = np.where(_dot(corner_start - q_prev, n_prev) < 0.0, -1.0, 1.0)
        facing = side[:, None] * normal
        r = p - q
        dist = np.sqrt(_dot(r, r))
        # Inside the triangle's prism the gap is along the face normal; beside it, the distance to the closest point
        # on its border, if the corner is on its own side (beyond the plane it is the neighbouring face's business:
        # such a pair takes no part in this call).
        gap = np.where(interior, _dot(r, facing), dist)
        direction = np.where(interior[:, None], -facing, -r / np.maximum(dist, 1e-300)[:, None])
        own = interior | (_dot(r, facing) >= 0.0)
        return _Pushes(tri[own], bary[own], direction[own], self.thickness - gap[own],
                       ((q - q_prev) - (p - corner_start))[own], q[own])

    def _edge_pushes(self, x, x_prev, edges, start, pairs) -> _Pushes:
        """The pushes of the edge pairs (collider edge (k,), body edge (k,)) ``pairs`` of the body's edges (e, 2) at x:
        those whose closest points lie inside both edges (the corners and the vertex contacts cover the others)."""
        mine = self.shared.edges
        ei, bi = pairs
        if len(ei) == 0:
            return _EMPTY
        if self.shared.native is not None:
            return _Pushes(*self.shared.native.edge_pushes(x, x_prev, edges, self.vertices, start.vertices, mine, ei,
                                                           bi, self.thickness))
        p1, q1 = self.vertices[mine[ei, 0]], self.vertices[mine[ei, 1]]
        body = edges[bi]
        a, b = x[body[:, 0]], x[body[:, 1]]
        s, t, interior = closest_points_segments(p1, q1, a, b)
        d1, d2 = q1 - p1, b - a
        normal = _cross(d1, d2)
        length = np.sqrt(_dot(normal, normal))
        ok = np.flatnonzero(interior & (length > 1e-12 * np.sqrt(_dot(d1, d1) * _dot(d2, d2))))
        if len(ok) == 0:
            return _EMPTY
        ei, body, s, t, a, b, p1, q1 = ei[ok], body[ok], s[ok], t[ok], a[ok], b[ok], p1[ok], q1[ok]
        normal = normal[ok] / length[ok, None]
        # Side: the collider edge's point against the body edge's point at the step's start, along the same normal.
        sp, sq = start.vertices[mine[ei, 0]], start.vertices[mine[ei, 1]]
        pa, pb = x_prev[body[:, 0]], x_prev[body[:, 1]]
        side = np.where(_dot((sp + s[:, None] * (sq - sp)) - (pa + t[:, None] * (pb - pa)), normal) < 0.0, -1.0, 1.0)
        collider_point = p1 + s[:, None] * (q1 - p1)
        body_point = a + t[:, None] * (b - a)
        gap = side * _dot(collider_point - body_point, normal)
        slip = (body_point - (pa + t[:, None] * (pb - pa))) - (collider_point - (sp + s[:, None] * (sq - sp)))
        return _Pushes(body, np.stack([1.0 - t, t], axis=1), -(side[:, None] * normal), self.thickness - gap, slip,
                       body_point)

    def _apply(self, x, inv_mass, pushes: _Pushes, depth, slip) -> int:
        """Move the body points of the pairs ``pushes`` with depth (k,) > 0 by depth [m] along their direction, less
        the friction on their slip (k, 3) [m]: its part across the direction is taken off up to ``friction * depth``,
        as ``faces.py`` does for spheres. Mass-weighted over the stencil, Jacobi mean per particle, in place on x;
        returns the number of pairs that moved."""
        if self.shared.native is not None and len(depth):
            return self.shared.native.apply(x, inv_mass, pushes.stencil, pushes.weights, pushes.direction, depth, slip,
                                            self.friction)
        hit = depth > 0.0
        if not hit.any():
            return 0
        stencil, weights = pushes.stencil[hit], pushes.weights[hit]
        w = inv_mass[stencil] * weights
        norm = np.einsum("kj,kj->k", weights, w)
        moving = norm > 0.0
        if not moving.all():
            hit[np.flatnonzero(hit)[~moving]] = False
            stencil, weights, w, norm = stencil[moving], weights[moving], w[moving], norm[moving]
        if len(norm) == 0:
            return 0
        direction, depth = pushes.direction[hit], depth[hit]
        delta = depth[:, None] * direction
        if self.friction > 0.0:
            slip = slip[hit]
            across = slip - _dot(slip, direction)[:, None] * direction
            slide = np.sqrt(_dot(across, across))
            delta -= np.minimum(1.0, self.friction * depth / np.maximum(slide, 1e-15))[:, None] * across
        coef = w / norm[:, None]  # (k, s)
        flat = stencil.ravel()
        count = np.maximum(np.bincount(flat, (coef > 0.0).ravel(), minlength=len(x)), 1.0)
        for axis in range(3):
            x[:, axis] += np.bincount(flat, (coef * delta[:, axis, None]).ravel(), minlength=len(x)) / count
        return len(norm)
