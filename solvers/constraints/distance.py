"""Distance constraints C = |x_i - x_j| - l0 (Müller et al. 2007; compliant form Macklin et al. 2016)."""
import numpy as np


def as_compliance(compliance, count: int):
    """A compliance [1 / stiffness] as a float, or as a float64 array of shape (count,) (one per constraint).

    Raises ValueError for a wrong shape or a negative or non-finite value (infinite compliance means no
    constraint: leave such constraints out instead).
    """
    if np.ndim(compliance) == 0:
        value = float(compliance)
        if not (np.isfinite(value) and value >= 0.0):
            raise ValueError(f"compliance must be finite and >= 0, got {value}")
        return value
    array = np.array(compliance, np.float64)  # a copy: the set owns it
    if array.shape != (count,):
        raise ValueError(f"compliance must be a scalar or have shape ({count},), got {array.shape}")
    if not (np.all(np.isfinite(array)) and np.all(array >= 0.0)):
        raise ValueError("compliance must be finite and >= 0 everywhere")
    return array


def slice_compliance(compliance, select):
    """The compliance of a subset: a scalar stays, an array is sliced."""
    return compliance if np.ndim(compliance) == 0 else compliance[select]


class AlphaCache:
    """XPBD's alpha = compliance / dt^2, computed once per step size.

    For an array compliance the same read-only array is returned while dt stays the same, so kernels can
    recognise it by identity (see ``DistanceConstraints._inverse_denominator``).
    """

    def __init__(self):
        self._dt, self._alpha = None, None

    def alpha(self, compliance, dt: float):
        if self._dt != dt:
            alpha = compliance / dt**2
            if isinstance(alpha, np.ndarray):
                alpha.flags.writeable = False
            self._dt, self._alpha = dt, alpha
        return self._alpha


class DistanceConstraints:
    """A batch of distance constraints, bound to the particles' inverse masses.

    indices: (m, 2) int64 particle pairs; rest_length: (m,) [m]; inv_mass: (particle_count,) [1/kg];
    compliance: 1 / stiffness [m/N], a scalar for all or an array (m,), one per constraint.
    """

    def __init__(self, indices, rest_length, inv_mass, compliance):
        self.indices = np.asarray(indices, np.int64).reshape(-1, 2)
        self.rest_length = np.asarray(rest_length, np.float64)
        self.inv_mass = inv_mass
        self.compliance = as_compliance(compliance, len(self.indices))
        self.i, self.j = self.indices[:, 0].copy(), self.indices[:, 1].copy()
        self.flat_indices = self.indices.ravel()  # row-major (i0, j0, i1, j1, ...), matching dx.reshape(-1, 3)
        self.w_i, self.w_j = inv_mass[self.i], inv_mass[self.j]
        self.w_sum = self.w_i + self.w_j
        self._alpha_cache = AlphaCache()
        self._cached_alpha, self._cached_inverse = None, None

    def __len__(self):
        return len(self.indices)

    def alpha(self, dt: float):
        """XPBD's alpha = compliance / dt^2 (scalar or (m,)), cached on dt."""
        return self._alpha_cache.alpha(self.compliance, dt)

    def _is_cached(self, alpha) -> bool:
        cached = self._cached_alpha
        if cached is None:
            return False
        if cached is alpha:  # the read-only array of ``alpha(dt)``: one comparison per call
            return True
        if np.ndim(alpha) == 0 and np.ndim(cached) == 0:
            return float(cached) == float(alpha)
        return np.shape(cached) == np.shape(alpha) and np.array_equal(cached, alpha)

    def _inverse_denominator(self, alpha) -> np.ndarray:
        """1 / (w_i + w_j + alpha), 0 where that sum is 0; cached, since alpha only changes with dt.

        alpha is a scalar or an array (m,). Pass ``self.alpha(dt)`` to make the cache check an identity test;
        any other array is compared by value (and copied into the cache).
        """
        if not self._is_cached(alpha):
            denom = self.w_sum + alpha
            self._cached_inverse = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0.0)
            if np.ndim(alpha) == 0:
                self._cached_alpha = float(alpha)
            elif isinstance(alpha, np.ndarray) and not alpha.flags.writeable and alpha.flags.owndata:
                self._cached_alpha = alpha
            else:
                self._cached_alpha = np.array(alpha, np.float64)
        return self._cached_inverse

    def subset(self, select) -> "DistanceConstraints":
        return DistanceConstraints(self.indices[select], self.rest_length[select], self.inv_mass,
                                   slice_compliance(self.compliance, select))

    def corrections(self, x, alpha, lam):
        """XPBD update of every constraint in the batch from positions ``x`` (n, 3).

        For C = |x_i - x_j| - l0 with grad_C_i = n = (x_i - x_j)/|x_i - x_j| = -grad_C_j:
            dlambda = (-C - alpha * lambda) / (w_i + w_j + alpha),   alpha = compliance / dt^2
            dx_i = w_i * dlambda * n,   dx_j = -w_j * dlambda * n
        With alpha = 0 this is PBD's projection dx_i = -w_i / (w_i + w_j) * C * n. alpha is a scalar or (m,).
        Returns dx of shape (m, 2, 3) and dlambda of shape (m,).
        """
        d = x[self.i] - x[self.j]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        # A zero-length edge has no direction, and an edge between two pins no mobility: both get dlambda = 0.
        safe_length = np.maximum(length, 1e-12)
        dlam = -(length - self.rest_length + alpha * lam) * self._inverse_denominator(alpha)
        scaled = (dlam / safe_length)[:, None] * d
        dx = np.empty((len(d), 2, 3))
        dx[:, 0] = self.w_i[:, None] * scaled
        dx[:, 1] = -self.w_j[:, None] * scaled
        return dx, dlam
