"""Live simulation on frame change, with an in-memory frame cache per body.

Playing forward one frame at a time simulates; going back to the start frame resets; frames already
simulated are shown from memory when scrubbing. Baked bodies are left to their bake. Bodies that advance to the same
frame together are simulated together (``solvers.scene``), so they collide with each other as in a bake.

A frame shows as the 'SoftSim Live' shape key (the user's own keys muted meanwhile), or, for a body that modifiers
above Soft Sim feed (a rigged cape: shape keys come before every modifier, which would move it again), through a
'SoftSim Live' Mesh Cache modifier at Soft Sim's place in the stack playing a temporary PC2 file that grows by a frame
as each is simulated (``output/live_cache.py``), as a PC2 bake would show it. Saving the .blend leaves that modifier
out of the file; opening a file removes any it holds.
"""
import bpy
from bpy.app.handlers import persistent

from .. import solvers
from ..solvers.scene import Scene, advance_scene_frame
from . import body_input
from .bridge import BODY_ROLES, InputError, scene_colliders, takes_part
from .output import OutputError, append_live_frame, check_live_modifier_name, new_live_file, remove_live, show_live, show_live_file
from .output import live_cache
from .simulation import BodyRun


class LiveRun:
    def __init__(self, obj, scene, depsgraph, frame: int):
        # Modifiers above Soft Sim's place would move a shape key again: such a body shows through a Mesh Cache modifier.
        self.by_modifier = obj.type == "MESH" and bool(body_input.feeding_modifiers(obj))
        if self.by_modifier:
            try:
                check_live_modifier_name(obj)
            except OutputError as error:
                raise InputError(str(error)) from error
        self.body = BodyRun(obj, scene, depsgraph)
        self.start_frame = frame
        self.frames = {frame: self.body.rest_local()}
        self.last_frame = frame
        self.path = None  # the live file (by_modifier), made when the first simulated frame shows

    def add(self, obj, frame: int, positions) -> None:
        """Keep and show the frame just simulated, the one after ``last_frame``."""
        self.frames[frame] = positions
        self.last_frame = frame
        if self.by_modifier:
            try:
                if self.path is None:
                    self.path = new_live_file(obj.name, self.frames[self.start_frame], self.start_frame)
                append_live_frame(obj, self.path, positions)
            except OSError as error:
                raise InputError(f"'{obj.name}': cannot write its live frames to {error.filename or 'the temporary folder'} "
                                 f"({error.strerror or error}): free some space there, or bake it") from error
        self.show(obj, frame)

    def show(self, obj, frame: int) -> None:
        """Show a simulated ``frame`` (after the start frame)."""
        if not self.by_modifier:
            show_live(obj, self.frames[frame])
        elif self.path is not None:
            # The file holds every frame simulated: the modifier shows the scene's frame from it, scrubbing included.
            show_live_file(obj, self.path, self.start_frame, body_input.soft_sim_place(obj))


_runs = {}  # (scene name, object name) -> LiveRun; never holds bpy objects
_scenes = {}  # scene name -> (the LiveRuns, their solvers.Scene): bodies advancing together, kept while they do
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
    for name in list(_scenes):  # a Scene holds the runs' states: rebuilt from the runs that remain
        _release(name)
    return len(keys)


def _update_body(obj, scene, depsgraph, frame: int):
    """Show ``obj`` at ``frame`` from memory, reset it at the start frame, or return its LiveRun when it has to be
    simulated to ``frame`` (the frame after its last); else None."""
    key = (scene.name, obj.name)
    run = _runs.get(key)
    if frame <= scene.frame_start:
        _runs.pop(key, None)
        remove_live(obj)  # the start frame shows the original mesh
        if frame == scene.frame_start:
            _runs[key] = LiveRun(obj, scene, depsgraph, frame)
            obj.softsim.status = ""
        return None
    if run is None:
        if frame != scene.frame_start + 1:
            return None  # nothing to show: play forward from the start frame to simulate
        # Playback started without visiting the start frame: start from the mesh at this frame's transform.
        run = _runs[key] = LiveRun(obj, scene, depsgraph, frame - 1)
    if frame in run.frames:
        run.show(obj, frame)
        return None
    return run if frame == run.last_frame + 1 else None


def _advance(scene, depsgraph, frame: int, colliders, pending) -> None:
    """Simulate the bodies ``pending`` [(obj, LiveRun)] to ``frame`` and show them: one alone as in a bake of it, two
    or more together (one ``solvers.Scene`` kept while the same runs advance together). Raises InputError naming the
    body that failed; then every body of ``pending`` stops."""
    if len(pending) == 1:
        _release(scene.name)
        obj, run = pending[0]
        try:
            positions = run.body.advance(obj, depsgraph, colliders, frame)
        except solvers.SimulationDiverged as error:
            raise InputError(f"{error}. {run.body.stability_advice(error)}") from error
        _show(obj, run, frame, positions)
        return
    runs = [run for _, run in pending]
    known = _scenes.get(scene.name)
    if known is None or len(known[0]) != len(runs) or any(a is not b for a, b in zip(known[0], runs)):
        _release(scene.name)
        bodies = [run.body for run in runs]
        known = _scenes[scene.name] = (runs, Scene([(b.model, b.solver.config) for b in bodies], [b.state for b in bodies],
                                                   [b.solver for b in bodies]))
    prepared = [run.body.prepare(obj, depsgraph, frame) for obj, run in pending]
    try:
        stats = advance_scene_frame(known[1], runs[0].body.frame_dt, colliders, [p[1] for p in prepared], [p[2] for p in prepared])
    except solvers.SimulationDiverged as error:
        failed = runs[getattr(error, "body", 0)].body
        raise InputError(f"'{failed.name}': {error}. {failed.stability_advice(error)}") from error
    for (obj, run), data, s in zip(pending, prepared, stats):
        run.body.stats = s
        _show(obj, run, frame, run.body.output(data[0]))


def _release(scene_name) -> None:
    """Drop the kept Scene of the scene named so, its bodies' own self-collision given back to their solvers."""
    known = _scenes.pop(scene_name, None)
    if known is not None and known[1].contact is not None:
        known[1].contact.release()


def _show(obj, run, frame, positions) -> None:
    run.add(obj, frame, positions)
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
    pending = []
    for obj in bodies:
        try:
            run = _update_body(obj, scene, depsgraph, frame)
        except InputError as error:
            _stop(scene, [obj], frame, error)
            continue
        if run is not None:
            pending.append((obj, run))
    if pending:
        try:
            _advance(scene, depsgraph, frame, colliders, pending)
        except InputError as error:
            _stop(scene, [obj for obj, _ in pending], frame, error)


def _stop(scene, objects, frame, error) -> None:
    """A handler cannot raise to the user: stop these bodies' live simulation and show why in their panels."""
    for obj in objects:
        _runs.pop((scene.name, obj.name), None)
        obj.softsim.status = f"Error at frame {frame}: {error}"
        print(f"Soft Sim: '{obj.name}' live simulation stopped at frame {frame}: {error}")


@persistent
def on_load_post(*_args):
    discard()
    live_cache.remove_stale(bpy.data.objects)


@persistent
def detach_live_before_save(*_args):
    live_cache.detach_for_save(bpy.data.objects)  # the saved file holds the objects as the user made them


@persistent
def reattach_live_after_save(*_args):
    live_cache.reattach_after_save(bpy.data.objects)  # live playback goes on showing


# save_post_fail (Blender 4.3+): a failed write puts the live modifiers back too.
_handlers = (("frame_change_post", on_frame_change_post), ("load_post", on_load_post), ("save_pre", detach_live_before_save),
             ("save_post", reattach_live_after_save), ("save_post_fail", reattach_live_after_save))


def register():
    for name, function in _handlers:
        if hasattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).append(function)


def unregister():
    for name, function in reversed(_handlers):
        if hasattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).remove(function)
    discard()
