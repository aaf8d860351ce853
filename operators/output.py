"""Writing simulation results into Blender: the live shape key, PC2 + Mesh Cache, per-frame shape keys."""
import os

import bpy
import numpy as np

from ..solvers.cache import write_pc2

LIVE_KEY = "SoftSim Live"
BAKE_KEY_PREFIX = "SoftSim f"
CACHE_MODIFIER = "SoftSim Cache"


class OutputError(Exception):
    """Results could not be written; the message says where and what to change."""


# --- shape keys ---------------------------------------------------------------------------------

def _ensure_basis(obj) -> bool:
    """Make sure the mesh has a Basis key; returns True if this call created it."""
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
        return True
    return False


def _set_key_positions(key_block, local_positions: np.ndarray) -> None:
    key_block.points.foreach_set("co", np.ascontiguousarray(local_positions, np.float32).ravel())


def show_live(obj, local_positions: np.ndarray) -> None:
    """Show live-simulated positions (n, 3, object space) through the 'SoftSim Live' shape key."""
    keys = obj.data.shape_keys
    block = keys.key_blocks.get(LIVE_KEY) if keys else None
    if block is None:
        if _ensure_basis(obj):
            obj.softsim.created_basis = True
        block = obj.shape_key_add(name=LIVE_KEY, from_mix=False)
    block.value = 1.0  # 5.0 creates keys at 1.0, 4.2 at 0.0: set it either way
    _set_key_positions(block, local_positions)
    obj.data.update()


def _remove_keys(obj, predicate) -> None:
    keys = obj.data.shape_keys
    if keys is None:
        return
    for block in [b for b in keys.key_blocks if predicate(b.name)]:
        obj.shape_key_remove(block)
    keys = obj.data.shape_keys
    if keys is not None and obj.softsim.created_basis and len(keys.key_blocks) == 1:
        # Only the Basis we added is left: remove it too, so the mesh is as it was.
        if keys.animation_data is not None and keys.animation_data.action is None:
            keys.animation_data_clear()
        obj.shape_key_remove(keys.key_blocks[0])
        obj.softsim.created_basis = False


def remove_live(obj) -> None:
    _remove_keys(obj, lambda name: name == LIVE_KEY)


def write_shape_keys(obj, frames_local: np.ndarray, frame_start: int) -> None:
    """One shape key per frame (frames_local: (F, n, 3) object space), keyed to 1 on its frame only."""
    remove_live(obj)
    if _ensure_basis(obj):
        obj.softsim.created_basis = True
    prefs = bpy.context.preferences.edit
    previous_interpolation = prefs.keyframe_new_interpolation_type
    prefs.keyframe_new_interpolation_type = "CONSTANT"  # a key is fully on at its frame, fully off elsewhere
    try:
        last = frame_start + len(frames_local) - 1
        for offset, positions in enumerate(frames_local):
            frame = frame_start + offset
            block = obj.shape_key_add(name=f"{BAKE_KEY_PREFIX}{frame:04d}", from_mix=False)
            _set_key_positions(block, positions)
            for f, value in ((frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)):
                if frame_start <= f <= last or f == frame:
                    block.value = value
                    block.keyframe_insert("value", frame=f)
            block.value = 0.0
    finally:
        prefs.keyframe_new_interpolation_type = previous_interpolation
    obj.data.update()


def remove_shape_key_bake(obj) -> None:
    keys = obj.data.shape_keys
    if keys is not None and keys.animation_data is not None and keys.animation_data.action is not None:
        for block in keys.key_blocks:
            if block.name.startswith(BAKE_KEY_PREFIX):
                frame = int(block.name[len(BAKE_KEY_PREFIX):])
                for f in (frame - 1, frame, frame + 1):
                    try:
                        block.keyframe_delete("value", frame=f)
                    except RuntimeError:
                        pass  # no key at that frame (the first and last keys have only two)
    _remove_keys(obj, lambda name: name.startswith(BAKE_KEY_PREFIX))


# --- PC2 cache ----------------------------------------------------------------------------------

def cache_folder(scene) -> str:
    """Absolute cache folder of the scene; raises OutputError if it cannot be resolved."""
    raw = scene.softsim.cache_dir
    if not raw:
        raise OutputError("the Cache Folder is empty: set one in the Soft Sim panel (Scene settings)")
    if raw.startswith("//") and not bpy.data.filepath:
        raise OutputError(f"the Cache Folder '{raw}' is relative to the .blend file, which is not saved yet: save the file or set an absolute folder")
    return bpy.path.abspath(raw)


def cache_path(scene, obj_name: str) -> str:
    safe = obj_name.replace("/", "_").replace("\\", "_")
    return os.path.join(cache_folder(scene), f"{safe}.pc2")


def check_cache_writable(scene) -> str:
    """Create the cache folder if needed and prove it can be written; returns it or raises OutputError."""
    folder = cache_folder(scene)
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".softsim-write-test")
        with open(probe, "wb") as f:
            f.write(b"ok")
        os.remove(probe)
    except OSError as error:
        raise OutputError(f"cannot write the cache folder '{folder}' ({error.strerror}): choose a writable Cache Folder") from error
    return folder


def _blend_relative(path: str) -> str:
    if bpy.data.filepath:
        try:
            return bpy.path.relpath(path)
        except ValueError:  # another drive on Windows
            return path
    return path


def write_cache(obj, scene, frames_local: np.ndarray, frame_start: int) -> str:
    """Write the PC2 file and make a Mesh Cache modifier, first in the stack, play it. Returns the path."""
    path = cache_path(scene, obj.name)
    try:
        write_pc2(path, frames_local, frame_start)
    except OSError as error:
        raise OutputError(f"'{obj.name}': cannot write {path} ({error.strerror}): choose a writable Cache Folder") from error
    remove_live(obj)
    modifier = obj.modifiers.get(CACHE_MODIFIER)
    if modifier is None or modifier.type != "MESH_CACHE":
        modifier = obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
    modifier.cache_format = "PC2"
    modifier.filepath = _blend_relative(path)
    modifier.time_mode = "FRAME"  # 'TIME' is broken for PC2
    modifier.play_mode = "SCENE"
    modifier.deform_mode = "OVERWRITE"
    modifier.interpolation = "LINEAR"
    modifier.forward_axis = "POS_Y"
    modifier.up_axis = "POS_Z"
    modifier.frame_start = float(frame_start)
    modifier.frame_scale = 1.0
    _move_first(obj, modifier)
    return path


def _move_first(obj, modifier) -> None:
    index = list(obj.modifiers).index(modifier)
    if index == 0:
        return
    if hasattr(obj.modifiers, "move"):  # Blender 4.3+
        obj.modifiers.move(index, 0)
    else:
        with bpy.context.temp_override(object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=modifier.name, index=0)


def remove_cache(obj, scene) -> None:
    modifier = obj.modifiers.get(CACHE_MODIFIER)
    if modifier is not None:
        path = bpy.path.abspath(modifier.filepath)
        obj.modifiers.remove(modifier)
        if path.endswith(".pc2") and os.path.isfile(path):
            os.remove(path)


def free_bake(obj, scene) -> None:
    """Remove whatever bake ``obj`` has, and its live key: the mesh shows its original shape again."""
    remove_cache(obj, scene)
    remove_shape_key_bake(obj)
    remove_live(obj)
    obj.softsim.is_baked = False
    obj.softsim.baked_output = ""
