"""A moving mesh collider's poses and normals for a whole frame in one pass (``mesh_collider.FramePoses``,
``pose_normals``): every substep's pose bit for bit ``Collider.over``'s interpolation, their normals bit for bit the
per-pose ``face_normals`` / ``_feature_normals`` for rigidly moving and deforming colliders with degenerate triangles;
whole bakes with and without the frame's poses (``FRAME_POSES``) equal bit for bit on the native whole-frame path, the
per-substep path and Compute NUMPY; the whole-frame binding reading the batched arrays, and refusing non-finite
poses with ValueError."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers import GroundPlane, MeshCollider
from solvers.builder import ico_sphere
from solvers.collision.colliders import mesh_collider
from solvers.collision.colliders.mesh_collider import FramePoses, pose_normals
from solvers.collision.colliders.shapes import Collider
from test_native_mesh_moving import _bake, _rotated, _scene, box_mesh


def _bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


def _mesh(seed):
    """An ico sphere with jittered vertices, a few triangles made degenerate (two corners on one point, three in a
    line, one vertex used twice by a triangle), and a stray triangle."""
    rng = np.random.default_rng(seed)
    vertices, triangles = ico_sphere(2, 0.5)
    vertices = vertices + rng.normal(scale=0.02, size=vertices.shape)
    vertices[triangles[3, 1]] = vertices[triangles[3, 0]]
    a, b = vertices[triangles[7, 0]], vertices[triangles[7, 1]]
    vertices[triangles[7, 2]] = a + 0.3 * (b - a)
    triangles = np.concatenate([triangles, [[0, 0, 5], [1, 2, 3]]])
    return vertices, triangles


@pytest.fixture(autouse=True)
def _lazy_from_the_first_triangle(monkeypatch):
    """The colliders here are small: their normals are derived lazily all the same (LAZY_NORMALS), as a large
    collider's are (below LAZY_MIN_TRIANGLES the whole-frame call computes every pose's up front); and they pose
    every substep, sliding ones too (a translation otherwise answers in its anchor's frame: ``TRANSLATIONS``)."""
    from solvers.native import mesh_frame

    monkeypatch.setattr(mesh_frame, "LAZY_MIN_TRIANGLES", 0)
    monkeypatch.setattr(mesh_collider, "TRANSLATIONS", False)


def _pairs(seed):
    """(start, end) vertex arrays: a rigid slide and turn, and a deformation, of ``_mesh``."""
    vertices, triangles = _mesh(seed)
    rng = np.random.default_rng(seed + 100)
    rigid = _rotated(vertices, 0.3, (0.1, 0.0, 0.0)) + [0.6, -0.2, 0.05]
    deformed = vertices * [1.0, 1.0, 1.3] + rng.normal(scale=0.05, size=vertices.shape)
    return triangles, [(vertices, rigid), (vertices, deformed)]


def _alone(vertices, triangles):
    """A collider at a pose, its normals derived on their own (no shared poses)."""
    return MeshCollider(np.array(vertices), triangles)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pose_normals_equal_the_per_pose_normals(seed):
    """pose_normals over P poses (rigid and deforming, P from 1 to 31) equals face_normals and _feature_normals of
    each pose alone, bit for bit (degenerate triangles included)."""
    triangles, pairs = _pairs(seed)
    for start, end in pairs:
        for count in (1, 2, 7, 31):
            s = np.linspace(0.0, 1.0, count)
            poses = start[None] + s[:, None, None] * (end - start)[None]
            first = _alone(poses[0], triangles)
            face, vertex, side = pose_normals(poses, first.triangles, first.shared.side_edge)
            assert face.flags.c_contiguous and vertex.flags.c_contiguous and side.flags.c_contiguous
            for p in range(count):
                alone = _alone(poses[p], triangles)
                assert _same(face[p], alone.face_normals)
                v, e = alone._feature_normals()
                assert _same(vertex[p], v) and _same(side[p], e)


def test_pose_normals_of_random_triangles():
    """Random soups (vertices shared at random, many degenerate triangles), random poses: equal to the per-pose
    normals bit for bit."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        m, t, count = int(rng.integers(3, 40)), int(rng.integers(1, 80)), int(rng.integers(1, 9))
        triangles = rng.integers(0, m, (t, 3))
        poses = rng.normal(size=(count, m, 3))
        poses[:, rng.integers(0, m)] = poses[:, rng.integers(0, m)]
        first = _alone(poses[0], triangles)
        face, vertex, side = pose_normals(poses, first.triangles, first.shared.side_edge)
        for p in range(count):
            alone = _alone(poses[p], triangles)
            v, e = alone._feature_normals()
            assert _same(face[p], alone.face_normals) and _same(vertex[p], v) and _same(side[p], e)


@pytest.mark.parametrize("substeps", [1, 3, 30])
def test_over_takes_the_frames_poses(monkeypatch, substeps):
    """``over`` of substep k of K hands the frame's pose arrays (the start pose of a substep the end pose array of
    the one before), equal bit for bit to ``Collider.over``'s interpolation; their normals, read through
    ``_pose_values``, equal each pose's own; fractions that are not k / K are interpolated as before."""
    triangles, pairs = _pairs(3)
    for start, end in pairs:
        moving = MeshCollider(end.copy(), triangles, 0.01, 0.2, "M").moving_from(
            MeshCollider(start.copy(), triangles, 0.01, 0.2, "M"))
        posed = [moving.over((k - 1) / substeps, k / substeps) for k in range(1, substeps + 1)]
        frame = moving.shared.frame_poses[-1]
        assert isinstance(frame, FramePoses) and frame.substeps == substeps
        for k, pose in enumerate(posed, 1):
            reference = Collider.over(moving, (k - 1) / substeps, k / substeps)
            assert pose.vertices is frame.views[k] and pose.start.vertices is frame.views[k - 1]
            assert _same(pose.vertices, reference.vertices) and _same(pose.start.vertices, reference.start.vertices)
            assert pose.start.start is None and pose.shared is moving.shared and pose.thickness == 0.01
            for mine, theirs in ((pose, reference), (pose.start, reference.start)):
                alone = _alone(theirs.vertices, triangles)
                for a, b in zip(mine._normals_at_pose(), alone._normals_at_pose()):
                    assert _same(a, b)
        swept = posed[-1].over(0.0, 0.5)  # a substep walked in sweeps: its own poses, the frame's kept
        assert _same(swept.vertices, Collider.over(posed[-1], 0.0, 0.5).vertices)
        assert moving.over(0.0, 1.0 / substeps).vertices is frame.views[1]
        other = moving.over(0.25, 0.6)  # not a substep of K: interpolated alone
        assert frame.index(other.vertices) < 0
        assert _same(other.vertices, Collider.over(moving, 0.25, 0.6).vertices)
        monkeypatch.setattr(mesh_collider, "FRAME_POSES", False)
        alone = moving.over(0.0, 1.0 / substeps)
        assert frame.index(alone.vertices) < 0 and _same(alone.vertices, posed[0].vertices)
        monkeypatch.setattr(mesh_collider, "FRAME_POSES", True)


@pytest.mark.parametrize("kind", ["translating", "rotating", "deforming"])
def test_bakes_with_and_without_the_frames_poses(monkeypatch, kind):
    """The moving boxes of tests/test_native_mesh_moving.py baked in whole frames, substep by substep and with Compute
    NUMPY, each with the frame's poses and with every pose derived alone (FRAME_POSES False): positions and
    velocities bit for bit."""
    native_library()
    read, _ = _scene(kind)
    for options in ({}, {"whole": False}, {"compute": "NUMPY"}):
        results = []
        for batched in (True, False):
            monkeypatch.setattr(mesh_collider, "FRAME_POSES", batched)
            state, taken = _bake(read, 13, 2.2, 0.8, 8, **options)
            results.append(state)
            if not options:
                assert taken == 8
        assert _same(results[0].x, results[1].x) and _same(results[0].v, results[1].v)


def test_pose_buffers_hand_out_only_arrays_nothing_holds():
    """``PoseBuffers.take``: an array still held (by its taker or by a view of it) is not handed out again; once nothing
    holds it, the next take of its name and shape gets it back; another shape gets its own."""
    from solvers.collision.broad_phase.mesh_broad_phase import PoseBuffers

    pool = PoseBuffers()
    first = pool.take("face", (4, 3))
    address = first.__array_interface__["data"][0]
    row = first[1]
    del first
    second = pool.take("face", (4, 3))
    assert second.__array_interface__["data"][0] != address  # the first is still held through its row
    del row
    third = pool.take("face", (4, 3))
    assert third.__array_interface__["data"][0] == address
    assert pool.take("face", (5, 3)).shape == (5, 3) and pool.take("side", (4, 3)) is not third


@pytest.mark.parametrize("kind", ["translating", "deforming"])
def test_a_moving_colliders_past_frames_are_freed_as_soon_as_no_one_holds_them(kind):
    """A moving collider read anew every frame, 8 frames baked with Python's cycle collector off: at most the last two
    frames' poses (``FramePoses``, ~150 MB a frame for 49k triangles and 30 substeps) are left, those the solver still
    holds; the older ones went as soon as no one held them (the kept face-pair lists name no collider, which made a
    cycle of every frame), so ``PoseBuffers`` can hand their arrays to the next frames."""
    import gc

    native_library()
    read, _ = _scene(kind)
    gc.collect()
    gc.disable()
    try:
        _bake(read, 13, 2.2, 0.8, 8)
        alive = sum(isinstance(o, FramePoses) for o in gc.get_objects())
    finally:
        gc.enable()
    assert alive <= 2


@pytest.mark.parametrize("kind", ["translating", "deforming"])
def test_a_moving_collider_lets_go_of_the_frame_before_when_it_takes_its_poses(kind):
    """A moving collider read anew every frame, 8 frames baked: each frame's normals are written into the arrays of the
    frame before (``PoseBuffers`` keeps one of each), which the native frame and the collider read at the frame before
    let go of when the next frame takes them (two sets alive took ~150 MB more for 49k triangles and 30 substeps). The
    poses' vertices (18 MB there) are interpolated before the native frame lets go: two of those."""
    native_library()
    read, _ = _scene(kind)
    colliders = []
    _bake(lambda frame: colliders.append(read(frame)) or colliders[-1], 13, 2.2, 0.8, 8)
    pools = {id(c.shared.pose_buffers): c.shared.pose_buffers for step in colliders[1:] for c in step
             if isinstance(c, MeshCollider)}
    assert len(pools) == 1  # one pool, handed on from frame to frame
    (pool,) = pools.values()
    kept = {name: len(arrays) for (name, _), arrays in pool._arrays.items()}
    assert kept == {"vertices": 2, "lazy face": 1, "lazy edge": 1, "lazy vertex": 1, "lazy ready": 1}


@pytest.mark.parametrize("lazy", [True, False])
def test_the_whole_frame_binding_reads_the_frames_poses(monkeypatch, lazy):
    """``MeshFrame._fill_moving`` hands the C code addresses into the frame's arrays (pose k of substep k's end, k - 1
    of its start): the poses' vertices and either the lazy normals' arrays (LAZY_NORMALS: face, vertex and edge
    normals) or every pose's normals (face, vertex and side normals); it refuses non-finite poses with ValueError."""
    from solvers.native import mesh_frame
    from solvers.native.mesh_frame import MeshFrame
    from solvers.native.mesh_kernels import MeshClosest

    monkeypatch.setattr(mesh_frame, "LAZY_NORMALS", lazy)
    library = native_library()
    triangles, pairs = _pairs(4)
    start, end = pairs[0]
    moving = MeshCollider(end.copy(), triangles, 0.01, 0.2, "M").moving_from(
        MeshCollider(start.copy(), triangles, 0.01, 0.2, "M"))
    moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
    substeps = 4
    posed = [[moving.over((k - 1) / substeps, k / substeps)] for k in range(1, substeps + 1)]
    body = np.array([[0, 1, 2], [1, 3, 2]], np.int64)
    x = np.array([[0.0, 0.0, 2.0], [1.0, 0.0, 2.0], [0.0, 1.0, 2.0], [1.0, 1.0, 2.0]])
    frame = MeshFrame(library, len(x), body, moving._body_edges(body))
    frame.prepare(posed[0], x, body, posed)
    table = frame.active[0][1].keep[3]  # the addresses per substep (mesh_frame.h SOFTSIM_POSE_FIELDS)
    frame_poses = moving.shared.frame_poses[-1]
    normals = frame.active[0][1].lazy
    if lazy:
        arrays = frame_poses.vertices, normals.face, normals.vertex, normals.edge
    else:
        assert normals is None
        arrays = frame_poses.vertices, *frame_poses.normals(moving.triangles, moving.shared.side_edge)
    for k in range(substeps):
        for j, a in enumerate(arrays):
            by_pose = a if j == 0 or not lazy else a.swapaxes(0, 1)  # the lazy normals: element by element
            assert table[k, j] == by_pose[k + 1].ctypes.data and table[k, 4 + j] == by_pose[k].ctypes.data
    moving.shared.frame_poses[-1].vertices[2, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        frame.prepare(posed[0], x, body, posed)


@pytest.mark.parametrize("above", [0, 1])
def test_a_collider_below_the_lazy_size_gets_every_poses_normals_up_front(monkeypatch, above):
    """With fewer triangles than LAZY_MIN_TRIANGLES the whole-frame call takes every pose's normals up front (no lazy
    normals); with that many, lazy ones."""
    from solvers.native import mesh_frame
    from solvers.native.mesh_frame import MeshFrame
    from solvers.native.mesh_kernels import MeshClosest

    library = native_library()
    triangles, pairs = _pairs(4)
    monkeypatch.setattr(mesh_frame, "LAZY_MIN_TRIANGLES", len(triangles) + above)
    start, end = pairs[0]
    moving = MeshCollider(end.copy(), triangles, 0.01, 0.2, "M").moving_from(
        MeshCollider(start.copy(), triangles, 0.01, 0.2, "M"))
    moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
    posed = [[moving.over((k - 1) / 4, k / 4)] for k in range(1, 5)]
    body = np.array([[0, 1, 2], [1, 3, 2]], np.int64)
    x = np.array([[0.0, 0.0, 2.0], [1.0, 0.0, 2.0], [0.0, 1.0, 2.0], [1.0, 1.0, 2.0]])
    frame = MeshFrame(library, len(x), body, moving._body_edges(body))
    frame.prepare(posed[0], x, body, posed)
    assert (frame.active[0][1].lazy is None) == bool(above)


def _moving_scene(kind):
    """read(frame) of tests/test_native_mesh_moving.py's moving boxes, or ("ball") a coarse ico sphere (80 faces,
    radius 0.4 m) on the ground sliding 3 cm a frame under the falling cloth, whose points meet its corners too."""
    if kind != "ball":
        return _scene(kind)[0]
    vertices, triangles = ico_sphere(1, 0.4)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")
    return lambda frame: [MeshCollider(vertices + [0.03 * frame, 0.0, 0.4], triangles.copy(), 0.01, 0.3, "Ball"),
                          ground]


def _recording_lazy_normals(monkeypatch):
    """Every ``_LazyNormals`` made from now on, and how often each had to compute the vertex normals its C code asked
    for (a substep run again)."""
    from solvers.native import mesh_frame

    made, restarts = [], []
    original, missing = mesh_frame._LazyNormals.__init__, mesh_frame._LazyNormals.compute_missing

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    def compute_missing(self):
        restarts.append(int(self.missing_count[0]))
        missing(self)

    monkeypatch.setattr(mesh_frame._LazyNormals, "__init__", init)
    monkeypatch.setattr(mesh_frame._LazyNormals, "compute_missing", compute_missing)
    return made, restarts


@pytest.mark.parametrize("kind", ["translating", "rotating", "deforming", "ball"])
def test_lazy_normals_are_every_poses_normals_where_ready(monkeypatch, kind):
    """The moving colliders of ``_moving_scene`` baked in whole frames with the normals derived where the C code reads
    them (``mesh_frame._LazyNormals``): at the last frame every face, edge and vertex normal marked ready holds
    ``pose_normals``' bits at its pose; faces and edges were read, and on the ball vertices too."""
    native_library()
    made, _ = _recording_lazy_normals(monkeypatch)
    _bake(_moving_scene(kind), 13, 2.2, 1.0, 8)
    lazy = made[-1]  # the last frame's (the pool hands earlier frames' arrays on)
    t = len(lazy.triangles)
    face, vertex, side = pose_normals(lazy.frame.vertices, lazy.triangles, lazy.side_edge)
    edge = np.zeros((len(face), len(lazy.edge), 3))
    edge[:, lazy.side_edge] = side  # every edge is some triangle's side
    ready = lazy.ready.T  # the lazy arrays hold an element's poses side by side: pose by pose here
    faces, edges = ready[:, :t].astype(bool), ready[:, t:].astype(bool)
    vertices = np.broadcast_to(lazy.vertex_ready.astype(bool), vertex.shape[:2])
    assert faces.any() and edges.any() and (vertices.any() or kind != "ball")
    for got, want, ready in ((lazy.face, face, faces), (lazy.edge, edge, edges), (lazy.vertex, vertex, vertices)):
        got = got.swapaxes(0, 1)
        assert _same(np.ascontiguousarray(got[ready]), np.ascontiguousarray(want[ready]))
    assert lazy.computed == int(lazy.vertex_ready.sum())


def test_lazy_normals_bake_as_every_normal_up_front(monkeypatch):
    """The moving colliders of ``_moving_scene`` baked in whole frames with lazy normals and with every pose's normals
    up front (LAZY_NORMALS False): positions and velocities bit for bit. On the ball the lazy bake ran substeps again
    for vertex normals the C code found missing, in fewer frames than it baked (the vertices a frame read are
    computed up front for the next)."""
    from solvers.native import mesh_frame

    native_library()
    for kind in ("translating", "rotating", "deforming", "ball"):
        read = _moving_scene(kind)
        made, restarts = _recording_lazy_normals(monkeypatch)
        lazy, _ = _bake(read, 13, 2.2, 1.0, 8)
        if kind == "ball":
            assert restarts and len(restarts) < len(made)
        monkeypatch.setattr(mesh_frame, "LAZY_NORMALS", False)
        upfront, _ = _bake(read, 13, 2.2, 1.0, 8)
        monkeypatch.setattr(mesh_frame, "LAZY_NORMALS", True)
        assert _same(lazy.x, upfront.x) and _same(lazy.v, upfront.v), kind


def test_native_sharp_edges_equal_numpys():
    """``sharp_edges`` with the native library (``pose_kernels.flat_edges``) finds the NumPy test's edges: random soups
    with degenerate triangles and knife edges, a jittered ico sphere at angle thresholds its own dihedral angles sit on,
    and the bench's level-6 box; bad input refused with ValueError."""
    from solvers.collision.broad_phase.mesh_broad_phase import edge_topology, sharp_edges
    from solvers.native.pose_kernels import flat_edges

    library = native_library()
    rng = np.random.default_rng(5)
    meshes = [box_mesh(6)]
    for seed in range(3):
        vertices, triangles = _mesh(seed)
        meshes.append((vertices, triangles))
        folded = np.concatenate([triangles, triangles[:, ::-1]])  # every edge also a knife edge
        meshes.append((vertices, folded))
        flat = vertices.copy()
        flat[rng.integers(0, len(flat), 5)] = flat[0]  # degenerate triangles (zero normals)
        meshes.append((flat, triangles))
    vertices, triangles = ico_sphere(2)
    meshes.append((vertices + rng.normal(scale=1e-3, size=vertices.shape), triangles))
    for vertices, triangles in meshes:
        vertices = np.ascontiguousarray(vertices, np.float64)
        topology = edge_topology(len(vertices), triangles)
        for angle in (0.0, 10.0, 20.0, 45.0, 179.0):
            want = sharp_edges(vertices, triangles, angle, topology=topology)
            got = sharp_edges(vertices, triangles, angle, topology=topology, library=library)
            assert np.array_equal(want, got)
    _, pair, one, other = topology
    with pytest.raises(ValueError):
        flat_edges(library, vertices, triangles, one + len(triangles), other, 0.5)
    with pytest.raises(ValueError):
        flat_edges(library, vertices.astype(np.float32), triangles, one, other, 0.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 1e150: squares overflow, NaN cosines (equal bits too)
def test_native_pose_normals_equal_pose_normals():
    """``pose_kernels.PoseNormals`` (src/pose_normals.c around NumPy's arccos) equals ``pose_normals`` bit for bit:
    random soups with degenerate triangles, tiny and large coordinates, and the jittered ico sphere's poses; its
    answers returned, and written into the middle rows of larger arrays (``out``) by the same instance, whose scratch
    serves calls of every size in turn."""
    from solvers.native.pose_kernels import PoseNormals

    native = PoseNormals(native_library())
    rng = np.random.default_rng(11)
    cases = []
    for trial in range(40):
        m, t, count = int(rng.integers(3, 50)), int(rng.integers(1, 70)), int(rng.integers(1, 8))
        triangles = rng.integers(0, m, (t, 3))
        poses = rng.normal(size=(count, m, 3)) * (1e-150, 1.0, 1e150)[trial % 3]
        poses[:, triangles[0, 1]] = poses[:, triangles[0, 0]]
        cases.append((poses, triangles))
    triangles, pairs = _pairs(5)
    for start, end in pairs:
        s = np.linspace(0.0, 1.0, 9)
        cases.append((start[None] + s[:, None, None] * (end - start)[None], triangles))
    for poses, triangles in cases:
        first = _alone(poses[0], triangles)
        side_edge = np.ascontiguousarray(first.shared.side_edge, np.int64)
        want = pose_normals(poses, first.triangles, side_edge)
        got = native(np.ascontiguousarray(poses), first.triangles, side_edge)
        for a, b in zip(got, want):
            assert _same(a, b)
        larger = [np.full((len(a) + 2,) + a.shape[1:], np.nan) for a in want]
        native(np.ascontiguousarray(poses), first.triangles, side_edge, out=[a[1:-1] for a in larger])
        for a, b in zip(larger, want):
            assert _same(a[1:-1], b) and np.isnan(a[[0, -1]]).all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the infinite pose's normals
def test_frame_poses_with_native_normals(monkeypatch):
    """A collider with the native queries builds its frame's normals in C (NATIVE_NORMALS), the same bits as without;
    a non-finite pose falls back to NumPy."""
    from solvers.native.mesh_kernels import MeshClosest

    library = native_library()
    triangles, pairs = _pairs(6)
    for start, end in pairs:
        got = []
        for native in (True, False):
            monkeypatch.setattr(mesh_collider, "NATIVE_NORMALS", native)
            moving = MeshCollider(end.copy(), triangles, 0.01).moving_from(MeshCollider(start.copy(), triangles, 0.01))
            moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
            posed = [moving.over((k - 1) / 30, k / 30) for k in range(1, 31)]
            got.append([posed[k].start._normals_at_pose() for k in range(30)] + [posed[-1]._normals_at_pose()])
        for a, b in zip(*got):
            assert all(_same(x, y) for x, y in zip(a, b))
    monkeypatch.setattr(mesh_collider, "NATIVE_NORMALS", True)
    moving = MeshCollider(end.copy(), triangles, 0.01).moving_from(MeshCollider(start.copy(), triangles, 0.01))
    moving.shared.native = MeshClosest(library, moving.triangles, len(moving.vertices))
    posed = moving.over(0.0, 0.5)
    moving.shared.frame_poses[-1].vertices[1, 0, 0] = np.inf
    alone = _alone(moving.shared.frame_poses[-1].vertices[0], triangles)
    assert _same(posed.start.face_normals, alone.face_normals)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the infinite pose's normals
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("first", ["face", "pseudo"])
def test_a_collider_with_native_queries_derives_its_normals_in_c(monkeypatch, seed, first):
    """A collider (still, or a pose of its own) with the native queries derives its face normals and pseudo-normals
    in one native pass, whichever is asked first: the same bits as NumPy's (degenerate triangles included); without
    NATIVE_NORMALS, the native queries or a finite pose, NumPy derives them."""
    from solvers.native import pose_kernels
    from solvers.native.mesh_kernels import MeshClosest

    library = native_library()
    vertices, triangles = _mesh(seed)
    calls = []
    native_call = pose_kernels.PoseNormals.__call__
    monkeypatch.setattr(pose_kernels.PoseNormals, "__call__", lambda *a, **k: calls.append(1) or native_call(*a, **k))

    def normals(vertices, native=True, flag=True):
        monkeypatch.setattr(mesh_collider, "NATIVE_NORMALS", flag)
        collider = MeshCollider(np.array(vertices), triangles, 0.01)
        if native:
            collider.shared.native = MeshClosest(library, collider.triangles, len(collider.vertices))
        if first == "face":
            face = collider.face_normals
            return (face, *collider._feature_normals())
        vertex, side = collider._feature_normals()
        return collider.face_normals, vertex, side

    want = normals(vertices, native=False)
    assert not calls
    got = normals(vertices)
    assert len(calls) == 1  # one pass for both
    assert all(_same(a, b) for a, b in zip(got, want))
    assert all(_same(a, b) for a, b in zip(normals(vertices, flag=False), want)) and len(calls) == 1
    infinite = vertices.copy()
    infinite[0, 0] = np.inf
    want = normals(infinite, native=False)
    assert all(_same(a, b) for a, b in zip(normals(infinite), want)) and len(calls) == 1


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_frame_normals_on_several_threads_equal_pose_normals(monkeypatch, threads):
    """``FramePoses.normals`` with the native kernels, its passes shared by 1, 2 or 3 threads (``SOFTSIM_THREADS``, a
    thread from the first pass on): every pose's normals bit for bit ``pose_normals``', rigid and deforming."""
    from solvers.native.mesh_kernels import MeshClosest

    monkeypatch.setenv("SOFTSIM_THREADS", str(threads))
    monkeypatch.setattr(mesh_collider, "POSES_PER_THREAD", 1)
    monkeypatch.setattr(mesh_collider, "POSE_ROWS", 1)  # one pose a pass: 31 passes to share
    library = native_library()
    triangles, pairs = _pairs(8)
    for start, end in pairs:
        collider = MeshCollider(end, triangles, 0.01)
        native = MeshClosest(library, collider.triangles, len(collider.vertices))
        poses = FramePoses(start, end, 30)
        side_edge = collider.shared.side_edge
        got = poses.normals(collider.triangles, side_edge, native)
        want = pose_normals(poses.vertices, collider.triangles, side_edge)
        assert all(_same(a, b) for a, b in zip(got, want))


def test_native_pose_normals_refuse_bad_inputs():
    """``PoseNormals`` raises ValueError for each kind of bad input: not a (P, m, 3) float64 C-contiguous array,
    non-finite vertices, triangles of another dtype or shape or out of range, side ids out of range or misshapen."""
    from solvers.native.pose_kernels import PoseNormals

    native = PoseNormals(native_library())
    triangles, pairs = _pairs(7)
    poses = np.ascontiguousarray(np.stack(pairs[0]))
    first = _alone(poses[0], triangles)
    tri, side_edge = first.triangles, np.ascontiguousarray(first.shared.side_edge, np.int64)
    native(poses, tri, side_edge)  # the good call
    bad_poses = [poses[0], poses.astype(np.float32), poses[:, :, :2].copy(), np.asfortranarray(poses), poses.tolist()]
    infinite = poses.copy()
    infinite[1, 3, 2] = np.nan
    for bad in bad_poses + [infinite]:
        with pytest.raises(ValueError):
            native(bad, tri, side_edge)
    for bad in (tri.astype(np.int32), tri[:, :2].copy(), np.where(tri == 0, poses.shape[1], tri), tri - 1):
        with pytest.raises(ValueError):
            native(poses, bad, side_edge)
    for bad in (side_edge[:-1].copy(), side_edge.astype(np.float64), side_edge - 1, side_edge + 3 * len(tri)):
        with pytest.raises(ValueError):
            native(poses, tri, bad)
    out = [np.empty((len(poses), len(tri), 3)), np.empty(poses.shape), np.empty((len(poses), len(tri), 3, 3))]
    native(poses, tri, side_edge, out=out)  # the good call
    for k in range(3):
        for bad in (out[k][:-1], out[k].astype(np.float32), np.asfortranarray(out[k])):
            with pytest.raises(ValueError):
                native(poses, tri, side_edge, out=out[:k] + [bad] + out[k + 1:])


@pytest.mark.parametrize("level", [0, 2, 4])
def test_a_finer_grid_gives_the_same_answers(level):
    """A moving collider's finer triangle grid (``mesh_kernels.MOVING_FINER``): finer cells or as fine, never coarser,
    and the native nearest-triangle query through it answers bit for bit as through the default grid."""
    from solvers.native.mesh_kernels import MOVING_FINER, MeshClosest, grid_shape
    from test_native_mesh_collider import subdivided_box

    library = native_library()
    vertices, triangles = (np.ascontiguousarray(a) for a in subdivided_box(level))
    coarse, fine = grid_shape(vertices[triangles]), grid_shape(vertices[triangles], MOVING_FINER)
    assert fine[0][3] <= coarse[0][3] and np.array_equal(coarse[0][:3], fine[0][:3])
    if level == 0:
        assert fine[0][3] < coarse[0][3]
    x = np.random.default_rng(level).uniform([-1.3, -1.3, -0.2], [1.3, 1.3, 0.8], size=(2000, 3))
    answers = []
    for finer in (1.0, MOVING_FINER):
        native = MeshClosest(library, triangles, len(vertices))
        native.faces.grid_for(vertices, finer)
        answers.append(native.closest(vertices, x, np.arange(len(x)), 0.3))
    assert len(answers[0][0]) > 100
    for a, b in zip(*answers):
        assert _same(np.asarray(a, np.float64), np.asarray(b, np.float64))


@pytest.mark.parametrize("seed", [0, 1])
def test_sharp_edges_from_the_adopted_topology(seed):
    """A moving collider read anew each frame takes over the previous frame's edge topology (``_Shared.adopt_topology``,
    ``edge_topology``): its sharp edges and corners are those found from scratch at its pose, for rigid and deforming
    motions of a mesh with degenerate and non-manifold triangles."""
    from solvers.collision.broad_phase.mesh_broad_phase import sharp_edges

    triangles, pairs = _pairs(seed)
    triangles = np.concatenate([triangles, [[0, 1, 7]]])  # an edge of three triangles
    for start, end in pairs:
        first = MeshCollider(start, triangles, 0.01)
        assert len(first.shared.edges)
        second = MeshCollider(end, triangles, 0.01).moving_from(first)
        assert second.shared.__dict__["edge_topology"] is first.shared.__dict__["edge_topology"]
        fresh = MeshCollider(end, triangles, 0.01).shared
        assert np.array_equal(second.shared.edges, sharp_edges(end, triangles))
        assert np.array_equal(second.shared.edges, fresh.edges)
        assert np.array_equal(second.shared.corners, fresh.corners)
