"""`blender -b shot.blend -c softsim bake|free|info`: the command Blender calls with the arguments after
`softsim` once the .blend is loaded. The bpy wheel cannot run `blender -c`, so these tests load the file
and call the registered callback the same way, and check its exit code and output."""
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, evaluated_positions, import_addon, lab_scene, original_positions  # noqa: E402

from solvers.cache import read_pc2  # noqa: E402


def test_the_softsim_command_is_registered_with_the_addon_and_removed_with_it(capfd):
    module = import_addon()
    module.register()
    try:
        handles = list(module._cli_commands)
        assert len(handles) == 1
        capfd.readouterr()
        probe = bpy.utils.register_cli_command("softsim", lambda argv: 0)  # the id is taken: Blender warns
        bpy.utils.unregister_cli_command(probe)
        assert 'duplicate command "softsim"' in capfd.readouterr().err
    finally:
        module.unregister()
    assert module._cli_commands == []
    with pytest.raises(ValueError, match="already been removed"):
        bpy.utils.unregister_cli_command(handles[0])
    probe = bpy.utils.register_cli_command("softsim", lambda argv: 0)  # free again: no warning
    bpy.utils.unregister_cli_command(probe)
    assert "duplicate" not in capfd.readouterr().err


def softsim(*argv):
    """Run the command as `blender -b <open file> -c softsim *argv` would: returns the exit code."""
    from soft_sim.operators import cli

    return cli.execute(list(argv))


def saved_lab(tmp_path, frames=8):
    scene, cloth, sphere = lab_scene(n=6, frames=frames, cache_dir="//cache")
    path = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


def test_bake_with_frames_and_save_bakes_like_the_panel(addon, tmp_path, capsys):
    path = saved_lab(tmp_path)
    bpy.context.scene.frame_set(2)
    capsys.readouterr()
    assert softsim("bake", "--frames", "3-6", "--save") == 0
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Soft Sim:")]
    progress = [line for line in out if line.startswith("Soft Sim: frame ")]
    assert [line.split()[3] for line in progress] == ["4", "5", "6"]  # one line per simulated frame, in order
    assert progress[-1].startswith("Soft Sim: frame 6 (3/3, 100%)")
    assert any(line.startswith("Soft Sim: 'Cloth' -> ") and line.endswith(".pc2") for line in out)
    assert out[-1] == f"Soft Sim: saved {path}"

    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)  # what the render job opens next
    scene, cloth = bpy.context.scene, bpy.data.objects["Cloth"]
    assert (scene.frame_start, scene.frame_end, scene.frame_current) == (1, 8, 2)  # the scene is left as it was
    frames, start, _ = read_pc2(cache_file(cloth))
    assert frames.shape[0] == 4 and start == 3.0 and cloth.modifiers[0].frame_start == 3.0
    assert np.allclose(evaluated_positions(cloth, 6), frames[-1], atol=1e-6)
    assert np.allclose(evaluated_positions(cloth, 3), original_positions(cloth), atol=1e-6)
    cli_frames = frames.copy()

    # The panel's bake over the same frames gives the same file.
    scene.frame_start, scene.frame_end = 3, 6
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert np.array_equal(read_pc2(cache_file(cloth))[0], cli_frames)


def test_errors_exit_non_zero_with_the_message_and_keep_the_previous_bake(addon, tmp_path, capsys):
    saved_lab(tmp_path, frames=5)
    assert softsim("bake") == 0
    cloth = bpy.data.objects["Cloth"]
    path = cache_file(cloth)
    with open(path, "rb") as f:
        good = f.read()
    capsys.readouterr()

    def fails(code, *argv):
        assert softsim(*argv) == code
        captured = capsys.readouterr()
        return captured.err

    assert "no object named 'Nope'" in fails(1, "bake", "--objects", "Cloth", "Nope")
    assert "'Ball' has Role Sphere" in fails(1, "bake", "--objects", "Ball")
    assert "END must come after START" in fails(2, "bake", "--frames", "5-2")
    assert "is not START-END" in fails(2, "bake", "--frames", "1:5")
    assert "required" in fails(2)
    bpy.context.scene.gravity = (0.0, 0.0, -1.0e7)
    err = fails(1, "bake")
    assert err.startswith("Soft Sim: error: 'Cloth' became unstable at frame 2") and "Raise Substeps" in err
    bpy.context.scene.gravity = (0.0, 0.0, -9.81)
    with open(path, "rb") as f:
        assert f.read() == good
    assert cache_file(cloth) == path and bpy.context.scene.frame_current == 1

    assert softsim("bake", "--help") == 0
    assert "--frames START-END" in capsys.readouterr().out

    scene, cloth, _ = lab_scene(n=6, frames=5)  # never saved: --save cannot work, so nothing is baked
    assert "--save needs a .blend file" in fails(1, "bake", "--save")
    assert cache_file(cloth) is None and not cloth.softsim.is_baked


def test_info_lists_bakes_and_fails_on_a_missing_cache_and_free_removes_the_bake(addon, tmp_path, capsys):
    path = saved_lab(tmp_path, frames=5)
    assert softsim("info") == 0
    out = capsys.readouterr().out
    assert "'Cloth': Cloth, solver XPBD, output PC2 cache, not baked" in out
    assert "'Ball': Sphere collider" in out

    assert softsim("bake", "--objects", "Cloth") == 0
    cloth = bpy.data.objects["Cloth"]
    capsys.readouterr()
    assert softsim("info", "--objects", "Cloth") == 0
    assert f"'Cloth': Cloth, solver XPBD, output PC2 cache, baked, {cache_file(cloth)} (5 frames from 1, 36 vertices)" in capsys.readouterr().out

    os.remove(cache_file(cloth))  # e.g. the cache folder was not synced to the render node
    assert softsim("info") == 1
    assert "Soft Sim: error: 'Cloth': its cache file" in capsys.readouterr().err

    assert softsim("free", "--save") == 0
    out = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Soft Sim:")]
    assert out[-2:] == ["Soft Sim: freed 'Cloth'", f"Soft Sim: saved {path}"]
    bpy.ops.wm.open_mainfile(filepath=path)
    cloth = bpy.data.objects["Cloth"]
    assert cache_file(cloth) is None and not cloth.softsim.is_baked and len(cloth.modifiers) == 0
    assert softsim("info") == 0
    assert "not baked" in capsys.readouterr().out
