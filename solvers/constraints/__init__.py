"""PBD/XPBD constraint projections, vectorized over many constraints at once.

Each constraint set exposes ``indices`` (m, k), ``compliance`` and ``corrections()``; the sweeps in
``solvers/position_based.py`` apply them Gauss-Seidel (by colour) or Jacobi (accumulate and apply).
PBD and XPBD share these kernels: PBD is XPBD with zero compliance (Macklin et al. 2016).
"""
from .distance import DistanceConstraints
from .tether import PinTethers
from .volume import TetVolumeConstraints

__all__ = ["DistanceConstraints", "PinTethers", "TetVolumeConstraints"]
