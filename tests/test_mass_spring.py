"""Mass-spring solvers (explicit, symplectic, implicit Euler): physics checks, not snapshots."""
import math
import warnings

import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, deepest_penetration, grid_cloth
from solvers.frame import SimulationDiverged
from solvers.soft_pins import soften_pins
from solvers.mass_spring import (
    MIN_LINEAR_ITERATIONS,
    MassSpringSolver,
    explicit_stable_substep,
    highest_frequency_bound,
    substeps_needed,
)

K = 100.0  # N/m
TOTAL_MASS = 2.0  # kg: lumped over two particles, so the free mass is 1 kg
OMEGA = math.sqrt(K / (TOTAL_MASS / 2.0))
PERIOD = 2.0 * math.pi / OMEGA


def one_spring():
    """Particle 0 pinned at the origin, particle 1 free at (1, 0, 0): one spring of rest length 1 m."""
    return build_model(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), edges=[[0, 1]], pinned=[True, False],
                       total_mass=TOTAL_MASS)


def oscillate(method, dt, periods, stretch=0.1, damping=0.0):
    """Displacement of the free mass along the spring and total energy after every step."""
    model = one_spring()
    solver = MassSpringSolver(model, SolverConfig(solver=method, stiffness=K, damping=damping, gravity=(0, 0, 0)))
    state = State.at_rest(model)
    state.x[1, 0] += stretch
    steps = int(round(periods * PERIOD / dt))
    u, energy = np.empty(steps + 1), np.empty(steps + 1)
    u[0], energy[0] = stretch, solver.energy(state)
    for n in range(1, steps + 1):
        solver.step(state, dt)
        u[n], energy[n] = state.x[1, 0] - 1.0, solver.energy(state)
    return u, energy


def measured_period(u, dt):
    """Mean time between upward zero crossings, each located by linear interpolation."""
    c = np.nonzero((u[:-1] < 0.0) & (u[1:] >= 0.0))[0]
    t = (c + u[c] / (u[c] - u[c + 1])) * dt
    return float(np.mean(np.diff(t)))


def cloth(n=21, total_mass=1.0):
    """grid_cloth(n) of 10 m at height 3 m with its two corners along y = -5 pinned."""
    v, e, t = grid_cloth(n, size=10.0, height=3.0)
    pinned = np.zeros(len(v), bool)
    pinned[[0, n - 1]] = True
    return build_model(v, e, t, pinned=pinned, total_mass=total_mass)


def stretched(model, factor=1.05):
    state = State.at_rest(model)
    state.x[:, :2] *= factor
    return state


@pytest.mark.parametrize("method", ["SYMPLECTIC_EULER", "IMPLICIT_EULER"])
def test_one_spring_period_matches_2pi_sqrt_m_over_k(method):
    dt = 0.02 / OMEGA
    u, _ = oscillate(method, dt, periods=6)
    assert abs(measured_period(u, dt) / PERIOD - 1.0) < 0.01


def test_symplectic_euler_keeps_energy_bounded():
    dt = 0.05 / OMEGA
    _, energy = oscillate("SYMPLECTIC_EULER", dt, periods=50)
    assert np.max(np.abs(energy / energy[0] - 1.0)) < 0.03
    # No drift: the mean energy over the last period equals that over the first.
    per = int(round(PERIOD / dt))
    assert abs(energy[-per:].mean() / energy[:per].mean() - 1.0) < 1e-3


def test_explicit_euler_gains_energy_every_step():
    dt = 0.05 / OMEGA
    # 20 periods multiply the energy by ~500; a stretch of 1 cm keeps the mass on its side of the pin.
    _, energy = oscillate("EXPLICIT_EULER", dt, periods=20, stretch=0.01)
    assert np.all(np.diff(energy) > 0.0)
    # For a linear oscillator forward Euler multiplies the energy by exactly 1 + (omega dt)^2 per step.
    expected = (1.0 + (OMEGA * dt) ** 2) ** (len(energy) - 1)
    assert energy[-1] / energy[0] == pytest.approx(expected, rel=1e-6)
    assert energy[-1] > 10.0 * energy[0]


def test_implicit_euler_loses_energy_and_is_stable_far_past_the_explicit_limit():
    dt = 100.0 * explicit_stable_substep(one_spring(), K)
    assert OMEGA * dt == pytest.approx(200.0)
    u, energy = oscillate("IMPLICIT_EULER", dt, periods=2000 * OMEGA * dt / (2 * math.pi))  # 2000 steps
    assert np.all(np.isfinite(u))
    assert np.all(np.diff(energy) <= 1e-12 * energy[0])
    assert energy[-1] < 1e-6 * energy[0]


def test_stable_substep_is_exact_for_one_spring():
    # Symplectic Euler is stable iff omega dt < 2; the bound is exact for a mass on a pinned spring.
    assert explicit_stable_substep(one_spring(), K) == pytest.approx(2.0 / OMEGA, rel=1e-12)
    assert highest_frequency_bound(one_spring(), K) == pytest.approx(OMEGA, rel=1e-12)
    u_below, _ = oscillate("SYMPLECTIC_EULER", 0.98 * 2.0 / OMEGA, periods=200)
    u_above, _ = oscillate("SYMPLECTIC_EULER", 1.05 * 2.0 / OMEGA, periods=30)
    assert np.max(np.abs(u_below)) < 10 * 0.1
    assert np.max(np.abs(u_above)) > 1e3


def test_forward_euler_needs_damping_and_its_bound_holds():
    model = one_spring()
    assert explicit_stable_substep(model, K, "EXPLICIT_EULER", damping=0.0) == 0.0
    damping = 2.0
    limit = explicit_stable_substep(model, K, "EXPLICIT_EULER", damping=damping)
    assert limit == pytest.approx(damping / OMEGA**2)
    u_below, _ = oscillate("EXPLICIT_EULER", 0.9 * limit, periods=20, damping=damping)
    u_above, _ = oscillate("EXPLICIT_EULER", 2.0 * limit, periods=20, damping=damping)
    assert np.max(np.abs(u_below[-100:])) < 0.1
    assert np.max(np.abs(u_above[-100:])) > 10 * 0.1


def run_frames(solver, state, seconds, substeps, colliders=(), fps=24):
    stats = None
    for _ in range(int(round(seconds * fps))):
        stats = advance_frame(solver, state, 1.0 / fps, substeps, colliders)
    return stats


def test_symplectic_cloth_is_stable_below_the_bound_and_explodes_above():
    model = cloth(21)
    k = 1.0e3
    limit = explicit_stable_substep(model, k)
    config = SolverConfig(solver="SYMPLECTIC_EULER", stiffness=k, damping=0.0)
    state = State.at_rest(model)
    run_frames(MassSpringSolver(model, config), state, 0.5, math.ceil((1 / 24) / (0.95 * limit)))
    assert np.all(np.isfinite(state.x))
    with pytest.raises(SimulationDiverged):
        run_frames(MassSpringSolver(model, config), State.at_rest(model), 0.5, math.ceil((1 / 24) / (2.0 * limit)))


def test_stable_substep_is_exact_for_a_soft_pin_alone():
    # A 1 kg mass on its goal spring (one_spring's pin made soft, the edge without stiffness) oscillates at
    # sqrt(k_g / m): the bound is exact there.
    model = soften_pins(one_spring(), K)
    assert highest_frequency_bound(model, 0.0) == pytest.approx(OMEGA, rel=1e-12)


def test_symplectic_cloth_with_stiff_soft_pins_is_stable_at_the_bound():
    # Soft pins 100x stiffer than the edges set the highest frequency: a step that ignored them explodes, the bound's
    # step (which counts them) does not.
    k, k_pin = 1.0e3, 1.0e5
    model = soften_pins(cloth(9), k_pin)
    edges_only = explicit_stable_substep(cloth(9), k)
    limit = explicit_stable_substep(model, k)
    assert limit < 0.5 * edges_only
    config = SolverConfig(solver="SYMPLECTIC_EULER", stiffness=k, damping=0.0)
    state = State.at_rest(model)
    run_frames(MassSpringSolver(model, config), state, 0.5, math.ceil((1 / 24) / (0.95 * limit)))
    assert np.all(np.isfinite(state.x))
    with pytest.raises(SimulationDiverged):
        run_frames(MassSpringSolver(model, config), State.at_rest(model), 0.5, math.ceil((1 / 24) / (0.95 * edges_only)))


def test_explicit_euler_past_its_limit_raises_instead_of_nan():
    model = cloth(21)
    config = SolverConfig(solver="EXPLICIT_EULER", stiffness=1.0e4, substeps=10)
    state = State.at_rest(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow / invalid arithmetic on the way
        with pytest.raises(SimulationDiverged):
            run_frames(MassSpringSolver(model, config), state, 1.0, config.substeps)


def test_stability_message_names_the_limit_and_a_working_substep_count(addon):
    explicit_stability_message = addon.operators.advice.explicit_stability_message
    model = cloth(21)
    k = 1.0e4
    needed = substeps_needed(1 / 24, model, k)
    text = explicit_stability_message(1 / 24, 10, model, k)
    assert f"at least {needed}" in text and "1/24 s ÷ 10 substeps" in text and "IMPLICIT_EULER" in text
    assert needed * explicit_stable_substep(model, k) >= 1 / 24 > (needed - 1) * explicit_stable_substep(model, k)
    forward = explicit_stability_message(1 / 24, 10, model, k, solver="EXPLICIT_EULER", damping=0.0)
    assert "unless damped" in forward


def test_jacobi_and_cg_solve_the_same_system():
    model = cloth(11)
    velocities = []
    for linear_solver in ("CG", "JACOBI"):
        config = SolverConfig(solver="IMPLICIT_EULER", linear_solver=linear_solver, stiffness=1.0e3, linear_tolerance=1e-8)
        state = stretched(model)
        state.v[:] = np.random.default_rng(1).normal(size=state.v.shape) * ~model.pinned[:, None]
        stats = MassSpringSolver(model, config).step(state, 1 / 240)
        assert stats.linear_residual < 1e-8 and stats.iterations > 1
        velocities.append(state.v)
    cg, jacobi = velocities
    assert np.linalg.norm(cg - jacobi) / np.linalg.norm(cg) < 1e-6


def test_cg_needs_far_fewer_iterations_than_jacobi_on_a_large_stiff_cloth():
    model = cloth(40)
    stats, velocities = {}, {}
    for linear_solver in ("CG", "JACOBI"):
        # config.iterations raises the ceiling on linear iterations so that Jacobi, too, reaches the tolerance.
        config = SolverConfig(solver="IMPLICIT_EULER", linear_solver=linear_solver, stiffness=1.0e4, iterations=20000,
                              linear_tolerance=1e-8)
        state = stretched(model)
        stats[linear_solver] = MassSpringSolver(model, config).step(state, 1 / 240)
        velocities[linear_solver] = state.v
    assert stats["CG"].linear_residual < 1e-8 and stats["JACOBI"].linear_residual < 1e-8
    assert stats["JACOBI"].iterations > 10 * stats["CG"].iterations  # measured: 13896 vs 295
    cg, jacobi = velocities["CG"], velocities["JACOBI"]
    assert np.linalg.norm(cg - jacobi) / np.linalg.norm(cg) < 1e-6


def test_jacobi_stops_at_its_ceiling_and_reports_the_residual():
    model = cloth(40)
    config = SolverConfig(solver="IMPLICIT_EULER", linear_solver="JACOBI", stiffness=1.0e4, iterations=5)
    stats = MassSpringSolver(model, config).step(stretched(model), 1 / 240)
    assert stats.iterations == max(config.iterations, MIN_LINEAR_ITERATIONS)
    assert 1e-8 < stats.linear_residual < 1.0


def test_implicit_euler_cloth_is_bounded_far_past_the_explicit_limit():
    model = cloth(21)
    k = 1.0e4
    dt = 100.0 * explicit_stable_substep(model, k)
    config = SolverConfig(solver="IMPLICIT_EULER", stiffness=k, damping=0.0)
    solver = MassSpringSolver(model, config)
    state = stretched(model, 1.2)
    e0 = solver.energy(state)
    for _ in range(30):
        stats = advance_frame(solver, state, dt, 1)
    assert np.all(np.isfinite(state.x)) and stats.max_strain < 0.5
    assert solver.energy(state) < e0


@pytest.mark.parametrize(
    "method, stiffness, damping",
    [
        ("EXPLICIT_EULER", 5.0, 20.0),  # forward Euler is stable only when damped, so: soft and damped
        ("SYMPLECTIC_EULER", 1.0e3, 0.1),
        ("IMPLICIT_EULER", 1.0e4, 0.1),
    ],
)
def test_cloth_on_sphere(method, stiffness, damping):
    model = cloth(21)
    if method == "IMPLICIT_EULER":
        substeps = 2
    else:
        substeps = substeps_needed(1 / 24, model, stiffness, method, damping)
    config = SolverConfig(solver=method, stiffness=stiffness, damping=damping)
    sphere = Sphere((0.0, 0.0, 0.0), 2.7)
    state = State.at_rest(model)
    run_frames(MassSpringSolver(model, config), state, 2.0, substeps, [sphere])
    pinned = model.pinned
    assert np.array_equal(state.x[pinned], model.rest_positions[pinned])
    assert np.all(np.isfinite(state.x)) and np.all(np.isfinite(state.v))
    assert deepest_penetration(state.x, [sphere]) < 1e-6
    # It fell onto the sphere: the free particles went below the top of the sphere.
    assert state.x[~pinned, 2].min() < 2.7


def test_pins_receive_no_force():
    model = cloth(11)
    for solver in ("EXPLICIT_EULER", "SYMPLECTIC_EULER", "IMPLICIT_EULER"):
        config = SolverConfig(solver=solver, stiffness=1.0e3, damping=0.0)
        state = stretched(model)
        state.v[model.pinned] = (0.5, -0.25, 1.0)  # kinematic velocity set by the caller
        x0 = state.x[model.pinned].copy()
        MassSpringSolver(model, config).step(state, 1e-3)
        assert np.allclose(state.v[model.pinned], (0.5, -0.25, 1.0), rtol=0, atol=1e-12)
        assert np.allclose(state.x[model.pinned], x0 + 1e-3 * np.array([0.5, -0.25, 1.0]), rtol=0, atol=1e-12)


def rigged_cape(columns=21, rows=11):
    """A 2 m x 1 m cape hanging in the XZ plane (``columns`` x ``rows`` vertices, the mesh's quad edges only, quads
    split along one diagonal, as the bridge builds a Grid) with its top row, the collar, pinned."""
    x, z = np.meshgrid(np.linspace(-1.0, 1.0, columns), np.linspace(2.0, 1.0, rows))
    vertices = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], axis=1)
    index = np.arange(rows * columns).reshape(rows, columns)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    edges = quads[:, [[0, 1], [1, 2], [2, 3], [3, 0]]].reshape(-1, 2)
    pinned = np.zeros(len(vertices), bool)
    pinned[index[0]] = True
    return build_model(vertices, edges, quads[:, [[0, 1, 2], [0, 2, 3]]].reshape(-1, 3), pinned=pinned, quads=quads)


def test_implicit_euler_at_its_defaults_follows_a_collar_a_rig_moves_at_1_m_per_s():
    # The pins' motion is a boundary condition of the step, not part of what its line search may shorten: a collar
    # starting at 1 m/s, held there for a second and stopped, bakes in ordinary steps with the pins on their targets.
    model = rigged_cape()
    config = SolverConfig(solver="IMPLICIT_EULER")
    solver = MassSpringSolver(model, config)
    state = State.at_rest(model)
    pinned, rest = model.pinned, model.rest_positions
    hem = np.arange(model.particle_count - 21, model.particle_count)
    for frame in range(2, 49):
        targets = rest + (min((frame - 1) / 24, 1.0), 0.0, 0.0)
        stats = advance_frame(solver, state, 1 / 24, config.substeps, (), targets)
        assert np.array_equal(state.x[pinned], targets[pinned]), frame
        assert stats.max_strain < 0.02, frame
        assert stats.split_steps == 0, frame
    assert np.all(np.isfinite(state.x))
    assert state.x[hem, 0].mean() > 0.5  # the hem followed the collar


def test_implicit_euler_drops_a_tet_cube_on_the_ground():
    corners = np.array([[i, j, k] for k in (0, 1) for j in (0, 1) for i in (0, 1)], float) + (0.0, 0.0, 1.0)
    tets = [[0, 1, 2, 4], [1, 3, 2, 7], [1, 4, 5, 7], [2, 4, 6, 7], [1, 2, 4, 7]]
    model = build_model(corners, tets=tets, total_mass=1.0)
    assert model.edge_count == 18
    ground = GroundPlane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    config = SolverConfig(solver="IMPLICIT_EULER", stiffness=1.0e4)
    solver = MassSpringSolver(model, config)
    state = State.at_rest(model)
    lowest = np.inf
    for _ in range(36):
        stats = advance_frame(solver, state, 1 / 24, 4, [ground])
        lowest = min(lowest, state.x[:, 2].min())
    assert np.all(np.isfinite(state.x))
    assert lowest >= -1e-12 and deepest_penetration(state.x, [ground]) < 1e-9
    assert state.x[:, 2].min() < 0.05  # it reached the ground
    assert stats.max_strain < 0.05 and stats.volume_error < 0.1
