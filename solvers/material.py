"""From the user's material settings to per-element stiffness arrays, for every solver.

The rule (``solvers/config.py``): a body with tets (a solid) takes its material from Young's modulus E and
Poisson's ratio nu, so that its stiffness does not depend on how finely it was tetrahedralized; a body
without tets (cloth, ropes) keeps ``config.stiffness`` [N/m] on every edge.

In explicit and symplectic Euler a solid is simulated by springs along its tet edges; implicit Euler and NEWTON use
the Neo-Hookean energy of each tet, PBD/XPBD per-tet Neo-Hookean constraints (``constraints/tet_strain.py``) and
PROJECTIVE its strain and volume constraints, all from ``tet_mu`` and ``tet_lambda``. ``material_arrays`` gives them
their stiffness:

Springs. Edge e of rest length L_e, shared by tets of total rest volume V_e (the sum of the rest volumes of
the tets containing it), gets

    k_e = c mu V_e / L_e^2,    c = 5/2.

Under an affine small strain eps an edge of direction n stretches by L_e n^T eps n, so the network stores
the energy density

    (1 / (2 V)) sum_e k_e L_e^2 (n_e^T eps n_e)^2 = (c mu / (2 V)) sum_e V_e (n_e^T eps n_e)^2.

sum_e V_e f(n_e) = sum over tets of V_t times the sum of f over its six edges. If the edge directions are
isotropically distributed, the six edges of a tet average to 6 <f> with the sphere average

    <(n^T eps n)^2> = (2 eps:eps + (tr eps)^2) / 15       (<n_i n_j n_k n_l> = (d_ij d_kl + d_ik d_jl + d_il d_jk) / 15),

so the energy density is c mu (6/15) (eps:eps + 1/2 (tr eps)^2). With c = 5/2 that is exactly
mu eps:eps + mu/2 (tr eps)^2: linear elasticity with shear modulus mu and lambda_springs = mu, i.e. Poisson's
ratio 1/4, the one a spring network can represent (Van Gelder 1998; Lloyd et al. 2007). Identity used by the
tests: sum_e k_e L_e^2 = c mu sum_e V_e = c mu 6 V_total. Nothing here depends on the tet size, so the
springs of a solid give the same stiffness at every resolution (the isotropy and affinity assumptions hold
on average over a well-shaped tet mesh, not exactly on any one mesh).

A spring network's bulk modulus is (5/3) mu whatever lambda + (2/3) mu was asked: for nu < 1/4 it is too stiff in
compression, for nu > 1/4 too soft. That is a limit of springs; only an energy-based solver (``solvers/energies``)
gets nu right. Explicit and symplectic Euler (springs only) always simulate nu = 1/4 with the requested mu;
``tet_mu`` and ``tet_lambda`` carry the full Lamé parameters for the energy-based solvers.
"""
from dataclasses import dataclass

import numpy as np

SPRING_FACTOR = 2.5
"""c in k_e = c mu V_e / L_e^2 (see the module docstring)."""

TET_EDGE_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def lame_parameters(youngs_modulus, poisson_ratio):
    """Lamé parameters (mu, lam) [Pa] from Young's modulus E [Pa] and Poisson's ratio nu (scalars or arrays).

    mu = E / (2 (1 + nu)),   lam = E nu / ((1 + nu)(1 - 2 nu)).  nu must lie in (-1, 1/2): at 1/2 lam is
    infinite (incompressible), below -1 the material is unstable.
    """
    E = np.asarray(youngs_modulus, np.float64)
    nu = np.asarray(poisson_ratio, np.float64)
    if np.any(nu <= -1.0) or np.any(nu >= 0.5):
        raise ValueError(f"Poisson's ratio must lie in (-1, 0.5), got {poisson_ratio}")
    mu = E / (2.0 * (1.0 + nu))
    lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    return mu, lam


@dataclass(eq=False)
class Material:
    """Per-element stiffness of one Model (see the module docstring for how a solid's are derived)."""

    edge_stiffness: np.ndarray
    """Spring stiffness of every model edge [N/m], shape (edge_count,)."""
    tet_mu: np.ndarray
    """Shear modulus of every tet [Pa], shape (tet_count,); empty without tets."""
    tet_lambda: np.ndarray
    """Lamé's first parameter of every tet [Pa], shape (tet_count,); empty without tets."""


def edge_volumes(model) -> np.ndarray:
    """V_e: the summed rest volume [m^3] of the tets containing each model edge, shape (edge_count,).

    An edge in no tet gets 0. Raises ValueError if a tet edge is not among the model's edges.
    """
    edges = np.asarray(model.edge_indices, np.int64)
    n = max(model.particle_count, 1)
    model_keys = np.minimum(edges[:, 0], edges[:, 1]) * n + np.maximum(edges[:, 0], edges[:, 1])
    order = np.argsort(model_keys, kind="stable")
    sorted_keys = model_keys[order]
    tets = np.asarray(model.tet_indices, np.int64)
    a = np.concatenate([tets[:, p] for p, _ in TET_EDGE_PAIRS])
    b = np.concatenate([tets[:, q] for _, q in TET_EDGE_PAIRS])
    tet_keys = np.minimum(a, b) * n + np.maximum(a, b)
    # The same edge appears in many tets: look each distinct one up once.
    unique_keys, inverse = np.unique(tet_keys, return_inverse=True)
    slot = np.searchsorted(sorted_keys, unique_keys)
    slot = np.minimum(slot, max(len(sorted_keys) - 1, 0))
    if len(unique_keys) and (len(sorted_keys) == 0 or np.any(sorted_keys[slot] != unique_keys)):
        raise ValueError("a tet edge is missing from the model's edges (build the model with solvers.build_model)")
    per_unique = np.bincount(inverse.ravel(), np.tile(model.tet_rest_volume, len(TET_EDGE_PAIRS)), minlength=len(unique_keys))
    volume = np.zeros(len(edges))
    volume[order[slot]] = per_unique
    return volume


MIN_MAP_FRACTION = 0.01
"""A stiffness or bending map's factor at weight 0 (``map_scale``): 1% of the setting, never 0."""


def map_scale(weights) -> np.ndarray:
    """The factor a vertex group weight w in [0, 1] puts on a stiffness: f + (1 - f) w, f = MIN_MAP_FRACTION.

    Linear in the weight (half the weight, about half the stiffness), the setting itself at weight 1, and 1% of it
    at weight 0 (a vertex not in the group), never 0: an edge of zero stiffness would have infinite XPBD compliance
    and leave a singular row in an implicit solver's matrix, and a patch of cloth with nothing holding it together
    falls apart instead of getting very soft. Built-in Cloth maps a group between its stiffness and its Max value the
    same way; here the Max is the setting and the minimum is MIN_MAP_FRACTION of it."""
    w = np.clip(np.asarray(weights, np.float64), 0.0, 1.0)
    return MIN_MAP_FRACTION + (1.0 - MIN_MAP_FRACTION) * w


def edge_stiffness_scale(model) -> np.ndarray:
    """(edge_count,) factor on each edge's stiffness: the mean of its two ends' ``Model.particle_stiffness_scale``
    (1 everywhere without a map)."""
    scale = np.asarray(getattr(model, "particle_stiffness_scale", ()), np.float64)
    if len(scale) == 0:
        return np.ones(model.edge_count)
    return 0.5 * (scale[model.edge_indices[:, 0]] + scale[model.edge_indices[:, 1]])


def hinge_bending_stiffness(model, hinges, bending_stiffness: float):
    """The bending modulus [N m] of each hinge (h, 4) (``energies.bending.hinges_from_triangles``): the scalar
    ``bending_stiffness`` times the mean of its four corners' ``Model.particle_bending_scale``; the scalar itself
    without a map."""
    scale = np.asarray(getattr(model, "particle_bending_scale", ()), np.float64)
    if len(scale) == 0:
        return float(bending_stiffness)
    hinges = np.asarray(hinges, np.int64).reshape(-1, 4)
    return float(bending_stiffness) * scale[hinges].mean(axis=1)


def material_arrays(model, config) -> Material:
    """Per-element stiffness of ``model`` under ``config``.

    Without tets: ``config.stiffness`` on every edge, times the ``stiffness_group`` map's ``edge_stiffness_scale``;
    no tet arrays. With tets: springs k_e = (5/2) mu V_e / L_e^2
    (an edge in no tet gets 0) and (mu, lambda) per tet, from ``config.youngs_modulus`` and ``config.poisson_ratio``.
    """
    if model.tet_count == 0:
        empty = np.zeros(0)
        return Material(float(config.stiffness) * edge_stiffness_scale(model), empty, empty.copy())
    mu, lam = lame_parameters(config.youngs_modulus, config.poisson_ratio)
    mu, lam = float(mu), float(lam)
    edge_stiffness = SPRING_FACTOR * mu * edge_volumes(model) / model.edge_rest_length**2
    return Material(
        edge_stiffness=edge_stiffness,
        tet_mu=np.full(model.tet_count, mu),
        tet_lambda=np.full(model.tet_count, lam),
    )
