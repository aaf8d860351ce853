"""Planes that hold, for one step, the particles the last end-of-step contact projection moved.

Solvers that keep their contacts out of the solve (Projective Dynamics, implicit Euler's cloth) project the
particles out of the colliders after it. Where a face was pushed off a mesh collider's edge or corner, its vertices
are moved although no vertex of the body is inside the collider, so no vertex contact sees them: the next solve
pulls them back in and the projection pushes them out again, storing energy in the springs each time (the box
drape's cloth stretched over the box's rim). ``HeldPlanes.remember`` keeps, for each particle that projection moved,
the plane through where it was left, normal along its push; the next solve keeps the particle on the outer side
of it (``planes``). A plane lasts one step, so a collider that moves away releases the cloth a step later.
"""
import numpy as np

PUSH_MEMORY_TOLERANCE = 1e-3
"""A particle the end-of-step projection moved farther than this fraction of the thickness is held next step."""


class HeldPlanes:
    """The held planes of one body of n particles. hold_reach [m]: only a particle this near a collider is held
    (a face within one edge of it can touch the collider); thickness [m]: the body's contact distance, which scales
    PUSH_MEMORY_TOLERANCE."""

    def __init__(self, n: int, hold_reach: float, thickness: float):
        self.held = np.zeros(n, bool)
        """Particles held by a plane where the last end-of-step projection left them, (n,) bool."""
        self.normal = np.zeros((n, 3))
        """Each held particle's plane normal (unit, along its push)."""
        self.offset = np.zeros(n)
        """[m] Each held particle's plane: n . x >= offset."""
        self.hold_reach = float(hold_reach)
        self.tolerance = PUSH_MEMORY_TOLERANCE * max(float(thickness), 1e-6)

    def remember(self, solved, x, inv_mass, colliders, pad2=None, faces_only=False) -> None:
        """The next step's planes from this step's end-of-step projection (positions solved -> x, both (n, 3) [m]):
        each free particle (inv_mass (n,) > 0) it moved farther than the tolerance, within ``hold_reach`` of one of
        ``colliders``, must stay on the side n . x >= n . x_end of the plane through where it was left, n along its
        push. pad2: the particles' sphere pads (``faces.sphere_pads``) or None. The far ones are moves of
        self-collision, not of a collider. faces_only: hold only the particles that were outside every collider at
        ``solved`` (moved by a face push, not as a vertex inside a collider)."""
        pushed = np.sqrt(np.einsum("ij,ij->i", x - solved, x - solved))
        moved = np.flatnonzero((pushed > self.tolerance) & (inv_mass > 0.0))
        self.held[:] = False
        if len(moved) and colliders:
            pads = pad2[moved] if pad2 is not None else None
            moved = moved[np.min([c.distance(x[moved], pads) for c in colliders], axis=0) < self.hold_reach]
            if faces_only and len(moved):
                pads = pad2[moved] if pad2 is not None else None
                moved = moved[np.min([c.distance(solved[moved], pads) for c in colliders], axis=0) >= 0.0]
            n = (x[moved] - solved[moved]) / pushed[moved][:, None]
            self.held[moved] = True
            self.normal[moved] = n
            self.offset[moved] = np.einsum("ij,ij->i", x[moved], n)

    def planes(self):
        """(particles (k,), normals (k, 3), offsets (k,) [m]) of the held planes."""
        held = np.flatnonzero(self.held)
        return held, self.normal[held], self.offset[held]
