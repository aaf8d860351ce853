"""The add-on's preferences (Edit > Preferences > Add-ons > Soft Sim): which code computes the simulation."""
import bpy
from bpy.props import EnumProperty

from ..operators.bridge import ADDON_PACKAGE
from ..solvers import native

COMPUTE_ITEMS = [
    ("AUTO", "Auto", "Native kernels (compiled C shipped with the extension) where the library loads and passes its "
                     "self-test, NumPy otherwise; both give the same results (Newton's agree to round-off)"),
    ("NUMPY", "NumPy", "Always the NumPy code (the reference the native kernels are tested against); slower"),
]


class SOFTSIM_AP_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_PACKAGE

    compute: EnumProperty(name="Compute", items=COMPUTE_ITEMS, default="AUTO",
                          description="Which code runs the simulation's hot loops")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "compute", expand=True)
        path, reason = native.status(self.compute)
        layout.label(text=reason, icon="CHECKMARK" if path == "native" else "INFO")


classes = (SOFTSIM_AP_preferences,)
