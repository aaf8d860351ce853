"""Inertia and gravity: the parts of the incremental potential that every body has (Li's solid-sim-tutorial, lecture 2)."""
import numpy as np

from .base import BlockHessian, Energy


class Inertia(Energy):
    """E = 1/2 sum_i m_i |x_i - x_tilde_i|^2  [kg m^2]: the kinetic term of implicit Euler as optimization.

    Divided by h^2 it is the 1/(2 h^2) |x - x_tilde|_M^2 of Li's solid-sim-tutorial; the Newton solver keeps E in that
    scaled form (h^2 times the potential energies), so this term carries no 1/h^2. mass: (n,) [kg];
    x_tilde: (n, 3) [m] predicted positions x^n + h v^n, set again at every step.
    """

    def __init__(self, mass: np.ndarray, x_tilde: np.ndarray):
        self.mass = np.asarray(mass, float)
        self.x_tilde = np.asarray(x_tilde, float)
        n = len(self.mass)
        self._rows = np.arange(n)
        self._blocks = self.mass[:, None, None] * np.eye(3)

    def value(self, x):
        d = x - self.x_tilde
        return 0.5 * float(np.einsum("i,ij,ij->", self.mass, d, d))

    def gradient(self, x):
        return self.mass[:, None] * (x - self.x_tilde)

    def hessian(self, x, project=True):
        return BlockHessian(self._rows, self._rows, self._blocks)


class Gravity(Energy):
    """E = -sum_i m_i g . x_i  [J]; linear in x, so its Hessian is zero. mass: (n,) [kg]; g: (3,) [m/s^2]."""

    def __init__(self, mass: np.ndarray, gravity):
        self.mass = np.asarray(mass, float)
        self.gravity = np.asarray(gravity, float)

    def value(self, x):
        return -float(self.mass @ (x @ self.gravity))

    def gradient(self, x):
        return -self.mass[:, None] * self.gravity[None, :]
