"""NEWTON's IPC self-contact (solvers/collision/barriers/self_barrier.py): derivatives, the CCD step bound, and cloth
folding onto itself without crossing.

Crossings are counted exactly (``solvers.collision.narrow_phase.crossings.count_self_intersections``, every edge against
every triangle it shares no vertex with), over the simulated triangles and over both splits of every quad.
"""
import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.collision.barriers.log_barrier import barrier_terms
from solvers.collision.narrow_phase.crossings import count_self_intersections
from solvers.collision.narrow_phase.primitives import point_triangle_closest, point_triangle_distance, segment_distance
from solvers.collision.barriers.self_barrier import SelfContactBarrier
from solvers.newton import BARRIER_WEIGHT_FACTOR
from scenario_scenes import standing_sheet

FPS = 24
D_HAT = 0.1
KAPPA = 3.0


def two_triangles(rng, gap):
    """Positions (6, 3) of two unit-sized triangles (0 1 2) and (3 4 5) facing each other about ``gap`` apart, tilted
    at random, and a rest shape (6, 3) with them far apart (no pair is a neighbour)."""
    a = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    b = np.array([[0.3, 0.3, 0.0], [-0.5, 0.4, 0.0], [0.4, -0.6, 0.0]])
    b = b + rng.normal(0.0, 0.1, (3, 3)) + [0.0, 0.0, gap]
    a = a + rng.normal(0.0, 0.05, (3, 3))
    x = np.vstack([a, b])
    rest = np.vstack([a, b + [0.0, 0.0, 10.0]])
    return x, rest


def pair_distances(x, barrier):
    """Every vertex-triangle and edge-edge distance of the two-triangle body, from the first-order primitives, with
    their particles and gradients: [(stencil (4,), d, grad (4, 3))]."""
    out = []
    for v, t in ((v, t) for t in range(2) for v in range(6) if v not in barrier.triangles[t]):
        tri = barrier.triangles[t]
        d, g = point_triangle_distance(x[[v]], x[[tri[0]]], x[[tri[1]]], x[[tri[2]]])
        out.append((np.array([v, *tri]), d[0], g[0]))
    for i, e in enumerate(barrier.edges):
        for f in barrier.edges[i + 1:]:
            if len({*e, *f}) == 4:
                d, g = segment_distance(x[[e[0]]], x[[e[1]]], x[[f[0]]], x[[f[1]]])
                out.append((np.array([*e, *f]), d[0], g[0]))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_barrier_is_the_sum_over_the_pairs_and_its_derivatives_match_finite_differences(seed):
    rng = np.random.default_rng(seed)
    x, rest = two_triangles(rng, 0.06)
    barrier = SelfContactBarrier([[0, 1, 2], [3, 4, 5]], rest, KAPPA, D_HAT)
    pairs = [p for p in pair_distances(x, barrier) if p[1] < D_HAT]
    assert len(pairs) >= 2  # several pairs active
    # value and gradient against the first-order primitives (closest points, envelope gradients): another code path
    # than the barrier's typed squared distances
    expected = sum(barrier_terms(d, D_HAT, KAPPA)[0] for _, d, _ in pairs)
    assert barrier.value(x) == pytest.approx(expected, rel=1e-12)
    gradient = np.zeros_like(x)
    for stencil, d, g in pairs:
        np.add.at(gradient, stencil, barrier_terms(d, D_HAT, KAPPA)[1] * g)
    assert np.allclose(barrier.gradient(x), gradient, rtol=1e-9, atol=1e-9 * np.abs(gradient).max())
    # central differences of the value (gradient) and of the gradient (the unprojected Hessian)
    eps = 1e-6
    dense = np.zeros((18, 18))
    hessian = barrier.hessian(x, project=False)
    for r, c, block in zip(hessian.rows, hessian.cols, hessian.blocks):
        dense[3 * r:3 * r + 3, 3 * c:3 * c + 3] += block
    numeric_g, numeric_h = np.zeros(18), np.zeros((18, 18))
    for k in range(18):
        step = np.zeros(18)
        step[k] = eps
        up, down = x + step.reshape(6, 3), x - step.reshape(6, 3)
        numeric_g[k] = (barrier.value(up) - barrier.value(down)) / (2 * eps)
        numeric_h[:, k] = (barrier.gradient(up) - barrier.gradient(down)).ravel() / (2 * eps)
    g = barrier.gradient(x).ravel()
    assert np.allclose(numeric_g, g, rtol=1e-5, atol=1e-6 * np.abs(g).max())
    assert np.allclose(numeric_h, dense, rtol=1e-4, atol=1e-5 * np.abs(dense).max())
    # the projected Hessian is PSD and symmetric
    projected = np.zeros((18, 18))
    hessian = barrier.hessian(x)
    for r, c, block in zip(hessian.rows, hessian.cols, hessian.blocks):
        projected[3 * r:3 * r + 3, 3 * c:3 * c + 3] += block
    assert np.allclose(projected, projected.T, atol=1e-9 * np.abs(projected).max())
    assert np.linalg.eigvalsh(projected).min() > -1e-9 * np.abs(projected).max()


def test_pairs_beyond_the_reach_and_incident_pairs_add_nothing():
    x, rest = two_triangles(np.random.default_rng(0), 0.5)
    barrier = SelfContactBarrier([[0, 1, 2], [3, 4, 5]], rest, KAPPA, D_HAT)
    assert barrier.value(x) == 0.0 and not barrier.gradient(x).any() and len(barrier.hessian(x).rows) == 0
    # one sheet of two triangles sharing an edge: its own corners and edges are neighbours, never contacts
    sheet = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    folded = SelfContactBarrier([[0, 1, 2], [0, 2, 3]], sheet, KAPPA, D_HAT)
    assert folded.value(sheet) == 0.0


def sweep_distance(barrier, x, dx, alphas):
    """Smallest vertex-triangle or edge-edge distance over x + a dx for a in ``alphas`` (dense sampling)."""
    return min(min(d for _, d, _ in pair_distances(x + a * dx, barrier)) for a in alphas)


def crossings_along(x, dx, alphas):
    """Largest number of crossing edge-triangle pairs of the two triangles over x + a dx for a in ``alphas``."""
    return max(count_self_intersections(x + a * dx, np.array([[0, 1, 2], [3, 4, 5]])) for a in alphas)


@pytest.mark.parametrize("case", ["vertex through face", "edge through edge"])
@pytest.mark.parametrize("listed", [False, True])
def test_the_step_bound_stops_two_triangles_moving_through_each_other_before_they_touch(case, listed):
    """Two triangles moving into each other, the full step taking them through: ``max_step`` allows a step that keeps
    every pair apart along the whole way, with both the pair lists of the last iterate (``listed``: a motion within
    their skin) and the swept-sphere broad phase (a motion beyond it)."""
    a = [[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [0.0, 0.4, 0.0]]
    if case == "vertex through face":
        b = [[0.1, 0.1, 0.05], [0.1, 0.2, 0.35], [0.2, 0.1, 0.35]]  # corner 3 points down at the face
    else:
        b = [[0.3, -0.1, 0.05], [0.3, 0.3, 0.05], [0.5, 0.1, 0.3]]  # edge 3-4 lies across edges 0-1 and 1-2
    x = np.array(a + b, float)
    rest = x + [0.0, 0.0, 10.0] * (np.arange(6) >= 3)[:, None]
    barrier = SelfContactBarrier([[0, 1, 2], [3, 4, 5]], rest, KAPPA, 0.01)
    scale = 0.6 * barrier.skin if listed else 0.2  # closing 1.5 scale: 0.09 m within the skin, 0.3 m past it
    dx = np.zeros_like(x)
    dx[3:] = [0.0, 0.0, -scale]
    dx[:3] = [0.0, 0.0, 0.5 * scale]  # both move
    barrier.value(x)  # the pair lists of this iterate
    assert barrier._listed(x, x + dx) == listed
    samples = np.linspace(0.0, 1.0, 401)
    assert crossings_along(x, dx, samples) > 0  # the full step passes through
    alpha = barrier.max_step(x, dx)
    d0 = sweep_distance(barrier, x, dx, [0.0])
    assert crossings_along(x, dx, alpha * samples) == 0
    assert sweep_distance(barrier, x, dx, alpha * samples) > 0.05 * d0
    # and not needlessly short: the pair gets at least halfway to touching
    assert sweep_distance(barrier, x, dx, [alpha]) < 0.5 * d0


def buckling_sheet(use_self_collision, n=16, frames=14):
    """tests/test_self_collision.py's buckling scene with NEWTON, smaller: a 4 m, n x n sheet of quads standing nearly
    upright (89 degrees), its lower edge 5 cm above the ground, let go; thickness 1 cm. Returns per frame (crossings
    over the simulated triangles, over both splits, Newton iterations), the final state and the rest positions."""
    model = standing_sheet(n)
    config = SolverConfig(solver="NEWTON", use_self_collision=use_self_collision, thickness=0.01)
    solver = make_solver(model, config)
    state = State.at_rest(model)
    ground = [GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], 0.01, 0.2)]
    rows = []
    for _ in range(frames):
        stats = advance_frame(solver, state, 1.0 / FPS, config.substeps, ground)
        rows.append((count_self_intersections(state.x, model.triangle_indices),
                     count_self_intersections(state.x, model.collision_triangles), stats.newton_iterations))
    return rows, state, model.rest_positions, solver


def test_a_newton_sheet_buckling_onto_the_ground_never_crosses_itself():
    """Without self-contact the sheet passes through itself as it buckles (59 pairs at frame 8, 398 at frame 13,
    measured); with it, no crossing at any frame, over the simulated triangles and over both splits of every quad."""
    without, _, _, _ = buckling_sheet(False)
    assert max(r[0] for r in without) > 20, without
    rows, state, V, solver = buckling_sheet(True)
    assert [r[:2] for r in rows] == [(0, 0)] * len(rows), rows
    assert state.x[:, 2].max() < V[:, 2].max() - 1.0  # it did buckle and fall
    assert solver.self_contact[0].d_hat == 0.01
    assert solver.self_contact[0].kappa == BARRIER_WEIGHT_FACTOR * 1.0 * 9.81


def test_two_sheets_thrown_at_each_other_stay_apart_and_keep_their_momentum():
    """Gravity off, no colliders, no damping: two sheets as one body meet at unequal speeds. The barrier is an
    internal force (equal and opposite across each pair), so momentum is kept to Newton's tolerance; the sheets
    never cross and never touch."""
    n, size, gap = 8, 0.3, 0.02
    V, E, T = grid_cloth(n, size, 0.0)
    upper = V + np.array([0.5, 0.5, 0.0]) * size / (n - 1) + [0.0, 0.0, gap]
    count = len(V)
    model = build_model(np.vstack([V, upper]), np.vstack([E, E + count]), np.vstack([T, T + count]), total_mass=0.05)
    config = SolverConfig(solver="NEWTON", use_self_collision=True, thickness=0.005, gravity=(0.0, 0.0, 0.0),
                          damping=0.0)
    solver = make_solver(model, config)
    state = State.at_rest(model)
    state.v[:count, 2], state.v[count:, 2] = 0.3, -0.5
    momentum = (model.mass[:, None] * state.v).sum(axis=0)
    barrier = solver.self_contact[0]
    closest = []
    for _ in range(8):
        advance_frame(solver, state, 1.0 / FPS, config.substeps)
        assert count_self_intersections(state.x, model.triangle_indices) == 0
        assert np.allclose((model.mass[:, None] * state.v).sum(axis=0), momentum, rtol=0, atol=1e-3 * np.abs(momentum).max())
        (_, _, d_vt), (_, _, d_ee) = barrier._join(state.x, 0.05)
        closest.append(min(d_vt.min(initial=np.inf), d_ee.min(initial=np.inf)))
    assert min(closest) > 0.0
    assert min(closest) < 0.005  # they did meet, within the barrier's reach
    assert upper_side(state.x, T, count).min() > 0.0  # every upper vertex still on the upper side of the lower sheet


def upper_side(x, T, count):
    """Signed distance (count,) [m] of each upper-sheet vertex from its closest lower-sheet triangle (T, of the lower
    sheet), along that triangle's normal (+z at rest): all positive while the sheets keep their order."""
    p = np.repeat(x[count:], len(T), axis=0)
    tri = np.tile(T, (count, 1))
    bary, _ = point_triangle_closest(p, x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]])
    q = np.einsum("kj,kjd->kd", bary, x[tri]).reshape(count, len(T), 3)
    closest = np.linalg.norm(x[count:, None] - q, axis=2).argmin(axis=1)
    t, q = T[closest], q[np.arange(count), closest]
    normal = np.cross(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]])
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    return np.einsum("ij,ij->i", x[count:] - q, normal)


def test_self_collision_is_read_for_cloth_only():
    """A solid (tets) has no self-contact term; a cloth without the setting has none either."""
    corners = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)], float)
    kuhn = np.array([(0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7)])
    solid = build_model(corners * 0.2, tets=kuhn, total_mass=1.0)
    assert make_solver(solid, SolverConfig(solver="NEWTON", use_self_collision=True)).self_contact == []
    V, E, T = grid_cloth(4, 1.0, 0.0)
    cloth = build_model(V, E, T, total_mass=0.1)
    assert make_solver(cloth, SolverConfig(solver="NEWTON")).self_contact == []
    assert len(make_solver(cloth, SolverConfig(solver="NEWTON", use_self_collision=True)).self_contact) == 1
