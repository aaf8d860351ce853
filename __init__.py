"""Soft Sim: cloth and soft-body simulation for Blender, baked to PC2 or shape keys.

Seven solvers in NumPy and SciPy: mass-spring with explicit, symplectic or implicit Euler, PBD, XPBD, Projective
Dynamics, and Newton's method on the incremental potential with IPC contact.

This file only registers and unregisters; the engine is in solvers/, the Blender side in operators/ and ui/.
"""
import bpy

from . import operators, ui
from .operators import cli

_cli_commands = []  # handles from bpy.utils.register_cli_command, removed in unregister()


def register():
    ui.register()
    operators.register()
    # `blender -b shot.blend -c softsim bake|free|info ...` (docs/api.md, "Command line").
    _cli_commands.append(bpy.utils.register_cli_command("softsim", cli.execute))


def unregister():
    for handle in reversed(_cli_commands):
        bpy.utils.unregister_cli_command(handle)
    _cli_commands.clear()
    operators.unregister()
    ui.unregister()
