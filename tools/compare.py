"""Side-by-side renders for `make demo`: Soft Sim's default cloth next to Blender's built-in Cloth (at its defaults)
on the same meshes, baked in the same Blender session, rendered with Workbench and tiled into one PNG per scene.

Scenes (both simulators get the same mesh, pins and colliders):
- "drape": the 64 x 64 GAMES103 lab scene, a 10 m cloth pinned at two corners 3 m above a sphere of radius 2.7;
- "fold": a 4 m 32 x 32 cloth held nearly upright with its lower edge just above the ground, let go: it buckles
  and piles up on its own folds (self-collision on in both);
- "curtain": a 2 m 21 x 21 curtain hanging from its pinned top row, a 0.3 m sphere keyed through it at 5.4 m/s
  (frames 1-7), then still: the sphere must push the curtain ahead of itself.
Run alone: ``python tools/compare.py [drape|fold ...]`` writes demo_out/compare_<scene>.png and prints the figures.
Left column: Soft Sim (the add-on's defaults for a new CLOTH body); right: built-in Cloth. Rows: frames.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devenv import ROOT, import_addon, isolate_blender_user_folders  # noqa: E402

isolate_blender_user_folders()
import bpy  # noqa: E402
import numpy as np  # noqa: E402

FPS = 24
DRAPE_N = 64
FOLD_N = 32
SPACING = 13.0  # [m] between the two simulators' copies of a scene, along x
TILE = (640, 400)  # render size of one tile [px]


def _grid(name, n, size, location, rotation=(0.0, 0.0, 0.0)):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=size, location=location,
                                    rotation=rotation)
    obj = bpy.context.object
    obj.name = name
    return obj


def _sphere(name, radius, location):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, segments=64, ring_count=32, location=location)
    obj = bpy.context.object
    obj.name = name
    bpy.ops.object.shade_smooth()
    return obj


def _ground(name, z, location, size=12.0):
    bpy.ops.mesh.primitive_plane_add(size=size, location=(location[0], location[1], z))
    obj = bpy.context.object
    obj.name = name
    return obj


def _make_softsim(cloth, colliders, self_collision):
    """Mark ``cloth`` as a Soft Sim CLOTH with the add-on's defaults; ``colliders`` as its colliders."""
    cloth.softsim.role = "CLOTH"
    if "Pins" in cloth.vertex_groups:
        cloth.softsim.pin_group = "Pins"
    if self_collision is not None:
        cloth.softsim.use_self_collision = self_collision
    for obj, role in colliders:
        obj.softsim.role = role
        obj.softsim.thickness = 0.01


def _make_builtin(cloth, colliders, self_collision):
    """Give ``cloth`` Blender's Cloth modifier at its defaults (pins as its pin group) and colliders a Collision
    modifier. Returns the point cache."""
    modifier = cloth.modifiers.new("Cloth", "CLOTH")
    if "Pins" in cloth.vertex_groups:
        modifier.settings.vertex_group_mass = "Pins"
    modifier.collision_settings.use_self_collision = bool(self_collision)
    for obj, _ in colliders:
        obj.modifiers.new("Collision", "COLLISION")
    return modifier.point_cache


def _bake_builtin(scene, cloth, cache):
    cache.frame_start, cache.frame_end = scene.frame_start, scene.frame_end
    scene.frame_set(scene.frame_start)
    started = time.perf_counter()
    with bpy.context.temp_override(scene=scene, active_object=cloth, object=cloth, point_cache=cache):
        result = bpy.ops.ptcache.bake(bake=True)
    if result != {"FINISHED"} or not cache.is_baked:
        raise SystemExit(f"built-in Cloth bake of {cloth.name} failed: {cache.info}")
    return time.perf_counter() - started


def _bake_softsim(scene, cloth):
    for obj in scene.objects:
        obj.select_set(obj == cloth)
    started = time.perf_counter()
    if bpy.ops.softsim.bake(selected_only=True) != {"FINISHED"}:
        raise SystemExit(f"Soft Sim bake of {cloth.name} failed")
    return time.perf_counter() - started


def build_drape(scene):
    """The 64 x 64 lab scene twice: Soft Sim at x = -SPACING/2, built-in at +SPACING/2."""
    pairs = []
    for side, x in (("Soft Sim", -SPACING / 2), ("Built-in", SPACING / 2)):
        cloth = _grid(f"{side} Drape Cloth", DRAPE_N, 10.0, (x, 0.0, 3.0))
        cloth.vertex_groups.new(name="Pins").add([0, DRAPE_N - 1], 1.0, "REPLACE")
        colliders = [(_sphere(f"{side} Drape Sphere", 2.7, (x, 0.0, 0.0)), "SPHERE"),
                     (_ground(f"{side} Drape Ground", -3.0, (x, 0.0)), "GROUND")]
        pairs.append((cloth, colliders))
    return pairs


def build_fold(scene):
    """A 4 m cloth hung nearly upright (89 degrees), lower edge 5 cm above the ground, and let go: it buckles and
    piles up onto itself. The two copies stand 6 m apart (closer than the drape's, so the camera sees the pile)."""
    pairs = []
    for side, x in (("Soft Sim", -3.0), ("Built-in", 3.0)):
        tilt = np.radians(89.0)
        cloth = _grid(f"{side} Fold Cloth", FOLD_N, 4.0, (x, 0.0, 0.05 + 2.0 * np.sin(tilt)), rotation=(tilt, 0.0, 0.0))
        colliders = [(_ground(f"{side} Fold Ground", 0.0, (x, 0.0), size=5.5), "GROUND")]
        pairs.append((cloth, colliders))
    return pairs


def build_curtain(scene):
    """Two curtains 4 m apart, each with a sphere keyed (linear) from 0.8 m in front of it to 0.5 m behind it."""
    pairs = []
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    for side, x in (("Soft Sim", -2.0), ("Built-in", 2.0)):
        cloth = _grid(f"{side} Curtain Cloth", 21, 2.0, (x, 0.0, 1.2), rotation=(np.pi / 2, 0.0, 0.0))
        top = [v.index for v in cloth.data.vertices if v.co.y > 1.0 - 1e-6]
        cloth.vertex_groups.new(name="Pins").add(top, 1.0, "REPLACE")
        sphere = _sphere(f"{side} Curtain Sphere", 0.3, (x, -0.8, 1.2))
        sphere.keyframe_insert("location", frame=1)
        sphere.location.y = 0.5
        sphere.keyframe_insert("location", frame=7)
        pairs.append((cloth, [(sphere, "SPHERE")]))
    return pairs


def _camera(scene, location, target):
    camera = bpy.data.objects.new("Compare Camera", bpy.data.cameras.new("Compare Camera"))
    scene.collection.objects.link(camera)
    camera.location = location
    direction = np.subtract(target, location)
    # Point -Z of the camera at the target, +Y up.
    import mathutils

    camera.rotation_euler = mathutils.Vector(direction).to_track_quat("-Z", "Y").to_euler()
    scene.camera = camera
    return camera


def _setup_render(scene, colours):
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "OBJECT"
    scene.display.shading.show_shadows = False
    scene.render.resolution_x, scene.render.resolution_y = TILE[0] * 2, TILE[1]
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    world = bpy.data.worlds.new("Compare World")
    world.color = (0.2, 0.22, 0.25)
    scene.world = world
    for obj in scene.objects:
        obj.color = colours(obj.name)


def _tile(paths, out_path):
    """Stack the rendered frames (each already two simulators wide) top to bottom into ``out_path``."""
    rows = []
    for path in paths:
        image = bpy.data.images.load(path)
        w, h = image.size
        rows.append(np.array(image.pixels[:], np.float32).reshape(h, w, 4))
        bpy.data.images.remove(image)
    # Blender's pixel rows run bottom to top: the first frame goes on top, so it is concatenated last.
    tiled = np.concatenate(rows[::-1], axis=0)
    image = bpy.data.images.new("tiled", tiled.shape[1], tiled.shape[0], alpha=True)
    image.pixels.foreach_set(tiled.ravel())
    image.filepath_raw = out_path
    image.file_format = "PNG"
    image.save()
    bpy.data.images.remove(image)
    for path in paths:
        os.remove(path)


def _quality(scene, cloth, sphere, frames):
    """Quality figures of ``cloth``'s bake over ``frames``, in world space: max and p99 edge strain |l/l0 - 1| [%]
    over all frames and edges, the most intersecting edge-triangle pairs of the cloth with itself in any frame
    (exact test), and the deepest point of any face inside ``sphere`` [mm] (None without a sphere)."""
    from soft_sim.solvers.collision.crossings import count_self_intersections, deepest_face_penetration

    mesh = cloth.data
    n = len(mesh.vertices)
    edges = np.empty(len(mesh.edges) * 2, np.int32)
    mesh.edges.foreach_get("vertices", edges)
    edges = edges.reshape(-1, 2)
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3).astype(np.int64)
    rest = None
    strains, crossings, depth = [], 0, 0.0
    for frame in frames:
        scene.frame_set(frame)
        evaluated = cloth.evaluated_get(bpy.context.evaluated_depsgraph_get())
        co = np.empty(n * 3, np.float32)
        evaluated.data.vertices.foreach_get("co", co)
        m = np.array(evaluated.matrix_world)
        x = co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        if rest is None:  # the first frame is the rest shape for both simulators
            rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        strains.append(np.abs(np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1.0))
        crossings = max(crossings, count_self_intersections(x, tris))
        if sphere is not None:
            radius = 0.5 * max(sphere.dimensions)
            depth = max(depth, deepest_face_penetration(x, tris, np.array(sphere.matrix_world.translation), radius))
    strain = np.concatenate(strains)
    return dict(max_strain_pct=100.0 * float(strain.max()), p99_strain_pct=100.0 * float(np.percentile(strain, 99)),
                crossings=int(crossings), face_depth_mm=None if sphere is None else 1000.0 * depth)


def render_comparison(name, build, frames, last_frame, camera, out_dir, self_collision):
    """Build scene ``name`` with both simulators, bake both, render ``frames`` and tile them into
    ``out_dir/compare_<name>.png``. ``self_collision``: True/False for both, None for each simulator's default.
    Returns dict(png=path, ours=figures, builtin=figures), figures = bake ``seconds`` plus ``_quality``."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, last_frame
    scene.softsim.cache_dir = os.path.join(out_dir, "softsim_cache")
    (ours, our_colliders), (builtin, builtin_colliders) = build(scene)
    _make_softsim(ours, our_colliders, self_collision)
    cache = _make_builtin(builtin, builtin_colliders, self_collision)
    builtin_seconds = _bake_builtin(scene, builtin, cache)
    ours_seconds = _bake_softsim(scene, ours)
    all_frames = range(scene.frame_start, scene.frame_end + 1)

    def sphere_of(colliders):
        return next((obj for obj, role in colliders if role == "SPHERE"), None)

    figures = dict(ours=dict(seconds=ours_seconds, solver=ours.softsim.solver,
                             **_quality(scene, ours, sphere_of(our_colliders), all_frames)),
                   builtin=dict(seconds=builtin_seconds, **_quality(scene, builtin, sphere_of(builtin_colliders), all_frames)))
    _camera(scene, *camera)

    def colour(obj_name):
        if "Cloth" in obj_name:
            return (0.85, 0.4, 0.3, 1.0) if obj_name.startswith("Soft Sim") else (0.3, 0.55, 0.85, 1.0)
        return (0.65, 0.65, 0.62, 1.0)

    _setup_render(scene, colour)
    paths = []
    for frame in frames:
        scene.frame_set(frame)
        scene.render.filepath = os.path.join(out_dir, f"_compare_{name}_{frame:03d}.png")
        bpy.ops.render.render(write_still=True)
        paths.append(scene.render.filepath)
    out_path = os.path.join(out_dir, f"compare_{name}.png")
    _tile(paths, out_path)
    return dict(png=out_path, **figures)


SCENES = {
    # The lab drape at both simulators' defaults (self-collision off in both, as each ships).
    "drape": ("drape (64x64 lab, defaults)", build_drape, (12, 30, 72), 72, ((0.0, -40.0, 9.0), (0.0, 0.0, -0.8)), None),
    # Folding onto itself is what self-collision is for: on in both.
    "fold": ("fold onto itself (32x32, self-collision on)", build_fold, (12, 24, 48), 48,
             ((0.0, -20.0, 4.0), (0.0, 0.0, 1.5)), True),
    # A collider that moves fast through a cloth: both at their defaults.
    "curtain": ("keyed sphere through a curtain (21x21, defaults)", build_curtain, (4, 7, 24), 24,
                ((7.0, -9.0, 3.5), (0.0, 0.3, 1.2)), None),
}


def render_all(out_dir, names=tuple(SCENES)):
    """The comparison images of ``names``. Returns one dict per scene: scene, png, and per simulator its bake
    seconds and quality figures (see ``_quality``), keys ``ours`` and ``builtin``."""
    rows = []
    for name in names:
        label, build, frames, last_frame, camera, self_collision = SCENES[name]
        rows.append(dict(scene=label, **render_comparison(name, build, frames, last_frame, camera, out_dir, self_collision)))
    return rows


if __name__ == "__main__":
    addon = import_addon()
    addon.register()
    out = os.path.join(ROOT, "demo_out")
    os.makedirs(out, exist_ok=True)
    for row in render_all(out, sys.argv[1:] or tuple(SCENES)):
        print(row)
    addon.unregister()
