"""The scene's force fields read into the engine's plain ``ForceField`` dataclasses, every frame.

A field object (any object whose Physics > Force Field is Wind, Force, Vortex, Turbulence, Drag or Harmonic) acts on
a body when it takes part in the view layer as the colliders do (``bridge.takes_part``: not excluded, not disabled
in viewports), its field affects location (``apply_to_location``), and, if the body has a ``field_collection``, it is
one of that collection's objects (nested collections included), as built-in Cloth's Field Weights > Collection.
Its settings and world matrix are read from the evaluated object, so animated strengths and poses are followed.
"""
import numpy as np

from ..solvers.forces import FIELD_KINDS, ForceField, FrameFields
from .bridge import InputError, frame_duration, matrix_to_numpy, takes_part

SHAPES = {"POINT": "POINT", "LINE": "LINE", "PLANE": "PLANE", "SURFACE": "POINT", "POINTS": "POINT"}
"""Blender's field shapes and the engine's: Surface and Every Point act from the object's origin, as Point."""


def read_field(obj_eval) -> ForceField:
    """The ForceField of an evaluated field object at the depsgraph's frame; raises InputError naming the object
    where a setting would make no sense to the engine."""
    f = obj_eval.field
    strength = float(f.strength)
    if f.type == "DRAG":
        strength = float(f.quadratic_drag)
    values = dict(
        kind=f.type, matrix=matrix_to_numpy(obj_eval.matrix_world), strength=strength, shape=SHAPES.get(f.shape, "POINT"),
        falloff_type=f.falloff_type if f.falloff_type in ("SPHERE", "TUBE", "CONE") else "SPHERE",
        falloff_power=float(f.falloff_power), use_min_distance=bool(f.use_min_distance), distance_min=float(f.distance_min),
        use_max_distance=bool(f.use_max_distance), distance_max=float(f.distance_max), use_radial_min=bool(f.use_radial_min),
        radial_min=float(f.radial_min), use_radial_max=bool(f.use_radial_max), radial_max=float(f.radial_max),
        radial_falloff=float(f.radial_falloff), z_direction=f.z_direction, flow=float(f.flow), noise=float(f.noise),
        seed=int(f.seed), size=float(f.size), use_global_coords=bool(f.use_global_coords),
        use_gravity_falloff=bool(f.use_gravity_falloff), linear_drag=float(f.linear_drag),
        harmonic_damping=float(f.harmonic_damping), rest_length=float(f.rest_length), name=obj_eval.name)
    numbers = [v for v in values.values() if isinstance(v, float)]
    if not all(np.isfinite(numbers)) or not np.all(np.isfinite(values["matrix"])):
        raise InputError(f"'{obj_eval.name}': its force field has a setting or transform that is not a finite number: "
                         "fix it in Properties > Physics > Force Field")
    if f.type == "TURBULENCE" and not values["size"] > 0.0:
        raise InputError(f"'{obj_eval.name}': its Turbulence field has Size {values['size']:g} m, but it must be above 0: "
                         "set Size in Properties > Physics > Force Field")
    return ForceField(**values)


def body_fields(obj, scene, depsgraph) -> list:
    """The fields acting on body ``obj`` at the depsgraph's frame (module docstring), in the scene's object order."""
    settings = obj.softsim
    if not settings.field_weight > 0.0:
        return []
    collection = settings.field_collection
    members = {o.name for o in collection.all_objects} if collection is not None else None
    result = []
    for other in scene.objects:
        field = getattr(other, "field", None)
        if other == obj or field is None or field.type not in FIELD_KINDS or not field.apply_to_location:
            continue
        if members is not None and other.name not in members:
            continue
        if not takes_part(other, depsgraph):
            continue
        result.append(read_field(other.evaluated_get(depsgraph)))
    return result


def frame_fields(previous: list, current: list, scene, frame: int) -> FrameFields:
    """The fields over the frame ending at ``frame``: each field from its reading at the frame's start (``previous``,
    matched by object name; a field new this frame starts as it ends) to ``current``."""
    before = {f.name: f for f in previous}
    dt = frame_duration(scene)
    return FrameFields([before.get(f.name, f) for f in current], current, (frame - 1 - scene.frame_start) * dt, dt)
