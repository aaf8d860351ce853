"""The mollified slip of lagged IPC friction (Li et al. 2020, section 5; Li's solid-sim-tutorial, "4_friction").

For each particle in contact at the start of the step, with normal force lambda_i [N] (the barrier's
push at x^n), tangent projector T_i = I - n_i n_i^T (normal n_i at x^n) and tangential slip
u_i = T_i (x_i - x^n_i) [m]:

    D(x) = sum_i mu lambda_i f0(|u_i|)  [J]

f0 smooths |u| below the slip eps (= eps_v h, the course's eps_v = 1e-3 m/s), so that friction is
static (a stiff spring) for tiny slips and Coulomb (constant force mu lambda against the slip) above:

    f0(y) = -y^3 / (3 eps^2) + y^2 / eps + eps / 3   (y < eps),   y   (y >= eps)
    f1(y) = f0'(y) = 2 y / eps - y^2 / eps^2         (y < eps),   1   (y >= eps)

Gradient mu lambda f1(y) / y u. Hessian mu lambda [f1'(y) t t^T + f1(y) / y (T - t t^T)] with t = u / y;
both coefficients are >= 0, so it is PSD without projection. lambda and T are lagged (held at x^n), as in
the course: the step stays a minimization.
"""
import numpy as np

from .base import Energy


def mollified_slip(y, eps):
    """f0(y) of the module docstring: |u| smoothed below the slip eps [m], per contact."""
    return np.where(y >= eps, y, -(y**3) / (3 * eps**2) + y**2 / eps + eps / 3)


def mollified_slip_terms(y, eps):
    """The two scalars of f0(|u|)'s derivatives, per contact: (f1(y) / y, f1'(y)). The gradient in u is
    (f1 / y) u; the Hessian is f1' along t = u / |u| and f1 / y across it (on the tangent plane)."""
    across = np.where(y >= eps, 1.0 / np.maximum(y, 1e-300), (2.0 * eps - y) / eps**2)
    along = np.where(y >= eps, 0.0, 2.0 / eps - 2.0 * y / eps**2)
    return across, along


class LaggedFriction(Energy):
    """The lagged friction energy D(x) = sum_c w_c f0(|u_c|) over contacts c, shared by the collider, face and pair
    frictions (``collision/barriers``). A subclass sets ``weight`` (k,) mu lambda [N], ``eps`` [m] and ``T`` (k, 3, 3)
    the lagged tangent projectors, and defines ``_slip(x)`` -> (u (k, 3) [m] the tangential slips, |u| (k,) [m]);
    it maps the per-contact force and blocks below to its particles."""

    def value(self, x):
        _, y = self._slip(x)
        return float(np.sum(self.weight * mollified_slip(y, self.eps)))

    def slip_force(self, x):
        """dD/du per contact (k, 3) [N]: w f1(|u|) / |u| u."""
        u, y = self._slip(x)
        return (self.weight * mollified_slip_terms(y, self.eps)[0])[:, None] * u

    def slip_blocks(self, x):
        """d2D/du2 per contact (k, 3, 3) [N/m], PSD: w [f1' t t^T + f1 / |u| (T - t t^T)], t = u / |u|."""
        u, y = self._slip(x)
        across, along = (self.weight * term for term in mollified_slip_terms(y, self.eps))
        t = u / np.where(y > 0.0, y, 1.0)[:, None]
        tt = t[:, :, None] * t[:, None, :]
        return along[:, None, None] * tt + across[:, None, None] * (self.T - tt)
