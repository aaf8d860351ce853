"""The contact set (solvers/collision/response/contact_set.py): what ``find_contacts`` finds, checked against brute
force over every particle, every collider corner against every body triangle and every collider edge against every body
edge; and that the Verlet list it keeps still holds every pair after the body moves within its skin."""
import numpy as np
import pytest

from solvers import GroundPlane, MeshCollider
from solvers.builder import grid_cloth
from solvers.collision.response.contact_set import find_contacts
from solvers.collision.narrow_phase.crossings import triangle_edges
from solvers.collision.barriers.mesh_barrier import MeshContactBarrier
from solvers.collision.broad_phase.mesh_broad_phase import SKIN
from solvers.collision.narrow_phase.primitives import point_triangle_distance, segment_distance
from test_mesh_collider import box


def _draped(seed=3):
    """A 1.5 m cloth (16 x 16) crumpled over the rim of a 2 x 2 x 0.5 m box's top corner, moving by up to 2 cm."""
    v, _, t = grid_cloth(16, 1.5, height=0.5)
    rng = np.random.default_rng(seed)
    x_prev = v + np.array([0.9, 0.9, 0.0]) + rng.normal(0.0, 0.015, v.shape)
    x = x_prev + rng.normal(0.0, 0.007, v.shape)
    return x, x_prev, t


def _all_pairs(collider, x, triangles, edges, reach):
    """Every (corner, triangle) and (collider edge, body edge) pair within reach, by exact distance over all pairs."""
    corners = collider.vertices[collider.shared.corners]
    ci, ti = (a.ravel() for a in np.meshgrid(np.arange(len(corners)), np.arange(len(triangles)), indexing="ij"))
    body = x[triangles[ti]]
    near = point_triangle_distance(corners[ci], body[:, 0], body[:, 1], body[:, 2])[0] <= reach
    pt = set(zip(ci[near].tolist(), ti[near].tolist()))
    mine = collider.shared.edges
    ei, bi = (a.ravel() for a in np.meshgrid(np.arange(len(mine)), np.arange(len(edges)), indexing="ij"))
    c = collider.vertices
    near = segment_distance(c[mine[ei, 0]], c[mine[ei, 1]], x[edges[bi, 0]], x[edges[bi, 1]])[0] <= reach
    return pt, set(zip(ei[near].tolist(), bi[near].tolist()))


def test_find_contacts_holds_every_point_contact_and_every_face_pair_within_reach():
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.02)
    ground = GroundPlane(np.zeros(3), np.array([0.0, 0.0, 1.0]), thickness=0.02)
    x, x_prev, t = _draped()
    inv_mass = np.ones(len(x))
    inv_mass[:3] = 0.0
    found = find_contacts(x, x_prev, inv_mass, [ground, collider], None, t)

    # Point contacts: exactly the free particles whose signed distance is within their step's motion.
    moved = np.linalg.norm(x - x_prev, axis=1)
    by_collider = {id(c.collider): c for c in found.points}
    assert id(ground) not in by_collider  # the cloth lies 0.5 m above the ground
    box_points = by_collider[id(collider)]
    d, _ = collider.contact(x, x_prev)
    expected = np.flatnonzero((d < moved) & (inv_mass > 0.0))
    assert len(expected) > 20
    np.testing.assert_array_equal(np.sort(box_points.particles), expected)
    np.testing.assert_allclose(box_points.distance, d[box_points.particles])
    np.testing.assert_allclose(np.linalg.norm(box_points.normal, axis=1), 1.0)

    # Face pairs: a superset of every pair within thickness, with their distances at detection.
    (faces,) = found.faces
    assert faces.collider is collider
    edges = triangle_edges(t)
    pt, ee = _all_pairs(collider, x, t, edges, collider.thickness)
    assert pt and ee  # the rim's corner and edges press into the cloth
    assert pt <= set(zip(*(a.tolist() for a in faces.corner_triangle)))
    assert ee <= set(zip(*(a.tolist() for a in faces.edge_edge)))
    ci, ti = faces.corner_triangle
    body = x[t[ti]]
    np.testing.assert_allclose(faces.corner_distance, point_triangle_distance(
        vertices[collider.shared.corners[ci]], body[:, 0], body[:, 1], body[:, 2])[0])
    assert found.count() == len(box_points.particles) + len(faces)


def test_kept_face_pairs_hold_every_pair_while_the_body_moves_within_the_skin():
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.02)
    x, _, t = _draped(seed=7)
    x[:, 2] += 0.02  # most of the cloth just beyond thickness of the rim: moving down brings pairs in
    edges = triangle_edges(t)
    first = collider.face_pairs(x, t)
    rng = np.random.default_rng(11)
    at_start = _all_pairs(collider, x, t, edges, collider.thickness)
    came_in = 0  # pairs within thickness after a move that were not at x: what the skin is for
    for _ in range(5):
        step = rng.normal(0.0, 0.2, x.shape) + np.array([0.0, 0.0, -1.0])
        step *= (0.99 * SKIN / 3.0) / np.linalg.norm(step, axis=1).max()
        y = x + step
        kept = collider.face_pairs(y, t)
        assert kept.corner_triangle is first.corner_triangle  # the same list, not found anew
        pt, ee = _all_pairs(collider, y, t, edges, collider.thickness)
        came_in += len(pt - at_start[0]) + len(ee - at_start[1])
        assert pt <= set(zip(*(a.tolist() for a in kept.corner_triangle)))
        assert ee <= set(zip(*(a.tolist() for a in kept.edge_edge)))
    assert came_in > 0
    far = x + np.array([0.0, 0.0, SKIN])  # moved farther than the skin allows: found anew
    assert collider.face_pairs(far, t).corner_triangle is not first.corner_triangle


def test_a_kept_list_is_refreshed_only_around_the_points_that_moved_beyond_their_allowance():
    """A cloth lying on a box's top: its far part (0.7 m and more beyond the rim: allowances of many skins) lifted and
    swung by 10 cm, then one point on the rim moved by more than SKIN / 3, then most of the cloth by a skin. The
    first keeps the list as it is, the second refreshes only the elements around that point, the third finds it
    anew; every time the list holds every pair within thickness (brute force)."""
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    v, _, t = grid_cloth(31, 3.0, height=0.5 + 0.008)  # on the top, overhanging every rim
    v[:, 0] += 0.9  # the far part lies beyond the box's side x = 1
    edges = triangle_edges(t)
    searched = []
    original = collider._pairs_within
    collider._pairs_within = lambda x, tris, tri_rows, *rest: searched.append(len(tri_rows)) or original(x, tris, tri_rows, *rest)

    def holds_every_pair(y):
        kept = collider.face_pairs(y, t)
        pt, ee = _all_pairs(collider, y, t, edges, collider.thickness)
        assert pt <= set(zip(*(a.tolist() for a in kept.corner_triangle)))
        assert ee <= set(zip(*(a.tolist() for a in kept.edge_edge)))
        return len(pt) + len(ee)

    assert holds_every_pair(v) > 10 and searched == [len(t)]
    far = v[:, 0] > 1.7  # more than L + reach + skin from every box edge
    rng = np.random.default_rng(3)
    y = v.copy()
    y[far] += np.clip(rng.normal(0.0, 0.05, (int(far.sum()), 3)), -0.1, 0.1) + [0.0, 0.0, 0.05]
    holds_every_pair(y)
    assert searched == [len(t)]  # within their allowances: the same list
    near = np.argmin(np.abs(v[:, 0] - 1.0) + np.abs(v[:, 1]))  # on the rim x = 1
    y[near] += [0.0, 0.0, 0.5 * SKIN]
    holds_every_pair(y)
    assert len(searched) == 2 and 0 < searched[1] < 0.1 * len(t)  # the triangles around the points moved most
    y[~far] += rng.normal(0.0, SKIN, (int((~far).sum()), 3))
    holds_every_pair(y)
    assert searched[-1] == len(t)  # found anew


def test_refreshed_lists_hold_every_pair_through_many_small_and_some_large_motions():
    """A cloth crumpled over the box's corner, 24 asks: everything jitters by a millimetre, a few random points jump by
    up to two skins each time. After every ask the list (kept, refreshed or found anew) holds every pair within
    thickness (brute force), and most asks were answered by a refresh or the list as it was."""
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.02)
    x, _, t = _draped(seed=12)
    edges = triangle_edges(t)
    searched = []
    original = collider._pairs_within
    collider._pairs_within = lambda y, tris, tri_rows, *rest: searched.append(len(tri_rows)) or original(y, tris, tri_rows, *rest)
    rng = np.random.default_rng(12)
    for _ in range(24):
        x = x + rng.normal(0.0, 0.001, x.shape)
        jump = rng.random(len(x)) < 0.02
        x[jump] += rng.normal(0.0, SKIN, (int(jump.sum()), 3))
        kept = collider.face_pairs(x, t)
        pt, ee = _all_pairs(collider, x, t, edges, collider.thickness)
        assert pt <= set(zip(*(a.tolist() for a in kept.corner_triangle)))
        assert ee <= set(zip(*(a.tolist() for a in kept.edge_edge)))
    assert sum(1 for n in searched if n == len(t)) < 6 < len(searched)


def test_newton_barrier_on_the_kept_pairs_equals_the_barrier_over_every_pair():
    """NEWTON's mesh barrier reads its corner and edge pairs from the collider's kept list; its energy must equal
    the barrier summed over every pair within d_hat found by brute force."""
    from solvers.collision.barriers.log_barrier import barrier_terms

    vertices, triangles = box()
    d_hat = 0.03
    collider = MeshCollider(vertices, triangles, thickness=d_hat)
    x, _, t = _draped(seed=5)
    x[:, 2] += 0.02  # everything outside the box, many pairs within d_hat
    edges = triangle_edges(t)
    barrier = MeshContactBarrier(collider, t, edges, kappa=10.0, d_hat=d_hat)
    collider.face_pairs(x - 0.003, t, d_hat)  # a list found a little earlier, still within its skin
    pt, ee = _all_pairs(collider, x, t, edges, d_hat)
    assert len(pt) + len(ee) > 5
    corners, c = collider.vertices[collider.shared.corners], collider.vertices
    total = 0.0
    for ci, ti in pt:
        d = point_triangle_distance(corners[ci][None], *(x[t[ti]][k][None] for k in range(3)))[0]
        total += float(barrier_terms(d, d_hat, 10.0)[0].sum())
    for ei, bi in ee:
        a, b = collider.shared.edges[ei]
        d = segment_distance(c[a][None], c[b][None], x[edges[bi, 0]][None], x[edges[bi, 1]][None])[0]
        total += float(barrier_terms(d, d_hat, 10.0)[0].sum())
    assert total > 0.0
    np.testing.assert_allclose(barrier.value(x), total, rtol=1e-10)


def test_newton_barrier_ccd_on_the_kept_vertex_pairs_equals_ccd_on_the_broad_phase():
    """NEWTON's mesh barrier bounds a step's length by CCD of its vertices against the collider's triangles; where its
    kept vertex-triangle list covers the step (the motion since the list plus the step within the list's reach) it
    tests those pairs instead of a broad-phase query: the same largest step, bit for bit, for steps within and
    beyond the list's reach, before and after the body moves."""
    vertices, triangles = box()
    d_hat = 0.01
    x, _, t = _draped(seed=7)
    x[:, 2] += 0.012  # the vertices near the box's top and rim, some within d_hat + the skin
    edges = triangle_edges(t)
    points = np.arange(len(x))
    rng = np.random.default_rng(8)
    kept = MeshContactBarrier(MeshCollider(vertices, triangles, thickness=d_hat), t, edges, 10.0, d_hat, points)
    kept._near(x)  # finds and keeps its vertex list
    assert kept._vertex_list is not None
    limited, covered = 0, 0
    for shift, scale in ((0.0, 0.001), (0.001, 0.001), (0.0, 0.005), (0.004, 0.02)):
        y = x + shift * rng.normal(size=x.shape)
        dx = scale * rng.normal(size=x.shape) + [0.0, 0.0, -2.0 * scale]  # towards the box
        move = float(np.sqrt(np.einsum("ij,ij->i", dx, dx).max()))
        covered += kept._kept_vertex_pairs(y, move) is not None
        fresh = MeshContactBarrier(MeshCollider(vertices, triangles, thickness=d_hat), t, edges, 10.0, d_hat, points)
        alpha = kept.max_step(y, dx)
        assert alpha == fresh.max_step(y, dx)
        limited += alpha < 1.0
    assert limited >= 2 and 0 < covered < 4  # steps that reach the box; kept pairs and the broad phase's both


@pytest.mark.parametrize("path", ["whole frames", "per substep", "NUMPY"])
@pytest.mark.parametrize("solver", ["XPBD", "PBD", "PROJECTIVE"])
@pytest.mark.parametrize("on", ["ground", "box", "box's face"])
def test_a_cloth_laid_within_a_colliders_thickness_is_moved_out_without_a_jump(on, solver, path):
    """A cloth laid flat on the ground at z = 0, 5 mm over a box's top or exactly on it, lies inside the collider's
    1 cm thickness: its first step moves it out to the thickness without giving it the speed of that move
    (pre-stabilization, ``ContactConstraints.stabilize``; Projective Dynamics' ``_stabilize``). Without it the XPBD
    cloth left at ~7 m/s (0.01 m in a substep) and flew 2 m up, Projective Dynamics' 0.7 m. Laid exactly on the face,
    every vertex is on its outer side (``mesh_collider.ON_SURFACE``: read at random from round-off, a few were pushed
    1.3 cm into the box).
    Over half a second it stays on the surface: no vertex above it by more than 1 mm, every speed below 5 cm/s."""
    from solvers import SolverConfig, State, advance_frame, build_model, make_solver
    from solvers.collision.colliders.shapes import frame_colliders

    top = 0.0 if on == "ground" else 0.6
    v, e, t = grid_cloth(11, 0.8, height=top + 0.005 if on == "box" else top)
    body = make_solver(build_model(v, e, t), SolverConfig(solver=solver, compute="NUMPY" if path == "NUMPY" else "AUTO"))
    if path == "per substep":
        body.native_frame = lambda run, dt, colliders=(): False
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.3, name="Ground")
    vertices, triangles = box(half=(0.6, 0.6, 0.3), center=(0.0, 0.0, 0.3))

    def read():
        return [ground] + ([MeshCollider(vertices, triangles, thickness=0.01, friction=0.3, name="Box")] if top else [])

    state, previous = State.at_rest(body.model), None
    for frame in range(12):
        current = read()
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, current))
        previous = current
        assert state.x[:, 2].max() <= top + 0.011, f"frame {frame + 1}: {1000 * (state.x[:, 2].max() - top):.0f} mm up"
    assert np.linalg.norm(state.v, axis=1).max() < 0.05
    assert state.x[:, 2].min() >= top + 0.0099  # out to the thickness
