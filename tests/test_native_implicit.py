"""The implicit solvers' native kernels (solvers/native/src/implicit.c, ``native.implicit_kernels``) against their NumPy
twins, bit for bit on x86-64 (``native_helpers.assert_same``: the C code repeats the twins' operations in their order):

- ``SphereProjection.project`` <-> ``EdgeSprings.project`` / ``HingeBending.project`` of A_free x + z_pinned (targets
  and energy; zero-length springs, with and without pins, curved hinges); ``scatter`` <-> b + A_free_T @ q;
- ``BlockMatrix`` <-> scipy's BSR product (random matrices with empty block rows, rectangular, the implicit solver's);
  ``BlockMatrix.block_cg`` <-> ``linalg.iterative.block_cg`` (a solve to its tolerance, the iteration cap, a zero
  start residual, atol, a zero matrix), with ``ordered_dot``'s sum held to its definition;
- ``BlockAssembly`` <-> ``BlockPattern.assemble`` (the implicit solver's Hessian blocks of a pinned, jiggled cloth);
- ``RotationSVD`` <-> ``linalg.eigen3.rotation_svd`` (near-rotations, general, inverted, flat, tiny, repeated singular
  values, zero and NaN matrices);
- ``TetTargets`` <-> ``TetStrain.project``'s NumPy (the SVD, ``project_unit_product``, the targets) on the same
  matrices, with the weights of a tet set;
- whole runs, Compute AUTO against NUMPY: PROJECTIVE on a curved pinned cloth over a sphere (springs and curved hinges
  native, the end-of-step contacts in XPBD's ``AnalyticContacts.resolve`` through ``finish_step``), IMPLICIT_EULER
  with CG and with Jacobi on a cloth landing on a sphere (its CG and its end-of-step contacts in C),
  PROJECTIVE on a solid of tets landing on the ground (its per-tet SVD native);
- the bindings' refusals: ValueError naming the array for a wrong dtype, shape, layout, index or row pointer.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from native_helpers import assert_same, native_library
from solvers import GroundPlane, SolverConfig, Sphere, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.energies import hinges_from_triangles
from solvers.linalg.eigen3 import rotation_svd
from solvers.linalg.iterative import DOT_LANES, block_cg, inverse_3x3, ordered_dot
from solvers.native.implicit_kernels import BlockAssembly, BlockMatrix, RotationSVD, SphereProjection, TetTargets
from solvers.projective.constraints import EdgeSprings, HingeBending, TetStrain, project_unit_product


@pytest.fixture(scope="module")
def library():
    return native_library()


def cloth(n=9, pins=(0, 8), curved=True, seed=0, jiggle=0.05):
    """(model, jiggled positions (n*n, 3), rng): a 2 m grid cloth with diagonals, curved rest shape if asked."""
    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=True)
    vertices = vertices.copy()
    if curved:
        vertices[:, 2] = 0.3 * vertices[:, 0] ** 2 - 0.2 * vertices[:, 1] ** 2
    pinned = np.zeros(n * n, bool)
    pinned[list(pins)] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(vertices + rng.normal(scale=jiggle, size=vertices.shape))
    return model, x, rng


def sets_of(model, rng):
    hinges = hinges_from_triangles(model.triangle_indices)
    return [EdgeSprings(model.edge_indices, model.edge_rest_length, rng.uniform(1.0, 1e4, model.edge_count),
                        model.rest_positions),
            HingeBending(model.rest_positions, hinges, rng.uniform(1e-4, 1e-2, len(hinges)))]


def split(c, model):
    free, pinned = model.inv_mass > 0.0, model.inv_mass == 0.0
    A_free = c.A[:, free].tocsr()
    return A_free, A_free.T.tocsr(), c.A[:, pinned].tocsr(), free, pinned


@pytest.mark.parametrize("pins", [(0, 8), ()], ids=["pinned", "no pins"])
@pytest.mark.parametrize("kind", [0, 1], ids=["edge springs", "curved hinges"])
def test_sphere_projection_matches_numpy(library, pins, kind):
    model, x, rng = cloth(pins=pins)
    e = model.edge_indices
    x[e[5, 1]] = x[e[5, 0]]  # zero-length springs: projected along their rest direction
    x[e[40, 1]] = x[e[40, 0]]
    c = sets_of(model, rng)[kind]
    A_free, A_free_T, A_pinned, free, pinned = split(c, model)
    native = SphereProjection(library, A_free, A_free_T, *c.sphere_targets())
    x_free = np.ascontiguousarray(x[free])
    z_pinned = A_pinned @ x[pinned] if len(pins) else 0.0
    q, length = native.project(x_free, z_pinned if len(pins) else None)
    ref_q, ref_energy = c.project(A_free @ x_free + z_pinned, True)
    assert_same(q, ref_q, np.abs(ref_q).max())
    assert_same(c.energy_of(length), ref_energy, ref_energy)
    b = rng.normal(size=(len(x_free), 3))
    assert_same(native.scatter(q, b), b + A_free_T @ ref_q, np.abs(ref_q).max())
    if kind == 0:
        assert np.sum(length <= 1e-12) >= 1  # the zero-length branch ran (unless a pin moved it)


def test_block_matrix_matches_scipy(library):
    rng = np.random.default_rng(3)
    for rows, cols in ((40, 40), (25, 33), (1, 1)):
        keep = np.ones(rows)
        keep[rows // 2] = 0.0  # an empty block row
        dense_blocks = sp.diags(keep) @ sp.random(rows, cols, density=0.15, random_state=rng, format="csr")
        dense_blocks.eliminate_zeros()
        A = sp.bsr_matrix(sp.kron(dense_blocks, np.ones((3, 3))), blocksize=(3, 3))
        A.data[:] = rng.normal(size=A.data.shape)
        v = rng.normal(size=3 * cols)
        assert_same(BlockMatrix(library, A) @ v, A @ v, np.abs(A @ v).max() + 1.0)


def test_ordered_dot_sums_its_lanes_in_order():
    """``ordered_dot`` against its definition, the running sums by np.add.accumulate (element i into sum i % DOT_LANES,
    in order) folded in halves, bit for bit: the order src/block_cg.c repeats."""
    rng = np.random.default_rng(6)
    for n in (0, 1, 5, DOT_LANES - 1, DOT_LANES, DOT_LANES + 1, 7 * DOT_LANES + 3, 12289):
        a = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
        b = rng.normal(size=n)
        products = a * b
        lanes = np.zeros(DOT_LANES)
        head = n - n % DOT_LANES
        if head:
            lanes = np.add.accumulate(products[:head].reshape(-1, DOT_LANES), axis=0)[-1]
        lanes[:n - head] += products[head:]
        while len(lanes) > 1:
            lanes = lanes[:len(lanes) // 2] + lanes[len(lanes) // 2:]
        assert ordered_dot(a, b) == lanes[0] or n == 0 and ordered_dot(a, b) == 0.0
        assert abs(ordered_dot(a, b) - float(a @ b)) <= 1e-12 * float(np.abs(products).sum())


def _spd_blocks(rng, nodes=30, mass=1.0):
    """An SPD matrix of 3x3 blocks (BSR): springs along a ring with chords (each edge's 3x3 block k d d^T + 0.1 k I)
    plus mass on the diagonal, and its diagonal blocks' inverses."""
    a = np.arange(nodes)
    edges = np.concatenate([np.stack([a, (a + 1) % nodes], 1), np.stack([a, (a + 7) % nodes], 1)])
    d = rng.normal(size=(len(edges), 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    k = rng.uniform(10.0, 1e3, len(edges))
    block = k[:, None, None] * (d[:, :, None] * d[:, None, :] + 0.1 * np.eye(3))
    A = sp.lil_matrix((3 * nodes, 3 * nodes))
    for (i, j), h in zip(edges, block):
        for p, q, sign in ((i, i, 1.0), (j, j, 1.0), (i, j, -1.0), (j, i, -1.0)):
            A[3 * p:3 * p + 3, 3 * q:3 * q + 3] += sign * h
    A = A.tocsr() + mass * sp.eye(3 * nodes)
    diagonal = np.stack([A[3 * i:3 * i + 3, 3 * i:3 * i + 3].toarray() for i in range(nodes)])
    A = sp.bsr_matrix(A, blocksize=(3, 3))
    A.sort_indices()
    return A, inverse_3x3(diagonal)


def test_block_cg_matches_numpy(library):
    """The whole CG in C against ``block_cg`` bit for bit (x, iterations, residual): a solve to its tolerance (which
    it reaches: |b - A x| <= tol |r0|), one cut by the iteration cap, a zero start residual, a start within atol, and
    a zero matrix (p A p = 0 ends it at once). The start x is not changed."""
    rng = np.random.default_rng(7)
    A, D_inv = _spd_blocks(rng)
    native = BlockMatrix(library, A)
    b, x0 = rng.normal(size=A.shape[0]), rng.normal(size=A.shape[0])
    start = x0.copy()
    cases = [(b, x0, 1e-10, 500, 0.0), (b, x0, 1e-10, 3, 0.0), (np.zeros_like(b), np.zeros_like(b), 1e-3, 50, 0.0),
             (b, x0, 1e-3, 50, 1e9)]
    for rhs, x, tol, cap, atol in cases:
        got, want = native.block_cg(D_inv, rhs, x, tol, cap, atol), block_cg(A, D_inv, rhs, x, tol, cap, atol)
        assert_same(got[0], want[0], np.abs(want[0]).max() + 1.0)
        assert got[1] == want[1]
        assert_same(got[2], want[2])
    assert np.array_equal(x0, start)
    solved, iterations, residual = native.block_cg(D_inv, b, x0, 1e-10, 500, 0.0)
    assert 3 < iterations < 500 and residual <= 1e-10
    assert np.linalg.norm(b - A @ solved) <= 1e-10 * np.linalg.norm(b - A @ x0)
    assert native.block_cg(D_inv, b, x0, 1e-10, 3, 0.0)[1] == 3
    assert native.block_cg(D_inv, b, x0, 1e-3, 50, 1e9)[1:] == (0, 1.0)
    zero = A.copy()
    zero.data[:] = 0.0
    got, want = BlockMatrix(library, zero).block_cg(D_inv, b, x0, 1e-3, 50), block_cg(zero, D_inv, b, x0, 1e-3, 50)
    assert got[1] == want[1] == 0
    assert_same(got[0], want[0])
    assert_same(got[2], want[2])


def test_block_assembly_matches_the_pattern(library):
    """The implicit solver's Newton matrix assembly in C against ``BlockPattern.assemble`` bit for bit: springs and
    bending blocks of a pinned cloth at jiggled positions (blocks of pinned rows dropped, duplicates summed)."""
    model, x, _ = cloth(pins=(0, 8))
    solver = make_solver(model, SolverConfig(solver="IMPLICIT_EULER", compute="NUMPY"))
    blocks = np.concatenate(solver._energy_blocks(x))
    native = BlockAssembly(library, solver.pattern)
    assert_same(native(blocks), solver.pattern.assemble(blocks), np.abs(blocks).max())
    with pytest.raises(ValueError, match="blocks: shape"):
        native(blocks[:-1])
    with pytest.raises(ValueError, match="blocks: must be C-contiguous"):
        native(np.asfortranarray(blocks))


def _svd_cases(rng):
    """Matrices (3, 3, m) structure of arrays: near rest, general (half inverted), repeated singular values, tiny,
    flat, zero and NaN."""
    F = np.concatenate([
        np.eye(3) + 0.01 * rng.normal(size=(300, 3, 3)),  # a solid near rest
        rng.normal(size=(300, 3, 3)),  # general, half of them inverted
        np.repeat(np.eye(3)[None], 5, axis=0), np.repeat(-np.eye(3)[None], 5, axis=0),  # three equal singular values
        np.repeat(np.diag([2.0, 2.0, 1.0])[None], 5, axis=0), np.repeat(np.diag([1.0, 3.0, 3.0])[None], 5, axis=0),
        1e-9 * rng.normal(size=(5, 3, 3)),  # tiny
        rng.normal(size=(5, 3, 3)) * np.array([1.0, 1.0, 0.0]),  # flat: a zero column
        np.zeros((1, 3, 3)), np.full((1, 3, 3), np.nan),
    ])
    return np.ascontiguousarray(F.transpose(1, 2, 0))


def test_rotation_svd_matches_numpy(library):
    F = _svd_cases(np.random.default_rng(4))
    got, want = RotationSVD(library)(F), rotation_svd(F.copy())
    for a, b in zip(got, want):
        finite = np.isfinite(b)
        assert np.array_equal(np.isfinite(a), finite)
        assert_same(a[finite], b[finite])
    U, S, V = got
    ok = np.isfinite(S).all(axis=0)
    rebuilt = np.einsum("iat,at,jat->ijt", U, S, V)
    assert np.abs(rebuilt - F)[..., ok].max() < 1e-9 * max(1.0, np.abs(F[..., ok]).max())  # F = U diag(S) V^T


def test_tet_targets_match_numpy(library):
    """PD's tet projection in C against ``TetStrain.project``'s NumPy on the SVD's cases, squashed and stretched tets
    too (a volume projection with no root on its branch, left to the last scaling): S, s and the targets bit for bit
    where finite, NaN where NumPy's are; s on the volume-preserving set."""
    rng = np.random.default_rng(5)
    F = np.concatenate([_svd_cases(rng), np.ascontiguousarray(
        (np.diag([4.0, 1.0, 0.05])[None] + 0.01 * rng.normal(size=(20, 3, 3))).transpose(1, 2, 0))], axis=2)
    m = F.shape[2]
    w_strain, w_volume = rng.uniform(0.1, 3.0, m), rng.uniform(0.1, 3.0, m)
    targets = TetTargets(library, w_strain, w_volume)
    q, S, s = targets(F)
    twin = TetStrain.__new__(TetStrain)  # the NumPy projection with these weights
    twin.w_strain, twin.w_volume, twin.native = w_strain, w_volume, None
    z = np.ascontiguousarray(F.transpose(2, 1, 0)).reshape(-1, 3)  # z[3 t + c, d] = F[d, c, t]
    q_want, _ = twin.project(z)
    _, S_want, _ = rotation_svd(F.copy())
    s_want = project_unit_product(S_want.T).T
    for a, b in ((S, S_want), (s, s_want), (q, q_want)):
        finite = np.isfinite(b)
        assert np.array_equal(np.isfinite(a), finite)
        assert_same(a[finite], b[finite])
    ok = np.isfinite(s).all(axis=0)
    assert np.abs(s[:, ok].prod(axis=0) - 1.0).max() < 1e-12 and np.all(s[:, ok] > 0.0)
    assert not np.array_equal(q, np.zeros_like(q))


def test_tet_targets_refuse_bad_arrays(library):
    targets = TetTargets(library, np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="F: shape"):
        targets(np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="F: must be C-contiguous"):
        targets(np.zeros((3, 3, 8))[:, :, ::2])
    with pytest.raises(ValueError, match="w_volume: shape"):
        TetTargets(library, np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="fewer than 2 tets"):
        TetTargets(library, np.ones(1), np.ones(1))


def test_rotation_svd_refuses_bad_arrays(library):
    svd = RotationSVD(library)
    with pytest.raises(ValueError, match="F: shape"):
        svd(np.zeros((3, 4, 2)))
    with pytest.raises(ValueError, match="F: dtype"):
        svd(np.zeros((3, 3, 2), np.float32))
    with pytest.raises(ValueError, match="F: must be C-contiguous"):
        svd(np.zeros((3, 3, 4))[:, :, ::2])
    with pytest.raises(ValueError, match="F: expected a numpy array"):
        svd([[0.0] * 3] * 3)


def _run(config, model, colliders, frames, compute, x0=None):
    solver = make_solver(model, SolverConfig(**{**config, "compute": compute}))
    state = State.at_rest(model)
    if x0 is not None:
        state.x[:] = x0
    out = []
    for _ in range(frames):
        advance_frame(solver, state, 1.0 / 24.0, solver.config.substeps, colliders)
        out.append(state.x.copy())
    return solver, np.array(out)


def test_projective_cloth_native_equals_numpy(library):
    model, _, _ = cloth(n=12, pins=(0, 11), jiggle=0.0)
    colliders = [Sphere(np.array([0.0, 0.0, -1.0]), 0.8, 0.0), GroundPlane(np.array([0.0, 0.0, -2.0]),
                                                                            np.array([0.0, 0.0, 1.0]), 0.0)]
    config = dict(solver="PROJECTIVE", substeps=4, iterations=4, stiffness=2e3, bending_stiffness=1e-2)
    native_solver, a = _run(config, model, colliders, 10, "AUTO")
    numpy_solver, b = _run(config, model, colliders, 10, "NUMPY")
    assert numpy_solver.native is None
    kinds = [type(c).__name__ for c, *_, native in native_solver.projected if native is not None]
    assert kinds == ["EdgeSprings", "HingeBending"]
    assert native_solver.contact_factorizations > 0  # the sphere's planes entered the solve
    assert native_solver.native_contacts is not None and numpy_solver.native_contacts is None  # end-of-step contacts
    assert_same(a, b, 1.0)


def test_projective_solid_native_equals_numpy(library):
    corners = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)], float)
    kuhn = np.array([(0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7)])
    vertices = np.concatenate([corners, corners[4:] + [0.0, 0.0, 1.0]]) * 0.3 + [0.0, 0.0, 0.1]
    model = build_model(vertices, tets=np.concatenate([kuhn, np.array([4, 5, 6, 7, 8, 9, 10, 11])[kuhn]]), total_mass=1.0)
    tilted = vertices @ np.array([[0.96, 0.0, 0.28], [0.0, 1.0, 0.0], [-0.28, 0.0, 0.96]]).T + [0.0, 0.0, 0.1]
    ground = [GroundPlane(np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.0, 0.3)]
    config = dict(solver="PROJECTIVE", substeps=4, iterations=5, youngs_modulus=5e4, poisson_ratio=0.4)
    native_solver, a = _run(config, model, ground, 12, "AUTO", tilted)
    numpy_solver, b = _run(config, model, ground, 12, "NUMPY", tilted)
    tets = next(c for c, *_ in native_solver.projected if isinstance(c, TetStrain))
    assert isinstance(tets.native, TetTargets)
    assert next(c for c, *_ in numpy_solver.projected if isinstance(c, TetStrain)).native is None
    assert a[-1, :, 2].min() < 0.01  # it landed (tilted, a corner first)
    assert_same(a, b, 1.0)


@pytest.mark.parametrize("linear_solver", ["CG", "JACOBI"])
def test_implicit_euler_native_equals_numpy(library, linear_solver):
    model, _, _ = cloth(n=10, pins=(), curved=False, jiggle=0.0)
    colliders = [Sphere(np.array([0.0, 0.0, -1.0]), 0.8, 0.0)]
    config = dict(solver="IMPLICIT_EULER", linear_solver=linear_solver, substeps=2, stiffness=1e3)
    native_solver, a = _run(config, model, colliders, 12, "AUTO")
    _, b = _run(config, model, colliders, 12, "NUMPY")
    assert native_solver.native is not None and native_solver.native_contacts is not None  # CG and contacts in C
    assert a[:, :, 2].min() < -0.5  # the cloth fell past the sphere's top (at z = -0.2): contacts were in the solves
    assert_same(a, b, 1.0)


# ---------------------------------------------------------------------- refusals

def _projection(library):
    model, x, rng = cloth()
    c = sets_of(model, rng)[0]
    A_free, A_free_T, _, free, _ = split(c, model)
    return c, A_free, A_free_T, np.ascontiguousarray(x[free])


def test_sphere_projection_refuses_bad_arrays(library):
    c, A_free, A_free_T, x_free = _projection(library)
    w, fallback, tiny = c.sphere_targets()
    with pytest.raises(ValueError, match="A_free: expected a scipy CSR"):
        SphereProjection(library, A_free.tocsc(), A_free_T, w, fallback, tiny)
    with pytest.raises(ValueError, match="A_free_T: shape"):
        SphereProjection(library, A_free, A_free, w, fallback, tiny)
    bad = A_free.copy()
    bad.indices[3] = A_free.shape[1]
    with pytest.raises(ValueError, match="A_free.indices: index .* out of range"):
        SphereProjection(library, bad, A_free_T, w, fallback, tiny)
    bad = A_free.copy()
    bad.indptr[-1] += 1
    with pytest.raises(ValueError, match="A_free"):
        SphereProjection(library, bad, A_free_T, w, fallback, tiny)
    with pytest.raises(ValueError, match="weighted_radius: shape"):
        SphereProjection(library, A_free, A_free_T, w[:-1], fallback, tiny)
    with pytest.raises(ValueError, match="fallback: dtype"):
        SphereProjection(library, A_free, A_free_T, w, fallback.astype(np.float32), tiny)
    native = SphereProjection(library, A_free, A_free_T, w, fallback, tiny)
    with pytest.raises(ValueError, match="x_free: shape"):
        native.project(x_free[:-1])
    with pytest.raises(ValueError, match="x_free: must be C-contiguous"):
        native.project(np.asfortranarray(x_free))
    with pytest.raises(ValueError, match="z_pinned: dtype"):
        native.project(x_free, np.zeros((A_free.shape[0], 3), np.float32))
    q, _ = native.project(x_free)
    with pytest.raises(ValueError, match="b: shape"):
        native.scatter(q, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="q: shape"):
        native.scatter(q[:-1], np.zeros_like(x_free))


def test_block_matrix_refuses_bad_arrays(library):
    A = sp.bsr_matrix(sp.kron(sp.eye(4) + sp.eye(4, k=1), np.ones((3, 3))), blocksize=(3, 3))
    with pytest.raises(ValueError, match="matrix: expected a scipy BSR matrix of 3x3 blocks"):
        BlockMatrix(library, A.tocsr())
    with pytest.raises(ValueError, match="matrix: expected a scipy BSR matrix of 3x3 blocks"):
        BlockMatrix(library, sp.bsr_matrix(A, blocksize=(1, 1)))
    bad = A.copy()
    bad.indices[2] = 4
    with pytest.raises(ValueError, match="matrix.indices: index 4 out of range"):
        BlockMatrix(library, bad)
    bad = A.copy()
    bad.indptr[1] = 5
    with pytest.raises(ValueError, match="matrix.indptr: must run from 0"):
        BlockMatrix(library, bad)
    native = BlockMatrix(library, A)
    with pytest.raises(ValueError, match="x: shape"):
        native @ np.zeros(11)
    with pytest.raises(ValueError, match="x: dtype"):
        native @ np.zeros(12, np.float32)
    with pytest.raises(ValueError, match="x: must be C-contiguous"):
        native @ np.zeros(24)[::2]
    D_inv = np.repeat(np.eye(3)[None], 4, axis=0)
    b = np.ones(12)
    with pytest.raises(ValueError, match="block_cg: the matrix must be square"):
        BlockMatrix(library, sp.bsr_matrix(sp.kron(sp.eye(4, 5), np.ones((3, 3))), blocksize=(3, 3))).block_cg(
            D_inv, b, b, 1e-3, 10)
    with pytest.raises(ValueError, match="D_inv: shape"):
        native.block_cg(D_inv[:3], b, b, 1e-3, 10)
    with pytest.raises(ValueError, match="b: dtype"):
        native.block_cg(D_inv, b.astype(np.float32), b, 1e-3, 10)
    with pytest.raises(ValueError, match="x: shape"):
        native.block_cg(D_inv, b, b[:-3], 1e-3, 10)
    with pytest.raises(ValueError, match="max_iterations: must be an integer"):
        native.block_cg(D_inv, b, b, 1e-3, 2.5)
