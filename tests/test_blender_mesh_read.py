"""How the bridge reads a mesh datablock (``operators.bridge``): vertex positions from the ``position`` attribute,
face corners' vertices from ``.corner_vert``, loop triangles by their corners (each read as one block), equal to
Blender's per-element properties (MeshVertex.co, MeshLoop.vertex_index, MeshLoopTriangle.vertices), and the same
answers from those properties when the attributes are missing."""
import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

from blender_helpers import empty_scene  # noqa: E402


class _WithoutAttributes:
    """A mesh datablock seen without its attribute collection (the readers' fallback path)."""

    attributes = {}

    def __init__(self, mesh):
        self._mesh = mesh

    def __getattr__(self, name):
        return getattr(self._mesh, name)


def _meshes():
    """Evaluated meshes of a subdivided cube, a cylinder with n-gon caps and a grid with a triangulated half."""
    empty_scene(1)
    bpy.ops.mesh.primitive_cube_add(size=2.0)
    cube = bpy.context.object
    cube.modifiers.new("Subdivision", "SUBSURF").levels = 3
    bpy.ops.mesh.primitive_cylinder_add(vertices=9, location=(4.0, 0.0, 0.0))
    cylinder = bpy.context.object
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=7, y_subdivisions=5, location=(-4.0, 0.0, 0.0))
    grid = bpy.context.object
    grid.modifiers.new("Triangulate", "TRIANGULATE").min_vertices = 4
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return [obj.evaluated_get(depsgraph) for obj in (cube, cylinder, grid)]


def _per_element(mesh):
    co = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", co)
    corners = np.empty(len(mesh.loops), np.int32)
    mesh.loops.foreach_get("vertex_index", corners)
    mesh.calc_loop_triangles()
    triangles = np.empty(3 * len(mesh.loop_triangles), np.int32)
    mesh.loop_triangles.foreach_get("vertices", triangles)
    return co.reshape(-1, 3).astype(np.float64), corners.astype(np.int64), triangles.reshape(-1, 3).astype(np.int64)


def test_block_reads_equal_the_per_element_properties(addon):
    from soft_sim.operators.bridge import read_corner_vertices, read_loop_triangles, read_mesh_positions, read_quads

    for evaluated in _meshes():
        mesh = evaluated.to_mesh()
        try:
            co, corners, triangles = _per_element(mesh)
            assert len(triangles) > 0
            for seen in (mesh, _WithoutAttributes(mesh)):
                assert np.array_equal(read_mesh_positions(seen), co)
                assert np.array_equal(read_corner_vertices(seen), corners)
                assert np.array_equal(read_loop_triangles(seen), triangles)
            sizes = np.empty(len(mesh.polygons), np.int32)
            mesh.polygons.foreach_get("loop_total", sizes)
            starts = np.empty(len(mesh.polygons), np.int32)
            mesh.polygons.foreach_get("loop_start", starts)
            quads = corners[starts[sizes == 4][:, None] + np.arange(4)]
            assert np.array_equal(read_quads(mesh), quads)
        finally:
            evaluated.to_mesh_clear()


def test_a_mesh_collider_reads_its_evaluated_triangles(addon):
    """The collider of a subdivided cube: its modifiers applied, Blender's loop triangles, world positions."""
    from soft_sim.operators.bridge import collider_from_object

    evaluated = _meshes()[0]
    evaluated.original.softsim.role = "MESH"
    collider = collider_from_object(evaluated, evaluated.original.softsim)
    mesh = evaluated.to_mesh()
    try:
        co, _, triangles = _per_element(mesh)
    finally:
        evaluated.to_mesh_clear()
    assert np.array_equal(collider.triangles, triangles)
    m = np.array(evaluated.matrix_world)
    np.testing.assert_allclose(collider.vertices, co @ m[:3, :3].T + m[:3, 3], atol=1e-12)
    assert len(collider.triangles) == 6 * 64 * 2


def test_a_still_collider_read_again_hands_on_the_same_arrays_and_a_changed_one_is_read_anew(addon):
    """A Mesh Collider read on every frame: while its evaluated mesh and matrix hold the same bits, every read gives
    the last read's arrays (the solver then finds it still by identity); a moved vertex, another triangulation, a new
    matrix each give what a first read of that mesh gives."""
    from soft_sim.operators.bridge import collider_from_object

    evaluated = _meshes()[0]
    cube = evaluated.original
    cube.softsim.role = "MESH"

    def read():
        depsgraph = bpy.context.evaluated_depsgraph_get()
        return collider_from_object(cube.evaluated_get(depsgraph), cube.softsim)

    def expected():
        depsgraph = bpy.context.evaluated_depsgraph_get()
        mesh = cube.evaluated_get(depsgraph).to_mesh()
        try:
            co, _, triangles = _per_element(mesh)
        finally:
            cube.evaluated_get(depsgraph).to_mesh_clear()
        m = np.array(cube.matrix_world)
        return co @ m[:3, :3].T + m[:3, 3], triangles

    first = read()
    again = read()
    assert again.vertices is first.vertices and again.triangles is first.triangles

    cube.data.vertices[0].co.x += 0.25  # one vertex moved: the subdivided surface changes, its triangles do not
    bpy.context.view_layer.update()
    moved = read()
    vertices, triangles = expected()
    assert moved.vertices is not first.vertices and np.array_equal(moved.triangles, first.triangles)
    np.testing.assert_allclose(moved.vertices, vertices, atol=1e-12)
    assert not np.array_equal(moved.vertices, first.vertices)

    cube.modifiers["Subdivision"].levels = 2  # another topology
    bpy.context.view_layer.update()
    coarser = read()
    vertices, triangles = expected()
    assert np.array_equal(coarser.triangles, triangles) and len(triangles) == 6 * 16 * 2
    np.testing.assert_allclose(coarser.vertices, vertices, atol=1e-12)

    cube.location.z += 1.0  # the same mesh under another matrix: new world positions of the same local read
    bpy.context.view_layer.update()
    lifted = read()
    vertices, _ = expected()
    assert lifted.triangles is coarser.triangles and lifted.vertices is not coarser.vertices
    np.testing.assert_allclose(lifted.vertices, vertices, atol=1e-12)
    np.testing.assert_allclose(lifted.vertices[:, 2], coarser.vertices[:, 2] + 1.0, atol=1e-12)

    # Moved again, turned, then moved: each read the bits of a first read under its matrix (a translation adds to the
    # rotated vertices kept from the read before; a turn rotates anew).
    from soft_sim.operators.bridge import matrix_to_numpy, read_mesh_positions, transform_points

    for change in ("location", "rotation", "location"):
        if change == "location":
            cube.location.x += 0.3
        else:
            cube.rotation_euler.z += 0.4
        bpy.context.view_layer.update()
        evaluated = cube.evaluated_get(bpy.context.evaluated_depsgraph_get())
        local = read_mesh_positions(evaluated.data)
        assert np.array_equal(read().vertices, transform_points(matrix_to_numpy(evaluated.matrix_world), local))
