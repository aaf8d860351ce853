"""Caches: one PC2 file per object and .blend, found through its modifier; a bake deletes only files it
wrote and nobody else plays; a failed bake changes no file, folder, modifier, shape key or flag."""
import errno
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, cache_listing, evaluated_positions, lab_scene  # noqa: E402

from solvers.cache import read_pc2  # noqa: E402


def small_scene(tmp_path, blend="shot.blend", frames=4):
    """A 5x5 lab cloth saved as ``tmp_path/blend`` with the cache folder ``//cache``."""
    scene, cloth, sphere = lab_scene(n=5, frames=frames, cache_dir="//cache")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / blend))
    return scene, cloth, sphere


def add_copy(obj, name):
    """A copy of a mesh object with its own mesh, modifiers and settings (what Shift+D makes)."""
    copy = obj.copy()
    copy.data = obj.data.copy()
    copy.name = name
    bpy.context.scene.collection.objects.link(copy)
    assert copy.name == name
    return copy


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def plays(obj, path, frame):
    """What ``obj`` shows at ``frame`` is frame ``frame`` of the PC2 file at ``path``."""
    frames, start, _ = read_pc2(path)
    return np.allclose(evaluated_positions(obj, frame), frames[frame - int(start)], atol=1e-6)


def test_each_object_gets_its_own_file_named_for_the_blend_and_found_through_its_modifier(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    # Names that read the same once made safe for a file system must still get different files.
    add_copy(cloth, "A/B")
    add_copy(cloth, "A_B")
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    bodies = [bpy.data.objects[n] for n in ("Cloth", "A/B", "A_B")]
    paths = [cache_file(o) for o in bodies]
    assert len(set(paths)) == 3
    for obj, path in zip(bodies, paths):
        assert obj.modifiers[0].name == "SoftSim Cache" and obj.modifiers[0].filepath.startswith("//")  # portable with the .blend
        assert os.path.dirname(path) == str(tmp_path / "cache")
        assert os.path.basename(path).startswith("shot_") and path.endswith(".pc2")
        assert plays(obj, path, 4)
    assert cache_listing(tmp_path / "cache") == sorted(os.path.basename(p) for p in paths)  # nothing else left behind


def test_a_copy_saved_next_to_the_blend_never_writes_over_or_deletes_the_originals_cache(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path, "shot_v1.blend")
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    original = cache_file(cloth)
    original_data = file_bytes(original)

    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot_v2.blend"))  # same folder, same //cache
    cloth = bpy.data.objects["Cloth"]
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}  # v1 still plays that file: kept
    assert os.path.isfile(original) and cloth.modifiers.get("SoftSim Cache") is None
    bpy.context.scene.gravity = (0.0, 0.0, -3.0)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    copy_file = cache_file(cloth)
    assert copy_file != original and os.path.basename(copy_file).startswith("shot_v2_")
    assert file_bytes(original) == original_data
    bpy.ops.wm.save_mainfile()

    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot_v1.blend"))
    cloth = bpy.data.objects["Cloth"]
    assert cache_file(cloth) == original and plays(cloth, original, 4)
    assert not np.allclose(read_pc2(original)[0][-1], read_pc2(copy_file)[0][-1])  # the two bakes differ


def test_a_copy_of_the_same_name_in_another_folder_sharing_an_absolute_cache_folder_gets_its_own_files(addon, tmp_path, capfd):
    shared = tmp_path / "shared_cache"
    scene, cloth, _ = lab_scene(n=5, frames=4, cache_dir=str(shared))
    (tmp_path / "sh010").mkdir()
    (tmp_path / "sh020").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "sh010" / "anim.blend"))
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    original = cache_file(cloth)
    original_data = file_bytes(original)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "sh020" / "anim.blend"))
    cloth = bpy.data.objects["Cloth"]
    bpy.context.scene.gravity = (0.0, 0.0, -3.0)
    capfd.readouterr()
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert f"kept {original}: this object did not write it from {tmp_path / 'sh020' / 'anim.blend'}" in capfd.readouterr().out
    assert cache_file(cloth) != original and os.path.dirname(cache_file(cloth)) == str(shared)
    assert file_bytes(original) == original_data
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert cache_listing(shared) == [os.path.basename(original)]  # the copy's own file went, the original's stays


def test_a_file_another_object_still_plays_is_kept_until_its_last_player_is_freed(addon, tmp_path, capfd):
    scene, cloth, _ = small_scene(tmp_path)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    path = cache_file(cloth)
    duplicate = add_copy(cloth, "Cloth.001")  # plays the same file, as after Shift+D
    assert cache_file(duplicate) == path
    bpy.ops.object.select_all(action="DESELECT")
    cloth.select_set(True)
    capfd.readouterr()
    assert bpy.ops.softsim.bake(selected_only=True) == {"FINISHED"}  # rewrites the file the duplicate plays, and says so
    assert f"'Cloth': this bake rewrote {path}, which 'Cloth.001' also plays" in capfd.readouterr().out
    assert cache_file(cloth) == path and plays(duplicate, path, 4)

    bpy.ops.object.select_all(action="DESELECT")
    cloth.select_set(True)
    assert bpy.ops.softsim.free_bake(selected_only=True) == {"FINISHED"}
    assert cloth.modifiers.get("SoftSim Cache") is None
    assert os.path.isfile(path) and plays(duplicate, path, 4)

    bpy.ops.object.select_all(action="DESELECT")
    duplicate.select_set(True)
    assert bpy.ops.softsim.free_bake(selected_only=True) == {"FINISHED"}
    assert not os.path.exists(path)


def test_rebaking_a_renamed_object_replaces_its_old_file(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    old = cache_file(cloth)
    cloth.name = "Flag"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    new = cache_file(cloth)
    assert "_Flag_" in os.path.basename(new) and os.path.isfile(new)
    assert not os.path.exists(old)
    assert cache_listing(tmp_path / "cache") == [os.path.basename(new)]


def test_files_modifiers_and_shape_keys_the_bake_did_not_make_are_never_touched(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    # The old naming scheme's file (maybe another .blend's), an unrelated file, and a user's own cache.
    mine = {cache / "Cloth.pc2": b"someone else's cache", cache / "notes.txt": b"keep me", tmp_path / "user.pc2": b"user's"}
    for path, data in mine.items():
        path.write_bytes(data)
    user_cache = cloth.modifiers.new("My Cache", "MESH_CACHE")
    user_cache.filepath = str(tmp_path / "user.pc2")
    user_cache.show_viewport = False  # on, it would feed the cloth from above Soft Sim, and Shape Keys output refuses that
    cloth.shape_key_add(name="Basis", from_mix=False)
    cloth.shape_key_add(name="SoftSim fur", from_mix=False)  # looks like a bake key, is not one

    def untouched():
        assert all(path.read_bytes() == data for path, data in mine.items())
        assert cloth.modifiers["My Cache"].filepath == str(tmp_path / "user.pc2")
        assert [k.name for k in cloth.data.shape_keys.key_blocks][:2] == ["Basis", "SoftSim fur"]

    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert [m.name for m in cloth.modifiers] == ["My Cache", "SoftSim Cache"]  # the bake's goes at the end
    ours = cache_file(cloth)
    assert ours not in map(str, mine)
    untouched()

    cloth.softsim.output = "SHAPE_KEYS"  # switching output removes our file only
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert not os.path.exists(ours) and cloth.modifiers.get("SoftSim Cache") is None
    untouched()
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert [k.name for k in cloth.data.shape_keys.key_blocks] == ["Basis", "SoftSim fur"]
    untouched()

    # Our modifier pointed by hand at a file the bake did not write: freeing keeps that file.
    cloth.softsim.output = "CACHE"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    cloth.modifiers["SoftSim Cache"].filepath = str(cache / "Cloth.pc2")
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    untouched()
    assert cache_listing(cache) == ["Cloth.pc2", "notes.txt", os.path.basename(ours)]  # the one we wrote is kept too: it was not played any more


def test_a_modifier_of_another_kind_holding_the_cache_name_is_an_error(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    cloth.modifiers.new("SoftSim Cache", "SUBSURF")
    with pytest.raises(RuntimeError, match="'Cloth': its Subsurf modifier is named 'SoftSim Cache'.*rename that modifier"):
        bpy.ops.softsim.bake()
    assert [(m.name, m.type) for m in cloth.modifiers] == [("SoftSim Cache", "SUBSURF")]
    assert not os.path.exists(tmp_path / "cache")  # refused before the folder was made


def test_a_bake_that_fails_before_writing_leaves_no_new_folder_and_the_frame_as_it_was(addon, tmp_path):
    scene, cloth, _ = lab_scene(n=5, frames=4, cache_dir=str(tmp_path / "new" / "deeper"))
    scene.frame_set(3)
    scene.gravity = (0.0, 0.0, -1.0e7)
    with pytest.raises(RuntimeError, match="'Cloth' became unstable"):
        bpy.ops.softsim.bake()
    assert not os.path.exists(tmp_path / "new")
    assert scene.frame_current == 3 and not cloth.softsim.is_baked and cloth.softsim.status == ""
    cloth.softsim.pin_group = "Nope"  # fails while setting up, after the folder check
    with pytest.raises(RuntimeError, match="pin group 'Nope'"):
        bpy.ops.softsim.bake()
    assert not os.path.exists(tmp_path / "new") and scene.frame_current == 3


def test_a_bake_whose_second_file_cannot_be_written_changes_nothing(addon, tmp_path, monkeypatch):
    from soft_sim.operators.output import staged as output

    scene, cloth, _ = small_scene(tmp_path)
    other, third = add_copy(cloth, "Other"), add_copy(cloth, "Third")
    other.location.x += 20.0
    third.location.x -= 20.0
    bodies = (cloth, other, third)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    before = {o.name: (cache_file(o), file_bytes(cache_file(o)), o.softsim.status, evaluated_positions(o, 4)) for o in bodies}
    third.softsim.output = "SHAPE_KEYS"  # a successful bake would swap Third's cache for shape keys
    scene.gravity = (0.0, 0.0, -3.0)  # and change every file

    real_write, calls = output.write_pc2, []

    def disk_full_on_the_second_file(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        real_write(path, *args, **kwargs)

    monkeypatch.setattr(output, "write_pc2", disk_full_on_the_second_file)
    with pytest.raises(RuntimeError, match=r"'Other': cannot write .*\.pc2 \(No space left on device\)"):
        bpy.ops.softsim.bake()
    assert len(calls) == 2  # Cloth's file was written (staged) before Other's failed
    for obj in bodies:
        path, data, status, shown = before[obj.name]
        assert cache_file(obj) == path and file_bytes(path) == data
        assert obj.softsim.status == status and obj.softsim.is_baked and obj.softsim.baked_output == "CACHE"
        assert obj.data.shape_keys is None
        assert np.array_equal(evaluated_positions(obj, 4), shown)
    assert cache_listing(tmp_path / "cache") == sorted(os.path.basename(p) for p, *_ in before.values())  # no staged leftovers


def test_the_bake_panel_names_the_cache_file_and_says_when_it_is_missing(addon, tmp_path):
    from test_blender_panels import draw_all

    scene, cloth, _ = small_scene(tmp_path)

    def labels():
        return [text for kind, text in draw_all(addon, cloth, scene) if kind == "label"]

    assert bpy.ops.softsim.bake() == {"FINISHED"}
    path = cache_file(cloth)
    assert f"Baked to {os.path.basename(path)}" in labels()
    os.remove(path)
    assert f"Cache file missing: {path}: bake again" in labels()
