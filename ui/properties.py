"""The PropertyGroups of the public contract (API.md): ``Object.softsim`` and ``Scene.softsim``."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from ..operators.bridge import solver_enum_items

ROLE_ITEMS = [
    ("NONE", "None", "Not part of the Soft Sim simulation", 0),
    ("CLOTH", "Cloth", "Simulate the mesh's own vertices, edges and faces (cloth, ropes, shells)", 1),
    ("SOLID", "Solid", "Tetrahedralize the closed mesh and simulate it as a volume", 2),
    ("GROUND", "Ground", "Collider: the infinite plane through the object's origin, normal along its local +Z", 3),
    ("SPHERE", "Sphere", "Collider: a sphere at the object's origin, radius half its largest dimension", 4),
]


def _solver_items(self, context):
    return solver_enum_items()


class SoftSimObjectSettings(bpy.types.PropertyGroup):
    role: EnumProperty(name="Role", items=ROLE_ITEMS, default="NONE", description="What this object is in the Soft Sim simulation")
    # Dynamic items: only the solvers this version implements are offered; numbers stay fixed across versions.
    solver: EnumProperty(name="Solver", items=_solver_items, default=4, description="Time integrator used for this body")
    constraint_scheme: EnumProperty(
        name="Sweep",
        items=[
            ("GAUSS_SEIDEL", "Gauss-Seidel", "Project constraints one colour group after another: converges fastest per iteration", 0),
            ("JACOBI", "Jacobi", "Project all constraints at once and average the corrections: smoother, needs more iterations", 1),
        ],
        default="GAUSS_SEIDEL",
        description="How PBD/XPBD sweeps over the constraints in each iteration",
    )
    linear_solver: EnumProperty(
        name="Linear Solver",
        items=[
            ("CG", "Conjugate Gradient", "Conjugate gradients: few iterations, the default", 0),
            ("JACOBI", "Jacobi", "Jacobi iterations: simple, needs many iterations on stiff or fine meshes", 1),
        ],
        default="CG",
        description="Linear solve inside implicit Euler",
    )
    substeps: IntProperty(name="Substeps", default=10, min=1, soft_max=100, description="Solver steps per scene frame; more is stiffer and more stable, and slower")
    iterations: IntProperty(name="Iterations", default=5, min=1, soft_max=100, description="Constraint sweeps (PBD/XPBD) or solver iterations per substep")
    mass: FloatProperty(name="Mass", default=1.0, min=1e-6, soft_max=1000.0, unit="MASS", description="Total mass of the body in kg, spread over its vertices by area (cloth) or volume (solid)")
    stiffness: FloatProperty(
        name="Stiffness", default=1.0e4, min=1e-6, soft_max=1.0e7,
        description="Stiffness of every edge spring in N/m. XPBD uses compliance = 1/stiffness; PBD treats edges as hard constraints",
    )
    volume_stiffness: FloatProperty(name="Volume Stiffness", default=1.0e4, min=1e-6, soft_max=1.0e8, description="Stiffness of every tet's volume constraint (solids); higher keeps volume better")
    damping: FloatProperty(name="Damping", default=0.1, min=0.0, soft_max=10.0, description="Linear velocity damping in 1/s: velocities decay as exp(-damping * t); 0 means none")
    jacobi_relaxation: FloatProperty(
        name="Relaxation", default=0.2, min=0.0, soft_max=10.0,
        description="Jacobi sweep: weight of a vertex's own position when averaging corrections (GAMES103 lab uses 0.2); higher is more damped and more stable",
    )
    use_tethers: BoolProperty(
        name="Pin Tethers", default=True,
        description="PBD/XPBD: keep every vertex within Max Stretch of its rest distance (along the mesh) from the pins, "
        "so fine cloth does not sag near its pins (long-range attachments)",
    )
    tether_stretch: FloatProperty(
        name="Max Stretch", default=0.01, min=0.0, soft_max=0.5, subtype="FACTOR",
        description="Pin tethers: how much farther than its rest distance a vertex may move from a pin (0.01 = 1%)",
    )
    pin_group: StringProperty(name="Pin Group", default="", description="Vertex group whose vertices with weight >= 0.5 are pinned and follow the object's animated transform")
    output: EnumProperty(
        name="Output",
        items=[
            ("CACHE", "PC2 Cache", "Write a PC2 point cache in the scene's cache folder, played by a Mesh Cache modifier", 0),
            ("SHAPE_KEYS", "Shape Keys", "Write one shape key per frame, keyed on and off in turn (stored in the .blend)", 1),
        ],
        default="CACHE",
        description="Where a bake goes",
    )
    friction: FloatProperty(name="Friction", default=0.2, min=0.0, soft_max=2.0, description="Coulomb friction coefficient of this collider (0 = frictionless)")
    thickness: FloatProperty(name="Thickness", default=0.01, min=0.0, soft_max=1.0, unit="LENGTH", description="Distance in m that bodies keep from this collider's surface")

    # Bookkeeping written by the operators, shown in the panel.
    is_baked: BoolProperty(name="Baked", default=False, options={"HIDDEN"})
    baked_output: StringProperty(name="Baked Output", default="", options={"HIDDEN"})
    created_basis: BoolProperty(default=False, options={"HIDDEN"}, description="The bake added the Basis shape key (freed with the bake)")
    status: StringProperty(name="Status", default="", description="Last bake or live-simulation report")


# Blender 4.5+ warns about "//" paths unless a path property says it supports them (4.2 has no such flag).
_BLEND_RELATIVE = {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set()


class SoftSimSceneSettings(bpy.types.PropertyGroup):
    cache_dir: StringProperty(
        name="Cache Folder", default="//softsim_cache", subtype="DIR_PATH", options=_BLEND_RELATIVE,
        description="Folder for PC2 caches; // means relative to the .blend file",
    )
    is_baking: BoolProperty(default=False, options={"SKIP_SAVE"})
    bake_progress: FloatProperty(default=0.0, min=0.0, max=1.0, subtype="FACTOR", options={"SKIP_SAVE"})
    bake_status: StringProperty(default="", options={"SKIP_SAVE"})


classes = (SoftSimObjectSettings, SoftSimSceneSettings)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.softsim = PointerProperty(type=SoftSimObjectSettings)
    bpy.types.Scene.softsim = PointerProperty(type=SoftSimSceneSettings)


def unregister():
    del bpy.types.Scene.softsim
    del bpy.types.Object.softsim
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
