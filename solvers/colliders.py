"""Analytic colliders (ground plane, sphere) and the position-level contact response shared by solvers.

A collider keeps particles on its outside, at least ``thickness`` metres from its surface.

Sphere pads: a sphere also keeps each particle of a body with triangles a little further out, at
``padded_radius(radius + thickness, pad2)`` from its centre, so that the triangles around the particle stay outside
the sphere too (``face_contact.sphere_pads`` says how pad2 is chosen). A ground plane needs no pad: a flat face
cannot dip below a plane its corners are above. Every ``distance`` and ``distance_and_normal`` takes ``pad2`` (rows
aligned with x, or None for no pad); ground planes ignore it.
"""
from dataclasses import dataclass

import numpy as np

PAD_LIMIT = 0.01
"""A sphere's pad never holds a particle more than this fraction of radius + thickness further out (1 cm on a 1 m
sphere): on a mesh far coarser than the sphere the pad that would keep every face out can be large, and a vertex
resting on the sphere's top under a tent of faces would float by that much. The exact face push
(``face_contact.resolve_face_contacts``) keeps the faces out wherever the pad falls short."""


def padded_radius(rho: float, pad2: np.ndarray) -> np.ndarray:
    """sqrt(rho^2 + pad2) [m], rho = radius + thickness, pad2 (k,) [m^2] capped at PAD_LIMIT: the particles' own
    contact radii."""
    cap2 = ((1.0 + PAD_LIMIT) ** 2 - 1.0) * rho * rho
    return np.sqrt(rho * rho + np.minimum(pad2, cap2))


@dataclass
class GroundPlane:
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

    def __post_init__(self):
        self.point = np.asarray(self.point, float)
        n = np.asarray(self.normal, float)
        self.normal = n / np.linalg.norm(n)

    def distance_and_normal(self, x: np.ndarray, pad2=None):
        """Signed distance [m] beyond the thickness, shape (n,), and outward normals, shape (n, 3). pad2: ignored
        (see the module docstring)."""
        return self.distance(x), np.broadcast_to(self.normal, x.shape)

    def distance(self, x: np.ndarray, pad2=None) -> np.ndarray:
        """The signed distance of ``distance_and_normal`` alone, shape (n,)."""
        # Not `@`: a matrix-vector product goes through multithreaded BLAS, which is slow on busy machines.
        return x[:, 0] * self.normal[0] + x[:, 1] * self.normal[1] + x[:, 2] * self.normal[2] - (self.point @ self.normal + self.thickness)


@dataclass
class Sphere:
    """Solid sphere; bodies stay outside it."""

    center: np.ndarray
    """Centre [m], shape (3,)."""
    radius: float
    """Radius [m]."""
    thickness: float = 0.0
    friction: float = 0.0
    name: str = ""

    def __post_init__(self):
        self.center = np.asarray(self.center, float)

    def _reach(self, pad2):
        """The contact radius [m]: radius + thickness, or per particle with pads (module docstring)."""
        rho = self.radius + self.thickness
        return rho if pad2 is None else padded_radius(rho, pad2)

    def distance_and_normal(self, x: np.ndarray, pad2=None):
        """Signed distance [m] beyond the thickness (and the pads pad2 (n,) [m^2], if given), shape (n,), and
        outward normals, shape (n, 3)."""
        r = x - self.center
        dist = np.sqrt(np.einsum("ij,ij->i", r, r))
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
        return np.sqrt(np.einsum("ij,ij->i", r, r)) - self._reach(pad2)


def signed_distance(collider, x, pad2=None) -> np.ndarray:
    """The collider's signed distance (n,) without the normals when it can (``distance``): a contact pass needs
    normals only at the few particles it moves."""
    distance = getattr(collider, "distance", None)
    return distance(x, pad2) if distance is not None else collider.distance_and_normal(x, pad2)[0]


def _rows(pad2, rows):
    return None if pad2 is None else pad2[rows]


def resolve_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, colliders, pad2=None) -> int:
    """Project penetrating particles onto each collider's surface, in place, with position-level friction.

    ``x`` (n, 3) are the positions at the end of the step, ``x_prev`` (n, 3) at its start: friction removes
    up to ``friction * depth`` of the tangential motion over the step (static and kinetic friction in one
    coefficient, as in Macklin et al. 2014, "Unified particle physics"). Pinned particles
    (``inv_mass == 0``) are never moved. pad2 (n,) [m^2]: the particles' sphere pads (module docstring), or None.
    Returns the number of contacts found.

    Known limitation (issue 12): a body that should land without sliding can roll away when this is the only
    contact response. The projection stops each penetrating particle on its own, after the solver's step, so the
    ground's reaction on particle i is m_i * depth_i / dt: it follows the lumped masses of the contact layer, not the
    body's elasticity (in PBD/XPBD with one sweep per substep a constraint passes on only w_j / (w_i + w_j) of its
    correction when particle i is pinned by the ground afterwards). On the tetrahedralized ico sphere the ring around
    the pole has masses 1.7 to 2.9 g, which puts the load 1.2 cm off the vertical through the centre of mass: with
    friction 0.0 XPBD left the first bounce with |L| = 0.1 kg m^2/s (converged symplectic Euler: 0.012), and friction
    turned that spin into rolling (41-43 cm in 1 s after a 10 cm drop). Tried and measured, none a fix: colour
    order reversed or shuffled per step, contacts projected before and after a single sweep (no change), contact
    particles given infinite mass in the sweep (the 1.5 m drop then drifts 5 mm, but a frictionless ground
    stops conserving momentum, PBD explodes, and a sphere resting on its pole still rolls). PBD/XPBD now project
    contacts inside their iterations (``ContactConstraints``, at least two sweeps in a step with contacts; figures
    in position_based.CONTACT_ITERATIONS) and call this only as a safety net; the other solvers still rely on it.
    Even converged (XPBD, 20 iterations) the ico sphere travels 48 mm: its lowest vertex is 38 mm off the vertical
    through the centre of mass, so it tips over onto its neighbours (NEWTON: 33 mm).

    What is left is not contact handling (measured, ico sphere dropped pole down, friction 0.5, damping 0): the pole
    lies exactly under the centre of mass, yet XPBD rolls 85 mm, PBD 109, implicit Euler 40, while NEWTON (stable
    Neo-Hookean) stays at 0.0. The push comes from the material: a spring network along the tet edges is isotropic
    only on average (``material.py``), so the first bounce on the pole leaves with 0.010-0.021 kg m/s of sideways
    momentum in every spring-based solver (NEWTON: 0.0005), and elastic bounces on one point amplify the tilt until
    the body tips onto a face. Converged XPBD (120 substeps x 10 iterations) rolls 102 mm, and NEWTON with the same
    springs swapped in for its Neo-Hookean energy 90 mm: the spring model itself tips. Damping hides it (XPBD 39 / 15
    mm at 2 / 5 1/s); PROJECTIVE's 0.4 mm at its defaults is its numerical damping (24 x 10: 57 mm). The fix is
    element-based elasticity (strain of each tet, as NEWTON and PD's local step have) in PBD/XPBD and the mass-spring
    solvers, not a change here. Done since (24 frames, pole down): PBD/XPBD per-tet Neo-Hookean constraints with an
    order-symmetric last sweep (``position_based.SYMMETRIC_SWEEPS``) 3.2 mm, implicit Euler Neo-Hookean with
    contacts in its solve 1.8 mm; symplectic Euler (springs) passes at the softer E of the scenario table.
    """
    free = inv_mass > 0.0
    contacts = 0
    for collider in colliders:
        hit = np.nonzero((signed_distance(collider, x, pad2) < 0.0) & free)[0]
        if len(hit) == 0:
            continue
        contacts += len(hit)
        d, normal = collider.distance_and_normal(x[hit], _rows(pad2, hit))  # normals of the hits only (same values)
        depth = -d
        x[hit] += depth[:, None] * normal
        if collider.friction > 0.0:
            moved = x[hit] - x_prev[hit]
            tangential = moved - np.einsum("ij,ij->i", moved, normal)[:, None] * normal
            slide = np.linalg.norm(tangential, axis=1)
            keep = np.where(slide > 1e-15, np.clip(1.0 - collider.friction * depth / np.maximum(slide, 1e-15), 0.0, 1.0), 0.0)
            x[hit] -= (1.0 - keep)[:, None] * tangential
    return contacts


def deepest_penetration(x: np.ndarray, colliders, mask: np.ndarray = None) -> float:
    """Largest depth [m] of any particle inside any collider's surface (thickness not counted), >= 0."""
    depth = 0.0
    for collider in colliders:
        d, _ = collider.distance_and_normal(x)
        d = d + collider.thickness
        if mask is not None:
            d = d[mask]
        if len(d):
            depth = max(depth, float(-d.min()))
    return depth


class ContactConstraints:
    """Collider contacts as inequality constraints inside a position-based solve (Müller et al. 2007, section 3.4).

    Generated once per step from the predicted positions: every free particle within ``margin`` of a collider's
    surface gets the plane tangent to that surface at its closest point, n . x >= offset (exact for a ground plane,
    linearized for a sphere). ``project`` (once per solver iteration, after the constraint sweeps) moves each
    particle that is below its plane back onto it along n and accumulates the normal correction; ``apply_friction``
    (once per step, after the iterations) removes the tangential motion of the step, x - x_prev, of every particle
    that was pushed, up to ``friction`` times its accumulated normal correction (static friction when the slip is
    smaller, kinetic otherwise; Macklin et al. 2014 section 6.1). pad2: as in ``resolve_contacts``.
    """

    def __init__(self, x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, colliders, pad2=None):
        free = inv_mass > 0.0
        moved = x - x_prev
        step = np.sqrt(np.einsum("ij,ij->i", moved, moved))
        self.sets = []
        for collider in colliders:
            hit = np.nonzero((signed_distance(collider, x, pad2) < step) & free)[0]
            if len(hit) == 0:
                continue
            near = x[hit]
            d, n = collider.distance_and_normal(near, _rows(pad2, hit))  # the candidates' normals only
            normal = np.array(n)
            # offset: n . x on the surface (x - d n is the closest surface point, thickness included).
            offset = np.einsum("ij,ij->i", near, normal) - d
            self.sets.append((collider, hit, normal, offset, np.zeros(len(hit))))

    def __bool__(self):
        return bool(self.sets)

    def project(self, x: np.ndarray) -> None:
        for _, hit, normal, offset, pushed in self.sets:
            depth = offset - np.einsum("ij,ij->i", x[hit], normal)
            np.maximum(depth, 0.0, out=depth)
            x[hit] += depth[:, None] * normal
            pushed += depth

    def apply_friction(self, x: np.ndarray, x_prev: np.ndarray) -> None:
        for collider, hit, normal, offset, pushed in self.sets:
            if collider.friction <= 0.0:
                continue
            touched = pushed > 0.0
            idx, nrm, push = hit[touched], normal[touched], pushed[touched]
            moved = x[idx] - x_prev[idx]
            tangential = moved - np.einsum("ij,ij->i", moved, nrm)[:, None] * nrm
            slide = np.sqrt(np.einsum("ij,ij->i", tangential, tangential))
            remove = np.where(slide > 1e-15, np.minimum(1.0, collider.friction * push / np.maximum(slide, 1e-15)), 0.0)
            x[idx] -= remove[:, None] * tangential
