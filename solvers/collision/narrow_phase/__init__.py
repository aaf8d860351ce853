"""Narrow phase: exact geometry between points, segments and triangles.

- ``primitives``: closest points and distances (point-triangle, segment-segment), with gradients and Hessians;
- ``ccd``: continuous collision detection (additive CCD) of point-triangle and edge-edge pairs;
- ``crossings``: exact edge-triangle crossing tests on triangle meshes.
"""
