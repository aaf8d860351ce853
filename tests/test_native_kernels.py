"""Each native kernel computes what its NumPy twin computes (bit for bit on x86-64), and its binding refuses bad input.

Twins: ``solvers.native.kernels.DistanceSweep`` <-> ``constraints.distance.DistanceColourSweep``,
``BendingSweep`` <-> ``constraints.bending.BendingColourSweep``; on a regular grid with and without diagonals, an
irregular closed mesh (the convex hull of random points on a sphere: valences 4 to 9, many colours, a curved rest
shape), particles in no constraint, XPBD (per-edge and scalar compliance) and PBD (hard).
"""
import re

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from native_helpers import assert_same, native_library
from solvers import build_model, grid_cloth
from solvers.colouring import colour_constraints
from solvers.constraints import BendingConstraints, DistanceConstraints
from solvers.constraints.bending import BendingColourSweep
from solvers.constraints.distance import DistanceColourSweep
from solvers.native.kernels import BendingSweep, DistanceSweep

DT = 1.0 / 720.0


@pytest.fixture(scope="module")
def library():
    return native_library()


def grid(n=12, diagonals=True, seed=0, isolated=0):
    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=diagonals)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    return _jiggled(vertices, edges, triangles, pinned, seed, isolated)


def hull(points=300, seed=0, isolated=0):
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(points, 3))
    vertices = p / np.linalg.norm(p, axis=1)[:, None]
    triangles = ConvexHull(vertices).simplices
    edges = np.unique(np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1),
                      axis=0)
    pinned = np.zeros(points, bool)
    pinned[:3] = True
    return _jiggled(vertices, edges, triangles, pinned, seed, isolated)


def _jiggled(vertices, edges, triangles, pinned, seed, isolated):
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed + 1)
    x = vertices + rng.normal(scale=0.02, size=vertices.shape)
    if isolated:  # particles in no constraint, at the end and untouched by every kernel
        x = np.concatenate([x, rng.normal(size=(isolated, 3))])
    return model, np.ascontiguousarray(x), rng


MESHES = {"grid": lambda **k: grid(**k), "grid without diagonals": lambda **k: grid(diagonals=False, **k),
          "irregular hull": lambda **k: hull(**k)}


@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("compliance", ["per edge", "scalar", "hard"])
def test_distance_sweep_equals_its_numpy_twin(library, mesh, compliance):
    model, x0, rng = MESHES[mesh](isolated=3)
    n = len(x0)
    inv_mass = np.concatenate([model.inv_mass, np.ones(n - model.particle_count)])
    value = rng.uniform(1e-6, 1e-3, model.edge_count) if compliance == "per edge" else 1e-4
    constraints = DistanceConstraints(model.edge_indices, model.edge_rest_length, inv_mass, value)
    colours = colour_constraints(constraints.indices, n)
    assert len(colours) >= 4
    compliant = compliance != "hard"
    native, twin = DistanceSweep(library, constraints, colours, n), DistanceColourSweep(constraints, colours, n)
    x, y = x0.copy(), x0.copy()
    lams, twin_lams = native.new_multipliers(), [np.zeros(len(c)) for c in colours]
    for _ in range(5):
        native.sweep(x, DT, lams, compliant)
        twin.sweep(y, DT, twin_lams, compliant)
    assert not np.array_equal(x, x0)
    assert np.array_equal(x[model.particle_count:], x0[model.particle_count:])  # isolated particles stay
    assert_same(x, y)
    assert_same(np.concatenate(lams), np.concatenate(twin_lams), np.abs(np.concatenate(twin_lams)).max())


def test_distance_sweep_takes_multipliers_it_does_not_own(library):
    """Multiplier arrays other than its own views (copied in and out) give the same sweep."""
    model, x0, _ = grid()
    n = len(x0)
    constraints = DistanceConstraints(model.edge_indices, model.edge_rest_length, model.inv_mass, 1e-4)
    colours = colour_constraints(constraints.indices, n)
    native = DistanceSweep(library, constraints, colours, n)
    x, y = x0.copy(), x0.copy()
    own, foreign = native.new_multipliers(), [np.zeros(len(c)) for c in colours]
    for _ in range(3):
        native.sweep(x, DT, own, True)
    own = [a.copy() for a in own]
    native.new_multipliers()
    for _ in range(3):
        native.sweep(y, DT, foreign, True)
    assert np.array_equal(x, y)
    assert np.array_equal(np.concatenate(own), np.concatenate(foreign))


@pytest.mark.parametrize("mesh", ["grid", "irregular hull"])
@pytest.mark.parametrize("stiffness", [1e-3, 1.0])
def test_bending_sweep_equals_its_numpy_twin(library, mesh, stiffness):
    model, x0, _ = MESHES[mesh](isolated=2)
    n = len(x0)
    inv_mass = np.concatenate([model.inv_mass, np.ones(n - model.particle_count)])
    rest = model.rest_positions.copy()
    if mesh == "grid":
        rest[:, 2] = 0.2 * rest[:, 0] ** 2  # curved rest hinges (r0 > 0) beside flat ones along x = 0
    bending = BendingConstraints.from_triangles(rest, model.triangle_indices, inv_mass, stiffness)
    assert bending.curved
    colours = colour_constraints(bending.indices, n)
    native, twin = BendingSweep(library, bending, colours, n), BendingColourSweep(bending, colours, n)
    x, y = x0.copy(), x0.copy()
    lams, twin_lams = native.new_multipliers(), [np.zeros((len(c), 3)) for c in colours]
    for _ in range(5):
        native.sweep(x, DT, lams)
        twin.sweep(y, DT, twin_lams, True)
    assert not np.array_equal(x, x0)
    assert np.array_equal(x[model.particle_count:], x0[model.particle_count:])
    assert_same(x, y)
    assert_same(np.concatenate(lams), np.concatenate(twin_lams), np.abs(np.concatenate(twin_lams)).max())


def test_bending_sweep_of_a_flat_rest_cloth(library):
    model, x0, _ = grid(n=10)
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-2)
    assert not bending.curved
    colours = colour_constraints(bending.indices, len(x0))
    native, twin = BendingSweep(library, bending, colours, len(x0)), BendingColourSweep(bending, colours, len(x0))
    x, y = x0.copy(), x0.copy()
    lams, twin_lams = native.new_multipliers(), [np.zeros((len(c), 3)) for c in colours]
    for _ in range(4):
        native.sweep(x, DT, lams)
        twin.sweep(y, DT, twin_lams, True)
    assert_same(x, y)


# ------------------------------------------------------------------ validation at the Python edge

@pytest.fixture
def distance_sweep(library):
    model, x0, _ = grid(n=6)
    constraints = DistanceConstraints(model.edge_indices, model.edge_rest_length, model.inv_mass, 1e-4)
    colours = colour_constraints(constraints.indices, len(x0))
    sweep = DistanceSweep(library, constraints, colours, len(x0))
    return sweep, x0


def _bind_args(sweep):
    return dict(particle_count=sweep.positions.n, colour_start=sweep.colour_start.copy(), edges=sweep.edges.copy(),
                rest_length=sweep.rest_length.copy(), w_i=sweep.w_i.copy(), w_j=sweep.w_j.copy())


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(edges=a["edges"].astype(np.int32)), "edges: dtype must be int64"),
    (lambda a: a.update(rest_length=a["rest_length"].astype(np.float32)), "rest_length: dtype must be float64"),
    (lambda a: a["edges"].__setitem__((3, 1), a["particle_count"]), "edges: index 36 out of range [0, 36)"),
    (lambda a: a["edges"].__setitem__((0, 0), -1), "edges: index -1 out of range"),
    (lambda a: a.update(edges=np.asfortranarray(a["edges"])), "edges: must be C-contiguous"),
    (lambda a: a.update(w_i=np.repeat(a["w_i"], 2)[::2]), "w_i: must be C-contiguous"),
    (lambda a: a.update(w_j=a["w_j"][:-1]), "w_j: shape must be"),
    (lambda a: a.update(edges=a["edges"].tolist()), "edges: expected a numpy array"),
    (lambda a: a["colour_start"].__setitem__(-1, 5), "colour_start must run from 0 to"),
    (lambda a: a["edges"].__setitem__(1, a["edges"][0]), "has a particle in two of its constraints"),
])
def test_distance_binding_refuses_bad_arrays(distance_sweep, change, message):
    sweep, _ = distance_sweep
    arguments = _bind_args(sweep)
    change(arguments)
    with pytest.raises(ValueError, match=re.escape(message)):
        sweep.bind(**arguments)


@pytest.mark.parametrize("make_x, message", [
    (lambda x: x.astype(np.float32), "x: dtype must be float64"),
    (lambda x: np.asfortranarray(x), "x: must be C-contiguous"),
    (lambda x: x[:-1].copy(), r"x: shape must be \(36, 3\)"),
    (lambda x: x.reshape(-1).copy(), "x: shape must be"),
])
def test_distance_sweep_refuses_bad_positions(distance_sweep, make_x, message):
    sweep, x0 = distance_sweep
    lams = sweep.new_multipliers()
    with pytest.raises(ValueError, match=message):
        sweep.sweep(make_x(x0), DT, lams, True)


def test_bending_binding_refuses_an_index_out_of_range(library):
    model, x0, _ = grid(n=6)
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    colours = colour_constraints(bending.indices, len(x0))
    sweep = BendingSweep(library, bending, colours, len(x0))
    hinges = sweep.hinges.copy()
    hinges[2, 3] = 10**6
    with pytest.raises(ValueError, match=r"hinges: index 1000000 out of range \[0, 36\)"):
        sweep.bind(len(x0), sweep.colour_start, sweep.curved, hinges, sweep.K, sweep.wK, sweep.rest_norm)
    with pytest.raises(ValueError, match="curved: shape"):
        sweep.bind(len(x0), sweep.colour_start, sweep.curved[:-1].copy(), sweep.hinges, sweep.K, sweep.wK,
                   sweep.rest_norm)
    with pytest.raises(ValueError, match="must be C-contiguous"):
        sweep.bind(len(x0), sweep.colour_start, sweep.curved, sweep.hinges, sweep.K.T.copy().T, sweep.wK,
                   sweep.rest_norm)


# ------------------------------------------------------------------ pin tethers

def tethered_cloth(pins):
    model, _, rng = grid(n=14)
    pinned = np.zeros(model.particle_count, bool)
    pinned[pins] = True
    vertices, edges, triangles = model.rest_positions, model.edge_indices, model.triangle_indices
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    return model, rng


@pytest.mark.parametrize("pins, passes", [([0, 13], 8), ([0], 3), (list(range(0, 14)), 8), ([0, 13, 90], 1)])
def test_tethers_equal_their_numpy_twin(library, pins, passes):
    """Pulled past their limits (stretched and shaken), one slot or many: the same positions after the same passes."""
    from solvers.constraints import PinTethers
    from solvers.native.kernels import Tethers

    model, rng = tethered_cloth(pins)
    twin = PinTethers(model, 0.01)
    kernel = Tethers(library, twin, model.particle_count)
    x0 = np.ascontiguousarray(model.rest_positions * 1.05 + rng.normal(scale=0.05, size=model.rest_positions.shape))
    x0[pins] = model.rest_positions[pins]
    x, y = x0.copy(), x0.copy()
    runs = kernel.apply(x, passes=passes)
    twin.apply(y, passes=passes)
    assert 1 <= runs <= passes
    assert not np.array_equal(x, x0)
    assert_same(x, y, 10.0)
    # Within the limits now (to the 0.1% the passes stop at): another call moves nothing past 0.1%.
    z = x.copy()
    kernel.apply(z, passes=1)
    twin_z = x.copy()
    twin.apply(twin_z, passes=1)
    assert_same(z, twin_z, 10.0)


def test_tether_binding_refuses_bad_input(library):
    from solvers.constraints import PinTethers
    from solvers.native.kernels import Tethers

    model, _ = tethered_cloth([0, 13])
    kernel = Tethers(library, PinTethers(model, 0.01), model.particle_count)
    n = model.particle_count
    particle = kernel.particle.copy()
    particle[5] = n
    with pytest.raises(ValueError, match=re.escape(f"particle: index {n} out of range [0, {n})")):
        kernel.bind(n, kernel.slot_start, particle, kernel.pin, kernel.limit)
    pin = kernel.pin.copy()
    pin[0] = kernel.particle[1]
    with pytest.raises(ValueError, match="a pin is also a tethered particle"):
        kernel.bind(n, kernel.slot_start, kernel.particle, pin, kernel.limit)
    with pytest.raises(ValueError, match="limit: dtype must be float64"):
        kernel.bind(n, kernel.slot_start, kernel.particle, kernel.pin, kernel.limit.astype(np.float32))
    with pytest.raises(ValueError, match="x: must be C-contiguous"):
        kernel.apply(np.asfortranarray(model.rest_positions))
