"""IPC barrier and lagged friction between a body's triangles and a sphere collider (NEWTON).

``log_barrier.ColliderBarrier`` keeps every *vertex* outside a collider; between vertices a face of a coarse cloth can
still pass through a sphere. Here the barrier acts on the exact distance from the sphere's centre c to each
triangle: with q = sum_k b_k x_k the triangle's closest point to c (``primitives``; b its barycentric
weights, a minimizer over the triangle) and

    d = |q - c| - radius,   n = (q - c) / |q - c|,    s = d / d_hat,
    B(d) = kappa d_hat / 2 (s - 1) ln s    (0 < d < d_hat; 0 beyond; +inf for d <= 0),   as ``log_barrier.py``

By the envelope theorem (q is the minimizer over a convex set and c lies outside it) dd/dx_k = b_k n in every
region (interior, edge, corner), so the gradient is B'(d) b_k n. The Hessian used is the Gauss-Newton part
B''(d) (b b^T) (x) (n n^T) per triangle: PSD, 9 blocks per triangle in ``element_stencil(triangles)`` order. The
dropped term B'(d) d2d/dx2 is what the projection would mostly clamp anyway for a sphere (as for the vertex
barrier, where it is negative and projected to 0); Newton then converges at a Gauss-Newton rate near contact,
and the line search keeps every step a descent step. ``hessian(project=False)`` returns the same blocks.

CCD (``max_step``): every point of a triangle moves at most m = max_k |dx_k| per unit alpha, so the distance drops
at most m alpha. Conservative advancement (additive CCD, Li et al. 2021 "Codimensional IPC") from alpha = 0 adds
(d(alpha) - (1 - CCD_SAFETY) d(0)) / m per round with the exact distance at the current alpha; every round is safe
(the face keeps at least (1 - CCD_SAFETY) of its start distance, the vertex barrier's rule), the loop ends at 1 or
after ``CCD_ROUNDS`` rounds with the last safe alpha.

Both terms touch only the triangles with a free corner (``mask``), and of those only the ones near the sphere:
the exact cull of ``faces._candidates``.

Friction (``FaceColliderFriction``): Li's solid-sim-tutorial's lagged IPC friction applied to the closest point of each triangle in
contact at the step's start, with its b, n and normal force lambda = -B'(d) held at x^n: slip
u = T sum_k b_k (x_k - x^n_k), T = I - n n^T, energy mu lambda f0(|u|) as ``friction.py``; gradient b_k (per-point
gradient), Hessian (b b^T) (x) (per-point Hessian), PSD.

Faces of a body in NEWTON are pushed out before a step where they start inside the sphere (``move_sphere_faces_out``), as
``newton._move_out_of_colliders`` does for vertices: a barrier needs a positive start distance.
"""
import numpy as np

from dataclasses import replace

from ...energies.base import BlockHessian, Energy, PositionCache, element_blocks, element_stencil, project_psd, scatter
from ...energies.friction import LaggedFriction
from .log_barrier import CCD_SAFETY, barrier_terms
from ..response.faces import _candidates
from ..narrow_phase.primitives import closest_points_on_triangles, point_triangle_distance_squared

CCD_ROUNDS = 64
"""Most rounds of conservative advancement per line search (each vectorized over the approaching triangles)."""


def face_distances(x, triangles, sphere, reach):
    """For the triangles (t, 3) that may come within ``reach`` of the sphere's surface: their indices (k,), distance
    d = |q - c| - radius (k,), barycentric weights of q (k, 3) and unit normals (q - c) / |q - c| (k, 3)."""
    near = _candidates(x, triangles, sphere.center, sphere.radius + reach)
    tri = triangles[near]
    q, bary = closest_points_on_triangles(sphere.center, x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
    r = q - sphere.center
    dist = np.sqrt(np.einsum("ij,ij->i", r, r))
    normal = np.where((dist > 1e-12)[:, None], r / np.where(dist > 1e-12, dist, 1.0)[:, None], np.array([0.0, 0.0, 1.0]))
    return near, dist - sphere.radius, bary, normal


def face_triangles(triangles, free):
    """The triangles (t, 3) with at least one free corner (free: (n,) bool): the ones a face term can move."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    return triangles[free[triangles].any(axis=1)] if len(triangles) else triangles


class FaceColliderBarrier(Energy):
    """The barrier between a Sphere collider and the triangles (t, 3) (see the module docstring).

    kappa [N] force scale (a scalar); d_hat [m] > 0 the reach. Hessian: 9 blocks per triangle within reach, in
    ``element_stencil`` order (``coupled``: the Newton solver assembles them apart from the per-particle diagonal
    terms, from the contact set of each iteration).
    """

    coupled = True
    _pt = staticmethod(point_triangle_distance_squared)
    """The squared distances with derivatives and the PSD projection: NumPy, or their native twins
    (``native.ipc_kernels.use_kernels``); ``_ee`` is not used here."""
    _ee = None
    _psd = staticmethod(project_psd)

    def __init__(self, collider, triangles: np.ndarray, kappa: float, d_hat: float):
        if not d_hat > 0.0:
            raise ValueError("an IPC barrier needs a positive activation distance d_hat")
        self.collider = collider
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.kappa = float(kappa)
        self.d_hat = float(d_hat)
        self._contacts = PositionCache()  # at the last x: a line search's trial, then its gradient and Hessian

    def _active(self, x):
        """The triangles within reach: indices (k,), d (k,) [m], barycentric weights (k, 3), normals (k, 3) (shared
        arrays: read only)."""
        return self._contacts.get(x, self._active_of)

    def _active_of(self, x):
        near, d, bary, normal = face_distances(x, self.triangles, self.collider, self.d_hat)
        keep = d < self.d_hat
        return near[keep], d[keep], bary[keep], normal[keep]

    def value(self, x):
        _, d, _, _ = self._active(x)
        if np.any(d <= 0.0):
            return float("inf")
        return float(np.sum(barrier_terms(d, self.d_hat, self.kappa)[0]))

    def gradient(self, x):
        near, d, bary, normal = self._active(x)
        first = barrier_terms(np.maximum(d, 1e-300), self.d_hat, self.kappa)[1]
        per_corner = (first[:, None] * bary)[:, :, None] * normal[:, None, :]  # (k, 3 corners, 3)
        return scatter(self.triangles[near], per_corner, len(x))

    def hessian(self, x, project=True):
        """The exact Hessian B'' grad d grad d^T + B' hess d of the triangles within reach, d = sqrt(D) - radius with D
        the squared point-triangle distance of the sphere's centre (``point_triangle_distance_squared``, exact per
        distance type), each triangle's 9x9 block projected to PSD with ``project``; blocks in ``element_stencil``
        order (the contact part of NEWTON's Hessian follows the contact set, not every triangle of the body). The
        Gauss-Newton part alone misses the curvature of the distance under a triangle's rotation, which dominates a
        light cloth's inertia near contact: Newton then crawls at a fraction of a cm/s per iteration."""
        near, d, _, _ = self._active(x)
        tri = self.triangles[near]
        centre = np.broadcast_to(np.asarray(self.collider.center, float), (len(tri), 3))
        D, dD, hD = self._pt(centre, x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
        r = np.sqrt(D)[:, None]
        grad = dD[:, 3:] / (2.0 * r)  # dd/d(corners), (k, 9)
        hess = hD[:, 3:, 3:] / (2.0 * r[:, :, None]) - grad[:, :, None] * grad[:, None, :] / r[:, :, None]
        _, first, second = barrier_terms(np.maximum(d, 1e-300), self.d_hat, self.kappa)
        local = second[:, None, None] * grad[:, :, None] * grad[:, None, :] + first[:, None, None] * hess
        if project:
            local = self._psd(local)
        rows, cols = element_stencil(tri)
        return BlockHessian(rows, cols, element_blocks(local))

    def lagged_friction(self, collider, x_start, eps):
        """The step's lagged friction of these faces (``FaceColliderFriction``), contacts taken at x_start."""
        return FaceColliderFriction(collider, self.triangles, x_start, self, eps)

    def max_step(self, x, dx):
        """Largest alpha <= 1 keeping every face at least (1 - CCD_SAFETY) of its distance from the sphere, the sphere
        moving over the same alpha from its ``start`` pose if it has one."""
        if len(self.triangles) == 0:
            return 1.0
        sphere = self.collider
        start = sphere if sphere.start is None else sphere.start
        c0, r0 = start.center, start.radius
        shift, grow = sphere.center - c0, sphere.radius - r0
        relative = dx - shift
        move = np.sqrt(np.einsum("ij,ij->i", relative, relative))
        # Per unit alpha a face's distance to the surface drops by at most its corners' largest move relative to the
        # sphere's centre, plus the radius's growth.
        tri_move = move[self.triangles].max(axis=1) + abs(grow)
        # Only triangles whose whole move could bring them within reach of the surface can limit the step.
        near, d0, _, _ = face_distances(x, self.triangles, start, float(tri_move.max()))
        limit = CCD_SAFETY * d0
        risky = np.nonzero(tri_move[near] > limit)[0]
        if len(risky) == 0:
            return 1.0
        tri, m, floor = self.triangles[near[risky]], tri_move[near[risky]], (1.0 - CCD_SAFETY) * d0[risky]
        alpha = np.zeros(len(tri))
        for _ in range(CCD_ROUNDS):
            y = x[tri] + alpha[:, None, None] * dx[tri]
            c = c0 + alpha[:, None] * shift
            q, _ = closest_points_on_triangles(c, y[:, 0], y[:, 1], y[:, 2])
            gap = np.sqrt(np.einsum("ij,ij->i", q - c, q - c)) - (r0 + alpha * grow)
            increment = np.maximum(gap - floor, 0.0) / m
            alpha = np.minimum(alpha + increment, 1.0)
            if np.all((alpha >= 1.0) | (increment <= 1e-6 * np.maximum(alpha, 1e-3))):
                break
        return float(alpha.min())


class FaceColliderFriction(LaggedFriction):
    """Lagged friction of the triangles in contact with a Sphere collider at the step's start (module docstring).

    triangles (t, 3); x_prev (n, 3) positions at the step's start [m]; barrier: the step's FaceColliderBarrier (its
    d_hat and kappa give each contact's normal force); eps [m] the slip below which friction sticks. Slip is measured
    relative to the collider's own motion over the step (``Collider.motion``).
    """

    coupled = True

    def __init__(self, collider, triangles: np.ndarray, x_prev: np.ndarray, barrier: FaceColliderBarrier, eps: float):
        self.mu = float(collider.friction)
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.x_prev = np.asarray(x_prev, float).copy()
        self.eps = float(eps)
        near, d, bary, normal = barrier._active(self.x_prev)
        contact = d > 0.0
        self.near, self.bary, self.normal = near[contact], bary[contact], normal[contact]
        first = barrier_terms(d[contact], barrier.d_hat, barrier.kappa)[1]
        self.weight = self.mu * (-first)  # mu lambda per contact [N]
        self.T = np.eye(3)[None] - self.normal[:, :, None] * self.normal[:, None, :]
        self.q_prev = np.einsum("tk,tki->ti", self.bary, self.x_prev[self.triangles[self.near]])
        self.q_prev = self.q_prev + collider.motion(self.q_prev)

    def _slip(self, x):
        q = np.einsum("tk,tki->ti", self.bary, x[self.triangles[self.near]])
        u = np.einsum("tij,tj->ti", self.T, q - self.q_prev)
        return u, np.sqrt(np.einsum("ij,ij->i", u, u))

    def gradient(self, x):
        g = self.slip_force(x)  # per contact point (k, 3)
        return scatter(self.triangles[self.near], self.bary[:, :, None] * g[:, None, :], len(x))

    def hessian(self, x, project=True):
        """Blocks of the triangles in contact only (their ``element_stencil``)."""
        point = self.slip_blocks(x)  # (k, 3, 3), PSD
        pair = self.bary[:, :, None] * self.bary[:, None, :]
        blocks = pair[:, :, :, None, None] * point[:, None, None, :, :]
        rows, cols = element_stencil(self.triangles[self.near])
        return BlockHessian(rows, cols, blocks.reshape(-1, 3, 3))


def move_sphere_faces_out(x, triangles, inv_mass, sphere, reach):
    """Faces that start a NEWTON step at or inside the sphere move out to half the barrier reach (d_hat [m]), in
    place: the position-level face push with the sphere thickened to reach / 2, when a face is closer than
    1e-3 reach."""
    if len(triangles) == 0:
        return
    near, d, _, _ = face_distances(x, triangles, sphere, 1e-3 * reach)
    if np.any(d <= 1e-3 * reach):
        pushed = replace(sphere, thickness=0.5 * reach, friction=0.0, start=None)
        pushed.resolve_faces(x, x, inv_mass, triangles, passes=8)
