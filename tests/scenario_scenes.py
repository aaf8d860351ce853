"""Scenes and measurements shared by tests/test_scenarios.py (short runs) and bench/bench_scenarios.py (long runs).

Meshes come from Blender primitives through bpy (``blender_meshes``), read once with foreach_get; everything else
is the pure engine. Each ``run_*`` function simulates one scene with one solver and returns a dict of figures
(SI units), so the test asserts on them and the bench prints them.
"""
import numpy as np

from solvers import REGISTRY, GroundPlane, SolverConfig, State, advance_frame, build_model, make_solver
from solvers.mass_spring import substeps_needed
from solvers.material import material_arrays
from solvers.model import tet_volumes
from solvers.geometry import tetrahedralize

FPS = 24
G = np.array([0.0, 0.0, -9.81])


def standing_sheet(n):
    """tools/compare.py's fold scene, smaller: a 4 m, n x n sheet of quads standing nearly upright (89 degrees), its
    lower edge 5 cm above the ground, 1 kg, both splits of every quad kept for the crossing counts. Returns the Model."""
    from solvers.builder import grid_cloth, grid_quads

    V, E, T = grid_cloth(n, 4.0, 0.0, diagonals=False)
    tilt = np.radians(89.0)
    rotation = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(tilt), -np.sin(tilt)], [0.0, np.sin(tilt), np.cos(tilt)]])
    V = V @ rotation.T
    V[:, 2] += 0.05 - V[:, 2].min()
    return build_model(V, E, T, total_mass=1.0, quads=grid_quads(n))


def config(solver, model=None, **settings):
    """The solver's defaults (its own substeps), damping 0; explicit solvers get the substeps their stability
    bound asks for on ``model`` (forward Euler also needs damping to be stable at all: 5/s unless given)."""
    base = dict(solver=solver, substeps=REGISTRY[solver].default_substeps, damping=0.0)
    if solver == "EXPLICIT_EULER":
        base["damping"] = 5.0
    cfg = SolverConfig(**{**base, **settings})
    if REGISTRY[solver].explicit and model is not None:
        stiffness = material_arrays(model, cfg).edge_stiffness
        cfg.substeps = substeps_needed(1.0 / FPS, model, stiffness, solver, cfg.damping)
        assert cfg.substeps > 0
    return cfg


def centre(model, x):
    """Centre of mass [m], (3,)."""
    return (model.mass[:, None] * x).sum(axis=0) / model.mass.sum()


def angular_momentum(model, x, v):
    """Angular momentum about the centre of mass [kg m^2/s], (3,)."""
    return (model.mass[:, None] * np.cross(x - centre(model, x), v)).sum(axis=0)


def kinetic_energy(model, v):
    return 0.5 * float(np.sum(model.mass * np.einsum("ij,ij->i", v, v)))


def rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


SKEW = rotation([0.3, 1.0, 0.4], 0.7)
"""A rotation about a skew axis, so that no symmetry of a mesh helps it keep its momentum."""


def place(vertices, lowest, R=None):
    """``vertices`` rotated by R about their mean and moved so that their lowest point is at z = ``lowest``."""
    x = np.asarray(vertices, float)
    if R is not None:
        x = (x - x.mean(axis=0)) @ R.T
    x = x - np.array([x[:, 0].mean(), x[:, 1].mean(), x[:, 2].min() - lowest])
    return x


def solid_model(vertices, triangles, resolution, mass=1.0):
    """A solid of the closed mesh (vertices, triangles) tetrahedralized at ``resolution``, its mesh's triangles kept as
    the faces drawn (as ``operators.solid.build_solid`` does)."""
    tet = tetrahedralize(vertices, triangles, resolution=resolution)
    return build_model(tet.vertices, tets=tet.tets, total_mass=mass, drawn_triangles=triangles)


def box_mesh(sx, sy, sz):
    """A closed box [0, sx] x [0, sy] x [0, sz]: (vertices (8, 3), triangles (12, 3))."""
    corners = np.array([[x, y, z] for z in (0, sz) for y in (0, sy) for x in (0, sx)], float)
    tris = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])
    return corners, tris


def symmetric_cube(n=2, size=0.4):
    """A cube of n^3 cells, each split into 24 tets (cell centre, face centre, face edge): a tet mesh with every
    mirror symmetry of the cube, so lumped masses and stiffnesses are symmetric too. Returns (vertices, tets)."""
    points, tets = {}, []

    def index(p):
        return points.setdefault(tuple(np.round(p, 9)), len(points))

    h = size / n
    for i in range(n):
        for j in range(n):
            for k in range(n):
                o = np.array([i, j, k], float) * h
                c = index(o + h / 2)
                for axis in range(3):
                    a1, a2 = [a for a in range(3) if a != axis]
                    for side in (0.0, 1.0):
                        fc = o + h / 2
                        fc[axis] = o[axis] + side * h
                        f = index(fc)
                        corners = []
                        for s1, s2 in ((0, 0), (1, 0), (1, 1), (0, 1)):
                            p = o.copy()
                            p[axis] += side * h
                            p[a1] += s1 * h
                            p[a2] += s2 * h
                            corners.append(index(p))
                        tets += [(c, f, corners[q], corners[(q + 1) % 4]) for q in range(4)]
    x = np.zeros((len(points), 3))
    for p, idx in points.items():
        x[idx] = p
    return x - np.array([size / 2, size / 2, 0.0]), np.array(tets)


# ---------------------------------------------------------------------------------------------- Blender meshes


def blender_meshes(suzanne_voxel=0.12, suzanne_size=1.0, suzanne_cloth_levels=0):
    """World-space (vertices, triangles) of Blender primitives, read once with foreach_get:

    suzanne_solid: Monkey, Subdivision 2 and a voxel remesh at ``suzanne_voxel`` m (closed, so it can be a solid);
    suzanne_cloth: Monkey with ``suzanne_cloth_levels`` of Subdivision (open, its eyes separate parts: a cloth);
    torus (12 x 6 segments), bar (a 1 m x 6 cm x 6 cm box), uneven (a 16-sided cylinder with n-gon caps:
    long sliver triangles on the caps next to square-ish sides, areas 34x apart), ico (ico sphere, 2 levels).
    """
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)

    def read(obj):
        depsgraph = bpy.context.evaluated_depsgraph_get()
        mesh = obj.evaluated_get(depsgraph).to_mesh()
        v = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", v)
        mesh.calc_loop_triangles()
        t = np.empty(len(mesh.loop_triangles) * 3, np.int64)
        mesh.loop_triangles.foreach_get("vertices", t)
        m = np.array(obj.matrix_world)
        return v.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3], t.reshape(-1, 3)

    meshes = {}
    bpy.ops.mesh.primitive_monkey_add(size=suzanne_size)
    obj = bpy.context.object
    obj.modifiers.new("Subdivision", "SUBSURF").levels = 2
    remesh = obj.modifiers.new("Remesh", "REMESH")
    remesh.mode, remesh.voxel_size = "VOXEL", suzanne_voxel
    meshes["suzanne_solid"] = read(obj)
    bpy.ops.mesh.primitive_monkey_add(size=suzanne_size)
    obj = bpy.context.object
    if suzanne_cloth_levels:
        obj.modifiers.new("Subdivision", "SUBSURF").levels = suzanne_cloth_levels
    meshes["suzanne_cloth"] = read(obj)
    bpy.ops.mesh.primitive_torus_add(major_segments=12, minor_segments=6, major_radius=0.3, minor_radius=0.1)
    meshes["torus"] = read(bpy.context.object)
    bpy.ops.mesh.primitive_cube_add(size=1.0, scale=(1.0, 0.06, 0.06))
    meshes["bar"] = read(bpy.context.object)
    bpy.ops.mesh.primitive_cylinder_add(vertices=16, radius=0.2, depth=0.3, end_fill_type="NGON")
    meshes["uneven"] = read(bpy.context.object)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.25)
    meshes["ico"] = read(bpy.context.object)
    bpy.ops.wm.read_homefile(use_empty=True)
    return meshes


SOLID_RESOLUTION = {"suzanne_solid": 4, "torus": 5, "bar": 12, "uneven": 4, "ico": 4}
"""Tet lattice cells across each mesh's largest side in the scenario table (small: the table runs every solver)."""


def drop_model(meshes, name, lowest=0.2, resolution=None, turn=SKEW):
    """The mesh ``name`` turned by ``turn`` (a rotation matrix, default SKEW; None keeps Blender's orientation),
    lowest point ``lowest`` m above z = 0: a 1 kg solid, or for suzanne_cloth a 1 kg cloth (its own vertices, edges
    of its triangles)."""
    v, t = meshes[name]
    x = place(v, lowest, turn)
    if name == "suzanne_cloth":
        edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
        return build_model(x, edges, t, total_mass=1.0)
    if name == "box":
        return solid_model(x, t, resolution or 4)
    return solid_model(x, t, resolution or SOLID_RESOLUTION[name])


# ---------------------------------------------------------------------------------------------- scenes


def run_drop(model, solver, frames, friction=0.0, thickness=0.01, **settings):
    """Drop ``model`` (at rest) onto the ground z = 0; figures: horizontal centre-of-mass travel [m] ``drift``,
    lowest z over the run ``lowest``, volume error and max strain of the last frame, max speed [m/s] at the end."""
    is_cloth = model.tet_count == 0
    base = dict(stiffness=1e3) if is_cloth else dict(youngs_modulus=1e5, poisson_ratio=0.4)
    if solver == "EXPLICIT_EULER":
        base["damping"] = 20.0
    cfg = config(solver, model, **{**base, **settings})
    sim = make_solver(model, cfg)
    ground = [GroundPlane((0, 0, 0), (0, 0, 1), thickness=thickness, friction=friction)]
    state = State.at_rest(model)
    start = centre(model, state.x)
    lowest, stats = np.inf, None
    for _ in range(frames):
        stats = advance_frame(sim, state, 1.0 / FPS, cfg.substeps, ground)
        lowest = min(lowest, float(state.x[:, 2].min()))
    return dict(drift=float(np.linalg.norm((centre(model, state.x) - start)[:2])), lowest=lowest,
                volume_error=stats.volume_error, max_strain=stats.max_strain,
                max_speed=float(np.sqrt(np.einsum("ij,ij->i", state.v, state.v).max())), substeps=cfg.substeps)


def run_spin(model, solver, frames, omega=(1.0, 2.0, 0.5)):
    """Spin ``model`` in free flight (no gravity, damping 0 except forward Euler's own): figures ``L0``, ``L``
    (angular momentum about the centre of mass at the start and end [kg m^2/s]), ``max_L_gain`` (largest
    |L(t)| - |L0| over the frames, relative to |L0|), ``L_change`` (|L - L0| / |L0|), ``max_energy_gain``
    (largest kinetic energy over the frames minus the initial one, relative to it: with elastic energy >= 0
    and the start at rest shape, a solver that never gains energy keeps this <= 0)."""
    cfg = config(solver, model, gravity=(0.0, 0.0, 0.0))
    sim = make_solver(model, cfg)
    state = State.at_rest(model)
    state.v[:] = np.cross(np.asarray(omega, float), state.x - centre(model, state.x))
    L0, E0 = angular_momentum(model, state.x, state.v), kinetic_energy(model, state.v)
    max_L, max_E = np.linalg.norm(L0), E0
    for _ in range(frames):
        advance_frame(sim, state, 1.0 / FPS, cfg.substeps)
        max_L = max(max_L, float(np.linalg.norm(angular_momentum(model, state.x, state.v))))
        max_E = max(max_E, kinetic_energy(model, state.v))
    L = angular_momentum(model, state.x, state.v)
    norm = float(np.linalg.norm(L0))
    return dict(L0=L0, L=L, L_change=float(np.linalg.norm(L - L0)) / norm, max_L_gain=(max_L - norm) / norm,
                max_energy_gain=(max_E - E0) / E0)


def run_rest(model, solver, settle_frames, watch_frames, damping=2.0, **settings):
    """Place ``model`` on the ground (lowest point at the contact thickness), let it settle for ``settle_frames``,
    then watch ``watch_frames`` more: figures ``max_speed`` (fastest vertex over the watched frames [m/s]),
    ``creep`` (centre of mass travel over them [m]), ``volume_error``, ``max_strain`` (last frame)."""
    settings = {"damping": damping, "youngs_modulus": 1e5, "poisson_ratio": 0.4, **settings}
    if solver == "EXPLICIT_EULER":
        settings["damping"] = max(settings["damping"], 20.0)
    cfg = config(solver, model, **settings)
    sim = make_solver(model, cfg)
    ground = [GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.5)]
    state = State.at_rest(model)
    for _ in range(settle_frames):
        advance_frame(sim, state, 1.0 / FPS, cfg.substeps, ground)
    start, max_speed, stats = centre(model, state.x), 0.0, None
    for _ in range(watch_frames):
        stats = advance_frame(sim, state, 1.0 / FPS, cfg.substeps, ground)
        max_speed = max(max_speed, float(np.sqrt(np.einsum("ij,ij->i", state.v, state.v).max())))
    return dict(max_speed=max_speed, creep=float(np.linalg.norm(centre(model, state.x) - start)),
                volume_error=float(abs(tet_volumes(state.x, model.tet_indices).sum() / model.tet_rest_volume.sum() - 1)),
                max_strain=stats.max_strain)


def hanging_rope(count=11, length=1.0, mass=0.1):
    """A vertical rope of ``count`` particles, ``length`` m long, pinned at its top (z = 0): a model whose
    edges are its only elements (mass lumped by length: the two ends carry half a segment each)."""
    x = np.zeros((count, 3))
    x[:, 2] = -np.linspace(0.0, length, count)
    edges = np.stack([np.arange(count - 1), np.arange(1, count)], axis=1)
    pinned = np.zeros(count, bool)
    pinned[0] = True
    return build_model(x, edges, pinned=pinned, total_mass=mass)


def rope_static_stretch(model, stiffness):
    """Analytic static elongation [m] of a hanging Hooke rope: edge e carries the weight of every particle below it,
    T_e = g sum_{below} m, and stretches by T_e / k."""
    below = np.cumsum(model.mass[::-1])[::-1]  # below[i] = mass of particles i..end
    tension = 9.81 * below[1:]  # edge (i, i+1) carries particles i+1..end
    return float(np.sum(tension / stiffness))


def run_hanging(model, solver, frames, stiffness, damping=8.0):
    """Let the rope hang for ``frames`` with heavy damping; figure ``stretch`` = length below the pin minus the rest
    length [m] at the end, and ``speed`` = fastest particle at the end [m/s]."""
    cfg = config(solver, model, stiffness=stiffness, damping=max(damping, 20.0) if solver == "EXPLICIT_EULER" else damping)
    sim = make_solver(model, cfg)
    state = State.at_rest(model)
    for _ in range(frames):
        advance_frame(sim, state, 1.0 / FPS, cfg.substeps)
    rest = -model.rest_positions[-1, 2]
    return dict(stretch=float(-state.x[-1, 2] - rest), speed=float(np.abs(state.v).max()))
