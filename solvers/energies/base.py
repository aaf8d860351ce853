"""What every energy term offers, and the per-element helpers they share.

An energy is bound to a Model's arrays when it is built and is then evaluated at positions ``x``
(particle_count, 3) [m]:

- ``value(x)``     the energy [J], a float;
- ``gradient(x)``  dE/dx [N], shape (particle_count, 3);
- ``hessian(x, project=True)``  d2E/dx2 as a BlockHessian: 3x3 blocks [N/m] with their particle rows and
  columns. ``rows`` and ``cols`` are the same arrays at every call (the term's stencil), so the Newton solver
  maps them to its sparse matrix once; only ``blocks`` change. With ``project`` each element's Hessian is
  projected to the nearest positive semi-definite one (negative eigenvalues clamped to 0), so that the sum
  stays PSD whatever the configuration (Teran et al. 2005; the "make_PD" of Li's solid-sim-tutorial).
- ``max_step(x, dx)``  the largest alpha in (0, 1] such that x + alpha dx crosses nothing this term must
  never cross (a collider, an inverted element); 1 for terms without such a set.
"""
from dataclasses import dataclass

import numpy as np


@dataclass
class BlockHessian:
    rows: np.ndarray
    """Particle index of each block's row, shape (b,), int64."""
    cols: np.ndarray
    """Particle index of each block's column, shape (b,), int64."""
    blocks: np.ndarray
    """The 3x3 blocks [N/m], shape (b, 3, 3), float64; symmetric overall (block (i, j) = block (j, i)^T)."""


class Energy:
    """Base class: an energy term that is zero everywhere. Subclasses override what they have."""

    def value(self, x: np.ndarray) -> float:
        return 0.0

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return np.zeros_like(x)

    def hessian(self, x: np.ndarray, project: bool = True) -> BlockHessian:
        empty = np.zeros(0, np.int64)
        return BlockHessian(empty, empty, np.zeros((0, 3, 3)))

    def max_step(self, x: np.ndarray, dx: np.ndarray) -> float:
        return 1.0


class PositionCache:
    """The last result a term computed from positions x, returned again while it is asked at the same numbers.

    Newton evaluates a term's value at a line-search trial and then, once the trial is accepted, its gradient and
    Hessian at the same positions: what they share (edge vectors, curvature vectors, contact distances) is computed
    once. The key is x's content (a copy, compared exactly: ~20 us for 4096 particles), not its identity, so an array
    changed in place is never mistaken for the one cached."""

    def __init__(self):
        self._x = None
        self._result = None

    def get(self, x: np.ndarray, compute):
        """compute(x) or the result kept from the last call with the same x (equal shape and numbers)."""
        x = np.asarray(x)
        kept = self._x
        if kept is not None and kept.shape == x.shape and np.array_equal(kept, x):
            return self._result
        result = compute(x)
        self._x, self._result = x.copy(), result
        return result


def element_stencil(indices: np.ndarray):
    """Block rows and columns of a per-element Hessian, for elements of k particles.

    indices: (m, k) particle indices. Returns (rows, cols), each (m * k * k,), in the order of
    ``local.reshape(m, k, 3, k, 3).transpose(0, 1, 3, 2, 4).reshape(-1, 3, 3)`` (see ``element_blocks``).
    """
    m, k = indices.shape
    rows = np.repeat(indices, k, axis=1).ravel()
    cols = np.tile(indices, (1, k)).ravel()
    return rows, cols


def element_blocks(local: np.ndarray) -> np.ndarray:
    """Split per-element Hessians (m, 3k, 3k) into their k*k 3x3 blocks, shape (m*k*k, 3, 3), stencil order."""
    m, n3, _ = local.shape
    k = n3 // 3
    return local.reshape(m, k, 3, k, 3).transpose(0, 1, 3, 2, 4).reshape(-1, 3, 3)


def project_psd(H: np.ndarray) -> np.ndarray:
    """Nearest positive semi-definite matrices of symmetric (m, d, d) by clamping eigenvalues at 0 (batched eigh)."""
    if len(H) == 0:
        return H
    H = 0.5 * (H + np.swapaxes(H, 1, 2))
    w, V = np.linalg.eigh(H)
    if np.all(w >= 0.0):
        return H
    w = np.maximum(w, 0.0)
    return np.einsum("mij,mj,mkj->mik", V, w, V)


def scatter(indices: np.ndarray, per_element: np.ndarray, particle_count: int) -> np.ndarray:
    """Sum per-element vectors (m, k, 3) into particles (particle_count, 3) by ``indices`` (m, k)."""
    out = np.zeros((particle_count, 3))
    flat = indices.ravel()
    values = per_element.reshape(-1, 3)
    for axis in range(3):
        out[:, axis] = np.bincount(flat, values[:, axis], minlength=particle_count)
    return out


class OnRows(Energy):
    """One body's energy term inside a system of several bodies: ``term``, bound to a body of ``count`` particles,
    evaluated on rows [offset, offset + count) of the system's positions x (N, 3); its gradient is zero and its
    Hessian has no blocks outside those rows."""

    def __init__(self, term: Energy, offset: int, count: int):
        self.term, self.offset, self.count = term, int(offset), int(count)
        self._rows = None  # (the term's rows, cols) -> shifted copies, made once: the stencil is the same every call

    @property
    def is_constant_hessian(self) -> bool:
        """Whether the term's Hessian is the same at every x (then so is this one's)."""
        return bool(getattr(self.term, "is_constant_hessian", False))

    def _own(self, x):
        return x[self.offset:self.offset + self.count]

    def value(self, x):
        return self.term.value(self._own(x))

    def gradient(self, x):
        out = np.zeros_like(x)
        out[self.offset:self.offset + self.count] = self.term.gradient(self._own(x))
        return out

    def hessian(self, x, project=True):
        h = self.term.hessian(self._own(x), project)
        if self._rows is None or self._rows[0] is not h.rows or self._rows[1] is not h.cols:
            self._rows = (h.rows, h.cols, h.rows + self.offset, h.cols + self.offset)
        return BlockHessian(self._rows[2], self._rows[3], h.blocks)

    def max_step(self, x, dx):
        return self.term.max_step(self._own(x), dx[self.offset:self.offset + self.count])
