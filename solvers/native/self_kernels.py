"""Python bindings of cloth self-collision's native kernels: the broad phase (``src/self_collision.c``,
``SelfPairQuery``: the lists' build and skin growth; tests/test_native_self_collision.py,
tests/test_native_self_grow.py), what every call runs (``src/self_response.c``, ``SelfCallKernels``: boxes, list
checks, stencils, the fail-safe's witnesses; tests/test_native_self_response.py) and the response's passes
(``src/self_pass.c``, ``SelfPass``; tests/test_native_self_pass.py).

``SelfPairQuery.vertex_triangle_grow`` / ``edge_edge_grow`` <-> the k-d tree queries of ``SelfBroadPhase._grow``: the
pairs of the grown elements within their new reach, not listed yet (the same sets, sorted by pair key, the same
distances).

``SelfPairQuery`` <-> ``collision.broad_phase.self_broad_phase.SelfBroadPhase._query``: the vertex-triangle pairs (v, t,
distance) and edge-edge pairs (e1 < e2, distance) within reach + the two elements' skins, without pairs sharing a vertex
and without the rest-close pairs. The pair sets are the twin's (compared as sets in
tests/test_native_self_collision.py), sorted here by pair key (v * t + t, e1 * e + e2); the distances repeat the twin's
arithmetic.

Built once per ``SelfCollision``: the triangles and edges are checked (int64, C-contiguous, indices within [0, n)),
kept and their addresses cached; the grid and pair buffers are owned here and grown when a call says it needs more
(the C side returns the count it needs instead of allocating). Per call, x (n, 3), the skins and the exclusion keys
are checked (dtype, contiguity, shape; exclusion keys sorted and within range).

The Python between those kernels is fused into single calls (``src/self_select.c``; tests/test_native_self_select.py):
``SelfSelect.select`` <-> ``SelfBroadPhase._candidates`` (motions, the hold, the filter), ``SelfSelect.witnesses`` <->
``ImpactZones._new_crossings`` up to its witnesses, ``SelfPass.setup`` <-> ``SelfCollision._watched`` with ``begin``,
``SelfPass.friction`` (``src/self_pass.c``) <-> ``SelfCollision._friction_of`` and ``SelfPass.true_sides``
(``src/self_sides.c``) <-> ``SelfCollision._true_sides``; bit for bit. The witnesses' exact
crossing test: ``SelfCallKernels.new_crossings`` (``src/self_crossings.c``) <-> ``ImpactZones._crossings_in_numpy``, the same
pairs in the same order (tests/test_native_self_crossings.py).

The two builds run on several threads (``threads.run_ranges``; tests/test_native_self_threads.py): one prepare step
(boxes, grid) on the caller's thread, then the queries of interleaved slices of the vertices (edges) at once, each
into its own buffers; the parts' pairs are joined and sorted by pair key, so the output is the same bits for any
thread count. ``SelfPairQuery.pairs`` runs both builds at once (the two prepare steps side by side, then each part
queries its slice of the vertices and of the edges; tests/test_native_self_pairs_overlap.py). The skin growths
(``*_grow``) stay on one thread: they touch a few hundred elements.
"""
import numpy as np

from ..collision.broad_phase.self_pairs import _Stencils
from .kernels import F64, I64, _PositionsCheck, checked, checked_indices
from .library import pointer
from .threads import BLOCK, run_parts, run_ranges, slices, thread_count


def _power_of_two_at_least(value: int) -> int:
    return 1 << max(4, int(value - 1).bit_length())


PARALLEL_MINIMUM = 1024
"""Query elements (vertices, edges) below which a build runs on one thread: handing a part to the pool costs some 50
microseconds, the query of an element 1-3 (2 threads on folded cloths: 930 edges 0.83 -> 0.94 ms, 2162 edges 3.0 ->
2.3 ms)."""
GROW_PARALLEL_MINIMUM = 6000
"""Edges below which a skin growth's two kinds run one after the other on the caller's thread (``grow``): each scans
every element of its kind, so its work follows the body's size, not the few grown elements, and on a small body the
hand-off to the pool and the two calls' Python, which hold the GIL, cost more than the overlap gives. Measured per
growth (2 threads against 1, two runs each): the 31 x 31 box drape with self-collision (2.8k edges, ~25 elements
grown) 343-355 against 239-254 us; the 64 x 64 lab cloth (12k edges, ~40 grown) 797-959 against 972-1027 us."""
RUNS_JOIN_MINIMUM = 12000
"""Pairs from which a threaded build's parts are joined by their runs of blocks rather than by a stable sort
(``SelfPairQuery._in_key_order``; the same order). Measured on the 64 x 64 lab cloth's builds: 840 pairs 82 -> 28 us,
14k 153 -> 130, 33k 192 -> 242, 76k 262 -> 536 (runs -> sort)."""
PARALLEL_BLOCK = BLOCK
"""Query elements per block of a thread's interleaved slice (``threads.slices``)."""


def _count_argument(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name}: must be an integer >= {least}, got {value!r}")
    return int(value)


def _checked_pairs(what: str, vt, ee, n: int, triangle_count: int, edge_count: int):
    """The vertex-triangle pairs vt = (v, t) and edge-edge pairs ee = (e1, e2) of a body with n particles and these
    many triangles and edges, checked (int64, contiguous, matching lengths, indices in range): (v, t, e1, e2);
    ValueError naming the array, or ``what`` when the body has no elements of a kind that has pairs."""
    v = checked_indices("v", vt[0], n, (None,))
    t = checked_indices("t", vt[1], max(triangle_count, 1), (len(v),))
    a = checked_indices("e1", ee[0], max(edge_count, 1), (None,))
    b = checked_indices("e2", ee[1], max(edge_count, 1), (len(a),))
    if (len(v) and not triangle_count) or (len(a) and not edge_count):
        raise ValueError(f"{what}: pairs of elements the body does not have")
    return v, t, a, b


class _BodyBinding:
    """What every binding of one body's self-collision kernels keeps: the library, n, the body's triangles (t, 3) and
    edges (e, 2) checked once (int64, C-contiguous, indices within [0, n)), and the checks of x and x_prev (n, 3)."""

    def __init__(self, library, triangles, edges, particle_count: int):
        self.library = library
        self.n = int(particle_count)
        self.triangles = checked_indices("triangles", triangles, self.n, (None, 3))
        self.edges = checked_indices("edges", edges, self.n, (None, 2))
        self._x = _PositionsCheck(self.n)
        self._x_prev = _PositionsCheck(self.n)


class SelfPairQuery(_BodyBinding):
    """The native ``SelfBroadPhase._query`` of one body's triangles (t, 3) and edges (e, 2) over n particles.

    ``threads``: how many threads a build uses (None: ``threads.thread_count()`` at each call, so SOFTSIM_THREADS
    applies); ``block``: elements per block of a thread's interleaved slice (None: PARALLEL_BLOCK); ``minimum``: query
    elements below which a build runs on the caller's thread alone (None: PARALLEL_MINIMUM). The output does not
    depend on them."""

    def __init__(self, library, triangles, edges, particle_count: int, threads=None, block=None, minimum=None):
        self.threads = None if threads is None else _count_argument("threads", threads, 1)
        self.block = _count_argument("block", PARALLEL_BLOCK if block is None else block, 1)
        self.minimum = _count_argument("minimum", PARALLEL_MINIMUM if minimum is None else minimum, 0)
        super().__init__(library, triangles, edges, particle_count)
        elements = max(len(self.triangles), len(self.edges), 1)
        self.table_size = _power_of_two_at_least(2 * elements)
        self.table = np.zeros(self.table_size + 1, np.int64)
        self._entries(8 * elements)
        self._pairs(4 * elements)
        self.needs = np.zeros(1, np.int64)
        self.boxes = np.zeros((elements, 13))
        self.scale = np.zeros(4)  # the grid's scale, as the prepare step leaves it for the queries
        self._part_out = []  # the output buffers (i, j, d) of parts 1, 2, ... (part 0's: out_i, out_j, out_d)
        self.edge_side = None  # ``pairs``' buffers of the edge-edge build (a SelfPairQuery of the same body)
        self._checked_keys = {}  # ``_excluded``'s: name -> (the array last checked, its limit)

    def _entries(self, capacity: int) -> None:
        self.entry_element = np.zeros(capacity, np.int64)
        self.entry_cell = np.zeros(capacity, np.int64)  # the key per entry: cell and first-cell axes (src/self_collision.c)

    def _pairs(self, capacity: int) -> None:
        self.out_i = np.zeros(capacity, np.int64)
        self.out_j = np.zeros(capacity, np.int64)
        self.out_d = np.zeros(capacity)

    def _skins(self, name, skin, count) -> int:
        return pointer(checked(name, skin, F64, (count,)))

    def _excluded(self, name, keys, limit) -> np.ndarray:
        """``keys`` checked as sorted pair keys within [0, limit) (int64, contiguous); the array last checked under
        ``name`` is not checked again (the excluded pairs are one array for the body's life, a list's keys one per
        list)."""
        known = self._checked_keys.get(name)
        if known is not None and known[0] is keys and known[1] == limit:
            return keys
        keys = checked(name, keys, I64, (None,))
        if len(keys) and (keys[0] < 0 or keys[-1] >= limit or np.any(keys[1:] < keys[:-1])):
            raise ValueError(f"{name}: must be sorted pair keys within [0, {limit})")
        self._checked_keys[name] = (keys, limit)  # held here: the array stays this one while it is kept
        return keys

    def _call(self, function, fixed, skins_and_rest):
        """Run a pair kernel, growing the grid and pair buffers until they hold its output; (i, j, d) copies."""
        while True:
            count = function(*fixed, *skins_and_rest(), self.table_size, pointer(self.table), len(self.entry_element),
                             pointer(self.entry_element), pointer(self.entry_cell), len(self.out_i),
                             pointer(self.out_i), pointer(self.out_j), pointer(self.out_d), pointer(self.needs),
                             pointer(self.boxes))
            if count < 0:
                self._entries(int(self.needs[0] * 1.5) + 16)
                continue
            if count > len(self.out_i):
                self._pairs(int(count * 1.5) + 16)
                continue
            return self.out_i[:count].copy(), self.out_j[:count].copy(), self.out_d[:count].copy()

    def _outputs(self, part: int):
        return (self.out_i, self.out_j, self.out_d) if part == 0 else self._part_out[part - 1]

    def _grow_outputs(self, part: int, capacity: int) -> None:
        if part == 0:
            self._pairs(capacity)
        else:
            self._part_out[part - 1] = (np.zeros(capacity, np.int64), np.zeros(capacity, np.int64), np.zeros(capacity))

    def _prepare(self, prepare, prepare_args):
        """A build's prepare step (boxes, grid) into this object's buffers, growing the grid until it fits; the
        arguments its queries share after their own (``query_args``)."""
        while True:
            entries = prepare(*prepare_args, self.table_size, pointer(self.table), len(self.entry_element),
                              pointer(self.entry_element), pointer(self.entry_cell), pointer(self.needs),
                              pointer(self.boxes), pointer(self.scale))
            if entries >= 0:
                return (self.table_size, pointer(self.table), pointer(self.entry_element), pointer(self.entry_cell),
                        pointer(self.boxes), pointer(self.scale))
            self._entries(int(self.needs[0] * 1.5) + 16)

    def _part_buffers(self, parts: int) -> None:
        """Output buffers for parts 1 .. parts - 1 (part 0 writes out_i, out_j, out_d)."""
        while len(self._part_out) < parts - 1:
            capacity = max(len(self.out_i) // parts, 16)
            self._part_out.append((np.zeros(capacity, np.int64), np.zeros(capacity, np.int64), np.zeros(capacity)))

    def _query_part(self, query, query_args, shared, part, first, last, block, stride) -> int:
        """One part's query (the slice first, last, block, stride of ``threads.slices``) into that part's buffers,
        grown and run again until its pairs fit; their count. Runs on a pool thread (the C call releases the GIL);
        writes only this part's buffers."""
        while True:
            i, j, d = self._outputs(part)
            found = query(*query_args, *shared, first, last, block, stride, len(i), pointer(i), pointer(j),
                          pointer(d))
            if found <= len(i):
                return found
            self._grow_outputs(part, int(found * 1.5) + 16)

    def _in_key_order(self, ranges, counts):
        """(i, j, d) of the parts that ran the slices ``ranges`` (``threads.slices``) and found ``counts`` pairs,
        sorted by pair key (i, then j; copies). A part lists its pairs by query element i ascending, each element's by
        j ascending (src/self_collision.c), and the parts' blocks of elements interleave: the blocks' runs of pairs,
        put in the order of their first elements, are the pairs sorted by key, with no sort (below RUNS_JOIN_MINIMUM
        pairs a stable sort by i is sooner)."""
        outputs = [self._outputs(part) for part in range(len(counts))]
        if sum(counts) < RUNS_JOIN_MINIMUM:
            # Few pairs: a stable sort by i of the parts' outputs one after the other gives the same order (each
            # element's pairs come from one part, already by j) sooner than the Python loop over the runs.
            joined = [np.concatenate([out[k][:count] for out, count in zip(outputs, counts)]) for k in range(3)]
            order = np.argsort(joined[0], kind="stable")
            return tuple(a[order] for a in joined)
        runs = []  # (the block's first element, part, its pairs' start and stop in the part's output)
        for part, ((first, last, _, stride), count) in enumerate(zip(ranges, counts)):
            starts = np.arange(first, last, stride)
            bounds = np.searchsorted(outputs[part][0][:count], starts).tolist() + [count]
            runs += [(s, part, a, b) for s, a, b in zip(starts.tolist(), bounds[:-1], bounds[1:]) if b > a]
        runs.sort()
        if not runs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return tuple(np.concatenate([outputs[part][k][a:b] for _, part, a, b in runs]) for k in range(3))

    def _slices(self, count: int, parts: int):
        """The slices of ``count`` query elements that ``run_ranges`` gives ``parts`` parts with this object's block and
        minimum (``threads.slices``)."""
        return slices(count, parts if count >= self.minimum else 1, self.block)

    def _build(self, prepare, query, prepare_args, query_args, count: int):
        """A build on several threads: ``prepare`` once (growing the grid until it fits), then ``query`` over slices
        of the ``count`` query elements, each part into its own buffers (grown and run again until its pairs fit);
        (i, j, d) of every part, sorted by key (``_in_key_order``)."""
        shared = self._prepare(prepare, prepare_args)
        parts = self.threads if self.threads is not None else thread_count()
        self._part_buffers(parts)
        ranges = self._slices(count, parts)

        def run_part(part, first, last, block, stride):
            return self._query_part(query, query_args, shared, part, first, last, block, stride)

        return self._in_key_order(ranges, run_ranges(run_part, count, parts, self.block, self.minimum))

    def _vt_arguments(self, x, reach, skin_v, skin_t, excluded):
        tri, t = self.triangles, len(self.triangles)
        excluded = self._excluded("excluded_vt", excluded, self.n * max(t, 1))
        head = (self._x(x), self.n, pointer(tri), t, self._skins("skin_v", skin_v, self.n),
                self._skins("skin_t", skin_t, t), float(reach))
        return head, (*head, pointer(excluded), len(excluded)), self.n if t else 0, excluded

    def _ee_arguments(self, x, reach, skin_e, excluded):
        e = len(self.edges)
        excluded = self._excluded("excluded_ee", excluded, max(e, 1) * max(e, 1))
        head = (self._x(x), self.n, pointer(self.edges), e, self._skins("skin_e", skin_e, e), float(reach))
        return head, (*head, pointer(excluded), len(excluded)), e if e >= 2 else 0, excluded

    def pairs(self, x, reach: float, skin_v, skin_t, excluded_vt, skin_e, excluded_ee):
        """``vertex_triangle`` and ``edge_edge`` at once: ((v, t, d), (e1, e2, d)), the same bits.

        On several threads the two builds overlap: the edge-edge prepare step runs on a pool thread while the caller
        runs the vertex-triangle one (each into its own grid: the edge-edge side keeps a second set of buffers,
        ``edge_side``), then every part queries its slice of the vertices and then its slice of the edges (the same
        interleaved slices as the separate builds), so one hand-off to the pool serves both builds and neither
        prepare step waits for the other. On one thread (or below ``minimum`` query elements) it is the two builds
        one after the other."""
        head_vt, args_vt, count_vt, excluded_vt = self._vt_arguments(x, reach, skin_v, skin_t, excluded_vt)
        head_ee, args_ee, count_ee, excluded_ee = self._ee_arguments(x, reach, skin_e, excluded_ee)
        parts = self.threads if self.threads is not None else thread_count()
        ranges_vt, ranges_ee = self._slices(count_vt, parts), self._slices(count_ee, parts)
        if max(len(ranges_vt), len(ranges_ee)) == 1:
            return self.vertex_triangle(x, reach, skin_v, skin_t, excluded_vt), self.edge_edge(x, reach, skin_e,
                                                                                                 excluded_ee)
        side = self._edge_side()
        library = self.library
        shared_vt, shared_ee = run_parts([lambda: self._prepare(library.softsim_self_vt_prepare, head_vt),
                                          lambda: side._prepare(library.softsim_self_ee_prepare, head_ee)])
        self._part_buffers(len(ranges_vt))
        side._part_buffers(len(ranges_ee))

        def run_part(part):
            found_vt = found_ee = 0
            if part < len(ranges_vt):
                found_vt = self._query_part(library.softsim_self_vt_query, args_vt, shared_vt, part,
                                            *ranges_vt[part])
            if part < len(ranges_ee):
                found_ee = side._query_part(library.softsim_self_ee_query, args_ee, shared_ee, part,
                                            *ranges_ee[part])
            return found_vt, found_ee

        # run_ranges over the kind with more parts hands out the part numbers (its slices are the ones above).
        most = (count_ee, ranges_ee) if len(ranges_ee) >= len(ranges_vt) else (count_vt, ranges_vt)
        counts = run_ranges(lambda part, *_: run_part(part), most[0], parts, self.block, self.minimum)
        return (self._in_key_order(ranges_vt, [c[0] for c in counts[:len(ranges_vt)]]),
                side._in_key_order(ranges_ee, [c[1] for c in counts[:len(ranges_ee)]]))

    def vertex_triangle(self, x, reach: float, skin_v, skin_t, excluded):
        """Pairs (v, t, d) sorted by v * t_count + t: vertex v within reach + skin_v[v] + skin_t[t] of triangle t."""
        head, args, count, _ = self._vt_arguments(x, reach, skin_v, skin_t, excluded)
        return self._build(self.library.softsim_self_vt_prepare, self.library.softsim_self_vt_query, head, args, count)

    def edge_edge(self, x, reach: float, skin_e, excluded):
        """Pairs (e1, e2, d), e1 < e2, sorted by e1 * e_count + e2: within reach + skin_e[e1] + skin_e[e2]."""
        head, args, count, _ = self._ee_arguments(x, reach, skin_e, excluded)
        return self._build(self.library.softsim_self_ee_prepare, self.library.softsim_self_ee_query, head, args, count)

    def vertex_triangle_grow(self, x, reach: float, skin_v, skin_t, excluded, listed, grown_v, grown_t):
        """The pairs a skin growth adds (``SelfBroadPhase._grow``): (v, t, d) sorted by v * t_count + t, every
        vertex-triangle pair of a grown vertex (grown_v, indices) or a grown triangle (grown_t) within reach +
        skin_v[v] + skin_t[t] at x (n, 3) [m], admissible and not in the sorted keys ``listed``."""
        tri, t = self.triangles, len(self.triangles)
        excluded = self._excluded("excluded_vt", excluded, self.n * max(t, 1))
        listed = self._excluded("listed_vt", listed, self.n * max(t, 1))
        grown_v = checked_indices("grown_v", grown_v, self.n, (None,))
        grown_t = checked_indices("grown_t", grown_t, max(t, 1), (None,))
        mask = np.zeros(self.n, np.uint8)
        mask[grown_v] = 1
        fixed = (self._x(x), self.n, pointer(tri), t)
        v, tt, d = self._call(self.library.softsim_self_vt_grow, fixed, lambda: (
            self._skins("skin_v", skin_v, self.n), self._skins("skin_t", skin_t, t), float(reach),
            pointer(excluded), len(excluded), pointer(listed), len(listed), pointer(grown_v), len(grown_v),
            pointer(mask), pointer(grown_t), len(grown_t)))
        order = np.argsort(v * t + tt, kind="stable")
        return v[order], tt[order], d[order]

    def grow(self, x, reach: float, skins, excluded_vt, excluded_ee, listed_vt, listed_ee, grown_v, grown_t, grown_e):
        """``vertex_triangle_grow`` and ``edge_edge_grow`` of one skin growth at once: ((v, t, d), (e1, e2, d)), the same
        bits (skins: (skin_v (n,), skin_t (t,), skin_e (e,)) [m]; no edge-edge call without grown edges). On several
        threads and from GROW_PARALLEL_MINIMUM edges the two run side by side, the edge-edge one on a pool thread into
        the buffers of ``edge_side`` (the second set ``pairs`` keeps)."""
        skin_v, skin_t, skin_e = skins
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))

        def vertex_triangle():
            return self.vertex_triangle_grow(x, reach, skin_v, skin_t, excluded_vt, listed_vt, grown_v, grown_t)

        if len(grown_e) == 0:
            return vertex_triangle(), empty
        parts = self.threads if self.threads is not None else thread_count()
        if parts < 2 or len(self.edges) < max(2, GROW_PARALLEL_MINIMUM):
            return vertex_triangle(), self.edge_edge_grow(x, reach, skin_e, excluded_ee, listed_ee, grown_e)
        side = self._edge_side()
        return tuple(run_parts([vertex_triangle, lambda: side.edge_edge_grow(x, reach, skin_e, excluded_ee, listed_ee,
                                                                              grown_e)]))

    def _edge_side(self):
        """The second set of buffers (a SelfPairQuery of the same body on one thread) for the edge-edge side of
        ``pairs`` and ``grow``."""
        if self.edge_side is None:
            self.edge_side = SelfPairQuery(self.library, self.triangles, self.edges, self.n, threads=1,
                                           block=self.block, minimum=self.minimum)
        return self.edge_side

    def edge_edge_grow(self, x, reach: float, skin_e, excluded, listed, grown_e):
        """The edge-edge pairs a skin growth adds: (e1, e2, d), e1 < e2, sorted by e1 * e_count + e2, every pair with a
        grown edge (grown_e, indices) within reach + skin_e[e1] + skin_e[e2] at x (n, 3) [m], admissible and not in
        the sorted keys ``listed``."""
        e = len(self.edges)
        excluded = self._excluded("excluded_ee", excluded, max(e, 1) * max(e, 1))
        listed = self._excluded("listed_ee", listed, max(e, 1) * max(e, 1))
        grown_e = checked_indices("grown_e", grown_e, max(e, 1), (None,))
        mask = np.zeros(max(e, 1), np.uint8)
        mask[grown_e] = 1
        fixed = (self._x(x), self.n, pointer(self.edges), e)
        a, b, d = self._call(self.library.softsim_self_ee_grow, fixed, lambda: (
            self._skins("skin_e", skin_e, e), float(reach), pointer(excluded), len(excluded), pointer(listed),
            len(listed), pointer(grown_e), len(grown_e), pointer(mask)))
        order = np.argsort(a * e + b, kind="stable")
        return a[order], b[order], d[order]


class SelfCallKernels(_BodyBinding):
    """The native kernels one body's self-collision runs on every call (``src/self_response.c``): ``boxes`` <->
    ``SelfBroadPhase._boxes``, ``list_check`` <-> the filter of ``SelfBroadPhase._candidates`` (near bound, reach,
    box test), both bit for bit (they only compare, take minima and maxima, and add in the twin's order);
    ``list_holds`` <-> ``SelfBroadPhase._list_holds`` (comparisons of the same sums); ``stencils`` <->
    ``self_pairs._Stencils`` and ``witnesses`` <-> ``ImpactZones._witnesses`` (the same operations in the same order:
    bit for bit on x86-64).

    Built once per ``SelfCollision``: the triangles (t, 3) and edges (e, 2) are checked (int64, C-contiguous, indices
    within [0, n)). A list's arrays are checked when they change (a build or a skin growth makes new ones: indices in
    range, lengths consistent); per call only the positions and per-particle values are.
    """

    def __init__(self, library, triangles, edges, particle_count: int):
        super().__init__(library, triangles, edges, particle_count)
        self._bound = None
        self._pos = np.zeros(0, np.int64)
        self._reach = np.zeros(0)
        # The per-element maxima of list_check and witnesses (two values per triangle and edge).
        self._counts = (len(self.triangles), len(self.edges))
        self._scratch = np.zeros(2 * (len(self.triangles) + len(self.edges)))
        self._adjacency_p = None  # the fail-safe's adjacency (``bind_adjacency``)

    def boxes(self, lo, hi=None):
        """Boxes per axis of the triangles (lo_t, hi_t (3, t)) and edges (lo_e, hi_e (3, e)) over particle boxes from
        lo to hi (both (3, n) [m]; hi None: boxes at the points lo)."""
        lo = checked("lo", lo, F64, (3, self.n))
        hi = lo if hi is None else checked("hi", hi, F64, (3, self.n))
        t, e = len(self.triangles), len(self.edges)
        lo_t, hi_t, lo_e, hi_e = np.empty((3, t)), np.empty((3, t)), np.empty((3, e)), np.empty((3, e))
        self.library.softsim_self_boxes(pointer(lo), pointer(hi), self.n, pointer(self.triangles), t,
                                        pointer(self.edges), e, pointer(lo_t), pointer(hi_t), pointer(lo_e),
                                        pointer(hi_e))
        return lo_t, hi_t, lo_e, hi_e

    def _bind_list(self, vt, ee, dist):
        """Check a list's arrays once (the same arrays are not checked again) and cache their addresses."""
        key = (vt[0], vt[1], ee[0], ee[1], dist)
        if self._bound is not None and all(a is b for a, b in zip(key, self._bound[0])):
            return self._bound[1]
        v = checked_indices("list vt[0]", vt[0], self.n, (None,))
        k = len(v)
        t = checked_indices("list vt[1]", vt[1], max(len(self.triangles), 1) if k else 1, (k,))
        a = checked_indices("list ee[0]", ee[0], max(len(self.edges), 1), (None,))
        m = len(a)
        b = checked_indices("list ee[1]", ee[1], max(len(self.edges), 1), (m,))
        if (k and not len(self.triangles)) or (m and not len(self.edges)):
            raise ValueError("list: pairs of elements the body does not have")
        checked("list dist", dist, F64, (k + m,))
        if len(self._pos) < k + m:
            self._pos, self._reach = np.zeros(k + m, np.int64), np.zeros(k + m)
        args = (k, pointer(v), pointer(t), m, pointer(a), pointer(b), pointer(dist))
        self._bound = (key, args)
        return args

    def list_check(self, x, motion, moved, vt, ee, dist, thickness: float):
        """Positions (c,) in the list (vertex-triangle pairs first, then edge-edge ones) of the pairs that may be within
        reach at x (n, 3) [m], ascending, and their reaches (c,) [m]: ``SelfBroadPhase._candidates``' filter.

        motion, moved (n,) [m]: each particle's motion in the step and since the build (relative to the mean);
        vt = (v, t), ee = (e1, e2), dist (k + m,): the list's pairs and their distances at the build."""
        list_args = self._bind_list(vt, ee, dist)
        motion = checked("motion", motion, F64, (self.n,))
        moved = checked("moved", moved, F64, (self.n,))
        count = self.library.softsim_self_list_check(
            self._x(x), self.n, pointer(motion), pointer(moved), pointer(self.triangles), pointer(self.edges),
            *list_args, float(thickness), pointer(self._pos), pointer(self._reach), *self._counts,
            pointer(self._scratch))
        return self._pos[:count].copy(), self._reach[:count].copy()

    def stencils(self, x, vt, ee):
        """The contact stencils of the vertex-triangle pairs vt = (v, t) and edge-edge pairs ee = (e1, e2) at x (n, 3)
        [m], in that order: a ``self_pairs._Stencils`` (idx, coef (k, 4), r, n (k, 3), dist, plane (k,), ok,
        interior (k,) bool)."""
        v, t, a, b = _checked_pairs("stencils", vt, ee, self.n, len(self.triangles), len(self.edges))
        k_vt, k_ee = len(v), len(a)
        k = k_vt + k_ee
        out = _Stencils.__new__(_Stencils)
        out.idx, out.coef = np.empty((k, 4), np.int64), np.empty((k, 4))
        out.r, out.n = np.empty((k, 3)), np.empty((k, 3))
        out.dist, out.plane = np.empty(k), np.empty(k)
        out.ok, out.interior = np.empty(k, bool), np.empty(k, bool)
        self.library.softsim_self_stencils(
            self._x(x), pointer(self.triangles), pointer(self.edges), k_vt, pointer(v), pointer(t), k_ee, pointer(a),
            pointer(b), pointer(out.idx), pointer(out.coef), pointer(out.r), pointer(out.n), pointer(out.dist),
            pointer(out.plane), pointer(out.ok), pointer(out.interior))
        return out

    def witnesses(self, x, x_start, lo, hi, motion, bound, vt, ee, dist, slack: float):
        """Positions (c,) in the list (vertex-triangle pairs first, then edge-edge ones), ascending, of the fail-safe's
        witnesses (``ImpactZones._witnesses``): x, x_start (n, 3) [m] the step's ends, lo, hi (3, n) [m] the particles'
        boxes over the step, motion (n,) [m] their motion in it and bound (n,) [m] that plus their motion since the
        build (relative to the mean); vt = (v, t), ee = (e1, e2), dist (k + m,): the list; slack [m]: round-off room."""
        list_args = self._bind_list(vt, ee, dist)
        x_start = checked("x_start", x_start, F64, (self.n, 3))
        lo = checked("lo", lo, F64, (3, self.n))
        hi = checked("hi", hi, F64, (3, self.n))
        motion = checked("motion", motion, F64, (self.n,))
        bound = checked("bound", bound, F64, (self.n,))
        count = self.library.softsim_self_witnesses(
            self._x(x), pointer(x_start), self.n, pointer(lo), pointer(hi), pointer(motion), pointer(bound),
            pointer(self.triangles), pointer(self.edges), *list_args, float(slack), pointer(self._pos), *self._counts,
            pointer(self._scratch))
        return self._pos[:count].copy()

    def bind_adjacency(self, vertex_edge_start, vertex_edges, edge_triangle_start, edge_triangles) -> None:
        """Check and keep the fail-safe's adjacency (``SelfCollision``'s CSR index of each vertex's edges and each
        edge's triangles) for ``new_crossings``: rows from 0, non-decreasing, ending at their entries' count, entries
        in range."""
        n, t, e = self.n, len(self.triangles), len(self.edges)
        arrays = []
        for name, start, entries, rows, limit in (("vertex_edge", vertex_edge_start, vertex_edges, n, e),
                                                  ("edge_triangle", edge_triangle_start, edge_triangles, e, t)):
            start = checked(f"{name}_start", start, I64, (rows + 1,))
            entries = checked_indices(f"{name}s", entries, max(limit, 1), (None,))
            if start[0] != 0 or start[-1] != len(entries) or np.any(start[1:] < start[:-1]):
                raise ValueError(f"{name}_start: must run from 0 to {len(entries)}, non-decreasing")
            arrays += [start, entries]
        self._adjacency = arrays
        self._adjacency_p = tuple(pointer(a) for a in arrays)
        self._crossings = np.zeros((2, 64), np.int64)

    def new_crossings(self, x, x_start, v, t, e1, e2) -> np.ndarray:
        """``ImpactZones._crossings_in_numpy`` (``src/self_crossings.c``): the (edge, triangle) pairs (c, 2) crossing at x
        that did not at x_start (both (n, 3) [m]) which the witnesses v, t (vertex-triangle) and e1, e2 (edge-edge)
        can show, in the twin's order (``bind_adjacency`` first)."""
        if self._adjacency_p is None:
            raise ValueError("new_crossings: bind_adjacency first")
        x_start = checked("x_start", x_start, F64, (self.n, 3))
        v, t, a, b = _checked_pairs("witnesses", (v, t), (e1, e2), self.n, len(self.triangles), len(self.edges))
        while True:
            out = self._crossings
            count = int(self.library.softsim_self_new_crossings(
                self._x(x), pointer(x_start), pointer(self.triangles), pointer(self.edges), *self._adjacency_p,
                len(v), pointer(v), pointer(t), len(a), pointer(a), pointer(b), out.shape[1], pointer(out[0]),
                pointer(out[1])))
            if count <= out.shape[1]:
                return np.ascontiguousarray(out[:, :count].T)
            self._crossings = np.zeros((2, int(count * 1.5) + 16), np.int64)

    def list_holds(self, moved, motion, skins) -> bool:
        """``SelfBroadPhase._list_holds``: whether every element's largest moved + largest motion (n,) [m] is within its
        skin (skins = vertices (n,), triangles (t,), edges (e,) [m])."""
        moved = checked("moved", moved, F64, (self.n,))
        motion = checked("motion", motion, F64, (self.n,))
        s_v = checked("skin_v", skins[0], F64, (self.n,))
        s_t = checked("skin_t", skins[1], F64, (len(self.triangles),))
        s_e = checked("skin_e", skins[2], F64, (len(self.edges),))
        return bool(self.library.softsim_self_list_holds(
            pointer(moved), pointer(motion), self.n, pointer(self.triangles), len(self.triangles),
            pointer(self.edges), len(self.edges), pointer(s_v), pointer(s_t), pointer(s_e)))


class SelfPass(_BodyBinding):
    """The native pass of self-collision's response (``src/self_pass.c``), twin of the pass loop of
    ``self_contact.SelfCollision._respond``, bit for bit on x86-64 (tests/test_native_self_pass.py).

    Built once per ``SelfCollision``: the triangles (t, 3) and edges (e, 2) are checked (int64, C-contiguous, indices
    within [0, n)). ``begin`` takes one call's watched pairs and their per-pair values (checked once a call) and sizes
    the buffers; then per pass ``run`` (the batch, its stencils, the active pairs' correction applied to x; returns how
    many are active, ``touched`` the particles it moved) and, after the caller's collider check, ``finish`` (the
    recovery share applied to x_prev, the friction depths, the pairs left in play). ``depth`` (c,) [m] and ``ever``
    (c,) bool are the call's friction depths and corrected pairs, in the order of the pairs given to ``begin``.
    """

    def __init__(self, library, triangles, edges, particle_count: int):
        super().__init__(library, triangles, edges, particle_count)
        n = self.n
        self.changed = np.zeros(n, bool)
        self.touched_mask = np.zeros(n, bool)
        self.load = np.zeros(n)
        self.last = np.zeros(n, np.int64)
        self.delta = np.zeros((n, 3))
        self.batch_size = np.zeros(1, np.int64)
        self.kept_count = np.zeros(1, np.int64)
        self._inv_mass, self._inv_mass_p = None, 0
        self.counts = (self.n, len(self.triangles), len(self.edges))
        self._elements_p = (pointer(self.triangles), pointer(self.edges))
        self._masks_own_p = (pointer(self.changed), pointer(self.touched_mask))
        self._moved = np.zeros(n, np.uint8)  # true_sides' scratch: zero between calls
        self._sides_scratch_p = pointer(self._moved)
        self._true_start = _PositionsCheck(n)
        self._capacity = -1
        self._grow(16)

    def _grow(self, count: int) -> None:
        if count <= self._capacity:
            return
        c = max(count, 2 * self._capacity)
        self._capacity = c
        self.pos, self.batch = np.zeros(c, np.int64), np.zeros(2 * c, np.int64)
        self.idx, self.coef = np.zeros((c, 4), np.int64), np.zeros((c, 4))
        self.r, self.normal = np.zeros((c, 3)), np.zeros((c, 3))
        self.dist, self.plane = np.zeros(c), np.zeros(c)
        self.ok, self.interior = np.zeros(c, bool), np.zeros(c, bool)
        self.work_d, self.flags = np.zeros((c, 6)), np.zeros(c, np.uint8)
        self.recovery = np.zeros(c)
        self.pick = np.zeros(c, np.int64)  # true_sides' scratch
        self._pick_p = pointer(self.pick)
        # setup's outputs: the kept pairs (vertex-triangle, edge-edge), their per-pair values and results.
        self.kept_v, self.kept_t = np.zeros(c, np.int64), np.zeros(c, np.int64)
        self.kept_a, self.kept_b = np.zeros(c, np.int64), np.zeros(c, np.int64)
        self.side_buffer, self.target_buffer, self.approach_buffer = np.zeros(c), np.zeros(c), np.zeros(c)
        self.depth_buffer, self.ever_buffer = np.zeros(c), np.zeros(c, bool)
        self._setup_p = tuple(pointer(a) for a in (
            self.kept_v, self.kept_t, self.kept_a, self.kept_b, self.kept_count, self.idx, self.coef, self.r,
            self.normal, self.dist, self.plane, self.ok, self.interior, self.side_buffer, self.target_buffer,
            self.approach_buffer, self.depth_buffer, self.ever_buffer))
        # The kept pairs' addresses as the pass reads them (views of these buffers start at the same address).
        kept_v, kept_t, kept_a, kept_b = self._setup_p[:4]
        self._kept_p = (kept_v, kept_t, kept_a, kept_b, self._setup_p[13], self._setup_p[14])
        self._finish_own_p = (self._setup_p[15],)
        self._results_own_p = (pointer(self.work_d), pointer(self.flags), self._setup_p[16], self._setup_p[17])
        self._recovery_p = (pointer(self.recovery), pointer(self.delta))
        self._own = [pointer(a) for a in (self.idx, self.coef, self.r, self.normal, self.dist, self.plane, self.ok,
                                          self.interior)]
        self._scratch = [pointer(a) for a in (self.work_d, self.flags, self.load, self.delta, self.batch_size)]
        # the Gauss-Seidel sweep's colours and the stencils it measures colour by colour (src/self_pass.c)
        self.colour, self.order, self.start = np.zeros(c, np.int64), np.zeros(c, np.int64), np.zeros(c + 1, np.int64)
        self.t_pos, self.t_idx, self.t_coef = np.zeros(c, np.int64), np.zeros((c, 4), np.int64), np.zeros((c, 4))
        self.t_r, self.t_normal, self.t_dist, self.t_plane = np.zeros((c, 3)), np.zeros((c, 3)), np.zeros(c), np.zeros(c)
        self.t_ok, self.t_interior = np.zeros(c, bool), np.zeros(c, bool)
        self._sweep = [pointer(a) for a in (self.work_d, self.flags, self.colour, self.order, self.start, self.last,
                                            self.t_pos, self.t_idx, self.t_coef, self.t_r, self.t_normal, self.t_dist,
                                            self.t_plane, self.t_ok, self.t_interior, self.batch_size)]
        self._pos_p, self._batch_p = pointer(self.pos), pointer(self.batch)

    def begin(self, vt, ee, side, target, approach_target, first, inv_mass) -> None:
        """One call's watched pairs vt = (v, t), ee = (e1, e2) (c in all) with their side, target and approach_target
        (c,) [m] (``_respond``), the first pass's stencils ``first`` (a ``self_pairs._Stencils`` of those pairs, in that
        order) and the particles' inverse masses (n,) [1/kg] (the call's array: the collider check may change it in
        place between passes)."""
        v = checked_indices("v", vt[0], self.n, (None,))
        k_vt = len(v)
        t = checked_indices("t", vt[1], max(len(self.triangles), 1), (k_vt,))
        a = checked_indices("e1", ee[0], max(len(self.edges), 1), (None,))
        b = checked_indices("e2", ee[1], max(len(self.edges), 1), (len(a),))
        if (k_vt and not len(self.triangles)) or (len(a) and not len(self.edges)):
            raise ValueError("pass: pairs of elements the body does not have")
        c = k_vt + len(a)
        self.side = checked("side", side, F64, (c,))
        self.target = checked("target", target, F64, (c,))
        self.approach_target = checked("approach_target", approach_target, F64, (c,))
        self.inv_mass = checked("inv_mass", inv_mass, F64, (self.n,))
        self.first = (checked_indices("first.idx", first.idx, self.n, (c, 4)), checked("first.coef", first.coef, F64, (c, 4)),
                      checked("first.r", first.r, F64, (c, 3)), checked("first.n", first.n, F64, (c, 3)),
                      checked("first.dist", first.dist, F64, (c,)), checked("first.plane", first.plane, F64, (c,)),
                      checked("first.ok", first.ok, np.dtype(bool), (c,)),
                      checked("first.interior", first.interior, np.dtype(bool), (c,)))
        self._grow(c)
        self.count, self.k_vt, self.pairs = c, k_vt, (v, t, a, b)
        self.depth = np.zeros(c)
        self.ever = np.zeros(c, bool)
        self.given = True
        self.m = 0
        # copied into the pass's own buffers: its sweep writes each moved pair's stencil where it measured it
        for own, given in zip((self.idx, self.coef, self.r, self.normal, self.dist, self.plane, self.ok, self.interior),
                              self.first):
            own[:c] = given
        self._call_p = (pointer(self.inv_mass), self.n, pointer(self.triangles), pointer(self.edges), c, k_vt,
                        pointer(v), pointer(t), pointer(a), pointer(b), pointer(self.side), pointer(self.target))
        self._masks_p = (pointer(self.changed), pointer(self.touched_mask))
        self._finish_p = (pointer(self.inv_mass), self.n, pointer(self.approach_target))
        self._results_p = (pointer(self.work_d), pointer(self.flags), pointer(self.depth), pointer(self.ever))

    def setup(self, x, x_prev, vt, ee, reach, inv_mass, thickness: float, recovery: float, selected=None) -> int:
        """``begin`` with the preamble of ``SelfCollision._respond`` in one call (``softsim_self_pass_setup``, bit for
        bit): of the candidates vt = (v, t), ee = (e1, e2) with their reaches (k,) [m] (``_candidates``), keep those
        within reach at x (n, 3) [m] with a particle that moves (inv_mass (n,) [1/kg] > 0; the call's array, as in
        ``begin``), their stencils at x the first pass's; side, approach_target and target from their stencils at
        x_prev (n, 3) [m] (recovery = RECOVERY * thickness [m]). Returns the kept count c; ``pairs`` ((v, t, e1, e2)),
        ``side``, ``target``, ``approach_target`` (c,) are views of buffers owned here. ``selected``: a ``SelfSelect``
        of these triangles and edges; when the candidates are the ones its last ``select`` returned, its own buffers
        are read (written by C from a checked list, they need no checks)."""
        if selected is not None and selected.last is not None and reach is selected.last[2] \
                and vt is selected.last[0] and ee is selected.last[1] and selected.counts == self.counts:
            candidates = selected.last_arguments
        else:
            candidates = self._checked_candidates(vt, ee, reach)
        if inv_mass is not self._inv_mass:  # the call's array (resolve_beside_colliders makes one per call)
            self._inv_mass = checked("inv_mass", inv_mass, F64, (self.n,))
            self._inv_mass_p = pointer(inv_mass)
        self._grow(candidates[0] + candidates[3])
        c = int(self.library.softsim_self_pass_setup(
            self._x(x), self._x_prev(x_prev), self._inv_mass_p, self._elements_p[0], self._elements_p[1], *candidates,
            float(thickness), float(recovery), *self._setup_p))
        return self._set_up(c, inv_mass)

    def _checked_candidates(self, vt, ee, reach):
        v, t, a, b = _checked_pairs("pass", vt, ee, self.n, len(self.triangles), len(self.edges))
        k_vt, k_ee = len(v), len(a)
        reach = checked("reach", reach, F64, (k_vt + k_ee,))
        return k_vt, pointer(v), pointer(t), k_ee, pointer(a), pointer(b), pointer(reach)

    def _set_up(self, c: int, inv_mass) -> int:
        kept = int(self.kept_count[0])
        v, t, a, b = self.kept_v[:kept], self.kept_t[:kept], self.kept_a[:c - kept], self.kept_b[:c - kept]
        self.inv_mass = inv_mass
        self.side, self.target = self.side_buffer[:c], self.target_buffer[:c]
        self.approach_target = self.approach_buffer[:c]
        self.depth, self.ever = self.depth_buffer[:c], self.ever_buffer[:c]
        self.count, self.k_vt, self.pairs = c, kept, (v, t, a, b)
        self.given = True
        self.m = 0
        self._call_p = (self._inv_mass_p, self.n, *self._elements_p, c, kept, *self._kept_p)
        self._masks_p = self._masks_own_p
        self._finish_p = (self._inv_mass_p, self.n, *self._finish_own_p)
        self._results_p = self._results_own_p
        return c

    def true_sides(self, x_prev, true_start, target_value: float) -> int:
        """``SelfCollision._true_sides`` on this call's pairs (``begin``'s or ``setup``'s, ``src/self_sides.c``, bit for
        bit): their ``side``, ``approach_target`` and ``target`` read where the step really started, true_start (n, 3)
        [m], for a start x_prev (n, 3) [m] that pre-stabilization moved; ``target_value`` [m] the target of a pair that
        takes its true side. Returns how many did."""
        # The pairs', sides' and targets' addresses as ``run`` and ``finish`` take them.
        v_p, t_p, a_p, b_p, side_p, target_p = self._call_p[6:12]
        return int(self.library.softsim_self_true_sides(
            self._x_prev(x_prev), self._true_start(true_start), self.n, *self._elements_p, self.k_vt, v_p, t_p,
            self.count - self.k_vt, a_p, b_p, float(target_value), self._sides_scratch_p, self._pick_p, side_p,
            self._finish_p[2], target_p))

    def run(self, x, thickness: float, tolerance: float, relaxation: float, restrict_violating: bool) -> int:
        """The first half of one pass on x (n, 3) [m], in place (its Gauss-Seidel sweep over colours of the active
        pairs, each moved by ``relaxation`` of its shortfall): returns the pairs moved (0: nothing moved)."""
        address = self._x(x)
        given = 1 if self.given else 0
        self.given = False
        active = self.library.softsim_self_pass(
            address, *self._call_p, float(thickness), float(tolerance), float(relaxation),
            int(bool(restrict_violating)), given, *self._masks_p, self._pos_p,
            self._batch_p, *self._own, *self._sweep)
        self.m = int(self.batch_size[0])
        return int(active)

    def friction(self, x, x_prev, friction: float) -> int:
        """The friction step of ``SelfCollision._respond`` after the passes (``SelfCollision._friction`` on the pairs
        ever corrected, with their friction depths ``depth``), applied to x (n, 3) [m] in place; x_prev (n, 3) [m] the
        step's start, friction >= 0. Returns how many pairs it ran on; ``touched`` then gives the particles it moved
        (for the caller's collider check)."""
        return int(self.library.softsim_self_pass_friction(
            self._x(x), self._x_prev(x_prev), *self._call_p[:11], self._results_p[2], self._results_p[3],
            float(friction), self._masks_p[1], self._pos_p, self._batch_p, *self._own, *self._scratch[:4]))

    def touched(self) -> np.ndarray:
        """The particles (sorted) with a nonzero weight in the last ``run``'s active stencils (``self_contact._particles``)."""
        return np.flatnonzero(self.touched_mask)

    def finish(self, x_prev) -> None:
        """The second half of the pass: the recovery share applied to x_prev (n, 3) [m] in place, with the inverse
        masses as they are now; the depths and corrected pairs."""
        work_d, flags, depth, ever = self._results_p
        self.library.softsim_self_pass_finish(self._x_prev(x_prev), *self._finish_p, self._pos_p, self.m, self._own[0],
                                              self._own[1], work_d, flags, depth, ever, *self._recovery_p)


class SelfSelect(_BodyBinding):
    """The candidate selection of ``SelfBroadPhase._candidates`` in one call (``src/self_select.c``): the step's motion
    and the motion since the list's build relative to the mean (``_moved``), whether the list holds (``_list_holds``)
    and the near filter and box test (``_near_pairs``), bit for bit; the list is kept sorted by pair key
    (``SelfBroadPhase._build``, ``_add_grown``), so the kept pairs come out in the order of the twin's key sort.

    Built once per ``SelfCollision``: the triangles (t, 3) and edges (e, 2) are checked (int64, C-contiguous, indices
    within [0, n)). A Verlet list's arrays (pairs, distances, build positions, skins) are checked once, when the list
    changes (``_bind``); per call only x and x_prev are (dtype, contiguity, shape). ``motion`` and ``moved`` (n,) [m]
    and the outputs are buffers owned here, valid until the next call.
    """

    MOTION, PAIRS = 1, 2
    """The ``what`` bits of softsim_self_select (src/softsim_native.h)."""

    def __init__(self, library, triangles, edges, particle_count: int):
        super().__init__(library, triangles, edges, particle_count)
        t, e = len(self.triangles), len(self.edges)
        self.motion, self.moved = np.zeros(self.n), np.zeros(self.n)
        self.lo, self.hi, self.bound = np.zeros((3, self.n)), np.zeros((3, self.n)), np.zeros(self.n)
        self._scratch = np.zeros(2 * (t + e))
        self._split = np.zeros(1, np.int64)
        self._needs_valid = False  # whether the scratch holds a select's element needs (``needs``)
        self._bound = None
        self._capacity = -1
        self.last, self.last_arguments = None, None
        self.counts = (self.n, t, e)
        self._fixed = (self.n, pointer(self.triangles), t, pointer(self.edges), e)
        self._buffers = (pointer(self.motion), pointer(self.moved))
        self._outputs(16)

    def _outputs(self, count: int) -> None:
        if count <= self._capacity:
            return
        # Half again as much: a list that grows by a few pairs at each skin growth does not reallocate every time.
        count = max(count, self._capacity + self._capacity // 2)
        self._capacity = count
        self.out_v, self.out_t = np.zeros(count, np.int64), np.zeros(count, np.int64)
        self.out_a, self.out_b = np.zeros(count, np.int64), np.zeros(count, np.int64)
        self.out_reach = np.zeros(count)
        self.out_pos = np.zeros(count, np.int64)
        self._witness_p = tuple(pointer(a) for a in (self.motion, self.moved, self.lo, self.hi, self.bound,
                                                     self.out_pos, self._scratch))
        self._out_p = tuple(pointer(a) for a in (self.out_v, self.out_t, self.out_a, self.out_b, self.out_reach,
                                                 self._split, self._scratch))

    def _bind(self, lst):
        """The addresses of a Verlet list's arrays (``SelfBroadPhase._list``: vt, ee, dist, x, skins), checked the first
        time this list is seen (the same arrays are not checked again)."""
        (v, t), (a, b), skins = lst["vt"], lst["ee"], lst["skins"]
        key = (v, t, a, b, lst["dist"], lst["x"]) + tuple(skins)
        if self._bound is not None and all(p is q for p, q in zip(key, self._bound[0])):
            return self._bound[1]
        nt, ne = len(self.triangles), len(self.edges)
        v = checked_indices("list vt[0]", v, self.n, (None,))
        k = len(v)
        t = checked_indices("list vt[1]", t, max(nt, 1) if k else 1, (k,))
        a = checked_indices("list ee[0]", a, max(ne, 1), (None,))
        m = len(a)
        b = checked_indices("list ee[1]", b, max(ne, 1), (m,))
        if (k and not nt) or (m and not ne):
            raise ValueError("list: pairs of elements the body does not have")
        dist = checked("list dist", lst["dist"], F64, (k + m,))
        x0 = checked("list x", lst["x"], F64, (self.n, 3))
        s_v = checked("skin_v", skins[0], F64, (self.n,))
        s_t = checked("skin_t", skins[1], F64, (nt,))
        s_e = checked("skin_e", skins[2], F64, (ne,))
        self._outputs(k + m)
        args = pointer(x0), (k, pointer(v), pointer(t), m, pointer(a), pointer(b), pointer(dist), pointer(s_v),
                                pointer(s_t), pointer(s_e))
        self._bound = (key, args)
        return args

    def _run(self, x, x_prev, lst, thickness: float, what: int) -> int:
        self.last = self.last_arguments = None  # the buffers are rewritten (or reallocated by _bind)
        self._needs_valid = False
        x0, list_args = self._bind(lst)
        x_prev_p = self._x_prev(x_prev) if what & self.MOTION else 0
        count = int(self.library.softsim_self_select(self._x(x), x_prev_p, x0, *self._fixed, *list_args,
                                                     float(thickness), what, *self._buffers, *self._out_p))
        # softsim_self_select leaves each element's largest motion and that plus its largest moved in the scratch
        # (src/self_select.c), whatever it returns.
        self._needs_valid = True
        return count

    def needs(self):
        """After a ``select``: each element's largest motion since the build (``moved``) plus its largest motion in the
        step (``motion``), (vertices (n,), triangles (t,), edges (e,)) [m], as ``SelfBroadPhase._grow`` computes them
        (``moved + motion`` and the row maxima of both, summed: the same bits, as addition commutes; the element
        ones are views of this object's scratch, valid until its next call). None when the last call was not a
        select (``witnesses`` uses the scratch otherwise)."""
        if not self._needs_valid:
            return None
        t, e = len(self.triangles), len(self.edges)
        return self.moved + self.motion, self._scratch[t:2 * t], self._scratch[2 * t + e:2 * (t + e)]

    def motion_holds(self, x, x_prev, lst) -> bool:
        """Fill ``motion`` (|step - mean step| of the step x_prev -> x, both (n, 3) [m]) and ``moved`` (the same since
        the list's build); whether the list ``lst`` still holds."""
        return self._run(x, x_prev, lst, 0.0, self.MOTION) >= 0

    def select(self, x, x_prev, lst, thickness: float, motion_given: bool = False):
        """The candidates at x of the list ``lst``: ((v, t), (e1, e2), reach) as ``SelfBroadPhase._candidates`` returns
        them, or None when the list does not hold (``motion`` and ``moved`` are then filled; the caller refreshes
        the list and calls again with ``motion_given``, after putting the particles' motion since the new build in
        ``moved``)."""
        count = self._run(x, x_prev, lst, thickness, self.PAIRS if motion_given else self.MOTION | self.PAIRS)
        if count < 0:
            return None
        split = int(self._split[0])
        self.last = ((self.out_v[:split].copy(), self.out_t[:split].copy()),
                     (self.out_a[:count - split].copy(), self.out_b[:count - split].copy()), self.out_reach[:count].copy())
        # The same candidates in the buffers owned here, for SelfPass.setup (written from a checked list: no checks).
        out_v, out_t, out_a, out_b, out_reach = self._out_p[:5]
        self.last_arguments = (split, out_v, out_t, count - split, out_a, out_b, out_reach)
        return self.last

    def witnesses(self, x, x_start, lst, motion_given: bool = False):
        """The fail-safe's witnesses (``ImpactZones._new_crossings``) among the list ``lst`` for the step x_start -> x
        (both (n, 3) [m]): their positions in the list (c,), ascending (vertex-triangle pairs first), or None when the
        list does not hold (``motion`` and ``moved`` are then filled: the caller refreshes the list and calls again
        with ``motion_given``, after putting the particles' motion since the new build in ``moved``). Also fills
        ``lo``, ``hi`` (3, n) [m], the particles' boxes over the step, and ``bound`` = moved + motion (n,) [m]."""
        self.last = self.last_arguments = None  # _bind may reallocate the buffers
        self._needs_valid = False  # the witnesses' scratch is another
        x0, list_args = self._bind(lst)
        count = int(self.library.softsim_self_fail_safe_witnesses(
            self._x(x), self._x_prev(x_start), x0, *self._fixed, *list_args, 0 if motion_given else self.MOTION,
            *self._witness_p))
        return None if count < 0 else self.out_pos[:count].copy()

