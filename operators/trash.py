"""Undo and the cache files agree: a PC2 file a bake replaces or frees goes to a trash folder, not away.

Blender's undo brings back an object's modifier and settings, never a file. So Soft Sim never deletes or
overwrites a cache file it owns while Blender runs: it moves the file into
``<cache folder>/.softsim-trash/<session>/`` and remembers which bake it holds (``Object.softsim.
cache_bake_id``, a new random id per bake). After every undo and redo, ``sync()`` (called by the handler in
``output/undo.py``, which knows the objects) puts back, for every object, the file of the bake its (restored)
settings name, and moves a file this session wrote from this .blend into the trash when nothing plays it any more
(an undone first bake), so that redo finds it again. This module knows files only, never objects or modifiers.

The trash is emptied (``purge()``) when the .blend is saved, another file is opened and when Blender quits;
undo past those points no longer finds the files (README, "Caches"). Each Blender session has a folder of
its own in the trash, so two Blender instances sharing a cache folder never empty each other's.

Only this module's own bookkeeping is trusted: a file at a cache path that this session did not write or
move is never moved over or deleted here.
"""
import os
import secrets
import socket

import bpy
from bpy.app.handlers import persistent

TRASH_DIR = ".softsim-trash"
_session = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
_session = "".join(c if c.isalnum() or c in "-_." else "_" for c in _session)

_trashed = {}  # (cache path, bake id) -> path of that bake's file in the trash
_occupant = {}  # cache path -> (bake id, .blend it was written from) of the file there, for files this session wrote or moved
_session_dirs = set()  # trash folders this session made


def norm(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


def new_bake_id() -> str:
    return secrets.token_hex(6)


def _move(source: str, target: str) -> None:
    """Rename within one folder tree (never a copy): moves a planted link itself, never what it points to."""
    os.replace(source, target)


def _session_dir(cache_path: str) -> str:
    top = os.path.join(os.path.dirname(cache_path), TRASH_DIR)
    if os.path.islink(top) or (os.path.lexists(top) and not os.path.isdir(top)):
        raise OSError(f"{top} is not a folder Soft Sim made (a link or a file): remove it")
    folder = os.path.join(top, _session)
    if folder not in _session_dirs:
        os.makedirs(top, exist_ok=True)
        os.makedirs(folder, exist_ok=True)
        _session_dirs.add(folder)
    return folder


def written(path: str, bake_id: str, blend: str) -> None:
    """Record that a bake with ``bake_id`` just put its file at ``path`` from the .blend ``blend``."""
    _occupant[norm(path)] = (bake_id, blend)


def forget(path: str) -> None:
    """The file at ``path`` was removed again (a failed bake took its new file back)."""
    _occupant.pop(norm(path), None)


def occupant_id(path: str):
    """Bake id of the file at ``path`` if this session wrote or moved it there, else None."""
    entry = _occupant.get(norm(path))
    return entry[0] if entry else None


def discard(path: str, bake_id: str) -> str:
    """Move the file at ``path`` (the bake ``bake_id``'s) into the trash; returns where it went. Raises OSError."""
    key = norm(path)
    target = os.path.join(_session_dir(key), f"{bake_id or 'old'}-{secrets.token_hex(4)}.pc2")
    _move(key, target)
    previous = _trashed.get((key, bake_id))
    if previous is not None and previous != target and os.path.lexists(previous):
        os.remove(previous)  # an older copy of the same bake (restored, then replaced again)
    _trashed[(key, bake_id)] = target
    _occupant.pop(key, None)
    return target


def restore(path: str, bake_id: str, blend: str = "") -> bool:
    """Put the trashed file of bake ``bake_id`` back at ``path``; False if the trash does not hold it.

    Raises OSError. A file at ``path`` is moved into the trash first, but only if this session put it there.
    """
    key = norm(path)
    source = _trashed.get((key, bake_id))
    if source is None or not os.path.lexists(source):
        return False
    if os.path.lexists(key):
        current = _occupant.get(key)
        if current is None:
            raise OSError(f"{key} exists and is not a file Soft Sim wrote in this session, so it is left alone")
        discard(key, current[0])
    _move(source, key)
    del _trashed[(key, bake_id)]
    _occupant[key] = (bake_id, blend)
    return True


def sync(players: dict, blend: str) -> list:
    """After undo or redo: give every object the file of the bake its settings name. Returns problems.

    ``players``: {``norm``-ed cache path: set of the bake ids the objects playing it want, None for a Mesh Cache
    modifier that is not a bake's}, for every file some object plays (``output.undo.cache_players``); ``blend``:
    the open .blend's identity (``output.blend_identity``), whose undone bakes' files go to the trash."""
    problems = []
    for path, wanted in players.items():
        bake_ids = wanted - {None}
        if len(bake_ids) != 1:
            continue  # nothing of ours, or objects wanting different bakes of one file: leave it
        bake_id = next(iter(bake_ids))
        here = _occupant.get(path)
        if here is not None and here[0] == bake_id and os.path.lexists(path):
            continue
        try:
            restore(path, bake_id, blend)
        except OSError as error:
            problems.append(f"could not put back {path}: {error}")
    for path, (bake_id, written_from) in list(_occupant.items()):
        if path in players or blend != written_from:
            continue
        if not os.path.lexists(path):
            del _occupant[path]
            continue
        try:
            discard(path, bake_id)  # an undone bake's file: redo brings it back
        except OSError as error:
            problems.append(f"could not move {path} aside: {error}")
    return problems


def purge() -> None:
    """Delete every file in this session's trash, and the trash folders once empty."""
    for source in list(_trashed.values()):
        try:
            if os.path.lexists(source):
                os.remove(source)
        except OSError as error:
            print(f"Soft Sim: could not delete {source}: {error}")
    _trashed.clear()
    for folder in list(_session_dirs):
        for path in (folder, os.path.dirname(folder)):
            try:
                os.rmdir(path)
            except OSError:
                break  # not empty (files of another session) or gone
    _session_dirs.clear()


def trashed_files() -> list:
    return sorted(_trashed.values())


@persistent
def on_save_post(*_args):
    purge()


@persistent
def on_load_post(*_args):
    purge()
    _occupant.clear()  # another file: its undo history starts afresh


_handlers = (("save_post", on_save_post), ("load_post", on_load_post))


def register():
    for name, function in _handlers:
        getattr(bpy.app.handlers, name).append(function)
    import atexit

    atexit.register(purge)  # Blender quitting (it has no quit handler of its own)


def unregister():
    import atexit

    atexit.unregister(purge)
    for name, function in reversed(_handlers):
        getattr(bpy.app.handlers, name).remove(function)
    purge()
