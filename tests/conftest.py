"""Shared test set-up: the repository root is importable as the package ``soft_sim``; Blender is isolated."""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Blender's user folders go to a throw-away place so tests never touch a real user's config.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-blender-user-"))

# Pure tests import `solvers` directly (it has no parent-package imports).
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
