"""Colliders that move through the frame: interpolated over the substeps, seen continuously by the contact tests,
dragging what rests on them through friction (solvers/collision/colliders/shapes.py, solvers/frame.py)."""
import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, frame_colliders, make_solver
from solvers.builder import grid_cloth

FPS = 24.0
PIN_HEIGHT = 2.2
RADIUS = 0.3


def hanging_curtain():
    """A 2 x 2 m curtain (21 x 21) in the plane y = 0, its top row pinned at z = 2.2 m."""
    v, e, t = grid_cloth(21, 2.0)
    x = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] + PIN_HEIGHT - 1.0], 1)
    return build_model(x, e, t, pinned=x[:, 2] > PIN_HEIGHT - 1e-9)


def sphere_at(frame):
    """A 0.3 m sphere at mid height moving at 6 m/s along +y from y = -0.8 m through the curtain; it stops at
    y = 0.5 m during frame 6. After that abrupt stop the curtain swings on (physically plausible at 6 m/s:
    v^2 / 2g = 1.8 m): measured over 24 frames, NEWTON's hem swings above the pins from frame 9 (up to 9 cm), XPBD's
    from frame 10 (up to 34 cm), PROJECTIVE's stays below them. So the height check covers the push at full speed
    (frames 1-5); the others cover the stop too."""
    return Sphere([0.0, min(-0.8 + 6.0 * frame / FPS, 0.5), PIN_HEIGHT - 1.0], RADIUS, name="ball")


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE", "NEWTON"])
def test_a_fast_sphere_pushes_a_curtain_ahead_of_itself(solver):
    model = hanging_curtain()
    body = make_solver(model, SolverConfig(solver=solver))
    state = State.at_rest(model)
    previous = [sphere_at(0)]
    for frame in range(1, 7):
        sphere = sphere_at(frame)
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, [sphere]))
        previous = [sphere]
        x = state.x
        gap = np.linalg.norm(x - sphere.center, axis=1).min() - RADIUS
        assert gap > -1e-3, f"frame {frame}: a vertex {-1000 * gap:.1f} mm inside the sphere"
        assert x[:, 1].min() > -0.3, f"frame {frame}: the curtain went behind the sphere to y = {x[:, 1].min():.2f} m"
        if frame <= 5:
            assert x[:, 2].max() < PIN_HEIGHT + 0.01, f"frame {frame}: thrown to z = {x[:, 2].max():.2f} m, above its pins"
    assert state.x[:, 1].max() > 0.5, "the curtain was not pushed ahead"


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE", "NEWTON"])
def test_a_rising_ground_lifts_a_resting_cloth(solver):
    """A cloth lying on a ground that rises at 2 m/s stays on top of it and rises with it."""
    v, e, t = grid_cloth(11, 1.0, height=0.011)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver=solver))
    state = State.at_rest(model)
    previous = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, name="floor")]
    for frame in range(1, 13):
        ground = GroundPlane([0.0, 0.0, 2.0 * frame / FPS], [0.0, 0.0, 1.0], thickness=0.01, name="floor")
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, [ground]))
        previous = [ground]
        below = ground.point[2] - state.x[:, 2].min()
        assert below < 1e-3, f"frame {frame}: {1000 * below:.1f} mm below the rising ground"
    assert state.x[:, 2].mean() - ground.point[2] < 0.05


def test_friction_drags_a_cloth_along_a_sliding_ground():
    """Slip is measured against the collider: a ground sliding sideways at 1 m/s under a cloth carries it along."""
    v, e, t = grid_cloth(11, 1.0, height=0.0)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver="XPBD"))
    state = State.at_rest(model)
    previous = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], friction=0.8, name="belt")]
    for frame in range(1, 25):
        ground = GroundPlane([1.0 * frame / FPS, 0.0, 0.0], [0.0, 0.0, 1.0], friction=0.8, name="belt")
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, [ground]))
        previous = [ground]
    assert state.x[:, 0].mean() > 0.5, f"the cloth moved only {state.x[:, 0].mean():.2f} m with the ground"


def test_sphere_time_of_impact_is_the_first_touch_of_the_relative_motion():
    rng = np.random.default_rng(3)
    start = Sphere(np.zeros(3), 0.5)
    end = Sphere(rng.normal(size=3) * 0.4, 0.5)
    moving = end.moving_from(start)
    x = rng.normal(size=(400, 3)) * 1.5
    x = x[np.linalg.norm(x, axis=1) > 0.6]
    dx = rng.normal(size=x.shape)
    toi = moving.time_of_impact(x, dx)
    s = np.linspace(0.0, 1.0, 4001)
    centre = start.center + s[:, None] * (end.center - start.center)
    distance = np.linalg.norm(x[None] + s[:, None, None] * dx[None] - centre[:, None], axis=2)  # (samples, points)
    touched = (distance <= 0.5).any(axis=0)
    first = np.where(touched, s[np.argmax(distance <= 0.5, axis=0)], np.inf)
    assert np.all(np.isfinite(toi[touched]))
    np.testing.assert_allclose(toi[touched], first[touched], atol=3e-4)
    assert np.all((toi[~touched] > 1.0 - 3e-4))


def test_a_point_the_sphere_swept_past_goes_out_ahead_of_it():
    """A sphere that moved past a point's centre within the step pushes it out on the side it came from."""
    start, end = Sphere([0.0, -0.5, 0.0], 0.3), Sphere([0.0, 0.1, 0.0], 0.3)
    moving = end.moving_from(start)
    x = np.array([[0.0, 0.0, 0.0]])
    d, n = moving.contact(x, x.copy())
    assert d[0] < 0.0 and n[0, 1] > 0.99  # pushed along +y, the sphere's motion, not back through its centre
    d_static, n_static = end.distance_and_normal(x)
    assert n_static[0, 1] < -0.99  # the end pose alone would have pushed it backwards


def test_over_interpolates_a_collider_over_the_substeps():
    start, end = GroundPlane([0.0, 0.0, 0.0], [0, 0, 1]), GroundPlane([0.0, 0.0, 1.0], [0, 0, 1])
    moving = end.moving_from(start)
    step = moving.over(0.25, 0.5)
    np.testing.assert_allclose(step.point, [0.0, 0.0, 0.5])
    np.testing.assert_allclose(step.start.point, [0.0, 0.0, 0.25])
    np.testing.assert_allclose(step.motion(np.zeros((2, 3))), [[0.0, 0.0, 0.25]] * 2)
    assert end.moving_from(end).start is None  # a collider that did not move is static


def test_face_barrier_ccd_follows_a_sphere_moving_into_a_still_triangle():
    """The face barrier's step bound keeps a still triangle clear of a sphere that moves onto it over the step."""
    from solvers.collision.barriers.face_barrier import FaceColliderBarrier

    x = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [0.0, 1.0, 0.0]])
    triangles = np.array([[0, 1, 2]])
    moving = Sphere([0.0, 0.0, -0.2], 0.1).moving_from(Sphere([0.0, 0.0, -1.0], 0.1))
    alpha = FaceColliderBarrier(moving, triangles, 1.0, 0.01).max_step(x, np.zeros_like(x))
    assert alpha == 1.0  # the surface ends 0.1 m short of the face: nothing to stop
    # One that would pass through the face within the step is stopped short of it.
    closer = Sphere([0.0, 0.0, 0.5], 0.1).moving_from(Sphere([0.0, 0.0, -1.0], 0.1))
    alpha = FaceColliderBarrier(closer, triangles, 1.0, 0.01).max_step(x, np.zeros_like(x))
    touch = 0.9 / 1.5  # the surface reaches the face after 0.9 m of the centre's 1.5 m
    assert 0.5 * touch < alpha < touch


def test_a_translations_substep_poses_carry_offsets_and_read_vertices_when_asked():
    """A mesh collider moved by one translation from its still read (``MeshCollider.translation``) poses its
    substeps (``over``) with their offsets at once and their vertices only when something reads them, from the
    frame's ``FramePoses``: bit for bit start + (k / K) (end - start), as a moving collider's poses are."""
    from solvers import MeshCollider
    from solvers.builder import ico_sphere

    base, triangles = ico_sphere(2)
    first = MeshCollider(base, triangles, 0.01, name="Ball")
    moving = frame_colliders([first], [MeshCollider(base + [0.3, -0.1, 0.05], triangles, 0.01, name="Ball")])[0]
    end = moving.translation[1]
    assert moving.translation[0] is first and np.array_equal(end, moving.vertices[0] - base[0])
    K = 5
    posed = [moving.over((k - 1) / K, k / K) for k in range(1, K + 1)]
    assert all("vertices" not in pose.__dict__ for p in posed for pose in (p, p.start))
    assert "frame_poses" not in moving.shared.__dict__  # nothing read them yet
    for k, p in enumerate(posed, 1):
        assert p.translation[0] is first and np.array_equal(p.translation[1], 0.0 + (k / K) * (end - 0.0))
        assert np.array_equal(p.vertices, base + (k / K) * (moving.vertices - base))
        assert np.array_equal(p.start.vertices, base + ((k - 1) / K) * (moving.vertices - base))
    assert len(moving.shared.frame_poses) == 1  # one set of poses for the frame, read once
    turned = frame_colliders([first], [MeshCollider(base @ np.diag([1.0, 1.0, 1.01]), triangles, 0.01, name="Ball")])
    assert turned[0].start is not None and turned[0].translation is None


def _assert_same_pose(a, b):
    """Two posed mesh colliders alike: the same fields (the same objects), offsets and vertices bit for bit."""
    assert type(a) is type(b) and set(a.__dict__) == set(b.__dict__)
    for name, value in a.__dict__.items():
        other = b.__dict__[name]
        if name == "translation" and value is not None:
            assert value[0] is other[0] and value[1].tobytes() == other[1].tobytes()
        elif name == "_pending":
            assert value[0] is other[0] and value[1:] == other[1:]
        elif name != "start":
            assert value is other, name
    assert a.vertices.tobytes() == b.vertices.tobytes()


def test_every_substeps_poses_at_once_are_overs_poses():
    """``over_substeps(K)``: the colliders of ``over((k - 1) / K, k / K)``, k = 1 .. K, bit for bit: a translation's
    at once (its offsets from one product), any other collider's (moving, still, analytic) as ``over`` makes them."""
    from solvers import MeshCollider
    from solvers.builder import ico_sphere

    base, triangles = ico_sphere(2)

    def read(vertices):
        return MeshCollider(vertices, triangles, 0.01, name="Ball")

    translating = frame_colliders([read(base)], [read(base + [0.3, -0.1, 0.05])])[0]
    turned = frame_colliders([read(base)], [read(base @ np.diag([1.0, 1.0, 1.01]))])[0]
    assert translating.translation is not None and turned.start is not None and turned.translation is None
    for K in (1, 7, 30):
        for collider in (translating, turned):
            at_once = collider.over_substeps(K)
            one_by_one = [collider.over((k - 1) / K, k / K) for k in range(1, K + 1)]
            assert len(at_once) == K
            for a, b in zip(at_once, one_by_one):
                _assert_same_pose(a, b)
                _assert_same_pose(a.start, b.start)
    still = read(base)
    sliding = GroundPlane([0.0, 0.0, 1.0], [0, 0, 1]).moving_from(GroundPlane([0.0, 0.0, 0.0], [0, 0, 1]))
    assert all(p is still for p in still.over_substeps(4))
    assert [p.point.tolist() for p in sliding.over_substeps(4)] == [sliding.over((k - 1) / 4, k / 4).point.tolist()
                                                                     for k in range(1, 5)]
