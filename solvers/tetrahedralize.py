"""Compatibility module: re-exports solvers.geometry, where the tetrahedralizer now lives."""
from .geometry import (  # noqa: F401
    TetMesh,
    TetrahedralizeError,
    check_closed_manifold,
    embed_points,
    interpolate_embedded,
    mesh_volume,
    tet_quality,
    tetrahedralize,
    tetrahedralize_cage,
    volume_centroid,
    winding_number,
)
