"""One scenario table, run against every solver the registry offers: invariants each must keep.

Tolerances are stated once, in TOLERANCES. Bodies are small so the table stays fast.
"""
import numpy as np
import pytest

from solvers import AVAILABLE_SOLVERS, REGISTRY, GroundPlane, SolverConfig, State, advance_frame, build_model, grid_cloth, make_solver
from solvers.mass_spring import substeps_needed
from solvers.material import material_arrays
from solvers.tetrahedralize import tetrahedralize

TOLERANCES = {
    "free_fall_m": 1e-9,  # centre of mass against the integrator's own discrete free fall
    "frictionless_drift_m": 1e-3,  # horizontal centre-of-mass travel of a body dropped on a frictionless ground
}
FPS = 24
G = np.array([0.0, 0.0, -9.81])


def config(solver, model=None, **settings):
    """The solver's defaults (its own substeps), damping 0; explicit solvers get the substeps their stability
    bound asks for on ``model`` (forward Euler also needs damping to be stable at all)."""
    base = dict(solver=solver, substeps=REGISTRY[solver].default_substeps, damping=0.0)
    if solver == "EXPLICIT_EULER":
        base["damping"] = 5.0
    cfg = SolverConfig(**{**base, **settings})
    if REGISTRY[solver].explicit and model is not None:
        stiffness = material_arrays(model, cfg).edge_stiffness
        cfg.substeps = substeps_needed(1.0 / FPS, model, stiffness, solver, cfg.damping)
        assert cfg.substeps > 0
    return cfg


def centre(model, x):
    return (model.mass[:, None] * x).sum(axis=0) / model.mass.sum()


def tilted_box():
    """A closed box 0.4 x 0.25 x 0.15 m, rotated about a skew axis so that no symmetry helps, 0.3 m above z = 0."""
    sx, sy, sz = 0.4, 0.25, 0.15
    corners = np.array([[x, y, z] for z in (0, sz) for y in (0, sy) for x in (0, sx)], float)
    tris = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])
    axis = np.array([0.3, 1.0, 0.4]) / np.linalg.norm([0.3, 1.0, 0.4])
    angle = 0.7
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
    x = corners @ R.T
    x[:, 2] += 0.3 - x[:, 2].min()
    tet = tetrahedralize(x, tris, resolution=4)
    return build_model(tet.vertices, tets=tet.tets, total_mass=1.0)


@pytest.mark.parametrize("solver", AVAILABLE_SOLVERS)
def test_free_fall_follows_the_integrators_discrete_form(solver):
    v, e, t = grid_cloth(4, size=1.0, height=10.0)
    model = build_model(v, e, t, total_mass=1.0)
    cfg = config(solver, damping=0.0)
    sim = make_solver(model, cfg)
    state = State.at_rest(model)
    frames = 12
    for _ in range(frames):
        advance_frame(sim, state, 1.0 / FPS, cfg.substeps)
    steps, h = frames * cfg.substeps, 1.0 / FPS / cfg.substeps
    # Forward Euler moves with the old velocity: sum_{k<N} k; every other integrator here with the new one.
    count = steps * (steps - 1) / 2 if solver == "EXPLICIT_EULER" else steps * (steps + 1) / 2
    expected = centre(model, model.rest_positions) + h * h * count * G
    assert np.abs(centre(model, state.x) - expected).max() < TOLERANCES["free_fall_m"] * max(1.0, steps)
    assert np.allclose(state.x - state.x.mean(axis=0), model.rest_positions - model.rest_positions.mean(axis=0), atol=1e-9)  # no spin


@pytest.mark.parametrize("solver", AVAILABLE_SOLVERS)
def test_asymmetric_solid_dropped_on_a_frictionless_ground_keeps_its_horizontal_momentum(solver):
    model = tilted_box()
    cfg = config(solver, model, youngs_modulus=1e4, poisson_ratio=0.3, damping=0.5 if solver != "EXPLICIT_EULER" else 20.0)
    sim = make_solver(model, cfg)
    ground = [GroundPlane((0, 0, 0), (0, 0, 1), thickness=0.01, friction=0.0)]
    state = State.at_rest(model)
    start = centre(model, state.x)
    for _ in range(36):  # 1.5 s: falls 0.3 m, hits the ground with a corner, tumbles
        advance_frame(sim, state, 1.0 / FPS, cfg.substeps, ground)
    drift = np.linalg.norm((centre(model, state.x) - start)[:2])
    assert drift < TOLERANCES["frictionless_drift_m"], f"{solver}: {1000 * drift:.2f} mm"
    assert state.x[:, 2].min() > -1e-6
