"""The self-test a freshly loaded library must pass before any solver uses it (``library._load``).

Every kernel runs a few sweeps (tethers: passes) on a small jiggled cloth (7 x 7, curved rest shape so bending's curved branch runs,
random per-edge compliance, two pins), once in C and once with its NumPy twin, both compliant and hard. They must
agree to SELF_TEST_TOLERANCE (they agree bit for bit on x86-64; the margin is for a platform whose SciPy build fuses
a multiply-add in the sparse product the bending twin uses). Costs a few milliseconds, once per process.
"""
import numpy as np

SELF_TEST_TOLERANCE = 1e-12
"""Largest allowed |native - numpy| relative to the cloth's size (positions) or the multipliers' size."""


def _cloth(n: int = 7, seed: int = 1):
    from ..builder import build_model, grid_cloth

    vertices, edges, triangles = grid_cloth(n, 2.0, diagonals=True)
    vertices = vertices.copy()
    vertices[:, 2] = 0.3 * vertices[:, 0] ** 2  # a curved rest shape: hinges with r0 > 0
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(vertices + rng.normal(scale=0.05, size=vertices.shape))
    return model, x, rng


def _differs(name, a, b, scale) -> str:
    gap = float(np.max(np.abs(a - b))) if a.size else 0.0
    if not np.all(np.isfinite(a)) or gap > SELF_TEST_TOLERANCE * scale:
        return f"{name} differs from NumPy by {gap:.3g}"
    return ""


def run(library) -> str:
    """'' when every kernel of ``library`` matches its NumPy twin, else the first difference found."""
    from ..colouring import colour_constraints
    from ..constraints import BendingConstraints, DistanceConstraints, PinTethers
    from ..constraints.bending import BendingColourSweep
    from ..constraints.distance import DistanceColourSweep
    from .kernels import BendingSweep, DistanceSweep, Tethers

    model, x0, rng = _cloth()
    n, dt = len(x0), 1.0 / 240.0
    distance = DistanceConstraints(model.edge_indices, model.edge_rest_length, model.inv_mass,
                                   rng.uniform(1e-5, 1e-3, model.edge_count))
    colours = colour_constraints(distance.indices, n)
    for compliant in (True, False):
        native, reference = DistanceSweep(library, distance, colours, n), DistanceColourSweep(distance, colours, n)
        x, y = x0.copy(), x0.copy()
        lams, ref_lams = native.new_multipliers(), [np.zeros(len(c)) for c in colours]
        for _ in range(3):
            native.sweep(x, dt, lams, compliant)
            reference.sweep(y, dt, ref_lams, compliant)
        label = "distance sweep" + ("" if compliant else " (hard)")
        if np.array_equal(x, x0):
            return f"{label} moved nothing"
        problem = (_differs(label, x, y, 1.0)
                   or _differs(label + " multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                               max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
        if problem:
            return problem
    bending = BendingConstraints.from_triangles(model.rest_positions, model.triangle_indices, model.inv_mass, 1e-3)
    colours = colour_constraints(bending.indices, n)
    native, reference = BendingSweep(library, bending, colours, n), BendingColourSweep(bending, colours, n)
    x, y = x0.copy(), x0.copy()
    lams, ref_lams = native.new_multipliers(), [np.zeros((len(c), 3)) for c in colours]
    for _ in range(3):
        native.sweep(x, dt, lams)
        reference.sweep(y, dt, ref_lams, True)
    if np.array_equal(x, x0):
        return "bending sweep moved nothing"
    problem = (_differs("bending sweep", x, y, 1.0)
               or _differs("bending sweep multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                           max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
    if problem:
        return problem
    twin = PinTethers(model, 0.01)
    native = Tethers(library, twin, n)
    stretched = x0 * 1.1  # every particle pulled away from the pins, past its limit
    x, y = stretched.copy(), stretched.copy()
    native.apply(x, passes=8)
    twin.apply(y, passes=8)
    if np.array_equal(x, stretched):
        return "pin tethers moved nothing"
    return _differs("pin tethers", x, y, 1.0)
