"""PC2 output: cache files in the scene's Cache Folder, played by a Mesh Cache modifier; staged, swapped in,
and released to the trash (``operators/trash.py``) so that undo finds them."""
import hashlib
import os
import re
import secrets
import tempfile

import bpy

from .. import trash
from .names import CACHE_MODIFIER, OutputError

# --- PC2 cache ----------------------------------------------------------------------------------
#
# What is written where (README "Caches"): one file per baked object, named for the .blend and the
# object, inside the scene's Cache Folder; its path lives only in the object's "SoftSim Cache" Mesh
# Cache modifier. A file is released (moved to the trash, deleted when the .blend is saved) only if this
# object wrote it from this .blend (recorded on the object when written) and no other object plays it.

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _umask_at_import() -> int:
    # Setting a mask is the only portable way to read it; 0o077 for that instant, so a file another thread creates
    # meanwhile comes out more private, never more open.
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_IMPORT_UMASK = _umask_at_import()


def current_umask() -> int:
    """The process's file-creation mask, read without changing it where the system reports it (Linux
    /proc/self/status), else as it was when the add-on was imported."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _IMPORT_UMASK


def plain_file_mode() -> int:
    """The permission bits a plainly created file gets (0o666 less the umask; 0o644 at umask 0o022). A cache file
    is written through a private temporary file (mode 0600), which would keep a render farm's other accounts from
    reading it; Blender's own caches follow the umask."""
    return 0o666 & ~current_umask()


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


def detach_cache(obj) -> None:
    """Remove the bake's Mesh Cache modifier and its bookkeeping (its file was released before)."""
    modifier = our_cache_modifier(obj)
    if modifier is not None:
        obj.modifiers.remove(modifier)
    obj.softsim.cache_file = ""
    obj.softsim.cache_blend = ""
    obj.softsim.cache_bake_id = ""
