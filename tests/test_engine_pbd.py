"""Physics of the position-based solvers (PBD, XPBD), colliders and pins: pure engine, no Blender."""
import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, deepest_penetration, grid_cloth, make_solver
from solvers.colouring import colour_constraints
from solvers.collision.narrow_phase.primitives import closest_points_on_triangles
from solvers.model import edge_strain

G = 9.81


def lab_cloth(n=21, height=3.0, mass=1.0):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=height)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    return build_model(vertices, edges, triangles, pinned=pinned, total_mass=mass)


def vertical_spring(length=1.0, particle_mass=0.5, segments=1):
    """A chain hanging from a pinned top particle along -z; each particle gets ``particle_mass``."""
    z = -np.linspace(0.0, length, segments + 1)
    vertices = np.stack([np.zeros_like(z), np.zeros_like(z), z], 1)
    edges = np.stack([np.arange(segments), np.arange(1, segments + 1)], 1)
    pinned = np.zeros(segments + 1, bool)
    pinned[0] = True
    # Loose edges lump by length: the end particles get half a segment's share, the inner ones a whole.
    model = build_model(vertices, edges, pinned=pinned, total_mass=particle_mass * (segments + 1))
    return model


@pytest.mark.parametrize("solver", ["PBD", "XPBD"])
def test_free_fall_matches_half_g_t_squared(solver):
    vertices = np.array([[0.0, 0.0, 10.0], [0.1, 0.0, 10.0]])
    model = build_model(vertices, [[0, 1]], total_mass=2.0)
    config = SolverConfig(solver=solver, substeps=10, damping=0.0, gravity=(0.0, 0.0, -G))
    state = State.at_rest(model)
    sim = make_solver(model, config)
    frame_dt, frames = 1.0 / 24.0, 24
    for _ in range(frames):
        advance_frame(sim, state, frame_dt, config.substeps)
    t = frame_dt * frames
    drop = 10.0 - state.x[:, 2]
    # Symplectic stepping is first-order: its drop exceeds 1/2 g t^2 by 1/2 g t dt, no more.
    dt = frame_dt / config.substeps
    assert np.allclose(drop, 0.5 * G * t**2, atol=0.5 * G * t * dt + 1e-9)
    assert np.allclose(drop, 0.5 * G * t**2, rtol=0.01)
    assert np.allclose(state.v[:, 2], -G * t, rtol=1e-9)
    assert np.allclose(np.linalg.norm(state.x[0] - state.x[1]), 0.1)


@pytest.mark.parametrize("scheme", ["GAUSS_SEIDEL", "JACOBI"])
@pytest.mark.parametrize("solver", ["PBD", "XPBD"])
def test_cloth_on_sphere_and_ground_pins_hold_and_nothing_penetrates(solver, scheme):
    model = lab_cloth()
    colliders = [Sphere([0.0, 0.0, 0.0], 2.7, thickness=0.02, friction=0.3), GroundPlane([0.0, 0.0, -2.0], [0.0, 0.0, 1.0])]
    config = SolverConfig(solver=solver, constraint_scheme=scheme, substeps=8, iterations=5)
    sim = make_solver(model, config)
    state = State.at_rest(model)
    pins = model.pinned
    touched_sphere = False
    for _ in range(72):  # 3 s: the cloth drapes over the sphere and its free corners reach the ground
        advance_frame(sim, state, 1.0 / 24.0, config.substeps, colliders)
        assert np.array_equal(state.x[pins], model.rest_positions[pins])
        assert deepest_penetration(state.x, colliders) <= 1e-9
        # Faces, not vertices: a vertex rests up to its faces' sagitta further out
        # (collision.response.faces.sphere_pads).
        x, t = state.x, model.triangle_indices
        closest, _ = closest_points_on_triangles(np.zeros(3), x[t[:, 0]], x[t[:, 1]], x[t[:, 2]])
        touched_sphere |= bool(np.linalg.norm(closest, axis=1).min() - 2.7 < 0.03)
    assert touched_sphere
    assert np.all(np.isfinite(state.x))


def test_animated_pins_follow_their_targets():
    model = lab_cloth()
    config = SolverConfig(substeps=5)
    sim = make_solver(model, config)
    state = State.at_rest(model)
    for frame in range(1, 25):
        targets = model.rest_positions + np.array([0.1 * frame, 0.0, 0.0])
        advance_frame(sim, state, 1.0 / 24.0, config.substeps, (), targets)
        assert np.allclose(state.x[model.pinned], targets[model.pinned], atol=1e-12)


def strain_after(model, state, config, iterations):
    """RMS strain after one step of ``iterations`` sweeps from the same start state."""
    cfg = SolverConfig(**{**config.__dict__, "iterations": iterations})
    s = state.copy()
    return make_solver(model, cfg).step(s, 1.0 / 60.0).rms_strain


def distorted_free_cloth(n=15):
    """An unpinned cloth, stretched by 10% and jittered, at rest: every constraint can be met."""
    vertices, edges, triangles = grid_cloth(n, 10.0)
    model = build_model(vertices, edges, triangles)
    rng = np.random.default_rng(1)
    x = model.rest_positions * 1.1 + rng.normal(0.0, 0.05, model.rest_positions.shape)
    return model, State(x, np.zeros_like(x))


@pytest.mark.parametrize("solver", ["PBD", "XPBD"])
@pytest.mark.parametrize("scheme", ["GAUSS_SEIDEL", "JACOBI"])
def test_sweeps_reduce_the_constraint_error_with_iterations(scheme, solver):
    model, state = distorted_free_cloth()
    config = SolverConfig(solver=solver, constraint_scheme=scheme, gravity=(0.0, 0.0, 0.0), damping=0.0, stiffness=1e8)
    errors = [strain_after(model, state, config, k) for k in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert all(b < a for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.3 * errors[0], errors


@pytest.mark.parametrize("solver", ["PBD", "XPBD"])
def test_gauss_seidel_converges_faster_per_iteration_than_jacobi(solver):
    model, state = distorted_free_cloth()
    base = SolverConfig(solver=solver, gravity=(0.0, 0.0, 0.0), damping=0.0, stiffness=1e8)
    # GS projects each constraint fully, so its very first sweeps overshoot; from a few sweeps on it wins.
    for k in (8, 32, 128):
        gs = strain_after(model, state, SolverConfig(**{**base.__dict__, "constraint_scheme": "GAUSS_SEIDEL"}), k)
        jacobi = strain_after(model, state, SolverConfig(**{**base.__dict__, "constraint_scheme": "JACOBI"}), k)
        assert gs < jacobi


def test_hanging_cloth_strain_stays_small_at_high_stiffness():
    model = lab_cloth(n=21)
    config = SolverConfig(solver="XPBD", stiffness=1e6, substeps=10, iterations=10, damping=1.0)
    sim = make_solver(model, config)
    state = State.at_rest(model)
    worst = 0.0
    for _ in range(48):
        stats = advance_frame(sim, state, 1.0 / 24.0, config.substeps)
        worst = max(worst, stats.max_strain)
    assert worst < 0.03


def settle(model, config, seconds=6.0):
    sim = make_solver(model, config)
    state = State.at_rest(model)
    for _ in range(int(seconds * 24)):
        advance_frame(sim, state, 1.0 / 24.0, config.substeps)
    return state


@pytest.mark.parametrize("iterations", [1, 4, 20])
def test_xpbd_stretch_matches_spring_stiffness_whatever_the_iteration_count(iterations):
    # One free particle of mass m on a spring of stiffness k: at rest it hangs m g / k lower.
    m, k = 0.5, 200.0
    model = vertical_spring(particle_mass=m)
    config = SolverConfig(solver="XPBD", stiffness=k, iterations=iterations, substeps=20, damping=4.0)
    state = settle(model, config)
    stretch = -state.x[1, 2] - 1.0
    assert stretch == pytest.approx(m * G / k, rel=0.01)


def chain_stretch(solver, iterations, scheme="GAUSS_SEIDEL"):
    model = vertical_spring(segments=20, particle_mass=0.05)
    config = SolverConfig(solver=solver, stiffness=2000.0, iterations=iterations, substeps=10, damping=4.0, constraint_scheme=scheme)
    state = settle(model, config, seconds=4.0)
    # Each spring stretches by the weight of everything below it over k.
    weight_below = np.cumsum(model.mass[::-1])[::-1][1:] * G
    return -state.x[-1, 2] - 1.0, float(np.sum(weight_below / 2000.0))


def test_pbd_stiffness_depends_on_iterations_and_xpbd_does_not():
    # A 20-segment chain: PBD's hard constraints are only as hard as the sweeps make them ...
    pbd_few, _ = chain_stretch("PBD", 2)
    pbd_many, _ = chain_stretch("PBD", 40)
    assert pbd_few > 3.0 * pbd_many
    # ... while XPBD's stretch is the springs' own, m g / k summed down the chain, at any count.
    for iterations in (5, 20, 80):
        stretch, analytic = chain_stretch("XPBD", iterations)
        assert stretch == pytest.approx(analytic, rel=0.01)


def test_xpbd_jacobi_converges_to_the_spring_stretch():
    stretch, analytic = chain_stretch("XPBD", 80, scheme="JACOBI")
    assert stretch == pytest.approx(analytic, rel=0.01)


def test_colouring_gives_independent_groups_covering_every_constraint():
    _, edges, _ = grid_cloth(12)
    colours = colour_constraints(edges, 144)
    assert sorted(np.concatenate(colours).tolist()) == list(range(len(edges)))
    for group in colours:
        particles = edges[group].ravel()
        assert len(np.unique(particles)) == len(particles)
    assert len(colours) <= 8  # max degree 6 on a triangulated grid


def test_strain_reported_matches_positions():
    model = lab_cloth(n=5)
    x = model.rest_positions * 1.05
    assert np.allclose(edge_strain(model, x), 0.05)


def test_pin_tethers_hold_every_particle_within_its_limit_and_cut_the_sag_near_pins():
    n = 40
    vertices, edges, triangles = grid_cloth(n, 10.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned)

    def hang(tether_stretch):
        config = SolverConfig(substeps=5, iterations=3, tether_stretch=tether_stretch)
        sim = make_solver(model, config)
        state = State.at_rest(model)
        worst = 0.0
        for _ in range(48):
            worst = max(worst, advance_frame(sim, state, 1.0 / 24.0, config.substeps).max_strain)
        return sim, state, worst

    sim, state, worst_tethered = hang(0.01)
    # The last pin's tethers are met exactly; earlier pins' may be undone slightly by the later ones.
    *earlier, (particle, pin, limit) = sim.tethers.slots
    assert np.all(np.linalg.norm(state.x[particle] - state.x[pin], axis=1) <= limit + 1e-9)
    for particle, pin, limit in earlier:
        assert np.all(np.linalg.norm(state.x[particle] - state.x[pin], axis=1) <= 1.01 * limit)
    _, _, worst_free = hang(None)
    assert worst_tethered < 0.5 * worst_free


def games103_lab_step(x, v, edges, rest_length, fixed, t=0.0333, iterations=32, damping=0.99, gravity=(0.0, 0.0, -9.8)):
    """The GAMES103 cloth lab's (lab 2) Update() and Strain_Limiting(), vectorized line by line, no collision."""
    x, v = x.copy(), v.copy()
    free = ~fixed
    v[free] = v[free] * damping + np.asarray(gravity) * t
    x[free] += v[free] * t
    count = np.bincount(edges.ravel(), minlength=len(x)).astype(float)
    for _ in range(iterations):
        xi, xj = x[edges[:, 0]], x[edges[:, 1]]
        xij = xi - xj
        n = xij / np.linalg.norm(xij, axis=1)[:, None]
        sum_x = np.zeros_like(x)
        np.add.at(sum_x, edges[:, 0], 0.5 * (xi + xj + rest_length[:, None] * n))
        np.add.at(sum_x, edges[:, 1], 0.5 * (xi + xj - rest_length[:, None] * n))
        new = (0.2 * x + sum_x) / (0.2 + count)[:, None]
        v[free] += (new[free] - x[free]) / t
        x[free] = new[free]
    return x, v


def test_pbd_jacobi_is_the_games103_lab_strain_limiting():
    # Equal masses and no pins, so the lab's 1/2-1/2 split is PBD's w_i / (w_i + w_j): the same update.
    vertices, edges, triangles = grid_cloth(21, 10.0)
    model = build_model(vertices, edges, triangles)
    model.mass[:] = 1.0
    model.inv_mass[:] = 1.0
    rng = np.random.default_rng(3)
    start = State(vertices + rng.normal(0.0, 0.05, vertices.shape), rng.normal(0.0, 0.5, vertices.shape))
    t = 0.0333
    expected_x, expected_v = games103_lab_step(start.x, start.v, model.edge_indices, model.edge_rest_length, model.pinned)
    # The lab has no bending (bending_stiffness defaults to 1e-3 N m).
    config = SolverConfig(solver="PBD", constraint_scheme="JACOBI", iterations=32, jacobi_relaxation=0.2, gravity=(0.0, 0.0, -9.8),
                          damping=0.0, bending_stiffness=0.0)
    state = start.copy()
    state.v *= 0.99  # the lab damps before it adds gravity; our damping acts after the step
    make_solver(model, config).step(state, t)
    assert np.allclose(state.x, expected_x, atol=1e-10)
    assert np.allclose(state.v, expected_v, atol=1e-8)


@pytest.mark.parametrize("mu", [0.0, 0.25, 0.5])
def test_ground_friction_stops_a_sliding_body_as_coulomb_says(mu):
    # A short free rod resting on the ground, pushed at v0: Coulomb friction decelerates it at mu g, so it
    # stops after v0^2 / (2 mu g); without friction it keeps its speed.
    v0 = 2.0
    model = build_model(np.array([[0.0, 0.0, 0.0], [0.0, 0.05, 0.0]]), [[0, 1]], total_mass=1.0)
    config = SolverConfig(substeps=20, iterations=1, damping=0.0)
    sim = make_solver(model, config)
    state = State.at_rest(model)
    state.v[:, 0] = v0
    ground = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], friction=mu)]
    for _ in range(48):
        advance_frame(sim, state, 1.0 / 24.0, config.substeps, ground)
    travelled = state.x[:, 0].mean()
    if mu == 0.0:
        assert travelled == pytest.approx(v0 * 2.0, rel=1e-6)
        assert state.v[:, 0] == pytest.approx(v0)
    else:
        assert travelled == pytest.approx(v0**2 / (2.0 * mu * G), rel=0.05)
        assert np.allclose(state.v, 0.0, atol=1e-9)
    assert np.all(state.x[:, 2] >= -1e-12)
