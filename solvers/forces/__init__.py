"""External loads: the scene's force fields (``fields``) and the air on a cloth's faces (``air``), applied to every
solver's steps as a change of velocity (``loads``). Pure NumPy, like the rest of the engine."""
from .air import AIR_DENSITY, AirDrag
from .fields import FIELD_KINDS, ForceField, air_velocity, falloff, field_forces, field_terms
from .loads import BodyLoads, FrameFields, apply_loads

__all__ = ["AIR_DENSITY", "AirDrag", "BodyLoads", "FIELD_KINDS", "ForceField", "FrameFields", "air_velocity", "apply_loads",
           "falloff", "field_forces", "field_terms"]
