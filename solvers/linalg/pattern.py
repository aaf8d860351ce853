"""A fixed sparsity pattern of 3x3 blocks with Dirichlet DOFs eliminated, built once and filled many times.

Newton assembles its Hessian from every energy's blocks at every iteration; the blocks' particle rows and
columns never change (each energy's stencil is fixed), so the map from those COO triplets to the slots of
the reduced block matrix is computed once here. Pinned particles (Dirichlet conditions) are not unknowns:
blocks in a pinned row or column are dropped, which is exactly the elimination of prescribed DOFs when the
step direction of a pinned particle is 0 (Li's solid-sim-tutorial "sets the row and column to the identity", here without
keeping the trivial rows).
"""
import numpy as np
import scipy.sparse as sp


class BlockPattern:
    """Reduced block matrix over the free particles, from COO block triplets (rows, cols) of length b.

    free: (particle_count,) bool. ``free_index`` (nf,) are the free particles in order; row/column k of the
    reduced matrix (3 scalar rows) is particle ``free_index[k]``, and ``reduced`` (particle_count,) is each particle's
    row (-1: pinned). Every free particle has a diagonal block.
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, free: np.ndarray):
        self.free_index = np.nonzero(free)[0]
        nf = len(self.free_index)
        self.free_count = nf
        self.reduced = reduced = np.full(len(free), -1, np.int64)
        reduced[self.free_index] = np.arange(nf)
        r, c = reduced[rows], reduced[cols]
        kept = np.nonzero((r >= 0) & (c >= 0))[0]
        width = max(nf, 1)
        all_rows = np.concatenate([r[kept], np.arange(nf)])
        all_cols = np.concatenate([c[kept], np.arange(nf)])
        keys, slot = np.unique(all_rows * width + all_cols, return_inverse=True)
        slot = slot.ravel()
        # Unique keys in row-major order are exactly BSR order.
        self.block_rows, self.block_cols = keys // width, keys % width
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.block_rows, minlength=nf))]).astype(np.int32)
        self.indices = self.block_cols.astype(np.int32)
        self.block_count = len(keys)
        self.entry_count = len(rows)
        # sum_matrix @ blocks.reshape(b, 9) adds every kept triplet into its slot (one sparse product, no loop).
        self.sum_matrix = sp.csr_matrix(
            (np.ones(len(kept)), (slot[: len(kept)], kept)), shape=(self.block_count, self.entry_count)
        )
        self.diagonal_slot = np.empty(nf, np.int64)
        diagonal = self.block_rows == self.block_cols
        self.diagonal_slot[self.block_rows[diagonal]] = np.nonzero(diagonal)[0]

    def assemble(self, blocks: np.ndarray) -> np.ndarray:
        """Summed block data (block_count, 3, 3) from the triplets' blocks (b, 3, 3)."""
        return (self.sum_matrix @ blocks.reshape(-1, 9)).reshape(-1, 3, 3)

    def matrix(self, data: np.ndarray) -> sp.bsr_matrix:
        """The reduced (3 nf, 3 nf) matrix with block data from ``assemble``."""
        n = 3 * self.free_count
        return sp.bsr_matrix((data, self.indices, self.indptr), shape=(n, n))

    def diagonal_blocks(self, data: np.ndarray) -> np.ndarray:
        """The (nf, 3, 3) diagonal blocks of assembled data (for block-Jacobi preconditioning)."""
        return data[self.diagonal_slot]

    def restrict(self, vectors: np.ndarray) -> np.ndarray:
        """Free particles' rows of (particle_count, 3) as a flat (3 nf,) vector."""
        return vectors[self.free_index].ravel()

    def extend(self, reduced: np.ndarray, particle_count: int) -> np.ndarray:
        """A (particle_count, 3) array with the reduced (3 nf,) vector in the free rows and 0 in the pinned ones."""
        out = np.zeros((particle_count, 3))
        out[self.free_index] = reduced.reshape(-1, 3)
        return out
