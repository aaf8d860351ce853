/* The implicit solvers' hot loops: Projective Dynamics' local step for the constraint sets that project onto a sphere
 * (edge springs, curved isometric-bending hinges) with the scatter of their targets into the global right-hand side,
 * the 3x3-block sparse matrix-vector product of the implicit mass-spring solver's linear solves and the assembly of its
 * energies' Hessian blocks into its block pattern.
 *
 * Each repeats its NumPy twin's arithmetic in the twin's order, so the results agree bit for bit:
 * - softsim_pd_sphere_project <-> projective.constraints.EdgeSprings.project / HingeBending.project of
 *   ``A_free @ x_free + z_pinned`` (scipy's csr_matvecs: each row's sum from 0 in CSR order, coordinate by
 *   coordinate; then + z_pinned), ``_row_norm`` ((z0^2 + z1^2) + z2^2) and ``_weighted_onto_sphere``
 *   (z * (w R / |z|), the fallback direction with |z| = 1 where |z| <= tiny);
 * - softsim_pd_scatter_add <-> ``b + A_free_T @ q`` in ProjectiveSolver.global_solve (csr_matvecs, then the sum);
 * - softsim_bsr3_matvec <-> scipy's bsr_matvec for 3x3 blocks (each block row's y from 0, block by block in BSR order,
 *   each row of a block summed left to right onto y: sparsetools' gemv);
 * - softsim_csr9_matvecs <-> scipy's csr_matvecs with 9 vectors, ``linalg.pattern.BlockPattern.assemble``'s
 *   ``sum_matrix @ blocks.reshape(-1, 9)`` (each output row from 0, its entries in CSR order, y += a x).
 * Arrays are row-major; (k, 3) vectors hold row i at [3i .. 3i+2]. Indices were checked by the binding
 * (native/implicit_kernels.py); nothing here checks them.
 */
#include <math.h>

#include "softsim_native.h"

/* Row i of A v for A in CSR (indptr, indices, data) and v (cols, width), width <= 9: the row's sum from 0 in CSR order,
 * coordinate by coordinate (scipy's csr_matvecs: y[k] += a v[k]), written to z (width,). */
static inline void csr_row(int64_t i, const int64_t *indptr, const int64_t *indices, const double *data, const double *v,
                           int width, double *z)
{
    double acc[9] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int64_t jj = indptr[i]; jj < indptr[i + 1]; ++jj) {
        const double a = data[jj];
        const double *row = v + width * indices[jj];
        for (int k = 0; k < width; ++k) acc[k] += a * row[k];
    }
    for (int k = 0; k < width; ++k) z[k] = acc[k];
}

/* rows: the constraints r; A (r, nf) in CSR (indptr (r + 1,), indices, data); x_free (nf, 3); z_pinned (r, 3), the
 * pinned columns' share (zeros without pins: NumPy adds the scalar 0.0 then, the same bits). weighted_radius (r,)
 * = w R, fallback (r, 3) unit directions, tiny: the threshold below which |z| has no direction. Writes
 * length (r,) = |z| (before the fallback: the twin's energy reads it) and q (r, 3) = w p. */
void softsim_pd_sphere_project(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                               const double *x_free, const double *z_pinned, const double *weighted_radius,
                               const double *fallback, double tiny, double *length, double *q)
{
    for (int64_t i = 0; i < rows; ++i) {
        double z[3];
        csr_row(i, indptr, indices, data, x_free, 3, z);
        double z0 = z[0] + z_pinned[3 * i];
        double z1 = z[1] + z_pinned[3 * i + 1];
        double z2 = z[2] + z_pinned[3 * i + 2];
        double norm = sqrt((z0 * z0 + z1 * z1) + z2 * z2);
        length[i] = norm;
        if (norm <= tiny) {
            z0 = fallback[3 * i];
            z1 = fallback[3 * i + 1];
            z2 = fallback[3 * i + 2];
            norm = 1.0;
        }
        const double scale = weighted_radius[i] / norm;
        q[3 * i] = z0 * scale;
        q[3 * i + 1] = z1 * scale;
        q[3 * i + 2] = z2 * scale;
    }
}

/* rows: the free particles nf; A^T (nf, r) in CSR; q (r, 3); b_in, b_out (nf, 3), b_out = b_in + A^T q (b_out may be
 * b_in: row i reads only its own b_in row before writing it). */
void softsim_pd_scatter_add(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                            const double *q, const double *b_in, double *b_out)
{
    for (int64_t i = 0; i < rows; ++i) {
        double y[3];
        csr_row(i, indptr, indices, data, q, 3, y);
        b_out[3 * i] = b_in[3 * i] + y[0];
        b_out[3 * i + 1] = b_in[3 * i + 1] + y[1];
        b_out[3 * i + 2] = b_in[3 * i + 2] + y[2];
    }
}

/* y (rows, 9) = A x for A in CSR (indptr (rows + 1,), indices, data) and x (cols, 9): csr_row per row. */
void softsim_csr9_matvecs(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                          const double *x, double *y)
{
    for (int64_t i = 0; i < rows; ++i) csr_row(i, indptr, indices, data, x, 9, y + 9 * i);
}

/* y = A x for A (3 block_rows, 3 block_cols) in BSR with 3x3 blocks (indptr (block_rows + 1,), indices, blocks
 * (nnzb, 3, 3) row-major), x (3 block_cols,), y (3 block_rows,), written whole. */
void softsim_bsr3_matvec(int64_t block_rows, const int64_t *indptr, const int64_t *indices, const double *blocks,
                         const double *x, double *y)
{
    for (int64_t i = 0; i < block_rows; ++i) {
        double y0 = 0.0, y1 = 0.0, y2 = 0.0;
        for (int64_t jj = indptr[i]; jj < indptr[i + 1]; ++jj) {
            const double *a = blocks + 9 * jj;
            const double *v = x + 3 * indices[jj];
            /* sparsetools' gemv: dot = y[r]; dot += A[r][c] x[c] for c = 0, 1, 2; y[r] = dot. */
            y0 = ((y0 + a[0] * v[0]) + a[1] * v[1]) + a[2] * v[2];
            y1 = ((y1 + a[3] * v[0]) + a[4] * v[1]) + a[5] * v[2];
            y2 = ((y2 + a[6] * v[0]) + a[7] * v[1]) + a[8] * v[2];
        }
        y[3 * i] = y0;
        y[3 * i + 1] = y1;
        y[3 * i + 2] = y2;
    }
}
