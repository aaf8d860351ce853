"""A body simulates its evaluated mesh: a cape weighted to an armature bone follows the rig (through bpy).

The rig is ``blender_helpers.rig_scene``: a bone moving a 21 x 11 cape's top row 1 m along +X over the first second.
"""
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import COLUMNS, ROWS, cache_file, evaluated_positions, original_positions, rig_scene, rigged_positions  # noqa: E402
from solvers.cache import read_pc2  # noqa: E402


def data(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("solver", ["XPBD", "PROJECTIVE", "NEWTON", "IMPLICIT_EULER"])
def test_a_cape_weighted_to_a_bone_follows_the_rig(addon, tmp_path, solver):
    scene, cape, _ = rig_scene(tmp_path)
    cape.softsim.solver = solver
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert [m.name for m in cape.modifiers] == ["Armature", "SoftSim Cache"]  # the cache after what it read
    collar = np.arange(COLUMNS)
    hem = np.arange((ROWS - 1) * COLUMNS, ROWS * COLUMNS)
    edges = np.array([e.vertices[:] for e in cape.data.edges])
    rest = original_positions(cape)
    rest_length = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
    for frame in range(scene.frame_start, scene.frame_end + 1):
        rigged = rigged_positions(cape, frame)
        shown = evaluated_positions(cape, frame)
        assert np.abs(shown[collar] - rigged[collar]).max() <= 1e-3, frame
        length = np.linalg.norm(shown[edges[:, 0]] - shown[edges[:, 1]], axis=1)
        assert np.abs(length / rest_length - 1.0).max() < 0.02, frame  # measured 0.2-0.6% at most
    assert rigged_positions(cape, 25)[collar, 0].mean() == pytest.approx(1.0, abs=1e-6)  # the rig did move it 1 m
    assert shown[hem, 0].mean() >= 0.5  # frame 48: the hem followed the collar
    assert np.all(np.isfinite(shown))


def test_the_pc2_holds_the_vertices_a_subdivision_above_the_cache_makes(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=6)
    cape.modifiers.new("Subdivision", "SUBSURF").levels = 1  # above the cache, which the first bake adds at the end
    subdivided = len(rigged_positions(cape, 1))
    assert subdivided == (2 * COLUMNS - 1) * (2 * ROWS - 1)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert [m.name for m in cape.modifiers] == ["Armature", "Subdivision", "SoftSim Cache"]
    frames, start, _ = read_pc2(cache_file(cape))
    assert frames.shape == (6, subdivided, 3) and start == 1.0
    assert np.allclose(frames[0], rigged_positions(cape, 1), atol=1e-6)  # the rest shape is the evaluated mesh
    assert np.allclose(evaluated_positions(cape, 6), frames[-1], atol=1e-6)
    assert not np.allclose(frames[-1], frames[0], atol=1e-2)  # it moved


def test_a_subdivision_below_the_cache_still_applies_after_it(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=12)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    below = cape.modifiers.new("Subdivision", "SUBSURF")  # added after the bake: below the cache
    below.levels = 1
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # a re-bake keeps the cache's index
    assert [m.name for m in cape.modifiers] == ["Armature", "SoftSim Cache", "Subdivision"]
    frames, _, _ = read_pc2(cache_file(cape))
    assert frames.shape[1] == ROWS * COLUMNS  # simulated at the cape's own count
    shown = evaluated_positions(cape, 12)
    assert len(shown) == (2 * COLUMNS - 1) * (2 * ROWS - 1)  # subdivided after the cache
    below.show_viewport = False
    assert np.allclose(evaluated_positions(cape, 12), frames[-1], atol=1e-6)
    below.show_viewport = True
    # The subdivided surface is the cached one: Catmull-Clark keeps it within a few cm of its cage.
    assert np.abs(shown.mean(axis=0) - frames[-1].mean(axis=0)).max() < 0.02
    assert np.abs(frames[-1].mean(axis=0) - frames[0].mean(axis=0)).max() > 0.1


def test_shape_keys_output_is_refused_on_a_rigged_body(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=4)
    cape.softsim.output = "SHAPE_KEYS"
    with pytest.raises(RuntimeError, match=r"'Cape': Output Shape Keys cannot hold its simulation, because the Armature modifier "
                                           r"'Armature' moves its mesh before Soft Sim reads it.*set Output to PC2 Cache"):
        bpy.ops.softsim.bake()
    assert cape.data.shape_keys is None and [m.name for m in cape.modifiers] == ["Armature"] and not cape.softsim.is_baked
    cape.modifiers["Armature"].show_viewport = False  # nothing feeds it now: shape keys hold it
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert cape.data.shape_keys is not None


def good_bake(tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=4)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    path = cache_file(cape)
    return scene, cape, path, data(path)


def above_cache(cape, name, kind):
    """A new modifier placed right above the cache modifier."""
    modifier = cape.modifiers.new(name, kind)
    cape.modifiers.move(len(cape.modifiers) - 1, list(cape.modifiers).index(cape.modifiers["SoftSim Cache"]))
    return modifier


def assert_kept(cape, path, content):
    assert cache_file(cape) == path and data(path) == content and cape.softsim.is_baked
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)] or ".softsim-trash" in os.listdir(os.path.dirname(path))


def test_an_evaluated_mesh_without_edges_is_refused_and_the_bake_kept(addon, tmp_path):
    scene, cape, path, content = good_bake(tmp_path)
    cape.vertex_groups.new(name="Dots").add([0, 2, 4], 1.0, "REPLACE")  # three vertices, no edge between them
    mask = above_cache(cape, "Mask", "MASK")
    mask.vertex_group = "Dots"
    with pytest.raises(RuntimeError, match=r"'Cape' has no edges as the Armature modifier 'Armature', the Mask modifier 'Mask' "
                                           r"above Soft Sim's place in the stack make it, so nothing holds its vertices together"):
        bpy.ops.softsim.bake()
    assert_kept(cape, path, content)


def test_a_pin_group_the_modifiers_drop_is_refused_and_the_bake_kept(addon, tmp_path):
    scene, cape, path, content = good_bake(tmp_path)
    remesh = above_cache(cape, "Remesh", "REMESH")  # a voxel remesh keeps no vertex group
    remesh.mode, remesh.voxel_size = "VOXEL", 0.05
    with pytest.raises(RuntimeError, match=r"'Cape': the pin group 'Collar' is lost by the modifiers above Soft Sim's place"):
        bpy.ops.softsim.bake()
    assert_kept(cape, path, content)


def test_a_pin_group_the_modifiers_drop_but_keep_the_count_pins_by_the_original_weights(addon, tmp_path):
    from soft_sim.operators import bridge

    scene, cape, _ = rig_scene(tmp_path, frames=4)
    scene.frame_set(1)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    body = bridge.read_body(cape, np.eye(4), depsgraph)
    assert body.evaluated and np.flatnonzero(body.pinned).tolist() == list(range(COLUMNS))
    cape.vertex_groups["Collar"].name = "Neck"  # the evaluated mesh's group is renamed too: the weights come from there
    cape.softsim.pin_group = "Neck"
    assert np.flatnonzero(bridge.read_body(cape, np.eye(4), depsgraph).pinned).tolist() == list(range(COLUMNS))


def test_a_vertex_count_change_during_the_bake_stops_it_naming_the_frame(addon, tmp_path):
    scene, cape, path, content = good_bake(tmp_path)
    subdivision = above_cache(cape, "Subdivision", "SUBSURF")
    subdivision.levels = 0
    subdivision.keyframe_insert("levels", frame=2)
    subdivision.levels = 1
    subdivision.keyframe_insert("levels", frame=3)
    with pytest.raises(RuntimeError, match=r"'Cape': the modifiers above Soft Sim's place in the stack changed its vertex count "
                                           r"at frame 3 \(231 at the start, 861 now\)"):
        bpy.ops.softsim.bake()
    assert_kept(cape, path, content)
    assert scene.frame_current == 1


def test_a_body_fed_by_nothing_reads_its_original_mesh(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=4)
    cape.modifiers["Armature"].show_viewport = False
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    frames, _, _ = read_pc2(cache_file(cape))
    assert np.array_equal(frames[0], original_positions(cape).astype(np.float32))


def test_live_playback_follows_an_animated_shape_key_feeding_the_pins(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=6)
    cape.modifiers.remove(cape.modifiers["Armature"])
    cape.shape_key_add(name="Basis", from_mix=False)
    lift = cape.shape_key_add(name="Lift", from_mix=False)
    co = np.empty(len(lift.data) * 3, np.float32)
    lift.data.foreach_get("co", co)
    co[2::3] += 1.0  # every vertex 1 m up at value 1
    lift.data.foreach_set("co", co)
    for frame, value in ((1, 0.0), (5, 1.0)):
        lift.value = value
        lift.keyframe_insert("value", frame=frame)
    collar = np.arange(COLUMNS)
    base = original_positions(cape)
    for frame in range(1, 6):
        scene.frame_set(frame)
        assert "Error" not in cape.softsim.status, cape.softsim.status
        value = lift.value
        if frame > 1:  # the live key shows the simulation; the user's key is muted while it does
            live = np.empty(len(cape.data.vertices) * 3, np.float32)
            cape.data.shape_keys.key_blocks["SoftSim Live"].data.foreach_get("co", live)
            live = live.reshape(-1, 3)
            assert np.allclose(live[collar, 2], base[collar, 2] + value, atol=1e-4), frame
            assert np.allclose(evaluated_positions(cape), live, atol=1e-6)
    assert lift.value == pytest.approx(1.0) and live[collar, 2].min() > 2.99  # the collar rose with the key
    scene.frame_set(1)
    assert cape.data.shape_keys.key_blocks.keys() == ["Basis", "Lift"] and not lift.mute


def test_a_solid_weighted_to_a_bone_follows_the_rig(addon, tmp_path):
    scene, cape, rig = rig_scene(tmp_path, frames=25)
    bpy.data.objects.remove(cape)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.3, location=(0.0, 0.0, 1.5))
    ball = bpy.context.object
    ball.name = "Ball"
    top = [v.index for v in ball.data.vertices if v.co.z > 0.25]
    ball.vertex_groups.new(name="Collar").add(top, 1.0, "REPLACE")
    ball.modifiers.new("Armature", "ARMATURE").object = rig
    ball.softsim.role, ball.softsim.solver, ball.softsim.pin_group = "SOLID", "XPBD", "Collar"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    frames, _, _ = read_pc2(cache_file(ball))
    rigged = rigged_positions(ball, 25)
    assert frames.shape[1] == len(rigged) == len(ball.data.vertices)
    group = ball.vertex_groups["Collar"].index
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ball.modifiers["SoftSim Cache"].show_viewport = False
    mesh = ball.evaluated_get(depsgraph).to_mesh()
    pinned = [v.index for v in mesh.vertices if any(g.group == group and g.weight >= 0.5 for g in v.groups)]
    ball.evaluated_get(depsgraph).to_mesh_clear()
    ball.modifiers["SoftSim Cache"].show_viewport = True
    assert pinned == top
    assert rigged[pinned, 0].mean() > 0.99  # the rig moved the pinned top 1 m
    assert np.abs(evaluated_positions(ball, 25)[pinned] - rigged[pinned]).max() <= 1e-3
