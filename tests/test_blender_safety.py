"""What a new user runs into: linked duplicates, Show Tets, planted links, odd cache folders, bad settings
stored as raw properties, zero scales, read-only folders, user shape keys, long names, failing shape-key
bakes. Every case ends in the correct result or a clear error naming the object, with every earlier bake and
every file outside the add-on's own intact."""
import errno
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, cache_listing, evaluated_positions, lab_scene, original_positions  # noqa: E402

from solvers.cache import read_pc2  # noqa: E402


def small_scene(tmp_path=None, frames=4, cache_dir=None):
    """A 5x5 lab cloth; saved as ``tmp_path/shot.blend`` with the cache folder ``//cache`` when tmp_path is given."""
    scene, cloth, sphere = lab_scene(n=5, frames=frames, cache_dir=cache_dir or ("//cache" if tmp_path else None))
    if tmp_path is not None:
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    return scene, cloth, sphere


def add_copy(obj, name, linked=False):
    copy = obj.copy()
    if not linked:
        copy.data = obj.data.copy()
    copy.name = name
    bpy.context.scene.collection.objects.link(copy)
    return copy


def data(path):
    with open(path, "rb") as f:
        return f.read()


def key_names(obj):
    keys = obj.data.shape_keys
    return [k.name for k in keys.key_blocks] if keys else []


def shape_key_state(obj):
    """Everything a shape-key bake could change on ``obj``: key names, mute flags, values and positions."""
    keys = obj.data.shape_keys
    if keys is None:
        return None
    state = []
    for k in keys.key_blocks:
        co = np.empty(len(k.data) * 3, np.float32)
        k.data.foreach_get("co", co)
        state.append((k.name, k.mute, k.value, co.tobytes()))
    return state


# --- item 5: linked duplicates ------------------------------------------------------------------

def test_a_shape_key_bake_of_a_mesh_shared_with_a_linked_duplicate_is_refused(addon):
    scene, cloth, _ = small_scene()
    twin = add_copy(cloth, "Twin", linked=True)  # Alt+D: one mesh, two objects
    twin.location.x += 20.0
    twin.softsim.role = "NONE"
    twin_before = evaluated_positions(twin, 3)
    cloth.softsim.output = "SHAPE_KEYS"
    with pytest.raises(RuntimeError, match=r"'Cloth': its mesh 'Grid' is also used by 'Twin' \(a linked duplicate\).*"
                                           r"Make Single User.*or set Output to PC2 Cache"):
        bpy.ops.softsim.bake()
    assert cloth.data.shape_keys is None and not cloth.softsim.is_baked
    assert np.array_equal(evaluated_positions(twin, 3), twin_before)
    cloth.softsim.output = "CACHE"  # a PC2 cache belongs to the object: fine
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert twin.modifiers.get("SoftSim Cache") is None and np.array_equal(evaluated_positions(twin, 3), twin_before)


# --- item 6: Show Tets --------------------------------------------------------------------------

def test_show_tets_never_touches_an_object_it_did_not_make(addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    solid = bpy.context.object
    solid.name = "Block"
    solid.softsim.role = "SOLID"
    solid.softsim.tet_resolution = 2
    bpy.ops.mesh.primitive_monkey_add(location=(5.0, 0.0, 0.0))
    mine = bpy.context.object
    mine.name = "Block Tets"  # the user's own object, with the name Show Tets would pick
    mine_mesh, mine_vertices = mine.data, len(mine.data.vertices)
    bpy.context.view_layer.objects.active = solid

    for _ in range(2):  # create, then update: the second call reuses its own object
        assert bpy.ops.softsim.tetrahedralize(show_tets=True) == {"FINISHED"}
    assert mine.data == mine_mesh and len(mine.data.vertices) == mine_vertices and mine.display_type == "TEXTURED"
    wires = [o for o in bpy.data.objects if o.softsim.tets_of == "Block"]
    assert [o.name for o in wires] == ["Block Tets.001"] and wires[0].display_type == "WIRE"
    assert len(wires[0].data.vertices) == solid.softsim.tet_vertex_count


# --- item 3: the shape-key path -----------------------------------------------------------------

def test_a_shape_key_bake_that_fails_while_writing_keys_keeps_every_earlier_bake(addon, tmp_path, monkeypatch):
    from soft_sim.operators.output import staged as output

    scene, cloth, _ = small_scene(tmp_path)
    other = add_copy(cloth, "Other")
    other.location.x += 20.0
    cloth.softsim.output = "SHAPE_KEYS"
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    before = {"shown": evaluated_positions(cloth, 3), "other": data(cache_file(other)),
              "other_shown": evaluated_positions(other, 3), "status": cloth.softsim.status, "keys": shape_key_state(cloth)}
    scene.gravity = (0.0, 0.0, -3.0)  # a successful bake would change both bodies

    real, calls = output._set_key_positions, []

    def fails_on_the_third_key(block, positions):
        calls.append(block.name)
        if len(calls) == 3:
            raise MemoryError("out of memory (simulated)")
        real(block, positions)

    monkeypatch.setattr(output, "_set_key_positions", fails_on_the_third_key)
    with pytest.raises(RuntimeError, match="out of memory"):
        bpy.ops.softsim.bake()
    assert len(calls) == 3
    assert shape_key_state(cloth) == before["keys"] and cloth.softsim.status == before["status"]
    assert np.array_equal(evaluated_positions(cloth, 3), before["shown"])
    assert data(cache_file(other)) == before["other"] and np.array_equal(evaluated_positions(other, 3), before["other_shown"])
    assert cache_listing(tmp_path / "cache") == [os.path.basename(cache_file(other))]


def test_rebaking_an_object_and_its_duplicate_together_keeps_both_new_files(addon, tmp_path):
    """The duplicate (Shift+D) stops playing the original's file while the original rewrites it: the bake that
    moves old files aside must not take the original's new file for an old one."""
    scene, cloth, _ = small_scene(tmp_path)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    duplicate = add_copy(cloth, "Cloth.001")
    duplicate.location.x += 20.0
    assert cache_file(duplicate) == cache_file(cloth)
    scene.gravity = (0.0, 0.0, -3.0)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert cache_file(duplicate) != cache_file(cloth)
    for obj in (cloth, duplicate):
        assert np.allclose(evaluated_positions(obj, 4), read_pc2(cache_file(obj))[0][-1], atol=1e-6)
    assert cache_listing(tmp_path / "cache") == sorted(os.path.basename(cache_file(o)) for o in (cloth, duplicate))


# --- Security -----------------------------------------------------------------------------------

def test_links_planted_in_a_shared_cache_folder_are_never_written_through(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(victim, cache / ".softsim-write-test")  # the old write test's name
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    path = cache_file(cloth)
    assert victim.read_bytes() == b"precious"

    os.remove(path)  # someone who can write the folder replaces our file with a link to the victim
    os.symlink(victim, path)
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # the new file replaces the link itself
    assert not os.path.islink(path) and read_pc2(path)[0].shape[0] == 4
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    bpy.ops.wm.save_mainfile()  # empties the trash, which held the link
    assert victim.read_bytes() == b"precious"
    assert cache_listing(cache) == [".softsim-write-test"]


def test_a_tilde_folder_is_the_home_folder_and_a_relative_one_needs_a_saved_blend(addon, tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)  # where Blender happens to run: nothing may land here

    scene, cloth, _ = small_scene(cache_dir="~/sim")
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert os.path.dirname(cache_file(cloth)) == str(home / "sim")

    for relative in ("sim", "./sim"):
        scene.softsim.cache_dir = relative
        with pytest.raises(RuntimeError, match=f"the Cache Folder '{relative}' is a relative path and the .blend file is not saved yet"):
            bpy.ops.softsim.bake()
    assert os.listdir(work) == []

    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    cloth = bpy.data.objects["Cloth"]
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # saved: relative to the .blend's folder
    assert os.path.dirname(cache_file(cloth)) == str(tmp_path / "sim")
    assert os.listdir(work) == []


# --- Clear errors instead of tracebacks ---------------------------------------------------------

@pytest.mark.parametrize("setting, value, solver, message", [
    ("stiffness", 0.0, "XPBD", r"'Cloth': Stiffness is 0 N/m \(softsim.stiffness\), but it must be at least 1e-06 N/m: set Stiffness"),
    ("stiffness", -5.0, "SYMPLECTIC_EULER", r"'Cloth': Stiffness is -5 N/m"),
    ("substeps", 0, "XPBD", r"'Cloth': Substeps is 0 \(softsim.substeps\), but it must be between 1 and 1000"),
    ("substeps", 10**6, "XPBD", r"'Cloth': Substeps is 1e\+06 \(softsim.substeps\), but it must be between 1 and 1000"),
    ("iterations", 5000, "PBD", r"'Cloth': Iterations is 5000 .* between 1 and 1000"),
    ("damping", -1.0, "XPBD", r"'Cloth': Damping is -1 1/s \(softsim.damping\), but it must be at least 0 1/s"),
    ("mass", float("nan"), "XPBD", r"'Cloth': Mass is nan kg"),
])
def test_settings_stored_out_of_range_are_refused_naming_the_object_and_the_setting(addon, tmp_path, setting, value, solver, message):
    scene, cloth, _ = small_scene(cache_dir=str(tmp_path))
    cloth.softsim.solver = solver
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    shown = evaluated_positions(cloth, 4)
    cloth.softsim[setting] = value  # as a script or an old file can: the property's own limits are bypassed
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.softsim.bake()
    assert np.array_equal(evaluated_positions(cloth, 4), shown)

    assert bpy.ops.softsim.free_bake() == {"FINISHED"}  # live playback: the panel says why, no traceback
    scene.frame_set(1)
    scene.frame_set(2)
    assert cloth.softsim.status.startswith("Error at frame") and f"softsim.{setting}" in cloth.softsim.status


def test_an_object_that_is_no_mesh_is_refused_by_name_and_free_all_still_works(addon):
    scene, cloth, _ = small_scene()
    bpy.ops.object.empty_add()
    empty = bpy.context.object
    empty.name = "Handle"
    empty.softsim.role, empty.softsim.output = "CLOTH", "SHAPE_KEYS"
    with pytest.raises(RuntimeError, match="'Handle' is a empty, not a mesh"):
        bpy.ops.softsim.bake()
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}


def test_substeps_and_iterations_have_upper_limits(addon):
    scene, cloth, _ = small_scene()
    cloth.softsim.substeps = 10**9
    cloth.softsim.iterations = 10**9
    cloth.softsim.newton_max_iterations = 10**9
    assert (cloth.softsim.substeps, cloth.softsim.iterations, cloth.softsim.newton_max_iterations) == (1000, 1000, 1000)


def test_a_body_scaled_to_zero_is_refused_in_bake_and_live_playback(addon, tmp_path):
    scene, cloth, _ = small_scene(cache_dir=str(tmp_path))
    cloth.scale = (1.0, 1.0, 0.0)  # a flat grid scaled flat along its normal keeps no local space
    with pytest.raises(RuntimeError, match=r"'Cloth' is scaled to zero \(world scale 1, 1, 0\).*non-zero Scale"):
        bpy.ops.softsim.bake()
    scene.frame_set(1)
    scene.frame_set(2)
    assert "'Cloth' is scaled to zero" in cloth.softsim.status

    cloth.scale = (1.0, 1.0, 1.0)  # animated to zero at frame 3: the bake stops there
    cloth.keyframe_insert("scale", frame=2)
    cloth.scale = (0.0, 0.0, 0.0)
    cloth.keyframe_insert("scale", frame=3)
    with pytest.raises(RuntimeError, match=r"'Cloth' is scaled to zero at frame 3"):
        bpy.ops.softsim.bake()
    assert cache_file(cloth) is None and os.listdir(tmp_path) == []


def test_free_with_a_read_only_cache_folder_changes_nothing_and_says_why(addon, tmp_path, monkeypatch):
    scene, cloth, _ = small_scene(tmp_path)
    other = add_copy(cloth, "Other")
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    files = {o.name: (cache_file(o), data(cache_file(o))) for o in (cloth, other)}
    cache = str(tmp_path / "cache")
    calls = []

    def read_only(real):
        """``real`` (os.remove, os.replace, ...) refusing, from its second call on, to change anything in the cache
        folder, as a folder made read-only meanwhile does (as root, chmod cannot make it so: simulate it)."""
        def refuse(*paths, **kwargs):
            if any(str(p).startswith(cache) for p in paths if isinstance(p, (str, os.PathLike))):
                calls.append(paths[0])
                if len(calls) == 2:
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), paths[0])
            return real(*paths, **kwargs)
        return refuse

    for name in ("remove", "unlink", "replace", "rename", "mkdir", "rmdir"):
        monkeypatch.setattr(os, name, read_only(getattr(os, name)))
    with pytest.raises(RuntimeError, match=r"'(Cloth|Other)': cannot .*\(Permission denied\): make the Cache Folder .* writable; "
                                           r"nothing was changed"):
        bpy.ops.softsim.free_bake()
    monkeypatch.undo()
    for obj in (cloth, other):
        path, content = files[obj.name]
        assert obj.softsim.is_baked and obj.softsim.status.startswith("Baked") and cache_file(obj) == path and data(path) == content
        assert np.allclose(evaluated_positions(obj, 4), read_pc2(path)[0][-1], atol=1e-6)


def test_user_shape_keys_named_like_bake_keys_are_never_taken_for_them(addon, tmp_path):
    scene, cloth, _ = small_scene(tmp_path)
    cloth.shape_key_add(name="Basis", from_mix=False)
    for name in ("SoftSim f", "SoftSim f12x", "SoftSim f0099", "SoftSim f0003"):
        cloth.shape_key_add(name=name, from_mix=False)
    mine = key_names(cloth)
    cloth.softsim.output = "SHAPE_KEYS"
    with pytest.raises(RuntimeError, match=r"'Cloth': its shape key 'SoftSim f0003' is not one a bake made.*rename that shape key"):
        bpy.ops.softsim.bake()
    assert key_names(cloth) == mine
    cloth.data.shape_keys.key_blocks["SoftSim f0003"].name = "Mine f0003"
    mine = key_names(cloth)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert key_names(cloth) == mine + [f"SoftSim f{f:04d}" for f in range(1, 5)]
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert key_names(cloth) == mine  # 'SoftSim f0099' is outside the baked frames: the user's, kept


def longest_name_bytes():
    """The longest object name [UTF-8 bytes] the running Blender keeps: 255 since Blender 5.0, 63 in 4.2 LTS.
    Measured (a longer name is cut to it) rather than looked up by version."""
    probe = bpy.data.objects.new("x" * 1000, None)
    try:
        return len(probe.name.encode())
    finally:
        bpy.data.objects.remove(probe)


def test_objects_with_names_of_the_longest_length_bake_and_show_tets(addon, tmp_path):
    limit = longest_name_bytes()
    assert limit in (63, 255)
    scene, cloth, _ = small_scene(tmp_path)
    cloth.name = "Ä" * ((limit - 1) // 2) + "x"  # two bytes per Ä in UTF-8: exactly the longest name Blender keeps
    assert len(cloth.name.encode()) == limit
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert len(os.path.basename(cache_file(cloth)).encode()) < 160 and read_pc2(cache_file(cloth))[0].shape[0] == 4
    cloth.softsim.role = "SOLID"  # a flat grid is no solid: the error names it, not the cache folder
    cloth.softsim.tet_resolution = 2
    bpy.context.view_layer.objects.active = cloth
    with pytest.raises(RuntimeError, match=f"'{cloth.name}'"):
        bpy.ops.softsim.tetrahedralize(show_tets=True)
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    block = bpy.context.object
    block.name = "B" * limit
    assert len(block.name) == limit
    block.softsim.role = "SOLID"
    block.softsim.tet_resolution = 2
    assert bpy.ops.softsim.tetrahedralize(show_tets=True) == {"FINISHED"}
    assert [o.softsim.tets_of for o in bpy.data.objects if o.softsim.tets_of] == [block.name]


# --- Behaviour users expect from Blender ---------------------------------------------------------

def test_hidden_and_excluded_objects_take_part_exactly_as_in_blenders_own_physics(addon, tmp_path):
    """Rule (README, measured on Blender's Cloth + Collision in the same bpy): an object in an excluded collection
    or disabled in viewports takes no part; hidden with H (the eye) or from renders, it does."""
    scene, cloth, ball = small_scene(frames=12, cache_dir=str(tmp_path))
    cloth.softsim.pin_group = ""  # free fall onto the sphere (top at 2.7 m) from 3 m
    colliders = bpy.data.collections.new("Colliders")
    scene.collection.children.link(colliders)
    for c in ball.users_collection:
        c.objects.unlink(ball)
    colliders.objects.link(ball)
    layer = bpy.context.view_layer.layer_collection.children["Colliders"]

    def lowest():
        """Height of the cloth's middle at frame 12 (0.5 s: 1.2 m of free fall from 3 m)."""
        assert bpy.ops.softsim.bake() == {"FINISHED"}
        z = evaluated_positions(bpy.data.objects["Cloth"], 12)[12, 2] + cloth.location.z
        assert bpy.ops.softsim.free_bake() == {"FINISHED"}
        return z

    resting = lowest()
    assert resting > 2.6  # held up by the sphere of radius 2.7
    ball.hide_set(True)
    ball.hide_render = True
    assert lowest() == pytest.approx(resting)  # hidden: still collides, as Blender's Collision does
    ball.hide_set(False)
    ball.hide_render = False
    layer.exclude = True
    assert lowest() < 2.0  # excluded collection: falls through
    layer.exclude = False
    ball.hide_viewport = True
    assert lowest() < 2.0  # disabled in viewports: falls through
    ball.hide_viewport = False

    bodies = bpy.data.collections.new("Bodies")  # a body in an excluded collection is not baked, and the report says so
    scene.collection.children.link(bodies)
    other = add_copy(cloth, "Other")
    scene.collection.objects.unlink(other)
    bodies.objects.link(other)
    bpy.context.view_layer.layer_collection.children["Bodies"].exclude = True
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    assert cache_file(cloth) is not None and cache_file(other) is None and not other.softsim.is_baked
    bpy.ops.object.select_all(action="DESELECT")
    for obj in (cloth,):
        obj.select_set(True)
    scene.objects["Cloth"].softsim.role = "NONE"
    with pytest.raises(RuntimeError, match=r"no object taking part has Role Cloth or Solid: 'Other' is in an excluded collection"):
        bpy.ops.softsim.bake()


def test_baking_in_edit_mode_bakes_the_mesh_with_its_edits(addon, tmp_path):
    import bmesh

    scene, cloth, _ = small_scene(cache_dir=str(tmp_path))
    bpy.context.view_layer.objects.active = cloth
    bpy.ops.object.mode_set(mode="EDIT")
    bm = bmesh.from_edit_mesh(cloth.data)
    bm.verts.ensure_lookup_table()
    bm.verts[12].co.z += 0.5  # the middle vertex, edited and not yet out of Edit Mode
    bmesh.update_edit_mesh(cloth.data)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    first = read_pc2(cache_file(cloth))[0][0]
    assert first[12, 2] == pytest.approx(0.5)
    cloth.softsim.output = "SHAPE_KEYS"  # shape keys cannot be changed safely in Edit Mode: refused
    with pytest.raises(RuntimeError, match=r"'Cloth' is in Edit Mode.*leave Edit Mode \(Tab\) and bake again"):
        bpy.ops.softsim.bake()
    bpy.ops.object.mode_set(mode="OBJECT")
    assert cloth.data.vertices[12].co.z == pytest.approx(0.5) and cloth.data.shape_keys is None
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # a shape-key bake is not freed or replaced in Edit Mode either
    bpy.ops.object.mode_set(mode="EDIT")
    keys = shape_key_state(cloth)
    with pytest.raises(RuntimeError, match=r"'Cloth' is in Edit Mode.*and free it again"):
        bpy.ops.softsim.free_bake()
    cloth.softsim.output = "CACHE"
    with pytest.raises(RuntimeError, match=r"'Cloth' is in Edit Mode.*and bake again"):
        bpy.ops.softsim.bake()
    bpy.ops.object.mode_set(mode="OBJECT")
    assert shape_key_state(cloth) == keys and cloth.softsim.baked_output == "SHAPE_KEYS"


def test_a_shape_key_bake_shows_exactly_the_simulation_and_gives_the_users_keys_back(addon):
    scene, cloth, _ = small_scene()
    cloth.shape_key_add(name="Basis", from_mix=False)
    lift = cloth.shape_key_add(name="Lift", from_mix=False)
    co = np.empty(len(lift.data) * 3, np.float32)
    lift.data.foreach_get("co", co)
    co[2::3] += 1.0  # every vertex 1 m up
    lift.data.foreach_set("co", co)
    lift.value = 0.0  # at 0 the key feeds nothing (a key that does: tests/test_blender_fed_bodies.py)
    quiet = cloth.shape_key_add(name="Quiet", from_mix=False)
    quiet.mute = True  # muted by the user: stays muted
    cloth.softsim.output = "SHAPE_KEYS"
    before = shape_key_state(cloth)
    rest_shown = evaluated_positions(cloth, 1)

    assert bpy.ops.softsim.bake() == {"FINISHED"}
    for frame in (2, 4):
        simulated = np.empty(len(cloth.data.vertices) * 3, np.float32)
        cloth.data.shape_keys.key_blocks[f"SoftSim f{frame:04d}"].data.foreach_get("co", simulated)
        assert np.allclose(evaluated_positions(cloth, frame), simulated.reshape(-1, 3), atol=1e-6)
    assert np.allclose(evaluated_positions(cloth, 1)[0], original_positions(cloth)[0], atol=1e-6)  # a pinned vertex, exactly

    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert shape_key_state(cloth) == before
    assert np.allclose(evaluated_positions(cloth, 1), rest_shown)

    scene.frame_set(1)  # live playback shows the simulation alone too
    scene.frame_set(2)
    live = np.empty(len(cloth.data.vertices) * 3, np.float32)
    cloth.data.shape_keys.key_blocks["SoftSim Live"].data.foreach_get("co", live)
    assert np.allclose(evaluated_positions(cloth), live.reshape(-1, 3), atol=1e-6)
    scene.frame_set(1)
    assert shape_key_state(cloth) == before


# --- Esc inside a long frame --------------------------------------------------------------------

class ModalDriver:
    """Drives ``SOFTSIM_OT_bake.modal`` as Blender's event loop would, which background mode cannot: the operator's
    own ``modal``, ``_end`` and ``_report_left_out`` bound to a stand-in for the instance Blender creates, called
    with TIMER and ESC events; the window-only calls (timer removal, status bar, redraw) are stubbed."""

    def __init__(self, job):
        from types import MethodType, SimpleNamespace

        from soft_sim.operators import bake, live

        cls = bake.SOFTSIM_OT_bake
        self.op = SimpleNamespace(job=job, timer=None, selected_only=False, reports=[])
        self.op.report = lambda level, message: self.op.reports.append((set(level), message))
        for name in ("modal", "_end", "_report_left_out"):
            setattr(self.op, name, MethodType(getattr(cls, name), self.op))
        real = bpy.context
        self.context = SimpleNamespace(
            scene=real.scene, view_layer=real.view_layer, evaluated_depsgraph_get=real.evaluated_depsgraph_get,
            window_manager=SimpleNamespace(event_timer_remove=lambda timer: None),
            workspace=SimpleNamespace(status_text_set=lambda text: None), screen=SimpleNamespace(areas=[]))
        live.suspend()  # as invoke() does

    def send(self, kind):
        from types import SimpleNamespace

        return self.op.modal(self.context, SimpleNamespace(type=kind, value="PRESS"))


def test_the_interactive_bake_computes_frames_in_a_worker_so_esc_is_honoured_at_once(addon, tmp_path, monkeypatch):
    import threading
    import time

    from soft_sim import solvers
    from soft_sim.operators import bake, live

    scene, cloth, _ = small_scene(cache_dir=str(tmp_path))
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # the synchronous bake (execute, the command line)
    path, baked = cache_file(cloth), data(cache_file(cloth))

    driver = ModalDriver(bake.BakeJob(bpy.context, [cloth]))  # the interactive bake writes the very same file
    for _ in range(10000):
        result = driver.send("TIMER")
        if result != {"RUNNING_MODAL"}:
            break
        time.sleep(0.001)
    assert result == {"FINISHED"} and cache_file(cloth) == path and data(path) == baked
    assert live._suspended == 0 and not scene.softsim.is_baking

    scene.gravity = (0.0, 0.0, -3.0)
    release = threading.Event()
    real = solvers.advance_frame

    def a_frame_of_20_seconds(*args, **kwargs):
        release.wait(20.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(solvers, "advance_frame", a_frame_of_20_seconds)
    driver = ModalDriver(bake.BakeJob(bpy.context, [cloth]))
    started = time.perf_counter()
    for _ in range(5):  # the frame is still computing: every tick returns at once
        assert driver.send("TIMER") == {"RUNNING_MODAL"} and driver.op.job.computing
        assert driver.send("MOUSEMOVE") == {"PASS_THROUGH"}
    assert driver.send("ESC") == {"CANCELLED"}
    assert time.perf_counter() - started < 1.0
    release.set()
    assert ({"WARNING"}, "Soft Sim: bake cancelled; the previous bake is kept") in driver.op.reports
    assert live._suspended == 0 and scene.frame_current == 1
    assert cache_file(cloth) == path and data(path) == baked and cloth.softsim.is_baked
