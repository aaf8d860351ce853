"""Python bindings of NEWTON's IPC contact kernels (``src/ipc_distance.c``).

- ``IPCKernels.point_triangle`` / ``edge_edge`` <-> ``collision.narrow_phase.primitives.point_triangle_distance_squared``
  / ``edge_edge_distance_squared``: squared distances (k,) with their gradients (k, 12) and Hessians (k, 12, 12)
  over the pair's four points, by the IPC Toolkit's distance types. The same types and squared distances as the
  twin; the gradients and Hessians to round-off (the twin maps them to the points with BLAS matrix products, whose
  summation order is BLAS's);
- ``IPCKernels.project_psd`` <-> ``energies.base.project_psd``: symmetric matrices (k, d, d), d <= 12, with their
  negative eigenvalues set to 0 (Jacobi rotations against LAPACK's eigh: equal to round-off of each matrix's norm).

The barriers of ``collision.barriers`` call these through their ``_pt``, ``_ee`` and ``_psd`` attributes, which NEWTON
points here when ``config.compute`` allows the library and the ``ipc`` family passed its self-test (``use_kernels``).
Every call checks the arrays it is handed (float64, C-contiguous, (k, 3) alike; the matrices (k, d, d)) and raises
ValueError naming the one that is not; outputs are fresh arrays.
"""
import numpy as np

from .kernels import F64, checked
from .library import pointer

MAX_PSD_SIZE = 12
"""Largest d of the matrices ``project_psd`` takes (a pair's four points)."""


class IPCKernels:
    """The ``ipc`` family's kernels of a loaded library (``library.ready('ipc')`` already asked)."""

    def __init__(self, library):
        self.library = library

    def _distances(self, kind: int, points):
        arrays = [np.ascontiguousarray(p, np.float64) for p in points]
        k = len(arrays[0])
        for name, array in zip(("x0", "x1", "x2", "x3"), arrays):
            checked(name, array, F64, (k, 3))
        types = np.empty(k, np.int64)
        D, grad, hess = np.empty(k), np.empty((k, 12)), np.empty((k, 12, 12))
        if k:
            self.library.softsim_ipc_distance2(kind, k, *map(pointer, arrays), pointer(types), pointer(D),
                                               pointer(grad), pointer(hess))
        return D, grad, hess

    def point_triangle(self, p, a, b, c):
        """``point_triangle_distance_squared(p, a, b, c)``: (D (k,) [m^2], gradient (k, 12), Hessian (k, 12, 12))."""
        return self._distances(0, (p, a, b, c))

    def edge_edge(self, a, b, c, d):
        """``edge_edge_distance_squared(a, b, c, d)``: (D (k,) [m^2], gradient (k, 12), Hessian (k, 12, 12))."""
        return self._distances(1, (a, b, c, d))

    def project_psd(self, H):
        """``project_psd(H)``: the nearest PSD matrices (k, d, d) of symmetric H (a copy; H is not changed)."""
        if len(H) == 0:
            return H
        out = np.array(H, dtype=np.float64, order="C", copy=True)
        if out.ndim != 3 or out.shape[1] != out.shape[2] or not 1 <= out.shape[1] <= MAX_PSD_SIZE:
            raise ValueError(f"H: shape must be (k, d, d) with 1 <= d <= {MAX_PSD_SIZE}, got {np.shape(H)}")
        self.library.softsim_project_psd(len(out), out.shape[1], pointer(out))
        return out


def use_kernels(library, barriers) -> None:
    """Point the ``_pt``, ``_ee`` and ``_psd`` of every barrier among ``barriers`` that has them at the native
    kernels of ``library`` (None, or a family that failed its self-test: they stay on NumPy)."""
    if library is None or not library.ready("ipc"):
        return
    kernels = IPCKernels(library)
    for barrier in barriers:
        if hasattr(barrier, "_psd"):
            barrier._pt, barrier._ee, barrier._psd = kernels.point_triangle, kernels.edge_edge, kernels.project_psd
