"""NEWTON against Minchen Li's course code (solid-sim-tutorial, Li et al. 2020 IPC), re-written here densely, line by line, in 3D.

The course's 2D scenes (a 1 m square of 5 x 5 nodes, edges along both grid axes and both diagonals,
rho = 1000 kg/m^2, the course's squared-length spring with k = 1e5) are rebuilt in the vertical x-z plane with gravity along -z:
the Dirichlet-hung square, the square dropped on the ground, and the square on a slope with friction. The
reference below is a plain transcription of the course's ``step_forward`` (inertia + h^2 (springs + gravity +
barrier + friction), make_PD per spring, DBC rows set to the identity, CCD initial step 0.9 x the distance,
halving while the energy rises, stop at |p|_inf / h <= tol). Soft Sim runs the same scenes through its public
engine API with mass_distribution 'UNIFORM', damping 0, stiffness = 4 k and one substep per frame. Only the
barrier's stiffness differs by design: Soft Sim chooses kappa_i = 2.5 M g = 24.5 kN itself, the course's
kappa x contact area is 1e5 x 0.25 = 25 kN; the reference uses Soft Sim's value so that the trajectories
can be compared exactly.
"""
import math

import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, State, advance_frame, build_model, make_solver

SIDE, N_SEG, RHO, K, G = 1.0, 4, 1000.0, 1e5, 9.81
DHAT, EPSV = 0.01, 1e-3


def course_square(stretch=1.0, z_offset=0.0):
    """The course's square_mesh.generate in the x-z plane: nodes (25, 3) and edges (72, 2)."""
    n = N_SEG + 1
    x = np.array([[-SIDE / 2 + i * SIDE / N_SEG, 0.0, -SIDE / 2 + j * SIDE / N_SEG] for i in range(n) for j in range(n)])
    edges = []
    for i in range(N_SEG):
        for j in range(n):
            edges.append([i * n + j, (i + 1) * n + j])
    for i in range(n):
        for j in range(N_SEG):
            edges.append([i * n + j, i * n + j + 1])
    for i in range(N_SEG):
        for j in range(N_SEG):
            edges.append([i * n + j, (i + 1) * n + j + 1])
            edges.append([(i + 1) * n + j, i * n + j + 1])
    rest = x.copy()
    x[:, 0] *= stretch
    x[:, 2] += z_offset
    rest[:, 2] += z_offset
    return rest, x, np.array(edges)


def make_pd(H):
    w, V = np.linalg.eigh(H)
    return V @ np.diag(np.maximum(w, 0.0)) @ V.T


class CourseReference:
    """The course's implicit Euler with Newton, line search, DBC, barrier and friction, dense and unvectorized."""

    def __init__(self, rest, edges, mass, is_dbc, ground_normal=None, ground_origin=None, mu=0.0, kappa=0.0):
        self.edges, self.m, self.is_dbc = edges, mass, is_dbc
        self.l2 = np.array([np.sum((rest[i] - rest[j]) ** 2) for i, j in edges])
        self.gravity = np.array([0.0, 0.0, -G])
        self.n = None if ground_normal is None else np.asarray(ground_normal) / np.linalg.norm(ground_normal)
        self.o, self.mu, self.kappa = (None if ground_origin is None else np.asarray(ground_origin, float)), mu, kappa

    def IP(self, x, x_tilde, h, x_n, mu_lambda):
        val = 0.5 * np.sum(self.m[:, None] * (x - x_tilde) ** 2)
        pot = 0.0
        for (i, j), l2 in zip(self.edges, self.l2):
            diff = x[i] - x[j]
            pot += l2 * 0.5 * K * (diff @ diff / l2 - 1.0) ** 2
        pot -= np.sum(self.m * (x @ self.gravity))
        if self.n is not None:
            for i in range(len(x)):
                d = self.n @ (x[i] - self.o)
                if d < DHAT:
                    if d <= 0.0:
                        return math.inf
                    s = d / DHAT
                    pot += self.kappa * DHAT / 2 * (s - 1) * math.log(s)
            T = np.eye(3) - np.outer(self.n, self.n)
            eps = EPSV * h
            for i in range(len(x)):
                if mu_lambda[i] > 0:
                    y = np.linalg.norm(T @ (x[i] - x_n[i]))
                    f0 = y if y >= eps else y * y * (-y / 3.0 + eps) / (eps * eps) + eps / 3.0
                    pot += mu_lambda[i] * f0
        return val + h * h * pot

    def search_dir(self, x, x_tilde, h, x_n, mu_lambda):
        g = (self.m[:, None] * (x - x_tilde)).ravel()
        H = np.diag(np.repeat(self.m, 3))
        for (i, j), l2 in zip(self.edges, self.l2):
            diff = x[i] - x[j]
            g_diff = 2 * K * (diff @ diff / l2 - 1) * diff
            H_diff = 2 * K / l2 * (2 * np.outer(diff, diff) + (diff @ diff - l2) * np.eye(3))
            H_local = make_pd(np.block([[H_diff, -H_diff], [-H_diff, H_diff]]))
            idx = np.r_[3 * i:3 * i + 3, 3 * j:3 * j + 3]
            g[idx] += h * h * np.concatenate([g_diff, -g_diff])
            H[np.ix_(idx, idx)] += h * h * H_local
        g += h * h * np.tile(-self.gravity, len(x)) * np.repeat(self.m, 3)
        if self.n is not None:
            for i in range(len(x)):
                d = self.n @ (x[i] - self.o)
                if d < DHAT:
                    s = d / DHAT
                    g[3 * i:3 * i + 3] += h * h * self.kappa / 2 * (math.log(s) + (s - 1) / s) * self.n
                    H[3 * i:3 * i + 3, 3 * i:3 * i + 3] += h * h * self.kappa / (2 * d * d * DHAT) * DHAT * (d + DHAT) * np.outer(self.n, self.n)
            T = np.eye(3) - np.outer(self.n, self.n)
            eps = EPSV * h
            for i in range(len(x)):
                if mu_lambda[i] > 0:
                    u = T @ (x[i] - x_n[i])
                    y = np.linalg.norm(u)
                    f1_div_y = 1.0 / y if y >= eps else (-y + 2.0 * eps) / (eps * eps)
                    g[3 * i:3 * i + 3] += h * h * mu_lambda[i] * f1_div_y * u
                    inner = f1_div_y * np.eye(3)
                    if y != 0:
                        inner += (-1.0 / (y * y) if y >= eps else -1.0 / (eps * eps)) / y * np.outer(u, u)
                    H[3 * i:3 * i + 3, 3 * i:3 * i + 3] += h * h * mu_lambda[i] * T @ make_pd(inner) @ T
        for i in np.nonzero(self.is_dbc)[0]:  # the course's DBC: identity rows and columns, zero gradient
            H[3 * i:3 * i + 3, :] = 0.0
            H[:, 3 * i:3 * i + 3] = 0.0
            H[3 * i:3 * i + 3, 3 * i:3 * i + 3] = np.eye(3)
            g[3 * i:3 * i + 3] = 0.0
        return np.linalg.solve(H, -g).reshape(-1, 3)

    def init_step_size(self, x, p):
        alpha = 1.0
        if self.n is not None:
            for i in range(len(x)):
                rate = self.n @ p[i]
                if rate < 0:
                    alpha = min(alpha, 0.9 * (self.n @ (x[i] - self.o)) / -rate)
        return alpha

    def step_forward(self, x, v, h, tol):
        x_tilde = x + v * h
        x_n = x.copy()
        mu_lambda = np.zeros(len(x))
        if self.n is not None and self.mu > 0:
            for i in range(len(x)):
                d = self.n @ (x[i] - self.o)
                if d < DHAT:
                    s = d / DHAT
                    mu_lambda[i] = self.mu * -self.kappa / 2 * (math.log(s) + (s - 1) / s)
        E_last = self.IP(x, x_tilde, h, x_n, mu_lambda)
        p = self.search_dir(x, x_tilde, h, x_n, mu_lambda)
        while np.abs(p).max() / h > tol:
            alpha = self.init_step_size(x, p)
            while self.IP(x + alpha * p, x_tilde, h, x_n, mu_lambda) > E_last:
                alpha /= 2
            x = x + alpha * p
            E_last = self.IP(x, x_tilde, h, x_n, mu_lambda)
            p = self.search_dir(x, x_tilde, h, x_n, mu_lambda)
        return x, (x - x_n) / h


SCENES = {
    # name: (h, steps, initial stretch, z offset, DBC top corners, ground normal (x, z), ground origin z, mu)
    "dirichlet": (0.02, 40, 1.4, 0.0, True, None, None, 0.0),
    "contact": (0.01, 80, 1.0, 0.0, False, (0.0, 1.0), -1.0, 0.0),
    "friction": (0.01, 80, 1.0, 0.0, False, (0.1, 1.0), -1.0, 0.11),
}


@pytest.mark.parametrize("name", sorted(SCENES))
def test_newton_follows_the_course_trajectory(name):
    h, steps, stretch, z_offset, hung, normal_xz, origin_z, mu = SCENES[name]
    rest, x0, edges = course_square(stretch, z_offset)
    count = len(rest)
    is_dbc = np.zeros(count, bool)
    if hung:
        is_dbc[[N_SEG, count - 1]] = True  # the course's top corners
    total_mass = RHO * SIDE * SIDE
    model = build_model(rest, edges, pinned=is_dbc, total_mass=total_mass, mass_distribution="UNIFORM")
    config = SolverConfig(solver="NEWTON", substeps=1, damping=0.0, stiffness=4.0 * K, gravity=(0.0, 0.0, -G), newton_tolerance=1e-2)
    solver = make_solver(model, config)
    colliders = []
    normal = origin = None
    if normal_xz is not None:
        normal = np.array([normal_xz[0], 0.0, normal_xz[1]])
        origin = np.array([0.0, 0.0, origin_z])
        colliders = [GroundPlane(origin, normal, thickness=DHAT, friction=mu)]
    reference = CourseReference(rest, edges, model.mass, is_dbc, normal, origin, mu, kappa=solver.kappa[0])
    assert solver.kappa[0] == pytest.approx(0.25 * 1e5, rel=0.02)  # the course's kappa x contact area

    state = State(x0.copy(), np.zeros_like(x0))
    x_ref, v_ref = x0.copy(), np.zeros_like(x0)
    worst = 0.0
    for _ in range(steps):
        advance_frame(solver, state, h, 1, colliders, pin_targets=x0)  # the course holds its DBC nodes where they start
        x_ref, v_ref = reference.step_forward(x_ref, v_ref, h, 1e-2)
        worst = max(worst, float(np.abs(state.x - x_ref).max()))
    assert worst < 1e-6, worst
    assert np.abs(x_ref - x0).max() > 0.05  # the scene did move (the comparison is not trivial)
