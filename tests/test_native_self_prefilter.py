"""The native self-collision broad phase's cheap tests before the exact distances (src/self_collision.c: ee_may_pair's
projection on the line through the two edges' midpoints, vt_apart_along's on the line through a triangle's centroid
and the vertex) drop no pair within reach: on flat sheets, where those tests drop most of the sheet's own neighbours,
with the reach at the neighbours' distances, the pairs are the NumPy twin's (``SelfBroadPhase._query``), as sets, with
its distances (bit for bit but where a batch of the twin lies all on triangle borders:
test_native_self_collision.DISTANCE_RTOL).

Axis-aligned sheets on a binary grid have exact distances: the reach is set at them and one part in 1e13 either side.
Rotated ones have distances a few ulps off, differently in the twin's batches and here, so a reach exactly at them
would compare round-off: there it is one part in 1e9 either side (still a thousandth of the tests' slack, and a
million times the round-off).

Also the query's runs of excluded keys (a cursor that moves up with the ascending queries): with many rest-close pairs,
over interleaved slices of every thread count, the pairs are the twin's and one thread's, bit for bit.
"""
import numpy as np
import pytest

from native_helpers import native_library
from solvers import build_model, grid_cloth
from solvers.builder import grid_quads
from solvers.collision.broad_phase.self_pairs import _row_max
from solvers.collision.response.self_contact import SelfCollision
from solvers.native.self_kernels import SelfPairQuery
from test_native_self_collision import DISTANCE_RTOL


@pytest.fixture(scope="module")
def library():
    return native_library()


def _sheet(n: int, size: float, rotation=None, offset=0.0):
    """A flat n x n sheet of side ``size`` [m] (quads with both splits as collision triangles), optionally rotated
    (3, 3) and moved by ``offset``: (x (n * n, 3), SelfCollision built for NumPy, thickness 0 so nothing is
    rest-close)."""
    vertices, edges, triangles = grid_cloth(n, size, diagonals=False)
    model = build_model(vertices, edges, triangles, total_mass=1.0, quads=grid_quads(n))
    x = vertices.copy()
    if rotation is not None:
        x = x @ rotation.T
    x = np.ascontiguousarray(x + offset)
    return x, SelfCollision(model, 0.0, compute="NUMPY")


def _rotation(seed: int):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


def _same(numpy_pairs, native_pairs, count):
    i, j, d = numpy_pairs
    ni, nj, nd = native_pairs
    order = np.argsort(i * count + j)
    np.testing.assert_array_equal(ni * count + nj, (i * count + j)[order])
    np.testing.assert_allclose(nd, d[order], rtol=DISTANCE_RTOL, atol=0.0)


@pytest.mark.parametrize("rotated", [False, True])
def test_pairs_at_the_reach_of_a_flat_sheets_neighbours_are_kept(library, rotated):
    # Spacing 0.25 m (exact in binary): side-by-side edges 0.25 apart, a vertex 0.25 from the next triangles.
    x, sc = _sheet(9, 2.0, _rotation(7) if rotated else None, offset=np.array([0.3, -1.1, 0.7]) if rotated else 0.0)
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    zeros = (np.zeros(len(x)), np.zeros(len(sc.triangles)), np.zeros(len(sc.edges)))
    found = 0
    factors = (1.0 - 1e-9, 1.0 + 1e-9) if rotated else (1.0 - 1e-13, 1.0, 1.0 + 1e-13)
    for spacing in (0.25, 0.25 * np.sqrt(0.5), 0.5):
        for reach in (spacing * factor for factor in factors):
            vt, ee = sc._query(x, reach, zeros)
            _same(vt, query.vertex_triangle(x, reach, *zeros[:2], sc.excluded_vt), len(sc.triangles))
            _same(ee, query.edge_edge(x, reach, zeros[2], sc.excluded_ee), len(sc.edges))
            found += len(vt[0]) + len(ee[0])
    assert found > 1000  # the reaches do reach the sheet's own neighbours


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("rotated", [False, True])
def test_two_sheets_at_the_reach_of_each_other_keep_their_pairs(library, seed, rotated):
    # One sheet above another by exactly the reach plus skins, skins per element from noise: the pairs across are
    # at the limit, the projection tests' slack keeps them.
    rng = np.random.default_rng(seed)
    vertices, edges, triangles = grid_cloth(7, 1.5, diagonals=False)
    both = np.concatenate([vertices, vertices + [0.0, 0.0, 0.125]])
    m = len(vertices)
    tri = np.concatenate([triangles, triangles + m])
    edg = np.concatenate([edges, edges + m])
    quads = grid_quads(7)
    model = build_model(both, edg, tri, total_mass=1.0, quads=np.concatenate([quads, quads + m]))
    sc = SelfCollision(model, 0.0, compute="NUMPY")
    x = np.ascontiguousarray(both @ _rotation(seed).T if rotated else both)
    query = SelfPairQuery(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    skin = rng.choice([0.0, 0.03125], len(x))
    skins = (skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges))
    factors = (1.0 - 1e-9, 1.0 + 1e-9) if rotated else (1.0 - 1e-13, 1.0, 1.0 + 1e-13)
    found = 0
    for reach in [0.0625 * factor for factor in factors] + [0.125 * factor for factor in factors]:
        vt, ee = sc._query(x, reach, skins)
        _same(vt, query.vertex_triangle(x, reach, *skins[:2], sc.excluded_vt), len(sc.triangles))
        _same(ee, query.edge_edge(x, reach, skins[2], sc.excluded_ee), len(sc.edges))
        found += len(vt[0]) + len(ee[0])
    assert found > 100  # pairs across the two sheets, at the limit for the elements with skins


@pytest.mark.parametrize("threads, block", [(2, 3), (3, 5), (4, 1)])
def test_excluded_runs_over_interleaved_slices(library, threads, block):
    # A thickness above an edge makes many pairs rest-close: each query element's run of excluded keys is found by a
    # cursor that moves up with the queries (src/self_collision.c excluded_run_span), over slices that skip blocks.
    from solvers.native.selftest import self_pair_scene

    _, x, _ = self_pair_scene()
    _, _, sc = self_pair_scene(thickness=0.3)
    assert len(sc.excluded_vt) > 100 and len(sc.excluded_ee) > 100
    tri, edges = np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges)
    one = SelfPairQuery(library, tri, edges, len(x), threads=1)
    many = SelfPairQuery(library, tri, edges, len(x), threads=threads, block=block, minimum=0)
    skin = np.random.default_rng(threads).uniform(0.0, 0.05, len(x))
    skins = (skin, _row_max(skin, sc.triangles), _row_max(skin, sc.edges))
    vt, ee = sc._query(x, sc.thickness, skins)
    vt_one = one.vertex_triangle(x, sc.thickness, *skins[:2], sc.excluded_vt)
    ee_one = one.edge_edge(x, sc.thickness, skins[2], sc.excluded_ee)
    _same(vt, vt_one, len(sc.triangles))
    _same(ee, ee_one, len(sc.edges))
    both = many.pairs(x, sc.thickness, *skins[:2], sc.excluded_vt, skins[2], sc.excluded_ee)
    separate = (many.vertex_triangle(x, sc.thickness, *skins[:2], sc.excluded_vt),
                many.edge_edge(x, sc.thickness, skins[2], sc.excluded_ee))
    for got in (both, separate):
        for mine, theirs in zip(got[0] + got[1], vt_one + ee_one):
            np.testing.assert_array_equal(mine, theirs)
