"""Any mesh as a collider (solvers/collision/colliders/mesh_collider.py): exact distances, sides kept, corners and edges
kept out of a cloth's faces, a cloth draped over a box."""
import numpy as np
import pytest

from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, frame_colliders, make_solver
from solvers.builder import grid_cloth
from solvers.collision.colliders.mesh_collider import SEARCH_MARGIN
from solvers.collision.narrow_phase.crossings import segments_cross_triangles

BOX_EDGES = np.array([[0, 1], [0, 2], [0, 4], [1, 3], [1, 5], [2, 3], [2, 6], [3, 7], [4, 5], [4, 6], [5, 7], [6, 7]])


def box(half=(1.0, 1.0, 0.25), center=(0.0, 0.0, 0.25)):
    """A closed box mesh: 8 corners (index 4 ix + 2 iy + iz), 12 outward triangles."""
    hx, hy, hz = half
    v = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) + center
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def brute_distance(x, vertices, triangles):
    """Distance of each point to the mesh by dense sampling of every triangle (upper bound, ~1 mm accurate here)."""
    s = np.linspace(0.0, 1.0, 60)
    u, w = np.meshgrid(s, s)
    inside = u + w <= 1.0
    u, w = u[inside], w[inside]
    corners = vertices[triangles]
    samples = (corners[:, 0, None] * (1 - u - w)[None, :, None] + corners[:, 1, None] * u[None, :, None]
               + corners[:, 2, None] * w[None, :, None]).reshape(-1, 3)
    return np.min(np.linalg.norm(x[:, None] - samples[None], axis=2), axis=1)


def test_distances_match_dense_sampling_of_the_mesh():
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.0)
    rng = np.random.default_rng(1)
    x = rng.uniform([-1.15, -1.15, -0.1], [1.15, 1.15, 0.6], size=(300, 3))
    d, n = collider.surface_distance(x)
    near = np.isfinite(d)
    reference = brute_distance(x, vertices, triangles)
    assert near[reference < SEARCH_MARGIN - 0.03].all()  # every point within the search margin has its distance
    assert near.sum() > 100
    d, n, reference = d[near], n[near], reference[near]
    assert np.all(d <= reference + 1e-9)  # exact is never above a sampled upper bound
    np.testing.assert_allclose(d, reference, atol=0.03)  # the sampling grid is ~3 cm on the 2 m faces
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0)


@pytest.mark.parametrize("compute", ["NUMPY", "AUTO"])
@pytest.mark.parametrize("band", [1e-6, 1e-3, 0.02])
def test_within_answers_as_the_distance_does(band, compute):
    """``MeshCollider.within`` (its narrower nearest-triangle query) marks exactly the points whose ``distance`` is
    below band: points scattered around a box with thickness 1 cm and points placed at thickness + band from its top
    and sides (one ulp either way), on a still box and on a moving one's pose; with the NumPy queries and with the C
    ones (``native.mesh_kernels.attach``) where the library loads."""
    from solvers.native import library as native_library
    from solvers.native.mesh_kernels import attach

    vertices, triangles = box()
    rng = np.random.default_rng(5)
    scattered = rng.uniform([-1.1, -1.1, -0.1], [1.1, 1.1, 0.6], size=(400, 3))
    edge = 0.01 + band
    at_top = np.column_stack([rng.uniform(-0.9, 0.9, 50), rng.uniform(-0.9, 0.9, 50), np.full(50, 0.5 + edge)])
    at_side = np.column_stack([np.full(50, 1.0 + edge), rng.uniform(-0.9, 0.9, 50), rng.uniform(0.05, 0.45, 50)])
    x = np.concatenate([scattered, at_top, np.nextafter(at_top, np.inf), np.nextafter(at_top, -np.inf), at_side,
                        np.nextafter(at_side, np.inf), np.nextafter(at_side, -np.inf)])
    still = MeshCollider(vertices, triangles, thickness=0.01)
    moving = MeshCollider(vertices + [0.05, 0.0, 0.01], triangles, thickness=0.01).moving_from(still).over(0.0, 0.5)
    if compute == "AUTO":
        library = native_library.load("AUTO")
        if library is None:
            pytest.skip("the native library does not load here")
        attach(library, [still, moving])
        assert still.shared.native is not None and moving.shared.native is not None
    for collider in (still, moving):
        inside = collider.distance(x) < band
        np.testing.assert_array_equal(collider.within(x, band), inside)
        assert inside.any() and not inside.all()


def test_contact_keeps_the_side_a_point_came_from():
    """A point that went through the box's top within a step is put back above it, not pushed out of the bottom."""
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    x_prev = np.array([[0.1, 0.2, 0.55]])
    x = np.array([[0.1, 0.2, 0.40]])  # 10 cm inside the top, nearer the top than any other face
    d, n = collider.contact(x, x_prev)
    np.testing.assert_allclose(n[0], [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(d[0], -0.11, atol=1e-12)


def test_a_point_beside_a_side_face_and_level_with_the_top_is_outside():
    """A cloth vertex 13.5 mm above a box's top rim, 1e-11 m inside the plane of the side face (round-off of a cloth
    resting on the rim), moves to 10 mm above the rim and just over it. Against the side face's own normal the start
    reads as inside (its nearest triangle there is the side face, the point beside it) and the vertex was pushed 20 mm
    down into the top; against the rim edge's pseudo-normal it is outside, 0.03 mm clear of the thickness."""
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    x_prev = np.array([[-0.9, -1.0 + 1e-11, 0.5135]])
    x = np.array([[-0.9, -1.0 + 7e-6, 0.51003]])
    d, n = collider.contact(x, x_prev)
    np.testing.assert_allclose(n[0], [0.0, 0.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(d[0], 3e-5, atol=1e-9)


def split_triangles(vertices, triangles, times):
    """The mesh with every triangle cut into four at its edges' midpoints, ``times`` times (a box's edges become
    straight runs of 2**times collinear edges)."""
    for _ in range(times):
        pairs = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        mid = len(vertices) + inverse.ravel().reshape(3, -1).T  # (t, 3): midpoints of sides 01, 12, 20
        vertices = np.concatenate([vertices, 0.5 * (vertices[unique[:, 0]] + vertices[unique[:, 1]])])
        a, b, c = triangles.T
        m01, m12, m20 = mid.T
        triangles = np.concatenate([np.stack(f, axis=1) for f in ((a, m01, m20), (m01, b, m12), (m20, m12, c), (m01, m12, m20))])
    return vertices, triangles


def drop_on_box(solver, count, size, height, frames, splits=0):
    """A cloth (count x count, size [m] across) dropped flat from height [m] onto a 2 x 2 x 0.5 m box mesh on a ground
    (thickness 1 cm, friction 0.3; its triangles split ``splits`` times), advanced that many frames at 24 fps,
    asserting at every frame that no vertex is inside the box and no box edge crosses a cloth triangle. Returns the
    final state."""
    v, e, t = grid_cloth(count, size, height=height)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver=solver))
    state = State.at_rest(model)
    vertices, triangles = split_triangles(*box(), splits)
    colliders = [MeshCollider(vertices, triangles, thickness=0.01, friction=0.3, name="Box"),
                 GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, name="Ground")]
    P, Q = vertices[BOX_EDGES[:, 0]], vertices[BOX_EDGES[:, 1]]
    i, j = (a.ravel() for a in np.meshgrid(np.arange(len(BOX_EDGES)), np.arange(len(t)), indexing="ij"))
    for frame in range(1, frames + 1):
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, colliders)
        x = state.x
        depth = np.minimum.reduce([1.0 - np.abs(x[:, 0]), 1.0 - np.abs(x[:, 1]), 0.5 - x[:, 2], x[:, 2]])
        assert depth.max() < 1e-3, f"frame {frame}: a vertex {1000 * depth.max():.1f} mm inside the box"
        cuts = segments_cross_triangles(P[i], Q[i], x[t[j, 0]], x[t[j, 1]], x[t[j, 2]])
        assert not cuts.any(), f"frame {frame}: {int(cuts.sum())} box edge/cloth triangle crossings"
    return state


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE", "IMPLICIT_EULER", "NEWTON"])
def test_a_cloth_dropped_on_a_box_rests_on_it_with_no_corner_or_edge_through_it(solver):
    """A 2.6 m cloth (21 x 21) dropped 0.4 m onto a 2 x 2 x 0.5 m box on a ground: nothing inside the box, no box edge
    through the cloth at any frame, its centre rests on the top within thickness + 5 cm, and at rest it is not
    stretched over the box's rim (measured at frame 30, largest edge strain: XPBD 0.4%, PROJECTIVE 0.3%,
    IMPLICIT_EULER 0.3%; IMPLICIT_EULER was at 52.6% when its solve pulled the rim's vertices back in every step)."""
    x = drop_on_box(solver, 21, 2.6, 0.9, 30).x
    centre = x[len(x) // 2]
    assert 0.5 <= centre[2] < 0.5 + 0.01 + 0.05, f"the centre rests at z = {centre[2]:.3f} m"
    v, e, t = grid_cloth(21, 2.6, height=0.9)
    rest = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    strain = np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1) / rest - 1.0
    assert strain.max() < 0.02, f"an edge is stretched {100 * strain.max():.1f}% at rest"


def test_a_subdivided_box_tests_only_its_true_corners_and_keeps_every_edge_outside():
    """A box whose triangles were split twice: its 12 edges are straight runs of 4 sharp edges each, met by the edge
    tests as 12 segments, whose inner vertices take no part in the corner tests (the edge tests cover them); a cloth
    dropped on it still has nothing inside the box and no box edge through it at any frame."""
    vertices, triangles = split_triangles(*box(), 2)
    vertices += np.random.default_rng(0).normal(0.0, 5e-8, vertices.shape)  # float32 round-off, as Blender's are
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    assert len(collider.shared.sharp) == 48 and len(collider.shared.corners) == 8
    assert {tuple(sorted(e)) for e in collider.shared.edges} == {tuple(sorted(e)) for e in BOX_EDGES}
    np.testing.assert_allclose(np.abs(collider.vertices[collider.shared.corners] - [0.0, 0.0, 0.25]),
                               np.tile([1.0, 1.0, 0.25], (8, 1)), atol=1e-6)
    x = drop_on_box("XPBD", 21, 2.6, 0.9, 30, splits=2).x
    assert 0.5 <= x[len(x) // 2][2] < 0.5 + 0.01 + 0.05


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE"])
def test_a_cloth_dropped_on_an_open_sheet_rests_on_it_and_drapes_over_its_borders(solver):
    """A table top made of one open 2 x 2 m sheet (8 triangles, no thickness of its own, nothing under it): a 2.6 m
    cloth (21 x 21) dropped 1 m onto it lands at 4.4 m/s; no cloth edge may pass through the sheet at any frame (its
    overhang hangs over the borders and may swing in under the sheet), and its centre comes to rest at thickness
    above it."""
    v, _, t = grid_cloth(3, 2.0, height=0.5)
    cv, ce, ct = grid_cloth(21, 2.6, height=1.5)
    body = make_solver(build_model(cv, ce, ct), SolverConfig(solver=solver))
    state = State.at_rest(body.model)
    previous = None
    for frame in range(1, 37):
        read = [MeshCollider(v, t, thickness=0.01, friction=0.2)]
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, read))
        previous = read
        x = state.x
        i, j = np.meshgrid(np.arange(len(ce)), np.arange(len(t)), indexing="ij")
        i, j = i.ravel(), j.ravel()
        cuts = segments_cross_triangles(x[ce[i, 0]], x[ce[i, 1]], v[t[j, 0]], v[t[j, 1]], v[t[j, 2]])
        assert not cuts.any(), f"frame {frame}: {int(cuts.sum())} cloth edges through the sheet"
    centre = x[len(x) // 2]
    assert abs(centre[2] - 0.51) < 0.003, f"the centre rests at z = {centre[2]:.4f} m"
    assert x[:, 2].min() < 0.4  # the overhang hangs over the borders


def test_a_cloth_landing_fast_on_a_box_in_implicit_euler_keeps_every_box_edge_outside():
    """A 3 m cloth (31 x 31) dropped 1 m onto the box lands at 4 m/s; IMPLICIT_EULER's 2 substeps move it 8 to 19 cm a
    step there. Whole-step contact resolution left box edges through the draped cloth from the landing on (4 to 14
    crossings a frame, and vertices up to 15 cm inside the box once it settled); swept in 2 cm sweeps
    (``collider_contacts.resolve_collider_contacts``), none. The centre comes to rest on the top within
    thickness + 5 cm."""
    state = drop_on_box("IMPLICIT_EULER", 31, 3.0, 1.5, 36)
    centre = len(state.x) // 2
    assert 0.5 <= state.x[centre, 2] < 0.5 + 0.01 + 0.05, f"the centre rests at z = {state.x[centre, 2]:.3f} m"
    assert np.linalg.norm(state.v[centre]) < 0.05, f"the centre still moves at {np.linalg.norm(state.v[centre]):.2f} m/s"


def test_a_cloth_landing_fast_on_a_box_in_projective_dynamics_keeps_every_box_edge_outside():
    """The same 3 m cloth in PROJECTIVE (16 substeps) through its landing and first bounce: the rim vertices, which lie
    in the planes of the box's side faces, were read as inside the box (the side face's normal against round-off)
    and pushed into the top, leaving box edges through the cloth from the landing on (``MeshCollider.pseudo_normals``).
    (Whether the cloth then stays on the box is Projective Dynamics' energy balance, not the contact's.)"""
    drop_on_box("PROJECTIVE", 31, 3.0, 1.5, 18)


BLENDER_CUBE_TRIANGLES = np.array([[0, 1, 3], [0, 3, 2], [2, 3, 7], [2, 7, 6], [6, 7, 5], [6, 5, 4], [4, 5, 1], [4, 1, 0],
                                   [2, 6, 4], [2, 4, 0], [7, 3, 1], [7, 1, 5]])
"""Blender's default cube split into loop triangles (corner index 4 ix + 2 iy + iz, as ``box``), diagonals as Blender picks them."""


def blender_box_drape(frames, contacts_in_solve=True):
    """The box drape of bench/bench_shots.py ("Box drape per solver", PROJECTIVE at the add-on's defaults) in the engine:
    Blender's 31 x 31 grid (3 m, quad edges only, each quad split along its a-c diagonal, 1 kg spread by element), 1.5 m
    above a 2 x 2 x 0.5 m cube on a ground, both colliders at the add-on's thickness 1 cm and friction 0.2, 24 fps.
    Returns the most (box edge, cloth triangle) crossings and the largest edge strain [1] over the frames."""
    n = 31
    v, e, _ = grid_cloth(n, 3.0, height=1.5, diagonals=False)
    j, i = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (j * n + i).ravel()
    b, c, d = a + 1, a + n + 1, a + n
    t = np.stack([np.stack([a, b, c], 1), np.stack([a, c, d], 1)], 1).reshape(-1, 3)  # Blender's triangle order
    model = build_model(v, e, t, total_mass=1.0, mass_distribution="ELEMENT", quads=np.stack([a, b, c, d], 1))
    body = make_solver(model, SolverConfig(solver="PROJECTIVE"))
    body.contacts_in_solve = contacts_in_solve
    state = State.at_rest(model)
    vertices = np.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (0.0, 0.5)])
    colliders = [MeshCollider(vertices, BLENDER_CUBE_TRIANGLES, 0.01, 0.2, "Box"), GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], 0.01, 0.2, "Ground")]
    P, Q = vertices[BOX_EDGES[:, 0]], vertices[BOX_EDGES[:, 1]]
    k, m = (q.ravel() for q in np.meshgrid(np.arange(len(BOX_EDGES)), np.arange(len(t)), indexing="ij"))
    crossings, strain = 0, 0.0
    for _ in range(frames):
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, colliders)
        x = state.x
        crossings = max(crossings, int(segments_cross_triangles(P[k], Q[k], x[t[m, 0]], x[t[m, 1]], x[t[m, 2]]).sum()))
        strain = max(strain, float(np.max(np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1) / model.edge_rest_length - 1.0)))
    return crossings, strain


def test_the_blender_box_drape_in_projective_dynamics_keeps_every_box_edge_outside():
    """bench_shots' PROJECTIVE box drape, replayed in the engine: no box edge through the cloth and no edge stretched
    5% over 24 frames (measured 1.8%). The box's contact planes are in PD's solve (``projective.solver.PlaneContacts``);
    with the end-of-step projection alone (``contacts_in_solve`` False) the projection stored 20-200 J a step in the
    springs on the box's rim (a 1 kg cloth with 1-14 J of kinetic energy), corner flaps whipped at up to 20 m/s and
    two box edges went through the cloth from frame 15 on, the strain climbing to 47-80% around them."""
    crossings, strain = blender_box_drape(24)
    assert crossings == 0, f"{crossings} box edge/cloth triangle crossings, max strain {100 * strain:.0f}%"
    assert strain < 0.05, f"max strain {100 * strain:.1f}%"


@pytest.mark.parametrize("solver", ["XPBD", "NEWTON"])
def test_a_box_moving_through_a_curtain_pushes_it_with_no_corner_or_edge_through_it(solver):
    """A 0.6 m box mesh animated at 2 m/s through a 2 x 2 m curtain (21 x 21) pinned along its top: the curtain is
    pushed at least 0.5 m, no vertex gets inside the box and no box edge through the curtain at any frame."""

    v, e, t = grid_cloth(21, 2.0)
    x = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] + 1.2], 1)
    model = build_model(x, e, t, pinned=x[:, 2] > 2.2 - 1e-9)
    body = make_solver(model, SolverConfig(solver=solver))
    state = State.at_rest(model)

    def box_at(frame):
        vertices, triangles = box(half=(0.3, 0.3, 0.3), center=(0.0, -0.8 + 2.0 * frame / 24.0, 1.2))
        return MeshCollider(vertices, triangles, thickness=0.01, name="Box")

    previous = [box_at(0)]
    i, j = (a.ravel() for a in np.meshgrid(np.arange(len(BOX_EDGES)), np.arange(len(t)), indexing="ij"))
    for frame in range(1, 25):
        collider = box_at(frame)
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, [collider]))
        previous = [collider]
        x, c = state.x, collider.vertices.mean(axis=0)
        depth = np.min(0.3 - np.abs(x - c), axis=1)
        assert depth.max() < 1e-3, f"frame {frame}: a vertex {1000 * depth.max():.1f} mm inside the box"
        P, Q = collider.vertices[BOX_EDGES[:, 0]], collider.vertices[BOX_EDGES[:, 1]]
        cuts = segments_cross_triangles(P[i], Q[i], x[t[j, 0]], x[t[j, 1]], x[t[j, 2]])
        assert not cuts.any(), f"frame {frame}: {int(cuts.sum())} box edge/curtain triangle crossings"
    assert state.x[:, 1].max() > 0.5, f"the curtain was pushed only to y = {state.x[:, 1].max():.2f} m"


@pytest.mark.parametrize("friction", [0.0, 0.5])
def test_friction_holds_a_cloth_edge_sliding_along_the_rim_of_a_box(friction):
    """A cloth edge pressed 5 mm into a box's top rim (thickness 10 mm) while sliding 10 mm along it: the edge push
    takes off up to friction * depth of the slip (as the sphere's face push does), none without friction."""
    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01, friction=friction)
    x = np.array([[0.0, 0.95, 0.505], [0.0, 1.05, 0.505], [0.1, 0.9, 0.6]])  # the first edge crosses the rim y = 1
    x_prev = x - [0.01, 0.0, 0.0]
    moved = x.copy()
    collider.resolve_faces(moved, x_prev, np.ones(3), np.array([[0, 1, 2]]), passes=1)
    slide = moved[:2, 0].mean() - x_prev[:2, 0].mean()
    lift = moved[:2, 2].mean() - x[:2, 2].mean()
    assert lift > 0.004  # pushed up off the rim
    np.testing.assert_allclose(slide, 0.01 - min(0.01, friction * 0.005), atol=5e-4)



def test_the_broad_phase_finds_every_triangle_and_edge_within_reach_of_large_faces():
    """The k-d tree joins over the pieces of large triangles and edges (``samples.Samples``) miss no pair that a brute
    force over all pairs finds within reach: 2 m faces, points and body edges up to 0.5 m away."""
    from solvers.collision.narrow_phase.primitives import point_triangle_distance, segment_distance

    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    assert collider.shared.triangle_pieces.divisions.max() > 1  # the faces were cut
    rng = np.random.default_rng(0)
    x = rng.uniform([-1.5, -1.5, -0.5], [1.5, 1.5, 1.0], size=(2000, 3))
    reach = rng.uniform(0.0, 0.5, len(x))
    rows, tris = collider._pairs(x, reach)
    p, t = np.repeat(np.arange(len(x)), len(triangles)), np.tile(np.arange(len(triangles)), len(x))
    d, _ = point_triangle_distance(x[p], *(vertices[triangles[t, k]] for k in range(3)))
    within = d <= reach[p]
    assert set(zip(p[within], t[within])) <= set(zip(rows, tris))

    edges = np.stack([np.arange(0, 2000, 2), np.arange(1, 2000, 2)], axis=1)
    x[edges[:, 1]] = x[edges[:, 0]] + rng.normal(0.0, 0.05, (len(edges), 3))
    mine, body = collider.edge_pairs(x, edges, 0.1)
    box_edges = collider.shared.edges
    a, b = np.repeat(np.arange(len(box_edges)), len(edges)), np.tile(np.arange(len(edges)), len(box_edges))
    d, _ = segment_distance(vertices[box_edges[a, 0]], vertices[box_edges[a, 1]], x[edges[b, 0]], x[edges[b, 1]])
    assert (d <= 0.1).sum() > 10
    assert set(zip(a[d <= 0.1], b[d <= 0.1])) <= set(zip(mine, body))


def test_face_pairs_of_a_fast_moving_collider_are_every_pair_within_reach_and_travel():
    """A moving collider's face pairs (``_pairs_within``, the NumPy twin of the native ``face_pairs``) are the pairs
    within reach + the frame's travel at the asking pose, every one of them, whichever pose the k-d trees were built
    on: a box turning 0.3 rad, sliding 0.3 m and growing 20% in its frame, its trees built on the first pose that asks
    and the pairs asked from the last (the trees' corners and edge pieces lie up to the travel from where the asking
    pose has them: joins widened by the travel alone missed pairs the native grids find)."""
    from solvers.collision.narrow_phase.primitives import point_triangle_distance, segment_distance

    start_vertices, triangles = box()
    angle = 0.3
    turn = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0.0, 0.0, 1.0]])
    end_vertices = (start_vertices @ turn.T) * [1.2, 1.0, 1.2] + [0.3, 0.0, 0.0]
    start = MeshCollider(start_vertices, triangles, 0.01)
    moving = MeshCollider(end_vertices, triangles.copy(), 0.01).moving_from(start)
    travel = moving.shared.travel
    assert travel > 0.3
    rng = np.random.default_rng(4)
    x = rng.uniform([-1.6, -1.6, -0.3], [1.9, 1.6, 0.9], size=(3000, 3))
    body = np.arange(3000).reshape(-1, 3)
    body_edges = np.concatenate([body[:, [0, 1]], body[:, [1, 2]], body[:, [2, 0]]])
    rows, edge_rows = np.arange(len(body)), np.arange(len(body_edges))
    reach = 0.05
    first, last = moving.over(0.0, 0.1), moving.over(0.9, 1.0)
    first._pairs_within(x, body, rows, body_edges, edge_rows, reach, reach)  # the trees: on this pose
    (ci, ti, _), (ei, bi, _) = last._pairs_within(x, body, rows, body_edges, edge_rows, reach, reach)

    corners, sharp, pose = moving.shared.corners, moving.shared.edges, last.vertices
    c, t = np.repeat(np.arange(len(corners)), len(body)), np.tile(rows, len(corners))
    d, _ = point_triangle_distance(pose[corners[c]], *(x[body[t, k]] for k in range(3)))
    within = d <= reach + travel
    assert within.sum() > 50
    assert set(zip(c[within], t[within])) == set(zip(ci, ti))
    a, b = np.repeat(np.arange(len(sharp)), len(body_edges)), np.tile(edge_rows, len(sharp))
    d, _ = segment_distance(pose[sharp[a, 0]], pose[sharp[a, 1]], x[body_edges[b, 0]], x[body_edges[b, 1]])
    within = d <= reach + travel
    assert within.sum() > 50
    assert set(zip(a[within], b[within])) == set(zip(ei, bi))


def test_only_sharp_edges_and_borders_take_part_in_the_edge_tests():
    """A box keeps its 12 edges, not its faces' diagonals; a subdivided flat sheet keeps only its border."""
    from solvers.collision.colliders.mesh_collider import sharp_edges

    vertices, triangles = box()
    kept = {tuple(e) for e in sharp_edges(vertices, triangles)}
    assert kept == {tuple(sorted(e)) for e in BOX_EDGES}
    v, _, t = grid_cloth(5, 1.0)
    border = sharp_edges(v, t)
    assert len(border) == 4 * 4  # the 16 border edges of a 4 x 4-quad sheet
    on_border = (np.abs(np.abs(v[:, :2]) - 0.5) < 1e-9).any(axis=1)
    assert on_border[border].all()


def test_straight_runs_of_sharp_edges_become_one_segment_each():
    """``straight_runs``: an L of two straight runs (8 and 5 pieces, listed out of order) and a spur at a T become three
    segments between the runs' ends, each in the place of its run's first piece; an arc whose pieces bend by 5e-6 rad
    at each vertex (straight to the corner test) but 1e-3 rad over the run (its middle 0.13 mm off the chord of 1 m)
    keeps its pieces; a lone edge and an empty list stay as they are."""
    from solvers.collision.broad_phase.mesh_broad_phase import straight_runs

    along = np.stack([np.linspace(0.0, 1.0, 9), np.zeros(9), np.zeros(9)], axis=1)  # vertices 0..8 on x
    up = np.stack([np.ones(5), np.zeros(5), np.linspace(0.2, 1.0, 5)], axis=1)  # vertices 9..13 above vertex 8
    spur = np.array([[0.5, 0.3, 0.0]])  # vertex 14, off vertex 4
    vertices = np.concatenate([along, up, spur])
    x_run = [[k, k + 1] for k in range(8)]
    z_run = [[8, 9]] + [[k, k + 1] for k in range(9, 13)]
    edges = np.array(z_run[::-1] + x_run[4:] + [[4, 14]] + x_run[:4])
    assert straight_runs(vertices, edges).tolist() == [[8, 13], [4, 8], [4, 14], [0, 4]]
    turn = 5e-6 * np.arange(201)
    arc = np.stack([np.cumsum(np.cos(turn)), np.cumsum(np.sin(turn)), np.zeros(201)], axis=1) / 200.0
    pieces = np.stack([np.arange(200), np.arange(1, 201)], axis=1)
    assert np.array_equal(straight_runs(arc, pieces), pieces)
    for lone in (np.array([[0, 1]]), np.zeros((0, 2), np.int64)):
        assert np.array_equal(straight_runs(vertices, lone), lone)


def test_a_finely_cut_box_of_float32_coordinates_away_from_the_origin_keeps_its_12_edges_and_8_corners():
    """A level-6 box as Blender hands it over: float32 coordinates (a scaled cube's corners at 1 + 1.2e-7), moved
    3 m away. Its 3 cm pieces along each edge meet up to ~2.4e-7 m off their lines (more than 1e-5 rad of a
    piece), within the coordinates' round-off: each edge is one straight run, and only the box's 8 corners are
    corners. The same box bent by 1 mm at one edge's midpoint has a corner there, its edge two runs."""
    from bench.profile_mesh_collider import box_mesh
    from solvers.collision.broad_phase.mesh_broad_phase import coordinate_noise

    vertices, triangles = box_mesh(6)
    vertices = (vertices * np.float32(1.0000001)).astype(np.float32).astype(np.float64) + [-3.0, 0.0, 0.25]
    assert coordinate_noise(vertices) > 3e-7
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    assert len(collider.shared.sharp) == 12 * 64
    assert len(collider.shared.edges) == 12 and len(collider.shared.corners) == 8
    lowest = np.flatnonzero((vertices[:, 0] == vertices[:, 0].min()) & (vertices[:, 1] == vertices[:, 1].min()))
    middle = lowest[np.argsort(vertices[lowest, 2])[len(lowest) // 2]]
    bent = vertices.copy()
    bent[middle, :2] -= 0.001
    collider = MeshCollider(bent, triangles, thickness=0.01)
    assert middle in collider.shared.corners and len(collider.shared.edges) > 12


def test_points_that_cannot_have_crossed_a_closed_mesh_keep_the_side_read_at_the_step_start():
    """Points around a closed box, inside and outside, moving by up to 2 cm, some through its faces: the contact
    planes equal those of a collider that reads every point's side at the step's start (its travel set so large
    that every point may have crossed), and fewer than half of the points had to read it there."""
    vertices, triangles = box()
    rng = np.random.default_rng(6)
    x_prev = rng.uniform([-1.1, -1.1, -0.1], [1.1, 1.1, 0.6], size=(3000, 3))
    x = x_prev + rng.normal(0.0, 0.01, x_prev.shape)
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    asked = []
    original = collider._sides
    collider._sides = lambda x_prev, rows: asked.append(len(rows)) or original(x_prev, rows)
    got = collider.contact(x, x_prev)
    reference = MeshCollider(vertices, triangles, thickness=0.01)
    reference.shared.travel = 10.0  # every point reads its side at the start (and many more points are asked)
    want = reference.contact(x, x_prev)
    near = np.isfinite(got[0])
    assert near.sum() > 500 and (want[0][near] < 0.0).sum() > 20  # some inside, pushed out to their own side
    np.testing.assert_allclose(got[0][near], want[0][near], atol=1e-12)
    np.testing.assert_allclose(got[1][near], want[1][near], atol=1e-12)
    assert 0 < sum(asked) < 0.5 * near.sum()


def test_kept_candidates_give_the_distances_a_fresh_collider_gives_after_any_motion():
    """The candidates kept between queries (``SKIN``) stand in for a new search only while they can: points moved by
    less and by more than the skin, a few at a time and all at once, get the same nearest distances and contact
    planes as from a collider that never saw them."""
    from solvers.collision.colliders.mesh_collider import SKIN

    v, _, t = grid_cloth(21, 2.0)
    v[:, 2] = 0.1 * np.sin(3.0 * v[:, 0]) * np.cos(2.0 * v[:, 1])  # a wavy sheet: 800 small triangles
    collider = MeshCollider(v, t, thickness=0.01)
    rng = np.random.default_rng(1)
    x = rng.uniform([-1.0, -1.0, -0.1], [1.0, 1.0, 0.2], size=(1500, 3))
    x_prev = x.copy()
    for step in range(8):
        fresh = MeshCollider(v, t, thickness=0.01)
        for got, want in ((collider.surface_distance(x), fresh.surface_distance(x)),
                          (collider.contact(x, x_prev), fresh.contact(x, x_prev))):
            np.testing.assert_array_equal(np.isfinite(got[0]), np.isfinite(want[0]))
            np.testing.assert_allclose(got[0], want[0], atol=1e-12)
            np.testing.assert_allclose(got[1], want[1], atol=1e-12)
        x_prev = x.copy()
        moving = rng.random(len(x)) < (0.1 if step % 2 else 1.0)
        x[moving] += rng.normal(0.0, (0.3 if step < 4 else 2.0) * SKIN, (int(moving.sum()), 3))
    assert collider.shared.pair_caches.items


def test_kept_face_candidates_push_as_a_fresh_collider_pushes_after_any_motion():
    """The corner and edge candidates kept between face pushes: a cloth crumpled over a box's top rim and moved by
    less and by more than the skin is pushed exactly as a collider that never saw it pushes it."""
    from solvers.collision.colliders.mesh_collider import SKIN

    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    v, _, t = grid_cloth(31, 3.0, height=0.5)
    rng = np.random.default_rng(2)
    x = v + rng.normal(0.0, 0.01, v.shape)
    inv_mass = np.ones(len(x))
    pushed = 0
    for step in range(6):
        x_prev = x.copy()
        moving = rng.random(len(x)) < 0.5
        x[moving] += rng.normal(0.0, (0.2 if step < 3 else 5.0) * SKIN, (int(moving.sum()), 3))
        mine, theirs = x.copy(), x.copy()
        pushed += collider.resolve_faces(mine, x_prev, inv_mass, t, passes=1)
        MeshCollider(vertices, triangles, thickness=0.01).resolve_faces(theirs, x_prev, inv_mass, t, passes=1)
        np.testing.assert_allclose(mine, theirs, atol=1e-12)
    assert pushed > 0


def test_a_collider_read_anew_each_frame_keeps_its_broad_phase_while_it_stands_still():
    """As the bridge does, the box is read anew every frame (a fresh MeshCollider of the same vertices) and paired with
    the previous frame's read (``frame_colliders``): while it stands still every frame's collider shares the first
    one's broad phase (its trees and kept candidates, built on the same pose) and answers as a fresh collider does;
    once it moves, it gets its own."""

    vertices, triangles = box()
    rng = np.random.default_rng(4)
    x = rng.uniform([-1.2, -1.2, -0.1], [1.2, 1.2, 0.65], size=(400, 3))
    def read_at(frame):
        return MeshCollider(vertices + [0.0 if frame < 3 else 0.1, 0.0, 0.0], triangles, thickness=0.01, name="Box")

    previous, first = None, None
    for frame in range(4):
        read = read_at(frame)
        collider = frame_colliders(previous, [read])[0]
        fresh = frame_colliders(None if frame == 0 else [read_at(frame - 1)], [read_at(frame)])[0]
        got, want = collider.surface_distance(x), fresh.surface_distance(x)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        if frame == 0:
            first, normals = collider.shared, collider.face_normals
            assert first.tree is not None
        elif frame < 3:
            assert collider.shared is first and read.shared is first
            assert collider.face_normals is normals  # what the pose gives, derived once
        else:
            assert collider.start is not None and collider.shared is not first
        previous = [read]
        x = x + rng.normal(0.0, 0.002, x.shape)


def test_kept_planes_of_a_standing_collider_stay_within_their_bound_of_the_exact_planes():
    """A box standing still, points around it moving 1 mm a step for 40 steps: ``contact`` answers from planes kept
    per point (kept_planes.py) while they drift less than KEPT_DRIFT * thickness. Against a fresh collider's exact
    answer: the same points in contact, signed distances within twice the drift bound (exact on the faces' interiors,
    where most points are), never a point the kept plane holds outside that is inside the box; and most points' asks
    were answered without a search."""
    from solvers.collision.colliders.kept_planes import KEPT_DRIFT

    vertices, triangles = box()
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    rng = np.random.default_rng(9)
    x = rng.uniform([-1.1, -1.1, -0.05], [1.1, 1.1, 0.6], size=(2000, 3))
    velocity = rng.normal(0.0, 1.0, x.shape)
    velocity *= 0.001 / np.linalg.norm(velocity, axis=1)[:, None]
    searched = []
    original = collider._contact_rows
    collider._contact_rows = lambda x, x_prev, margin, points: searched.append(len(points)) or original(x, x_prev, margin, points)
    bound = 2.0 * KEPT_DRIFT * collider.thickness
    worst, exact_share = 0.0, []
    for _ in range(40):
        x_prev, x = x, x + velocity
        got = collider.contact(x, x_prev)
        want = MeshCollider(vertices, triangles, thickness=0.01).contact(x, x_prev)
        both = np.isfinite(got[0]) & np.isfinite(want[0]) & (want[0] < 0.03)
        assert (np.isfinite(got[0]) == np.isfinite(want[0]))[want[0] < 0.03].all()
        error = np.abs(got[0][both] - want[0][both])
        worst = max(worst, float(error.max()))
        exact_share.append(np.mean(error < 1e-12))
        assert not (got[0] >= 0.0)[want[0] + collider.thickness < 0.0].any()  # held outside but inside the box
    assert 0.0 < worst <= bound
    assert min(exact_share) > 0.9
    assert sum(searched) < 0.5 * 40 * len(x)  # (at 1 mm a step a near point is measured every second or third step)


def test_bodies_of_the_same_size_on_one_collider_keep_caches_of_their_own():
    """Two 0.9 m cloths of 16 x 16 dropped side by side onto one standing box (read anew every frame, as the bridge
    does): each keeps its own candidates, planes and face pairs (``mesh_broad_phase._Slots``), so baked together they
    move bitwise as each baked alone; and the collider holds one cache of each kind per cloth."""
    from solvers.scene import Scene, advance_scene_frame

    def cloth(dx):
        v, e, t = grid_cloth(16, 0.9, height=0.7)
        return build_model(v + [dx, 0.0, 0.0], e, t)

    def reads():
        return [MeshCollider(*box(), thickness=0.01, friction=0.2, name="Box")]

    scene = Scene([(cloth(-0.5), SolverConfig(solver="XPBD")), (cloth(0.5), SolverConfig(solver="XPBD"))])
    alone = [make_solver(cloth(dx), SolverConfig(solver="XPBD")) for dx in (-0.5, 0.5)]
    states = [State.at_rest(body.model) for body in alone]
    previous = [None, None, None]
    for _ in range(12):
        read = reads()
        advance_scene_frame(scene, 1.0 / 24.0, frame_colliders(previous[0], read))
        previous[0] = read
        for k, (body, state) in enumerate(zip(alone, states)):
            read = reads()
            advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous[k + 1], read))
            previous[k + 1] = read
    for together, state in zip(scene.bodies, states):
        np.testing.assert_array_equal(together.state.x, state.x)
    assert together.state.x[:, 2].min() < 0.52  # they landed on the box
    shared = previous[0][0].shared
    # Point-triangle candidates are the NumPy query's (the native one, ``shared.native``, keeps none).
    assert len(shared.pair_caches.items) == (2 if shared.native is None else 0)
    assert len(shared.kept_planes[0.01].items) == 2
    assert len(shared.face_cache) == 2


def _measured_passes(x, x_prev, inv_mass, t, passes):
    """Reference face passes that measure every pair exactly in every pass; returns the pairs pushed per pass."""
    reference = MeshCollider(*box(), thickness=0.01)
    edges, pushed = reference._body_edges(t), []
    for _ in range(passes):
        pairs = reference.face_pairs(x, t)
        corners = reference._corner_pushes(x, x_prev, t, reference, pairs.corner_triangle)
        moved = reference._apply(x, inv_mass, corners, corners.depth, corners.slip)
        edge_pushes = reference._edge_pushes(x, x_prev, edges, reference, pairs.edge_edge)
        moved += reference._apply(x, inv_mass, edge_pushes, edge_pushes.depth, edge_pushes.slip)
        pushed.append(moved)
        if moved == 0:
            break
    return pushed


def _deepest(x, x_prev, t):
    """[m] The deepest face pair within thickness of the box, measured exactly at x."""
    collider = MeshCollider(*box(), thickness=0.01)
    pairs = collider.face_pairs(x, t)
    corners = collider._corner_pushes(x, x_prev, t, collider, pairs.corner_triangle)
    edges = collider._edge_pushes(x, x_prev, collider._body_edges(t), collider, pairs.edge_edge)
    return max(corners.depth.max(initial=0.0), edges.depth.max(initial=0.0))


def test_face_passes_measure_anew_once_the_body_has_drifted():
    """A cloth crumpled over the rim (noise of 1-2 cm, pushes of several millimetres): every pass drifts beyond
    LINEAR_DRIFT, so every pass measures its pairs anew, bitwise as passes that always measure."""
    from solvers.collision.colliders.mesh_collider import FACE_PASSES

    v, _, t = grid_cloth(31, 3.0, height=0.5)
    rng = np.random.default_rng(5)
    x_prev = v + rng.normal(0.0, 0.02, v.shape)  # crumpled over the rim: a push brings neighbouring pairs in
    x = x_prev + rng.normal(0.0, 0.01, v.shape)
    inv_mass = np.ones(len(x))
    inv_mass[:5] = 0.0
    mine, theirs = x.copy(), x.copy()
    found = MeshCollider(*box(), thickness=0.01).resolve_faces(mine, x_prev, inv_mass, t)
    pushed = _measured_passes(theirs, x_prev, inv_mass, t, FACE_PASSES)
    assert found == pushed[0] > 0 and len(pushed) > 1 and pushed[-1] > 0  # several passes, each pushing
    np.testing.assert_array_equal(mine, theirs)


def test_face_passes_on_a_cloth_resting_on_the_rim_reuse_the_measured_geometry():
    """A cloth lying over the box's top rim (dropped 20 cm onto it, 8 frames of XPBD) pressed 1.5 mm down, as the
    solver's sweeps press it every substep: the passes after the first reuse the measured pairs, linearized, and end
    where passes that measure anew end to within a hundredth of a millimetre, every pair then within a tenth of a
    millimetre of thickness."""
    from solvers.collision.colliders.mesh_collider import FACE_PASSES

    v, e, t = grid_cloth(31, 3.0, height=0.7)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state = State.at_rest(body.model)
    previous = None
    for _ in range(8):
        read = [MeshCollider(*box(), thickness=0.01)]
        advance_frame(body, state, 1.0 / 24.0, body.config.substeps, frame_colliders(previous, read))
        previous = read
    x_prev = state.x.copy()
    x = x_prev - [0.0, 0.0, 0.0015]
    inv_mass = np.ones(len(x))
    mine, theirs = x.copy(), x.copy()
    collider = MeshCollider(*box(), thickness=0.01)
    measured = []
    original = collider._corner_pushes
    collider._corner_pushes = lambda *a: measured.append(1) or original(*a)
    found = collider.resolve_faces(mine, x_prev, inv_mass, t)
    pushed = _measured_passes(theirs, x_prev, inv_mass, t, FACE_PASSES)
    assert found == pushed[0] > 10 and len(pushed) == FACE_PASSES
    assert len(measured) == 1  # measured once, the later passes linearized
    assert _deepest(x, x_prev, t) > 0.001
    assert np.abs(mine - theirs).max() < 1e-5
    assert _deepest(mine, x_prev, t) < 1e-4


def test_a_moving_collider_read_anew_takes_over_its_topology():
    """A collider read anew at every frame that moves: the new read takes over what the previous read derived from the
    triangles alone (a body's edges, the side ids), the same as it would build."""
    vertices, triangles = box()
    _, _, body = grid_cloth(5, 1.0)
    before = MeshCollider(vertices, triangles.copy(), 0.01)
    edges, sides = before._body_edges(body), before.shared.side_edge
    moved = MeshCollider(vertices + np.array([0.1, 0.0, 0.0]), triangles.copy(), 0.01).moving_from(before)
    assert moved.start is not None and moved.shared is not before.shared
    assert moved._body_edges(body) is edges
    assert moved.shared.side_edge is sides
    fresh = MeshCollider(vertices + np.array([0.1, 0.0, 0.0]), triangles.copy(), 0.01)
    np.testing.assert_array_equal(fresh._body_edges(body), edges)
    np.testing.assert_array_equal(fresh.shared.side_edge, sides)
    other = triangles[:, [0, 2, 1]].copy()  # other triangles: nothing taken over
    flipped = MeshCollider(vertices + np.array([0.2, 0.0, 0.0]), other, 0.01).moving_from(moved)
    assert flipped.shared.body_edges == {}


def test_a_translating_collider_keeps_what_follows_its_shape():
    """A collider read anew that only moved by a translation (a keyframed location, to float32 round-off) takes over
    its sharp edges, straight runs, corners and pieces from the frame before, the same as it would find; turned a
    little, or moved a vertex, it finds them anew."""
    from solvers.collision.broad_phase.mesh_broad_phase import SHAPE_DERIVED

    vertices, triangles = box()
    vertices = vertices.astype(np.float32).astype(np.float64)
    before = MeshCollider(vertices, triangles.copy(), 0.01)
    derived = {name: getattr(before.shared, name) for name in SHAPE_DERIVED}
    shift = np.array([0.1, -0.03, 0.2], np.float32).astype(np.float64)
    moved = MeshCollider(vertices + shift, triangles.copy(), 0.01).moving_from(before)
    fresh = MeshCollider(vertices + shift, triangles.copy(), 0.01)
    for name, value in derived.items():
        assert getattr(moved.shared, name) is value, name
    np.testing.assert_array_equal(moved.shared.sharp, fresh.shared.sharp)
    np.testing.assert_array_equal(moved.shared.corners, fresh.shared.corners)
    np.testing.assert_array_equal(moved.shared.edges, fresh.shared.edges)
    angle = 1e-3
    turn = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0.0, 0.0, 1.0]])
    turned = MeshCollider(vertices @ turn.T, triangles.copy(), 0.01).moving_from(before)
    bent = vertices + shift
    bent[0] += [0.0, 0.0, 1e-4]
    dented = MeshCollider(bent, triangles.copy(), 0.01).moving_from(before)
    for collider in (turned, dented):
        assert not collider.shared.translated_from(before.shared)
        assert all(name not in collider.shared.__dict__ for name in SHAPE_DERIVED)


def test_translated_answers_as_its_plain_formula():
    """``translated`` (one scratch array, magnitudes as max(v.max(), -v.min())) answers as the plain formula on
    translations, the same with one vertex moved off by about its tolerance, and poses holding NaN or infinity."""
    from solvers.collision.broad_phase.mesh_broad_phase import TRANSLATION_TOLERANCE, translated

    def plain(a, b):
        shift = a - b
        spread = float(np.abs(shift - shift[0]).max())
        return spread <= TRANSLATION_TOLERANCE * (1.0 + float(np.abs(a).max()) + float(np.abs(b).max()))

    rng = np.random.default_rng(7)
    b = (rng.uniform(-1.0, 1.0, (500, 3)) + [-3.0, 0.5, 0.25]).astype(np.float32).astype(np.float64)
    cases = []
    for offset in ([0.0, 0.0, 0.0], [0.1, -0.03, 0.2], [-40.0, 7.5, 1e-3]):
        a = b + np.array(offset)  # float32 vertices placed by a float64 matrix: a translation to round-off
        cases.append(a)
        limit = TRANSLATION_TOLERANCE * (1.0 + np.abs(a).max() + np.abs(b).max())
        for scale in (0.5, 0.999999, 1.0, 1.000001, 2.0):  # one vertex moved off the translation near the limit
            nudged = a.copy()
            nudged[17, 1] += scale * limit
            cases.append(nudged)
    for bad in (np.nan, np.inf, -np.inf):
        spoiled = b.copy()
        spoiled[3, 2] = bad
        cases.append(spoiled)
    answers = [translated(a, b) for a in cases]
    assert answers == [plain(a, b) for a in cases]
    assert answers[0] and answers[6] and not answers[5]  # the cases cover both answers
    assert not translated(b[:10], b) and not translated(b[:0], b[:0])


def test_pseudo_normals_equal_the_plain_formula_bit_for_bit():
    """``_feature_normals`` (each side measured once, sums by bincount) against the formula written plainly (both sides
    of every corner, np.add.at over the corners in turn), on a jittered subdivided box: the same bits."""
    from solvers.collision.narrow_phase.primitives import _dot

    rng = np.random.default_rng(1)
    vertices, triangles = box()
    for _ in range(2):  # split every triangle in 3 at its centre, twice: corners of 3 to 12 triangles
        centres = vertices[triangles].mean(axis=1)
        c = len(vertices) + np.arange(len(triangles))
        vertices = np.concatenate([vertices, centres])
        a, b, d = triangles.T
        triangles = np.concatenate([np.stack([a, b, c], 1), np.stack([b, d, c], 1), np.stack([d, a, c], 1)])
    vertices = vertices + rng.normal(scale=0.01, size=vertices.shape)
    collider = MeshCollider(vertices, triangles, 0.01)
    vertex, side = collider._feature_normals()
    corners = vertices[triangles]
    angle = np.zeros((len(triangles), 3))
    for k in range(3):
        u, w = corners[:, (k + 1) % 3] - corners[:, k], corners[:, (k + 2) % 3] - corners[:, k]
        angle[:, k] = np.arccos(np.clip(_dot(u, w) / np.maximum(np.sqrt(_dot(u, u) * _dot(w, w)), 1e-300), -1.0, 1.0))
    plain_vertex, plain_edge = np.zeros_like(vertices), np.zeros((int(collider.shared.side_edge.max()) + 1, 3))
    for k in range(3):
        np.add.at(plain_vertex, triangles[:, k], angle[:, k, None] * collider.face_normals)
        np.add.at(plain_edge, collider.shared.side_edge[:, k], collider.face_normals)
    for a in (plain_vertex, plain_edge):
        a /= np.maximum(np.sqrt(_dot(a, a)), 1e-300)[:, None]
    assert np.array_equal(vertex.view(np.int64), plain_vertex.view(np.int64))
    assert np.array_equal(side.view(np.int64), plain_edge[collider.shared.side_edge].view(np.int64))


def _topology_by_unique(vertex_count, triangles):
    """The edges' topology and side ids written with ``np.unique`` (rows, inverse, counts) and a stable argsort."""
    half = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    edges, inverse, count = np.unique(half, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(len(edges)))
    owner = np.tile(np.arange(len(triangles)), 3)
    pair = count == 2
    sides = np.sort(np.stack([triangles[:, [1, 2]], triangles[:, [2, 0]], triangles[:, [0, 1]]], axis=1), axis=2)
    _, side_ids = np.unique(sides.reshape(-1, 2), axis=0, return_inverse=True)
    return (edges, pair, owner[order[first[pair]]], owner[order[first[pair] + 1]]), side_ids.reshape(-1, 3)


def _grid_mesh(n):
    v, _, t = grid_cloth(n, 1.0)
    return v, np.asarray(t, np.int64)


@pytest.mark.parametrize("mesh", ["box", "grid", "non-manifold", "empty"])
def test_edge_topology_and_side_ids_are_uniques(mesh):
    """``half_edges`` (one stable sort) gives the edges, the triangle pairs of two-triangle edges and the side ids that
    np.unique over the rows gives: a closed box, an open grid (border edges), a fan of four triangles on one edge
    (non-manifold) and no triangles."""
    from solvers.collision.broad_phase.mesh_broad_phase import _Shared, edge_topology

    if mesh == "box":
        vertices, triangles = box()
    elif mesh == "grid":
        vertices, triangles = _grid_mesh(6)
    elif mesh == "non-manifold":
        vertices = np.random.default_rng(2).normal(size=(6, 3))
        triangles = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4], [5, 1, 0]])
    else:
        vertices, triangles = np.zeros((3, 3)), np.zeros((0, 3), np.int64)
    expected, side_ids = _topology_by_unique(len(vertices), triangles)
    for got, want in zip(edge_topology(len(vertices), triangles), expected):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(_Shared(vertices, triangles).side_edge, side_ids)


def test_far_from_separates_along_one_axis_beyond_the_reach():
    """``far_from``: every point farther than the reach from the collider's box along one axis; a point within the
    reach on that axis, or an axis whose coordinates hold a NaN, does not separate."""
    vertices, triangles = box()  # x, y in [-1, 1], z in [0, 0.5]
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    above = np.array([[0.0, 0.0, 0.7], [5.0, -5.0, 0.61]])  # 0.11 m above the top at the lowest
    assert collider.far_from(above, 0.1)
    assert not collider.far_from(above, 0.11)  # exactly at the reach: not farther
    beside = np.array([[-1.3, 0.0, 0.2], [-2.0, 3.0, 5.0]])  # 0.3 m beside x = -1
    assert collider.far_from(beside, 0.25) and not collider.far_from(beside, 0.35)
    assert not collider.far_from(np.vstack([above, [[0.0, 0.0, 0.55]]]), 0.1)  # one point within reach
    nan = above.copy()
    nan[0, 2] = np.nan
    assert not collider.far_from(nan, 0.1)  # the only separating axis holds a NaN
    nan[:, 0] += 2.5  # x from 2.5 m: 1.5 m beside x = 1
    nan[1, 1] = np.nan
    assert collider.far_from(nan, 1.0) is True  # an axis of numbers separates still
    assert not collider.far_from(np.zeros((0, 3)), 0.1)


def test_a_body_out_of_reach_leaves_the_kept_planes_and_face_lists_unmeasured_and_changes_nothing():
    """A cloth falling towards a box from 1 m above it and a second box 4 m away that it never comes near: while the
    cloth is out of reach of a box, that box measures no contact plane and keeps no face-pair list (its planes stay
    unmeasured, clear = -inf); the near box measures them once the cloth comes within reach. Each box keeps one set of
    planes for the cloth, however far it fell (``_Slots`` finds a body's by where it last asked, not where its planes
    were measured). The far box changes nothing: the bake is the one without it, bit for bit, on both compute paths."""
    vertices, triangles = box()
    far_vertices = vertices + np.array([4.0, 0.0, 0.0])
    v, e, t = grid_cloth(9, 1.2, height=1.5)
    model = build_model(v, e, t)

    def bake(compute, with_far, frames):
        body = make_solver(model, SolverConfig(solver="XPBD", compute=compute))
        state, previous = State.at_rest(model), None
        near = MeshCollider(vertices, triangles, 0.01, 0.2, "Box")
        far = MeshCollider(far_vertices, triangles, 0.01, 0.2, "Far")
        for _ in range(frames):
            current = [near] + ([far] if with_far else [])
            advance_frame(body, state, 1.0 / 24, body.config.substeps, frame_colliders(previous, current))
            previous = current
        return state, near, far

    def planes_measured(collider):
        slots = collider.shared.kept_planes.get(collider.thickness)
        return slots is not None and any(np.isfinite(p.clear).any() for p in slots.items)

    for compute in ("AUTO", "NUMPY"):
        state, near, far = bake(compute, True, 3)  # still about 0.9 m above the box
        assert not planes_measured(near) and not planes_measured(far)
        assert not near.shared.face_cache and not far.shared.face_cache
        state, near, far = bake(compute, True, 16)  # landed on the box
        assert state.x[:, 2].max() < 0.6
        assert planes_measured(near) and not planes_measured(far) and not far.shared.face_cache
        assert [len(box.shared.kept_planes[box.thickness].items) for box in (near, far)] == [1, 1]
        alone, _, _ = bake(compute, False, 16)
        np.testing.assert_array_equal(state.x, alone.x)
        np.testing.assert_array_equal(state.v, alone.v)
