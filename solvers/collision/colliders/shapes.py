"""Collider shapes (ground plane, sphere) and the protocol every collider implements.

A collider keeps particles on its outside, at least ``thickness`` metres from its surface. What a solver may ask of
any collider (the ``Collider`` base class; no solver tests a collider's type):

- ``distance(x, pad2)`` and ``distance_and_normal(x, pad2)``: signed distance beyond the thickness (n,) [m] and the
  outward unit normal (n, 3) at points x (n, 3); ``surface_distance(x)`` the same without the thickness;
- ``contact(x, x_prev, pad2)``: the contact plane of points that moved from x_prev to x over the step, seen
  continuously (a point the collider swept past is pushed back out on the side it came from);
- ``time_of_impact(x, dx)``: the first s >= 0 at which points x + s dx reach the surface (thickness not counted)
  while the collider moves from ``start`` (s = 0) to its pose (s = 1), both motions extended linearly past 1 (CCD);
- ``motion(x)``: how far the collider's surface under x moves over the step (n, 3) [m], for friction;
- ``normal_gradient(x)``: d n / d x (n, 3, 3), for the exact barrier Hessian;
- faces: ``resolve_faces`` (position-level) and ``face_barrier`` (NEWTON), for colliders whose surface can reach
  between a triangle's corners (a sphere; a flat plane cannot dip below a face whose corners are above it).

Motion: a collider read at the end of a frame knows its pose at the frame's start (``start``, set by
``moving_from``); ``over(t0, t1)`` gives the collider of the solver step from fraction t0 to t1 of that motion (its
pose at t1, with ``start`` the pose at t0), interpolated linearly as pins are (``frame.advance_frame``). A collider
without ``start`` does not move.

Sphere pads: a sphere also keeps each particle of a body with triangles a little further out, at
``padded_radius(radius + thickness, pad2)`` from its centre, so that the triangles around the particle stay outside
the sphere too (``faces.sphere_pads`` says how pad2 is chosen). A ground plane needs no pad. Every ``distance``,
``distance_and_normal`` and ``contact`` takes ``pad2`` (rows aligned with x, or None for no pad).
"""
from dataclasses import dataclass, replace

import numpy as np

PAD_LIMIT = 0.01
"""A sphere's pad never holds a particle more than this fraction of radius + thickness further out (1 cm on a 1 m
sphere): on a mesh far coarser than the sphere the pad that would keep every face out can be large, and a vertex
resting on the sphere's top under a tent of faces would float by that much. The exact face push
(``faces.resolve_sphere_faces``) keeps the faces out wherever the pad falls short."""


def padded_radius(rho: float, pad2: np.ndarray) -> np.ndarray:
    """sqrt(rho^2 + pad2) [m], rho = radius + thickness, pad2 (k,) [m^2] capped at PAD_LIMIT: the particles' own
    contact radii."""
    cap2 = ((1.0 + PAD_LIMIT) ** 2 - 1.0) * rho * rho
    return np.sqrt(rho * rho + np.minimum(pad2, cap2))


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


class Collider:
    """The collider protocol (module docstring); subclasses are dataclasses with thickness, friction, name, start."""

    start = None
    """The same collider at the start of its motion (frame or step), or None for a collider that does not move."""

    # ----------------------------------------------------------------- motion

    def moving_from(self, previous):
        """This collider, moving from the pose ``previous`` (the same collider read earlier) to its own pose."""
        moving = replace(self)
        moving.start = previous if previous is not None and previous.pose_differs(self) else None
        return moving

    def over(self, t0: float, t1: float):
        """The collider of the part of its motion from fraction t0 to t1: its pose at t1, ``start`` its pose at t0."""
        if self.start is None:
            return self
        end = self.start.interpolate(self, t1)
        end.start = self.start.interpolate(self, t0)
        return end

    def over_substeps(self, substeps: int) -> list:
        """``over`` of each of ``substeps`` equal parts of the motion, in order: the K colliders
        ``over((k - 1) / K, k / K)`` for k = 1 .. K (a collider standing still: itself K times, as ``over`` gives)."""
        if self.start is None:
            return [self] * substeps
        return [self.over((k - 1) / substeps, k / substeps) for k in range(1, substeps + 1)]

    def at_fraction(self, s: float):
        """The static pose at fraction s of the motion (s = 1: this pose)."""
        if self.start is None or s >= 1.0:
            return self if self.start is None else replace(self, start=None)
        return self.start.interpolate(self, s)

    def motion(self, x: np.ndarray) -> np.ndarray:
        """Displacement [m] (n, 3) of the surface under the points x over the motion; zero for a static collider."""
        return np.zeros_like(x)

    # ----------------------------------------------------------------- queries every collider answers

    def surface_distance(self, x: np.ndarray):
        """Distance [m] of points x (n, 3) to the surface, thickness not subtracted, (n,), and normals (n, 3)."""
        d, n = self.distance_and_normal(x)
        return d + self.thickness, n

    def within(self, x: np.ndarray, band: float, pad2=None) -> np.ndarray:
        """(n,) bool: the points x (n, 3) whose signed distance (``distance``) is below band [m]."""
        return self.distance(x, pad2) < band

    def contact(self, x: np.ndarray, x_prev: np.ndarray, pad2=None):
        """Signed distance (n,) and normal (n, 3) of the contact plane n . x >= n . x - d for points that moved from
        x_prev to x over the step: ``distance_and_normal`` at the end pose, where that is the side they came from."""
        return self.distance_and_normal(x, pad2)

    def face_pairs(self, x: np.ndarray, triangles: np.ndarray, reach: float = None):
        """``contact_set.FacePairs``: the collider's own corners against a body's triangles (t, 3) and its edges
        against the body's edges, every pair within reach [m] (default: thickness) at x (n, 3); None for a collider
        without corners and edges (analytic shapes: their faces are handled by ``resolve_faces``)."""
        return None

    def normal_gradient(self, x: np.ndarray) -> np.ndarray:
        """d n / d x (n, 3, 3) of the outward normal at x; zero for a plane."""
        return np.zeros((len(x), 3, 3))

    # ----------------------------------------------------------------- faces (colliders that reach between corners)

    reaches_between_corners = False
    """True when the surface can come nearer a triangle's interior than its corners (then the face methods act)."""

    def resolve_faces(self, x, x_prev, inv_mass, triangles, passes=None) -> int:
        """Push triangles (t, 3) out of the collider, in place on x; returns the contacts found. None here."""
        return 0

    def face_barrier(self, triangles, kappa: float, d_hat: float, points=None):
        """NEWTON's barrier between the collider and the triangles (an Energy), or None where vertices suffice. It may
        also keep the particles ``points`` (p,) off the collider (its ``covers_points`` True): then it replaces their
        ``log_barrier.ColliderBarrier``."""
        return None

    def move_faces_out(self, x, inv_mass, triangles, reach: float) -> None:
        """Before a NEWTON step: faces at or inside the collider move out to half the barrier reach [m], in place (a
        barrier needs a positive start distance). Nothing where vertices suffice."""


@dataclass
class GroundPlane(Collider):
    """Infinite plane through ``point`` with unit ``normal``; bodies stay on the normal's side."""

    point: np.ndarray
    """A point on the plane [m], shape (3,)."""
    normal: np.ndarray
    """Unit normal, shape (3,)."""
    thickness: float = 0.0
    """Contact offset [m]."""
    friction: float = 0.0
    """Coulomb friction coefficient (dimensionless, >= 0)."""
    name: str = ""
    """The scene object it came from, for messages."""
    start: object = None
    """The plane at the start of its motion, or None (``Collider.start``)."""

    def __post_init__(self):
        self.point = np.asarray(self.point, float)
        n = np.asarray(self.normal, float)
        self.normal = n / np.linalg.norm(n)

    def pose_differs(self, other) -> bool:
        return not (np.array_equal(self.point, other.point) and np.array_equal(self.normal, other.normal))

    def interpolate(self, other, s: float):
        """The plane a fraction s of the way to ``other``: point and normal blended linearly (normal renormalized)."""
        return replace(other, point=self.point + s * (other.point - self.point),
                       normal=self.normal + s * (other.normal - self.normal), start=None)

    def motion(self, x):
        if self.start is None:
            return np.zeros_like(x)
        return np.broadcast_to(self.point - self.start.point, x.shape)

    def distance_and_normal(self, x: np.ndarray, pad2=None):
        """Signed distance [m] beyond the thickness, shape (n,), and outward normals, shape (n, 3). pad2: ignored."""
        return self.distance(x), np.broadcast_to(self.normal, x.shape)

    def distance(self, x: np.ndarray, pad2=None) -> np.ndarray:
        """The signed distance of ``distance_and_normal`` alone, shape (n,)."""
        # Not `@`: a matrix-vector product goes through multithreaded BLAS, which is slow on busy machines.
        n = self.normal
        return x[:, 0] * n[0] + x[:, 1] * n[1] + x[:, 2] * n[2] - (self.point @ n + self.thickness)

    def time_of_impact(self, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
        """First s >= 0 (inf: none) at which x + s dx reaches the plane moving from ``start`` to here. The distance
        is taken as linear in s (exact for a translating plane; a turning one bends it slightly)."""
        start = self if self.start is None else self.start
        d0 = start.surface_distance(x)[0]
        d1 = self.surface_distance(x + dx)[0]
        approaching = d1 < d0
        return np.where(approaching, np.maximum(d0, 0.0) / np.where(approaching, d0 - d1, 1.0), np.inf)


@dataclass
class Sphere(Collider):
    """Solid sphere; bodies stay outside it."""

    center: np.ndarray
    """Centre [m], shape (3,)."""
    radius: float
    """Radius [m]."""
    thickness: float = 0.0
    friction: float = 0.0
    name: str = ""
    start: object = None
    """The sphere at the start of its motion, or None (``Collider.start``)."""

    reaches_between_corners = True

    def __post_init__(self):
        self.center = np.asarray(self.center, float)

    def pose_differs(self, other) -> bool:
        return not (np.array_equal(self.center, other.center) and self.radius == other.radius)

    def interpolate(self, other, s: float):
        return replace(other, center=self.center + s * (other.center - self.center),
                       radius=self.radius + s * (other.radius - self.radius), start=None)

    def _reach(self, pad2):
        """The contact radius [m]: radius + thickness, or per particle with pads (module docstring)."""
        rho = self.radius + self.thickness
        return rho if pad2 is None else padded_radius(rho, pad2)

    def distance_and_normal(self, x: np.ndarray, pad2=None):
        """Signed distance [m] beyond the thickness (and the pads pad2 (n,) [m^2], if given), shape (n,), and
        outward normals, shape (n, 3)."""
        r = x - self.center
        dist = np.sqrt(_dot(r, r))
        if len(dist) and dist.min() > 1e-12:
            r /= dist[:, None]  # r is ours: the normals in place
            n = r
        else:
            # A particle exactly at the centre is pushed straight up rather than divided by zero.
            safe = np.where(dist > 1e-12, dist, 1.0)
            n = np.where((dist > 1e-12)[:, None], r / safe[:, None], np.array([0.0, 0.0, 1.0]))
        return dist - self._reach(pad2), n

    def distance(self, x: np.ndarray, pad2=None) -> np.ndarray:
        """The signed distance of ``distance_and_normal`` alone, shape (n,)."""
        r = x - self.center
        return np.sqrt(_dot(r, r)) - self._reach(pad2)

    def motion(self, x):
        if self.start is None:
            return np.zeros_like(x)
        _, n = self.distance_and_normal(x)
        return (self.center - self.start.center) + (self.radius - self.start.radius) * n

    def contact(self, x, x_prev, pad2=None):
        """``distance_and_normal``, except for points inside that were outside the sphere's start pose: their normal
        is the direction from the centre at the moment the relative path first met the contact radius, so a point
        the sphere swept past (a fast sphere through a sheet) goes back out on the side it came from."""
        d, n = self.distance_and_normal(x, pad2)
        if self.start is None or len(x) == 0:
            return d, n
        inside = np.flatnonzero(d < 0.0)
        if len(inside) == 0:
            return d, n
        rho = self._reach(None if pad2 is None else pad2[inside])
        r0 = x_prev[inside] - self.start.center
        r1 = x[inside] - self.center
        s = _first_root(r0, r1 - r0, rho)
        swept = np.isfinite(s) & (s > 0.0)
        if not swept.any():
            return d, n
        at = r0[swept] + s[swept, None] * (r1 - r0)[swept]
        normal = at / np.maximum(np.sqrt(_dot(at, at)), 1e-300)[:, None]
        rows = inside[swept]
        n = np.array(n)
        n[rows] = normal
        d = np.array(d)
        rho_rows = rho[swept] if np.ndim(rho) else rho
        d[rows] = _dot(r1[swept], normal) - rho_rows
        return d, n

    def time_of_impact(self, x, dx):
        """First s >= 0 (inf: none) at which x + s dx reaches the surface of the sphere moving from ``start`` to
        here (relative motion; a changing radius is taken at its larger value, which only makes s earlier)."""
        start = self if self.start is None else self.start
        radius = max(self.radius, start.radius)
        return _first_root(x - start.center, dx - (self.center - start.center), radius)

    def normal_gradient(self, x):
        r = x - self.center
        dist = np.maximum(np.sqrt(_dot(r, r)), 1e-12)
        n = r / dist[:, None]
        return (np.eye(3)[None] - n[:, :, None] * n[:, None, :]) / dist[:, None, None]

    def resolve_faces(self, x, x_prev, inv_mass, triangles, passes=None) -> int:
        from ..response.faces import FACE_PASSES, resolve_sphere_faces

        return resolve_sphere_faces(x, x_prev, inv_mass, triangles, self, FACE_PASSES if passes is None else passes)

    def face_barrier(self, triangles, kappa, d_hat, points=None):
        from ..barriers.face_barrier import FaceColliderBarrier

        return FaceColliderBarrier(self, triangles, kappa, d_hat)

    def move_faces_out(self, x, inv_mass, triangles, reach):
        from ..barriers.face_barrier import move_sphere_faces_out

        move_sphere_faces_out(x, triangles, inv_mass, self, reach)


def _first_root(r0, dr, rho):
    """Smallest s >= 0 with |r0 + s dr| = rho for points approaching from outside (inf where none); per row of
    r0, dr (k, 3); rho scalar or (k,). Points already within rho give s = 0."""
    a = _dot(dr, dr)
    b = 2.0 * _dot(r0, dr)
    c = _dot(r0, r0) - rho * rho
    disc = b * b - 4.0 * a * c
    approaching = (b < 0.0) & (disc >= 0.0) & (a > 0.0) & (c > 0.0)
    # The smaller root in the cancellation-free form 2c / (-b + sqrt(disc)).
    denominator = np.where(approaching, -b + np.sqrt(np.maximum(disc, 0.0)), 1.0)
    s = np.where(approaching, 2.0 * c / denominator, np.inf)
    return np.where(c <= 0.0, 0.0, s)


def deepest_penetration(x: np.ndarray, colliders, mask: np.ndarray = None) -> float:
    """Largest depth [m] of any particle inside any collider's surface (thickness not counted), >= 0."""
    depth = 0.0
    for collider in colliders:
        d, _ = collider.surface_distance(x)
        if mask is not None:
            d = d[mask]
        if len(d):
            depth = max(depth, float(-d.min()))
    return depth


def frame_colliders(previous, current) -> list:
    """The colliders ``current`` (read at a frame's end), each moving from its namesake in ``previous`` (read at the
    frame's start; None or missing: it does not move this frame)."""
    earlier = {c.name: c for c in previous or () if c.name}
    return [c.moving_from(earlier.get(c.name)) if type(earlier.get(c.name)) is type(c) else c for c in current]
