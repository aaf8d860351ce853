"""NEWTON's IPC barrier between a mesh collider's corners and edges and a body's triangles and edges.

``barrier.ColliderBarrier`` keeps every body vertex away from the collider's triangles; this term covers what that
misses (Li et al. 2020, "Incremental Potential Contact", section 4): every collider corner against every body
triangle (point-triangle) and every collider edge against every body edge (edge-edge) closer than d_hat, with the
scalar barrier b(d) of ``barrier.py`` on their distance d. The collider is still within a step (its pose at the step's
end), so only the body's particles are unknowns: of the 12 coordinates of a pair, the body's 9 (a triangle) or 6 (an
edge) take part.

Value, gradient and the per-pair PSD-projected Hessian: ``pair_barrier.PairBarrier`` (shared with the body's
self-contact barrier, ``self_barrier.py``). CCD (``max_step``): the largest alpha with no pair closer than
(1 - CCD_SAFETY) of its distance, from ``ccd.point_triangle_ccd`` / ``edge_edge_ccd`` (the course's 0.9 rule).
"""
import numpy as np

from .barrier import CCD_SAFETY
from .ccd import edge_edge_ccd, point_triangle_ccd
from .pair_barrier import PairBarrier, distance_derivatives
from .primitives import edge_edge_distance_squared, point_triangle_distance, point_triangle_distance_squared, segment_distance


class MeshContactBarrier(PairBarrier):
    """Collider corners against body triangles and collider edges against body edges (module docstring).

    collider: a ``MeshCollider`` at a fixed pose; triangles (t, 3) and edges (e, 2): the body's; kappa [N], d_hat [m].
    Hessian: 9 blocks per point-triangle pair (the triangle's corners), 4 per edge-edge pair, over the pairs within
    d_hat at the current positions (``coupled``: assembled from the contact set of each iteration).
    """

    def __init__(self, collider, triangles, edges, kappa: float, d_hat: float):
        self._pt, self._ee = point_triangle_distance_squared, edge_edge_distance_squared  # with derivatives
        self.collider = collider
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.edges = np.asarray(edges, np.int64).reshape(-1, 2)
        self.kappa = float(kappa)
        self.d_hat = float(d_hat)
        self.corners = collider.shared.corners
        self.collider_edges = collider.shared.edges
        self._cached = None

    # ------------------------------------------------------------------ the contact set

    def _contacts(self, x, reach):
        """Point-triangle and edge-edge pairs within reach: ((corner (k,), triangle (k,)), (collider edge (m,),
        body edge (m,)))."""
        return self.collider.corner_pairs(x, self.triangles, reach), self.collider.edge_pairs(x, self.edges, reach)

    def _near(self, x):
        """The pairs closer than d_hat at x: ((collider corner (k,), body triangle (k,)) and (collider edge (m,),
        body edge (m,))), filtered on the exact distance (no derivatives), with their distances."""
        (ci, ti), (ei, bi) = self._contacts(x, self.d_hat)
        c = self.collider.vertices
        tri = self.triangles[ti]
        d_pt, _ = point_triangle_distance(c[self.corners[ci]], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
        mine, body = self.collider_edges[ei], self.edges[bi]
        d_ee, _ = segment_distance(c[mine[:, 0]], c[mine[:, 1]], x[body[:, 0]], x[body[:, 1]])
        pt, ee = d_pt < self.d_hat, d_ee < self.d_hat
        return (ci[pt], ti[pt], d_pt[pt]), (ei[ee], bi[ee], d_ee[ee])

    def _terms(self, x):
        """Per pair: (body particles (k, s), distance d (k,), gradient of d over the body's coordinates (k, 3s),
        Hessian of d over them (k, 3s, 3s)) for the point-triangle (s = 3) and edge-edge (s = 2) pairs within d_hat.
        Kept for the last x (NEWTON asks for the gradient and the Hessian at the same iterate)."""
        if self._cached is not None and np.array_equal(self._cached[0], x):
            return self._cached[1]
        (ci, ti, _), (ei, bi, _) = self._near(x)
        c = self.collider.vertices
        tri = self.triangles[ti]
        D, g, H = self._pt(c[self.corners[ci]], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
        pairs = [(tri, D, g[:, 3:], H[:, 3:, 3:])]
        mine, body = self.collider_edges[ei], self.edges[bi]
        D, g, H = self._ee(c[mine[:, 0]], c[mine[:, 1]], x[body[:, 0]], x[body[:, 1]])
        pairs.append((body, D, g[:, 6:], H[:, 6:, 6:]))
        result = [(stencil, *distance_derivatives(D, g, H)) for stencil, D, g, H in pairs]
        self._cached = (x.copy(), result)
        return result

    # ------------------------------------------------------------------ CCD

    def max_step(self, x, dx):
        """Largest alpha <= 1 with every corner-triangle and edge-edge pair kept at (1 - CCD_SAFETY) of its start
        distance at least (the collider stands still within NEWTON's step)."""
        move = float(np.sqrt(np.einsum("ij,ij->i", dx, dx).max())) if len(dx) else 0.0
        (ci, ti), (ei, bi) = self._contacts(x, move)
        c = self.collider.vertices
        alpha = 1.0
        if len(ci):
            tri = self.triangles[ti]
            p = c[self.corners[ci]]
            a0, b0, c0 = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
            toi = point_triangle_ccd(p, a0, b0, c0, p, a0 + dx[tri[:, 0]], b0 + dx[tri[:, 1]], c0 + dx[tri[:, 2]])
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        if len(ei):
            mine, body = self.collider_edges[ei], self.edges[bi]
            p, q = c[mine[:, 0]], c[mine[:, 1]]
            a0, b0 = x[body[:, 0]], x[body[:, 1]]
            toi = edge_edge_ccd(p, q, a0, b0, p, q, a0 + dx[body[:, 0]], b0 + dx[body[:, 1]])
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        return alpha
