"""NEWTON's direct solves (solvers/linalg/direct.py ``NewtonSolves``): the banded Cholesky where the plan chose it, SuperLU
where a matrix leaves the band, the same solutions either way."""
import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from solvers.linalg.direct import NewtonSolves


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
