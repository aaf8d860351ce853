"""NEWTON's IPC barrier between a mesh collider and a body: vertex-triangle both ways and edge-edge.

Li et al. 2020, "Incremental Potential Contact", section 4: every body vertex against every collider triangle and every
collider corner against every body triangle (point-triangle), every collider edge against every body edge (edge-edge),
closer than d_hat, each pair with the scalar barrier b(d) of ``log_barrier.py`` on its distance d. The collider is still
within a step (its pose at the step's end), so only the body's particles are unknowns: of the 12 coordinates of a
pair, the body's 3 (a vertex), 9 (a triangle) or 6 (an edge) take part.

Body vertices are summed over every triangle within d_hat, not barred from the nearest triangle alone
(``log_barrier.ColliderBarrier``): the nearest triangle's distance has a crease wherever two triangles are equally near,
which a concave collider (a cloth sagging under a body, a box's inner corner) puts right where a body rests, and
Newton then cycles between the two sides of the crease without converging (a cube resting in a cloth hammock: the
residual stayed at 0.04 - 0.09 m/s for 100 iterations with the energy flat to 8 digits). The sum is smooth.
Their candidates are kept per step (Verlet list, ``VERTEX_SKIN``): the collider stands still within the step, so a
vertex that moved less than the skin since its list was found has every triangle within d_hat in it.

Value, gradient and the per-pair PSD-projected Hessian: ``pair_barrier.PairBarrier`` (shared with the body's
self-contact barrier, ``self_barrier.py``). CCD (``max_step``): the largest alpha with no pair closer than
(1 - CCD_SAFETY) of its distance, from ``ccd.point_triangle_ccd`` / ``edge_edge_ccd`` (the course's 0.9 rule).
"""
import numpy as np

from ...energies.base import PositionCache
from .log_barrier import CCD_SAFETY, barrier_terms
from .pair_barrier import PairBarrier, distance_derivatives

VERTEX_SKIN = 0.01
"""[m] Body vertex-collider triangle candidates are found within d_hat + this and kept until a vertex moves farther."""


class MeshContactBarrier(PairBarrier):
    """Collider corners against body triangles and collider edges against body edges (module docstring).

    collider: a ``MeshCollider`` at a fixed pose; triangles (t, 3) and edges (e, 2): the body's; kappa [N], d_hat [m];
    points (p,): the body's particles kept off the collider's triangles (the free ones), None: none (then
    ``log_barrier.ColliderBarrier`` keeps the vertices off).
    Hessian: 1 block per vertex-triangle pair, 9 per corner-triangle pair (the triangle's corners), 4 per edge-edge
    pair, over the pairs within d_hat at the current positions (``coupled``: assembled from the contact set of each
    iteration).
    """

    def __init__(self, collider, triangles, edges, kappa: float, d_hat: float, points=None):
        self.collider = collider
        # The same array object as given where it is one: the collider's face pairs are kept per triangles array.
        self.triangles = triangles if getattr(triangles, "dtype", None) == np.int64 and np.ndim(triangles) == 2 \
            else np.asarray(triangles, np.int64).reshape(-1, 3)
        self.edges = np.asarray(edges, np.int64).reshape(-1, 2)
        self.kappa = float(kappa)
        self.d_hat = float(d_hat)
        self.corners = collider.shared.corners
        self.collider_edges = collider.shared.edges
        self.points = np.zeros(0, np.int64) if points is None else np.asarray(points, np.int64)
        self._cached = None
        self._near_pairs = PositionCache()
        self._vertex_list = None
        """(positions of ``points`` when found (p, 3), point (k,), triangle (k,), the distance they were found within
        [m]): the kept vertex-triangle candidates."""

    @property
    def covers_points(self) -> bool:
        """Whether this barrier keeps the body's vertices off the collider's triangles (``points`` given)."""
        return len(self.points) > 0

    def _kept_vertex_pairs(self, y, reach):
        """The kept vertex-triangle candidates (point (k,) particle indices, triangle (k,)) where they hold every pair
        within ``reach`` of the points at y (p, 3): no point moved farther since they were found than their limit
        leaves beyond reach (a triangle within reach of a point now was within reach + its motion of where the point
        was); else None."""
        kept = self._vertex_list
        if kept is None or len(kept[0]) != len(y):
            return None
        moved = y - kept[0]
        drift = float(np.sqrt(np.einsum("ij,ij->i", moved, moved).max(initial=0.0)))
        return (kept[1], kept[2]) if drift + reach <= kept[3] else None

    def _vertex_pairs(self, x, reach):
        """Body vertex-collider triangle candidates (point (k,) particle indices, triangle (k,)) holding every pair
        within ``reach`` <= d_hat at x: the kept list while it holds them (``_kept_vertex_pairs``: found within
        d_hat + VERTEX_SKIN, it serves until a point has moved VERTEX_SKIN), else found anew (exact distances filter
        the broad phase's pieces)."""
        y = x[self.points]
        kept = self._kept_vertex_pairs(y, reach)
        if kept is not None:
            return kept
        limit = max(reach, self.d_hat) + VERTEX_SKIN
        rows, tris = self.collider._pairs(y, limit)
        corners = self.collider.vertices[self.collider.triangles[tris]]
        near = self._pt_gap(y[rows], corners[:, 0], corners[:, 1], corners[:, 2]) <= limit
        self._vertex_list = (y.copy(), self.points[rows[near]], tris[near], limit)
        return self._vertex_list[1], self._vertex_list[2]

    # ------------------------------------------------------------------ the contact set

    def _contacts(self, x, reach):
        """Point-triangle and edge-edge pairs within reach: ((corner (k,), triangle (k,)), (collider edge (m,),
        body edge (m,))). Within d_hat (every iterate's energy and derivatives): the collider's Verlet list
        (``MeshCollider.face_pairs``, the contact set's face pairs), kept while the iterates stay within its skin;
        farther (a CCD query over a long step): the broad phase's joins."""
        if reach <= self.d_hat:
            pairs = self.collider.face_pairs(x, self.triangles, self.d_hat)
            return pairs.corner_triangle, pairs.edge_edge
        return self.collider.corner_pairs(x, self.triangles, reach), self.collider.edge_pairs(x, self.edges, reach)

    def _near(self, x):
        """The pairs closer than d_hat at x: ((collider corner (k,), body triangle (k,)) and (collider edge (m,),
        body edge (m,))), filtered on the exact distance (no derivatives), with their distances (shared arrays: read
        only). Kept for the last x: NEWTON asks at a line search's trial for the energy, then, once it accepts the
        trial, for the gradient and Hessian at the same positions (the kept lists it reads give the same pairs
        again)."""
        return self._near_pairs.get(x, self._near_of)

    def _near_of(self, x):
        (ci, ti), (ei, bi) = self._contacts(x, self.d_hat)
        c = self.collider.vertices
        tri = self.triangles[ti]
        d_pt = self._pt_gap(c[self.corners[ci]], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
        mine, body = self.collider_edges[ei], self.edges[bi]
        d_ee = self._ee_gap(c[mine[:, 0]], c[mine[:, 1]], x[body[:, 0]], x[body[:, 1]])
        pt, ee = d_pt < self.d_hat, d_ee < self.d_hat
        pi, si = self._vertex_pairs(x, self.d_hat)
        own = self.collider.vertices[self.collider.triangles[si]]
        d_vt = self._pt_gap(x[pi], own[:, 0], own[:, 1], own[:, 2])
        vt = d_vt < self.d_hat
        return (ci[pt], ti[pt], d_pt[pt]), (ei[ee], bi[ee], d_ee[ee]), (pi[vt], si[vt], d_vt[vt])

    def _terms(self, x):
        """Per pair: (body particles (k, s), distance d (k,), gradient of d over the body's coordinates (k, 3s),
        Hessian of d over them (k, 3s, 3s)) for the point-triangle (s = 3) and edge-edge (s = 2) pairs within d_hat.
        Kept for the last x (NEWTON asks for the gradient and the Hessian at the same iterate)."""
        if self._cached is not None and np.array_equal(self._cached[0], x):
            return self._cached[1]
        (ci, ti, _), (ei, bi, _), (pi, si, _) = self._near(x)
        c = self.collider.vertices
        tri = self.triangles[ti]
        D, g, H = self._pt(c[self.corners[ci]], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
        pairs = [(tri, D, g[:, 3:], H[:, 3:, 3:])]
        mine, body = self.collider_edges[ei], self.edges[bi]
        D, g, H = self._ee(c[mine[:, 0]], c[mine[:, 1]], x[body[:, 0]], x[body[:, 1]])
        pairs.append((body, D, g[:, 6:], H[:, 6:, 6:]))
        own = c[self.collider.triangles[si]]
        D, g, H = self._pt(x[pi], own[:, 0], own[:, 1], own[:, 2])
        pairs.append((pi[:, None], D, g[:, :3], H[:, :3, :3]))
        result = [(stencil, *distance_derivatives(D, g, H)) for stencil, D, g, H in pairs]
        self._cached = (x.copy(), result)
        return result

    def collider_forces(self, x) -> np.ndarray:
        """The barrier's forces on the collider's vertices (m, 3) [N] with the body at x (n, 3): each pair pushes the
        collider's part of it by -b'(d) grad d, the reaction to what it does to the body (the pair's forces sum to
        zero). What a body resting on a deforming collider (another body) presses into it."""
        (ci, ti, _), (ei, bi, _), (pi, si, _) = self._near(x)
        c = self.collider.vertices
        forces = np.zeros_like(c)
        tri = self.triangles[ti]
        mine, body = self.collider_edges[ei], self.edges[bi]
        own = self.collider.triangles[si]
        for stencil, (D, g, _), part in (
                (self.corners[ci][:, None], self._pt(c[self.corners[ci]], x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]), slice(0, 3)),
                (mine, self._ee(c[mine[:, 0]], c[mine[:, 1]], x[body[:, 0]], x[body[:, 1]]), slice(0, 6)),
                (own, self._pt(x[pi], c[own[:, 0]], c[own[:, 1]], c[own[:, 2]]), slice(3, 12))):
            if not len(D):
                continue
            d = np.sqrt(np.maximum(D, 1e-300))
            first = barrier_terms(d, self.d_hat, self.kappa)[1]
            push = -(first / (2.0 * d))[:, None] * g[:, part]
            np.add.at(forces, stencil.ravel(), push.reshape(-1, 3))
        return forces

    # ------------------------------------------------------------------ CCD

    def max_step(self, x, dx):
        """Largest alpha <= 1 with every vertex-triangle, corner-triangle and edge-edge pair kept at (1 - CCD_SAFETY) of its start
        distance at least (the collider stands still within NEWTON's step)."""
        move = float(np.sqrt(np.einsum("ij,ij->i", dx, dx).max())) if len(dx) else 0.0
        (ci, ti), (ei, bi) = self._contacts(x, move)
        c = self.collider.vertices
        alpha = 1.0
        if len(ci):
            tri = self.triangles[ti]
            p = c[self.corners[ci]]
            a0, b0, c0 = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
            toi = self._pt_ccd(p, a0, b0, c0, p, a0 + dx[tri[:, 0]], b0 + dx[tri[:, 1]], c0 + dx[tri[:, 2]])
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        if len(ei):
            mine, body = self.collider_edges[ei], self.edges[bi]
            p, q = c[mine[:, 0]], c[mine[:, 1]]
            a0, b0 = x[body[:, 0]], x[body[:, 1]]
            toi = self._ee_ccd(p, q, a0, b0, p, q, a0 + dx[body[:, 0]], b0 + dx[body[:, 1]])
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        if len(self.points):
            # the kept candidates where they cover the step's reach (a step shorter than the skin left), else the
            # broad phase's, without keeping those (a long step's list would slow every later iterate's contact set)
            y = x[self.points]
            kept = self._kept_vertex_pairs(y, move)
            if kept is None:
                rows, tris = self.collider._pairs(y, move)
                kept = self.points[rows], tris
            pi, tris = kept
            if len(pi):
                own = c[self.collider.triangles[tris]]
                toi = self._pt_ccd(x[pi], own[:, 0], own[:, 1], own[:, 2], x[pi] + dx[pi], own[:, 0], own[:, 1], own[:, 2])
                alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        return alpha
