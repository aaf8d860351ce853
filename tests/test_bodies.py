"""Bodies meeting each other (solvers/scene.py, solvers/collision/response/body_contact.py): a cube in a cloth hammock,
two cloths on a sphere, a one-body scene against advance_frame. Pure engine."""
import numpy as np
import pytest

from scenario_scenes import box_mesh, solid_model
from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.response.body_contact import surface_triangles, tet_surface
from solvers.collision.narrow_phase.crossings import self_intersecting_pairs
from solvers.geometry.winding import winding_number
from solvers.scene import Scene, advance_scene_frame

FPS = 24


def between_crossings(xs, triangles) -> int:
    """Edge-triangle pairs of two different bodies that cross (bodies' positions xs, their surface triangles)."""
    offsets = np.cumsum([0] + [len(x) for x in xs])
    x = np.concatenate(xs)
    tris = np.concatenate([t + o for t, o in zip(triangles, offsets)])
    body = np.repeat(np.arange(len(xs)), np.diff(offsets))
    edges, pairs = self_intersecting_pairs(x, tris)
    return int(np.count_nonzero(body[edges[pairs[:, 0], 0]] != body[tris[pairs[:, 1], 0]]))


def hammock_cloth():
    """A 2 m, 21 x 21 cloth 1.5 m up, pinned at its four corners, 1 kg."""
    V, E, T = grid_cloth(21, 2.0, 1.5)
    pinned = np.zeros(len(V), bool)
    pinned[[0, 20, 420, 440]] = True
    return build_model(V, E, T, pinned=pinned, total_mass=1.0, quads=grid_quads(21))


def hammock_cube():
    """A 0.4 m cube of 2 kg (tetrahedralized at resolution 4), its bottom 2.2 m up over the cloth's centre."""
    corners, tris = box_mesh(0.4, 0.4, 0.4)
    return solid_model(corners - [0.2, 0.2, -2.2], tris, 4, mass=2.0)


def run_hammock(solver, frames, cube=True, couple=True, cube_solver=None):
    """The hammock scene on a ground (thickness 1 cm, friction 0.5); the cube on ``cube_solver`` (default: the cloth's
    ``solver``). Returns figures: the lowest cloth vertex from frame LANDING on and the lowest cube vertex over all
    frames [m], and at the worst frame the crossing pairs between the bodies and the cloth vertices inside the cube."""
    bodies = [(hammock_cloth(), SolverConfig(solver=solver))]
    if cube:
        bodies.append((hammock_cube(), SolverConfig(solver=cube_solver or solver)))
    scene = Scene(bodies)
    if not couple:
        scene.contact = None
    ground = [GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.5)]
    triangles = [surface_triangles(b.model) for b in scene.bodies]
    out = dict(cloth_low=np.inf, cube_low=np.inf, crossings=0, inside=0)
    for frame in range(1, frames + 1):
        advance_scene_frame(scene, 1.0 / FPS, ground)
        xs = [b.state.x for b in scene.bodies]
        if frame >= LANDING:
            out["cloth_low"] = min(out["cloth_low"], float(xs[0][:, 2].min()))
        if cube:
            out["cube_low"] = min(out["cube_low"], float(xs[1][:, 2].min()))
            out["crossings"] = max(out["crossings"], between_crossings(xs, triangles))
            cube_model = scene.bodies[1].model  # inside its simulated surface (tet boundary) or its drawn mesh
            w = [winding_number(xs[0], xs[1], t, beta=None)
                 for t in (tet_surface(cube_model.tet_indices), cube_model.collision_triangles)]
            out["inside"] = max(out["inside"], int(np.count_nonzero(np.maximum(*w) > 0.5)))
    return out


HAMMOCK_FRAMES = 18
"""The cube reaches the cloth at frame 10 and is lowest at frame 12 (PROJECTIVE) or 15 (XPBD); 72 frames take about
40 s (XPBD)."""
LANDING = 10
"""The sag is compared from this frame on: before it the empty cloth's own first dip, released flat, is as deep
as the loaded one's (XPBD: 1.165 m at frame 7)."""


@pytest.mark.parametrize("solver, cube_solver", [("XPBD", "XPBD"), ("PROJECTIVE", "PROJECTIVE"), ("XPBD", "PROJECTIVE")])
def test_cube_in_hammock_is_carried(solver, cube_solver):
    """A 2 kg cube dropped into the cloth stays on it: never below 0.2 m (the ground is 1.5 m below the cloth), no
    cloth vertex inside it, no edge of one body through a triangle of the other at any frame; the cloth sags more
    under it than empty. Without the coupling the cube falls through to the ground. Position-level bodies on
    different solvers (and substeps: XPBD 30, PROJECTIVE 16) step in lockstep at the larger substeps."""
    r = run_hammock(solver, HAMMOCK_FRAMES, cube_solver=cube_solver)
    assert r["cube_low"] > 0.2, r
    assert r["inside"] == 0, r
    assert r["crossings"] == 0, r
    empty = run_hammock(solver, HAMMOCK_FRAMES, cube=False)
    assert r["cloth_low"] < empty["cloth_low"] - 0.1, (r, empty)


def test_newton_cube_in_xpbd_hammock_is_carried():
    """A NEWTON cube in an XPBD hammock (bodies on different solvers): NEWTON steps first with the cloth as a mesh
    collider (its barriers summed over every cloth triangle within reach: the nearest triangle alone has a crease where
    the cube sits in the sagging cloth, and Newton cycled on it without converging at the landing), the cloth then
    with the cube's surface moving over the frame and the barrier's reaction as a load. The cube stays on the cloth,
    nothing crosses, and the cloth carries its weight: it sags more than empty (it stays flat under the cube, 1.30 m
    at frame 18, without the load)."""
    r = run_hammock("XPBD", HAMMOCK_FRAMES, cube_solver="NEWTON")
    assert r["cube_low"] > 0.2, r
    assert r["inside"] == 0, r
    assert r["crossings"] == 0, r
    empty = run_hammock("XPBD", HAMMOCK_FRAMES, cube=False)
    assert r["cloth_low"] < empty["cloth_low"] - 0.1, (r, empty)


def test_newton_bodies_are_one_system_and_the_cloth_carries_the_cube():
    """NEWTON cube in a NEWTON hammock: one Newton solve over both bodies (``NewtonBodies``), the IPC barrier between
    them and CCD in every step. The cube stays on the cloth, nothing crosses, no cloth vertex inside the cube, and the
    cloth sags under it more than empty (1.21 m against 1.40 m)."""
    scene = Scene([(hammock_cloth(), SolverConfig(solver="NEWTON")), (hammock_cube(), SolverConfig(solver="NEWTON"))])
    assert [(members, type(system).__name__) for members, system in scene.units] == [([0, 1], "NewtonBodies")]
    r = run_hammock("NEWTON", HAMMOCK_FRAMES)
    assert r["cube_low"] > 0.2, r
    assert r["inside"] == 0, r
    assert r["crossings"] == 0, r
    empty = run_hammock("NEWTON", HAMMOCK_FRAMES, cube=False)
    assert r["cloth_low"] < empty["cloth_low"] - 0.1, (r, empty)


def test_newton_bodies_meeting_in_free_flight_keep_their_momentum():
    """Without gravity, damping or colliders, a NEWTON cube thrown at a free NEWTON cloth: the barrier forces between them are
    internal to the one system (equal and opposite), and every element's projected Hessian keeps translations in its
    null space, so the total linear momentum is what it was (changed by 1e-14 kg m/s here), and the cloth is pushed
    along. (A body stepped alone against the other as an immovable collider would
    bounce off it and reverse the momentum.)"""
    V, E, T = grid_cloth(9, 1.0, 0.0)
    cloth = build_model(V, E, T, total_mass=0.5, quads=grid_quads(9))
    corners, tris = box_mesh(0.3, 0.3, 0.3)
    cube = solid_model(corners - [0.15, 0.15, -0.1], tris, 2, mass=1.0)
    config = SolverConfig(solver="NEWTON", gravity=(0.0, 0.0, 0.0), damping=0.0)
    scene = Scene([(cloth, config), (cube, config)])
    scene.bodies[1].state.v[:] = (0.0, 0.0, -2.0)
    momentum = lambda: sum(b.model.mass @ b.state.v for b in scene.bodies)  # noqa: E731
    before = momentum()
    triangles = [surface_triangles(b.model) for b in scene.bodies]
    for _ in range(8):
        advance_scene_frame(scene, 1.0 / FPS)
        assert between_crossings([b.state.x for b in scene.bodies], triangles) == 0
    assert scene.touched == {0, 1}
    assert np.abs(momentum() - before).max() < 1e-9 * np.abs(before).max()
    assert (cloth.mass @ scene.bodies[0].state.v)[2] < -0.1 * abs(before[2])  # the cloth was pushed


def test_newton_bodies_rub_with_coulomb_friction():
    """A NEWTON cube sliding at 1 m/s on a NEWTON cloth pinned flat (one system): the lagged friction of the pairs
    between the bodies (mu = BODY_FRICTION, 0.3) stops it after v^2 / (2 mu g) = 0.170 m (measured 0.168 m), and it
    stays 1 cm (the barrier's reach) above the cloth. Frictionless it would still slide at ~0.9 m/s."""
    from solvers.newton import BODY_FRICTION

    V, E, T = grid_cloth(11, 2.0, 0.0)
    floor = build_model(V, E, T, pinned=np.ones(len(V), bool), total_mass=1.0, quads=grid_quads(11))
    corners, tris = box_mesh(0.2, 0.2, 0.2)
    cube = solid_model(corners - [0.6, 0.1, -0.0105], tris, 2, mass=1.0)
    config = SolverConfig(solver="NEWTON", damping=0.0)
    scene = Scene([(floor, config), (cube, config)])
    state = scene.bodies[1].state
    state.v[:] = (1.0, 0.0, 0.0)
    start = state.x[:, 0].mean()
    for _ in range(16):
        advance_scene_frame(scene, 1.0 / FPS)
    expected = 1.0 / (2.0 * BODY_FRICTION * 9.81)
    assert abs(state.x[:, 0].mean() - start - expected) < 0.05 * expected
    assert np.abs(state.v).max() < 1e-3
    assert 0.0 < state.x[:, 2].min() < 0.0101


def run_two_cloths(frames, couple=True, solver="XPBD"):
    """Two 3 m, 21 x 21 cloths, 0.3 m apart, dropped onto a sphere of radius 0.5 m (``solver``). Returns the most
    crossing pairs between them at any frame and the final heights of their middle vertices (lower, upper) [m]."""
    bodies = []
    for height in (0.7, 1.0):
        V, E, T = grid_cloth(21, 3.0, height)
        bodies.append((build_model(V, E, T, total_mass=1.0, quads=grid_quads(21)), SolverConfig(solver=solver)))
    scene = Scene(bodies)
    if not couple:
        scene.contact = None
    sphere = [Sphere(np.zeros(3), 0.5, thickness=0.01, friction=0.3)]
    triangles = [surface_triangles(b.model) for b in scene.bodies]
    worst = 0
    for _ in range(frames):
        advance_scene_frame(scene, 1.0 / FPS, sphere)
        worst = max(worst, between_crossings([b.state.x for b in scene.bodies], triangles))
    centre = 220  # the middle vertex of both grids, on the sphere's top
    return worst, tuple(float(b.state.x[centre, 2]) for b in scene.bodies)


@pytest.mark.parametrize("solver", ["XPBD", "NEWTON"])
def test_two_cloths_on_a_sphere_do_not_cross(solver):
    """No edge of one cloth through a triangle of the other at any frame, and the upper one lies on the lower one
    over the sphere's top, at least half the thickness above it. Without the coupling the upper cloth falls through.
    NEWTON: both cloths in one system (their barrier and CCD)."""
    worst, (lower, upper) = run_two_cloths(14, solver=solver)
    assert worst == 0
    assert upper - lower > 0.5 * 0.01


def test_one_body_scene_is_advance_frame():
    """A scene of one body is advance_frame bit for bit, colliders shared or given per body: a pinned cloth with
    self-collision, pins moving, a moving sphere."""
    V, E, T = grid_cloth(8, 1.0, 0.3)
    pinned = np.zeros(len(V), bool)
    pinned[[0, 7]] = True
    model = build_model(V, E, T, pinned=pinned, total_mass=0.5, quads=grid_quads(8))
    config = SolverConfig(solver="XPBD", substeps=6, use_self_collision=True)
    solver, state = make_solver(model, config), State.at_rest(model)
    scene, per_body = Scene([(model, config)]), Scene([(model, config)])
    for frame in range(1, 5):
        sphere = Sphere(np.array([0.0, 0.0, 0.1 * frame]), 0.2, thickness=0.01, friction=0.3,
                        start=Sphere(np.array([0.0, 0.0, 0.1 * (frame - 1)]), 0.2))
        targets = model.rest_positions + [0.05 * frame, 0.0, 0.0]
        advance_frame(solver, state, 1.0 / FPS, config.substeps, [sphere], targets)
        advance_scene_frame(scene, 1.0 / FPS, [sphere], [targets])
        advance_scene_frame(per_body, 1.0 / FPS, [[sphere]], [targets])  # colliders given per body
    for s in (scene, per_body):
        assert np.array_equal(state.x, s.bodies[0].state.x)
        assert np.array_equal(state.v, s.bodies[0].state.v)
    assert np.abs(state.x - model.rest_positions).max() > 0.1  # it did move


def test_tet_surface_is_the_closed_outward_boundary():
    cube = hammock_cube()
    faces = tet_surface(cube.tet_indices)
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert np.all(counts == 2)  # closed
    centre = cube.rest_positions.mean(axis=0)
    assert winding_number(centre[None], cube.rest_positions, faces, beta=None)[0] == pytest.approx(1.0)  # outward
    assert abs(np.ptp(cube.rest_positions[np.unique(faces)], axis=0) - 0.4).max() < 1e-9


def test_a_solid_meets_other_bodies_on_its_drawn_faces_too():
    """A solid's contact surface is its tet boundary plus the faces of its mesh as drawn that are not boundary faces
    (each once): a cube's 12 triangles over its 8 corners, which stay flat where the finer boundary dents."""
    cube = hammock_cube()
    boundary, surface = tet_surface(cube.tet_indices), surface_triangles(cube)
    assert len(cube.collision_triangles) == 12 and cube.collision_triangles.max() < 8
    key = lambda t: set(map(tuple, np.sort(t, axis=1)))  # noqa: E731
    assert key(surface) == key(boundary) | key(cube.collision_triangles)
    assert len(key(surface)) == len(surface)  # no triangle twice
    assert len(key(boundary) & key(cube.collision_triangles)) == 0  # resolution 4 splits the cube's faces
    corners, tris = box_mesh(0.4, 0.4, 0.4)
    coarse = solid_model(corners, tris, 2)  # its own faces may be boundary faces: they are not added twice
    assert len(key(surface_triangles(coarse))) == len(surface_triangles(coarse))


def test_scene_substeps_are_the_largest_of_the_position_level_bodies():
    cloth = hammock_cloth()
    scene = Scene([(cloth, SolverConfig(solver="XPBD", substeps=10)), (hammock_cube(), SolverConfig(solver="XPBD"))])
    assert scene.substeps == 30
    scene = Scene([(cloth, SolverConfig(solver="XPBD", substeps=10)), (hammock_cube(), SolverConfig(solver="NEWTON", substeps=40))])
    assert (scene.substeps, scene.lockstep, scene.alone) == (10, [0], [1])


def two_sheets(self_collision=(False, False)):
    """Two 1 m, 5 x 5 sheets built apart (z = 0 and 0.5: pairs closer than thickness where a bake starts are left
    alone), the upper one 10 times lighter, as BodyContact input; ``close`` puts them 1 cm apart."""
    bodies = []
    for height, mass, own in zip((0.0, 0.5), (1.0, 0.1), self_collision):
        V, E, T = grid_cloth(5, 1.0, height)
        model = build_model(V, E, T, total_mass=mass)
        config = SolverConfig(solver="XPBD", thickness=0.02, use_self_collision=own)
        bodies.append((model, config, make_solver(model, config)))
    return bodies


def close(bodies):
    """The positions of ``two_sheets`` with the upper sheet 1 cm above the lower (z = 0.01)."""
    xs = [m.rest_positions.copy() for m, _, _ in bodies]
    xs[1][:, 2] = 0.01
    return xs


def test_bodies_built_overlapping_are_left_alone_where_they_overlap():
    """A copy left in place (every vertex on its original's): no pair between them is kept, so nothing pushes
    coincident surfaces along undefined normals (a bake of such copies exploded at frame 2)."""
    from solvers.collision.response.body_contact import BodyContact

    V, E, T = grid_cloth(5, 1.0, 0.0)
    bodies = []
    for _ in range(2):
        model = build_model(V, E, T)
        config = SolverConfig(solver="XPBD", thickness=0.02)
        bodies.append((model, config, make_solver(model, config)))
    contact = BodyContact(bodies)
    xs = [m.rest_positions.copy() for m, _, _ in bodies]
    assert contact.resolve(xs, [x.copy() for x in xs]) == 0
    assert all(np.array_equal(x, m.rest_positions) for x, (m, _, _) in zip(xs, bodies))


def test_contact_is_mass_weighted_and_keeps_momentum():
    """The light sheet sitting 1 cm on the heavy one, thickness 2 cm: the response moves them apart (by the recovery
    of one call, RECOVERY thickness), the light sheet ten times as far as the heavy one (inverse masses), keeping the
    total momentum of the correction."""
    from solvers.collision.response.body_contact import BodyContact
    from solvers.collision.response.self_contact import RECOVERY

    assert RECOVERY * 0.02 < 0.01  # the sheets stay closer than thickness after one call

    bodies = two_sheets()
    contact = BodyContact(bodies)
    xs = close(bodies)
    placed = [x.copy() for x in xs]
    prevs = [x.copy() for x in xs]
    contact.resolve(xs, prevs)
    heavy = xs[0][:, 2] - placed[0][:, 2]
    light = xs[1][:, 2] - placed[1][:, 2]
    assert light.mean() - heavy.mean() == pytest.approx(RECOVERY * 0.02)  # recovery: RECOVERY * thickness per call
    assert light.mean() == pytest.approx(-10.0 * heavy.mean(), rel=1e-6)
    momentum = sum(m.mass @ (x - p) for (m, _, _), x, p in zip(bodies, xs, placed))
    assert np.abs(momentum).max() < 1e-12


def test_pairs_within_a_body_only_with_its_own_self_collision():
    """The shared surface keeps pairs of two bodies always, pairs within a body only when its self-collision is on;
    that body's solver then leaves its own self-collision to the scene (not run twice)."""
    from solvers.collision.response.body_contact import BodyContact

    for own in ((False, False), (True, False)):
        bodies = two_sheets(own)
        contact = BodyContact(bodies)
        assert all(solver.self_collision is None for _, _, solver in bodies)
        x = np.concatenate([m.rest_positions for m, _, _ in bodies])
        x[:25, 2] = 0.5 * np.sin(x[:25, 0] * 6.0)  # fold the first sheet so that it comes near itself
        (v, t, _), (e1, e2, _) = contact.contact._query(x, 0.3)
        body = contact.contact.body
        tri, edges = contact.contact.triangles, contact.contact.edges
        within_vt = body[v] == body[tri[t, 0]]
        within_ee = body[edges[e1, 0]] == body[edges[e2, 0]]
        assert np.any(~within_vt) and np.any(~within_ee)
        if own[0]:
            assert np.any(within_vt & (body[v] == 0)) and np.any(within_ee & (body[edges[e1, 0]] == 0))
        assert not np.any(within_vt & (body[v] == 1)) and not np.any(within_ee & (body[edges[e1, 0]] == 1))
        if not own[0]:
            assert not np.any(within_vt) and not np.any(within_ee)


RIDGE = (np.array([[0, 0, 0], [1, 0, 0], [1, 0.5, 0.2], [0, 0.5, 0.2], [0, 1, 0], [1, 1, 0]], float),
         np.array([[0, 1, 2], [0, 2, 3], [3, 2, 5], [3, 5, 4]]))
"""A collider roof whose ridge (a sharp edge, corners at its ends) runs along x at y = 0.5, 0.2 m up."""
SQUARE = (np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float), np.array([[0, 1, 2], [0, 2, 3]]))


@pytest.mark.parametrize("surface, body, pairs", [
    (SQUARE, [[0.3, 0.2, 0.01], [0.8, 0.4, 0.03], [0.4, 0.9, 0.04]], (False, False, True)),
    (RIDGE, [[-0.01, 0.3, 0.22], [0.05, 0.7, 0.23], [0.3, 0.5, 0.24]], (True, True, True))])
def test_mesh_barrier_reaction_is_minus_the_energy_gradient_on_the_collider(surface, body, pairs):
    """``MeshContactBarrier.collider_forces`` (the load a NEWTON body presses into another body's surface) is -dB/dc
    over the collider's vertices c (central differences), and the pairs' forces on the body and on the collider sum
    to zero. A triangle 1-4 cm above a flat square (vertex-triangle pairs), and over the end of a roof's ridge
    (a ridge corner against the triangle, the ridge against its edges, a vertex over a face)."""
    from solvers.collision.colliders.mesh_collider import MeshCollider

    vertices, faces = surface
    x = np.array(body, float)
    body_triangles, d_hat = np.array([[0, 1, 2]]), 0.05

    def barrier(v):
        return MeshCollider(v, faces, thickness=d_hat).face_barrier(body_triangles, 10.0, d_hat, np.arange(3))

    b = barrier(vertices)
    assert tuple(len(n[-1]) > 0 for n in b._near(x)) == pairs  # corner-triangle, edge-edge, vertex-triangle
    force = b.collider_forces(x)
    h = 1e-7
    numeric = np.zeros_like(vertices)
    for i in range(len(vertices)):
        for k in range(3):
            up, down = vertices.copy(), vertices.copy()
            up[i, k] += h
            down[i, k] -= h
            numeric[i, k] = -(barrier(up).value(x) - barrier(down).value(x)) / (2 * h)
    assert np.allclose(force, numeric, rtol=1e-4, atol=1e-5 * np.abs(numeric).max())
    assert np.allclose(force.sum(axis=0), b.gradient(x).sum(axis=0), atol=1e-9 * np.abs(force).max())
    assert force[:, 2].sum() < 0.0  # the body presses the collider down
