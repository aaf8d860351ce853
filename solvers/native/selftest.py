"""The self-tests a freshly loaded library must pass before a solver uses its kernels.

``run`` is the core test, run at load (``library._load``): the distance and bending sweeps and the pin tethers a few
sweeps on a small jiggled cloth (7 x 7, curved rest shape so bending's curved branch runs, random per-edge
compliance, two pins), once in C and once with its NumPy twin, both compliant and hard. A failure there leaves the
whole library unused.

The other kernels are grouped in families (``FAMILIES``), each tested the first time a solver binds one of its
kernels (``NativeLibrary.ready``) and only then: a failing family stays on the NumPy path alone. To register a new
kernel's test: write ``def my_test(library) -> str`` ('' when it matches its twin, else the first difference) and add
it to its family's tuple in ``FAMILIES`` (or a new family with its own key; its binding site then asks
``library.ready(key)`` before it builds the kernel).

Every test agrees with its twin to SELF_TEST_TOLERANCE (bit for bit on x86-64; the margin is for a platform whose
SciPy build fuses a multiply-add in the sparse product the bending twin uses). Each costs a few milliseconds, once per
process; their inputs are as small as still reaches every branch (it checks the binary computes what NumPy does, it
is not a physics test).
"""
from functools import partial

import numpy as np

SELF_TEST_TOLERANCE = 1e-12
"""Largest allowed |native - numpy| relative to the cloth's size (positions) or the multipliers' size."""


def _cloth(n: int = 7, seed: int = 1):
    from ..builder import build_model, grid_cloth

    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=True)
    vertices = vertices.copy()
    vertices[:, 2] = 0.3 * vertices[:, 0] ** 2  # a curved rest shape: hinges with r0 > 0
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(vertices + rng.normal(scale=0.05, size=vertices.shape))
    return model, x, rng


def _differs(name, a, b, scale) -> str:
    gap = float(np.max(np.abs(a - b))) if a.size else 0.0
    if not np.all(np.isfinite(a)) or gap > SELF_TEST_TOLERANCE * scale:
        return f"{name} differs from NumPy by {gap:.3g}"
    return ""


def run(library) -> str:
    """'' when every kernel of ``library`` matches its NumPy twin, else the first difference found."""
    from ..colouring import colour_constraints
    from ..constraints import BendingConstraints, DistanceConstraints, PinTethers
    from ..constraints.bending import BendingColourSweep
    from ..constraints.distance import DistanceColourSweep
    from .kernels import BendingSweep, DistanceSweep, Tethers

    model, x0, rng = _cloth()
    n, dt = len(x0), 1.0 / 240.0
    distance = DistanceConstraints(model.edge_indices, model.edge_rest_length, model.inv_mass,
                                   rng.uniform(1e-5, 1e-3, model.edge_count))
    colours = colour_constraints(distance.indices, n)
    for compliant in (True, False):
        native, reference = DistanceSweep(library, distance, colours, n), DistanceColourSweep(distance, colours, n)
        x, y = x0.copy(), x0.copy()
        lams, ref_lams = native.new_multipliers(), [np.zeros(len(c)) for c in colours]
        for _ in range(3):
            native.sweep(x, dt, lams, compliant)
            reference.sweep(y, dt, ref_lams, compliant)
        label = "distance sweep" + ("" if compliant else " (hard)")
        if np.array_equal(x, x0):
            return f"{label} moved nothing"
        problem = (_differs(label, x, y, 1.0)
                   or _differs(label + " multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                               max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
        if problem:
            return problem
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    colours = colour_constraints(bending.indices, n)
    native, reference = BendingSweep(library, bending, colours, n), BendingColourSweep(bending, colours, n)
    x, y = x0.copy(), x0.copy()
    lams, ref_lams = native.new_multipliers(), [np.zeros((len(c), 3)) for c in colours]
    for _ in range(3):
        native.sweep(x, dt, lams)
        reference.sweep(y, dt, ref_lams, True)
    if np.array_equal(x, x0):
        return "bending sweep moved nothing"
    problem = (_differs("bending sweep", x, y, 1.0)
               or _differs("bending sweep multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                           max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
    if problem:
        return problem
    twin = PinTethers(model, 0.01)
    native = Tethers(library, twin, n)
    stretched = x0 * 1.1  # every particle pulled away from the pins, past its limit
    x, y = stretched.copy(), stretched.copy()
    native.apply(x, passes=8)
    twin.apply(y, passes=8)
    if np.array_equal(x, stretched):
        return "pin tethers moved nothing"
    problem = _differs("pin tethers", x, y, 1.0)
    if problem:
        return problem
    return ""


def run_family(library, family: str) -> str:
    """'' when every test of ``family`` (a key of FAMILIES) passes on ``library``, else the first difference found."""
    for test in FAMILIES[family]:
        problem = test(library)
        if problem:
            return problem
    return ""


def run_all(library) -> str:
    """The core test and every family's, in order: '' or the first difference found (``tools``, tests)."""
    return run(library) or next((p for p in (run_family(library, f) for f in FAMILIES) if p), "")


# ------------------------------------------------------------------------------------------------------- solids


def tet_block(cells: int = 3, seed: int = 2, jiggle: float = 0.08, poisson_ratio: float = 0.4):
    """A cube of cells^3 Kuhn cells (6 tets each, side 1 m) with one pinned corner, and jiggled positions:
    (TetStrainConstraints (E 1e5 Pa, ``poisson_ratio``), positions (n, 3) C-contiguous, x_prev (n, 3), rng)."""
    from ..constraints import TetStrainConstraints
    from ..material import lame_parameters

    k = cells + 1
    grid = np.stack(np.meshgrid(*(np.arange(k),) * 3, indexing="ij"), -1).reshape(-1, 3).astype(float) / cells
    corner = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)])
    kuhn = np.array([(0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7)])
    base = np.stack(np.meshgrid(*(np.arange(cells),) * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    ids = ((base + corner[None]) * [k * k, k, 1]).sum(-1)  # (cells^3, 8) particle of each cell corner
    tets = ids[:, kuhn].reshape(-1, 4)
    inv_mass = np.full(len(grid), float(len(grid)))
    inv_mass[0] = 0.0
    mu, lam = lame_parameters(1.0e5, poisson_ratio)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(grid + rng.normal(scale=jiggle, size=grid.shape))
    x_prev = np.ascontiguousarray(grid + rng.normal(scale=jiggle, size=grid.shape))
    return TetStrainConstraints.from_model(grid, tets, inv_mass, mu, lam), x, x_prev, rng


def run_solids(library, cells: int = 3) -> str:
    """'' when the tet-strain sweeps (forward, reversed, symmetric; with internal damping) match
    ``TetStrainColourSweep`` and the Jacobi sweep matches the NumPy one (``position_based._Jacobi``) on a jiggled
    block, else the first difference found."""
    from ..colouring import colour_constraints
    from ..constraints.tet_strain import TetStrainColourSweep
    from ..position_based import _Jacobi
    from .kernels import TetStrainJacobi, TetStrainSweep

    tets, x0, x_prev, _ = tet_block(cells)
    n, dt = len(x0), 1.0 / 720.0
    colours = [c for c in colour_constraints(tets.indices, n) if len(c) >= 2]  # as native_sweep needs
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    native.set_damping(2.4, x_prev)
    reference.set_damping(2.4, x_prev)
    x, y = x0.copy(), x0.copy()
    lams, ref_lams = native.new_multipliers(), [np.zeros((len(c), 2)) for c in colours]
    for reverse in (False, True):
        native.sweep(x, dt, lams, reverse=reverse)
        reference.sweep(y, dt, ref_lams, reverse=reverse)
    native.symmetric_sweep(x, dt, lams)
    reference.symmetric_sweep(y, dt, ref_lams)
    if np.array_equal(x, x0):
        return "tet-strain sweep moved nothing"
    found = (_differs("tet-strain sweep", x, y, 1.0)
             or _differs("tet-strain sweep multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                         max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
    if found:
        return found
    # The Jacobi sweep (a Gauss-Seidel sweep's tail, XPBD's Jacobi scheme), with the set's own damping.
    tets.set_damping(2.4, x_prev)
    jacobi, reference_jacobi = TetStrainJacobi(library, tets, n), _Jacobi(tets, n)
    lam, ref_lam = np.zeros((len(tets), 2)), np.zeros((len(tets), 2))
    x, y = x0.copy(), x0.copy()
    for _ in range(2):
        jacobi.jacobi(x, dt, lam, 1.0)
        reference_jacobi.numpy_sweep(y, tets.alpha(dt), ref_lam, 1.0, False)
    tets.set_damping(0.0)
    if np.array_equal(x, x0):
        return "tet-strain Jacobi sweep moved nothing"
    return (_differs("tet-strain Jacobi sweep", x, y, 1.0)
            or _differs("tet-strain Jacobi multipliers", lam, ref_lam, max(1e-300, float(np.max(np.abs(ref_lam))))))


def contact_scene(n: int = 9, seed: int = 2, moving: bool = True, friction: float = 0.3, thickness: float = 0.002):
    """A cloth (n x n, 2 m, two pins) falling through a sphere onto a ground plane, both moving (when ``moving``)
    and with ``friction``: (model, x (n^2, 3), v (n^2, 3), colliders at their end pose with their start poses).
    The shared scene of the contact kernels' self-test and tests."""
    from ..builder import build_model, grid_cloth
    from ..collision.colliders.shapes import GroundPlane, Sphere

    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=True)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    centre = vertices.mean(axis=0) + np.array([0.0, 0.0, -0.6])
    x = np.ascontiguousarray(vertices + rng.normal(scale=0.003, size=vertices.shape))
    v = np.ascontiguousarray(rng.normal(scale=0.2, size=vertices.shape) + np.array([0.0, 0.0, -0.5]))
    ground_z = float(vertices[:, 2].min()) - 0.004
    sphere = Sphere(centre, 0.6, thickness=thickness, friction=friction)
    ground = GroundPlane(np.array([0.0, 0.0, ground_z]), np.array([0.002, 0.0, 1.0]), thickness=thickness,
                         friction=friction)
    if moving:
        sphere = sphere.moving_from(Sphere(centre - np.array([0.003, 0.002, 0.006]), 0.598, thickness=thickness,
                                           friction=friction))
        ground = ground.moving_from(GroundPlane(np.array([0.0, 0.0, ground_z - 0.003]), np.array([0.0, 0.001, 1.0]),
                                                thickness=thickness, friction=friction))
    return model, x, v, [sphere, ground]


def deep_scene(friction: float = 0.3, moving: bool = False):
    """``contact_scene`` (thickness 5 mm) with every vertex 2 to 12 mm inside the sphere along its radial direction
    (deeper with the index) and its step's start 1 mm above: faces that start inside the sphere, for the face push
    (``faces.resolve_sphere_faces``, ``collider_contacts.resolve_deep_faces``). Returns (model, x, x_prev,
    colliders)."""
    model, x, _, colliders = contact_scene(moving=moving, thickness=0.005, friction=friction)
    sphere = colliders[0]
    rel = x - sphere.center
    r = np.linalg.norm(rel, axis=1)
    sink = np.linspace(0.002, 0.012, len(x))
    x = np.ascontiguousarray(sphere.center + rel / r[:, None] * np.minimum(r, sphere.radius - sink)[:, None])
    x_prev = np.ascontiguousarray(x + np.array([0.0, 0.0, 0.001]))
    return model, x, x_prev, colliders


def contact_step_numpy(model, x, v, colliders, pad2, dt: float, gravity, damping_factor: float) -> None:
    """The twins of ``kernels.AnalyticContacts`` in a position-based step's order, without the constraint sweeps:
    predict, find the contacts, project, friction, the end-of-step resolve, velocity; in place on x and v."""
    from ..collision.response.collider_contacts import ContactConstraints, resolve_collider_contacts
    from ..collision.response.contact_set import find_contacts

    free = (model.inv_mass > 0.0)[:, None]
    v += dt * gravity * free
    x_prev = x.copy()
    x += dt * v
    found = find_contacts(x, x_prev, model.inv_mass, colliders, pad2, model.triangle_indices)
    contacts = ContactConstraints(found) if found else None
    if contacts:
        contacts.project(x)
        contacts.project(x)
        contacts.apply_friction(x, x_prev)
    resolve_collider_contacts(x, x_prev, model.inv_mass, model.triangle_indices, colliders, pad2)
    v[:] = (x - x_prev) / dt
    v *= damping_factor


def contact_step_native(binding, x, v, colliders, dt: float, gravity, damping_factor: float) -> int:
    """``contact_step_numpy`` with ``binding`` (a ``kernels.AnalyticContacts``); returns the sweeps of ``finish``
    (more than 1: the NumPy twin must finish, which this does not)."""
    binding.pose(colliders)
    x_prev = binding.predict(x, v, gravity, dt)
    if binding.find(x, x_prev):
        binding.project(x)
        binding.project(x)
        binding.friction(x, x_prev)
    sweeps = binding.finish(x, x_prev)
    binding.velocity(x, v, dt, damping_factor)
    return sweeps


def _contacts(library) -> str:
    """The contact kernels over a few steps of ``contact_scene`` against their twins, with the sphere pads and without
    (then the faces dip into the sphere and the face push acts), then ``_deep_faces``."""
    from ..collision.response.faces import sphere_pads
    from .kernels import AnalyticContacts

    model, x0, v0, colliders = contact_scene()
    gravity, dt, factor = np.array([0.0, 0.0, -9.81]), 1.0 / 720.0, float(np.exp(-0.1 / 720.0))
    for pad2 in (sphere_pads(model.rest_positions, model.triangle_indices), None):
        binding = AnalyticContacts(library, model.inv_mass, pad2, model.triangle_indices)
        x, v, y, u = x0.copy(), v0.copy(), x0.copy(), v0.copy()
        for _ in range(3):
            if contact_step_native(binding, x, v, colliders, dt, gravity, factor) != 1:
                return "contact scene: the step should take one sweep"
            contact_step_numpy(model, y, u, colliders, pad2, dt, gravity, factor)
        if not binding.count:
            return "contact scene found no contacts"
        problem = _differs("contacts", x, y, 1.0) or _differs("contact velocities", v, u, 1.0)
        if problem:
            return problem
    return _deep_faces(library)


def _deep_faces(library) -> str:
    """The face push with the contact radius lowered (``AnalyticContacts.deep_faces``) on faces starting inside the
    sphere against ``collider_contacts.resolve_deep_faces``, and ``KeepOut`` (``run`` and
    ``bind_touched``) against ``SelfCollision._keep_out_of_colliders`` on the same particles."""
    from types import SimpleNamespace

    from ..collision.response.collider_contacts import resolve_deep_faces
    from ..collision.response.faces import sphere_pads
    from ..collision.response.impact_zones import COLLIDER_SLACK
    from ..collision.response.self_contact import CONTACT_MASS_FACTOR, SelfCollision
    from .kernels import AnalyticContacts, KeepOut

    model, x, x_prev, colliders = deep_scene()
    binding = AnalyticContacts(library, model.inv_mass, None, model.triangle_indices)
    binding.pose(colliders)
    y, z = x.copy(), x.copy()
    found = binding.deep_faces(y, x_prev, 0.002)
    if found != resolve_deep_faces(z, x_prev, model.inv_mass, model.triangle_indices, colliders, 0.002) or not found:
        return "deep faces: the contacts found differ (or none)"
    problem = _differs("deep faces", y, z, 1.0)
    if problem:
        return problem
    pad2 = sphere_pads(model.rest_positions, model.triangle_indices)
    moved = np.arange(0, len(x), 2, dtype=np.int64)
    inv_mass, heavy = model.inv_mass.copy(), np.zeros(len(x), bool)
    keep_out = KeepOut(library, len(x), pad2)
    keep_out.pose(colliders)
    y = x.copy()
    keep_out.run(y, moved, inv_mass, heavy, COLLIDER_SLACK * 0.002, CONTACT_MASS_FACTOR)
    twin = SimpleNamespace(native_pass=None, inv_mass=model.inv_mass.copy(), _heavy=np.zeros(len(x), bool), pad2=pad2,
                           thickness=0.002)
    z = x.copy()
    SelfCollision._keep_out_of_colliders(twin, z, moved, colliders)
    if not heavy.any() or not np.array_equal(heavy, twin._heavy):
        return "keep out: the heavy particles differ (or none)"
    problem = _differs("keep out", y, z, 1.0) or _differs("keep out masses", inv_mass, twin.inv_mass, 1.0)
    if problem:
        return problem
    touched = np.zeros(len(x), bool)
    touched[moved] = True
    inv_mass, heavy, w = model.inv_mass.copy(), np.zeros(len(x), bool), x.copy()
    keep_out.bind_touched(w, touched, inv_mass, heavy, COLLIDER_SLACK * 0.002, CONTACT_MASS_FACTOR)()
    if not np.array_equal(heavy, twin._heavy):
        return "keep out on the touched mask: the heavy particles differ"
    return _differs("keep out on the touched mask", w, z, 1.0) or _differs(
        "keep out masses on the touched mask", inv_mass, twin.inv_mass, 1.0)


def self_pair_scene(n: int = 9, seed: int = 3, thickness: float = 0.05, fold: float = 0.6):
    """A small cloth folded over itself with noise, for the self-collision broad phase: (model, x, SelfCollision built
    for NumPy). Both quad splits are collision triangles, as the add-on's quads give."""
    from ..builder import build_model, grid_cloth, grid_quads
    from ..collision.response.self_contact import SelfCollision

    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=False)
    model = build_model(vertices, edges, triangles, total_mass=1.0, quads=grid_quads(n))
    rng = np.random.default_rng(seed)
    x = vertices.copy()
    # Fold the sheet at x = 0 back over itself, a little above its own lower half, and jiggle it.
    right = x[:, 0] > 0.0
    x[right, 0] = -x[right, 0]
    x[right, 2] += fold * x[right, 0] ** 2 + thickness
    x = np.ascontiguousarray(x + rng.normal(scale=0.02, size=x.shape))
    return model, x, SelfCollision(model, thickness, compute="NUMPY")


def self_pairs(library, seed: int = 3, n: int = 9) -> str:
    """The native self-collision broad phase (``self_kernels.SelfPairQuery``) against ``SelfBroadPhase._query``: the
    same pair sets, and distances within SELF_TEST_TOLERANCE of the cloth's size (bit for bit on x86-64 unless a
    batch of the twin lies all on triangle borders: ``src/self_collision.c`` says why); and the builds split over
    three threads, one after the other and both at once (``SelfPairQuery.pairs``), equal to one thread's, bit for
    bit."""
    from .self_kernels import SelfPairQuery

    model, x, sc = self_pair_scene(n=n, seed=seed)
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    rng = np.random.default_rng(seed)
    skin = rng.uniform(0.0, 0.1, len(x))
    from ..collision.broad_phase.self_pairs import _row_max

    skins = (skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges))
    # The same builds split over three threads in blocks of a few elements (prepare, then queries at once).
    split = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x),
                          threads=3, block=8, minimum=0)
    for reach in (sc.thickness, 0.0):
        (v, t, dv), (a, b, de) = sc._query(x, reach, skins)
        native_vt = query.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt)
        native_ee = query.edge_edge(x, reach, skins[2], sc.excluded_ee)
        threaded = (*split.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt),
                    *split.edge_edge(x, reach, skins[2], sc.excluded_ee))
        if not all(np.array_equal(p, q) for p, q in zip((*native_vt, *native_ee), threaded)):
            return "self-collision pairs built on three threads differ from one thread's"
        both = split.pairs(x, reach, *skins[:2], sc.excluded_vt, skins[2], sc.excluded_ee)
        if not all(np.array_equal(p, q) for p, q in zip((*both[0], *both[1]), threaded)):
            return "self-collision pairs of both builds at once differ from the builds one after the other"
        for label, (i, j, d), (ni, nj, nd), count in (("vertex-triangle", (v, t, dv), native_vt, len(sc.triangles)),
                                                       ("edge-edge", (a, b, de), native_ee, len(sc.edges))):
            key = i * count + j
            order = np.argsort(key)
            if len(i) == 0:
                return f"self-collision {label} scene found no pairs"
            if not np.array_equal(key[order], ni * count + nj):
                return f"self-collision {label} pairs differ from NumPy ({len(ni)} against {len(i)})"
            problem = _differs(f"self-collision {label} distances", nd, d[order], 2.0)
            if problem:
                return problem
    return ""


def _substeps(library) -> str:
    """The cloth substep kernels (src/substep.c, src/fields.c): the bending Jacobi tail, the air over a few steps (one
    re-measure) and the force fields with the air (``_fields``).
    softsim_cloth_substeps only calls kernels tested here (a solver cannot be built while the library loads: its
    frames are held equal to NumPy by tests/test_native_substeps.py; with still mesh colliders, src/mesh_frame.c
    composes the kernels ``mesh_closest`` tests, and tests/test_native_mesh_frame.py holds those frames equal)."""
    from ..config import SolverConfig
    from ..constraints import BendingConstraints
    from ..forces.loads import BodyLoads
    from ..position_based import PositionBasedSolver, _Jacobi
    from .kernels import AirLoads, BendingJacobi

    model, x0, rng = _cloth()
    n, dt = len(x0), 1.0 / 240.0
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    tail = bending.subset(np.arange(0, len(bending), 2))
    reference = PositionBasedSolver(model, SolverConfig(solver="XPBD", compute="NUMPY"))
    x, y = x0.copy(), x0.copy()
    lam, ref_lam = np.zeros((len(tail), 3)), np.zeros((len(tail), 3))
    native, jacobi = BendingJacobi(library, tail, n), _Jacobi(tail, n)
    for _ in range(3):
        native.jacobi(x, dt, lam, reference.config.jacobi_relaxation)
        reference._jacobi(jacobi, y, dt, ref_lam, False)
    problem = _differs("bending tail", x, y, 1.0) or _differs("bending tail multipliers", lam, ref_lam, 1e-3)
    if problem:
        return problem
    config = SolverConfig(solver="XPBD", air_drag=1.0)
    numpy_loads, native_loads = BodyLoads(model, config), BodyLoads(model, config)
    native_loads.native = AirLoads(library, native_loads.air, np.ascontiguousarray(model.inv_mass), native_loads.gravity)
    v = rng.normal(size=x0.shape)
    u = v.copy()
    for _ in range(3):
        numpy_loads.apply(x0, v, 0.003, [], 0.0)
        native_loads.apply(x0, u, 0.003, [], 0.0)
    problem = _differs("air", u, v, 1.0)
    if problem:
        return problem
    return _fields(library, model, x0, rng, numpy_loads, native_loads)


def _fields(library, model, x0, rng, numpy_loads, native_loads) -> str:
    """src/fields.c: BodyLoads.apply with a field of every kind (turbulence, noise, limits; no pow or acos, whose
    libm may differ from NumPy's by an ulp) and the air, over two steps."""
    from ..forces.fields import ForceField
    from .kernels import FieldLoads

    native_loads.fields_native = FieldLoads(library, np.ascontiguousarray(model.inv_mass),
                                            np.ascontiguousarray(native_loads.gravity, np.float64), native_loads.native)
    turned = np.eye(4)
    turned[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]
    turned[:3, 3] = [0.1, 0.2, 0.3]
    fields = [ForceField("WIND", matrix=turned, strength=2.0, noise=1.0, seed=3, z_direction="POSITIVE"),
              ForceField("FORCE", shape="LINE", falloff_type="TUBE", use_max_distance=True, distance_max=0.8,
                         use_radial_max=True, radial_max=0.9, flow=0.5),
              ForceField("VORTEX", matrix=turned, shape="PLANE", strength=0.7, noise=0.4),
              ForceField("VORTEX", strength=0.3),
              ForceField("TURBULENCE", strength=3.0, size=0.5), ForceField("DRAG", strength=0.4, linear_drag=0.6),
              ForceField("HARMONIC", strength=2.0, rest_length=0.3, harmonic_damping=0.5,
                         use_min_distance=True, distance_min=0.2)]
    v = rng.normal(size=x0.shape)
    u = v.copy()
    for step in range(2):
        numpy_loads.apply(x0, v, 0.003, fields, 0.2 + 0.003 * step)
        native_loads.apply(x0, u, 0.003, fields, 0.2 + 0.003 * step)
    return _differs("force fields", u, v, 1.0)


# ------------------------------------------------------------------------------------------------- mesh colliders

def mesh_closest(library, subdivisions: int = 1, seed: int = 5) -> str:
    """The mesh collider's queries (src/mesh_collider.c, ``mesh_kernels.MeshClosest``) against their twins on an ico
    sphere: ``MeshCollider._closest`` for points around it (the same nearest triangles, the same weights, points and
    distances, to round-off: the twin's all-border batches sum in another order) and ``face_pairs`` of a cloth over
    it (the same pairs and distances)."""
    from ..builder import ico_sphere
    from ..collision.colliders.mesh_collider import MeshCollider
    from .mesh_kernels import MeshClosest

    vertices, triangles = ico_sphere(subdivisions, 0.5)
    x = np.random.default_rng(seed).uniform(-0.6, 0.6, size=(400, 3))
    reference, native = MeshCollider(vertices, triangles, 0.01), MeshCollider(vertices, triangles, 0.01)
    native.shared.native = MeshClosest(library, native.triangles, len(native.vertices))
    want, got = reference._closest(x, 0.05), native._closest(x, 0.05)
    if len(want[0]) == 0:
        return "mesh closest: no point near the box"
    if len(got[0]) != len(want[0]) or not (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])):
        return "mesh closest: nearest triangles differ from NumPy"
    for name, a, b in zip(("weights", "points", "distances"), got[2:5], want[2:5]):
        problem = _differs("mesh closest " + name, a, b, 1.0)
        if problem:
            return problem
    # The face pairs of a cloth draped over the sphere's cap (its corners and sharp edges against the cloth).
    from ..builder import grid_cloth

    cloth, _, cloth_triangles = grid_cloth(9, 0.6, height=0.5)
    cloth[:, 2] -= 2.0 * (cloth[:, 0] ** 2 + cloth[:, 1] ** 2)
    want, got = reference.face_pairs(cloth, cloth_triangles), native.face_pairs(cloth, cloth_triangles)
    if not len(want.corner_distance) or not len(want.edge_distance):
        return "mesh face pairs: none near the sphere"
    for a, b in zip(got.corner_triangle + got.edge_edge, want.corner_triangle + want.edge_edge):
        if not np.array_equal(a, b):
            return "mesh face pairs differ from NumPy"
    problem = (_differs("mesh corner pairs", got.corner_distance, want.corner_distance, 1.0)
               or _differs("mesh edge pairs", got.edge_distance, want.edge_distance, 1.0))
    return (problem or mesh_moving(library, vertices, triangles, x) or pose_normals(library, vertices, triangles)
            or mesh_keep_out(library, native, x))


def mesh_keep_out(library, collider, x) -> str:
    """Self-collision's keep-out and resting test over a mesh collider (``kernels.KeepOut``'s mesh rows,
    src/contact.c) against their twins (``SelfCollision._keep_out_of_colliders``' loop, ``MeshCollider.within``) on
    the collider with its native queries and the points x (n, 3) put within a few mm of its surface: the same bits."""
    from types import SimpleNamespace

    from ..collision.response.self_contact import CONTACT_BAND, CONTACT_MASS_FACTOR, SelfCollision
    from .kernels import KeepOut

    radius = np.linalg.norm(collider.vertices, axis=1).max()
    rng = np.random.default_rng(4)
    x = np.ascontiguousarray(x / np.linalg.norm(x, axis=1)[:, None] * rng.uniform(radius - 0.03, radius + 0.02,
                                                                                   len(x))[:, None])
    inv_mass = np.where(rng.random(len(x)) < 0.1, 0.0, 1.0)
    heavy = np.zeros(len(x), bool)
    keep_out = KeepOut(library, len(x))
    keep_out.pose([collider])
    want = collider.within(x, CONTACT_BAND, None)
    if not np.array_equal(keep_out.resting(x, CONTACT_BAND), want) or not 0 < want.sum() < len(x):
        return "keep-out: the resting particles over a mesh collider differ from NumPy"
    moved = np.flatnonzero(rng.random(len(x)) < 0.7)
    y, z = x.copy(), x.copy()
    masses, flags = (inv_mass.copy(), inv_mass.copy()), (heavy.copy(), heavy.copy())
    if keep_out.run(y, moved, masses[0], flags[0], 0.0025, CONTACT_MASS_FACTOR) == 0:
        return "keep-out over a mesh collider: moved nothing back"
    twin = SimpleNamespace(native_pass=None, inv_mass=masses[1], _heavy=flags[1], pad2=None, thickness=0.01)
    SelfCollision._keep_out_of_colliders(twin, z, moved, [collider])
    if not np.array_equal(flags[0], flags[1]):
        return "keep-out over a mesh collider: the heavy flags differ from NumPy"
    return (_differs("keep-out over a mesh collider", y, z, 1.0)
            or _differs("keep-out inverse masses over a mesh collider", masses[0], masses[1], 1.0))


def pose_normals(library, vertices, triangles) -> str:
    """A moving collider's pose normals (src/pose_normals.c, ``pose_kernels.PoseNormals``) against their twin
    (``mesh_collider.pose_normals``) over a few poses of the collider (vertices, triangles) deforming: the same bits."""
    from ..collision.colliders.mesh_collider import MeshCollider, pose_normals as twin
    from .pose_kernels import PoseNormals

    collider = MeshCollider(vertices, triangles)
    side_edge = np.ascontiguousarray(collider.shared.side_edge, np.int64)
    bend = np.random.default_rng(2).normal(scale=0.05, size=vertices.shape)
    poses = collider.vertices[None] + np.linspace(0.0, 1.0, 4)[:, None, None] * bend[None]
    for name, got, want in zip(("face", "vertex", "side"), PoseNormals(library)(poses, collider.triangles, side_edge),
                               twin(poses, collider.triangles, side_edge)):
        if not np.array_equal(got.view(np.int64), want.view(np.int64)):
            return f"pose normals: the {name} normals differ from NumPy"
    return ""


def mesh_moving(library, vertices, triangles, x) -> str:
    """A moving collider's contact planes and motion in one call each (src/mesh_moving.c, ``MeshClosest.contact_rows``
    and ``motion``) against their twins (``MeshCollider._contact_rows``, ``motion``) on the collider (vertices,
    triangles) moving 3 cm and turning, at the points x (n, 3) that moved a few centimetres: the same rows, the same
    planes and motion to round-off."""
    from ..collision.colliders.mesh_collider import MeshCollider
    from .mesh_kernels import MeshClosest

    c, s = np.cos(0.05), np.sin(0.05)
    end = vertices @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T + [0.03, 0.0, 0.01]
    reference, native = (MeshCollider(end, triangles, 0.01).moving_from(MeshCollider(vertices, triangles, 0.01))
                         for _ in range(2))
    native.shared.native = MeshClosest(library, native.triangles, len(native.vertices))
    reference, native = reference.over(0.25, 0.5), native.over(0.25, 0.5)
    x_prev = x + np.random.default_rng(1).normal(scale=0.02, size=x.shape)
    want, got = reference._contact_rows(x, x_prev, 0.05, None), native._contact_rows(x, x_prev, 0.05, None)
    if len(want[0]) == 0:
        return "mesh contact rows: no point near the sphere"
    if not np.array_equal(got[0], want[0]):
        return "mesh contact rows: the rows differ from NumPy"
    for name, a, b in zip(("offsets", "normals", "distances"), got[1:], want[1:]):
        problem = _differs("mesh contact rows " + name, a, b, 1.0)
        if problem:
            return problem
    return _differs("mesh motion", native.motion(x), reference.motion(x), 1.0)
def self_list_scene(seed: int = 3, n: int = 9):
    """``self_pair_scene`` with a Verlet list built at its positions and a step's motion: (x, SelfCollision for NumPy,
    motion (n,), moved (n,)), motion and moved random per particle [m]."""
    _, x, sc = self_pair_scene(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    sc._build(x, rng.uniform(0.0, 0.1, len(x)))
    x = np.ascontiguousarray(x + rng.normal(scale=0.01, size=x.shape))
    return x, sc, rng.uniform(0.0, 0.02, len(x)), rng.uniform(0.0, 0.03, len(x))


def self_response(library, n: int = 9) -> str:
    """Self-collision's per-call kernels (``self_kernels.SelfCallKernels``) against their twins: the boxes of
    ``SelfBroadPhase._boxes`` and the filter of ``SelfBroadPhase._candidates`` bit for bit, the contact stencils of
    ``self_pairs._Stencils`` within SELF_TEST_TOLERANCE (bit for bit on x86-64), the fail-safe's witnesses
    (``ImpactZones._witnesses``) as the same pairs, and whether the list holds (``SelfBroadPhase._list_holds``)."""
    from .self_kernels import SelfCallKernels

    x, sc, motion, moved = self_list_scene(n=n)
    check = SelfCallKernels(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    lo = np.ascontiguousarray(x.T)
    for got, want in zip(check.boxes(lo, lo + 0.01), sc._boxes(lo, lo + 0.01)):
        if not np.array_equal(got, want):
            return "self-collision boxes differ from NumPy"
    a, b, reach_a, reach_b = sc._near_pairs(x, motion, moved)
    lst = sc._list
    pos, reach = check.list_check(x, motion, moved, lst["vt"], lst["ee"], lst["dist"], sc.thickness)
    if len(a) == 0 or len(b) == 0:
        return "self-collision list check scene kept no pairs"
    k = len(lst["vt"][0])
    if not (np.array_equal(pos, np.concatenate([a, k + b])) and np.array_equal(reach, np.concatenate([reach_a, reach_b]))):
        return f"self-collision list check differs from NumPy ({len(pos)} pairs against {len(a) + len(b)})"
    from ..collision.broad_phase.self_pairs import _Stencils

    for rows in (slice(None), slice(0, 1)):
        vt, ee = (lst["vt"][0][rows], lst["vt"][1][rows]), (lst["ee"][0][rows], lst["ee"][1][rows])
        native, numpy = check.stencils(x, vt, ee), _Stencils(x, vt, ee, sc.triangles, sc.edges)
        for name in ("idx", "coef", "r", "n", "dist", "plane", "ok", "interior"):
            problem = _differs(f"self-collision stencils ({name})", getattr(native, name).astype(float),
                               getattr(numpy, name).astype(float), 1.0)
            if problem:
                return problem
    x_start = np.ascontiguousarray(x - np.random.default_rng(4).normal(scale=0.1, size=x.shape))
    step = x - x_start
    step -= step.mean(axis=0)
    motion = np.sqrt(np.einsum("ij,ij->i", step, step))
    back = x - step
    lo, hi = np.ascontiguousarray(np.minimum(x, back).T), np.ascontiguousarray(np.maximum(x, back).T)
    moved, slack = sc._moved(x), 1e-12 + 1e-9 * float(motion.max())
    v, t, e1, e2 = sc._witnesses(x, x_start, lo, hi, motion, moved, slack)
    pos = check.witnesses(x, x_start, lo, hi, motion, moved + motion, lst["vt"], lst["ee"], lst["dist"], slack)
    if len(v) == 0 or len(e1) == 0:
        return "self-collision witness scene kept no pairs"
    a, b = pos[pos < k], pos[pos >= k] - k
    if not (np.array_equal(lst["vt"][0][a], v) and np.array_equal(lst["vt"][1][a], t)
            and np.array_equal(lst["ee"][0][b], e1) and np.array_equal(lst["ee"][1][b], e2)):
        return f"self-collision witnesses differ from NumPy ({len(pos)} against {len(v) + len(e1)})"
    for scale in (0.1, 1.0, 10.0):
        if check.list_holds(moved * scale, motion, lst["skins"]) != sc._list_holds(moved * scale, motion):
            return "self-collision list check (holds) differs from NumPy"
    return ""
def self_pass(library, n: int = 9) -> str:
    """Self-collision's response passes (``self_kernels.SelfPass``) against the pass loop of
    ``SelfCollision._respond`` (positions and start positions within SELF_TEST_TOLERANCE, bit for bit on x86-64), and a
    skin growth (``SelfPairQuery.vertex_triangle_grow`` / ``edge_edge_grow``) against ``SelfBroadPhase._grow``: the
    same pairs added, distances within SELF_TEST_TOLERANCE."""
    import copy

    from .self_kernels import SelfPairQuery, SelfPass

    x, sc, _, _ = self_list_scene(n=n)
    x_prev = np.ascontiguousarray(x + np.random.default_rng(5).normal(scale=0.01, size=x.shape))
    twin = copy.copy(sc)
    twin._list = copy.deepcopy(sc._list)
    native = copy.copy(sc)
    native._list = copy.deepcopy(sc._list)
    native.native_pass = SelfPass(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    y, y_prev, z, z_prev = x.copy(), x_prev.copy(), x.copy(), x_prev.copy()
    if native.resolve(y, y_prev) != twin.resolve(z, z_prev):
        return "self-collision passes corrected other pairs than NumPy"
    if np.array_equal(y, x):
        return "self-collision pass scene moved nothing"
    problem = _differs("self-collision passes", y, z, 1.0) or _differs("self-collision passes (x_prev)", y_prev, z_prev, 1.0)
    if problem:
        return problem
    # One vertex outruns its own skin but not those of its triangles and edges: a growth of one element.
    s_v, s_t, s_e = sc._list["skins"]
    lowest = np.full(len(x), np.inf)
    np.minimum.at(lowest, sc.triangles.ravel(), np.repeat(s_t, 3))
    np.minimum.at(lowest, sc.edges.ravel(), np.repeat(s_e, 2))
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    before = len(sc._list["dist"])
    for v in np.argsort(s_v - lowest)[:16]:  # the first of these vertices whose growth lists new pairs
        motion, moved = np.zeros(len(x)), np.zeros(len(x))
        moved[v] = s_v[v] + 0.9 * (lowest[v] - s_v[v])
        twin, native = copy.copy(sc), copy.copy(sc)
        twin._list, native._list = copy.deepcopy(sc._list), copy.deepcopy(sc._list)
        native.native_pairs = query
        if not (native._grow(moved, motion) and twin._grow(moved, motion)):
            return "self-collision skin growth scene did not grow"
        got, want = native._list, twin._list
        if len(want["dist"]) > before:
            break
    else:
        return "self-collision skin growth scene found no pairs"
    for a, b in zip(got["keys"] + got["vt"] + got["ee"], want["keys"] + want["vt"] + want["ee"]):
        if not np.array_equal(a, b):
            return "self-collision skin growth differs from NumPy"
    return _differs("self-collision skin growth distances", got["dist"], want["dist"], 1.0)


def self_select(library, n: int = 9) -> str:
    """Self-collision's fused per-call selection (``self_kernels.SelfSelect``) against its twins: the candidates of
    ``SelfBroadPhase._candidates`` (the same pairs, reaches bit for bit) and the fail-safe's witnesses, swept boxes and
    bounds of ``ImpactZones._new_crossings`` / ``_witnesses`` (the same pairs, boxes and bounds bit for bit)."""
    import copy

    from .self_kernels import SelfSelect

    x, sc, _, _ = self_list_scene(n=n)
    x_prev = np.ascontiguousarray(x - np.random.default_rng(6).normal(scale=0.002, size=x.shape))
    select = SelfSelect(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    twin, native = copy.copy(sc), copy.copy(sc)
    twin._list, native._list = copy.deepcopy(sc._list), copy.deepcopy(sc._list)
    native.native_select = select
    got, want = native._candidates(x, x_prev), twin._candidates(x, x_prev)
    if len(want[2]) == 0:
        return "self-collision selection scene kept no pairs"
    for a, b in zip((*got[0], *got[1], got[2]), (*want[0], *want[1], want[2])):
        if a.shape != b.shape or not np.array_equal(a, b):
            return "self-collision selection differs from NumPy"
    lst = twin._list
    if select.witnesses(x, x_prev, lst) is None or not np.array_equal(select.moved, twin._moved(x)):
        return "self-collision fail-safe: the list's motion or hold differs from NumPy"
    # A larger step (the list's hold is the caller's business then: the motions given).
    x_prev = np.ascontiguousarray(x - np.random.default_rng(4).normal(scale=0.1, size=x.shape))
    step = x - x_prev
    step -= step.mean(axis=0)
    motion = np.sqrt(np.einsum("ij,ij->i", step, step))
    moved = twin._moved(x)
    select.motion[:], select.moved[:] = motion, moved
    pos = select.witnesses(x, x_prev, lst, motion_given=True)
    back = x - step
    lo, hi = np.ascontiguousarray(np.minimum(x, back).T), np.ascontiguousarray(np.maximum(x, back).T)
    if not (np.array_equal(select.lo, lo) and np.array_equal(select.hi, hi)
            and np.array_equal(select.bound, moved + motion)):
        return "self-collision fail-safe boxes differ from NumPy"
    v, t, e1, e2 = twin._witnesses(x, x_prev, lo, hi, motion, moved, 1e-12 + 1e-9 * float(motion.max()))
    k = len(lst["vt"][0])
    a, b = pos[pos < k], pos[pos >= k] - k
    if len(v) == 0 or len(e1) == 0:
        return "self-collision witness scene kept no pairs"
    if not (np.array_equal(lst["vt"][0][a], v) and np.array_equal(lst["vt"][1][a], t)
            and np.array_equal(lst["ee"][0][b], e1) and np.array_equal(lst["ee"][1][b], e2)):
        return "self-collision fused witnesses differ from NumPy"
    return ""


def implicit(library) -> str:
    """The implicit solvers' kernels (src/implicit.c) on the small cloth: PD's local step and right-hand side scatter of
    its edge springs (a zero-length edge included) and curved hinges, with pins; the 3x3-block product on a matrix of
    the cloth's pattern, the assembly of blocks into such a pattern and conjugate gradients on an SPD one
    (src/block_cg.c); the rotation SVD of PD's tets and their targets (src/eigen3.c)."""
    import scipy.sparse as sp

    from ..energies import hinges_from_triangles
    from ..projective.constraints import EdgeSprings, HingeBending, project_unit_product
    from ..linalg.eigen3 import rotation_svd
    from .implicit_kernels import BlockAssembly, BlockMatrix, RotationSVD, SphereProjection, TetTargets

    model, x, rng = _cloth()
    x[model.edge_indices[0, 1]] = x[model.edge_indices[0, 0]]  # a spring of zero length: projected along its rest
    free, pinned = model.inv_mass > 0.0, model.inv_mass == 0.0
    hinges = hinges_from_triangles(model.triangle_indices)
    sets = (EdgeSprings(model.edge_indices, model.edge_rest_length, rng.uniform(1.0, 2.0, model.edge_count),
                        model.rest_positions),
            HingeBending(model.rest_positions, hinges, rng.uniform(1e-3, 2e-3, len(hinges))))
    for c in sets:
        A_free, A_pinned = c.A[:, free].tocsr(), c.A[:, pinned].tocsr()
        A_free_T = A_free.T.tocsr()
        z_pinned = A_pinned @ x[pinned]
        native = SphereProjection(library, A_free, A_free_T, *c.sphere_targets())
        q, length = native.project(np.ascontiguousarray(x[free]), z_pinned)
        ref_q, ref_energy = c.project(A_free @ x[free] + z_pinned, True)
        b = rng.normal(size=(A_free.shape[1], 3))
        label = f"PD local step ({type(c).__name__})"
        problem = (_differs(label, q, ref_q, 1.0) or _differs(label + " energy", np.array([c.energy_of(length)]),
                                                              np.array([ref_energy]), 1.0)
                   or _differs(label + " scatter", native.scatter(q, b), b + A_free_T @ ref_q, 1.0))
        if problem:
            return problem
    A = sp.bsr_matrix(sp.kron(sets[0].laplacian, np.ones((3, 3))) + sp.eye(3 * model.particle_count), blocksize=(3, 3))
    A.data[:] = rng.normal(size=A.data.shape)
    v = rng.normal(size=A.shape[1])
    problem = _differs("3x3-block product", BlockMatrix(library, A) @ v, A @ v, 1.0)
    if problem:
        return problem
    # The assembly of Hessian blocks into a block pattern (linalg.pattern.BlockPattern.assemble), duplicates summed.
    from ..linalg.pattern import BlockPattern

    e = model.edge_indices
    pattern = BlockPattern(np.concatenate([e[:, 0], e[:, 1], e[:, 0]]), np.concatenate([e[:, 0], e[:, 1], e[:, 1]]),
                           free)
    blocks = rng.normal(size=(pattern.entry_count, 3, 3))
    problem = _differs("block assembly", BlockAssembly(library, pattern)(blocks), pattern.assemble(blocks), 1.0)
    if problem:
        return problem
    # Conjugate gradients on an SPD matrix of that pattern (the product above with mass on the diagonal).
    from ..linalg.iterative import block_cg, inverse_3x3

    spd = sp.bsr_matrix(sp.kron(sets[0].laplacian, np.eye(3)) + sp.eye(3 * model.particle_count), blocksize=(3, 3))
    diagonal = (1.0 + sets[0].laplacian.diagonal())[:, None, None] * np.eye(3)
    D_inv = inverse_3x3(diagonal)
    got, want = BlockMatrix(library, spd).block_cg(D_inv, v, -v, 1e-8, 200), block_cg(spd, D_inv, v, -v, 1e-8, 200)
    problem = _differs("block conjugate gradients", got[0], want[0], 1.0)
    if problem or got[1:] != want[1:]:
        return problem or f"block conjugate gradients: {got[1:]} iterations and residual, NumPy {want[1:]}"
    # The rotation SVD of PD's tets: near-rotations, general and inverted matrices, one with a repeated eigenvalue.
    F = np.concatenate([np.eye(3) + 0.05 * rng.normal(size=(8, 3, 3)), rng.normal(size=(8, 3, 3)),
                        np.diag([2.0, 2.0, 1.0])[None]])
    F = np.ascontiguousarray(F.transpose(1, 2, 0))
    got, want = RotationSVD(library)(F), rotation_svd(F.copy())
    for name, a, b in zip("USV", got, want):
        problem = _differs(f"rotation SVD {name}", a, b, 1.0)
        if problem:
            return problem
    # PD's tet targets from those matrices (TetStrain.project's NumPy): the volume projection and the targets.
    w_strain, w_volume = rng.uniform(0.5, 2.0, F.shape[2]), rng.uniform(0.5, 2.0, F.shape[2])
    q, S, s = TetTargets(library, w_strain, w_volume)(F)
    s_want = project_unit_product(want[1].T).T
    q_want = np.einsum("dat,at,cat->dct", want[0], w_strain + w_volume * s_want, want[2])
    q_want = q_want.transpose(2, 1, 0).reshape(-1, 3)
    return _differs("tet volume projection", s, s_want, 1.0) or _differs("tet targets", q, q_want, 1.0)


def ipc(library) -> str:
    """NEWTON's IPC kernels (src/ipc_distance.c, src/ipc_ccd.c) on random pairs, every distance type among them, and
    a pair of parallel edges: the squared distances with their derivatives, the distances, CCD of random motions; the
    PSD projection of random symmetric matrices of each size a barrier hands it."""
    from ..collision.narrow_phase.ccd import edge_edge_ccd, point_triangle_ccd
    from ..collision.narrow_phase.primitives import (edge_edge_distance_squared, point_triangle_distance,
                                                     point_triangle_distance_squared, segment_distance)
    from ..energies.base import project_psd
    from .ipc_kernels import IPCKernels

    kernels = IPCKernels(library)
    rng = np.random.default_rng(7)
    points = [np.ascontiguousarray(rng.normal(size=(64, 3))) for _ in range(4)]
    points[3][0] = points[2][0] + (points[1][0] - points[0][0])  # parallel edges
    for label, native, twin in (("point-triangle", kernels.point_triangle, point_triangle_distance_squared),
                                ("edge-edge", kernels.edge_edge, edge_edge_distance_squared)):
        for name, a, b in zip(("distance", "gradient", "Hessian"), native(*points), twin(*points)):
            problem = _differs(f"{label} {name}", a, b, max(float(np.abs(b).max()), 1.0))
            if problem:
                return problem
    for label, native, twin in (("point-triangle distance", kernels.point_triangle_gap, point_triangle_distance),
                                ("edge-edge distance", kernels.edge_edge_gap, segment_distance)):
        problem = _differs(label, native(*points), twin(*points)[0], 1.0)
        if problem:
            return problem
    ends = [p + rng.normal(size=p.shape) for p in points]
    for label, native, twin in (("point-triangle CCD", kernels.point_triangle_ccd, point_triangle_ccd),
                                ("edge-edge CCD", kernels.edge_edge_ccd, edge_edge_ccd)):
        a, b = native(*points, *ends, 0.01), twin(*points, *ends, 0.01)
        if not np.array_equal(np.isinf(a), np.isinf(b)):
            return f"{label}: hits and misses differ from NumPy"
        problem = _differs(label, a[np.isfinite(a)], b[np.isfinite(b)], 1e3)
        if problem:
            return problem
    for d in (3, 6, 9, 12):
        H = rng.normal(size=(8, d, d))
        problem = _differs(f"PSD projection {d}x{d}", kernels.project_psd(H), project_psd(H), float(np.abs(H).max()))
        if problem:
            return problem
    return ""


FAMILIES = {
    # family: the tests of its kernels, run in order the first time a solver binds the family (NativeLibrary.ready).
    # The scenes are the smallest that still reach every branch each test checks (its "found no pairs" guards).
    "contacts": (_contacts,),  # kernels.AnalyticContacts, KeepOut (position-based and projective solvers)
    "substeps": (_substeps,),  # kernels.BendingJacobi, AirLoads, ClothFrame
    "mesh": (mesh_closest,),  # mesh_kernels.MeshClosest, mesh_frame, pose_kernels.PoseNormals, KeepOut's mesh rows
    "solids": (partial(run_solids, cells=2),),  # kernels.TetStrainSweep, TetStrainJacobi
    # self_kernels.SelfPairQuery, SelfCallKernels, SelfPass (the skin growth of self_pass needs the 8 x 8 fold)
    "self": (partial(self_pairs, n=7), partial(self_response, n=7), partial(self_pass, n=8),
             partial(self_select, n=8)),
    "implicit": (implicit,),  # SphereProjection, BlockMatrix (and its CG), BlockAssembly, RotationSVD, TetTargets
    "ipc": (ipc,),  # ipc_kernels.IPCKernels (NEWTON's contact barriers)
}
