"""Panels in Properties > Physics: the body or collider settings, and the scene's bake controls."""
import math
import os

import bpy

from ..operators.bridge import BODY_ROLES, COLLIDER_ROLES, InputError, check_solver, settings_offered, settings_read
from ..operators.output import cache_file_of
from ..operators.simulation import explicit_stability_estimate
from ..solvers.registry import REGISTRY


class SoftSimPanel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None


class PHYSICS_PT_softsim(SoftSimPanel, bpy.types.Panel):
    bl_label = "Soft Sim"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        obj = context.object
        settings = obj.softsim
        layout.prop(settings, "role")
        if settings.role in BODY_ROLES and obj.type != "MESH":
            layout.label(text=f"{obj.name} is not a mesh: Cloth and Solid need a mesh", icon="ERROR")
        if settings.role in COLLIDER_ROLES:
            col = layout.column()
            col.prop(settings, "thickness")
            col.prop(settings, "friction")
            if settings.role == "SPHERE":
                col.label(text=f"Radius {0.5 * max(obj.dimensions):.3f} m (half the largest dimension)")
            else:
                col.label(text="Bodies stay above the object's local XY plane")


class PHYSICS_PT_softsim_solid(SoftSimPanel, bpy.types.Panel):
    bl_label = "Solid"
    bl_parent_id = "PHYSICS_PT_softsim"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.softsim.role == "SOLID"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        settings = context.object.softsim
        col = layout.column()
        col.enabled = not settings.is_baked
        col.prop(settings, "use_embedded")
        if settings.use_embedded:
            col.prop(settings, "embedded_resolution")
        else:
            col.prop(settings, "tet_resolution")
        row = layout.row(align=True)
        row.operator("softsim.tetrahedralize", icon="MESH_ICOSPHERE")
        row.operator("softsim.tetrahedralize", text="Show Tets", icon="MOD_WIREFRAME").show_tets = True
        if settings.tet_count:
            box = layout.box()
            box.label(text=f"{settings.tet_vertex_count} vertices, {settings.tet_count} tets")
            box.label(text=f"Volume covered {settings.tet_coverage:.1f}%, worst quality {settings.tet_worst_quality:.3f}")
            if settings.use_embedded and settings.tet_outside_count:
                box.label(text=f"{settings.tet_outside_count} vertices outside the cage: raise Cage Resolution", icon="ERROR")


def _draw_group(layout, obj, setting: str, label: str):
    """A vertex group field, with a warning when the group it names does not exist."""
    layout.prop_search(obj.softsim, setting, obj, "vertex_groups", text=label)
    name = getattr(obj.softsim, setting)
    if name and name not in obj.vertex_groups:
        layout.label(text=f"No vertex group '{name}'", icon="ERROR")


class BodyPanel(SoftSimPanel):
    """A sub-panel shown for simulated bodies (Cloth, Solid) only."""

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.softsim.role in BODY_ROLES


class PHYSICS_PT_softsim_solver(BodyPanel, bpy.types.Panel):
    bl_label = "Solver"
    bl_parent_id = "PHYSICS_PT_softsim"

    def draw_header_preset(self, context):
        """The material presets of the body's role (``operators/material_presets.py``), as built-in Cloth has them."""
        self.layout.menu("SOFTSIM_MT_material_presets", text="", icon="PRESET")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        obj = context.object
        settings = obj.softsim
        baked = settings.is_baked
        col = layout.column()
        col.enabled = not baked
        col.prop(settings, "solver")
        info = REGISTRY.get(settings.solver)
        if info is None:  # a stored solver that does not serve this role (an old file, a script): say which do
            try:
                check_solver(settings)
            except InputError as error:
                col.label(text=str(error), icon="ERROR")
            return
        # The same rules as the bake's check (operators/bridge.py): shown = offered, greyed out = offered but not read.
        reads, active = settings_offered(settings), settings_read(settings)
        if "constraint_scheme" in reads:
            col.prop(settings, "constraint_scheme")
            if "jacobi_relaxation" in active:
                col.prop(settings, "jacobi_relaxation")
        if "linear_solver" in reads:
            col.prop(settings, "linear_solver")
            col.prop(settings, "linear_tolerance")
        if "newton_tolerance" in reads:
            col.prop(settings, "newton_tolerance")
            col.prop(settings, "newton_max_iterations")
        col.prop(settings, "substeps")
        if info.explicit and obj.type == "MESH":
            self.draw_stability(col, obj, context.scene)
        if info.default_substeps <= 2 and settings.substeps > 4:
            col.label(text=f"{info.name.replace('_', ' ').title()} is stable at large steps: 1-2 substeps usually do", icon="INFO")
        if "iterations" in reads:
            col.prop(settings, "iterations")
        col.separator()
        col.prop(settings, "mass")
        col.prop(settings, "mass_distribution")
        # Every solver's solid is this material (PBD's tet constraints are compliant too: position_based.py).
        if "youngs_modulus" in reads:
            col.prop(settings, "youngs_modulus", text="Young's Modulus (Pa)")
        if "poisson_ratio" in reads:
            col.prop(settings, "poisson_ratio")
        if "internal_damping" in reads:
            col.prop(settings, "internal_damping", text="Internal Damping (s)")
        if "stiffness" in reads:
            col.prop(settings, "stiffness", text="Stiffness (N/m)")
            if "stiffness_group" in reads and obj.type == "MESH":
                _draw_group(col, obj, "stiffness_group", "Stiffness Group")
        if "bending_stiffness" in reads:
            col.prop(settings, "bending_stiffness", text="Bending (N m)")
            if "bending_group" in reads and obj.type == "MESH":
                _draw_group(col, obj, "bending_group", "Bending Group")
        if "use_self_collision" in reads:
            col.prop(settings, "use_self_collision", text="Self Collision")
            if "thickness" in reads:
                sub = col.column()
                sub.active = "thickness" in active
                sub.prop(settings, "thickness", text="Thickness (m)")
        col.prop(settings, "damping", text="Damping (1/s)")
        if "air_drag" in reads:
            col.prop(settings, "air_drag")
        if "field_weight" in reads:
            col.prop(settings, "field_weight")
            sub = col.column()
            sub.active = "field_weight" in active and settings.field_weight > 0.0
            sub.prop(settings, "field_collection")
        if obj.type == "MESH":
            col.prop_search(settings, "pin_group", obj, "vertex_groups", text="Pin Group")
            if settings.pin_group and settings.pin_group not in obj.vertex_groups:
                col.label(text=f"No vertex group '{settings.pin_group}'", icon="ERROR")
            if "pin_stiffness" in reads:
                col.prop(settings, "pin_stiffness", text="Pin Stiffness (N/m)")
            if "tether_stretch" in reads:
                row = col.row(heading="Pin Tethers")
                row.prop(settings, "use_tethers", text="")
                sub = row.row()
                sub.active = "tether_stretch" in active
                sub.prop(settings, "tether_stretch")
        col.prop(settings, "output")
        if settings.status:
            box = layout.box()
            box.label(text=settings.status, icon="ERROR" if settings.status.startswith("Error") else "INFO")


    @staticmethod
    def draw_stability(layout, obj, scene):
        estimate = explicit_stability_estimate(obj, scene)
        if estimate is None:
            if obj.softsim.role == "SOLID":
                layout.label(text="Tetrahedralize to see the largest stable substep", icon="INFO")
            return
        limit, needed = estimate
        if math.isinf(limit):
            return
        if needed == 0:
            layout.label(text="Unstable at any step without Damping", icon="ERROR")
            return
        ok = obj.softsim.substeps >= needed
        layout.label(text=f"Stable substep up to {1000 * limit:.3g} ms: needs {needed} substeps", icon="CHECKMARK" if ok else "ERROR")


class PHYSICS_PT_softsim_shape(BodyPanel, bpy.types.Panel):
    """Pressure, sewing and shrinking of a cloth (every solver reads them: operators/bridge.py CLOTH_SHAPE_SETTINGS)."""

    bl_label = "Pressure & Sewing"
    bl_parent_id = "PHYSICS_PT_softsim"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.softsim.role in BODY_ROLES and "pressure" in settings_offered(obj.softsim)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        obj = context.object
        settings = obj.softsim
        reads, active = settings_offered(settings), settings_read(settings)
        col = layout.column()
        col.enabled = not settings.is_baked
        if "pressure" in reads:
            col.prop(settings, "pressure", text="Pressure (Pa)")
        if "use_sewing" in reads:
            col.prop(settings, "use_sewing")
            sub = col.column()
            sub.active = "sewing_force" in active
            sub.prop(settings, "sewing_force", text="Max Sewing Force (N)")
        if "shrink" in reads:
            col.prop(settings, "shrink")
            if obj.type == "MESH":
                col.prop_search(settings, "shrink_group", obj, "vertex_groups", text="Shrink Group")
                if settings.shrink_group and settings.shrink_group not in obj.vertex_groups:
                    col.label(text=f"No vertex group '{settings.shrink_group}'", icon="ERROR")


class PHYSICS_PT_softsim_bake(BodyPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "PHYSICS_PT_softsim"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        scene = context.scene
        layout.prop(scene.softsim, "cache_dir")
        layout.label(text=f"Frames {scene.frame_start}-{scene.frame_end}, {scene.render.fps / scene.render.fps_base:.3g} fps")
        if scene.softsim.is_baking:
            layout.progress(factor=scene.softsim.bake_progress, type="BAR", text=scene.softsim.bake_status)
            layout.label(text="Press Esc to cancel")
            return
        row = layout.row(align=True)
        row.operator("softsim.bake", text="Bake All", icon="PHYSICS")
        row.operator("softsim.free_bake", text="Free All", icon="TRASH")
        row = layout.row(align=True)
        row.operator("softsim.bake", text="Bake Selected").selected_only = True
        row.operator("softsim.free_bake", text="Free Selected").selected_only = True
        layout.operator("softsim.reset", icon="FILE_REFRESH")
        settings = context.object.softsim
        if settings.is_baked and settings.baked_output != "CACHE":
            layout.label(text="Baked to shape keys", icon="CHECKMARK")
        elif settings.is_baked:
            path = cache_file_of(context.object)
            if path is None:
                layout.label(text="Baked, but its SoftSim Cache modifier is gone: bake again", icon="ERROR")
            elif not os.path.isfile(path):
                layout.label(text=f"Cache file missing: {path}: bake again", icon="ERROR")
            else:
                layout.label(text=f"Baked to {os.path.basename(path)}", icon="CHECKMARK")


classes = (PHYSICS_PT_softsim, PHYSICS_PT_softsim_solid, PHYSICS_PT_softsim_solver, PHYSICS_PT_softsim_shape,
           PHYSICS_PT_softsim_bake)
