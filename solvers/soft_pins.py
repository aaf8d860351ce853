"""Soft pins: pinned vertices pulled toward their targets by a spring instead of placed on them (Soft Body's goal).

A body's ``pin_stiffness`` k [N/m] > 0 turns its pins into goal springs (``soften_pins``): the pinned particles keep
their mass (``inv_mass > 0``) and each feels

    E = 1/2 k |x - t|^2,    f = -k (x - t),    d2E/dx2 = k I                                    [J, N, N/m]

towards its target t, where the rig (the object's transform, its armature, shape keys...) puts it:
``Model.goal_positions``, which ``frame.FrameRun`` moves linearly over the frame's steps as it moves hard pins, set to
the target at the end of each step. A particle of mass m hanging from its goal under gravity g rests k d = m g
below it. Every solver reads the same spring:

- the mass-spring integrators and NEWTON: ``GoalSprings``, an energy (value, gradient, the Hessian k I), among the
  body's other energies (explicit Euler: its force; implicit Euler and NEWTON: its force and Hessian in the solve);
- PBD and XPBD: ``GoalSprings.project``, an attachment constraint C = x - t with compliance 1/k (Macklin et al.
  2016), in PBD too (as bending is: a hard attachment would be a hard pin), after every iteration's sweeps;
- PROJECTIVE: ``GoalAttachment``, the constraint A x = x_g with weight k, projected onto p = t (Bouaziz et al.
  2014 sec. 5): k on the goal particles' diagonal of the constant global matrix, k t on the right-hand side.

Pin tethers run from hard pins (``inv_mass == 0``); a body with soft pins has none, so its tethers are off.
"""
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from .energies.base import BlockHessian, Energy


def soften_pins(model, stiffness: float):
    """``model`` with its hard pins (``inv_mass == 0``) made soft pins of ``stiffness`` [N/m]: they get their mass back
    and a goal spring each, toward their rest positions until ``frame.FrameRun`` moves the targets. ``stiffness`` 0
    (or a model without pins) returns ``model`` unchanged: hard pins."""
    pinned = np.nonzero(model.inv_mass == 0.0)[0]
    if not stiffness > 0.0 or len(pinned) == 0:
        return model
    inv_mass = model.inv_mass.copy()
    inv_mass[pinned] = 1.0 / model.mass[pinned]
    return replace(model, inv_mass=inv_mass, goal_particles=pinned.astype(np.int64),
                   goal_stiffness=np.full(len(pinned), float(stiffness)),
                   goal_positions=model.rest_positions[pinned].copy())


def has_goals(model) -> bool:
    return len(getattr(model, "goal_particles", ())) > 0


class GoalSprings(Energy):
    """The goal springs of ``model`` (see the module docstring); they read ``model.goal_positions`` at every call."""

    def __init__(self, model):
        self.model = model
        self.particles = np.asarray(model.goal_particles, np.int64)
        self.k = np.asarray(model.goal_stiffness, np.float64)
        self.rows = self.cols = self.particles
        self._blocks = self.k[:, None, None] * np.eye(3)
        self._lam = np.zeros((len(self.particles), 3))

    @classmethod
    def of(cls, model):
        """GoalSprings of ``model``, or None without soft pins."""
        return cls(model) if has_goals(model) else None

    def _d(self, x):
        return x[self.particles] - self.model.goal_positions

    def value(self, x):
        d = self._d(x)
        return 0.5 * float(np.einsum("i,ij,ij->", self.k, d, d))

    def gradient(self, x):
        g = np.zeros_like(x)
        np.add.at(g, self.particles, self.k[:, None] * self._d(x))
        return g

    def hessian(self, x, project=True):
        return BlockHessian(self.rows, self.cols, self._blocks.copy())

    def project(self, x, dt: float, inv_mass, first: bool) -> None:
        """One XPBD projection of the attachments C = x_g - t_g (a vector constraint of compliance 1/k), in place:
        dlambda = (-C - alpha lambda) / (w + alpha), x_g += w dlambda, alpha = 1 / (k dt^2). ``first``: the step's
        first iteration (the multipliers start from 0). A particle alone at rest under a force f settles at
        x - t = f / k, whatever dt and the iteration count."""
        if first:
            self._lam[:] = 0.0
        i = self.particles
        w = inv_mass[i][:, None]
        alpha = (1.0 / (self.k * dt * dt))[:, None]
        dlam = (-(x[i] - self.model.goal_positions) - alpha * self._lam) / (w + alpha)
        x[i] += w * dlam
        self._lam += dlam


class GoalAttachment:
    """Projective Dynamics attachment constraints of the soft pins (``solvers.projective.constraints`` protocol):
    A x = x_g (one row per goal particle), w = k [N/m], p = t the target: E = 1/2 k |x_g - t|^2."""

    quadratic = None

    def __init__(self, model):
        self.model = model
        self.k = np.asarray(model.goal_stiffness, np.float64)
        g = len(self.k)
        self.A = sp.csr_matrix((np.ones(g), (np.arange(g), np.asarray(model.goal_particles, np.int64))),
                               shape=(g, model.particle_count))
        self.laplacian = (self.A.T @ sp.diags(self.k) @ self.A).tocsr()

    def project(self, z, with_energy=False):
        t = self.model.goal_positions
        energy = None
        if with_energy:
            d = z - t
            energy = 0.5 * float(np.einsum("i,ij,ij->", self.k, d, d))
        return self.k[:, None] * t, energy
