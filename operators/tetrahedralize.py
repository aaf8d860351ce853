"""softsim.tetrahedralize: build (or rebuild) the tet mesh of the active Solid, report it, optionally show it.

The tet mesh goes to the same cache the bake and the live simulation use, so they start without waiting.
The original mesh is never modified; ``show_tets`` draws the tets as a separate wireframe object.
"""
import bpy
import numpy as np
from bpy.props import BoolProperty

from ..solvers.builder import tet_edges
from .bridge import InputError, matrix_to_numpy, read_body, world_to_local
from .solid import figures, tet_mesh_for

TETS_SUFFIX = " Tets"


def store_figures(settings, fig: dict) -> None:
    """Write a ``solid.figures`` dict to the report fields of ``Object.softsim`` (shown in the panel)."""
    settings.tet_vertex_count = fig["vertices"]
    settings.tet_count = fig["tets"]
    settings.tet_coverage = fig["coverage"] if fig["coverage"] == fig["coverage"] else 0.0
    settings.tet_worst_quality = fig["worst_quality"]
    settings.tet_outside_count = fig["outside"]


def report_text(name: str, fig: dict, embedded: bool) -> str:
    text = (
        f"'{name}': {fig['vertices']} tet vertices, {fig['tets']} tets, {fig['coverage']:.1f}% of the mesh's volume, "
        f"worst quality {fig['worst_quality']:.3f}"
    )
    if embedded:
        text += f"; cage carries all {fig['embedded']} mesh vertices"
        if fig["outside"]:
            text += f" ({fig['outside']} outside it: raise Cage Resolution)"
    elif fig["embedded"]:
        text += f"; {fig['embedded']} mesh vertices in no tet follow their nearest tet"
    return text


def tet_object_of(obj):
    """The wireframe object Show Tets made for ``obj`` (marked with ``softsim.tets_of``), or None.

    Found by that mark only, never by name: an object the user made, whatever it is called, is not ours.
    """
    for other in bpy.data.objects:
        if other.type == "MESH" and other.library is None and other.softsim.tets_of == obj.name and other != obj:
            return other
    return None


def show_tet_object(context, obj, matrix_world: np.ndarray, tet):
    """Create or update the wireframe object showing ``obj``'s tet mesh (its vertices and edges).

    It is named '<obj name> Tets' (or '<obj name> Tets.001' and so on if that name is taken: Blender picks a
    free one) and marked as Soft Sim's, so updating it never touches an object Soft Sim did not create. It gets
    ``obj``'s transform and object-space coordinates, so it overlays the original mesh.
    """
    name = obj.name + TETS_SUFFIX
    local = world_to_local(matrix_world, tet.vertices)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(local.tolist(), tet_edges(tet.tets).tolist(), [])
    mesh.update()
    wire = tet_object_of(obj)
    if wire is not None:
        old = wire.data
        wire.data = mesh
        if old.users == 0:
            bpy.data.meshes.remove(old)
    else:
        wire = bpy.data.objects.new(name, mesh)
        wire.softsim.tets_of = obj.name
        collections = obj.users_collection or (context.scene.collection,)
        collections[0].objects.link(wire)
    wire.matrix_world = obj.matrix_world.copy()
    wire.display_type = "WIRE"
    wire.show_in_front = True
    wire.hide_render = True
    return wire


class SOFTSIM_OT_tetrahedralize(bpy.types.Operator):
    """Fill the active Solid with tets now (bakes reuse them) and report their count, volume and quality"""

    bl_idname = "softsim.tetrahedralize"
    bl_label = "Tetrahedralize"
    bl_options = {"REGISTER", "UNDO"}

    show_tets: BoolProperty(
        name="Show Tets", default=False,
        description="Create or update a wireframe object '<name> Tets' showing the tet edges (the mesh itself and objects "
        "Soft Sim did not make are not changed)",
    )

    def execute(self, context):
        obj = context.active_object
        try:
            if obj is None:
                raise InputError("no active object: select the Solid to tetrahedralize")
            if obj.softsim.role != "SOLID":
                raise InputError(f"'{obj.name}' has role {obj.softsim.role.title()}: set Role to Solid to tetrahedralize it")
            depsgraph = context.evaluated_depsgraph_get()
            matrix = matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)
            body = read_body(obj, matrix, depsgraph)  # the mesh a bake tetrahedralizes: the tet mesh is cached for it
            tet = tet_mesh_for(obj, body, obj.softsim)
        except InputError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        fig = figures(tet, body)
        store_figures(obj.softsim, fig)
        text = report_text(obj.name, fig, obj.softsim.use_embedded)
        if self.show_tets:
            text += f"; tets shown as '{show_tet_object(context, obj, matrix, tet).name}'"
        self.report({"INFO"}, text)
        return {"FINISHED"}


classes = (SOFTSIM_OT_tetrahedralize,)
