"""Triangle surfaces to tet meshes, in pure NumPy/SciPy (no bpy): tetrahedralization, cages, embedding.

Modules: measures (input checks, volumes, tet quality), winding (generalized winding numbers), lattice
(BCC lattice and surface points), filtering (Delaunay, degenerate and sliver tets), embedding (barycentric
coordinates of points in tets), tet_mesh (the TetMesh result), tetrahedralize (filling a closed surface)
and cage (a coarse cage that drives a dense surface).
"""
from .cage import tetrahedralize_cage
from .embedding import embed_points, interpolate_embedded
from .measures import TetrahedralizeError, check_closed_manifold, mesh_volume, tet_quality, volume_centroid
from .tet_mesh import TetMesh
from .tetrahedralize import tetrahedralize
from .winding import winding_number

__all__ = [
    "TetMesh", "TetrahedralizeError", "check_closed_manifold", "embed_points", "interpolate_embedded",
    "mesh_volume", "tet_quality", "tetrahedralize", "tetrahedralize_cage", "volume_centroid", "winding_number",
]
