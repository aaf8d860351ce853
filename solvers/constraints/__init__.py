"""PBD/XPBD constraint projections, vectorized over many constraints at once.

Each constraint set exposes ``indices`` (m, k), ``compliance`` and ``corrections()``; the sweeps in
``solvers/position_based.py`` apply them Gauss-Seidel (by colour) or Jacobi (accumulate and apply).
PBD and XPBD share these kernels: PBD is XPBD with zero compliance (Macklin et al. 2016), except for sets
with ``always_compliant`` (bending: hard bending would make cloth a rigid plate). A set whose multipliers are
vectors says so in ``multiplier_shape`` (bending: (3,)); the others have one scalar per constraint.
"""
from .bending import BendingConstraints
from .distance import DistanceConstraints
from .tet_strain import TetStrainConstraints
from .tether import PinTethers

__all__ = ["BendingConstraints", "DistanceConstraints", "PinTethers", "TetStrainConstraints"]
