"""Material presets: real fabrics and solids as Soft Sim settings (``softsim.apply_preset``).

Each value and its source is in docs/api.md ("Material presets"). Cloth: areal density [kg/m^2] (the body's mass is
it times the evaluated mesh's surface area), edge stiffness [N/m] from the fabric's initial tensile modulus per width
(a triangle mesh's springs give a sheet the modulus Y = (2/sqrt 3) k whatever the edge length, so k = (sqrt 3 / 2) Y),
bending modulus [N m] from Kawabata KES-FB2 bending rigidity B (1 gf cm^2/cm = 9.81e-5 N m) or, for sheets, the plate
modulus E h^3 / (12 (1 - nu^2)), damping [1/s] and the air drag coefficient of a flat plate. Solid: density [kg/m^3]
(mass = density x the closed mesh's volume), Young's modulus [Pa], Poisson's ratio, damping and internal damping.
"""
from dataclasses import dataclass

import bpy
import numpy as np

from .bridge import ROLE_BY_NAME, InputError, matrix_to_numpy, read_loop_triangles, read_mesh_positions

SHEET_SPRING = np.sqrt(3.0) / 2.0
"""Edge stiffness k [N/m] per unit of the sheet's 2D Young's modulus Y [N/m] (equilateral triangle springs)."""
KES_B = 9.81e-5
"""1 gf cm^2 / cm of Kawabata bending rigidity in N m."""


@dataclass(frozen=True)
class ClothPreset:
    label: str
    areal_density: float
    """kg/m^2"""
    tensile_modulus: float
    """Initial tensile modulus per width Y [N/m] (the sheet's 2D Young's modulus)."""
    bending: float
    """Bending modulus [N m]."""
    damping: float = 0.1
    air_drag: float = 1.2


@dataclass(frozen=True)
class SolidPreset:
    label: str
    density: float
    """kg/m^3"""
    youngs_modulus: float
    poisson_ratio: float
    damping: float = 0.1
    internal_damping: float = 0.01


CLOTH_PRESETS = {
    "SILK": ClothPreset("Silk", 0.055, 5.0e3, 0.02 * KES_B),
    "COTTON": ClothPreset("Cotton", 0.13, 1.0e4, 0.10 * KES_B),
    "DENIM": ClothPreset("Denim", 0.45, 1.6e4, 1.5 * KES_B),
    "LEATHER": ClothPreset("Leather", 0.95, 2.2e4, 5.0e-4, damping=0.2),
    "RUBBER": ClothPreset("Rubber", 1.1, 2.0e3, 2.0e6 * 1.0e-3**3 / (12.0 * (1.0 - 0.49**2)), damping=0.2),
}
SOLID_PRESETS = {
    "JELLY": SolidPreset("Jelly", 1050.0, 1.0e4, 0.45, damping=0.2, internal_damping=0.02),
    "RUBBER": SolidPreset("Rubber", 1100.0, 2.0e6, 0.45, damping=0.1, internal_damping=0.002),
    "FOAM": SolidPreset("Foam", 30.0, 5.0e4, 0.25, damping=0.5, internal_damping=0.02),
}
PRESETS = {"CLOTH": CLOTH_PRESETS, "SOLID": SOLID_PRESETS}
PRESET_ITEMS = [
    ("COTTON", "Cotton", "Cloth: cotton shirting, 130 g/m^2"),
    ("DENIM", "Denim", "Cloth: 13-14 oz denim, 450 g/m^2, stiff to bend"),
    ("LEATHER", "Leather", "Cloth: 1 mm garment leather, 950 g/m^2"),
    ("RUBBER", "Rubber", "Cloth: 1 mm rubber sheet; Solid: natural rubber (E 2 MPa)"),
    ("SILK", "Silk", "Cloth: 12 momme silk, 55 g/m^2, drapes softly"),
    ("JELLY", "Jelly", "Solid: gelatin gel, E 10 kPa"),
    ("FOAM", "Foam", "Solid: flexible polyurethane foam, 30 kg/m^3, E 50 kPa"),
]


def surface_area(vertices, triangles) -> float:
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return 0.5 * float(np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())


def enclosed_volume(vertices, triangles) -> float:
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return abs(float(np.einsum("ij,ij->i", np.cross(a, b), c).sum()) / 6.0)


def evaluated_triangles(obj, depsgraph):
    """(world vertices (n, 3), triangles (t, 3)) of ``obj``'s evaluated mesh."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        local = read_mesh_positions(mesh)
        tris = read_loop_triangles(mesh)
    finally:
        evaluated.to_mesh_clear()
    m = matrix_to_numpy(evaluated.matrix_world)
    return local @ m[:3, :3].T + m[:3, 3], tris


def preset_for(obj, preset: str):
    """The preset ``preset`` for ``obj``'s role; raises InputError naming the object when it is no body or the preset is
    not one of its role's."""
    role = obj.softsim.role
    if role not in PRESETS:
        label = ROLE_BY_NAME[role].label if role in ROLE_BY_NAME else role
        raise InputError(f"'{obj.name}': material presets are for Cloth and Solid bodies, and its Role is {label}: set Role "
                         "to Cloth or Solid first, or deselect it")
    table = PRESETS[role]
    if preset not in table:
        other = "Solid" if role == "CLOTH" else "Cloth"
        raise InputError(f"'{obj.name}': {preset.title()} is a {other} preset and it is a {ROLE_BY_NAME[role].label} body; "
                         f"{ROLE_BY_NAME[role].label} presets are {', '.join(p.label for p in table.values())}")
    return table[preset]


def apply_preset(obj, preset: str, depsgraph) -> str:
    """Set ``obj``'s material to ``preset`` (``preset_for``); returns a one-line summary. Raises InputError."""
    values = preset_for(obj, preset)
    if obj.type != "MESH":
        raise InputError(f"'{obj.name}' is not a mesh, so it has no area or volume to weigh")
    vertices, triangles = evaluated_triangles(obj, depsgraph)
    s = obj.softsim
    if isinstance(values, ClothPreset):
        area = surface_area(vertices, triangles)
        if not area > 0.0:
            raise InputError(f"'{obj.name}': a cloth preset weighs the faces by areal density, and it has no faces with area")
        s.mass = values.areal_density * area
        s.stiffness = SHEET_SPRING * values.tensile_modulus
        s.bending_stiffness = values.bending
        s.damping = values.damping
        s.air_drag = values.air_drag
        return f"{values.label}: {s.mass:.4g} kg ({values.areal_density:g} kg/m^2 x {area:.4g} m^2)"
    volume = enclosed_volume(vertices, triangles)
    if not volume > 0.0:
        raise InputError(f"'{obj.name}': a solid preset weighs the volume by density, and its mesh encloses none")
    s.mass = values.density * volume
    s.youngs_modulus = values.youngs_modulus
    s.poisson_ratio = values.poisson_ratio
    s.damping = values.damping
    s.internal_damping = values.internal_damping
    return f"{values.label}: {s.mass:.4g} kg ({values.density:g} kg/m^3 x {volume:.4g} m^3)"


class SOFTSIM_OT_apply_preset(bpy.types.Operator):
    """Set the selected bodies' material to a real fabric or solid: mass from its density and the mesh's area or
    volume, stiffness, bending, damping and air drag"""

    bl_idname = "softsim.apply_preset"
    bl_label = "Apply Material Preset"
    bl_options = {"REGISTER", "UNDO"}

    preset: bpy.props.EnumProperty(name="Preset", items=PRESET_ITEMS)

    def execute(self, context):
        objects = list(context.selected_objects)
        if not objects and context.object is not None:
            objects = [context.object]
        bodies = [obj for obj in objects if obj.softsim.role in PRESETS] or objects
        if not bodies:
            self.report({"ERROR"}, "Soft Sim: select a Cloth or Solid body to apply a material preset to")
            return {"CANCELLED"}
        try:
            for obj in bodies:  # check every one first: a refused preset changes nothing
                preset_for(obj, self.preset)
            depsgraph = context.evaluated_depsgraph_get()
            summary = [f"'{obj.name}' {apply_preset(obj, self.preset, depsgraph)}" for obj in bodies]
        except InputError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self.report({"INFO"}, "Soft Sim: " + "; ".join(summary))
        return {"FINISHED"}


class SOFTSIM_MT_material_presets(bpy.types.Menu):
    """The material presets of the active body's role (the Solver panel's header)."""

    bl_label = "Material Presets"

    def draw(self, context):
        obj = context.object
        table = PRESETS.get(obj.softsim.role, {}) if obj is not None else {}
        for name, values in table.items():
            self.layout.operator(SOFTSIM_OT_apply_preset.bl_idname, text=values.label).preset = name


classes = (SOFTSIM_OT_apply_preset, SOFTSIM_MT_material_presets)
