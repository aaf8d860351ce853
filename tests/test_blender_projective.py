"""PROJECTIVE through bpy as a user would: the menu offers it with its defaults, it bakes cloth and solids."""
import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import evaluated_positions, lab_scene, original_positions  # noqa: E402
from test_blender_solids import new_scene, solid, triangles, volume_and_centroid, world  # noqa: E402


def test_choosing_projective_moves_untouched_substeps_and_iterations_to_its_defaults(addon):
    _, cloth, _ = lab_scene(frames=3)
    s = cloth.softsim
    s.solver = "PROJECTIVE"
    assert (s.substeps, s.iterations) == (16, 2)
    s.solver = "XPBD"
    assert (s.substeps, s.iterations) == (30, 1)


def test_projective_bakes_the_lab_cloth(addon):
    scene, cloth, sphere = lab_scene(frames=24)
    sphere.softsim.thickness = 0.01
    cloth.softsim.solver = "PROJECTIVE"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest = original_positions(cloth)
    matrix = np.array(cloth.matrix_world)
    for frame in range(1, 25):
        local = evaluated_positions(cloth, frame)
        assert np.allclose(local[[0, 10]], rest[[0, 10]], atol=1e-6)  # pins on target
        w = local @ matrix[:3, :3].T + matrix[:3, 3]
        assert np.linalg.norm(w, axis=1).min() >= 2.7 + 0.01 - 1e-6  # kept Thickness away from the sphere
    assert w[:, 2].min() < -0.5  # it fell and draped
    assert "max strain" in cloth.softsim.status


def test_projective_drops_a_solid_onto_the_ground_and_keeps_its_volume(addon):
    new_scene(frames=36)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, segments=16, ring_count=8, location=(0.0, 0.0, 1.0))
    ball = solid(bpy.context.object, "Ball", solver="PROJECTIVE", substeps=8, iterations=5, youngs_modulus=2e5,
                 poisson_ratio=0.45, damping=1.0)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest_volume, _ = volume_and_centroid(world(ball, original_positions(ball)), triangles(ball))
    lowest = [world(ball, evaluated_positions(ball, f))[:, 2].min() for f in range(1, 37)]
    assert min(lowest) > -1e-6 and lowest[-1] < 0.02  # landed, never below the ground
    volume, _ = volume_and_centroid(world(ball, evaluated_positions(ball, 36)), triangles(ball))
    assert abs(volume / rest_volume - 1.0) < 0.03
