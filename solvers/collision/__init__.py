"""Contact: colliders, the distance primitives, the position-level response, IPC barriers and self-collision.

One package for everything that keeps bodies apart (docs/design.md, "Contact pipeline"):

- ``contact_set``: the contacts of a step, found once (``find_contacts``: point contacts and face pairs) and consumed
  by the solvers' responses;
- ``colliders``: the collider protocol and the analytic shapes (``GroundPlane``, ``Sphere``), moving through a frame;
- ``mesh_collider``: any triangle mesh as a collider (``MeshCollider``), with ``mesh_broad_phase`` (its k-d trees,
  candidate pairs and their caches), ``mesh_pushes`` (its corners and edges pushed out of a body's faces) and
  ``mesh_barrier`` (NEWTON's barrier between those and a body's faces);
- ``primitives``: point-triangle and segment-segment closest points and distances, with their gradients and Hessians;
- ``ccd``: continuous collision detection (additive CCD) for point-triangle and edge-edge pairs;
- ``crossings``: exact edge-triangle crossing tests (quality figures, the self-collision fail-safe);
- ``response``: the position-level contact response (PBD/XPBD, Projective Dynamics, mass-spring);
- ``held_planes``: the particles that response pushed off a collider's edges, held for the next solve (Projective
  Dynamics, implicit Euler's cloth);
- ``faces``: triangles against spheres (the face push and the sphere pads);
- ``barrier``, ``face_barrier``, ``friction``: NEWTON's IPC barrier and lagged friction energies;
- ``self_contact``, ``self_broad_phase``, ``self_pairs``, ``impact_zones``: cloth self-collision.

Solvers reach colliders only through the protocol of ``colliders.Collider``: no solver tests a collider's type.
"""
from .ccd import edge_edge_ccd, point_triangle_ccd
from .colliders import Collider, GroundPlane, Sphere, deepest_penetration, frame_colliders
from .contact_set import ContactSet, FacePairs, find_contacts
from .mesh_collider import MeshCollider
from .response import ContactConstraints, resolve_collider_contacts, resolve_contacts

__all__ = [
    "Collider", "ContactConstraints", "ContactSet", "FacePairs", "GroundPlane", "MeshCollider", "Sphere",
    "deepest_penetration", "edge_edge_ccd", "find_contacts", "frame_colliders", "point_triangle_ccd",
    "resolve_collider_contacts", "resolve_contacts",
]
