"""Contact: colliders, the broad and narrow phases, the position-level response, IPC barriers and self-collision.

Everything that keeps bodies apart (docs/design.md, "Contact pipeline"), one subpackage per stage of the pipeline:

- ``colliders``: what bodies collide with. ``colliders.shapes``: the collider protocol (``Collider``) and the analytic
  shapes (``GroundPlane``, ``Sphere``), moving through a frame; ``colliders.mesh_collider``: any triangle mesh as a
  collider (``MeshCollider``); ``colliders.kept_planes``: a still mesh collider's contact planes kept between queries.
- ``broad_phase``: which elements can come within reach. ``mesh_broad_phase`` (a mesh collider's k-d trees, candidate
  pairs and their caches, over the pieces of ``samples``), ``mesh_face_pairs`` (its corner and edge pairs kept as a
  Verlet list); ``self_broad_phase`` (self-collision's Verlet lists) and ``self_pairs`` (their pair geometry and
  k-d tree joins).
- ``narrow_phase``: exact geometry. ``primitives`` (point-triangle and segment-segment closest points and distances,
  with their gradients and Hessians), ``ccd`` (additive continuous collision detection for point-triangle and
  edge-edge pairs), ``crossings`` (exact edge-triangle crossing tests: quality figures, the self-collision fail-safe).
- ``response``: the contacts of a step and the position-level response (PBD/XPBD, Projective Dynamics, mass-spring).
  ``contact_set`` (``find_contacts``: point contacts and face pairs, found once per step), ``collider_contacts``
  (``ContactConstraints``, ``resolve_contacts``, ``resolve_collider_contacts``), ``faces`` (triangles against spheres:
  the face push and the sphere pads), ``mesh_pushes`` (a mesh collider's corners and edges pushed out of a body's
  faces), ``held_planes`` (the particles that response pushed off a collider's edges, held for the next solve),
  ``self_contact`` and ``impact_zones`` (cloth self-collision and its fail-safe), ``body_contact`` (bodies of one
  scene against each other).
- ``barriers``: NEWTON's IPC energies. ``log_barrier`` (the scalar barrier and the vertex barrier against a
  collider), ``face_barrier`` (a body's triangles against a sphere), ``mesh_barrier`` (against a mesh collider),
  ``self_barrier`` (self-contact), ``pair_barrier`` (what the last two share), ``friction`` and ``pair_friction``
  (lagged friction against a collider and between the two sides of a pair).

Solvers reach colliders only through the protocol of ``colliders.shapes.Collider``: no solver tests a collider's type.
"""
from .colliders.mesh_collider import MeshCollider
from .colliders.shapes import Collider, GroundPlane, Sphere, deepest_penetration, frame_colliders
from .narrow_phase.ccd import edge_edge_ccd, point_triangle_ccd
from .response.collider_contacts import ContactConstraints, resolve_collider_contacts, resolve_contacts
from .response.contact_set import ContactSet, FacePairs, find_contacts

__all__ = [
    "Collider", "ContactConstraints", "ContactSet", "FacePairs", "GroundPlane", "MeshCollider", "Sphere",
    "deepest_penetration", "edge_edge_ccd", "find_contacts", "frame_colliders", "point_triangle_ccd",
    "resolve_collider_contacts", "resolve_contacts",
]
