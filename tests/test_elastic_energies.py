"""Physics of the elastic energy terms: Stable Neo-Hookean tets and isometric bending hinges.

The finite-difference and PSD checks of every term are in test_energies.py; here: zero energy where there
is no deformation, the small-strain limit of linear elasticity, inverted tets, and the continuum limit of
the bending energy on a cylinder.
"""
import itertools

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from solvers.builder import grid_cloth
from solvers.energies.bending import IsometricBending, hinges_from_triangles
from solvers.energies.neo_hookean import NeoHookean
from solvers.material import lame_parameters

RNG = np.random.default_rng(11)


def unit_cube():
    """A unit cube [0, 1]^3 split into 6 positively oriented tets around its diagonal 0 -> 7 (Kuhn)."""
    x = np.array([[i & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], float)
    tets = []
    for axes in itertools.permutations(range(3)):
        path = [0]
        for axis in axes:
            path.append(path[-1] | (1 << axis))
        tets.append(path)
    tets = np.array(tets)
    negative = np.linalg.det(x[tets[:, 1:]] - x[tets[:, :1]]) < 0.0
    tets[negative, 1], tets[negative, 2] = tets[negative, 2].copy(), tets[negative, 1].copy()
    return x, tets


def cube_energy(youngs_modulus=1e5, poisson_ratio=0.3):
    x, tets = unit_cube()
    mu, lam = lame_parameters(youngs_modulus, poisson_ratio)
    return NeoHookean(x, tets, mu, lam), x, mu, lam


def finite_difference_errors(energy, x, eps=1e-6):
    """Relative max errors of gradient vs central differences of value, and of Hessian vs those of gradient."""
    g = energy.gradient(x).ravel()
    fd_g = np.empty(x.size)
    fd_H = np.empty((x.size, x.size))
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        fd_g[k] = (energy.value(x + step) - energy.value(x - step)) / (2 * eps)
        fd_H[:, k] = (energy.gradient(x + step) - energy.gradient(x - step)).ravel() / (2 * eps)
    H = dense_hessian(energy, x, project=False)
    return (np.abs(g - fd_g).max() / max(1.0, np.abs(fd_g).max()),
            np.abs(H - fd_H).max() / max(1.0, np.abs(fd_H).max()))


def dense_hessian(energy, x, project):
    h = energy.hessian(x, project=project)
    H = np.zeros((x.size, x.size))
    for axis_r, axis_c in itertools.product(range(3), range(3)):  # 9 vectorized scatters, not a loop per block
        np.add.at(H, (3 * h.rows + axis_r, 3 * h.cols + axis_c), h.blocks[:, axis_r, axis_c])
    return H


# ---------------------------------------------------------------------------------------------- Neo-Hookean


def test_neo_hookean_rest_and_rigid_motions_have_no_energy_or_force():
    energy, x, mu, _ = cube_energy()
    assert energy.rest_volume.sum() == pytest.approx(1.0)
    assert np.allclose(energy.volume_ratio(x), 1.0)
    assert energy.value(x) == 0.0 and np.abs(energy.gradient(x)).max() == 0.0
    for seed in range(5):
        moved = x @ Rotation.random(random_state=seed).as_matrix().T + RNG.normal(size=3) * 10.0
        assert abs(energy.value(moved)) < 1e-12 * mu  # the scale of the energy is mu * V, V = 1 m^3
        assert np.abs(energy.gradient(moved)).max() < 1e-10 * mu


@pytest.mark.parametrize("strain", ["dilation", "uniaxial_strain", "simple_shear"])
def test_neo_hookean_matches_linear_elasticity_at_small_strain(strain):
    """Psi = mu |eps|^2 + lam/2 (tr eps)^2 at small strain e: the paper's mu', lam' reparametrization."""
    energy, x, mu, lam = cube_energy()
    e = 1e-3
    if strain == "dilation":  # F = (1 + e) I: Psi = K/2 (3e)^2, bulk modulus K = lam + 2/3 mu
        F, expected = (1 + e) * np.eye(3), 4.5 * (lam + 2.0 / 3.0 * mu) * e**2
    elif strain == "uniaxial_strain":  # laterally constrained: Psi = (lam + 2 mu)/2 e^2
        F, expected = np.diag([1 + e, 1, 1]), 0.5 * (lam + 2 * mu) * e**2
    else:  # eps_xy = e/2: Psi = mu e^2 / 2
        F, expected = np.eye(3) + e * np.outer([1, 0, 0], [0, 1, 0]), 0.5 * mu * e**2
    assert energy.value(x @ F.T) == pytest.approx(expected * 1.0, rel=1e-2)  # V = 1 m^3


@pytest.mark.parametrize("shape", ["inverted", "flat"])
def test_neo_hookean_is_finite_for_inverted_and_flat_tets(shape):
    energy, x, _, _ = cube_energy()
    deformed = x.copy()
    if shape == "inverted":
        deformed[:, 2] *= -0.5  # mirrored and squashed: every tet has J = -0.5
    else:
        deformed[:, 2] = 0.0
    J = energy.volume_ratio(deformed)
    assert np.allclose(J, -0.5 if shape == "inverted" else 0.0)
    assert energy.value(deformed) > 0.0
    assert np.isfinite(energy.gradient(deformed)).all()
    assert np.isfinite(energy.hessian(deformed).blocks).all()
    assert energy.max_step(deformed, RNG.normal(size=x.shape)) == 1.0  # no inversion barrier to respect


def test_neo_hookean_derivatives_and_projection_on_inverted_tets():
    energy, x, _, _ = cube_energy(1e4, 0.45)
    deformed = x.copy()
    deformed[:, 2] *= -0.7
    deformed += 0.05 * RNG.normal(size=x.shape)
    gradient_error, hessian_error = finite_difference_errors(energy, deformed)
    assert gradient_error < 1e-6 and hessian_error < 1e-5
    assert np.linalg.eigvalsh(dense_hessian(energy, deformed, project=False)).min() < 0.0  # work to do
    H = dense_hessian(energy, deformed, project=True)
    assert np.linalg.eigvalsh(H).min() >= -1e-9 * np.abs(H).max()


# ------------------------------------------------------------------------------------------------- bending


def test_hinges_from_triangles_grid():
    n = 6
    _, _, tris = grid_cloth(n, size=1.0)
    hinges = hinges_from_triangles(tris)
    interior_edges = (3 * len(tris) - 4 * (n - 1)) // 2  # every edge has two triangle sides but the boundary
    assert hinges.shape == (interior_edges, 4) and hinges.dtype == np.int64
    triangle_sets = {frozenset(t) for t in tris.tolist()}
    for x0, x1, x2, x3 in hinges.tolist():
        assert {x0, x1, x2} in triangle_sets and {x0, x1, x3} in triangle_sets and x2 != x3


def test_hinges_from_triangles_skips_boundary_and_non_manifold_edges():
    # Edge (0, 1) has three triangles (non-manifold); edge (1, 2) of triangle (0, 1, 2) is shared with (1, 4, 2).
    tris = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 5], [1, 4, 2]])
    assert hinges_from_triangles(tris).tolist() == [[1, 2, 0, 4]]
    assert hinges_from_triangles(np.zeros((0, 3), int)).shape == (0, 4)


def flat_sheet(n=8, jitter=0.0):
    """A flat grid_cloth, its vertices moved in-plane by up to ``jitter`` grid spacings per axis.

    An irregular mesh makes the cotangents all different; jitter <= 0.2 cannot flip a triangle (that would
    be a hinge folded by 180 degrees at rest, not a flat one).
    """
    x, _, tris = grid_cloth(n, size=1.0)
    x[:, :2] += jitter / (n - 1) * RNG.uniform(-1.0, 1.0, size=(len(x), 2))
    return x, hinges_from_triangles(tris)


@pytest.mark.parametrize("jitter", [0.0, 0.2])
def test_bending_ignores_rigid_motions_and_in_plane_maps_of_a_flat_sheet(jitter):
    x, hinges = flat_sheet(jitter=jitter)
    energy = IsometricBending(x, hinges, 0.3)
    assert energy.is_constant_hessian
    assert np.abs(energy.K.sum(axis=1)).max() < 1e-12
    scale = 0.3  # stiffness [N m]: the energies' natural scale
    rotation = Rotation.random(random_state=3).as_matrix()
    in_plane = np.array([[1.3, 0.2, 0.0], [-0.4, 0.8, 0.0], [0.5, -0.3, 0.0]])  # stretch, shear, tilt
    for moved in (x @ rotation.T + 2.0, x @ in_plane.T + 1.0, x @ (rotation @ in_plane).T):
        assert energy.value(moved) < 1e-20 * scale
        assert np.abs(energy.gradient(moved)).max() < 1e-10 * scale


def single_hinge(theta):
    """Two unit right triangles sharing the edge (0, 0, 0)-(1, 0, 0), folded by theta from flat."""
    wing = np.array([0.0, -np.cos(theta), np.sin(theta)])
    x = np.array([[0, 0, 0], [1, 0, 0], [0.3, 1, 0], [0.6, 0, 0]], float)
    x[3] += wing
    return x, np.array([[0, 1, 2, 3]])


def test_bending_small_fold_is_the_discrete_shells_energy():
    rest, hinges = single_hinge(0.0)
    stiffness, theta = 0.3, 1e-3
    energy = IsometricBending(rest, hinges, stiffness)
    folded, _ = single_hinge(theta)
    edge_squared, area_sum = 1.0, 0.5 + 0.5
    assert energy.value(folded) == pytest.approx(0.5 * stiffness * edge_squared / area_sum * theta**2, rel=1e-5)


def test_bending_curved_rest_keeps_the_magnitude_not_the_sign():
    rest, hinges = single_hinge(0.4)
    energy = IsometricBending(rest, hinges, 0.3)
    assert not energy.is_constant_hessian
    assert energy.value(rest) < 1e-20
    assert energy.value(single_hinge(0.0)[0]) > 0.0
    assert energy.value(single_hinge(-0.4)[0]) < 1e-20  # folded the other way: same |y|, no energy


def test_bending_degenerate_triangle_has_no_weight():
    x = np.array([[0, 0, 0], [1, 0, 0], [0.5, 0, 0], [0.5, -1, 0]], float)  # triangle (0, 1, 2) has no area
    energy = IsometricBending(x, np.array([[0, 1, 2, 3]]), 0.3)
    moved = x + RNG.normal(size=x.shape)
    assert energy.value(moved) == 0.0
    assert np.all(energy.gradient(moved) == 0.0) and np.isfinite(energy.hessian(moved).blocks).all()


def cylinder(x, radius, direction):
    """Roll the plane z = 0 isometrically around an axis perpendicular to ``direction`` (in-plane, 2D)."""
    d = np.asarray(direction, float) / np.linalg.norm(direction)
    u, v = x[:, :2] @ d, x[:, :2] @ np.array([-d[1], d[0]])
    return np.stack([radius * np.sin(u / radius), v, radius * (1.0 - np.cos(u / radius))], axis=1)


@pytest.mark.parametrize("direction, factor", [((1, 0), 1.0), ((0, 1), 1.0), ((1, 1), 3.0)])
def test_bending_of_a_cylinder_is_a_mesh_dependent_multiple_of_the_continuum(direction, factor):
    """E / (1/2 k \\int kappa^2 dA) for a unit grid_cloth rolled into a cylinder of radius R.

    The hinge energy does not converge to the continuum one; it converges to a fixed multiple of it that
    depends on the mesh (Wardetzky et al. 2007). For grid_cloth rolled across a grid axis only the edges
    parallel to the cylinder's axis fold, each by h/R, with weight h^2 / h^2: E -> 1/2 k A / R^2, the
    continuum (the same holds in every direction on an equilateral mesh). Rolled across the diagonals,
    3 times. Boundary hinges are missing, hence the slight deficit at finite n.
    """
    stiffness, radius = 0.3, 0.7
    continuum = 0.5 * stiffness / radius**2 * 1.0  # area 1 m^2
    ratios = []
    for n in (32, 64):
        x, _, tris = grid_cloth(n, size=1.0)
        energy = IsometricBending(x, hinges_from_triangles(tris), stiffness)
        ratios.append(energy.value(cylinder(x, radius, direction)) / continuum)
    assert ratios[0] == pytest.approx(factor, rel=0.05) and ratios[1] == pytest.approx(factor, rel=0.05)
    assert ratios[1] == pytest.approx(ratios[0], rel=0.05)
