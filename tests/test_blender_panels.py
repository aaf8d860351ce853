"""The panels draw for every role and solver without error, and only name properties that exist."""
import types

import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import lab_scene  # noqa: E402
from solvers import AVAILABLE_SOLVERS, REGISTRY  # noqa: E402


class FakeLayout:
    """Records what a panel draws; checks every property it names exists on its data."""

    def __init__(self, log):
        self.log = log
        self.use_property_split = self.enabled = self.active = True

    def _child(self, *args, **kwargs):
        return FakeLayout(self.log)

    row = column = box = split = _child

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, f"no property {name!r} on {data}"
        self.log.append(("prop", name))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        assert name in data.bl_rna.properties and hasattr(search_data, search_name)
        self.log.append(("prop_search", name))

    def label(self, text="", **kwargs):
        self.log.append(("label", text))

    def operator(self, idname, **kwargs):
        category, name = idname.split(".")
        assert hasattr(getattr(bpy.types, f"{category.upper()}_OT_{name}"), "bl_idname"), idname
        self.log.append(("operator", idname))
        return types.SimpleNamespace()

    def progress(self, **kwargs):
        self.log.append(("progress", kwargs.get("text")))

    def separator(self, **kwargs):
        pass


def draw_all(addon, obj, scene):
    log = []
    context = types.SimpleNamespace(object=obj, scene=scene)
    for panel in addon.ui.panels.classes:
        if panel.poll(context):
            panel.draw(types.SimpleNamespace(layout=FakeLayout(log), draw_stability=panel.__dict__.get("draw_stability")), context)
    return log


@pytest.mark.parametrize("solver", AVAILABLE_SOLVERS)
def test_body_panels_draw_every_solver(addon, solver):
    scene, cloth, sphere = lab_scene(frames=3)
    cloth.softsim.solver = solver
    cloth.softsim.constraint_scheme = "JACOBI"
    log = draw_all(addon, cloth, scene)
    names = [name for kind, name in log if kind in ("prop", "prop_search")]
    assert {"role", "solver", "substeps", "mass", "mass_distribution", "damping", "pin_group", "output", "cache_dir"} <= set(names)
    assert ("stiffness" in names) == (solver != "PBD")  # PBD's edges are hard constraints
    assert ("linear_solver" in names) == ("linear_tolerance" in names) == (solver == "IMPLICIT_EULER")
    assert ("constraint_scheme" in names) == (solver in ("PBD", "XPBD"))
    assert ("newton_tolerance" in names) == ("newton_max_iterations" in names) == (solver == "NEWTON")
    assert ("bending_stiffness" in names) == ("bending_stiffness" in REGISTRY[solver].settings)
    assert ("operator", "softsim.bake") in log
    if solver in ("EXPLICIT_EULER", "SYMPLECTIC_EULER"):
        assert any(kind == "label" and ("Stable substep" in text or "Unstable" in text) for kind, text in log)
    scene.softsim.is_baking = True
    assert any(kind == "progress" for kind, _ in draw_all(addon, cloth, scene))
    assert "internal_damping" not in names  # a cloth has no internal damping


@pytest.mark.parametrize("solver", AVAILABLE_SOLVERS)
def test_solid_panel_shows_the_material_and_internal_damping_where_the_solver_reads_it(addon, solver):
    """Every solver's solid is the Young's modulus / Poisson's ratio material (PBD's too: its tet constraints are
    compliant); Internal Damping only where the solver implements it (PBD, XPBD)."""
    scene, cloth, sphere = lab_scene(frames=3)
    sphere.softsim.role = "SOLID"
    sphere.softsim.solver = solver
    names = [name for kind, name in draw_all(addon, sphere, scene) if kind in ("prop", "prop_search")]
    assert {"youngs_modulus", "poisson_ratio"} <= set(names)
    assert ("internal_damping" in names) == (solver in ("PBD", "XPBD"))


def test_collider_panel_shows_its_settings(addon):
    scene, _, sphere = lab_scene(frames=3)
    log = draw_all(addon, sphere, scene)
    assert ("prop", "thickness") in log and ("prop", "friction") in log
    assert any(kind == "label" and "Radius 2.700 m" in text for kind, text in log)
