"""The wall times NEWTON's narrow-band solves keep for profiling (solvers/linalg/direct.py ``NarrowBand.solve``,
``NewtonSolves.factor_seconds`` / ``pcg_seconds``, read by bench/profile_newton.py): every solve's factorization and
iterations are timed, the totals add up what each solve took, and timing changes nothing of what is solved."""
import numpy as np

from solvers.linalg import direct
from solvers.linalg.direct import NarrowBand
from test_newton_narrow_band import newton_system


def test_a_narrow_band_solve_times_its_factorization_and_its_iterations():
    solver, pattern, data, contact, b = newton_system(12, seed=1)
    band = NarrowBand(pattern, solver.solves.weak)
    x, iterations = band.solve(pattern, data, contact, b)
    assert x is not None and iterations > 0
    assert band.factor_seconds > 0.0 and band.pcg_seconds > 0.0
    again, _ = band.solve(pattern, data, contact, b)
    np.testing.assert_array_equal(again, x)


def test_the_newton_solves_add_up_their_narrow_band_times(monkeypatch):
    solver, pattern, data, contact, b = newton_system(12, seed=2)
    monkeypatch.setattr(direct, "NARROW_MIN_GAIN", 0.0)  # a 12 x 12 cloth is planned on the full band otherwise
    solves = direct.NewtonSolves(weak=solver.solves.weak)
    assert solves.factor_seconds == 0.0 and solves.pcg_seconds == 0.0
    solves.solve_blocks(pattern, data, contact, b)  # plans, then solves on the narrow band
    assert solves.method == direct.NARROW_BAND
    band = solves._narrow[1]
    first = solves.factor_seconds, solves.pcg_seconds
    assert first == (band.factor_seconds, band.pcg_seconds)
    solves.solve_blocks(pattern, data, contact, b)
    assert solves.factor_seconds == first[0] + band.factor_seconds
    assert solves.pcg_seconds == first[1] + band.pcg_seconds
