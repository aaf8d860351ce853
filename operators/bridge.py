"""The edge between Blender and the pure engine: objects in, plain arrays and dataclasses out.

Nothing here keeps a bpy object beyond one call: callers pass objects fetched by name each time.
"""
import math
from dataclasses import dataclass

import numpy as np

from .. import solvers
from ..solvers.config import DEFAULTS
from ..solvers.native import threads as native_threads
from ..solvers.registry import REGISTRY
from . import body_input


@dataclass(frozen=True)
class Role:
    """One entry of the Role menu: what an object is in the simulation."""

    name: str
    number: int
    """Stable enum number stored in .blend files (never reuse or renumber one)."""
    label: str
    description: str
    kind: str
    """'BODY' (simulated by a solver), 'COLLIDER' or 'NONE'."""
    own: tuple = ()
    """Settings this role reads whatever the solver (a body's common ones are in BODY_SETTINGS)."""
    skips: tuple = ()
    """Settings of its solver's ``registry`` tuple that this role does not read."""


# --- Pressure, sewing and shrinking: a cloth's own settings, read by every solver (solvers/sewing.py,
# solvers/energies/pressure.py). ---
CLOTH_SHAPE_SETTINGS = ("pressure", "use_sewing", "sewing_force", "shrink", "shrink_group")
"""Cloth settings every solver reads: the gas in a closed cloth, seams, shrunk rest lengths."""
# --- end of pressure, sewing and shrinking ---

# The one table of roles: the Role menu (ui/properties.py), the panels, the bake and check_settings all read it.
ROLES = (
    Role("NONE", 0, "None", "Not part of the Soft Sim simulation", "NONE"),
    Role("CLOTH", 1, "Cloth", "Simulate the mesh's own vertices, edges and faces (cloth, ropes, shells)", "BODY",
         own=CLOTH_SHAPE_SETTINGS, skips=("internal_damping",)),
    # A solid's springs and tets come from Young's modulus and Poisson's ratio; bending and self-collision are cloth's.
    Role("SOLID", 2, "Solid", "Tetrahedralize the closed mesh and simulate it as a volume", "BODY",
         own=("youngs_modulus", "poisson_ratio"), skips=("stiffness", "bending_stiffness", "use_self_collision", "thickness", "air_drag")),
    Role("GROUND", 3, "Ground", "Collider: the infinite plane through the object's origin, normal along its local +Z", "COLLIDER",
         own=("friction", "thickness")),
    Role("SPHERE", 4, "Sphere", "Collider: a sphere at the object's origin, radius half its largest dimension", "COLLIDER",
         own=("friction", "thickness")),
    Role("MESH", 5, "Mesh Collider", "Collider: the object's evaluated mesh (modifiers, armature and shape keys applied), "
         "open or closed; bodies keep Thickness from its faces on both sides", "COLLIDER", own=("friction", "thickness")),
)
ROLE_BY_NAME = {role.name: role for role in ROLES}
ROLE_ITEMS = [(role.name, role.label, role.description, role.number) for role in ROLES]
"""EnumProperty items of the Role menu."""
BODY_ROLES = frozenset(role.name for role in ROLES if role.kind == "BODY")
COLLIDER_ROLES = frozenset(role.name for role in ROLES if role.kind == "COLLIDER")
BODY_SETTINGS = ("substeps", "mass", "damping")
"""Numbers every body reads, whatever its role and solver."""

_SOLVER_LABELS = {
    "EXPLICIT_EULER": ("Explicit Euler", "Mass-spring, forward Euler: simple, stable only for small substeps (cloth only)"),
    "SYMPLECTIC_EULER": ("Symplectic Euler",
                         "Mass-spring, semi-implicit Euler: energy stays bounded, needs small substeps (cloth only)"),
    "IMPLICIT_EULER": ("Implicit Euler", "Backward Euler with sparse linear solves (cloth: springs; solids: Neo-Hookean tets "
                       "with a line search): stable at large steps, damps"),
    "PBD": ("PBD", "Position Based Dynamics: cloth edges are hard constraints, so stiffness depends on iterations and resolution "
            "(solids: compliant Neo-Hookean tets, as XPBD)"),
    "XPBD": ("XPBD", "Extended PBD: compliant constraints whose stiffness (N/m) does not depend on iterations"),
    "PROJECTIVE": ("Projective Dynamics", "Local projections and one prefactorized global solve"),
    "NEWTON": ("Newton (IPC)", "Implicit Euler as optimization with barrier contact"),
}
# One list per role, built once and kept alive at module level: Blender does not copy the strings of dynamic enum
# items, and each item keeps its solver's fixed number, so a stored choice means the same solver in every menu.
_SOLVER_ITEMS = {
    role.name: [(info.name, *_SOLVER_LABELS[info.name], info.number) for info in REGISTRY.values()
                if (role.kind != "BODY" or role.name in info.roles)]
    for role in ROLES
}


def solver_enum_items(role: str = "CLOTH"):
    """EnumProperty items of the solvers this version implements that serve ``role`` (a role that is no body, such
    as a collider's, lists every solver: its Solver setting is kept, not read); numbers are stable across versions."""
    return _SOLVER_ITEMS.get(role, _SOLVER_ITEMS["NONE"])


def solver_label(name: str) -> str:
    return _SOLVER_LABELS[name][0] if name in _SOLVER_LABELS else name


def stored_solver(settings) -> str:
    """The solver name ``settings`` holds, even where the Solver menu cannot show it.

    A stored solver that does not serve the object's role (an old file, or ``obj.softsim["solver"] = 1`` on a
    Solid) reads as '' through the menu property; its stored number still names it. Returns '' for a number no
    solver has.
    """
    if settings.solver:
        return settings.solver
    number = settings.get("solver")
    if number is None:
        return REGISTRY[DEFAULTS["solver"]].name
    return next((info.name for info in REGISTRY.values() if info.number == number), "")


def check_solver(settings) -> None:
    """Raise InputError naming the object if its stored solver is unknown or does not serve its role."""
    role = ROLE_BY_NAME.get(settings.role)
    if role is None or role.kind != "BODY":
        return
    name = stored_solver(settings)
    info = REGISTRY.get(name)
    serving = ", ".join(solver_label(item[0]) for item in _SOLVER_ITEMS[role.name])
    where = "pick one in Properties > Physics > Soft Sim > Solver"
    if info is None:
        raise InputError(f"'{settings.id_data.name}': its stored solver (softsim.solver = {settings.get('solver')!r}) is not one "
                         f"this version has; {role.label} bodies are served by {serving}: {where}")
    if role.name not in info.roles:
        raise InputError(f"'{settings.id_data.name}': the solver {solver_label(name)} does not serve {role.label.lower()}s "
                         f"(Role {role.label}); {role.label.lower()}s are served by {serving}: {where}")


def settings_offered(settings) -> set:
    """Names of the settings the object's role and solver read, where a toggle may still switch some off: the body
    panel shows exactly these (``settings_read`` is the subset read now). The solver's ``registry`` tuple is the one
    source of what a body reads beyond its role's own settings."""
    role = ROLE_BY_NAME.get(settings.role)
    if role is None or role.kind == "NONE":
        return set()
    if role.kind == "COLLIDER":
        return set(role.own)
    info = REGISTRY.get(stored_solver(settings))
    reads = set(BODY_SETTINGS) | set(role.own) | (set(info.settings) - set(role.skips) if info is not None else set())
    if role.name == "SOLID":
        reads.add("embedded_resolution" if settings.use_embedded else "tet_resolution")
    if not settings.pin_group:
        reads.discard("tether_stretch")  # tethers run from the pins
    else:
        reads.add("pin_stiffness")  # soft pins: every solver, both roles (solvers/soft_pins.py)
    if "stiffness" in reads and role.name == "CLOTH":  # per-vertex maps of what the solver reads
        reads.add("stiffness_group")
    if "bending_stiffness" in reads:
        reads.add("bending_group")
    return reads


def settings_read(settings) -> set:
    """``settings_offered`` less those a toggle switches off: the settings a bake of this object reads now, which
    ``check_settings`` checks and ``config_from_settings`` passes on (every other one stays at its default)."""
    reads = settings_offered(settings)
    if settings.role not in BODY_ROLES:
        return reads
    if not settings.use_tethers or getattr(settings, "pin_stiffness", 0.0) > 0.0:
        reads.discard("tether_stretch")  # tethers run from hard pins only (solvers/soft_pins.py)
    if not settings.use_self_collision:
        reads.discard("thickness")
    if settings.constraint_scheme != "JACOBI":
        reads.discard("jacobi_relaxation")
    if not getattr(settings, "use_sewing", False):  # pressure, sewing and shrinking
        reads.discard("sewing_force")
    return reads


class InputError(Exception):
    """Bad user input; the message names the object and says what to change."""


@dataclass
class BodyInput:
    """A body read off a Blender mesh: everything the engine needs, as arrays."""

    name: str
    local_positions: np.ndarray
    """Mesh vertex positions in object space [m], shape (n, 3), float64."""
    world_positions: np.ndarray
    """The same vertices in world space [m], shape (n, 3)."""
    edges: np.ndarray
    """(e, 2) int64."""
    triangles: np.ndarray
    """(t, 3) int64, from the mesh's loop triangles (quads split as ``read_triangles`` says)."""
    quads: np.ndarray
    """(q, 4) int64: the mesh's quads, corners in loop order (both splits matter to self-collision)."""
    pinned: np.ndarray
    """(n,) bool: vertices in the pin group with weight >= 0.5."""
    evaluated: bool = False
    """Read from the evaluated mesh (something above Soft Sim's place feeds it): its pins follow that mesh."""


def matrix_to_numpy(matrix) -> np.ndarray:
    return np.array([list(row) for row in matrix], dtype=np.float64)


def transform_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply a 4x4 affine matrix to points (n, 3)."""
    out = points @ matrix[:3, :3].T
    out += matrix[:3, 3]  # in place: a second (n, 3) array for the sum took 25k vertices from 0.36 to 1.34 ms
    return out


def read_mesh_positions(mesh) -> np.ndarray:
    """Vertex positions of a mesh datablock in object space, (n, 3) float64 (float32 buffer read): its ``position``
    attribute read as one block (MeshVertex.co, read vertex by vertex, takes ~100x as long on a large mesh)."""
    return _positions32(mesh).reshape(-1, 3).astype(np.float64)


def _positions32(mesh) -> np.ndarray:
    """``read_mesh_positions`` as read, (3 n,) float32."""
    buf = np.empty(len(mesh.vertices) * 3, np.float32)
    attribute = mesh.attributes.get("position")
    if attribute is not None and attribute.domain == "POINT" and attribute.data_type == "FLOAT_VECTOR":
        attribute.data.foreach_get("vector", buf)
    else:
        mesh.vertices.foreach_get("co", buf)
    return buf


def read_corner_vertices(mesh) -> np.ndarray:
    """The vertex of each face corner (loop) of a mesh datablock, (l,) int64: its ``.corner_vert`` attribute read as one
    block, else MeshLoop.vertex_index (read loop by loop, ~100x as long on a large mesh)."""
    return _corner_vertices32(mesh).astype(np.int64)


def _corner_vertices32(mesh) -> np.ndarray:
    """``read_corner_vertices`` as read, (l,) int32."""
    out = np.empty(len(mesh.loops), np.int32)
    attribute = mesh.attributes.get(".corner_vert")
    if attribute is not None and attribute.domain == "CORNER" and attribute.data_type == "INT":
        attribute.data.foreach_get("value", out)
    else:
        mesh.loops.foreach_get("vertex_index", out)
    return out


def read_loop_triangles(mesh) -> np.ndarray:
    """Blender's loop triangles of a mesh datablock, (t, 3) int64 vertex indices: each triangle's corners (stored
    unsigned, so a uint32 buffer reads them as one block; MeshLoopTriangle.vertices is read triangle by triangle)
    mapped to their vertices (``read_corner_vertices``). Looked up in the int32 table as read, widened after: a
    collider of 49k triangles read every frame took 1.6 ms through the int64 table, 0.2 ms so."""
    return _triangles_of(_loop_triangle_corners(mesh), _corner_vertices32(mesh))


def _loop_triangle_corners(mesh) -> np.ndarray:
    """The corners (loops) of Blender's loop triangles of a mesh datablock as read, (3 t,) uint32."""
    mesh.calc_loop_triangles()
    corners = np.empty(len(mesh.loop_triangles) * 3, np.uint32)
    mesh.loop_triangles.foreach_get("loops", corners)
    return corners


def _triangles_of(corners: np.ndarray, corner_vertices: np.ndarray) -> np.ndarray:
    """(t, 3) int64 vertex indices of the loop triangles' corners (3 t,) through the corners' vertices (l,) int32."""
    return np.take(corner_vertices, corners).astype(np.int64).reshape(-1, 3)


def _group_mask(mesh, index: int) -> np.ndarray:
    """(n,) bool of ``mesh``'s vertices with weight >= 0.5 in the vertex group of index ``index``."""
    mask = np.zeros(len(mesh.vertices), bool)
    # One-time read at model build (not per frame): Blender offers no vectorized vertex-group access.
    for v in mesh.vertices:
        for g in v.groups:
            if g.group == index and g.weight >= 0.5:
                mask[v.index] = True
    return mask


def pin_mask(obj, group_name: str, evaluated=None, mesh=None) -> np.ndarray:
    """(n,) bool of vertices with weight >= 0.5 in the vertex group ``group_name``; all False if no group named.

    ``evaluated``, ``mesh``: the evaluated object and its mesh when the body reads its evaluated mesh
    (``body_input``): the weights are then the evaluated mesh's (modifiers that keep or interpolate vertex groups,
    Armature, Subdivision, Mirror..., carry them), or the original mesh's when a modifier dropped them but kept the
    vertex count; raises InputError if the group is lost (dropped, with another vertex count).
    """
    mesh = obj.data if mesh is None else mesh
    if not group_name:
        return np.zeros(len(mesh.vertices), bool)
    group = obj.vertex_groups.get(group_name)
    if group is None:
        raise InputError(f"'{obj.name}': the pin group '{group_name}' does not exist; pick one of its vertex groups or clear Pin Group")
    if evaluated is None:
        return _group_mask(mesh, group.index)
    own = evaluated.vertex_groups.get(group_name)
    mask = _group_mask(mesh, own.index) if own is not None else np.zeros(len(mesh.vertices), bool)
    if mask.any():
        return mask
    original = _group_mask(obj.data, group.index)
    if not original.any():
        return mask  # an empty group pins nothing, evaluated or not
    if len(obj.data.vertices) == len(mesh.vertices):
        return original
    raise InputError(f"'{obj.name}': the pin group '{group_name}' is lost by the modifiers above Soft Sim's place in the stack "
                     f"(its evaluated mesh has {len(mesh.vertices)} vertices, none in '{group_name}'): use modifiers that keep "
                     "vertex groups above it, move the 'SoftSim Cache' modifier above the one that drops them, or clear Pin Group")


def read_quads(mesh) -> np.ndarray:
    """The mesh's quads, (q, 4) int64, corners in loop order."""
    sizes = np.empty(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("loop_total", sizes)
    if not (sizes == 4).any():
        return np.zeros((0, 4), np.int64)
    starts = np.empty(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("loop_start", starts)
    return read_corner_vertices(mesh)[starts[sizes == 4][:, None] + np.arange(4)]


def read_triangles(mesh, world_positions, quads=None) -> np.ndarray:
    """The mesh's faces as triangles, (t, 3) int64: Blender's loop triangles, except that every quad is split along
    its shorter diagonal in world space (Blender splits along a fixed one): the hinges of bending then cross the
    quad the short way, as a cloth mesh is usually meant to fold. ``quads``: the mesh's ``read_quads``, if read
    already."""
    tris = read_loop_triangles(mesh)
    quads = read_quads(mesh) if quads is None else quads
    if len(quads) == 0:
        return tris
    sizes = np.empty(len(mesh.polygons), np.int32)
    mesh.polygons.foreach_get("loop_total", sizes)
    owner = np.empty(len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("polygon_index", owner)
    a, b, c, d = (world_positions[quads[:, k]] for k in range(4))
    short_ac = np.einsum("ij,ij->i", c - a, c - a) <= np.einsum("ij,ij->i", d - b, d - b)
    split = np.where(short_ac[:, None, None], quads[:, [[0, 1, 2], [0, 2, 3]]], quads[:, [[0, 1, 3], [1, 2, 3]]])
    return np.concatenate([tris[sizes[owner] != 4], split.reshape(-1, 3)])


def read_body(obj, matrix_world, depsgraph=None) -> BodyInput:
    """Read ``obj``'s mesh as Soft Sim simulates it (``body_input``) as a BodyInput; raise InputError.

    With ``depsgraph`` (the view layer's, at the current frame) a body fed by modifiers or shape keys above Soft
    Sim's place reads its evaluated mesh; without one (panels drawing, which must not change flags), or when nothing
    feeds it, its original mesh.
    """
    if obj.type != "MESH":
        raise InputError(f"'{obj.name}' is a {obj.type.lower()}, not a mesh: Cloth and Solid need a mesh object (convert it, or set Role to None)")
    if depsgraph is None or not body_input.is_fed(obj):
        return _body_from_mesh(obj, obj.data, matrix_world, lambda: pin_mask(obj, obj.softsim.pin_group), False)
    fed_by = body_input.what_feeds(obj)
    with body_input.evaluated_input(obj, depsgraph) as evaluated:
        mesh = evaluated.to_mesh()
        try:
            return _body_from_mesh(obj, mesh, matrix_world, lambda: pin_mask(obj, obj.softsim.pin_group, evaluated, mesh), True, fed_by)
        finally:
            evaluated.to_mesh_clear()


def _body_from_mesh(obj, mesh, matrix_world, pinned, evaluated: bool, fed_by: str = "") -> BodyInput:
    """BodyInput of ``mesh`` (``obj``'s own or its evaluated one); ``pinned``: the pin mask, or a function making it."""
    where = f" as {fed_by} above Soft Sim's place in the stack make{'s' if ',' not in fed_by else ''} it" if evaluated else ""
    if len(mesh.vertices) == 0:
        raise InputError(f"'{obj.name}' has no vertices{where}")
    if len(mesh.edges) == 0:
        raise InputError(f"'{obj.name}' has no edges{where}, so nothing holds its vertices together: add edges or faces")
    local = read_mesh_positions(mesh)
    edges = np.empty(len(mesh.edges) * 2, np.int32)
    mesh.edges.foreach_get("vertices", edges)
    world = transform_points(matrix_world, local)
    quads = read_quads(mesh)
    return BodyInput(
        name=obj.name,
        local_positions=local,
        world_positions=world,
        edges=edges.reshape(-1, 2).astype(np.int64),
        triangles=read_triangles(mesh, world, quads),
        quads=quads,
        pinned=pinned() if callable(pinned) else pinned,
        evaluated=evaluated,
    )


def read_input_positions(obj, depsgraph) -> np.ndarray:
    """Object-space positions (n, 3) float64 of the evaluated mesh a fed body simulates (``body_input``), at the
    depsgraph's frame: where its pinned vertices go."""
    with body_input.evaluated_input(obj, depsgraph) as evaluated:
        return read_mesh_positions(evaluated.data)


MAX_SUBSTEPS = 1000
"""Upper limit of Substeps: 1000 steps per frame is 24000 per second at 24 fps, past any solver's need."""
MAX_ITERATIONS = 1000
"""Upper limit of Iterations and of Newton's Max Iterations."""

# Every number a body's or collider's settings hold is checked before anything is built: a script (or an
# old file) can store values the properties' own limits refuse (``obj.softsim["stiffness"] = 0`` bypasses
# them), and the engine must never see them. The limits are the properties' own (ui/properties.py).
_UNITS = {"mass": "kg", "damping": "1/s", "stiffness": "N/m", "youngs_modulus": "Pa", "bending_stiffness": "N m",
          "newton_tolerance": "m/s", "thickness": "m", "internal_damping": "s"}
# air_drag and field_weight are dimensionless (a drag coefficient, a factor).
_CHECKED = ("substeps", "iterations", "newton_max_iterations", "mass", "damping", "stiffness", "youngs_modulus", "poisson_ratio",
            "bending_stiffness", "linear_tolerance", "newton_tolerance", "jacobi_relaxation", "tether_stretch", "tet_resolution",
            "embedded_resolution", "friction", "thickness", "internal_damping", "air_drag", "field_weight")


# Pressure, sewing and shrinking (CLOTH_SHAPE_SETTINGS).
_UNITS.update({"pressure": "Pa", "sewing_force": "N"})
_CHECKED += ("pressure", "sewing_force", "shrink")
# Soft pins.
_UNITS["pin_stiffness"] = "N/m"
_CHECKED += ("pin_stiffness",)


def _check_setting(settings, name: str) -> None:
    """Raise InputError naming the object and the setting if ``settings.<name>`` is outside its property's limits."""
    prop = settings.bl_rna.properties[name]
    low, high = prop.hard_min, prop.hard_max
    if high >= 2**31 - 1 or high >= 1e30:
        high = math.inf
    value = getattr(settings, name)
    if math.isfinite(value) and low <= value <= high:
        return
    unit = f" {_UNITS[name]}" if name in _UNITS else ""
    allowed = f"at least {low:g}{unit}" if high == math.inf else f"between {low:g} and {high:g}{unit}"
    raise InputError(f"'{settings.id_data.name}': {prop.name} is {value:g}{unit} (softsim.{name}), but it must be {allowed}: "
                     f"set {prop.name} in Properties > Physics > Soft Sim")


def check_settings(settings) -> None:
    """Check the object's solver against its role, and every setting its role and solver read (``settings_read``);
    raise InputError naming the object and the setting."""
    check_solver(settings)
    reads = settings_read(settings)
    for name in _CHECKED:
        if name in reads:
            _check_setting(settings, name)


ADDON_PACKAGE = __package__.rpartition(".")[0]
"""The add-on's package name (``soft_sim``, or ``bl_ext.<repository>.soft_sim`` when installed): its preferences'
key in ``bpy.context.preferences.addons``."""


def compute_preference() -> str:
    """The add-on preference Compute ('AUTO' or 'NUMPY'); 'AUTO' where the add-on is registered without an entry in
    the preferences (the package imported and registered by a script, as the tests do)."""
    import bpy

    addon = bpy.context.preferences.addons.get(ADDON_PACKAGE)
    return addon.preferences.compute if addon is not None and addon.preferences is not None else "AUTO"


def config_from_settings(settings, scene) -> "solvers.SolverConfig":
    """The one place Blender properties become a SolverConfig; raises InputError naming the object and the setting.

    Only the settings the body reads (``settings_read``) are passed on; every other field keeps SolverConfig's
    default, so a setting its solver or role does not read cannot change a bake, whatever a script stored in it.
    """
    check_settings(settings)
    reads = settings_read(settings)
    gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    values = {
        "constraint_scheme": settings.constraint_scheme,
        "linear_solver": settings.linear_solver,
        "linear_tolerance": settings.linear_tolerance,
        "substeps": settings.substeps,
        "iterations": settings.iterations,
        "stiffness": settings.stiffness,
        "youngs_modulus": settings.youngs_modulus,
        "poisson_ratio": settings.poisson_ratio,
        "bending_stiffness": settings.bending_stiffness,
        "use_self_collision": bool(settings.use_self_collision),  # solvers apply it to cloth with faces only
        "thickness": settings.thickness,
        "damping": settings.damping,
        "internal_damping": settings.internal_damping,
        "jacobi_relaxation": settings.jacobi_relaxation,
        "tether_stretch": settings.tether_stretch,  # read only with Pin Tethers on and a pin group (settings_read)
        "newton_tolerance": settings.newton_tolerance,
        "newton_max_iterations": settings.newton_max_iterations,
        "air_drag": settings.air_drag,
        "field_weight": settings.field_weight,
        # Pressure and sewing (shrink and its group shape the model instead: ``cloth_shape``).
        "pressure": settings.pressure,
        "use_sewing": bool(settings.use_sewing),
        "sewing_force": settings.sewing_force,
    }
    return solvers.SolverConfig(solver=stored_solver(settings), gravity=gravity, compute=compute_preference(),
                                **{name: value for name, value in values.items() if name in reads})


def frame_duration(scene) -> float:
    """Seconds per scene frame."""
    return scene.render.fps_base / scene.render.fps


def identity_mapping(x):
    return x


def check_transform(name: str, matrix_world: np.ndarray, frame=None) -> None:
    """Raise InputError if a body's world transform squashes it flat (a zero scale): it has no local space."""
    linear = matrix_world[:3, :3]
    scale = np.linalg.norm(linear, axis=0)
    singular = np.linalg.svd(linear, compute_uv=False)
    if np.all(np.isfinite(matrix_world)) and singular[-1] > 1e-9 * max(singular[0], 1e-300):
        return
    when = f" at frame {frame}" if frame is not None else ""
    raise InputError(f"'{name}' is scaled to zero{when} (world scale {', '.join(f'{s:.3g}' for s in scale)}), so its mesh is flat "
                     "and has no inside to simulate: give it (and its parents) a non-zero Scale on every axis")


def takes_part(obj, depsgraph) -> bool:
    """Does ``obj`` take part in the simulation? Exactly when the view layer's depsgraph evaluates it, as
    for Blender's own Cloth and Collision: not when it sits only in excluded collections or is disabled in
    viewports (the monitor icon, on it or its collection); hiding it (H, the eye) or from renders changes nothing."""
    return depsgraph.view_layer.objects.get(obj.name) == obj and obj.evaluated_get(depsgraph).is_evaluated


def make_body_solver(obj, model, scene):
    config = config_from_settings(obj.softsim, scene)
    # The native kernels' threads follow the scene's Render > Performance > Threads (``blender -t N`` sets it).
    native_threads.set_limit(max(1, int(scene.render.threads)))
    try:
        return solvers.make_solver(model, config)
    except ValueError as error:
        raise InputError(f"'{obj.name}': {error}") from error


def collider_from_object(obj_eval, settings):
    """A solvers collider for an evaluated GROUND, SPHERE or MESH object."""
    check_settings(settings)
    m = matrix_to_numpy(obj_eval.matrix_world)
    if settings.role == "GROUND":
        normal = m[:3, :3] @ np.array([0.0, 0.0, 1.0])
        if np.linalg.norm(normal) < 1e-12:
            raise InputError(f"'{obj_eval.name}': the ground's scale is zero, so it has no normal")
        return solvers.GroundPlane(m[:3, 3], normal, settings.thickness, settings.friction, obj_eval.name)
    if settings.role == "MESH":
        read = _COLLIDER_READS.read(obj_eval)
        return solvers.MeshCollider(read.world(m), read.triangles, settings.thickness, settings.friction,
                                    obj_eval.name)
    radius = 0.5 * max(obj_eval.dimensions)
    return solvers.Sphere(m[:3, 3], radius, settings.thickness, settings.friction, obj_eval.name)


@dataclass
class _ColliderRead:
    """One read of a Mesh Collider's evaluated mesh: the buffers as Blender gave them (positions (3 m,) float32, the
    loop triangles' corners (3 t,) uint32, the corners' vertices (l,) int32), what they make (local vertices (m, 3)
    float64, triangles (t, 3) int64) and the world vertices last made from them (``world``)."""
    positions: np.ndarray
    corners: np.ndarray
    corner_vertices: np.ndarray
    vertices: np.ndarray
    triangles: np.ndarray
    matrix: np.ndarray = None
    world_vertices: np.ndarray = None
    rotated: np.ndarray = None
    """vertices @ matrix[:3, :3].T of the last ``world``: a collider that only translates reuses it."""

    def same_buffers(self, positions, corners, corner_vertices) -> bool:
        """Whether the buffers of a new read hold what this read's held (bit for bit: the same triangles, and vertices
        of the same bits)."""
        return (np.array_equal(self.positions.view(np.uint32), positions.view(np.uint32))
                and np.array_equal(self.corners, corners) and np.array_equal(self.corner_vertices, corner_vertices))

    def world(self, matrix: np.ndarray) -> np.ndarray:
        """The vertices in world space through ``matrix`` (4, 4): the last frame's array again when the matrix is the
        same, so that a still collider hands the solver the arrays it already knows. A matrix that differs only in
        its translation adds it to the rotated vertices kept from the last one: ``transform_points``' own two steps,
        so the same bits, without the product (a level-6 box sliding: 25k vertices a frame)."""
        if self.matrix is not None and np.array_equal(self.matrix, matrix):
            return self.world_vertices
        if self.rotated is None or not np.array_equal(self.matrix[:3, :3], matrix[:3, :3]):
            self.rotated = self.vertices @ matrix[:3, :3].T
        self.matrix, self.world_vertices = matrix.copy(), self.rotated + matrix[:3, 3]
        return self.world_vertices


class _ColliderReads:
    """The last read of each Mesh Collider object (by name). A collider's evaluated mesh is read on every frame (a
    rig, shape keys or modifiers may change it), but most colliders stand still in their own space: when the buffers
    come back with the same bits, the read's vertices and triangles are the arrays of the last one, and its world
    vertices too under the same matrix. The solver's colliders then find a still collider by identity rather than by
    comparing every vertex and triangle (``MeshCollider.moving_from``, ``mesh_frame``), and the bridge skips widening
    and transforming 49k-triangle buffers on every frame."""

    def __init__(self):
        self._reads = {}

    def read(self, obj_eval) -> _ColliderRead:
        """The read of an evaluated object's mesh, modifiers applied (local vertices, triangles); raises InputError
        naming the object when it is not a mesh or has no faces."""
        if obj_eval.type != "MESH":
            raise InputError(f"'{obj_eval.name}' is a {obj_eval.type.lower()}, not a mesh: a Mesh Collider must be a "
                             f"mesh object (convert it with Object > Convert > Mesh, or set its Role to None)")
        # The evaluated object's own mesh (modifiers applied), read in place: a copy (``to_mesh``) would triangulate
        # its faces anew on every read (1.3 ms a frame for a 49k-triangle collider), where this one keeps its
        # triangles.
        mesh = obj_eval.data
        positions, corners, corner_vertices = _positions32(mesh), _loop_triangle_corners(mesh), _corner_vertices32(mesh)
        if len(corners) == 0:
            raise InputError(f"'{obj_eval.name}' has no faces, so it cannot be a Mesh Collider: give it faces or use a "
                             f"Ground or Sphere collider")
        last = self._reads.get(obj_eval.name)
        if last is not None and last.same_buffers(positions, corners, corner_vertices):
            return last
        read = _ColliderRead(positions, corners, corner_vertices, positions.reshape(-1, 3).astype(np.float64),
                             _triangles_of(corners, corner_vertices))
        self._reads[obj_eval.name] = read
        return read

    def keep_only(self, names) -> None:
        """Forget the reads of every object not named in ``names`` (deleted, renamed or no longer a Mesh Collider)."""
        self._reads = {name: read for name, read in self._reads.items() if name in names}


_COLLIDER_READS = _ColliderReads()


def scene_colliders(scene, depsgraph) -> list:
    """Colliders of every GROUND/SPHERE/MESH object taking part (``takes_part``), evaluated at the current frame."""
    result = []
    for obj in scene.objects:
        if obj.softsim.role in COLLIDER_ROLES and takes_part(obj, depsgraph):
            result.append(collider_from_object(obj.evaluated_get(depsgraph), obj.softsim))
    _COLLIDER_READS.keep_only({collider.name for collider in result})
    return result


def world_matrix(obj, depsgraph) -> np.ndarray:
    return matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)


def world_to_local(matrix_world: np.ndarray, points: np.ndarray) -> np.ndarray:
    return transform_points(np.linalg.inv(matrix_world), points)


# --- Pressure, sewing and shrinking: what the bridge checks and reads off the mesh ---

_CLOSE_ADVICE = {
    "none": "it has no faces: give it faces, or set Pressure to 0",
    "open": "it has {count} boundary edges (holes): select them with Select > All by Trait > Non Manifold and close "
            "them with Face > Fill (or Grid Fill), or set Pressure to 0",
    "nonmanifold": "{count} of its edges join more than two faces: separate the parts that touch (Select > All by "
                   "Trait > Non Manifold), or set Pressure to 0",
    "flipped": "{count} of its edges join faces facing opposite ways: Mesh > Normals > Recalculate Outside, or set "
               "Pressure to 0",
}


def check_pressure_surface(name: str, triangles) -> None:
    """Raise InputError naming the object unless its faces close a volume (Pressure needs one to fill)."""
    from ..solvers.energies.pressure import closed_surface_problem

    problem = closed_surface_problem(triangles)
    if problem is None:
        return
    kind, count = problem
    raise InputError(f"'{name}': Pressure needs a closed mesh to fill, but {_CLOSE_ADVICE[kind].format(count=count)}")


def group_weights(obj, group_name: str, vertex_count: int, setting: str = "shrink_group") -> np.ndarray:
    """(vertex_count,) float64 weights of ``obj``'s vertex group ``group_name`` (0 where a vertex is not in it), read
    from its mesh; raises InputError naming the object and the setting (``softsim.<setting>``) when the group does not
    exist or the simulated mesh has another vertex count than the object's own (a modifier above Soft Sim made or
    removed vertices)."""
    label = obj.softsim.bl_rna.properties[setting].name
    group = obj.vertex_groups.get(group_name)
    if group is None:
        raise InputError(f"'{obj.name}': the {label.lower()} '{group_name}' does not exist (softsim.{setting}); pick one of "
                         f"its vertex groups or clear {label}")
    mesh = obj.data
    if len(mesh.vertices) != vertex_count:
        raise InputError(f"'{obj.name}': the {label.lower()} '{group_name}' is on its {len(mesh.vertices)} vertices, but the "
                         f"modifiers above Soft Sim make {vertex_count}: move the 'SoftSim Cache' modifier above them, or "
                         f"clear {label}")
    weights = np.zeros(vertex_count)
    # One-time read at model build (not per frame): Blender offers no vectorized vertex-group access.
    for v in mesh.vertices:
        for g in v.groups:
            if g.group == group.index:
                weights[v.index] = g.weight
    return weights


def cloth_shape(obj, model, body):
    """A CLOTH body's model with Shrink applied (its rest lengths scaled, ``solvers.sewing.shrink_rest_lengths``), after
    checking that a body with Pressure is closed; raises InputError naming the object."""
    from ..solvers.sewing import shrink_rest_lengths

    settings = obj.softsim
    reads = settings_read(settings)
    if "pressure" in reads and settings.pressure > 0.0:
        check_pressure_surface(obj.name, body.triangles)
    shrink = float(settings.shrink) if "shrink" in reads else 0.0
    if shrink == 0.0:
        return model
    weights = group_weights(obj, settings.shrink_group, model.particle_count) if settings.shrink_group else None
    try:
        return shrink_rest_lengths(model, shrink, weights)
    except ValueError as error:
        raise InputError(f"'{obj.name}': Shrink {shrink:g} leaves edges with no length ({error}): keep Shrink below 1") \
            from error


# --- Per-vertex maps and soft pins: what the bridge reads off the mesh (solvers/material.py, solvers/soft_pins.py) ---

def body_maps(obj, model):
    """``model`` with the body's Stiffness Group and Bending Group read into per-vertex factors
    (``solvers.material.map_scale``) and its pins made soft when Pin Stiffness > 0 (``solvers.soft_pins``); raises
    InputError naming the object and the setting when a group does not exist."""
    from dataclasses import replace

    from ..solvers.material import map_scale
    from ..solvers.soft_pins import soften_pins

    settings = obj.softsim
    reads = settings_read(settings)
    scales = {}
    for setting, field in (("stiffness_group", "particle_stiffness_scale"), ("bending_group", "particle_bending_scale")):
        name = getattr(settings, setting)
        if setting in reads and name:
            scales[field] = map_scale(group_weights(obj, name, model.particle_count, setting))
    if scales:
        model = replace(model, **scales)
    if "pin_stiffness" in reads:
        model = soften_pins(model, float(settings.pin_stiffness))
    return model
