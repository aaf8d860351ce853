/* The implicit mass-spring solver's linear solve in one call: conjugate gradients on a sparse matrix of 3x3 blocks
 * (BSR), preconditioned with the inverses of its diagonal blocks, the twin of solvers/linalg/iterative.py block_cg.
 *
 * The operations are the twin's in the twin's order, so x, the iteration count and the residual agree bit for bit:
 * - A p is softsim_bsr3_matvec (scipy's bsr_matvec, implicit.c);
 * - dot products are iterative.ordered_dot: products a_i b_i summed into DOT_LANES running sums (element i into sum
 *   i % DOT_LANES, in order), then the sums folded in halves; norms are the square root of a vector's dot with itself;
 * - the preconditioner is iterative._apply_block_diagonal: z_a = (D_a0 r_0 + D_a1 r_1) + D_a2 r_2 per block;
 * - the vector updates are NumPy's: x + alpha p, r - alpha Ap, p beta + z (no fused multiply-adds: -ffp-contract=off).
 * Indices were checked by the binding (native/implicit_kernels.py, BlockMatrix); nothing here checks them, and
 * nothing allocates: work is the caller's.
 */
#include <math.h>

#include "softsim_native.h"

#define DOT_LANES 64

/* iterative.ordered_dot of a and b (n,). */
static double ordered_dot(const double *a, const double *b, int64_t n) {
    double s[DOT_LANES] = {0.0};
    int64_t head = n - n % DOT_LANES;
    if (head > 0) {
        for (int j = 0; j < DOT_LANES; j++) s[j] = a[j] * b[j]; /* np.add.accumulate's first row: the products */
        for (int64_t i = DOT_LANES; i < head; i += DOT_LANES)
            for (int j = 0; j < DOT_LANES; j++) s[j] = s[j] + a[i + j] * b[i + j];
    }
    for (int64_t i = head; i < n; i++) s[i - head] = s[i - head] + a[i] * b[i];
    for (int width = DOT_LANES / 2; width > 0; width /= 2)
        for (int j = 0; j < width; j++) s[j] = s[j] + s[j + width];
    return s[0];
}

/* z = the block diagonal d_inv (block_rows, 3, 3) times r (3 block_rows,), block by block. */
static void apply_block_diagonal(const double *d_inv, const double *r, int64_t block_rows, double *z) {
    for (int64_t k = 0; k < block_rows; k++) {
        const double *d = d_inv + 9 * k, *v = r + 3 * k;
        for (int a = 0; a < 3; a++) z[3 * k + a] = (d[3 * a] * v[0] + d[3 * a + 1] * v[1]) + d[3 * a + 2] * v[2];
    }
}

/* r = b - A x. */
static void residual_of(int64_t block_rows, const int64_t *indptr, const int64_t *indices, const double *blocks,
                        const double *b, const double *x, double *ax, double *r) {
    int64_t n = 3 * block_rows;
    softsim_bsr3_matvec(block_rows, indptr, indices, blocks, x, ax);
    for (int64_t i = 0; i < n; i++) r[i] = b[i] - ax[i];
}

int64_t softsim_block_cg(int64_t block_rows, const int64_t *indptr, const int64_t *indices, const double *blocks,
                         const double *d_inv, const double *b, double *x, double tol, double atol,
                         int64_t max_iterations, double *work, double *residual) {
    int64_t n = 3 * block_rows;
    double *r = work, *z = work + n, *p = work + 2 * n, *ap = work + 3 * n;
    residual_of(block_rows, indptr, indices, blocks, b, x, ap, r);
    double r0_norm = sqrt(ordered_dot(r, r, n));
    if (r0_norm == 0.0 || r0_norm <= atol) {
        *residual = r0_norm == 0.0 ? 0.0 : 1.0;
        return 0;
    }
    apply_block_diagonal(d_inv, r, block_rows, z);
    for (int64_t i = 0; i < n; i++) p[i] = z[i];
    double rz = ordered_dot(r, z, n);
    double limit = tol * r0_norm;
    if (atol > limit) limit = atol; /* Python's max(tol * r0_norm, atol) */
    int64_t iterations = 0;
    while (iterations < max_iterations && sqrt(ordered_dot(r, r, n)) > limit) {
        softsim_bsr3_matvec(block_rows, indptr, indices, blocks, p, ap);
        double pap = ordered_dot(p, ap, n);
        if (!(pap > 0.0)) break; /* only at an exact solution (p = 0) for an SPD matrix */
        double alpha = rz / pap;
        for (int64_t i = 0; i < n; i++) x[i] = x[i] + alpha * p[i];
        for (int64_t i = 0; i < n; i++) r[i] = r[i] - alpha * ap[i];
        apply_block_diagonal(d_inv, r, block_rows, z);
        double rz_new = ordered_dot(r, z, n);
        double beta = rz_new / rz;
        for (int64_t i = 0; i < n; i++) p[i] = p[i] * beta + z[i];
        rz = rz_new;
        iterations++;
    }
    residual_of(block_rows, indptr, indices, blocks, b, x, ap, r);
    *residual = sqrt(ordered_dot(r, r, n)) / r0_norm;
    return iterations;
}
