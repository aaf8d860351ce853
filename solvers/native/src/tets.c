/* XPBD Neo-Hookean tet constraints (Macklin and Mueller 2021), the native twin of
 * solvers/constraints/tet_strain.py's TetStrainColourSweep (sweep and symmetric_sweep).
 *
 * Each tet's pair C_D = sqrt(Q), C_H = J - 1 is projected by the 2x2 solve of TetStrainConstraints.corrections,
 * colour after colour (Gauss-Seidel; no two tets of a colour share a particle, so the tets of a colour may run in any
 * order with the same result). The arithmetic repeats TetStrainColourSweep.sweep's project() operation for operation:
 * its einsums contract over a short axis while looping over the tets innermost, so each contraction is a sum from 0
 * in increasing index order (over (i, a) with i outer for the two-index ones), and every other step is one
 * elementwise NumPy operation; the comments below name the NumPy line each step repeats. x is (n, 3) row-major.
 * The Jacobi sweep (softsim_tet_strain_jacobi) is the twin of PositionBasedSolver._jacobi on a tet set (whose
 * TetStrainConstraints.corrections runs the same update per tet).
 * One exception: for a colour of a single tet the tet axis has length 1, einsum loops over a corner axis and sums in
 * another (unrolled) order, a few ulp apart; TetStrainConstraints.native_sweep leaves such sets to NumPy.
 */
#include <math.h>
#include <string.h>

#include "jacobi_scatter.h"
#include "softsim_native.h"

#define Q_ROUND_OFF 1e-14 /* tet_strain.Q_ROUND_OFF */

/* The update of one tet (corners tet[0..3] at x; d its shape derivatives (4, 3), we its corners' inverse masses (4,),
 * al its alphas (4,), lam its multipliers (2,)): the corrections dx[a][i] of its corners and dlam (dlambda_D,
 * dlambda_H), nothing changed in place. damping: gamma (0 for none), x_prev read only when damping > 0. */
static void tet_update(const double *x, const int64_t *tet, const double *d, const double *we, double kappa,
                       const double *al, const double *lam, double damping, const double *x_prev, double dx[4][3],
                       double dlam[2])
{
    const double *xa[4];
    for (int a = 0; a < 4; ++a)
        xa[a] = x + 3 * tet[a];
    /* F = einsum("iat,ajt->ijt", corners, D): F[i][j] = sum_a x_a[i] d_a[j] */
    double F[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double f = 0.0;
            for (int a = 0; a < 4; ++a)
                f += xa[a][i] * d[3 * a + j];
            F[3 * i + j] = f;
        }
    /* cof = T0 T1 - T2 T3 (_COFACTOR_INDEX): cof[i][j] = F[i+1][j+1] F[i+2][j+2] - F[i+2][j+1] F[i+1][j+2] */
    double cof[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            cof[3 * i + j] = F[3 * i1 + j1] * F[3 * i2 + j2] - F[3 * i2 + j1] * F[3 * i1 + j2];
        }
    /* J1 = einsum("it,it->t", F9[0::3], cof[0::3]) - 1 */
    double J1 = 0.0;
    for (int i = 0; i < 3; ++i)
        J1 += F[3 * i] * cof[3 * i];
    J1 -= 1.0;
    double kJ1 = kappa * J1;
    /* Q = einsum("kt,kt->t", F9, F9) - 3 - (2 - kJ1) J1 */
    double Q = 0.0;
    for (int k = 0; k < 9; ++k)
        Q += F[k] * F[k];
    Q -= 3.0;
    Q -= (2.0 - kJ1) * J1;
    /* inv_C_D = (Q > Q_ROUND_OFF) / sqrt(maximum(Q, Q_ROUND_OFF)) (NaN Q stays NaN, as np.maximum); C_D = Q inv_C_D */
    double root = sqrt(Q < Q_ROUND_OFF ? Q_ROUND_OFF : Q);
    double inv_C_D = (Q > Q_ROUND_OFF ? 1.0 : 0.0) / root;
    double C_D = Q * inv_C_D;
    /* M0 = cof (kJ1 - 1) + F (C_D dC_D/dF), M1 = cof */
    double M0[9];
    for (int k = 0; k < 9; ++k)
        M0[k] = cof[k] * (kJ1 - 1.0) + F[k];
    /* g = einsum("xijt,ajt->xiat", M, D); g[0] *= inv_C_D; wg = g w */
    double g[2][3][4], wg[2][3][4];
    for (int i = 0; i < 3; ++i)
        for (int a = 0; a < 4; ++a) {
            double g0 = 0.0, g1 = 0.0;
            for (int j = 0; j < 3; ++j) {
                g0 += M0[3 * i + j] * d[3 * a + j];
                g1 += cof[3 * i + j] * d[3 * a + j];
            }
            g0 *= inv_C_D;
            g[0][i][a] = g0;
            g[1][i][a] = g1;
            wg[0][i][a] = g0 * we[a];
            wg[1][i][a] = g1 * we[a];
        }
    /* s = einsum("xiat,yiat->xyt", wg, g): s_XY = sum_i sum_a wg_X g_Y */
    double s00 = 0.0, s01 = 0.0, s11 = 0.0;
    for (int i = 0; i < 3; ++i)
        for (int a = 0; a < 4; ++a) {
            s00 += wg[0][i][a] * g[0][i][a];
            s01 += wg[0][i][a] * g[1][i][a];
            s11 += wg[1][i][a] * g[1][i][a];
        }
    /* r = alpha[2:] lam + CJ */
    double r0 = al[2] * lam[0], r1 = al[3] * lam[1];
    r0 += C_D;
    r1 += J1;
    if (damping > 0.0) {
        /* s *= 1 + gamma; r += gamma einsum("xiat,iat->xt", g, corners - prev_corners) */
        double scale = 1.0 + damping;
        s00 *= scale;
        s01 *= scale;
        s11 *= scale;
        double v0 = 0.0, v1 = 0.0;
        for (int i = 0; i < 3; ++i)
            for (int a = 0; a < 4; ++a) {
                double moved = xa[a][i] - x_prev[3 * tet[a] + i];
                v0 += g[0][i][a] * moved;
                v1 += g[1][i][a] * moved;
            }
        r0 += damping * v0;
        r1 += damping * v1;
    }
    /* The Schur complement of the hydrostatic row (1 / (s_HH + inf) = 0 drops it) */
    double b = s01;
    double inv_d = 1.0 / (s11 + al[1]);
    double b_inv_d = b * inv_d;
    double schur = s00 + al[0];
    schur -= b * b_inv_d;
    double dlam_D = b_inv_d * r1;
    dlam_D -= r0;
    dlam_D /= schur;
    double dlam_H = b * dlam_D;
    dlam_H += r1;
    inv_d *= -1.0;
    dlam_H *= inv_d;
    /* dx = einsum("xiat,xt->iat", wg, dlam) */
    for (int a = 0; a < 4; ++a)
        for (int i = 0; i < 3; ++i) {
            double v = 0.0;
            v += wg[0][i][a] * dlam_D;
            v += wg[1][i][a] * dlam_H;
            dx[a][i] = v;
        }
    dlam[0] = dlam_D;
    dlam[1] = dlam_H;
}

/* Project tets first .. last - 1 (one colour) in place on x and lambda: corners += dx; lam += dlam. */
static void project_colour(double *x, int64_t first, int64_t last, const int64_t *tets, const double *D,
                           const double *w, const double *kappa, const double *alpha, double *lambda,
                           double damping, const double *x_prev)
{
    for (int64_t e = first; e < last; ++e) {
        const int64_t *tet = tets + 4 * e;
        double dx[4][3], dlam[2];
        tet_update(x, tet, D + 12 * e, w + 4 * e, kappa[e], alpha + 4 * e, lambda + 2 * e, damping, x_prev, dx, dlam);
        for (int a = 0; a < 4; ++a)
            for (int i = 0; i < 3; ++i)
                x[3 * tet[a] + i] += dx[a][i];
        lambda[2 * e] += dlam[0];
        lambda[2 * e + 1] += dlam[1];
    }
}

/* tets (m, 4), D (m, 4, 3), w (m, 4), kappa (m,), alpha (m, 4), lambda (m, 2), all in colour order: colour c holds
 * tets colour_start[c] .. colour_start[c + 1] - 1. alpha per tet: (alpha_D, alpha_H, alpha_D, alpha_H where finite
 * else 0), from the binding's NumPy (TetStrainColourSweep._alphas). damping: gamma = tau / dt, 0 for none; x_prev
 * (n, 3) the step's start positions, read only when damping > 0. reverse != 0 visits the colours last to first. */
void softsim_tet_strain_sweep(double *x, int64_t colour_count, const int64_t *colour_start, const int64_t *tets,
                              const double *D, const double *w, const double *kappa, const double *alpha,
                              double *lambda, double damping, const double *x_prev, int64_t reverse)
{
    for (int64_t k = 0; k < colour_count; ++k) {
        int64_t c = reverse ? colour_count - 1 - k : k;
        project_colour(x, colour_start[c], colour_start[c + 1], tets, D, w, kappa, alpha, lambda, damping, x_prev);
    }
}

/* TetStrainColourSweep.symmetric_sweep: the mean of a forward and a backward sweep, both from x and lambda
 * (positions and multipliers): x_back (n, 3) and lambda_back (m, 2) are the binding's scratch, overwritten.
 * x = (x_forward + x_back) 0.5 and lambda likewise, as the twin's np.add(...); *= 0.5. */
void softsim_tet_strain_symmetric_sweep(double *x, int64_t particle_count, int64_t colour_count,
                                        const int64_t *colour_start, const int64_t *tets, const double *D,
                                        const double *w, const double *kappa, const double *alpha, double *lambda,
                                        double damping, const double *x_prev, double *x_back, double *lambda_back)
{
    int64_t m = colour_start[colour_count];
    memcpy(x_back, x, (size_t)(3 * particle_count) * sizeof(double));
    memcpy(lambda_back, lambda, (size_t)(2 * m) * sizeof(double));
    softsim_tet_strain_sweep(x, colour_count, colour_start, tets, D, w, kappa, alpha, lambda, damping, x_prev, 0);
    softsim_tet_strain_sweep(x_back, colour_count, colour_start, tets, D, w, kappa, alpha, lambda_back, damping,
                             x_prev, 1);
    for (int64_t k = 0; k < 3 * particle_count; ++k) {
        x[k] += x_back[k];
        x[k] *= 0.5;
    }
    for (int64_t k = 0; k < 2 * m; ++k) {
        lambda[k] += lambda_back[k];
        lambda[k] *= 0.5;
    }
}

/* PositionBasedSolver._jacobi on a tet set (XPBD's Jacobi sweep, the tail of a Gauss-Seidel sweep): every
 * tet's update (tet_update) from the same x, dx and dlambda times scale (m,) = 1 / (relaxation + max constraint count);
 * lambda += dlambda; each particle's corrections then summed from 0 in increasing (tet, corner) order, the order of
 * its row of the twin's CSR scatter matrix (scatter_start (n + 1,), scatter_entry (4 m,) = 4 e + a, per particle in
 * that order), and added to x. tets (m, 4), D (m, 4, 3), w (m, 4), kappa (m,), alpha (m, 4) and lambda (m, 2) in the
 * set's own order; damping and x_prev as softsim_tet_strain_sweep; dx (4 m, 3) scratch. */
void softsim_tet_strain_jacobi(double *x, int64_t m, const int64_t *tets, const double *D, const double *w,
                               const double *kappa, const double *alpha, const double *scale, double *lambda,
                               double damping, const double *x_prev, int64_t particle_count,
                               const int64_t *scatter_start, const int64_t *scatter_entry, double *dx)
{
    for (int64_t e = 0; e < m; ++e) {
        double update[4][3], dlam[2];
        tet_update(x, tets + 4 * e, D + 12 * e, w + 4 * e, kappa[e], alpha + 4 * e, lambda + 2 * e, damping, x_prev,
                   update, dlam);
        for (int a = 0; a < 4; ++a)
            for (int i = 0; i < 3; ++i)
                dx[3 * (4 * e + a) + i] = update[a][i] * scale[e];
        lambda[2 * e] += dlam[0] * scale[e];
        lambda[2 * e + 1] += dlam[1] * scale[e];
    }
    jacobi_scatter(x, particle_count, scatter_start, scatter_entry, dx);
}
