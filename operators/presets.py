"""Scene presets: the cloth of the GAMES103 cloth lab (lab 2), set up exactly as the lab does it."""
import math

import bpy
import numpy as np

LAB_N = 21
LAB_SIZE = 10.0
LAB_DT = 0.0333  # the lab's time step [s]: one PBD step per frame at 30 fps
LAB_DAMPING_PER_STEP = 0.99  # the lab multiplies velocities by 0.99 every step


def lab_cloth_mesh(name: str, n: int = LAB_N, size: float = LAB_SIZE):
    """The lab's cloth: vertex k = j*n + i at (size/2 - size*i/(n-1), size/2 - size*j/(n-1)) in the XY plane
    (the lab's XZ plane, Blender's Z up), two triangles per quad exactly as the lab indexes them."""
    i, j = np.meshgrid(np.arange(n), np.arange(n))
    vertices = np.stack([size / 2 - size * i.ravel() / (n - 1), size / 2 - size * j.ravel() / (n - 1), np.zeros(n * n)], 1)
    jj, ii = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (jj * n + ii).ravel()
    triangles = np.concatenate([np.stack([a, a + 1, a + n + 1], 1), np.stack([a, a + n + 1, a + n], 1)])
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices.tolist(), [], triangles.tolist())
    mesh.update()
    return mesh


def add_games103_lab(context, location=(0.0, 0.0, 0.0)):
    """Add the lab to the scene: the cloth 3 m above a sphere of radius 2.7 at ``location``. Returns (cloth, sphere)."""
    scene = context.scene
    origin = np.asarray(location, float)
    cloth = bpy.data.objects.new("Lab Cloth", lab_cloth_mesh("Lab Cloth"))
    cloth.location = tuple(origin + (0.0, 0.0, 3.0))
    context.collection.objects.link(cloth)
    pins = cloth.vertex_groups.new(name="Pins")
    pins.add([0, LAB_N - 1], 1.0, "REPLACE")  # the lab skips vertices 0 and 20
    s = cloth.softsim
    s.role = "CLOTH"
    s.pin_group = "Pins"
    s.solver = "PBD"
    s.constraint_scheme = "JACOBI"
    s.jacobi_relaxation = 0.2
    s.iterations = 32
    s.substeps = 1
    s.use_tethers = False
    s.air_drag = 0.0  # the lab simulates no air: its cloth falls under gravity and its damping alone
    # The lab's v *= 0.99 per 0.0333 s step, as a rate: exp(-damping * dt) = 0.99.
    s.damping = -math.log(LAB_DAMPING_PER_STEP) / LAB_DT

    mesh = bpy.data.meshes.new("Lab Sphere")
    sphere = bpy.data.objects.new("Lab Sphere", mesh)
    context.collection.objects.link(sphere)
    _fill_uv_sphere(mesh, 2.7)
    sphere.location = tuple(origin)
    sphere.softsim.role = "SPHERE"
    sphere.softsim.friction = 0.0
    sphere.softsim.thickness = 0.0

    scene.render.fps, scene.render.fps_base = 30, 1.0
    scene.gravity = (0.0, 0.0, -9.8)
    return cloth, sphere


def _fill_uv_sphere(mesh, radius, segments=48, rings=24):
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=rings, radius=radius)
    bm.to_mesh(mesh)
    bm.free()
    for polygon in mesh.polygons:
        polygon.use_smooth = True


class SOFTSIM_OT_add_games103_lab(bpy.types.Operator):
    """Add the GAMES103 lab 2 cloth: 21x21 PBD cloth pinned at two corners, 32 Jacobi iterations, over a sphere"""

    bl_idname = "softsim.add_games103_lab"
    bl_label = "GAMES103 Lab Cloth"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        cloth, _ = add_games103_lab(context, context.scene.cursor.location)
        for obj in context.selected_objects:
            obj.select_set(False)
        cloth.select_set(True)
        context.view_layer.objects.active = cloth
        self.report({"INFO"}, "Soft Sim: added the GAMES103 lab (scene set to 30 fps); press Play or Bake")
        return {"FINISHED"}


def menu_add(self, context):
    self.layout.operator(SOFTSIM_OT_add_games103_lab.bl_idname, icon="MOD_CLOTH")


classes = (SOFTSIM_OT_add_games103_lab,)
