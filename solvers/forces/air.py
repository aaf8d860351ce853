"""Aerodynamic drag on a cloth's faces: the air pushes on a face along its normal, and drags a little along it.

A face of area A and unit normal n moving at v through air that moves at u feels, with w = v - u,

    F = -1/2 rho A (C_n |w.n| (w.n) n + C_t |w_t| w_t),     w_t = w - (w.n) n,

the quadratic (high-Reynolds-number) pressure drag of a flat plate across its normal, plus a small skin-friction
drag along it (Hoerner, "Fluid-Dynamic Drag", 1965: a flat plate broadside has C ~ 1.17 to 1.28, skin friction
about 1% of that). rho = AIR_DENSITY, C_n = the body's ``air_drag`` (dimensionless), C_t = TANGENTIAL_FRACTION * C_n.
A face is two-sided: |w.n| (w.n) flips with n, so the winding does not matter. The normal force on an inclined
face also points across the flow: that is a flat plate's lift (a kite, a flag's flapping), with no separate term.

Per particle: the faces are lumped to their corners as area vectors, a_i = sum over the faces f at i of A_f n_f / 3
(for a flat sheet each vertex's share of its area along the normal; opposite faces of a fold cancel, so a folded
double layer catches the air once, as it does). Each particle then feels the formula above with A = |a_i|,
n = a_i / |a_i| and its own relative velocity w_i. A flat sheet moving as a whole feels exactly the face formula:
falling flat at terminal speed v_t = sqrt(2 m g / (rho C_n A)), edge-on only the skin friction.

``loads.py`` applies it by backward Euler per particle (``relax``: exact in closed form for the quadratic law), which
never reverses a relative velocity and is stable at any step.
"""
import numpy as np
import scipy.sparse as sp

AREA_REFRESH_TIME = 1.0 / 200.0
"""[s] ``relax`` re-measures the faces (area vectors) once this much step time has passed since it last did (every 4th
XPBD substep at 24 fps, every step of the implicit solvers): a face turns little in 5 ms, and measuring is most of the
air's cost (8k triangles: about 2.5 ms)."""
AIR_DENSITY = 1.2
"""rho [kg/m^3]: air at sea level and 20 C."""
TANGENTIAL_FRACTION = 0.02
"""C_t / C_n: skin friction along a face relative to its pressure drag across it (a flat plate: ~0.005-0.01 per side
at the Reynolds numbers of cloth, two sides; rounded up so that a flag's fluttering is damped a little)."""


class AirDrag:
    """The air model of one body's faces (``triangle_indices`` of its Model, (t, 3)) with drag coefficient
    ``coefficient`` (C_n, dimensionless, > 0)."""

    def __init__(self, triangles: np.ndarray, particle_count: int, coefficient: float):
        self.triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
        self.particle_count = particle_count
        self.coefficient = float(coefficient)
        t = self.triangles
        # corners (n, t): 1/6 where particle i is a corner of face f, so that corners @ (e1 x e2) = sum A_f n_f / 3.
        self._area = None  # (|a| (n,), a/|a| (n, 3)) last measured by relax, and the step time [s] since
        self._since = 0.0
        self.corners = sp.csr_matrix((np.full(t.size, 1.0 / 6.0), (t.ravel(), np.repeat(np.arange(len(t)), 3))),
                                     shape=(particle_count, len(t)))

    def area_vectors(self, x: np.ndarray) -> np.ndarray:
        """a_i = sum over the faces at particle i of A_f n_f / 3 [m^2], (n, 3), at positions x (n, 3)."""
        t = self.triangles
        p0 = x[t[:, 0]]
        e1, e2 = x[t[:, 1]] - p0, x[t[:, 2]] - p0
        cross = np.empty_like(e1)  # e1 x e2 = 2 A n, by components (np.cross is several times slower)
        cross[:, 0] = e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1]
        cross[:, 1] = e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2]
        cross[:, 2] = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
        return self.corners @ cross

    def forces(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """F (n, 3) [N] on particles at x moving at w (n, 3) [m/s] relative to the air (module docstring)."""
        area, normal = _split(self.area_vectors(x))
        wn = np.einsum("ij,ij->i", w, normal)
        wt = w - wn[:, None] * normal
        half_rho_a = 0.5 * AIR_DENSITY * area
        return -(half_rho_a * self.coefficient * np.abs(wn) * wn)[:, None] * normal \
            - (half_rho_a * self.coefficient * TANGENTIAL_FRACTION * np.linalg.norm(wt, axis=1))[:, None] * wt

    def relax(self, x: np.ndarray, w: np.ndarray, dt: float, inv_mass: np.ndarray) -> np.ndarray:
        """The relative velocities (n, 3) after ``dt`` seconds of drag alone, by backward Euler per particle (the face
        geometry a_i frozen at x): with b = dt rho A / (2 m), each part solves its own quadratic equation,

            w'_n (1 + b C_n |w'_n|) = w_n,   w'_t (1 + b C_t |w'_t|) = w_t,
            so  w' = w * 2 / (1 + sqrt(1 + 4 b C |w|))   (for each part),

        exactly, in closed form: each part shrinks, never reverses, whatever dt, and a body falling at its terminal
        speed keeps it exactly (pinned particles, inv_mass 0, keep w). The face geometry is re-measured at x once
        AREA_REFRESH_TIME of step time has passed since it last was (and on the first call)."""
        if self._area is None or self._since >= AREA_REFRESH_TIME:
            self._area, self._since = _split(self.area_vectors(x)), 0.0
        self._since += dt
        area, normal = self._area
        wn = np.einsum("ij,ij->i", w, normal)
        wt = w - wn[:, None] * normal
        b = 0.5 * AIR_DENSITY * area * dt * inv_mass
        cn = self.coefficient
        factor_n = 2.0 / (1.0 + np.sqrt(1.0 + 4.0 * b * cn * np.abs(wn)))
        factor_t = 2.0 / (1.0 + np.sqrt(1.0 + 4.0 * b * cn * TANGENTIAL_FRACTION * np.sqrt(np.einsum("ij,ij->i", wt, wt))))
        return (factor_n * wn)[:, None] * normal + factor_t[:, None] * wt


def _split(a: np.ndarray):
    """(|a| (n,), a / |a| (n, 3), zero where |a| = 0)."""
    area = np.sqrt(np.einsum("ij,ij->i", a, a))
    normal = np.divide(a, area[:, None], out=np.zeros_like(a), where=area[:, None] > 0.0)
    return area, normal
