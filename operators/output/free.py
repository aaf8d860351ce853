"""Freeing bakes: all-or-nothing release of the cache files, then removal of whatever a bake left on the object."""
from .pc2_cache import CacheRelease, cache_file_of, detach_cache
from .live_cache import remove_live
from .shape_keys import check_shape_keys_editable, has_our_keys, remove_shape_key_bake


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
    remove_live(obj)
    if obj.type == "MESH":  # a body whose object is no mesh (an error when baked) has no keys to remove
        remove_shape_key_bake(obj)
    obj.softsim.is_baked = False
    obj.softsim.baked_output = ""
    obj.softsim.baked_frame_start = obj.softsim.baked_frame_end = 0
