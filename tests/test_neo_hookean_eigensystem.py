"""The analytic eigensystem of stable Neo-Hookean (solvers/energies/neo_hookean.py ``projected_stress_hessian``, Smith,
de Goes, Kim 2019) against the batched 9x9 eigh projection (``energies.base.project_psd``) it replaces, and the signed
SVD it is built on."""
import numpy as np
import pytest

from solvers.energies import NeoHookean
from solvers.energies import neo_hookean
from solvers.energies.base import element_blocks, project_psd
from solvers.material import lame_parameters

RNG = np.random.default_rng(11)
K = 400


def rotations(m):
    Q, R = np.linalg.qr(RNG.normal(size=(m, 3, 3)))
    Q = Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]
    return Q * np.sign(np.linalg.det(Q))[:, None, None]


def families():
    """Deformation gradients (K, 3, 3) where the projection has different work: every mode of the eigensystem is
    negative in some of them."""
    eye = np.eye(3)
    return {
        "near rest": eye + 0.05 * RNG.normal(size=(K, 3, 3)),
        "large": RNG.normal(size=(K, 3, 3)),
        "rest": np.tile(eye, (K, 1, 1)),  # the twist modes' eigenvalue is 0 there: on the edge of the clamp
        "rotated and scaled": RNG.uniform(0.3, 2.0, (K, 1, 1)) * rotations(K),  # three equal singular values
        "two equal singular values": rotations(K) @ np.diag([1.5, 1.5, 0.6]) @ rotations(K),
        "inverted": rotations(K) @ (np.diag([1.0, 0.9, -0.7]) + 0.05 * RNG.normal(size=(K, 3, 3))),
        "stretched": rotations(K) @ np.diag([3.0, 0.4, 0.4]),
        "compressed": 0.3 * eye + 0.02 * RNG.normal(size=(K, 3, 3)),
        "almost flat": eye * [1.0, 1.0, 1e-9] + 1e-3 * RNG.normal(size=(K, 3, 3)) * [1.0, 1.0, 0.0],
        "a segment (eigh fallback)": np.tile(np.diag([1.0, 1e-7, 1e-8]), (K, 1, 1)),
    }


def energy(poisson=0.4, k=K):
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    mu, lam = lame_parameters(1e4, poisson)
    return NeoHookean(x, np.tile(np.arange(4), (k, 1)), mu, lam)


@pytest.mark.parametrize("poisson", [0.0, 0.3, 0.49])
@pytest.mark.parametrize("family", sorted(families()))
def test_analytic_projection_is_the_eigh_projection(family, poisson):
    F = families()[family]
    e = energy(poisson)
    H = e.stress_hessian(F)
    expected = project_psd(H)
    got = e.projected_stress_hessian(F)
    scale = np.abs(H).max()
    assert np.abs(got - expected).max() <= 1e-12 * scale
    assert np.linalg.eigvalsh(got).min() >= -1e-12 * scale


def test_every_mode_is_clamped_in_some_family(monkeypatch):
    """The comparison above exercises every mode's formula: scaling (0-2), flip (3-5) and twist (6-8) modes are each
    clamped somewhere, in the batched and the mode-by-mode path."""
    seen = set()
    modes = NeoHookean._modes

    def recording(U, V, Q, wanted):
        seen.update(int(m) for m in wanted)
        return modes(U, V, Q, wanted)

    monkeypatch.setattr(NeoHookean, "_modes", staticmethod(recording))
    for poisson in (0.0, 0.3, 0.49):
        e = energy(poisson)
        for F in families().values():
            e.projected_stress_hessian(F)
    assert seen == set(range(9))


def test_signed_svd_reconstructs_f_with_rotations():
    F = np.concatenate([families()[name] for name in ("near rest", "large", "inverted", "rotated and scaled")])
    U, s, V, ok = neo_hookean.signed_svd(F)
    assert ok.all()
    np.testing.assert_allclose(U @ (s[:, :, None] * np.swapaxes(V, 1, 2)), F, atol=1e-12)
    for R in (U, V):
        np.testing.assert_allclose(np.swapaxes(R, 1, 2) @ R, np.tile(np.eye(3), (len(F), 1, 1)), atol=1e-12)
        np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-12)
    assert np.all(s[:, 0] >= s[:, 1] - 1e-12) and np.all(s[:, 1] >= np.abs(s[:, 2]) - 1e-12)
    np.testing.assert_array_equal(np.sign(s[:, 2]), np.sign(np.linalg.det(F)))


def test_segment_is_flagged_for_the_fallback():
    _, _, _, ok = neo_hookean.signed_svd(families()["a segment (eigh fallback)"])
    assert not ok.any()


def test_element_hessian_needs_no_eigh(monkeypatch):
    """``NeoHookean.hessian`` projects through the analytic eigensystem: with numpy's eigh unavailable it still gives
    B^T project_psd(H_F) B, and so the same 12x12 blocks as the eigh projection (except where a tet is flat to a
    segment, none here)."""
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    # One tet per deformation: the corners moved so that F is each of the "near rest" and "inverted" family's.
    F = np.concatenate([families()["near rest"][: K // 2], families()["inverted"][: K // 2]])
    e = NeoHookean(np.tile(x, (K, 1)), np.arange(4 * K).reshape(K, 4), *lame_parameters(1e4, 0.4))
    corners = np.concatenate([np.zeros((K, 1, 3)), np.swapaxes(F, 1, 2)], axis=1)  # x_a = F X_a, X_0 = 0, X_a = e_a
    positions = corners.reshape(-1, 3)
    np.testing.assert_allclose(e.deformation_gradient(positions), F, atol=1e-12)
    H = e.stress_hessian(F)
    expected = element_blocks(e.rest_volume[:, None, None] * (np.swapaxes(e.B, 1, 2) @ project_psd(H) @ e.B))

    def no_eigh(*args, **kwargs):
        raise AssertionError("eigh called")

    monkeypatch.setattr(np.linalg, "eigh", no_eigh)
    got = e.hessian(positions).blocks
    assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()
