"""Helpers for tests that drive the real add-on through the bpy wheel, as a user's script would."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
from devenv import import_addon  # noqa: E402,F401  (re-exported for the tests)


def evaluated_positions(obj, frame=None):
    """Local-space vertex positions of ``obj`` as Blender shows them (modifiers and shape keys applied)."""
    import bpy

    scene = bpy.context.scene
    if frame is not None:
        scene.frame_set(frame)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(depsgraph).data
    buf = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def cache_file(obj):
    """Absolute path of the PC2 file ``obj``'s bake plays, read from its 'SoftSim Cache' modifier (docs/api.md:
    readers find it there, never by guessing the name); None if it has no such modifier."""
    import bpy

    modifier = obj.modifiers.get("SoftSim Cache")
    if modifier is None or modifier.type != "MESH_CACHE":
        return None
    return os.path.normpath(bpy.path.abspath(modifier.filepath))


def cache_listing(folder):
    """Sorted entries of a cache folder, leaving out Soft Sim's trash folder (the files replaced or freed since
    the .blend was last saved, kept so that undo finds them)."""
    return sorted(name for name in os.listdir(folder) if name != ".softsim-trash")


def add_remeshed_suzanne(voxel_size=0.05, size=2.0):
    """A dense closed Suzanne: Add > Mesh > Monkey (``size``), Subdivision 2 and a voxel remesh at ``voxel_size``
    m, both applied (6054 vertices at the defaults). Returns the new, active object, at the origin."""
    import bpy

    bpy.ops.mesh.primitive_monkey_add(size=size)
    body = bpy.context.object
    body.modifiers.new("Subdivision", "SUBSURF").levels = 2
    bpy.ops.object.modifier_apply(modifier="Subdivision")
    remesh = body.modifiers.new("Remesh", "REMESH")
    remesh.mode, remesh.voxel_size = "VOXEL", voxel_size
    bpy.ops.object.modifier_apply(modifier="Remesh")
    return body


def original_positions(obj):
    buf = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def empty_scene(frames, cache_dir=None):
    """A new empty scene at 24 fps, frames 1..frames, baking into cache_dir (a new temporary folder by default)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.softsim.cache_dir = cache_dir or tempfile.mkdtemp(prefix="softsim-cache-")
    return scene


def ground_scene(frames):
    """``empty_scene`` with a 30 m plane of Role Ground and Thickness 0 at the origin (bodies may touch z = 0 but
    never go below it)."""
    import bpy

    scene = empty_scene(frames)
    bpy.ops.mesh.primitive_plane_add(size=30.0)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.softsim.role = "GROUND"
    ground.softsim.thickness = 0.0
    return scene


def lab_scene(n=11, frames=24, cache_dir=None, sphere_location=(0.0, 0.0, 0.0)):
    """The GAMES103 lab scene: a 10 m cloth of n x n vertices at z = 3 pinned at two corners, over a sphere of radius 2.7."""
    import bpy

    scene = empty_scene(frames, cache_dir)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=10.0, location=(0.0, 0.0, 3.0))
    cloth = bpy.context.object
    cloth.name = "Cloth"
    group = cloth.vertex_groups.new(name="Pins")
    group.add([0, n - 1], 1.0, "REPLACE")
    cloth.softsim.role = "CLOTH"
    cloth.softsim.pin_group = "Pins"
    cloth.softsim.air_drag = 0.0  # the lab's cloth falls in vacuum (1 kg on 100 m^2 would float down like tissue paper)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=2.7, segments=32, ring_count=16, location=sphere_location)
    sphere = bpy.context.object
    sphere.name = "Ball"
    sphere.softsim.role = "SPHERE"
    sphere.softsim.thickness = 0.0
    return scene, cloth, sphere


def world_positions(obj, frame=None):
    """World-space vertex positions of ``obj`` as Blender shows them at ``frame`` (``evaluated_positions`` moved by
    the object's transform)."""
    matrix = np.array(obj.matrix_world)
    return evaluated_positions(obj, frame) @ matrix[:3, :3].T + matrix[:3, 3]


def hammock_scene(frames, solver="XPBD", cube_solver=None, with_cube=True):
    """A 2 m cloth (21 x 21) pinned at its four corners 1.5 m up on ``solver``, a 0.4 m 2 kg Solid cube 2.2 m up over
    its middle on ``cube_solver`` (default: the cloth's), a ground below. Returns (scene, cloth, cube or None)."""
    import bpy

    scene = empty_scene(frames)
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    bpy.context.object.softsim.role = "GROUND"
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0, location=(0.0, 0.0, 1.5))
    cloth = bpy.context.object
    cloth.name = "Hammock"
    co = np.array([v.co[:] for v in cloth.data.vertices])
    corners = np.flatnonzero((np.abs(co[:, 0]) > 0.99) & (np.abs(co[:, 1]) > 0.99)).tolist()
    cloth.vertex_groups.new(name="Pins").add(corners, 1.0, "REPLACE")
    cloth.softsim.role = "CLOTH"
    cloth.softsim.pin_group = "Pins"
    cloth.softsim.solver = solver
    if not with_cube:
        return scene, cloth, None
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 2.2))
    cube = bpy.context.object
    cube.name = "Jelly"
    cube.softsim.role = "SOLID"
    cube.softsim.mass = 2.0
    cube.softsim.solver = cube_solver or solver
    return scene, cloth, cube


def crossings_between(objects, frame=None):
    """Edge-triangle pairs of two different objects that cross at ``frame``, over the objects' meshes as Blender
    draws them (world space, each mesh's loop triangles: the split of each quad the viewport shows)."""
    from solvers.collision.narrow_phase.crossings import self_intersecting_pairs

    xs, triangles, owner = [], [], []
    offset = 0
    for k, obj in enumerate(objects):
        x = world_positions(obj, frame)
        obj.data.calc_loop_triangles()
        tris = np.array([t.vertices[:] for t in obj.data.loop_triangles], np.int64).reshape(-1, 3)
        xs.append(x)
        triangles.append(tris + offset)
        owner.append(np.full(len(x), k))
        offset += len(x)
    x, tris, owner = np.concatenate(xs), np.concatenate(triangles), np.concatenate(owner)
    edges, pairs = self_intersecting_pairs(x, tris)
    return int(np.count_nonzero(owner[edges[pairs[:, 0], 0]] != owner[tris[pairs[:, 1], 0]]))


COLUMNS, ROWS = 21, 11
"""The rigged cape: an armature whose bone "Collar" is keyed to move 1 m along +X over the first second (frames 1-25
at 24 fps), and a 2 m x 1 m cape of COLUMNS x ROWS vertices hanging in the XZ plane whose top row has weight 1.0 in
the vertex group "Collar" (the bone's group, so the Armature modifier moves it) and is the Pin Group."""


def rig_scene(tmp_path, frames=48):
    """The rigged cape (see ``COLUMNS``) as (scene, cape, rig): the cape with an Armature modifier on the rig, Role
    Cloth, Pin Group "Collar"; the cache folder ``tmp_path/cache``."""
    import bpy

    scene = empty_scene(frames, str(tmp_path / "cache"))

    rig = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = rig.data.edit_bones.new("Collar")
    bone.head, bone.tail = (0.0, 0.0, 2.0), (0.0, 0.5, 2.0)  # along +Y, roll 0: the bone's local X is world X
    bpy.ops.object.mode_set(mode="OBJECT")
    pose = rig.pose.bones["Collar"]
    for frame, x in ((1, 0.0), (25, 1.0)):
        pose.location = (x, 0.0, 0.0)
        pose.keyframe_insert("location", frame=frame)

    x, z = np.meshgrid(np.linspace(-1.0, 1.0, COLUMNS), np.linspace(2.0, 1.0, ROWS))  # row 0 is the top, at z = 2 m
    vertices = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], axis=1)
    index = np.arange(ROWS * COLUMNS).reshape(ROWS, COLUMNS)
    faces = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    mesh = bpy.data.meshes.new("Cape")
    mesh.from_pydata(vertices.tolist(), [], faces.tolist())
    cape = bpy.data.objects.new("Cape", mesh)
    scene.collection.objects.link(cape)
    cape.vertex_groups.new(name="Collar").add(index[0].tolist(), 1.0, "REPLACE")
    cape.modifiers.new("Armature", "ARMATURE").object = rig
    cape.softsim.role = "CLOTH"
    cape.softsim.pin_group = "Collar"
    bpy.context.view_layer.objects.active = cape
    return scene, cape, rig


def rigged_positions(cape, frame):
    """Local positions as the rig alone puts them at ``frame`` (Soft Sim's cache and live modifiers switched off)."""
    modifiers = [m for m in cape.modifiers if m.name in ("SoftSim Cache", "SoftSim Live") and m.show_viewport]
    for modifier in modifiers:
        modifier.show_viewport = False
    try:
        return evaluated_positions(cape, frame)
    finally:
        for modifier in modifiers:
            modifier.show_viewport = True


def flag_scene(frames=48, strength=5.0, solver="XPBD", builtin=False, cache_dir=None):
    """A 1 m x 1 m sheet (11 x 11 vertices) hanging in the XZ plane from its pinned top edge at z = 2, and a planar
    Wind field 2 m in front of it blowing along +Y (across the sheet) at ``strength``. With ``builtin`` the sheet
    gets Blender's own Cloth modifier (default settings, the top edge pinned) instead of Soft Sim.
    Returns (scene, sheet, wind)."""
    import bpy

    scene = empty_scene(frames, cache_dir)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=10, y_subdivisions=10, size=1.0, location=(0.0, 0.0, 1.5),
                                    rotation=(1.5707963267948966, 0.0, 0.0))
    sheet = bpy.context.object
    sheet.name = "Flag"
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=False)
    top = [v.index for v in sheet.data.vertices if v.co.z > 0.49]
    sheet.vertex_groups.new(name="Pins").add(top, 1.0, "REPLACE")
    if builtin:
        modifier = sheet.modifiers.new("Cloth", "CLOTH")
        modifier.settings.vertex_group_mass = "Pins"
        modifier.point_cache.frame_end = frames
    else:
        sheet.softsim.role = "CLOTH"
        sheet.softsim.pin_group = "Pins"
        sheet.softsim.solver = solver
    bpy.ops.object.effector_add(type="WIND", location=(0.0, -2.0, 1.5), rotation=(-1.5707963267948966, 0.0, 0.0))
    wind = bpy.context.object
    wind.name = "Wind"
    wind.field.strength = strength
    return scene, sheet, wind
