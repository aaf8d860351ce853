"""Blender operators, the frame-change handler and the bridge to the pure engine."""
import bpy

from ..solvers import native
from . import bake, bridge, live, material_presets, presets, tetrahedralize, trash
from .output import undo

classes = bake.classes + presets.classes + material_presets.classes + tetrahedralize.classes


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.VIEW3D_MT_add.append(presets.menu_add)
    live.register()
    trash.register()
    undo.register()
    # The native library's load and the self-tests a cloth's first bake needs, in a background thread (~50 ms),
    # so that the first Bake does not wait for them.
    native.warm_up(bridge.compute_preference())


def unregister():
    undo.unregister()
    trash.unregister()
    live.unregister()
    bpy.types.VIEW3D_MT_add.remove(presets.menu_add)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
