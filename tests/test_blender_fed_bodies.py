"""Bodies something above Soft Sim feeds, through bpy: a cloth lifted by an animated shape key baked to shape keys (and
to a PC2 cache), and the rigged cape (``blender_helpers.rig_scene``) played live. Checked against what the key or the
rig puts the pinned vertices at, against gravity, and against the user's own data given back unchanged."""
import os
import shutil

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import (COLUMNS, ROWS, cache_file, empty_scene, evaluated_positions, import_addon, original_positions,  # noqa: E402
                             rig_scene, rigged_positions)
from solvers.cache import read_pc2  # noqa: E402

N = 11  # vertices along each side of the keyed cloth


def keyed_cloth(output, frames=12):
    """A flat 2 m cloth (N x N) at z = 2 m, its edge y = -1 m pinned, with a Basis, a key 'Lift' raising every vertex
    1 m whose value is keyed 0 at frame 1 and 1 at frame 5, and a key 'Quiet' the user muted. Returns (scene, cloth)."""
    scene = empty_scene(frames)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=N - 1, y_subdivisions=N - 1, size=2.0, location=(0.0, 0.0, 2.0))
    cloth = bpy.context.object
    cloth.name = "Cloth"
    co = original_positions(cloth)
    cloth.vertex_groups.new(name="Edge").add(np.flatnonzero(co[:, 1] < -0.99).tolist(), 1.0, "REPLACE")
    cloth.softsim.role, cloth.softsim.pin_group, cloth.softsim.output = "CLOTH", "Edge", output
    cloth.shape_key_add(name="Basis", from_mix=False)
    lift = cloth.shape_key_add(name="Lift", from_mix=False)
    raised = co.astype(np.float32)
    raised[:, 2] += 1.0
    lift.data.foreach_set("co", raised.ravel())
    for frame, value in ((1, 0.0), (5, 1.0)):
        lift.value = value
        lift.keyframe_insert("value", frame=frame)
    quiet = cloth.shape_key_add(name="Quiet", from_mix=False)
    quiet.data.foreach_set("co", (raised + 5.0).ravel())
    quiet.value, quiet.mute = 1.0, True
    return scene, cloth


def key_state(obj):
    """Everything of the user's shape keys, bitwise: names, mute flags, values, relative keys, positions, and every
    F-curve and driver of the keys (their keyframes, handles, interpolation, modifiers)."""
    keys = obj.data.shape_keys
    if keys is None:
        return None
    blocks = []
    for block in keys.key_blocks:
        co = np.empty(len(block.data) * 3, np.float32)
        block.data.foreach_get("co", co)
        blocks.append((block.name, block.mute, block.value, block.relative_key.name, block.slider_min, block.slider_max,
                       block.vertex_group, co.tobytes()))
    anim = keys.animation_data
    curves, action = [], None
    if anim is not None and anim.action is not None:
        action = anim.action.name
        for curve in import_addon().operators.body_input.action_curves(anim):
            points = [(tuple(k.co), tuple(k.handle_left), tuple(k.handle_right), k.interpolation, k.easing, k.handle_left_type,
                       k.handle_right_type) for k in curve.keyframe_points]
            curves.append((curve.data_path, curve.array_index, curve.mute, curve.extrapolation, len(curve.modifiers), points))
    drivers = [(d.data_path, d.array_index) for d in anim.drivers] if anim is not None else []
    return blocks, action, curves, drivers, keys.use_relative, keys.reference_key.name


def object_state(obj, frame=1):
    """The user's object as Soft Sim must give it back, at ``frame`` (the keys' values are animated): its keys,
    modifiers, mesh positions."""
    bpy.context.scene.frame_set(frame)
    return key_state(obj), [(m.name, m.type, m.show_viewport) for m in obj.modifiers], original_positions(obj).tobytes()


def keyed_positions(cloth, base, frame):
    """Where the key 'Lift' alone puts the vertices at ``frame``: the Basis raised by the key's keyed value."""
    bpy.context.scene.frame_set(frame)
    value = cloth.data.shape_keys.key_blocks["Lift"].value  # its F-curve's value, muted or not
    return base + np.array([0.0, 0.0, value]), value


@pytest.mark.parametrize("output", ["SHAPE_KEYS", "CACHE"])
def test_a_cloth_lifted_by_an_animated_shape_key_bakes_and_gives_the_keys_back(addon, output):
    from soft_sim.operators import bake, live

    scene, cloth = keyed_cloth(output)
    base = original_positions(cloth)
    pinned = np.flatnonzero(base[:, 1] < -0.99)
    far = np.flatnonzero(base[:, 1] > 0.99)
    before = object_state(cloth)

    assert bpy.ops.softsim.bake() == {"FINISHED"}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        keyed, value = keyed_positions(cloth, base, frame)
        shown = evaluated_positions(cloth)
        if output == "SHAPE_KEYS":
            baked = np.empty(len(base) * 3, np.float32)
            cloth.data.shape_keys.key_blocks[f"SoftSim f{frame:04d}"].data.foreach_get("co", baked)
            # The baked key alone (Basis + 1 x (key - Basis), to float32 round-off): 'Lift' is not added on top.
            assert np.abs(shown - baked.reshape(-1, 3)).max() <= 1e-6, frame
        else:
            assert np.array_equal(shown, read_pc2(cache_file(cloth))[0][frame - scene.frame_start]), frame
        assert np.abs(shown[pinned] - keyed[pinned]).max() <= 1e-5, frame  # the pins follow the key
    assert value == 1.0 and shown[pinned, 2].min() > 0.99  # the key did raise them 1 m (local space: the object is 2 m up)
    assert np.allclose(evaluated_positions(cloth, 1), base, atol=1e-6)  # the rest shape is the keyed mesh at the start
    assert shown[far, 2].max() < 1.0 - 0.5  # the free edge fell under gravity, far below the pins it hangs from
    baked_state = object_state(cloth)
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # a re-bake reads the keyed mesh again, not its own result
    assert object_state(cloth) == baked_state

    with live.suspended():  # what Esc does to a bake in progress: abort() after some frames
        job = bake.BakeJob(bpy.context, [cloth])
        job.step()
        job.step()
        job.abort()
    assert scene.frame_current == 1 and object_state(cloth) == baked_state

    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert object_state(cloth) == before  # keys, mute flags, values, F-curves: bitwise the user's
    keyed, _ = keyed_positions(cloth, base, 3)
    assert np.allclose(evaluated_positions(cloth), keyed, atol=1e-6)  # 'Lift' plays again, 'Quiet' stays muted

    for frame in range(1, 6):  # live playback shows the simulation alone too
        keyed, _ = keyed_positions(cloth, base, frame)
        assert "Error" not in cloth.softsim.status, cloth.softsim.status
        assert np.abs(evaluated_positions(cloth)[pinned] - keyed[pinned]).max() <= 1e-5, frame
    scene.frame_set(1)
    assert object_state(cloth) == before


def test_the_rigged_cape_plays_live_as_it_bakes(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=24)
    before = object_state(cape)
    collar = np.arange(COLUMNS)
    hem = collar + (len(original_positions(cape)) - COLUMNS)
    live_frames, rigged_collar_x = [], []
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        assert "Error" not in cape.softsim.status, cape.softsim.status
        shown = evaluated_positions(cape)
        rigged = rigged_positions(cape, frame)
        assert np.abs(shown[collar] - rigged[collar]).max() <= 1e-5, frame  # the pins are where the rig puts them
        live_frames.append(shown)
        rigged_collar_x.append(rigged[collar, 0].mean())
    assert [m.name for m in cape.modifiers] == ["Armature", "SoftSim Live"]  # shown after what it reads, as a bake's
    assert rigged_collar_x[-1] > 0.99  # the bone carried the collar 1 m along +X
    hem_x = [frame[hem, 0].mean() for frame in live_frames]
    assert hem_x[15] < rigged_collar_x[15] - 0.3  # frame 16: the hem lags behind the collar (it has mass)...
    assert hem_x[-1] > 0.5  # ...and by frame 24 the cloth has carried it along

    scene.frame_set(6)  # scrubbing back shows a frame from memory
    assert np.array_equal(evaluated_positions(cape), live_frames[5])
    scene.frame_set(1)  # the start frame resets: what live added is gone, the object is as it was
    assert object_state(cape) == before
    assert np.array_equal(evaluated_positions(cape), rigged_positions(cape, 1))

    assert bpy.ops.softsim.bake() == {"FINISHED"}  # a bake and live playback give the same frames
    baked = read_pc2(cache_file(cape))[0]
    assert np.abs(baked - np.stack(live_frames)).max() <= 1e-6
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert object_state(cape) == before


def test_leaving_a_rigged_live_simulation_or_saving_in_its_middle_leaves_the_cape_as_it_was(addon, tmp_path, monkeypatch):
    scene, cape, _ = rig_scene(tmp_path, frames=12)
    before = object_state(cape)
    for frame in range(1, 5):
        scene.frame_set(frame)
    live_file = bpy.path.abspath(cape.modifiers["SoftSim Live"].filepath)
    assert os.path.isfile(live_file)
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}  # Free leaves live playback too
    assert [m.name for m in cape.modifiers] == ["Armature"] and not os.path.exists(live_file)
    assert object_state(cape) == before

    for frame in range(1, 5):
        scene.frame_set(frame)
    live_file = bpy.path.abspath(cape.modifiers["SoftSim Live"].filepath)
    assert bpy.ops.softsim.reset() == {"FINISHED"}
    assert [m.name for m in cape.modifiers] == ["Armature"] and not os.path.exists(live_file)
    assert object_state(cape) == before

    for frame in range(1, 7):
        scene.frame_set(frame)
    shown = evaluated_positions(cape)
    path = str(tmp_path / "cape.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert [m.name for m in cape.modifiers] == ["Armature", "SoftSim Live"]  # still playing after the save
    assert np.array_equal(evaluated_positions(cape), shown)
    scene.frame_set(7)
    assert "Error" not in cape.softsim.status and not np.array_equal(evaluated_positions(cape), shown)
    assert saved_modifiers(path) == ["Armature"]  # the saved file holds the cape as the user made it

    # A file written without the save handlers (an autosave, a recovered session) holds the live modifier; opening it
    # removes it, so nobody meets a modifier playing a temporary file.
    from soft_sim.operators.output import live_cache

    monkeypatch.setattr(live_cache, "detach_for_save", lambda objects: None)
    unclean = str(tmp_path / "autosave.blend")
    bpy.ops.wm.save_as_mainfile(filepath=unclean, copy=True)
    assert saved_modifiers(unclean) == ["Armature", "SoftSim Live"]
    for saved in (unclean, path):
        bpy.ops.wm.open_mainfile(filepath=saved)
        cape = bpy.data.objects["Cape"]
        assert object_state(cape) == before
        assert [m.name for m in cape.modifiers] == ["Armature"]
        assert np.array_equal(evaluated_positions(cape, 6), rigged_positions(cape, 6))


def saved_modifiers(path):
    """Names of the modifiers the cape has in the .blend at ``path`` (a copy of it linked in, read, unlinked again)."""
    copy = os.path.join(os.path.dirname(path), "read-" + os.path.basename(path))
    shutil.copyfile(path, copy)  # a file cannot link from itself
    with bpy.data.libraries.load(copy, link=True) as (_, linked):
        linked.objects = ["Cape"]
    obj = linked.objects[0]
    names = [m.name for m in obj.modifiers]
    library = obj.library
    bpy.data.objects.remove(obj)
    bpy.data.libraries.remove(library)
    return names


def test_a_bake_after_live_playback_puts_its_cache_where_the_live_modifier_was(addon, tmp_path):
    scene, cape, _ = rig_scene(tmp_path, frames=6)
    for frame in range(1, 4):
        scene.frame_set(frame)
    cape.modifiers.new("Subdivision", "SUBSURF").levels = 1  # added during live playback: below the live modifier
    scene.frame_set(4)
    assert len(evaluated_positions(cape)) == (2 * COLUMNS - 1) * (2 * ROWS - 1)  # the live frames are subdivided for show
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert [m.name for m in cape.modifiers] == ["Armature", "SoftSim Cache", "Subdivision"]
    assert read_pc2(cache_file(cape))[0].shape == (6, len(original_positions(cape)), 3)  # simulated at the cape's count


def test_freeing_a_shape_key_bake_leaves_no_action_on_keys_that_had_none(addon):
    """Baking to shape keys keys their values, which gives the mesh's keys an action; on keys the user never animated,
    Free deletes that action again (none left assigned, none left in the file), and the user's key is untouched."""
    empty_scene(6)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=N - 1, y_subdivisions=N - 1, size=2.0, location=(0.0, 0.0, 2.0))
    cloth = bpy.context.object
    co = original_positions(cloth)
    cloth.vertex_groups.new(name="Edge").add(np.flatnonzero(co[:, 1] < -0.99).tolist(), 1.0, "REPLACE")
    cloth.softsim.role, cloth.softsim.pin_group, cloth.softsim.output = "CLOTH", "Edge", "SHAPE_KEYS"
    cloth.shape_key_add(name="Basis", from_mix=False)
    cloth.shape_key_add(name="Bulge", from_mix=False)  # the user's key, never animated, at value 0
    actions_before = set(bpy.data.actions.keys())
    before = object_state(cloth)

    assert bpy.ops.softsim.bake() == {"FINISHED"}
    anim = cloth.data.shape_keys.animation_data
    assert anim is not None and anim.action is not None  # the bake's keys are keyframed: an action of Blender's making
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}

    assert object_state(cloth) == before
    assert cloth.data.shape_keys.animation_data is None
    assert set(bpy.data.actions.keys()) == actions_before
