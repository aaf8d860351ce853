"""NEWTON's direct solves (solvers/linalg/direct.py ``NewtonSolves``): the banded Cholesky where the plan chose it, SuperLU
where a matrix leaves the band, the same solutions either way."""
import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from solvers.linalg.direct import BandedCholesky, NewtonSolves, _structural_lu, banded_cholesky_flops, prefer_banded, superlu_flops


def grid_laplacian_3d(n, shift=1.0, seed=0):
    """An SPD matrix with a cloth grid's pattern: 3x3 blocks per vertex of an n x n grid, coupled to its 8
    neighbours (springs and the quads' diagonals), random positive spring weights, plus shift * identity."""
    rng = np.random.default_rng(seed)
    index = np.arange(n * n).reshape(n, n)
    pairs = [(index[:, :-1], index[:, 1:]), (index[:-1, :], index[1:, :]), (index[:-1, :-1], index[1:, 1:]),
             (index[:-1, 1:], index[1:, :-1])]
    i = np.concatenate([a.ravel() for a, _ in pairs])
    j = np.concatenate([b.ravel() for _, b in pairs])
    w = rng.uniform(0.5, 2.0, len(i))
    L = sp.coo_matrix((np.concatenate([-w, -w]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n * n, n * n))
    L = (L - sp.diags(np.asarray(L.sum(axis=1)).ravel())).tocsr()
    return (sp.kron(L, np.eye(3)) + shift * sp.identity(3 * n * n)).tocsr()


def test_a_grid_sequence_is_solved_banded_and_matches_a_direct_solve():
    solves = NewtonSolves()
    rng = np.random.default_rng(1)
    for k in range(3):
        A = grid_laplacian_3d(24, shift=1.0 + k, seed=k)
        b = rng.normal(size=A.shape[0])
        x = solves(A, b)
        np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(b).max())
        np.testing.assert_allclose(x, spsolve(A.tocsc(), b), rtol=1e-9, atol=1e-12)
    assert solves.method == "banded Cholesky"


def test_a_matrix_wider_than_the_planned_band_is_solved_by_superlu():
    """Contact between particles far apart in the mesh (self-contact) couples rows outside the planned band."""
    solves = NewtonSolves()
    A = grid_laplacian_3d(24)
    b = np.random.default_rng(2).normal(size=A.shape[0])
    solves(A, b)
    far = sp.lil_matrix(A.shape)
    far[0, A.shape[0] - 1] = far[A.shape[0] - 1, 0] = -0.5
    far[0, 0] = far[A.shape[0] - 1, A.shape[0] - 1] = 0.5
    wide = (A + far.tocsr()).tocsr()
    x = solves(wide, b)
    assert solves.method == "SuperLU"
    np.testing.assert_allclose(wide @ x, b, atol=1e-9 * np.abs(b).max())
    solves(A, b)
    assert solves.method == "banded Cholesky"  # the plan is kept


def test_a_pattern_whose_band_holds_far_more_than_superlus_factor_stays_on_superlu():
    """A random sparse SPD matrix (no mesh order for RCM to find): its band is most of the matrix."""
    rng = np.random.default_rng(3)
    n = 3000
    R = sp.random(n, n, density=4.0 / n, random_state=rng, data_rvs=lambda k: -rng.uniform(0.5, 1.0, k))
    R = (R + R.T).tocsr()
    A = (sp.diags(np.asarray(-R.sum(axis=1)).ravel() + 1.0) + R).tocsr()
    b = rng.normal(size=n)
    solves = NewtonSolves()
    for _ in range(2):
        x = solves(A, b)
    assert solves.plan[1] is None and solves.method == "SuperLU"
    np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(b).max())


def test_flop_counts_of_a_dense_matrix_are_choleskys_and_lus():
    """A dense n x n pattern: the band Cholesky's count is n (n^2 - 1) / 3 (n^3 / 3 to leading order), SuperLU's
    2 (n - 1) n (2n - 1) / 6 (LU's 2 n^3 / 3)."""
    n = 40
    A = np.full((n, n), -1.0) + 2.0 * n * np.eye(n)
    assert banded_cholesky_flops(n, n - 1) == (n - 1) * n * (n + 1) / 3
    assert superlu_flops(sp.csr_matrix(A)) == 2 * (n - 1) * n * (2 * n - 1) / 6
    assert banded_cholesky_flops(n, 0) == 0.0  # diagonal: nothing below the pivots
    assert superlu_flops(sp.identity(n, format="csr")) == 0.0


def test_a_grid_whose_band_holds_more_entries_but_costs_less_work_is_banded():
    """The 8-neighbour 64 x 64 grid (12288 unknowns): its band holds 2.4x SuperLU's factor entries, which an entry
    count would send to SuperLU, but its factorization costs fewer flops than SuperLU's work (measured: banded 111 vs
    SuperLU 133 ms, one BLAS thread)."""
    A = grid_laplacian_3d(64)
    _, bandwidth = BandedCholesky.plan(A)
    lu = _structural_lu(A)
    assert (bandwidth + 1) * A.shape[0] > 2.0 * (lu.L.nnz + lu.U.nnz)
    assert prefer_banded(A, bandwidth, lu)
    assert not prefer_banded(A, bandwidth, lu, "many")  # many solves: the entries decide
    b = np.random.default_rng(4).normal(size=A.shape[0])
    solves = NewtonSolves()
    x = solves(A, b)
    assert solves.method == "banded Cholesky"
    np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(b).max())


def grid_blocks(n, shift=1.0, seed=0, pinned=()):
    """The pattern and block data of ``grid_laplacian_3d`` as NEWTON assembles them (``BlockPattern``, pinned
    particles eliminated), and the CSR matrix they make."""
    from solvers.linalg import BlockPattern

    rng = np.random.default_rng(seed)
    index = np.arange(n * n).reshape(n, n)
    pairs = [(index[:, :-1], index[:, 1:]), (index[:-1, :], index[1:, :]), (index[:-1, :-1], index[1:, 1:])]
    i = np.concatenate([a.ravel() for a, _ in pairs])
    j = np.concatenate([b.ravel() for _, b in pairs])
    w = rng.uniform(0.5, 2.0, len(i))
    free = np.ones(n * n, bool)
    free[list(pinned)] = False
    rows = np.concatenate([i, j, i, j, np.arange(n * n)])
    cols = np.concatenate([i, j, j, i, np.arange(n * n)])
    blocks = np.concatenate([w, w, -w, -w, np.full(n * n, shift)])[:, None, None] * np.eye(3)
    pattern = BlockPattern(rows, cols, free)
    data = pattern.assemble(blocks)
    return pattern, data, pattern.matrix(data).tocsr()


def test_block_solves_fill_the_band_directly_and_match_the_matrix_solve():
    """``solve_blocks``: the band filled from the block data (``BandScatter``) in single precision and refined gives
    the double-precision solve's x to the refinement's tolerance; contact blocks within the band add to it."""
    from solvers.linalg.direct import REFINE_TOLERANCE, block_matrix

    pattern, data, A = grid_blocks(24, pinned=(0, 23))
    rng = np.random.default_rng(5)
    b = rng.normal(size=A.shape[0])
    solves = NewtonSolves(single=True, lag=False)  # each system factorized (no earlier factor tried)
    x = solves.solve_blocks(pattern, data, None, b)
    x = solves.solve_blocks(pattern, data, None, b)  # the first call planned (and solved in double precision)
    assert solves.method == "banded Cholesky (single, refined)"
    assert np.linalg.norm(A @ x - b) <= REFINE_TOLERANCE * np.linalg.norm(b)
    np.testing.assert_allclose(x, spsolve(A.tocsc(), b), rtol=1e-8, atol=1e-10 * np.abs(x).max())
    # A contact pair of neighbouring particles (rows 30 and 31 of the reduced pattern): within the band.
    k = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 3.0]])
    contact = (np.array([30, 31, 30, 31]), np.array([30, 31, 31, 30]), np.stack([k, k, -k, -k]))
    x = solves.solve_blocks(pattern, data, contact, b)
    assert solves.method == "banded Cholesky (single, refined)"
    C = block_matrix(pattern, data, contact)
    np.testing.assert_allclose(x, spsolve(C.tocsc(), b), rtol=1e-8, atol=1e-10 * np.abs(x).max())
    assert abs(C - A).sum() > 0.0


def test_block_solves_leave_the_band_for_superlu_and_refinement_falls_back_to_double(monkeypatch):
    from solvers.linalg import direct

    pattern, data, A = grid_blocks(24)
    b = np.random.default_rng(6).normal(size=A.shape[0])
    solves = NewtonSolves(single=True, lag=False)
    solves.solve_blocks(pattern, data, None, b)
    first, last = solves.plan[1][0] // 3, solves.plan[1][-1] // 3  # the particles at the ordering's two ends
    k = np.eye(3)
    far = (np.array([first, last, first, last]), np.array([first, last, last, first]), np.stack([k, k, -k, -k]))
    x = solves.solve_blocks(pattern, data, far, b)
    assert solves.method == "SuperLU"
    np.testing.assert_allclose(direct.block_matrix(pattern, data, far) @ x, b, atol=1e-9 * np.abs(b).max())
    assert solves.single
    monkeypatch.setattr(direct, "REFINE_MAX_STEPS", 0)  # no refinement step reaches the tolerance: double precision
    x = solves.solve_blocks(pattern, data, None, b)
    assert solves.method == "banded Cholesky"
    np.testing.assert_allclose(x, spsolve(A.tocsc(), b), rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(direct, "REFINE_MAX_STEPS", 8)
    solves.solve_blocks(pattern, data, None, b)
    assert not solves.single and solves.method == "banded Cholesky"  # the sequence stays in double precision


def test_a_matrix_too_ill_conditioned_for_single_precision_is_solved_in_double():
    """Eigenvalues from 1e-9 to ~10 (a grid Laplacian plus a tiny shift): single precision's factor cannot resolve
    them, its refinement stops gaining (or its factorization fails) and the double-precision factor solves."""
    pattern, data, A = grid_blocks(24, shift=1e-9)
    b = np.random.default_rng(7).normal(size=A.shape[0])
    solves = NewtonSolves(single=True, lag=False)
    solves.solve_blocks(pattern, data, None, b)
    x = solves.solve_blocks(pattern, data, None, b)
    assert solves.method == "banded Cholesky" and not solves.single
    np.testing.assert_allclose(A @ x, b, atol=1e-6 * np.abs(b).max())


def test_the_band_test_of_contact_blocks_is_the_maps():
    """``BandScatter.leaves_band`` (the check before the band is filled) says a block leaves the band exactly where
    mapping it (``_map``) raises BandTooWide, for blocks near and far from the diagonal of the ordering."""
    from solvers.linalg.direct import BandScatter, BandTooWide

    pattern, data, _ = grid_blocks(12)
    solves = NewtonSolves()
    solves.solve_blocks(pattern, data, None, np.ones(3 * pattern.free_count))
    _, ordering, bandwidth = solves.plan
    scatter = BandScatter(pattern.block_rows, pattern.block_cols, ordering, bandwidth)
    rng = np.random.default_rng(8)
    outcomes = set()
    for _ in range(200):
        rows = rng.integers(0, pattern.free_count, 2)
        cols = np.clip(rows + rng.integers(-12, 13, 2), 0, pattern.free_count - 1)
        try:
            scatter._map(rows, cols)
            mapped = True
        except BandTooWide:
            mapped = False
        assert scatter.leaves_band(rows, cols) == (not mapped)
        outcomes.add(mapped)
    assert outcomes == {True, False}


def spring_network_blocks(particles, seed, shift=1.0, spread=1.0):
    """A random spring network's Newton matrix as ``BlockPattern`` data: each particle tied to 4 random others
    (weights in [0.5, 2] times 10^U(0, log10 spread)), plus shift * identity: SPD, with no band for RCM to find
    (SuperLU's pattern). Returns (pattern, data, CSR matrix); seed picks the weights, the pattern is the same for
    every seed."""
    from solvers.linalg import BlockPattern

    i = np.repeat(np.arange(particles), 4)
    j = np.random.default_rng(0).integers(0, particles, len(i))
    keep = i != j
    i, j = i[keep], j[keep]
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 2.0, len(i)) * 10.0 ** rng.uniform(0.0, np.log10(spread), len(i))
    rows = np.concatenate([i, j, i, j, np.arange(particles)])
    cols = np.concatenate([i, j, j, i, np.arange(particles)])
    blocks = np.concatenate([w, w, -w, -w, np.full(particles, shift)])[:, None, None] * np.eye(3)
    pattern = BlockPattern(rows, cols, np.ones(particles, bool))
    data = pattern.assemble(blocks)
    return pattern, data, pattern.matrix(data).tocsr()


def test_a_sequence_on_superlu_keeps_its_factor_for_the_next_matrices():
    """On SuperLU (a random spring network, no band) the plan's factor is kept: the next matrices, similar, are solved
    by conjugate gradients preconditioned with it to the sequence's PCG tolerance, no new factorization, contact blocks
    included; a matrix that factor no longer preconditions within LAGGED_MAX_ITERATIONS is factorized anew, solved
    exactly, and its factor kept for the matrices after it."""
    from solvers.linalg.direct import LAGGED, block_matrix

    pattern, data, A = spring_network_blocks(1000, seed=1)
    b = np.random.default_rng(9).normal(size=A.shape[0])
    solves = NewtonSolves()
    x = solves.solve_blocks(pattern, data, None, b)
    assert solves.plan[1] is None and solves.factorizations == 1
    np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(b).max())
    for seed in (2, 3):  # weights redrawn: another matrix of the same kind
        _, data, A = spring_network_blocks(1000, seed=seed)
        far = (np.array([0, 999, 0, 999]), np.array([0, 999, 999, 0]), np.stack([np.eye(3), np.eye(3), -np.eye(3),
                                                                                   -np.eye(3)]))
        for contact in (None, far):
            before = solves.pcg_iterations
            x = solves.solve_blocks(pattern, data, contact, b)
            assert solves.method == LAGGED and solves.factorizations == 1
            assert solves.pcg_iterations > before + 1
            M = block_matrix(pattern, data, contact)
            assert np.linalg.norm(M @ x - b) <= 1.01 * solves.pcg_tolerance * np.linalg.norm(b)
    _, data, A = spring_network_blocks(1000, seed=4, shift=1e-3, spread=1e4)  # stiffer by up to 1e4, spring by spring
    x = solves.solve_blocks(pattern, data, None, b)
    assert solves.method == "SuperLU" and solves.factorizations == 2
    np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(b).max())
    _, data, _ = spring_network_blocks(1000, seed=4, shift=1e-3, spread=1e4)
    solves.solve_blocks(pattern, data * 1.01, None, b)  # close to the new factor's matrix
    assert solves.method == LAGGED and solves.factorizations == 2


def test_a_band_sequence_without_weak_blocks_keeps_its_factor_and_one_with_them_does_not():
    """On the full band (a grid with no weak blocks: a solid's case) the last factor preconditions the next similar
    matrices as on SuperLU; a sequence with weak blocks (a cloth's bending wings) factorizes every band it solves."""
    from solvers.linalg.direct import LAGGED, SINGLE_REFINED, block_matrix

    pattern, data, A = grid_blocks(24, seed=0)
    b = np.random.default_rng(8).normal(size=A.shape[0])
    weak = np.zeros(pattern.block_count, bool)
    weak[::7] = True
    for mask, want in ((None, LAGGED), (weak, SINGLE_REFINED)):
        solves = NewtonSolves(single=True, weak=mask, narrow=False)
        solves.solve_blocks(pattern, data, None, b)  # plans, then factorizes the band
        first = solves.factorizations
        _, other, _ = grid_blocks(24, shift=1.2, seed=1)  # another matrix of the same pattern
        x = solves.solve_blocks(pattern, other, None, b)
        assert solves.method == want
        assert solves.factorizations == first + (want != LAGGED)
        tolerance = solves.pcg_tolerance if want == LAGGED else 1e-9
        M = block_matrix(pattern, other, None)
        assert np.linalg.norm(M @ x - b) <= 1.01 * tolerance * np.linalg.norm(b)
