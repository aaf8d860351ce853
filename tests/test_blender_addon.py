"""The add-on driven through bpy as a user (or a user's script) would: register, bake, play, free, errors."""
import os

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import cache_file, cache_listing, evaluated_positions, import_addon, lab_scene, original_positions  # noqa: E402

import solvers  # noqa: E402  (the pure engine, to recompute what the solver must have produced)
from solvers.cache import read_pc2  # noqa: E402


HANDLER_LISTS = ("frame_change_post", "load_post", "undo_post", "redo_post", "save_pre", "save_post", "save_post_fail")


def our_handlers():
    return sorted(f"{name}:{h.__name__}" for name in HANDLER_LISTS for h in getattr(bpy.app.handlers, name, ())
                  if h.__module__.startswith("soft_sim"))


def test_register_and_unregister_twice_leave_nothing_behind():
    module = import_addon()
    for _ in range(2):
        module.register()
        assert hasattr(bpy.types.Object, "softsim") and hasattr(bpy.types.Scene, "softsim")
        expected = ["frame_change_post:on_frame_change_post", "load_post:on_load_post", "load_post:on_load_post",
                    "redo_post:on_undo_redo", "save_post:on_save_post", "save_post:reattach_live_after_save",
                    "save_post_fail:reattach_live_after_save", "save_pre:detach_live_before_save", "undo_post:on_undo_redo"]
        assert our_handlers() == [h for h in expected if hasattr(bpy.app.handlers, h.split(":")[0])]
        assert hasattr(bpy.types, "SOFTSIM_OT_bake")
        module.unregister()
        assert not hasattr(bpy.types.Object, "softsim") and not hasattr(bpy.types.Scene, "softsim")
        assert our_handlers() == []
        assert not hasattr(bpy.types, "SOFTSIM_OT_bake")
        assert not hasattr(bpy.types, "PHYSICS_PT_softsim")


def test_enabling_the_add_on_warms_up_the_native_library_in_the_background():
    """register() starts loading the library and self-testing what a cloth's first bake binds, off the main thread."""
    if os.environ.get("SOFTSIM_COMPUTE", "").upper() == "NUMPY":
        pytest.skip("Compute forced to NumPy in this process: nothing to warm up")
    module = import_addon()
    module.register()
    try:
        from soft_sim.solvers.native import library

        threads = list(library._WARM_UP)
        assert threads and threads[0].name == "softsim-native-warm-up"
        threads[0].join()
        loaded = library.load()  # None only where the library is missing or refused (status() says why)
        assert loaded is None or set(library.WARM_UP_FAMILIES) <= set(loaded.verdicts)
    finally:
        module.unregister()


def engine_frames(cloth, sphere, scene):
    """What the solver must produce for the lab scene: the pure engine run on the same arrays, local space."""
    n = len(cloth.data.vertices)
    local = original_positions(cloth)
    matrix = np.array(cloth.matrix_world)
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    edges = np.empty(len(cloth.data.edges) * 2, np.int32)
    cloth.data.edges.foreach_get("vertices", edges)
    from soft_sim.operators.bridge import read_triangles  # quads split along the shorter diagonal, as the bake does

    tris = read_triangles(cloth.data, world)
    pinned = np.zeros(n, bool)
    pinned[[0, int(round(np.sqrt(n))) - 1]] = True
    model = solvers.build_model(world, edges.reshape(-1, 2), tris.reshape(-1, 3), pinned=pinned, total_mass=cloth.softsim.mass)
    s = cloth.softsim
    config = solvers.SolverConfig(
        solver=s.solver, constraint_scheme=s.constraint_scheme, substeps=s.substeps, iterations=s.iterations,
        stiffness=s.stiffness, damping=s.damping, gravity=tuple(scene.gravity),
        tether_stretch=s.tether_stretch if s.use_tethers else None,
    )
    sim = solvers.make_solver(model, config)
    state = solvers.State.at_rest(model)
    colliders = [solvers.Sphere(np.array(sphere.location), 0.5 * max(sphere.dimensions), 0.0, sphere.softsim.friction)]
    frames = [local]
    for _ in range(scene.frame_end - scene.frame_start):
        solvers.advance_frame(sim, state, 1.0 / 24.0, config.substeps, colliders, world)
        frames.append((state.x - matrix[:3, 3]) @ np.linalg.inv(matrix[:3, :3]).T)
    return frames


@pytest.mark.parametrize("output", ["CACHE", "SHAPE_KEYS"])
def test_bake_shows_exactly_what_the_solver_produced(addon, output):
    scene, cloth, sphere = lab_scene()
    cloth.softsim.output = output
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    expected = engine_frames(cloth, sphere, scene)
    for frame in range(scene.frame_start, scene.frame_end + 1):
        shown = evaluated_positions(cloth, frame)
        assert np.allclose(shown, expected[frame - scene.frame_start], atol=1e-4), frame
    # The cloth fell onto the sphere and did not go through it.
    world = shown @ np.array(cloth.matrix_world)[:3, :3].T + np.array(cloth.matrix_world)[:3, 3]
    assert world[:, 2].min() < 2.0
    assert np.linalg.norm(world, axis=1).min() > 2.7 - 1e-4
    assert np.array_equal(original_positions(cloth), expected[0])  # the original mesh is never overwritten
    if output == "CACHE":
        modifier = cloth.modifiers[0]
        assert modifier.type == "MESH_CACHE" and modifier.cache_format == "PC2" and modifier.time_mode == "FRAME"
        assert os.path.dirname(cache_file(cloth)) == os.path.normpath(scene.softsim.cache_dir)
        frames, start, _ = read_pc2(cache_file(cloth))
        assert frames.shape == (scene.frame_end, len(cloth.data.vertices), 3) and start == scene.frame_start
    else:
        assert len(cloth.data.shape_keys.key_blocks) == 1 + scene.frame_end


def test_a_bake_keeps_to_the_scenes_thread_setting(addon):
    """Render > Performance > Threads (``blender -t N`` on a farm) caps the native kernels' threads."""
    from soft_sim.solvers.native import threads

    scene, cloth, sphere = lab_scene()
    scene.render.threads_mode = "FIXED"
    scene.render.threads = 1
    try:
        assert bpy.ops.softsim.bake() == {"FINISHED"}
        assert threads._limit == 1 and (threads.thread_count() == 1 or os.environ.get(threads.ENVIRONMENT_VARIABLE))
        scene.render.threads_mode = "AUTO"
        assert bpy.ops.softsim.bake() == {"FINISHED"}
        assert threads._limit == scene.render.threads >= 1
    finally:
        threads.set_limit(None)


def test_free_bake_restores_the_original_mesh(addon):
    scene, cloth, _ = lab_scene(frames=6)
    before = original_positions(cloth)
    for output in ("CACHE", "SHAPE_KEYS"):
        cloth.softsim.output = output
        bpy.ops.softsim.bake()
        path = cache_file(cloth)
        assert (path is not None and os.path.isfile(path)) == (output == "CACHE")
        assert not np.allclose(evaluated_positions(cloth, 6), before)
        assert bpy.ops.softsim.free_bake() == {"FINISHED"}
        assert len(cloth.modifiers) == 0 and cloth.data.shape_keys is None
        assert np.array_equal(evaluated_positions(cloth, 6), before)
        assert cache_listing(scene.softsim.cache_dir) == []


def test_saved_blend_plays_the_bake_back(addon, tmp_path):
    scene, cloth, _ = lab_scene(frames=8, cache_dir="//cache")
    path = str(tmp_path / "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    for output in ("CACHE", "SHAPE_KEYS"):
        bpy.ops.wm.open_mainfile(filepath=path)
        cloth = bpy.data.objects["Cloth"]
        cloth.softsim.output = output
        assert bpy.ops.softsim.bake() == {"FINISHED"}
        if output == "CACHE":
            assert os.path.dirname(cache_file(cloth)) == str(tmp_path / "cache") and os.path.isfile(cache_file(cloth))
        else:
            assert cache_file(cloth) is None and not any(n.endswith(".pc2") for n in os.listdir(tmp_path / "cache"))
        baked = [evaluated_positions(cloth, f) for f in range(1, 9)]
        bpy.ops.wm.save_mainfile()
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.wm.open_mainfile(filepath=path)
        cloth = bpy.data.objects["Cloth"]
        for f in range(1, 9):
            assert np.allclose(evaluated_positions(cloth, f), baked[f - 1], atol=1e-6)
        bpy.ops.softsim.free_bake()
        bpy.ops.wm.save_mainfile()


def test_live_playback_simulates_scrubs_and_resets(addon):
    scene, cloth, sphere = lab_scene(frames=10)
    expected = engine_frames(cloth, sphere, scene)
    scene.frame_set(1)
    for frame in range(2, 11):
        scene.frame_set(frame)
        assert np.allclose(evaluated_positions(cloth), expected[frame - 1], atol=1e-4)
    assert np.allclose(evaluated_positions(cloth, 4), expected[3], atol=1e-4)  # scrubbing back shows memory
    assert np.allclose(evaluated_positions(cloth, 1), expected[0])  # the start frame resets
    assert cloth.data.shape_keys is None
    scene.frame_set(2)
    assert np.allclose(evaluated_positions(cloth), expected[1], atol=1e-4)
    assert bpy.ops.softsim.reset() == {"FINISHED"}
    assert cloth.data.shape_keys is None


def test_animated_sphere_and_animated_pins_are_followed(addon):
    scene, cloth, sphere = lab_scene(frames=24)
    sphere.location = (0.0, 0.0, -1.0)
    sphere.keyframe_insert("location", frame=1)
    sphere.location = (0.0, 0.0, 1.0)
    sphere.keyframe_insert("location", frame=24)
    cloth.location = (0.0, 0.0, 3.0)
    cloth.keyframe_insert("location", frame=1)
    cloth.location = (2.0, 0.0, 3.0)
    cloth.keyframe_insert("location", frame=24)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest = original_positions(cloth)
    for frame in range(1, 25):
        local = evaluated_positions(cloth, frame)
        matrix = np.array(cloth.matrix_world)
        world = local @ matrix[:3, :3].T + matrix[:3, 3]
        # Pins stay where the animated object puts them (local space is constant for them).
        assert np.allclose(local[[0, 10]], rest[[0, 10]], atol=1e-5)
        centre = np.array(sphere.matrix_world.translation)
        assert np.linalg.norm(world - centre, axis=1).min() > 2.7 - 1e-4, frame


def expect_error(match, **kwargs):
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.softsim.bake(**kwargs)


def test_bad_input_gives_a_clear_error_and_keeps_the_previous_bake(addon, tmp_path):
    scene, cloth, _ = lab_scene(frames=5)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    path = cache_file(cloth)
    with open(path, "rb") as f:
        good = f.read()
    shown = evaluated_positions(cloth, 5)

    cloth.softsim.pin_group = "Nope"
    expect_error("'Cloth'.*pin group 'Nope' does not exist")
    cloth.softsim.pin_group = "Pins"

    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    scene.softsim.cache_dir = str(blocker / "cache")
    expect_error("cannot write the cache folder")
    scene.softsim.cache_dir = os.path.dirname(path)

    scene.gravity = (0.0, 0.0, -1.0e7)  # nothing survives this: the bake must stop, not write NaN
    expect_error("'Cloth' became unstable at frame 2.*Raise Substeps")
    scene.gravity = (0.0, 0.0, -9.81)

    assert cache_file(cloth) == path
    with open(path, "rb") as f:
        assert f.read() == good
    assert np.array_equal(evaluated_positions(cloth, 5), shown)

    bpy.ops.object.empty_add()
    bpy.context.object.name = "Empty"
    bpy.context.object.softsim.role = "CLOTH"
    expect_error("'Empty' is a empty, not a mesh")
    bpy.context.object.softsim.role = "NONE"

    mesh = bpy.data.meshes.new("Points")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0)], [], [])
    points = bpy.data.objects.new("Points", mesh)
    scene.collection.objects.link(points)
    points.softsim.role = "CLOTH"
    expect_error("'Points' has no edges")
    points.softsim.role = "NONE"

    bpy.ops.wm.read_homefile(use_empty=True)
    expect_error("no object has Role Cloth or Solid")


def test_unsaved_file_with_relative_cache_folder_is_refused(addon):
    scene, cloth, _ = lab_scene(frames=3, cache_dir="//softsim_cache")
    expect_error("not saved yet")
    cloth.softsim.output = "SHAPE_KEYS"  # shape keys need no folder
    assert bpy.ops.softsim.bake() == {"FINISHED"}


def test_the_solver_menu_offers_every_registry_solver_and_nothing_else(addon):
    scene, cloth, _ = lab_scene(frames=3)
    for name in solvers.SOLVERS:
        cloth.softsim.solver = name
        assert cloth.softsim.solver == name
    with pytest.raises(TypeError):
        cloth.softsim.solver = "NOT_A_SOLVER"


MASS_SPRING_SETTINGS = {
    # solver: (stiffness N/m, damping 1/s); substeps come from the add-on's own stability estimate
    "EXPLICIT_EULER": (20.0, 5.0),
    "SYMPLECTIC_EULER": (1000.0, 0.5),
    "IMPLICIT_EULER": (10000.0, 0.1),
}


@pytest.mark.parametrize("solver", sorted(MASS_SPRING_SETTINGS))
def test_mass_spring_solvers_bake_the_lab_scene(addon, solver):
    from soft_sim.operators.simulation import explicit_stability_estimate

    scene, cloth, sphere = lab_scene(frames=12)
    s = cloth.softsim
    s.solver = solver
    s.stiffness, s.damping = MASS_SPRING_SETTINGS[solver]
    if solver == "IMPLICIT_EULER":
        s.substeps = 2
    else:
        limit, needed = explicit_stability_estimate(cloth, scene)
        assert 0.0 < limit < 1.0 / 24.0
        s.substeps = needed
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    rest = original_positions(cloth)
    matrix = np.array(cloth.matrix_world)
    for frame in range(1, 13):
        local = evaluated_positions(cloth, frame)
        assert np.all(np.isfinite(local))
        assert np.allclose(local[[0, 10]], rest[[0, 10]], atol=1e-6)
        world = local @ matrix[:3, :3].T + matrix[:3, 3]
        assert np.linalg.norm(world, axis=1).min() > 2.7 - 1e-4
    assert evaluated_positions(cloth, 12)[:, 2].min() < -0.5  # it fell and draped


def test_explicit_euler_past_its_limit_is_stopped_with_advice(addon):
    scene, cloth, _ = lab_scene(frames=24)
    assert bpy.ops.softsim.bake() == {"FINISHED"}  # an earlier good bake, to be kept
    cloth.softsim.solver = "SYMPLECTIC_EULER"
    cloth.softsim.substeps = 2
    expect_error(r"'Cloth' became unstable at frame \d+.*symplectic Euler is stable only for steps up to .*raise Substeps to at least \d+")
    assert cloth.modifiers[0].type == "MESH_CACHE"
    assert np.all(np.isfinite(evaluated_positions(cloth, 24)))


def test_games103_lab_preset_is_the_lab_and_bakes_plays_and_frees(addon, tmp_path):
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 30
    scene.softsim.cache_dir = str(tmp_path)
    assert bpy.ops.softsim.add_games103_lab() == {"FINISHED"}
    cloth, sphere = bpy.data.objects["Lab Cloth"], bpy.data.objects["Lab Sphere"]
    s = cloth.softsim
    assert len(cloth.data.vertices) == 441 and len(cloth.data.polygons) == 800
    assert (s.solver, s.constraint_scheme, s.iterations, s.substeps, s.jacobi_relaxation) == ("PBD", "JACOBI", 32, 1, pytest.approx(0.2))
    assert np.exp(-s.damping * 0.0333) == pytest.approx(0.99)
    assert scene.render.fps == 30 and 0.5 * max(sphere.dimensions) == pytest.approx(2.7, rel=1e-3)
    rest = original_positions(cloth)
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    matrix = np.array(cloth.matrix_world)
    for frame in range(1, 31):
        local = evaluated_positions(cloth, frame)
        assert np.array_equal(local[[0, 20]], rest[[0, 20]])
        world = local @ matrix[:3, :3].T + matrix[:3, 3]
        assert np.linalg.norm(world - np.array(sphere.location), axis=1).min() > 2.7 - 1e-4
    assert world[:, 2].min() < 0.0  # it fell around the sphere
    assert bpy.ops.softsim.free_bake() == {"FINISHED"}
    assert np.array_equal(evaluated_positions(cloth, 30), rest)


def test_changing_a_setting_mid_playback_stops_the_stale_live_simulation(addon):
    scene, cloth, _ = lab_scene(frames=10)
    for frame in range(1, 5):
        scene.frame_set(frame)
    cloth.softsim.stiffness = 500.0
    assert "Settings changed" in cloth.softsim.status
    shown = evaluated_positions(cloth)
    scene.frame_set(5)  # no longer simulated with the old settings
    assert np.array_equal(evaluated_positions(cloth), shown)
    scene.frame_set(1)
    for frame in range(2, 6):
        scene.frame_set(frame)
    assert cloth.softsim.status.startswith("frame 5")


@pytest.mark.parametrize("output", ["CACHE", "SHAPE_KEYS"])
def test_bake_of_a_frame_range_not_starting_at_one(addon, output):
    scene, cloth, sphere = lab_scene(frames=16)
    scene.frame_start = 10
    cloth.softsim.output = output
    assert bpy.ops.softsim.bake() == {"FINISHED"}
    expected = engine_frames(cloth, sphere, scene)
    assert len(expected) == 7
    for frame in range(10, 17):
        assert np.allclose(evaluated_positions(cloth, frame), expected[frame - 10], atol=1e-4), frame
    assert np.allclose(evaluated_positions(cloth, 5), expected[0], atol=1e-6)  # before the range: the rest shape
