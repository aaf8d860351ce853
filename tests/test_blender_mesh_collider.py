"""A Mesh Collider as a user sets one up: any mesh object, its modifiers applied; bad input named."""
import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import empty_scene, evaluated_positions  # noqa: E402


def table_scene(frames=20):
    """A 2.6 m cloth (21 x 21) 0.4 m above a 2 x 2 x 0.5 m box (a scaled cube) with role MESH, on a ground."""
    scene = empty_scene(frames)
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    bpy.context.object.softsim.role = "GROUND"
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, 0.25), scale=(1.0, 1.0, 0.25))
    table = bpy.context.object
    table.name = "Table"
    table.softsim.role = "MESH"
    table.softsim.thickness = 0.01
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.6, location=(0.0, 0.0, 0.9))
    cloth = bpy.context.object
    cloth.name = "Tablecloth"
    cloth.softsim.role = "CLOTH"
    return scene, cloth, table


def edit_all(obj, operation):
    """Run an Edit Mode operation on every element of obj's mesh."""
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="SELECT")
    operation()
    bpy.ops.object.mode_set(mode="OBJECT")


def test_a_tablecloth_baked_onto_a_mesh_collider_rests_on_it(addon):
    scene, cloth, table = table_scene()
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    matrix = np.array(cloth.matrix_world)
    for frame in range(1, 21):
        x = evaluated_positions(cloth, frame) @ matrix[:3, :3].T + matrix[:3, 3]
        depth = np.minimum.reduce([1.0 - np.abs(x[:, 0]), 1.0 - np.abs(x[:, 1]), 0.5 - x[:, 2], x[:, 2]])
        assert depth.max() < 1e-3, f"frame {frame}: a vertex {1000 * depth.max():.1f} mm inside the table"
    assert 0.5 <= x[len(x) // 2, 2] < 0.56  # resting on the top


def test_a_mesh_collider_uses_its_evaluated_mesh(addon):
    """A Mirror modifier's half of the box holds the cloth up too: the collider is the evaluated mesh."""
    scene, cloth, table = table_scene()
    edit_all(table, lambda: bpy.ops.transform.translate(value=(1.0, 0.0, 0.0)))  # the box now spans x in [0, 2]
    mirror = table.modifiers.new("Mirror", "MIRROR")
    mirror.use_axis[0] = True  # ... and its mirror x in [-2, 0]: together the same 4 x 2 m footprint
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    matrix = np.array(cloth.matrix_world)
    x = evaluated_positions(cloth, 20) @ matrix[:3, :3].T + matrix[:3, 3]
    over_left_half = (x[:, 0] < -0.2) & (np.abs(x[:, 1]) < 0.9)
    assert x[over_left_half, 2].min() > 0.49  # held up by the mirrored half, which only the evaluated mesh has


def test_a_mesh_collider_without_faces_is_refused_by_name(addon):
    scene, cloth, table = table_scene()
    edit_all(table, lambda: bpy.ops.mesh.delete(type="ONLY_FACE"))
    with pytest.raises(RuntimeError, match="'Table' has no faces"):
        bpy.ops.softsim.bake()
    assert not cloth.softsim.is_baked


def test_a_non_mesh_object_as_mesh_collider_is_refused_by_name(addon):
    scene, cloth, table = table_scene()
    table.softsim.role = "NONE"
    bpy.ops.object.empty_add(location=(0.0, 0.0, 0.3))
    empty = bpy.context.object
    empty.name = "Helper"
    empty.softsim.role = "MESH"
    with pytest.raises(RuntimeError, match="'Helper' is a empty, not a mesh"):
        bpy.ops.softsim.bake()
