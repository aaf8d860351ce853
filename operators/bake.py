"""softsim.bake, softsim.free_bake, softsim.reset.

A bake simulates every chosen body over the scene's frame range into memory first and writes the
outputs only when all frames succeeded, so a failed or cancelled bake leaves the previous one intact.
"""
import threading
import time

import bpy
import numpy as np
from bpy.props import BoolProperty

from .. import solvers
from ..solvers import native
from ..solvers.frame import StepNotConverged
from ..solvers.scene import Scene, advance_scene_frame
from . import body_input, live
from .bridge import BODY_ROLES, InputError, compute_preference, scene_colliders, takes_part
from .output import (OutputError, StagedCache, StagedShapeKeys, check_cache_writable, check_modifier_name, check_shape_key_bake,
                     check_shape_keys_editable, free_bake, has_our_keys, release_bakes, remove_created_folders, remove_live)
from .simulation import BodyRun


def scene_bodies(context) -> tuple:
    """(bodies taking part, names of bodies left out) of the context's scene and view layer.

    As in Blender's own physics, only objects the view layer evaluates take part (``bridge.takes_part``).
    """
    depsgraph = context.evaluated_depsgraph_get()
    bodies, left_out = [], []
    for obj in context.scene.objects:
        if obj.softsim.role in BODY_ROLES:
            (bodies if takes_part(obj, depsgraph) else left_out).append(obj)
    return bodies, [o.name for o in left_out]


LEFT_OUT = "in an excluded collection or disabled in viewports (the monitor icon), so it takes no part, as in Blender's own physics"


def bodies_to_bake(context, selected_only: bool) -> list:
    objs, _ = scene_bodies(context)
    if selected_only:
        objs = [o for o in objs if o.select_get()]
    return objs


class BakeJob:
    """Simulates the bodies frame by frame; ``step()`` advances one frame, ``finish()`` writes outputs.

    Nothing the user can see changes before ``finish()``: frames are kept in memory, PC2 files are
    staged next to their final place and moved there only once every body's file is written. On any
    failure call ``abort()``: it puts the current frame back and removes a cache folder the job made.
    """

    def __init__(self, context, objects, frame_range=None):
        self.context = context
        self.scene = context.scene
        self.names = [o.name for o in objects]
        self.frame_start, self.frame_end = frame_range or (self.scene.frame_start, self.scene.frame_end)
        if self.frame_end <= self.frame_start:
            where = "the bake's" if frame_range else "the scene's"
            raise InputError(f"{where} frame range {self.frame_start}-{self.frame_end} is empty: set End after Start")
        self.frame = self.frame_start
        self.original_frame = self.scene.frame_current
        self.started = time.perf_counter()
        self.created_folders = []
        self.worker = None
        try:
            for obj in objects:  # before simulating: fail in a second, not after minutes
                if obj.type != "MESH":
                    continue  # BodyRun says what is wrong with it
                if obj.softsim.output == "CACHE":
                    check_modifier_name(obj)
                    if obj.mode == "EDIT" and has_our_keys(obj):  # the new bake would remove them
                        check_shape_keys_editable(obj, "bake")
                else:
                    refused = body_input.check_shape_key_input(obj)
                    if refused:
                        raise InputError(refused)
                    check_shape_key_bake(obj, self.frame_start, self.frame_end)
                if obj.mode == "EDIT":
                    obj.update_from_editmode()  # bake the mesh as it is now, edits included
            if any(o.softsim.output == "CACHE" for o in objects):
                _, self.created_folders = check_cache_writable(self.scene)
        except OutputError as error:
            raise InputError(str(error)) from error
        try:
            self.scene.frame_set(self.frame_start)
            depsgraph = context.evaluated_depsgraph_get()
            self.runs = [BodyRun(o, self.scene, depsgraph) for o in objects]
            self.coupled, self.coupling = _couple(self.runs)
            # The colliders as read at the last frame: each frame's colliders move from these poses.
            self.previous_colliders = scene_colliders(self.scene, depsgraph)
        except BaseException:
            self.abort()
            raise
        self.frames = [[run.rest_local()] for run in self.runs]
        self.notes = []
        self.summary = ""

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
        self.end_frame(self.compute_frame(self.begin_frame()))

    def begin_frame(self):
        """Set the next frame and read from Blender what it needs (main thread only)."""
        self.frame += 1
        self.scene.frame_set(self.frame)
        depsgraph = self.context.evaluated_depsgraph_get()
        current = scene_colliders(self.scene, depsgraph)
        colliders = solvers.frame_colliders(self.previous_colliders, current)  # moving through the frame
        self.previous_colliders = current
        prepared = [run.prepare(self.scene.objects[run.name], depsgraph, self.frame) for run in self.runs]
        return self.frame, prepared, colliders

    def compute_frame(self, work) -> list:
        """Simulate a frame ``begin_frame`` prepared. Pure NumPy: safe in a worker thread."""
        frame, prepared, colliders = work
        results = [None] * len(self.runs)
        for k, (run, data) in enumerate(zip(self.runs, prepared)):
            if k in self.coupled:
                continue
            try:
                results[k] = run.compute(data, colliders)
            except solvers.SimulationDiverged as error:
                raise _failure(run, frame, error) from error
        if self.coupling is not None:
            runs = [self.runs[k] for k in self.coupled]
            try:
                stats = advance_scene_frame(self.coupling, runs[0].frame_dt, colliders, [prepared[k][1] for k in self.coupled],
                                            [prepared[k][2] for k in self.coupled])
            except solvers.SimulationDiverged as error:
                together = [runs[i].name for i in getattr(error, "system", ())[1:]]
                raise _failure(runs[getattr(error, "body", 0)], frame, error, together) from error
            for k, run, s in zip(self.coupled, runs, stats):
                run.stats = s
                results[k] = run.output(prepared[k][0])
        return results

    def end_frame(self, results) -> None:
        for frames, positions in zip(self.frames, results):
            frames.append(positions)

    # The interactive bake computes each frame in a worker thread, so that Blender's event loop (and Esc)
    # stays responsive however long one frame takes; Blender data is only touched here, on the main thread.
    def start_frame_in_background(self) -> None:
        work = self.begin_frame()
        self.worker = FrameWorker(self, work)

    def poll_frame(self) -> bool:
        """True once the frame started by ``start_frame_in_background`` is done (raises its InputError)."""
        if self.worker is None or self.worker.thread.is_alive():
            return False
        worker, self.worker = self.worker, None
        self.end_frame(worker.result())
        return True

    @property
    def computing(self) -> bool:
        return self.worker is not None

    def finish(self) -> str:
        """Write every body's output; returns a one-line report (notes about kept files in ``self.notes``)."""
        objects = [self.scene.objects[run.name] for run in self.runs]
        # Phase 1, everything that can fail: every PC2 file and every set of shape keys, staged under temporary
        # names; then the files swapped in, the replaced ones moved to the trash. Any failure undoes all of it.
        staged = []
        try:
            for obj, frames in zip(objects, self.frames):
                if obj.softsim.output == "CACHE":
                    staged.append(StagedCache(obj, self.scene, np.stack(frames), self.frame_start))
                else:
                    staged.append(StagedShapeKeys(obj, np.stack(frames), self.frame_start))
            leaving = {obj.name for obj in objects}
            incoming = {item.path for item in staged if item.path is not None}
            for obj, item in zip(objects, staged):
                item.swap_in(obj, leaving, incoming)
        except BaseException as error:
            for obj, item in zip(objects, staged):
                item.swap_back(obj)
                item.discard(obj)
            if isinstance(error, OutputError):
                raise InputError(str(error)) from error
            raise
        # Phase 2: switch every body over to its new bake (Blender data only).
        for obj, run, item in zip(objects, self.runs, staged):
            self.notes += item.commit(obj)
            obj.softsim.is_baked = True
            obj.softsim.baked_output = obj.softsim.output
            obj.softsim.baked_frame_start, obj.softsim.baked_frame_end = self.frame_start, self.frame_end
            obj.softsim.status = f"Baked frames {self.frame_start}-{self.frame_end}; last {run.status_text(self.frame_end)}"
            live.discard(run.name)
        self.restore_frame()
        seconds = time.perf_counter() - self.started
        worst = max(run.stats.max_strain for run in self.runs)
        self.summary = (f"Soft Sim: baked {len(self.runs)} bod{'y' if len(self.runs) == 1 else 'ies'}, {self.frame_count} frames "
                        f"in {seconds:.1f} s; last frame's max edge strain {100 * worst:.2f}%; "
                        f"{native.status(compute_preference())[1]}")
        if self.coupling is not None and self.coupling.touched:
            touched = sorted(self.runs[self.coupled[i]].name for i in self.coupling.touched)
            self.summary += "; in contact with each other: " + ", ".join(f"'{name}'" for name in touched)
        return self.summary

    def restore_frame(self) -> None:
        self.scene.frame_set(self.original_frame)

    def abort(self) -> None:
        """Undo what a failed or cancelled job did: the current frame, a cache folder it created.

        A frame still computing in a worker thread is abandoned (returns at once): its thread only touches
        this job's own arrays, and its result is never looked at.
        """
        self.worker = None
        self.restore_frame()
        remove_created_folders(self.created_folders)
        self.created_folders = []


def _couple(runs):
    """(indices of the runs simulated together, their Scene) for two or more bodies, else ((), None): bodies meet each
    other (``solvers.scene``: position-level bodies in lockstep substeps with their contact resolved between them, a
    NEWTON body with the others as mesh colliders)."""
    coupled = list(range(len(runs)))
    if len(coupled) < 2:
        return (), None
    chosen = [runs[k] for k in coupled]
    scene = Scene([(run.model, run.solver.config) for run in chosen], [run.state for run in chosen],
                  [run.solver for run in chosen])
    return tuple(coupled), scene


def _failure(run, frame, error, together=()) -> InputError:
    """The bake's error for a body whose step failed; ``together``: names of the bodies solved with it as one system."""
    what = "did not converge" if isinstance(error, StepNotConverged) else "became unstable"
    name = f"'{run.name}'"
    if together:
        name += " (solved as one system with " + ", ".join(f"'{n}'" for n in together) + ")"
    return InputError(f"{name} {what} at frame {frame}: {error}. {run.stability_advice(error)}; the previous bake is kept")


class FrameWorker:
    """Runs ``job.compute_frame(work)`` in a daemon thread; ``result()`` returns it or raises its error."""

    def __init__(self, job, work):
        self._result = self._error = None
        self.thread = threading.Thread(target=self._run, args=(job, work), name="Soft Sim frame", daemon=True)
        self.thread.start()

    def _run(self, job, work):
        try:
            self._result = job.compute_frame(work)
        except BaseException as error:  # handed to the main thread by result()
            self._error = error

    def result(self):
        if self._error is not None:
            raise self._error
        return self._result


def run_bake(context, objects, frame_range=None, on_frame=None):
    """Bake ``objects`` synchronously with the live handler suspended; returns the finished BakeJob.

    ``on_frame(job)`` is called after every simulated frame. Raises InputError; a failure leaves every
    previous bake, modifier, shape key, flag and file as it was.
    """
    with live.suspended():
        job = BakeJob(context, objects, frame_range)
        try:
            while not job.done:
                job.step()
                if on_frame is not None:
                    on_frame(job)
            job.finish()
        except BaseException:
            job.abort()
            raise
    return job


def free_bodies(objects) -> list:
    """Free the bakes of ``objects``; returns notes about cache files kept (not theirs alone to delete).

    All or nothing: raises InputError naming the object (and changes nothing) if one of them cannot be freed.
    """
    try:
        notes = release_bakes(objects)
    except OutputError as error:
        raise InputError(str(error)) from error
    for obj in objects:
        free_bake(obj)
        obj.softsim.status = ""
        live.discard(obj.name)
    return notes


class SOFTSIM_OT_bake(bpy.types.Operator):
    """Simulate every Soft Sim body over the scene's frame range and store the result (Esc cancels)"""

    bl_idname = "softsim.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    selected_only: BoolProperty(name="Selected Only", default=False, description="Bake only the selected bodies")

    def _objects(self, context):
        objects = bodies_to_bake(context, self.selected_only)
        if not objects:
            where = "selected " if self.selected_only else ""
            _, left_out = scene_bodies(context)
            if left_out and not self.selected_only:
                raise InputError(f"no object taking part has Role Cloth or Solid: '{left_out[0]}' is {LEFT_OUT}; "
                                 "include its collection in the view layer or enable it in viewports")
            raise InputError(f"no {where}object has Role Cloth or Solid: set one in Properties > Physics > Soft Sim")
        return objects

    def _report_left_out(self, context):
        if not self.selected_only:
            for name in scene_bodies(context)[1]:
                self.report({"WARNING"}, f"Soft Sim: skipped '{name}': it is {LEFT_OUT}")

    def _start(self, context):
        return BakeJob(context, self._objects(context))

    def execute(self, context):
        wm = context.window_manager
        try:
            objects = self._objects(context)
            frame_start = context.scene.frame_start
            wm.progress_begin(0, max(1, context.scene.frame_end - frame_start))
            try:
                job = run_bake(context, objects, on_frame=lambda job: wm.progress_update(job.frame - job.frame_start))
            finally:
                wm.progress_end()
        except InputError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self._report_left_out(context)
        for note in job.notes:
            self.report({"WARNING"}, note)
        self.report({"INFO"}, job.summary)
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
            self.job.abort()
            return self._end(context, {"CANCELLED"}, {"WARNING"}, "Soft Sim: bake cancelled; the previous bake is kept")
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            # Frames are computed in a worker thread (BakeJob.start_frame_in_background): this handler only
            # starts and collects them, so it returns within milliseconds and Esc is seen at once, even while one
            # frame takes minutes.
            deadline = time.perf_counter() + 0.1
            while time.perf_counter() < deadline:
                if self.job.computing and not self.job.poll_frame():
                    break  # still computing: look again at the next tick
                if self.job.done:
                    report = self.job.finish()
                    self._report_left_out(context)
                    for note in self.job.notes:
                        self.report({"WARNING"}, note)
                    return self._end(context, {"FINISHED"}, {"INFO"}, report)
                self.job.start_frame_in_background()
        except InputError as error:
            self.job.abort()
            return self._end(context, {"CANCELLED"}, {"ERROR"}, str(error))
        except Exception:
            # A bug, not bad input: still stop the timer and the live-handler suspension before Blender reports it.
            self.job.abort()
            self._end(context, {"CANCELLED"}, {"ERROR"}, "Soft Sim: the bake failed (see the console); the previous bake is kept")
            raise
        job = self.job
        settings = context.scene.softsim
        settings.bake_progress = job.progress
        settings.bake_status = f"Frame {job.frame} of {job.frame_end}" + (" (computing)" if job.computing else "")
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
        try:
            notes = free_bodies(objects)
        except InputError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        for note in notes:
            self.report({"WARNING"}, note)
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
