"""Distance constraints C = |x_i - x_j| - l0 (Müller et al. 2007; compliant form Macklin et al. 2016).

Three kernels compute the same XPBD update (``DistanceConstraints.corrections``):
- ``corrections`` itself, for any batch (returns dx, the caller applies it);
- ``DistanceColourSweep``: a whole Gauss-Seidel sweep over colours, on structure-of-arrays slices in a
  colour-sorted particle order (``solvers.colouring.ColourOrder``), with preallocated buffers and ``out=``;
- ``DistanceConstraints.jacobi``: a whole Jacobi sweep, gathering once and summing per particle with one sorted
  ``np.add.reduceat`` instead of a sparse matrix product.
They agree to round-off (tests/test_kernels.py); the last two are what ``solvers/position_based.py`` runs.
"""
import numpy as np

from ..colouring import ColourOrder, colour_order_pays


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
        self._jacobi_layout = None

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

    def colour_sweep(self, colours, particle_count: int):
        """The fast Gauss-Seidel sweep over ``colours`` (lists of constraint indices sharing no particle), a
        ``DistanceColourSweep``; None when the colours touch too few particles for it to pay
        (``colouring.colour_order_pays``)."""
        if not colour_order_pays(self.indices, colours, particle_count):
            return None
        return DistanceColourSweep(self, colours, particle_count)

    def native_sweep(self, library, colours, particle_count: int):
        """The same Gauss-Seidel sweep as ``colour_sweep`` in C (``solvers.native.kernels.DistanceSweep``), for a
        loaded native ``library``; pays at every size (no reordering of memory)."""
        from ..native.kernels import DistanceSweep

        return DistanceSweep(library, self, colours, particle_count)

    def _jacobi_setup(self, particle_count: int) -> dict:
        """Gather indices (3, 2, m) into x.reshape(-1), and the sort that groups the 2 m corrections by particle."""
        m, n = len(self), particle_count
        xyz = np.arange(3)[:, None]
        gather = np.stack([3 * self.i[None, :] + xyz, 3 * self.j[None, :] + xyz], axis=1)  # (3, 2, m)
        # Sum in the order of the flat (i0, j0, i1, j1, ...) list, as the sparse product did: same round-off.
        particle = self.indices.ravel()
        by_particle = np.argsort(particle, kind="stable")  # positions in (i0, j0, i1, ...) order
        columns = (by_particle % 2) * m + by_particle // 2  # the same corrections in the (2 m,) = (2, m) layout
        sorted_particle = particle[by_particle]
        starts = np.concatenate([[0], np.nonzero(np.diff(sorted_particle))[0] + 1])
        touched = sorted_particle[starts]
        self._jacobi_layout = dict(
            n=n, gather=gather, columns=columns, starts=starts, touched=touched, all_touched=len(touched) == n,
            ends=np.empty((3, 2, m)), d=np.empty((3, m)), t=np.empty((3, m)), s=np.empty(m), length=np.empty(m),
            weights=np.stack([self.w_i, -self.w_j])[None],  # (1, 2, m): +w_i, -w_j
            grouped=np.empty((3, 2 * m)),
        )
        return self._jacobi_layout

    def jacobi(self, x, alpha, lam, constraint_scale=None, particle_divisor=None) -> None:
        """One Jacobi sweep in place: every constraint's update from the same x, summed per particle.

        x (n, 3) C-contiguous float64; alpha scalar or (m,); lam (m,) updated in place.
        constraint_scale (m,): each constraint's dx and dlambda are multiplied by it (XPBD's 1 / (r + n_c));
        particle_divisor (n,): the summed dx of each particle is divided by it (PBD's lab average r + n_i).
        Equals ``corrections`` followed by the sum per particle to round-off (same operations, same order).
        """
        layout = self._jacobi_layout
        if layout is None or layout["n"] != len(x):
            layout = self._jacobi_setup(len(x))
        if not (x.flags.c_contiguous and x.dtype == np.float64):
            raise ValueError("DistanceConstraints.jacobi needs a C-contiguous float64 (n, 3) array")
        ends, t = layout["ends"], layout["t"]
        np.take(x.reshape(-1), layout["gather"], out=ends, mode="clip")
        dlam = _project_ends(ends[:, 0], ends[:, 1], layout["d"], t, layout["length"], layout["s"], self.rest_length,
                             alpha, lam, self._inverse_denominator(alpha))
        np.multiply(layout["weights"], t[:, None, :], out=ends)  # dx of both ends: +w_i t, -w_j t
        if constraint_scale is not None:
            np.multiply(ends, constraint_scale, out=ends)
            np.multiply(dlam, constraint_scale, out=dlam)
        lam += dlam
        grouped = layout["grouped"]
        np.take(ends.reshape(3, -1), layout["columns"], axis=1, out=grouped, mode="clip")
        total = np.add.reduceat(grouped, layout["starts"], axis=1)  # (3, particles in a constraint)
        if particle_divisor is not None:
            total /= particle_divisor[layout["touched"]]
        if layout["all_touched"]:
            x += total.T
        else:
            x[layout["touched"]] += total.T


def _project_ends(xi, xj, d, t, length, s, rest, alpha, lam, inverse_denominator):
    """The XPBD distance update of m constraints from their ends xi, xj (3, m) (structure of arrays).

    Writes d = xi - xj, t = (dlambda / |d|) d (3, m), and returns dlambda (m,) (a new array); length and s are
    (m,) scratch. The operations and their order are those of ``DistanceConstraints.corrections``, whose row sum
    d.d is NumPy's einsum (x^2 + z^2) + y^2: the results agree bit for bit where einsum sums that way.
    """
    np.subtract(xi, xj, out=d)
    np.multiply(d, d, out=t)
    np.add(t[0], t[2], out=length)
    np.add(length, t[1], out=length)
    np.sqrt(length, out=length)
    np.maximum(length, 1e-12, out=s)
    # -(l - l0 + alpha lambda) written as (l0 - l) - alpha lambda: the same value to the bit, one operation fewer.
    dlam = np.subtract(rest, length)
    if not (np.ndim(alpha) == 0 and alpha == 0.0):  # PBD: alpha * lambda is 0
        np.multiply(alpha, lam, out=length)
        np.subtract(dlam, length, out=dlam)
    np.multiply(dlam, inverse_denominator, out=dlam)
    np.divide(dlam, s, out=s)
    np.multiply(s, d, out=t)
    return dlam


class DistanceColourSweep:
    """A Gauss-Seidel sweep of a DistanceConstraints set, colour by colour, on contiguous slices.

    The particles are put in each colour's order (``ColourOrder``: the m_c first ends, then the m_c second
    ends, then the rest) as a structure of arrays Y (3, n); a colour's update is then ~15 whole-array
    operations on (3, m_c) slices with preallocated buffers, and the state moves from one colour's order to the
    next by one gather. Same update as ``corrections`` applied colour after colour (to round-off).
    """

    def __init__(self, constraints: DistanceConstraints, colours, particle_count: int):
        self.constraints = constraints
        colours = [np.asarray(c, np.int64) for c in colours]
        self.order = ColourOrder(constraints.indices, colours, particle_count)
        self.subsets = [DistanceConstraints(constraints.indices[c], constraints.rest_length[c], constraints.inv_mass,
                                            slice_compliance(constraints.compliance, c)) for c in colours]
        self.weights = [np.stack([b.w_i, -b.w_j])[None] for b in self.subsets]  # (1, 2, m): +w_i, -w_j
        self.scratch = [(np.empty((3, len(c))), np.empty((3, len(c))), np.empty((3, 2, len(c))), np.empty(len(c)),
                         np.empty(len(c))) for c in colours]

    def sweep(self, x, dt: float, lams, compliant: bool) -> None:
        """One sweep in place on x (n, 3) C-contiguous float64; lams: one (m_c,) multiplier array per colour."""
        def project(c, Y):
            batch = self.subsets[c]
            m = len(batch)
            d, t, u, length, s = self.scratch[c]
            ends = Y[:, :2 * m].reshape(3, 2, m)  # a view: [:, 0] the first ends, [:, 1] the second
            alpha = batch.alpha(dt) if compliant else 0.0
            dlam = _project_ends(ends[:, 0], ends[:, 1], d, t, length, s, batch.rest_length, alpha, lams[c],
                                 batch._inverse_denominator(alpha))
            np.multiply(self.weights[c], t[:, None, :], out=u)  # dx of both ends: +w_i t, -w_j t
            np.add(ends, u, out=ends)
            lams[c] += dlam

        self.order.sweep(x, project)
