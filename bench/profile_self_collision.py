"""Profile of cloth self-collision on the 64 x 64 lab cloth (engine only, no Blender; not run by make test).

The GAMES103 cloth lab scene as the add-on bakes it: a 10 m cloth of 64 x 64 vertices (quads, both splits of every
quad kept clear), pinned at two corners 3 m above a sphere of radius 2.7 m, ground 3 m below its centre, XPBD at the
add-on's defaults (30 substeps x 1 sweep, stiffness 1e4 N/m, damping 0.1, tethers at 1%) with self-collision on
(thickness 1 cm). The cloth drapes over the sphere and folds onto itself from about frame 20 on.

Runs frames 1..``--frames`` (the first ``--warm`` without self-collision timing detail: they are run and timed but not
profiled), then prints seconds per frame (self-collision's share apart), its split over the profiled frames by stage
(broad phase rebuilds, the lists' check, response passes, friction, fail-safe crossing tests, impact zones), the
broad phase's counts (rebuilds, skin growths, pairs listed, candidates watched, impact-zone calls), the self
crossings at the last frame (count_self_intersections over both splits, must be 0), and a cProfile top list of the
profiled frames. ``--save PATH`` / ``--load PATH`` keep the
state after the warm frames (an .npz of x and v) so a run can start at a crumpled state.

Timings under load vary 2-7x on a shared machine: compare only figures of one run.

``--skins 0.4,0.5`` runs the same frames again with the Verlet skin at those fractions of the mean rest edge, for
a comparison within one run.

``--compute both`` runs the frames with the NumPy broad phase first, then with the native one (``SolverConfig.compute``);
each run prints the max edge strain at its last frame with its crossings.

Run: ``python bench/profile_self_collision.py [--compute AUTO|NUMPY|both] [--frames 40] [--warm 30] [--top 25] [--save s.npz | --load s.npz]
[--skins 0.4,0.5]``.
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
from solvers.collision.narrow_phase.crossings import count_self_intersections, triangle_edges  # noqa: E402
from solvers.collision.response.self_contact import SelfCollision  # noqa: E402

FPS = 24
N, WIDTH, HEIGHT, SPHERE_RADIUS, GROUND_Z = 64, 10.0, 3.0, 2.7, -3.0


def lab_cloth(n: int = N, compute: str = "AUTO"):
    """The lab scene: (model, config, colliders) at the add-on's XPBD defaults with self-collision on."""
    vertices, edges, triangles = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0, quads=grid_quads(n))
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01,
                          use_self_collision=True, thickness=0.01, compute=compute)
    colliders = [Sphere(np.zeros(3), SPHERE_RADIUS), GroundPlane(np.array([0.0, 0.0, GROUND_Z]), np.array([0.0, 0.0, 1.0]))]
    return model, config, colliders


def run(args, skin_fraction=None, profile=None, compute="AUTO"):
    """Frames from the loaded state (or rest) to args.frames with self-collision's skin at ``skin_fraction`` of the mean
    rest edge (None: its default). Returns (rows (frame, s, self-collision s, rebuilds, candidates), solver, state)."""
    model, config, colliders = lab_cloth(args.n, compute)
    solver = make_solver(model, config)
    if skin_fraction is not None:
        edges = triangle_edges(solver.self_collision.triangles)
        x0 = model.rest_positions
        skin = skin_fraction * float(np.mean(np.linalg.norm(x0[edges[:, 0]] - x0[edges[:, 1]], axis=1)))
        pad2 = solver.self_collision.pad2
        solver.self_collision = SelfCollision(model, config.thickness, skin=skin)
        solver.self_collision.pad2 = pad2
    sc = solver.self_collision
    state = State.at_rest(model)
    resolve = sc.resolve_beside_colliders
    spent = [0.0]

    def timed_resolve(*a, **k):
        start = time.perf_counter()
        try:
            return resolve(*a, **k)
        finally:
            spent[0] += time.perf_counter() - start

    sc.resolve_beside_colliders = timed_resolve
    parts = _time_parts(sc)
    first = 0
    if args.load:
        data = np.load(args.load)
        state.x[:], state.v[:] = data["x"], data["v"]
        first = args.warm
    rows, worst = [], 0
    for frame in range(first, args.frames):
        profiled = profile is not None and frame >= args.warm
        spent[0] = 0.0
        if frame == args.warm:
            parts.clear()  # the split covers the profiled frames only
        rebuilds = sc.rebuilds
        start = time.perf_counter()
        if profiled:
            profile.enable()
        advance_frame(solver, state, 1.0 / FPS, config.substeps, colliders)
        if profiled:
            profile.disable()
        rows.append((frame + 1, time.perf_counter() - start, spent[0], sc.rebuilds - rebuilds, sc.last_candidates))
        if args.crossings_every and (frame + 1) % args.crossings_every == 0:
            worst = max(worst, count_self_intersections(state.x, model.collision_triangles))
        if args.save and frame + 1 == args.warm:
            np.savez(args.save, x=state.x, v=state.v)
    crossings = count_self_intersections(state.x, model.collision_triangles)
    strain = _max_strain(model, state.x)
    print(f"compute {compute} ({'native' if sc.native_pairs is not None else 'numpy'} self-collision lists), "
          f"skin fraction {'default' if skin_fraction is None else skin_fraction} (skin {sc.skin * 1e3:.1f} mm)")
    print("frame  seconds  self-collision  rebuilds  candidates")
    for frame, seconds, self_s, rebuilds, cand in rows:
        print(f"{frame:5d}  {seconds:7.3f}  {self_s:14.3f}  {rebuilds:8d}  {cand:10d}")
    for label, part in (("warm", [r for r in rows if r[0] <= args.warm]), ("profiled", [r for r in rows if r[0] > args.warm])):
        if part:
            print(f"{label} frames {part[0][0]}-{part[-1][0]}: {np.mean([r[1] for r in part]):.3f} s/frame, "
                  f"self-collision {np.mean([r[2] for r in part]):.3f} s/frame, {sum(r[3] for r in part)} rebuilds")
    print(_split(parts, max(1, sum(1 for r in rows if r[0] > args.warm))))
    listed = 0 if sc._list is None else len(sc._list["dist"])
    print(f"total rebuilds {sc.rebuilds}, skin growths {getattr(sc, 'grown', 0)}, pairs listed now {listed}, zone calls {sc.zones}, "
          f"crossings at frame {args.frames}: {crossings}" + (f", worst sampled {worst}" if args.crossings_every else "")
          + f", max edge strain {strain:.4f}")
    print()
    return rows


def _max_strain(model, x):
    """Largest relative stretch of the model's edges at x."""
    e = model.edge_indices
    rest = np.linalg.norm(model.rest_positions[e[:, 0]] - model.rest_positions[e[:, 1]], axis=1)
    return float(np.max(np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1) / rest - 1.0))


PARTS = ("_build", "_candidates", "_respond", "_friction", "_new_crossings", "_fail_safe")


def _time_parts(sc):
    """Wrap the self-collision's stages with timers: {name: seconds} (inclusive; ``_split`` takes the nested ones out)."""
    parts = {}
    for name in PARTS:
        method = getattr(sc, name)

        def timed(*a, _method=method, _name=name, **k):
            start = time.perf_counter()
            try:
                return _method(*a, **k)
            finally:
                parts[_name] = parts.get(_name, 0.0) + time.perf_counter() - start

        setattr(sc, name, timed)
    return parts


def _split(parts, frames):
    """Seconds per frame of each stage, exclusive of the stages it calls: broad phase (list rebuilds), candidate
    selection (the lists' check and near pairs), response (stencils and passes), friction, fail-safe crossing tests,
    impact zones."""
    got = {name: parts.get(name, 0.0) for name in PARTS}
    # Builds happen inside _candidates or _new_crossings; the crossing tests inside _fail_safe.
    inside_candidates = min(got["_build"], got["_candidates"])
    rows = [("broad phase (rebuilds)", got["_build"]),
            ("candidates (list check)", got["_candidates"] - inside_candidates),
            ("response passes", got["_respond"] - got["_candidates"] - got["_friction"]),
            ("friction", got["_friction"]),
            ("fail-safe crossing tests", got["_new_crossings"] - (got["_build"] - inside_candidates)),
            ("impact zones", got["_fail_safe"] - got["_new_crossings"])]
    return "split, s/frame: " + ", ".join(f"{label} {seconds / frames:.3f}" for label, seconds in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N)
    parser.add_argument("--frames", type=int, default=40, help="last frame")
    parser.add_argument("--warm", type=int, default=30, help="frames run before the profiled ones")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--save", help="save the state after the warm frames (.npz)")
    parser.add_argument("--load", help="start from a saved state (.npz) at frame --warm")
    parser.add_argument("--crossings-every", type=int, default=0, help="also count crossings every k-th frame")
    parser.add_argument("--compute", default="AUTO", help="AUTO, NUMPY, or both (NUMPY then AUTO in this process)")
    parser.add_argument("--skins", default="", help="comma-separated skin fractions to compare in this run (after the default)")
    args = parser.parse_args(argv)

    profile = cProfile.Profile()
    if args.compute.upper() == "BOTH":
        run(args, None, None, "NUMPY")
        args.compute = "AUTO"
    run(args, None, profile, args.compute.upper())
    for fraction in filter(None, args.skins.split(",")):
        run(args, float(fraction))
    if args.top > 0 and profile.getstats():
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats(key).print_stats(args.top)
            print(out.getvalue())


if __name__ == "__main__":
    main()
