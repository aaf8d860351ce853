"""The contact set: a step's contacts, found once by ``find_contacts`` and consumed by the solver's response.

Detection and response are separate phases. ``find_contacts`` asks every collider, through the collider protocol and
once per step, for

- its **point contacts** (``PointContacts``): the free particles within their step's motion of it (plus the
  collider's own motion), each with the contact plane seen over the step (``Collider.contact``), its normal and its
  signed distance;
- its **face pairs** (``FacePairs``), where its surface has corners and edges of its own (a mesh collider): collider
  corner against body triangle (point-triangle) and collider edge against body edge (edge-edge), every pair within
  the collider's thickness at the prediction, with their distances at detection (``Collider.face_pairs``: found a
  skin wider and kept, as a Verlet list, while the body moves less than a third of the skin; then found anew).

Who consumes what:

- PBD/XPBD project the point contacts every iteration (``collider_contacts.ContactConstraints``); Projective Dynamics
  puts the planes of colliders that reach between corners into its global solve (``projective.solver.PlaneContacts``);
- the end of every position-level step (``collider_contacts.resolve_collider_contacts``) projects vertices out and
  pushes the face pairs apart, with the pairs of the same Verlet lists;
- NEWTON's barriers need the pairs closer than d_hat at each iterate, so they read the same Verlet lists per iteration
  (``mesh_barrier.MeshContactBarrier``): a list found at the step's start serves every iterate that stays within
  its skin.

Self-collision (pairs within one body or between bodies) keeps its own Verlet lists (``self_broad_phase``): the pairs
there are between moving triangles of the bodies, not against a collider.
"""
from dataclasses import dataclass, field

import numpy as np


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


@dataclass
class PointContacts:
    """The point-collider contacts of one collider: particle ``i`` must stay on the side n . x >= offset of its
    contact plane (``Collider.contact``; thickness and sphere pads included)."""

    collider: object
    particles: np.ndarray
    """Particle indices (k,) int."""
    normal: np.ndarray
    """Unit normals of the contact planes (k, 3)."""
    offset: np.ndarray
    """n . x on the contact plane [m] (k,)."""
    distance: np.ndarray
    """Signed distance beyond the plane at detection [m] (k,): negative inside."""


def point_contacts(x, x_prev, inv_mass, colliders, pad2=None, margin=0.0) -> list:
    """The contact set of point-collider pairs: every free particle (inv_mass > 0) closer than ``margin`` [m] (scalar
    or (n,)) to a collider at positions x (n, 3), with the contact plane seen over the step from x_prev (n, 3).
    margin 0: the particles inside. Returns [PointContacts] for the colliders with any."""
    free = inv_mass > 0.0
    found = []
    for collider in colliders:
        d, n = collider.contact(x, x_prev, pad2)  # one query for every particle: the planes are per particle
        hit = np.nonzero((d < margin) & free)[0]
        if len(hit) == 0:
            continue
        near, d = x[hit], d[hit]
        normal = np.array(n[hit] if np.ndim(n) == 2 else n)
        found.append(PointContacts(collider, hit, normal, _dot(near, normal) - d, np.asarray(d)))
    return found


@dataclass
class FacePairs:
    """Candidate pairs between one collider's corners and edges and a body's triangles and edges."""

    collider: object
    corner_triangle: tuple
    """(collider corner (k,) (index into the collider's corners), body triangle (k,))."""
    edge_edge: tuple
    """(collider edge (m,) (index into the collider's edges), body edge (m,))."""
    corner_distance: np.ndarray
    """Distance [m] (k,) of each corner to its triangle at detection."""
    edge_distance: np.ndarray
    """Distance [m] (m,) between each pair of edges at detection."""

    def __len__(self):
        return len(self.corner_distance) + len(self.edge_distance)


@dataclass
class ContactSet:
    """The contacts of one step (module docstring)."""

    points: list = field(default_factory=list)
    """[``PointContacts``], one per collider with any."""
    faces: list = field(default_factory=list)
    """[``FacePairs``], one per collider with corners and edges of its own and any pair."""

    def __bool__(self):
        return bool(self.points) or bool(self.faces)

    def count(self) -> int:
        """Number of contacts: point contacts plus face pairs."""
        return sum(len(c.particles) for c in self.points) + sum(len(f) for f in self.faces)


def step_margin(x: np.ndarray, x_prev: np.ndarray, collider) -> np.ndarray:
    """How near (n,) [m] a collider a particle must be to possibly touch it this step: its own motion x_prev -> x
    (n, 3) plus the collider's motion under it (``Collider.motion``)."""
    moved = x - x_prev
    margin = np.sqrt(_dot(moved, moved))
    if collider.start is not None:
        travel = collider.motion(x)
        margin = margin + np.sqrt(_dot(travel, travel))
    return margin


def find_contacts(x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray, colliders, pad2=None,
                  triangles: np.ndarray = None) -> ContactSet:
    """The contact set of a step whose free particles (inv_mass (n,) > 0) move from x_prev to the prediction x (n, 3)
    [m], against ``colliders`` (each at its pose at the step's end, ``start`` at the step's start). pad2 (n,) [m^2]:
    the particles' sphere pads, or None; triangles (t, 3): the body's collision triangles, for the face pairs (None:
    points only)."""
    found = ContactSet()
    for collider in colliders:
        found.points += point_contacts(x, x_prev, inv_mass, [collider], pad2, step_margin(x, x_prev, collider))
        if triangles is not None and len(triangles):
            pairs = collider.face_pairs(x, triangles)
            if pairs is not None and len(pairs):
                found.faces.append(pairs)
    return found


__all__ = ["ContactSet", "FacePairs", "PointContacts", "find_contacts", "step_margin"]
