"""Shared test set-up: the repository root is importable as the package ``soft_sim``; Blender is isolated."""
import os
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Blender's user folders go to a throw-away place so tests never touch a real user's config.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-blender-user-"))

# Pure tests import `solvers` directly (it has no parent-package imports).
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(scope="module")
def addon():
    """The add-on registered for one test module (as ``soft_sim``), then unregistered on an empty scene."""
    bpy = pytest.importorskip("bpy")
    from blender_helpers import import_addon

    module = import_addon()
    module.register()
    yield module
    bpy.ops.wm.read_homefile(use_empty=True)
    module.unregister()
