"""NEWTON's narrow-band PCG with an earlier preconditioner's factor (solvers/linalg/direct.py ``NarrowBand.solve`` with
``reuse``, ``NewtonSolves.reuse``) and conjugate gradients from a given start (solvers/linalg/iterative.py ``pcg``'s
``x0``): the same tolerance is reached whatever factor preconditions, a factor that would need too many iterations is
replaced by the current one, and the default path factorizes every system."""
import numpy as np
import pytest
from scipy.sparse.linalg import spsolve

from solvers.linalg import direct
from solvers.linalg.direct import REFINE_TOLERANCE, NarrowBand, block_matrix
from solvers.linalg.iterative import pcg
from test_newton_narrow_band import lab_cloth, newton_system

from solvers import SolverConfig, State, advance_frame, make_solver


def _spd(n=60, seed=3):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    return M @ M.T + n * np.eye(n), rng.standard_normal(n)


def test_pcg_from_a_start_reaches_the_tolerance_relative_to_b():
    A, b = _spd()
    diagonal = np.diag(A)
    exact = np.linalg.solve(A, b)
    for start in (np.zeros_like(b), 0.9 * exact, np.random.default_rng(4).standard_normal(len(b))):
        x, iterations, residual = pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-10, 200, x0=start)
        assert residual <= 1e-10
        assert np.linalg.norm(b - A @ x) <= 1.01e-10 * np.linalg.norm(b) + 1e-13 * np.linalg.norm(b)
    x, iterations, residual = pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-6, 200, x0=exact)
    assert iterations == 0 and residual <= 1e-6 and np.array_equal(x, exact)
    start = 0.5 * exact
    pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-10, 200, x0=start)
    np.testing.assert_array_equal(start, 0.5 * exact)  # the start is not changed in place


def test_pcg_without_a_start_is_the_same_as_from_zero():
    A, b = _spd(seed=5)
    diagonal = np.diag(A)
    x0, i0, r0 = pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-8, 200)
    x1, i1, r1 = pcg(lambda v: A @ v, lambda r: r / diagonal, b, 1e-8, 200, x0=np.zeros_like(b))
    assert i0 == i1
    np.testing.assert_allclose(x1, x0, rtol=0.0, atol=1e-14 * np.abs(x0).max())


def test_a_reused_factor_reaches_the_same_x_without_factorizing():
    """The factor of the same P preconditions as well as a fresh one: no factorization, the direct solve's x."""
    solver, pattern, data, contact, b = newton_system(12, seed=1)
    band = NarrowBand(pattern, solver.solves.weak)
    band.solve(pattern, data, contact, b, reuse=True)  # nothing to reuse yet: factorizes
    assert band.factorized
    x, iterations = band.solve(pattern, data, contact, b, reuse=True)
    assert not band.factorized and x is not None and iterations > 0
    A = block_matrix(pattern, data, contact)
    assert np.linalg.norm(b - A @ x) <= REFINE_TOLERANCE * np.linalg.norm(b)
    exact = spsolve(A.tocsc(), b)
    np.testing.assert_allclose(x, exact, rtol=0.0, atol=1e-8 * np.abs(exact).max())


def test_a_factor_too_far_from_the_matrix_is_replaced_and_the_tolerance_still_holds():
    """The factor of another cloth state's P predicts more than REUSE_MAX_ITERATIONS iterations: P is factorized anew
    and PCG goes on from the probe's iterate to the same tolerance."""
    solver, pattern, data, contact, b = newton_system(12, seed=1)
    _, _, other, other_contact, _ = newton_system(12, seed=7)
    band = NarrowBand(pattern, solver.solves.weak)
    band.solve(pattern, 1e3 * other, other_contact, b)  # a factor of a very different P
    x, iterations = band.solve(pattern, data, contact, b, reuse=True)
    assert band.factorized and x is not None
    assert iterations >= direct.REUSE_PROBE_ITERATIONS
    A = block_matrix(pattern, data, contact)
    assert np.linalg.norm(b - A @ x) <= REFINE_TOLERANCE * np.linalg.norm(b)


def test_without_reuse_every_solve_factorizes():
    solver, pattern, data, contact, b = newton_system(12, seed=1)
    band = NarrowBand(pattern, solver.solves.weak)
    for _ in range(2):
        band.solve(pattern, data, contact, b)
        assert band.factorized
    assert band.factor_seconds > 0.0 and band.pcg_seconds > 0.0


@pytest.mark.parametrize("reuse", [False, True])
def test_newton_with_reused_factors_follows_the_exact_path(monkeypatch, reuse):
    """The 16 x 16 lab cloth onto the sphere (frames 1-8) on the narrow band with and without reused factors: PCG's
    tolerance is the same, so the Newton iterations are and the positions agree far below the step's tolerance
    (newton_tolerance * dt = 0.4 mm); no iterate reaches a collider. The default does not reuse."""
    monkeypatch.setattr(direct, "NARROW_MIN_GAIN", 0.0)
    model, colliders = lab_cloth(16)
    runs = {}
    for narrow in (False, True):
        solver = make_solver(model, SolverConfig(solver="NEWTON"))
        assert not solver.solves.reuse
        solver.solves.narrow = narrow
        solver.solves.reuse = reuse and narrow
        state = State.at_rest(model)
        iterations = []
        for _ in range(8):
            stats = advance_frame(solver, state, 1.0 / 24.0, 1, colliders)
            iterations.append(stats.newton_iterations)
            assert min(solver.log.min_distances) > 0.0
        runs[narrow] = (state.x.copy(), iterations, solver.solves)
    (exact, exact_iterations, _), (narrow, narrow_iterations, solves) = runs[False], runs[True]
    assert narrow_iterations == exact_iterations
    np.testing.assert_allclose(narrow, exact, rtol=0.0, atol=1e-6)
    newton_iterations = sum(narrow_iterations)
    if reuse:
        assert solves.factorizations <= newton_iterations + 2  # never more than one a system (plus planning)
    else:
        assert solves.factorizations >= newton_iterations
