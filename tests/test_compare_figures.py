"""The figures tools/compare.py (and so `make demo` and bench/bench_shots.py) reports for a cloth on a box."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("bpy")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))


@pytest.fixture(scope="module")
def compare(addon):
    import compare

    return compare


LOW, HIGH = np.array([-1.0, -1.0, 0.0]), np.array([1.0, 1.0, 0.5])


def sheet(z_of_xy, n=21, size=3.0):
    """An n x n grid of triangles over [-size/2, size/2]^2 (shifted 1.3 cm along x so that no box corner lies on a
    triangle's border, where a crossing is a touch) at heights z_of_xy(x, y): (x (n*n, 3), triangles)."""
    x, y = np.meshgrid(np.linspace(-size / 2, size / 2, n) + 0.013, np.linspace(-size / 2, size / 2, n))
    points = np.stack([x.ravel(), y.ravel(), z_of_xy(x, y).ravel()], axis=1)
    i = np.arange(n * n).reshape(n, n)
    quads = np.stack([i[:-1, :-1], i[:-1, 1:], i[1:, 1:], i[1:, :-1]], axis=-1).reshape(-1, 4)
    return points, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def test_a_sheet_resting_above_the_box_is_neither_inside_nor_crossed(compare):
    x, tris = sheet(lambda x, y: np.full_like(x, 0.51))
    assert compare.box_figures(x, tris, LOW, HIGH) == (0.0, 0)


def test_a_sheet_sunk_into_the_box_has_its_depth_and_the_box_edges_through_it(compare):
    x, tris = sheet(lambda x, y: np.full_like(x, 0.4))  # 10 cm below the top: 4 vertical box edges pierce it
    depth, crossings = compare.box_figures(x, tris, LOW, HIGH)
    assert depth == pytest.approx(0.1)
    assert crossings == 4
    # Draped over the top edge y = 1 and then sagging 3 cm into the box: the top edges along x pierce it.
    x, tris = sheet(lambda x, y: np.where(np.abs(y) < 0.9, 0.47, 0.6 - 0.2 * (np.abs(y) - 0.9)))
    depth, crossings = compare.box_figures(x, tris, LOW, HIGH)
    assert depth == pytest.approx(0.03)
    assert crossings >= 2


def test_the_builtin_bake_is_timed_without_a_live_soft_sim_run_in_it(compare, monkeypatch, tmp_path):
    """The built-in bake steps through every frame; an unbaked Soft Sim cloth in the scene would simulate live on each
    of them and its cost would be counted as built-in Cloth's (both bakes then timed the same)."""
    import bpy

    seen = []
    bake_builtin = compare._bake_builtin

    def spying(scene, cloth, cache):
        seen.extend(obj.name for obj in scene.objects if obj.softsim.role != "NONE")
        return bake_builtin(scene, cloth, cache)

    monkeypatch.setattr(compare, "_bake_builtin", spying)
    scene, ours, builtin, figures = compare.bake_pair(lambda scene: compare.build_box(scene, with_box=False, n=5), 3,
                                                      str(tmp_path), None)
    assert seen == []
    assert ours.softsim.role == "CLOTH" and ours.softsim.is_baked and builtin.modifiers["Cloth"].point_cache.is_baked
    assert bpy.data.objects["Soft Sim Box Ground"].softsim.role == "GROUND"
    assert figures["ours"]["seconds"] > 0.0 and figures["builtin"]["seconds"] > 0.0


def test_the_sheet_in_the_wind_is_blown_along_the_wind(compare, tmp_path):
    """The bench's wind shot: Soft Sim's sheet, pinned by its top row, swings downwind (+Y) under the scene's Wind
    field and its pins stay put."""
    import bpy

    scene, ours, _, figures = compare.bake_pair(compare.build_sheet, 12, str(tmp_path), None)
    scene.frame_set(12)
    mesh = ours.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    y = np.array([v.co.y for v in mesh.vertices])
    assert y.max() > 0.2  # [m] the free edge blown downwind (it starts at y = 0)
    assert figures["ours"]["pin_error_mm"] < 1e-3
