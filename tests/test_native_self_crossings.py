"""The fail-safe's exact crossing test in C (``SelfCallKernels.new_crossings``, src/self_crossings.c) against its NumPy
twin ``ImpactZones._crossings_in_numpy``: the same (edge, triangle) pairs in the same order on a crumpled cloth, for
crossings that are all new and for ones mostly there at the step's start; bad adjacency and witnesses refused."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers import build_model, grid_cloth
from solvers.builder import grid_quads
from solvers.collision.response.self_contact import SelfCollision
from solvers.native.self_kernels import SelfCallKernels


@pytest.fixture(scope="module")
def library():
    return native_library()


def _crumpled(seed: int, n: int = 12):
    """A cloth's self-collision (native, the fail-safe's adjacency bound), its flat rest x0 and a crumpled x that
    crosses itself, and random witnesses of both kinds (some sharing vertices, some repeated)."""
    V, E, T = grid_cloth(n, 1.0, 0.0)
    model = build_model(V, E, T, quads=grid_quads(n))
    sc = SelfCollision(model, thickness=0.01)
    assert sc.native_check is not None
    rng = np.random.default_rng(seed)
    x0 = model.rest_positions.copy()
    x = x0 + rng.normal(0.0, 0.12, x0.shape)
    count = 3000
    v, t = rng.integers(0, len(x0), count), rng.integers(0, len(sc.triangles), count)
    e1, e2 = rng.integers(0, len(sc.edges), count), rng.integers(0, len(sc.edges), count)
    return sc, x0, x, (v, t, e1, e2)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("start", ["flat", "nearly the same"])
def test_new_crossings_equal_their_numpy_twin(library, seed, start):
    sc, x0, x, witnesses = _crumpled(seed)
    x_start = x0 if start == "flat" else x + np.random.default_rng(seed + 10).normal(0.0, 0.01, x.shape)
    got = sc.native_check.new_crossings(x, x_start, *witnesses)
    want = sc._crossings_in_numpy(x, x_start, *witnesses)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64 and got.shape[1] == 2
    if start == "flat":
        assert len(got) > 64  # more than the first buffer holds: it grew
    else:  # most of what crosses at x crossed at the start too
        assert 0 < 2 * len(got) < len(sc._crossings_in_numpy(x, x0, *witnesses))


def test_no_witness_no_crossing(library):
    sc, x0, x, _ = _crumpled(1)
    empty = np.zeros(0, np.int64)
    assert sc.native_check.new_crossings(x, x0, empty, empty, empty, empty).shape == (0, 2)


def test_bad_adjacency_and_witnesses_are_refused(library):
    sc, x0, x, (v, t, e1, e2) = _crumpled(1)
    check = sc.native_check
    adjacency = [sc.vertex_edge_start, sc.vertex_edges, sc.edge_triangle_start, sc.edge_triangles]
    bad = [a.copy() for a in adjacency]
    bad[1][0] = len(sc.edges)
    with pytest.raises(ValueError, match="vertex_edges"):
        check.bind_adjacency(*bad)
    bad = [a.copy() for a in adjacency]
    bad[2][-1] += 1
    with pytest.raises(ValueError, match="edge_triangle_start"):
        check.bind_adjacency(*bad)
    with pytest.raises(ValueError, match="edge_triangle_start"):
        check.bind_adjacency(adjacency[0], adjacency[1], adjacency[2][:-1], adjacency[3])
    check.bind_adjacency(*adjacency)
    unbound = SelfCallKernels(library, check.triangles, check.edges, check.n)
    with pytest.raises(ValueError, match="bind_adjacency first"):
        unbound.new_crossings(x, x0, v, t, e1, e2)
    with pytest.raises(ValueError, match="t"):
        check.new_crossings(x, x0, v, t + len(sc.triangles), e1, e2)
    with pytest.raises(ValueError, match="e2"):
        check.new_crossings(x, x0, v, t, e1, e2[:-1])
    with pytest.raises(ValueError, match="x_start"):
        check.new_crossings(x, x0[:-1], v, t, e1, e2)
