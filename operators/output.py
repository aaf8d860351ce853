"""Writing simulation results into Blender: the live shape key, PC2 + Mesh Cache, per-frame shape keys.

Every bake is staged first (PC2 files under temporary names, shape keys under temporary names with nothing
shown), then swapped in; replaced and freed PC2 files go to the trash (``trash.py``) so that undo finds them.
"""
import hashlib
import json
import os
import re
import secrets
import tempfile

import bpy
import numpy as np

from ..solvers.cache import write_pc2
from . import trash

LIVE_KEY = "SoftSim Live"
BAKE_KEY_PREFIX = "SoftSim f"
STAGED_KEY_PREFIX = "SoftSim staged f"
CACHE_MODIFIER = "SoftSim Cache"
_BAKE_KEY = re.compile(re.escape(BAKE_KEY_PREFIX) + r"(\d{4,})$")  # only the keys a bake names: never a user's "SoftSim fur"


def is_bake_key(name: str) -> bool:
    """Is this shape key named as a shape-key bake names its keys ("SoftSim f0001", ...)?"""
    return _BAKE_KEY.match(name) is not None


def bake_key_name(frame: int) -> str:
    return f"{BAKE_KEY_PREFIX}{frame:04d}"


class OutputError(Exception):
    """Results could not be written; the message says where and what to change."""


# --- shape keys ---------------------------------------------------------------------------------
#
# A shape-key bake owns exactly the keys "SoftSim f<frame>" of the frames it baked (recorded on the
# object), never a user's key of the same style of name. While a bake's or the live key is shown, the
# user's own keys are muted (shape keys add up: they would move the simulated vertices), and the ones
# Soft Sim muted are unmuted when the bake is freed.

def _ensure_basis(obj) -> bool:
    """Make sure the mesh has a Basis key; returns True if this call created it."""
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
        return True
    return False


def _set_key_positions(key_block, local_positions: np.ndarray) -> None:
    key_block.points.foreach_set("co", np.ascontiguousarray(local_positions, np.float32).ravel())


def _shape_key_baked(obj) -> bool:
    return obj.softsim.is_baked and obj.softsim.baked_output == "SHAPE_KEYS"


def _bake_blocks(obj) -> list:
    """The shape keys of ``obj``'s own shape-key bake (none unless it is baked to shape keys)."""
    keys = obj.data.shape_keys
    if keys is None or not _shape_key_baked(obj):
        return []
    s = obj.softsim
    if s.baked_frame_end > s.baked_frame_start:
        names = {bake_key_name(f) for f in range(s.baked_frame_start, s.baked_frame_end + 1)}
        return [b for b in keys.key_blocks if b.name in names]
    return [b for b in keys.key_blocks if is_bake_key(b.name)]  # baked by a version that did not record its frames


def _muted_by_us(obj) -> list:
    try:
        names = json.loads(obj.softsim.muted_keys or "[]")
    except ValueError:
        return []
    return [n for n in names if isinstance(n, str)]


def _mute_user_keys(obj, ours: set) -> None:
    """Mute the user's shape keys so that what shows is exactly the simulation; remember which."""
    keys = obj.data.shape_keys
    if keys is None:
        return
    muted = _muted_by_us(obj)
    for block in keys.key_blocks:
        if block == keys.reference_key or block.name in ours or block.name == LIVE_KEY or block.mute:
            continue
        block.mute = True
        muted.append(block.name)
    obj.softsim.muted_keys = json.dumps(muted) if muted else ""


def _unmute_user_keys(obj) -> None:
    keys = obj.data.shape_keys
    for name in _muted_by_us(obj):
        block = keys.key_blocks.get(name) if keys is not None else None
        if block is not None:
            block.mute = False
    obj.softsim.muted_keys = ""


def _drop_basis_if_alone(obj) -> None:
    keys = obj.data.shape_keys
    if keys is not None and obj.softsim.created_basis and len(keys.key_blocks) == 1:
        # Only the Basis we added is left: remove it too, so the mesh is as it was.
        if keys.animation_data is not None and keys.animation_data.action is None:
            keys.animation_data_clear()
        obj.shape_key_remove(keys.key_blocks[0])
        obj.softsim.created_basis = False


def show_live(obj, local_positions: np.ndarray) -> None:
    """Show live-simulated positions (n, 3, object space) through the 'SoftSim Live' shape key."""
    keys = obj.data.shape_keys
    block = keys.key_blocks.get(LIVE_KEY) if keys else None
    if block is None:
        if _ensure_basis(obj):
            obj.softsim.created_basis = True
        block = obj.shape_key_add(name=LIVE_KEY, from_mix=False)
        _mute_user_keys(obj, {LIVE_KEY})
    block.value = 1.0  # 5.0 creates keys at 1.0, 4.2 at 0.0: set it either way
    _set_key_positions(block, local_positions)
    obj.data.update()


def remove_live(obj) -> None:
    keys = obj.data.shape_keys
    block = keys.key_blocks.get(LIVE_KEY) if keys else None
    if block is None:
        return
    obj.shape_key_remove(block)
    if not _shape_key_baked(obj):
        _unmute_user_keys(obj)
    _drop_basis_if_alone(obj)


def remove_shape_key_bake(obj) -> None:
    """Remove the keys (and their keyframes) of ``obj``'s shape-key bake; the user's keys come back unmuted."""
    blocks = _bake_blocks(obj)
    keys = obj.data.shape_keys
    if blocks and keys.animation_data is not None and keys.animation_data.action is not None:
        for block in blocks:
            frame = int(_BAKE_KEY.match(block.name).group(1))
            for f in (frame - 1, frame, frame + 1):
                try:
                    block.keyframe_delete("value", frame=f)
                except RuntimeError:
                    pass  # no key at that frame (the first and last keys have only two)
    for block in blocks:
        obj.shape_key_remove(block)
    if obj.data.shape_keys is not None and obj.data.shape_keys.key_blocks.get(LIVE_KEY) is None:
        _unmute_user_keys(obj)
    _drop_basis_if_alone(obj)


def has_our_keys(obj) -> bool:
    """Does ``obj``'s mesh hold shape keys Soft Sim made (its bake's, or the live key)?"""
    keys = obj.data.shape_keys
    return keys is not None and (keys.key_blocks.get(LIVE_KEY) is not None or bool(_bake_blocks(obj)))


def mesh_sharers(obj) -> list:
    """Names of the other objects using ``obj``'s mesh (linked duplicates, Alt+D)."""
    return sorted(o.name for o in bpy.data.objects if o != obj and o.data == obj.data)


def check_shape_keys_editable(obj, action: str) -> None:
    """Raise OutputError if ``obj``'s shape keys cannot be changed safely now (``action``: what we would do)."""
    if obj.mode == "EDIT":
        raise OutputError(f"'{obj.name}' is in Edit Mode, where its shape keys cannot be changed safely: leave Edit Mode (Tab) "
                          f"and {action} again")
    if obj.data.library is not None or obj.library is not None:
        raise OutputError(f"'{obj.name}': its mesh is linked from another .blend file and cannot get shape keys: make it local "
                          "or set Output to PC2 Cache")


def check_shape_key_bake(obj, frame_start: int, frame_end: int) -> None:
    """Raise OutputError if a shape-key bake of ``obj`` over these frames would change anything not its own."""
    check_shape_keys_editable(obj, "bake")
    sharers = mesh_sharers(obj)
    if sharers:
        raise OutputError(f"'{obj.name}': its mesh '{obj.data.name}' is also used by {', '.join(repr(n) for n in sharers)} "
                          f"(a linked duplicate), and shape keys belong to the mesh, so a Shape Keys bake would change "
                          f"{'it' if len(sharers) == 1 else 'them'} too: make '{obj.name}' single-user (Object > Relations > "
                          "Make Single User > Object & Data) or set Output to PC2 Cache")
    keys = obj.data.shape_keys
    if keys is None:
        return
    ours = {b.name for b in _bake_blocks(obj)}
    for frame in range(frame_start, frame_end + 1):
        name = bake_key_name(frame)
        if name in keys.key_blocks and name not in ours:
            raise OutputError(f"'{obj.name}': its shape key '{name}' is not one a bake made, and a Shape Keys bake names its key "
                              f"for frame {frame} so: rename that shape key or set Output to PC2 Cache")


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
        _mute_user_keys(obj, names)
        obj.data.update()
        return self.release.notes


# --- PC2 cache ----------------------------------------------------------------------------------
#
# What is written where (README "Caches"): one file per baked object, named for the .blend and the
# object, inside the scene's Cache Folder; its path lives only in the object's "SoftSim Cache" Mesh
# Cache modifier. A file is released (moved to the trash, deleted when the .blend is saved) only if this
# object wrote it from this .blend (recorded on the object when written) and no other object plays it.

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_folder(scene) -> str:
    """Absolute cache folder of the scene; raises OutputError if it cannot be resolved.

    ``//x`` is relative to the .blend, ``~`` is the user's home folder, and any other relative folder is
    relative to the .blend's folder too (never to the working directory Blender happens to run in).
    """
    raw = scene.softsim.cache_dir
    if not raw.strip():
        raise OutputError("the Cache Folder is empty: set one in the Soft Sim panel (Scene settings)")
    if raw.startswith("//"):
        if not bpy.data.filepath:
            raise OutputError(f"the Cache Folder '{raw}' is relative to the .blend file, which is not saved yet: save the file or set an absolute folder")
        path = bpy.path.abspath(raw)
    else:
        path = os.path.expanduser(raw)
        if not os.path.isabs(path):
            if not bpy.data.filepath:
                raise OutputError(f"the Cache Folder '{raw}' is a relative path and the .blend file is not saved yet, so there is "
                                  "nothing for it to be relative to: save the file first, or set an absolute Cache Folder "
                                  "(or one starting with // or ~)")
            path = os.path.join(os.path.dirname(bpy.data.filepath), path)
    return os.path.normpath(path)


def blend_name() -> str:
    """File name of the open .blend ('' while it was never saved)."""
    return bpy.path.basename(bpy.data.filepath)


def blend_identity() -> str:
    """Where the open .blend lives ('' while it was never saved): a cache file is this file's to delete
    only if it was written from here. A copy (Save As) or a moved file is another .blend."""
    return os.path.normpath(bpy.data.filepath) if bpy.data.filepath else ""


def new_cache_token() -> str:
    return secrets.token_hex(8)


def cache_file_name(object_name: str, token: str) -> str:
    """``<blend>_<object>_<hash>.pc2``: readable, and unique to the object and the .blend.

    The .blend's name keeps a copy saved next to it (Save As) from writing over the original's caches.
    The hash covers the exact object name (names that read the same once made safe for file systems,
    "A/B" and "A_B", get different files), the name of the folder holding the .blend (a copy of the
    same name in another folder sharing an absolute Cache Folder) and the object's random token (other
    .blend files that happen to have the same names). None of these change when a render farm opens
    the file under another mount point, so a re-bake there writes the file the .blend already plays.
    Both readable parts are cut to 60 characters, so names of any length give a valid file name.
    """
    stem = os.path.splitext(blend_name())[0] or "untitled"
    folder = os.path.basename(os.path.dirname(bpy.data.filepath))
    digest = hashlib.sha1(f"{token}\0{folder}\0{object_name}".encode("utf-8")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', stem)[:60]}_{_UNSAFE.sub('_', object_name)[:60]}_{digest}.pc2"


def our_cache_modifier(obj):
    """The Mesh Cache modifier a bake made on ``obj``, or None."""
    modifier = obj.modifiers.get(CACHE_MODIFIER)
    return modifier if modifier is not None and modifier.type == "MESH_CACHE" else None


def cache_file_of(obj):
    """Absolute path of the PC2 file ``obj``'s bake plays (from its modifier), or None."""
    modifier = our_cache_modifier(obj)
    if modifier is None or not modifier.filepath:
        return None
    return os.path.normpath(bpy.path.abspath(modifier.filepath, library=obj.library))


def _same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def other_users(path: str, obj, leaving=()) -> list:
    """Names of the other objects (in any scene of this file) whose Mesh Cache modifiers play ``path``.

    ``leaving``: names of objects about to stop playing their bake (freed or re-baked together with ``obj``).
    """
    users = []
    for other in bpy.data.objects:
        if other == obj:
            continue
        for modifier in other.modifiers:
            if modifier.type != "MESH_CACHE" or not modifier.filepath:
                continue
            if other.name in leaving and modifier == our_cache_modifier(other):
                continue
            if _same_file(bpy.path.abspath(modifier.filepath, library=other.library), path):
                users.append(other.name)
                break
    return users


def _written_here(obj, path: str) -> bool:
    """Did this object's bake write ``path`` from this .blend? (Not a copy's, not a user's file.)"""
    s = obj.softsim
    return bool(s.cache_file) and os.path.basename(path) == s.cache_file and s.cache_blend == blend_identity()


def check_cache_writable(scene) -> tuple:
    """Create the cache folder if needed and prove it can be written.

    Returns (folder, created): ``created`` lists the folders this call made, deepest last, so a failed
    bake can take them away again. Raises OutputError.
    """
    folder = cache_folder(scene)
    created = []
    missing = folder
    while missing and not os.path.exists(missing):
        created.insert(0, missing)
        parent = os.path.dirname(missing)
        if parent == missing:
            break
        missing = parent
    try:
        os.makedirs(folder, exist_ok=True)
        # A new, unique name (O_CREAT | O_EXCL, never through a link): never a user's file, never a planted link's target.
        fd, probe = tempfile.mkstemp(prefix=".softsim-probe-", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as error:
        remove_created_folders(created)
        raise OutputError(f"cannot write the cache folder '{folder}' ({error.strerror}): choose a writable Cache Folder") from error
    return folder, created


def remove_created_folders(created: list) -> None:
    """Remove folders a bake created (deepest first), as long as they are still empty."""
    for folder in reversed(created):
        try:
            os.rmdir(folder)
        except OSError:
            return  # not empty (someone else's files) or already gone: leave it


def _blend_relative(path: str) -> str:
    if bpy.data.filepath:
        try:
            return bpy.path.relpath(path)
        except ValueError:  # another drive on Windows
            return path
    return path


def check_modifier_name(obj) -> None:
    """Raise OutputError if another kind of modifier already has the name the cache modifier needs."""
    modifier = obj.modifiers.get(CACHE_MODIFIER)
    if modifier is not None and modifier.type != "MESH_CACHE":
        raise OutputError(f"'{obj.name}': its {modifier.type.replace('_', ' ').title()} modifier is named '{CACHE_MODIFIER}', "
                          f"the name the PC2 cache needs: rename that modifier or set Output to Shape Keys")


def _strerror(error: OSError) -> str:
    return error.strerror or str(error)


class CacheRelease:
    """Cache files moved into the trash because a bake stopped playing them; ``undo()`` puts them back.

    A file is moved only if the object wrote it from this .blend and no other object (outside
    ``leaving``) plays it; otherwise it stays and ``notes`` says why.
    """

    def __init__(self):
        self.moved = []  # (path, bake id)
        self.notes = []

    def add(self, obj, path: str, leaving=(), incoming=()) -> None:
        """Release ``path``, the file ``obj`` stops playing. Raises OutputError naming the object.

        ``leaving``: names of objects that stop playing their files in the same operation; ``incoming``: paths
        the same bake writes new files to (never released, whoever played them before).
        """
        if not os.path.lexists(path) or any(_same_file(path, p) for p in incoming):
            return
        if not _written_here(obj, path):
            self.notes.append(f"'{obj.name}': kept {path}: this object did not write it from {bpy.data.filepath or 'this unsaved file'} "
                              f"(it may be another .blend's, or this file's before it was moved or saved under another name)")
            return
        users = other_users(path, obj, leaving)
        if users:
            self.notes.append(f"'{obj.name}': kept {path}: {', '.join(repr(u) for u in users)} still play{'s' if len(users) == 1 else ''} it")
            return
        if any(_same_file(path, p) for p, _ in self.moved):
            return
        self.move(obj, path, obj.softsim.cache_bake_id)

    def move(self, obj, path: str, bake_id: str) -> None:
        try:
            trash.discard(path, bake_id)
        except OSError as error:
            raise OutputError(f"'{obj.name}': cannot move its old cache file {path} aside ({_strerror(error)}): make the "
                              f"Cache Folder '{os.path.dirname(path)}' writable; nothing was changed") from error
        self.moved.append((path, bake_id))

    def undo(self) -> None:
        """Put every moved file back (after a failure: errors are printed, the first failure is what the user sees)."""
        for path, bake_id in reversed(self.moved):
            try:
                if not trash.restore(path, bake_id, blend_identity()):
                    print(f"Soft Sim: could not put {path} back: the trash no longer holds it")
            except OSError as error:
                print(f"Soft Sim: could not put {path} back ({_strerror(error)}); it is in {trash.TRASH_DIR} next to it")
        self.moved = []


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
        remove_live(obj)
        remove_shape_key_bake(obj)
        modifier = our_cache_modifier(obj)
        if modifier is None:
            modifier = obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
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
        _move_first(obj, modifier)
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


def _move_first(obj, modifier) -> None:
    index = list(obj.modifiers).index(modifier)
    if index == 0:
        return
    if hasattr(obj.modifiers, "move"):  # Blender 4.3+
        obj.modifiers.move(index, 0)
    else:
        with bpy.context.temp_override(object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=modifier.name, index=0)


def detach_cache(obj) -> None:
    """Remove the bake's Mesh Cache modifier and its bookkeeping (its file was released before)."""
    modifier = our_cache_modifier(obj)
    if modifier is not None:
        obj.modifiers.remove(modifier)
    obj.softsim.cache_file = ""
    obj.softsim.cache_blend = ""
    obj.softsim.cache_bake_id = ""


def release_bakes(objects) -> list:
    """Phase 1 of Free: check every object can be freed and move the cache files they alone own into the trash.

    All or nothing: on failure every file is put back and OutputError names the object. Returns notes about
    files kept (not theirs alone to delete).
    """
    leaving = {obj.name for obj in objects}
    release = CacheRelease()
    try:
        for obj in objects:
            if obj.type == "MESH" and obj.mode == "EDIT" and has_our_keys(obj):
                check_shape_keys_editable(obj, "free it")
            path = cache_file_of(obj)
            if path is not None:
                release.add(obj, path, leaving)
    except BaseException:
        release.undo()
        raise
    return release.notes


def free_bake(obj) -> None:
    """Phase 2 of Free: remove whatever bake ``obj`` has, and its live key: the mesh shows its original shape again."""
    detach_cache(obj)
    if obj.type == "MESH":  # a body whose object is no mesh (an error when baked) has no keys to remove
        remove_shape_key_bake(obj)
        remove_live(obj)
    obj.softsim.is_baked = False
    obj.softsim.baked_output = ""
    obj.softsim.baked_frame_start = obj.softsim.baked_frame_end = 0
