"""Pressure, sewing and shrinking driven through bpy as a user would: a balloon dropped on the ground, two panels sewn
together, a shrunk cloth, and the refusals."""

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import evaluated_positions, ground_scene  # noqa: E402

FRAMES = 48
PRESSURE = 1000.0  # Pa
# A fabric-like membrane: a closed triangulated sphere is a geodesic dome that holds its shape without air unless its
# edges give and it folds easily (at 1e4 N/m and 1e-3 N m a 2-subdivision ico sphere kept 98% of its volume in XPBD).
STIFFNESS = 1000.0  # N/m
BENDING = 1e-5  # N m


def new_scene(frames=FRAMES):
    return ground_scene(frames)


def balloon(name, solver, pressure, height=1.5, radius=0.5):
    """A closed cloth ico sphere (Blender's Add > Ico Sphere, 3 subdivisions: 642 vertices) whose lowest point is ``height`` - radius
    above the ground."""
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=radius, location=(0.0, 0.0, height))
    obj = bpy.context.object
    obj.name = name
    s = obj.softsim
    s.role, s.solver, s.pressure, s.stiffness, s.bending_stiffness = "CLOTH", solver, pressure, STIFFNESS, BENDING
    return obj


def triangles(obj):
    obj.data.calc_loop_triangles()
    tris = np.empty(len(obj.data.loop_triangles) * 3, np.int32)
    obj.data.loop_triangles.foreach_get("vertices", tris)
    return tris.reshape(-1, 3)


def volume(x, tris):
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0


def drop(solver, pressure):
    """Bake a balloon dropped 1 m onto the ground; (rest volume, volume per frame, centre height per frame) [m^3, m]."""
    new_scene()
    obj = balloon("Balloon", solver, pressure)
    bpy.ops.softsim.bake()
    tris = triangles(obj)
    m = np.array(obj.matrix_world)
    volumes, heights = [], []
    for frame in range(1, FRAMES + 1):
        x = evaluated_positions(obj, frame) @ m[:3, :3].T + m[:3, 3]
        volumes.append(volume(x, tris))
        heights.append(float(x[:, 2].mean()))
    return volumes[0], np.array(volumes), np.array(heights)


@pytest.mark.parametrize("solver", ["XPBD", "IMPLICIT_EULER", "NEWTON"])
def test_a_balloon_keeps_its_volume_and_bounces(addon, solver):
    rest, volumes, heights = drop(solver, PRESSURE)
    first_contact = int(np.argmax(heights < 0.5 + 0.02))  # centre within 2 cm of one radius above the ground
    lowest = first_contact + int(np.argmin(heights[first_contact:first_contact + 12]))
    print(f"{solver}: volume at rest {volumes[-1] / rest:.3f} of rest (min {volumes.min() / rest:.3f}), "
          f"centre lowest {heights[lowest]:.3f} m at frame {lowest + 1}, back up to {heights[lowest:].max():.3f} m")
    assert volumes[-1] >= 0.9 * rest
    assert heights[lowest:].max() > heights[lowest] + 0.01  # the centre goes up again after the first contact
    assert heights.min() > 0.2  # it never flattened onto the ground


@pytest.mark.parametrize("solver", ["XPBD", "IMPLICIT_EULER"])
def test_without_pressure_it_collapses(addon, solver):
    rest, volumes, _ = drop(solver, 0.0)
    print(f"{solver}: no pressure, volume at the end {volumes[-1] / rest:.3f} of rest")
    assert volumes[-1] < 0.75 * rest


def test_pressure_on_an_open_mesh_is_refused_naming_the_object(addon):
    new_scene(4)
    obj = balloon("Bowl", "XPBD", PRESSURE)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.data.polygons[0].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.delete(type="ONLY_FACE")
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(RuntimeError, match=r"'Bowl': Pressure needs a closed mesh.*3 boundary edges.*Fill"):
        bpy.ops.softsim.bake()
    obj.softsim.pressure = 0.0
    bpy.ops.softsim.bake()  # an open cloth without air bakes


def panels_object(name="Skirt"):
    """Two 0.5 m panels (6 x 6 vertices each, one mesh) 0.3 m apart, joined by 6 loose edges."""
    from test_pressure_sewing import two_panels

    v, edges, triangles, seams = two_panels()
    mesh = bpy.data.meshes.new(name)
    loose = [tuple(int(i) for i in s) for s in seams]
    mesh.from_pydata([tuple(p) for p in v], loose, [tuple(int(i) for i in t) for t in triangles])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.collection.objects.link(obj)
    obj.location.z = 1.0
    return obj, seams


@pytest.mark.parametrize("solver", ["XPBD", "IMPLICIT_EULER"])
def test_sewing_closes_two_panels_and_the_force_limit_slows_it(addon, solver):
    scene = new_scene(24)
    scene.use_gravity = False
    obj, seams = panels_object()
    s = obj.softsim
    s.role, s.solver, s.use_sewing, s.stiffness, s.damping, s.mass = "CLOTH", solver, True, 1000.0, 2.0, 0.5
    bpy.ops.softsim.bake()

    def gap(frame):
        x = evaluated_positions(obj, frame)
        return float(np.linalg.norm(x[seams[:, 0]] - x[seams[:, 1]], axis=1).max())

    free = [gap(f) for f in (6, 24)]
    bpy.ops.softsim.free_bake()
    s.sewing_force = 0.05
    bpy.ops.softsim.bake()
    limited = [gap(f) for f in (6, 24)]
    print(f"{solver}: seam gap frames 6/24 {free[0]:.4f}/{free[1]:.4f} m, at most 0.05 N {limited[0]:.4f}/{limited[1]:.4f} m")
    assert free[1] < s.thickness
    assert limited[0] > 2.0 * free[0]


def test_shrink_and_its_group_set_the_rest_lengths(addon):
    new_scene(4)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0)
    obj = bpy.context.object
    obj.softsim.role, obj.softsim.shrink = "CLOTH", 0.1
    import importlib

    simulation = importlib.import_module(addon.__name__ + ".operators.simulation")  # the add-on's model building
    model, *_ = simulation.build_body(obj, np.eye(4), bpy.context.scene)
    rest = np.linalg.norm(model.rest_positions[model.edge_indices[:, 0]] - model.rest_positions[model.edge_indices[:, 1]], axis=1)
    assert np.allclose(model.edge_rest_length, 0.9 * rest)
    group = obj.vertex_groups.new(name="Hem")
    left = [v.index for v in obj.data.vertices if v.co.x < 0.0]
    group.add(left, 1.0, "REPLACE")
    obj.softsim.shrink_group = "Hem"
    model, *_ = simulation.build_body(obj, np.eye(4), bpy.context.scene)
    w = np.isin(np.arange(len(obj.data.vertices)), left).astype(float)
    expected = 1.0 - 0.1 * 0.5 * (w[model.edge_indices[:, 0]] + w[model.edge_indices[:, 1]])
    assert np.allclose(model.edge_rest_length / rest, expected)
    obj.softsim.shrink_group = "Missing"
    with pytest.raises(Exception, match="shrink group 'Missing' does not exist"):
        simulation.build_body(obj, np.eye(4), bpy.context.scene)
