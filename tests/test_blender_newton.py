"""NEWTON through bpy as a user would: the menu offers it, it bakes cloth and solids, errors say what to change."""
import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import evaluated_positions, lab_scene, original_positions  # noqa: E402
from test_blender_solids import new_scene, solid, triangles, volume_and_centroid, world  # noqa: E402

from solvers.collision.narrow_phase.primitives import closest_points_on_triangles  # noqa: E402


def test_choosing_newton_moves_untouched_substeps_to_its_default(addon):
    _, cloth, _ = lab_scene(frames=3)
    s = cloth.softsim
    assert s.solver == "XPBD" and s.substeps == 30
    s.solver = "NEWTON"
    assert s.substeps == 1
    s.solver = "XPBD"
    assert s.substeps == 30
    s.substeps = 12  # the user's own choice is kept
    s.solver = "NEWTON"
    assert s.substeps == 12


def test_newton_bakes_the_lab_cloth_without_touching_the_sphere(addon):
    scene, cloth, sphere = lab_scene(frames=24)
    sphere.softsim.thickness = 0.02
    s = cloth.softsim
    s.solver = "NEWTON"
    s.bending_stiffness = 0.01
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest = original_positions(cloth)
    matrix = np.array(cloth.matrix_world)
    for frame in range(1, 25):
        local = evaluated_positions(cloth, frame)
        assert np.allclose(local[[0, 10]], rest[[0, 10]], atol=1e-6)  # Dirichlet pins exactly on target
        w = local @ matrix[:3, :3].T + matrix[:3, 3]
        assert np.linalg.norm(w, axis=1).min() > 2.7  # never reaches the sphere (distance stays positive)
    assert w[:, 2].min() < -0.5  # it fell and draped over the sphere
    assert "Newton it." in s.status and "closest to a collider" in s.status


def test_newton_drops_a_solid_onto_the_ground_and_keeps_its_volume(addon):
    scene = new_scene(frames=36)
    scene.objects["Ground"].softsim.thickness = 0.01
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, segments=16, ring_count=8, location=(0.0, 0.0, 1.0))
    ball = solid(bpy.context.object, "Ball", solver="NEWTON", substeps=1, youngs_modulus=2e5, poisson_ratio=0.45, damping=1.0)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest_volume, _ = volume_and_centroid(world(ball, original_positions(ball)), triangles(ball))
    lowest = []
    for frame in range(1, 37):
        x = world(ball, evaluated_positions(ball, frame))
        lowest.append(x[:, 2].min())
    assert min(lowest) > 0.0  # the barrier keeps every vertex above the ground
    assert lowest[-1] < 0.02  # it landed (and rests within the barrier's reach)
    volume, _ = volume_and_centroid(x, triangles(ball))
    assert abs(volume / rest_volume - 1.0) < 0.03


def test_a_zero_thickness_collider_keeps_newton_bodies_one_millimetre_away(addon):
    """Colliders set up for the other solvers (thickness 0) still work: Newton's barrier reaches at least 1 mm."""
    scene, cloth, sphere = lab_scene(frames=24)
    cloth.softsim.solver = "NEWTON"
    sphere.softsim.thickness = 0.0
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    matrix = np.array(cloth.matrix_world)
    tris = triangles(cloth)
    closest = []  # per frame, the closest point of any face to the sphere's centre (faces carry barriers too)
    for f in range(1, 25):
        w = evaluated_positions(cloth, f) @ matrix[:3, :3].T + matrix[:3, 3]
        q, _ = closest_points_on_triangles(np.zeros(3), w[tris[:, 0]], w[tris[:, 1]], w[tris[:, 2]])
        closest.append(np.linalg.norm(q, axis=1).min())
    assert 2.7 < min(closest) < 2.7 + 0.001 + 1e-4  # draped onto the sphere, inside the 1 mm barrier, never touching


def test_newton_that_cannot_converge_stops_the_bake_with_advice(addon):
    scene, cloth, sphere = lab_scene(frames=4)
    sphere.softsim.thickness = 0.02
    s = cloth.softsim
    s.solver, s.newton_tolerance, s.newton_max_iterations = "NEWTON", 1e-7, 1
    with pytest.raises(RuntimeError, match="'Cloth' did not converge at frame 2.*Max Iterations.*previous bake is kept"):
        bpy.ops.softsim.bake()
    assert not s.is_baked and len(cloth.modifiers) == 0


def test_a_newton_cloth_offers_self_collision_and_bakes_with_it(addon):
    """The panel shows Self Collision and Thickness for a NEWTON cloth, the bake passes them on (the IPC self-contact
    of solvers/collision/barriers/self_barrier.py, tested in tests/test_newton_self_contact.py) and finishes."""
    from soft_sim.operators.bridge import config_from_settings
    from test_blender_panels import draw_all

    from solvers.collision.narrow_phase.crossings import count_self_intersections

    scene, cloth, sphere = lab_scene(frames=6)
    sphere.softsim.thickness = 0.02
    s = cloth.softsim
    s.solver, s.use_self_collision, s.thickness = "NEWTON", True, 0.05
    names = [name for kind, name in draw_all(addon, cloth, scene) if kind == "prop"]
    assert "use_self_collision" in names and "thickness" in names
    config = config_from_settings(s, scene)
    assert config.use_self_collision and config.thickness == pytest.approx(0.05)  # a float32 property
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    tris = triangles(cloth)
    for frame in range(1, 7):
        assert count_self_intersections(evaluated_positions(cloth, frame), tris) == 0
