"""Native tet-strain sweeps against their NumPy twins on XPBD solids dropped on the ground (the add-on's XPBD defaults:
30 substeps x 1 iteration, 2 iterations in steps with contacts, the symmetric last sweep, the Jacobi tail of tiny
colours, internal damping 0.01 s; E 1e5 Pa, nu 0.4, 1 kg, ground friction 0.2).

Solids: Blender's default ico sphere (2 subdivisions, r 1 m) and a 1 m cube, each tetrahedralized at resolution 10 (the
add-on's default), lowest point 10 cm above the ground. Rows, each for Compute NUMPY and AUTO (native) with the
speed-up, from the state after ``WARM_FRAMES`` frames (on the ground): one Gauss-Seidel sweep of the big colours, one
symmetric sweep (forward and backward from the same state, averaged), the Jacobi tail of tiny colours, one
whole substep (``solver.step``) and one frame (``advance_frame``). Best of several repeats, both paths in one process.
Also the volume error |V/V0 - 1| (sum of the tets' signed volumes) at the end and the worst over all frames, and
whether both paths end with the same positions bit for bit.

Run: ``python bench/bench_native_solid.py [--frames 4]`` (needs ``tools/build_native.py --host`` first).
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (ROOT, os.path.dirname(os.path.abspath(__file__))):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_kernels import best_seconds  # noqa: E402
from solvers import GroundPlane, SolverConfig, State, advance_frame, build_model, make_solver, native  # noqa: E402
from solvers.builder import ico_sphere as icosphere  # noqa: E402
from solvers.geometry import tetrahedralize  # noqa: E402

FPS = 24
WARM_FRAMES = 6
"""Frames before the timing starts: the solid falls 10 cm and lands in the fourth."""
RESOLUTION = 10


def cube():
    v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) - 0.5
    f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6], [0, 2, 6],
                  [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return v, f


def solid(surface):
    v, f = surface
    tet = tetrahedralize(v, f, resolution=RESOLUTION)
    x = tet.vertices.copy()
    x[:, 2] += 0.1 - x[:, 2].min()
    return build_model(x, None, None, tet.tets, None, 1.0)


def volume(model, x) -> float:
    a, b, c, d = (x[model.tet_indices[:, k]] for k in range(4))
    return float(np.einsum("ij,ij->i", b - a, np.cross(c - a, d - a)).sum() / 6.0)


def measure(model, compute: str, frames: int) -> dict:
    cfg = SolverConfig(solver="XPBD", compute=compute)
    solver = make_solver(model, cfg)
    ground = [GroundPlane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), friction=0.2)]
    dt = 1.0 / FPS / cfg.substeps
    v0 = volume(model, model.rest_positions)
    state = State.at_rest(model)
    errors = []
    for _ in range(WARM_FRAMES):
        advance_frame(solver, state, 1.0 / FPS, cfg.substeps, ground)
        errors.append(abs(volume(model, state.x) / v0 - 1.0))
    x0 = state.x.copy()
    x = x0.copy()

    def reset():
        np.copyto(x, x0)

    sweep = solver.sweeps[0]
    out = {"_fast": type(sweep.fast).__name__}
    lams = sweep.new_multipliers()
    out["sweep (big colours)"] = best_seconds(lambda: sweep.fast.sweep(x, dt, lams, True), reset, 7, 5)
    out["symmetric sweep"] = best_seconds(lambda: sweep.fast.symmetric_sweep(x, dt, lams), reset, 7, 5)
    if sweep.tail is not None:
        out["Jacobi tail"] = best_seconds(lambda: solver._jacobi(sweep.tail, x, dt, lams[-1], False),
                                                          reset, 7, 5)
    saved_x, saved_v = state.x.copy(), state.v.copy()
    best_step = float("inf")
    for _ in range(cfg.substeps):  # a frame's steps, timed one by one (a real substep each time)
        start = time.perf_counter()
        solver.step(state, dt, ground, measure=False)
        best_step = min(best_step, time.perf_counter() - start)
    out["substep (best)"] = best_step
    np.copyto(state.x, saved_x)
    np.copyto(state.v, saved_v)
    solver = make_solver(model, cfg)  # the frames from the warm state with a fresh solver (step count, caches)
    best_frame = float("inf")
    for _ in range(frames):
        start = time.perf_counter()
        advance_frame(solver, state, 1.0 / FPS, cfg.substeps, ground)
        best_frame = min(best_frame, time.perf_counter() - start)
        errors.append(abs(volume(model, state.x) / v0 - 1.0))
    out["frame (best, 30 substeps)"] = best_frame
    out["_x"], out["_volume"] = state.x.copy(), (errors[-1], max(errors))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=4)
    args = parser.parse_args(argv)
    where, reason = native.status()
    if where != "native":
        sys.exit(f"the native path is not available: {reason}")
    print(f"XPBD solids, add-on defaults, tet resolution {RESOLUTION}, dropped 10 cm; {reason}\n")
    for name, surface in (("ico sphere (2 levels, r 1 m)", icosphere()), ("cube (1 m)", cube())):
        model = solid(surface)
        numpy_run = measure(model, "NUMPY", args.frames)
        native_run = measure(model, "AUTO", args.frames)
        same = np.array_equal(numpy_run.pop("_x"), native_run.pop("_x"))
        (a_end, a_worst), (b_end, b_worst) = numpy_run.pop("_volume"), native_run.pop("_volume")
        kinds = numpy_run.pop("_fast"), native_run.pop("_fast")
        print(f"{name}: {model.particle_count} particles, {model.tet_count} tets, sweeps {kinds[0]} / {kinds[1]}; "
              f"final positions {'bit for bit equal' if same else 'DIFFERENT'}; volume error |V/V0 - 1| "
              f"NumPy {a_end:.2e} (worst {a_worst:.2e}), native {b_end:.2e} (worst {b_worst:.2e})\n")
        print("| part | NumPy | native | speed-up |\n|---|---:|---:|---:|")
        for key in numpy_run:
            a, b = numpy_run[key], native_run[key]
            unit, scale = ("ms", 1e3) if a > 1e-3 else ("us", 1e6)
            print(f"| {key} | {scale * a:.2f} {unit} | {scale * b:.2f} {unit} | {a / b:.1f}x |")
        print()


if __name__ == "__main__":
    main()
