"""Properties, panels and draw code only."""
import bpy

from . import panels, preferences, properties


def register():
    properties.register()
    for cls in preferences.classes + panels.classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(preferences.classes + panels.classes):
        bpy.utils.unregister_class(cls)
    properties.unregister()
