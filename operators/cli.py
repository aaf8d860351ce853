"""The ``softsim`` command line for render farms (docs/api.md, "Command line")::

    blender -b shot.blend -c softsim bake [--frames START-END] [--objects NAME ...] [--save]
    blender -b shot.blend -c softsim free [--objects NAME ...] [--save]
    blender -b shot.blend -c softsim info [--objects NAME ...]

Blender loads ``shot.blend`` first, then calls ``execute(argv)`` with the arguments after ``softsim``;
its return value is Blender's exit code. Everything works on the scene the file opens with. Progress
and results go to stdout, errors to stderr as ``Soft Sim: error: <message>`` with exit code 1
(2 for a malformed command line, as argparse does).
"""
import argparse
import os
import re
import struct
import sys
import time
import traceback

import bpy

from ..solvers.cache import HEADER, SIGNATURE
from . import trash
from .bake import LEFT_OUT, free_bodies, run_bake, scene_bodies
from .bridge import BODY_ROLES, COLLIDER_ROLES, InputError, takes_part
from .output import OutputError, cache_file_of, cache_folder, is_bake_key

PROG = "blender -b FILE.blend -c softsim"


class CommandError(Exception):
    """A command cannot do what it was asked; the message names the object or option and what to change."""


def _frame_range(text: str):
    match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"'{text}' is not START-END (for example --frames 1-48)")
    start, end = int(match.group(1)), int(match.group(2))
    if end <= start:
        raise argparse.ArgumentTypeError(f"'{text}' is empty: END must come after START (for example --frames {start}-{start + 47})")
    return start, end


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Bake, free or inspect Soft Sim simulations of the .blend file given before -c (its opening scene).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{bake,free,info}")
    objects_help = "only these objects (Role Cloth or Solid); default: every body in the scene"

    bake = commands.add_parser("bake", prog=f"{PROG} bake", help="bake like the panel's Bake All, printing progress per frame")
    bake.add_argument("--frames", type=_frame_range, metavar="START-END",
                      help="frames to bake (START is the initial state); default: the scene's frame range, which is left unchanged")
    bake.add_argument("--objects", nargs="+", metavar="NAME", help=objects_help)
    bake.add_argument("--save", action="store_true", help="save the .blend after a successful bake, so it plays the new bake")

    free = commands.add_parser("free", prog=f"{PROG} free", help="remove bakes like the panel's Free All")
    free.add_argument("--objects", nargs="+", metavar="NAME", help=objects_help)
    free.add_argument("--save", action="store_true", help="save the .blend afterwards")

    info = commands.add_parser("info", prog=f"{PROG} info",
                               help="list bodies, colliders and bakes; exit 1 if a baked body's cache file is missing or does not fit its mesh")
    info.add_argument("--objects", nargs="+", metavar="NAME", help=objects_help)
    return parser


def execute(argv) -> int:
    """The callback registered with ``bpy.utils.register_cli_command("softsim", execute)``."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exit_:  # --help, or a usage error argparse has already printed
        return exit_.code if isinstance(exit_.code, int) else 1
    try:
        return {"bake": _bake, "free": _free, "info": _info}[args.command](args)
    except (CommandError, InputError) as error:
        print(f"Soft Sim: error: {error}", file=sys.stderr, flush=True)
        return 1
    except Exception:  # a bug, not bad input: say so, with the traceback, and fail the job
        traceback.print_exc()
        print("Soft Sim: error: the command failed with the Python error above; the previous bake is kept", file=sys.stderr, flush=True)
        return 1
    finally:
        trash.purge()  # no undo on the command line: replaced and freed cache files go now, not at exit


def _out(text: str) -> None:
    print(text, flush=True)


def _scene():
    scene = bpy.context.scene
    if scene is None:
        raise CommandError("the file has no scene to work on")
    return scene


def _blend_label() -> str:
    return bpy.data.filepath or "the unsaved file"


def _pick_bodies(scene, names, must_take_part=True) -> list:
    """The bodies a command works on: every body of the scene taking part, or exactly the ones named."""
    if not names:
        bodies, left_out = scene_bodies(bpy.context)
        for name in left_out:
            _out(f"Soft Sim: skipped '{name}': it is {LEFT_OUT}")
        if not bodies:
            raise CommandError(f"no object in scene '{scene.name}' of {_blend_label()} has Role Cloth or Solid"
                               f"{' and takes part' if left_out else ''}: set one in Properties > Physics > Soft Sim and save the file")
        return bodies
    bodies = []
    for name in dict.fromkeys(names):
        obj = bpy.data.objects.get(name)
        if obj is None:
            raise CommandError(f"--objects: no object named '{name}' in {_blend_label()}: fix the name (names are case-sensitive)")
        if scene.objects.get(name) is None:
            raise CommandError(f"--objects: '{name}' is not in scene '{scene.name}', the scene the file opens with: "
                               "link it into that scene or save the file with its scene active")
        if obj.softsim.role not in BODY_ROLES:
            role = obj.softsim.role.title()
            raise CommandError(f"--objects: '{name}' has Role {role}; only Cloth and Solid bodies are baked: "
                               "set its Role in Properties > Physics > Soft Sim or leave it out of --objects")
        if must_take_part and not takes_part(obj, bpy.context.evaluated_depsgraph_get()):
            raise CommandError(f"--objects: '{name}' is {LEFT_OUT}: include its collection in the view layer, "
                               "enable it in viewports, or leave it out of --objects")
        bodies.append(obj)
    return bodies


def _check_can_save() -> str:
    path = bpy.data.filepath
    if not path:
        raise CommandError("--save needs a .blend file: give one before -c (blender -b shot.blend -c softsim ...)")
    folder = os.path.dirname(path) or "."
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CommandError(f"--save cannot write {path}: make it writable or leave out --save")
    return path


def _save(path: str) -> None:
    result = bpy.ops.wm.save_mainfile(filepath=path)
    if result != {"FINISHED"}:
        raise CommandError(f"saving {path} did not finish ({', '.join(sorted(result))}); the caches are written, the .blend is not")
    _out(f"Soft Sim: saved {path}")


def _bake(args) -> int:
    scene = _scene()
    save_path = _check_can_save() if args.save else None  # before baking: never bake for minutes and then fail
    bodies = _pick_bodies(scene, args.objects)
    start, end = args.frames or (scene.frame_start, scene.frame_end)
    _out(f"Soft Sim: baking {', '.join(repr(o.name) for o in bodies)} over frames {start}-{end} "
         f"of scene '{scene.name}' in {_blend_label()}")
    started = time.perf_counter()
    total = end - start

    def on_frame(job):
        done = job.frame - job.frame_start
        _out(f"Soft Sim: frame {job.frame} ({done}/{total}, {100 * done / total:.0f}%) {time.perf_counter() - started:.1f} s")

    job = run_bake(bpy.context, bodies, frame_range=args.frames, on_frame=on_frame)
    for note in job.notes:
        _out(f"Soft Sim: note: {note}")
    for name in job.names:
        obj = bpy.data.objects[name]
        where = cache_file_of(obj) if obj.softsim.baked_output == "CACHE" else f"{end - start + 1} shape keys"
        _out(f"Soft Sim: '{name}' -> {where}")
    _out(job.summary)
    if save_path:
        _save(save_path)
    return 0


def _free(args) -> int:
    scene = _scene()
    save_path = _check_can_save() if args.save else None
    bodies = _pick_bodies(scene, args.objects)
    for note in free_bodies(bodies):
        _out(f"Soft Sim: note: {note}")
    _out(f"Soft Sim: freed {', '.join(repr(o.name) for o in bodies)}")
    if save_path:
        _save(save_path)
    return 0


def _pc2_header(path: str):
    """(vertex_count, frame_start, frame_count) of a PC2 file; raises CommandError if unreadable."""
    try:
        with open(path, "rb") as f:
            header = f.read(HEADER.size)
            size = os.fstat(f.fileno()).st_size
    except OSError as error:
        raise CommandError(error.strerror) from error
    try:
        signature, _, vertex_count, frame_start, _, frame_count = HEADER.unpack(header)
    except struct.error as error:
        raise CommandError("it is too short to be a PC2 file") from error
    if signature != SIGNATURE:
        raise CommandError("it is not a PC2 file")
    if size != HEADER.size + frame_count * vertex_count * 12:
        raise CommandError(f"it is truncated: {frame_count} frames of {vertex_count} vertices need "
                           f"{HEADER.size + frame_count * vertex_count * 12} bytes, it has {size}")
    return vertex_count, frame_start, frame_count


def _info(args) -> int:
    scene = _scene()
    # Every body, also those taking no part now: their bakes still play in renders.
    bodies = _pick_bodies(scene, args.objects, False) if args.objects else [o for o in scene.objects if o.softsim.role in BODY_ROLES]
    left_out = set(scene_bodies(bpy.context)[1])
    try:
        folder = cache_folder(scene)
    except OutputError as error:
        folder = f"unresolved: {error}"
    _out(f"Soft Sim: {_blend_label()}, scene '{scene.name}', frames {scene.frame_start}-{scene.frame_end} "
         f"at {scene.render.fps / scene.render.fps_base:.3g} fps, cache folder {folder}")
    problems = []
    for obj in bodies:
        s = obj.softsim
        line = f"'{obj.name}': {s.role.title()}, solver {s.solver}, output {'PC2 cache' if s.output == 'CACHE' else 'shape keys'}"
        if obj.name in left_out:
            line += " (takes no part in bakes: in an excluded collection or disabled in viewports)"
        if not s.is_baked:
            _out(f"{line}, not baked")
            continue
        if s.baked_output != "CACHE":
            keys = obj.data.shape_keys
            count = sum(1 for k in keys.key_blocks if is_bake_key(k.name)) if keys else 0
            _out(f"{line}, baked to {count} shape keys")
            continue
        path = cache_file_of(obj)
        if path is None:
            problems.append(f"'{obj.name}' is marked baked but has no 'SoftSim Cache' Mesh Cache modifier: bake it again")
            _out(f"{line}, baked, cache modifier missing")
            continue
        try:
            vertex_count, frame_start, frame_count = _pc2_header(path)
        except CommandError as error:
            problems.append(f"'{obj.name}': its cache file {path} cannot be played ({error}): bake it again "
                            f"(softsim bake --objects '{obj.name}' --save)")
            _out(f"{line}, baked, cache file {path} unusable")
            continue
        _out(f"{line}, baked, {path} ({frame_count} frames from {frame_start:g}, {vertex_count} vertices)")
        if obj.type == "MESH" and vertex_count != len(obj.data.vertices):
            problems.append(f"'{obj.name}': its cache file {path} has {vertex_count} vertices but the mesh has "
                            f"{len(obj.data.vertices)}: bake it again (softsim bake --objects '{obj.name}' --save)")
    if not args.objects:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in scene.objects:
            if obj.softsim.role in COLLIDER_ROLES:
                part = "" if takes_part(obj, depsgraph) else f" (takes no part: it is {LEFT_OUT})"
                _out(f"'{obj.name}': {obj.softsim.role.title()} collider, thickness {obj.softsim.thickness:g} m, "
                     f"friction {obj.softsim.friction:g}{part}")
        if not bodies:
            _out("no object has Role Cloth or Solid")
    for problem in problems:
        print(f"Soft Sim: error: {problem}", file=sys.stderr, flush=True)
    return 1 if problems else 0
