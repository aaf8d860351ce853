"""Continuous collision detection (CCD) of point-triangle and edge-edge pairs moving linearly over a step.

Algorithm: additive CCD (Li, Kaufman, Jiang 2021, "Codimensional Incremental Potential Contact", ACCD), a
conservative advancement. Every primitive moves linearly from its start (t = 0) to its end (t = 1) position.
Distances do not change under a common translation, so the mean displacement of the four points is subtracted
first; after that, the distance between the primitives changes at most at the rate

    l = |dp| + max(|da|, |db|, |dc|)           (point p, triangle a b c)
    l = max(|da|, |db|) + max(|dc|, |dd|)      (edges a b and c d)

[m per unit time] (every point of a triangle or segment moves with a convex combination of its corners'
displacements). From a time t with distance d(t) > min_distance the primitives cannot come closer than
min_distance before t + (d(t) - min_distance) / l, so that is the next time tried. A query stops as a hit when
its distance is at most ``min_distance + TOLERANCE`` (the returned time is then at most the true time of impact,
early by at most about TOLERANCE / (approach speed)), and as a miss (``inf``) when the next time passes 1.

- ``TOLERANCE`` [m] is absolute: it is what turns touching and degenerate queries (distance exactly 0 at some
  time, coplanar motion, parallel edges, a query that touches only at t = 1, where advancement only approaches
  the contact and never reaches it) into hits; pairs that come within it of each other are reported as hits even
  where they do not touch (false positives, which only shorten a step).
- ``MAX_ROUNDS``: advancement is slow where the primitives approach at a grazing angle (each round closes the
  fraction (approach speed) / l of the gap). A query still unresolved after that many rounds is reported as a
  hit at the time it has reached, which is before any contact: conservative.

Vectorized: each round evaluates the exact distances (``primitives``) of the queries still active, all at once.
Pure NumPy. Lengths in metres, times as fractions of the step.
"""
import numpy as np

from .primitives import closest_points_segments, point_triangle_closest

TOLERANCE = 1e-6
"""Distance [m] above min_distance at which a query counts as touching (module docstring)."""

MAX_ROUNDS = 400
"""Rounds of advancement after which a query still unresolved is reported as a hit at its current time."""


def _norm(u):
    return np.sqrt(np.einsum("ij,ij->i", u, u))


def _point_triangle_gap(x):
    """Distances (k,) between the point x[0] and the triangle x[1], x[2], x[3] (each (k, 3))."""
    p, a, b, c = x
    bary, _ = point_triangle_closest(p, a, b, c)
    r = p - bary[:, :1] * a - bary[:, 1:2] * b - bary[:, 2:] * c
    return _norm(r)


def _edge_edge_gap(x):
    """Distances (k,) between the segments x[0] x[1] and x[2] x[3] (each (k, 3))."""
    a, b, c, d = x
    s, t, _ = closest_points_segments(a, b, c, d)
    r = a + s[:, None] * (b - a) - c - t[:, None] * (d - c)
    return _norm(r)


def _advance(x0, x1, speed_bound, distance, min_distance):
    """Conservative advancement of all queries (module docstring).

    x0, x1: (4, n, 3) the four points at t = 0 and t = 1 [m]; speed_bound(dx (4, n, 3)) -> (n,) the bound l;
    distance(x (4, k, 3)) -> (k,). Returns (n,) times of impact in [0, 1], inf for misses.
    """
    x0 = np.asarray(x0, float)
    dx = np.asarray(x1, float) - x0
    dx = dx - dx.mean(axis=0)  # a common translation changes no distance
    bound = speed_bound(np.sqrt(np.einsum("knj,knj->kn", dx, dx)))
    n = x0.shape[1]
    toi = np.full(n, np.inf)
    t = np.zeros(n)
    active = np.arange(n)
    for _ in range(MAX_ROUNDS):
        if not len(active):
            break
        x = x0[:, active] + t[active][None, :, None] * dx[:, active]
        gap = distance(x) - min_distance
        hit = gap <= TOLERANCE
        toi[active[hit]] = t[active[hit]]
        # next time at which the distance can first be back at min_distance; l = 0 means no relative motion
        step = np.divide(gap, bound[active], out=np.full(len(active), np.inf), where=bound[active] > 0.0)
        t_next = t[active] + step
        keep = ~hit & (t_next <= 1.0)
        # stepping past t = 1 proves no contact in exact arithmetic; a contact exactly at t = 1 may round to
        # 1 + 1e-16 there, so the end pose is checked too
        last = ~hit & (t_next > 1.0) & (t[active] < 1.0)
        if np.any(last):
            ends = active[last]
            end_gap = distance(x0[:, ends] + dx[:, ends]) - min_distance
            toi[ends[end_gap <= TOLERANCE]] = 1.0
        t[active[keep]] = t_next[keep]
        active = active[keep]
    toi[active] = t[active]  # unresolved at the cap: a hit no later than any contact
    return toi


def _stack(*points):
    return np.stack([np.asarray(p, float).reshape(-1, 3) for p in points])


def point_triangle_ccd(p0, a0, b0, c0, p1, a1, b1, c1, min_distance=0.0):
    """Times of impact (n,) in [0, 1] of points p against triangles (a, b, c), or inf where they never come closer
    than ``min_distance`` [m] during the step.

    p0, a0, b0, c0: (n, 3) positions at the start of the step [m]; p1, a1, b1, c1: (n, 3) at its end (linear
    motion). Conservative: finite wherever the point and the triangle come within min_distance in [0, 1]; a
    returned time may be early (module docstring: ``TOLERANCE``, ``MAX_ROUNDS``).
    """
    return _advance(_stack(p0, a0, b0, c0), _stack(p1, a1, b1, c1),
                    lambda v: v[0] + np.max(v[1:], axis=0), _point_triangle_gap, float(min_distance))


def edge_edge_ccd(a0, b0, c0, d0, a1, b1, c1, d1, min_distance=0.0):
    """Times of impact (n,) in [0, 1] of edges (a, b) against edges (c, d), or inf where they never come closer than
    ``min_distance`` [m] during the step.

    a0, b0, c0, d0: (n, 3) positions at the start of the step [m]; a1, b1, c1, d1: (n, 3) at its end (linear
    motion). Conservative, like ``point_triangle_ccd``.
    """
    return _advance(_stack(a0, b0, c0, d0), _stack(a1, b1, c1, d1),
                    lambda v: np.maximum(v[0], v[1]) + np.maximum(v[2], v[3]), _edge_edge_gap, float(min_distance))
