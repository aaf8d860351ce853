"""Bodies meeting each other: what a bake of several bodies costs, and a cube in a hammock.

Scenes (built in Blender by script, baked with ``operators.bake.run_bake``, which ``bpy.ops.softsim.bake`` runs):
- ten cloths apart: ten 2 m cloths (21 x 21, XPBD defaults) side by side 2.5 m apart, dropped from 1 m onto a ground,
  48 frames: baked together (one bake of all ten, their contact checked after every substep) against ten separate
  bakes of one cloth each. The cost of bodies that never come near each other should be the sum of the bodies alone.
- hammock: a 2 m cloth (21 x 21) pinned at its four corners 1.5 m up, a 0.4 m Solid cube of 2 kg dropped into it
  from 2.2 m, a ground below, 72 frames, cube and cloth on the same solver (NEWTON: one system) and a NEWTON cube
  in an XPBD cloth; and the empty hammock for comparison.

Figures: bake seconds; for the hammock the lowest point of the cube over all frames, the lowest cloth vertex from
frame 10 on (after the empty cloth's first dip), and in the worst frame the cloth vertices inside the cube (the convex
hull of its 8 corners, as drawn) and the edges of one body through a triangle of the other (the meshes as drawn).

Run: ``python bench/bench_bodies.py`` (``bench/run.py --only bodies`` calls ``run()``).
"""
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (ROOT, os.path.join(ROOT, "tools"), os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-bench-blender-"))

from blender_helpers import crossings_between, empty_scene, hammock_scene, world_positions  # noqa: E402

TITLE = "Bodies meeting each other: bakes of several bodies, a cube in a hammock"
APART_FRAMES = 48
HAMMOCK_FRAMES = 72


def describe() -> str:
    return "\n\n".join(p.strip() for p in __doc__.split("\n\n")[1:3])


def _addon():
    from devenv import import_addon

    addon = import_addon()
    import bpy

    if not hasattr(bpy.types.Object, "softsim"):
        addon.register()
    return addon


def _timed_bake(addon, objects):
    import bpy

    start = time.perf_counter()
    addon.operators.bake.run_bake(bpy.context, objects)
    return time.perf_counter() - start


def run_apart(addon, count=10, frames=APART_FRAMES):
    import bpy

    empty_scene(frames)
    bpy.ops.mesh.primitive_plane_add(size=40.0)
    bpy.context.object.softsim.role = "GROUND"
    cloths = []
    for k in range(count):
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0, location=(2.5 * k, 0.0, 1.0))
        cloth = bpy.context.object
        cloth.name = f"Cloth{k}"
        cloth.softsim.role = "CLOTH"
        cloths.append(cloth)
    together = _timed_bake(addon, cloths)
    alone = sum(_timed_bake(addon, [cloth]) for cloth in cloths)
    return {"count": count, "frames": frames, "together_s": together, "alone_s": alone}


def run_hammock(addon, solver, with_cube=True, frames=HAMMOCK_FRAMES, cube_solver=None):
    from scipy.spatial import Delaunay

    _, cloth, cube = hammock_scene(frames, solver, cube_solver=cube_solver, with_cube=with_cube)
    objects = [cloth] + ([cube] if with_cube else [])
    seconds = _timed_bake(addon, objects)
    label = solver if cube_solver in (None, solver) else f"{cube_solver} cube, {solver} cloth"
    row = {"solver": label, "cube": with_cube, "frames": frames, "seconds": seconds, "cube_low": None, "inside": 0,
           "crossings": 0}
    sheet_low = np.inf
    for frame in range(1, frames + 1):
        sheet = world_positions(cloth, frame)
        if frame >= 10:
            sheet_low = min(sheet_low, float(sheet[:, 2].min()))
        if with_cube:
            box = world_positions(cube, frame)
            low = float(box[:, 2].min())
            row["cube_low"] = low if row["cube_low"] is None else min(row["cube_low"], low)
            row["inside"] = max(row["inside"], int((Delaunay(box).find_simplex(sheet) >= 0).sum()))
            row["crossings"] = max(row["crossings"], crossings_between([cloth, cube], frame))
    row["cloth_low"] = sheet_low
    return row


def run(verbose=True):
    addon = _addon()
    result = {"apart": run_apart(addon), "hammock": []}
    if verbose:
        print(result["apart"], flush=True)
    for solver, cube_solver, with_cube in (("XPBD", None, True), ("XPBD", None, False), ("PROJECTIVE", None, True),
                                           ("PROJECTIVE", None, False), ("NEWTON", None, True), ("NEWTON", None, False),
                                           ("XPBD", "NEWTON", True)):
        row = run_hammock(addon, solver, with_cube, cube_solver=cube_solver)
        result["hammock"].append(row)
        if verbose:
            print(row, flush=True)
    return result


def markdown(result) -> str:
    a = result["apart"]
    lines = ["| scene | bake s | ratio |", "|---|---:|---:|",
             f"| {a['count']} cloths apart, baked together, {a['frames']} frames | {a['together_s']:.2f} "
             f"| {a['together_s'] / a['alone_s']:.2f}× the separate bakes |",
             f"| the same {a['count']} cloths, {a['count']} separate bakes | {a['alone_s']:.2f} | 1 |",
             "", ("| hammock | solver | bake s | lowest cube point m | lowest cloth vertex (frame 10 on) m | cloth vertices in cube "
              "| edges through the other body |"),
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in result["hammock"]:
        cube = "-" if row["cube_low"] is None else f"{row['cube_low']:.3f}"
        lines.append(f"| {'with the cube' if row['cube'] else 'empty'} | {row['solver']} | {row['seconds']:.1f} | {cube} "
                     f"| {row['cloth_low']:.3f} | {row['inside'] if row['cube'] else '-'} "
                     f"| {row.get('crossings', '-') if row['cube'] else '-'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(run()))
