"""The gas inside a closed cloth: an isothermal ideal gas whose gauge pressure is ``pressure`` at the rest volume.

Model. A closed surface (triangles, consistently oriented) encloses the volume

    V(x) = sum_f a_f . (b_f x c_f) / 6        [m^3]   (divergence theorem; corners a, b, c of face f)

and the gas in it follows Boyle's law at constant temperature, P(V) V = p V0, with p = ``config.pressure`` [Pa] the
gauge pressure when the body has its rest volume V0 (its mesh as modelled). Its stored energy is the work the gas
does as it expands,

    E(x) = -p V0 ln(V / V0)                   [J],

    grad_a E = -P(V) grad_a V,    grad_a V = sum over faces f around a of A_f n_f / 3

(P times each face's area-weighted normal, a third to each corner: the pressure pushes every face outward).

Why Boyle and not a constant pressure: with a constant p the energy -p V falls like -R^3 as a balloon grows while a
Hooke membrane's energy only rises like R^2, so the potential has no lower bound: above p = 2 sqrt(3) k / R0 (a
spring network of stiffness k [N/m] on a sphere of radius R0) a constant-pressure balloon grows for ever, and an
implicit solver's line search can follow it down. -p V0 ln V grows only logarithmically, so every pressure has an
equilibrium, squashing the body raises its pressure (a cushion or a ball pushes back harder the more it is
flattened, as sealed air does), and V -> 0 costs infinite energy (the term is its own barrier: the line searches of
IMPLICIT_EULER and NEWTON never accept a step through V = 0). The outside atmosphere is left out, so the gas is as
soft as ``pressure`` says (bulk modulus P instead of P + 101 kPa): a sealed beach ball is much stiffer than this.
Blender's Cloth pressure with Pressure Scale follows the same V0 / V law around its target volume.

Hessian. d2E = (p V0 / V^2) grad V grad V^T - P d2V. The first term is a dense rank-one matrix over every vertex
(``rank_one``). d2V has no diagonal blocks; edge (a, b), with c the third corner of the face in which a is followed by
b and d that of the face in which b is followed by a, gets the block d2V / da db = [d - c]x / 6 (the cross-product
matrix), and (b, a) its transpose: ``hessian(x, project=False)`` returns -P times these (the exact Hessian less the
rank-one term; tests/test_pressure_sewing.py checks the sum against finite differences).

What the solvers get (``project=True``): no curvature at all, zero blocks on the same stencil. The gas then enters
every linearization of IMPLICIT_EULER and every NEWTON iteration through its force only (exact there; Newton still
converges, the line searches still see the true energy). Why not the PSD projection of -P d2V: projected edge by edge
(each 6 x 6 part [[0, S], [S^T, 0]], S = -P [w]x / 6, turned into 1/2 [[|S|, S], [S^T, |S|]]) it charges a stiffness
to moving the body as a whole, which the gas does not resist; implicit Euler, which takes one Newton step per
linearization, then let a balloon fall at 0.035 m/s instead of accelerating at g. The rank-one term would be the
right curvature (PSD, blind to rigid motion) but is dense, which the solvers' fixed sparse patterns cannot hold.
"""
import numpy as np

from .base import BlockHessian, Energy, scatter


class OpenSurfaceError(ValueError):
    """The triangles do not close a volume (``closed_surface_problem`` says how)."""


def closed_surface_problem(triangles):
    """None if ``triangles`` (t, 3) close a consistently oriented surface (every edge in exactly two faces, once in
    each direction); else (kind, count): 'none' (no faces), 'open' (count boundary edges), 'nonmanifold' (count edges
    in more than two faces) or 'flipped' (count edges whose two faces disagree in orientation)."""
    f = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(f) == 0:
        return ("none", 0)
    directed = f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    lo, hi = directed.min(1), directed.max(1)
    key = lo * (int(f.max()) + 1) + hi
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    if np.any(counts == 1):
        return ("open", int(np.sum(counts == 1)))
    if np.any(counts > 2):
        return ("nonmanifold", int(np.sum(counts > 2)))
    forward = np.bincount(inverse, weights=(directed[:, 0] < directed[:, 1]), minlength=len(counts))
    if np.any(forward != 1):
        return ("flipped", int(np.sum(forward != 1)))
    return None


def enclosed_volume(x, triangles) -> float:
    """Signed volume [m^3] that the oriented triangles (t, 3) enclose at positions x (n, 3), about the centroid of
    the triangles' corners (little cancellation far from the origin)."""
    f = np.asarray(triangles, np.int64).reshape(-1, 3)
    o = x[f].reshape(-1, 3).mean(0)
    a, b, c = x[f[:, 0]] - o, x[f[:, 1]] - o, x[f[:, 2]] - o
    return float(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0


class GasPressure(Energy):
    """E = -p V0 ln(V / V0) of the gas inside a closed surface (module docstring).

    triangles (t, 3): the closed surface (either orientation: it is turned outward here); rest_positions (n, 3) [m];
    pressure p [Pa] > 0, the gauge pressure at the rest volume. Raises OpenSurfaceError if the triangles do not
    close a volume or enclose none.
    """

    def __init__(self, triangles, rest_positions, pressure: float):
        f = np.asarray(triangles, np.int64).reshape(-1, 3)
        problem = closed_surface_problem(f)
        if problem is not None:
            raise OpenSurfaceError(f"pressure needs a closed surface: {problem[0]} ({problem[1]} edges)")
        if not pressure > 0.0:
            raise ValueError(f"pressure must be positive, got {pressure}")
        rest = np.asarray(rest_positions, np.float64)
        volume = enclosed_volume(rest, f)
        if volume < 0.0:
            f = f[:, [0, 2, 1]]  # normals inward: turn every face so that the gas pushes outward
            volume = -volume
        if not volume > 1e-12 * max(float(np.ptp(rest, axis=0).max()), 1e-300) ** 3:
            raise OpenSurfaceError("pressure needs a surface that encloses a volume, and this one encloses none")
        self.triangles = f
        self.pressure = float(pressure)
        self.rest_volume = volume
        """V0 [m^3]: the volume at which the gauge pressure is ``pressure``."""
        self.work = self.pressure * volume
        """p V0 [J]."""
        # Each undirected edge (a, b), a < b, with c the corner opposite a -> b and d the one opposite b -> a.
        tail = f.ravel()
        head = f[:, [1, 2, 0]].ravel()
        opposite = f[:, [2, 0, 1]].ravel()
        n = int(f.max()) + 1
        forward = tail < head
        order_f = np.argsort((tail * n + head)[forward], kind="stable")
        order_b = np.argsort((head * n + tail)[~forward], kind="stable")
        self.a = tail[forward][order_f]
        self.b = head[forward][order_f]
        self.c = opposite[forward][order_f]
        self.d = opposite[~forward][order_b]
        self.rows = np.concatenate([self.a, self.b, self.a, self.b])
        self.cols = np.concatenate([self.a, self.b, self.b, self.a])

    def volume(self, x) -> float:
        """V [m^3] at positions x (n, 3)."""
        return enclosed_volume(x, self.triangles)

    def gauge_pressure(self, x) -> float:
        """P(V) = p V0 / V [Pa] at positions x (inf once V <= 0)."""
        volume = self.volume(x)
        return self.work / volume if volume > 0.0 else np.inf

    def volume_gradient(self, x) -> np.ndarray:
        """dV/dx (n, 3) [m^2]: each face's area-weighted normal A_f n_f, a third to each corner."""
        f = self.triangles
        a, b, c = x[f[:, 0]], x[f[:, 1]], x[f[:, 2]]
        normal = np.cross(b - a, c - a) / 6.0  # A_f n_f / 3
        return scatter(f, np.repeat(normal[:, None, :], 3, axis=1), len(x))

    def value(self, x) -> float:
        volume = self.volume(x)
        if not volume > 0.0:
            return np.inf
        return -self.work * float(np.log(volume / self.rest_volume))

    def gradient(self, x) -> np.ndarray:
        volume = self.volume(x)
        if not volume > 0.0:
            return np.zeros_like(x)
        return -(self.work / volume) * self.volume_gradient(x)

    def force(self, x) -> np.ndarray:
        """-dE/dx [N] (n, 3): the gas pushing each vertex's faces outward."""
        return -self.gradient(x)

    def rank_one(self, x):
        """(coefficient p V0 / V^2 [Pa / m^3], dV/dx (n, 3)): the dense term coefficient * g g^T of the Hessian that
        ``hessian`` leaves out."""
        volume = self.volume(x)
        return self.work / volume**2, self.volume_gradient(x)

    def hessian(self, x, project=True) -> BlockHessian:
        """Blocks (a, a), (b, b), (a, b), (b, a) per edge: with ``project`` all zero (what the solvers use: module
        docstring), else -P d2V, the exact Hessian less the rank-one term (``rank_one``)."""
        if project:
            return BlockHessian(self.rows, self.cols, np.zeros((len(self.rows), 3, 3)))
        volume = self.volume(x)
        pressure = self.work / volume if volume > 0.0 else 0.0
        S = -pressure / 6.0 * _cross_matrix(x[self.d] - x[self.c])
        diagonal = np.zeros_like(S)
        return BlockHessian(self.rows, self.cols, np.concatenate([diagonal, diagonal, S, np.swapaxes(S, 1, 2)]))


def _cross_matrix(w):
    """[w]x (m, 3, 3): [w]x v = w x v."""
    m = np.zeros((len(w), 3, 3))
    m[:, 0, 1], m[:, 0, 2] = -w[:, 2], w[:, 1]
    m[:, 1, 0], m[:, 1, 2] = w[:, 2], -w[:, 0]
    m[:, 2, 0], m[:, 2, 1] = -w[:, 1], w[:, 0]
    return m


def gas_pressure(model, config):
    """The GasPressure of a cloth (faces, no tets) with ``config.pressure`` > 0, else None."""
    pressure = float(getattr(config, "pressure", 0.0))
    if not pressure > 0.0 or model.tet_count or len(model.triangle_indices) == 0:
        return None
    return GasPressure(model.triangle_indices, model.rest_positions, pressure)
