"""Where PROJECTIVE's and IMPLICIT_EULER's time goes (pure engine, no Blender) on the 64 x 64 GAMES103 lab cloth.

The scene is bench/bench_cloth.py's (10 m, two corners pinned, sphere r 2.7 at the origin, ground at z = -3,
colliders 0 thick and frictionless, quad edges, stiffness 1e4 N/m, damping 0.1/s, 1 kg). ``--solver PROJECTIVE``
runs PD at ``--substeps`` x ``--iterations`` (8 x 5 by default; bench_cloth's 6x5 and 16x1 rows by those flags),
``IMPLICIT_EULER`` bench_cloth's row (CG, 2 substeps). ``--compute AUTO|NUMPY|both``: the native kernels, the NumPy
reference, or both back to back in one process (same frames, same state). Prints seconds per frame, PD's
iterations and contact factorizations, and a cProfile summary of the frames ``--profile-from`` onwards (the cloth
reaches the sphere at about frame 20).

Run: ``python bench/profile_implicit.py --solver PROJECTIVE --compute both --frames 40 [--repeat 3]``. Timings under load inflate
2-7x: compare numbers only within one run.
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver  # noqa: E402
from solvers.builder import grid_quads  # noqa: E402

FPS = 24


def lab_cloth(n):
    """The lab cloth and its colliders as bench/bench_cloth.py's pure-engine rows build them (quad edges)."""
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0, quads=grid_quads(n))
    colliders = [Sphere(np.zeros(3), 2.7, 0.0), GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]), 0.0)]
    return model, colliders


def config(args, compute):
    common = dict(stiffness=1.0e4, damping=0.1, compute=compute)
    if args.solver == "PROJECTIVE":
        return SolverConfig(solver="PROJECTIVE", substeps=args.substeps or 8, iterations=args.iterations or 5, **common)
    return SolverConfig(solver="IMPLICIT_EULER", linear_solver="CG", substeps=args.substeps or 2,
                        iterations=args.iterations or 1, **common)


def run(args, compute):
    model, colliders = lab_cloth(args.n)
    cfg = config(args, compute)
    solver = make_solver(model, cfg)
    if args.solver == "PROJECTIVE" and args.projection_only:
        solver.contacts_in_solve = False  # the sphere's contacts left to the end-of-step projection
    state = State.at_rest(model)
    profiler = cProfile.Profile() if args.profile else None
    seconds, positions = [], []
    for frame in range(1, args.frames + 1):
        profiling = profiler is not None and frame >= args.profile_from
        start = time.perf_counter()
        if profiling:
            profiler.enable()
        advance_frame(solver, state, 1.0 / FPS, cfg.substeps, colliders)
        if profiling:
            profiler.disable()
        seconds.append(time.perf_counter() - start)
        positions.append(state.x.copy())
    s = np.array(seconds)
    late = s[args.profile_from - 1:]
    extra = ""
    if args.solver == "PROJECTIVE":
        extra = f", contact factorizations {solver.contact_factorizations}"
    print(f"{args.solver} {cfg.substeps}x{cfg.iterations} compute {compute}: {1e3 * s.mean():.1f} ms/frame over "
          f"{len(s)} frames (frames 1-{args.profile_from - 1}: {1e3 * s[:args.profile_from - 1].mean():.1f}, "
          f"{args.profile_from}-{len(s)}: {1e3 * late.mean():.1f}){extra}", flush=True)
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.rows)
        print(out.getvalue())
    return positions, s


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--solver", choices=("PROJECTIVE", "IMPLICIT_EULER"), default="PROJECTIVE")
    parser.add_argument("--compute", choices=("AUTO", "NUMPY", "both"), default="both")
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--substeps", type=int, default=0, help="0: the row's default (PD 8, implicit Euler 2)")
    parser.add_argument("--iterations", type=int, default=0, help="0: the row's default (PD 5, implicit Euler 1)")
    parser.add_argument("--projection-only", action="store_true",
                        help="PROJECTIVE: contact planes out of the solve (ProjectiveSolver.contacts_in_solve = False): "
                             "no factorization per contact set")
    parser.add_argument("--profile", action="store_true", help="cProfile summary of the frames from --profile-from")
    parser.add_argument("--profile-from", type=int, default=21)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=1, help="run each path this many times, interleaved")
    args = parser.parse_args(argv)
    computes = ("AUTO", "NUMPY") if args.compute == "both" else (args.compute,)
    results = {}
    for _ in range(args.repeat):  # interleaved, so both paths see the same spells of load; the fastest run is kept
        for c in computes:
            positions, seconds = run(args, c)
            if c not in results or seconds.sum() < results[c][1].sum():
                results[c] = (positions, seconds)
    if len(results) == 2:
        a, b = results["AUTO"][0], results["NUMPY"][0]
        gap = max(float(np.abs(x - y).max()) for x, y in zip(a, b))
        fast, slow = results["AUTO"][1], results["NUMPY"][1]
        print(f"fastest of {args.repeat}: native {1e3 * fast.mean():.1f} ms/frame, NumPy {1e3 * slow.mean():.1f} "
              f"ms/frame: native {slow.sum() / fast.sum():.2f}x faster; largest position difference over the frames "
              f"{gap:.3g} m")


if __name__ == "__main__":
    main()
