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


# ------------------------------------------------------------------ exit status under Blender 4.2

_exit_status = None


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Under bpy older than 5.0, leave with pytest's own exit status before the interpreter shuts down.

    bpy 4.2 (the oldest Blender the manifest supports, ``make test-lts``) crashes with a segmentation fault while
    Python finalizes after a test run that imported it, so the process would exit with 139 whatever the tests did
    and CI could not tell a green run from a red one. By now every report is written (this hook runs last, after
    the terminal summary); the streams are flushed and the process ends at once with pytest's status. bpy 5.x exits
    cleanly and keeps the normal shutdown, and a run that never imported bpy is left alone.
    """
    bpy = sys.modules.get("bpy")
    if _exit_status is None or bpy is None or tuple(bpy.app.version) >= (5, 0, 0):
        return
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(_exit_status)
