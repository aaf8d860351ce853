"""Barriers: NEWTON's IPC contact energies (Li et al. 2020) and lagged friction.

- ``log_barrier``: the scalar log barrier, its CCD step bound, and a body's vertices against a collider;
- ``face_barrier``: a body's triangles against a sphere collider;
- ``mesh_barrier``: a mesh collider against a body (vertex-triangle both ways and edge-edge);
- ``self_barrier``: a body against itself;
- ``pair_barrier``: the barrier summed over point-triangle and edge-edge pairs (what the last two share);
- ``friction``: lagged friction against a collider; ``pair_friction``: between the two sides of a pair.
"""
