"""Self-collision's response passes in C (solvers/native/src/self_pass.c, ``self_kernels.SelfPass``) against their NumPy
twin, the pass loop of ``SelfCollision._respond``: bit for bit on x86-64 (the same operations in the same order) on
folded, jiggled sheets moved by random steps of several sizes (few passes, passes beyond ``passes`` on the violating
pairs, recovery of pairs that started closer than thickness, the collider check between the two halves of a pass),
and on the pair lists of real folding (the crumpling sheet of tests/test_self_collision.py, frame after frame); that
scene never crosses itself on either path; bad input refused with ValueError."""
import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.narrow_phase.crossings import count_self_intersections
from solvers.collision.response.self_contact import PASSES, SelfCollision
from solvers.config import SolverConfig
from solvers.native.selftest import self_pair_scene
from solvers.native.self_kernels import SelfPass


@pytest.fixture(scope="module")
def library():
    return native_library()


def _pair(seed, thickness=0.05):
    """Two SelfCollision of one folded sheet, both with the native lists and stencils, the second with its passes in
    NumPy: (x, native, numpy)."""
    model, x, _ = self_pair_scene(seed=seed, thickness=thickness)
    native = SelfCollision(model, thickness, compute="AUTO")
    numpy = SelfCollision(model, thickness, compute="AUTO")
    assert native.native_pass is not None
    numpy.native_pass = None
    return x, native, numpy


def _passes_run(sc):
    """Counts the native passes of ``sc`` (a list whose length is the number of ``run`` calls)."""
    calls = []
    run = sc.native_pass.run

    def counted(*a, **k):
        calls.append(1)
        return run(*a, **k)

    sc.native_pass.run = counted
    return calls


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("scale", [0.002, 0.01, 0.04])
def test_passes_equal_their_numpy_twin(library, seed, scale):
    x, native, numpy = _pair(seed)
    rng = np.random.default_rng(seed)
    x_prev = np.ascontiguousarray(x + rng.normal(scale=scale, size=x.shape))
    calls = _passes_run(native)
    results = []
    for sc in (native, numpy):
        y, y_prev = x.copy(), x_prev.copy()
        corrected = sc.resolve(y, y_prev)
        results.append((y, y_prev, corrected, sc.last_candidates))
    (y, y_prev, corrected, candidates), (z, z_prev, corrected_numpy, candidates_numpy) = results
    assert corrected == corrected_numpy > 0 and candidates == candidates_numpy
    assert len(calls) >= 2
    assert_same(y, z)
    assert_same(y_prev, z_prev)
    assert not np.array_equal(y_prev, x_prev)  # some pair started closer than thickness: recovery moved x_prev too


def test_passes_beyond_the_first_ones_equal_their_numpy_twin(library):
    """Large steps (pairs still through each other after ``passes``): the later passes run on the violating pairs."""
    x, native, numpy = _pair(2, thickness=0.08)
    rng = np.random.default_rng(7)
    x_prev = np.ascontiguousarray(x + rng.normal(scale=0.06, size=x.shape))
    calls = _passes_run(native)
    y, y_prev, z, z_prev = x.copy(), x_prev.copy(), x.copy(), x_prev.copy()
    assert native.resolve(y, y_prev) == numpy.resolve(z, z_prev)
    assert len(calls) > PASSES
    assert_same(y, z)
    assert_same(y_prev, z_prev)


@pytest.mark.parametrize("seed", [1, 3])
def test_passes_beside_colliders_equal_their_numpy_twin(library, seed):
    """With a ground through the folded sheet: particles resting on it weigh more, and a pass that pushes one deeper
    than the slack has it brought back (between the two halves of the native pass) and made heavier."""
    x, native, numpy = _pair(seed)
    rng = np.random.default_rng(seed)
    x_prev = np.ascontiguousarray(x + rng.normal(scale=0.01, size=x.shape))
    ground = [GroundPlane(np.array([0.0, 0.0, float(np.median(x[:, 2]))]), np.array([0.0, 0.0, 1.0]))]
    for sc in (native, numpy):
        sc.pad2 = np.zeros(len(x))
    y, y_prev, z, z_prev = x.copy(), x_prev.copy(), x.copy(), x_prev.copy()
    kept = []
    keep = native._keep_out_of_colliders

    def recorded(x_, moved, colliders):
        before = x_.copy()
        keep(x_, moved, colliders)
        kept.append(not np.array_equal(before, x_))

    native._keep_out_of_colliders = recorded
    assert native.resolve_beside_colliders(y, y_prev, ground) == numpy.resolve_beside_colliders(z, z_prev, ground) > 0
    assert any(kept)  # the collider check did move particles between the halves of a pass
    assert_same(y, z)
    assert_same(y_prev, z_prev)


def _fold(compute, native_pass=True, frames=14, native_growth=True):
    """tests/test_self_collision.py's fold scene (XPBD, 16 x 16, thickness 1 cm, crumpling onto a rough ground):
    positions and velocities after each frame, the crossings at each frame, the pairs the response corrected and the
    SelfCollision. native_pass / native_growth False: those parts in NumPy (the rest native)."""
    n = 16
    V, E, T = grid_cloth(n, 0.6, 0.0)
    angle = np.radians(80.0)
    rotation = np.array([[np.cos(angle), 0.0, -np.sin(angle)], [0.0, 1.0, 0.0], [np.sin(angle), 0.0, np.cos(angle)]])
    V = V @ rotation.T
    V[:, 2] += 0.05 - V[:, 2].min()
    model = build_model(V, E, T, total_mass=0.1, quads=grid_quads(n))
    config = SolverConfig(solver="XPBD", use_self_collision=True, thickness=0.01, compute=compute)
    solver = make_solver(model, config)
    sc = solver.self_collision
    if not native_pass:
        sc.native_pass = None
    if not native_growth and sc.native_pairs is not None:
        _numpy_growth(sc)
    corrected = []
    resolve = sc.resolve_beside_colliders

    def counted(*a):
        corrected.append(resolve(*a))
        return corrected[-1]

    sc.resolve_beside_colliders = counted
    state = State.at_rest(model)
    state.v[:] = [-0.4, 0.0, -1.0]
    ground = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], 0.005, 1.0)]
    frames_out, crossings = [], []
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, ground)
        frames_out.append((state.x.copy(), state.v.copy()))
        crossings.append(count_self_intersections(state.x, model.collision_triangles))
    return frames_out, crossings, sum(corrected), sc


def _numpy_growth(sc):
    """Make ``sc`` grow its skins with the NumPy twin (its builds and everything else stay native)."""
    grow = type(sc)._grow

    def numpy_grow(moved, motion):
        native, sc.native_pairs = sc.native_pairs, None
        try:
            return grow(sc, moved, motion)
        finally:
            sc.native_pairs = native

    sc._grow = numpy_grow


def test_the_fold_scene_is_the_same_with_the_native_passes_and_never_crosses(library):
    native, crossings_native, corrected, sc = _fold("AUTO")
    twin, crossings_twin, corrected_twin, sc_twin = _fold("AUTO", native_pass=False)
    numpy, crossings_numpy, _, sc_numpy = _fold("NUMPY")
    assert sc.native_pass is not None and sc_twin.native_pass is None and sc_numpy.native_check is None
    assert corrected == corrected_twin > 100  # the response did work: it crumples onto itself
    assert crossings_native == crossings_twin == crossings_numpy == [0] * len(crossings_native)
    for (x, v), (y, u), (z, w) in zip(native, twin, numpy):
        assert_same(x, y)
        assert_same(v, u)
        assert_same(x, z)  # and the whole native path is NumPy's
        assert_same(v, w)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sides_read_at_the_true_start_equal_their_numpy_twin(library, seed):
    """A step whose start pre-stabilization moved (a third of the particles, some far enough to take an element past
    its partner): ``SelfPass.true_sides`` (src/self_sides.c) against ``SelfCollision._true_sides``, through the whole
    response, bit for bit; some pairs take their true side."""
    x, native, numpy = _pair(seed)
    rng = np.random.default_rng(seed)
    x_prev = np.ascontiguousarray(x + rng.normal(scale=0.01, size=x.shape))
    true_start = x_prev.copy()
    moved = rng.random(len(x)) < 0.33
    true_start[moved] += rng.normal(scale=0.06, size=(int(moved.sum()), 3))
    flips = []
    true_sides = native.native_pass.true_sides
    native.native_pass.true_sides = lambda *a: flips.append(true_sides(*a)) or flips[-1]
    results = []
    for sc in (native, numpy):
        y, y_prev = x.copy(), x_prev.copy()
        corrected = sc.resolve(y, y_prev, true_start.copy())
        results.append((y, y_prev, corrected, sc.last_candidates))
    assert flips and flips[0] > 0
    (y, y_prev, corrected, candidates), (y2, y_prev2, corrected2, candidates2) = results
    assert candidates == candidates2 and corrected == corrected2
    assert_same(y, y2)
    assert_same(y_prev, y_prev2)


def test_bad_input_is_refused(library):
    x, native, _ = _pair(1)
    sc = native
    n = len(x)
    kernel = SelfPass(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), n)
    vt = (np.array([0, 1], np.int64), np.array([5, 6], np.int64))
    ee = (np.array([3], np.int64), np.array([40], np.int64))
    first = sc._stencils(x, vt, ee)
    ok = dict(side=np.ones(3), target=np.full(3, 0.05), approach_target=np.full(3, 0.05))
    kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass)
    kernel.run(x, sc.thickness, 0.1, 0.7, False)
    with pytest.raises(ValueError, match="triangles"):
        SelfPass(library, np.ascontiguousarray(sc.triangles) + n, np.ascontiguousarray(sc.edges), n)
    with pytest.raises(ValueError, match="edges"):
        SelfPass(library, np.ascontiguousarray(sc.triangles), sc.edges.astype(np.int32), n)
    with pytest.raises(ValueError, match="v"):
        kernel.begin((vt[0] + n, vt[1]), ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass)
    with pytest.raises(ValueError, match="t"):
        kernel.begin((vt[0], vt[1][:1]), ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass)
    with pytest.raises(ValueError, match="e2"):
        kernel.begin(vt, (ee[0], ee[1] + len(sc.edges)), ok["side"], ok["target"], ok["approach_target"], first,
                     sc.inv_mass)
    with pytest.raises(ValueError, match="side"):
        kernel.begin(vt, ee, np.ones(2), ok["target"], ok["approach_target"], first, sc.inv_mass)
    with pytest.raises(ValueError, match="target"):
        kernel.begin(vt, ee, ok["side"], ok["target"].astype(np.float32), ok["approach_target"], first, sc.inv_mass)
    with pytest.raises(ValueError, match="approach_target"):
        kernel.begin(vt, ee, ok["side"], ok["target"], np.zeros((3, 2))[:, 0], first, sc.inv_mass)
    with pytest.raises(ValueError, match="inv_mass"):
        kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass[:-1])
    bad = sc._stencils(x, vt, ee)
    bad.idx = bad.idx + n
    with pytest.raises(ValueError, match="first.idx"):
        kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], bad, sc.inv_mass)
    short = sc._stencils(x, (vt[0][:1], vt[1][:1]), ee)
    with pytest.raises(ValueError, match="first"):
        kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], short, sc.inv_mass)
    kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass)
    with pytest.raises(ValueError, match="x"):
        kernel.run(x[:-1], sc.thickness, 0.1, 0.7, False)
    with pytest.raises(ValueError, match="x"):
        kernel.run(np.asfortranarray(x), sc.thickness, 0.1, 0.7, False)
    kernel.begin(vt, ee, ok["side"], ok["target"], ok["approach_target"], first, sc.inv_mass)
    kernel.run(x.copy(), sc.thickness, 0.1, 0.7, False)
    with pytest.raises(ValueError, match="x"):
        kernel.finish(x.astype(np.float32))
