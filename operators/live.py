"""Live simulation on frame change, with an in-memory frame cache per body.

Playing forward one frame at a time simulates; going back to the start frame resets; frames already
simulated are shown from memory when scrubbing. Baked bodies are left to their bake.
"""
import bpy
from bpy.app.handlers import persistent

from .. import solvers
from . import body_input
from .bridge import BODY_ROLES, InputError, scene_colliders, takes_part
from .output import remove_live, show_live
from .simulation import BodyRun


class LiveRun:
    def __init__(self, obj, scene, depsgraph, frame: int):
        check_live_display(obj)
        self.body = BodyRun(obj, scene, depsgraph)
        self.frames = {frame: self.body.rest_local()}
        self.last_frame = frame


def check_live_display(obj) -> None:
    """Raise InputError if live playback cannot show ``obj``'s simulation: it shows it as a shape key, and shape keys
    come before every modifier, so enabled modifiers above Soft Sim's place (an Armature...) would move the
    simulated result a second time. Such a body reads its evaluated mesh as a bake does; a PC2 bake shows it."""
    fed_by = body_input.feeding_modifiers(obj)
    if fed_by:
        names = ", ".join(f"'{m.name}'" for m in fed_by)
        raise InputError(f"'{obj.name}': live playback shows a simulation as a shape key, which the modifier{'s' if len(fed_by) > 1 else ''} "
                         f"{names} above Soft Sim would move again: bake it (Output PC2 Cache) to see it")


_runs = {}  # (scene name, object name) -> LiveRun; never holds bpy objects
_colliders = {}  # scene name -> (frame, colliders read at that frame): the poses the next frame's colliders move from
_suspended = 0


def suspend() -> None:
    """Make the live handler do nothing until ``resume()`` (a bake steps the frames itself)."""
    global _suspended
    _suspended += 1


def resume() -> None:
    global _suspended
    _suspended = max(0, _suspended - 1)


class suspended:
    """Context manager form of suspend() / resume()."""

    def __enter__(self):
        suspend()

    def __exit__(self, *exc):
        resume()


def discard(object_name: str = None) -> int:
    """Forget live state of one object (all scenes), or of every object when ``object_name`` is None.

    Returns how many live simulations were dropped.
    """
    keys = [key for key in _runs if object_name is None or key[1] == object_name]
    for key in keys:
        del _runs[key]
    return len(keys)


def _update_body(obj, scene, depsgraph, frame: int, colliders) -> None:
    key = (scene.name, obj.name)
    run = _runs.get(key)
    if frame <= scene.frame_start:
        _runs.pop(key, None)
        remove_live(obj)  # the start frame shows the original mesh
        if frame == scene.frame_start:
            _runs[key] = LiveRun(obj, scene, depsgraph, frame)
            obj.softsim.status = ""
        return
    if run is None:
        if frame != scene.frame_start + 1:
            return  # nothing to show: play forward from the start frame to simulate
        # Playback started without visiting the start frame: start from the mesh at this frame's transform.
        run = _runs[key] = LiveRun(obj, scene, depsgraph, frame - 1)
    if frame in run.frames:
        show_live(obj, run.frames[frame])
    elif frame == run.last_frame + 1:
        try:
            positions = run.body.advance(obj, depsgraph, colliders, frame)
        except solvers.SimulationDiverged as error:
            raise InputError(f"{error}. {run.body.stability_advice(error)}") from error
        run.frames[frame] = positions
        run.last_frame = frame
        show_live(obj, positions)
        obj.softsim.status = run.body.status_text(frame)


@persistent
def on_frame_change_post(scene, depsgraph):
    if _suspended or scene.frame_subframe != 0.0:
        return
    bodies = [o for o in scene.objects if o.softsim.role in BODY_ROLES and not o.softsim.is_baked and takes_part(o, depsgraph)]
    if not bodies:
        return
    frame = scene.frame_current
    try:
        current = scene_colliders(scene, depsgraph)
    except InputError as error:
        for obj in bodies:
            obj.softsim.status = f"Error: {error}"
        return
    previous_frame, previous = _colliders.get(scene.name, (None, None))
    colliders = solvers.frame_colliders(previous if previous_frame == frame - 1 else None, current)
    _colliders[scene.name] = (frame, current)
    for obj in bodies:
        try:
            _update_body(obj, scene, depsgraph, frame, colliders)
        except InputError as error:
            # A handler cannot raise to the user: stop this body and show why in its panel.
            _runs.pop((scene.name, obj.name), None)
            obj.softsim.status = f"Error at frame {frame}: {error}"
            print(f"Soft Sim: '{obj.name}' live simulation stopped at frame {frame}: {error}")


@persistent
def on_load_post(*_args):
    discard()


def register():
    bpy.app.handlers.frame_change_post.append(on_frame_change_post)
    bpy.app.handlers.load_post.append(on_load_post)


def unregister():
    bpy.app.handlers.load_post.remove(on_load_post)
    bpy.app.handlers.frame_change_post.remove(on_frame_change_post)
    discard()
