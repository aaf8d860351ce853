"""Real shots: Soft Sim's Bake against built-in Cloth's bake on the same meshes, in the same Blender process.

Scenes (built by tools/compare.py, the same ones `make demo` renders; both simulators at their defaults):
- box drape: a 3 m cloth (31 x 31) dropped from 1.5 m onto a 2 x 2 x 0.5 m box standing on a ground (Soft Sim: the
  box is a Mesh Collider and the plane a Ground; built-in: a Collision modifier on each), 48 frames;
- rigged cape: a 2 m x 1 m cape (21 x 11) whose top row is weighted to a bone (Armature modifier) and is the pin
  group of both; the bone moves 1 m along X over the first second and back by frame 44, 48 frames;
- sheet in the wind: a 3 m x 1.5 m sheet (31 x 16) hanging from its pinned top row in a Wind field of strength 4
  blowing into its face, 48 frames. The two respond differently to the same field: Soft Sim's air at 4 m/s lifts its
  light default sheet to nearly horizontal; built-in Cloth's sheet (0.3 kg a vertex by default, 149 kg in all) hangs
  almost still (its strain 0.3%). A timing of a frame with a field, not a match of looks.

Figures per simulator: wall time of the bake, the fastest of three (Soft Sim: ``bpy.ops.softsim.bake()``, model
build and PC2 writing included; built-in: ``bpy.ops.ptcache.bake``; each bakes with the other's cloth and colliders
hidden, so the depsgraph skips them, as if alone in the scene), ms per frame, speed ratio (built-in seconds / Soft
Sim seconds, > 1: Soft Sim is faster), max and p99 edge strain |l/l0 - 1| over all frames and edges, the deepest cloth vertex inside
the box and the most (box edge, cloth triangle) crossing pairs in any frame (a box edge showing through the cloth),
the largest distance between a pinned vertex and where the rig alone puts it, and the most self-crossing
edge-triangle pairs in any frame (self-collision is off in both by default; the box drape's last row has it on in
both).

Box drape per solver: the same box drape, 72 frames, baked with each solver that serves cloth on a mesh collider at
its defaults: the deepest vertex inside the box and the most box edges through the cloth over every frame, and the
height of the cloth's centre vertex at the last frame (resting on the 0.5 m top with thickness 1 cm: 0.51 m).

Mesh collider cost: the box drape's cloth over the ground alone, over the box, over the box sliding sideways under
it (keyframed, 0.6 m a second, eased in and out over the 48 frames: a moving collider) and over the box with a Simple
Subdivision modifier of level 6 (49 152 triangles), standing and sliding, and over the box with four more boxes
standing beside it, 0.5 m and more from the cloth (out of its reach: a room with other furniture), 48 frames: ms per
frame of each simulator, and Soft Sim's collider cost: its ms per frame less those of the ground alone (the body's own
step), also as a multiple of the body's step (the aim: at most 1×). The cloth falls for 19 frames and lands at about
frame 20 (in the add-on's default air drag), so 29 of the frames are in contact.

Run: ``python bench/bench_shots.py`` (``bench/run.py --only shots`` calls ``run()``).
"""
import os
import sys
import tempfile
from functools import partial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (ROOT, os.path.join(ROOT, "tools")):
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-bench-blender-"))

TITLE = "Real shots: a cloth dropped on a box, a rigged cape and a sheet in the wind, against built-in Cloth"
FRAMES = 48
COST_FRAMES = 48  # the collider-cost rows: the cloth lands at about frame 20, so 29 of them are in contact
REPEAT = 3  # every row: each simulator's fastest of this many bakes
HEAVY_LEVEL = 6  # Simple Subdivision level of the heavy collider: 6 * 4**6 quads = 49 152 triangles
SOLVER_FRAMES = 72  # the per-solver box drape: landing (about frame 20), bounce and rest
BOX_SOLVERS = ("XPBD", "PROJECTIVE", "IMPLICIT_EULER", "NEWTON")
BESIDE_BOXES = 4
BESIDE_ROW = f"box (12 triangles) on the ground, {BESIDE_BOXES} more boxes beside it out of the cloth's reach"
"""The collider-cost row with boxes the cloth never reaches: each costs (its ms/frame - the box's) / BESIDE_BOXES."""


def describe() -> str:
    """The module docstring's scene and figure paragraphs, as one Markdown paragraph each."""
    paragraphs = __doc__.split("\n\n")[1:5]
    return "\n\n".join(p.strip() for p in paragraphs)


def _register():
    from devenv import import_addon

    addon = import_addon()
    import bpy

    if not hasattr(bpy.types.Object, "softsim"):
        addon.register()


def _collider_triangles(scene, obj) -> int:
    import bpy

    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.data
    mesh.calc_loop_triangles()
    return len(mesh.loop_triangles)


def _pair(build, frames, cache_dir, solver=None, self_collision=None):
    import bpy
    import compare
    import numpy as np
    from blender_quiet import SilenceStdout

    with SilenceStdout():  # Blender prints every baked frame
        scene, ours, builtin, figures = compare.bake_pair(build, frames, cache_dir, self_collision, solver=solver)
    box = scene.objects.get("Soft Sim Box")
    figures["collider_triangles"] = _collider_triangles(scene, box) if box is not None else None
    scene.frame_set(scene.frame_end)
    mesh = ours.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    centre = np.array(ours.matrix_world) @ np.append(np.array(mesh.vertices[len(mesh.vertices) // 2].co), 1.0)
    figures["ours"]["centre_z"] = float(centre[2])
    return figures


def _fastest(build, frames, cache_dir, repeat, **kw):
    """``_pair`` (with ``kw``) run ``repeat`` times: the figures of the first run, each simulator's ``seconds`` its
    fastest (the bakes are deterministic; bakes on this kind of machine vary by 15% and more from run to run, and a
    collider's cost is a difference of two rows)."""
    runs = [_pair(build, frames, cache_dir, **kw) for _ in range(repeat)]
    figures = runs[0]
    for key in ("ours", "builtin"):
        figures[key]["seconds"] = min(run[key]["seconds"] for run in runs)
    return figures


def run(frames: int = FRAMES, cost_frames: int = COST_FRAMES, heavy_level: int = HEAVY_LEVEL, verbose: bool = True,
        solver_frames: int = SOLVER_FRAMES, solvers=BOX_SOLVERS, repeat: int = REPEAT):
    """Bake every shot with both simulators. Returns dict(shots=[rows], solvers=[rows], colliders=[rows]); a shot row:
    scene, and per simulator (``ours``, ``builtin``) the figures of tools/compare.py's ``bake_pair``; a solver row: the
    box drape's figures with Soft Sim on that solver; a collider row: the collider's name and triangle count and both
    simulators' bake seconds and box figures."""
    import compare

    _register()
    cache_dir = tempfile.mkdtemp(prefix="softsim-bench-cache-")
    shots, colliders = [], []
    for label, build in (("box drape (31x31)", compare.build_box), ("rigged cape (21x11)", compare.build_cape),
                         ("sheet in the wind (31x16)", compare.build_sheet)):
        shots.append(dict(scene=label, frames=frames, **_fastest(build, frames, cache_dir, repeat)))
        if verbose:  # each row as it is done: the whole run takes many minutes
            print(f"  {shots[-1]}", file=sys.stderr, flush=True)
    shots.append(dict(scene="box drape (31x31), self-collision on in both", frames=frames, self_collision=True,
                      **_fastest(compare.build_box, frames, cache_dir, repeat, self_collision=True)))
    if verbose:
        print(f"  {shots[-1]}", file=sys.stderr, flush=True)
    per_solver = []
    for solver in solvers:
        per_solver.append(dict(solver=solver, frames=solver_frames,
                               **_fastest(compare.build_box, solver_frames, cache_dir, repeat, solver=solver)))
        if verbose:
            print(f"  {per_solver[-1]}", file=sys.stderr, flush=True)
    for label, build in (("ground plane only", partial(compare.build_box, with_box=False)),
                         ("box (12 triangles) on the ground", compare.build_box),
                         ("box (12 triangles) sliding under the cloth",
                          partial(compare.build_box, moving=True, slide_frames=cost_frames)),
                         (f"box subdivided (Simple, level {heavy_level}) on the ground",
                          partial(compare.build_box, subdivisions=heavy_level)),
                         (f"box subdivided (Simple, level {heavy_level}) sliding under the cloth",
                          partial(compare.build_box, subdivisions=heavy_level, moving=True, slide_frames=cost_frames)),
                         (BESIDE_ROW, partial(compare.build_box, boxes_beside=BESIDE_BOXES))):
        colliders.append(dict(collider=label, frames=cost_frames, **_fastest(build, cost_frames, cache_dir, repeat)))
        if verbose:
            print(f"  {colliders[-1]}", file=sys.stderr, flush=True)
    return dict(shots=shots, solvers=per_solver, colliders=colliders)


def _f(value, digits=3):
    return "-" if value is None else f"{value:.{digits}g}"


def markdown(result) -> str:
    lines = ["| scene | simulator | bake s | ms/frame | speed vs Cloth | max / p99 strain % | depth in box mm "
             "| box edges through cloth | pin error mm | self crossings |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result["shots"]:
        setting = "defaults + self-collision" if row.get("self_collision") else "defaults"
        for key, label in (("ours", f"Soft Sim {row['ours']['solver']} ({setting})"),
                           ("builtin", f"built-in Cloth ({setting})")):
            f = row[key]
            speed = row["builtin"]["seconds"] / row["ours"]["seconds"] if key == "ours" else 1.0
            lines.append(f"| {row['scene']} | {label} | {f['seconds']:.2f} | {1000 * f['seconds'] / row['frames']:.1f} "
                         f"| {speed:.2g}× | {f['max_strain_pct']:.1f} / {f['p99_strain_pct']:.1f} | {_f(f.get('box_depth_mm'))} "
                         f"| {f.get('box_edge_crossings', '-')} | {_f(f.get('pin_error_mm'))} | {f['crossings']} |")
    lines += ["", f"Box drape per solver ({result['solvers'][0]['frames'] if result.get('solvers') else '-'} frames, "
              "each solver at its defaults):", "",
              "| solver | bake s | ms/frame | speed vs Cloth | max / p99 strain % | depth in box mm | box edges through cloth "
              "| centre height at the end m |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result.get("solvers", []):
        ours, builtin = row["ours"], row["builtin"]
        lines.append(f"| {row['solver']} | {ours['seconds']:.1f} | {1000 * ours['seconds'] / row['frames']:.0f} "
                     f"| {builtin['seconds'] / ours['seconds']:.2g}× | {ours['max_strain_pct']:.1f} / {ours['p99_strain_pct']:.1f} "
                     f"| {_f(ours.get('box_depth_mm'))} | {ours.get('box_edge_crossings', '-')} | {ours['centre_z']:.3f} |")
    lines += ["", f"Mesh collider cost (the box drape's cloth, {result['colliders'][0]['frames'] if result['colliders'] else '-'} "
              "frames, both at their defaults):", "",
              "| collider | box triangles | Soft Sim ms/frame | built-in ms/frame | speed vs Cloth "
              "| Soft Sim collider cost ms/frame (× body's step) | Soft Sim depth in box mm | Soft Sim box edges through cloth |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    body = next((row for row in result["colliders"] if not row["collider_triangles"]), None)
    body_ms = 1000 * body["ours"]["seconds"] / body["frames"] if body else None
    for row in result["colliders"]:
        ours, builtin = row["ours"], row["builtin"]
        ms = 1000 * ours["seconds"] / row["frames"]
        cost = "-" if body_ms is None or row is body else f"{ms - body_ms:.1f} ({(ms - body_ms) / body_ms:.2g}×)"
        lines.append(f"| {row['collider']} | {row['collider_triangles'] or '-'} | {ms:.1f} "
                     f"| {1000 * builtin['seconds'] / row['frames']:.1f} | {builtin['seconds'] / ours['seconds']:.2g}× "
                     f"| {cost} | {_f(ours.get('box_depth_mm'))} | {ours.get('box_edge_crossings', '-')} |")
    rows = {row["collider"]: row for row in result["colliders"]}
    box, beside = rows.get("box (12 triangles) on the ground"), rows.get(BESIDE_ROW)
    if box is not None and beside is not None:
        def each(key):
            return 1000 * (beside[key]["seconds"] - box[key]["seconds"]) / box["frames"] / BESIDE_BOXES
        lines += ["", f"Each box out of the cloth's reach costs Soft Sim {each('ours'):.2f} ms a frame and built-in "
                      f"Cloth {each('builtin'):.2f} ms a frame (the last row less the box alone, over {BESIDE_BOXES} "
                      "boxes)."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(run()))
