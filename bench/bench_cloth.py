"""Cloth benchmark: Soft Sim XPBD against Blender's built-in Cloth on the GAMES103 lab scene.

A square cloth 10 m wide, n x n vertices, horizontal at z = 3, two adjacent corners pinned (vertices 0
and n-1 of ``grid_cloth``), falls onto a sphere of radius 2.7 at the origin (and a ground plane at
z = -3) for FRAMES frames at 24 fps. Both simulators get the same vertex positions and ordering.

Reported per row: wall time of the simulation only (Blender: the point-cache bake; Soft Sim: the
``advance_frame`` calls; Soft Sim's model build is timed separately), ms per frame, simulated frames per
second, speed ratio against built-in Cloth at the same n (> 1: Soft Sim is faster), and quality: max
edge strain |l/l0 - 1| over all frames and all grid edges (the n x n quad grid's edges, the same set for
both simulators), the deepest penetration into the analytic sphere / ground over all frames, and the motion
error: the RMS over the first second (MOTION_FRAMES frames) of the distance between the cloth's mean position
and that of a converged reference run of the same scene (``reference_motion``: pure-engine PROJECTIVE with
2 x REFERENCE_SUBSTEPS substeps x REFERENCE["iterations"] iterations, checked against half as many substeps; the gap
between the two is printed under the table). Stiffness alone can fake low strain (a cloth that barely moves does not stretch); the motion error
catches that.

Run: ``python bench/bench_cloth.py [--sizes 21 64 128] [--frames 100]`` (``make bench`` runs bench/run.py).
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
from solvers import (  # noqa: E402
    GroundPlane, SimulationDiverged, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver,
)
from solvers.builder import both_quad_splits, grid_quads  # noqa: E402
from solvers.collision.narrow_phase.crossings import count_self_intersections, deepest_face_penetration  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# Every tunable setting of the bench lives here.
SIZES = (21, 64, 128)
FRAMES = 100
FPS = 24
WIDTH = 10.0            # cloth side [m]
HEIGHT = 3.0            # cloth height [m]
SPHERE_RADIUS = 2.7     # [m], centred at the origin
GROUND_Z = -3.0         # ground plane height [m]; None for no ground (applies to both simulators)
SPHERE_SEGMENTS = (64, 32)  # Blender UV sphere (segments, rings) used as its collision mesh
TOTAL_MASS = 1.0        # Soft Sim cloth mass [kg] (Blender Cloth keeps its default 0.3 kg per vertex)

# Soft Sim configurations, one table row each per n. Keys: label, plus SolverConfig fields;
# "diagonals" (grid_cloth: add each quad's diagonal as an edge, as Blender adds shear springs).
XPBD_DEFAULTS = dict(solver="XPBD", stiffness=1.0e4, damping=0.1, diagonals=True)
XPBD_CONFIGS = [
    dict(label="XPBD GS 30x1 + tethers, quad edges (add-on defaults)", constraint_scheme="GAUSS_SEIDEL", substeps=30,
         iterations=1, tether_stretch=0.01, diagonals=False),
    dict(label="XPBD GS 30x1 + tethers, quad edges (add-on defaults), Compute NumPy", constraint_scheme="GAUSS_SEIDEL",
         substeps=30, iterations=1, tether_stretch=0.01, diagonals=False, compute="NUMPY"),
    dict(label="XPBD GS 60x1 + tethers, quad edges", constraint_scheme="GAUSS_SEIDEL", substeps=60,
         iterations=1, tether_stretch=0.01, diagonals=False),
    dict(label="XPBD GS 20x1 + tethers, quad edges", constraint_scheme="GAUSS_SEIDEL", substeps=20,
         iterations=1, tether_stretch=0.01, diagonals=False),
    dict(label="XPBD GS 20x1 + tethers, with diagonals", constraint_scheme="GAUSS_SEIDEL", substeps=20, iterations=1,
         tether_stretch=0.01),
    dict(label="XPBD GS 10x5 + tethers, quad edges", constraint_scheme="GAUSS_SEIDEL", substeps=10, iterations=5,
         tether_stretch=0.01, diagonals=False),
    dict(label="XPBD GS 20x1, no tethers, with diagonals", constraint_scheme="GAUSS_SEIDEL", substeps=20, iterations=1),
    dict(label="XPBD Jacobi 20x1 + tethers, quad edges", constraint_scheme="JACOBI", substeps=20, iterations=1,
         tether_stretch=0.01, diagonals=False),
    dict(label="PBD GS 20x1 + tethers, quad edges", solver="PBD", constraint_scheme="GAUSS_SEIDEL", substeps=20,
         iterations=1, tether_stretch=0.01, diagonals=False),
    dict(label="PBD Jacobi 10x5 + tethers, quad edges", solver="PBD", constraint_scheme="JACOBI", substeps=10,
         iterations=5, tether_stretch=0.01, diagonals=False),
    # Mass-spring backward Euler: one CG solve per substep; skipped above max_n (seconds per frame there).
    dict(label="Implicit Euler (CG) 2 substeps, quad edges", solver="IMPLICIT_EULER", linear_solver="CG", substeps=2,
         iterations=1, diagonals=False, max_n=64),
    # Projective Dynamics (Anderson-accelerated): one prefactorized matrix per step size.
    dict(label="Projective 8x5, quad edges", solver="PROJECTIVE", substeps=8, iterations=5,
         diagonals=False),
    dict(label="Projective 8x5, quad edges, Compute NumPy", solver="PROJECTIVE", substeps=8, iterations=5,
         diagonals=False, compute="NUMPY"),
    dict(label="Projective 2x5, quad edges", solver="PROJECTIVE", substeps=2, iterations=5, diagonals=False),
    dict(label="Projective 24x5, quad edges", solver="PROJECTIVE", substeps=24, iterations=5, diagonals=False),
    dict(label="Projective 16x1, quad edges", solver="PROJECTIVE", substeps=16, iterations=1, diagonals=False),
    # Newton with IPC: the colliders' thickness is the barrier's reach (must be > 0), so the cloth never touches them.
    dict(label="Newton (IPC) 1 substep, quad edges, collider thickness 1 cm", solver="NEWTON", substeps=1,
         diagonals=False, collider_thickness=0.01, max_n=64),
    # The same with a looser Newton tolerance (the default is the course's 1e-2 m/s; IPC's own rule, 1e-2 of the
    # body's bounding-box diagonal per second, is 0.14 m/s for this 10 m cloth): the speed a user gets by raising it.
    dict(label="Newton (IPC) 1 substep, quad edges, collider thickness 1 cm, tolerance 0.1 m/s", solver="NEWTON",
         substeps=1, diagonals=False, collider_thickness=0.01, newton_tolerance=0.1, max_n=64),
]
# ---------------------------------------------------------------------------------------------------

# Motion reference: the same scene (quad edges, stiffness, bending, damping, mass, colliders) without tethers, so it
# is the physics of the springs alone, run with so many substeps and iterations that the mean motion no longer
# changes. PROJECTIVE (implicit Euler) gets there far cheaper than XPBD: on the 64 x 64 scene PD 48x20 and 96x20
# differ by 2 mm and 96x20 and 96x40 by 0.1 mm, while XPBD 400x1 and 800x1 still differ by 26 mm (XPBD 200x1 is 75 mm
# from PD 96x20, i.e. it converges towards it at first order).
MOTION_FRAMES = FPS     # the first second
REFERENCE = dict(label="reference", solver="PROJECTIVE", iterations=10, diagonals=False)
REFERENCE_SUBSTEPS = 24  # the reference runs 2 x REFERENCE_SUBSTEPS, checked against REFERENCE_SUBSTEPS

# Bakes in Blender, timed as a user waits for them: the add-on's Bake operator (bpy.ops.softsim.bake, PC2 output)
# on the same scene, and built-in Cloth with its self-collision on. Keys: label, "builtin" (True: built-in Cloth
# with these modifier settings) or the Soft Sim settings (obj.softsim.<name>) to set on top of the add-on's defaults.
BAKE_CONFIGS = [
    dict(label="Soft Sim bake in Blender, add-on defaults (XPBD 30x1, tethers)", softsim={}),
    dict(label="Soft Sim bake in Blender, add-on defaults, Compute NumPy", softsim={}, compute="NUMPY"),
    dict(label="Soft Sim bake in Blender, Projective 8x5", softsim=dict(solver="PROJECTIVE", substeps=8, iterations=5)),
    dict(label="Soft Sim bake in Blender, Projective 8x5, Compute NumPy",
         softsim=dict(solver="PROJECTIVE", substeps=8, iterations=5), compute="NUMPY"),
    dict(label="Soft Sim bake in Blender, Projective 6x5", softsim=dict(solver="PROJECTIVE", substeps=6, iterations=5)),
    # One local-global iteration per substep: more, shorter steps follow the motion better than more iterations.
    dict(label="Soft Sim bake in Blender, Projective 16x1", softsim=dict(solver="PROJECTIVE", substeps=16, iterations=1)),
    dict(label="Blender Cloth (built-in), self-collision on", builtin=dict(use_self_collision=True)),
    dict(label="Soft Sim bake in Blender, defaults + self-collision", softsim=dict(use_self_collision=True), max_n=64),
    # PD's long steps move the cloth far per step, so self-collision's pair lists grow large: the 64 x 64 bake did
    # not finish in 20 minutes (measured), hence 21 only.
    dict(label="Soft Sim bake in Blender, Projective 8x5 + self-collision",
         softsim=dict(solver="PROJECTIVE", substeps=8, iterations=5, use_self_collision=True), max_n=21),
]
CROSSING_EVERY = 4
"""Self-crossings are counted (exactly, every edge against every triangle) on every CROSSING_EVERY-th frame: at
128 x 128 one count takes about half a second."""

BUILTIN = "Blender Cloth (built-in)"


def quality(frames_x: list, edges: np.ndarray, rest_length: np.ndarray, triangles: np.ndarray) -> dict:
    """Quality over frames: ``strain`` max |l/l0 - 1| over frames and edges, ``strain99`` the max over frames of its
    99th percentile over edges, ``depth`` the deepest vertex [m] inside sphere or ground, ``face_depth`` the
    deepest point of any face inside the sphere [m], ``crossings`` the most intersecting edge-triangle pairs of the
    cloth with itself in one frame (every CROSSING_EVERY-th frame and the last), counted over both splits of every
    quad (Blender may draw a bent quad split either way).

    The max strain sits at the two pinned corners, which carry the whole cloth; the 99th percentile shows the bulk.
    """
    strain = strain99 = depth = face_depth = 0.0
    crossings = 0
    n = int(round(np.sqrt(len(frames_x[0])))) if frames_x else 2
    both_splits = both_quad_splits(triangles, grid_quads(n))
    for k, x in enumerate(frames_x):
        length = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        s = np.abs(length / rest_length - 1.0)
        strain = max(strain, float(np.max(s)))
        strain99 = max(strain99, float(np.percentile(s, 99)))
        depth = max(depth, float(np.max(SPHERE_RADIUS - np.linalg.norm(x, axis=1))))
        if GROUND_Z is not None:
            depth = max(depth, float(np.max(GROUND_Z - x[:, 2])))
        face_depth = max(face_depth, deepest_face_penetration(x, triangles, np.zeros(3), SPHERE_RADIUS))
        if k % CROSSING_EVERY == 0 or k == len(frames_x) - 1:
            crossings = max(crossings, count_self_intersections(x, both_splits))
    return dict(strain=strain, strain99=strain99, depth=max(depth, 0.0), face_depth=face_depth, crossings=crossings)


def mean_motion(frames_x: list) -> np.ndarray:
    """The cloth's mean position per frame, (frames, 3) [m]."""
    return np.array([x.mean(axis=0) for x in frames_x]).reshape(-1, 3)


def motion_error(frames_x: list, reference: np.ndarray) -> float:
    """RMS over the frames both runs have (at most len(reference)) of |mean position - reference's| [m].

    NaN when the run has no frame (diverged at once). A run that diverged early is compared on what it has.
    """
    k = min(len(frames_x), len(reference))
    if k == 0:
        return float("nan")
    gap = mean_motion(frames_x[:k]) - reference[:k]
    return float(np.sqrt(np.mean(np.einsum("ij,ij->i", gap, gap))))


def reference_motion(n: int, frames: int = MOTION_FRAMES, substeps: int = REFERENCE_SUBSTEPS) -> dict:
    """The converged reference of the n x n scene: mean positions (frames, 3) of ``REFERENCE`` at 2 x ``substeps``,
    and the motion error [m] of the run at ``substeps`` against it (how far the reference is from converged)."""
    coarse = run_xpbd(n, frames, {**REFERENCE, "substeps": substeps})
    fine = run_xpbd(n, frames, {**REFERENCE, "substeps": 2 * substeps})
    for result in (coarse, fine):
        if result["diverged"]:
            raise RuntimeError(f"motion reference diverged at n={n}: {result['diverged']}")
    mean = mean_motion(fine["positions"])
    return dict(mean=mean, substeps=2 * substeps, gap=motion_error(coarse["positions"], mean),
                seconds=coarse["seconds"] + fine["seconds"])


def blender_defaults() -> dict:
    """Blender Cloth's default settings that matter for the comparison (read off a fresh modifier)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    mesh = bpy.data.meshes.new("probe")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("probe", mesh)
    bpy.context.scene.collection.objects.link(obj)
    s = obj.modifiers.new("Cloth", "CLOTH").settings
    keys = ("quality", "mass", "tension_stiffness", "compression_stiffness", "shear_stiffness", "bending_stiffness",
            "tension_damping", "air_damping", "bending_model")
    out = {k: getattr(s, k) for k in keys}
    c = obj.modifiers["Cloth"].collision_settings
    out.update(collision_quality=c.collision_quality, distance_min=c.distance_min, self_collision=c.use_self_collision)
    return out


def _blender_scene(n: int, frames: int):
    """A fresh Blender scene with the n x n cloth (pin group "pin" on its two pinned corners), the UV sphere and the
    ground, frames 1..frames + 1 (frame 1 is the rest state). Returns (scene, cloth, sphere, ground)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = FPS
    scene.render.fps_base = 1.0
    scene.gravity = (0.0, 0.0, -9.81)
    scene.frame_start = 1
    scene.frame_end = frames + 1

    vertices, _, _ = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=False)
    mesh = bpy.data.meshes.new("cloth")
    mesh.from_pydata(vertices.tolist(), [], grid_quads(n).tolist())
    mesh.update()
    cloth = bpy.data.objects.new("cloth", mesh)
    scene.collection.objects.link(cloth)
    pin = cloth.vertex_groups.new(name="pin")
    pin.add([0, n - 1], 1.0, "REPLACE")
    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=SPHERE_SEGMENTS[0], ring_count=SPHERE_SEGMENTS[1], radius=SPHERE_RADIUS, location=(0, 0, 0))
    sphere = bpy.context.active_object
    ground = None
    if GROUND_Z is not None:
        bpy.ops.mesh.primitive_plane_add(size=100.0, location=(0, 0, GROUND_Z))
        ground = bpy.context.active_object
    return scene, cloth, sphere, ground


def _blender_positions(scene, cloth, frames: int) -> list:
    """World positions (n, 3) of the evaluated cloth at frames 2..frames + 1."""
    import bpy

    positions = []
    buf = np.empty(len(cloth.data.vertices) * 3)
    matrix = np.array(cloth.matrix_world)
    for f in range(2, frames + 2):
        scene.frame_set(f)
        evaluated = cloth.evaluated_get(bpy.context.evaluated_depsgraph_get())
        evaluated.data.vertices.foreach_get("co", buf)
        positions.append(buf.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3])
    return positions


def run_blender_cloth(n: int, frames: int, collision_settings: dict = None) -> dict:
    """Bake Blender's Cloth at default settings (plus ``collision_settings`` on its collision settings, e.g.
    use_self_collision) on the n x n scene; time the bake, return the positions."""
    import bpy

    scene, cloth, sphere, ground = _blender_scene(n, frames)
    modifier = cloth.modifiers.new("Cloth", "CLOTH")
    modifier.settings.vertex_group_mass = "pin"
    for name, value in (collision_settings or {}).items():
        setattr(modifier.collision_settings, name, value)
    cache = modifier.point_cache
    # Frame 1 is the rest state; frames 2..frames+1 are the `frames` simulated steps (as Soft Sim's).
    cache.frame_start = 1
    cache.frame_end = frames + 1
    for obj in (sphere, ground):
        if obj is not None:
            obj.modifiers.new("Collision", "COLLISION")

    scene.frame_set(1)
    # Headless bake: the ptcache.bake operator with the cloth's point cache in the context runs
    # synchronously in background mode (stepping scene.frame_set(f) costs the same).
    with SilenceStdout():
        start = time.perf_counter()
        with bpy.context.temp_override(scene=scene, active_object=cloth, object=cloth, point_cache=cache):
            result = bpy.ops.ptcache.bake(bake=True)
        seconds = time.perf_counter() - start
    if result != {"FINISHED"} or not cache.is_baked:
        raise RuntimeError(f"Blender cloth bake failed: {result}, {cache.info}")
    return dict(seconds=seconds, build_seconds=float("nan"), positions=_blender_positions(scene, cloth, frames))


def _register_addon():
    """Register the repository as the add-on ``soft_sim`` in this bpy (once)."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from devenv import import_addon

    addon = import_addon()
    import bpy

    if not hasattr(bpy.types.Object, "softsim"):
        addon.register()


def run_softsim_bake(n: int, frames: int, settings: dict, compute: str = "AUTO") -> dict:
    """Bake the n x n scene with the add-on's Bake operator (PC2 cache, the add-on's defaults plus ``settings``, no
    air: the lab scene is in vacuum, as its motion reference), as a user would; time the operator (model build
    included), return the positions the cache plays back. compute: the add-on's Compute ('AUTO' or 'NUMPY', set
    for the process through SOFTSIM_COMPUTE, which the engine reads when a solver is built)."""
    import bpy

    _register_addon()
    scene, cloth, sphere, ground = _blender_scene(n, frames)
    scene.softsim.cache_dir = tempfile.mkdtemp(prefix="softsim-bench-cache-")
    s = cloth.softsim
    s.role = "CLOTH"
    s.pin_group = "pin"
    s.mass = TOTAL_MASS
    s.air_drag = 0.0
    for name, value in settings.items():
        setattr(s, name, value)
    for obj, role in ((sphere, "SPHERE"), (ground, "GROUND")):
        if obj is not None:
            obj.softsim.role = role
            obj.softsim.thickness = 0.0
            obj.softsim.friction = 0.0  # as the pure-engine rows' colliders
    scene.frame_set(1)
    previous = os.environ.pop("SOFTSIM_COMPUTE", None)
    if compute == "NUMPY":
        os.environ["SOFTSIM_COMPUTE"] = "NUMPY"
    try:
        with SilenceStdout():
            start = time.perf_counter()
            result = bpy.ops.softsim.bake()
            seconds = time.perf_counter() - start
    finally:
        os.environ.pop("SOFTSIM_COMPUTE", None)
        if previous is not None:
            os.environ["SOFTSIM_COMPUTE"] = previous
    if result != {"FINISHED"}:
        raise RuntimeError(f"Soft Sim bake failed: {result}, {s.status}")
    return dict(seconds=seconds, build_seconds=float("nan"), positions=_blender_positions(scene, cloth, frames))


def run_xpbd(n: int, frames: int, spec: dict) -> dict:
    """Build and run one Soft Sim configuration; time the build and the frames separately."""
    spec = {**XPBD_DEFAULTS, **spec}
    spec.pop("label")
    spec.pop("max_n", None)
    diagonals = spec.pop("diagonals")
    thickness = spec.pop("collider_thickness", 0.0)
    config = SolverConfig(**spec)

    start = time.perf_counter()
    vertices, edges, triangles = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=diagonals)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=TOTAL_MASS, quads=grid_quads(n))
    solver = make_solver(model, config)
    build_seconds = time.perf_counter() - start

    colliders = [Sphere(np.zeros(3), SPHERE_RADIUS, thickness)]
    if GROUND_Z is not None:
        colliders.append(GroundPlane(np.array([0.0, 0.0, GROUND_Z]), np.array([0.0, 0.0, 1.0]), thickness))
    state = State.at_rest(model)
    positions = []
    seconds = 0.0
    diverged = None
    newton_iterations, halved = [], 0  # NEWTON: iterations a frame, steps split in two
    for _ in range(frames):
        start = time.perf_counter()
        try:
            stats = advance_frame(solver, state, 1.0 / FPS, config.substeps, colliders)
        except SimulationDiverged as error:
            diverged = str(error)
            break
        finally:
            seconds += time.perf_counter() - start
        positions.append(state.x.copy())
        newton_iterations.append(stats.newton_iterations)
        halved += stats.split_steps
    newton = ""
    if config.solver == "NEWTON" and newton_iterations:
        newton = (f"Newton iterations a frame median {np.median(newton_iterations):.0f}, max {max(newton_iterations)}; "
                  f"{halved} steps halved")
    return dict(seconds=seconds, build_seconds=build_seconds, positions=positions, diverged=diverged, newton=newton)


SELF_COLLISION_PEER = "Blender Cloth (built-in), self-collision on"


def run(sizes=SIZES, frames=FRAMES, configs=None, blender=True, verbose=True, repeat=1,
        reference_substeps=REFERENCE_SUBSTEPS, bake_configs=None) -> list:
    """Rows (dicts) of the cloth benchmark, built-in Cloth first at every n.

    repeat: run every simulation this many times and keep the fastest (for a noisy, shared machine).
    reference_substeps: the motion reference runs twice this many substeps, checked against this many; 0: none.
    bake_configs: the BAKE_CONFIGS rows to run (bakes in Blender; default all, only with ``blender``). A row with
    self-collision is compared with built-in Cloth with self-collision on, every other row with built-in Cloth at
    its defaults.
    """
    configs = XPBD_CONFIGS if configs is None else configs
    bake_configs = (BAKE_CONFIGS if bake_configs is None else bake_configs) if blender else []
    for spec in configs:  # warm-up: first-call costs (imports, caches) stay out of the timed build
        run_xpbd(4, 1, spec)
    if blender:
        run_blender_cloth(4, 2)
        if bake_configs:
            run_softsim_bake(4, 2, {})
    rows = []
    for n in sizes:
        _, grid_edges, triangles = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=False)
        vertices = grid_cloth(n, WIDTH, height=HEIGHT, diagonals=False)[0]
        rest = np.linalg.norm(vertices[grid_edges[:, 0]] - vertices[grid_edges[:, 1]], axis=1)
        reference = (reference_motion(n, min(frames, MOTION_FRAMES), reference_substeps) if reference_substeps
                     else dict(mean=np.empty((0, 3)), substeps=0, gap=float("nan"), seconds=0.0))
        if verbose and reference_substeps:
            print(f"  n={n:4d} motion reference {REFERENCE['solver']} {reference['substeps']}x{REFERENCE['iterations']}: "
                  f"gap to {reference_substeps}x{REFERENCE['iterations']} "
                  f"{1000.0 * reference['gap']:.1f} mm ({reference['seconds']:.0f} s)", file=sys.stderr, flush=True)
        runs = []  # (label, job, label of the peer it is compared with)
        if blender:
            runs.append((BUILTIN, lambda n=n: run_blender_cloth(n, frames), BUILTIN))
        for spec in configs:
            if n <= spec.get("max_n", n):
                runs.append((spec["label"], lambda spec=spec, n=n: run_xpbd(n, frames, spec), BUILTIN))
        for spec in bake_configs:
            if n > spec.get("max_n", n):
                continue
            if "builtin" in spec:
                runs.append((spec["label"], lambda spec=spec, n=n: run_blender_cloth(n, frames, spec["builtin"]), spec["label"]))
            else:
                peer = SELF_COLLISION_PEER if spec["softsim"].get("use_self_collision") else BUILTIN
                runs.append((spec["label"], lambda spec=spec, n=n: run_softsim_bake(n, frames, spec["softsim"],
                                                                                    spec.get("compute", "AUTO")), peer))
        peers = {}
        for label, job, peer in runs:
            result = job()
            for _ in range(repeat - 1):
                result["seconds"] = min(result["seconds"], job()["seconds"])
            done = len(result["positions"])
            q = quality(result["positions"], grid_edges, rest, triangles)
            seconds = result["seconds"]
            if label == peer:
                peers[label] = seconds
            peer_seconds = peers.get(peer)
            row = dict(
                n=n, method=label, frames=done, seconds=seconds, peer=peer,
                ms_per_frame=1000.0 * seconds / max(done, 1),
                fps=done / seconds if seconds > 0 else float("inf"),
                speedup=1.0 if label == peer else (peer_seconds / seconds * done / frames if peer_seconds else float("nan")),
                max_strain_pct=100.0 * q["strain"], p99_strain_pct=100.0 * q["strain99"],
                motion_error_mm=1000.0 * motion_error(result["positions"], reference["mean"]),
                penetration_mm=1000.0 * q["depth"], face_depth_mm=1000.0 * q["face_depth"], crossings=q["crossings"],
                build_seconds=result["build_seconds"], note=result.get("diverged") or "", newton=result.get("newton", ""),
                reference_substeps=reference["substeps"], reference_gap_mm=1000.0 * reference["gap"],
            )
            rows.append(row)
            if verbose:
                print(f"  n={n:4d} {label:40s} {seconds:8.2f} s  strain {row['max_strain_pct']:7.2f} % "
                      f"(p99 {row['p99_strain_pct']:5.2f} %)  "
                      f"motion error {row['motion_error_mm']:7.1f} mm  penetration {row['penetration_mm']:7.1f} mm  "
                      f"face depth {row['face_depth_mm']:6.1f} mm  crossings {row['crossings']}",
                      file=sys.stderr, flush=True)
    return rows


def _fmt(value, digits):
    return "-" if value != value else f"{value:.{digits}f}"  # nan -> "-"


def markdown(rows: list, frames: int = None) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| n | method | total s | ms/frame | frames/s | speed vs peer | max edge strain % | p99 strain % "
        "| motion error mm | penetration mm | face depth mm | self-crossings | build s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        method = r["method"] + (f" (diverged after {r['frames']} frames)" if r["note"] else "")
        method += f" ({r['newton']})" if r.get("newton") else ""
        peer = "" if r["peer"] == BUILTIN or r["method"] == r["peer"] else " (vs Cloth with self-collision)"
        lines.append(
            f"| {r['n']} | {method} | {_fmt(r['seconds'], 2)} | {_fmt(r['ms_per_frame'], 1)} | {_fmt(r['fps'], 1)} "
            f"| {_fmt(r['speedup'], 2)}x{peer} | {_fmt(r['max_strain_pct'], 1)} | {_fmt(r['p99_strain_pct'], 1)} "
            f"| {_fmt(r['motion_error_mm'], 0)} | {_fmt(r['penetration_mm'], 1)} | {_fmt(r['face_depth_mm'], 1)} "
            f"| {r['crossings']} | {_fmt(r['build_seconds'], 3)} |"
        )
    references = {r["n"]: r for r in rows if r.get("reference_substeps")}
    if references:
        lines.append("")
        it = REFERENCE["iterations"]
        lines.append(f"Motion reference (pure-engine {REFERENCE['solver']}, quad edges, no tethers; substeps x iterations) "
                     "and how far it is from converged: "
                     + "; ".join(f"n={n}: {r['reference_substeps']}x{it}, {_fmt(r['reference_gap_mm'], 1)} mm from "
                                 f"{r['reference_substeps'] // 2}x{it}" for n, r in references.items()) + ".")
    return "\n".join(lines)


def describe(frames: int = FRAMES) -> str:
    """A short Markdown paragraph on the scene and the peer's settings, to print above the table."""
    try:
        d = blender_defaults()
        peer = (f"Blender Cloth at its defaults (quality {d['quality']} steps/frame, mass {d['mass']:.2f} kg per vertex, "
                f"tension/compression {d['tension_stiffness']:g}/{d['compression_stiffness']:g}, shear "
                f"{d['shear_stiffness']:g}, bending {d['bending_stiffness']:g} ({d['bending_model'].lower()}), "
                f"collision quality {d['collision_quality']}, distance {d['distance_min']:.3f} m, no self-collision)")
    except Exception as error:  # pragma: no cover - only if bpy is missing
        peer = f"Blender Cloth unavailable ({error})"
    ground = f", ground plane at z = {GROUND_Z:g}" if GROUND_Z is not None else ""
    return (
        f"Cloth: {WIDTH:g} m square grid, n x n vertices, at z = {HEIGHT:g}, two adjacent corners pinned, falling onto a "
        f"sphere of radius {SPHERE_RADIUS:g}{ground}; {frames} frames at {FPS} fps, gravity -9.81. Peer: {peer}, "
        f"baked headless with `bpy.ops.ptcache.bake`. Soft Sim (pure engine): stiffness {XPBD_DEFAULTS['stiffness']:g} N/m, "
        f"damping {XPBD_DEFAULTS['damping']:g}/s, total mass {TOTAL_MASS:g} kg; each row names its solver, sweep, "
        "\"20x1\" = 20 substeps x 1 iteration per frame, whether pin tethers (1% max stretch) are on, and whether "
        "the quads' diagonals are edges too. Times are simulation only (Soft Sim's model build, incl. "
        "constraint colouring, in the last column). Strain: max |l/l0 - 1| over all frames and grid edges "
        "(at the pinned corners, which carry the whole cloth) and, for the bulk, the max over frames of its 99th "
        "percentile over edges; motion error: RMS over the first second of the distance between the cloth's mean "
        "position and that of a converged reference run of the same scene (below the table); "
        "penetration: deepest vertex inside the analytic sphere or ground over all frames; face depth: deepest point "
        "of any face inside the sphere; self-crossings: the most edge-triangle pairs of the cloth crossing each other "
        f"in one frame (exact test, every {CROSSING_EVERY}th frame). Rows \"bake in Blender\" time the add-on's Bake "
        "operator (model build, solver, PC2 cache writing) in the same Blender session as the built-in's bake, "
        "colliders frictionless and Air Drag 0 as in the pure-engine rows (the scene is in vacuum); rows with "
        "self-collision are compared with built-in Cloth with its self-collision on. Rows \"Compute NumPy\" run the "
        "NumPy reference path instead of the native kernels (the same frames, bit for bit on x86-64)."
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="grid resolutions n (n x n vertices)")
    parser.add_argument("--frames", type=int, default=FRAMES, help="frames to simulate")
    parser.add_argument("--no-blender", action="store_true", help="skip the built-in Cloth peer")
    parser.add_argument("--repeat", type=int, default=1, help="time each run this many times, keep the fastest")
    parser.add_argument("--reference-substeps", type=int, default=REFERENCE_SUBSTEPS,
                        help="the motion reference runs twice this many substeps, checked against this many; "
                             "0: no motion error")
    parser.add_argument("--only", nargs="+", default=None, help="run only the configurations (pure engine and bakes "
                        "in Blender) whose label starts so")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)

    def picked(specs):
        return None if not args.only else [c for c in specs if any(c["label"].startswith(o) for o in args.only)]

    rows = run(args.sizes, args.frames, configs=picked(XPBD_CONFIGS), blender=not args.no_blender, repeat=args.repeat,
               reference_substeps=args.reference_substeps, bake_configs=picked(BAKE_CONFIGS))
    print(describe(args.frames))
    print()
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
