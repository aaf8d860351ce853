"""NEWTON's Newton systems solved by conjugate gradients preconditioned with the narrow band (solvers/linalg/direct.py
``NarrowBand``): a cloth's bending couples the two wings of each hinge, two grid rows apart, and doubles the band; the
band of the other blocks, with the left-out couplings' absolute values moved to the diagonal, is an SPD preconditioner
P >= A, and PCG on A reaches the direct solve's x. The exact path (``solves.narrow = False``) factorizes every system.
"""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.linalg import direct
from solvers.linalg.direct import (NARROW_BAND, NEWTON_FORCING, REFINE_TOLERANCE, SINGLE_REFINED, NarrowBand, block_matrix,
                                   block_matrix_of)
from solvers.linalg.iterative import pcg


def lab_cloth(n, pinned=True):
    """The GAMES103 lab cloth (10 m, quad edges, 1 kg) at n x n, two corners pinned, over a sphere and a ground."""
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0)
    pins = np.zeros(n * n, bool)
    if pinned:
        pins[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pins, total_mass=1.0, quads=grid_quads(n))
    colliders = [Sphere(np.zeros(3), 2.7, 0.01), GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]), 0.01)]
    return model, colliders


def newton_system(n=10, seed=0):
    """(solver, pattern, data, contact, rhs) of a Newton system of an n x n lab cloth crumpled at random (compressed
    springs, folds), as ``NewtonSolver._direction`` hands it to ``solve_blocks``."""
    model, _ = lab_cloth(n)
    solver = make_solver(model, SolverConfig(solver="NEWTON"))
    rng = np.random.default_rng(seed)
    x = model.rest_positions * [0.8, 0.9, 1.0] + 0.05 * rng.standard_normal(model.rest_positions.shape)
    solver.inertia.x_tilde = model.rest_positions.copy()
    captured = {}

    def capture(pattern, data, contact, b):
        captured.update(pattern=pattern, data=data.copy(), contact=contact, b=b.copy())
        return np.zeros_like(b)

    solver.solves.solve_blocks = capture
    solver._direction(x, solver.potentials, (1.0 / 24.0) ** 2)
    return solver, captured["pattern"], captured["data"], captured["contact"], captured["b"]


def test_a_cloth_with_bending_has_weak_blocks_and_one_without_has_none():
    solver = newton_system(8)[0]
    assert solver.solves.weak is not None and solver.solves.weak.any()
    model, _ = lab_cloth(8)
    flat = make_solver(model, SolverConfig(solver="NEWTON", bending_stiffness=0.0))
    assert flat.solves.weak is None


def test_the_narrow_preconditioner_bounds_the_matrix_and_has_a_narrower_band():
    """P - A = diag(|W| 1) - W is positive semi-definite (Gershgorin), P is positive definite, and the strong blocks'
    band is about half the full band (one grid row instead of two)."""
    solver, pattern, data, contact, b = newton_system(10)
    band = NarrowBand(pattern, solver.solves.weak)
    A = block_matrix(pattern, data, contact).toarray()
    strong = band.strong
    P = block_matrix_of((pattern.block_rows[strong], pattern.block_cols[strong], band.preconditioner_data(data)),
                        A.shape[0]).toarray()
    np.testing.assert_allclose(P, P.T, atol=1e-15)
    scale = np.abs(A).max()
    assert np.linalg.eigvalsh(P - A).min() >= -1e-12 * scale
    assert np.linalg.eigvalsh(P).min() > 0.0
    _, full = direct.BandedCholesky.plan(sp.csr_matrix(A))
    assert band.bandwidth < 0.7 * full


def test_pcg_on_the_narrow_band_reaches_the_direct_solves_x():
    solver, pattern, data, contact, b = newton_system(12, seed=1)
    band = NarrowBand(pattern, solver.solves.weak)
    x, iterations = band.solve(pattern, data, contact, b)
    A = block_matrix(pattern, data, contact)
    assert x is not None and 0 < iterations <= direct.NARROW_MAX_ITERATIONS
    assert np.linalg.norm(b - A @ x) <= REFINE_TOLERANCE * np.linalg.norm(b)
    exact = spsolve(A.tocsc(), b)
    np.testing.assert_allclose(x, exact, rtol=0.0, atol=1e-8 * np.abs(exact).max())


def test_pcg_stops_at_its_tolerance_and_reports_what_it_reached():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((60, 60))
    A = M @ M.T + 60.0 * np.eye(60)
    b = rng.standard_normal(60)
    diagonal = np.diag(A)
    for tol in (1e-2, 1e-6, 1e-10):
        x, iterations, residual = pcg(lambda v: A @ v, lambda r: r / diagonal, b, tol, 200)
        assert residual <= tol
        assert np.linalg.norm(b - A @ x) <= 1.01 * tol * np.linalg.norm(b) + 1e-13 * np.linalg.norm(b)
        assert iterations < 60
    _, iterations, residual = pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-10, 2)
    assert iterations == 2 and residual > 1e-10
    x, iterations, residual = pcg(lambda v: A @ v, lambda r: r, np.zeros(60), 1e-10, 5)
    assert iterations == 0 and residual == 0.0 and not x.any()


def test_a_system_the_narrow_band_does_not_solve_in_its_iterations_is_factorized_on_the_full_band(monkeypatch):
    """A preconditioner too far from A (here: PCG allowed one iteration) falls back on the full band's factor, the
    exact path's solve; the next system tries the narrow band again."""
    solver, pattern, data, contact, b = newton_system(12, seed=2)
    monkeypatch.setattr(direct, "NARROW_MIN_GAIN", 0.0)  # a 12 x 12 cloth is planned on the full band otherwise
    solves = direct.NewtonSolves(weak=solver.solves.weak)
    solves.solve_blocks(pattern, data, contact, b)  # plans
    assert solves.method == NARROW_BAND
    monkeypatch.setattr(direct, "NARROW_MAX_ITERATIONS", 1)
    before = solves.factorizations
    x = solves.solve_blocks(pattern, data, contact, b)
    assert solves.method == "banded Cholesky"
    assert solves.factorizations == before + 2  # the narrow band's and the full band's
    A = block_matrix(pattern, data, contact)
    np.testing.assert_allclose(x, spsolve(A.tocsc(), b), rtol=1e-9, atol=1e-12 * np.abs(x).max())
    monkeypatch.setattr(direct, "NARROW_MAX_ITERATIONS", 40)
    solves.solve_blocks(pattern, data, contact, b)
    assert solves.method == NARROW_BAND


def test_a_small_cloth_is_planned_on_its_full_band():
    """The 21 x 21 cloth factorizes its full band in ~1 ms: fifteen PCG iterations would cost more than the narrow
    band saves (measured equal at 32 x 32, 1.4-1.8x faster at 48 x 48), so its solves stay exact (the full band's
    factor in single precision, refined to REFINE_TOLERANCE)."""
    model, colliders = lab_cloth(21)
    solver = make_solver(model, SolverConfig(solver="NEWTON"))
    state = State.at_rest(model)
    advance_frame(solver, state, 1.0 / 24.0, 1, colliders)
    assert solver.solves.method == SINGLE_REFINED and solver.solves.pcg_iterations == 0


@pytest.mark.parametrize("n", [16])
def test_newton_on_the_narrow_band_follows_the_exact_path_onto_the_sphere(monkeypatch, n):
    """The pinned lab cloth falls onto the sphere (frames 1-12; it reaches it at about frame 7) once with every system
    factorized and once on the narrow band solved as exactly (PCG to REFINE_TOLERANCE): the same Newton iterations,
    positions equal to far below the step's tolerance (newton_tolerance * dt = 0.4 mm), and no iterate reaches a
    collider."""
    monkeypatch.setattr(direct, "NARROW_MIN_GAIN", 0.0)
    model, colliders = lab_cloth(n)
    runs = {}
    for narrow in (False, True):
        config = SolverConfig(solver="NEWTON")
        solver = make_solver(model, config)
        solver.solves.narrow = narrow
        solver.solves.pcg_tolerance = REFINE_TOLERANCE
        state = State.at_rest(model)
        iterations = []
        for _ in range(12):
            stats = advance_frame(solver, state, 1.0 / 24.0, 1, colliders)
            iterations.append(stats.newton_iterations)
            assert stats.split_steps == 0
            assert min(solver.log.min_distances) > 0.0
        runs[narrow] = (state.x.copy(), iterations, solver.solves)
    (exact, exact_iterations, exact_solves), (narrow, narrow_iterations, narrow_solves) = runs[False], runs[True]
    assert exact_solves.pcg_iterations == 0
    assert narrow_solves.method == NARROW_BAND and narrow_solves.pcg_iterations > 0
    assert np.linalg.norm(exact, axis=1).min() < 2.7 + 0.05  # it did reach the sphere
    assert narrow_iterations == exact_iterations
    np.testing.assert_allclose(narrow, exact, rtol=0.0, atol=1e-6)


def test_newton_with_inexact_directions_converges_as_the_exact_path_does(monkeypatch):
    """NEWTON's default solves each direction by PCG to NEWTON_FORCING only (an inexact Newton method). The 16 x 16
    cloth falling onto the sphere (12 frames) with the narrow band at the default forcing and with every system
    factorized: every step ends within newton_tolerance with no iterate reaching a collider, the Newton iterations are
    the exact path's (within 2%), the PCG iterations under 0.6 times those to REFINE_TOLERANCE, and the positions
    within one step's tolerance (newton_tolerance * dt = 0.4 mm) of the exact path's."""
    monkeypatch.setattr(direct, "NARROW_MIN_GAIN", 0.0)
    model, colliders = lab_cloth(16)
    dt = 1.0 / 24.0
    runs = {}
    for name, narrow, tolerance in (("exact", False, None), ("tight", True, REFINE_TOLERANCE),
                                    ("default", True, None)):
        solver = make_solver(model, SolverConfig(solver="NEWTON"))
        assert solver.solves.pcg_tolerance == NEWTON_FORCING
        solver.solves.narrow = narrow
        if tolerance is not None:
            solver.solves.pcg_tolerance = tolerance
        state = State.at_rest(model)
        iterations = 0
        for _ in range(12):
            stats = advance_frame(solver, state, dt, 1, colliders)
            iterations += stats.newton_iterations
            assert stats.split_steps == 0 and stats.newton_residual <= solver.config.newton_tolerance
            assert min(solver.log.min_distances) > 0.0
        runs[name] = (state.x.copy(), iterations, solver.solves.pcg_iterations)
    exact, default, tight = runs["exact"], runs["default"], runs["tight"]
    assert np.linalg.norm(exact[0], axis=1).min() < 2.7 + 0.05  # it did reach the sphere
    assert abs(default[1] - exact[1]) <= 0.02 * exact[1]
    assert 0 < default[2] < 0.6 * tight[2]
    np.testing.assert_allclose(default[0], exact[0], rtol=0.0, atol=SolverConfig().newton_tolerance * dt)
