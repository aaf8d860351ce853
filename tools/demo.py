"""`make demo`: the real shots first, then the lab reference, all baked headless and rendered with Workbench.

1. Real shots, Soft Sim's defaults next to Blender's built-in Cloth on the same meshes (``tools/compare.py``): a
   cape on a moving rig, a cloth dropped onto a box (Mesh Collider), a keyed sphere pushed through a curtain.
2. The lab reference: the GAMES103 lab preset as the lab specifies it (PBD, coarse, stretchy by design), a finer
   XPBD cloth and a Newton (IPC) rubber torus, saved as a .blend with its PC2 caches, and the 64 x 64 lab drape
   against built-in Cloth. (``python tools/compare.py fold`` renders the self-collision pile too; it takes minutes.)

Output (demo_out/): compare_cape.png, compare_box.png, compare_curtain.png (left Soft Sim, right built-in Cloth; rows
are frames), lab_reference_*.png, compare_drape.png, soft_sim_demo.blend and softsim_cache/*.pc2.
"""
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from devenv import ROOT, import_addon, isolate_blender_user_folders  # noqa: E402
import compare  # noqa: E402  (after devenv: it imports bpy)

isolate_blender_user_folders()
import bpy  # noqa: E402
import numpy as np  # noqa: E402

OUT = os.path.join(ROOT, "demo_out")
CACHE_DIR = os.path.join(OUT, "softsim_cache")
"""The demo's Cache Folder (//softsim_cache next to its .blend); tools/compare.py bakes into it too."""
BLEND_NAME = "soft_sim_demo.blend"
# The demo's own files in CACHE_DIR: every cache written from its .blend (``<blend>_<object>_<hash>.pc2``, see
# operators/output/pc2_cache.py), compare.py's Soft Sim cloths (unsaved scenes: "untitled"), and Soft Sim's undo trash
# and a crashed bake's staging leftovers. Each bake's file carries a fresh token, so a rerun would otherwise add a set.
OWN_CACHE_FILE = re.compile(r"(soft_sim_demo_.+|untitled_Soft_Sim_.+)\.pc2")
OWN_LEFTOVER = re.compile(r"\.softsim-trash|\.softsim-.+\.(staged|pc2\.tmp)")
FRAMES = 120
FINE_N = 64


def add_fine_cloth(context, x_offset):
    """A 10 m XPBD cloth of FINE_N x FINE_N vertices pinned at two corners, 3 m above its own sphere, of cotton
    (the Cotton preset: 13 kg over its 100 m^2; the default 1 kg, 10 g/m^2, would float down like tissue paper)."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=FINE_N - 1, y_subdivisions=FINE_N - 1, size=10.0, location=(x_offset, 0.0, 3.0))
    cloth = context.object
    cloth.name = "Fine Cloth"
    cloth.vertex_groups.new(name="Pins").add([0, FINE_N - 1], 1.0, "REPLACE")
    s = cloth.softsim
    s.role, s.pin_group, s.solver = "CLOTH", "Pins", "XPBD"
    bpy.ops.softsim.apply_preset(preset="COTTON")  # the selected cloth
    bpy.ops.mesh.primitive_uv_sphere_add(radius=2.7, segments=48, ring_count=24, location=(x_offset, 0.0, 0.0))
    sphere = context.object
    sphere.name = "Fine Sphere"
    bpy.ops.object.shade_smooth()
    sphere.softsim.role = "SPHERE"
    sphere.softsim.thickness = 0.02
    return cloth, sphere


def add_newton_solid(context):
    """A rubber torus (Neo-Hookean, E = 0.2 MPa, nu = 0.45) solved by NEWTON, dropped between the two cloths."""
    bpy.ops.mesh.primitive_torus_add(major_radius=1.4, minor_radius=0.5, location=(0.0, 0.0, 1.5), rotation=(0.5, 0.3, 0.0))
    solid = context.object
    solid.name = "Newton Torus"
    bpy.ops.object.shade_smooth()
    s = solid.softsim
    s.role, s.solver = "SOLID", "NEWTON"
    s.mass, s.youngs_modulus, s.poisson_ratio, s.tet_resolution = 20.0, 2.0e5, 0.45, 8
    return solid


def build_scene(addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    context = bpy.context
    scene = context.scene
    lab_cloth, lab_sphere = addon.operators.presets.add_games103_lab(context, location=(-7.0, 0.0, 0.0))
    fine_cloth, fine_sphere = add_fine_cloth(context, 7.0)
    torus = add_newton_solid(context)
    bpy.ops.mesh.primitive_plane_add(size=40.0, location=(0.0, 0.0, -3.0))
    context.object.name = "Ground"
    context.object.softsim.role = "GROUND"
    context.object.softsim.thickness = 0.01  # the Newton barrier's reach; the cloths keep this distance too
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.softsim.cache_dir = "//softsim_cache"
    return scene, [(lab_cloth, lab_sphere), (fine_cloth, fine_sphere), (torus, None)]


def world_positions(obj, frame):
    bpy.context.scene.frame_set(frame)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.data
    buf = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", buf)
    m = np.array(evaluated.matrix_world)
    return buf.reshape(-1, 3).astype(float) @ m[:3, :3].T + m[:3, 3]


def surface_volume(x, tris) -> float:
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def volume_error(scene, solid):
    """Largest |V / V0 - 1| of the solid's closed surface over all frames."""
    solid.data.calc_loop_triangles()
    tris = np.empty(len(solid.data.loop_triangles) * 3, np.int32)
    solid.data.loop_triangles.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3)
    v0 = surface_volume(world_positions(solid, scene.frame_start), tris)
    return max(abs(surface_volume(world_positions(solid, f), tris) / v0 - 1.0) for f in range(scene.frame_start, scene.frame_end + 1))


def measure(scene, cloth, sphere, ground_z):
    """Max edge strain over all frames and edges, and the deepest penetration into the sphere (if any) or ground [m]."""
    edges = np.empty(len(cloth.data.edges) * 2, np.int32)
    cloth.data.edges.foreach_get("vertices", edges)
    edges = edges.reshape(-1, 2)
    rest = world_positions(cloth, scene.frame_start)
    rest_length = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
    strain = depth = 0.0
    for frame in range(scene.frame_start, scene.frame_end + 1):
        x = world_positions(cloth, frame)
        length = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        strain = max(strain, float(np.max(np.abs(length / rest_length - 1.0))))
        depth = max(depth, float(ground_z - x[:, 2].min()))
        if sphere is not None:
            centre, radius = np.array(sphere.location), 0.5 * max(sphere.dimensions)
            depth = max(depth, float(radius - np.linalg.norm(x - centre, axis=1).min()))
    return strain, max(depth, 0.0)


SHOTS = ("cape", "box", "curtain")
"""tools/compare.py's scenes `make demo` leads with."""
REFERENCE_COMPARISONS = ("drape",)


def render_previews(scene, frames):
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "OBJECT"
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 960, 540, 100
    scene.render.image_settings.file_format = "PNG"
    colours = {"Lab Cloth": (0.85, 0.35, 0.25, 1), "Fine Cloth": (0.25, 0.5, 0.85, 1), "Newton Torus": (0.35, 0.7, 0.4, 1),
               "Ground": (0.6, 0.6, 0.6, 1)}
    for obj in scene.objects:
        obj.color = colours.get(obj.name, (0.9, 0.85, 0.7, 1))
    camera_data = bpy.data.cameras.new("Camera")
    camera = bpy.data.objects.new("Camera", camera_data)
    scene.collection.objects.link(camera)
    camera.location = (0.0, -38.0, 9.0)
    camera.rotation_euler = (np.radians(79.0), 0.0, 0.0)  # looks slightly down at both setups (x = -7 and 7)
    scene.camera = camera
    world = bpy.data.worlds.new("Demo World")
    world.color = (0.2, 0.22, 0.25)
    scene.world = world
    paths = []
    for frame in frames:
        scene.frame_set(frame)
        scene.render.filepath = os.path.join(OUT, f"lab_reference_{frame:03d}.png")
        bpy.ops.render.render(write_still=True)
        paths.append(scene.render.filepath)
    return paths


def clear_own_caches(folder=CACHE_DIR) -> list:
    """Remove what earlier runs of the demo wrote to ``folder`` (``OWN_CACHE_FILE``, ``OWN_LEFTOVER``); any other
    file there is the user's and stays. Returns the names removed."""
    if not os.path.isdir(folder):
        return []
    removed = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if OWN_CACHE_FILE.fullmatch(name) and (os.path.isfile(path) or os.path.islink(path)):
            os.remove(path)  # a link itself, never what it points to
        elif OWN_LEFTOVER.fullmatch(name):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
        else:
            continue
        removed.append(name)
    return removed


def print_comparisons(rows):
    """The figures of tools/compare.py's ``render_all`` rows as a Markdown table, then each image's path."""
    print("Bake = wall time of the bake in Blender; strain over all frames and edges; crossings = most intersecting")
    print("edge-triangle pairs of the cloth with itself in any frame (self-collision off by default in both); face depth =")
    print("deepest face point inside the sphere; box depth = deepest vertex inside the box, box edges = box edge / cloth")
    print("triangle crossings in any frame; pin error = largest distance of a pinned vertex from where the rig puts it.")
    print("| scene | simulator | bake s | max strain % | p99 strain % | self crossings | face depth mm | box depth mm "
          "| box edges | pin error mm |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def figure(f, key, digits=1):
        value = f.get(key)
        return "-" if value is None else f"{value:.{digits}f}"

    for row in rows:
        for label, key in ((f"Soft Sim ({row['ours']['solver']})", "ours"), ("built-in Cloth", "builtin")):
            f = row[key]
            print(f"| {row['scene']} | {label} | {f['seconds']:.1f} | {f['max_strain_pct']:.1f} | {f['p99_strain_pct']:.1f} "
                  f"| {f['crossings']} | {figure(f, 'face_depth_mm')} | {figure(f, 'box_depth_mm')} "
                  f"| {f.get('box_edge_crossings', '-')} | {figure(f, 'pin_error_mm', 2)} |")
    for row in rows:
        print(f"Image: {os.path.relpath(row['png'], ROOT)}")


def main():
    addon = import_addon()
    addon.register()
    os.makedirs(OUT, exist_ok=True)
    clear_own_caches()
    started = time.perf_counter()

    print()
    print("Real shots: Soft Sim's defaults (left) next to Blender's built-in Cloth (right) on the same meshes, pins")
    print("and colliders (built-in: a Collision modifier on the box, ground and sphere; pinned through its pin group).")
    shots = compare.render_all(OUT, SHOTS)
    print_comparisons(shots)

    scene, bodies = build_scene(addon)
    blend = os.path.join(OUT, BLEND_NAME)
    bpy.ops.wm.save_as_mainfile(filepath=blend)  # the relative cache folder needs a saved file
    rows = []
    for cloth, sphere in bodies:
        for obj in scene.objects:
            obj.select_set(obj == cloth)
        bake_started = time.perf_counter()
        result = bpy.ops.softsim.bake(selected_only=True)
        seconds = time.perf_counter() - bake_started
        if result != {"FINISHED"}:
            raise SystemExit(f"bake of {cloth.name} failed")
        s = cloth.softsim
        if s.solver == "NEWTON":
            solver, steps = "NEWTON (IPC)", f"{s.substeps}x(Newton to {s.newton_tolerance:g} m/s)"
        else:
            solver, steps = f"{s.solver} {s.constraint_scheme.replace('_', '-').lower()}", f"{s.substeps}x{s.iterations}"
        volume = f"{100 * volume_error(scene, cloth):.2f}%" if s.role == "SOLID" else "-"
        rows.append([cloth.name, len(cloth.data.vertices), solver, steps, scene.frame_end - scene.frame_start + 1, seconds,
                     *measure(scene, cloth, sphere, -3.0), volume])
    paths = render_previews(scene, (1, 30, FRAMES))
    scene.frame_set(scene.frame_start)
    bpy.ops.wm.save_mainfile()

    print()
    print("Lab reference: the GAMES103 lab preset as the lab specifies it (PBD on a coarse grid: it stretches and shows")
    print("facets by design), a finer XPBD cloth of cotton and a Newton (IPC) rubber torus.")
    print("| body | vertices | solver | substeps x iterations | frames | bake time [s] | ms/frame | max edge strain "
          "| deepest penetration [mm] | worst volume error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, solver, steps, frames, seconds, strain, depth, volume in rows:
        print(f"| {name} | {n} | {solver} | {steps} | {frames} | {seconds:.2f} | {1000 * seconds / frames:.1f} | {100 * strain:.2f}% "
              f"| {1000 * depth:.3f} | {volume} |")
    print(f"Saved {os.path.relpath(blend, ROOT)} with caches in {os.path.relpath(CACHE_DIR, ROOT)}/")
    print("Lab reference renders: " + ", ".join(os.path.relpath(p, ROOT) for p in paths))

    print()
    print("Lab drape against built-in Cloth (64x64, both at their defaults):")
    print_comparisons(compare.render_all(OUT, REFERENCE_COMPARISONS))
    print()
    print(f"make demo took {time.perf_counter() - started:.0f} s")
    addon.unregister()

if __name__ == "__main__":
    main()
