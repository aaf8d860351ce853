"""Defects found from outside, driven through bpy as a user or a script would: a PBD bake and a stiffness stored past
its limits, an old Solid holding a solver that serves cloth only, `make demo`'s reruns, and the PC2 file's mode."""
import os
import stat
import sys

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, cache_listing, evaluated_positions, lab_scene  # noqa: E402
from solvers import REGISTRY  # noqa: E402


def baked_frames(obj, frames):
    return np.stack([evaluated_positions(obj, frame) for frame in frames])


def test_a_pbd_bake_is_the_same_whatever_stiffness_a_script_stored(addon, tmp_path):
    """PBD's edges are hard constraints: Stiffness is no PBD setting, so a value past its limits (stored through the
    id-property, as a script or an old file can) must change nothing. It used to drop every edge constraint."""
    scene, cloth, _ = lab_scene(n=6, frames=6, cache_dir=str(tmp_path))
    cloth.softsim.solver = "PBD"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    default = baked_frames(cloth, range(1, 7))
    cloth.softsim["stiffness"] = -100.0  # bypasses the property's min
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert cloth.softsim.stiffness == -100.0
    assert np.array_equal(baked_frames(cloth, range(1, 7)), default)
    assert np.abs(default[-1] - default[0]).max() > 0.1  # it did fall: the comparison is of a real motion


def test_an_old_solid_holding_symplectic_euler_is_refused_by_name_and_nothing_changes(addon, tmp_path):
    scene, cloth, _ = lab_scene(n=6, frames=4, cache_dir=str(tmp_path / "cache"))
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 6.0))
    cube = bpy.context.object
    cube.name = "Old Cube"
    cube.softsim.role = "SOLID"
    cube.softsim["solver"] = REGISTRY["SYMPLECTIC_EULER"].number  # what a file saved before solids lost it holds
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "old.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "old.blend"))
    scene, cloth, cube = bpy.context.scene, bpy.data.objects["Cloth"], bpy.data.objects["Old Cube"]
    assert cube.softsim.solver == ""  # the menu cannot show it: only the bake and the panel can say why

    cube.softsim.role = "NONE"
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # an earlier good bake of the cloth, to be kept
    cube.softsim.role = "SOLID"
    shown, listing = evaluated_positions(cloth, 4), cache_listing(tmp_path / "cache")
    message = (r"'Old Cube': the solver Symplectic Euler does not serve solids \(Role Solid\); solids are served by "
               r"Implicit Euler, PBD, XPBD, Projective Dynamics, Newton \(IPC\)")
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.softsim.bake()
    assert np.array_equal(evaluated_positions(cloth, 4), shown)
    assert cache_listing(tmp_path / "cache") == listing
    assert not cube.softsim.is_baked and len(cube.modifiers) == 0 and cube.data.shape_keys is None
    assert cube.softsim.get("solver") == REGISTRY["SYMPLECTIC_EULER"].number  # the user's setting is theirs to change

    assert bpy.ops.softsim.free_bake() == {"FINISHED"}  # live playback says the same in the panel
    scene.frame_set(1)
    scene.frame_set(2)
    assert "Symplectic Euler does not serve solids" in cube.softsim.status


def _demo():
    tools = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import demo

    return demo


def _demo_like_run(demo, out):
    """What a `make demo` run does to its cache folder, on a tiny scene: clear its own caches, build, save the .blend
    under the demo's name, bake a cloth into //softsim_cache."""
    demo.clear_own_caches(str(out / "softsim_cache"))
    scene, cloth, _ = lab_scene(n=4, frames=3)
    cloth.name = "Lab Cloth"
    scene.softsim.cache_dir = "//softsim_cache"
    bpy.ops.wm.save_as_mainfile(filepath=str(out / demo.BLEND_NAME))
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    return cache_file(bpy.data.objects["Lab Cloth"])


def test_demo_reruns_leave_one_set_of_caches_and_the_users_files(addon, tmp_path):
    demo = _demo()
    assert demo.CACHE_DIR == os.path.join(demo.OUT, "softsim_cache")
    folder = tmp_path / "softsim_cache"
    folder.mkdir()
    (folder / "my_notes.txt").write_text("mine")
    (folder / "shot_010_Cloth_0123abcd.pc2").write_bytes(b"a user's own cache")
    (folder / "untitled_Soft_Sim_Fold_Cloth_0123abcd.pc2").write_bytes(b"compare.py's, from an earlier run")
    first = _demo_like_run(demo, tmp_path)
    second = _demo_like_run(demo, tmp_path)
    assert first != second  # each bake's file carries a fresh token: without clearing, sets would pile up
    assert cache_listing(folder) == sorted(["my_notes.txt", "shot_010_Cloth_0123abcd.pc2", os.path.basename(second)])
    assert not os.path.exists(folder / ".softsim-trash") or not os.listdir(folder / ".softsim-trash")


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_a_pc2_cache_gets_the_mode_a_plainly_created_file_would(addon, tmp_path, umask):
    """Blender's caches follow the umask; a 0600 cache cannot be read by a render farm's other accounts."""
    previous = os.umask(umask)
    try:
        scene, cloth, _ = lab_scene(n=4, frames=3, cache_dir=str(tmp_path))
        assert bpy.ops.softsim.bake() == {"FINISHED"}
        mode = stat.S_IMODE(os.stat(cache_file(cloth)).st_mode)
        with open(tmp_path / "plain", "w"):
            pass
        plain = stat.S_IMODE(os.stat(tmp_path / "plain").st_mode)
    finally:
        os.umask(previous)
    assert oct(mode) == oct(0o666 & ~umask) == oct(plain)
