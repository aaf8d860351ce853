"""Profile of a mesh collider's cost against the body's own step (engine only, no Blender).

The box drape of docs/benchmarks.md ("Mesh collider cost"): a 3 m cloth (31 x 31, 1 kg) dropped from 1.5 m onto a
2 x 2 x 0.5 m box standing on a ground, XPBD at its defaults (30 substeps; ``--solver`` for another) with the add-on's
air drag (``--air``, ``config.AIR_DRAG_DEFAULT``: in the air the cloth falls as it does in Blender and lands at frame
20; ``--air 0``, the engine's vacuum, at frame 11), the add-on's collider defaults (thickness 1 cm, friction 0.2), 24
frames at 24 fps. Three scenes:

- ``ground``: the cloth over the ground alone (the body's own step);
- ``box``: over the 12-triangle box on the ground;
- ``box<L>``: over the same box cut as Blender's Simple Subdivision of level L does (6 * 4**L quads, 2 triangles
  each; level 6: 49 152 triangles);
- ``slide``, ``slide<L>``: over the box (cut at level L) sliding along +Y at 0.6 m per 24 frames from frame 1 to the
  last, eased in and out (as docs/benchmarks.md's sliding rows, ``tools/compare.py build_box(moving=True,
  slide_frames=...)``): a moving collider, every substep's pose and normals of its own.

As the add-on's bridge does, every frame reads the colliders anew (a fresh ``MeshCollider`` of the same vertices)
and pairs them with the previous frame's (``frame_colliders``). Prints milliseconds per frame of each scene (the landing
frames and the resting frames apart: resting is from the first frame whose cloth centre lies on the box top, within
2 cm, on), then a cProfile top list of one
scene. ``--compute both`` (the default) bakes every scene with the NumPy collider pipeline, then with the native one
(``SolverConfig.compute``: a mesh collider's whole pipeline, still or moving, inside the frame's one C call,
``PositionBasedSolver.native_frame``), back to back. Timings
under load vary 2-7x on a shared machine: compare only figures of one run.

Run: ``python bench/profile_mesh_collider.py [--frames 24] [--level 6] [--profile box6] [--top 30] [--solver NEWTON]
[--compute AUTO|NUMPY|both]``.

``--startup lazy|eager`` measures instead the native start-up of a fresh process's first box drape: the import of
``solvers``, ``library.load()`` (the library, its ABI check and core self-test), and the first frame (its kernels'
bindings with their families' self-tests); ``eager`` also runs every family's self-test right after the load, as a
library that tested everything at load would. Run it in fresh processes, the two alternated
(``for i in 1 2 3; do for m in eager lazy; do python bench/profile_mesh_collider.py --startup $m; done; done``).
"""
import time  # noqa: I001 (first: the start-up measure times the import of solvers)

_IMPORT_BEGIN = time.perf_counter()

import argparse
import cProfile
import io
import os
import pstats
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, make_solver  # noqa: E402
from solvers.builder import grid_cloth  # noqa: E402
from solvers.config import AIR_DRAG_DEFAULT  # noqa: E402
from solvers.collision.colliders.shapes import frame_colliders  # noqa: E402

_IMPORT_SECONDS = time.perf_counter() - _IMPORT_BEGIN

FPS = 24
THICKNESS, FRICTION = 0.01, 0.2  # the add-on's collider defaults
TOP = 0.5
"""[m] The box's top."""


def box_mesh(level: int = 0, half=(1.0, 1.0, 0.25), centre=(0.0, 0.0, 0.25)):
    """A closed box, outward triangles, each face cut into a 2**level x 2**level grid of quads (Simple Subdivision):
    (vertices (m, 3) [m], triangles (6 * 4**level * 2, 3))."""
    d = 2**level
    s = np.linspace(-1.0, 1.0, d + 1)
    u, v = np.meshgrid(s, s, indexing="ij")
    u, v = u.ravel(), v.ravel()
    i, j = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
    a = (i * (d + 1) + j).ravel()
    quads = np.stack([a, a + (d + 1), a + (d + 2), a + 1], axis=1)  # counter-clockwise in (u, v)
    points, tris = [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            p = np.zeros((len(u), 3))
            p[:, axis] = sign
            p[:, (axis + 1) % 3], p[:, (axis + 2) % 3] = u, v  # (u, v, normal) right-handed: normal +axis
            q = quads if sign > 0 else quads[:, ::-1]
            tris.append(np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]]) + sum(len(x) for x in points))
            points.append(p)
    points = np.concatenate(points)
    unique, inverse = np.unique(np.round(points * d).astype(np.int64), axis=0, return_inverse=True)
    vertices = unique / d * np.asarray(half) + np.asarray(centre)
    return vertices, inverse.ravel()[np.concatenate(tris)]


SLIDE = 0.6
"""[m] How far the ``slide`` scenes' box moves along +Y per 24 frames (on average)."""


def slide_offset(frame: int, last: int) -> np.ndarray:
    """The ``slide`` box's offset [m] (3,) at a frame: SLIDE * last / 24 along +Y by frame ``last``, eased in
    and out (smoothstep) from frame 1."""
    s = min(max((frame - 1) / max(last - 1, 1), 0.0), 1.0)
    return np.array([0.0, SLIDE * last / 24.0 * s * s * (3.0 - 2.0 * s), 0.0])


def scene_colliders(name: str, level: int, last: int = 24):
    """A function frame (1, 2, ...) -> the colliders read at that frame (fresh objects, as the bridge reads them);
    ``last``: the frame the sliding box stops at."""
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=THICKNESS, friction=FRICTION, name="Ground")
    if name == "ground":
        return lambda frame: [ground]
    vertices, triangles = box_mesh(level if name not in ("box", "slide") else 0)
    if name.startswith("slide"):
        return lambda frame: [MeshCollider(vertices + slide_offset(frame, last), triangles.copy(), THICKNESS, FRICTION, "Box"),
                              ground]
    return lambda frame: [MeshCollider(vertices.copy(), triangles.copy(), THICKNESS, FRICTION, "Box"), ground]


def scene_level(name: str) -> int:
    """The subdivision level L of a scene named box<L> or slide<L> (0 otherwise)."""
    for prefix in ("box", "slide"):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return int(name[len(prefix):])
    return 0


def run(name: str, level: int, frames: int, solver: str = "XPBD", compute: str = "AUTO", air: float = AIR_DRAG_DEFAULT):
    """Bake the scene with ``solver`` at its defaults, air drag ``air`` and ``compute``; returns (seconds per frame for
    each frame, final state, box triangles, the first frame whose cloth centre lies on the box top (frames + 1: none))."""
    v, e, t = grid_cloth(31, 3.0, height=1.5)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver=solver, compute=compute, air_drag=air))
    state = State.at_rest(model)
    read = scene_colliders(name, level, frames)
    previous = None
    times, landed = [], frames + 1
    for frame in range(1, frames + 1):
        begin = time.perf_counter()
        current = read(frame)
        colliders = frame_colliders(previous, current)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, colliders)
        previous = current
        times.append(time.perf_counter() - begin)
        if landed > frames and state.x[len(state.x) // 2, 2] <= TOP + 0.02:
            landed = frame
    count = sum(len(c.triangles) for c in read(1) if isinstance(c, MeshCollider))
    return np.array(times), state, count, landed


def startup(mode: str) -> None:
    """Print the native start-up of this (fresh) process's first box drape frame [ms]: import, ``library.load()``,
    every family's self-test (``eager`` only), the solver's build and first frame; and the families tested."""
    from solvers.native import library as native_library
    from solvers.native import selftest

    begin = time.perf_counter()
    library = native_library.load()
    loaded = time.perf_counter()
    if library is None:
        raise SystemExit(native_library.status()[1])
    if mode == "eager":
        for family in selftest.FAMILIES:
            library.ready(family)
    tested = time.perf_counter()
    v, e, t = grid_cloth(31, 3.0, height=1.5)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state = State.at_rest(body.model)
    advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(None, scene_colliders("box", 0)(1)))
    first = time.perf_counter()
    print(f"{mode:>6}: import {1e3 * _IMPORT_SECONDS:6.1f} ms, load {1e3 * (loaded - begin):6.1f} ms, families at load "
          f"{1e3 * (tested - loaded):6.1f} ms, build + first frame {1e3 * (first - tested):6.1f} ms, load to first "
          f"frame {1e3 * (first - begin):6.1f} ms; tested: {', '.join(library.verdicts) or 'core only'}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--level", type=int, default=6, help="Simple Subdivision level of the large box")
    parser.add_argument("--profile", default="box6", help="scene to profile (ground, box, box<L>, slide, slide<L>; "
                        "none: skip)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--scenes", default="ground,box,box{level}")
    parser.add_argument("--solver", default="XPBD", help="XPBD, PROJECTIVE, IMPLICIT_EULER or NEWTON (defaults)")
    parser.add_argument("--compute", default="both", help="AUTO, NUMPY, or both (NUMPY then AUTO, scene by scene)")
    parser.add_argument("--startup", choices=("lazy", "eager"), help="measure a fresh process's native start-up")
    parser.add_argument("--air", type=float, default=AIR_DRAG_DEFAULT, help="the cloth's air drag (0: vacuum)")
    args = parser.parse_args()
    if args.startup:
        return startup(args.startup)
    scenes = [s.format(level=args.level) for s in args.scenes.split(",")]
    computes = ["NUMPY", "AUTO"] if args.compute.upper() == "BOTH" else [args.compute.upper()]
    print(f"{'scene':>8} {'compute':>8} {'box tris':>8} {'ms/frame':>8} {'landing':>8} {'resting':>8} {'from':>5} "
          f"{'centre z m':>10}")
    for name in scenes:
        level = scene_level(name)
        for compute in computes:
            times, state, count, landed = run(name, level, args.frames, args.solver, compute, args.air)
            centre = state.x[len(state.x) // 2, 2]
            ms = 1e3 * times
            resting = ms[landed - 1:].mean() if landed <= args.frames else float("nan")
            print(f"{name:>8} {compute:>8} {count:>8} {ms.mean():8.2f} {ms[:landed - 1].mean():8.2f} "
                  f"{resting:8.2f} {landed:5d} {centre:10.4f}", flush=True)
    if args.profile != "none":
        name = args.profile
        level = scene_level(name)
        profiler = cProfile.Profile()
        profiler.enable()
        run(name, level, args.frames, args.solver, computes[-1], args.air)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
        print(f"\ncProfile of '{name}' (compute {computes[-1]}), {args.frames} frames, by own time:")
        print(out.getvalue())


if __name__ == "__main__":
    main()
