"""TetMesh: the result of tetrahedralize and tetrahedralize_cage."""
from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)
class TetMesh:
    """A tetrahedral mesh made from a closed surface, plus figures for the report.

    The first ``surface_count`` rows of ``vertices`` are the input vertices in input order, so the
    input mesh's triangles index this mesh directly.
    """

    vertices: np.ndarray
    """Tet mesh vertices [length], shape (n, 3), float64; rows < surface_count are the input vertices."""
    tets: np.ndarray
    """Positively oriented tetrahedra, shape (k, 4), int64 (model.tet_volumes > 0)."""
    surface_count: int
    """How many input vertices lead ``vertices``."""
    volume: float = 0.0
    """Sum of the tet volumes [length^3]."""
    mesh_volume: float = 0.0
    """Volume enclosed by the input surface [length^3] (divergence theorem, sign dropped)."""
    worst_quality: float = 0.0
    """Minimum of 6*sqrt(2)*V/l_rms^3 over the tets (1 = regular tet)."""
    embedded_vertices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Indices of input vertices in no tet, shape (e,), int64 (all of them for ``tetrahedralize_cage``)."""
    embed_tet: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Tet that drives each embedded vertex, shape (e,), int64."""
    embed_weights: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    """Barycentric coordinates of each embedded vertex in its tet, shape (e, 4), float64 (rows sum to 1)."""
    spacing: float = 0.0
    """Interior lattice spacing h [length]."""
    mass_weights: np.ndarray = None
    """Relative mass of each vertex, shape (n,), or None to lump the mass by tet volume. A cage
    (``tetrahedralize_cage``) sets it to the share of the surface's own volume each vertex carries, so that
    the cage has the surface's centre of mass although its tets cover more than the surface does."""

    @property
    def coverage(self) -> float:
        """volume / mesh_volume: 1.0 when the tets fill the surface exactly."""
        return self.volume / self.mesh_volume if self.mesh_volume > 0 else float("nan")
