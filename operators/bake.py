"""softsim.bake, softsim.free_bake, softsim.reset.

A bake simulates every chosen body over the scene's frame range into memory first and writes the
outputs only when all frames succeeded, so a failed or cancelled bake leaves the previous one intact.
"""
import time

import bpy
import numpy as np
from bpy.props import BoolProperty

from .. import solvers
from ..solvers.newton import NewtonNotConverged
from . import live
from .bridge import BODY_ROLES, InputError, scene_colliders
from .output import OutputError, check_cache_writable, free_bake, remove_live, remove_shape_key_bake, remove_cache, write_cache, write_shape_keys
from .simulation import BodyRun


def bodies_to_bake(context, selected_only: bool) -> list:
    objs = [o for o in context.scene.objects if o.softsim.role in BODY_ROLES]
    if selected_only:
        objs = [o for o in objs if o.select_get()]
    return objs


class BakeJob:
    """Simulates the bodies frame by frame; ``step()`` advances one frame, ``finish()`` writes outputs."""

    def __init__(self, context, objects):
        self.context = context
        self.scene = context.scene
        self.names = [o.name for o in objects]
        self.frame_start = self.scene.frame_start
        self.frame_end = self.scene.frame_end
        if self.frame_end <= self.frame_start:
            raise InputError(f"the scene's frame range {self.frame_start}-{self.frame_end} is empty: set End after Start")
        self.frame = self.frame_start
        self.original_frame = self.scene.frame_current
        self.started = time.perf_counter()
        if any(o.softsim.output == "CACHE" for o in objects):
            try:
                check_cache_writable(self.scene)
            except OutputError as error:
                raise InputError(str(error)) from error
        self.scene.frame_set(self.frame_start)
        depsgraph = context.evaluated_depsgraph_get()
        self.runs = [BodyRun(o, self.scene, depsgraph) for o in objects]
        self.frames = [[run.rest_local()] for run in self.runs]

    @property
    def frame_count(self) -> int:
        return self.frame_end - self.frame_start + 1

    @property
    def progress(self) -> float:
        return (self.frame - self.frame_start) / (self.frame_end - self.frame_start)

    @property
    def done(self) -> bool:
        return self.frame >= self.frame_end

    def step(self) -> None:
        """Simulate the next frame of every body; raises InputError naming the body and frame on failure."""
        self.frame += 1
        self.scene.frame_set(self.frame)
        depsgraph = self.context.evaluated_depsgraph_get()
        colliders = scene_colliders(self.scene, depsgraph)
        for run, frames in zip(self.runs, self.frames):
            obj = self.scene.objects[run.name]
            try:
                frames.append(run.advance(obj, depsgraph, colliders))
            except solvers.SimulationDiverged as error:
                what = "did not converge" if isinstance(error, NewtonNotConverged) else "became unstable"
                raise InputError(f"'{run.name}' {what} at frame {self.frame}: {error}. {run.stability_advice(error)}; the previous bake is kept") from error

    def finish(self) -> str:
        """Write every body's output; returns a one-line report."""
        for run, frames in zip(self.runs, self.frames):
            obj = self.scene.objects[run.name]
            data = np.stack(frames)
            try:
                if obj.softsim.output == "CACHE":
                    remove_shape_key_bake(obj)
                    write_cache(obj, self.scene, data, self.frame_start)
                else:
                    remove_cache(obj, self.scene)
                    remove_shape_key_bake(obj)
                    write_shape_keys(obj, data, self.frame_start)
            except OutputError as error:
                raise InputError(str(error)) from error
            obj.softsim.is_baked = True
            obj.softsim.baked_output = obj.softsim.output
            obj.softsim.status = f"Baked frames {self.frame_start}-{self.frame_end}; last {run.status_text(self.frame_end)}"
            live.discard(run.name)
        self.restore_frame()
        seconds = time.perf_counter() - self.started
        worst = max(run.stats.max_strain for run in self.runs)
        return (f"Soft Sim: baked {len(self.runs)} bod{'y' if len(self.runs) == 1 else 'ies'}, {self.frame_count} frames "
                f"in {seconds:.1f} s; last frame's max edge strain {100 * worst:.2f}%")

    def restore_frame(self) -> None:
        self.scene.frame_set(self.original_frame)


class SOFTSIM_OT_bake(bpy.types.Operator):
    """Simulate every Soft Sim body over the scene's frame range and store the result (Esc cancels)"""

    bl_idname = "softsim.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    selected_only: BoolProperty(name="Selected Only", default=False, description="Bake only the selected bodies")

    def _start(self, context):
        objects = bodies_to_bake(context, self.selected_only)
        if not objects:
            where = "selected " if self.selected_only else ""
            raise InputError(f"no {where}object has Role Cloth or Solid: set one in Properties > Physics > Soft Sim")
        return BakeJob(context, objects)

    def execute(self, context):
        with live.suspended():
            job = None
            try:
                job = self._start(context)
                wm = context.window_manager
                wm.progress_begin(0, job.frame_count)
                try:
                    while not job.done:
                        job.step()
                        wm.progress_update(job.frame - job.frame_start)
                    report = job.finish()
                finally:
                    wm.progress_end()
            except InputError as error:
                if job is not None:
                    job.restore_frame()
                self.report({"ERROR"}, str(error))
                return {"CANCELLED"}
        self.report({"INFO"}, report)
        return {"FINISHED"}

    # Interactive bake: one frame per timer tick, progress in the panel and status bar, Esc cancels.
    def invoke(self, context, event):
        if context.window is None:  # background mode: no event loop to drive a modal operator
            return self.execute(context)
        live.suspend()
        try:
            self.job = self._start(context)
        except InputError as error:
            live.resume()
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        settings = context.scene.softsim
        settings.is_baking, settings.bake_progress, settings.bake_status = True, 0.0, "Starting"
        self.timer = context.window_manager.event_timer_add(0.001, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC":
            self.job.restore_frame()
            return self._end(context, {"CANCELLED"}, {"WARNING"}, "Soft Sim: bake cancelled; the previous bake is kept")
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            deadline = time.perf_counter() + 0.1
            while not self.job.done and time.perf_counter() < deadline:
                self.job.step()
            if self.job.done:
                return self._end(context, {"FINISHED"}, {"INFO"}, self.job.finish())
        except InputError as error:
            self.job.restore_frame()
            return self._end(context, {"CANCELLED"}, {"ERROR"}, str(error))
        except Exception:
            # A bug, not bad input: still stop the timer and the live-handler suspension before Blender reports it.
            self._end(context, {"CANCELLED"}, {"ERROR"}, "Soft Sim: the bake failed (see the console); the previous bake is kept")
            raise
        job = self.job
        settings = context.scene.softsim
        settings.bake_progress = job.progress
        settings.bake_status = f"Frame {job.frame} of {job.frame_end}"
        context.workspace.status_text_set(f"Soft Sim baking: frame {job.frame}/{job.frame_end} ({100 * job.progress:.0f}%), Esc to cancel")
        for area in context.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()
        return {"RUNNING_MODAL"}

    def _end(self, context, result, level, message):
        context.window_manager.event_timer_remove(self.timer)
        context.workspace.status_text_set(None)
        settings = context.scene.softsim
        settings.is_baking, settings.bake_progress, settings.bake_status = False, 0.0, ""
        live.resume()
        self.report(level, message)
        return result


class SOFTSIM_OT_free_bake(bpy.types.Operator):
    """Remove the bake of the Soft Sim bodies and show their original meshes again"""

    bl_idname = "softsim.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    selected_only: BoolProperty(name="Selected Only", default=False, description="Free only the selected bodies")

    def execute(self, context):
        objects = bodies_to_bake(context, self.selected_only)
        for obj in objects:
            free_bake(obj, context.scene)
            obj.softsim.status = ""
            live.discard(obj.name)
        self.report({"INFO"}, f"Soft Sim: freed {len(objects)} bod{'y' if len(objects) == 1 else 'ies'}")
        return {"FINISHED"}


class SOFTSIM_OT_reset(bpy.types.Operator):
    """Drop the live (unbaked) simulation and show the original meshes; baked bodies are not touched"""

    bl_idname = "softsim.reset"
    bl_label = "Reset Simulation"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        live.discard()
        for obj in context.scene.objects:
            if obj.softsim.role in BODY_ROLES and not obj.softsim.is_baked:
                remove_live(obj)
                obj.softsim.status = ""
        return {"FINISHED"}


classes = (SOFTSIM_OT_bake, SOFTSIM_OT_free_bake, SOFTSIM_OT_reset)
