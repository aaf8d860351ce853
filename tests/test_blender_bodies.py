"""Bodies meeting each other in a bake: a soft cube dropped into a cloth hammock, as a user sets it up."""
import numpy as np
import pytest
from scipy.spatial import Delaunay

bpy = pytest.importorskip("bpy")

from blender_helpers import empty_scene, evaluated_positions  # noqa: E402

FRAMES = 16


def world(obj, frame):
    matrix = np.array(obj.matrix_world)
    return evaluated_positions(obj, frame) @ matrix[:3, :3].T + matrix[:3, 3]


def hammock_scene(cube_solver):
    """A 2 m cloth (21 x 21) pinned at its four corners 1.5 m up, a 0.4 m 2 kg Solid cube 2.2 m up over its middle,
    a ground below."""
    scene = empty_scene(FRAMES)
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    bpy.context.object.softsim.role = "GROUND"
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0, location=(0.0, 0.0, 1.5))
    cloth = bpy.context.object
    cloth.name = "Hammock"
    co = np.array([v.co[:] for v in cloth.data.vertices])
    corners = np.flatnonzero((np.abs(co[:, 0]) > 0.99) & (np.abs(co[:, 1]) > 0.99)).tolist()
    cloth.vertex_groups.new(name="Pins").add(corners, 1.0, "REPLACE")
    cloth.softsim.role = "CLOTH"
    cloth.softsim.pin_group = "Pins"
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 2.2))
    cube = bpy.context.object
    cube.name = "Jelly"
    cube.softsim.role = "SOLID"
    cube.softsim.mass = 2.0
    cube.softsim.solver = cube_solver
    return scene, cloth, cube


def test_a_soft_cube_dropped_into_a_hammock_is_held_by_it(addon):
    scene, cloth, cube = hammock_scene("XPBD")
    job = addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    for frame in range(1, FRAMES + 1):
        box, sheet = world(cube, frame), world(cloth, frame)
        assert box[:, 2].min() > 0.2, f"frame {frame}: the cube fell to z = {box[:, 2].min():.2f} m"
        inside = Delaunay(box).find_simplex(sheet) >= 0
        assert not inside.any(), f"frame {frame}: {inside.sum()} cloth vertices inside the cube"
    # It lies in the hammock: the cloth under it is pressed down below the pins.
    assert sheet[:, 2].min() < 1.45 and box[:, 2].min() > sheet[:, 2].min()
    assert "in contact with each other: 'Hammock', 'Jelly'" in job.summary


def test_a_newton_body_baked_with_others_is_named_as_not_meeting_them(addon):
    scene, cloth, cube = hammock_scene("NEWTON")
    job = addon.operators.bake.run_bake(bpy.context, [cloth, cube], frame_range=(1, 2))
    assert any("'Jelly' (NEWTON) does not meet the other bodies" in note for note in job.notes)
