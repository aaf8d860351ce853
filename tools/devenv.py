"""Development helpers: run the repository as the add-on package ``soft_sim`` inside the bpy wheel."""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def isolate_blender_user_folders() -> None:
    """Point Blender's user folders at a throw-away place (call before ``import bpy``)."""
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="softsim-blender-user-"))


def import_addon():
    """Import the repository as the package ``soft_sim`` (through a symlink, as Blender would see it)."""
    if "soft_sim" in sys.modules:
        return sys.modules["soft_sim"]
    parent = tempfile.mkdtemp(prefix="softsim-pkg-")
    os.symlink(ROOT, os.path.join(parent, "soft_sim"))
    sys.path.insert(0, parent)
    import soft_sim

    return soft_sim
