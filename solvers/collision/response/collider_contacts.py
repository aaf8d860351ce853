"""The position-level contact response shared by PBD/XPBD, Projective Dynamics and the mass-spring integrators.

- ``ContactConstraints``: the point contacts of a step's contact set (``contact_set.find_contacts``) as inequality
  constraints inside a position-based solve (PBD/XPBD project them every iteration).
- ``resolve_contacts``: particles projected out of every collider at the end of a step, with friction.
- ``resolve_collider_contacts``: the end of a position-level step: vertices, then faces (colliders that reach
  between a triangle's corners), then the vertices again if a face moved.

Friction is position-level (Macklin et al. 2014, "Unified particle physics", section 6.1): a particle pushed by
``depth`` loses up to ``friction * depth`` of its tangential motion over the step *relative to the collider*
(``Collider.motion``), so a moving collider drags what rests on it. Contact planes come from ``Collider.contact``,
which sees the step continuously: a particle a fast collider swept past is pushed out on the side it came from.
"""
from dataclasses import replace

import numpy as np

from .contact_set import ContactSet, point_contacts


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


def _remove_slip(x, x_prev, rows, normal, budget, collider):
    """Remove the tangential motion of particles ``rows`` (k,) relative to the collider over the step, up to
    ``budget`` (k,) [m] each (all of it where the slip is smaller: static friction), in place on x."""
    moved = x[rows] - x_prev[rows] - collider.motion(x_prev[rows])
    tangential = moved - _dot(moved, normal)[:, None] * normal
    slide = np.sqrt(_dot(tangential, tangential))
    remove = np.where(slide > 1e-15, np.minimum(1.0, budget / np.maximum(slide, 1e-15)), 0.0)
    x[rows] -= remove[:, None] * tangential


def resolve_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, colliders, pad2=None) -> int:
    """Project penetrating particles onto each collider's contact plane, in place, with position-level friction.

    x (n, 3): positions at the end of the step [m]; x_prev (n, 3): at its start; inv_mass (n,) [1/kg], 0 for pinned
    particles (never moved); pad2 (n,) [m^2]: the particles' sphere pads (``colliders`` module docstring), or None.
    Friction removes up to ``friction * depth`` of the tangential motion relative to the collider (static and
    kinetic friction in one coefficient). Returns the number of contacts found.

    This response stops each penetrating particle on its own after the solver's step, so the ground's reaction
    follows the lumped masses of the contact layer, not the body's elasticity; PBD/XPBD therefore project contacts
    inside their iterations (``ContactConstraints``) and the mass-spring implicit solve keeps a solid's contacts in
    its linear system, leaving this as the safety net.
    """
    contacts = 0
    for c in point_contacts(x, x_prev, inv_mass, colliders, pad2):
        contacts += len(c.particles)
        depth = np.maximum(-c.distance, 0.0)
        x[c.particles] += depth[:, None] * c.normal
        if c.collider.friction > 0.0:
            _remove_slip(x, x_prev, c.particles, c.normal, c.collider.friction * depth, c.collider)
    return contacts


class ContactConstraints:
    """Collider contacts as inequality constraints inside a position-based solve (Müller et al. 2007, section 3.4).

    The point contacts of the step's contact set (``contact_set.find_contacts`` on the predicted positions): every
    free particle within its step's motion of a collider's surface has the contact plane n . x >= offset of
    ``Collider.contact`` (exact for a ground plane, linearized for a sphere). ``project`` (once per solver
    iteration, after the constraint sweeps) moves each particle that is below its plane back onto it along n and
    accumulates the normal correction; ``apply_friction``
    (once per step, after the iterations) removes the tangential motion of the step relative to the collider, of
    every particle that was pushed, up to ``friction`` times its accumulated normal correction (static friction when
    the slip is smaller, kinetic otherwise; Macklin et al. 2014 section 6.1).
    """

    def __init__(self, contacts: ContactSet):
        self.sets = [(c.collider, c.particles, c.normal, c.offset, np.zeros(len(c.particles))) for c in contacts.points]

    def __bool__(self):
        return bool(self.sets)

    def stabilize(self, x_prev: np.ndarray) -> None:
        """Move the step's start x_prev (n, 3) of every contact with a collider standing still over the step that
        began the step inside its plane onto it, along the normal, in place (Macklin et al. 2014, section 4.4:
        pre-stabilization). The step's push out of a penetration it began with (a cloth laid on a collider within its
        thickness, a thickness raised) then adds no velocity: without this, a cloth laid flat on the ground at z = 0
        left it at 7 m/s. A moving collider's planes are at its end pose: what its motion pushes keeps that velocity
        (its momentum handed on), so its contacts are left as they are."""
        for collider, hit, normal, offset, _ in self.sets:
            if collider.start is not None:
                continue
            depth = offset - _dot(x_prev[hit], normal)
            np.maximum(depth, 0.0, out=depth)
            x_prev[hit] += depth[:, None] * normal

    def project(self, x: np.ndarray) -> None:
        for _, hit, normal, offset, pushed in self.sets:
            depth = offset - _dot(x[hit], normal)
            np.maximum(depth, 0.0, out=depth)
            x[hit] += depth[:, None] * normal
            pushed += depth

    def apply_friction(self, x: np.ndarray, x_prev: np.ndarray) -> None:
        for collider, hit, normal, _, pushed in self.sets:
            if collider.friction <= 0.0:
                continue
            touched = pushed > 0.0
            _remove_slip(x, x_prev, hit[touched], normal[touched], collider.friction * pushed[touched], collider)


SWEEP_LENGTH = 0.02
"""[m] ``resolve_collider_contacts`` walks a step whose particles moved farther than this in sweeps of at most this
motion each (when a collider reaches between corners). Measured on a 3 m cloth (31 x 31) landing on a box mesh at
4 m/s in IMPLICIT_EULER (2 substeps): box edges cut the cloth with whole steps (8 to 19 cm of motion), none with
sweeps of 2, 4, 6 or 8 cm; 2 cm keeps a margin of four. Cost there: 0.07 -> 0.4 s/frame, mostly at rest, where the
solve pulls the vertex on a box corner 10 cm in every step (the cloth's contacts are not in its solve)."""
MAX_SWEEPS = 32
"""At most this many sweeps per step (a particle flung metres in one step lengthens the sweeps instead)."""


def contact_sweeps(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles, colliders) -> int:
    """How many sweeps ``resolve_collider_contacts`` divides the step x_prev -> x (n, 3) into: 1 without faces or a
    collider that reaches between corners, else ceil(largest free particle motion / SWEEP_LENGTH), at most
    MAX_SWEEPS; a particle's motion relative to a translating mesh collider counts too."""
    if not len(triangles) or not any(c.reaches_between_corners for c in colliders):
        return 1
    moved = (x - x_prev)[inv_mass > 0.0]
    if not len(moved):
        return 1
    longest = float(np.sqrt(_dot(moved, moved).max()))
    for collider in colliders:
        # A collider that translates answers in its own frame (``MeshCollider.translation``), where the particles
        # move by their motion less its own: that motion is the one its face-pair list must cover.
        own = collider._own_frame() if hasattr(collider, "_own_frame") else None
        if own is not None:
            relative = moved - (own[1] - own[2])
            longest = max(longest, float(np.sqrt(_dot(relative, relative).max())))
    return min(MAX_SWEEPS, max(1, int(np.ceil(longest / SWEEP_LENGTH))))


def resolve_collider_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray,
                              colliders, pad2=None) -> None:
    """The end of a position-level step, in place on x: the particles' motion x_prev -> x (n, 3) [m] walked in
    ``contact_sweeps`` sweeps, each resolved by ``_resolve_once`` from where the last one left the particles (with
    the colliders' own motion over the same fraction of the step, ``Collider.over``).

    Why sweeps: the face tests read the side of a collider corner or edge against a body face from the start of
    the motion they resolve, and find a pair only while it lies near. A step of several centimetres (an implicit
    cloth landing at 4 m/s with 2 substeps moves 8 cm) rotates a face across a collider edge in one go: the side
    read at the start no longer matches the pair's geometry at the end, the Jacobi passes leave the box edge
    through the face, and every later step reads its side from that crossed state. In sweeps of at most
    SWEEP_LENGTH the corrections stay small and each starts from a resolved state, as with 30 substeps."""
    sweeps = contact_sweeps(x, x_prev, inv_mass, triangles, colliders)
    if sweeps == 1:
        _resolve_once(x, x_prev, inv_mass, triangles, colliders, pad2)
        return
    motion = (x - x_prev) / sweeps
    start = x_prev.copy()
    for posed in sweep_poses(colliders, sweeps):
        end = start + motion
        _resolve_once(end, start, inv_mass, triangles, posed, pad2)
        start = end
    x[:] = start


def sweep_poses(colliders, sweeps: int) -> list:
    """The colliders posed over each of ``sweeps`` equal parts of the step: [[c.over(k / sweeps, (k + 1) / sweeps)
    for c in colliders] for k in range(sweeps)] (``resolve_collider_contacts``' sweeps; the native twin takes them as
    tables, ``AnalyticContacts.finish_sweeps``)."""
    return [[c.over(k / sweeps, (k + 1) / sweeps) for c in colliders] for k in range(sweeps)]


def _resolve_once(x, x_prev, inv_mass, triangles, colliders, pad2=None) -> None:
    """Vertices out of every collider (``resolve_contacts``, with the sphere pads
    pad2 (n,) [m^2] of ``faces.sphere_pads``), then faces out of the colliders that reach between corners
    (``Collider.resolve_faces``), then, if that pushed any face, the vertices once more: the vertex projection is the
    final word on every vertex (a face push where a sphere meets the ground must not leave a vertex below the
    ground). Vertices first, so that the face push finds the faces as the pads left them. In place on x."""
    resolve_contacts(x, x_prev, inv_mass, colliders, pad2)
    if len(triangles) and sum(c.resolve_faces(x, x_prev, inv_mass, triangles) for c in colliders):
        resolve_contacts(x, x_prev, inv_mass, colliders, pad2)


def resolve_deep_faces(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, triangles: np.ndarray, colliders,
                       allowance: float, native=None) -> int:
    """Push the triangles (t, 3) that lie deeper than ``allowance`` [m] inside a collider that reaches between corners
    back to that depth, in place on x (the face push of each such collider with its thickness lowered by allowance).
    Returns the contacts found.

    native: the solver's ``native.kernels.AnalyticContacts`` (built on these inv_mass and triangles) or None; when
    every collider is a ground plane or a sphere the pushes run in C (``AnalyticContacts.deep_faces``, the same
    operations in the same order), else here (mesh colliders and other kinds reaching between corners).

    The last word after self-collision, which moves particles that the collider contacts had put outside: on the
    lab cloth folding onto its sphere (PROJECTIVE 8 x 5, self-collision at 1 cm) its response and fail-safe left faces
    up to 7.9 mm in over 8 round-off paths (0.1-7.9 mm); this brings them to 0.8-3.8 mm, with no self-crossing. Not
    to the surface: pushing faces all the way out moved them through the layer lying on them (107 crossing pairs on
    one of those paths); a push of at most the excess depth stays below the layers' spacing (thickness)."""
    if native is not None and native.supports(colliders):
        native.pose(colliders)
        return native.deep_faces(x, x_prev, allowance)
    return sum(replace(c, thickness=c.thickness - allowance).resolve_faces(x, x_prev, inv_mass, triangles)
               for c in colliders if c.reaches_between_corners)
