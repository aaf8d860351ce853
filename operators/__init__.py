"""Blender operators, the frame-change handler and the bridge to the pure engine."""
import bpy

from . import bake, live

classes = bake.classes


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    live.register()


def unregister():
    live.unregister()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
