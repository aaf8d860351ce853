"""Scenario bench: the scenes of tests/test_scenarios.py, run longer, one Markdown row per solver and scene.

Scenes (``tests/scenario_scenes.py``; meshes from Blender primitives through bpy):
- drop: the voxel-remeshed Suzanne (Monkey size 2, Subdivision 2, voxel remesh 0.05 m) as a SOLID, and the torus, the
  long bar and the uneven cylinder as solids, dropped 1.5 m onto a frictionless ground, FRAMES frames;
- friction: Blender's ico sphere (2 levels; pole down as Blender adds it, and tilted so that it lands on a vertex
  38 mm off its centre of mass, where it tips over in every solver, NEWTON too) and a mirror-symmetric tet cube dropped onto a ground with friction 0.5;
- spin: the torus spun in free flight, no gravity, damping 0;
- rest: the torus placed flat on a ground with friction, damping 2/s, settled then watched for 6 frames.
Figures: COM drift [mm] (horizontal), angular momentum change |L - L0| / |L0| and max gain, max kinetic energy
gain (relative), resting max speed [m/s] and creep [mm], volume error and max edge strain at the last frame,
ms per frame. Forward Euler is left out (it needs thousands of substeps on these solids).

Run: ``python bench/bench_scenarios.py [--frames 48] [--voxel 0.05]``; ``bench/run.py`` calls ``run()``.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (ROOT, os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-bench-blender-"))

import scenario_scenes as S  # noqa: E402
from solvers import AVAILABLE_SOLVERS, SimulationDiverged, build_model  # noqa: E402

TITLE = "Scenarios"
FRAMES = 48
VOXEL = 0.05
SOLVERS = [s for s in AVAILABLE_SOLVERS if s != "EXPLICIT_EULER"]


def describe() -> str:
    return (f"Every solver on the same scenes, {FRAMES} frames at 24 fps unless noted, the solver's default substeps "
            "(symplectic Euler: its stability bound). Drop scenes: frictionless ground, E = 1e5 Pa, nu = 0.4, damping 0. "
            "drift = horizontal centre-of-mass travel. '-' = not measured in that scene.")


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    try:
        result = fn(*args, **kwargs)
    except SimulationDiverged as error:
        result = dict(note=f"diverged: {error}")
    result["seconds"] = time.perf_counter() - start
    return result


def run(frames: int = FRAMES, voxel: float = VOXEL, solvers=None):
    meshes = S.blender_meshes(suzanne_voxel=voxel, suzanne_size=2.0)
    rows = []
    solvers = solvers or SOLVERS
    drops = [("suzanne_solid", 10), ("torus", 5), ("bar", 12), ("uneven", 4)]
    for solver in solvers:
        for name, resolution in drops:
            model = S.drop_model(meshes, name, lowest=1.5, resolution=resolution)
            r = _timed(S.run_drop, model, solver, frames)
            rows.append(dict(solver=solver, scene=f"drop {name} ({model.particle_count} v)", frames=frames, **r))
        for turn, label in ((None, "pole down"), (S.SKEW, "tilted, lands 38 mm off its centre")):
            model = S.drop_model(meshes, "ico", lowest=0.1, turn=turn)
            r = _timed(S.run_drop, model, solver, frames, friction=0.5)
            rows.append(dict(solver=solver, scene=f"friction ico sphere ({label})", frames=frames, **r))
        x, tets = S.symmetric_cube()
        x[:, 2] += 0.1
        r = _timed(S.run_drop, build_model(x, tets=tets, total_mass=1.0), solver, frames, friction=0.5)
        rows.append(dict(solver=solver, scene="friction symmetric cube", frames=frames, **r))
        r = _timed(S.run_spin, S.drop_model(meshes, "torus"), solver, frames // 2)
        rows.append(dict(solver=solver, scene="spin torus", frames=frames // 2, **r))
        v, t = meshes["torus"]
        r = _timed(S.run_rest, S.solid_model(S.place(v, 0.01), t, 5), solver, frames, 6)
        rows.append(dict(solver=solver, scene="rest torus", frames=frames + 6, rest=True, **r))
        print(f"  {solver} done", file=sys.stderr, flush=True)
    return rows


def _f(value, scale=1.0, digits=3):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    return f"{value * scale:.{digits}g}"


def markdown(rows) -> str:
    lines = ["| solver | scene | frames | COM drift mm | dL/L0 | max L gain | max KE gain | rest max speed m/s | creep mm "
             "| volume error % | max strain % | ms/frame |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rest = r.get("rest", False)
        drift = r.get("creep") if rest else r.get("drift")
        lines.append(
            f"| {r['solver']} | {r['scene']}{' ' + r['note'] if 'note' in r else ''} | {r['frames']} "
            f"| {_f(None if rest else drift, 1000)} | {_f(r.get('L_change'))} | {_f(r.get('max_L_gain'))} "
            f"| {_f(r.get('max_energy_gain'))} | {_f(r.get('max_speed') if rest else None)} | {_f(r.get('creep'), 1000)} "
            f"| {_f(r.get('volume_error'), 100)} | {_f(r.get('max_strain'), 100)} | {_f(1000 * r['seconds'] / r['frames'], 1, 4)} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=FRAMES)
    parser.add_argument("--voxel", type=float, default=VOXEL, help="Suzanne's voxel remesh size [m] (issue: 0.05)")
    parser.add_argument("--solvers", nargs="+", default=None)
    args = parser.parse_args(argv)
    print(markdown(run(args.frames, args.voxel, args.solvers)))


if __name__ == "__main__":
    main()
