"""Lagged IPC friction against a collider (Li et al. 2020, section 5; Li's solid-sim-tutorial, "4_friction").

For each particle in contact at the start of the step, with normal force lambda_i [N] (the barrier's push at x^n),
tangent projector T_i = I - n_i n_i^T (normal n_i at x^n) and tangential slip relative to the collider
u_i = T_i (x_i - x^n_i - m_i) [m] (m_i the collider surface's motion over the step, zero for a still one):

    D(x) = sum_i mu lambda_i f0(|u_i|)  [J]

with f0 the mollified slip of ``energies.friction``. lambda and T are lagged (held at x^n), as in the course: the
step stays a minimization. The face version (``face_barrier.FaceColliderFriction``) applies the same to the closest
points of triangles.
"""
import numpy as np

from ...energies.base import BlockHessian
from ...energies.friction import LaggedFriction


class ColliderFriction(LaggedFriction):
    """Friction of one collider: collider (friction coefficient mu; its motion over the step, ``Collider.motion``, is
    taken off the slip, so a moving collider drags what rests on it), x_prev (n, 3) positions at the step's start
    [m], normal_force (n,) lambda [N] (0 where not in contact), eps [m] slip below which friction sticks."""

    def __init__(self, collider, x_prev: np.ndarray, normal_force: np.ndarray, eps: float):
        self.mu = float(collider.friction)
        self.x_prev = np.asarray(x_prev, float).copy()
        self.weight = self.mu * np.asarray(normal_force, float)
        self.eps = float(eps)
        _, normal = collider.surface_distance(self.x_prev)
        self.x_prev += collider.motion(self.x_prev)  # slip measured against the collider's surface
        self.normal = np.array(normal, float)
        self.T = np.eye(3)[None] - self.normal[:, :, None] * self.normal[:, None, :]
        self._rows = np.arange(len(self.x_prev))

    def _slip(self, x):
        u = np.einsum("nij,nj->ni", self.T, x - self.x_prev)
        return u, np.sqrt(np.einsum("ij,ij->i", u, u))

    def gradient(self, x):
        return self.slip_force(x)

    def hessian(self, x, project=True):
        return BlockHessian(self._rows, self._rows, self.slip_blocks(x))
