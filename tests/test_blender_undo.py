"""Undo and the cache files agree: Ctrl+Z after Free, after a re-bake or after a first bake
gives every object the file its restored modifier names, and redo goes forward again. Replaced and freed files
wait in ``<cache folder>/.softsim-trash/`` until the .blend is saved.

The bpy wheel runs Blender's real undo system: an operator called with ``('EXEC_DEFAULT', True)`` pushes an
undo step as a click in the UI does, and ``bpy.ops.ed.undo()`` / ``redo()`` restore the .blend's data and
run the ``undo_post`` / ``redo_post`` handlers, as Ctrl+Z and Ctrl+Shift+Z do."""
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, cache_listing, evaluated_positions, lab_scene  # noqa: E402

from solvers.cache import read_pc2  # noqa: E402


def saved_scene(tmp_path, frames=4):
    scene, cloth, sphere = lab_scene(n=5, frames=frames, cache_dir="//cache")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    bpy.ops.ed.undo_push(message="set-up")
    return scene


def bake():
    assert bpy.ops.softsim.bake("EXEC_DEFAULT", True) == {"FINISHED"}  # True: push an undo step, as the UI does


def free():
    assert bpy.ops.softsim.free_bake("EXEC_DEFAULT", True) == {"FINISHED"}


def data(path):
    with open(path, "rb") as f:
        return f.read()


def plays(path, frame=4):
    """The object 'Cloth' (fetched anew: undo replaces every datablock) shows frame ``frame`` of ``path``."""
    cloth = bpy.data.objects["Cloth"]
    frames, start, _ = read_pc2(path)
    return cache_file(cloth) == path and np.allclose(evaluated_positions(cloth, frame), frames[frame - int(start)], atol=1e-6)


def trash(tmp_path):
    top = tmp_path / "cache" / ".softsim-trash"
    return sorted(str(p) for p in top.rglob("*.pc2")) if top.exists() else []


def test_undo_after_free_and_after_a_rebake_gives_back_the_file_the_object_plays(addon, tmp_path):
    saved_scene(tmp_path)
    bake()
    path = cache_file(bpy.data.objects["Cloth"])
    first = data(path)

    free()
    assert not os.path.exists(path) and bpy.data.objects["Cloth"].modifiers.get("SoftSim Cache") is None
    assert len(trash(tmp_path)) == 1  # kept for undo, out of the way
    bpy.ops.ed.undo()
    assert bpy.data.objects["Cloth"].softsim.is_baked
    assert data(path) == first and plays(path)
    bpy.ops.ed.redo()
    assert not os.path.exists(path) and not bpy.data.objects["Cloth"].softsim.is_baked
    bpy.ops.ed.undo()
    assert data(path) == first and plays(path)

    bpy.context.scene.gravity = (0.0, 0.0, -3.0)
    bake()  # re-bake: the same file name, new motion
    second = data(path)
    assert second != first and plays(path)
    bpy.ops.ed.undo()
    assert data(path) == first and plays(path)  # the motion of the bake the undo went back to
    bpy.ops.ed.redo()
    assert data(path) == second and plays(path)

    bpy.ops.wm.save_mainfile()  # saving empties the trash: the files only undo could still want
    assert trash(tmp_path) == [] and not (tmp_path / "cache" / ".softsim-trash").exists()
    assert cache_listing(tmp_path / "cache") == [os.path.basename(path)] and data(path) == second


def test_undoing_a_first_bake_moves_its_file_aside_and_redo_brings_it_back(addon, tmp_path):
    saved_scene(tmp_path)
    bake()
    path = cache_file(bpy.data.objects["Cloth"])
    baked = data(path)
    bpy.ops.ed.undo()
    assert cache_file(bpy.data.objects["Cloth"]) is None
    assert cache_listing(tmp_path / "cache") == [] and len(trash(tmp_path)) == 1  # no file left that nothing plays
    bpy.ops.ed.redo()
    assert data(path) == baked and plays(path)
    assert trash(tmp_path) == []


def test_files_this_session_did_not_write_are_never_moved_by_undo(addon, tmp_path):
    """A file at a cache path that the session knows nothing of (another Blender's, a user's) stays put."""
    saved_scene(tmp_path)
    bake()
    path = cache_file(bpy.data.objects["Cloth"])
    free()
    with open(path, "wb") as f:  # someone else writes a file of that name meanwhile
        f.write(b"not ours")
    bpy.ops.ed.undo()
    assert data(path) == b"not ours"
    assert len(trash(tmp_path)) == 1  # ours is still kept; nothing was moved over the stranger's file
