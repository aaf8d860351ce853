"""Moving and deforming mesh colliders on the native path (``src/mesh_moving.c``, ``mesh_kernels.MeshClosest``
``contact_rows`` and ``motion``): a moving collider's contact planes and motion in one native call each, equal bit
for bit to the same planes composed in Python from the native nearest-triangle query (``mesh_collider.NATIVE_PLANES``
False) and to the NumPy twins to round-off; whole bakes of a translating, a rotating and a deforming box with the
cloth landing and sliding, equal to the composed path bit for bit and to Compute NUMPY, with no vertex inside the box;
a moving collider still routed substep by substep (``mesh_frame.frame_supports``); bad input refused with
ValueError."""
import os
import sys

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, make_solver
from solvers.builder import grid_cloth, ico_sphere
from solvers.collision.colliders import mesh_collider
from solvers.collision.colliders.mesh_collider import SEARCH_MARGIN, SIDE_MARGIN
from solvers.collision.colliders.shapes import frame_colliders
from solvers.native.mesh_frame import frame_supports
from solvers.native.mesh_kernels import MeshClosest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from profile_mesh_collider import box_mesh  # noqa: E402

FPS = 24
RTOL = 1e-12
"""Against the NumPy twins: the nearest triangles of the native query agree to a few ulps where the twin's batch is
all border (tests/test_native_mesh_collider.py); rows and triangles exactly."""


@pytest.fixture(scope="module")
def library():
    return native_library()


def _rotated(vertices, angle, centre=(0.0, 0.0, 0.0)):
    c, s = np.cos(angle), np.sin(angle)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return (vertices - centre) @ turn.T + centre


def _moving(vertices, triangles, end, library, thickness=0.01):
    """A collider moving from ``vertices`` to ``end`` over its frame, and its twin on the NumPy path."""
    pair = []
    for native in (True, False):
        moving = MeshCollider(end.copy(), triangles.copy(), thickness, 0.2, "M").moving_from(
            MeshCollider(vertices.copy(), triangles.copy(), thickness, 0.2, "M"))
        if native:
            moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
        pair.append(moving)
    return pair


def _poses(library):
    """(name, native collider, its NumPy twin) over substeps of a translating, rotating and deforming box and a
    deforming ico sphere (slanted faces, vertex and edge pseudo-normals everywhere)."""
    box, triangles = box_mesh(1)
    ball, ball_triangles = ico_sphere(2, 0.5)
    ball = ball + [0.0, 0.0, 0.6]
    wobble = ball * (1.0 + 0.04 * np.sin(7.0 * ball[:, :1]))
    cases = {"translating": (box, triangles, box + [0.05, -0.02, 0.03]),
             "rotating": (box, triangles, _rotated(box, 0.1)),
             "deforming": (box, triangles, box * [1.0, 1.0, 1.08]),
             "sphere": (ball, ball_triangles, wobble)}
    for name, (start, tris, end) in cases.items():
        native, numpy = _moving(start, tris, end, library)
        for t0, t1 in ((0.0, 0.25), (0.5, 0.75)):
            yield name, native.over(t0, t1), numpy.over(t0, t1)


def _points(seed, count=6000):
    """Positions around the box and the sphere, and start positions a few millimetres to centimetres away (some cross
    the surface over the step)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform([-1.3, -1.3, -0.1], [1.3, 1.3, 1.2], size=(count, 3))
    x_prev = x + rng.normal(scale=0.02, size=x.shape)
    return x, x_prev


def _composed(monkeypatch, method, *args):
    """method(*args) with the planes and motion composed in Python from the native nearest-triangle query."""
    monkeypatch.setattr(mesh_collider, "NATIVE_PLANES", False)
    try:
        return method(*args)
    finally:
        monkeypatch.setattr(mesh_collider, "NATIVE_PLANES", True)


def test_contact_planes_and_motion_equal_the_composed_path_and_numpy(library, monkeypatch):
    for seed, (name, native, numpy) in enumerate(_poses(library)):
        x, x_prev = _points(seed)
        for margin in (SEARCH_MARGIN, 0.2):
            for points in (None, np.arange(3, len(x), 4)):
                got = native._contact_rows(x, x_prev, margin, points)
                composed = _composed(monkeypatch, native._contact_rows, x, x_prev, margin, points)
                for a, b in zip(got, composed):
                    assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
                want = numpy._contact_rows(x, x_prev, margin, points)
                np.testing.assert_array_equal(got[0], want[0])
                for a, b in zip(got[1:], want[1:]):
                    np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-14)
                assert len(got[0]) > 50, f"{name}: too few points near the surface"
        got = native.motion(x)
        composed = _composed(monkeypatch, native.motion, x)
        assert np.array_equal(got.view(np.int64), composed.view(np.int64)), name
        np.testing.assert_allclose(got, numpy.motion(x), rtol=RTOL, atol=1e-14)
        assert np.count_nonzero(np.any(got != 0.0, axis=1)) > 100
        d, n = native.contact(x, x_prev)
        want_d, want_n = numpy.contact(x, x_prev)
        np.testing.assert_array_equal(np.isfinite(d), np.isfinite(want_d))
        np.testing.assert_allclose(d[np.isfinite(d)], want_d[np.isfinite(d)], rtol=RTOL, atol=1e-14)
        np.testing.assert_allclose(n, want_n, rtol=RTOL, atol=1e-14)


def test_sides_are_read_at_the_start_pose(library):
    """A box that moved 10 cm up through points lying still 2 cm above its start top: at the end pose they are 8 cm
    inside it, nearest its top, and their planes push them out on the side they came from (up); the same box standing
    still at the end pose (no history) pushes them further in."""
    box, triangles = box_mesh(0)
    native, numpy = _moving(box, triangles, box + [0.0, 0.0, 0.1], library)
    top = box[:, 2].max()
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.uniform(-0.5, 0.5, 200), rng.uniform(-0.5, 0.5, 200), np.full(200, top + 0.02)])
    up = np.tile([0.0, 0.0, 1.0], (len(x), 1))
    for collider in (native, numpy):
        rows, d, normal, _ = collider._contact_rows(x, x.copy(), SEARCH_MARGIN + 0.1, None)
        np.testing.assert_array_equal(rows, np.arange(len(x)))
        np.testing.assert_allclose(normal, up, atol=1e-12)
        np.testing.assert_allclose(d, -0.09, atol=1e-12)
    still = MeshCollider(box + [0.0, 0.0, 0.1], triangles, 0.01)
    still.shared.native = native.shared.native
    _, _, normal, _ = still._contact_rows(x, x.copy(), SEARCH_MARGIN + 0.1, None)
    np.testing.assert_allclose(normal, -up, atol=1e-12)


def _bake(read, count, size, height, frames, compute="AUTO", whole=True, planes=True, monkeypatch=None, box=None):
    """A cloth (count x count, size [m], at height [m]) baked ``frames`` frames over the colliders ``read(frame)``
    gives (fresh objects, paired with the previous frame's as the bridge does). whole False: the whole-frame call
    declined (the per-substep path); planes False: there, the planes and motion composed in Python. box(frame): the
    box collider's vertices at that frame, to check that no vertex lies inside it at any frame's end. Returns (final
    state, frames taken whole)."""
    if monkeypatch is not None:
        monkeypatch.setattr(mesh_collider, "NATIVE_PLANES", planes)
    v, e, t = grid_cloth(count, size, height=height)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD", compute=compute))
    taken = []
    original = body.native_frame
    body.native_frame = (lambda run, dt, colliders=(): taken.append(original(run, dt, colliders)) or taken[-1]) if whole \
        else (lambda run, dt, colliders=(): False)
    state, previous = State.at_rest(body.model), None
    for frame in range(1, frames + 1):
        current = read(frame)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, current))
        previous = current
        if box is not None:
            assert _deepest(state.x, box(frame)) < 1e-3, f"frame {frame}: a vertex inside the box"
    if monkeypatch is not None:
        monkeypatch.setattr(mesh_collider, "NATIVE_PLANES", True)
    return state, sum(taken)


def _deepest(x, corners):
    """[m] How deep the deepest point of x lies inside the convex box with these 8 corners (its 6 face planes; <= 0:
    nothing inside): the tolerance of tests/test_native_mesh_frame.py (1 mm) applies."""
    triangles = box_mesh(0)[1]
    a, b, c = (corners[triangles[:, k]] for k in range(3))
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    inside = np.min(np.einsum("fd,fd->f", normal, a)[None, :] - x @ normal.T, axis=1)
    return float(inside.max())


def _scene(kind):
    """A box (the bench's 12-triangle box) moving under a falling cloth: read(frame) -> colliders, box(frame)."""
    base, triangles = box_mesh(0)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def box(frame):
        if kind == "translating":
            return base + [0.03 * frame, 0.01 * frame, 0.0]
        if kind == "rotating":
            return _rotated(base, 0.05 * frame)
        return base * [1.0, 1.0, 1.0 + 0.04 * frame]  # deforming: the box grows up into the cloth

    return (lambda frame: [MeshCollider(box(frame), triangles.copy(), 0.01, 0.3, "Box"), ground]), box


@pytest.mark.parametrize("kind", ["translating", "rotating", "deforming"])
def test_moving_boxes_in_whole_frames_equal_the_per_substep_paths_and_numpy(library, monkeypatch, kind):
    """A 17 x 17 cloth dropped on a box that translates (3 cm a frame, the cloth sliding on its top), turns about the
    vertical (0.05 rad a frame) or grows (4 % of its height a frame, pushing the cloth up), 14 frames, in whole-frame
    calls (every frame), substep by substep with the fused native planes and with the planes composed in Python, and
    with Compute NUMPY: positions and velocities bit for bit, nothing inside the box at any frame."""
    read, box = _scene(kind)
    whole, taken = _bake(read, 17, 2.2, 0.8, 14, monkeypatch=monkeypatch, box=box)
    assert taken == 14
    fused, _ = _bake(read, 17, 2.2, 0.8, 14, whole=False, monkeypatch=monkeypatch)
    composed, _ = _bake(read, 17, 2.2, 0.8, 14, whole=False, planes=False, monkeypatch=monkeypatch)
    numpy, _ = _bake(read, 17, 2.2, 0.8, 14, compute="NUMPY")
    for other in (fused, composed):
        assert np.array_equal(whole.x.view(np.int64), other.x.view(np.int64))
        assert np.array_equal(whole.v.view(np.int64), other.v.view(np.int64))
    assert_same(whole.x, numpy.x)
    assert_same(whole.v, numpy.v)
    middle = whole.x[len(whole.x) // 2]
    assert middle[2] > box(14)[:, 2].max()  # resting on the top, not fallen through
    assert middle[2] < box(14)[:, 2].max() + 0.05


def test_a_translating_box_answers_in_its_anchors_frame(library):
    """A box moved by one translation each frame (a keyframed location) is its first still read moved by an offset
    (``MeshCollider.translation``): the whole-frame call runs that anchor's still pipeline in its frame, its kept
    planes serving frame after frame. The cloth dropped on it (17 x 17, friction 0.3) lands on its top and rides
    along with it, nothing inside the box at any frame; a box that turns or grows is no translation."""
    from solvers.native.mesh_frame import MeshFrame

    read, box = _scene("translating")
    v, e, t = grid_cloth(17, 2.2, height=0.8)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state, previous, first, landed = State.at_rest(body.model), None, None, None
    middle = len(v) // 2
    for frame in range(1, 25):
        current = read(frame)
        colliders = frame_colliders(previous, current)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, colliders)
        assert _deepest(state.x, box(frame)) < 1e-3, f"frame {frame}: a vertex inside the box"
        if frame == 1:
            first = current[0]
            assert colliders[0].translation is None
        else:
            anchor, offset = colliders[0].translation
            assert anchor is first and np.array_equal(offset, box(frame)[0] - box(1)[0])
            frames = [m for m in vars(body._frame_kernel).values() if isinstance(m, MeshFrame)]
            assert [a[0] for a in frames[0].active] == [first] and frames[0].active[0][1].struct.translating == 1
        if landed is None and state.x[middle, 2] < box(frame)[:, 2].max() + 0.02:
            landed = (frame, state.x[middle, :2].copy())
        previous = current
    assert first.shared.kept_planes  # the anchor's planes, kept
    assert landed is not None and state.x[middle, 2] > box(24)[:, 2].max()
    carried = state.x[middle, :2] - landed[1]
    slid = box(24)[0, :2] - box(landed[0])[0, :2]
    assert np.linalg.norm(carried - slid) < 0.25 * np.linalg.norm(slid), (carried, slid)
    base, triangles = box_mesh(0)
    for end in (_rotated(base, 0.01), base * [1.0, 1.0, 1.01]):
        moving = frame_colliders([MeshCollider(base, triangles, 0.01, name="Box")],
                                 [MeshCollider(end, triangles, 0.01, name="Box")])
        assert moving[0].start is not None and moving[0].translation is None


def test_a_box_that_slides_stops_and_slides_back_keeps_the_cloth_on_top(library):
    """A box keyed to slide 36 cm, stand for 6 frames and slide back: a translation of its first read, then still
    (its own planes), then a translation of that still read (a new anchor); the cloth lying on it stays on its top and
    nothing gets inside it at any frame, in the whole-frame call and with Compute NUMPY alike."""
    base, triangles = box_mesh(0)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def offset(frame):
        return np.array([0.03 * min(frame, 12) - 0.03 * max(frame - 18, 0), 0.0, 0.0])

    ends = []
    for compute in ("AUTO", "NUMPY"):
        v, e, t = grid_cloth(17, 2.2, height=0.8)
        body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD", compute=compute))
        state, previous, anchors = State.at_rest(body.model), None, []
        for frame in range(1, 31):
            current = [MeshCollider(base + offset(frame), triangles.copy(), 0.01, 0.3, "Box"), ground]
            colliders = frame_colliders(previous, current)
            translation = colliders[0].translation
            anchors.append(None if translation is None else translation[0])
            advance_frame(body, state, 1.0 / FPS, body.config.substeps, colliders)
            assert _deepest(state.x, base + offset(frame)) < 1e-3, f"frame {frame}: a vertex inside the box"
            previous = current
        assert anchors[0] is None and all(a is anchors[1] for a in anchors[1:12]) and anchors[1] is not None
        assert all(a is None for a in anchors[12:18])  # standing: a still collider
        assert all(a is anchors[18] for a in anchors[18:]) and anchors[18] is not None and anchors[18] is not anchors[1]
        middle = state.x[len(v) // 2]
        assert base[:, 2].max() < middle[2] < base[:, 2].max() + 0.05
        ends.append(state.x.copy())
    assert_same(ends[0], ends[1])


def test_certificates_answer_most_nearest_queries_of_a_sliding_box(library, monkeypatch):
    """The whole-frame call keeps, per particle, a certificate of its nearest triangle on a moving collider (the other
    triangles' least distance, less how far the particle and the poses moved since: src/mesh_collider.c
    mesh_closest_drift): with the cloth lying on the translating box, most answers come from a certificate, and the
    bake stays bit for bit the per-substep path's, which queries every point (the equality test above, and here on
    the frames where the certificates serve). The points draped over the box's edges are as near to the two
    triangles there: their certificates name the runner-up and bound the rest apart (with the nearest's alone, about
    4 answers certified for every one queried here; with the runner-up's, 13)."""
    from solvers.native.mesh_frame import MeshFrame

    monkeypatch.setattr(mesh_collider, "TRANSLATIONS", False)  # the box poses every substep
    read, _ = _scene("translating")
    v, e, t = grid_cloth(17, 2.2, height=0.8)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state, previous = State.at_rest(body.model), None
    for frame in range(1, 15):
        current = read(frame)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, current))
        previous = current
    frames = [m for m in vars(body._frame_kernel).values() if isinstance(m, MeshFrame)]
    assert len(frames) == 1
    counts = [mine.cert_counts for mine in frames[0].kept.values() if getattr(mine, "cert_counts", None) is not None]
    assert len(counts) == 1
    certified, queried = counts[0]
    assert certified > 8 * queried > 0
    per_substep, _ = _bake(read, 17, 2.2, 0.8, 14, whole=False)
    assert np.array_equal(state.x.view(np.int64), per_substep.x.view(np.int64))


def test_a_moving_collider_keeps_its_native_queries_across_frames(library):
    """A moving collider read anew each frame takes over the previous frame's native queries of its triangles
    (``_Shared.adopt_topology``: ``native``, one ``MeshClosest`` for the bake) and, its corners and sharp edges being
    equal, their grids' elements (``MeshClosest.gridded``)."""
    read, _ = _scene("translating")
    v, e, t = grid_cloth(9, 2.2, height=0.8)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state, previous, natives, sharp = State.at_rest(body.model), None, [], []
    for frame in range(1, 5):
        current = read(frame)
        colliders = frame_colliders(previous, current)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, colliders)
        natives.append(colliders[0].shared.native)
        sharp.append(natives[-1].sharp)
        previous = current
    assert natives[0] is not None
    assert all(native is natives[0] for native in natives)
    assert all(grids is sharp[0] for grids in sharp)


def test_a_subdivided_box_turning_and_sliding_in_whole_frames(library, monkeypatch):
    """The box cut by a level-2 Simple Subdivision (192 triangles, 48 sharp edges, finer grids: the frame's one grid
    of each kind queried drift wider serves many cells) turning 0.04 rad and sliding 2 cm a frame under a cloth,
    12 frames: whole frames bit for bit with the per-substep path and Compute NUMPY."""
    base, triangles = box_mesh(2)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read(frame):
        return [MeshCollider(_rotated(base, 0.04 * frame) + [0.02 * frame, 0.0, 0.0], triangles.copy(), 0.01, 0.3,
                             "Box"), ground]

    whole, taken = _bake(read, 15, 2.0, 0.7, 12, monkeypatch=monkeypatch)
    assert taken == 12
    per_substep, _ = _bake(read, 15, 2.0, 0.7, 12, whole=False, monkeypatch=monkeypatch)
    numpy, _ = _bake(read, 15, 2.0, 0.7, 12, compute="NUMPY")
    assert np.array_equal(whole.x.view(np.int64), per_substep.x.view(np.int64))
    assert np.array_equal(whole.v.view(np.int64), per_substep.v.view(np.int64))
    assert_same(whole.x, numpy.x)
    assert whole.x[len(whole.x) // 2, 2] > 0.5  # on the top


@pytest.mark.parametrize("level, step, turn", [(3, 0.1, 0.0), (4, 0.4, 0.0), (3, 0.1, 0.2)])
def test_a_finely_cut_box_moving_fast_in_whole_frames(library, level, step, turn):
    """A box cut finely (level 3: 768 triangles; level 4: 3072) sliding fast under a cloth (10 and 40 cm a frame:
    its travel spans many cells of its triangles' grid), or sliding 10 cm, turning 0.2 rad and swelling 2% a frame,
    14 frames: whole frames bit for bit with the per-substep path and Compute NUMPY.

    The frame's one grid of the triangles must be built halfway between the frame's start and end poses, as the C
    code widens its queries from each pose by that pose's distance from halfway (drift_at); built anywhere else, a
    query late in the frame misses its nearest triangle (a grid halfway through the first substep left the cloth 9 mm
    and 16 cm off). And the NumPy twin's face pairs must be every pair within reach and the travel whichever pose its
    k-d trees were built on, as the native grids find them (joins widened by the travel alone left the turning box's
    cloth 5 mm off NumPy's)."""
    base, triangles = box_mesh(level)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read(frame):
        vertices = _rotated(base, turn * frame) + [step * frame, 0.0, 0.0]
        if turn:
            vertices = vertices * [1.0, 1.0, 1.0 + 0.02 * np.sin(frame)]
        return [MeshCollider(vertices, triangles.copy(), 0.01, 0.3, "Box"), ground]

    whole, taken = _bake(read, 15, 2.0, 0.7, 14)
    assert taken == 14
    per_substep, _ = _bake(read, 15, 2.0, 0.7, 14, whole=False)
    numpy, _ = _bake(read, 15, 2.0, 0.7, 14, compute="NUMPY")
    assert np.array_equal(whole.x.view(np.int64), per_substep.x.view(np.int64))
    assert np.array_equal(whole.v.view(np.int64), per_substep.v.view(np.int64))
    assert_same(whole.x, numpy.x)
    assert_same(whole.v, numpy.v)


@pytest.mark.parametrize("sphere", [False, True])
def test_walked_sweeps_and_grown_buffers_with_a_moving_box(library, monkeypatch, sphere):
    """A translating box on a ground (and a moving sphere beside it), 6 substeps a frame: the landing cloth moves more
    than 2 cm a substep, so many end-of-step pushes are walked in sweeps by the NumPy code between C calls (status 1,
    reading the face-pair list the C code kept), and pair buffers of 8 pairs make the C code ask for more (status 3:
    the substep restored and run again). Without the sphere the frames equal the per-substep path and Compute NUMPY
    bit for bit; with it to round-off (1e-9 m, as a sphere beside a still box: tests/test_native_mesh_sphere_frame.py,
    the sphere face push sums in NumPy's einsum order on the per-substep path)."""
    import dataclasses

    from solvers.collision.colliders.shapes import Sphere
    from solvers.native import mesh_frame

    monkeypatch.setattr(mesh_frame, "CAPACITY", 8)
    base, triangles = box_mesh(0, half=(0.5, 0.5, 0.25), centre=(-0.5, 0.0, 0.25))
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read(frame):
        colliders = [MeshCollider(base + [0.02 * frame, 0.0, 0.0], triangles.copy(), 0.01, 0.3, "Box"), ground]
        if sphere:
            colliders.append(Sphere(np.array([0.6, 0.02 * frame, 0.3]), 0.3, thickness=0.01, friction=0.2, name="Ball"))
        return colliders

    def bake(compute="AUTO", whole=True):
        v, e, t = grid_cloth(17, 2.2, height=0.8)
        body = make_solver(build_model(v, e, t), dataclasses.replace(SolverConfig(solver="XPBD", compute=compute),
                                                                     substeps=6))
        taken, capacities = [], []
        original = body.native_frame

        def native_frame(run, dt, colliders=()):
            taken.append(original(run, dt, colliders))
            return taken[-1]

        if whole:
            body.native_frame = native_frame
        else:
            body.native_frame = lambda run, dt, colliders=(): False
        state, previous = State.at_rest(body.model), None
        for frame in range(1, 13):
            current = read(frame)
            advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, current))
            previous = current
        frame_kernel = getattr(body, "_frame_kernel", None)
        if frame_kernel is not None and frame_kernel.meshes is not None:
            capacities = [mine.capacity for _, mine, _ in frame_kernel.meshes.active]
        return state, sum(taken), capacities

    whole, taken, capacities = bake()
    assert taken == 12
    assert max(capacities) > 8  # the pair buffers grew
    per_substep = bake(whole=False)[0]
    numpy = bake(compute="NUMPY")[0]
    if sphere:
        np.testing.assert_allclose(whole.x, per_substep.x, rtol=0.0, atol=1e-9)
        np.testing.assert_allclose(whole.x, numpy.x, rtol=0.0, atol=1e-9)
    else:
        assert np.array_equal(whole.x.view(np.int64), per_substep.x.view(np.int64))
        assert np.array_equal(whole.v.view(np.int64), per_substep.v.view(np.int64))
        assert_same(whole.x, numpy.x)
        assert_same(whole.v, numpy.v)


def test_routing_still_and_moving(library, monkeypatch):
    """Still mesh colliders go whole-frame; moving and deforming ones too with MOVING_IN_FRAME, else substep by
    substep; a moving box baked with it off equals the whole-frame bake. (A translating one goes whole-frame as its
    anchor's still pipeline either way; switched off here, it moves as the others do.)"""
    from solvers.native import mesh_frame

    monkeypatch.setattr(mesh_collider, "TRANSLATIONS", False)
    base, triangles = box_mesh(0)
    still = frame_colliders([MeshCollider(base, triangles, 0.01, name="Box")],
                            [MeshCollider(base.copy(), triangles, 0.01, name="Box")])
    assert frame_supports(still, library)
    for end in (base + [0.01, 0.0, 0.0], _rotated(base, 0.01), base * [1.0, 1.0, 1.01]):
        moving = frame_colliders([MeshCollider(base, triangles, 0.01, name="Box")],
                                 [MeshCollider(end, triangles, 0.01, name="Box")])
        assert moving[0].start is not None and frame_supports(moving, library)
        monkeypatch.setattr(mesh_frame, "MOVING_IN_FRAME", False)
        assert not frame_supports(moving, library) and frame_supports(still, library)
        monkeypatch.setattr(mesh_frame, "MOVING_IN_FRAME", True)
    read, box = _scene("translating")
    whole, taken = _bake(read, 13, 1.8, 0.8, 6)
    monkeypatch.setattr(mesh_frame, "MOVING_IN_FRAME", False)
    per_substep, declined = _bake(read, 13, 1.8, 0.8, 6)
    assert taken == 6 and declined == 1  # the first frame has no earlier pose: it stands still
    assert np.array_equal(whole.x.view(np.int64), per_substep.x.view(np.int64))


def test_the_bindings_refuse_bad_inputs(library):
    box, triangles = box_mesh(0)
    native, _ = _moving(box, triangles, box + 0.01, library)
    closest = native.shared.native
    pose = (native.vertices, *(np.ascontiguousarray(a) for a in (native.face_normals, *native._feature_normals())))
    start = (native.start.vertices, *(np.ascontiguousarray(a) for a in (native.start.face_normals,
                                                                       *native.start._feature_normals())))
    x, x_prev = _points(1, 50)
    points = np.arange(50)
    limits = (0.01, SEARCH_MARGIN, 0.01 + SIDE_MARGIN, 0.02)
    assert len(closest.contact_rows(pose, start, x, x_prev, points, limits)[0]) >= 0
    bad = {
        "x dtype": dict(x=x.astype(np.float32)),
        "x shape": dict(x=x[:, :2].copy()),
        "x contiguity": dict(x=np.asfortranarray(x)),
        "x_prev shape": dict(x_prev=x_prev[:10].copy()),
        "points range": dict(points=np.array([0, 50])),
        "points dtype": dict(points=points.astype(np.int32)),
        "limits count": dict(limits=(0.01, 0.05, 0.26)),
        "limits sign": dict(limits=(0.01, -0.05, 0.26, 0.0)),
        "limits finite": dict(limits=(0.01, np.nan, 0.26, 0.0)),
        "pose vertices shape": dict(pose=(box[:7].copy(),) + pose[1:]),
        "pose vertices finite": dict(pose=(np.where(box > 0.4, np.inf, box),) + pose[1:]),
        "face normals shape": dict(pose=pose[:1] + (pose[1][:5].copy(),) + pose[2:]),
        "vertex normals dtype": dict(pose=pose[:2] + (pose[2].astype(np.float32),) + pose[3:]),
        "side normals shape": dict(start=start[:3] + (start[3].reshape(-1, 9).copy(),)),
    }
    for name, change in bad.items():
        args = dict(pose=pose, start=start, x=x, x_prev=x_prev, points=points, limits=limits)
        args.update(change)
        with pytest.raises(ValueError):
            closest.contact_rows(**args)
        assert name
    assert closest.motion(native.vertices, native.start.vertices, x, 0.06).shape == (50, 3)
    for args in ((native.vertices, native.start.vertices, x.astype(np.float32), 0.06),
                 (native.vertices, native.start.vertices, x[:, :2].copy(), 0.06),
                 (box[:7].copy(), native.start.vertices, x, 0.06),
                 (native.vertices, native.start.vertices[:7].copy(), x, 0.06),
                 (native.vertices, native.start.vertices.astype(np.float32), x, 0.06),
                 (np.where(box > 0.4, np.nan, box), native.start.vertices, x, 0.06)):
        with pytest.raises(ValueError):
            closest.motion(*args)
