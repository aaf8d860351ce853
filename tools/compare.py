"""Side-by-side renders for `make demo`: Soft Sim's default cloth next to Blender's built-in Cloth (at its defaults)
on the same meshes, baked in the same Blender session, rendered with Workbench and tiled into one PNG per scene.

Scenes (both simulators get the same mesh, pins and colliders):
- "cape": a 2 m x 1 m cape (21 x 11 vertices) whose top row is weighted to a bone (Armature modifier) and pinned;
  the bone moves 1 m along +X over the first second and back over the next 0.8 s (Bezier keys), 48 frames;
- "box": a 3 m cloth (31 x 31) dropped from 1.5 m onto a 2 x 2 x 0.5 m box (Soft Sim: Mesh Collider; built-in:
  Collision modifier) standing on a ground, 48 frames;
- "drape": the 64 x 64 GAMES103 lab scene, a 10 m cloth pinned at two corners 3 m above a sphere of radius 2.7;
- "fold": a 4 m 32 x 32 cloth held nearly upright with its lower edge just above the ground, let go: it buckles
  and piles up on its own folds (self-collision on in both);
- "sheet": a 3 m x 1.5 m sheet (31 x 16) hanging from its pinned top row in a Wind field blowing into its face, 48
  frames;
- "curtain": a 2 m 21 x 21 curtain hanging from its pinned top row, a 0.3 m sphere keyed through it at 5.4 m/s
  (frames 1-7), then still: the sphere must push the curtain ahead of itself.
Run alone: ``python tools/compare.py [cape|box|sheet|curtain|drape|fold ...]`` writes demo_out/compare_<scene>.png and prints the figures.
Left column: Soft Sim (the add-on's defaults for a new CLOTH body); right: built-in Cloth. Rows: frames.
"""
import os
import sys
import time
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devenv import ROOT, import_addon, isolate_blender_user_folders  # noqa: E402

isolate_blender_user_folders()
import bpy  # noqa: E402
import mathutils  # noqa: E402
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


PIN_GROUPS = ("Pins", "Collar")
"""Vertex groups a scene's cloth may be pinned by: "Pins" (held by the object), "Collar" (weighted to the rig's bone
of that name, which moves it through an Armature modifier)."""


def pin_group(cloth):
    """The name of ``cloth``'s pin group (the first of PIN_GROUPS it has), or None."""
    return next((name for name in PIN_GROUPS if name in cloth.vertex_groups), None)


def _make_softsim(cloth, colliders, self_collision, solver=None):
    """Mark ``cloth`` as a Soft Sim CLOTH with the add-on's defaults (``solver``: that solver at its defaults);
    ``colliders`` as its colliders."""
    cloth.softsim.role = "CLOTH"
    if solver is not None:
        cloth.softsim.solver = solver
    if pin_group(cloth):
        cloth.softsim.pin_group = pin_group(cloth)
    if self_collision is not None:
        cloth.softsim.use_self_collision = self_collision
    for obj, role in colliders:
        obj.softsim.role = role
        obj.softsim.thickness = 0.01


def _make_builtin(cloth, colliders, self_collision):
    """Give ``cloth`` Blender's Cloth modifier at its defaults (pins as its pin group) and colliders a Collision
    modifier. Returns the point cache."""
    modifier = cloth.modifiers.new("Cloth", "CLOTH")  # after an Armature modifier: it simulates the rigged mesh
    if pin_group(cloth):
        modifier.settings.vertex_group_mass = pin_group(cloth)
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


@contextmanager
def _hidden(objects):
    """Hide ``objects`` in the viewport (the depsgraph then skips them) while one simulator bakes, as if the other
    simulator's side of the scene were not there: a collider with a Collision modifier is evaluated again, its whole
    modifier stack included, on every frame change (a level-6 Simple Subdivision box: ~6 ms a frame), and the other
    cloth plays its cache back. Shown again on exit, whatever happens."""
    hidden = [obj for obj in objects if not obj.hide_viewport]
    try:
        for obj in hidden:
            obj.hide_viewport = True
        yield
    finally:
        for obj in hidden:
            obj.hide_viewport = False


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


CAPE_COLUMNS, CAPE_ROWS = 21, 11
CAPE_KEYS = ((1, 0.0), (25, 1.0), (44, 0.0))
"""(frame, bone x [m]) keys of the cape's collar bone: 1 m along +X over the first second, back by frame 44."""


def add_rig(scene, name, location, keys=CAPE_KEYS):
    """An armature object at ``location`` with one bone "Collar" (head at the origin of the rig, along +Y, roll 0, so
    its local X is world X) whose location is keyed along X by ``keys`` (Bezier, Blender's default)."""
    rig = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    rig.location = location
    scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = rig.data.edit_bones.new("Collar")
    bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 0.5, 0.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    pose = rig.pose.bones["Collar"]
    for frame, x in keys:
        pose.location = (x, 0.0, 0.0)
        pose.keyframe_insert("location", frame=frame)
    pose.location = (0.0, 0.0, 0.0)
    return rig


def add_cape(scene, name, rig, columns=CAPE_COLUMNS, rows=CAPE_ROWS, width=2.0, height=1.0):
    """A ``width`` x ``height`` [m] cape (``columns`` x ``rows`` vertices, quads) hanging in the rig's YZ plane from
    the bone's head down (across the bone's X motion, as a cape on the back of a character walking along X); its top
    row has weight 1 in the group "Collar" and an Armature modifier on ``rig``."""
    y, z = np.meshgrid(np.linspace(-width / 2, width / 2, columns), np.linspace(0.0, -height, rows))  # row 0 on top
    vertices = np.stack([np.zeros(y.size), y.ravel(), z.ravel()], axis=1) + np.array(rig.location)
    index = np.arange(rows * columns).reshape(rows, columns)
    faces = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices.tolist(), [], faces.tolist())
    cape = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(cape)
    cape.vertex_groups.new(name="Collar").add(index[0].tolist(), 1.0, "REPLACE")
    cape.modifiers.new("Armature", "ARMATURE").object = rig
    return cape


def build_cape(scene):
    """Two rigged capes 4 m apart, collars at 2 m, each with its own rig; no collider."""
    pairs = []
    for side, x in (("Soft Sim", -2.0), ("Built-in", 2.0)):
        rig = add_rig(scene, f"{side} Rig", (x, 0.0, 2.0))
        pairs.append((add_cape(scene, f"{side} Cape Cloth", rig), []))
    return pairs


SHEET_COLUMNS, SHEET_ROWS = 31, 16
SHEET_WIND = 4.0
"""Strength of the sheets' Wind field (Blender's default Wind otherwise: no falloff, no noise); Soft Sim reads it as
the air's speed [m/s]."""


def build_sheet(scene):
    """Two 3 m x 1.5 m sheets (``SHEET_COLUMNS`` x ``SHEET_ROWS``) hanging from their pinned top rows ("Pins") 2.5 m up
    in the XZ plane, 2 m apart, in one Wind field blowing along +Y, into their faces; no collider."""
    pairs = []
    for side, x in (("Soft Sim", -2.5), ("Built-in", 2.5)):
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=SHEET_COLUMNS - 1, y_subdivisions=SHEET_ROWS - 1, size=1.0,
                                        location=(x, 0.0, 1.75), rotation=(np.pi / 2, 0.0, 0.0))
        cloth = bpy.context.object
        cloth.name = f"{side} Sheet Cloth"
        cloth.scale = (3.0, 1.5, 1.0)
        bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
        zs = np.array([v.co.z for v in cloth.data.vertices])
        cloth.vertex_groups.new(name="Pins").add(np.flatnonzero(zs > zs.max() - 1e-6).tolist(), 1.0, "REPLACE")
        pairs.append((cloth, []))
    bpy.ops.object.effector_add(type="WIND", location=(0.0, -3.0, 1.75), rotation=(-np.pi / 2, 0.0, 0.0))
    bpy.context.object.field.strength = SHEET_WIND
    return pairs


BOX_SIZE = (2.0, 2.0, 0.5)  # [m]


def add_box(name, location, size=BOX_SIZE, subdivisions=0, slide=None):
    """A box (scaled cube) standing on z = location[2]; ``subdivisions`` > 0 adds a Simple Subdivision modifier of that
    level (the same box with 6 * 4**level quads, for the collider's cost). ``slide`` = (offset (3,) [m], last frame):
    the box is keyframed at frame 1 and moved by ``offset`` by that frame (a moving collider)."""
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(location[0], location[1], location[2] + size[2] / 2), scale=size)
    box = bpy.context.object
    box.name = name
    if subdivisions:
        modifier = box.modifiers.new("Subdivision", "SUBSURF")
        modifier.subdivision_type, modifier.levels, modifier.render_levels = "SIMPLE", subdivisions, subdivisions
    if slide is not None:
        offset, last = slide
        box.keyframe_insert("location", frame=1)
        box.location = tuple(np.add(box.location, offset))
        box.keyframe_insert("location", frame=last)
    return box


BOX_SLIDE = ((0.0, 0.6, 0.0), 24)
"""The moving box of ``build_box(moving=True)``: 0.6 m along +Y between frames 1 and 24 (eased in and out), under
the cloth that lands on it at about frame 20 (in the add-on's default air drag)."""


BESIDE = (3.0, -3.0, 5.5, -5.5)
"""[m] The y of the boxes ``build_box(boxes_beside=k)`` stands beside the cloth's box, in this order: 0.5 m and more
from the cloth (y within 1.5 m) all through its fall and drape, so out of its reach."""


def build_box(scene, with_box=True, subdivisions=0, n=31, moving=False, slide_frames=BOX_SLIDE[1], boxes_beside=0):
    """Two 3 m cloths (``n`` x ``n``) 6 m apart, 1.5 m above the ground, over a 2 x 2 x 0.5 m box (Mesh Collider) on a
    ground; ``with_box`` False: the ground alone; ``moving``: the box slides as ``BOX_SLIDE`` does, at its pace, from
    frame 1 to ``slide_frames`` (48: 1.2 m); ``boxes_beside``: that many more boxes (Mesh Colliders, at most 4) standing
    beside, at the y of ``BESIDE``, which the cloth never reaches (a room with other furniture)."""
    offset, last = BOX_SLIDE
    slide = (tuple(np.multiply(offset, slide_frames / last)), slide_frames)
    pairs = []
    for side, x in (("Soft Sim", -3.0), ("Built-in", 3.0)):
        cloth = _grid(f"{side} Box Cloth", n, 3.0, (x, 0.0, 1.5))
        colliders = [(_ground(f"{side} Box Ground", 0.0, (x, 0.0), size=5.5), "GROUND")]
        if with_box:
            box = add_box(f"{side} Box", (x, 0.0, 0.0), subdivisions=subdivisions, slide=slide if moving else None)
            colliders.append((box, "MESH"))
        for k, y in enumerate(BESIDE[:boxes_beside]):
            colliders.append((add_box(f"{side} Box Beside {k + 1}", (x, y, 0.0)), "MESH"))
        pairs.append((cloth, colliders))
    return pairs


def _camera(scene, location, target):
    camera = bpy.data.objects.new("Compare Camera", bpy.data.cameras.new("Compare Camera"))
    scene.collection.objects.link(camera)
    camera.location = location
    direction = np.subtract(target, location)
    # Point -Z of the camera at the target, +Y up.
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


def _world_positions(obj):
    """World-space positions (n, 3) [m] of ``obj``'s evaluated mesh at the scene's current frame."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    co = np.empty(len(evaluated.data.vertices) * 3, np.float32)
    evaluated.data.vertices.foreach_get("co", co)
    m = np.array(evaluated.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def _box_bounds(box):
    """The world-space (low (3,), high (3,)) corners of an axis-aligned box object [m]."""
    corners = np.array([box.matrix_world @ mathutils.Vector(c) for c in box.bound_box])
    return corners.min(axis=0), corners.max(axis=0)


def _box_edges(low, high):
    """The 12 edges of the axis-aligned box [low, high] as segment end points (p (12, 3), q (12, 3))."""
    corners = np.array([[(low, high)[i][0], (low, high)[j][1], (low, high)[k][2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
    pairs = np.array([(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1])
    return corners[pairs[:, 0]], corners[pairs[:, 1]]


def box_figures(x, tris, low, high):
    """How far cloth positions ``x`` (n, 3) [m] with triangles ``tris`` (t, 3) are inside the box [low, high]: the
    deepest vertex [m] (0 when none is inside), and how many (box edge, cloth triangle) pairs cross (a box edge
    showing through the cloth)."""
    from soft_sim.solvers.collision.narrow_phase.crossings import segments_cross_triangles

    depth = np.minimum(x - low, high - x).min(axis=1).max()
    p, q = _box_edges(low, high)
    e, t = np.meshgrid(np.arange(len(p)), np.arange(len(tris)), indexing="ij")
    e, t = e.ravel(), t.ravel()
    crossing = segments_cross_triangles(p[e], q[e], x[tris[t, 0]], x[tris[t, 1]], x[tris[t, 2]])
    return max(float(depth), 0.0), int(crossing.sum())


def _without(obj, modifier_name, fn):
    """``fn()`` evaluated with ``obj``'s modifier ``modifier_name`` switched off (it is switched back on)."""
    modifier = obj.modifiers.get(modifier_name)
    if modifier is not None:
        modifier.show_viewport = False
    try:
        return fn()
    finally:
        if modifier is not None:
            modifier.show_viewport = True


def _quality(scene, cloth, sphere, frames, box=None, sim_modifier=None):
    """Quality figures of ``cloth``'s bake over ``frames``, in world space: max and p99 edge strain |l/l0 - 1| [%]
    over all frames and edges, the most intersecting edge-triangle pairs of the cloth with itself in any frame
    (exact test), the deepest point of any face inside ``sphere`` [mm] (None without a sphere); with ``box`` (an
    axis-aligned box object) the deepest vertex inside it [mm] and the most box edge / cloth triangle crossings in
    any frame; with a pin group and ``sim_modifier`` (the modifier holding the simulation) the largest distance
    [mm] between a pinned vertex and where the stack without that modifier (the rig) puts it."""
    from soft_sim.solvers.collision.narrow_phase.crossings import count_self_intersections, deepest_face_penetration

    mesh = cloth.data
    edges = np.empty(len(mesh.edges) * 2, np.int32)
    mesh.edges.foreach_get("vertices", edges)
    edges = edges.reshape(-1, 2)
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3).astype(np.int64)
    group = pin_group(cloth)
    pinned = None
    if group and sim_modifier:
        index = cloth.vertex_groups[group].index
        pinned = np.array([v.index for v in mesh.vertices if any(g.group == index and g.weight >= 0.5 for g in v.groups)])
    rest = None
    strains, crossings, depth, box_depth, box_crossings, pin_error = [], 0, 0.0, 0.0, 0, 0.0
    for frame in frames:
        scene.frame_set(frame)
        x = _world_positions(cloth)
        if rest is None:  # the first frame is the rest shape for both simulators
            rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        strains.append(np.abs(np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1.0))
        crossings = max(crossings, count_self_intersections(x, tris))
        if sphere is not None:
            radius = 0.5 * max(sphere.dimensions)
            depth = max(depth, deepest_face_penetration(x, tris, np.array(sphere.matrix_world.translation), radius))
        if box is not None:  # at this frame: the box may move
            d, c = box_figures(x, tris, *_box_bounds(box))
            box_depth, box_crossings = max(box_depth, d), max(box_crossings, c)
        if pinned is not None and len(pinned):
            rigged = _without(cloth, sim_modifier, lambda: _world_positions(cloth))
            pin_error = max(pin_error, float(np.linalg.norm(x[pinned] - rigged[pinned], axis=1).max()))
    strain = np.concatenate(strains)
    figures = dict(max_strain_pct=100.0 * float(strain.max()), p99_strain_pct=100.0 * float(np.percentile(strain, 99)),
                   crossings=int(crossings), face_depth_mm=None if sphere is None else 1000.0 * depth)
    if box is not None:
        figures.update(box_depth_mm=1000.0 * box_depth, box_edge_crossings=box_crossings)
    if pinned is not None:
        figures.update(pin_error_mm=1000.0 * pin_error)
    return figures


def bake_pair(build, last_frame, cache_dir, self_collision, fps=FPS, solver=None):
    """A fresh scene from ``build`` (frames 1..``last_frame``), Soft Sim and built-in Cloth set up and baked in this
    process, built-in first (before Soft Sim's roles are set, see below). ``self_collision``: True/False for both, None
    for each simulator's default; ``solver``: Soft Sim's solver (None: the default).
    Returns (scene, ours, builtin, figures): figures = dict(ours=..., builtin=...), each the bake ``seconds`` plus
    ``_quality`` (the box is the first Mesh Collider; pins are measured against the stack without the simulation)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.frame_start, scene.frame_end = 1, last_frame
    scene.softsim.cache_dir = cache_dir
    (ours, our_colliders), (builtin, builtin_colliders) = build(scene)
    cache = _make_builtin(builtin, builtin_colliders, self_collision)
    ours_side = [ours] + [obj for obj, _ in our_colliders]
    builtin_side = [builtin] + [obj for obj, _ in builtin_colliders]
    with _hidden(ours_side):
        builtin_seconds = _bake_builtin(scene, builtin, cache)
    # Soft Sim's roles only now: an unbaked Soft Sim cloth simulates live on every frame change, and the built-in
    # bake steps through every frame, so its time would include a whole live Soft Sim run.
    _make_softsim(ours, our_colliders, self_collision, solver)
    with _hidden(builtin_side):
        ours_seconds = _bake_softsim(scene, ours)
    all_frames = range(scene.frame_start, scene.frame_end + 1)

    def of_role(colliders, role):
        return next((obj for obj, r in colliders if r == role), None)

    figures = dict(ours=dict(seconds=ours_seconds, solver=ours.softsim.solver,
                             **_quality(scene, ours, of_role(our_colliders, "SPHERE"), all_frames,
                                        box=of_role(our_colliders, "MESH"), sim_modifier="SoftSim Cache")),
                   builtin=dict(seconds=builtin_seconds,
                                **_quality(scene, builtin, of_role(builtin_colliders, "SPHERE"), all_frames,
                                           box=of_role(builtin_colliders, "MESH"), sim_modifier="Cloth")))
    return scene, ours, builtin, figures


def render_comparison(name, build, frames, last_frame, camera, out_dir, self_collision):
    """Build scene ``name`` with both simulators, bake both (``bake_pair``), render ``frames`` and tile them into
    ``out_dir/compare_<name>.png``. Returns dict(png=path, ours=figures, builtin=figures)."""
    scene, _, _, figures = bake_pair(build, last_frame, os.path.join(out_dir, "softsim_cache"), self_collision)
    _camera(scene, *camera)

    def colour(obj_name):
        if "Cloth" in obj_name:
            return (0.85, 0.4, 0.3, 1.0) if obj_name.startswith("Soft Sim") else (0.3, 0.55, 0.85, 1.0)
        if obj_name.endswith("Box"):
            return (0.45, 0.42, 0.38, 1.0)  # darker than the ground, so its edges read under the cloth
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
    # The real shots first: a cape on a moving rig, a cloth dropped on a box (Mesh Collider), both at the defaults.
    "cape": ("rigged cape (21x11, collar on a bone moving 1 m and back, defaults)", build_cape, (12, 25, 40), 48,
             ((3.5, -9.0, 2.4), (0.5, 0.0, 1.4)), None),
    "box": ("cloth dropped on a box (31x31 over a 2x2x0.5 m Mesh Collider, defaults)", build_box, (10, 20, 48), 48,
            ((0.0, -14.0, 7.0), (0.0, 0.0, 0.2)), None),
    # The lab drape at both simulators' defaults (self-collision off in both, as each ships).
    "drape": ("drape (64x64 lab, defaults)", build_drape, (12, 30, 72), 72, ((0.0, -40.0, 9.0), (0.0, 0.0, -0.8)), None),
    # Folding onto itself is what self-collision is for: on in both.
    "fold": ("fold onto itself (32x32, self-collision on)", build_fold, (12, 24, 48), 48,
             ((0.0, -20.0, 4.0), (0.0, 0.0, 1.5)), True),
    # Wind: both sheets in one Wind field, at their defaults.
    "sheet": ("sheet in the wind (31x16, top row pinned, Wind 4 into its face, defaults)", build_sheet, (12, 24, 48),
              48, ((-3.0, -10.0, 5.0), (0.0, 0.5, 1.5)), None),
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
