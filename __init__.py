"""Soft Sim: cloth and soft-body simulation for Blender (XPBD / PBD in NumPy), baked to PC2 or shape keys.

This file only registers and unregisters; the engine is in solvers/, the Blender side in operators/ and ui/.
"""
from . import operators, ui


def register():
    ui.register()
    operators.register()


def unregister():
    operators.unregister()
    ui.unregister()
