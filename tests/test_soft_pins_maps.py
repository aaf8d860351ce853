"""Soft pins (a spring toward the rig's target) and per-vertex stiffness and bending maps, against physics."""
import numpy as np
import pytest

from solvers import SolverConfig, State, build_model, make_solver
from solvers.builder import grid_cloth
from solvers.energies.bending import hinges_from_triangles
from solvers.frame import advance_frame
from solvers.material import MIN_MAP_FRACTION, edge_stiffness_scale, hinge_bending_stiffness, map_scale
from solvers.soft_pins import GoalSprings, soften_pins

SOLVERS = ("SYMPLECTIC_EULER", "IMPLICIT_EULER", "PBD", "XPBD", "PROJECTIVE", "NEWTON")
G = 9.81
FRAME = 1.0 / 24.0


def _config(solver, **kw):
    settings = dict(solver=solver, gravity=(0.0, 0.0, -G), damping=4.0, newton_tolerance=1e-6)
    if solver == "SYMPLECTIC_EULER":
        settings["substeps"] = 40
    settings.update(kw)
    return SolverConfig(**settings)


def _hanging_pair(pin_stiffness, mass=0.2):
    """Two particles 0.1 m apart joined by an edge, both pinned, each of mass / 2, softened to ``pin_stiffness``."""
    model = build_model([[0.0, 0.0, 1.0], [0.1, 0.0, 1.0]], [[0, 1]], pinned=[True, True], total_mass=mass,
                        mass_distribution="UNIFORM")
    return soften_pins(model, pin_stiffness)


@pytest.mark.parametrize("solver", SOLVERS)
def test_soft_pin_hangs_m_g_over_k_below_its_target(solver):
    """Spring law: a particle of mass m on a soft pin of stiffness k rests k d = m g below its target (within 1%)."""
    k, mass = 50.0, 0.2
    model = _hanging_pair(k, mass)
    assert np.all(model.inv_mass > 0.0) and len(model.goal_particles) == 2
    sim = make_solver(model, _config(solver, stiffness=1e3))
    state = State.at_rest(model)
    targets = model.rest_positions.copy()
    for _ in range(96):
        advance_frame(sim, state, FRAME, sim.config.substeps, (), targets)
    sag = model.rest_positions[:, 2] - state.x[:, 2]
    expected = 0.5 * mass * G / k
    assert np.allclose(sag, expected, rtol=0.01), (sag, expected)
    assert np.allclose(state.x[:, :2], model.rest_positions[:, :2], atol=1e-6)


@pytest.mark.parametrize("solver", ("XPBD", "IMPLICIT_EULER", "NEWTON", "PROJECTIVE"))
def test_soft_pins_follow_a_moving_target(solver):
    """The targets move 0.3 m sideways over a second: the soft-pinned pair follows them and rests m g / k below."""
    k, mass = 200.0, 0.2
    model = _hanging_pair(k, mass)
    sim = make_solver(model, _config(solver, stiffness=1e3))
    state = State.at_rest(model)
    for frame in range(1, 73):
        shift = 0.3 * min(frame / 24.0, 1.0)
        advance_frame(sim, state, FRAME, sim.config.substeps, (), model.rest_positions + [shift, 0.0, 0.0])
    assert np.allclose(state.x[:, 0] - model.rest_positions[:, 0], 0.3, atol=2e-3)
    assert np.allclose(model.rest_positions[:, 2] - state.x[:, 2], 0.5 * mass * G / k, rtol=0.02)


@pytest.mark.parametrize("solver", ("XPBD", "IMPLICIT_EULER"))
def test_pin_stiffness_zero_keeps_hard_pins_exact(solver):
    """soften_pins with 0 returns the model unchanged: the pins stand exactly on their targets."""
    vertices, edges, triangles = grid_cloth(5, size=1.0)
    pinned = np.zeros(len(vertices), bool)
    pinned[[20, 24]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned)
    assert soften_pins(model, 0.0) is model
    sim = make_solver(model, _config(solver))
    state = State.at_rest(model)
    targets = vertices + [0.0, 0.2, 0.1]
    for _ in range(5):
        advance_frame(sim, state, FRAME, sim.config.substeps, (), targets)
    assert np.array_equal(state.x[pinned], targets[pinned])


def test_goal_springs_gradient_and_hessian_match_finite_differences():
    model = _hanging_pair(30.0)
    model.goal_positions[:] += [[0.01, -0.02, 0.03], [0.0, 0.01, -0.01]]
    energy = GoalSprings(model)
    x = model.rest_positions + np.random.default_rng(3).normal(scale=0.05, size=(2, 3))
    g = energy.gradient(x)
    eps = 1e-6
    for i in range(2):
        for a in range(3):
            dx = np.zeros_like(x)
            dx[i, a] = eps
            assert abs((energy.value(x + dx) - energy.value(x - dx)) / (2 * eps) - g[i, a]) < 1e-6
    H = energy.hessian(x)
    assert np.allclose(H.blocks, 30.0 * np.eye(3))


# --- maps -----------------------------------------------------------------------------------------------------


def test_map_scale_is_linear_with_a_floor():
    assert map_scale(1.0) == 1.0
    assert map_scale(0.0) == MIN_MAP_FRACTION
    assert np.isclose(map_scale(0.5), MIN_MAP_FRACTION + 0.5 * (1 - MIN_MAP_FRACTION))


def _strip(n=21, length=1.0, width=0.05):
    """A vertical strip of ladder quads, top pair pinned: (vertices, edges, triangles, pinned), z from 0 to -length."""
    z = -np.linspace(0.0, length, n)
    vertices = np.concatenate([np.stack([np.zeros(n), np.zeros(n), z], 1), np.stack([np.full(n, width), np.zeros(n), z], 1)])
    a = np.arange(n - 1)
    b = a + n
    triangles = np.concatenate([np.stack([a, b, a + 1], 1), np.stack([a + 1, b, b + 1], 1)])
    edges = np.concatenate([np.stack([a, a + 1], 1), np.stack([b, b + 1], 1), np.stack([np.arange(n), np.arange(n) + n], 1),
                            np.stack([a + 1, b], 1)])
    pinned = np.zeros(2 * n, bool)
    pinned[[0, n]] = True
    return vertices, edges, triangles, pinned


@pytest.mark.parametrize("solver", ("XPBD", "IMPLICIT_EULER", "NEWTON", "PROJECTIVE"))
def test_stiffness_map_stretches_the_softer_half_by_the_mapped_ratio(solver):
    """A strip hangs from its top; its upper half has weight 1, its lower half 0.5 in the stiffness map. Weight acting
    at height z is the mass below it, so compare each half's stretch against a uniform strip's: the upper half's is
    the same, the lower half's larger by map_scale(1) / map_scale(0.5) (within 3%)."""
    n = 21
    vertices, edges, triangles, pinned = _strip(n)
    weights = np.where(np.arange(2 * n) % n <= n // 2, 1.0, 0.5)
    config = _config(solver, stiffness=3000.0, bending_stiffness=0.0, damping=6.0, iterations=4 if solver == "XPBD" else None)

    def hang(scale):
        model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=0.5)
        if scale is not None:
            model.particle_stiffness_scale = scale
        sim = make_solver(model, config)
        state = State.at_rest(model)
        for _ in range(120):
            advance_frame(sim, state, FRAME, sim.config.substeps, (), vertices)
        z = state.x[:n, 2]
        # The upper half's length, and the lower half's past the row where the weights change.
        return z[0] - z[n // 2], z[n // 2 + 1] - z[-1]

    uniform = hang(None)
    mapped = hang(map_scale(weights))
    rest = (0.5, (n - 2 - n // 2) / (n - 1))
    upper_ratio = (mapped[0] - rest[0]) / (uniform[0] - rest[0])
    lower_ratio = (mapped[1] - rest[1]) / (uniform[1] - rest[1])
    assert abs(upper_ratio - 1.0) < 0.03, upper_ratio
    expected = map_scale(1.0) / map_scale(0.5)
    assert abs(lower_ratio / expected - 1.0) < 0.03, (lower_ratio, expected)


def _cantilever(n=17, length=0.4, width=0.04):
    """A horizontal strip clamped at x = 0 (its first two columns pinned): (vertices, edges, triangles, pinned)."""
    x = np.linspace(0.0, length, n)
    vertices = np.concatenate([np.stack([x, np.zeros(n), np.zeros(n)], 1), np.stack([x, np.full(n, width), np.zeros(n)], 1)])
    a = np.arange(n - 1)
    b = a + n
    triangles = np.concatenate([np.stack([a, a + 1, b], 1), np.stack([a + 1, b + 1, b], 1)])
    edges = np.concatenate([np.stack([a, a + 1], 1), np.stack([b, b + 1], 1), np.stack([np.arange(n), np.arange(n) + n], 1),
                            np.stack([a + 1, b], 1)])
    pinned = np.zeros(2 * n, bool)
    pinned[[0, 1, n, n + 1]] = True
    return vertices, edges, triangles, pinned


@pytest.mark.parametrize("solver", ("XPBD", "IMPLICIT_EULER", "NEWTON", "PROJECTIVE"))
def test_bending_map_lets_a_cantilever_droop_more_where_scaled_down(solver):
    """A clamped cantilever droops under its weight; with its bending scaled to weight 0.2 in the map over the whole
    strip it droops more than at weight 1, and with the map only near the free end the droop lies in between."""
    n = 17
    vertices, edges, triangles, pinned = _cantilever(n)
    config = _config(solver, stiffness=2e4, bending_stiffness=0.02, damping=6.0, iterations=10 if solver == "XPBD" else None)
    column = np.arange(2 * n) % n

    def droop(weights):
        model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=0.002)
        if weights is not None:
            model.particle_bending_scale = map_scale(weights)
        sim = make_solver(model, config)
        state = State.at_rest(model)
        for _ in range(96):
            advance_frame(sim, state, FRAME, sim.config.substeps, (), vertices)
        return -float(state.x[[n - 1, 2 * n - 1], 2].mean())

    full = droop(None)
    soft = droop(np.full(2 * n, 0.2))
    tip_soft = droop(np.where(column > n // 2, 0.2, 1.0))
    assert full > 1e-3
    assert soft > 1.3 * full, (full, soft)
    assert full < tip_soft < soft, (full, tip_soft, soft)


def test_edges_and_hinges_take_the_mean_of_their_vertices_weights():
    vertices, edges, triangles = grid_cloth(3, size=1.0)
    model = build_model(vertices, edges, triangles)
    scale = np.linspace(0.1, 1.0, len(vertices))
    model.particle_stiffness_scale = scale
    model.particle_bending_scale = scale
    assert np.allclose(edge_stiffness_scale(model), scale[model.edge_indices].mean(axis=1))
    hinges = hinges_from_triangles(model.triangle_indices)
    assert np.allclose(hinge_bending_stiffness(model, hinges, 2.0), 2.0 * scale[hinges].mean(axis=1))
