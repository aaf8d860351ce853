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


@pytest.mark.parametrize("solver", [name for name in AVAILABLE_SOLVERS if "SOLID" in REGISTRY[name].roles])
def test_solid_panel_shows_the_material_and_internal_damping_where_the_solver_reads_it(addon, solver):
    """Every solver's solid is the Young's modulus / Poisson's ratio material (PBD's too: its tet constraints are
    compliant); Internal Damping only where the solver implements it (PBD, XPBD, PROJECTIVE)."""
    scene, cloth, sphere = lab_scene(frames=3)
    sphere.softsim.role = "SOLID"
    sphere.softsim.solver = solver
    names = [name for kind, name in draw_all(addon, sphere, scene) if kind in ("prop", "prop_search")]
    assert {"youngs_modulus", "poisson_ratio"} <= set(names)
    assert ("internal_damping" in names) == (solver in ("PBD", "XPBD", "PROJECTIVE"))


def test_collider_panel_shows_its_settings(addon):
    scene, _, sphere = lab_scene(frames=3)
    log = draw_all(addon, sphere, scene)
    assert ("prop", "thickness") in log and ("prop", "friction") in log
    assert any(kind == "label" and "Radius 2.700 m" in text for kind, text in log)


@pytest.mark.parametrize("role", ["CLOTH", "SOLID"])
def test_the_panel_shows_exactly_the_numbers_the_bake_checks(addon, role):
    """One source of rules: every number the bake checks for a role and solver is on the panel, and no other."""
    from soft_sim.operators.bridge import _CHECKED, settings_offered

    scene, cloth, sphere = lab_scene(frames=3)
    body = cloth if role == "CLOTH" else sphere
    body.softsim.role = role
    for solver in [name for name in AVAILABLE_SOLVERS if role in REGISTRY[name].roles]:
        body.softsim.solver = solver
        body.softsim.constraint_scheme = "JACOBI"
        shown = {name for kind, name in draw_all(addon, body, scene) if kind in ("prop", "prop_search")}
        checked = settings_offered(body.softsim) & set(_CHECKED)
        assert shown & set(_CHECKED) == checked, solver


def test_the_solver_menu_of_a_solid_offers_only_the_solvers_serving_solids(addon):
    scene, cloth, sphere = lab_scene(frames=3)
    sphere.softsim.role = "SOLID"
    # A dynamic enum lists its items only through its callback (bl_rna's enum_items is empty without a context).
    solid_menu = [item[0] for item in addon.ui.properties._solver_items(sphere.softsim, bpy.context)]
    cloth_menu = [item[0] for item in addon.ui.properties._solver_items(cloth.softsim, bpy.context)]
    assert solid_menu == ["IMPLICIT_EULER", "PBD", "XPBD", "PROJECTIVE", "NEWTON"]
    assert cloth_menu == list(AVAILABLE_SOLVERS)
    for name in ("EXPLICIT_EULER", "SYMPLECTIC_EULER"):
        with pytest.raises(TypeError, match="not found"):
            sphere.softsim.solver = name
        cloth.softsim.solver = name
        assert cloth.softsim.solver == name


def test_a_solid_holding_a_solver_that_does_not_serve_solids_draws_why(addon):
    scene, cloth, sphere = lab_scene(frames=3)
    sphere.softsim.role = "SOLID"
    sphere.softsim["solver"] = REGISTRY["SYMPLECTIC_EULER"].number  # as an older file stored it
    log = draw_all(addon, sphere, scene)
    assert any(kind == "label" and "Symplectic Euler does not serve solids" in text for kind, text in log)
