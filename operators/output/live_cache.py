"""Live playback shown through a Mesh Cache modifier, for bodies that modifiers above Soft Sim feed (a rigged cape).

Such a body's live frames cannot show as a shape key: shape keys come before every modifier, and the Armature would
move the simulated positions a second time. So they show as a bake's do: a Mesh Cache modifier, 'SoftSim Live', at
Soft Sim's place in the stack (where a PC2 bake puts its 'SoftSim Cache'), playing a PC2 file that grows by one frame
each time the live handler simulates one. The file lives in a private temporary folder of this Blender session, never
in the Cache Folder: it is no bake and nobody else plays it.

The modifier and its file belong to live playback alone. The start frame, Reset, Free and a bake remove both (the
object is then as the user made it); saving the .blend takes the modifier out for the write and puts it back after,
so the saved file never holds a modifier playing a temporary file; opening a file removes any such modifier it holds
(an autosave or a recovered session can, as can a file saved by an older version). The folder is removed when
Blender quits.
"""
import atexit
import os
import re
import secrets
import shutil
import tempfile

from ...solvers.cache import append_pc2_frame, write_pc2
from .names import LIVE_MODIFIER, OutputError
from .shape_keys import remove_live_key

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_folder = None  # this session's folder of live files, made on first use
_detached = []  # (object name, modifier index, filepath, frame_start, show_render) taken out while the .blend is written


def _live_folder() -> str:
    global _folder
    if _folder is None or not os.path.isdir(_folder):
        _folder = tempfile.mkdtemp(prefix="softsim-live-")
    return _folder


def _remove_folder() -> None:
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)


atexit.register(_remove_folder)  # Blender quitting (it has no quit handler of its own)


def _is_ours(path: str) -> bool:
    """Is ``path`` a live file of this session (so ours to delete)?"""
    return _folder is not None and os.path.dirname(os.path.abspath(path)) == os.path.abspath(_folder)


def _delete(path: str) -> None:
    if path and _is_ours(path):
        try:
            os.remove(path)
        except OSError:
            pass  # already gone


def live_modifier(obj):
    """``obj``'s 'SoftSim Live' Mesh Cache modifier, or None."""
    modifier = obj.modifiers.get(LIVE_MODIFIER)
    return modifier if modifier is not None and modifier.type == "MESH_CACHE" else None


def check_live_modifier_name(obj) -> None:
    """Raise OutputError if another kind of modifier already has the name the live display needs."""
    modifier = obj.modifiers.get(LIVE_MODIFIER)
    if modifier is not None and modifier.type != "MESH_CACHE":
        raise OutputError(f"'{obj.name}': its {modifier.type.replace('_', ' ').title()} modifier is named '{LIVE_MODIFIER}', the "
                          "name live playback needs to show it: rename that modifier")


def new_live_file(object_name: str, rest_local, frame_start: int) -> str:
    """A new live file of one frame (the rest shape, (n, 3) object space) for the object named ``object_name``."""
    name = f"{_UNSAFE.sub('_', object_name)[:60]}_{secrets.token_hex(4)}.pc2"
    path = os.path.join(_live_folder(), name)
    write_pc2(path, rest_local[None], frame_start)
    return path


def append_live_frame(obj, path: str, positions) -> None:
    """Add the next simulated frame (n, 3) to the live file ``path`` and have Blender read it again."""
    append_pc2_frame(path, positions)
    obj.update_tag(refresh={"DATA"})


def show_live_file(obj, path: str, frame_start: int, place: int) -> None:
    """Make ``obj``'s 'SoftSim Live' modifier play ``path`` (frame 0 at ``frame_start``), adding it at index ``place`` of
    the stack if it is missing. A live file it played before is deleted."""
    modifier = live_modifier(obj)
    if modifier is None:
        check_live_modifier_name(obj)
        modifier = _add_at(obj, place)
    elif modifier.filepath == path and modifier.frame_start == float(frame_start):
        return
    previous = modifier.filepath
    _configure(modifier, path, frame_start)
    if previous != path:
        _delete(previous)
    obj.update_tag(refresh={"DATA"})


def _add_at(obj, place: int):
    obj.modifiers.new(LIVE_MODIFIER, "MESH_CACHE")
    last = len(obj.modifiers) - 1
    place = max(0, min(place, last))
    if place != last:
        obj.modifiers.move(last, place)
    return obj.modifiers[place]


def _configure(modifier, path: str, frame_start: float) -> None:
    modifier.cache_format = "PC2"
    modifier.filepath = path
    modifier.time_mode = "FRAME"  # 'TIME' is broken for PC2
    modifier.play_mode = "SCENE"
    modifier.deform_mode = "OVERWRITE"
    modifier.interpolation = "LINEAR"
    modifier.forward_axis = "POS_Y"
    modifier.up_axis = "POS_Z"
    modifier.frame_start = float(frame_start)
    modifier.frame_scale = 1.0


def live_modifier_index(obj):
    """Index of ``obj``'s live modifier in its stack, or None."""
    modifier = live_modifier(obj)
    return None if modifier is None else list(obj.modifiers).index(modifier)


def remove_live_modifier(obj) -> None:
    """Remove the live modifier and delete the file it plays."""
    modifier = live_modifier(obj)
    if modifier is None:
        return
    path = modifier.filepath
    obj.modifiers.remove(modifier)
    _delete(path)


def remove_live(obj) -> None:
    """Remove whatever live playback added to ``obj`` (its modifier and file, or its shape key): it shows as the user
    made it."""
    remove_live_modifier(obj)
    if obj.type == "MESH":
        remove_live_key(obj)


def detach_for_save(objects) -> None:
    """Take the live modifiers out of ``objects`` while the .blend is written (``reattach_after_save`` puts them back)."""
    for obj in objects:
        index = live_modifier_index(obj)
        if index is None or obj.library is not None:
            continue
        modifier = obj.modifiers[index]
        _detached.append((obj.name, index, modifier.filepath, modifier.frame_start, modifier.show_render))
        obj.modifiers.remove(modifier)


def reattach_after_save(objects_by_name) -> None:
    """Put back the live modifiers ``detach_for_save`` took out, where they were."""
    while _detached:
        name, index, path, frame_start, show_render = _detached.pop(0)
        obj = objects_by_name.get(name)
        if obj is None or live_modifier(obj) is not None or obj.modifiers.get(LIVE_MODIFIER) is not None:
            _delete(path)
            continue
        modifier = _add_at(obj, index)
        _configure(modifier, path, frame_start)
        modifier.show_render = show_render


def remove_stale(objects) -> None:
    """Remove the live modifiers a file just opened holds (no live simulation runs in it yet)."""
    _detached.clear()
    for obj in objects:
        if obj.library is None and live_modifier(obj) is not None:
            remove_live_modifier(obj)
