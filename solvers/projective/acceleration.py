"""Accelerating the local-global fixed-point iteration x_{k+1} = G(x_k) = global(local(x_k)) of Projective Dynamics.

An accelerator is told, iteration by iteration, the current iterate x_k and the plain update x_hat = G(x_k)
(both (nf, 3), the free particles), and returns the next iterate. ``start()`` begins a step.
``needs_energy``: the solver must check the PD energy at the returned iterate and fall back to x_hat if it
went up (then it calls ``rejected()``).
"""
import numpy as np


class Plain:
    """No acceleration: x_{k+1} = G(x_k). The PD energy decreases monotonically (Bouaziz et al. 2014)."""

    needs_energy = False

    def start(self):
        pass

    def next(self, x, x_hat, residual):
        return x_hat


class Chebyshev:
    """Chebyshev semi-iterative acceleration (Wang 2015, "A Chebyshev Semi-Iterative Approach for Accelerating
    Projective and Position-Based Dynamics"):

        omega = 1 for the first ``delay`` iterations, then 2 / (2 - rho^2), then omega <- 4 / (4 - rho^2 omega),
        x_{k+1} = omega (gamma (x_hat - x_k) + x_k - x_{k-1}) + x_{k-1},

    rho the spectral radius of the plain iteration (estimated by the solver), gamma an under-relaxation.
    Safeguard for the non-linear iteration: when the fixed-point residual |x_hat - x_k| grows after the delay,
    the sequence restarts from the current iterate with omega = 1. (A delay of 1, omega = 1 then 2 / (2 - rho^2)
    at once, overshoots so far that the safeguard restarts every other iteration on the lab cloth; a delay of 2
    restarts rarely and converges faster.)
    """

    needs_energy = False

    def __init__(self, rho: float, gamma: float = 0.9, delay: int = 1):
        self.rho, self.gamma, self.delay = rho, gamma, delay
        self.restarts = 0

    def start(self):
        self.previous = None
        self.count = 0
        self.omega = 1.0
        self.last_residual = np.inf

    def next(self, x, x_hat, residual):
        if residual > self.last_residual and self.count > self.delay:
            self.count = 0
            self.restarts += 1
        self.last_residual = residual
        rho2 = self.rho * self.rho
        if self.count < self.delay:
            self.omega = 1.0
        elif self.count == self.delay:
            self.omega = 2.0 / (2.0 - rho2)
        else:
            self.omega = 4.0 / (4.0 - rho2 * self.omega)
        self.count += 1
        relaxed = self.gamma * (x_hat - x) + x
        if self.omega == 1.0 or self.previous is None:
            out = relaxed
        else:
            out = self.omega * (relaxed - self.previous) + self.previous
        self.previous = x
        return out


class Anderson:
    """Anderson acceleration of type II with window m (Walker and Ni 2011), safeguarded by the PD energy as in
    Peng, Deng, Zhang, Liu 2018 ("Anderson Acceleration for Geometry Optimization and Physics Simulation"):

        f_k = G(x_k) - x_k,  theta = argmin |f_k - dF theta|,  x_{k+1} = G(x_k) - dG theta,

    dF, dG the last m differences of f and G. The solver rejects x_{k+1} (takes G(x_k)) when the energy rose.
    """

    needs_energy = True

    def __init__(self, window: int = 5):
        self.window = window
        self.rejections = 0

    def start(self):
        self.count = self.head = 0
        self.dF = self.dG = None  # (window, 3 nf) ring buffers, allocated at the first iteration
        self.gram = np.zeros((self.window, self.window))  # dF dF^T, updated one row and column at a time
        self.f_previous = self.g_previous = None

    def next(self, x, x_hat, residual):
        f = (x_hat - x).ravel()
        g = x_hat.ravel()  # the solver never writes into x_hat
        if self.f_previous is not None:
            if self.dF is None:
                self.dF = np.zeros((self.window, len(f)))
                self.dG = np.zeros((self.window, len(f)))
            slot = self.head
            np.subtract(f, self.f_previous, out=self.dF[slot])
            np.subtract(g, self.g_previous, out=self.dG[slot])
            self.head = (slot + 1) % self.window
            self.count = min(self.count + 1, self.window)
        self.f_previous, self.g_previous = f, g
        if self.count == 0:
            return x_hat
        m = self.count  # slots 0..m-1 are filled; the least-squares problem does not care about their order
        # One pass over dF gives both the new row of dF dF^T and dF f (the buffers are larger than the caches).
        # einsum, not `@`: these products go through multithreaded BLAS, which is slow on busy machines.
        products = np.einsum("ij,kj->ik", self.dF[:m], np.stack([self.dF[slot], f]))
        self.gram[slot, :m] = self.gram[:m, slot] = products[:, 0]
        gram = self.gram[:m, :m].copy()
        # A tiny Tikhonov term keeps nearly collinear differences from blowing theta up.
        gram[np.diag_indices(m)] += 1e-10 * np.trace(gram) + 1e-300
        theta = np.linalg.solve(gram, products[:, 1])
        return (g - np.einsum("i,ij->j", theta, self.dG[:m])).reshape(x_hat.shape)

    def rejected(self):
        self.rejections += 1
