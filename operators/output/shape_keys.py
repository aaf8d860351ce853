"""Shape-key output: the live key shown during playback and the one-key-per-frame bake, staged then swapped in."""
import json

import bpy
import numpy as np

from .names import _BAKE_KEY, LIVE_KEY, OutputError, bake_key_name, is_bake_key

# --- shape keys ---------------------------------------------------------------------------------
#
# A shape-key bake owns exactly the keys "SoftSim f<frame>" of the frames it baked (recorded on the
# object), never a user's key of the same style of name. While a bake's or the live key is shown, the
# user's own keys are muted (shape keys add up: they would move the simulated vertices), and the ones
# Soft Sim muted are unmuted when the bake is freed.

def action_curves(anim):
    """The F-curves of the action assigned to ``anim`` (an AnimData with an action): from Blender 4.4 those of the
    channelbag of its slot, before that the action's own."""
    try:
        from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot
    except ImportError:
        return anim.action.fcurves
    bag = animdata_get_channelbag_for_assigned_slot(anim)
    return bag.fcurves if bag is not None else ()


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


def remove_live_key(obj) -> None:
    """Remove the live shape key; the user's keys it muted come back (unless a shape-key bake still shows)."""
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
    action = _keyed_action(obj)
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
    _drop_action_if_ours(obj, action)
    if obj.data.shape_keys is not None and obj.data.shape_keys.key_blocks.get(LIVE_KEY) is None:
        _unmute_user_keys(obj)
    _drop_basis_if_alone(obj)


def _keyed_action(obj):
    """The action on ``obj``'s shape keys if a shape-key bake created it (else None), taken before its keyframes go:
    Blender 4.2 unassigns an action whose last F-curve is deleted."""
    keys = obj.data.shape_keys
    anim = keys.animation_data if keys is not None else None
    return anim.action if obj.softsim.created_action and anim is not None else None


def _has_curves(action) -> bool:
    layers = getattr(action, "layers", None)  # layered actions from Blender 4.4 on; before, the action's own F-curves
    if layers is None:
        return len(action.fcurves) > 0
    return any(len(bag.fcurves) for layer in layers for strip in layer.strips for bag in strip.channelbags)


def _drop_action_if_ours(obj, action) -> None:
    """Delete ``action`` (from ``_keyed_action``: made by a shape-key bake on keys that had none) once its keyframes are
    gone, and the keys' then empty animation data. Kept whole if the user keyed something into it meanwhile, and kept
    in the file if something else uses it."""
    keys = obj.data.shape_keys
    anim = keys.animation_data if keys is not None else None
    if action is not None and not _has_curves(action):
        if anim is not None and anim.action == action:
            anim.action = None
        if action.users == 0:
            bpy.data.actions.remove(action)
    if obj.softsim.created_action and anim is not None and anim.action is None and not anim.drivers and not anim.nla_tracks:
        keys.animation_data_clear()
    obj.softsim.created_action = False


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


