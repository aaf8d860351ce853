"""Writing simulation results into Blender: the live shape key or live Mesh Cache, PC2 + Mesh Cache, per-frame shape keys.

Every bake is staged first (PC2 files under temporary names, shape keys under temporary names with nothing
shown), then swapped in; replaced and freed PC2 files go to the trash (``operators/trash.py``) so that undo finds
them. Modules: ``names`` (what we name in a user's file, OutputError), ``shape_keys`` (live key, shape-key bakes),
``pc2_cache`` (cache folder and files, Mesh Cache modifier, releasing files), ``live_cache`` (the live display of a
body modifiers feed), ``staged`` (a bake's staged results), ``free`` (Free Bake), ``undo`` (cache files follow undo and redo).
"""
from .free import free_bake, release_bakes
from .names import OutputError, is_bake_key
from .pc2_cache import (blend_identity, cache_file_of, cache_folder, check_cache_writable, check_modifier_name, our_cache_modifier,
                        remove_created_folders)
from .live_cache import append_live_frame, check_live_modifier_name, live_modifier, new_live_file, remove_live, show_live_file
from .shape_keys import check_shape_key_bake, check_shape_keys_editable, has_our_keys, show_live
from .staged import StagedCache, StagedShapeKeys

__all__ = [
    "OutputError", "StagedCache", "StagedShapeKeys", "blend_identity", "cache_file_of", "cache_folder", "check_cache_writable",
    "check_modifier_name", "check_shape_key_bake", "check_shape_keys_editable", "free_bake", "has_our_keys", "is_bake_key",
    "our_cache_modifier", "release_bakes", "remove_created_folders", "remove_live", "show_live", "append_live_frame",
    "check_live_modifier_name", "live_modifier", "new_live_file", "show_live_file",
]
