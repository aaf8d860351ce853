"""What a body simulates: its mesh as everything ABOVE Soft Sim's place in the modifier stack makes it, as for
Blender's own Cloth (shape keys, Armature, Hook, Subdivision, Mirror...).

Soft Sim's place is the index of its "SoftSim Cache" Mesh Cache modifier; an object without one (never baked to a
PC2 Cache, or baked to shape keys) has its place at its "SoftSim Live" modifier while live playback shows it through one
(``output/live_cache.py``), else at the END of the stack, where the first PC2 bake (or live playback) adds its modifier.
A user may move the modifier; a re-bake keeps its index. So: the enabled modifiers above the cache modifier, and the
user's shape keys, are the input; the modifiers below it apply to the cached result (say, Subdivision for render).

The input is read from the view layer's depsgraph with Soft Sim's own results switched off for the read: the cache
modifier and every modifier below it (``show_viewport``: the depsgraph of a bake and of live playback is the
viewport one), and Soft Sim's own shape keys (the live key, a shape-key bake's keys) muted, the user's keys that Soft
Sim muted to show them unmuted. The flags are put back at once. A body fed by nothing (no enabled modifier above its
place, no user shape key moving it) reads its original mesh, exactly as the evaluated one would be, at no cost.
"""
from contextlib import contextmanager

import numpy as np

from .output.names import CACHE_MODIFIER, LIVE_KEY, LIVE_MODIFIER, STAGED_KEY_PREFIX
from .output.shape_keys import _bake_blocks, _muted_by_us, action_curves


def soft_sim_place(obj) -> int:
    """Index in ``obj.modifiers`` where Soft Sim sits: its cache modifier's index, else its live modifier's, else the
    end of the stack."""
    live = None
    for index, modifier in enumerate(obj.modifiers):
        if modifier.type == "MESH_CACHE":
            if modifier.name == CACHE_MODIFIER:
                return index
            if modifier.name == LIVE_MODIFIER and live is None:
                live = index
    return len(obj.modifiers) if live is None else live


def feeding_modifiers(obj) -> list:
    """The enabled (viewport) modifiers above Soft Sim's place: they make the mesh it simulates."""
    return [m for m in list(obj.modifiers)[:soft_sim_place(obj)] if m.show_viewport]


def _own_key_names(obj) -> set:
    keys = obj.data.shape_keys
    if keys is None:
        return set()
    names = {b.name for b in _bake_blocks(obj)} | {LIVE_KEY}
    return names | {b.name for b in keys.key_blocks if b.name.startswith(STAGED_KEY_PREFIX)}


def _animated_paths(id_data) -> set:
    """RNA paths that ``id_data``'s action (its assigned slot) or drivers animate."""
    anim = id_data.animation_data
    if anim is None:
        return set()
    paths = {d.data_path for d in anim.drivers}
    if anim.action is not None:
        paths |= {c.data_path for c in action_curves(anim)}
    return paths


def feeding_shape_keys(obj) -> list:
    """The user's shape keys that move the mesh Soft Sim reads: not Soft Sim's own, not the reference key, not muted
    by the user (a key Soft Sim muted to show its result counts as the user left it), at a non-zero value or
    animated or driven, and moving some vertex away from its relative key."""
    keys = obj.data.shape_keys if obj.type == "MESH" else None
    if keys is None:
        return []
    ours, muted_by_us = _own_key_names(obj), set(_muted_by_us(obj))
    animated = _animated_paths(keys)
    result = []
    for block in keys.key_blocks:
        if block == keys.reference_key or block.name in ours or (block.mute and block.name not in muted_by_us):
            continue
        path = f'key_blocks["{block.name}"]'
        if (block.value != 0.0 or any(p.startswith(path) for p in animated)) and _moves(block):
            result.append(block)
    return result


def _moves(block) -> bool:
    """Does the shape key move any vertex away from its relative key? (A key just added is a copy: it does not.)"""
    relative = block.relative_key if block.relative_key is not None else block.id_data.reference_key
    if relative == block:
        return False
    own, base = (np.empty(len(block.data) * 3, np.float32) for _ in range(2))
    block.data.foreach_get("co", own)
    relative.data.foreach_get("co", base)
    return not np.array_equal(own, base)


def is_fed(obj) -> bool:
    """Does anything above Soft Sim's place move or rebuild ``obj``'s mesh (then the evaluated mesh is read)?"""
    return obj.type == "MESH" and bool(feeding_modifiers(obj) or feeding_shape_keys(obj))


def what_feeds(obj) -> str:
    """'the Armature modifier 'Armature', the shape key 'Lift'', for messages."""
    parts = [f"the {m.type.replace('_', ' ').title()} modifier '{m.name}'" for m in feeding_modifiers(obj)]
    parts += [f"the shape key '{b.name}'" for b in feeding_shape_keys(obj)]
    return ", ".join(parts)


@contextmanager
def evaluated_input(obj, depsgraph):
    """Yield ``obj`` evaluated in ``depsgraph`` as Soft Sim's input (see the module's docstring); the flags switched
    for the read are put back on exit, whatever happens, and the depsgraph re-evaluated with them."""
    keys = obj.data.shape_keys
    ours = _own_key_names(obj)
    switched = [(m, "show_viewport", False) for m in list(obj.modifiers)[soft_sim_place(obj):] if m.show_viewport]
    if keys is not None:
        switched += [(b, "mute", True) for b in keys.key_blocks if b.name in ours and not b.mute]
        switched += [(keys.key_blocks[n], "mute", False) for n in _muted_by_us(obj) if n in keys.key_blocks and keys.key_blocks[n].mute]
    try:
        for item, name, value in switched:
            setattr(item, name, value)
        if switched:
            depsgraph.update()
        yield obj.evaluated_get(depsgraph)
    finally:
        for item, name, value in switched:
            setattr(item, name, not value)
        if switched:
            depsgraph.update()


def check_shape_key_input(obj) -> str:
    """The reason Output Shape Keys cannot hold ``obj``'s simulation, or '' if it can: shape keys come before every
    modifier, so enabled modifiers above Soft Sim (all of them: a shape-key bake has no cache modifier to mark a place)
    would move the result again, and one that changes the vertex count would give keys of the wrong size. The user's
    own shape keys feeding the input are no reason: they come before the bake's keys too, and are muted while the
    bake's keys show (as the live key does), so what shows is the simulation alone; Free unmutes them."""
    if obj.type != "MESH":
        return ""
    modifiers = feeding_modifiers(obj)
    if not modifiers:
        return ""
    names = ", ".join(f"the {m.type.replace('_', ' ').title()} modifier '{m.name}'" for m in modifiers)
    return (f"'{obj.name}': Output Shape Keys cannot hold its simulation, because {names} move{'s' if len(modifiers) == 1 else ''} "
            "its mesh before Soft Sim reads it, and shape keys come before every modifier (the modifiers would move the result "
            "a second time): set Output to PC2 Cache, whose 'SoftSim Cache' modifier goes after them")
