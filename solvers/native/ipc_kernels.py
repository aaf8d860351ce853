"""Python bindings of NEWTON's IPC contact kernels (``src/ipc_distance.c``, ``src/ipc_ccd.c``), each equal to its
NumPy twin to round-off (not bit for bit: the twins reduce through NumPy, BLAS and LAPACK in their own orders):

- ``IPCKernels.point_triangle`` / ``edge_edge`` <-> ``collision.narrow_phase.primitives.point_triangle_distance_squared``
  / ``edge_edge_distance_squared``: squared distances (k,) with their gradients (k, 12) and Hessians (k, 12, 12)
  over the pair's four points, by the IPC Toolkit's distance types;
- ``IPCKernels.point_triangle_gap`` / ``edge_edge_gap`` <-> ``primitives.point_triangle_distance`` /
  ``segment_distance``: the distances (k,) alone;
- ``IPCKernels.point_triangle_ccd`` / ``edge_edge_ccd`` <-> ``collision.narrow_phase.ccd``'s: additive CCD's times of
  impact (n,);
- ``IPCKernels.project_psd`` <-> ``energies.base.project_psd``: symmetric matrices (k, d, d), d <= 12, with their
  negative eigenvalues set to 0 (Householder tridiagonalization and implicit QL against LAPACK's eigh).

The barriers of ``collision.barriers`` call these through their ``_pt``, ``_ee``, ``_psd``, ``_pt_gap``, ``_ee_gap``,
``_pt_ccd`` and ``_ee_ccd`` attributes, which NEWTON points here when ``config.compute`` allows the library and the
``ipc`` family passed its self-test (``kernels_for``, ``use_kernels``). Every call checks the arrays it is handed (float64,
C-contiguous, (k, 3) alike; the matrices (k, d, d)) and raises ValueError naming the one that is not; outputs are
fresh arrays.
"""
import numpy as np

from ..collision.narrow_phase import ccd
from .kernels import F64, checked
from .library import pointer

MAX_PSD_SIZE = 12
"""Largest d of the matrices ``project_psd`` takes (a pair's four points)."""


class IPCKernels:
    """The ``ipc`` family's kernels of a loaded library (``library.ready('ipc')`` already asked)."""

    def __init__(self, library):
        self.library = library

    @staticmethod
    def _points(points, count: int = 4):
        """The ``count`` point arrays as float64 C-contiguous (k, 3) alike (ValueError naming the first that is not:
        x0, x1, ...)."""
        arrays = [np.ascontiguousarray(p, np.float64) for p in points]
        if len(arrays) != count:
            raise ValueError(f"expected {count} point arrays, got {len(arrays)}")
        k = len(arrays[0]) if arrays[0].ndim else 0
        for index, array in enumerate(arrays):
            checked(f"x{index}", array, F64, (k, 3))
        return arrays

    def _distances(self, kind: int, points):
        arrays = self._points(points)
        k = len(arrays[0])
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

    def _gaps(self, kind: int, points):
        arrays = self._points(points)
        distance = np.empty(len(arrays[0]))
        if len(distance):
            self.library.softsim_ipc_gaps(kind, len(distance), *map(pointer, arrays), pointer(distance))
        return distance

    def point_triangle_gap(self, p, a, b, c):
        """``point_triangle_distance(p, a, b, c)[0]``: the distances (k,) [m]."""
        return self._gaps(0, (p, a, b, c))

    def edge_edge_gap(self, a, b, c, d):
        """``segment_distance(a, b, c, d)[0]``: the distances (k,) [m]."""
        return self._gaps(1, (a, b, c, d))

    def _ccd(self, kind: int, points, min_distance: float):
        arrays = self._points(points, 8)
        toi = np.empty(len(arrays[0]))
        if len(toi):
            self.library.softsim_ipc_ccd(kind, len(toi), *map(pointer, arrays), float(min_distance), ccd.TOLERANCE,
                                         ccd.MAX_ROUNDS, pointer(toi))
        return toi

    def point_triangle_ccd(self, p0, a0, b0, c0, p1, a1, b1, c1, min_distance=0.0):
        """``ccd.point_triangle_ccd``: times of impact (n,) in [0, 1], inf where none."""
        return self._ccd(0, (p0, a0, b0, c0, p1, a1, b1, c1), min_distance)

    def edge_edge_ccd(self, a0, b0, c0, d0, a1, b1, c1, d1, min_distance=0.0):
        """``ccd.edge_edge_ccd``: times of impact (n,) in [0, 1], inf where none."""
        return self._ccd(1, (a0, b0, c0, d0, a1, b1, c1, d1), min_distance)

    def project_psd(self, H):
        """``project_psd(H)``: the nearest PSD matrices (k, d, d) of symmetric H (a copy; H is not changed)."""
        if len(H) == 0:
            return H
        out = np.array(H, dtype=np.float64, order="C", copy=True)
        if out.ndim != 3 or out.shape[1] != out.shape[2] or not 1 <= out.shape[1] <= MAX_PSD_SIZE:
            raise ValueError(f"H: shape must be (k, d, d) with 1 <= d <= {MAX_PSD_SIZE}, got {np.shape(H)}")
        self.library.softsim_project_psd(len(out), out.shape[1], pointer(out))
        return out


def kernels_for(library):
    """The ``ipc`` family's kernels of ``library`` (``IPCKernels``), or None where there is no library or the family
    failed its self-test (the barriers then stay on NumPy)."""
    if library is None or not library.ready("ipc"):
        return None
    return IPCKernels(library)


def use_kernels(kernels, barriers) -> None:
    """Point the ``_pt``, ``_ee``, ``_psd`` and, where a barrier has them, ``_pt_gap``, ``_ee_gap``, ``_pt_ccd`` and
    ``_ee_ccd`` of every barrier among ``barriers`` at ``kernels`` (``kernels_for``; None leaves them on NumPy)."""
    if kernels is None:
        return
    for barrier in barriers:
        if hasattr(barrier, "_psd"):
            barrier._pt, barrier._ee, barrier._psd = kernels.point_triangle, kernels.edge_edge, kernels.project_psd
        if hasattr(barrier, "_pt_gap"):
            barrier._pt_gap, barrier._ee_gap = kernels.point_triangle_gap, kernels.edge_edge_gap
            barrier._pt_ccd, barrier._ee_ccd = kernels.point_triangle_ccd, kernels.edge_edge_ccd
