"""The face-pair list of a mesh collider (``MeshFacePairs``, a mixin of ``mesh_collider.MeshCollider``): its corners
against a body's triangles and its edges against the body's edges, every pair that can come within reach, kept as a
Verlet list between the asks of a step and across steps.

The list is found within reach + SKIN (``MeshBroadPhase.corner_pairs`` and ``edge_pairs``, then exact distances) and
kept per point: each point j has a reference position r_j and an allowance a_j. The invariant: every pair (f, E) of a
collider feature f and a body element E (triangle or edge) that is not in the list lies farther than
reach + 2 SKIN / 3 + max_{j in E} a_j from f with E's points at their references. A distance shrinks by at most the
motion of the element's farthest-moving point, so while every point stays within its allowance of its reference, no
pair outside the list comes within reach + 2 SKIN / 3.

- Found anew (all points): references at x, allowances SKIN / 3, or more for a point far from every sharp edge
  (``_allowances``); unlisted pairs lay farther than reach + SKIN.
- Refreshed (a few points P moved beyond their allowance): P's references move to where they are now, and the
  pairs of every element that holds a point of P are found again with P's and its other points' references, each
  element within reach + 2 SKIN / 3 + its largest allowance; the other elements' references and pairs stay. A cloth
  lying on a box has a few points near the box's edges sliding a centimetre every few steps: they cost a refresh of
  their elements, not a new list.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..narrow_phase.primitives import _dot, point_triangle_distance, segment_distance
from ..response.contact_set import FacePairs
from .mesh_broad_phase import SKIN, SLOTS

REFRESH_SHARE = 0.1
"""When more than this share of the points moved beyond their allowances, the list is found anew instead."""
MAX_ALLOWANCE = 10 * SKIN
"""[m] The largest allowance of a point (a refresh searches each element this much farther at most)."""


@dataclass
class _FaceList:
    """The kept face pairs of one body (its triangles array) for one reach (module docstring)."""

    triangles: np.ndarray
    reference: np.ndarray
    """(n, 3) [m] each point's reference position."""
    allowance: np.ndarray
    """(n,) [m] how far each point may move from its reference."""
    pairs: FacePairs
    """The pairs, with collider None: each answer is these with the collider that asks."""


class MeshFacePairs:
    """``face_pairs`` of ``MeshCollider`` (a mixin): uses its vertices, thickness, shared (``_Shared.face_cache``,
    its corners and sharp edges), ``corner_pairs``, ``edge_pairs`` and ``_body_edges``."""

    def face_pairs(self, x, triangles, reach: float = None):
        """``contact_set.FacePairs`` of this collider's corners against a body's triangles (t, 3) and its edges
        against the body's edges, holding every pair within reach [m] (default: thickness) at x (n, 3), or a superset:
        the kept list (module docstring), refreshed around the points that moved beyond their allowances, or found
        anew. The one candidate list of the position-level face push and of NEWTON's barrier (which asks at every
        iterate)."""
        reach = self.thickness if reach is None else float(reach)
        if self.start is None and self.shared.travel == 0.0 and self.far_from(x, reach):
            # A still collider out of reach of the whole body: no pair, and the kept list stays as it is (its
            # references and allowances say when it must be refreshed, however many asks passed it by).
            empty = np.zeros(0, np.int64)
            return FacePairs(self, (empty, empty), (empty, empty), np.zeros(0), np.zeros(0))
        key = (reach, self.shared.travel), id(triangles)  # per body: solvers pass the same triangles every step
        kept = self.shared.face_cache.get(key)
        if kept is not None and kept.triangles is triangles and kept.reference.shape == x.shape:
            moved = x - kept.reference
            moved_sq = _dot(moved, moved)
            if np.all(moved_sq <= kept.allowance**2):
                return replace(kept.pairs, collider=self)
            # Refreshed with every point beyond half its allowance: a point sliding along an edge goes past its
            # allowance again soon, and one refresh of many points costs about what one of a few does.
            beyond = np.flatnonzero(moved_sq > (0.5 * kept.allowance) ** 2)
            if len(beyond) <= REFRESH_SHARE * len(x):
                self._refresh(kept, x, beyond, reach)
                return replace(kept.pairs, collider=self)
        edges = self._body_edges(triangles)
        (ci, ti, d_pt), (ei, bi, d_ee) = self._pairs_within(x, triangles, np.arange(len(triangles)), edges,
                                                            np.arange(len(edges)), reach + SKIN, reach + SKIN)
        pairs = FacePairs(self, (ci, ti), (ei, bi), d_pt, d_ee)
        if len(self.shared.face_cache) >= 4 * SLOTS:  # a few reaches (thickness, NEWTON's d_hat, half of it) a body
            self.shared.face_cache.clear()
        # The kept list names no collider (each answer names its asker): a collider in its own shared's cache would
        # keep every frame's poses alive until Python's cycle collector ran.
        self.shared.face_cache[key] = _FaceList(triangles, x.copy(), self._allowances(x, edges, reach),
                                                replace(pairs, collider=None))
        return pairs

    def _pairs_within(self, x, triangles, tri_rows, edges, edge_rows, tri_reach, edge_reach):
        """The corner pairs of the body triangles tri_rows (k,) and the edge pairs of the body edges edge_rows (m,) at
        x within each element's reach [m] (scalar, or (k,) and (m,)) at some pose of the frame: ((corner, triangle,
        distance), (collider edge, body edge, distance)), indices into the whole arrays. The joins are loose
        (bounding spheres, the longest body edge), so every candidate's exact distance is checked."""
        travel = self.shared.travel
        tri_reach = np.broadcast_to(np.asarray(tri_reach, float), (len(tri_rows),))
        edge_reach = np.broadcast_to(np.asarray(edge_reach, float), (len(edge_rows),))
        if self.shared.native is not None:  # the same pairs from grids, in C (native/mesh_kernels.py)
            return self.shared.native.face_pairs(
                self.vertices, self.shared.corners, self.shared.edges, travel, np.ascontiguousarray(x, np.float64), triangles,
                np.ascontiguousarray(tri_rows, np.int64), np.ascontiguousarray(tri_reach), edges,
                np.ascontiguousarray(edge_rows, np.int64), np.ascontiguousarray(edge_reach))
        ci, ti = self.corner_pairs(x, triangles[tri_rows], float(tri_reach.max(initial=0.0)))
        body = x[triangles[tri_rows[ti]]]
        d_pt = point_triangle_distance(self.vertices[self.shared.corners[ci]], body[:, 0], body[:, 1], body[:, 2])[0]
        near_pt = d_pt <= (tri_reach[ti] + travel) * (1.0 + 1e-12) + 1e-12
        ei, bi = self.edge_pairs(x, edges[edge_rows], float(edge_reach.max(initial=0.0)))
        mine, body = self.shared.edges[ei], edges[edge_rows[bi]]
        d_ee = segment_distance(self.vertices[mine[:, 0]], self.vertices[mine[:, 1]], x[body[:, 0]], x[body[:, 1]])[0]
        near_ee = d_ee <= (edge_reach[bi] + travel) * (1.0 + 1e-12) + 1e-12
        # In the order of the body elements asked, then of the collider's features (the joins' order is the trees'):
        # the order the pushes sum in, the native twin's too.
        pt = np.flatnonzero(near_pt)
        pt = pt[np.lexsort((ci[pt], ti[pt]))]
        ee = np.flatnonzero(near_ee)
        ee = ee[np.lexsort((ei[ee], bi[ee]))]
        return (ci[pt], tri_rows[ti[pt]], d_pt[pt]), (ei[ee], edge_rows[bi[ee]], d_ee[ee])

    def _refresh(self, kept: _FaceList, x, points, reach: float) -> None:
        """Move the references of points (p,) to x and find again the pairs of every element holding one of them
        (module docstring), in place on ``kept``."""
        edges = self._body_edges(kept.triangles)
        kept.reference[points] = x[points]
        kept.allowance[points] = self._allowances(x, edges, reach, points)
        mark = np.zeros(len(x), bool)
        mark[points] = True
        touched_tri, touched_edge = mark[kept.triangles].any(axis=1), mark[edges].any(axis=1)
        tri_rows, edge_rows = np.flatnonzero(touched_tri), np.flatnonzero(touched_edge)
        base = reach + 2.0 * SKIN / 3.0
        (ci, ti, d_pt), (ei, bi, d_ee) = self._pairs_within(
            kept.reference, kept.triangles, tri_rows, edges, edge_rows,
            base + kept.allowance[kept.triangles[tri_rows]].max(axis=1), base + kept.allowance[edges[edge_rows]].max(axis=1))
        old = kept.pairs
        keep_pt, keep_ee = ~touched_tri[old.corner_triangle[1]], ~touched_edge[old.edge_edge[1]]

        def joined(before, keep, new):  # the untouched elements' pairs, then the touched ones' found again
            return np.concatenate([before[keep], new])

        kept.pairs = FacePairs(None, (joined(old.corner_triangle[0], keep_pt, ci), joined(old.corner_triangle[1], keep_pt, ti)),
                               (joined(old.edge_edge[0], keep_ee, ei), joined(old.edge_edge[1], keep_ee, bi)),
                               joined(old.corner_distance, keep_pt, d_pt), joined(old.edge_distance, keep_ee, d_ee))

    def _allowances(self, x, edges, reach: float, points=None):
        """How far (p,) [m] the points (default all) of a body at x (n, 3) with edges (e, 2) may move from x before a
        face-pair list found there within reach + SKIN must be refreshed: SKIN / 3, or more for a point far from every
        sharp edge, at most MAX_ALLOWANCE.

        Why it holds for a list found anew: a pair not in the list lay farther than reach + SKIN; a body element E
        that holds point j lay at least D_j - L from every sharp edge and corner, with D_j a lower bound on point j's
        own distance to them (the edges' k-d tree: nearest piece centre less the pieces' radius and three times the
        travel, as ``edge_pairs``) and L the longest body edge; so it lay farther than reach + 2 SKIN / 3 + a_j for
        a_j = max(SKIN / 3, D_j - L - reach - 2 SKIN / 3). (A refresh searches each element within its largest
        allowance instead, so any allowance holds there.)"""
        points = np.arange(len(x)) if points is None else points
        tight = np.full(len(points), SKIN / 3.0)
        if len(self.shared.edges) == 0 or len(edges) == 0:
            return tight
        tree, piece_radius = self.shared.edge_tree_for(self.vertices)
        lower = tree.query(x[points])[0] - piece_radius - 3.0 * self.shared.travel
        span = x[edges[:, 1]] - x[edges[:, 0]]
        longest = float(np.sqrt(_dot(span, span).max()))
        return np.clip((lower - longest - reach - 2.0 * SKIN / 3.0) * (1.0 - 1e-12), SKIN / 3.0, MAX_ALLOWANCE)


__all__ = ["MAX_ALLOWANCE", "REFRESH_SHARE", "MeshFacePairs"]
