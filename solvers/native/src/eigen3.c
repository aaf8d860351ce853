/* The rotation-fixed SVD of many 3x3 matrices (Irving, Teran, Fedkiw 2004), the twin of linalg/eigen3.py's
 * ``rotation_svd`` (and its ``jacobi_eigen``, ``det_3x3``): Projective Dynamics' per-tet local step spends most of its
 * time there; and that local step's targets from it (softsim_tet_targets, at the end).
 *
 * Every array is structure of arrays, (3, 3, m) or (3, m): entry (i, j) of matrix k is at [(3 i + j) m + k], so the
 * loops run over the matrices innermost as the twin's whole-array arithmetic does. The twin's operations are repeated
 * in its order, so the results agree bit for bit:
 * - F^T F as einsum "dit,djt->ijt": each entry summed over d = 0, 1, 2 from 0;
 * - cyclic Jacobi: the pairs (0, 1), (0, 2), (1, 2) per sweep, all matrices sweep by sweep, stopping after the
 *   first sweep from the third on at which EVERY matrix's off-diagonal is below OFF_DIAGONAL_TOLERANCE times its
 *   largest diagonal entry (the twin's test is on the whole batch, so a converged matrix keeps sweeping while
 *   another has not);
 * - the eigenvalues sorted descending by the twin's stable argsort of their negatives (an insertion sort for three,
 *   NaN last);
 * - det by Sarrus in the twin's grouping; F V summed over c from 0; S_2 = u_2 . (F v_2) summed over d from 0.
 */
#include <math.h>

#include "softsim_native.h"

#define MAX_SWEEPS 6
#define OFF_DIAGONAL_TOLERANCE 1e-15

/* numpy's DOUBLE_LT: a < b, NaN sorting after every number. */
static int sorts_before(double a, double b)
{
    return a < b || (b != b && a == a);
}

/* Entry (i, j) of matrix k in a (3, 3, m) structure-of-arrays block. */
#define AT(block, i, j, k, m) ((block)[((3 * (i) + (j)) * (m)) + (k)])

/* One Jacobi rotation in the (p, q) plane of every matrix: a holds the symmetric matrices' upper triangles as (3, 3,
 * m) (the lower triangle is not read), V the eigenvector estimates (3, 3, m). */
static void rotate_pair(int64_t m, double *a, double *V, int p, int q)
{
    const int r = 3 - p - q;
    const int rp_i = r < p ? r : p, rp_j = r < p ? p : r;
    const int rq_i = r < q ? r : q, rq_j = r < q ? q : r;
    for (int64_t k = 0; k < m; ++k) {
        const double apq = AT(a, p, q, k, m);
        /* Golub & Van Loan 8.5.2: t = s / c the smaller root of t^2 + 2 theta t - 1 = 0; theta^2 overflowing gives
         * t = 0, the right limit. Computed for every matrix and then chosen, as the twin's np.where does, so the loop
         * has no branch and vectorizes (apq = 0 divides by zero into a value that is not chosen). */
        const double theta = (AT(a, q, q, k, m) - AT(a, p, p, k, m)) / (2.0 * apq);
        const double sign = theta > 0.0 ? 1.0 : (theta < 0.0 ? -1.0 : theta);
        const double root = sign / (fabs(theta) + sqrt(theta * theta + 1.0));
        const double t = apq == 0.0 ? 0.0 : (theta == 0.0 ? 1.0 : root);
        const double c = 1.0 / sqrt(t * t + 1.0);
        const double s = t * c;
        AT(a, p, p, k, m) -= t * apq;
        AT(a, q, q, k, m) += t * apq;
        AT(a, p, q, k, m) = 0.0;
        const double rp = AT(a, rp_i, rp_j, k, m), rq = AT(a, rq_i, rq_j, k, m);
        AT(a, rp_i, rp_j, k, m) = c * rp - s * rq;
        AT(a, rq_i, rq_j, k, m) = s * rp + c * rq;
        for (int d = 0; d < 3; ++d) {
            const double vp = AT(V, d, p, k, m), vq = AT(V, d, q, k, m);
            AT(V, d, p, k, m) = c * vp - s * vq;
            AT(V, d, q, k, m) = s * vp + c * vq;
        }
    }
}

/* np.max's pairwise rule: NaN wins, else the larger. */
static double nan_max(double a, double b)
{
    return (a != a || a >= b) ? a : b;
}

/* Whether every matrix of a (3, 3, m) is diagonal to OFF_DIAGONAL_TOLERANCE (the twin's np.all test; NaN is not). */
static int all_converged(int64_t m, const double *a)
{
    for (int64_t k = 0; k < m; ++k) {
        const double scale = nan_max(nan_max(fabs(AT(a, 0, 0, k, m)), fabs(AT(a, 1, 1, k, m))), fabs(AT(a, 2, 2, k, m)));
        const double off = nan_max(nan_max(fabs(AT(a, 0, 1, k, m)), fabs(AT(a, 0, 2, k, m))), fabs(AT(a, 1, 2, k, m)));
        if (!(off <= OFF_DIAGONAL_TOLERANCE * scale))
            return 0;
    }
    return 1;
}

void softsim_rotation_svd(int64_t m, const double *F, double *U, double *S, double *V)
{
    /* U holds F^T F (upper triangle) while the eigenvectors converge in V; it is written with U last. */
    double *a = U;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            for (int64_t k = 0; k < m; ++k) {
                double sum = 0.0;
                for (int d = 0; d < 3; ++d)
                    sum += AT(F, d, i, k, m) * AT(F, d, j, k, m);
                AT(a, i, j, k, m) = sum;
                AT(V, i, j, k, m) = i == j ? 1.0 : 0.0;
            }
    for (int sweep = 0; sweep < MAX_SWEEPS; ++sweep) {
        rotate_pair(m, a, V, 0, 1);
        rotate_pair(m, a, V, 0, 2);
        rotate_pair(m, a, V, 1, 2);
        if (sweep >= 2 && all_converged(m, a))
            break;
    }
    for (int64_t k = 0; k < m; ++k) {
        double w[3] = {AT(a, 0, 0, k, m), AT(a, 1, 1, k, m), AT(a, 2, 2, k, m)};
        double key[3] = {-w[0], -w[1], -w[2]};
        int order[3] = {0, 1, 2};
        for (int i = 1; i < 3; ++i) { /* numpy's argsort of three: insertion sort, stable */
            const int moving = order[i];
            int j = i;
            while (j > 0 && sorts_before(key[moving], key[order[j - 1]])) {
                order[j] = order[j - 1];
                --j;
            }
            order[j] = moving;
        }
        double v[3][3], fv[3][3], u[3][3];
        for (int i = 0; i < 3; ++i)
            for (int c = 0; c < 3; ++c)
                v[i][c] = AT(V, i, order[c], k, m);
        const double det = v[0][0] * (v[1][1] * v[2][2] - v[1][2] * v[2][1])
                           - v[0][1] * (v[1][0] * v[2][2] - v[1][2] * v[2][0])
                           + v[0][2] * (v[1][0] * v[2][1] - v[1][1] * v[2][0]);
        const double flip = det < 0.0 ? -1.0 : 1.0;
        for (int i = 0; i < 3; ++i)
            v[i][2] *= flip;
        for (int d = 0; d < 3; ++d)
            for (int c = 0; c < 3; ++c) {
                double sum = 0.0;
                for (int e = 0; e < 3; ++e)
                    sum += AT(F, d, e, k, m) * v[e][c];
                fv[d][c] = sum;
            }
        double s[3];
        for (int c = 0; c < 3; ++c) {
            const double eigenvalue = w[order[c]];
            s[c] = sqrt(eigenvalue >= 0.0 || eigenvalue != eigenvalue ? eigenvalue : 0.0); /* np.maximum(w, 0) */
        }
        for (int c = 0; c < 2; ++c) {
            const double floor_s = s[c] >= 1e-300 || s[c] != s[c] ? s[c] : 1e-300;
            for (int d = 0; d < 3; ++d)
                u[d][c] = fv[d][c] / floor_s;
        }
        u[0][2] = u[1][0] * u[2][1] - u[2][0] * u[1][1];
        u[1][2] = u[2][0] * u[0][1] - u[0][0] * u[2][1];
        u[2][2] = u[0][0] * u[1][1] - u[1][0] * u[0][1];
        double s2 = 0.0;
        for (int d = 0; d < 3; ++d)
            s2 += u[d][2] * fv[d][2];
        s[2] = s2;
        for (int i = 0; i < 3; ++i) {
            S[i * m + k] = s[i];
            for (int j = 0; j < 3; ++j) {
                AT(U, i, j, k, m) = u[i][j];
                AT(V, i, j, k, m) = v[i][j];
            }
        }
    }
}

/* Projective Dynamics' per-tet targets (projective/constraints.py, TetStrain.project with project_unit_product and
 * inverse_cube_root), from the SVD above; the same operations in the same order, the whole batch iteration by
 * iteration as the twin's arrays are (its Newton loop stops when EVERY tet is converged). */

#define MIN_SINGULAR_VALUE 1e-3 /* constraints.MIN_SINGULAR_VALUE */
#define VOLUME_PROJECTION_ITERATIONS 8 /* constraints.VOLUME_PROJECTION_ITERATIONS */
#define CUBE_ROOT_ITERATIONS 8 /* constraints.CUBE_ROOT_ITERATIONS */

/* np.maximum / np.minimum of two doubles: NaN wins, else the larger (smaller), the first on a tie. */
static double maximum(double a, double b)
{
    return (a >= b || a != a) ? a : b;
}

static double minimum(double a, double b)
{
    return (a <= b || a != a) ? a : b;
}

/* branch(lam) of project_unit_product for tet k: root_i = sqrt(max(b_i^2 + 4 lam, 0)), s_i = (b_i + root_i) / 2,
 * and P = s0 s1 s2. b, root, s: (3, m). */
static double branch(int64_t m, int64_t k, const double *b, double lam, double *root, double *s)
{
    for (int i = 0; i < 3; ++i) {
        const double bi = b[i * m + k];
        root[i * m + k] = sqrt(maximum(bi * bi + 4.0 * lam, 0.0));
        s[i * m + k] = 0.5 * (bi + root[i * m + k]);
    }
    return s[k] * s[m + k] * s[2 * m + k];
}

/* inverse_cube_root: P^(-1/3) by Newton's method from 2^-(e // 3), P = f 2^e (non-finite P from 1). */
static double inverse_cube_root(double P)
{
    int exponent = 0;
    if (isfinite(P))
        frexp(P, &exponent);
    const int third = exponent >= 0 ? exponent / 3 : -((-exponent + 2) / 3); /* floor division, as // */
    double c = ldexp(1.0, -third);
    for (int it = 0; it < CUBE_ROOT_ITERATIONS; ++it) {
        const double c2 = c * c;
        c = (2.0 * P * (c2 * c) + 1.0) / (3.0 * P * c2);
    }
    return c;
}

/* F (3, 3, m) structure of arrays (F[d][c] of tet k at [(3 d + c) m + k], the twin's z.reshape(t, 3, 3).transpose(2, 1,
 * 0)); w_s, w_v (m,) the strain and volume weights. Writes U, V (3, 3, m) and S (3, m) (softsim_rotation_svd), s (3,
 * m) the closest singular values with s0 s1 s2 = 1 (scaled), q (3 m, 3) row-major: row 3 k + c, column d is
 * sum_a (U[d][a] coef_a) V[c][a], coef_a = w_s + w_v s_a (the twin's einsum "dat,at,cat->dct", transposed);
 * work: (11, m) scratch. */
void softsim_tet_targets(int64_t m, const double *F, const double *w_s, const double *w_v, double *U, double *S,
                         double *V, double *s, double *work, double *q)
{
    softsim_rotation_svd(m, F, U, S, V);
    double *b = work, *root = work + 3 * m, *lam = work + 6 * m, *low = work + 7 * m, *high = work + 8 * m;
    double *P = work + 9 * m, *g = work + 10 * m; /* P = s0 s1 s2 and g = P - 1 */
    for (int64_t k = 0; k < m; ++k) {
        for (int i = 0; i < 3; ++i)
            b[i * m + k] = maximum(S[i * m + k], MIN_SINGULAR_VALUE);
        lam[k] = 0.0;
        P[k] = branch(m, k, b, 0.0, root, s);
        g[k] = P[k] - 1.0;
        const double b0 = b[k], b1 = b[m + k], b2 = b[2 * m + k];
        const double edge = -0.25 * minimum(minimum(b0 * b0, b1 * b1), b2 * b2);
        low[k] = g[k] > 0.0 ? maximum(1.0 - maximum(maximum(b0, b1), b2), edge) : 0.0;
        high[k] = g[k] > 0.0 ? 0.0 : maximum(1.0 - minimum(minimum(b0, b1), b2), 0.0);
    }
    for (int it = 0; it < VOLUME_PROJECTION_ITERATIONS; ++it) {
        double largest = 0.0; /* np.abs(g).max(): NaN wins */
        for (int64_t k = 0; k < m; ++k)
            largest = maximum(fabs(g[k]), largest);
        if (m == 0 || largest < 1e-15)
            break;
        for (int64_t k = 0; k < m; ++k) {
            /* P (1 / max(s root, 1e-300)).sum(axis=0): row 0, plus row 1, plus row 2 */
            double sum = 1.0 / maximum(s[k] * root[k], 1e-300);
            sum += 1.0 / maximum(s[m + k] * root[m + k], 1e-300);
            sum += 1.0 / maximum(s[2 * m + k] * root[2 * m + k], 1e-300);
            const double slope = P[k] * sum;
            const double step = lam[k] - g[k] / slope;
            lam[k] = (step >= low[k] && step <= high[k]) ? step : 0.5 * (low[k] + high[k]);
            P[k] = branch(m, k, b, lam[k], root, s);
            g[k] = P[k] - 1.0;
            if (g[k] < 0.0)
                low[k] = lam[k];
            if (g[k] > 0.0)
                high[k] = lam[k];
        }
    }
    for (int64_t k = 0; k < m; ++k) {
        const double c = inverse_cube_root(P[k]);
        for (int i = 0; i < 3; ++i)
            s[i * m + k] *= c;
    }
    for (int64_t k = 0; k < m; ++k) {
        double coef[3];
        for (int a = 0; a < 3; ++a)
            coef[a] = w_s[k] + w_v[k] * s[a * m + k];
        for (int c = 0; c < 3; ++c)
            for (int d = 0; d < 3; ++d) {
                double sum = 0.0;
                for (int a = 0; a < 3; ++a)
                    sum += (AT(U, d, a, k, m) * coef[a]) * AT(V, c, a, k, m);
                q[3 * (3 * k + c) + d] = sum;
            }
    }
}
