"""One body being simulated from Blender data: shared by the live handler and the bake."""
import numpy as np

from .. import solvers
from .bridge import build_body, frame_duration, make_body_solver, transform_points, world_matrix, world_to_local


class BodyRun:
    """A body's Model, solver and State, built from its object at the current frame.

    Results come out in the object's local space at the frame's transform, float32, with the mesh's
    own vertex count and order (what a shape key, a PC2 frame or ``foreach_set`` wants).
    """

    def __init__(self, obj, scene, depsgraph):
        self.name = obj.name
        matrix = world_matrix(obj, depsgraph)
        self.model, body = build_body(obj, matrix, scene)
        self.solver = make_body_solver(obj, self.model, scene)
        self.state = solvers.State.at_rest(self.model)
        self.local_rest = body.local_positions
        self.vertex_count = len(body.local_positions)
        self.has_pins = bool(self.model.pinned.any())
        self.frame_dt = frame_duration(scene)
        self.stats = solvers.measure_stats(self.model, self.state.x)

    def rest_local(self) -> np.ndarray:
        return self.local_rest.astype(np.float32)

    def advance(self, obj, depsgraph, colliders) -> np.ndarray:
        """Simulate one scene frame (objects evaluated at its end); returns local positions (n, 3) float32."""
        matrix = world_matrix(obj, depsgraph)
        targets = transform_points(matrix, self.local_rest) if self.has_pins else None
        self.stats = solvers.advance_frame(self.solver, self.state, self.frame_dt, self.solver.config.substeps, colliders, targets)
        return world_to_local(matrix, self.state.x[: self.vertex_count]).astype(np.float32)

    def status_text(self, frame: int) -> str:
        s = self.stats
        text = f"frame {frame}: max strain {100 * s.max_strain:.2f}%, RMS {100 * s.rms_strain:.2f}%"
        if s.volume_error == s.volume_error:  # not nan
            text += f", volume error {100 * s.volume_error:.2f}%"
        if s.linear_residual == s.linear_residual:
            text += f", linear residual {s.linear_residual:.1e} in {s.iterations} it."
        return text
