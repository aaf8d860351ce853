"""Generalized winding numbers of triangle surfaces: the robust inside test of the tetrahedralizer.

Jacobson, Kavan & Sorkine-Hornung 2013, "Robust Inside-Outside Segmentation using Generalized Winding
Numbers": w = (sum of signed solid angles) / (4 pi), inside = |w| > 0.5, for several parts, any genus and
either orientation. Evaluated with a bounding-volume tree over the triangles and a Taylor-expanded far
field (Barill, Dickson, Schmidt, Levin & Jacobson 2018, "Fast Winding Numbers for Soups and Clouds"); near
triangles are summed exactly with the Van Oosterom & Strackee (1983) solid angle.
"""
import numpy as np

from .measures import _as_mesh

_PAIR_BUDGET = 1_000_000
"""(point, triangle) pairs evaluated at once; each costs ~150 bytes of temporaries."""


def _solid_angles(a, b, c):
    """Signed solid angle [sr] of triangles seen from viewpoints, shape of the broadcast components.

    a, b, c: the corners relative to the viewpoint, each a tuple of x, y, z component arrays (kept apart
    so the products below are plain contiguous ufunc calls). Van Oosterom & Strackee 1983:
    tan(omega / 2) = det[a b c] / (|a||b||c| + (a.b)|c| + (b.c)|a| + (c.a)|b|).
    Positive when the viewpoint is behind the triangle (it sees the triangle clockwise), as an inside
    point sees the faces of an outward-oriented surface. A viewpoint on a vertex gives atan2(0, 0) = 0.
    """
    ax, ay, az = a
    bx, by, bz = b
    cx, cy, cz = c
    la = np.sqrt(ax * ax + ay * ay + az * az)
    lb = np.sqrt(bx * bx + by * by + bz * bz)
    lc = np.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    den = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la
    den += (cx * ax + cy * ay + cz * az) * lb
    return 2.0 * np.arctan2(det, den)


class _TriangleTree:
    """Balanced binary tree over triangles for fast winding numbers (Barill et al. 2018).

    Implicit layout: at level L the 2^L nodes split the (reordered) triangles into contiguous runs with
    boundaries (j * t) // 2^L, so node j's children are nodes 2j, 2j+1 of level L+1. Each level is built
    by sorting every run along its longest axis (median split), all runs at once.

    Far field: for a node with centre p seen from q, the surface integral sum_t int_t n . K(y - q) dA
    with K(r) = r / |r|^3 is Taylor-expanded about r = p - q, with d = y - p:
        N . K(r) + grad K : M + (1/2) grad grad K : C,
        grad K_ij = delta_ij / |r|^3 - 3 r_i r_j / |r|^5,
        grad grad K_kij = -3 (delta_ki r_j + delta_kj r_i + delta_ij r_k) / |r|^5 + 15 r_k r_i r_j / |r|^7,
    where N = sum_t a_t (a_t = area vector), M_ij = sum_t d_i a_j at the triangle centroid (exact, as the
    first moment of a triangle sits at its centroid) and C_kij = sum_t a_k (d_i d_j + S_ij) with S the
    triangle's covariance (1/12) sum_v (v - c_t)(v - c_t)^T. A curved cluster makes the C term as large
    as the M term, so both are needed: together they bring the error below 1e-2 at beta = 2.
    """

    def __init__(self, v, f, leaf_size: int = 16):
        t = len(f)
        self.t = t
        self.depth = int(np.ceil(np.log2(t / leaf_size))) if t > leaf_size else 0
        a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
        centroid = (a + b + c) / 3.0
        perm = np.arange(t)
        for level in range(self.depth):
            bounds = self._bounds(level)
            node = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
            cp = centroid[perm]
            extent = np.maximum.reduceat(cp, bounds[:-1], axis=0) - np.minimum.reduceat(cp, bounds[:-1], axis=0)
            key = cp[np.arange(t), np.argmax(extent, axis=1)[node]]
            perm = perm[np.lexsort((key, node))]
        a, b, c, centroid = a[perm], b[perm], c[perm], centroid[perm]
        # Corners as x, y, z component arrays, the layout _solid_angles wants.
        self.corners = tuple(tuple(np.ascontiguousarray(x.T)) for x in (a, b, c))
        area_vec = 0.5 * np.cross(b - a, c - a)
        area = np.linalg.norm(area_vec, axis=1)
        spread = sum((x - centroid)[:, :, None] * (x - centroid)[:, None, :] for x in (a, b, c)) / 12.0
        # Per level and node: N, centre p (area weighted), radius (farthest corner from p), and the
        # point-independent parts of the expansion: tr M, u = 2 sum_k C_kkj + sum_i C_jii, M, C.
        self.normal, self.centre, self.radius, self.trace, self.u, self.moment, self.moment2 = ([] for _ in range(7))
        for level in range(self.depth + 1):
            bounds = self._bounds(level)
            starts = bounds[:-1]
            node = np.repeat(np.arange(len(starts)), np.diff(bounds))
            total = np.add.reduceat(area, starts)
            weighted = np.add.reduceat(area[:, None] * centroid, starts, axis=0)
            plain = np.add.reduceat(centroid, starts, axis=0) / np.diff(bounds)[:, None]
            ok = total > 0
            p = np.where(ok[:, None], weighted / np.where(ok, total, 1.0)[:, None], plain)
            pn = p[node]
            r2 = np.maximum.reduce([np.sum((x - pn) ** 2, axis=1) for x in (a, b, c)])
            d = centroid - pn
            moment = np.add.reduceat((d[:, :, None] * area_vec[:, None, :]).reshape(-1, 9), starts, axis=0)
            second = area_vec[:, :, None, None] * (d[:, :, None] * d[:, None, :] + spread)[:, None, :, :]
            moment2 = np.add.reduceat(second.reshape(-1, 27), starts, axis=0).reshape(-1, 3, 3, 3)
            self.normal.append(np.add.reduceat(area_vec, starts, axis=0))
            self.centre.append(p)
            self.radius.append(np.sqrt(np.maximum.reduceat(r2, starts)))
            self.trace.append(moment[:, [0, 4, 8]].sum(1))
            self.u.append(2.0 * np.einsum("kiij->kj", moment2) + np.einsum("kjii->kj", moment2))
            self.moment.append(moment)  # (nodes, 9), row-major M_ij
            self.moment2.append(moment2.reshape(-1, 3, 9))  # C_k(ij)

    def _bounds(self, level):
        return (np.arange(2**level + 1, dtype=np.int64) * self.t) // 2**level

    def solid_angle_sum(self, q, beta: float) -> np.ndarray:
        """Total signed solid angle [sr] of the surface seen from each point of q (m, 3), shape (m,).

        A node whose centre is farther than beta * radius from a point uses the far-field expansion
        (class docstring); otherwise its children are visited, and at the leaves its triangles are
        summed exactly. All (point, node) pairs of a level are processed at once.
        """
        m = len(q)
        omega = np.zeros(m)
        pt = np.arange(m)
        node = np.zeros(m, np.int64)
        for level in range(self.depth + 1):
            r = self.centre[level][node] - q[pt]
            dist2 = np.einsum("ij,ij->i", r, r)
            far = dist2 > (beta * self.radius[level][node]) ** 2
            if far.any():
                r, nf, r2 = r[far], node[far], dist2[far]
                rr = (r[:, :, None] * r[:, None, :]).reshape(-1, 9)
                rmr = np.einsum("ij,ij->i", self.moment[level][nf], rr)
                crrr = np.einsum("ij,ij->i", np.einsum("kaj,kj->ka", self.moment2[level][nf], rr), r)
                ur = np.einsum("ij,ij->i", self.u[level][nf], r)
                nr = np.einsum("ij,ij->i", self.normal[level][nf], r)
                inv2 = 1.0 / r2
                inv3 = inv2 / np.sqrt(r2)
                contrib = inv3 * (nr + self.trace[level][nf] - inv2 * (3.0 * rmr + 1.5 * ur - 7.5 * inv2 * crrr))
                omega += np.bincount(pt[far], weights=contrib, minlength=m)
            pt, node = pt[~far], node[~far]
            if level < self.depth:
                pt = np.repeat(pt, 2)
                node = (2 * np.repeat(node, 2)) + np.tile([0, 1], len(node))
        # Leaves left near their points: expand every (point, leaf) pair to its triangles.
        bounds = self._bounds(self.depth)
        start, count = bounds[node], bounds[node + 1] - bounds[node]
        pair_pt = np.repeat(pt, count)
        offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        tri = np.repeat(start, count) + offset
        qx, qy, qz = q.T
        for s in range(0, len(tri), _PAIR_BUDGET):
            p, k = pair_pt[s : s + _PAIR_BUDGET], tri[s : s + _PAIR_BUDGET]
            px, py, pz = qx[p], qy[p], qz[p]
            rel = [(x[k] - px, y[k] - py, z[k] - pz) for x, y, z in self.corners]
            omega += np.bincount(p, weights=_solid_angles(*rel), minlength=m)
        return omega


def winding_number(points, vertices, triangles, beta: float | None = 2.0) -> np.ndarray:
    """Generalized winding number (Jacobson et al. 2013) of a triangle surface at points, shape (m,).

    points (m, 3), vertices (n, 3), triangles (t, 3). w = (sum of signed solid angles) / (4 pi): 1 inside
    an outward-oriented closed surface, 0 outside, -1 inside an inward-oriented one, 0.5 on the surface,
    and a smooth "insideness" for open or self-intersecting surfaces. Use |w| > 0.5 as the inside test.

    beta: far-field threshold of the tree approximation (Barill et al. 2018): groups of triangles farther
    than beta times their radius count as one Taylor expansion (measured error below 1e-2 at beta = 2,
    1e-3 at beta = 3, against the 0.5 margin of the inside test). None sums every (point, triangle) pair
    exactly, in chunks of about 1e6 pairs so memory stays bounded.
    """
    v, f = _as_mesh(vertices, triangles)
    q = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    if beta is None or len(f) <= 64:
        corners = [tuple(v[f[:, k]].T) for k in range(3)]
        chunk = max(1, _PAIR_BUDGET // len(f))
        omega = np.empty(len(q))
        for s in range(0, len(q), chunk):
            qx, qy, qz = (col[:, None] for col in q[s : s + chunk].T)
            rel = [(x - qx, y - qy, z - qz) for x, y, z in corners]
            omega[s : s + chunk] = _solid_angles(*rel).sum(axis=1)
        return omega / (4.0 * np.pi)
    return _winding_tree(q, _TriangleTree(v, f), beta)


def _winding_tree(q, tree, beta=2.0, chunk=4096):
    """Winding numbers of q (m, 3) with a prebuilt _TriangleTree, in chunks of points."""
    out = np.empty(len(q))
    for s in range(0, len(q), chunk):
        out[s : s + chunk] = tree.solid_angle_sum(q[s : s + chunk], beta)
    return out / (4.0 * np.pi)
