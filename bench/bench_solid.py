"""Solid benchmark: Soft Sim XPBD on tetrahedralized spheres against Blender's built-in Soft Body.

A sphere of radius 1 (Blender's ico sphere, one subdivision level per row) starts with its lowest point
1 m above the ground plane z = 0 and falls for FRAMES frames at 24 fps, gravity -9.81. Soft Sim
tetrahedralizes the surface as role Solid does (``solvers.geometry.tetrahedralize`` at the row's resolution, the
mesh's vertices are the first particles), builds the model with ``build_model`` and advances it with
``advance_frame`` against a ``GroundPlane`` (thickness 0, friction 0.2, the add-on's defaults otherwise).
The peer is Blender's Soft Body on the same surface mesh: goal off, edge springs on, the rest at its
defaults, a plane with a Collision modifier as ground, baked headless by stepping ``scene.frame_set``.
Soft Body has no volume term, so a second peer row stiffens it as far as its settings go (bending 10,
pull/push 0.99), which keeps the shape at a price in time.

Reported per row: tets (Soft Sim's tet count; the same for the peer rows of that sphere), surface
vertices, wall time of the simulation only (Soft Sim's tetrahedralize + model build separately), ms per
frame, speed ratio against default Soft Body on the same mesh (> 1: faster than Soft Body), volume error
|V/V0 - 1| of the closed surface (divergence theorem) at the last frame and the worst over all frames,
and the deepest vertex below the ground over all frames [mm].

Run: ``python bench/bench_solid.py [--frames 100]``; ``bench/run.py`` calls ``run()``.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
# Blender's user folders go to a throw-away place so the bench never touches a real user's config.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-bench-blender-"))

from blender_quiet import SilenceStdout  # noqa: E402
from solvers import GroundPlane, SimulationDiverged, SolverConfig, State, advance_frame, build_model, make_solver  # noqa: E402
from solvers.geometry import interpolate_embedded, tetrahedralize  # noqa: E402

TITLE = "Solid"
FRAMES = 100
FPS = 24
RADIUS = 1.0
DROP = 1.0  # the sphere's lowest point starts this far above the ground [m]
TOTAL_MASS = 1.0  # Soft Sim body mass [kg] (Soft Body keeps its default 1 kg per vertex)
CASES = ((3, 6), (4, 9), (5, 14))
"""(ico sphere subdivisions, tet resolution): about 1k, 5k and 20k tets."""
YOUNGS_MODULUS = 1.0e5
"""Young's modulus [Pa] of the spheres (``solvers.material``). The old setting, 1e4 N/m on every tet edge, made the
three spheres as stiff as E = k sum L^2 / (6 V) = 7.1e4, 1.1e5 and 1.7e5 Pa (it grew with the resolution; its volume
stiffness 1e4 added only 0.1-1 kPa, so nu was about 1/4): 1e5 Pa, the add-on's default, is the middle one."""
POISSON_RATIO = 0.4
"""Poisson's ratio of the spheres, the add-on's default (the old springs were at about 1/4: squashier)."""
MATERIAL = dict(youngs_modulus=YOUNGS_MODULUS, poisson_ratio=POISSON_RATIO)
SOFTSIM_CONFIGS = [
    dict(label="Soft Sim XPBD Gauss-Seidel 30x1 (add-on defaults)", solver="XPBD", constraint_scheme="GAUSS_SEIDEL", substeps=30, iterations=1, **MATERIAL),
    dict(label="Soft Sim XPBD Gauss-Seidel 10x5", solver="XPBD", constraint_scheme="GAUSS_SEIDEL", substeps=10, iterations=5, **MATERIAL),
    dict(label="Soft Sim XPBD Jacobi 10x5", solver="XPBD", constraint_scheme="JACOBI", substeps=10, iterations=5, **MATERIAL),
    # Mass-spring backward Euler on the tet edges (no volume term, so nu = 1/4), one CG solve per substep.
    dict(label="Soft Sim Implicit Euler (CG) 2 substeps", solver="IMPLICIT_EULER", linear_solver="CG", substeps=2, iterations=1, **MATERIAL),
    dict(label="Soft Sim Projective 8x5 (Anderson)", solver="PROJECTIVE", substeps=8, iterations=5, **MATERIAL),
    # Stable Neo-Hookean tets, IPC barrier: the ground's thickness is the barrier's reach d_hat (must be > 0).
    dict(label="Soft Sim Newton (IPC) 1 substep", solver="NEWTON", substeps=1, ground_thickness=0.01, **MATERIAL),
]
SOFT_BODY = "Blender Soft Body (goal off, edges on)"
SOFT_BODY_STIFF = "Blender Soft Body stiff (bend 10, pull/push 0.99)"
PEERS = {SOFT_BODY: {}, SOFT_BODY_STIFF: dict(bend=10.0, pull=0.99, push=0.99)}


def _new_scene(frames):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.gravity = (0.0, 0.0, -9.81)
    scene.use_gravity = True
    scene.frame_start, scene.frame_end = 1, frames + 1
    return scene


def _add_sphere(subdivisions):
    import bpy

    bpy.ops.mesh.primitive_ico_sphere_add(radius=RADIUS, subdivisions=subdivisions, location=(0.0, 0.0, DROP + RADIUS))
    return bpy.context.object


def _world(obj, local):
    m = np.array(obj.matrix_world)
    return local @ m[:3, :3].T + m[:3, 3]


def _read(mesh):
    buf = np.empty(len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3)


def sphere_mesh(subdivisions):
    """World-space vertices (n, 3) and triangles (t, 3) of Blender's ico sphere at the start position."""
    _new_scene(1)
    obj = _add_sphere(subdivisions)
    obj.data.calc_loop_triangles()
    tris = np.empty(len(obj.data.loop_triangles) * 3, np.int64)
    obj.data.loop_triangles.foreach_get("vertices", tris)
    return _world(obj, _read(obj.data)), tris.reshape(-1, 3)


def surface_volume(x, tris) -> float:
    """Volume [m^3] enclosed by the closed surface with vertices x (n, 3) (divergence theorem)."""
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    centre = x.mean(axis=0)
    return float(np.einsum("ij,ij->i", a - centre, np.cross(b - centre, c - centre)).sum() / 6.0)


def quality(frames_x, tris, v0):
    """(final volume error, worst volume error, deepest point below z = 0 [m]) over the frames."""
    errors = [abs(surface_volume(x, tris) / v0 - 1.0) for x in frames_x]
    depth = max(0.0, max(float(-x[:, 2].min()) for x in frames_x))
    return errors[-1], max(errors), depth


def run_softsim(vertices, triangles, resolution, frames, spec) -> dict:
    """Tetrahedralize and simulate as role Solid does; time the build and the frames separately."""
    spec = dict(spec)
    spec.pop("label")
    thickness = spec.pop("ground_thickness", 0.0)
    config = SolverConfig(**spec)
    start = time.perf_counter()
    tet = tetrahedralize(vertices, triangles, resolution=resolution)
    model = build_model(tet.vertices, None, None, tet.tets, None, TOTAL_MASS)
    solver = make_solver(model, config)
    build_seconds = time.perf_counter() - start

    def to_mesh(x):
        out = x[: tet.surface_count].copy()
        if len(tet.embedded_vertices):
            out[tet.embedded_vertices] = interpolate_embedded(x, tet.tets, tet.embed_tet, tet.embed_weights)
        return out

    ground = [GroundPlane(np.zeros(3), np.array([0.0, 0.0, 1.0]), thickness, 0.2)]
    state = State.at_rest(model)
    positions, seconds, diverged, newton_iterations = [], 0.0, None, 0
    for _ in range(frames):
        start = time.perf_counter()
        try:
            newton_iterations += advance_frame(solver, state, 1.0 / FPS, config.substeps, ground).newton_iterations
        except SimulationDiverged as error:
            diverged = str(error)
            break
        finally:
            seconds += time.perf_counter() - start
        positions.append(to_mesh(state.x))
    return dict(seconds=seconds, build_seconds=build_seconds, positions=positions, tets=len(tet.tets),
                particles=len(tet.vertices), diverged=diverged,
                newton_per_frame=newton_iterations / max(len(positions), 1) if config.solver == "NEWTON" else float("nan"))


def run_soft_body(subdivisions, frames, overrides) -> dict:
    """Blender's Soft Body on the same ico sphere; the bake is timed, positions are read afterwards."""
    import bpy

    scene = _new_scene(frames)
    bpy.ops.mesh.primitive_plane_add(size=100.0)
    bpy.context.object.modifiers.new("Collision", "COLLISION")
    obj = _add_sphere(subdivisions)
    modifier = obj.modifiers.new("Softbody", "SOFT_BODY")
    settings = modifier.settings
    settings.use_goal = False
    settings.use_edges = True
    for key, value in overrides.items():
        setattr(settings, key, value)
    modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, frames + 1
    scene.frame_set(1)
    with SilenceStdout():
        start = time.perf_counter()
        for f in range(2, frames + 2):  # stepping the frames bakes the point cache (headless)
            scene.frame_set(f)
            bpy.context.evaluated_depsgraph_get()
        seconds = time.perf_counter() - start
    positions = []
    for f in range(2, frames + 2):
        scene.frame_set(f)
        positions.append(_world(obj, _read(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data)))
    return dict(seconds=seconds, build_seconds=float("nan"), positions=positions, diverged=None)


def run(frames: int = FRAMES, cases=CASES, configs=None, blender: bool = True, verbose: bool = True) -> list:
    """Rows (dicts) of the solid benchmark: per sphere, the Soft Body peers first, then Soft Sim."""
    configs = SOFTSIM_CONFIGS if configs is None else configs
    rows = []
    for subdivisions, resolution in cases:
        vertices, triangles = sphere_mesh(subdivisions)
        v0 = surface_volume(vertices, triangles)
        jobs = [(label, lambda o=o, subdivisions=subdivisions: run_soft_body(subdivisions, frames, o)) for label, o in PEERS.items()] if blender else []
        jobs += [(spec["label"], lambda spec=spec, v=vertices, t=triangles, r=resolution: run_softsim(v, t, r, frames, spec)) for spec in configs]
        results = [(label, job()) for label, job in jobs]
        tets = next((r["tets"] for _, r in results if "tets" in r), float("nan"))
        peer = next((r["seconds"] for label, r in results if label == SOFT_BODY), None)
        for label, r in results:
            done = len(r["positions"])
            final, worst, depth = quality(r["positions"], triangles, v0) if done else (float("nan"),) * 3
            row = dict(
                tets=tets, surface_vertices=len(vertices), method=label, frames=done, seconds=r["seconds"],
                ms_per_frame=1000.0 * r["seconds"] / max(done, 1),
                speedup=(peer / r["seconds"] * done / frames) if peer else float("nan"),
                volume_error_final_pct=100.0 * final, volume_error_worst_pct=100.0 * worst,
                penetration_mm=1000.0 * depth, build_seconds=r["build_seconds"], note=r.get("diverged") or "",
                newton_per_frame=r.get("newton_per_frame", float("nan")),
            )
            rows.append(row)
            if verbose:
                print(f"  tets {tets:6d} {label:52s} {row['seconds']:8.2f} s  volume error {row['volume_error_final_pct']:6.2f} % "
                      f"(worst {row['volume_error_worst_pct']:6.2f} %)  penetration {row['penetration_mm']:6.1f} mm",
                      file=sys.stderr, flush=True)
    return rows


def _fmt(value, digits):
    return "-" if value != value else f"{value:.{digits}f}"  # nan -> "-"


def markdown(rows: list) -> str:
    lines = [
        "| tets | surface vertices | method | total s | ms/frame | speed vs Soft Body | volume error % (final) "
        "| volume error % (worst) | penetration mm | Newton it./frame | build s |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        method = r["method"] + (f" (diverged after {r['frames']} frames)" if r["note"] else "")
        lines.append(
            f"| {r['tets']} | {r['surface_vertices']} | {method} | {_fmt(r['seconds'], 2)} | {_fmt(r['ms_per_frame'], 1)} "
            f"| {_fmt(r['speedup'], 3)}x | {_fmt(r['volume_error_final_pct'], 2)} | {_fmt(r['volume_error_worst_pct'], 2)} "
            f"| {_fmt(r['penetration_mm'], 1)} | {_fmt(r['newton_per_frame'], 1)} | {_fmt(r['build_seconds'], 2)} |"
        )
    return "\n".join(lines)


def describe(frames: int = FRAMES) -> str:
    return (
        f"Solid: Blender ico sphere of radius {RADIUS:g} m (subdivisions {', '.join(str(s) for s, _ in CASES)}), lowest "
        f"point {DROP:g} m above the ground z = 0, {frames} frames at {FPS} fps. Soft Sim: role Solid's path "
        f"(tetrahedralize at resolution {', '.join(str(r) for _, r in CASES)}, mass {TOTAL_MASS:g} kg lumped by tet "
        f"volume, Young's modulus {YOUNGS_MODULUS:g} Pa, Poisson's ratio {POISSON_RATIO:g} (XPBD: per-tet Neo-Hookean "
        "constraints; Implicit Euler and Newton: the stable Neo-Hookean energy of each tet; Projective: per-tet strain "
        "and volume constraints; see solvers/material.py), damping 0.1/s, ground "
        "friction 0.2, thickness 0 (Newton: 0.01 m, the IPC barrier's reach; bodies stay above it, never touching z = 0)); "
        "\"10x5\" = 10 substeps x 5 iterations per frame. Peers: Blender Soft Body on the same surface mesh with goal off "
        "and edges on (its defaults otherwise: 1 kg per vertex, pull/push 0.5, bending 0, adaptive 10-300 steps per "
        "frame), and a stiff variant (bending 10, pull/push 0.99); a plane with a Collision modifier as ground. "
        "Times are simulation only (Soft Sim's tetrahedralize + model build, incl. colouring, in the last column). "
        "Volume: of the closed surface mesh, divergence theorem; penetration: deepest vertex below z = 0 over all frames."
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=FRAMES, help="frames to simulate")
    parser.add_argument("--no-blender", action="store_true", help="skip the built-in Soft Body peers")
    args = parser.parse_args(argv)
    rows = run(args.frames, blender=not args.no_blender)
    print(describe(args.frames))
    print()
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
