"""Energy terms of the incremental potential (value / gradient / PSD-projected Hessian / max_step).

See ``base.py`` for the interface. Used by the NEWTON solver; Projective Dynamics reuses the terms with
constant Hessians.
"""
from .base import BlockHessian, Energy, OnRows
from .bending import IsometricBending, hinges_from_triangles
from .inertia import Gravity, Inertia
from .neo_hookean import NeoHookean
from .springs import HookeSprings, SquaredLengthSprings

__all__ = [
    "BlockHessian", "Energy", "Gravity", "HookeSprings", "Inertia", "IsometricBending", "NeoHookean", "OnRows", "SquaredLengthSprings",
    "hinges_from_triangles",
]
