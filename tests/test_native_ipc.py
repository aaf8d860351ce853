"""NEWTON's IPC contact kernels (solvers/native/src/ipc_distance.c, ``native.ipc_kernels``) against their NumPy twins:

- ``IPCKernels.point_triangle`` / ``edge_edge`` <-> ``primitives.point_triangle_distance_squared`` /
  ``edge_edge_distance_squared``: every distance type (the twin's type functions say which each pair is), parallel and
  zero-length edges, coincident points; squared distances, gradients and Hessians to 1e-12 of each array's largest
  entry (the twin maps its derivatives to the points with BLAS products: their summation order is BLAS's);
- ``IPCKernels.point_triangle_gap`` / ``edge_edge_gap`` <-> ``primitives.point_triangle_distance`` /
  ``segment_distance`` (the distances), and ``point_triangle_ccd`` / ``edge_edge_ccd`` <-> ``ccd``'s additive CCD:
  the same hits and misses, times to 1e-12 (hits, misses, no relative motion, a touch at the step's end, a grazing
  approach);
- ``IPCKernels.project_psd`` <-> ``energies.base.project_psd`` (Householder and QL against LAPACK's eigh): indefinite,
  definite (returned symmetrized, as the twin does), zero, repeated eigenvalues, scales from 1e-6 to 1e6, every size a
  barrier hands it; to 1e-12 of each matrix's largest entry;
- the barriers with the kernels against the same barriers on NumPy: value, gradient and Hessian of the mesh-collider
  barrier on a cloth lying on a box, and of the cloth's self-contact barrier on a fold;
- whole runs, Compute AUTO against NUMPY: NEWTON's cloth dropped on the box converges every step, stays out of the
  box and ends where the NumPy run ends, within the steps' tolerance;
- the bindings' refusals: ValueError for mismatched point arrays and matrices of an unsupported shape.
"""
import numpy as np
import pytest

from native_helpers import native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.collision.barriers.mesh_barrier import MeshContactBarrier
from solvers.collision.barriers.self_barrier import SelfContactBarrier
from solvers.collision.narrow_phase.ccd import edge_edge_ccd, point_triangle_ccd
from solvers.collision.narrow_phase.primitives import (
    EDGE_EDGE_TYPES, POINT_TRIANGLE_TYPES, edge_edge_distance_squared, edge_edge_distance_type,
    point_triangle_distance, point_triangle_distance_squared, point_triangle_distance_type, segment_distance)
from solvers.energies.base import project_psd
from solvers.native.ipc_kernels import IPCKernels, kernels_for, use_kernels
from test_mesh_collider import box

TOLERANCE = 1e-12
"""Largest |native - NumPy| relative to the largest entry of the NumPy array."""


@pytest.fixture(scope="module")
def kernels():
    return IPCKernels(native_library())


def assert_close(native, twin, label, scale=None):
    """|native - twin| within TOLERANCE of ``scale`` (default: the twin's largest entry)."""
    scale = max(float(np.abs(twin).max(initial=0.0)) if scale is None else scale, 1e-300)
    gap = float(np.abs(native - twin).max(initial=0.0))
    assert np.all(np.isfinite(native)), label
    assert gap <= TOLERANCE * scale, f"{label}: differs by {gap:.3g} against {scale:.3g}"


def random_pairs(seed=0, count=400):
    """Four (count, 3) point arrays: random pairs, then pairs made degenerate in the ways contact meets them."""
    rng = np.random.default_rng(seed)
    x = [rng.normal(size=(count, 3)) for _ in range(4)]
    x[3][0] = x[2][0] + 0.7 * (x[1][0] - x[0][0])  # parallel edges
    x[3][1] = x[2][1] - 1.3 * (x[1][1] - x[0][1])  # antiparallel
    x[1][2] = x[0][2]  # a zero-length first edge / the point on a corner
    x[3][3] = x[2][3]  # a zero-length second edge / a degenerate triangle side
    x[1][4], x[3][4] = x[0][4], x[2][4]  # both edges of zero length
    x[0][5] = (x[1][5] + x[2][5] + x[3][5]) / 3.0  # the point on the triangle (distance 0 in the plane)
    return [np.ascontiguousarray(a) for a in x]


@pytest.mark.parametrize("seed", [0, 1])
def test_point_triangle_distances_equal_the_twin_for_every_type(kernels, seed):
    x = random_pairs(seed)
    types = point_triangle_distance_type(*x)
    assert set(types.tolist()) == set(range(len(POINT_TRIANGLE_TYPES)))  # every type is among them
    for name, native, twin in zip(("D", "gradient", "Hessian"), kernels.point_triangle(*x),
                                  point_triangle_distance_squared(*x)):
        assert_close(native, twin, name)
        for t in range(len(POINT_TRIANGLE_TYPES)):  # each type on its own scale
            assert_close(native[types == t], twin[types == t], f"{name} of {POINT_TRIANGLE_TYPES[t]}")


@pytest.mark.parametrize("seed", [0, 1])
def test_edge_edge_distances_equal_the_twin_for_every_type(kernels, seed):
    x = random_pairs(seed)
    # pairs of edges pointing along each other, so the endpoint-endpoint and parallel types occur
    far = np.random.default_rng(seed + 7).normal(size=(200, 3))
    x = [np.concatenate([a, b]) for a, b in zip(x, (far, far + [1.0, 0.0, 0.0], far + [2.5, 0.1, 0.0],
                                                     far + [3.5, 0.1, 0.0]))]
    types = edge_edge_distance_type(*x)
    assert set(types.tolist()) == set(range(len(EDGE_EDGE_TYPES)))
    for name, native, twin in zip(("D", "gradient", "Hessian"), kernels.edge_edge(*x), edge_edge_distance_squared(*x)):
        assert_close(native, twin, name)
        for t in range(len(EDGE_EDGE_TYPES)):
            assert_close(native[types == t], twin[types == t], f"{name} of {EDGE_EDGE_TYPES[t]}")


@pytest.mark.parametrize("seed", [0, 1])
def test_distances_alone_equal_the_twin(kernels, seed):
    x = random_pairs(seed)
    assert_close(kernels.point_triangle_gap(*x), point_triangle_distance(*x)[0], "point-triangle")
    assert_close(kernels.edge_edge_gap(*x), segment_distance(*x)[0], "edge-edge")


@pytest.mark.parametrize("min_distance", [0.0, 0.05])
def test_ccd_equals_the_twin(kernels, min_distance):
    """Random motions (hits and misses), pairs that do not move relative to each other (a common translation), pairs
    that touch exactly at the step's end and a slow grazing approach that runs into the rounds' cap."""
    x = random_pairs(2)
    rng = np.random.default_rng(5)
    ends = [p + 0.8 * rng.normal(size=p.shape) for p in x]
    shift = rng.normal(size=3)
    for k in range(4):
        ends[k][6] = x[k][6] + shift  # translated together: no relative motion
    # touching at t = 1: the point ends on the triangle's plane inside it
    ends[1][7], ends[2][7], ends[3][7] = x[1][7], x[2][7], x[3][7]
    ends[0][7] = (x[1][7] + x[2][7] + x[3][7]) / 3.0
    # grazing: a point sliding along, 1e-4 m above, a flat triangle
    x[1][8], x[2][8], x[3][8] = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    x[0][8], ends[0][8] = [0.1, 0.1, 1e-4 + min_distance], [0.3, 0.3, min_distance]
    ends[1][8], ends[2][8], ends[3][8] = x[1][8], x[2][8], x[3][8]
    for native, twin in ((kernels.point_triangle_ccd, point_triangle_ccd), (kernels.edge_edge_ccd, edge_edge_ccd)):
        a, b = native(*x, *ends, min_distance), twin(*x, *ends, min_distance)
        assert np.array_equal(np.isinf(a), np.isinf(b))
        assert 0 < np.isfinite(b).sum() < len(b)
        assert_close(a[np.isfinite(a)], b[np.isfinite(b)], "times of impact", 1.0)
    toi = kernels.point_triangle_ccd(*x, *ends, min_distance)
    assert np.isinf(toi[6]) and toi[7] <= 1.0 and toi[8] <= 1.0
    if min_distance == 0.0:
        assert toi[7] >= 1.0 - 1e-5  # the touch at the end, early by at most TOLERANCE / speed


def test_no_pairs_give_empty_arrays(kernels):
    empty = np.zeros((0, 3))
    D, g, H = kernels.point_triangle(empty, empty, empty, empty)
    assert D.shape == (0,) and g.shape == (0, 12) and H.shape == (0, 12, 12)


@pytest.mark.parametrize("d", [1, 2, 3, 6, 9, 12])
def test_psd_projection_equals_the_twin(kernels, d):
    rng = np.random.default_rng(d)
    H = rng.normal(size=(64, d, d))
    H[:16] *= np.logspace(-6, 6, 16)[:, None, None]  # scales
    H[16] = 0.0
    H[17] = np.eye(d)
    H[18] = np.diag(np.arange(d) - d / 2.0)  # already diagonal, repeated magnitudes
    H[19] = np.kron(np.eye(d // 3), -np.ones((3, 3))) if d % 3 == 0 else -np.eye(d)  # repeated eigenvalues
    for k in range(len(H)):  # one by one: the twin returns a whole batch symmetrized only where all are PSD
        assert_close(kernels.project_psd(H[k:k + 1]), project_psd(H[k:k + 1]), f"matrix {k}",
                     float(np.abs(H[k]).max()))
    # a batch of definite matrices comes back symmetrized, bit for bit as the twin returns it
    A = rng.normal(size=(8, d, d))
    definite = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
    definite[:, 0, -1] += 1e-9 * (d > 1)
    assert np.array_equal(kernels.project_psd(definite), project_psd(definite))
    # the projection is PSD and leaves H unchanged
    before = H.copy()
    out = kernels.project_psd(H)
    assert np.array_equal(H, before)
    assert np.linalg.eigvalsh(out).min() >= -1e-12 * np.abs(out).max(axis=(1, 2)).max()


def test_the_bindings_refuse_what_the_kernels_cannot_take(kernels):
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="x1: shape"):
        kernels.point_triangle(x, np.zeros((3, 3)), x, x)
    with pytest.raises(ValueError, match="x3: shape"):
        kernels.edge_edge(x, x, x, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="1 <= d <= 12"):
        kernels.project_psd(np.zeros((2, 13, 13)))
    with pytest.raises(ValueError, match="H: shape"):
        kernels.project_psd(np.zeros((2, 3, 4)))


def _same_barrier(native, twin, x):
    """Value, gradient and Hessian alike. The closed forms of the squared distances subtract terms of size |x|^2 to
    leave d^2, so each path carries a relative round-off of about eps (|x| / d)^2 (d the nearest pair's distance):
    they agree to TOLERANCE times that factor (a wrong formula differs by order 1)."""
    nearest = min(float(near[-1].min()) for near in twin._near(x) if len(near[-1]))
    relative = TOLERANCE * (float(np.abs(x).max()) / nearest) ** 2
    assert native.value(x) == pytest.approx(twin.value(x), rel=relative)
    for label, a, b in (("gradient", native.gradient(x), twin.gradient(x)),
                        ("Hessian blocks", native.hessian(x), twin.hessian(x))):
        if label == "Hessian blocks":
            assert np.array_equal(a.rows, b.rows) and np.array_equal(a.cols, b.cols)
            a, b = a.blocks, b.blocks
        assert np.all(np.isfinite(a))
        assert np.abs(a - b).max() <= relative * np.abs(b).max(), label


def test_the_mesh_collider_barrier_with_the_kernels_equals_its_numpy_self():
    """A 12 x 12 cloth lying 1-5 mm over the box's top, across its corner: the vertex-triangle, corner-triangle and
    edge-edge pairs all within d_hat."""
    v, e, t = grid_cloth(12, 1.2, height=0.5)
    model = build_model(v, e, t)
    x = model.rest_positions + [0.9, 0.9, 0.0]
    x[:, 2] = 0.5 + 0.001 + 0.004 * np.abs(np.sin(7.0 * x[:, 0] + 3.0 * x[:, 1]))
    vertices, triangles = box()
    pair = []
    for native in (True, False):
        collider = MeshCollider(vertices, triangles, thickness=0.0)
        barrier = MeshContactBarrier(collider, model.triangle_indices, model.edge_indices, 10.0, 0.01,
                                     points=np.arange(model.particle_count))
        if native:
            use_kernels(kernels_for(native_library()), [barrier])
        pair.append(barrier)
    (ci, _, _), (ei, _, _), (pi, _, _) = pair[1]._near(x)
    assert len(ci) and len(ei) and len(pi)
    _same_barrier(pair[0], pair[1], x)


def test_the_self_contact_barrier_with_the_kernels_equals_its_numpy_self():
    """A 10 x 10 cloth folded over onto itself, its layers 2-8 mm apart."""
    n = 10
    v, e, t = grid_cloth(n, 1.0)
    model = build_model(v, e, t)
    x = model.rest_positions.copy()
    fold = x[:, 0] > 0.0
    x[fold, 0] = -x[fold, 0]
    x[fold, 2] = 0.002 + 0.006 * (x[fold, 0] + 0.5)
    barriers = [SelfContactBarrier(model.triangle_indices, model.rest_positions, 10.0, 0.01) for _ in range(2)]
    use_kernels(kernels_for(native_library()), barriers[:1])
    assert barriers[0]._pt != barriers[1]._pt
    _same_barrier(barriers[0], barriers[1], x)


def test_newton_on_the_box_runs_native_as_it_runs_on_numpy():
    """A 13 x 13 cloth dropped 0.3 m onto the box, 14 frames at 24 fps, NEWTON with Compute AUTO and NUMPY: every
    step converges without splitting, no vertex enters the box, the Newton iterations agree within 10% and the final
    positions within 14 steps' tolerance (newton_tolerance * dt each)."""
    v, e, t = grid_cloth(13, 1.6, height=0.8)
    model = build_model(v, e, t)
    vertices, triangles = box()
    dt = 1.0 / 24.0
    runs = {}
    for compute in ("AUTO", "NUMPY"):
        solver = make_solver(model, SolverConfig(solver="NEWTON", compute=compute))
        if compute == "AUTO":
            assert solver.ipc is not None
        colliders = [MeshCollider(vertices, triangles, thickness=0.01, friction=0.3),
                     GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01)]
        state = State.at_rest(model)
        iterations = 0
        for _ in range(14):
            stats = advance_frame(solver, state, dt, 1, colliders)
            iterations += stats.newton_iterations
            assert stats.split_steps == 0 and stats.newton_residual <= solver.config.newton_tolerance
            x = state.x
            depth = np.minimum.reduce([1.0 - np.abs(x[:, 0]), 1.0 - np.abs(x[:, 1]), 0.5 - x[:, 2], x[:, 2]])
            assert depth.max() < 0.0
        runs[compute] = (state.x.copy(), iterations)
    (native, native_iterations), (twin, twin_iterations) = runs["AUTO"], runs["NUMPY"]
    assert np.abs(native[:, 2] - 0.5).min() < 0.02  # it reached the box top
    assert abs(native_iterations - twin_iterations) <= 0.1 * twin_iterations
    np.testing.assert_allclose(native, twin, rtol=0.0, atol=14 * SolverConfig().newton_tolerance * dt)
