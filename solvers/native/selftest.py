"""The self-test a freshly loaded library must pass before any solver uses it (``library._load``).

Every kernel runs a few sweeps (tethers: passes) on a small jiggled cloth (the tet-strain sweeps: on a jiggled block
of 162 tets, ``run_solids``) (7 x 7, curved rest shape so bending's curved branch runs,
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
    problem = _differs("pin tethers", x, y, 1.0)
    if problem:
        return problem
    return run_solids(library)


# ------------------------------------------------------------------------------------------------------- solids


def tet_block(cells: int = 3, seed: int = 2, jiggle: float = 0.08, poisson_ratio: float = 0.4):
    """A cube of cells^3 Kuhn cells (6 tets each, side 1 m) with one pinned corner, and jiggled positions:
    (TetStrainConstraints (E 1e5 Pa, ``poisson_ratio``), positions (n, 3) C-contiguous, x_prev (n, 3), rng)."""
    from ..constraints import TetStrainConstraints
    from ..material import lame_parameters

    k = cells + 1
    grid = np.stack(np.meshgrid(*(np.arange(k),) * 3, indexing="ij"), -1).reshape(-1, 3).astype(float) / cells
    corner = np.array([[c & 1, c >> 1 & 1, c >> 2 & 1] for c in range(8)])
    kuhn = np.array([(0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7)])
    base = np.stack(np.meshgrid(*(np.arange(cells),) * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    ids = ((base + corner[None]) * [k * k, k, 1]).sum(-1)  # (cells^3, 8) particle of each cell corner
    tets = ids[:, kuhn].reshape(-1, 4)
    inv_mass = np.full(len(grid), float(len(grid)))
    inv_mass[0] = 0.0
    mu, lam = lame_parameters(1.0e5, poisson_ratio)
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(grid + rng.normal(scale=jiggle, size=grid.shape))
    x_prev = np.ascontiguousarray(grid + rng.normal(scale=jiggle, size=grid.shape))
    return TetStrainConstraints.from_model(grid, tets, inv_mass, mu, lam), x, x_prev, rng


def run_solids(library) -> str:
    """'' when the tet-strain sweeps (forward, reversed, symmetric; with internal damping) match
    ``TetStrainColourSweep`` on a jiggled block, else the first difference found."""
    from ..colouring import colour_constraints
    from ..constraints.tet_strain import TetStrainColourSweep
    from .kernels import TetStrainSweep

    tets, x0, x_prev, _ = tet_block()
    n, dt = len(x0), 1.0 / 720.0
    colours = [c for c in colour_constraints(tets.indices, n) if len(c) >= 2]  # as native_sweep needs
    native, reference = TetStrainSweep(library, tets, colours, n), TetStrainColourSweep(tets, colours, n)
    native.set_damping(2.4, x_prev)
    reference.set_damping(2.4, x_prev)
    x, y = x0.copy(), x0.copy()
    lams, ref_lams = native.new_multipliers(), [np.zeros((len(c), 2)) for c in colours]
    for reverse in (False, True):
        native.sweep(x, dt, lams, reverse=reverse)
        reference.sweep(y, dt, ref_lams, reverse=reverse)
    native.symmetric_sweep(x, dt, lams)
    reference.symmetric_sweep(y, dt, ref_lams)
    if np.array_equal(x, x0):
        return "tet-strain sweep moved nothing"
    return (_differs("tet-strain sweep", x, y, 1.0)
            or _differs("tet-strain sweep multipliers", np.concatenate(lams), np.concatenate(ref_lams),
                        max(1e-300, float(np.max(np.abs(np.concatenate(ref_lams)))))))
