"""One body being simulated from Blender data: shared by the live handler and the bake."""
import numpy as np

from .. import solvers
from ..solvers.mass_spring import explicit_stable_substep, substeps_needed
from ..solvers.material import material_arrays
from ..solvers.newton import NewtonNotConverged
from ..solvers.registry import REGISTRY
from . import solid
from .fields_input import body_fields, frame_fields
from .advice import explicit_stability_message
from .bridge import (InputError, body_maps, check_settings, check_transform, cloth_shape, config_from_settings, frame_duration,
                     identity_mapping, make_body_solver,
                     matrix_to_numpy, read_body, read_input_positions, transform_points, world_matrix, world_to_local)


def build_body(obj, matrix_world, scene, depsgraph=None):
    """(Model, BodyInput, to_mesh, mesh_particles) for a CLOTH or SOLID object at its current transform; raises
    InputError. ``depsgraph``: read the mesh as Soft Sim's place in the stack makes it (``bridge.read_body``).

    ``to_mesh`` maps simulated particle positions (particle_count, 3) to the mesh's own vertices
    (vertex_count, 3), both world space: the identity for cloth, tet embedding for solids. The first
    ``mesh_particles`` particles are the mesh's first vertices, in order (all of them for cloth, the surface
    vertices the tetrahedralizer kept for a solid, none for an embedded cage).
    """
    check_settings(obj.softsim)  # before the mesh is read or tetrahedralized
    check_transform(obj.name, matrix_world)
    body = read_body(obj, matrix_world, depsgraph)
    role = obj.softsim.role
    try:
        if role == "CLOTH":
            model = solvers.build_model(body.world_positions, body.edges, body.triangles, pinned=body.pinned,
                                        total_mass=obj.softsim.mass, mass_distribution=obj.softsim.mass_distribution,
                                        quads=body.quads)
            model = cloth_shape(obj, model, body)  # Shrink, and Pressure's closed-mesh check
            model = body_maps(obj, model)  # Stiffness and Bending Groups, soft pins
            return model, body, identity_mapping, len(body.world_positions)
        if role == "SOLID":
            model, to_mesh, surface_count = solid.build_solid(obj, body, obj.softsim)
            model = body_maps(obj, model)  # soft pins
            return model, body, to_mesh, surface_count
        raise InputError(f"'{obj.name}': role {role!r} is not a body; use Cloth or Solid")
    except solvers.ModelError as error:
        raise InputError(f"'{obj.name}': {error}") from error


class BodyRun:
    """A body's Model, solver and State, built from its object at the current frame.

    Results come out in the object's local space at the frame's transform, float32, with the mesh's
    own vertex count and order (what a shape key, a PC2 frame or ``foreach_set`` wants).
    """

    def __init__(self, obj, scene, depsgraph):
        self.name = obj.name
        matrix = world_matrix(obj, depsgraph)
        self.model, body, self.to_mesh, self.mesh_particles = build_body(obj, matrix, scene, depsgraph)
        self.solver = make_body_solver(obj, self.model, scene)
        self.state = solvers.State.at_rest(self.model)
        self.local_rest = body.local_positions
        # Every particle's rest position in object space, so pins (and, for solids, interior
        # particles) follow the object's animated transform.
        self.particle_local_rest = world_to_local(matrix, self.model.rest_positions)
        self.has_pins = bool(self.model.pinned.any()) or len(self.model.goal_particles) > 0  # hard or soft pins
        # A body fed by modifiers or shape keys above Soft Sim (an Armature...) reads its evaluated mesh every
        # frame: pinned mesh vertices go where that mesh puts them, and a change of its vertex count stops the run.
        self.evaluated = body.evaluated
        self.frame_dt = frame_duration(scene)
        self.stats = solvers.measure_stats(self.model, self.state.x)
        self.fields = body_fields(obj, scene, depsgraph)
        """The force fields acting on the body as read at the last frame (``fields_input``): each frame's fields move
        from these."""

    def rest_local(self) -> np.ndarray:
        return self.local_rest.astype(np.float32)

    def advance(self, obj, depsgraph, colliders, frame=None) -> np.ndarray:
        """Simulate one scene frame (objects evaluated at its end); returns local positions (n, 3) float32."""
        return self.compute(self.prepare(obj, depsgraph, frame), colliders)

    def prepare(self, obj, depsgraph, frame=None):
        """What a frame needs from Blender, read on the main thread: the object's transform at the frame's end, the
        pin targets, world space (particle_count, 3) or None: the particles' rest positions carried by the
        transform, and for a fed body the mesh vertices' evaluated positions (``bridge.read_input_positions``), and
        the force fields over the frame (``fields_input.frame_fields``)."""
        matrix = world_matrix(obj, depsgraph)
        check_transform(self.name, matrix, frame)
        mesh_local = None
        if self.evaluated:
            mesh_local = read_input_positions(obj, depsgraph)
            if len(mesh_local) != len(self.local_rest):
                when = f" at frame {frame}" if frame is not None else ""
                raise InputError(f"'{self.name}': the modifiers above Soft Sim's place in the stack changed its vertex count{when} "
                                 f"({len(self.local_rest)} at the start, {len(mesh_local)} now), and a simulation keeps its vertices: "
                                 "keep the modifiers above the 'SoftSim Cache' modifier from changing the vertex count over the frames")
        targets = None
        if self.has_pins:
            targets = transform_points(matrix, self.particle_local_rest)
            if mesh_local is not None:
                k = self.mesh_particles
                targets[:k] = transform_points(matrix, mesh_local[:k])
        scene = depsgraph.scene
        current = body_fields(obj, scene, depsgraph)
        fields = frame_fields(self.fields, current, scene, scene.frame_current if frame is None else frame)
        self.fields = current
        return matrix, targets, fields

    def compute(self, prepared, colliders) -> np.ndarray:
        """Simulate the frame ``prepare`` read. Touches no Blender data, so it may run in a worker thread."""
        matrix, targets, fields = prepared
        self.stats = solvers.advance_frame(self.solver, self.state, self.frame_dt, self.solver.config.substeps, colliders, targets,
                                           fields)
        return self.output(matrix)

    def output(self, matrix) -> np.ndarray:
        """The state's positions as the mesh's vertices in the object's local space at ``matrix``, (n, 3) float32."""
        return world_to_local(matrix, self.to_mesh(self.state.x)).astype(np.float32)

    def stability_advice(self, error=None) -> str:
        """What to change after the simulation diverged (or, for Newton, did not converge)."""
        config = self.solver.config
        if isinstance(error, NewtonNotConverged):
            return (f"Raise Substeps (now {config.substeps}), raise Max Iterations (now {config.newton_max_iterations}) "
                    f"or loosen Tolerance (now {config.newton_tolerance:g} m/s)")
        if REGISTRY[config.solver].explicit:
            stiffness = material_arrays(self.model, config).edge_stiffness
            return "The " + explicit_stability_message(self.frame_dt, config.substeps, self.model, stiffness, config.solver,
                                                       config.damping, config.bending_stiffness)
        material = "Young's Modulus" if self.model.tet_count else "Stiffness"
        return f"Raise Substeps (now {config.substeps}), lower {material} or raise Damping"

    def status_text(self, frame: int) -> str:
        s = self.stats
        text = f"frame {frame}: max strain {100 * s.max_strain:.2f}%, RMS {100 * s.rms_strain:.2f}%"
        if s.volume_error == s.volume_error:  # not nan
            text += f", volume error {100 * s.volume_error:.2f}%"
        if s.linear_residual == s.linear_residual:
            text += f", linear residual {s.linear_residual:.1e} in {s.iterations} it."
        if s.newton_residual == s.newton_residual:
            text += (f", {s.newton_iterations} Newton it. ({s.line_search_halvings} halvings), "
                     f"residual {s.newton_residual:.1e} m/s")
            if s.split_steps:
                text += f", {s.split_steps} step(s) halved to converge"
        if s.pd_residual == s.pd_residual:
            text += f", {s.iterations} PD it., residual {s.pd_residual:.1e}"
        if s.min_distance == s.min_distance:
            text += f", closest to a collider {1000 * s.min_distance:.2f} mm"
        return text


_estimates = {}  # settings key -> (largest stable substep [s], substeps needed); drawing must stay cheap


def explicit_stability_estimate(obj, scene):
    """(largest stable substep [s], substeps needed per frame) for an explicit solver on ``obj``, or None.

    Cached on the settings and mesh size, so panels can show it on every redraw; None if the body
    cannot be built (the bake reports why), or if it is a Solid not tetrahedralized yet (a panel redraw
    must not start a tetrahedralization).
    """
    s = obj.softsim
    mesh = obj.data
    key = (obj.name, len(mesh.vertices), len(mesh.edges), s.role, s.solver, s.mass, s.mass_distribution, s.stiffness,
           s.youngs_modulus, s.poisson_ratio, s.bending_stiffness, s.damping, s.pin_group, s.tet_resolution, s.use_embedded,
           s.embedded_resolution, tuple(obj.matrix_world.to_scale()), frame_duration(scene))
    if key not in _estimates:
        if s.role == "SOLID" and not solid.has_tet_mesh(obj, matrix_to_numpy(obj.matrix_world)):
            return None
        try:
            model, _, _, _ = build_body(obj, matrix_to_numpy(obj.matrix_world), scene)
        except InputError:
            return None
        if len(_estimates) > 64:
            _estimates.clear()
        stiffness = material_arrays(model, config_from_settings(s, scene)).edge_stiffness
        _estimates[key] = (
            explicit_stable_substep(model, stiffness, s.solver, s.damping, s.bending_stiffness),
            substeps_needed(frame_duration(scene), model, stiffness, s.solver, s.damping, s.bending_stiffness),
        )
    return _estimates[key]
