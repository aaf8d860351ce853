"""Exact mesh queries of solvers/collision/narrow_phase/primitives.py and crossings.py: closest point on a triangle, the
deepest face point inside a sphere, and the exact count of self-intersecting (edge, triangle) pairs."""
import time

import numpy as np

from solvers import grid_cloth
from solvers.collision.narrow_phase.crossings import (_overlapping_spheres, count_self_intersections, deepest_face_penetration,
                                                      segments_cross_triangles, triangle_edges)
from solvers.collision.narrow_phase.primitives import closest_points_on_triangles


def _rotation(ax, ay, az):
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def test_closest_point_matches_brute_force_sampling():
    rng = np.random.default_rng(7)
    m = 300
    a, b, c = rng.normal(size=(3, m, 3))
    p = 1.5 * rng.normal(size=(m, 3))
    q, bary = closest_points_on_triangles(p, a, b, c)
    assert np.all(bary >= -1e-12) and np.allclose(bary.sum(axis=1), 1.0)
    assert np.allclose(q, bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c)
    # Dense barycentric samples: the exact distance is never above the sampled minimum, and the sampled minimum
    # comes down to it as the samples get denser (the gap is below the sample spacing times the triangle size).
    s = rng.random((40000, 2))
    s = np.where(s.sum(axis=1, keepdims=True) > 1.0, 1.0 - s, s)
    weights = np.stack([1.0 - s.sum(axis=1), s[:, 0], s[:, 1]], axis=1)
    exact = np.linalg.norm(q - p, axis=1)
    for k in range(m):
        samples = weights @ np.stack([a[k], b[k], c[k]])
        sampled = np.linalg.norm(samples - p[k], axis=1).min()
        size = max(np.linalg.norm(b[k] - a[k]), np.linalg.norm(c[k] - a[k]), np.linalg.norm(c[k] - b[k]))
        assert exact[k] <= sampled + 1e-12
        assert sampled - exact[k] <= 0.02 * size


def test_closest_point_regions():
    a, b, c = np.array([[0.0, 0, 0]]), np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]])
    cases = {  # point: expected closest point
        (0.2, 0.3, 0.7): (0.2, 0.3, 0.0),  # interior: the projection
        (-1.0, -2.0, 0.5): (0.0, 0.0, 0.0),  # vertex region of a
        (3.0, -0.5, 0.0): (1.0, 0.0, 0.0),  # vertex region of b
        (0.5, -1.0, 1.0): (0.5, 0.0, 0.0),  # edge ab
        (1.0, 1.0, -0.3): (0.5, 0.5, 0.0),  # edge bc
        (-2.0, 0.4, 0.0): (0.0, 0.4, 0.0),  # edge ca
    }
    for p, expected in cases.items():
        q, _ = closest_points_on_triangles(np.array(p), a, b, c)
        assert np.allclose(q[0], expected), (p, q[0])


def test_deepest_face_penetration_sees_the_face_between_vertices():
    v, _, t = grid_cloth(3, size=2.0)  # vertices 1 m apart
    centre = np.array([0.31, 0.27, -0.5])
    # Every vertex is at least sqrt(0.31^2 + 0.27^2 + 0.5^2) = 0.65 m from the centre, outside a 0.6 m sphere,
    # but the face right above the centre is 0.5 m away: 0.1 m deep.
    assert np.min(np.linalg.norm(v - centre, axis=1)) > 0.6
    assert np.isclose(deepest_face_penetration(v, t, centre, 0.6), 0.1, atol=1e-12)
    assert deepest_face_penetration(v, t, centre, 0.45) == 0.0
    assert deepest_face_penetration(v, t, centre + [5.0, 0, 0], 0.6) == 0.0


def test_one_segment_through_a_triangle_counts_once():
    a, b, c = np.array([[0.0, 0, 0]]), np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]])
    through = segments_cross_triangles(np.array([[0.2, 0.2, -1.0]]), np.array([[0.3, 0.1, 1.0]]), a, b, c)
    beside = segments_cross_triangles(np.array([[0.8, 0.8, -1.0]]), np.array([[0.8, 0.8, 1.0]]), a, b, c)
    ending_on = segments_cross_triangles(np.array([[0.2, 0.2, 0.0]]), np.array([[0.3, 0.1, 1.0]]), a, b, c)
    through_border = segments_cross_triangles(np.array([[0.5, 0.0, -1.0]]), np.array([[0.5, 0.0, 1.0]]), a, b, c)
    in_plane = segments_cross_triangles(np.array([[-0.5, 0.2, 0.0]]), np.array([[1.5, 0.2, 0.0]]), a, b, c)
    assert through.tolist() == [True]
    assert beside.tolist() == ending_on.tolist() == through_border.tolist() == in_plane.tolist() == [False]


def _two_triangles(second):
    x = np.array([[0.0, 0, 0], [1.0, 0, 0], [0.0, 1, 0]] + second)
    return x, np.array([[0, 1, 2], [3, 4, 5]])


def test_piercing_triangle_pair_counts_its_two_piercing_edges():
    # The second triangle passes through the first: two of its edges pierce it (the ends of the intersection segment).
    x, t = _two_triangles([[0.2, 0.2, -0.5], [0.3, 0.2, 0.5], [0.2, 0.3, 0.5]])
    assert count_self_intersections(x, t) == 2
    # Rotated and moved, the same.
    R = _rotation(0.4, -1.1, 2.0)
    assert count_self_intersections(x @ R.T + [3.0, -2.0, 7.0], t) == 2


def test_touching_and_adjacent_triangles_count_zero():
    touching, t = _two_triangles([[0.2, 0.2, 0.0], [0.3, 0.2, 0.5], [0.2, 0.3, 0.5]])  # a corner on the face
    assert count_self_intersections(touching, t) == 0
    apart, t = _two_triangles([[0.2, 0.2, 0.01], [0.3, 0.2, 0.5], [0.2, 0.3, 0.5]])
    assert count_self_intersections(apart, t) == 0
    # Two triangles sharing an edge, folded onto each other (90 and ~180 degrees): neighbours never count.
    for angle in (0.5 * np.pi, 0.98 * np.pi):
        x = np.array([[0.0, 0, 0], [1.0, 0, 0], [0.5, 1.0, 0], [0.5, -np.cos(angle), np.sin(angle)]])
        assert count_self_intersections(x, np.array([[0, 1, 2], [1, 0, 3]])) == 0


def test_flat_grid_has_no_self_intersections_in_any_orientation():
    v, _, t = grid_cloth(20, size=1.0)
    assert count_self_intersections(v, t) == 0
    assert count_self_intersections(v @ _rotation(0.7, 0.3, -1.2).T + 0.123, t) == 0
    wavy = v.copy()
    wavy[:, 2] = 0.1 * np.sin(6.0 * v[:, 0]) * np.cos(4.0 * v[:, 1])
    assert count_self_intersections(wavy, t) == 0


def _folded(n, pierce):
    """An n x n sheet folded in half about y = 0 onto a layer 5 cm below; with ``pierce`` the folded half is tilted
    so it passes through the lower half along a line."""
    v, _, t = grid_cloth(n, size=1.0)
    x = v.copy()
    top = v[:, 1] > 0.0
    x[top, 1] = -v[top, 1]
    x[top, 2] = -0.05 + (0.2 * (v[top, 0] - 0.12) if pierce else 0.0)
    return x, t


def test_sheet_folded_through_itself_counts_and_a_clean_fold_does_not():
    x, t = _folded(21, pierce=False)
    assert count_self_intersections(x, t) == 0
    x, t = _folded(21, pierce=True)
    # The tilted half crosses the lower half along the line x = 0.37 m (off the grid lines), 0.5 m long:
    # about two pierced pairs per triangle row along it, tens in all.
    crossings = count_self_intersections(x, t)
    assert crossings > 10


def test_overlapping_spheres_are_the_brute_force_pairs_across_sizes():
    # Radii over five orders of magnitude, a few spheres as large as the whole cloud: every overlapping pair, no other.
    rng = np.random.default_rng(3)
    a_centre, b_centre = rng.uniform(-1.0, 1.0, (400, 3)), rng.uniform(-1.0, 1.0, (300, 3))
    a_radius = 10.0 ** rng.uniform(-4.0, -1.0, 400)
    b_radius = 10.0 ** rng.uniform(-4.0, -1.0, 300)
    a_radius[:3], b_radius[:2] = 2.0, 1.5
    i, j = _overlapping_spheres(a_centre, a_radius, b_centre, b_radius)
    gap = np.linalg.norm(a_centre[:, None] - b_centre[None], axis=2)
    want_i, want_j = np.nonzero(gap <= a_radius[:, None] + b_radius[None])
    assert np.array_equal(i, want_i) and np.array_equal(j, want_j)  # both sorted by i, then j


def _crossings_by_brute_force(x, triangles):
    """Every (edge, triangle) pair sharing no vertex through the narrow phase: what count_self_intersections counts."""
    edges = triangle_edges(triangles)
    e, t = (a.ravel() for a in np.meshgrid(np.arange(len(edges)), np.arange(len(triangles)), indexing="ij"))
    tri = triangles[t]
    shares = np.any(tri == edges[e, 0:1], axis=1) | np.any(tri == edges[e, 1:2], axis=1)
    e, t = e[~shares], t[~shares]
    return int(segments_cross_triangles(x[edges[e, 0]], x[edges[e, 1]], *(x[triangles[t, k]] for k in range(3))).sum())


def test_one_vertex_far_away_lists_few_candidates_and_the_same_crossings():
    # A sheet through itself with one vertex flung 1 km away (an exploded step): its few long edges and triangles
    # reach everything, the rest only their neighbours. The count is the brute force's, and the broad phase lists
    # about 5% of all pairs (one join within the longest edge's reach listed them all: tens of GB at 128 x 128).
    x, t = _folded(16, pierce=True)
    x[40] += [1000.0, 0.0, 0.0]
    edges = triangle_edges(t)
    p, q = x[edges[:, 0]], x[edges[:, 1]]
    corners = x[t]
    centroid = corners.mean(axis=1)
    reach = np.sqrt(np.max(np.sum((corners - centroid[:, None, :]) ** 2, axis=2), axis=1))
    i, _ = _overlapping_spheres(0.5 * (p + q), 0.5 * np.linalg.norm(q - p, axis=1), centroid, reach)
    assert len(i) < 0.1 * len(edges) * len(t)
    crossings = count_self_intersections(x, t)
    assert crossings > 10
    assert crossings == _crossings_by_brute_force(x, t)


def test_count_is_fast_on_a_64x64_cloth():
    v, _, t = grid_cloth(64, size=2.0)
    x = v.copy()
    x[:, 2] = 0.3 * np.sin(3.0 * v[:, 0]) * np.cos(2.0 * v[:, 1])
    count_self_intersections(x, t)  # warm-up (imports, allocations)
    start = time.perf_counter()
    assert count_self_intersections(x, t) == 0
    assert time.perf_counter() - start < 1.0
    x, t = _folded(64, pierce=True)
    assert count_self_intersections(x, t) > 10
