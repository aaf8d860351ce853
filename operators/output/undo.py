"""After undo and redo the cache files follow the objects: the handler that hands ``trash.sync`` what the objects
play (``operators/trash.py`` keeps the files and knows nothing of objects)."""
import bpy
from bpy.app.handlers import persistent

from .. import trash
from .pc2_cache import blend_identity, cache_file_of, our_cache_modifier


def cache_players() -> dict:
    """{``trash.norm``-ed cache path: set of bake ids the objects playing it want (None for a modifier that is not a
    bake's)}, over every object of the open file."""
    players = {}
    for obj in bpy.data.objects:
        ours = our_cache_modifier(obj)
        for modifier in obj.modifiers:
            if modifier.type != "MESH_CACHE" or not modifier.filepath:
                continue
            if modifier == ours:
                path, wanted = cache_file_of(obj), obj.softsim.cache_bake_id
            else:
                path, wanted = bpy.path.abspath(modifier.filepath, library=obj.library), None
            players.setdefault(trash.norm(path), set()).add(wanted)
    return players


def sync() -> list:
    """``trash.sync`` for the objects of the open file now. Returns problems."""
    return trash.sync(cache_players(), blend_identity())


@persistent
def on_undo_redo(*_args):
    for problem in sync():
        print(f"Soft Sim: after undo/redo, {problem}")


_handlers = (("undo_post", on_undo_redo), ("redo_post", on_undo_redo))


def register():
    for name, function in _handlers:
        getattr(bpy.app.handlers, name).append(function)


def unregister():
    for name, function in reversed(_handlers):
        getattr(bpy.app.handlers, name).remove(function)
