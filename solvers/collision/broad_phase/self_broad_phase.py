"""The broad phase of cloth self-collision: Verlet lists of vertex-triangle and edge-edge pairs (``SelfBroadPhase``).

``scipy.spatial.cKDTree`` joins (vertices with triangle centroids, edge midpoints with each other; elements joined in
classes of size, so stretched or fast elements do not widen every query), then the exact distances of what they find: the lists
keep the pairs within thickness + the two elements' skins (exact distance, so a sheet's own neighbours stay out),
until some element's motion since the build could exceed its skin (``SelfBroadPhase._candidates`` says why that is
exact). Each particle's skin follows its own motion (SKIN_MOTION steps of it, between SKIN_FRACTION and
MAX_SKIN_FRACTION of an edge), an element's is the largest of its particles'.

When only a few elements outran their skins (at most GROW_LIMIT of them), their skins are grown and their pairs
re-queried at the build's positions (``SelfBroadPhase._grow``; in C with the native library, the same pairs)
instead of a rebuild. Before every exact distance (at
the build, on the listed candidates, in the fail-safe), axis-aligned boxes drop the pairs that cannot be within
reach, one axis at a time (``_overlapping``).

Per-element skins, not one for the whole cloth: the lists last while the elements that moved fit their own skins, so
the cloth's fastest particle neither forces a rebuild every step nor widens every element's sphere. On the 64 x 64 lab
cloth (bench/profile_self_collision.py, XPBD 30 x 1, from saved states, both versions back to back on a loaded
machine): frames 21-24, where it lands on the sphere and folds, 112 rebuilds in 120 steps with one skin for all,
8.9 s a frame, 28 with skins per element, 3.5 s; frames 31-36, 88 and 4.4 s against 40 and 2.8 s.
"""
import numpy as np

from .self_pairs import (_bounding_spheres, _drop, _ee_distance, _join_points, _overlapping,
                         _pair_keys, _row_max, _self_join, _tree, _unique_pairs, _vt_distance)

SKIN_FRACTION = 0.2
"""The broad phase's smallest spare distance (Verlet skin) of a pair, as a fraction of the mean rest edge length:
each of its two elements brings half."""
SKIN_MOTION = 16.0
"""A particle's skin is at least half this many times its motion in the step relative to the mean (a list outlives
several steps of its fastest elements). The trade: a larger skin rebuilds less often but every substep scans more
pairs. With the native kernels (threaded builds, the list's checks in C), on the crumpled 64 x 64 lab cloth
(``bench/profile_self_collision.py`` from its frame-30 state, frames 31-36, two runs each on a quiet 2-core machine):
8 took 0.149 s a frame (60 rebuilds, 21k pairs listed), 12 0.125 (36, 26k), 16 0.126 (27, 32k), 24 0.145-0.147 (20,
54k). 16 rather than 12: fewer rebuilds, whose cost grows on a machine with fewer cores."""
MAX_SKIN_FRACTION = 3.6
"""... but at most half this fraction of the mean rest edge per element, unless the step's motion needs more (2.5
steps). Only fast elements get it: one skin for the whole cloth this large filled the lists with the sheet's own
neighbours."""


GROW_LIMIT = 0.01
"""When at most this fraction of the elements outran their skins, those elements' skins are grown and their pairs
re-queried at the list's build positions (``SelfBroadPhase._grow``) instead of rebuilding the whole list."""
MAX_GROWN_SKIN = 4.0
"""... as long as no grown skin exceeds this many times the largest a build gives (``max_skin`` / 2)."""


def _places(total, at):
    """Where a merge (``_merged``) puts its entries in a result of ``total``: the new ones at the ascending positions
    ``at``, the old ones in the rest (a mask (total,))."""
    rest = np.ones(total, bool)
    rest[at] = False
    return at, rest


def _merged(old, places, new):
    """``old`` (k,) with ``new`` (g,) put at ``places`` (``_places`` of k + g): np.insert's result."""
    at, rest = places
    out = np.empty(len(rest), old.dtype)
    out[at] = new
    out[rest] = old
    return out


class SelfBroadPhase:
    """The Verlet-list part of ``self_contact.SelfCollision`` (its state is set up there)."""

    body = None
    """Per-particle body ids (n,) int when the surface is shared by several bodies (``body_contact.BodyContact``), or
    None: one body, every pair kept."""
    native_pairs = None
    """``solvers.native.self_kernels.SelfPairQuery`` of the body when the native library loaded (``_query`` and
    ``_grow``'s queries then run in C; with ``body``, ``_kept_between`` drops the pairs the filter does not keep),
    else None."""
    native_check = None
    """``solvers.native.self_kernels.SelfCallKernels`` of the body when the native library loaded (``_boxes`` and the
    filter of ``_candidates`` then run in C, bit for bit), else None."""
    native_select = None
    """``solvers.native.self_kernels.SelfSelect`` of the body when the native library loaded (``_candidates`` then runs
    as one C call, bit for bit), else None."""
    self_bodies = None
    """With ``body``: per body (b,) bool, whether pairs within that body are kept (its own self-collision is on);
    pairs of two different bodies always are."""

    def _between(self, a, b):
        """Mask (k,) of the pairs whose first elements hold particles a (k,) and second ones b (k,) that are kept:
        of two bodies, or within a body whose self-collision is on."""
        ba, bb = self.body[a], self.body[b]
        return (ba != bb) | self.self_bodies[ba]

    def _admissible_vt(self, v, t):
        """Mask (k,) of the vertex-triangle pairs (v, t) that may be listed: the vertex not a corner of the triangle,
        the pair kept by ``_between``, not rest-close (``excluded_vt``)."""
        tri = self.triangles
        keep = (tri[t, 0] != v) & (tri[t, 1] != v) & (tri[t, 2] != v)
        if self.body is not None:
            keep &= self._between(v, tri[t, 0])
        kept = np.flatnonzero(keep)  # the exclusion search on the pairs left only (it is the costly test)
        keep[kept] = _drop(self.excluded_vt, v[kept], t[kept], len(tri))
        return keep

    def _kept_between(self, vt, ee):
        """The native query's pairs vt = (v, t, d) and ee = (e1, e2, d) without those ``_between`` does not keep (with
        ``body``; the C query knows no bodies and lists every body's own pairs too): the pairs the NumPy query keeps,
        in the same order."""
        if self.body is None:
            return vt, ee
        (v, t, d_vt), (e1, e2, d_ee) = vt, ee
        keep_vt = self._between(v, self.triangles[t, 0])
        keep_ee = self._between(self.edges[e1, 0], self.edges[e2, 0])
        return (v[keep_vt], t[keep_vt], d_vt[keep_vt]), (e1[keep_ee], e2[keep_ee], d_ee[keep_ee])

    def _admissible_ee(self, e1, e2):
        """Mask (k,) of the edge-edge pairs (e1, e2) that may be listed: no shared vertex, kept by ``_between``, not
        rest-close (``excluded_ee``)."""
        A, B = self.edges[e1], self.edges[e2]
        keep = (A[:, 0] != B[:, 0]) & (A[:, 0] != B[:, 1]) & (A[:, 1] != B[:, 0]) & (A[:, 1] != B[:, 1])
        if self.body is not None:
            keep &= self._between(A[:, 0], B[:, 0])
        kept = np.flatnonzero(keep)
        keep[kept] = _drop(self.excluded_ee, e1[kept], e2[kept], len(self.edges))
        return keep

    def _spheres(self, x):
        """Bounding spheres of the triangles (centroid, radius) and of the edges (midpoint, half length) at x."""
        centroid, radius = _bounding_spheres(x, self.triangles)
        p, q = x[self.edges[:, 0]], x[self.edges[:, 1]]
        mid = 0.5 * (p + q)
        half = 0.5 * np.sqrt(np.einsum("ij,ij->i", q - p, q - p))
        return centroid, radius, mid, half

    def _query(self, x, reach: float, skins=None):
        """Vertex-triangle pairs (v, t, distance) and edge-edge pairs (e1, e2, distance), e1 < e2, whose exact
        distance at x is <= ``reach`` [m] (plus, with ``skins`` = per-element spare distances (vertices (n,),
        triangles (t,), edges (e,)) [m], the two elements' skins), without pairs that share a vertex and without
        rest-close pairs.

        k-d tree joins on bounding spheres (vertices with triangle centroids, edge midpoints with each other), each
        element's sphere grown by its skin, then the exact distances of what they find: the joins' spheres are loose (a
        flat sheet's own neighbours overlap them), the exact test keeps the lists short."""
        tri = self.triangles
        if skins is None:
            skins = (np.zeros(len(x)), np.zeros(len(tri)), np.zeros(len(self.edges)))
        s_v, s_t, s_e = skins
        if self.native_pairs is not None:
            # The native twin (solvers/native/src/self_collision.c): the same pair sets from a hash grid of boxes.
            # Both builds at once (their prepare steps overlap on several threads).
            native = self.native_pairs
            if len(self.edges) < 2:
                vt = native.vertex_triangle(x, reach, s_v, s_t, self.excluded_vt)
                return self._kept_between(vt, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)))
            return self._kept_between(*native.pairs(x, reach, s_v, s_t, self.excluded_vt, s_e, self.excluded_ee))
        centroid, radius, mid, half = self._spheres(x)
        # Large elements (stretched, or a mesh of mixed sizes, or fast ones with a large skin) would widen every query
        # to their size: elements are joined in classes of size, each pair of classes within its own largest sizes.
        grown = radius + s_t
        t, v = _join_points(centroid, grown, x, s_v, reach)
        keep = self._admissible_vt(v, t)
        v, t = v[keep], t[keep]
        # The joins' spheres are loose around a sheet's own neighbours; boxes (one axis at a time) drop a part of
        # those before the exact distances (on the 64 x 64 lab cloth as it folds, about 40% of the edge pairs).
        lo_t, hi_t, lo_e, hi_e = self._boxes(x)
        points = np.ascontiguousarray(x.T)
        keep = _overlapping(points, points, v, lo_t, hi_t, t, reach + s_v[v] + s_t[t])
        v, t = v[keep], t[keep]
        d_vt = _vt_distance(x, v, tri[t])
        keep = d_vt <= reach + s_v[v] + s_t[t]
        vt = (v[keep], t[keep], d_vt[keep])
        if len(self.edges) < 2:
            return vt, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        grown = half + s_e
        e1, e2 = _self_join(mid, grown, reach)
        keep = self._admissible_ee(e1, e2)
        e1, e2 = e1[keep], e2[keep]
        keep = _overlapping(lo_e, hi_e, e1, lo_e, hi_e, e2, reach + s_e[e1] + s_e[e2])
        e1, e2 = e1[keep], e2[keep]
        d_ee = _ee_distance(x, self.edges[e1], self.edges[e2])
        keep = d_ee <= reach + s_e[e1] + s_e[e2]
        return vt, (e1[keep], e2[keep], d_ee[keep])

    def _boxes(self, x, hi=None):
        """Axis-aligned boxes per axis of the triangles (lo, hi (3, t)) and of the edges (lo, hi (3, e)): at x (n, 3),
        or, with ``hi``, over particle boxes from lo = x to hi, both (3, n)."""
        lo = np.ascontiguousarray(x.T) if hi is None else x
        if self.native_check is not None:
            return self.native_check.boxes(lo, hi)
        hi = lo if hi is None else hi
        tri, edges = self.triangles, self.edges
        lo_t = np.minimum(np.minimum(lo[:, tri[:, 0]], lo[:, tri[:, 1]]), lo[:, tri[:, 2]])
        hi_t = np.maximum(np.maximum(hi[:, tri[:, 0]], hi[:, tri[:, 1]]), hi[:, tri[:, 2]])
        lo_e = np.minimum(lo[:, edges[:, 0]], lo[:, edges[:, 1]])
        hi_e = np.maximum(hi[:, edges[:, 0]], hi[:, edges[:, 1]])
        return lo_t, hi_t, lo_e, hi_e

    def _build(self, x, skin):
        """Run the broad phase at x with per-particle skins ``skin`` (n,) [m] to spare: the Verlet list (see
        ``_candidates``). An element's skin is the largest of its particles'."""
        skins = (skin, _row_max(skin, self.triangles), _row_max(skin, self.edges) if len(self.edges) else np.zeros(0))
        (v, t, dv), (e1, e2, de) = self._query(x, self.thickness, skins)
        # The list is kept sorted by pair key (_add_grown merges in that order): the pairs ``_candidates`` keeps, in
        # list order, are then in the one order its response needs. The native query's pairs come in that order (and
        # stay so when ``_kept_between`` drops some); the k-d tree joins' are sorted here.
        key_vt, key_ee = _pair_keys(v, t, len(self.triangles)), _pair_keys(e1, e2, len(self.edges))
        if self.native_pairs is None:
            order_vt, order_ee = np.argsort(key_vt, kind="stable"), np.argsort(key_ee, kind="stable")
            v, t, dv, key_vt = v[order_vt], t[order_vt], dv[order_vt], key_vt[order_vt]
            e1, e2, de, key_ee = e1[order_ee], e2[order_ee], de[order_ee], key_ee[order_ee]
        # The pair keys sorted ("keys"), for the membership tests of the skin growths (``_grow``).
        self._list = dict(vt=(v, t), ee=(e1, e2), dist=np.concatenate([dv, de]), x=x.copy(), skins=skins,
                          keys=(key_vt, key_ee))
        self.rebuilds += 1

    def _refresh(self, x, moved, motion):
        """Make the list hold at x again (it does not: ``_list_holds``): grow the skins of the few elements that outran
        theirs (``_grow``), or rebuild it. Returns the particles' motion since the list's build (n,) [m]."""
        if self._grow(moved, motion):
            return moved
        self._build(x, self._skin_for(motion))
        return np.zeros(len(x))

    def _grow(self, moved, motion) -> bool:
        """Give the elements whose skin ran out (moved + motion beyond it) a new skin, moved + motion + the skin a
        build would give them, and add their pairs within the new reach at the build's positions to the list; False
        (nothing changed) when more than GROW_LIMIT of the elements ran out or a skin would exceed MAX_GROWN_SKIN.

        The list's invariant is that of a build at those positions with these skins (``_candidates``): a pair not in
        it was more than thickness + s_A + s_B apart there. Growing s_A keeps it when every pair of A within the new
        reach is listed, which the query here does at the same positions. Measured on the 64 x 64 lab cloth as it
        folds: about half of the rebuilds were asked for by one to three particles (a flapping border), the others by
        a thousand or more."""
        s_v, s_t, s_e = self._list["skins"]
        tri, edges = self.triangles, self.edges
        # Each element's largest moved plus its largest motion: what the native select just computed for its hold
        # test when these are its motions (self_kernels.SelfSelect.needs, the same bits), else computed here.
        select = self.native_select
        need = select.needs() if select is not None and moved is select.moved and motion is select.motion else None
        if need is None:
            need = [moved + motion, _row_max(moved, tri) + _row_max(motion, tri),
                    _row_max(moved, edges) + _row_max(motion, edges) if len(edges) else np.zeros(0)]
        out = [np.nonzero(n > s)[0] for n, s in zip(need, (s_v, s_t, s_e))]
        if sum(len(o) for o in out) > GROW_LIMIT * (len(s_v) + len(s_t) + len(s_e)):
            return False
        # The skin a build would give: per particle, then the largest over each element that ran out (elementwise,
        # so only those elements' rows are read).
        fresh = self._skin_for(motion)
        vo, to, eo = out
        grow = [fresh[vo], _row_max(fresh, tri[to]), _row_max(fresh, edges[eo]) if len(edges) else np.zeros(0)]
        new = [s.copy() for s in (s_v, s_t, s_e)]
        for skin, o, n, g in zip(new, out, need, grow):
            skin[o] = n[o] + g
            if len(o) and skin[o].max() > MAX_GROWN_SKIN * 0.5 * self.max_skin:
                return False
        s_v2, s_t2, s_e2 = new
        x0 = self._list["x"]
        if self.native_pairs is not None:
            # The native twin (src/self_collision.c): the same pair sets from the hash grid of the lists' build.
            # Both kinds at once (side by side on several threads).
            native, keys = self.native_pairs, self._list["keys"]
            vt, ee = native.grow(x0, self.thickness, new, self.excluded_vt, self.excluded_ee, keys[0], keys[1], vo, to,
                                 eo)
            self._add_grown(x0, *self._kept_between(vt, ee), new)
            return True
        # The spheres and k-d trees at the build's positions serve every growth until the next build.
        cache = self._list.setdefault("cache", {})
        if "spheres" not in cache:
            cache["spheres"] = self._spheres(x0)
        centroid, radius, mid, half = cache["spheres"]

        def tree(name, points):
            if name not in cache:
                cache[name] = _tree(points)
            return cache[name]

        thick = self.thickness
        # Vertex-triangle pairs of a grown vertex or a grown triangle, edge-edge pairs of a grown edge, from k-d
        # trees at the build's positions (each query within the largest reach its element can have).
        pairs_v, pairs_t = [], []
        if len(vo):
            rows = tree("centroids", centroid).query_ball_point(x0[vo], thick + s_v2[vo] + float((radius + s_t2).max()) + 1e-12)
            pairs_v.append(np.repeat(vo, [len(r) for r in rows]))
            pairs_t.append(np.concatenate(rows).astype(np.int64) if len(rows) else np.zeros(0, np.int64))
        if len(to):
            rows = tree("vertices", x0).query_ball_point(centroid[to], thick + radius[to] + s_t2[to] + float(s_v2.max()) + 1e-12)
            pairs_t.append(np.repeat(to, [len(r) for r in rows]))
            pairs_v.append(np.concatenate(rows).astype(np.int64) if len(rows) else np.zeros(0, np.int64))
        v = np.concatenate(pairs_v) if pairs_v else np.zeros(0, np.int64)
        t = np.concatenate(pairs_t) if pairs_t else np.zeros(0, np.int64)
        keep = self._admissible_vt(v, t)
        v, t = _unique_pairs(v[keep], t[keep], len(tri))
        d_vt = _vt_distance(x0, v, tri[t])
        # New: within the grown reach, beyond the old one (the old pairs are listed already).
        keep = (d_vt <= thick + s_v2[v] + s_t2[t]) & _drop(self._list["keys"][0], v, t, len(tri))
        v, t, d_vt = v[keep], t[keep], d_vt[keep]
        e1 = e2 = np.zeros(0, np.int64)
        d_ee = np.zeros(0)
        if len(eo):
            rows = tree("midpoints", mid).query_ball_point(mid[eo], thick + half[eo] + s_e2[eo] + float((half + s_e2).max()) + 1e-12)
            a = np.repeat(eo, [len(r) for r in rows])
            b = np.concatenate(rows).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
            e1, e2 = np.minimum(a, b), np.maximum(a, b)
            keep = self._admissible_ee(e1, e2)
            e1, e2 = _unique_pairs(e1[keep], e2[keep], len(edges))
            d_ee = _ee_distance(x0, edges[e1], edges[e2])
            keep = (d_ee <= thick + s_e2[e1] + s_e2[e2]) & _drop(self._list["keys"][1], e1, e2, len(edges))
            e1, e2, d_ee = e1[keep], e2[keep], d_ee[keep]
        self._add_grown(x0, (v, t, d_vt), (e1, e2, d_ee), new)
        return True

    def _add_grown(self, x0, vt, ee, skins):
        """Add the pairs a skin growth found, vt = (v, t, d) and ee = (e1, e2, d) each sorted by key and none listed
        yet, to the list, whose skins become ``skins`` (vertices, triangles, edges)."""
        (v, t, d_vt), (e1, e2, d_ee) = vt, ee
        tri, edges = self.triangles, self.edges
        lst = self._list
        (v0, t0), (a0, b0) = lst["vt"], lst["ee"]
        # The new pairs are sorted by key and none is listed yet: merged into the list (sorted by key, ``_build``) and
        # its sorted keys in place of a sort. Each merge puts the new entries at their places and the old ones in the
        # rest, in order (np.insert's result, one mask per part for every array).
        new_vt, new_ee = _pair_keys(v, t, len(tri)), _pair_keys(e1, e2, len(edges))
        at_vt = np.searchsorted(lst["keys"][0], new_vt) + np.arange(len(v))
        at_ee = np.searchsorted(lst["keys"][1], new_ee) + np.arange(len(e1))
        at_all = _places(len(lst["dist"]) + len(v) + len(e1), np.concatenate([at_vt, len(v0) + len(v) + at_ee]))
        at_vt, at_ee = _places(len(v0) + len(v), at_vt), _places(len(a0) + len(e1), at_ee)
        lst["vt"] = (_merged(v0, at_vt, v), _merged(t0, at_vt, t))
        lst["ee"] = (_merged(a0, at_ee, e1), _merged(b0, at_ee, e2))
        lst["dist"] = _merged(lst["dist"], at_all, np.concatenate([d_vt, d_ee]))
        lst["skins"] = tuple(skins)
        lst["keys"] = (_merged(lst["keys"][0], at_vt, new_vt), _merged(lst["keys"][1], at_ee, new_ee))
        self.grown += 1

    def _skin_for(self, motion):
        """Per-particle skins (n,) [m] of a list built for a step with these motions relative to the mean (n,) [m]:
        half of SKIN_MOTION steps of the particle's own motion, at least half the smallest skin, at most half the
        largest (but always 1.25 steps, so the list holds for the step it is built for). Halves: a pair is listed
        within thickness + the skins of both its elements, so two slow elements list their pairs within thickness +
        ``self.skin``."""
        return 0.5 * np.maximum(np.maximum(self.skin, np.minimum(SKIN_MOTION * motion, self.max_skin)), 2.5 * motion)

    def _list_holds(self, moved, motion):
        """Whether the list still holds every pair that can be within reach: for every element (vertex, triangle,
        edge), the most its particles moved since the build plus the most they moved in this step, relative to the
        mean, is within its skin (``_candidates`` says why)."""
        if self.native_check is not None:
            return self.native_check.list_holds(moved, motion, self._list["skins"])
        s_v, s_t, s_e = self._list["skins"]
        if np.any(moved + motion > s_v):
            return False
        for elements, skin in ((self.triangles, s_t), (self.edges, s_e)):
            if len(elements) and np.any(_row_max(moved, elements) + _row_max(motion, elements) > skin):
                return False
        return True

    def _moved(self, x):
        """Per-particle distance (n,) moved since the list's build, relative to the mean motion."""
        moved = x - self._list["x"]
        moved -= moved.mean(axis=0)
        return np.sqrt(np.einsum("ij,ij->i", moved, moved))

    def _element_values(self, per_particle):
        """The largest ``per_particle`` (n,) value over each element, numbered as the list's pairs number them
        (vertices, then triangles, then edges), (n + t + e,)."""
        return np.concatenate([per_particle, _row_max(per_particle, self.triangles),
                               _row_max(per_particle, self.edges) if len(self.edges) else np.zeros(0)])

    def _pair_elements(self):
        """Each listed pair's two elements, numbered vertices, then triangles, then edges (as ``_element_values``
        numbers them): (first, second), each (k,). Made from the list's pairs when asked (only the NumPy selection
        and fail-safe read them; the native ones take the pairs themselves)."""
        (v, t), (e1, e2) = self._list["vt"], self._list["ee"]
        n, m = len(self._list["x"]), len(self.triangles)
        return np.concatenate([v, n + m + e1]), np.concatenate([n + t, n + m + e2])

    def _pair_bound(self, per_particle):
        """Per listed pair: the largest ``per_particle`` value over each of its two elements, summed (k,)."""
        per_element = self._element_values(per_particle)
        first, second = self._pair_elements()
        return per_element[first] + per_element[second]

    def _candidates(self, x, x_prev):
        """Pairs that may be within thickness of each other at ``x``, or went through each other since x_prev:
        ((v, t), (e1, e2), reach (k,) per pair).

        Verlet lists (as in molecular dynamics), with a skin per element: the broad phase keeps the pairs within
        thickness + the two elements' skins (exact distance), and its lists are reused while every element's
        particles have moved, relative to their mean motion, by less than its skin allows. A pair (A, B) not in a list
        was more than thickness + s_A + s_B apart at the build; since then each point of A moved at most D_A relative
        to the common mean (D_A: the most any particle of A moved), so the pair is more than
        thickness + (s_A - D_A) + (s_B - D_B) apart now, which is at least thickness + m_A + m_B, the pair's reach,
        while D_E + m_E <= s_E for every element E (m_E: the largest motion over E's particles in this step, relative
        to the mean). A pair's own reach is thickness + m_A + m_B (m_A + m_B the most the pair can have gone through
        each other in the step). Skins follow each particle's own motion (SKIN_MOTION steps of it): a fast corner
        gets a large skin without widening every other element's, and the slow rest of the cloth does not force
        a rebuild while the fast part still fits its skin; when a few elements do outrun theirs, their skins grow
        instead (``_grow``). Listed pairs are kept when their distance at the build, less what their two elements moved
        since, is within reach and their boxes at x are within reach of each other; those get the exact test.

        The pairs come sorted by key (vertex-triangle ones, then edge-edge ones): the list is kept in that order, so
        the Jacobi sums of the response depend on the pairs alone, not on when or how the lists were built. With the
        native library all of it but the list's refresh is one C call (``self_kernels.SelfSelect``, bit for bit).
        """
        native = self.native_select
        if native is not None and self._list is not None:
            got = native.select(x, x_prev, self._list, self.thickness)
            if got is None:  # the list does not hold: refreshed here, then the pairs of the new list
                moved = self._refresh(x, native.moved, native.motion)
                if moved is not native.moved:
                    native.moved[:] = moved
                got = native.select(x, x_prev, self._list, self.thickness, motion_given=True)
            return got
        step = x - x_prev
        step -= step.mean(axis=0)
        motion = np.sqrt(np.einsum("ij,ij->i", step, step))
        if self._list is not None:
            moved = self._moved(x)
        if self._list is None:
            self._build(x, self._skin_for(motion))
            moved = np.zeros(len(x))
        elif not self._list_holds(moved, motion):
            moved = self._refresh(x, moved, motion)
        k = len(self._list["vt"][0])
        (v, t), (e1, e2) = self._list["vt"], self._list["ee"]
        if native is not None:
            native.motion[:], native.moved[:] = motion, moved
            return native.select(x, x_prev, self._list, self.thickness, motion_given=True)
        if self.native_check is not None:
            # The same filter in C (src/self_response.c): the same positions and reaches, bit for bit.
            kept, kept_reach = self.native_check.list_check(x, motion, moved, self._list["vt"], self._list["ee"],
                                                            self._list["dist"], self.thickness)
            split = int(np.searchsorted(kept, k))
            a, b = kept[:split], kept[split:] - k
            reach_a, reach_b = kept_reach[:split], kept_reach[split:]
        else:
            a, b, reach_a, reach_b = self._near_pairs(x, motion, moved)
        # Ascending positions in the list, which is sorted by key: the candidates sorted by key.
        return (v[a], t[a]), (e1[b], e2[b]), np.concatenate([reach_a, reach_b])

    def _near_pairs(self, x, motion, moved):
        """The listed pairs that may be within reach at x: positions a (vertex-triangle) and b (edge-edge) in the
        list, ascending, and their reaches reach_a, reach_b [m] (``_candidates``; motion, moved (n,) [m])."""
        # Near: within reach less what the two elements moved since the build (one gather per element of the pair
        # for both bounds; the reach itself only for the near pairs).
        first, second = self._pair_elements()
        e_motion = self._element_values(motion)
        e_both = e_motion + self._element_values(moved)
        near = np.nonzero(self._list["dist"] - self.thickness <= e_both[first] + e_both[second])[0]
        reach = np.empty(len(first))
        reach[near] = self.thickness + (e_motion[first[near]] + e_motion[second[near]])
        k = len(self._list["vt"][0])
        (v, t), (e1, e2) = self._list["vt"], self._list["ee"]
        a, b = near[near < k], near[near >= k] - k
        # A pair within reach has its two elements' boxes at x, grown by reach, overlapping: a cheap necessary test
        # that leaves the exact test (the response's stencils) a fraction of the pairs (on the 64 x 64 lab cloth as it
        # folds, 67k listed pairs near -> 15k whose boxes overlap -> 5k within reach).
        lo_t, hi_t, lo_e, hi_e = self._boxes(x)
        points = np.ascontiguousarray(x.T)
        a = a[_overlapping(points, points, v[a], lo_t, hi_t, t[a], reach[a])]
        b = b[_overlapping(lo_e, hi_e, e1[b], lo_e, hi_e, e2[b], reach[k + b])]
        return a, b, reach[a], reach[k + b]

    # ------------------------------------------------------------------ response
