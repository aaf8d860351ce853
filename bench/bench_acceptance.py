"""Acceptance scenes for solids, baked in Blender through the public API with each solver's defaults.

What a user does: add a mesh, set ``role = 'SOLID'`` and a solver, leave every other setting
at its default, add a ground, press Bake, read ``obj.evaluated_get(depsgraph).data`` frame by frame.
- suzanne: Monkey (size 2, Subdivision 2 applied, voxel remesh 0.05 m, so it is closed) lowest point 1.5 m above a
  frictionless ground, 48 frames at 24 fps;
- ico: Blender's default ico sphere (radius 1 m, 2 levels) pole down, lowest point 1 m above a ground with
  friction 0.5, 48 frames; uv_sphere and cube: the default UV sphere (r 1 m, 32 x 16) and cube (2 m) the same way.
Figures per solver: horizontal travel of the centroid of the solid the surface bounds (its centre of mass at uniform
density; also of the vertices' mean, which moves when an asymmetric body turns) [mm] at the last frame and the largest over the
bake, surface volume change at the last frame [%], lowest vertex [mm], bake seconds.

Run: ``python bench/bench_acceptance.py [--scenes suzanne ico] [--solvers XPBD PBD ...] [--frames 48]``.
"""
import argparse
import ast
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (os.path.join(ROOT, "tools"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)
from blender_helpers import add_remeshed_suzanne  # noqa: E402
from devenv import import_addon, isolate_blender_user_folders  # noqa: E402

TITLE = "Acceptance scenes, baked in Blender with defaults"
SOLVERS = ["IMPLICIT_EULER", "PBD", "XPBD", "PROJECTIVE", "NEWTON"]
"""The solvers the add-on offers a Solid (``solvers.registry.SolverInfo.roles``: not the explicit integrators)."""
SCENES = {"suzanne": dict(friction=0.0, drop=1.5), "ico": dict(friction=0.5, drop=1.0),
          "uv_sphere": dict(friction=0.5, drop=1.0), "cube": dict(friction=0.5, drop=1.0)}


def describe() -> str:
    return ("Solids with every setting at its default but the solver; 24 fps. suzanne: voxel-remeshed Monkey 1.5 m "
            "above a frictionless ground; ico: default ico sphere (r 1 m) pole down 1 m above a ground with friction "
            "0.5; uv_sphere, cube: the default UV sphere and cube the same way. drift = horizontal travel of the "
            "centroid of the solid the surface bounds (its centre of mass at uniform density) at the last frame / the "
            "largest over the bake; vertex-mean drift = the same for the mean "
            "of the vertices, which moves when an asymmetric body turns; volume = surface volume change at the last "
            "frame. An error cell is the bake's own message.")


def _add_body(bpy, scene_name, drop):
    if scene_name == "suzanne":
        body = add_remeshed_suzanne(0.05)
    elif scene_name == "ico":
        bpy.ops.mesh.primitive_ico_sphere_add()
        body = bpy.context.object
    elif scene_name == "uv_sphere":
        bpy.ops.mesh.primitive_uv_sphere_add()
        body = bpy.context.object
    else:
        bpy.ops.mesh.primitive_cube_add()
        body = bpy.context.object
    body.name = "Body"
    lowest = min(v.co.z for v in body.data.vertices)
    body.location.z = drop - lowest
    return body


def bake(scene_name, solver, frames=48, **settings):
    """One bake; returns the figures as a dict."""
    import bpy
    from blender_helpers import evaluated_positions

    from soft_sim.solvers.geometry import mesh_volume, volume_centroid

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.softsim.cache_dir = tempfile.mkdtemp(prefix="softsim-acceptance-")
    bpy.ops.mesh.primitive_plane_add(size=40.0)
    ground = bpy.context.object
    ground.softsim.role = "GROUND"
    ground.softsim.friction = SCENES[scene_name]["friction"]
    body = _add_body(bpy, scene_name, SCENES[scene_name]["drop"])
    body.softsim.role = "SOLID"
    body.softsim.solver = solver
    for key, value in settings.items():
        setattr(body.softsim, key, value)
    body.data.calc_loop_triangles()
    tris = np.empty(len(body.data.loop_triangles) * 3, np.int32)
    body.data.loop_triangles.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3)
    start = time.perf_counter()
    try:
        bpy.ops.softsim.bake()
    except RuntimeError as error:
        return dict(scene=scene_name, solver=solver, note=str(error).splitlines()[0][:80])
    seconds = time.perf_counter() - start
    m = np.array(body.matrix_world)
    xs = [evaluated_positions(body, f) @ m[:3, :3].T + m[:3, 3] for f in range(1, frames + 1)]
    centroid = np.array([volume_centroid(x, tris) for x in xs])
    travel = np.linalg.norm(centroid[:, :2] - centroid[0, :2], axis=1)
    mean = np.array([x.mean(axis=0) for x in xs])
    mean_travel = np.linalg.norm(mean[:, :2] - mean[0, :2], axis=1)
    return dict(scene=scene_name, solver=solver, vertices=len(xs[0]),
                drift_mm=1000 * travel[-1], max_drift_mm=1000 * travel.max(), mean_drift_mm=1000 * mean_travel[-1],
                volume_pct=100 * (mesh_volume(xs[-1], tris) / mesh_volume(xs[0], tris) - 1.0),
                lowest_mm=1000 * min(x[:, 2].min() for x in xs), seconds=seconds)


def markdown(rows) -> str:
    lines = ["| scene | solver | drift [mm] | max drift [mm] | vertex-mean drift [mm] | volume [%] | lowest [mm] | bake [s] |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['scene']} | {r['solver']} | {r['note']} | | | | | |")
            continue
        lines.append(f"| {r['scene']} | {r['solver']} | {r['drift_mm']:.1f} | {r['max_drift_mm']:.1f} | {r['mean_drift_mm']:.1f} | "
                     f"{r['volume_pct']:+.2f} | {r['lowest_mm']:.1f} | {r['seconds']:.1f} |")
    return "\n".join(lines)


def run(scenes=tuple(SCENES), solvers=SOLVERS, frames=48, verbose=False, **settings):
    isolate_blender_user_folders()
    import_addon().register()
    rows = []
    for scene_name in scenes:
        for solver in solvers:
            rows.append(bake(scene_name, solver, frames, **settings))
            if verbose:
                print(markdown(rows[-1:]).splitlines()[-1], flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    parser.add_argument("--solvers", nargs="+", default=SOLVERS)
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="Object.softsim settings for every body, e.g. use_embedded=True")
    args = parser.parse_args(argv)
    settings = {k: ast.literal_eval(v) for k, v in (item.split("=", 1) for item in args.set)}
    rows = run(args.scenes, args.solvers, args.frames, verbose=True, **settings)
    print(describe() + "\n\n" + markdown(rows))


if __name__ == "__main__":
    main()
