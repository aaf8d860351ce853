"""The registry's per-solver ``settings`` tuple is the contract of what a solver reads: a SolverConfig field outside
it (and outside the body kind's own material) must not change a step, whatever value a script stored in it."""
import platform

import numpy as np
import pytest

from solvers import GroundPlane, SolverConfig, State, build_model, make_solver
from solvers.registry import AVAILABLE_SOLVERS, REGISTRY

# Alternatives for each field, including values the add-on's properties refuse (a script can store them): a
# solver that does not read a field must not see a difference.
ALTERNATIVES = {
    "stiffness": (37.0, 0.0, -100.0),
    "bending_stiffness": (0.2, 0.0),
    "use_self_collision": (True,),
    "thickness": (0.05,),
    "internal_damping": (0.5, 0.0),
    "constraint_scheme": ("JACOBI",),
    "jacobi_relaxation": (0.7,),
    "iterations": (7,),
    "linear_solver": ("JACOBI",),
    "linear_tolerance": (0.3,),
    "tether_stretch": (0.0,),
    "newton_tolerance": (3.0,),
    "newton_max_iterations": (57,),
    "youngs_modulus": (3.0e3,),
    "poisson_ratio": (0.1,),
}
if platform.machine().lower() in ("x86_64", "amd64"):
    # Where the native kernels run, they and their NumPy twins agree bit for bit on x86-64 (tests/test_native_*.py).
    ALTERNATIVES["compute"] = ("NUMPY",)
# Fields a body kind reads whatever the solver, and fields of a solver's tuple that body kind does not read
# (the add-on's roles table, operators/bridge.py ROLES, says the same for Cloth and Solid).
KIND_READS = {"cloth": set(), "solid": {"youngs_modulus", "poisson_ratio"}}
KIND_SKIPS = {"cloth": {"internal_damping"}, "solid": {"stiffness", "bending_stiffness", "use_self_collision", "thickness"}}


def cloth():
    """A 6 x 6 vertex sheet (0.5 m) with two pinned corners, crumpled a little so every force acts from the start."""
    n = 6
    u, v = np.meshgrid(np.linspace(0.0, 0.5, n), np.linspace(0.0, 0.5, n), indexing="ij")
    vertices = np.stack([u.ravel(), v.ravel(), np.full(n * n, 0.3)], 1)
    index = np.arange(n * n).reshape(n, n)
    a, b, c, d = index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    triangles = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    edges = np.concatenate([np.stack([a, b], 1), np.stack([a, d], 1), np.stack([a, c], 1),
                            np.stack([index[-1, :-1], index[-1, 1:]], 1), np.stack([index[:-1, -1], index[1:, -1]], 1)])
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    return build_model(vertices, edges, triangles, pinned=pinned, total_mass=0.2)


def solid():
    """Two unit cubes of six tets each, 0.2 m, a little skewed."""
    corners = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)], float)
    vertices = np.concatenate([corners, corners[4:] + [0.0, 0.0, 1.0]]) * 0.2 + [0.0, 0.0, 0.05]
    kuhn = np.array([(0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7)])
    upper = np.array([4, 5, 6, 7, 8, 9, 10, 11])[kuhn]
    tets = np.concatenate([kuhn, upper])
    return build_model(vertices, tets=tets, total_mass=1.0)


def run(model, **fields):
    """Positions and velocities after three steps of 1/240 s onto a ground touching the body, from a crumpled,
    moving start (the same for every call)."""
    config = SolverConfig(**fields)
    solver = make_solver(model, config)
    state = State.at_rest(model)
    rng = np.random.default_rng(7)
    free = model.inv_mass[:, None] > 0.0
    state.x += 0.01 * rng.standard_normal(state.x.shape) * free
    state.v += 0.3 * rng.standard_normal(state.v.shape) * free
    ground = [GroundPlane(np.array([0.0, 0.0, state.x[:, 2].min() - 0.005]), np.array([0.0, 0.0, 1.0]), 0.01, 0.3)]
    for _ in range(3):
        solver.step(state, 1.0 / 240.0, ground)
    return state.x.copy(), state.v.copy()


def unread_fields(solver, kind):
    info = REGISTRY[solver]
    reads = (set(info.settings) - KIND_SKIPS[kind]) | KIND_READS[kind]
    return sorted(set(ALTERNATIVES) - reads)


CASES = [(solver, kind) for solver in AVAILABLE_SOLVERS for kind in ("cloth", "solid")
         if kind == "cloth" or "SOLID" in REGISTRY[solver].roles]


@pytest.mark.parametrize("solver, kind", CASES)
def test_a_field_its_solver_does_not_read_does_not_change_a_step(solver, kind):
    model = cloth() if kind == "cloth" else solid()
    x0, v0 = run(model, solver=solver)
    changed = []
    for field in unread_fields(solver, kind):
        for value in ALTERNATIVES[field]:
            try:
                SolverConfig(solver=solver, **{field: value})  # tether_stretch: None (off) by default
            except ValueError:
                continue  # SolverConfig refuses it for every solver alike
            x, v = run(model, solver=solver, **{field: value})
            if not (np.array_equal(x, x0) and np.array_equal(v, v0)):
                changed.append(f"{field}={value!r}: max |dx| {np.abs(x - x0).max():.3g} m")
    assert not changed, f"{solver} ({kind}) reads settings outside its registry tuple: {changed}"


@pytest.mark.parametrize("solver", [s for s in AVAILABLE_SOLVERS if "stiffness" in REGISTRY[s].settings])
def test_the_comparison_sees_a_field_that_is_read(solver):
    """The check above is sensitive: a cloth's stiffness, where its solver reads it, does change the step."""
    model = cloth()
    x0, _ = run(model, solver=solver)
    x1, _ = run(model, solver=solver, stiffness=37.0)
    assert not np.array_equal(x0, x1)


def test_explicit_euler_serves_cloth_only():
    """Solids need 355 to 7,665 substeps per frame with the explicit integrators: they serve cloth only."""
    assert {name for name in AVAILABLE_SOLVERS if "SOLID" not in REGISTRY[name].roles} == {"EXPLICIT_EULER", "SYMPLECTIC_EULER"}
    assert all("CLOTH" in REGISTRY[name].roles for name in AVAILABLE_SOLVERS)
