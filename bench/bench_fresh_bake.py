"""Bake time in a fresh Blender process: Soft Sim's Bake operator next to built-in Cloth, one thing varied at a time.

bench/bench_cloth.py times both simulators in one long-lived process, after warming both up on a 4 x 4 scene, with
its own settings (cloth mass 1 kg, frictionless colliders of thickness 0, a 64 x 32 UV sphere as built-in Cloth's
collision mesh, 100 frames). A user who times ``bpy.ops.softsim.bake()`` in a fresh process on a scene built by
script gets another ratio. This script finds out why: every measurement is a FRESH Python process (``import bpy``,
the add-on registered as Blender registers an enabled add-on) that builds the 64 x 64 lab scene by script and times
built-in Cloth's bake (``bpy.ops.ptcache.bake``) and Soft Sim's (``bpy.ops.softsim.bake``), each on a fresh scene,
in the same process. The variants (``VARIANTS``) start from the bench's setting and change one thing at a time
towards what a user's script does.

Per bake: wall seconds (``time.perf_counter``) and CPU seconds of the whole process (``time.process_time``, every
thread), so CPU / wall shows how many cores a bake kept busy. Per process also the seconds to ``import bpy`` and to
register the add-on (which imports numpy's and scipy's modules the solvers use); a user pays those once, before any
bake.

Run: ``python bench/bench_fresh_bake.py [--repeat 3] [--n 64] [--only A B ...]`` (Markdown table on stdout).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_PROCESS_START = time.perf_counter()

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
TITLE = "Bake time in a fresh Blender process"

# The lab scene of bench/bench_cloth.py (kept equal to its constants; this script does not import it so that a child
# process imports nothing of the solvers before the add-on's registration is timed).
WIDTH, HEIGHT, SPHERE_RADIUS, GROUND_Z, FPS = 10.0, 3.0, 2.7, -3.0, 24

# One variant = settings of a child process. Keys: warmup (bake both on a 4 x 4 scene first, as bench_cloth does),
# order ("builtin" first or "softsim" first), bench_colliders (Soft Sim: cloth mass 1 kg, colliders' thickness and
# friction 0, as bench_cloth; False: the add-on's defaults, mass 1 kg is also the add-on's default), vacuum (Soft
# Sim's cloth without air, air drag 0, as bench_cloth; False: the add-on's default air drag), segments (the UV
# sphere's segments and rings: built-in Cloth collides with its faces, Soft Sim uses an analytic sphere), frames, env
# (extra environment variables), prefix (a command the child runs under, e.g. taskset).
BENCH_SETTING = dict(warmup=True, order="builtin", bench_colliders=True, vacuum=True, segments=(64, 32), frames=100,
                     env={})
USER_SETTING = dict(warmup=False, order="builtin", bench_colliders=False, vacuum=False, segments=(32, 16), frames=100,
                    env={})
VARIANTS = [
    ("A", "bench's setting (warm-up, built-in first, 64x32 sphere, frictionless colliders of thickness 0, 100 frames)",
     BENCH_SETTING),
    ("B", "A without warm-up", {**BENCH_SETTING, "warmup": False}),
    ("C", "A without warm-up, Soft Sim first", {**BENCH_SETTING, "warmup": False, "order": "softsim"}),
    ("D", "A with the add-on's collider defaults (friction 0.2, thickness 1 cm)", {**BENCH_SETTING, "bench_colliders": False}),
    ("E", "A with a default UV sphere (32x16)", {**BENCH_SETTING, "segments": (32, 16)}),
    ("F", "A with 48 frames", {**BENCH_SETTING, "frames": 48}),
    ("G", "A with the add-on's air drag (1.0)", {**BENCH_SETTING, "vacuum": False}),
    ("U", "user's script: no warm-up, add-on defaults, default UV sphere 32x16, 100 frames", USER_SETTING),
    ("U48", "U with 48 frames", {**USER_SETTING, "frames": 48}),
    ("U1", "U with numpy/BLAS on one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1)",
     {**USER_SETTING, "env": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}),
    ("Ucpu0", "U with the whole process on one core (taskset -c 0)", {**USER_SETTING, "prefix": ["taskset", "-c", "0"]}),
]


# --------------------------------------------------------------------------------------------------- child process
def _grid(n: int):
    """The n x n cloth of bench_cloth (``solvers.grid_cloth`` with quads): vertices (n*n, 3) [m], quads (m, 4)."""
    import numpy as np

    u = np.linspace(-WIDTH / 2, WIDTH / 2, n)
    xx, yy = np.meshgrid(u, u)  # row i = y, column j = x: vertex i*n + j, as grid_cloth
    vertices = np.column_stack([xx.ravel(), yy.ravel(), np.full(n * n, HEIGHT)])
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    quads = np.column_stack([a, a + 1, a + n + 1, a + n])
    return vertices, quads


def _scene(n: int, frames: int, segments):
    """A fresh scene as a user's script builds it: cloth n x n with pin group "pin" on two adjacent corners, a UV
    sphere of radius SPHERE_RADIUS with ``segments`` (segments, rings), a ground plane; frames 1..frames + 1."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.gravity = (0.0, 0.0, -9.81)
    scene.frame_start, scene.frame_end = 1, frames + 1
    vertices, quads = _grid(n)
    mesh = bpy.data.meshes.new("cloth")
    mesh.from_pydata(vertices.tolist(), [], quads.tolist())
    mesh.update()
    cloth = bpy.data.objects.new("cloth", mesh)
    scene.collection.objects.link(cloth)
    cloth.vertex_groups.new(name="pin").add([0, n - 1], 1.0, "REPLACE")
    bpy.ops.mesh.primitive_uv_sphere_add(segments=segments[0], ring_count=segments[1], radius=SPHERE_RADIUS)
    sphere = bpy.context.active_object
    bpy.ops.mesh.primitive_plane_add(size=100.0, location=(0, 0, GROUND_Z))
    ground = bpy.context.active_object
    return scene, cloth, sphere, ground


def _timed(call):
    """(result, wall seconds, CPU seconds of the process) of ``call()``, Blender's per-frame prints silenced."""
    sys.path.insert(0, BENCH)
    from blender_quiet import SilenceStdout

    with SilenceStdout():
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return result, wall, cpu


def bake_builtin(n: int, frames: int, segments) -> tuple:
    """Built-in Cloth at its defaults (pin group as its pin group), Collision modifiers on sphere and ground."""
    import bpy

    scene, cloth, sphere, ground = _scene(n, frames, segments)
    modifier = cloth.modifiers.new("Cloth", "CLOTH")
    modifier.settings.vertex_group_mass = "pin"
    cache = modifier.point_cache
    cache.frame_start, cache.frame_end = 1, frames + 1
    for obj in (sphere, ground):
        obj.modifiers.new("Collision", "COLLISION")
    scene.frame_set(1)

    def bake():
        with bpy.context.temp_override(scene=scene, active_object=cloth, object=cloth, point_cache=cache):
            return bpy.ops.ptcache.bake(bake=True)

    result, wall, cpu = _timed(bake)
    if result != {"FINISHED"} or not cache.is_baked:
        raise RuntimeError(f"built-in Cloth bake failed: {result}")
    return wall, cpu


def bake_softsim(n: int, frames: int, segments, bench_colliders: bool, vacuum: bool) -> tuple:
    """Soft Sim's Bake operator (PC2 cache) at the add-on's defaults; with ``bench_colliders`` mass 1 kg and
    colliders of thickness 0 and friction 0, with ``vacuum`` no air (air drag 0), as bench_cloth sets them."""
    import bpy

    scene, cloth, sphere, ground = _scene(n, frames, segments)
    scene.softsim.cache_dir = tempfile.mkdtemp(prefix="softsim-fresh-cache-")
    s = cloth.softsim
    s.role, s.pin_group = "CLOTH", "pin"
    if bench_colliders:
        s.mass = 1.0
    if vacuum:
        s.air_drag = 0.0
    for obj, role in ((sphere, "SPHERE"), (ground, "GROUND")):
        obj.softsim.role = role
        if bench_colliders:
            obj.softsim.thickness = 0.0
            obj.softsim.friction = 0.0
    scene.frame_set(1)
    result, wall, cpu = _timed(bpy.ops.softsim.bake)
    if result != {"FINISHED"}:
        raise RuntimeError(f"Soft Sim bake failed: {result}, {s.status}")
    return wall, cpu


PHASES = ("__init__", "begin_frame", "compute_frame", "finish")
"""The add-on's BakeJob methods whose wall time a child adds up: set-up (the model build: springs, bending, tethers,
constraint colouring; the colliders read), reading Blender per frame (frame_set, colliders, pins), the solver per
frame, and writing the PC2 file and restoring the frame."""


def instrument_bake_job(phases: dict) -> None:
    """Wrap the add-on's ``BakeJob`` methods in ``PHASES`` so that each call adds its wall seconds to ``phases[name]``
    (and the first frame's solver seconds go to ``phases['first_compute_frame']``). Timing only: nothing else
    changes."""
    job_class = sys.modules["soft_sim.operators.bake"].BakeJob

    def wrap(name, method):
        def timed(self, *args, **kwargs):
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                if name == "compute_frame" and "first_compute_frame" not in phases:
                    phases["first_compute_frame"] = seconds
                phases[name] = phases.get(name, 0.0) + seconds
        return timed

    for name in PHASES:
        setattr(job_class, name, wrap(name, getattr(job_class, name)))


def child(setting: dict, n: int, out: str) -> None:
    """One fresh process: import bpy, register the add-on, optionally warm up, bake in ``setting['order']``; the
    timings go to ``out`` as JSON."""
    record = {}
    start = time.perf_counter()
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-fresh-blender-"))
    import bpy  # noqa: F401

    record["import_bpy_s"] = time.perf_counter() - start
    start = time.perf_counter()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from devenv import import_addon

    import_addon().register()
    record["register_s"] = time.perf_counter() - start
    segments, frames = tuple(setting["segments"]), setting["frames"]
    jobs = {"builtin": lambda k, f: bake_builtin(k, f, segments),
            "softsim": lambda k, f: bake_softsim(k, f, segments, setting["bench_colliders"], setting["vacuum"])}
    order = ["builtin", "softsim"] if setting["order"] == "builtin" else ["softsim", "builtin"]
    if setting["warmup"]:
        start = time.perf_counter()
        for name in order:
            jobs[name](4, 2)
        record["warmup_s"] = time.perf_counter() - start
    phases = {}
    instrument_bake_job(phases)
    for name in order:
        record[f"{name}_s"], record[f"{name}_cpu_s"] = jobs[name](n, frames)
    record.update({f"softsim_{name}_s": seconds for name, seconds in phases.items()})
    record["process_s"] = time.perf_counter() - _PROCESS_START
    with open(out, "w") as f:
        json.dump(record, f)


# --------------------------------------------------------------------------------------------------- driver
def run_variant(setting: dict, n: int) -> dict:
    """Start one fresh process for ``setting`` and return its timings."""
    env = {**os.environ, **setting.get("env", {})}
    with tempfile.TemporaryDirectory(prefix="softsim-fresh-") as folder:
        out = os.path.join(folder, "result.json")
        spec = json.dumps({k: v for k, v in setting.items() if k not in ("env", "prefix")})
        subprocess.run([*setting.get("prefix", []), sys.executable, os.path.abspath(__file__), "--child", spec, "--n", str(n), "--out", out],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with open(out) as f:
            return json.load(f)


def run(variants=VARIANTS, n: int = 64, repeat: int = 3, verbose: bool = True) -> list:
    """Rows: per variant, its label, what it changes and the list of per-process records. The variants are run
    round-robin (A, B, ..., A, B, ...) so that a burst of load from other jobs on the machine hits every variant
    rather than all repeats of one."""
    results = {key: [] for key, _, _ in variants}
    for r in range(repeat):
        for key, _what, setting in variants:
            record = run_variant(setting, n)
            results[key].append(record)
            if verbose:
                print(f"  [{r + 1}/{repeat}] {key:4s} built-in {record['builtin_s']:6.2f} s  Soft Sim {record['softsim_s']:6.2f} s"
                      f"  ratio {record['builtin_s'] / record['softsim_s']:.2f}  (cpu {record['builtin_cpu_s']:.1f} / "
                      f"{record['softsim_cpu_s']:.1f} s)", file=sys.stderr, flush=True)
    return [dict(key=key, what=what, setting=setting, records=results[key]) for key, what, setting in variants]


def _median_spread(values, digits=2) -> str:
    """"median (min-max)" of ``values``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def markdown(rows: list) -> str:
    """Medians over the repeats and, in brackets, the smallest and largest value."""
    lines = ["| variant | what changes | frames | built-in ms/frame | Soft Sim ms/frame | speed vs Cloth | speed by CPU s "
             "| built-in CPU/wall | Soft Sim CPU/wall | import bpy + register s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        recs, frames = row["records"], row["setting"]["frames"]
        builtin = [1000 * r["builtin_s"] / frames for r in recs]
        softsim = [1000 * r["softsim_s"] / frames for r in recs]
        ratio = [r["builtin_s"] / r["softsim_s"] for r in recs]
        cpu_ratio = [r["builtin_cpu_s"] / r["softsim_cpu_s"] for r in recs]
        par_b = [r["builtin_cpu_s"] / r["builtin_s"] for r in recs]
        par_s = [r["softsim_cpu_s"] / r["softsim_s"] for r in recs]
        startup = [r["import_bpy_s"] + r["register_s"] for r in recs]
        lines.append(f"| {row['key']} | {row['what']} | {frames} | {_median_spread(builtin, 1)} | {_median_spread(softsim, 1)} "
                     f"| {_median_spread(ratio)}× | {_median_spread(cpu_ratio)}× | {statistics.median(par_b):.2f} | {statistics.median(par_s):.2f} "
                     f"| {_median_spread(startup, 1)} |")
    return "\n".join(lines)


def phases_markdown(rows: list) -> str:
    """Where Soft Sim's bake time goes (medians over the repeats, seconds): set-up (``BakeJob.__init__``: reading
    the mesh, building the model, tethers and constraint colouring), reading Blender every frame (``begin_frame``),
    the solver (``compute_frame``; its first frame separately), writing the PC2 file (``finish``), and what the
    operator adds around the job."""
    lines = ["| variant | frames | Soft Sim bake s | set-up s | Blender reads s | solver s | solver, first frame s "
             "| solver ms/frame after the first | PC2 writing s | rest of the operator s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        recs, frames = row["records"], row["setting"]["frames"]
        if not recs or "softsim___init___s" not in recs[0]:
            continue

        def med(key, recs=recs):
            return statistics.median(r[key] for r in recs)

        parts = [med(f"softsim_{name}_s") for name in PHASES]
        later = statistics.median(1000 * (r["softsim_compute_frame_s"] - r["softsim_first_compute_frame_s"]) / (frames - 1)
                                  for r in recs)
        rest = statistics.median(r["softsim_s"] - sum(r[f"softsim_{name}_s"] for name in PHASES) for r in recs)
        lines.append(f"| {row['key']} | {frames} | {med('softsim_s'):.2f} | {parts[0]:.2f} | {parts[1]:.2f} | {parts[2]:.2f} "
                     f"| {med('softsim_first_compute_frame_s'):.3f} | {later:.1f} | {parts[3]:.2f} | {rest:.2f} |")
    return (PHASES_CAPTION + "\n\n" if len(lines) > 2 else "") + "\n".join(lines)


PHASES_CAPTION = ("Where Soft Sim's bake time goes (the add-on's bake job timed method by method, medians, seconds). "
                  "Set-up: reading the mesh, building the model, tethers and constraint colouring, the colliders' "
                  "first read. Blender reads: the frame change, colliders and pins, every frame.")


def describe(n: int = 64, repeat: int = 3) -> str:
    return (f"Every row: {repeat} fresh processes (`import bpy`, the add-on registered, the {n}×{n} lab scene built by "
            "script, built-in Cloth's bake and Soft Sim's Bake operator timed in the same process, each on a fresh "
            "scene), run round-robin; median and (min–max). Speed = built-in seconds / Soft Sim seconds (wall); speed by CPU s: "
            "the same with process CPU seconds (all threads), which other jobs on a shared machine disturb less. "
            "CPU/wall: process CPU seconds over wall seconds during the bake (1: one busy core, or two half-starved). "
            "A to F bake Soft Sim's cloth in vacuum, as the Cloth table does; G and the user's rows (U) at the "
            "add-on's default air drag (1.0), where Soft Sim's 1 kg cloth (10 g/m²) falls like paper: it reaches the "
            "sphere later and its sides hang down slowly, while built-in Cloth's default cloth (0.3 kg a vertex, "
            "1.2 t here) drapes at once. Those rows time two different motions.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="grid resolution (n x n vertices)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per variant")
    parser.add_argument("--only", nargs="+", default=None, help="variant keys to run (default all)")
    parser.add_argument("--json", default=None, help="also write the raw records to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(json.loads(args.child), args.n, args.out)
        return None
    variants = [v for v in VARIANTS if not args.only or v[0] in args.only]
    rows = run(variants, args.n, args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(describe(args.n, args.repeat))
    print()
    print(markdown(rows))
    print()
    print(phases_markdown(rows))
    return rows


if __name__ == "__main__":
    main()
