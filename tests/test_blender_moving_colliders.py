"""An animated collider in a bake, as a user keys it: the sphere moves through each frame, not in jumps."""
import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import empty_scene, evaluated_positions  # noqa: E402

FRAMES = 7
RADIUS = 0.3


def curtain_and_keyed_sphere(solver):
    """A 2 x 2 m curtain (21 x 21) hanging in the plane y = 0 from its pinned top row at z = 2.2 m, and a 0.3 m sphere
    keyed linearly from y = -0.8 m (frame 1) to y = 0.5 m (frame 7): 5.2 m/s through the curtain."""
    scene = empty_scene(FRAMES)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0, location=(0.0, 0.0, 1.2),
                                    rotation=(np.pi / 2, 0.0, 0.0))
    curtain = bpy.context.object
    curtain.name = "Curtain"
    local = np.array([v.co[:] for v in curtain.data.vertices])
    top = [i for i, y in enumerate(local[:, 1]) if y > 1.0 - 1e-6]
    group = curtain.vertex_groups.new(name="Top")
    group.add(top, 1.0, "REPLACE")
    curtain.softsim.role = "CLOTH"
    curtain.softsim.pin_group = "Top"
    curtain.softsim.solver = solver
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    bpy.ops.mesh.primitive_uv_sphere_add(radius=RADIUS, segments=24, ring_count=12, location=(0.0, -0.8, 1.2))
    ball = bpy.context.object
    ball.name = "Ball"
    ball.softsim.role = "SPHERE"
    ball.keyframe_insert("location", frame=1)
    ball.location.y = 0.5
    ball.keyframe_insert("location", frame=FRAMES)
    return scene, curtain, ball


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE", "NEWTON"])
def test_a_keyed_sphere_pushes_a_baked_curtain_ahead(addon, solver):
    scene, curtain, ball = curtain_and_keyed_sphere(solver)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    matrix = np.array(curtain.matrix_world)
    for frame in range(1, FRAMES + 1):
        x = evaluated_positions(curtain, frame) @ matrix[:3, :3].T + matrix[:3, 3]
        scene.frame_set(frame)
        centre = np.array(ball.matrix_world.translation)
        gap = np.linalg.norm(x - centre, axis=1).min() - RADIUS
        assert gap > -2e-3, f"frame {frame}: a vertex {-1000 * gap:.1f} mm inside the sphere"
        assert x[:, 1].min() > -0.3, f"frame {frame}: the curtain went behind the sphere (y = {x[:, 1].min():.2f} m)"
        assert x[:, 2].max() < 2.2 + 0.01, f"frame {frame}: above the pins (z = {x[:, 2].max():.2f} m)"
    assert x[:, 1].max() > 0.5, "the curtain was not pushed ahead"
