"""The fast position-based kernels compute the same update as a plain, one-constraint-at-a-time reference.

The structure-of-arrays kernels (``DistanceColourSweep``, ``DistanceConstraints.jacobi``, ``PinTethers.apply``)
reorder memory, not arithmetic: each test runs the kernel and a Python-loop reference of the textbook update
(Macklin et al. 2016 for XPBD distance constraints; Kim et al. 2012 for tethers) on the same inputs and asserts
agreement to round-off (1e-12 relative), and that the update actually moved something (a do-nothing kernel fails).
"""
import math

import numpy as np
import pytest

from solvers import SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.colouring import ColourOrder, colour_constraints
from solvers.constraints import DistanceConstraints, PinTethers

ROUND_OFF = 1e-12  # relative to the cloth's size (10 m)


def stretched_cloth(n=9, seed=0, isolated=0):
    """A lab cloth (two pinned corners) with random per-edge compliance, jiggled so every constraint is violated.

    isolated: extra particles in no constraint at all (the kernels must leave them alone).
    """
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    x = np.concatenate([vertices + rng.normal(scale=0.1, size=vertices.shape), rng.normal(size=(isolated, 3))])
    inv_mass = np.concatenate([model.inv_mass, np.ones(isolated)])
    compliance = rng.uniform(1e-5, 1e-3, len(edges))
    constraints = DistanceConstraints(model.edge_indices, model.edge_rest_length, inv_mass, compliance)
    return model, constraints, x, rng


def reference_update(x, c, i, j, rest, w, alpha, lam):
    """One XPBD distance projection of constraint c, scalar Python: returns (dx_i, dx_j, dlambda)."""
    d = [x[i][k] - x[j][k] for k in range(3)]
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    denom = w[i] + w[j] + alpha[c]
    dlam = -(length - rest[c] + alpha[c] * lam[c]) / denom if denom > 0.0 else 0.0
    scale = dlam / max(length, 1e-12)
    return [w[i] * scale * dk for dk in d], [-w[j] * scale * dk for dk in d], dlam


def reference_gauss_seidel(x, constraints, colours, alpha, lams):
    x = x.tolist()
    i, j = constraints.i.tolist(), constraints.j.tolist()
    rest, w = constraints.rest_length.tolist(), constraints.inv_mass.tolist()
    alpha = np.broadcast_to(alpha, (len(constraints),)).tolist()
    out_lams = []
    for group, lam in zip(colours, lams):
        lam = lam.tolist()
        for slot, c in enumerate(group.tolist()):  # one constraint after the other
            lam_c = [0.0] * len(alpha)
            lam_c[c] = lam[slot]
            dxi, dxj, dlam = reference_update(x, c, i[c], j[c], rest, w, alpha, lam_c)
            x[i[c]] = [a + b for a, b in zip(x[i[c]], dxi)]
            x[j[c]] = [a + b for a, b in zip(x[j[c]], dxj)]
            lam[slot] += dlam
        out_lams.append(np.array(lam))
    return np.array(x), out_lams


@pytest.mark.parametrize("compliant", [True, False])
def test_colour_sweep_equals_one_constraint_at_a_time(compliant):
    model, constraints, x0, rng = stretched_cloth(isolated=3)
    n = len(x0)
    colours = colour_constraints(constraints.indices, n)
    dt = 1.0 / 240.0
    alpha = constraints.compliance / dt**2 if compliant else np.zeros(len(constraints))
    lams = [rng.normal(scale=1e-3, size=len(c)) for c in colours]
    expected_x, expected_lams = reference_gauss_seidel(x0, constraints, colours, alpha, lams)

    fast = constraints.colour_sweep(colours, n)
    x = x0.copy()
    got_lams = [lam.copy() for lam in lams]
    fast.sweep(x, dt, got_lams, compliant)
    assert np.max(np.abs(x - x0)) > 1e-3  # the sweep did move the particles
    assert np.max(np.abs(x - expected_x)) < ROUND_OFF * 10.0
    for got, want in zip(got_lams, expected_lams):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-15)
    assert np.array_equal(x[model.pinned.nonzero()[0]], x0[model.pinned.nonzero()[0]])  # pins untouched
    assert np.array_equal(x[-3:], x0[-3:])  # particles in no constraint untouched


@pytest.mark.parametrize("lab_average", [False, True])
def test_jacobi_equals_summed_independent_projections(lab_average):
    model, constraints, x0, rng = stretched_cloth(isolated=2)
    n, m = len(x0), len(constraints)
    dt, relaxation = 1.0 / 240.0, 0.2
    alpha = constraints.alpha(dt)
    lam0 = rng.normal(scale=1e-3, size=m)
    count = np.bincount(constraints.indices.ravel(), minlength=n).astype(float)
    per_constraint = 1.0 / (relaxation + count[constraints.indices].max(axis=1))

    xs, w = x0.tolist(), constraints.inv_mass.tolist()
    total = np.zeros((n, 3))
    expected_lam = lam0.copy()
    for c, (i, j) in enumerate(constraints.indices.tolist()):  # every constraint from the same positions
        dxi, dxj, dlam = reference_update(xs, c, i, j, constraints.rest_length, w, alpha, lam0)
        scale = 1.0 if lab_average else per_constraint[c]
        total[i] += np.multiply(dxi, scale)
        total[j] += np.multiply(dxj, scale)
        expected_lam[c] += dlam * scale
    expected = x0 + (total / np.maximum(relaxation + count, 1e-12)[:, None] if lab_average else total)

    x, lam = x0.copy(), lam0.copy()
    if lab_average:
        constraints.jacobi(x, alpha, lam, particle_divisor=np.maximum(relaxation + count, 1e-12))
    else:
        constraints.jacobi(x, alpha, lam, constraint_scale=per_constraint)
    assert np.max(np.abs(x - x0)) > 1e-3
    assert np.max(np.abs(x - expected)) < ROUND_OFF * 10.0
    assert np.allclose(lam, expected_lam, rtol=1e-12, atol=1e-15)
    assert np.array_equal(x[-2:], x0[-2:])


@pytest.mark.parametrize("n", [15, 50])  # 50 x 50: slots of 2048+ particles take the re-check-only-moved path
def test_tethers_equal_the_row_wise_reference_and_hold_their_limits(n):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1, n * n - 1]] = True  # three pins: three slots, swept Gauss-Seidel
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    tethers = PinTethers(model, max_stretch=0.01)
    rng = np.random.default_rng(3)
    x0 = vertices * 1.1 + rng.normal(scale=0.2, size=vertices.shape)  # many particles past their limits
    x0[pinned] = vertices[pinned]
    expected = x0.copy()
    tethers.apply_reference(expected, passes=4)
    x = x0.copy()
    tethers.apply(x, passes=4)
    assert np.count_nonzero(np.any(x != x0, axis=1)) > 10
    assert np.max(np.abs(x - expected)) < ROUND_OFF * 10.0
    # A non-contiguous x takes the reference path and gives the same answer.
    x_f = np.asfortranarray(x0)
    tethers.apply(x_f, passes=4)
    assert np.max(np.abs(x_f - expected)) < ROUND_OFF * 10.0


def test_colour_order_makes_each_colour_contiguous_and_round_trips():
    _, constraints, x0, _ = stretched_cloth(n=7)
    n = len(x0)
    colours = colour_constraints(constraints.indices, n)
    order = ColourOrder(constraints.indices, colours, n)
    seen = []

    def check(c, Y):
        m = order.counts[c]
        group = colours[c]
        assert np.array_equal(Y[:, :m].T, x0[constraints.i[group]])  # the first ends, contiguous
        assert np.array_equal(Y[:, m:2 * m].T, x0[constraints.j[group]])
        seen.append(c)

    x = x0.copy()
    order.sweep(x, check)
    assert seen == list(range(len(colours)))
    assert np.array_equal(x, x0)  # nothing changed: the orders compose back to the identity


@pytest.mark.parametrize("scheme", ["GAUSS_SEIDEL", "JACOBI"])
@pytest.mark.parametrize("solver", ["PBD", "XPBD"])
def test_solver_with_fast_kernels_matches_the_batch_kernels(solver, scheme):
    """Whole frames with tethers: the fast sweeps against the per-batch ``corrections`` path of the solver."""
    n = 12
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    config = SolverConfig(solver=solver, constraint_scheme=scheme, substeps=6, iterations=2, tether_stretch=0.01)
    fast, slow = make_solver(model, config), make_solver(model, config)
    for sweep in slow.sweeps:
        sweep.fast = None
        if sweep.tail is not None:
            sweep.tail.constraints = _WithoutJacobi(sweep.tail.constraints)
    slow.tethers.apply = slow.tethers.apply_reference
    a, b = State.at_rest(model), State.at_rest(model)
    for _ in range(5):
        advance_frame(fast, a, 1.0 / 24.0, config.substeps)
        advance_frame(slow, b, 1.0 / 24.0, config.substeps)
    assert np.max(np.abs(a.x - vertices)) > 0.2  # it fell (1/2 g t^2 = 0.21 m)
    assert np.max(np.abs(a.x - b.x)) < 1e-9  # round-off, grown over 30 steps


class _WithoutJacobi:
    """A constraint set that hides ``jacobi``: the solver falls back to ``corrections`` + sparse scatter."""

    def __init__(self, inner):
        self._inner = inner

    def __len__(self):
        return len(self._inner)

    def __getattr__(self, name):
        if name == "jacobi":
            raise AttributeError(name)
        return getattr(self._inner, name)


def jittered_tet_block():
    """A Delaunay-tetrahedralized 5 x 5 x 5 lattice, jittered, 2 kg, its first 5 particles pinned (inv_mass 0):
    (rng after the jitter, points (125, 3), model, inv_mass). Shared by the tet colour-sweep tests."""
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(5)
    g = np.linspace(0.0, 1.0, 5)
    points = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + rng.normal(scale=0.02, size=(125, 3))
    model = build_model(points, tets=Delaunay(points).simplices, total_mass=2.0)
    inv_mass = model.inv_mass.copy()
    inv_mass[:5] = 0.0  # some pins
    return rng, points, model, inv_mass


@pytest.mark.parametrize("gamma", [0.0, 2.5])  # internal damping off and on (set_damping)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("lam", [3e4, -1e3])  # nu > 0 (two rows) and nu < 0 (no hydrostatic row)
def test_tet_strain_colour_sweep_equals_the_batch_kernel(lam, reverse, gamma):
    """Neo-Hookean tet constraints: the colour-ordered sweep (either direction) against ``corrections`` applied
    colour after colour, with pins and some undeformed tets (C_D = 0), without and with internal damping."""
    from solvers.constraints import TetStrainConstraints

    rng, points, model, inv_mass = jittered_tet_block()
    tets = TetStrainConstraints.from_model(points, model.tet_indices, inv_mass,
                                           rng.uniform(1e4, 1e5, model.tet_count), lam)
    colours = colour_constraints(tets.indices, len(points))
    x0 = points * np.array([1.2, 0.9, 1.0]) + rng.normal(scale=0.03, size=points.shape)
    x0[:12] = points[:12]
    dt = 1.0 / 240.0
    lams = [rng.normal(scale=1e-4, size=(len(c), 2)) for c in colours]
    x_prev = x0 + rng.normal(scale=0.01, size=points.shape)

    expected, expected_lams = x0.copy(), [lam.copy() for lam in lams]
    pairs = list(zip(colours, expected_lams))
    for group, lam_c in (pairs[::-1] if reverse else pairs):
        batch = tets.subset(group)
        batch.set_damping(gamma, x_prev)
        dx, dlam = batch.corrections(expected, batch.alpha(dt), lam_c)
        expected[batch.flat_indices] += dx.reshape(-1, 3)
        lam_c += dlam

    x, got_lams = x0.copy(), [lam.copy() for lam in lams]
    sweep = tets.colour_sweep(colours, len(points))
    sweep.set_damping(gamma, x_prev)
    sweep.sweep(x, dt, got_lams, True, reverse=reverse)
    assert np.max(np.abs(x - x0)) > 1e-2
    assert np.max(np.abs(x - expected)) < 1e-11
    for got, want in zip(got_lams, expected_lams):
        assert np.allclose(got, want, rtol=1e-9, atol=1e-15)
    assert np.array_equal(x[:5], x0[:5])


@pytest.mark.parametrize("gamma", [0.0, 2.5])
def test_tet_strain_symmetric_sweep_is_the_mean_of_both_orders(gamma):
    """``symmetric_sweep`` (one sweep of two copies of the set) against a forward and a backward sweep from the
    same positions, averaged: positions and multipliers; without and with internal damping."""
    from scipy.spatial import Delaunay

    from solvers.constraints import TetStrainConstraints

    rng = np.random.default_rng(7)
    g = np.linspace(0.0, 1.0, 4)
    points = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + rng.normal(scale=0.02, size=(64, 3))
    model = build_model(points, tets=Delaunay(points).simplices, total_mass=2.0)
    inv_mass = model.inv_mass.copy()
    inv_mass[:3] = 0.0
    tets = TetStrainConstraints.from_model(points, model.tet_indices, inv_mass, 5e4, 2e4)
    colours = colour_constraints(tets.indices, len(points))
    sweep = tets.colour_sweep(colours, len(points))
    x0 = points * np.array([1.1, 0.95, 1.0]) + rng.normal(scale=0.03, size=points.shape)
    lams = [rng.normal(scale=1e-4, size=(len(c), 2)) for c in colours]
    sweep.set_damping(gamma, points)
    dt = 1.0 / 240.0
    runs = []
    for reverse in (False, True):
        x, lam = x0.copy(), [lam_c.copy() for lam_c in lams]
        sweep.sweep(x, dt, lam, True, reverse=reverse)
        runs.append((x, lam))
    x, lam = x0.copy(), [lam_c.copy() for lam_c in lams]
    sweep.symmetric_sweep(x, dt, lam)
    assert np.max(np.abs(runs[0][0] - runs[1][0])) > 1e-3  # the two orders differ
    assert np.max(np.abs(x - 0.5 * (runs[0][0] + runs[1][0]))) < 1e-12
    for got, forward, backward in zip(lam, runs[0][1], runs[1][1]):
        assert np.allclose(got, 0.5 * (forward + backward), rtol=1e-9, atol=1e-15)
