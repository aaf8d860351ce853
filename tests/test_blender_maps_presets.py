"""Soft pins, stiffness and bending groups and material presets driven through bpy as a user would."""
import os
import tempfile

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import evaluated_positions  # noqa: E402

G = 9.81


def new_scene(frames=48):
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.softsim.cache_dir = tempfile.mkdtemp(prefix="softsim-cache-")
    return scene


def pinned_plane(solver="XPBD", pin_stiffness=50.0, mass=0.4):
    """A 4-vertex plane, all its vertices in the pin group 'Pins', the same mass on each."""
    bpy.ops.mesh.primitive_plane_add(size=0.2, location=(0.0, 0.0, 1.0))
    obj = bpy.context.object
    obj.vertex_groups.new(name="Pins").add(list(range(4)), 1.0, "REPLACE")
    s = obj.softsim
    s.role, s.solver, s.pin_group, s.pin_stiffness = "CLOTH", solver, "Pins", pin_stiffness
    s.mass, s.mass_distribution, s.damping = mass, "UNIFORM", 4.0
    return obj


@pytest.mark.parametrize("solver", ["XPBD", "IMPLICIT_EULER"])
def test_soft_pins_hang_m_g_over_k_below_the_rig(addon, solver):
    """Each vertex (0.1 kg) on a soft pin of 50 N/m rests m g / k = 19.6 mm below where the object puts it (1%)."""
    new_scene()
    obj = pinned_plane(solver)
    bpy.ops.softsim.bake()
    rest = evaluated_positions(obj, 1)
    sag = rest[:, 2] - evaluated_positions(obj, 48)[:, 2]
    assert np.allclose(sag, 0.1 * G / 50.0, rtol=0.01), sag


def test_pin_stiffness_zero_keeps_hard_pins_exact(addon):
    new_scene(12)
    obj = pinned_plane(pin_stiffness=0.0)
    bpy.ops.softsim.bake()
    assert np.allclose(evaluated_positions(obj, 12), evaluated_positions(obj, 1), atol=1e-6)


def test_bad_settings_and_missing_groups_are_refused_naming_object_and_setting(addon):
    new_scene(4)
    obj = pinned_plane()
    obj.name = "Flag"
    obj.softsim["pin_stiffness"] = -5.0
    with pytest.raises(RuntimeError, match=r"'Flag'.*Pin Stiffness.*softsim\.pin_stiffness"):
        bpy.ops.softsim.bake()
    obj.softsim.pin_stiffness = 10.0
    for setting in ("stiffness_group", "bending_group"):
        setattr(obj.softsim, setting, "Nowhere")
        label = setting.replace("_", " ")
        with pytest.raises(RuntimeError, match=rf"'Flag': the {label} 'Nowhere' does not exist \(softsim\.{setting}\)"):
            bpy.ops.softsim.bake()
        setattr(obj.softsim, setting, "")


def test_panel_offers_the_maps_where_the_solver_reads_them(addon):
    import importlib

    bridge = importlib.import_module(addon.__name__ + ".operators.bridge")
    new_scene(4)
    obj = pinned_plane()
    offered = bridge.settings_offered(obj.softsim)
    assert {"stiffness_group", "bending_group", "pin_stiffness"} <= offered
    assert "tether_stretch" not in bridge.settings_read(obj.softsim)  # tethers run from hard pins only
    obj.softsim.solver = "PBD"  # hard edges: no stiffness to map
    assert "stiffness_group" not in bridge.settings_offered(obj.softsim)
    obj.softsim.pin_group = ""
    assert "pin_stiffness" not in bridge.settings_offered(obj.softsim)


def test_new_settings_are_stored_with_the_blend(addon):
    new_scene(4)
    obj = pinned_plane(pin_stiffness=123.0)
    obj.softsim.stiffness_group, obj.softsim.bending_group = "Pins", "Pins"
    name = obj.name
    path = os.path.join(tempfile.mkdtemp(prefix="softsim-blend-"), "maps.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    s = bpy.data.objects[name].softsim
    assert (s.pin_stiffness, s.stiffness_group, s.bending_group) == (123.0, "Pins", "Pins")


def test_stiffness_group_reaches_the_model(addon):
    import importlib

    simulation = importlib.import_module(addon.__name__ + ".operators.simulation")
    new_scene(4)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0)
    obj = bpy.context.object
    obj.softsim.role, obj.softsim.stiffness = "CLOTH", 1000.0
    left = [v.index for v in obj.data.vertices if v.co.x < 0.0]
    obj.vertex_groups.new(name="Stiff").add(left, 1.0, "REPLACE")
    obj.softsim.stiffness_group = "Stiff"
    model, *_ = simulation.build_body(obj, np.eye(4), bpy.context.scene)
    solvers = importlib.import_module(addon.__name__ + ".solvers.material")
    k = solvers.material_arrays(model, simulation.config_from_settings(obj.softsim, bpy.context.scene)).edge_stiffness
    w = np.isin(np.arange(len(obj.data.vertices)), left).astype(float)
    expected = 1000.0 * (0.01 + 0.99 * 0.5 * (w[model.edge_indices[:, 0]] + w[model.edge_indices[:, 1]]))
    assert np.allclose(k, expected)


def test_cloth_presets_set_physical_values(addon):
    new_scene(4)
    bpy.ops.mesh.primitive_plane_add(size=2.0)
    obj = bpy.context.object
    obj.scale = (1.5, 1.0, 1.0)  # the evaluated (world) area: 6 m^2
    obj.softsim.role = "CLOTH"
    values = {}
    for preset in ("SILK", "COTTON", "DENIM", "LEATHER", "RUBBER"):
        bpy.ops.softsim.apply_preset(preset=preset)
        s = obj.softsim
        values[preset] = (s.mass / 6.0, s.bending_stiffness, s.stiffness, s.air_drag)
    assert values["DENIM"][0] > values["COTTON"][0] > values["SILK"][0]
    assert values["DENIM"][1] > 10 * values["SILK"][1]
    assert values["DENIM"][0] == pytest.approx(0.45, rel=1e-6)  # mass = areal density x area
    assert all(0.03 < v[0] < 1.5 and 1e-7 < v[1] < 1e-2 and v[2] > 0 and v[3] > 0 for v in values.values())


def test_solid_presets_weigh_the_volume_and_refuse_the_wrong_role(addon):
    new_scene(4)
    bpy.ops.mesh.primitive_cube_add(size=0.2)
    cube = bpy.context.object
    cube.name = "Block"
    cube.softsim.role = "SOLID"
    bpy.ops.softsim.apply_preset(preset="JELLY")
    assert cube.softsim.mass == pytest.approx(1050.0 * 0.008, rel=1e-4)
    assert cube.softsim.youngs_modulus == pytest.approx(1e4)
    bpy.ops.softsim.apply_preset(preset="RUBBER")  # the solid rubber
    assert cube.softsim.youngs_modulus == pytest.approx(2e6)
    mass = cube.softsim.mass
    with pytest.raises(RuntimeError, match="'Block': Denim is a Cloth preset and it is a Solid body"):
        bpy.ops.softsim.apply_preset(preset="DENIM")
    assert cube.softsim.mass == mass
    cube.softsim.role = "GROUND"
    with pytest.raises(RuntimeError, match="'Block': material presets are for Cloth and Solid bodies"):
        bpy.ops.softsim.apply_preset(preset="JELLY")
