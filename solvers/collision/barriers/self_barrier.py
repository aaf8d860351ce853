"""NEWTON's IPC self-contact: a body's vertices against its own triangles and its edges against its own edges.

Li et al. 2020, "Incremental Potential Contact": every vertex against every triangle it is not a corner of
(point-triangle) and every edge against every edge it shares no vertex with (edge-edge), closer than d_hat, adds the
barrier b(d) of ``log_barrier.py`` on their distance d. All 12 coordinates of a pair are the body's unknowns. Value,
gradient and the per-pair PSD-projected Hessian: ``pair_barrier.PairBarrier`` (as the mesh collider's barrier).

The triangles are the body's ``collision_triangles``: for a mesh of quads both splits of every quad (the four faces
of the tetrahedron its corners span), since Blender may draw a bent quad split along either diagonal; a barrier on
the simulated split only let the other split cross the layer beside a sharp fold (16 to 30 edge-triangle pairs at
frames 14-17 of the buckling sheet of tests/test_newton_self_contact.py at 20 x 20, 0 over the simulated triangles;
0 and 0 with both splits).

Pairs closer than d_hat in the rest shape are neighbours, not contacts (Müller's rule, as ``self_contact.py``): they
are left out for good. For a sheet whose mesh spacing exceeds d_hat these are only the two diagonals of a quad whose
both splits are kept (they cross at the quad's centre).

Broad phase: Verlet lists (as ``self_broad_phase``): k-d tree joins of bounding spheres (``self_pairs._join``:
vertices with triangle centroids, edge midpoints with each other) keep the pairs within d_hat + skin (exact distance)
of the positions they were built at; the lists serve every later position at which no particle has moved by more
than half the skin relative to the mean motion (a Newton step's iterates and line-search trials, mostly). There a
listed pair gets the exact distance test only if its distance at the build, less the largest motion of each of its
elements since, is within reach.

CCD (``max_step``): the largest alpha with no pair closer than (1 - CCD_SAFETY) of its distance along x + alpha dx
(additive CCD on all four moving points, ``ccd.point_triangle_ccd`` / ``edge_edge_ccd``), over the listed pairs that
can reach distance 0 when the lists cover both ends of the motion, else over the pairs whose swept bounding spheres
(each element's start and end positions) overlap. Every accepted Newton iterate keeps every pair apart, so the body never passes through itself
within a step. No friction between the body's own layers; between bodies solved as one system, ``lagged_friction``.
"""
import numpy as np

from ..broad_phase.self_pairs import LONG_FACTOR, _drop, _ee_distance, _join, _pair_keys, _vt_distance
from ..narrow_phase.ccd import TOLERANCE as CCD_TOLERANCE
from ..narrow_phase.crossings import triangle_edges
from .log_barrier import CCD_SAFETY, barrier_derivative
from .pair_barrier import PairBarrier, distance_derivatives
from .pair_friction import PairFriction, closest_point_weights

_EMPTY = np.zeros(0, np.int64)

SKIN_FRACTION = 0.25
"""The pair lists' spare distance (Verlet skin) as a fraction of the mean rest edge length, at least 2 d_hat."""


class SelfContactBarrier(PairBarrier):
    """A body's vertex-triangle and edge-edge barrier (module docstring).

    triangles (t, 3): the triangles kept apart (their edges are the edge-edge set); rest (n, 3) [m]: the rest shape
    (which pairs are neighbours); kappa [N]; d_hat [m] > 0. Several bodies in one system: ``body`` (n,) the body of
    each particle and ``self_bodies`` (bodies,) whether each keeps its own pairs (a cloth with self-collision): pairs
    of two different bodies are always kept (those closer than d_hat at rest are left out, as within a body).
    Hessian: 16 blocks per pair (its four particles), over the pairs within d_hat at the current positions.
    """

    def __init__(self, triangles, rest, kappa: float, d_hat: float, body=None, self_bodies=None):
        if not d_hat > 0.0:
            raise ValueError("an IPC barrier needs a positive activation distance d_hat")
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.edges = triangle_edges(self.triangles)
        self.body = None if body is None else np.asarray(body, np.int64)
        """None (one body), or (n,) the body of each particle of several bodies solved as one system."""
        self.self_bodies = None if self_bodies is None else np.asarray(self_bodies, bool)
        """(bodies,) with ``body``: whether pairs within each body are kept (pairs of two bodies always are)."""
        self.kappa = float(kappa)
        self.d_hat = float(d_hat)
        self.count = len(rest)
        self._cached = None
        self._list = None
        self._last = None
        self.rebuilds = 0
        """Broad phases run so far (k-d tree joins); the other queries reused the pair lists."""
        rest = np.asarray(rest, float)
        length = np.linalg.norm(rest[self.edges[:, 0]] - rest[self.edges[:, 1]], axis=1) if len(self.edges) else np.zeros(1)
        self.skin = max(SKIN_FRACTION * float(length.mean()), 2.0 * self.d_hat)
        self.excluded_vt = self.excluded_ee = _EMPTY
        (v, t, _), (e1, e2, _) = self._join(rest, self.d_hat)
        self.excluded_vt = np.sort(_pair_keys(v, t, len(self.triangles)))
        self.excluded_ee = np.sort(_pair_keys(e1, e2, len(self.edges)))

    # ------------------------------------------------------------------ the contact set

    def _kept(self, v, t, e1, e2):
        """Masks of the vertex-triangle pairs (v, t) whose vertex is no corner of the triangle and of the edge pairs
        (e1, e2) sharing no vertex, neither pair excluded at rest."""
        keep_vt = (self.triangles[t] != v[:, None]).all(axis=1) & _drop(self.excluded_vt, v, t, len(self.triangles))
        A, B = self.edges[e1], self.edges[e2]
        keep_ee = ((A[:, 0] != B[:, 0]) & (A[:, 0] != B[:, 1]) & (A[:, 1] != B[:, 0]) & (A[:, 1] != B[:, 1])
                   & _drop(self.excluded_ee, e1, e2, len(self.edges)))
        if self.body is not None:  # several bodies: a body's own pairs only where its self-contact is on
            first, second = self.body[v], self.body[self.triangles[t, 0]]
            keep_vt &= (first != second) | self.self_bodies[first]
            first, second = self.body[A[:, 0]], self.body[B[:, 0]]
            keep_ee &= (first != second) | self.self_bodies[first]
        return keep_vt, keep_ee

    def exclude_pairs_at(self, x) -> None:
        """Also treat as neighbours the pairs within d_hat at positions x (n, 3): a sewn cloth's rest shape with its
        seams closed (``sewing.sewn_positions``)."""
        (v, t, _), (e1, e2, _) = self._join(np.asarray(x, float), self.d_hat)
        self.excluded_vt = np.union1d(self.excluded_vt, _pair_keys(v, t, len(self.triangles)))
        self.excluded_ee = np.union1d(self.excluded_ee, _pair_keys(e1, e2, len(self.edges)))

    def _join(self, x, reach):
        """Vertex-triangle pairs (v, t, d) and edge pairs (e1, e2, d), e1 < e2, with exact distance d < reach at x
        (incident and rest-excluded pairs left out), from k-d tree joins."""
        if len(self.triangles) == 0:
            return (_EMPTY, _EMPTY, np.zeros(0)), (_EMPTY, _EMPTY, np.zeros(0))
        a, b, c = x[self.triangles[:, 0]], x[self.triangles[:, 1]], x[self.triangles[:, 2]]
        centroid = (a + b + c) / 3.0
        radius = np.sqrt(np.max([np.einsum("ij,ij->i", p - centroid, p - centroid) for p in (a, b, c)], axis=0))
        t, v = _join(centroid, radius, x, reach, LONG_FACTOR * float(np.median(radius)))
        p, q = x[self.edges[:, 0]], x[self.edges[:, 1]]
        half = 0.5 * np.sqrt(np.einsum("ij,ij->i", q - p, q - p))
        e1, e2 = _join(0.5 * (p + q), half, None, reach, LONG_FACTOR * float(np.median(half)))
        keep_vt, keep_ee = self._kept(v, t, e1, e2)
        v, t, e1, e2 = v[keep_vt], t[keep_vt], e1[keep_ee], e2[keep_ee]
        d_vt = _vt_distance(x, v, self.triangles[t])
        d_ee = _ee_distance(x, self.edges[e1], self.edges[e2])
        vt, ee = d_vt < reach, d_ee < reach
        return (v[vt], t[vt], d_vt[vt]), (e1[ee], e2[ee], d_ee[ee])

    def _moved(self, y):
        """Per-particle distance (n,) [m] from the lists' build to y, relative to the mean motion (distances do not
        change under a common translation)."""
        moved = y - self._list["x"]
        moved -= moved.mean(axis=0)
        return np.sqrt(np.einsum("ij,ij->i", moved, moved))

    def _listed(self, *positions):
        """True when the pair lists cover every position set given (each (n, 3)): no particle has moved by more than
        half the skin from the lists' build, relative to the mean motion. A pair left out was at least d_hat + skin
        apart at the build, so it is still beyond d_hat; for a segment x -> x + dx this holds all along it when it
        holds at both ends (the distance moved is convex along the segment)."""
        if self._list is None:
            return False
        return all(2.0 * float(self._moved(y).max()) <= self.skin for y in positions)

    def _within(self, moved, limit):
        """The listed pairs that particles having moved by ``moved`` (n,) [m] since the build may have brought within
        ``limit`` [m]: their distance at the build less the largest motion of each of their two elements.
        Returns index arrays into the vertex-triangle and the edge-edge list."""
        (v, t), (e1, e2) = self._list["vt"], self._list["ee"]
        d_vt, d_ee = self._list["d"]
        bound_vt = moved[v] + moved[self.triangles[t]].max(axis=1)
        bound_ee = moved[self.edges[e1]].max(axis=1) + moved[self.edges[e2]].max(axis=1)
        return np.flatnonzero(d_vt - bound_vt <= limit), np.flatnonzero(d_ee - bound_ee <= limit)

    def _pairs(self, x):
        """The pairs within d_hat at x, as ``_join``, from the Verlet lists (rebuilt at x when x is no longer
        covered; of the listed pairs only those that can have come within d_hat get the exact distance test); kept
        for the last x (the line search's accepted trial is the next Newton iterate)."""
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        if not self._listed(x):
            (v, t, d_vt), (e1, e2, d_ee) = self._join(x, self.d_hat + self.skin)
            self._list = dict(x=x.copy(), vt=(v, t), ee=(e1, e2), d=(d_vt, d_ee))
            self.rebuilds += 1
        i, j = self._within(self._moved(x), self.d_hat)
        v, t = self._list["vt"][0][i], self._list["vt"][1][i]
        e1, e2 = self._list["ee"][0][j], self._list["ee"][1][j]
        d_vt = _vt_distance(x, v, self.triangles[t])
        d_ee = _ee_distance(x, self.edges[e1], self.edges[e2])
        vt, ee = d_vt < self.d_hat, d_ee < self.d_hat
        pairs = (v[vt], t[vt], d_vt[vt]), (e1[ee], e2[ee], d_ee[ee])
        self._last = (x.copy(), pairs)
        return pairs

    def _near(self, x):
        return self._pairs(x)

    def _terms(self, x):
        """Per pair within d_hat: (particles (k, 4), d (k,), grad d (k, 12), hess d (k, 12, 12)), point-triangle
        pairs then edge-edge pairs. Kept for the last x (NEWTON asks for the gradient and the Hessian at the same
        iterate)."""
        if self._cached is not None and np.array_equal(self._cached[0], x):
            return self._cached[1]
        (v, t, _), (e1, e2, _) = self._pairs(x)
        result = []
        for stencil, distance in ((np.column_stack([v, self.triangles[t]]), self._pt),
                                  (np.column_stack([self.edges[e1], self.edges[e2]]), self._ee)):
            if len(stencil):
                D, g, H = distance(*(x[stencil[:, k]] for k in range(4)))
                result.append((stencil, *distance_derivatives(D, g, H)))
        self._cached = (x.copy(), result)
        return result

    def bodies_in_contact(self, x) -> set:
        """With ``body``: the bodies with a pair of another body within d_hat at x (empty without ``body``)."""
        if self.body is None:
            return set()
        (v, t, _), (e1, e2, _) = self._pairs(x)
        touching = set()
        for first, second in ((self.body[v], self.body[self.triangles[t, 0]]),
                              (self.body[self.edges[e1, 0]], self.body[self.edges[e2, 0]])):
            apart = first != second
            touching.update(first[apart].tolist() + second[apart].tolist())
        return touching

    def lagged_friction(self, x_start, mu: float, eps: float):
        """Friction (``pair_friction.PairFriction``) of the pairs of two different bodies within d_hat at x_start,
        normal forces -b'(d) there; None without such pairs or without ``body``. (A body's own layers have none.)"""
        if self.body is None:
            return None
        (v, t, _), (e1, e2, _) = self._pairs(x_start)
        parts = []
        for stencil, distance, edge_edge in ((np.column_stack([v, self.triangles[t]]), self._pt, False),
                                             (np.column_stack([self.edges[e1], self.edges[e2]]), self._ee, True)):
            stencil = stencil[self.body[stencil[:, 0]] != self.body[stencil[:, 3]]]
            if len(stencil):
                D, g, _ = distance(*(x_start[stencil[:, k]] for k in range(4)))
                weights, r = closest_point_weights(g, edge_edge)
                force = -barrier_derivative(np.sqrt(np.maximum(D, 0.0)), self.d_hat, self.kappa)
                parts.append((stencil, weights, r, force))
        if not parts:
            return None
        stencil, weights, r, force = (np.concatenate(a) for a in zip(*parts))
        return PairFriction(stencil, weights, r, force, x_start, mu, eps)

    # ------------------------------------------------------------------ CCD

    def _swept_pairs(self, x, dx):
        """Candidate pairs for the motion x -> x + dx: vertex-triangle (v, t) and edge pairs (e1, e2) whose swept
        bounding spheres (each element's start and end positions) overlap."""
        end = x + dx
        tri = self.triangles
        corners = np.concatenate([x[tri], end[tri]], axis=1)  # (t, 6, 3)
        centre = corners.mean(axis=1)
        radius = np.sqrt(np.max(np.einsum("tkd,tkd->tk", corners - centre[:, None], corners - centre[:, None]), axis=1))
        mid_v = x + 0.5 * dx
        half_v = 0.5 * np.sqrt(np.einsum("ij,ij->i", dx, dx))
        # spheres against points: the vertices' own radii go into the reach, then each pair is checked with both
        t, v = _join(centre, radius, mid_v, float(half_v.max()), LONG_FACTOR * float(np.median(radius)))
        gap = centre[t] - mid_v[v]
        close = np.einsum("ij,ij->i", gap, gap) <= (radius[t] + half_v[v]) ** 2
        t, v = t[close], v[close]
        ends = np.concatenate([x[self.edges], end[self.edges]], axis=1)  # (e, 4, 3)
        centre_e = ends.mean(axis=1)
        radius_e = np.sqrt(np.max(np.einsum("ekd,ekd->ek", ends - centre_e[:, None], ends - centre_e[:, None]), axis=1))
        e1, e2 = _join(centre_e, radius_e, None, 0.0, LONG_FACTOR * float(np.median(radius_e)))
        keep_vt, keep_ee = self._kept(v, t, e1, e2)
        return (v[keep_vt], t[keep_vt]), (e1[keep_ee], e2[keep_ee])

    def max_step(self, x, dx):
        """Largest alpha <= 1 with every vertex-triangle and edge-edge pair kept at (1 - CCD_SAFETY) of its start
        distance at least along x + alpha dx (all four points of a pair move)."""
        if len(self.triangles) == 0 or not np.any(dx):
            return 1.0
        if self._listed(x, x + dx):
            # pairs that can reach distance 0 on the way (CCD's tolerance to spare)
            i, j = self._within(np.maximum(self._moved(x), self._moved(x + dx)), 2.0 * CCD_TOLERANCE)
            v, t = self._list["vt"][0][i], self._list["vt"][1][i]
            e1, e2 = self._list["ee"][0][j], self._list["ee"][1][j]
        else:
            (v, t), (e1, e2) = self._swept_pairs(x, dx)
        alpha = 1.0
        if len(v):
            s = np.column_stack([v, self.triangles[t]])
            toi = self._pt_ccd(*(x[s[:, k]] for k in range(4)), *(x[s[:, k]] + dx[s[:, k]] for k in range(4)))
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        if len(e1):
            s = np.column_stack([self.edges[e1], self.edges[e2]])
            toi = self._ee_ccd(*(x[s[:, k]] for k in range(4)), *(x[s[:, k]] + dx[s[:, k]] for k in range(4)))
            alpha = min(alpha, CCD_SAFETY * float(toi.min()))
        return alpha
