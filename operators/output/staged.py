"""A bake's results staged before they are swapped in: shape keys under temporary names showing nothing, or a
PC2 file under a temporary name; ``swap_in`` / ``swap_back`` / ``commit`` let the bake replace every body's
previous bake all or nothing."""
import os
import secrets
import tempfile

import bpy
import numpy as np

from ...solvers.cache import write_pc2
from .. import trash
from .names import CACHE_MODIFIER, STAGED_KEY_PREFIX, OutputError, bake_key_name
from .pc2_cache import (CacheRelease, _blend_relative, _same_file, _strerror, _written_here, blend_identity,
                        cache_file_name, cache_file_of, cache_folder, check_modifier_name, detach_cache, new_cache_token,
                        other_users, our_cache_modifier, plain_file_mode)
from .live_cache import live_modifier_index, remove_live
from .shape_keys import _ensure_basis, _mute_user_keys, _set_key_positions, check_shape_key_bake, remove_shape_key_bake


class StagedShapeKeys:
    """A shape-key bake written as hidden keys under temporary names; ``commit`` makes them the bake."""

    def __init__(self, obj, frames_local: np.ndarray, frame_start: int):
        self.object_name = obj.name
        self.frame_start = frame_start
        self.frame_end = frame_start + len(frames_local) - 1
        check_shape_key_bake(obj, self.frame_start, self.frame_end)
        self.created_basis = _ensure_basis(obj)
        self.blocks = []  # names of the staged keys, in frame order
        self.release = CacheRelease()
        try:
            for offset, positions in enumerate(frames_local):
                block = obj.shape_key_add(name=f"{STAGED_KEY_PREFIX}{frame_start + offset:04d}", from_mix=False)
                self.blocks.append(block.name)
                block.mute = True  # shows nothing until committed
                block.value = 0.0
                _set_key_positions(block, positions)
        except BaseException:
            self.discard(obj)
            raise

    path = None  # no new PC2 file

    def swap_in(self, obj, leaving: set, incoming: set) -> None:
        """Move a PC2 file of the previous bake that nothing else plays into the trash (undone by ``swap_back``)."""
        path = cache_file_of(obj)
        if path is not None:
            self.release.add(obj, path, leaving, incoming)

    def swap_back(self, obj) -> None:
        self.release.undo()

    def discard(self, obj) -> None:
        keys = obj.data.shape_keys
        for name in self.blocks:
            block = keys.key_blocks.get(name) if keys is not None else None
            if block is not None:
                obj.shape_key_remove(block)
        self.blocks = []
        keys = obj.data.shape_keys
        if self.created_basis and keys is not None and len(keys.key_blocks) == 1:
            obj.shape_key_remove(keys.key_blocks[0])
        self.created_basis = False

    def commit(self, obj) -> list:
        """Replace whatever bake ``obj`` had by these keys; returns notes for the report."""
        remove_live(obj)
        detach_cache(obj)
        remove_shape_key_bake(obj)
        if self.created_basis:
            obj.softsim.created_basis = True
        keys = obj.data.shape_keys
        had_action = keys.animation_data is not None and keys.animation_data.action is not None
        prefs = bpy.context.preferences.edit
        previous_interpolation = prefs.keyframe_new_interpolation_type
        prefs.keyframe_new_interpolation_type = "CONSTANT"  # a key is fully on at its frame, fully off elsewhere
        names = set()
        try:
            for offset, staged in enumerate(self.blocks):
                frame = self.frame_start + offset
                block = keys.key_blocks[staged]
                block.name = bake_key_name(frame)
                names.add(block.name)
                block.mute = False
                for f, value in ((frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)):
                    if self.frame_start <= f <= self.frame_end or f == frame:
                        block.value = value
                        block.keyframe_insert("value", frame=f)
                block.value = 0.0
        finally:
            prefs.keyframe_new_interpolation_type = previous_interpolation
        self.blocks = []
        if names and not had_action:
            obj.softsim.created_action = True  # keyframe_insert made the keys an action: Free deletes it again
        _mute_user_keys(obj, names)
        obj.data.update()
        return self.release.notes


class StagedCache:
    """A PC2 file written next to its final place, moved there only when every body of a bake is ready."""

    def __init__(self, obj, scene, frames_local: np.ndarray, frame_start: int):
        self.object_name = obj.name
        self.frame_start = frame_start
        self.token = obj.softsim.cache_token or new_cache_token()
        self.bake_id = trash.new_bake_id()
        self.release = CacheRelease()
        folder = cache_folder(scene)
        self.path = os.path.join(folder, cache_file_name(obj.name, self.token))
        if os.path.isdir(self.path) and not os.path.islink(self.path):
            raise OutputError(f"'{obj.name}': its cache file {self.path} is a folder: move that folder away or choose another Cache Folder")
        check_modifier_name(obj)
        self.staged = self.stage_dir = None
        self.placed = False
        try:
            # A new folder only this user can enter (mkdtemp: unique name, mode 0700), so that nobody else sharing
            # the cache folder can swap the file for a link between its creation and its writing.
            self.stage_dir = tempfile.mkdtemp(prefix=".softsim-", suffix=".staged", dir=folder)
            self.staged = os.path.join(self.stage_dir, "bake.pc2")
            write_pc2(self.staged, frames_local, frame_start)
            # Still inside the private staging folder: given the mode a plainly created file would have.
            os.chmod(self.staged, plain_file_mode())
        except BaseException as error:
            self.discard(obj)
            if isinstance(error, OSError):
                raise OutputError(f"'{obj.name}': cannot write {self.path} ({_strerror(error)}): free some space or choose another Cache Folder") from error
            raise

    def discard(self, obj=None) -> None:
        if self.staged is not None and os.path.lexists(self.staged):
            os.remove(self.staged)
        self.staged = None
        if self.stage_dir is not None and os.path.isdir(self.stage_dir):
            os.rmdir(self.stage_dir)
        self.stage_dir = None

    def swap_in(self, obj, leaving: set, incoming: set) -> None:
        """Move the new file into place; the files it replaces go to the trash. Raises OutputError; ``swap_back`` undoes it."""
        try:
            self._swap_in(obj, leaving, incoming)
        except BaseException:
            self.swap_back(obj)
            raise

    def _swap_in(self, obj, leaving: set, incoming: set) -> None:
        previous = cache_file_of(obj)
        if previous is not None and not _same_file(previous, self.path):
            self.release.add(obj, previous, leaving, incoming)
        if os.path.lexists(self.path):
            # Ours (an earlier bake of this object, maybe from an earlier session) or a stray file or link at our
            # unique name: either way it is replaced, and kept in the trash until the .blend is saved.
            old_id = trash.occupant_id(self.path)
            if old_id is None:
                old_id = obj.softsim.cache_bake_id if _written_here(obj, self.path) else f"unknown-{secrets.token_hex(4)}"
            self.release.move(obj, self.path, old_id)
        try:
            os.replace(self.staged, self.path)
        except OSError as error:
            raise OutputError(f"'{obj.name}': cannot move its new cache file into {self.path} ({_strerror(error)}): "
                              "make the Cache Folder writable; nothing was changed") from error
        self.staged = None
        self.placed = True
        trash.written(self.path, self.bake_id, blend_identity())
        self.discard()  # the empty staging folder

    def swap_back(self, obj) -> None:
        if self.placed:
            os.remove(self.path)
            trash.forget(self.path)
            self.placed = False
        self.release.undo()

    def commit(self, obj) -> list:
        """Point the object's Mesh Cache modifier at the file (already in place). Returns notes for the report."""
        notes = list(self.release.notes)
        live_index = live_modifier_index(obj)
        remove_live(obj)
        remove_shape_key_bake(obj)
        modifier = our_cache_modifier(obj)
        if modifier is None:
            # Where the bake read its input (body_input.soft_sim_place): the live modifier's index if live playback
            # showed it, else the end of the stack. A modifier already there keeps its index, wherever the user moved it.
            modifier = obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
            if live_index is not None and live_index < len(obj.modifiers) - 1:
                obj.modifiers.move(len(obj.modifiers) - 1, live_index)
                modifier = obj.modifiers[live_index]
        modifier.cache_format = "PC2"
        modifier.filepath = _blend_relative(self.path)
        modifier.time_mode = "FRAME"  # 'TIME' is broken for PC2
        modifier.play_mode = "SCENE"
        modifier.deform_mode = "OVERWRITE"
        modifier.interpolation = "LINEAR"
        modifier.forward_axis = "POS_Y"
        modifier.up_axis = "POS_Z"
        modifier.frame_start = float(self.frame_start)
        modifier.frame_scale = 1.0
        obj.softsim.cache_token = self.token
        obj.softsim.cache_file = os.path.basename(self.path)
        obj.softsim.cache_blend = blend_identity()
        obj.softsim.cache_bake_id = self.bake_id
        users = other_users(self.path, obj)
        for name in users:  # they play the new bake now: undo takes them back to the old one with this object
            other = bpy.data.objects[name]
            if our_cache_modifier(other) is not None and _same_file(cache_file_of(other), self.path):
                other.softsim.cache_bake_id = self.bake_id
        if users:
            notes.append(f"'{obj.name}': this bake rewrote {self.path}, which {', '.join(repr(u) for u in users)} "
                         f"also play{'s' if len(users) == 1 else ''}")
        return notes
