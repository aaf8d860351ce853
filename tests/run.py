"""Run the test suite inside a real Blender (not only the bpy wheel):

    blender -b --factory-startup --python-exit-code 1 --python tests/run.py

Blender's own Python needs pytest: ``<blender>/<version>/python/bin/python3.11 -m pip install pytest``.
"""
import os
import sys

try:
    import pytest
except ImportError:
    sys.exit("pytest is not importable in this Blender's Python: install it with Blender's python -m pip install pytest")

sys.exit(pytest.main([os.path.dirname(os.path.abspath(__file__)), "-q"]))
