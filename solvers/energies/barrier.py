"""IPC log-barrier contact against an analytic collider (ground plane or sphere), with its CCD step bound.

Seed 004 / Minchen Li's course ("3_contact"), per particle i with distance d_i to the collider's surface
and s = d / d_hat:

    b(d) = kappa_i d_hat / 2 (s - 1) ln s    for 0 < d < d_hat,   0 for d >= d_hat,   +inf for d <= 0

    b'(d)  = kappa_i / 2 (ln s + (s - 1) / s)          (< 0: it pushes outward)
    b''(d) = kappa_i / (2 d_hat) (s + 1) / s^2         (> 0)

kappa_i [N] is a force scale (the course's contact area times its kappa); d_hat [m] is the barrier's reach
(the NEWTON solver uses the collider's ``thickness``, at least ``MIN_BARRIER_REACH``). The barrier grows without bound as d -> 0, and ``max_step`` never lets a line search
reach d = 0, so a particle never touches the collider (Li et al. 2020, "Incremental Potential Contact").

Gradient b'(d) n with n the outward unit normal. Hessian b'' n n^T + b' grad(n): zero for a plane; for a
sphere grad(n) = (I - n n^T) / |x - c|, which is negative times b' < 0 and is clamped to 0 by the projection.
"""
import numpy as np

from ..colliders import Sphere
from .base import BlockHessian, Energy

CCD_SAFETY = 0.9
"""A step may cover at most this fraction of the way to the collider (the course's 0.9)."""


def surface_distance(collider, x: np.ndarray):
    """Distance [m] of every particle to the collider's surface (thickness not subtracted), (n,), and normals (n, 3)."""
    d, n = collider.distance_and_normal(x)
    return d + collider.thickness, n


def barrier_derivative(d: np.ndarray, d_hat: float, kappa: np.ndarray) -> np.ndarray:
    """b'(d) [N] per particle, 0 beyond d_hat; d must be positive where d < d_hat."""
    active = d < d_hat
    s = np.where(active, d / d_hat, 1.0)
    return np.where(active, 0.5 * kappa * (np.log(s) + (s - 1.0) / s), 0.0)


class ColliderBarrier(Energy):
    """The barrier of one collider on the particles where ``mask`` is True.

    collider: GroundPlane or Sphere; kappa: (n,) [N]; mask: (n,) bool, e.g. the free particles (pinned ones are
    prescribed and take no part); d_hat [m] > 0, the barrier's reach (default: the collider's thickness).
    Stencil: the diagonal blocks of all n.
    """

    def __init__(self, collider, kappa: np.ndarray, mask: np.ndarray = None, d_hat: float = None):
        d_hat = collider.thickness if d_hat is None else d_hat
        if not d_hat > 0.0:
            raise ValueError("an IPC barrier needs a positive activation distance d_hat")
        self.collider = collider
        self.d_hat = float(d_hat)
        self.kappa = np.asarray(kappa, float)
        n = len(self.kappa)
        self.mask = np.ones(n, bool) if mask is None else np.asarray(mask, bool)
        self._rows = np.arange(n)

    def _active(self, x):
        d, normal = surface_distance(self.collider, x)
        return d, normal, self.mask & (d < self.d_hat)

    def value(self, x):
        d, _, active = self._active(x)
        if np.any(d[active] <= 0.0):
            return float("inf")
        s = d[active] / self.d_hat
        return float(np.sum(0.5 * self.kappa[active] * self.d_hat * (s - 1.0) * np.log(s)))

    def gradient(self, x):
        d, normal, active = self._active(x)
        db = np.where(active, barrier_derivative(np.where(active, d, self.d_hat), self.d_hat, self.kappa), 0.0)
        return db[:, None] * normal

    def hessian(self, x, project=True):
        d, normal, active = self._active(x)
        s = np.where(active, d / self.d_hat, 1.0)
        along = np.where(active, 0.5 * self.kappa / self.d_hat * (s + 1.0) / s**2, 0.0)
        nn = normal[:, :, None] * normal[:, None, :]
        blocks = along[:, None, None] * nn
        if isinstance(self.collider, Sphere) and not project:
            db = np.where(active, barrier_derivative(np.where(active, d, self.d_hat), self.d_hat, self.kappa), 0.0)
            radius = np.linalg.norm(x - self.collider.center, axis=1)
            blocks += (db / np.maximum(radius, 1e-12))[:, None, None] * (np.eye(3)[None] - nn)
        return BlockHessian(self._rows, self._rows, blocks)

    def max_step(self, x, dx):
        """Largest alpha <= 1 with x + alpha dx at least (1 - CCD_SAFETY) of the way from the surface (course's rule)."""
        d, normal = surface_distance(self.collider, x)
        hit = np.full(len(x), np.inf)
        if isinstance(self.collider, Sphere):
            r = x - self.collider.center
            a = np.einsum("ij,ij->i", dx, dx)
            b = 2.0 * np.einsum("ij,ij->i", r, dx)
            c = np.einsum("ij,ij->i", r, r) - self.collider.radius**2
            disc = b * b - 4.0 * a * c
            approaching = self.mask & (b < 0.0) & (disc >= 0.0) & (a > 0.0)
            # Smaller root of a t^2 + b t + c = 0 in the cancellation-free form 2c / (-b + sqrt(disc)).
            denominator = np.where(approaching, -b + np.sqrt(np.maximum(disc, 0.0)), 1.0)
            hit = np.where(approaching, 2.0 * c / denominator, np.inf)
        else:
            rate = np.einsum("ij,j->i", dx, self.collider.normal)
            approaching = self.mask & (rate < 0.0)
            hit = np.where(approaching, d / np.where(approaching, -rate, 1.0), np.inf)
        return float(min(1.0, CCD_SAFETY * hit.min())) if len(hit) else 1.0
