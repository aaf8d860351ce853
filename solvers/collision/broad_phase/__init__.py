"""Broad phase: which elements can come within reach of each other, and the lists that let a step ask again cheaply.

- ``mesh_broad_phase``: a mesh collider's k-d trees, candidate pairs and their caches;
- ``samples``: points spread over a collider's edges and triangles, the pieces those k-d trees are built over;
- ``mesh_face_pairs``: a mesh collider's corner-triangle and edge-edge pairs, kept as a Verlet list;
- ``self_broad_phase``: cloth self-collision's Verlet lists of vertex-triangle and edge-edge pairs;
- ``self_pairs``: the pair geometry and k-d tree joins that self-collision's modules share.
"""
