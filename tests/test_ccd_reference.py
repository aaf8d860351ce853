"""Distances, their derivatives, the barrier and CCD against the IPC Toolkit's Python bindings (``ipctk``, a dev
requirement where wheels exist), on random and degenerate configurations. Skipped where ipctk is not installed, and
each family of ipctk's functions where it does not run on this CPU (``runs_here``)."""
import signal
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

from solvers.collision import edge_edge_ccd, point_triangle_ccd
from solvers.collision.barriers.log_barrier import barrier_terms
from solvers.collision.narrow_phase.ccd import _edge_edge_gap, _point_triangle_gap
from solvers.collision.narrow_phase.primitives import (edge_edge_distance_squared, edge_edge_distance_type, point_triangle_distance,
                                                       point_triangle_distance_squared, point_triangle_distance_type, segment_distance)

ipctk = pytest.importorskip("ipctk")

_PROBE_SETUP = "import numpy as np, ipctk\np, a, b, c = np.random.default_rng(0).normal(size=(4, 3))\n"
_PROBES = {
    "distances": "ipctk.point_triangle_distance_hessian(p, a, b, c); ipctk.point_triangle_distance_type(p, a, b, c)\n"
                 "ipctk.edge_edge_distance_hessian(p, a, b, c); ipctk.edge_edge_distance_type(p, a, b, c)",
    "barrier": "ipctk.barrier_second_derivative(0.5, 1.0)",
    "ccd": "ccd = ipctk.TightInclusionCCD(conservative_rescaling=1.0)\n"
           "ccd.point_triangle_ccd(p, a, b, c, p + 1, a, b, c, min_distance=0.0)\n"
           "ccd.edge_edge_ccd(p, a, b, c, p + 1, a, b, c, min_distance=0.0)",
}


@lru_cache(maxsize=None)
def _probe(family: str) -> str:
    """Why ipctk's ``family`` of functions does not run here ('' where it does), tried once in a child process: its
    Linux wheel (1.6.1, the only one on PyPI) is built for instructions some x86-64 CPUs lack. On a 2-core AMD EPYC
    with AVX2 and no AVX-512 its distances and CCD stopped the process with SIGILL (its barrier ran), and a test that
    dies so takes its pytest worker, and the rest of that worker's tests, with it."""
    result = subprocess.run([sys.executable, "-c", _PROBE_SETUP + _PROBES[family]], capture_output=True, text=True,
                            timeout=300)
    if result.returncode == 0:
        return ""
    how = signal.Signals(-result.returncode).name if result.returncode < 0 else f"exit status {result.returncode}"
    said = result.stderr.strip()[-200:]
    return f"ipctk's {family} stop a process on this CPU ({how}){': ' + said if said else ''}"


def runs_here(family: str) -> None:
    """Skip the calling test, saying why, unless ipctk's ``family`` ("distances", "barrier", "ccd") runs here."""
    reason = _probe(family)
    if reason:
        pytest.skip(reason)

N = 300


def random_configurations(rng, n=N):
    return rng.normal(size=(4, n, 3))


def degenerate_point_triangle(rng, n=N):
    """Coplanar points, points above an edge's line or exactly above a corner, and points on the triangle."""
    a, b, c = rng.normal(size=(3, n, 3))
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    w = rng.uniform(-0.5, 1.5, (n, 2))
    in_plane = a + w[:, :1] * (b - a) + w[:, 1:] * (c - a)
    height = rng.choice([0.0, 0.3, -1.0], size=(n, 1))
    kind = rng.integers(0, 3, n)[:, None]
    on_edge = a + w[:, :1] * (b - a)  # on the line of edge a b
    p = np.where(kind == 0, in_plane, np.where(kind == 1, on_edge, b)) + height * normal
    return np.stack([p, a, b, c])


def degenerate_edge_edge(rng, n=N):
    """Parallel edges (offset, collinear, overlapping), coplanar crossing edges and edges meeting at an endpoint."""
    a, d = rng.normal(size=(2, n, 3))
    b = a + rng.normal(size=(n, 3))
    direction = b - a
    offset = rng.normal(size=(n, 3)) * rng.choice([0.0, 0.5], size=(n, 1))
    s = rng.uniform(-1.5, 1.5, (n, 2))
    kind = rng.integers(0, 3, n)[:, None]
    c_par, d_par = a + offset + s[:, :1] * direction, a + offset + s[:, 1:] * direction
    across = rng.normal(size=(n, 3))  # never zero: a zero-length edge is the IPC Toolkit's point-line special case
    c_cop = a + s[:, :1] * direction + across
    d_cop = c_cop - 2.0 * across + s[:, 1:] * direction
    c = np.where(kind == 0, c_par, np.where(kind == 1, c_cop, b))
    d = np.where(kind == 0, d_par, np.where(kind == 1, d_cop, d))
    return np.stack([a, b, c, d])


def ipctk_rows(function, x):
    return np.array([np.asarray(function(*x[:, i])) for i in range(x.shape[1])])


CASES = {
    "point-triangle": (point_triangle_distance_squared, point_triangle_distance_type, ipctk.point_triangle_distance,
                       ipctk.point_triangle_distance_gradient, ipctk.point_triangle_distance_hessian,
                       ipctk.point_triangle_distance_type, degenerate_point_triangle),
    "edge-edge": (edge_edge_distance_squared, edge_edge_distance_type, ipctk.edge_edge_distance,
                  ipctk.edge_edge_distance_gradient, ipctk.edge_edge_distance_hessian, ipctk.edge_edge_distance_type,
                  degenerate_edge_edge),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("degenerate", [False, True])
def test_squared_distance_derivatives_match_ipctk(name, degenerate):
    runs_here("distances")
    ours, our_type, value, gradient, hessian, ref_type, make_degenerate = CASES[name]
    rng = np.random.default_rng(11 if degenerate else 7)
    x = make_degenerate(rng) if degenerate else random_configurations(rng)
    d2, grad, hess = ours(*x)
    types = our_type(*x)
    ref_types = np.array([ref_type(*x[:, i]).value for i in range(x.shape[1])])
    same = types == ref_types
    ref_d2, ref_grad, ref_hess = ipctk_rows(value, x), ipctk_rows(gradient, x), ipctk_rows(hessian, x)
    scale = 1.0 + np.abs(ref_hess).max(axis=(1, 2))
    dev_d2 = np.abs(d2 - ref_d2).max()
    dev_grad = np.abs(grad - ref_grad)[same].max()
    dev_hess = (np.abs(hess - ref_hess).max(axis=(1, 2)) / scale)[same].max()
    print(f"\n{name} {'degenerate' if degenerate else 'random'}: types agree {same.sum()}/{len(same)} "
          f"(ours {np.bincount(types, minlength=7)}), max |d2 - ipctk| {dev_d2:.2e}, gradient {dev_grad:.2e}, "
          f"Hessian (relative) {dev_hess:.2e}")
    # where the types differ (ties on region boundaries) the squared distance is still the same number
    assert dev_d2 <= 1e-12 * (1.0 + np.abs(ref_d2).max())
    assert same.mean() >= (0.85 if degenerate else 1.0)
    assert dev_grad <= 1e-10 and dev_hess <= 1e-9
    assert len(np.unique(types)) >= 3


@pytest.mark.parametrize("degenerate", [False, True])
def test_squared_distance_agrees_with_the_closest_point_routines(degenerate):
    rng = np.random.default_rng(3)
    x = degenerate_point_triangle(rng) if degenerate else random_configurations(rng)
    # squared, as the closed forms cancel to ~1e-16 (even slightly negative) where the distance is 0
    assert np.allclose(point_triangle_distance_squared(*x)[0], point_triangle_distance(*x)[0] ** 2, atol=1e-12)
    x = degenerate_edge_edge(rng) if degenerate else random_configurations(rng)
    assert np.allclose(edge_edge_distance_squared(*x)[0], segment_distance(*x)[0] ** 2, atol=1e-12)


def test_barrier_matches_ipctk_up_to_its_form():
    """ipctk's barrier is Li et al. 2020's clamped log b_I(d) = -(d - d_hat)^2 ln(d / d_hat) (no kappa; IPC applies it
    to squared distances with d_hat^2); ours is Li's solid-sim-tutorial's b(d) = kappa / 2 (d - d_hat) ln(d / d_hat)
    (log_barrier.py), one factor (d - d_hat) less. So b_I = (2 / kappa) (d_hat - d) b exactly, and by the product rule
    b_I' = (2 / kappa) (-b + (d_hat - d) b'), b_I'' = (2 / kappa) (-2 b' + (d_hat - d) b'')."""
    runs_here("barrier")
    rng = np.random.default_rng(5)
    d_hat = rng.uniform(1e-3, 1.0, 200)
    d = d_hat * rng.uniform(1e-4, 0.999, 200)
    kappa = rng.uniform(0.1, 1e4, 200)
    b, b1, b2 = barrier_terms(d, d_hat, kappa)
    ref = np.array([[ipctk.barrier(x, h), ipctk.barrier_first_derivative(x, h), ipctk.barrier_second_derivative(x, h)]
                    for x, h in zip(d, d_hat)])
    ours = 2.0 / kappa[:, None] * np.column_stack([(d_hat - d) * b, -b + (d_hat - d) * b1,
                                                   -2.0 * b1 + (d_hat - d) * b2])
    deviation = np.abs(ours - ref) / (1.0 + np.abs(ref))
    print(f"\nbarrier: max relative deviation from ipctk (value, b', b'') {deviation.max(axis=0)}")
    assert deviation.max() <= 1e-10


def random_motions(rng, n=N):
    """Start poses and end poses of n queries, with displacements large enough that about half of them collide."""
    x0 = rng.normal(size=(4, n, 3)) * 0.5
    x1 = x0 + rng.normal(size=(4, n, 3)) * rng.choice([1.0, 2.0], size=(1, n, 1))
    return x0, x1


@pytest.mark.parametrize("name, ours, ref_name, gap", [
    ("point-triangle", point_triangle_ccd, "point_triangle_ccd", _point_triangle_gap),
    ("edge-edge", edge_edge_ccd, "edge_edge_ccd", _edge_edge_gap)])
@pytest.mark.parametrize("min_distance", [0.0, 0.05])
def test_ccd_is_conservative_against_ipctk(name, ours, ref_name, gap, min_distance):
    """Where ipctk's Tight-Inclusion CCD (no rescaling) finds a contact, ours finds one no later; report the agreement.

    With min_distance > 0 ipctk's test is conservative in its own way (it inflates boxes: hits where the Euclidean
    distance stays up to ~40% above min_distance, and early times), so there ours is held to the distance sampled
    at 1001 times over the step instead: a hit no later than the first sample within min_distance, and where
    ipctk alone hits, no sample within min_distance."""
    runs_here("ccd")
    rng = np.random.default_rng(17)
    x0, x1 = random_motions(rng, 400)
    reference = getattr(ipctk.TightInclusionCCD(conservative_rescaling=1.0), ref_name)
    ref = [reference(*x0[:, i], *x1[:, i], min_distance=min_distance) for i in range(x0.shape[1])]
    ref_hit = np.array([h for h, _ in ref])
    ref_toi = np.array([t for _, t in ref])
    toi = ours(*x0, *x1, min_distance=min_distance)
    hit = np.isfinite(toi)
    both = hit & ref_hit
    print(f"\n{name} CCD, min_distance {min_distance}: ipctk hits {ref_hit.sum()}/{len(hit)}, ours {hit.sum()}; "
          f"ours only {np.sum(hit & ~ref_hit)}, ipctk only {np.sum(ref_hit & ~hit)}; times of hits in both: ours "
          f"earlier by at most {np.max(ref_toi[both] - toi[both]):.2e}, later by at most "
          f"{max(0.0, np.max(toi[both] - ref_toi[both])):.2e}")
    assert 0.05 * len(hit) < ref_hit.sum() < 0.9 * len(hit)
    times = np.linspace(0.0, 1.0, 1001)
    sampled = gap((x0[:, None] + times[None, :, None, None] * (x1 - x0)[:, None]).reshape(4, -1, 3))
    within = sampled.reshape(len(times), -1) <= min_distance
    first = np.where(within.any(axis=0), times[np.argmax(within, axis=0)], np.inf)
    assert np.all(toi <= first + 1e-9)
    if min_distance == 0.0:
        assert not np.any(ref_hit & ~hit)
        # ipctk's time is within its tolerance (1e-6) below the true one, ours is no later than the true one
        assert np.all(toi[both] <= ref_toi[both] + 1e-5)
    else:
        assert not np.any(within[:, ref_hit & ~hit])
