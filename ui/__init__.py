"""Properties, panels and draw code only."""
import bpy

from . import panels, properties


def register():
    properties.register()
    for cls in panels.classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(panels.classes):
        bpy.utils.unregister_class(cls)
    properties.unregister()
