"""Where NEWTON's time goes (pure engine, no Blender): the parts ``linalg.direct.NewtonSolves`` and
``energies.base.project_psd`` decide, on the two scenes that were too slow.

- ``factor``: one factorization of NEWTON's first matrix, SuperLU vs banded Cholesky after reverse Cuthill-McKee, for
  the default cube tetrahedralized at resolutions 6, 8, 10 and the 64 x 64 lab cloth; with the work estimates
  (flops) ``NewtonSolves`` decides by, and the method it picks.
- ``psd``: the Neo-Hookean Hessian of the resolution-10 cube (~12k tets) at a deformed state, projected by the
  analytic eigensystem vs the 9x9 batched eigh.
- ``cloth-prepare`` / ``cloth``: the 64 x 64 GAMES103 lab cloth (10 m, two corners pinned, sphere r 2.7 at the
  origin, ground at z = -3, colliders 1 cm thick) at NEWTON's defaults; ``cloth-prepare`` runs frames 1..START and
  saves the state, ``cloth`` runs the next frames from it: seconds per frame, Newton iterations per step (median,
  max), halvings, split steps, factorizations and PCG iterations, and a cProfile summary; ``--exact`` factorizes every
  Newton system (``solves.narrow = solves.lag = False``: no PCG on the narrow band or with an earlier factor);
  ``--compare`` runs each frame twice from the same state, with each Newton system solved as a CSR matrix in double
  precision (``NewtonSolves.__call__``) and as NEWTON solves them; ``--compare-exact`` likewise with the exact path
  against NEWTON's default, both going on from their own states, and prints how far their positions differ.
- ``cube``: the hammock of tests/test_bodies.py with its 0.4 m cube tetrahedralized at resolution 10 (2355
  particles) on NEWTON and the cloth on XPBD: seconds per frame, the cube's Newton iterations and a cProfile summary;
  ``--eigh`` projects the Neo-Hookean Hessian by the batched 9x9 eigh as before the analytic eigensystem.

Run: ``python bench/profile_newton.py factor|psd|cloth-prepare|cloth|cube [--frames N]``. Timings under load inflate
2-7x: compare numbers only within one run (the script times both methods back to back in one process).
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
for path in (ROOT, os.path.join(ROOT, "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from solvers import GroundPlane, SolverConfig, State, advance_frame, make_solver  # noqa: E402
from solvers.linalg import direct  # noqa: E402

FPS = 24
CLOTH_N = 64
CLOTH_STATE = os.path.join(os.environ.get("TMPDIR", "/tmp"), "softsim_newton_cloth_state.npz")
CLOTH_START = 24
"""The cloth reaches the sphere and folds over frames ~25-35."""


def lab_cloth(n=CLOTH_N, package=None):
    """The GAMES103 lab cloth as bench/bench_cloth.py builds it (quad edges), on NEWTON at its defaults; with
    ``package`` (``_baseline``) from that package's classes."""
    pkg = sys.modules["solvers"] if package is None else package
    vertices, edges, triangles = pkg.grid_cloth(n, 10.0, height=3.0)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = pkg.build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0, quads=pkg.builder.grid_quads(n))
    colliders = [pkg.Sphere(np.zeros(3), 2.7, 0.01),
                 pkg.GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]), 0.01)]
    return model, colliders


def cube(resolution):
    """The default cube (2 m) tetrahedralized at ``resolution``, 1 kg, its bottom 0.5 m above a ground at z = 0."""
    from scenario_scenes import box_mesh, solid_model

    corners, tris = box_mesh(2.0, 2.0, 2.0)
    model = solid_model(corners - [1.0, 1.0, -0.5], tris, resolution)
    return model, [GroundPlane(np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.01)]


def first_matrix(model):
    """NEWTON's first Newton matrix (reduced, CSR) of ``model`` at rest, as ``NewtonSolver._direction`` builds it."""
    solver = make_solver(model, SolverConfig(solver="NEWTON"))
    x = model.rest_positions.copy()
    solver.inertia.x_tilde = x
    h2 = (1.0 / FPS) ** 2
    blocks = [solver.inertia.hessian(x).blocks] + [h2 * e.hessian(x).blocks for e in solver.potentials]
    blocks.append(np.zeros((model.particle_count, 3, 3)))
    return solver.pattern.matrix(solver.pattern.assemble(np.concatenate(blocks))).tocsr()


def _best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def run_factor(args):
    cases = [(f"cube res {r}", lambda r=r: cube(r)[0]) for r in (4, 6, 8, 10)]
    cases += [(f"cloth {m}x{m}", lambda m=m: lab_cloth(m)[0]) for m in (21, 32, 64)]
    print("| matrix | unknowns | bandwidth | band flops | SuperLU flops | SuperLU ms | banded ms | picked |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, build in cases:
        A = first_matrix(build())
        ordering, bandwidth = direct.BandedCholesky.plan(A)
        band_flops = direct.banded_cholesky_flops(A.shape[0], bandwidth)
        lu_flops = direct.superlu_flops(A)  # flops only, without SUPERLU_FLOPS_PER_ENTRY
        lu_ms = 1e3 * _best(lambda A=A: direct._superlu(A))
        band_ms = 1e3 * _best(lambda A=A, ordering=ordering: direct.BandedCholesky(A, ordering))
        solves = direct.NewtonSolves()
        solves(A, np.ones(A.shape[0]))
        print(f"| {name} | {A.shape[0]} | {bandwidth} | {band_flops:.3g} | {lu_flops:.3g} | {lu_ms:.0f} | {band_ms:.0f} | "
              f"{solves.method} |")


def run_psd(args):
    from solvers.energies import NeoHookean
    from solvers.energies.base import project_psd
    from solvers.material import material_arrays

    model = cube(10)[0]
    config = SolverConfig(solver="NEWTON")
    material = material_arrays(model, config)
    energy = NeoHookean(model.rest_positions, model.tet_indices, material.tet_mu, material.tet_lambda)
    rng = np.random.default_rng(0)
    x = model.rest_positions * [1.0, 1.0, 0.8] + 0.02 * rng.standard_normal(model.rest_positions.shape)
    F = energy.deformation_gradient(x)
    H = energy.stress_hessian(F)
    eigh_s = _best(lambda: project_psd(H), args.repeat)
    analytic_s = _best(lambda: energy.projected_stress_hessian(F, H), args.repeat)
    whole_s = _best(lambda: energy.hessian(x), args.repeat)
    a, b = project_psd(H), energy.projected_stress_hessian(F, H)
    print(f"{len(F)} tets: 9x9 eigh projection {1e3 * eigh_s:.1f} ms, analytic {1e3 * analytic_s:.1f} ms, "
          f"whole hessian() {1e3 * whole_s:.1f} ms; max |difference| / max |H| {np.abs(a - b).max() / np.abs(H).max():.2e}")


class StepRecorder:
    """Wraps ``solver.step`` to keep every step's Newton iterations and halvings (split steps included)."""

    def __init__(self, solver):
        self.rows = []
        self.logs = []
        self.solver = solver
        self._step = solver.step
        solver.step = self

    def __call__(self, *a, **k):
        stats = self._step(*a, **k)
        self.rows.append((stats.newton_iterations, stats.line_search_halvings, stats.newton_residual))
        self.logs.append(self.solver.log)
        return stats


def _install_eigh():
    """The Neo-Hookean projection as it was (a batched 9x9 eigh per tet), for the "before" numbers."""
    from solvers.energies import NeoHookean
    from solvers.energies.base import project_psd

    NeoHookean.projected_stress_hessian = lambda self, F, H=None: project_psd(self.stress_hessian(F) if H is None else H)


def _report(recorder, seconds, first, last, profiler):
    its = np.array([r[0] for r in recorder.rows])
    print(f"frames {first}-{last}: {np.mean(seconds):.2f} s/frame (total {np.sum(seconds):.1f} s), iterations per step "
          f"median {np.median(its):.0f} max {its.max()}, halvings {sum(r[1] for r in recorder.rows)}")
    worst = int(np.argmax(its))
    log = recorder.logs[worst]
    gains = -np.diff(log.energies)
    print(f"longest step ({its[worst]} iterations): residual max|p|/h [m/s] per iterate "
          f"{np.array2string(np.asarray(log.residuals), precision=3, max_line_width=200)}")
    print(f"energy decrease per iterate [kg m^2] {np.array2string(gains, precision=2, max_line_width=200)}")
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        print(out.getvalue())


def _frames(model, colliders, state, first, last, profile, config, exact=False):
    solver = make_solver(model, config)
    solver.solves.narrow = solver.solves.lag = not exact
    recorder = StepRecorder(solver)
    profiler = cProfile.Profile() if profile else None
    seconds = []
    for frame in range(first, last + 1):
        before = len(recorder.rows)
        counts = solver.solves.factorizations, solver.solves.pcg_iterations
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        try:
            stats = advance_frame(solver, state, 1.0 / FPS, config.substeps, colliders)
        finally:
            if profiler:
                profiler.disable()
        seconds.append(time.perf_counter() - start)
        its = [r[0] for r in recorder.rows[before:]]
        print(f"frame {frame}: {seconds[-1]:.2f} s, steps {len(its)} (split {stats.split_steps}), iterations {its}, "
              f"halvings {sum(r[1] for r in recorder.rows[before:])}, residual {stats.newton_residual:.3g} m/s, "
              f"lowest z {state.x[:, 2].min():.3f}, nearest collider {1e3 * stats.min_distance:.2f} mm, "
              f"solve {solver.solves.method}, factorizations {solver.solves.factorizations - counts[0]}, "
              f"PCG iterations {solver.solves.pcg_iterations - counts[1]}", flush=True)
    _report(recorder, seconds, first, last, profiler)
    return state


def _solve_csr_double(solver):
    """Each Newton system as a CSR matrix, permuted and factorized in double precision (``NewtonSolves.__call__``):
    the solve before the band was filled from the block data and factorized in single precision, for comparison."""
    solves = solver.solves
    solves.solve_blocks = lambda pattern, data, contact, b: solves(direct.block_matrix(pattern, data, contact), b)


def _config(args):
    return SolverConfig(solver="NEWTON", newton_tolerance=args.tolerance)


def run_cloth_prepare(args):
    model, colliders = lab_cloth()
    state = _frames(model, colliders, State.at_rest(model), 1, CLOTH_START, False, _config(args))
    np.savez(CLOTH_STATE, x=state.x, v=state.v)
    print(f"saved {CLOTH_STATE}")


def run_cloth(args):
    model, colliders = lab_cloth()
    state = State.at_rest(model)
    saved = np.load(CLOTH_STATE)
    state.x[:], state.v[:] = saved["x"], saved["v"]
    if args.compare:
        _compare(model, colliders, state, CLOTH_START + 1, CLOTH_START + args.frames, _config(args))
        return
    if args.baseline:
        _compare_baseline(_baseline(args.baseline), model, colliders, state, CLOTH_START + 1, CLOTH_START + args.frames,
                          _config(args), args.pcg_tolerance)
        return
    if args.compare_exact:
        _compare_exact(model, colliders, state, CLOTH_START + 1, CLOTH_START + args.frames, _config(args))
        return
    _frames(model, colliders, state, CLOTH_START + 1, CLOTH_START + args.frames, True, _config(args), args.exact)


def _compare_exact(model, colliders, state, first, last, config):
    """The exact path (every Newton system factorized on the full band) and NEWTON's default (PCG on the narrow band
    where planned), each frame in alternating order, each going on from its own state: per frame seconds, Newton
    iterations, factorizations, PCG iterations, and the largest distance between the two runs' positions [m]."""
    runs = {}
    for name in ("exact", "default"):
        solver = make_solver(model, config)
        solver.solves.narrow = solver.solves.lag = name == "default"
        run = State.at_rest(model)
        run.x[:], run.v[:] = state.x, state.v
        runs[name] = (solver, run, {"seconds": 0.0, "iterations": 0})
    for frame in range(first, last + 1):
        names = list(runs) if frame % 2 else list(runs)[::-1]
        line = []
        for name in names:
            solver, run, total = runs[name]
            counts = solver.solves.factorizations, solver.solves.pcg_iterations
            began = time.perf_counter()
            stats = advance_frame(solver, run, 1.0 / FPS, config.substeps, colliders)
            seconds = time.perf_counter() - began
            total["seconds"] += seconds
            total["iterations"] += stats.newton_iterations
            line.append(f"{name} {seconds:.2f} s ({stats.newton_iterations} iterations, split {stats.split_steps}, "
                        f"{solver.solves.factorizations - counts[0]} factorizations, "
                        f"{solver.solves.pcg_iterations - counts[1]} PCG iterations, "
                        f"nearest collider {1e3 * stats.min_distance:.2f} mm)")
        distance = float(np.abs(runs["exact"][1].x - runs["default"][1].x).max())
        print(f"frame {frame}: " + ", ".join(line) + f"; positions differ by {distance:.2e} m", flush=True)
    frames = last - first + 1
    for name, (solver, _, total) in runs.items():
        print(f"{name}: {total['seconds'] / frames:.2f} s/frame, {total['iterations'] / frames:.1f} Newton iterations, "
              f"{solver.solves.factorizations / frames:.1f} factorizations, {solver.solves.pcg_iterations / frames:.0f} "
              f"PCG iterations a frame (the first frame's include planning)")
    print(f"speed-up {runs['exact'][2]['seconds'] / runs['default'][2]['seconds']:.2f}x")


def _baseline(path):
    """The ``solvers`` package of another revision, copied to ``path`` (a directory named as the package will be, e.g.
    /tmp/base/solvers_base from ``git archive <rev> solvers`` plus its native/lib), imported under that name."""
    import importlib

    path = os.path.abspath(path)
    sys.path.insert(0, os.path.dirname(path))
    return importlib.import_module(os.path.basename(path))


def _compare_baseline(package, model, colliders, state, first, last, config, pcg_tolerance=None):
    """This revision against ``package`` (``_baseline``) on the same frames, each run going on from its own state, in
    alternating order within each frame (the machine's load changes within seconds): per frame seconds, Newton
    iterations, halvings, factorizations and PCG iterations of both, and how far their positions differ."""
    runs = {}
    for name, pkg in (("baseline", package), ("this", None)):
        if pkg is None:
            solver, run, own = make_solver(model, config), State.at_rest(model), colliders
            if pcg_tolerance is not None:
                solver.solves.pcg_tolerance = pcg_tolerance
        else:
            base_model, own = lab_cloth(package=pkg)
            solver = pkg.make_solver(base_model, pkg.SolverConfig(solver="NEWTON", newton_tolerance=config.newton_tolerance))
            run = pkg.State.at_rest(base_model)
        run.x[:], run.v[:] = state.x, state.v
        runs[name] = dict(solver=solver, state=run, colliders=own, advance=(pkg or sys.modules["solvers"]).advance_frame,
                          seconds=0.0, iterations=0, halvings=0, strain=0.0, distance=np.inf)
    for frame in range(first, last + 1):
        names = list(runs) if frame % 2 else list(runs)[::-1]
        line = []
        for name in names:
            run = runs[name]
            solver = run["solver"]
            counts = solver.solves.factorizations, solver.solves.pcg_iterations
            began = time.perf_counter()
            stats = run["advance"](solver, run["state"], 1.0 / FPS, config.substeps, run["colliders"])
            seconds = time.perf_counter() - began
            run["seconds"] += seconds
            run["iterations"] += stats.newton_iterations
            run["halvings"] += stats.line_search_halvings
            run["strain"] = max(run["strain"], stats.max_strain)
            run["distance"] = min(run["distance"], min(solver.log.min_distances))
            line.append(f"{name} {seconds:.2f} s ({stats.newton_iterations} iterations, {stats.line_search_halvings} halvings, "
                        f"split {stats.split_steps}, {solver.solves.factorizations - counts[0]} factorizations, "
                        f"{solver.solves.pcg_iterations - counts[1]} PCG iterations)")
        distance = float(np.abs(runs["baseline"]["state"].x - runs["this"]["state"].x).max())
        print(f"frame {frame}: " + ", ".join(line) + f"; positions differ by {distance:.2e} m", flush=True)
    frames = last - first + 1
    for name, run in runs.items():
        solves = run["solver"].solves
        print(f"{name}: {run['seconds'] / frames:.2f} s/frame, {run['iterations'] / frames:.1f} Newton iterations, "
              f"{run['halvings'] / frames:.1f} halvings, {solves.factorizations / frames:.1f} factorizations, "
              f"{solves.pcg_iterations / frames:.0f} PCG iterations a frame, "
              f"{1e3 * run['seconds'] / max(run['iterations'], 1):.1f} ms a Newton iteration (the first frame's include planning); "
              f"max strain {run['strain']:.4f}, nearest collider over every iterate {1e3 * run['distance']:.2f} mm")
        if hasattr(solves, "factor_seconds"):  # a revision that times its narrow band's solves
            per = 1e3 / max(run["iterations"], 1)
            factor, pcg_time = solves.factor_seconds * per, solves.pcg_seconds * per
            print(f"  per Newton iteration: narrow band factorization {factor:.1f} ms, PCG {pcg_time:.1f} ms, "
                  f"the rest {1e3 * run['seconds'] / max(run['iterations'], 1) - factor - pcg_time:.1f} ms")
    print(f"speed-up {runs['baseline']['seconds'] / runs['this']['seconds']:.2f}x")


def _compare(model, colliders, state, first, last, config):
    """Each frame from the same state twice, with the CSR double-precision solve and as NEWTON solves, in alternating
    order (the machine's load changes within seconds); the frames go on from NEWTON's. Prints both per frame."""
    solvers = {"csr double": make_solver(model, config), "newton": make_solver(model, config)}
    _solve_csr_double(solvers["csr double"])
    seconds = {name: [] for name in solvers}
    iterations = {name: [] for name in solvers}
    for frame in range(first, last + 1):
        start = state.x.copy(), state.v.copy()
        names = list(solvers) if frame % 2 else list(solvers)[::-1]
        for name in names:
            run = State.at_rest(model)
            run.x[:], run.v[:] = start
            began = time.perf_counter()
            stats = advance_frame(solvers[name], run, 1.0 / FPS, config.substeps, colliders)
            seconds[name].append(time.perf_counter() - began)
            iterations[name].append(stats.newton_iterations)
            if name == "newton":
                state.x[:], state.v[:] = run.x, run.v
        print(f"frame {frame}: " + ", ".join(f"{name} {seconds[name][-1]:.2f} s ({iterations[name][-1]} iterations)"
                                             for name in solvers), flush=True)
    for name in solvers:
        print(f"{name}: {np.mean(seconds[name]):.2f} s/frame, iterations median {np.median(iterations[name]):.0f}")
    print(f"speed-up {np.sum(seconds['csr double']) / np.sum(seconds['newton']):.2f}x")


def run_cube(args):
    """The hammock of tests/test_bodies.py with the cube tetrahedralized at resolution 10 on NEWTON, the cloth on XPBD
    (as the add-on's hammock bench): frames 1..--frames, the cube lands on the cloth at about frame 10."""
    from test_bodies import hammock_cloth

    from solvers.scene import Scene, advance_scene_frame
    from scenario_scenes import box_mesh, solid_model

    if args.eigh:
        _install_eigh()
    corners, tris = box_mesh(0.4, 0.4, 0.4)
    cube_model = solid_model(corners - [0.2, 0.2, -2.2], tris, 10, mass=2.0)
    print(f"cube: {cube_model.particle_count} particles, {cube_model.tet_count} tets")
    scene = Scene([(hammock_cloth(), SolverConfig(solver="XPBD")), (cube_model, _config(args))])
    ground = [GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.5)]
    solver = scene.bodies[1].solver
    recorder = StepRecorder(solver)
    profiler = cProfile.Profile()
    seconds = []
    for frame in range(1, args.frames + 1):
        before = len(recorder.rows)
        start = time.perf_counter()
        profiler.enable()
        advance_scene_frame(scene, 1.0 / FPS, ground)
        profiler.disable()
        seconds.append(time.perf_counter() - start)
        its = [r[0] for r in recorder.rows[before:]]
        print(f"frame {frame}: {seconds[-1]:.2f} s, cube steps {len(its)}, iterations {its}, halvings "
              f"{sum(r[1] for r in recorder.rows[before:])}, cube lowest z {scene.bodies[1].state.x[:, 2].min():.3f}, "
              f"solve {solver.solves.method}", flush=True)
    _report(recorder, seconds, 1, args.frames, profiler)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("factor", "psd", "cloth-prepare", "cloth", "cube"))
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--eigh", action="store_true", help="cube: project the Neo-Hookean Hessian by the 9x9 eigh (before)")
    parser.add_argument("--compare", action="store_true",
                        help="cloth: each frame also with the CSR double-precision solve, no cProfile")
    parser.add_argument("--exact", action="store_true",
                        help="cloth: factorize every Newton system on the full band (no PCG on the narrow band)")
    parser.add_argument("--compare-exact", action="store_true",
                        help="cloth: each frame on the exact path and on NEWTON's default, no cProfile")
    parser.add_argument("--baseline", metavar="DIR",
                        help="cloth: also run another revision's solvers package copied to DIR (e.g. /tmp/b/solvers_base "
                             "from git archive REV solvers, with its native/lib), frame by frame in one process, no "
                             "cProfile")
    parser.add_argument("--pcg-tolerance", type=float, default=None,
                        help="cloth --baseline: this revision's narrow-band PCG relative residual (NewtonSolves.pcg_tolerance)")
    parser.add_argument("--tolerance", type=float, default=SolverConfig.newton_tolerance, help="newton_tolerance [m/s]")
    args = parser.parse_args(argv)
    {"factor": run_factor, "psd": run_psd, "cloth-prepare": run_cloth_prepare, "cloth": run_cloth, "cube": run_cube}[args.what](args)


if __name__ == "__main__":
    main()
