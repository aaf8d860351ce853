"""IPC log-barrier contact: the scalar barrier, and its energy against a collider's surface, with its CCD step bound.

Li's solid-sim-tutorial ("3_contact") and Li et al. 2020, "Incremental Potential Contact": per contact with distance
d to the collider's surface and s = d / d_hat,

    b(d) = kappa d_hat / 2 (s - 1) ln s    for 0 < d < d_hat,   0 for d >= d_hat,   +inf for d <= 0

    b'(d)  = kappa / 2 (ln s + (s - 1) / s)          (< 0: it pushes outward)
    b''(d) = kappa / (2 d_hat) (s + 1) / s^2         (> 0)

kappa [N] is a force scale (the course's contact area times its kappa); d_hat [m] is the barrier's reach (the NEWTON
solver uses the collider's ``thickness``, at least ``MIN_BARRIER_REACH``). The barrier grows without bound as d -> 0,
and ``max_step`` never lets a line search reach d = 0, so nothing ever touches the collider. ``barrier_terms`` is the
one place the formula is written; the face barrier (``face_barrier.py``) uses it too.

Gradient b'(d) n with n the outward unit normal. Hessian b'' n n^T + b' grad(n): the second part is zero for a plane;
for a sphere grad(n) = (I - n n^T) / |x - c| (``Collider.normal_gradient``), negative times b' < 0, so the PSD
projection clamps it to 0.
"""
import numpy as np

from ...energies.base import BlockHessian, Energy, PositionCache

CCD_SAFETY = 0.9
"""A step may cover at most this fraction of the way to the collider (the course's 0.9)."""


def barrier_terms(d: np.ndarray, d_hat: float, kappa):
    """b(d), b'(d), b''(d) of the module docstring for 0 < d < d_hat (arrays; kappa scalar or per contact)."""
    s = d / d_hat
    value = 0.5 * kappa * d_hat * (s - 1.0) * np.log(s)
    first = 0.5 * kappa * (np.log(s) + (s - 1.0) / s)
    second = 0.5 * kappa / d_hat * (s + 1.0) / (s * s)
    return value, first, second


def barrier_derivative(d: np.ndarray, d_hat: float, kappa: np.ndarray) -> np.ndarray:
    """b'(d) [N] per contact, 0 beyond d_hat; d must be positive where d < d_hat."""
    active = d < d_hat
    return np.where(active, barrier_terms(np.where(active, d, d_hat), d_hat, kappa)[1], 0.0)


class ColliderBarrier(Energy):
    """The barrier of one collider on the particles where ``mask`` is True.

    collider: any collider at a fixed pose (``Collider``); kappa: (n,) [N]; mask: (n,) bool, e.g. the free particles (pinned ones are
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
        self._contacts = PositionCache()  # at the last x: a line search's trial, then its gradient and Hessian

    def _active(self, x):
        """Distance d (n,) [m], outward normal (n, 3) and the particles within reach (n,) bool (shared arrays: read
        only)."""
        return self._contacts.get(x, self._active_of)

    def _active_of(self, x):
        d, normal = self.collider.surface_distance(x)
        return d, normal, self.mask & (d < self.d_hat)

    def value(self, x):
        d, _, active = self._active(x)
        if np.any(d[active] <= 0.0):
            return float("inf")
        return float(np.sum(barrier_terms(d[active], self.d_hat, self.kappa[active])[0]))

    def gradient(self, x):
        d, normal, active = self._active(x)
        db = np.where(active, barrier_derivative(np.where(active, d, self.d_hat), self.d_hat, self.kappa), 0.0)
        return db[:, None] * normal

    def hessian(self, x, project=True):
        d, normal, active = self._active(x)
        second = np.where(active, barrier_terms(np.where(active, d, self.d_hat), self.d_hat, self.kappa)[2], 0.0)
        blocks = second[:, None, None] * (normal[:, :, None] * normal[:, None, :])
        if not project:
            db = np.where(active, barrier_derivative(np.where(active, d, self.d_hat), self.d_hat, self.kappa), 0.0)
            blocks += db[:, None, None] * self.collider.normal_gradient(x)
        return BlockHessian(self._rows, self._rows, blocks)

    def max_step(self, x, dx):
        """Largest alpha <= 1 with x + alpha dx at least (1 - CCD_SAFETY) of the way from the surface (the course's
        rule; ``Collider.time_of_impact``, which also follows a collider that moves over the step)."""
        hit = self.collider.time_of_impact(x[self.mask], dx[self.mask])
        return float(min(1.0, CCD_SAFETY * hit.min())) if len(hit) else 1.0
