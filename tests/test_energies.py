"""Every energy term of solvers/energies against finite differences of itself, and PSD after projection.

value -> gradient and gradient -> hessian are checked with central differences on random perturbed
configurations; the projected Hessian of every term must be positive semi-definite.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from solvers import GroundPlane, Sphere
from solvers.builder import grid_cloth
from solvers.collision.barriers.face_barrier import FaceColliderBarrier, FaceColliderFriction
from solvers.collision.barriers.friction import ColliderFriction
from solvers.collision.barriers.log_barrier import ColliderBarrier
from solvers.energies import (
    Gravity,
    HookeSprings,
    Inertia,
    IsometricBending,
    NeoHookean,
    SquaredLengthSprings,
    hinges_from_triangles,
)
from solvers.material import lame_parameters

RNG = np.random.default_rng(7)


def two_tets():
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], float)
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    return x, tets


def cloth_patch():
    x, edges, tris = grid_cloth(4, size=1.0)
    return x, edges, tris


def case_inertia():
    x = RNG.normal(size=(5, 3))
    mass = RNG.uniform(0.5, 2.0, 5)
    return Inertia(mass, x + RNG.normal(size=x.shape)), x


def case_gravity():
    x = RNG.normal(size=(5, 3))
    return Gravity(RNG.uniform(0.5, 2.0, 5), (0.0, 0.0, -9.81)), x


def case_hooke():
    x, edges, _ = cloth_patch()
    rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    # Some springs compressed, some stretched: the projection has work to do.
    return HookeSprings(edges, rest, RNG.uniform(10, 100, len(edges))), x * RNG.uniform(0.7, 1.3, x.shape)


def case_squared_length():
    x, edges, _ = cloth_patch()
    rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    return SquaredLengthSprings(edges, rest, RNG.uniform(10, 100, len(edges))), x * RNG.uniform(0.7, 1.3, x.shape)


def case_neo_hookean():
    x, tets = two_tets()
    mu, lam = lame_parameters(1e4, 0.4)
    energy = NeoHookean(x, tets, np.full(2, mu), np.full(2, lam))
    return energy, x + 0.15 * RNG.normal(size=x.shape)


def case_bending():
    x, _, tris = cloth_patch()
    hinges = hinges_from_triangles(tris)
    energy = IsometricBending(x, hinges, 0.3)
    bent = x.copy()
    bent[:, 2] = 0.3 * np.sin(2.0 * x[:, 0]) + 0.1 * RNG.normal(size=len(x))
    return energy, bent


def case_bending_curved_rest():
    x, _, tris = cloth_patch()
    rest = x.copy()
    rest[:, 2] = 0.4 * x[:, 0] ** 2  # a curved rest shape: the rest-curvature term is active
    energy = IsometricBending(rest, hinges_from_triangles(tris), 0.3)
    return energy, rest + 0.05 * RNG.normal(size=x.shape)


def case_ground_barrier():
    x = RNG.uniform(-1, 1, (6, 3))
    x[:, 2] = RNG.uniform(0.001, 0.02, 6)  # inside and outside the activation distance 0.01
    ground = GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01)
    return ColliderBarrier(ground, np.full(6, 50.0)), x


def case_sphere_barrier():
    direction = RNG.normal(size=(6, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    x = direction * (1.0 + RNG.uniform(0.001, 0.02, 6))[:, None] + 0.5
    sphere = Sphere((0.5, 0.5, 0.5), 1.0, thickness=0.01)
    return ColliderBarrier(sphere, np.full(6, 50.0)), x


def case_friction():
    x_prev = RNG.uniform(-1, 1, (6, 3))
    x_prev[:, 2] = 0.005
    slip = np.concatenate([RNG.normal(size=(3, 3)) * 1e-4, RNG.normal(size=(3, 3)) * 0.1])  # sticking and sliding
    ground = GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.3)
    friction = ColliderFriction(ground, x_prev, np.full(6, 20.0), eps=1e-3)
    return friction, x_prev + slip


def patch_over_sphere():
    """A 4 x 4 cloth patch lying over a unit sphere with its faces' interiors 1-8 mm from the surface (inside the
    1 cm reach) while its corners are farther: the face terms act between vertices."""
    x, _, tris = cloth_patch()
    x = x - x.mean(axis=0)
    x[:, 2] = 1.0 + 0.004 + RNG.uniform(-0.003, 0.003, len(x))
    return x, tris, Sphere((0.0, 0.0, 0.0), 1.0, thickness=0.0, friction=0.3)


def case_face_friction():
    x_prev, tris, sphere = patch_over_sphere()
    barrier = FaceColliderBarrier(sphere, tris, 50.0, 0.01)
    friction = FaceColliderFriction(sphere, tris, x_prev, barrier, eps=1e-3)
    assert len(friction.near) > 0
    slip = RNG.normal(size=x_prev.shape) * np.where(np.arange(len(x_prev)) % 2, 1e-4, 0.05)[:, None]
    return friction, x_prev + slip


CASES = {name[len("case_"):]: f for name, f in globals().items() if name.startswith("case_")}


def case_face_barrier():
    """The sphere-face barrier: the exact Hessian of the barrier on the exact sphere-triangle distance."""
    x, tris, sphere = patch_over_sphere()
    return FaceColliderBarrier(sphere, tris, 50.0, 0.01), x


CASES["face_barrier"] = case_face_barrier
GAUSS_NEWTON_CASES = {}


def dense_hessian(energy, x, project):
    h = energy.hessian(x, project=project)
    n = len(x)
    rows = (3 * h.rows[:, None, None] + np.arange(3)[None, :, None]).repeat(3, axis=2)
    cols = (3 * h.cols[:, None, None] + np.arange(3)[None, None, :]).repeat(3, axis=1)
    return sp.coo_matrix((h.blocks.ravel(), (rows.ravel(), cols.ravel())), shape=(3 * n, 3 * n)).toarray()


@pytest.mark.parametrize("name", sorted(CASES) + sorted(GAUSS_NEWTON_CASES))
def test_gradient_matches_finite_differences_of_value(name):
    energy, x = {**CASES, **GAUSS_NEWTON_CASES}[name]()
    assert energy.value(x) != 0.0  # the term is active in this configuration
    g = energy.gradient(x).ravel()
    eps = 1e-6
    fd = np.empty(x.size)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        fd[k] = (energy.value(x + step.reshape(x.shape)) - energy.value(x - step.reshape(x.shape))) / (2 * eps)
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(fd).max())), np.abs(g - fd).max()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_matches_finite_differences_of_gradient(name):
    energy, x = CASES[name]()
    H = dense_hessian(energy, x, project=False)
    eps = 1e-6
    fd = np.empty_like(H)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        fd[:, k] = (energy.gradient(x + step.reshape(x.shape)) - energy.gradient(x - step.reshape(x.shape))).ravel() / (2 * eps)
    assert np.allclose(H, fd, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(fd).max())), np.abs(H - fd).max()
    assert np.allclose(H, H.T, atol=1e-9 * max(1.0, np.abs(H).max()))


@pytest.mark.parametrize("name", sorted(CASES) + sorted(GAUSS_NEWTON_CASES))
def test_projected_hessian_is_positive_semidefinite(name):
    energy, x = {**CASES, **GAUSS_NEWTON_CASES}[name]()
    H = dense_hessian(energy, x, project=True)
    scale = max(1.0, np.abs(H).max())
    assert np.linalg.eigvalsh(0.5 * (H + H.T)).min() >= -1e-9 * scale


@pytest.mark.parametrize("name", sorted(CASES) + sorted(GAUSS_NEWTON_CASES))
def test_stencil_is_fixed(name):
    energy, x = {**CASES, **GAUSS_NEWTON_CASES}[name]()
    a = energy.hessian(x)
    b = energy.hessian(x + 1e-3 * RNG.normal(size=x.shape))
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.cols, b.cols)


def test_hooke_projected_hessian_is_the_clamped_spring_stiffness():
    """The projected Hooke Hessian is, per spring, K_e = k [max(1 - L/l, 0) (I - n n^T) + n n^T] (Choi and Ko 2002's
    clamp, which implicit Euler's mass-spring system is built from) at blocks (i, i), (j, j) and -K_e at (i, j),
    (j, i): a compressed spring keeps only its stiffness along n, a stretched one also k (1 - L/l) across."""
    x, edges, _ = cloth_patch()
    rest = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    k = RNG.uniform(10, 100, len(edges))
    springs = HookeSprings(edges, rest, k)
    x = x * RNG.uniform(0.7, 1.3, x.shape)
    d = x[edges[:, 0]] - x[edges[:, 1]]
    length = np.linalg.norm(d, axis=1)
    assert np.any(length < rest) and np.any(length > rest)  # both sides of the clamp are exercised
    n = d / length[:, None]
    nn = n[:, :, None] * n[:, None, :]
    K = k[:, None, None] * (np.maximum(1.0 - rest / length, 0.0)[:, None, None] * (np.eye(3) - nn) + nn)
    H = springs.hessian(x, project=True)
    assert H.blocks.shape == (4 * len(edges), 3, 3)
    assert np.allclose(H.blocks, np.concatenate([K, K, -K, -K]), rtol=1e-12, atol=0.0)
    assert np.array_equal(H.rows, np.concatenate([edges[:, 0], edges[:, 1], edges[:, 0], edges[:, 1]]))
    assert np.array_equal(H.cols, np.concatenate([edges[:, 0], edges[:, 1], edges[:, 1], edges[:, 0]]))
