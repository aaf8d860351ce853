"""Colliders: what bodies collide with, behind one protocol.

- ``shapes``: the collider protocol (``Collider``) and the analytic shapes (``GroundPlane``, ``Sphere``);
- ``mesh_collider``: any triangle mesh as a collider (``MeshCollider``), open or closed, moving and deforming;
- ``kept_planes``: the contact planes a still mesh collider keeps between the queries of a step.
"""
