"""Response: a step's contacts, and the position-level response (PBD/XPBD, Projective Dynamics, mass-spring).

- ``contact_set``: the contacts of a step, found once (``find_contacts``) and consumed by the responses;
- ``collider_contacts``: ``ContactConstraints``, ``resolve_contacts`` and ``resolve_collider_contacts``, with friction;
- ``faces``: triangles against spheres (the face push and the sphere pads);
- ``mesh_pushes``: a mesh collider's corners and edges pushed out of a body's faces;
- ``held_planes``: the particles the end-of-step projection moved, held for the next solve;
- ``self_contact``: cloth self-collision; ``impact_zones``: its fail-safe;
- ``body_contact``: the bodies of one scene against each other.
"""
