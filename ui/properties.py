"""The PropertyGroups of the public contract (docs/api.md): ``Object.softsim`` and ``Scene.softsim``."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

from ..operators import live
from ..operators.bridge import MAX_ITERATIONS, MAX_SUBSTEPS, ROLE_ITEMS, solver_enum_items
from ..solvers.config import AIR_DRAG_DEFAULT, DEFAULTS
from ..solvers.registry import REGISTRY


def _solver_items(self, context):
    """The solvers serving this object's role (``registry.SolverInfo.roles``)."""
    return solver_enum_items(self.role)


def _solver_changed(self, context):
    """Switching solver moves Substeps and Iterations to the new solver's defaults, unless the user had changed them.

    Newton and implicit Euler need one or two steps per frame where the position-based solvers want
    thirty; keeping 30 would make a Newton bake thirty times slower for nothing.
    """
    previous = REGISTRY.get(self.get("_previous_solver", ""), REGISTRY[DEFAULTS["solver"]])
    current = REGISTRY[self.solver]
    if self.substeps == previous.default_substeps:
        self.substeps = current.default_substeps
    if self.iterations == previous.default_iterations:
        self.iterations = current.default_iterations
    self["_previous_solver"] = self.solver
    _settings_changed(self, context)


def _settings_changed(self, context):
    """A simulation setting changed: the live simulation of this object no longer matches it."""
    if live.discard(self.id_data.name) and not self.is_baked:
        self.status = "Settings changed: go back to the start frame to simulate again"


class SoftSimObjectSettings(bpy.types.PropertyGroup):
    role: EnumProperty(update=_settings_changed, name="Role", items=ROLE_ITEMS, default="NONE", description="What this object is in the Soft Sim simulation")
    # Dynamic items: only the solvers this version implements that serve the object's role are offered; numbers stay
    # fixed across versions. A stored solver that does not serve the role reads as '' (the panel and the bake say why).
    solver: EnumProperty(update=_solver_changed, name="Solver", items=_solver_items, default=REGISTRY[DEFAULTS["solver"]].number,
                         description="Time integrator used for this body")
    constraint_scheme: EnumProperty(
        update=_settings_changed,
        name="Sweep",
        items=[
            ("GAUSS_SEIDEL", "Gauss-Seidel", "Project constraints one colour group after another: converges fastest per iteration", 0),
            ("JACOBI", "Jacobi", "Project all constraints at once and average the corrections: smoother, needs more iterations", 1),
        ],
        default="GAUSS_SEIDEL",
        description="How PBD/XPBD sweeps over the constraints in each iteration",
    )
    linear_solver: EnumProperty(
        update=_settings_changed,
        name="Linear Solver",
        items=[
            ("CG", "Conjugate Gradient", "Conjugate gradients: few iterations, the default", 0),
            ("JACOBI", "Jacobi", "Jacobi iterations: simple, needs many iterations on stiff or fine meshes", 1),
        ],
        default="CG",
        description="Linear solve inside implicit Euler",
    )
    # Defaults follow "small steps" XPBD (Macklin et al. 2019): many substeps of one sweep each beat
    # few substeps of many sweeps at equal cost (make bench measures both).
    linear_tolerance: FloatProperty(
        update=_settings_changed,
        name="Tolerance", default=DEFAULTS["linear_tolerance"], min=1e-12, max=0.5, precision=6,
        description="Implicit Euler: the linear solve of each step stops when it has cut its starting residual to this "
        "fraction (0.001 = a thousand times smaller); smaller is more exact and slower",
    )
    substeps: IntProperty(update=_settings_changed, name="Substeps", default=DEFAULTS["substeps"], min=1, max=MAX_SUBSTEPS, soft_max=100,
                          description="Solver steps per scene frame; more is stiffer and more stable, and slower")
    iterations: IntProperty(
        update=_settings_changed, name="Iterations", default=DEFAULTS["iterations"], min=1, max=MAX_ITERATIONS, soft_max=100,
        description="PBD/XPBD: constraint sweeps per substep (PBD gets stiffer with more). Projective Dynamics: "
        "local-global iterations per substep, at least this many (up to 12 while a substep would gain energy). "
        "Implicit Euler: raises the ceiling on linear-solver iterations above 1000 (the solve stops at Tolerance)",
    )
    mass: FloatProperty(update=_settings_changed, name="Mass", default=1.0, min=1e-6, soft_max=1000.0, unit="MASS",
                        description="Total mass of the body in kg, spread over its vertices by Mass Distribution")
    mass_distribution: EnumProperty(
        update=_settings_changed,
        name="Mass Distribution",
        items=[
            ("ELEMENT", "By Element", "Spread Mass by area (cloth faces), volume (solid tets) or length (loose edges)", 0),
            ("UNIFORM", "Uniform", "The same mass on every vertex (like Blender Cloth's vertex mass)", 1),
        ],
        default="ELEMENT",
        description="How the body's Mass is spread over its vertices",
    )
    stiffness: FloatProperty(
        update=_settings_changed,
        name="Stiffness", default=DEFAULTS["stiffness"], min=1e-6, soft_max=1.0e7,
        description="Cloth: stiffness of every edge spring in N/m. XPBD uses compliance = 1/stiffness; PBD treats edges as "
        "hard constraints; Newton uses a squared-length spring energy with the same small-stretch stiffness",
    )
    youngs_modulus: FloatProperty(
        update=_settings_changed,
        name="Young's Modulus", default=DEFAULTS["youngs_modulus"], min=1.0, soft_min=100.0, soft_max=1.0e9, precision=0,
        description="Solid: material stiffness in Pa (jelly ~1e4, soft rubber ~1e6), for every solver; "
        "independent of the tet resolution",
    )
    poisson_ratio: FloatProperty(
        update=_settings_changed,
        name="Poisson's Ratio", default=DEFAULTS["poisson_ratio"], min=0.0, max=0.499, precision=3,
        description="Solid: compressibility, from 0 (compresses freely) to nearly 0.5 (keeps its volume)",
    )
    bending_stiffness: FloatProperty(
        update=_settings_changed,
        name="Bending Stiffness", default=DEFAULTS["bending_stiffness"], min=0.0, soft_max=10.0, precision=4,
        description="Cloth: bending modulus in N m (fabric ~1e-5 to 1e-3), the resistance to folding across each "
        "interior edge, in every solver (PBD uses it as XPBD compliance); 0 turns bending off",
    )
    use_self_collision: BoolProperty(
        update=_settings_changed,
        name="Self Collision", default=DEFAULTS["use_self_collision"],
        description="Cloth: the cloth collides with itself, every vertex keeping Thickness from its own faces "
        "(PBD, XPBD, mass-spring and Projective Dynamics solvers). Costs about as much as the solver step or more",
    )
    newton_tolerance: FloatProperty(
        update=_settings_changed,
        name="Tolerance", default=DEFAULTS["newton_tolerance"], min=1e-8, soft_max=1.0, precision=4, unit="VELOCITY",
        description="Newton: a step is converged when the largest Newton update divided by the step time drops "
        "below this speed in m/s; smaller is more exact and slower. IPC's rule of thumb is 1% of the body's size "
        "per second: 0.1 m/s bakes a 10 m cloth about 1.8 times faster than 0.01 at the same strain",
    )
    newton_max_iterations: IntProperty(
        update=_settings_changed,
        name="Max Iterations", default=DEFAULTS["newton_max_iterations"], min=1, max=MAX_ITERATIONS, soft_max=500,
        description="Newton: iterations allowed per step; if a step needs more, the bake stops and says what to change",
    )
    damping: FloatProperty(update=_settings_changed, name="Damping", default=DEFAULTS["damping"], min=0.0, soft_max=10.0,
                           description="Linear velocity damping in 1/s: velocities decay as exp(-damping * t); 0 means none")
    internal_damping: FloatProperty(
        update=_settings_changed,
        name="Internal Damping", default=DEFAULTS["internal_damping"], min=0.0, soft_max=0.05, precision=4,
        description="Solid, PBD/XPBD/Projective: material damping in s. Deformation is resisted with this time times the "
        "material's stiffness, so a dropped body bounces less and stops wobbling sooner; moving and turning as a "
        "whole is not damped. 0 = perfectly elastic",
    )
    jacobi_relaxation: FloatProperty(
        update=_settings_changed,
        name="Relaxation", default=DEFAULTS["jacobi_relaxation"], min=0.0, soft_max=10.0,
        description="Jacobi sweep: weight of a vertex's own position when averaging corrections (GAMES103 lab uses 0.2); higher is more damped and more stable",
    )
    use_tethers: BoolProperty(
        update=_settings_changed,
        name="Pin Tethers", default=True,
        description="PBD/XPBD: keep every vertex within Max Stretch of its rest distance (along the mesh) from the pins, "
        "so fine cloth does not sag near its pins (long-range attachments)",
    )
    tether_stretch: FloatProperty(
        update=_settings_changed,
        name="Max Stretch", default=0.01, min=0.0, soft_max=0.5, subtype="FACTOR",
        description="Pin tethers: how much farther than its rest distance a vertex may move from a pin (0.01 = 1%)",
    )
    pin_group: StringProperty(update=_settings_changed, name="Pin Group", default="",
                              description="Vertex group whose vertices with weight >= 0.5 are pinned and follow the object's animated transform")
    # --- Per-vertex maps and soft pins (solvers/material.py map_scale, solvers/soft_pins.py) ---
    pin_stiffness: FloatProperty(
        update=_settings_changed,
        name="Pin Stiffness", default=0.0, min=0.0, soft_max=1.0e4, precision=1,
        description="Pins pull their vertices toward where the rig puts them with a spring of this stiffness, in N/m "
        "(a vertex of mass m hangs m g / stiffness below its target); 0 = hard pins, placed exactly. Pin Tethers are "
        "off with soft pins",
    )
    stiffness_group: StringProperty(
        update=_settings_changed, name="Stiffness Group", default="",
        description="Cloth: vertex group scaling Stiffness per vertex: weight w gives Stiffness x (0.01 + 0.99 w), so a "
        "vertex outside the group keeps 1%; an edge takes the mean of its ends. Empty = Stiffness everywhere",
    )
    bending_group: StringProperty(
        update=_settings_changed, name="Bending Group", default="",
        description="Cloth: vertex group scaling Bending Stiffness per vertex: weight w gives Bending x (0.01 + 0.99 w); "
        "a hinge takes the mean of its four vertices. Empty = Bending everywhere",
    )
    # --- end of per-vertex maps and soft pins ---
    output: EnumProperty(
        name="Output",
        items=[
            ("CACHE", "PC2 Cache", "Write a PC2 point cache in the scene's cache folder, played by a Mesh Cache modifier", 0),
            ("SHAPE_KEYS", "Shape Keys", "Write one shape key per frame, keyed on and off in turn (stored in the .blend)", 1),
        ],
        default="CACHE",
        description="Where a bake goes",
    )
    air_drag: FloatProperty(
        update=_settings_changed,
        name="Air Drag", default=AIR_DRAG_DEFAULT, min=0.0, soft_max=5.0, precision=3,
        description="Cloth: drag coefficient of its faces against the air (dimensionless; a flat plate has about 1.2), "
        "in air of 1.2 kg/m^3: a face of area A moving at v (m/s) across its normal, relative to the air, feels "
        "1/2 * 1.2 * Air Drag * A * v^2 N. The air moves with the scene's Wind fields, so Wind acts on a cloth only "
        "through this. 0 = no air",
    )
    field_weight: FloatProperty(
        update=_settings_changed,
        name="Field Weight", default=DEFAULTS["field_weight"], min=0.0, soft_max=10.0, precision=3,
        description="How strongly the scene's force fields (Wind, Force, Vortex, Turbulence, Drag, Harmonic) act on "
        "this body, as a factor on each (1 = as set on the field); 0 ignores them",
    )
    field_collection: PointerProperty(
        update=_settings_changed,
        name="Field Collection", type=bpy.types.Collection,
        description="Only the force fields in this collection act on the body (empty: every field of the scene)",
    )
    friction: FloatProperty(name="Friction", default=0.2, min=0.0, soft_max=2.0, description="Coulomb friction coefficient of this collider (0 = frictionless)")
    thickness: FloatProperty(
        update=_settings_changed,
        name="Thickness", default=DEFAULTS["thickness"], min=0.0, soft_max=1.0, unit="LENGTH",
        description="On a collider: distance in m that bodies keep from its surface (Newton: the contact barrier's "
        "reach; bodies come closer than this, but never touch; below 1 mm it acts as 1 mm). On a cloth with Self "
        "Collision: distance in m its vertices keep from its own faces (keep it below about half an edge length)",
    )

    # --- Pressure, sewing and shrinking (role CLOTH, every solver: operators/bridge.py CLOTH_SHAPE_SETTINGS) ---
    pressure: FloatProperty(
        update=_settings_changed,
        name="Pressure", default=DEFAULTS["pressure"], min=0.0, soft_max=1.0e5, precision=1,
        description="Cloth with a closed mesh: gauge pressure in Pa of the air inside when the body has its modelled "
        "volume (a balloon or cushion). The air is an ideal gas at constant temperature, so the pressure falls as the "
        "body grows and rises as it is squashed (pressure x volume stays constant). 0 = no air",
    )
    use_sewing: BoolProperty(
        update=_settings_changed,
        name="Sewing", default=DEFAULTS["use_sewing"],
        description="Cloth: the loose edges (edges with no face) are seams that pull their two ends together to zero "
        "length with the cloth's Stiffness, so panels modelled apart close into a garment",
    )
    sewing_force: FloatProperty(
        update=_settings_changed,
        name="Max Sewing Force", default=DEFAULTS["sewing_force"], min=0.0, soft_max=100.0, precision=3,
        description="Sewing: the most each seam pulls, in N (smaller closes the seams more gently and slowly); 0 = no limit",
    )
    shrink: FloatProperty(
        update=_settings_changed,
        name="Shrink", default=0.0, min=-1.0, max=0.9, soft_min=-0.5, soft_max=0.5, precision=3, subtype="FACTOR",
        description="Cloth: shrink the rest length of every edge by this fraction (0.1 = 10% shorter; negative grows), "
        "times the Shrink Group's weight when one is set",
    )
    shrink_group: StringProperty(
        update=_settings_changed, name="Shrink Group", default="",
        description="Vertex group scaling Shrink per vertex (an edge takes the mean of its two ends' weights); empty = "
        "Shrink everywhere",
    )
    # --- end of pressure, sewing and shrinking ---

    # Solids (role SOLID).
    tet_resolution: IntProperty(
        update=_settings_changed,
        name="Resolution", default=10, min=2, soft_max=40,
        description="Tet mesh density: interior grid cells across the object's largest dimension (cell size = "
        "largest dimension / resolution, in m), refined towards a surface finer than that. Higher is finer, "
        "stiffer to bend and slower; the mesh's own vertices are always tet vertices",
    )
    use_embedded: BoolProperty(
        update=_settings_changed,
        name="Embedded", default=False,
        description="Simulate a coarse cage of tets and move every mesh vertex with the tet around it "
        "(for dense meshes such as sculpts: the cost depends on Cage Resolution, not on the vertex count)",
    )
    embedded_resolution: IntProperty(
        update=_settings_changed,
        name="Cage Resolution", default=6, min=2, soft_max=30,
        description="Embedded: cage cells across the object's largest dimension (cell size = largest dimension / "
        "resolution, in m). Raise it when thin parts of the mesh stick out of the cage",
    )

    # Bookkeeping written by the operators, shown in the panel.
    tet_vertex_count: IntProperty(name="Tet Vertices", default=0, min=0, options={"HIDDEN"},
                                  description="Vertices (simulated particles) of the last tet mesh built")
    tet_count: IntProperty(name="Tets", default=0, min=0, options={"HIDDEN"}, description="Tetrahedra of the last tet mesh built")
    tet_coverage: FloatProperty(
        name="Volume Covered", default=0.0, min=0.0, subtype="PERCENTAGE", options={"HIDDEN"},
        description="Total tet volume in % of the volume the mesh encloses (100% = exact; a cage is a little larger)",
    )
    tet_worst_quality: FloatProperty(
        name="Worst Quality", default=0.0, min=0.0, max=1.0, options={"HIDDEN"},
        description="Lowest tet shape quality 6*sqrt(2)*volume / rms edge length^3 (1 = regular tet, 0 = flat)",
    )
    tet_outside_count: IntProperty(
        name="Vertices Outside", default=0, min=0, options={"HIDDEN"},
        description="Embedded: mesh vertices outside the cage (moved by extrapolation); raise Cage Resolution to take them in",
    )
    is_baked: BoolProperty(name="Baked", default=False, options={"HIDDEN"})
    baked_output: StringProperty(name="Baked Output", default="", options={"HIDDEN"})
    created_basis: BoolProperty(default=False, options={"HIDDEN"}, description="The bake added the Basis shape key (freed with the bake)")
    created_action: BoolProperty(default=False, options={"HIDDEN"},
                                 description="The shape-key bake gave the keys an action they did not have (deleted when freed)")
    # The PC2 file a bake wrote, recorded so that freeing or re-baking deletes only a file this object
    # wrote from this .blend (never a copy's, a duplicate's still in use, or a user's).
    cache_token: StringProperty(default="", options={"HIDDEN"}, description="Random part of this object's cache file name, kept across bakes")
    cache_file: StringProperty(default="", options={"HIDDEN"}, description="File name of the PC2 cache the last bake wrote")
    cache_blend: StringProperty(default="", options={"HIDDEN"}, description="Path of the .blend file the last PC2 cache was written from")
    cache_bake_id: StringProperty(default="", options={"HIDDEN"}, description="Random id of the last bake's PC2 file, so that undo can put that file back")
    baked_frame_start: IntProperty(default=0, options={"HIDDEN"}, description="First frame of the last bake")
    baked_frame_end: IntProperty(default=0, options={"HIDDEN"}, description="Last frame of the last bake (its shape keys are exactly those of these frames)")
    muted_keys: StringProperty(default="", options={"HIDDEN"},
                               description="The user's shape keys muted while a bake or the live simulation shows (unmuted when freed)")
    tets_of: StringProperty(default="", options={"HIDDEN"},
                            description="On a wireframe object Show Tets made: the name of the Solid it shows (Show Tets never touches other objects)")
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
