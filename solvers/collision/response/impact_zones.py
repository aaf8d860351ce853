"""The fail-safe of cloth self-collision: rigid impact zones for the crossings the Jacobi passes left (``ImpactZones``).

The exact edge-triangle crossings that are new since x_prev are found from the listed pairs that can witness them
(``ImpactZones._new_crossings`` says why that finds all of them), and their particles are frozen into rigid impact zones
(Provot 1997; Bridson et al. 2002), translation only: each zone moves from x_prev by its mass-weighted mean motion, zones
growing until nothing new crosses. That keeps momentum and never adds kinetic energy.
"""
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..broad_phase.self_pairs import _csr_rows, _ee_distance, _overlapping, _row_max, _vt_distance
from ..narrow_phase.crossings import segments_cross_triangles

COLLIDER_SLACK = 0.25
"""The self-collision response may push a particle at most this fraction of thickness into a collider (a pass
that pushes it deeper brings it back to that depth). Not to the surface: a particle put exactly on it lies in the
plane of the cloth resting there, at distance 0 from it, and a 32 x 32 cloth buckling onto the ground then showed 6
crossing pairs in Blender (its positions are stored as float32)."""
ZONE_CLAMP_ROUNDS = 4
"""Rounds that move a fail-safe zone out of the colliders (``SelfCollision._clamp_zones``)."""
MAX_ZONE_ROUNDS = 32
"""Rounds of impact-zone growth in the fail-safe before the whole body is moved as one."""


class ImpactZones:
    """The fail-safe part of ``self_contact.SelfCollision`` (its state is set up there)."""

    def _new_crossings(self, x, x_start):
        """Edge-triangle pairs (edge, triangle) crossing at x that did not cross at x_start, (c, 2) int.

        Along the straight motion from x_start to x, a crossing starts when an end of the edge passes through the
        triangle (a vertex-triangle pair at distance 0) or the edge passes through an edge of the triangle (an
        edge-edge pair at distance 0). That pair ("witness") touches at some time of the step, so every point of it
        moved at most m + D from the list's build to then (m: its particle's motion in the step, D: since the build, both
        relative to the mean), and it was at most the sum over its two elements of their largest m + D apart at the
        build: it is in the Verlet list as long as D_E + m_E <= s_E for every element (its skin; checked, else the list
        is grown or rebuilt here). Its two elements' boxes swept over the step (mean motion taken out) overlap. So the listed
        pairs within that bound whose swept boxes overlap and whose distances at x and at x_start sum to at most
        m_A + m_B, each expanded to the edge-triangle pairs it can witness, contain every new crossing; of those, only
        pairs whose boxes overlap at x can cross there, and the exact test (``segments_cross_triangles``, as
        ``count_self_intersections``) picks them out.
        """
        if len(self.edges) == 0:
            return np.zeros((0, 2), np.int64)
        native = self.native_select
        if native is not None and self._list is not None:
            # All of the below up to the witnesses in one C call (src/self_select.c: the same pairs).
            pos = native.witnesses(x, x_start, self._list)
            if pos is None:  # the list does not hold: refreshed here, then the witnesses of the new list
                moved = self._refresh(x, native.moved, native.motion)
                if moved is not native.moved:
                    native.moved[:] = moved
                pos = native.witnesses(x, x_start, self._list, motion_given=True)
            lst = self._list
            k = len(lst["vt"][0])
            split = int(np.searchsorted(pos, k))
            a, b = pos[:split], pos[split:] - k
            v, t, e1, e2 = lst["vt"][0][a], lst["vt"][1][a], lst["ee"][0][b], lst["ee"][1][b]
            return self._crossings_of(x, x_start, v, t, e1, e2)
        step = x - x_start
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        moved = self._moved(x)
        if not self._list_holds(moved, motion):
            moved = self._refresh(x, moved, motion)
        # Swept boxes: the particles' positions over the step with the mean motion taken out run from x - step to x.
        back = x - step
        lo, hi = np.ascontiguousarray(np.minimum(x, back).T), np.ascontiguousarray(np.maximum(x, back).T)  # (3, n)
        slack = 1e-12 + 1e-9 * float(motion.max())  # round-off of the distances: never drop a pair touching exactly
        if self.native_check is not None:
            # The same witnesses in C (src/self_response.c): the same positions, bit for bit.
            lst = self._list
            pos = self.native_check.witnesses(x, x_start, lo, hi, motion, moved + motion, lst["vt"], lst["ee"],
                                              lst["dist"], slack)
            k = len(lst["vt"][0])
            split = int(np.searchsorted(pos, k))
            a, b = pos[:split], pos[split:] - k
            v, t, e1, e2 = lst["vt"][0][a], lst["vt"][1][a], lst["ee"][0][b], lst["ee"][1][b]
        else:
            v, t, e1, e2 = self._witnesses(x, x_start, lo, hi, motion, moved, slack)
        return self._crossings_of(x, x_start, v, t, e1, e2)

    def _crossings_of(self, x, x_start, v, t, e1, e2):
        """The new crossings (edge, triangle) (c, 2) that the witnesses v, t (vertex-triangle) and e1, e2 (edge-edge)
        can show (``_new_crossings``): with the native library in C (``self_kernels.SelfCallKernels.new_crossings``,
        the same pairs in the same order), else ``_crossings_in_numpy``."""
        if len(v) == 0 and len(e1) == 0:  # no pair of elements came near enough to touch in the step
            return np.zeros((0, 2), np.int64)
        if self.native_check is not None:
            return self.native_check.new_crossings(x, x_start, v, t, e1, e2)
        return self._crossings_in_numpy(x, x_start, v, t, e1, e2)

    def _crossings_in_numpy(self, x, x_start, v, t, e1, e2):
        """``_crossings_of`` in NumPy: the witnesses expanded to edge-triangle pairs, the boxes at x, pairs sharing a
        vertex dropped, ``segments_cross_triangles`` at x, then at x_start for those that cross at x."""
        tri, edges = self.triangles, self.edges
        # Expand: a vertex's edges against the triangle; each edge against the other's triangles.
        rows, entries = _csr_rows(self.vertex_edge_start, v)
        pe = [self.vertex_edges[entries]]
        pt = [t[rows]]
        for a, b in ((e1, e2), (e2, e1)):
            rows, entries = _csr_rows(self.edge_triangle_start, b)
            pe.append(a[rows])
            pt.append(self.edge_triangles[entries])
        pe, pt = np.concatenate(pe), np.concatenate(pt)
        # A crossing at x needs the edge's and the triangle's boxes at x to overlap.
        lo_t, hi_t, lo_e, hi_e = self._boxes(x)
        keep = _overlapping(lo_e, hi_e, pe, lo_t, hi_t, pt)
        pe, pt = pe[keep], pt[keep]
        E, T = edges[pe], tri[pt]
        keep = np.ones(len(pe), bool)
        for j in range(3):  # pairs sharing a vertex never cross (column by column: faster than .any(axis=1))
            keep &= (T[:, j] != E[:, 0]) & (T[:, j] != E[:, 1])
        pe, pt, E, T = pe[keep], pt[keep], E[keep], T[keep]
        hit = segments_cross_triangles(x[E[:, 0]], x[E[:, 1]], x[T[:, 0]], x[T[:, 1]], x[T[:, 2]])
        if not np.any(hit):
            return np.zeros((0, 2), np.int64)
        pe, pt, E, T = pe[hit], pt[hit], E[hit], T[hit]
        old = segments_cross_triangles(x_start[E[:, 0]], x_start[E[:, 1]], x_start[T[:, 0]], x_start[T[:, 1]],
                                       x_start[T[:, 2]])
        return np.column_stack([pe[~old], pt[~old]])

    def _witnesses(self, x, x_start, lo, hi, motion, moved, slack):
        """The listed pairs that may have touched in the step from x_start to x (``_new_crossings`` says why):
        vertex-triangle pairs (v, t) and edge-edge pairs (e1, e2), in the list's order. lo, hi (3, n) [m]: the
        particles' boxes over the step; motion, moved (n,) [m]: their motion in it and since the build (relative to
        the mean); slack [m]: round-off room of the distance test."""
        empty = np.zeros(0, np.int64)
        near = np.nonzero(self._list["dist"] <= self._pair_bound(moved + motion))[0]
        if len(near) == 0:
            return empty, empty, empty, empty
        k = len(self._list["vt"][0])
        vt_pos, ee_pos = near[near < k], near[near >= k] - k
        v, t = self._list["vt"][0][vt_pos], self._list["vt"][1][vt_pos]
        e1, e2 = self._list["ee"][0][ee_pos], self._list["ee"][1][ee_pos]
        tri, edges = self.triangles, self.edges
        lo_t, hi_t, lo_e, hi_e = self._boxes(lo, hi)
        keep = _overlapping(lo, hi, v, lo_t, hi_t, t)
        v, t = v[keep], t[keep]
        keep = _overlapping(lo_e, hi_e, e1, lo_e, hi_e, e2)
        e1, e2 = e1[keep], e2[keep]
        # A witness touching at time s of the step is at most (1 - s) (m_A + m_B) apart at x and s (m_A + m_B) at
        # x_start: its distances at the two ends sum to at most m_A + m_B. Layers resting a thickness apart fail that
        # (on the folding lab cloth, ~7k witnesses by their boxes, most of them such layers).
        m_t, m_e = _row_max(motion, tri), _row_max(motion, edges)
        keep = _vt_distance(x, v, tri[t]) + _vt_distance(x_start, v, tri[t]) <= motion[v] + m_t[t] + slack
        v, t = v[keep], t[keep]
        if len(e1):
            keep = _ee_distance(x, edges[e1], edges[e2]) + _ee_distance(x_start, edges[e1], edges[e2]) <= m_e[e1] + m_e[e2] + slack
            e1, e2 = e1[keep], e2[keep]
        return v, t, e1, e2

    def _fail_safe(self, x, x_prev, x_start, colliders=(), found=None):
        """Undo any crossing the response left: rigid impact zones (Provot 1997, Bridson et al. 2002), translation only.

        The particles of each new crossing pair are joined into zones (connected components); a zone moves as one
        rigid translation from x_start, by the mass-weighted mean of its particles' motion over the step (x - x_prev),
        and its x_prev is reset to x_start. Inside a zone nothing crosses that did not cross at x_start; zones grow
        and merge until no new crossing is left. The mean keeps linear momentum and never raises the kinetic energy
        (zones holding a pinned particle follow the pins instead). With ``colliders``, a zone's translation is
        changed so that it ends no deeper in them than the response may push (``_clamp_zones``; the colliders' push
        is external, so then momentum is not kept): on the 21 x 21 lab scene in PROJECTIVE 8 x 5, as the add-on
        builds it, zones fired in every substep from frame 60 on and carried the cloth 154 mm into the sphere.
        ``found``: the new crossings (edge, triangle) (c, 2) when the caller has them already (``native.self_step``).
        """
        if found is None:
            found = self._new_crossings(x, x_start)
        if len(found) == 0:
            return
        self.zones += 1
        n = len(x)
        free = self.inv_mass > 0.0
        mass = np.where(free, 1.0 / np.where(free, self.inv_mass, 1.0), 0.0)
        x_out, x_prev_out = x.copy(), x_prev.copy()
        velocity = x_out - x_prev_out  # the step's motion the solver turns into velocity
        links = []
        for _ in range(MAX_ZONE_ROUNDS):
            stencil = np.column_stack([self.edges[found[:, 0]], self.triangles[found[:, 1]]])
            links.append(stencil)
            every = np.concatenate(links)
            graph = coo_matrix((np.ones(every.size - len(every)), (np.repeat(every[:, 0], 4), every[:, 1:].ravel())),
                               shape=(n, n))
            _, label = connected_components(graph, directed=False)
            in_zone = np.zeros(n, bool)
            in_zone[every.ravel()] = True
            zone = label[in_zone]
            members = np.nonzero(in_zone)[0]
            m = mass[members]
            pinned = ~free[members]
            zones = int(zone.max()) + 1
            total = np.bincount(zone, m, zones)
            pins = np.bincount(zone, pinned.astype(float), zones)
            shift = np.empty((len(members), 3))
            for axis in range(3):
                free_mean = np.bincount(zone, m * velocity[members, axis], zones) / np.where(total > 0, total, 1.0)
                pin_mean = np.bincount(zone, pinned * (x_out[members, axis] - x_start[members, axis]), zones) / \
                    np.maximum(pins, 1.0)
                shift[:, axis] = np.where(pins > 0, pin_mean, free_mean)[zone]
            if colliders:
                shift = self._clamp_zones(x_start[members], shift, zone, pins[zone] > 0, colliders, members)
            move = members[free[members]]
            x[move] = x_start[move] + shift[free[members]]
            x_prev[move] = x_start[move]
            found = self._new_crossings(x, x_start)
            if len(found) == 0:
                return
        # Out of rounds: the whole body moves as one (nothing crosses that did not at the start).
        shift = (mass[:, None] * velocity).sum(axis=0) / max(mass.sum(), 1e-300)
        if colliders:
            members = np.nonzero(free)[0]
            shift = self._clamp_zones(x_start[members], np.tile(shift, (len(members), 1)),
                                      np.zeros(len(members), np.int64), np.zeros(len(members), bool), colliders, members)[0]
        x[free] = x_start[free] + shift
        x_prev[free] = x_start[free]

    def _clamp_zones(self, start, shift, zone, pinned, colliders, members):
        """Zone translations (one row per member, (m, 3)) changed so that no member of a zone without pins ends
        deeper than COLLIDER_SLACK * thickness inside a collider: each round moves a zone along the normal of its
        deepest member by that member's excess depth (exact for a plane, a few rounds for a sphere). A zone can
        always stay where the step started it (shift 0), which is where it ends if the rounds run out. members (m,):
        the particles of the rows, for their sphere pads."""
        shift = shift.copy()
        pad2 = self.pad2[members] if self.pad2 is not None else None
        slack = COLLIDER_SLACK * self.thickness
        zones = int(zone.max()) + 1 if len(zone) else 0
        for _ in range(ZONE_CLAMP_ROUNDS):
            deepest = np.zeros(zones)
            push = np.zeros((zones, 3))
            for collider in colliders:
                d, n = collider.distance_and_normal(start + shift, pad2)
                excess = -(d + slack)
                inside = (excess > 0.0) & ~pinned
                if not np.any(inside):
                    continue
                # The deepest member of each zone: sorted by excess depth, the last write per zone wins.
                rows = np.nonzero(inside)[0]
                rows = rows[np.argsort(excess[rows])]
                z = zone[rows]
                worse = excess[rows] > deepest[z]
                rows, z = rows[worse], z[worse]
                deepest[z] = excess[rows]
                push[z] = excess[rows, None] * n[rows]
            if not np.any(deepest > 0.0):
                return shift
            shift += push[zone]
        for collider in colliders:  # still inside after the rounds: those zones stay where they started
            d, _ = collider.distance_and_normal(start + shift, pad2)
            shift[np.isin(zone, np.unique(zone[(d < -slack) & ~pinned]))] = 0.0
        return shift

    # ------------------------------------------------------------------ helpers
