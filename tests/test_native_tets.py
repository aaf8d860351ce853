"""The native tet-strain sweeps (solvers/native/src/tets.c, ``kernels.TetStrainSweep``) against their NumPy twin
``constraints.tet_strain.TetStrainColourSweep``: forward, reversed and symmetric sweeps, with and without internal
damping, on jiggled blocks, a tetrahedralized ico sphere and meshes with flat, collapsed and inverted tets; bit for
bit on x86-64 (``native_helpers.assert_same``), since the C code repeats the twin's operations in its order. The same
for the Jacobi sweep (``kernels.TetStrainJacobi``, the tail of tiny colours and XPBD's Jacobi scheme) against the
NumPy Jacobi sweep (``position_based._Jacobi``), which is ``corrections`` scaled and summed per particle. Also the
bindings' refusals (ValueError naming the array) and a solid dropped on the ground, Compute AUTO against NUMPY
(Gauss-Seidel with its Jacobi tail, and the Jacobi scheme).
"""
import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, SolverConfig, State, advance_frame, build_model, make_solver
from solvers.colouring import colour_constraints
from solvers.constraints import TetStrainConstraints
from solvers.constraints.tet_strain import TetStrainColourSweep
from solvers.geometry import tetrahedralize
from solvers.material import lame_parameters
from solvers.native.kernels import TetStrainJacobi, TetStrainSweep
from solvers.native.selftest import tet_block
from solvers.position_based import _Jacobi
from test_projective import icosphere

DT = 1.0 / 720.0


@pytest.fixture(scope="module")
def library():
    return native_library()


def ico_sphere(resolution=6, seed=0, jiggle=0.02):
    """Blender's default ico sphere (2 levels, r 1 m) tetrahedralized: (model, jiggled positions, x_prev)."""
    v, f = icosphere(2, 1.0)
    tet = tetrahedralize(v, f, resolution=resolution)
    model = build_model(tet.vertices, None, None, tet.tets, None, 1.0)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(tet.vertices + rng.normal(scale=jiggle, size=tet.vertices.shape))
    x_prev = np.ascontiguousarray(tet.vertices + rng.normal(scale=jiggle, size=tet.vertices.shape))
    return model, x, x_prev


def mesh(name, poisson_ratio):
    """(constraints, x, x_prev) for a named test mesh."""
    if name.startswith("block"):
        tets, x, x_prev, _ = tet_block(cells=3, seed=5, poisson_ratio=poisson_ratio)
        if name == "block, flat collapsed and inverted tets":
            t = tets.indices
            x[t[0]] = x[t[0]].mean(axis=0)  # a tet collapsed to a point (F = 0)
            x[t[7, 3]] = x[t[7, :3]].mean(axis=0)  # a flat tet (J = 0)
            a, b, c, d = x[t[20]]  # a tet inverted: its fourth corner mirrored through the plane of the others
            normal = np.cross(b - a, c - a)
            normal /= np.linalg.norm(normal)
            x[t[20, 3]] = d - 2.0 * np.dot(d - a, normal) * normal
            x[t[40]] = x[t[40]][::-1]  # and one turned inside out by reordering its corners' positions
        return tets, np.ascontiguousarray(x), x_prev
    model, x, x_prev = ico_sphere()
    mu, lam = lame_parameters(1.0e5, poisson_ratio)
    return TetStrainConstraints.from_model(model.rest_positions, model.tet_indices, model.inv_mass, mu, lam), x, x_prev


def big_colours(tets, n):
    """The colours of at least 2 tets (``TetStrainConstraints.native_sweep`` leaves sets with a single-tet colour to
    NumPy, whose einsum sums in another order over an axis of length 1)."""
    return [c for c in colour_constraints(tets.indices, n) if len(c) >= 2]


def test_native_sweep_leaves_single_tet_colours_to_numpy(library):
    tets, x0, _, _ = tet_block()
    n = len(x0)
    colours = colour_constraints(tets.indices, n)
    assert min(len(c) for c in colours) == 1
    assert tets.native_sweep(library, colours, n) is None
    assert isinstance(tets.native_sweep(library, big_colours(tets, n), n), TetStrainSweep)
    # and there the two differ by round-off only
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    x, y = x0.copy(), x0.copy()
    native.sweep(x, DT, native.new_multipliers())
    reference.sweep(y, DT, [np.zeros((len(c), 2)) for c in colours])
    np.testing.assert_allclose(x, y, rtol=0.0, atol=1e-14)
    # A solver on such a body keeps the NumPy colour sweep under Compute AUTO, as under NUMPY.
    model = build_model(x0, tets=tets.indices, total_mass=1.0)
    for compute in ("AUTO", "NUMPY"):
        sim = make_solver(model, SolverConfig(solver="XPBD", compute=compute))
        if any(len(b) == 1 for b in sim.sweeps[0].batches):
            assert type(sim.sweeps[0].fast).__name__ == "TetStrainColourSweep"


MESHES = ["block", "block, flat collapsed and inverted tets", "ico sphere"]


@pytest.mark.parametrize("name", MESHES)
@pytest.mark.parametrize("poisson_ratio", [0.4, -0.2])  # -0.2: lam < 0, no hydrostatic row (infinite alpha_H)
@pytest.mark.parametrize("damping", [0.0, 2.4])
def test_tet_strain_sweeps_equal_their_numpy_twin(library, name, poisson_ratio, damping):
    tets, x0, x_prev = mesh(name, poisson_ratio)
    n = len(x0)
    colours = big_colours(tets, n)
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    native.set_damping(damping, x_prev)
    reference.set_damping(damping, x_prev)
    x, y = x0.copy(), x0.copy()
    lams, ref_lams = native.new_multipliers(), [np.zeros((len(c), 2)) for c in colours]
    for step in range(6):
        if step < 4:
            native.sweep(x, DT, lams, reverse=step % 2 == 1)
            reference.sweep(y, DT, ref_lams, reverse=step % 2 == 1)
        else:
            native.symmetric_sweep(x, DT, lams)
            reference.symmetric_sweep(y, DT, ref_lams)
        assert_same(x, y)
        assert_same(np.concatenate(lams), np.concatenate(ref_lams), float(np.max(np.abs(np.concatenate(ref_lams)))))
    assert not np.array_equal(x, x0)
    assert np.all(np.isfinite(x))


def test_tet_strain_sweeps_read_the_step_start_as_it_is_at_their_first_sweep(library):
    """A position-based step hands the sweeps its start x_prev (``set_damping``), then moves the points that began it
    inside a contact plane onto the plane, in place (``ContactConstraints.stabilize``): the damping of the colour
    sweep, its C twin and the constraints' own (``TetStrainConstraints``) all read x_prev as it is at the sweep."""
    tets, x0, x_prev = mesh("block", 0.3)
    n = len(x0)
    colours = big_colours(tets, n)
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    fresh = TetStrainColourSweep(tets, colours, n)
    start = x_prev.copy()
    native.set_damping(3.0, start)
    reference.set_damping(3.0, start)
    start[: n // 3, 2] += 1e-3  # stabilized after set_damping
    fresh.set_damping(3.0, start.copy())  # told the moved start from the first
    x, y, z = x0.copy(), x0.copy(), x0.copy()
    lams = native.new_multipliers()
    ref_lams, fresh_lams = ([np.zeros((len(c), 2)) for c in colours] for _ in range(2))
    for _ in range(3):
        native.sweep(x, DT, lams)
        reference.sweep(y, DT, ref_lams)
        fresh.sweep(z, DT, fresh_lams)
        assert_same(x, y)
        np.testing.assert_array_equal(y, z)


def test_tet_strain_sweep_takes_multipliers_it_does_not_own(library):
    """A list of the caller's arrays (and a tail multiplier after the colours') is copied in and out."""
    tets, x0, _, _ = tet_block()
    n = len(x0)
    colours = big_colours(tets, n)
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    rng = np.random.default_rng(3)
    start = [rng.normal(scale=1e-3, size=(len(c), 2)) for c in colours]
    lams, ref_lams = [a.copy() for a in start] + [np.ones(3)], [a.copy() for a in start]
    x, y = x0.copy(), x0.copy()
    native.sweep(x, DT, lams)
    reference.sweep(y, DT, ref_lams)
    native.symmetric_sweep(x, DT, lams)
    reference.symmetric_sweep(y, DT, ref_lams)
    assert_same(x, y)
    for a, b in zip(lams, ref_lams):
        assert_same(a, b)
    assert np.array_equal(lams[-1], np.ones(3))


@pytest.fixture
def tet_sweep(library):
    tets, x0, _, _ = tet_block(cells=2)
    n = len(x0)
    return TetStrainSweep(library, tets, colour_constraints(tets.indices, n), n), x0


def _bind_args(sweep):
    return dict(particle_count=sweep.n, colour_start=sweep.colour_start.copy(), tets=sweep.tets.copy(),
                D=sweep.D.copy(), w=sweep.w.copy(), kappa=sweep.kappa.copy())


def _bad_index(args):
    args["tets"][3, 2] = args["particle_count"]


def _shared_particle(args):
    a, b = args["colour_start"][:2]
    args["tets"][a + 1, 0] = args["tets"][a, 0]  # two tets of colour 0 share a particle
    assert b > a + 1


@pytest.mark.parametrize("change, message", [
    (_bad_index, r"tets: index \d+ out of range"),
    (lambda a: a.update(tets=a["tets"].astype(np.int32)), "tets: dtype must be int64"),
    (lambda a: a.update(tets=-a["tets"]), "tets: index -"),
    (lambda a: a.update(D=a["D"][:, :3]), r"D: shape must be"),
    (lambda a: a.update(D=np.asfortranarray(a["D"])), "D: must be C-contiguous"),
    (lambda a: a.update(w=a["w"].astype(np.float32)), "w: dtype must be float64"),
    (lambda a: a.update(w=a["w"][:-1]), "w: shape must be"),
    (lambda a: a.update(kappa=list(a["kappa"])), "kappa: expected a numpy array"),
    (lambda a: a.update(colour_start=a["colour_start"][:-1]), "colour_start must run from 0"),
    (_shared_particle, "colour 0 has a particle in two of its constraints"),
])
def test_tet_strain_binding_refuses_bad_arrays(tet_sweep, change, message):
    sweep, _ = tet_sweep
    args = _bind_args(sweep)
    change(args)
    with pytest.raises(ValueError, match=message):
        sweep.bind(**args)


@pytest.mark.parametrize("make_x, message", [
    (lambda x: x[:-1].copy(), "x: shape must be"),
    (lambda x: x.astype(np.float32), "x: dtype must be float64"),
    (lambda x: np.asfortranarray(x), "x: must be C-contiguous"),
])
def test_tet_strain_sweep_refuses_bad_positions(tet_sweep, make_x, message):
    sweep, x0 = tet_sweep
    lams = sweep.new_multipliers()
    with pytest.raises(ValueError, match=message):
        sweep.sweep(make_x(x0), DT, lams)
    with pytest.raises(ValueError, match=message):
        sweep.symmetric_sweep(make_x(x0), DT, lams)
    with pytest.raises(ValueError, match=message.replace("x:", "x_prev:")):
        sweep.set_damping(2.0, make_x(x0))


@pytest.mark.parametrize("solver, scheme", [("XPBD", "GAUSS_SEIDEL"), ("PBD", "GAUSS_SEIDEL"), ("XPBD", "JACOBI")])
def test_solid_dropped_on_the_ground_equals_numpy(library, solver, scheme):
    """The ico sphere (1220 tets) dropped 10 cm onto a ground with friction 0.5, XPBD/PBD defaults (30 substeps, the
    symmetric last sweep, the Jacobi tail, internal damping; or XPBD's Jacobi scheme: every tet in one Jacobi sweep),
    8 frames: every frame's positions equal on both paths."""
    model, _, _ = ico_sphere()
    runs = {}
    for compute in ("NUMPY", "AUTO"):
        cfg = SolverConfig(solver=solver, constraint_scheme=scheme, compute=compute)
        sim = make_solver(model, cfg)
        sweep = sim.sweeps[0]
        if scheme == "GAUSS_SEIDEL":
            assert type(sweep.fast).__name__ == ("TetStrainSweep" if compute == "AUTO" else "TetStrainColourSweep")
        assert len(sweep.tail.constraints) >= 2
        assert isinstance(sweep.tail.native, TetStrainJacobi) == (compute == "AUTO")
        state = State.at_rest(model)
        state.x[:, 2] += 1.1  # lowest point 10 cm above the ground
        ground = [GroundPlane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), friction=0.5)]
        frames = []
        for _ in range(8):
            advance_frame(sim, state, 1.0 / 24.0, cfg.substeps, ground)
            frames.append(state.x.copy())
        runs[compute] = frames
    assert runs["NUMPY"][-1][:, 2].min() < 0.01  # it reached the ground
    for a, b in zip(runs["NUMPY"], runs["AUTO"]):
        assert_same(b, a)


@pytest.mark.parametrize("name", MESHES)
@pytest.mark.parametrize("poisson_ratio", [0.4, -0.2])
@pytest.mark.parametrize("damping", [0.0, 2.4])
def test_tet_strain_jacobi_equals_its_numpy_twin(library, name, poisson_ratio, damping):
    tets, x0, x_prev = mesh(name, poisson_ratio)
    n = len(x0)
    native, reference = TetStrainJacobi(library, tets, n), _Jacobi(tets, n)
    tets.set_damping(damping, x_prev)
    lam, ref_lam = np.zeros((len(tets), 2)), np.zeros((len(tets), 2))
    x, y = x0.copy(), x0.copy()
    for _ in range(4):
        native.jacobi(x, DT, lam, 1.0)
        reference.numpy_sweep(y, tets.alpha(DT), ref_lam, 1.0, False)
        assert_same(x, y)
        assert_same(lam, ref_lam, float(np.max(np.abs(ref_lam))))
    assert not np.array_equal(x, x0)
    assert np.all(np.isfinite(x))


def test_tet_strain_numpy_jacobi_is_corrections_summed_per_particle():
    """The NumPy twin: every tet's ``corrections`` from the same x, scaled by 1 / (r + the largest constraint count
    over its particles) and summed per particle (XPBD's form), or summed and divided by r + n_i (PBD's lab form)."""
    tets, x0, x_prev, _ = tet_block(cells=3, seed=5)
    n, m = len(x0), len(tets)
    tets.set_damping(2.4, x_prev)
    alpha, relaxation = tets.alpha(DT), 0.5
    count = np.bincount(tets.indices.ravel(), minlength=n).astype(float)
    scale = 1.0 / (relaxation + count[tets.indices].max(axis=1))
    lam0 = np.random.default_rng(1).normal(scale=1e-4, size=(m, 2))
    dx, dlam = tets.corrections(x0, alpha, lam0)
    for lab_average in (False, True):
        x, lam = x0.copy(), lam0.copy()
        _Jacobi(tets, n).numpy_sweep(x, alpha, lam, relaxation, lab_average)
        total = np.zeros_like(x0)
        np.add.at(total, tets.indices.ravel(), (dx if lab_average else dx * scale[:, None, None]).reshape(-1, 3))
        expected = x0 + (total / (relaxation + count)[:, None] if lab_average else total)
        moved = np.max(np.abs(expected - x0))
        assert moved > 1e-3
        np.testing.assert_allclose(x, expected, rtol=0.0, atol=1e-14 * moved)
        expected_lam = lam0 + (dlam if lab_average else dlam * scale[:, None])  # the lab form: the whole dlambda
        np.testing.assert_allclose(lam, expected_lam, rtol=0.0, atol=1e-14 * np.max(np.abs(dlam)))


def test_tet_strain_jacobi_takes_multipliers_it_does_not_own(library):
    tets, x0, _, _ = tet_block()
    n = len(x0)
    native = TetStrainJacobi(library, tets, n)
    start = np.random.default_rng(3).normal(scale=1e-3, size=(len(tets), 2))
    lam, ref_lam = start.copy(), start.copy()
    x, y = x0.copy(), x0.copy()
    native.jacobi(x, DT, lam, 1.0)
    _Jacobi(tets, n).numpy_sweep(y, tets.alpha(DT), ref_lam, 1.0, False)
    assert lam is not native.lam
    assert_same(x, y)
    assert_same(lam, ref_lam)


@pytest.fixture
def tet_jacobi(library):
    tets, x0, _, _ = tet_block(cells=2)
    return TetStrainJacobi(library, tets, len(x0)), x0


def _jacobi_bind_args(kernel):
    return dict(particle_count=kernel.n, tets=kernel.tets.copy(), D=kernel.D.copy(), w=kernel.w.copy(),
                kappa=kernel.kappa.copy(), scatter_start=kernel.scatter_start.copy(),
                scatter_entry=kernel.scatter_entry.copy(), constraint_count=kernel.constraint_count.copy())


def _swapped_entries(args):
    args["scatter_entry"][[0, -1]] = args["scatter_entry"][[-1, 0]]


@pytest.mark.parametrize("change, message", [
    (_bad_index, r"tets: index \d+ out of range"),
    (lambda a: a.update(D=a["D"][:, :3]), r"D: shape must be"),
    (lambda a: a.update(w=a["w"].astype(np.float32)), "w: dtype must be float64"),
    (lambda a: a.update(kappa=a["kappa"][:-1]), "kappa: shape must be"),
    (lambda a: a.update(scatter_start=a["scatter_start"][:-1]), "scatter_start: shape must be"),
    (lambda a: a.update(scatter_start=a["scatter_start"] * 2), "scatter_start must run from 0"),
    (lambda a: a.update(scatter_entry=a["scatter_entry"] + 10 ** 6), r"scatter_entry: index \d+ out of range"),
    (_swapped_entries, "scatter_entry must list each particle's own entries"),
    (lambda a: a.update(constraint_count=a["constraint_count"][:-1]), "constraint_count: shape must be"),
])
def test_tet_strain_jacobi_binding_refuses_bad_arrays(tet_jacobi, change, message):
    kernel, _ = tet_jacobi
    args = _jacobi_bind_args(kernel)
    change(args)
    with pytest.raises(ValueError, match=message):
        kernel.bind(**args)


def test_tet_strain_jacobi_refuses_bad_input(library, tet_jacobi):
    kernel, x0 = tet_jacobi
    lam = np.zeros((kernel.m, 2))
    with pytest.raises(ValueError, match="x: must be C-contiguous"):
        kernel.jacobi(np.asfortranarray(x0), DT, lam, 1.0)
    with pytest.raises(ValueError, match="lam: shape must be"):
        kernel.jacobi(x0.copy(), DT, lam[:-1], 1.0)
    kernel.twin.set_damping(2.0, x0[:-1].copy())
    with pytest.raises(ValueError, match="x_prev: shape must be"):
        kernel.jacobi(x0.copy(), DT, lam, 1.0)
    kernel.twin.set_damping(0.0)
    one, _, _, _ = tet_block(cells=1)
    with pytest.raises(ValueError, match="a set of one tet stays on NumPy"):
        TetStrainJacobi(library, one.subset([0]), len(x0))


def _solid_frames(model, compute, frames, colliders_of, targets_of=None, whole=True, **settings):
    """Frames of a solid on ``compute``: each frame's positions, and how many frames took the frame call
    (``native_frame``); whole=False keeps the solver off it (the per-substep path)."""
    from solvers.collision.colliders.shapes import frame_colliders
    from solvers.position_based import PositionBasedSolver

    config = SolverConfig(compute=compute, **settings)
    sim = make_solver(model, config)
    taken = []
    original = sim.native_frame
    sim.native_frame = (lambda run, dt, colliders=(): taken.append(original(run, dt, colliders)) or taken[-1]) \
        if whole else (lambda run, dt, colliders=(): False)
    assert isinstance(sim, PositionBasedSolver)
    state, previous, out = State.at_rest(model), None, []
    for f in range(frames):
        current = colliders_of(f)
        advance_frame(sim, state, 1.0 / 24.0, config.substeps, frame_colliders(previous, current),
                      None if targets_of is None else targets_of(f))
        previous = current
        out.append(state.x.copy())
    return out, sum(taken)


@pytest.mark.parametrize("case", ["XPBD", "XPBD, no internal damping", "PBD", "pinned and rigged", "mesh box",
                                  "moving sphere"])
def test_solid_frames_in_one_call_equal_the_per_substep_path_and_numpy(library, case):
    """A solid's whole frame in one C call (``native_frame``: tet sweeps, their Jacobi tail, CONTACT_ITERATIONS in
    steps with contacts, the symmetric last sweep and alternating colour order, internal damping) gives the positions
    of the per-substep native path and of Compute NUMPY, bit for bit, every frame: the ico sphere (1220 tets) dropped
    10 cm onto a ground with friction 0.5; pinned at its top and moved by a rig; landing on a box mesh collider; or
    hit by a sphere sweeping in from the side (against the per-substep path only: a moving sphere's face push agrees
    with its NumPy twin to round-off, tests/test_native_contacts.py, which the rolling contact amplifies)."""
    import dataclasses

    from scenario_scenes import box_mesh
    from solvers.collision.colliders.mesh_collider import MeshCollider
    from solvers.collision.colliders.shapes import Sphere

    base, _, _ = ico_sphere()
    vertices = base.rest_positions + [0.0, 0.0, 1.1]  # lowest point 10 cm above the ground
    pinned = None
    settings = dict(solver="PBD" if case == "PBD" else "XPBD")
    if case == "XPBD, no internal damping":
        settings["internal_damping"] = 0.0
    targets_of = None
    if case == "pinned and rigged":
        pinned = np.zeros(len(vertices), bool)
        pinned[np.argmax(vertices[:, 2])] = True

        def targets_of(f):
            return vertices + [0.02 * (f + 1), 0.0, -0.03 * (f + 1)]
    model = build_model(vertices, tets=base.tet_indices, pinned=pinned, total_mass=1.0)
    ground = GroundPlane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), friction=0.5)
    sphere = Sphere(np.array([2.0, 0.0, 0.6]), 0.6, friction=0.2)
    corners, triangles = box_mesh(3.0, 3.0, 0.4)

    def colliders_of(f):
        if case == "mesh box":  # its top 5 cm under the solid's lowest point
            return [MeshCollider(corners + [-1.5, -1.5, -0.35], triangles, 0.01, 0.3, "box")]
        if case == "moving sphere":
            return [ground, dataclasses.replace(sphere, center=sphere.center - [0.12 * f, 0.0, 0.0])]
        return [ground]

    whole, taken = _solid_frames(model, "AUTO", 8, colliders_of, targets_of, **settings)
    pieces, _ = _solid_frames(model, "AUTO", 8, colliders_of, targets_of, whole=False, **settings)
    assert taken == 8
    # It reached the collider (the box's top at 0.05 m, its thickness 1 cm): steps with contacts were in the frames.
    assert min(x[:, 2].min() for x in whole) <= (0.06 + 1e-6 if case == "mesh box" else 0.01)
    for a, b in zip(whole, pieces):
        assert_same(a, b)
    if case != "moving sphere":
        reference, _ = _solid_frames(model, "NUMPY", 8, colliders_of, targets_of, **settings)
        for a, c in zip(whole, reference):
            assert_same(a, c)


def test_a_solid_in_lockstep_with_a_cloth_takes_the_frame_call(library, monkeypatch):
    """A scene of an XPBD solid (the ico sphere, 1220 tets, scaled to 0.3 m) dropped onto a pinned XPBD cloth: both
    bodies take each substep as one C call of their frame (``native_frame_steps``), never the per-substep path, with
    the positions and velocities of Compute NUMPY bit for bit, the contact between them included."""
    from solvers.builder import grid_cloth
    from solvers.frame import FrameRun
    from solvers.scene import Scene, advance_scene_frame

    base, _, _ = ico_sphere()
    results = {}
    for compute in ("NUMPY", "AUTO"):
        V, E, T = grid_cloth(12, 2.0, 1.0)
        pinned = np.zeros(len(V), bool)
        pinned[[0, 11, 132, 143]] = True
        cloth = build_model(V, E, T, pinned=pinned, total_mass=0.5)
        solid = build_model(0.3 * base.rest_positions + [0.0, 0.0, 1.35], tets=base.tet_indices, total_mass=1.0)
        scene = Scene([(cloth, SolverConfig(solver="XPBD", compute=compute)),
                       (solid, SolverConfig(solver="XPBD", compute=compute))])
        if compute == "AUTO":
            def refused(*args, **kwargs):
                raise AssertionError("a body covered by the frame call stepped substep by substep")

            monkeypatch.setattr(FrameRun, "posed_substep", refused)
        ground = [GroundPlane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), friction=0.3)]
        for _ in range(10):
            advance_scene_frame(scene, 1.0 / 24.0, ground)
        monkeypatch.undo()
        assert scene.touched == {0, 1}  # the solid landed on the cloth
        results[compute] = [(b.state.x.copy(), b.state.v.copy()) for b in scene.bodies]
    for (x, v), (x_ref, v_ref) in zip(results["AUTO"], results["NUMPY"]):
        assert_same(x, x_ref)
        assert_same(v, v_ref)
