"""The IPC barrier summed over point-triangle and edge-edge pairs: what the mesh-collider and the self-contact barriers share.

Li et al. 2020, "Incremental Potential Contact": every pair closer than d_hat contributes b(d)
(``log_barrier.barrier_terms``) of its distance d. Derivatives come from the squared distance D = d^2 and its exact
gradient and Hessian (``primitives.point_triangle_distance_squared`` / ``edge_edge_distance_squared``, the IPC Toolkit's
distance types):

    grad d = grad D / (2 d),   hess d = hess D / (2 d) - grad D grad D^T / (4 d^3),

and each pair's Hessian b''(d) grad d grad d^T + b'(d) hess d is projected to PSD on its own (batched eigh).

A subclass says which pairs are near (``_near``) and gives their distance derivatives (``_terms``); the sums over the
pairs are here.
"""
import numpy as np

from ...energies.base import BlockHessian, Energy, element_blocks, element_stencil, project_psd, scatter
from ..narrow_phase.ccd import edge_edge_ccd, point_triangle_ccd
from ..narrow_phase.primitives import (edge_edge_distance_squared, point_triangle_distance, point_triangle_distance_squared,
                                       segment_distance)
from .log_barrier import barrier_terms


def distance_derivatives(D, g, H):
    """Distance d (k,) and its gradient (k, m) and Hessian (k, m, m) from the squared distance D (k,) with its gradient
    g (k, m) and Hessian H (k, m, m) over any m coordinates (module docstring). d = 0 gives huge but finite values
    (the barrier is infinite there anyway and no accepted iterate reaches it)."""
    d = np.sqrt(np.maximum(D, 0.0))
    safe = np.maximum(d, 1e-300)
    grad = g / (2.0 * safe)[:, None]
    hess = H / (2.0 * safe)[:, None, None] - g[:, :, None] * g[:, None, :] / (4.0 * safe**3)[:, None, None]
    return d, grad, hess


class PairBarrier(Energy):
    """Sum of b(d) over the pairs within d_hat. Subclasses set ``kappa`` [N], ``d_hat`` [m] and define

    - ``_near(x)``: a sequence of tuples whose last item is the distances (k,) [m] of the pairs within d_hat at x
      (exact distances, no derivatives: the line search's energy);
    - ``_terms(x)``: a list of (stencil (k, s) particle indices, d (k,), grad d (k, 3s), hess d (k, 3s, 3s)) over the
      same pairs.

    The Hessian's blocks follow the pairs in contact (``coupled``: NEWTON assembles them at each iteration).
    """

    coupled = True
    _pt = staticmethod(point_triangle_distance_squared)
    """Point-triangle squared distances with their derivatives: the NumPy reference, or its native twin
    (``native.ipc_kernels.use_kernels``), as are ``_ee`` (edge-edge) and ``_psd`` (the PSD projection)."""
    _ee = staticmethod(edge_edge_distance_squared)
    _psd = staticmethod(project_psd)
    _pt_ccd = staticmethod(point_triangle_ccd)
    """Times of impact of point-triangle pairs (``ccd.point_triangle_ccd``), or its native twin; ``_ee_ccd`` of edge
    pairs."""
    _ee_ccd = staticmethod(edge_edge_ccd)

    @staticmethod
    def _pt_gap(p, a, b, c):
        """Distances (k,) [m] of points p to triangles (a, b, c) (``primitives.point_triangle_distance``), or the
        native twin's."""
        return point_triangle_distance(p, a, b, c)[0]

    @staticmethod
    def _ee_gap(a, b, c, d):
        """Distances (k,) [m] between segments (a, b) and (c, d) (``primitives.segment_distance``), or the native
        twin's."""
        return segment_distance(a, b, c, d)[0]

    def value(self, x):
        total = 0.0
        for near in self._near(x):
            d = near[-1]
            if np.any(d <= 0.0):
                return float("inf")
            total += float(np.sum(barrier_terms(d, self.d_hat, self.kappa)[0]))
        return total

    def gradient(self, x):
        g = np.zeros_like(x)
        for stencil, d, grad, _ in self._terms(x):
            first = barrier_terms(np.maximum(d, 1e-300), self.d_hat, self.kappa)[1]
            g += scatter(stencil, (first[:, None] * grad).reshape(len(d), stencil.shape[1], 3), len(x))
        return g

    def hessian(self, x, project=True):
        rows, cols, blocks = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros((0, 3, 3))]
        for stencil, d, grad, hess in self._terms(x):
            _, first, second = barrier_terms(np.maximum(d, 1e-300), self.d_hat, self.kappa)
            local = second[:, None, None] * grad[:, :, None] * grad[:, None, :] + first[:, None, None] * hess
            if project:
                local = self._psd(local)
            r, c = element_stencil(stencil)
            rows.append(r)
            cols.append(c)
            blocks.append(element_blocks(local))
        return BlockHessian(np.concatenate(rows), np.concatenate(cols), np.concatenate(blocks))
