"""Python binding of cloth self-collision's native broad phase (``src/self_collision.c``).

``SelfPairQuery`` <-> ``collision.broad_phase.self_broad_phase.SelfBroadPhase._query``: the vertex-triangle pairs (v, t,
distance) and edge-edge pairs (e1 < e2, distance) within reach + the two elements' skins, without pairs sharing a vertex
and without the rest-close pairs. The pair sets are the twin's (compared as sets in
tests/test_native_self_collision.py), sorted here by pair key (v * t + t, e1 * e + e2); the distances repeat the twin's
arithmetic.

Built once per ``SelfCollision``: the triangles and edges are checked (int64, C-contiguous, indices within [0, n)),
kept and their addresses cached; the grid and pair buffers are owned here and grown when a call says it needs more
(the C side returns the count it needs instead of allocating). Per call, x (n, 3), the skins and the exclusion keys
are checked (dtype, contiguity, shape; exclusion keys sorted and within range).
"""
import numpy as np

from .kernels import F64, I64, _PositionsCheck, checked, checked_indices
from .library import pointer


def _power_of_two_at_least(value: int) -> int:
    return 1 << max(4, int(value - 1).bit_length())


class SelfPairQuery:
    """The native ``SelfBroadPhase._query`` of one body's triangles (t, 3) and edges (e, 2) over n particles."""

    def __init__(self, library, triangles, edges, particle_count: int):
        self.library = library
        self.n = int(particle_count)
        self.triangles = checked_indices("triangles", triangles, self.n, (None, 3))
        self.edges = checked_indices("edges", edges, self.n, (None, 2))
        self._x = _PositionsCheck(self.n)
        elements = max(len(self.triangles), len(self.edges), 1)
        self.table_size = _power_of_two_at_least(2 * elements)
        self.table = np.zeros(self.table_size + 1, np.int64)
        self._entries(8 * elements)
        self._pairs(4 * elements)
        self.needs = np.zeros(1, np.int64)
        self.boxes = np.zeros((elements, 10))

    def _entries(self, capacity: int) -> None:
        self.entry_element = np.zeros(capacity, np.int64)
        self.entry_cell = np.zeros((capacity, 3), np.int64)

    def _pairs(self, capacity: int) -> None:
        self.out_i = np.zeros(capacity, np.int64)
        self.out_j = np.zeros(capacity, np.int64)
        self.out_d = np.zeros(capacity)

    def _skins(self, name, skin, count) -> int:
        return pointer(checked(name, skin, F64, (count,)))

    @staticmethod
    def _excluded(name, keys, limit) -> np.ndarray:
        keys = checked(name, keys, I64, (None,))
        if len(keys) and (keys[0] < 0 or keys[-1] >= limit or np.any(keys[1:] < keys[:-1])):
            raise ValueError(f"{name}: must be sorted pair keys within [0, {limit})")
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

    def vertex_triangle(self, x, reach: float, skin_v, skin_t, excluded):
        """Pairs (v, t, d) sorted by v * t_count + t: vertex v within reach + skin_v[v] + skin_t[t] of triangle t."""
        tri, t = self.triangles, len(self.triangles)
        excluded = self._excluded("excluded_vt", excluded, self.n * max(t, 1))
        fixed = (self._x(x), self.n, pointer(tri), t)
        v, tt, d = self._call(self.library.softsim_self_vt_pairs, fixed, lambda: (
            self._skins("skin_v", skin_v, self.n), self._skins("skin_t", skin_t, t), float(reach),
            pointer(excluded), len(excluded)))
        order = np.argsort(v * t + tt, kind="stable")
        return v[order], tt[order], d[order]

    def edge_edge(self, x, reach: float, skin_e, excluded):
        """Pairs (e1, e2, d), e1 < e2, sorted by e1 * e_count + e2: within reach + skin_e[e1] + skin_e[e2]."""
        e = len(self.edges)
        excluded = self._excluded("excluded_ee", excluded, max(e, 1) * max(e, 1))
        fixed = (self._x(x), self.n, pointer(self.edges), e)
        a, b, d = self._call(self.library.softsim_self_ee_pairs, fixed, lambda: (
            self._skins("skin_e", skin_e, e), float(reach), pointer(excluded), len(excluded)))
        order = np.argsort(a * e + b, kind="stable")
        return a[order], b[order], d[order]
