"""Native kernels against their NumPy twins on the 64 x 64 lab cloth (``bench_kernels``'s scene, the add-on's default
XPBD: 30 substeps x 1 iteration, quad edges, bending 1e-3 N m, pin tethers at 1%), from the state after
``WARM_FRAMES`` frames (the cloth draped on its sphere).

Rows, each for Compute NUMPY and AUTO (native) with the speed-up: one Gauss-Seidel distance sweep, one bending sweep,
one pin-tether call of the last iteration (up to 8 passes), the contact kernels of one substep on the draped state
(finding the contacts, the end-of-step vertex and face push), one whole substep (``solver.step`` with the colliders) and
one frame (``advance_frame``, 30 substeps). Best of several repeats. Also
checks that both paths end the timed frames with the same positions.
Then whole frames (the native path takes a frame in one C call, ``PositionBasedSolver.native_frame``): the lab cloth
with Air Drag off and 1, and a 21 x 11 cape (``cape_model``) whose pinned row moves 1 m over 24 frames, with and
without air: best frame, per substep, max strain and whether the final positions are equal bit for bit.

Run: ``python bench/bench_native.py [--n 64]`` (needs ``tools/build_native.py --host`` first).
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

from bench_kernels import FPS, best_seconds, lab_scene, snapshot  # noqa: E402
from solvers import SolverConfig, State, advance_frame, build_model, make_solver, native  # noqa: E402
from solvers.collision.response.contact_set import find_contacts  # noqa: E402
from solvers.collision.response.collider_contacts import resolve_collider_contacts  # noqa: E402


def config(compute: str) -> SolverConfig:
    return SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01,
                        compute=compute)


def measure(model, colliders, x0, compute: str, frames: int = 4) -> dict:
    cfg = config(compute)
    solver = make_solver(model, cfg)
    dt = 1.0 / FPS / cfg.substeps
    x = x0.copy()

    def reset():
        np.copyto(x, x0)

    out = {}
    for label, sweep in zip(("distance sweep", "bending sweep"), solver.sweeps):
        lams = sweep.new_multipliers()
        out[label] = best_seconds(lambda s=sweep, lams=lams: s.fast.sweep(x, dt, lams, True), reset)
    out["pin tethers (8 passes at most)"] = best_seconds(lambda: solver.tethers.apply(x, passes=8), reset)
    # The contacts of a substep from the draped state: its prediction x from x_prev = x0 (one step of gravity).
    x_prev = np.ascontiguousarray(x0 - dt * dt * np.asarray(cfg.gravity))
    pad2, triangles, inv_mass = solver.pad2, model.triangle_indices, model.inv_mass
    if solver.native_contacts is not None:
        contacts = solver.native_contacts
        contacts.pose(colliders)
        out["contacts: find"] = best_seconds(lambda: contacts.find(x, x_prev), reset)
        out["contacts: end of step (vertices, faces)"] = best_seconds(lambda: contacts.finish(x, x_prev), reset)
    else:
        out["contacts: find"] = best_seconds(
            lambda: find_contacts(x, x_prev, inv_mass, colliders, pad2, triangles), reset)
        out["contacts: end of step (vertices, faces)"] = best_seconds(
            lambda: resolve_collider_contacts(x, x_prev, inv_mass, triangles, colliders, pad2), reset)
    state = State.at_rest(model)
    np.copyto(state.x, x0)
    best_step = float("inf")
    for _ in range(3):  # a frame's worth of steps, timed one by one (the state moves on: a real substep each time)
        for _ in range(cfg.substeps):
            start = time.perf_counter()
            solver.step(state, dt, colliders, measure=False)
            best_step = min(best_step, time.perf_counter() - start)
    out["substep (best)"] = best_step
    state = State.at_rest(model)
    np.copyto(state.x, x0)
    best_frame = float("inf")
    for _ in range(frames):
        start = time.perf_counter()
        advance_frame(solver, state, 1.0 / FPS, cfg.substeps, colliders)
        best_frame = min(best_frame, time.perf_counter() - start)
    out["frame (best, 30 substeps)"] = best_frame
    out["_x"] = state.x.copy()
    return out


def cape_model(width: int = 21, height: int = 11, spacing: float = 0.05):
    """A small rigged cape without Blender: width x height vertices 5 cm apart hanging in the xz-plane, its top row
    pinned (the collar a bone carries)."""
    i, j = np.meshgrid(np.arange(width), np.arange(height))
    vertices = np.stack([i.ravel() * spacing, np.zeros(width * height), -j.ravel() * spacing], axis=1).astype(float)
    a = (np.arange(height - 1)[:, None] * width + np.arange(width - 1)[None, :]).ravel()
    triangles = np.concatenate([np.stack([a, a + 1, a + width + 1], 1), np.stack([a, a + width + 1, a + width], 1)])
    pairs = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges = np.unique(np.sort(pairs, axis=1), axis=0)
    pinned = np.zeros(width * height, bool)
    pinned[:width] = True
    return build_model(vertices, edges, triangles, pinned=pinned, total_mass=0.3)


def frames(model, colliders, x0, compute: str, air: float, rig: bool, count: int) -> tuple:
    """Best frame time [s] over ``count`` frames (rig: the pins moving 1 m over 24 frames), the final positions and
    the last frame's max strain."""
    cfg = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01,
                       compute=compute, air_drag=air)
    solver = make_solver(model, cfg)
    state = State.at_rest(model)
    if x0 is not None:
        np.copyto(state.x, x0)
    best, stats = float("inf"), None
    for f in range(count):
        targets = None
        if rig:
            targets = model.rest_positions.copy()
            targets[:, 0] += (f + 1) / 24.0
        start = time.perf_counter()
        stats = advance_frame(solver, state, 1.0 / FPS, cfg.substeps, colliders, targets)
        best = min(best, time.perf_counter() - start)
    return best, state.x.copy(), stats.max_strain


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    args = parser.parse_args(argv)
    where, reason = native.status()
    if where != "native":
        sys.exit(f"the native path is not available: {reason}")
    model, colliders = lab_scene(args.n, False)
    x0 = snapshot(model, colliders)
    numpy_run = measure(model, colliders, x0, "NUMPY")
    native_run = measure(model, colliders, x0, "AUTO")
    same = np.array_equal(numpy_run.pop("_x"), native_run.pop("_x"))
    print(f"Lab cloth {args.n}x{args.n}, quad edges, XPBD 30x1 + bending + tethers; {reason}; "
          f"final positions {'bit for bit equal' if same else 'DIFFERENT'}\n")
    print("| part | NumPy | native | speed-up |\n|---|---:|---:|---:|")
    for key in numpy_run:
        a, b = numpy_run[key], native_run[key]
        unit, scale = ("ms", 1e3) if a > 1e-3 else ("us", 1e6)
        print(f"| {key} | {scale * a:.1f} {unit} | {scale * b:.1f} {unit} | {a / b:.1f}x |")
    print("\nWhole frames (native: one C call a frame, ``PositionBasedSolver.native_frame``), best frame; per substep = "
          "frame / 30\n")
    print("| scene | NumPy frame | native frame | native substep | speed-up | max strain (NumPy, native) | equal |")
    print("|---|---:|---:|---:|---:|---|---|")
    cape = cape_model()
    for label, scene, air, rig, count in (
            (f"lab cloth {args.n}x{args.n}, air off", (model, colliders, x0), 0.0, False, 6),
            (f"lab cloth {args.n}x{args.n}, Air Drag 1", (model, colliders, x0), 1.0, False, 6),
            ("cape 21x11, pinned row moving 1 m / 24 frames", (cape, [], None), 0.0, True, 24),
            ("cape 21x11, pinned row moving, Air Drag 1", (cape, [], None), 1.0, True, 24)):
        a = frames(*scene, "NUMPY", air, rig, count)
        b = frames(*scene, "AUTO", air, rig, count)
        print(f"| {label} | {1e3 * a[0]:.2f} ms | {1e3 * b[0]:.2f} ms | {1e6 * b[0] / 30:.0f} us | {a[0] / b[0]:.1f}x "
              f"| {a[2]:.4g}, {b[2]:.4g} | {'bit for bit' if np.array_equal(a[1], b[1]) else 'DIFFERENT'} |")


if __name__ == "__main__":
    main()
