"""NEWTON (implicit Euler as optimization with IPC contact): physics checks, not snapshots."""
import math

import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.model import tet_volumes
from solvers.newton import NewtonNotConverged
from solvers.geometry import tetrahedralize

G = 9.81


def newton(model, **settings):
    settings = {"solver": "NEWTON", "substeps": 1, "damping": 0.0, **settings}
    return make_solver(model, SolverConfig(**settings))


def rod(length=1.0, pinned_first=False, total_mass=2.0):
    """Two particles joined by one edge along x."""
    return build_model(np.array([[0.0, 0.0, 0.0], [length, 0.0, 0.0]]), edges=[[0, 1]],
                       pinned=[pinned_first, False], total_mass=total_mass)


def box_surface(size=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
    """The 8 corners and 12 outward triangles of an axis-aligned box."""
    sx, sy, sz = size
    corners = np.array([[x, y, z] for z in (0, sz) for y in (0, sy) for x in (0, sx)], float) + origin
    tris = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])
    return corners, tris


def solid_box(size, origin, resolution, total_mass):
    corners, tris = box_surface(size, origin)
    tet = tetrahedralize(corners, tris, resolution=resolution)
    return build_model(tet.vertices, tets=tet.tets, total_mass=total_mass)


def test_free_fall_is_implicit_eulers_closed_form():
    """With gravity only the incremental potential is quadratic: x_N = x_0 + h^2 g N (N + 1) / 2 exactly."""
    model = rod()
    solver = newton(model, newton_tolerance=1e-9)
    state = State.at_rest(model)
    h, steps = 0.01, 50
    for _ in range(steps):
        stats = solver.step(state, h)
        assert stats.newton_iterations == 1  # one Newton step solves a quadratic
    expected = -G * h * h * steps * (steps + 1) / 2
    assert np.allclose(state.x[:, 2], expected, rtol=1e-9, atol=1e-12)
    assert np.allclose(state.v[:, 2], -G * h * steps)
    assert np.allclose(state.x[:, :2], model.rest_positions[:, :2])  # no spin, no drift


def test_hanging_spring_stretches_by_mg_over_k():
    """Static equilibrium of the solid-sim-tutorial's spring with k = stiffness / 4: 2 k (s - 1) l = m g, ~ m g / stiffness."""
    stiffness, total_mass = 1.0e4, 2.0
    model = build_model(np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -1.0]]), edges=[[0, 1]], pinned=[True, False],
                        total_mass=total_mass)
    m = model.mass[1]
    solver = newton(model, stiffness=stiffness, newton_tolerance=1e-9, damping=5.0)
    state = State.at_rest(model)
    for _ in range(200):  # large damped implicit steps settle it
        solver.step(state, 0.05)
    stretch = -state.x[1, 2] - 1.0
    k = stiffness / 4.0
    length = 1.0 + stretch
    assert 2.0 * k * (length * length - 1.0) * length == pytest.approx(m * G, rel=1e-5)  # the exact equilibrium of that spring
    assert stretch == pytest.approx(m * G / stiffness, rel=5e-3)  # and Hooke's at small strain


def stretched_cloth(n=8):
    v, e, t = grid_cloth(n, size=1.0, height=1.0)
    pinned = np.zeros(len(v), bool)
    pinned[[0, n - 1]] = True
    return build_model(v, e, t, pinned=pinned, total_mass=0.5)


def test_every_accepted_line_search_step_lowers_the_energy():
    model = stretched_cloth()
    solver = newton(model, stiffness=1e4, bending_stiffness=1e-3, newton_tolerance=1e-5, newton_max_iterations=200)
    state = State.at_rest(model)
    state.v[:, 2] = -3.0
    state.v[~model.pinned] += np.random.default_rng(1).normal(scale=0.5, size=(int((~model.pinned).sum()), 3))
    solver.step(state, 1.0 / 24.0)
    energies = solver.log.energies
    assert len(energies) > 5 and all(b <= a for a, b in zip(energies, energies[1:]))
    assert solver.log.residuals[-1] < 1e-5


def test_newton_converges_quadratically_where_the_hessian_is_exact():
    """A hanging chain whose springs are all stretched: no projection clamps a Hessian, so Newton is quadratic.

    (Where springs are compressed the projected Hessian differs from the true one and convergence is linear.)
    """
    n = 10
    x = np.zeros((n, 3))
    x[:, 2] = -0.1 * np.arange(n)
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    model = build_model(x, edges, pinned=np.arange(n) == 0, total_mass=1.0)
    solver = newton(model, stiffness=1e4, newton_tolerance=1e-9)
    state = State.at_rest(model)
    state.x[:, 2] *= 1.05
    state.v[1:] = np.random.default_rng(2).normal(scale=0.3, size=(n - 1, 3))
    solver.step(state, 1.0 / 24.0)
    r = np.array(solver.log.residuals)
    assert r[-1] < 1e-9 and len(r) < 12
    tail = [(a, b) for a, b in zip(r, r[1:]) if b > 1e-10 and a < 1e-2]
    assert len(tail) >= 2, r
    assert all(b <= 10.0 * a * a for a, b in tail), r


def test_pinned_vertices_follow_their_targets_exactly():
    model = stretched_cloth()
    solver = newton(model, stiffness=1e4)
    state = State.at_rest(model)
    pins = np.nonzero(model.pinned)[0]
    for frame in range(1, 11):
        targets = model.rest_positions.copy()
        targets[pins] += np.array([0.1 * frame, 0.0, 0.05 * math.sin(frame)])
        advance_frame(solver, state, 1.0 / 24.0, 1, (), targets)
        assert np.array_equal(state.x[pins], targets[pins])


def test_cloth_dropped_from_20_m_at_one_step_per_frame_never_reaches_the_ground():
    v, e, t = grid_cloth(12, size=2.0, height=20.0)
    model = build_model(v, e, t, total_mass=1.0)
    solver = newton(model, stiffness=1e3, bending_stiffness=1e-3)
    ground = GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.3)
    state = State.at_rest(model)
    distances = []
    for _ in range(72):  # 3 s at 24 fps: falls ~20 m and lands at ~20 m/s
        stats = advance_frame(solver, state, 1.0 / 24.0, 1, [ground])
        distances.append(stats.min_distance)
        assert min(solver.log.min_distances) > 0.0  # every accepted iterate, not only the step's end
    assert min(distances) > 0.0
    assert state.x[:, 2].max() < 0.05  # it landed and lies on the ground


def test_solid_thrown_at_30_m_per_s_at_a_sphere_never_touches_it():
    model = solid_box((0.4, 0.4, 0.4), (-2.2, -0.2, -0.2), 3, total_mass=5.0)
    solver = newton(model, youngs_modulus=1e6, poisson_ratio=0.3, gravity=(0.0, 0.0, 0.0))
    sphere = Sphere((0.0, 0.0, 0.0), 1.0, thickness=0.02)
    state = State.at_rest(model)
    state.v[:, 0] = 30.0
    for _ in range(24):
        stats = advance_frame(solver, state, 1.0 / 24.0, 1, [sphere])
        assert min(solver.log.min_distances) > 0.0
        assert stats.min_distance > 0.0
    assert state.x[:, 0].max() < 0.0  # it bounced back or stopped on the near side


@pytest.mark.parametrize("theta_deg, mu, slides", [(30.0, 0.3, True), (30.0, 0.8, False)])
def test_block_on_a_slope_slides_with_coulomb_acceleration_or_sticks(theta_deg, mu, slides):
    """a = g (sin theta - mu cos theta) when tan theta > mu, else it stays (within the smoothing slip)."""
    theta = math.radians(theta_deg)
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    ground = GroundPlane((0, 0, 0), normal, thickness=0.01, friction=mu)
    # A small stiff square lying on the slope where the barrier carries its weight: with kappa = 2.5 M g per
    # particle, b'(d) = m g cos(theta) at s = d / d_hat ~ 1 - m g cos(theta) / kappa (0.96 here).
    v, e, t = grid_cloth(3, size=0.2)
    side = np.cross(normal, [0.0, 1.0, 0.0])
    positions = v[:, :1] * side + v[:, 1:2] * np.array([0.0, 1.0, 0.0]) + 0.0096 * normal
    model = build_model(positions, e, t, total_mass=1.0, mass_distribution="UNIFORM")
    solver = newton(model, stiffness=1e5, newton_tolerance=1e-4)
    state = State.at_rest(model)
    h = 1.0 / 120.0
    along = []
    for _ in range(120):
        solver.step(state, h, [ground])
        along.append(float(state.v.mean(axis=0) @ downhill))
    if slides:
        # Constant acceleration once the normal force has settled: fit v(t) over the second half second.
        t_axis = h * np.arange(60, 120)
        a = np.polyfit(t_axis, along[60:], 1)[0]
        assert a == pytest.approx(G * (math.sin(theta) - mu * math.cos(theta)), rel=0.05)
    else:
        assert abs(along[-1]) < 2e-3  # m/s: static friction holds (creep below the smoothing speed)
        assert np.linalg.norm(state.x.mean(axis=0) - positions.mean(axis=0)) < 5e-3


def settled_cube(youngs_modulus, poisson_ratio):
    model = solid_box((0.5, 0.5, 0.5), (0.0, 0.0, 0.005), 3, total_mass=20.0)
    solver = newton(model, youngs_modulus=youngs_modulus, poisson_ratio=poisson_ratio, damping=10.0)
    ground = GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01)
    state = State.at_rest(model)
    for _ in range(60):
        advance_frame(solver, state, 1.0 / 24.0, 1, [ground])
    # The body floats up to where the barrier carries it (inside d_hat): measure its height, not its top.
    top, bottom = model.rest_positions[:, 2] > 0.5, model.rest_positions[:, 2] < 0.01
    sag = 0.5 - float(np.mean(state.x[top, 2]) - np.mean(state.x[bottom, 2]))
    rest_volume = model.tet_rest_volume.sum()
    volume_loss = float(rest_volume - tet_volumes(state.x, model.tet_indices).sum()) / rest_volume
    return sag, volume_loss, state


def test_neo_hookean_cube_on_the_ground_sags_less_when_stiffer_and_keeps_volume_near_nu_half():
    soft_sag, soft_loss, _ = settled_cube(2e4, 0.3)
    stiff_sag, _, _ = settled_cube(2e5, 0.3)
    _, incompressible_loss, _ = settled_cube(2e4, 0.49)
    assert soft_sag > 3.0 * stiff_sag > 0.0
    assert soft_loss > 0.0
    assert abs(incompressible_loss) < soft_loss / 5.0


def test_newton_and_implicit_euler_agree_on_a_small_stiff_cloth_as_the_step_shrinks():
    """Both discretize the same ODE (small strains: the squared-length spring = Hooke's); their gap closes ~ h."""
    def run(solver_name, h):
        model = stretched_cloth(5)
        extra = {"newton_tolerance": 1e-5, "newton_max_iterations": 200} if solver_name == "NEWTON" else {"linear_tolerance": 1e-10}
        solver = make_solver(model, SolverConfig(solver=solver_name, stiffness=2e3, damping=0.0, **extra))
        state = State.at_rest(model)
        for _ in range(int(round(0.25 / h))):
            solver.step(state, h)
        return state.x

    gaps = [np.abs(run("NEWTON", h) - run("IMPLICIT_EULER", h)).max() for h in (1 / 100, 1 / 400)]
    assert gaps[1] < 0.5 * gaps[0]
    assert gaps[1] < 5e-3


def test_a_step_that_cannot_converge_raises_with_its_residual():
    model = stretched_cloth()
    solver = newton(model, stiffness=1e5, newton_tolerance=1e-12, newton_max_iterations=1)
    state = State.at_rest(model)
    state.v[:, 2] = -5.0
    with pytest.raises(NewtonNotConverged) as error:
        solver.step(state, 1.0 / 24.0)
    assert error.value.iterations == 1 and error.value.residual > 1e-12


def test_a_step_that_does_not_converge_is_retried_as_two_half_steps():
    """A frame whose one step cannot converge in 4 Newton iterations is split by advance_frame (and only such a
    frame), and a frame split once lands where two converged half steps land; the pins stay exact."""
    v, e, t = grid_cloth(10, size=1.0, height=1.0)
    pinned = np.zeros(len(v), bool)
    pinned[[0, 9]] = True
    model = build_model(v, e, t, pinned=pinned, total_mass=0.5)
    sim = make_solver(model, SolverConfig(solver="NEWTON", stiffness=1e4, newton_max_iterations=4))
    reference = make_solver(model, SolverConfig(solver="NEWTON", stiffness=1e4, newton_tolerance=1e-6))
    state, compared = State.at_rest(model), 0
    for _ in range(12):
        start = state.copy()
        try:
            sim.step(start.copy(), 1.0 / 24)
            unsplit_fails = False
        except NewtonNotConverged:
            unsplit_fails = True
        stats = advance_frame(sim, state, 1.0 / 24, 1)
        assert (stats.split_steps > 0) == unsplit_fails
        assert np.array_equal(state.x[pinned], model.rest_positions[pinned])
        if stats.split_steps == 1:
            halves = start.copy()
            advance_frame(reference, halves, 1.0 / 24, 2)
            assert np.abs(state.x - halves.x).max() < 1e-3  # Newton tolerances 1e-2 and 1e-6 m/s over 1/48 s
            compared += 1
    assert compared > 0
