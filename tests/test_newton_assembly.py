"""The faster forms NEWTON's terms and its narrow band use, against the references they replace: equal to the bit on
random and folded cloth states (the same products added in the same order), and the positions cache returning only
what the same numbers give.

- ``SquaredLengthSprings`` gradient: one incidence product instead of ``scatter`` of (g, -g) per edge;
- ``IsometricBending``: the curvature vector from one gather per corner column instead of the (h, 4, 3) gather and an
  einsum, and its gradient by a sparse product instead of ``scatter``;
- ``energies.base.PositionCache`` under the springs' edge vectors, bending's curvature vectors and the barriers'
  contacts: a trial's value, then the gradient and Hessian at the same positions;
- ``linalg.direct.NarrowBand.band``: the preconditioner's band filled straight from A's block data (Fortran order),
  equal to ``BandScatter.band`` of ``preconditioner_data``.
"""
import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, Sphere, build_model, grid_cloth, make_solver
from solvers.builder import grid_quads
from solvers.collision.barriers.face_barrier import FaceColliderBarrier, face_triangles
from solvers.collision.barriers.log_barrier import ColliderBarrier
from solvers.energies import IsometricBending, SquaredLengthSprings, hinges_from_triangles
from solvers.energies.base import PositionCache
from solvers.linalg.direct import NarrowBand


def lab_cloth(n):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0)
    pins = np.zeros(n * n, bool)
    pins[[0, n - 1]] = True
    return build_model(vertices, edges, triangles, pinned=pins, total_mass=1.0, quads=grid_quads(n))


def states(model, seed):
    """A crumpled state (compressed and stretched springs at random) and a folded one (the sheet folded over a line,
    half of it on top of the other, plus noise)."""
    rng = np.random.default_rng(seed)
    rest = model.rest_positions
    crumpled = rest * [0.8, 0.9, 1.0] + 0.05 * rng.standard_normal(rest.shape)
    folded = rest.copy()
    over = folded[:, 0] > 0.0
    folded[over, 0] = -folded[over, 0]
    folded[over, 2] += 0.02 + 0.3 * np.abs(folded[over, 0]) * 0.01
    folded += 1e-3 * rng.standard_normal(rest.shape)
    return {"crumpled": crumpled, "folded": folded}


@pytest.mark.parametrize("seed", [0, 1])
def test_the_springs_gradient_by_incidence_equals_the_scatter_to_the_bit(seed):
    model = lab_cloth(17)
    rng = np.random.default_rng(seed)
    springs = SquaredLengthSprings(model.edge_indices, model.edge_rest_length, rng.uniform(10.0, 300.0, model.edge_count))
    for x in states(model, seed).values():
        d, length = springs._edge_vectors_of(x)
        g_d = (2.0 * springs.k * (length**2 / springs.rest_length**2 - 1.0))[:, None] * d
        assert np.array_equal(springs.gradient(x), springs._gradient_by_scatter(x, g_d))


def test_the_springs_gradient_of_edges_in_random_order_with_a_particle_on_no_edge():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 3))
    edges = rng.permutation(np.array([(i, j) for i in range(29) for j in range(i + 1, 29) if rng.random() < 0.2]))
    edges = np.where(rng.random((len(edges), 1)) < 0.5, edges, edges[:, ::-1])  # either direction
    springs = SquaredLengthSprings(edges, rng.uniform(0.5, 2.0, len(edges)), rng.uniform(1.0, 5.0, len(edges)))
    d, length = springs._edge_vectors_of(x)
    g_d = (2.0 * springs.k * (length**2 / springs.rest_length**2 - 1.0))[:, None] * d
    g = springs.gradient(x)
    assert np.array_equal(g, springs._gradient_by_scatter(x, g_d))
    assert not g[29].any()  # particle 29 is on no edge
    with pytest.raises(IndexError):
        springs.gradient(x[:10])


@pytest.mark.parametrize("seed", [0, 1])
def test_bending_curvature_vectors_and_gradient_equal_the_references_to_the_bit(seed):
    model = lab_cloth(15)
    hinges = hinges_from_triangles(model.triangle_indices)
    rng = np.random.default_rng(seed)
    for rest_name, rest in {"flat": model.rest_positions, "curved": states(model, seed + 7)["crumpled"]}.items():
        bending = IsometricBending(rest, hinges, rng.uniform(1e-4, 1e-2, len(hinges)))
        assert bending.is_constant_hessian == (rest_name == "flat")
        for x in states(model, seed).values():
            assert np.array_equal(bending._curvature_vector_of(x), bending._curvature_vector_reference(x))
            assert np.array_equal(bending.gradient(x), bending._gradient_by_scatter(x))
    with pytest.raises(IndexError):
        bending.gradient(model.rest_positions[:20])


def test_the_position_cache_recomputes_when_the_numbers_change_in_place():
    calls = []

    def compute(x):
        calls.append(1)
        return x.sum()

    cache = PositionCache()
    x = np.arange(12.0).reshape(4, 3)
    assert cache.get(x, compute) == 66.0 and cache.get(x.copy(), compute) == 66.0 and len(calls) == 1
    x[2, 1] += 1.0  # the same array changed in place: recomputed
    assert cache.get(x, compute) == 67.0 and len(calls) == 2
    assert cache.get(x[:3], compute) == x[:3].sum() and len(calls) == 3  # another shape
    y = x.copy()
    y[0, 0] = np.nan
    cache.get(y, compute)
    cache.get(y, compute)  # nan never equals itself: recomputed, never a stale value
    assert len(calls) == 5


def test_cached_terms_give_what_fresh_terms_give_along_a_line_search():
    """Value at a trial, then gradient and Hessian at the accepted trial, then at a rejected one and back: each call
    equal to the bit to a freshly built term's (no cache) at the same positions."""
    model = lab_cloth(13)
    hinges = hinges_from_triangles(model.triangle_indices)
    sphere = Sphere(np.array([0.0, 0.0, 2.595]), 0.4, 0.01)  # its top 5 mm below the sheet at z = 3
    ground = GroundPlane(np.array([0.0, 0.0, 2.995]), np.array([0.0, 0.0, 1.0]), 0.01)
    free = model.inv_mass > 0.0
    kappa = np.full(model.particle_count, 20.0)
    tris = face_triangles(model.triangle_indices, free)
    rng = np.random.default_rng(3)
    x = model.rest_positions + 0.001 * np.abs(rng.standard_normal(model.rest_positions.shape))

    def build():
        return [SquaredLengthSprings(model.edge_indices, model.edge_rest_length, 50.0),
                IsometricBending(model.rest_positions, hinges, 1e-3),
                ColliderBarrier(ground, kappa, free, 0.01), FaceColliderBarrier(sphere, tris, 20.0, 0.01)]

    cached = build()
    p = 0.004 * rng.standard_normal(x.shape)
    p[:, 2] = np.abs(p[:, 2])  # away from both colliders: every trial within reach and outside
    for trial in (x + p, x + 0.5 * p, x + 0.5 * p, x, x + 0.25 * p):
        for term, fresh in zip(cached, build()):
            assert term.value(trial) == fresh.value(trial)
            assert np.array_equal(term.gradient(trial), fresh.gradient(trial))
            assert np.isfinite(term.value(trial))
            h, h_fresh = term.hessian(trial), fresh.hessian(trial)
            assert np.array_equal(h.blocks, h_fresh.blocks) and np.array_equal(h.rows, h_fresh.rows)
    assert len(cached[3].hessian(x).rows) and cached[2].gradient(x).any()  # both barriers act


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_narrow_band_filled_from_the_block_data_equals_the_scatter_of_the_preconditioner(seed):
    model = lab_cloth(12)
    solver = make_solver(model, SolverConfig(solver="NEWTON"))
    captured = {}

    def capture(pattern, data, contact, b):
        captured.update(pattern=pattern, data=data.copy())
        return np.zeros_like(b)

    solver.solves.solve_blocks = capture
    x = states(model, seed)["crumpled"]
    solver.inertia.x_tilde = model.rest_positions.copy()
    solver._direction(x, solver.potentials, (1.0 / 24.0) ** 2)
    pattern, data = captured["pattern"], captured["data"]
    band = NarrowBand(pattern, solver.solves.weak)
    rng = np.random.default_rng(seed)
    k = 40
    picked = band.strong[rng.integers(0, len(band.strong), k)]  # contact blocks within the band, some repeated
    picked[1] = picked[0]
    contact = (pattern.block_rows[picked], pattern.block_cols[picked], rng.standard_normal((k, 3, 3)))
    for c in (None, contact):
        for dtype in (np.float64, np.float32):
            reference = band.scatter.band(band.preconditioner_data(data), c, dtype)
            for _ in range(2):  # the second call reuses the buffer and the compensation
                ab = band.band(data, c, dtype)
                assert ab.dtype == dtype and ab.flags.f_contiguous
                assert np.array_equal(ab, reference)
    changed = data.copy()
    changed[band.weak] *= 2.0  # other weak blocks: the compensation follows
    assert np.array_equal(band.band(changed, None), band.scatter.band(band.preconditioner_data(changed), None))
