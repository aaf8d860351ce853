"""Tetrahedralizer: coverage, orientation, quality, embedding and the errors for meshes it cannot fill."""
import numpy as np
import pytest

from solvers.model import tet_volumes
from solvers.geometry import (
    TetrahedralizeError,
    check_closed_manifold,
    embed_points,
    interpolate_embedded,
    mesh_volume,
    tet_quality,
    tetrahedralize,
    winding_number,
)

MIN_QUALITY = 0.02  # the default of tetrahedralize()


# ------------------------------------------------------------------ closed, outward-oriented test meshes


def uv_sphere(radius=1.0, segments=32, rings=16, centre=(0.0, 0.0, 0.0)):
    """UV sphere like Blender's: two poles, rings-1 latitude rings of `segments` vertices."""
    theta = np.pi * np.arange(1, rings) / rings  # polar angle of each ring
    phi = 2 * np.pi * np.arange(segments) / segments
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    v = np.concatenate([[[0, 0, 1]], ring, [[0, 0, -1]]]) * radius + np.asarray(centre)
    top, bottom = 0, len(v) - 1
    j = np.arange(segments)
    jn = (j + 1) % segments
    faces = [np.stack([np.full(segments, top), 1 + j, 1 + jn], 1)]
    for r in range(rings - 2):
        a, b = 1 + r * segments + j, 1 + r * segments + jn
        c, d = a + segments, b + segments
        faces += [np.stack([a, c, d], 1), np.stack([a, d, b], 1)]
    last = 1 + (rings - 2) * segments
    faces.append(np.stack([np.full(segments, bottom), last + jn, last + j], 1))
    return v, np.concatenate(faces)


def box(subdivisions=1, size=2.0, centre=(0.0, 0.0, 0.0)):
    """Axis-aligned cube with each face split into subdivisions^2 quads (two triangles each)."""
    n = subdivisions
    t = np.linspace(-0.5, 0.5, n + 1) * size
    verts, faces = [], []
    offset = 0
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u, w = np.meshgrid(t, t, indexing="ij")
            p = np.zeros((n + 1, n + 1, 3))
            a1, a2 = (axis + 1) % 3, (axis + 2) % 3
            p[..., axis] = sign * size / 2
            p[..., a1], p[..., a2] = u, w
            verts.append(p.reshape(-1, 3))
            i, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            q00 = (i * (n + 1) + k).ravel() + offset
            q10, q01 = q00 + n + 1, q00 + 1
            q11 = q10 + 1
            if sign > 0:  # (a1, a2, axis) is right-handed: counter-clockwise seen from +axis
                faces += [np.stack([q00, q10, q11], 1), np.stack([q00, q11, q01], 1)]
            else:
                faces += [np.stack([q00, q11, q10], 1), np.stack([q00, q01, q11], 1)]
            offset += (n + 1) ** 2
    v, f = np.concatenate(verts), np.concatenate(faces)
    # Merge the duplicated edge and corner vertices (as Blender's cube shares them).
    key = np.round(v / size * 4 * n).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return v[first] + np.asarray(centre), inverse.reshape(-1)[f]


def torus(major=1.0, minor=0.35, segments=48, sides=24):
    u = 2 * np.pi * np.arange(segments) / segments
    w = 2 * np.pi * np.arange(sides) / sides
    uu, ww = np.meshgrid(u, w, indexing="ij")
    r = major + minor * np.cos(ww)
    v = np.stack([r * np.cos(uu), r * np.sin(uu), minor * np.sin(ww)], -1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(segments), np.arange(sides), indexing="ij")
    a = (i * sides + j).ravel()
    b = (((i + 1) % segments) * sides + j).ravel()
    c = (((i + 1) % segments) * sides + (j + 1) % sides).ravel()
    d = (i * sides + (j + 1) % sides).ravel()
    return v, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def two_parts():
    """A sphere and a cube that do not touch, as one mesh."""
    vs, fs = uv_sphere(0.8, centre=(-1.5, 0.0, 0.0))
    vb, fb = box(6, size=1.2, centre=(1.5, 0.3, 0.0))
    return np.concatenate([vs, vb]), np.concatenate([fs, fb + len(vs)])


MESHES = {
    "sphere": uv_sphere,
    "cube": lambda: box(8),
    "low-poly cube": lambda: box(1),
    "torus": torus,
    "two parts": two_parts,
}


@pytest.fixture(scope="module")
def filled():
    """tetrahedralize() at default settings of every test mesh, computed once: name -> (v, f, TetMesh)."""
    cache = {}

    def get(name):
        if name not in cache:
            v, f = MESHES[name]()
            cache[name] = (v, f, tetrahedralize(v, f))
        return cache[name]

    return get


# ---------------------------------------------------------------------------------------------- results


@pytest.mark.parametrize("name", MESHES)
def test_tets_cover_the_enclosed_volume(filled, name):
    v, f, tm = filled(name)
    assert tm.mesh_volume == pytest.approx(mesh_volume(v, f))
    assert tm.volume == pytest.approx(tet_volumes(tm.vertices, tm.tets).sum())
    assert abs(tm.volume / tm.mesh_volume - 1.0) < 0.02


@pytest.mark.parametrize("name", MESHES)
def test_tets_are_positive_and_not_slivers(filled, name):
    _, _, tm = filled(name)
    assert tm.tets.dtype == np.int64 and tm.tets.shape[1] == 4
    assert np.all(tet_volumes(tm.vertices, tm.tets) > 0.0)
    quality = tet_quality(tm.vertices, tm.tets)
    assert tm.worst_quality == pytest.approx(quality.min())
    assert tm.worst_quality >= MIN_QUALITY


@pytest.mark.parametrize("name", MESHES)
def test_input_vertices_lead_and_every_one_is_in_a_tet_or_embedded(filled, name):
    v, _, tm = filled(name)
    assert tm.surface_count == len(v)
    np.testing.assert_array_equal(tm.vertices[: len(v)], v)
    in_tet = np.zeros(len(v), bool)
    in_tet[tm.tets[tm.tets < len(v)]] = True
    np.testing.assert_array_equal(np.sort(tm.embedded_vertices), np.flatnonzero(~in_tet))
    assert tm.tets.max() == len(tm.vertices) - 1  # no unused interior points left behind
    assert len(np.unique(tm.tets)) == len(tm.vertices) - len(tm.embedded_vertices)


def test_loose_and_duplicate_vertices_are_embedded():
    v, f = uv_sphere()
    twin = len(v)
    # The faces move from vertex 5 to a twin at the same place, leaving 5 loose but on the surface; one
    # more loose vertex sits inside and one outside. None of them can be a tet corner.
    v = np.concatenate([v, v[[5]], [[0.1, 0.2, 0.3]], [[3.0, 0.0, 0.0]]])
    f = np.where(f == 5, twin, f)
    tm = tetrahedralize(v, f)
    assert set(tm.embedded_vertices.tolist()) == {5, len(v) - 2, len(v) - 1}
    np.testing.assert_allclose(tm.embed_weights.sum(1), 1.0)
    driven = interpolate_embedded(tm.vertices, tm.tets, tm.embed_tet, tm.embed_weights)
    np.testing.assert_allclose(driven, v[tm.embedded_vertices], atol=1e-9)


def test_quality_threshold_never_strands_a_vertex_and_keeps_the_volume():
    v, f = uv_sphere()
    tm = tetrahedralize(v, f, min_quality=0.9)  # asks to drop almost everything near the surface
    assert len(tm.embedded_vertices) == 0
    assert tm.volume / tm.mesh_volume > 0.99


def test_inward_oriented_mesh_is_filled_the_same():
    v, f = uv_sphere()
    outward, inward = tetrahedralize(v, f), tetrahedralize(v, f[:, ::-1])
    assert mesh_volume(v, f[:, ::-1]) == pytest.approx(-mesh_volume(v, f))
    assert inward.mesh_volume == pytest.approx(outward.mesh_volume)
    assert inward.volume == pytest.approx(outward.volume)


def test_resolution_sets_the_lattice_spacing():
    v, f = box(4)
    coarse, fine = tetrahedralize(v, f, resolution=4), tetrahedralize(v, f, resolution=16)
    assert coarse.spacing == pytest.approx(0.5) and fine.spacing == pytest.approx(0.125)
    assert len(fine.tets) > 20 * len(coarse.tets)
    assert fine.volume == pytest.approx(8.0) and coarse.volume == pytest.approx(8.0)


# ----------------------------------------------------------------------------------------------- errors


def test_open_grid_raises_naming_boundary_edges():
    n = 5
    j, i = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (j * n + i).ravel()
    f = np.concatenate([np.stack([a, a + 1, a + n + 1], 1), np.stack([a, a + n + 1, a + n], 1)])
    x, y = np.meshgrid(np.arange(n), np.arange(n))
    v = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], 1).astype(float)
    with pytest.raises(TetrahedralizeError, match=r"open: 16 boundary edges.*Fill.*CLOTH"):
        tetrahedralize(v, f)


def test_mesh_with_a_hole_raises():
    v, f = uv_sphere()
    with pytest.raises(TetrahedralizeError, match="3 boundary edges"):
        check_closed_manifold(f[1:])
    with pytest.raises(TetrahedralizeError, match="boundary edges"):
        tetrahedralize(v, f[1:])


def test_non_manifold_raises():
    v, f = box(1)
    # A fin of two back-to-back triangles on a cube edge: that edge joins four faces, the fin's own
    # edges two each, so the mesh has no boundary but one non-manifold edge.
    apex = len(v)
    v = np.concatenate([v, [[0.0, 0.0, 3.0]]])
    e0, e1 = f[0, 0], f[0, 1]
    f = np.concatenate([f, [[e0, e1, apex], [e1, e0, apex]]])
    with pytest.raises(TetrahedralizeError, match="non-manifold: 1 edges shared by more than two faces"):
        tetrahedralize(v, f)


def test_inconsistent_normals_raise():
    v, f = box(2)
    f = f.copy()
    f[0] = f[0, ::-1]
    with pytest.raises(TetrahedralizeError, match="Recalculate Outside"):
        tetrahedralize(v, f)


def test_flat_mesh_raises():
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    f = np.array([[0, 1, 2], [0, 2, 1]])  # two coincident triangles back to back: closed, no volume
    check_closed_manifold(f)
    assert mesh_volume(v, f) == 0.0
    with pytest.raises(TetrahedralizeError, match="encloses no volume"):
        tetrahedralize(v, f)


def test_bad_arguments_raise():
    v, f = box(1)
    with pytest.raises(TetrahedralizeError, match="resolution"):
        tetrahedralize(v, f, resolution=0)
    with pytest.raises(TetrahedralizeError, match="does not exist"):
        tetrahedralize(v, f + 100)
    with pytest.raises(TetrahedralizeError, match="no faces"):
        tetrahedralize(v, np.zeros((0, 3), int))


# ----------------------------------------------------------------------------------- winding, embedding


def test_winding_number_of_a_cube():
    v, f = box(1)  # the cube [-1, 1]^3
    inside = np.array([[0.0, 0.0, 0.0], [0.9, 0.9, 0.9], [-0.5, 0.2, 0.99], [0.99, -0.99, 0.0]])
    outside = np.array([[1.1, 0.0, 0.0], [0.0, -3.0, 0.0], [2.0, 2.0, 2.0], [0.5, 0.5, -1.01]])
    w = winding_number(np.concatenate([inside, outside]), v, f)
    np.testing.assert_allclose(w, [1, 1, 1, 1, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(winding_number(inside, v, f[:, ::-1]), -1.0, atol=1e-12)
    assert winding_number([[0.0, 0.0, 1.0]], v, f)[0] == pytest.approx(0.5)  # on a face


def test_winding_number_tree_matches_the_exact_sum():
    v, f = torus()
    rng = np.random.default_rng(1)
    near = v[f[rng.integers(0, len(f), 500)]].mean(1) + rng.normal(0.0, 0.02, (500, 3))
    points = np.concatenate([rng.uniform(-1.5, 1.5, (1500, 3)), near])
    exact = winding_number(points, v, f, beta=None)
    fast = winding_number(points, v, f)
    np.testing.assert_allclose(fast, exact, atol=1e-2)
    np.testing.assert_array_equal(np.abs(fast) > 0.5, np.abs(exact) > 0.5)


def test_mesh_volume():
    v, f = box(3)
    assert mesh_volume(v, f) == pytest.approx(8.0)
    assert mesh_volume(v + 100.0, f) == pytest.approx(8.0)
    v, f = uv_sphere(segments=128, rings=64)
    assert mesh_volume(v, f) == pytest.approx(4.0 / 3.0 * np.pi, rel=2e-3)


def test_embed_points_reproduces_points(filled):
    v, f, tm = filled("torus")
    rng = np.random.default_rng(2)
    points = rng.uniform(-1.4, 1.4, (4000, 3)) * [1, 1, 0.3]
    inside = np.abs(winding_number(points, v, f)) > 0.5
    assert inside.sum() > 1000
    tet_index, weights = embed_points(points, tm.vertices, tm.tets)
    assert tet_index.shape == (4000,) and weights.shape == (4000, 4)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(interpolate_embedded(tm.vertices, tm.tets, tet_index, weights), points, atol=1e-9)
    # Points inside the surface land in a tet that contains them (the tets cover the solid).
    assert np.all(weights[inside].min(1) >= -1e-9)


def test_embedded_points_follow_an_affine_deformation(filled):
    _, _, tm = filled("sphere")
    rng = np.random.default_rng(3)
    points = rng.normal(size=(500, 3)) * 0.4
    tet_index, weights = embed_points(points, tm.vertices, tm.tets)
    a = np.array([[1.2, 0.3, 0.0], [0.0, 0.8, 0.1], [0.2, 0.0, 1.1]])
    moved = tm.vertices @ a.T + [0.5, -1.0, 2.0]
    driven = interpolate_embedded(moved, tm.tets, tet_index, weights)
    np.testing.assert_allclose(driven, points @ a.T + [0.5, -1.0, 2.0], atol=1e-9)


def test_tet_mesh_builds_a_model(filled):
    from solvers.builder import build_model

    _, f, tm = filled("two parts")
    model = build_model(tm.vertices, triangles=f, tets=tm.tets)
    assert model.tet_rest_volume.sum() == pytest.approx(tm.volume)
    assert np.all(model.tet_rest_volume > 0)


def test_cage_holds_every_vertex_of_a_dense_sphere_with_convex_weights():
    from solvers.geometry import interpolate_embedded, tetrahedralize_cage

    vertices, triangles = uv_sphere(1.0, 64, 32)
    cage = tetrahedralize_cage(vertices, triangles, resolution=6)
    assert cage.surface_count == 0
    assert len(cage.tets) < len(vertices)  # coarser than the surface it carries
    assert np.array_equal(np.sort(cage.embedded_vertices), np.arange(len(vertices)))
    # Every vertex sits inside its tet (convex weights) and the embedding reproduces it.
    assert cage.embed_weights.min() >= -1e-6
    assert np.allclose(cage.embed_weights.sum(axis=1), 1.0)
    order = np.argsort(cage.embedded_vertices)
    back = interpolate_embedded(cage.vertices, cage.tets, cage.embed_tet[order], cage.embed_weights[order])
    assert np.allclose(back, vertices, atol=1e-9)
    # The cage encloses the sphere: at least its volume, not wildly more.
    assert 1.0 <= cage.volume / mesh_volume(vertices, triangles) < 1.3


def test_solid_sphere_dropped_on_ground_keeps_its_volume_and_stays_above():
    from solvers import GroundPlane, SolverConfig, State, advance_frame, build_model, make_solver
    from solvers.geometry import tetrahedralize

    vertices, triangles = uv_sphere(0.5, 24, 12, centre=(0.0, 0.0, 1.0))
    tet = tetrahedralize(vertices, triangles, resolution=6)
    model = build_model(tet.vertices, None, None, tet.tets, total_mass=2.0)
    # E = 2e5 Pa is about what 1e4 N/m per edge gave this mesh (E = k sum L^2 / (6 V) = 1.8e5 Pa); nu = 0.45
    # makes it nearly incompressible, as the old volume stiffness meant it to be.
    config = SolverConfig(solver="XPBD", substeps=10, iterations=2, damping=2.0, youngs_modulus=2e5, poisson_ratio=0.45)
    sim = make_solver(model, config)
    state = State.at_rest(model)
    ground = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])]
    worst = 0.0
    for _ in range(48):
        stats = advance_frame(sim, state, 1.0 / 24.0, config.substeps, ground)
        worst = max(worst, stats.volume_error)
        assert state.x[:, 2].min() >= -1e-9
    assert state.x[:, 2].min() < 0.02  # it reached the ground
    assert worst < 0.05 and stats.volume_error < 0.02


def l_prism():
    """A closed L-shaped prism 1 m tall: a 1 x 1 m block with a 2 m long, 0.1 m thin wall sticking out along +x.
    Returns (vertices (14, 3), triangles (24, 3)), outward."""
    polygon = np.array([(0, 0), (1, 0), (3, 0), (3, 0.1), (1, 0.1), (1, 1), (0, 1)], float)  # counter-clockwise
    n = len(polygon)
    vertices = np.concatenate([np.c_[polygon, np.zeros(n)], np.c_[polygon, np.ones(n)]])
    cap = np.array([(1, 2, 3), (1, 3, 4), (0, 1, 4), (0, 4, 5), (0, 5, 6)])
    sides = [tri for i in range(n) for tri in ((i, (i + 1) % n, n + (i + 1) % n), (i, n + (i + 1) % n, n + i))]
    return vertices, np.concatenate([cap[:, ::-1], cap + n, np.array(sides)])


def test_cage_carries_the_centre_of_mass_of_the_surface_not_of_its_tets():
    """A cage covers more than its surface, and not evenly (the thin wall of this L, thinner than the lattice, gets
    a cage several times its volume), so lumping the mass by cage tet volume moves the centre of mass: the body then
    turns about the wrong point and, dropped on a frictionless ground, its surface's centroid drifts (the voxel-remeshed
    Suzanne's cage at resolution 6, 141% of its volume, 37 mm). ``mass_weights`` spread the surface's own volume."""
    from solvers.builder import build_model
    from solvers.geometry import tetrahedralize_cage, volume_centroid

    vertices, triangles = l_prism()
    centroid = volume_centroid(vertices, triangles)
    cage = tetrahedralize_cage(vertices, triangles, resolution=5)

    def com(model):
        return (model.mass[:, None] * model.rest_positions).sum(axis=0) / model.mass.sum()

    by_surface = build_model(cage.vertices, tets=cage.tets, total_mass=1.0, mass_weights=cage.mass_weights)
    by_tets = build_model(cage.vertices, tets=cage.tets, total_mass=1.0)
    assert by_surface.mass.sum() == pytest.approx(1.0)
    assert np.linalg.norm(com(by_surface) - centroid) < 0.005 * cage.spacing
    assert np.linalg.norm(com(by_tets) - centroid) > 0.02 * cage.spacing  # what the weights are for


def test_lattice_is_graded_down_to_a_dense_surface():
    """A 128 x 64 sphere (edges ~5 cm) at resolution 4 (h = 0.5 m): without grading every interior point is the
    apex of hundreds of needle tets on the small surface triangles (the voxel-remeshed Suzanne: median quality 0.12,
    masses 1e5 apart). The band of finer lattice points keeps the tets well shaped; a coarse surface gets none."""
    vertices, triangles = uv_sphere(1.0, 128, 64)
    tm = tetrahedralize(vertices, triangles, resolution=4)
    quality = tet_quality(tm.vertices, tm.tets)
    assert np.median(quality) > 0.4
    coarse_v, coarse_f = uv_sphere(1.0, 12, 6)
    coarse = tetrahedralize(coarse_v, coarse_f, resolution=4)
    assert len(coarse.vertices) - coarse.surface_count < len(tm.vertices) - tm.surface_count
