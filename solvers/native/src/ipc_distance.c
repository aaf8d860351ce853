/* NEWTON's IPC distances and the PSD projection of its contact Hessians: the twins of
 * collision/narrow_phase/primitives.py ``point_triangle_distance_squared`` / ``edge_edge_distance_squared`` (the
 * IPC Toolkit's distance types, each type's closed-form squared distance with its exact gradient and Hessian over
 * the 12 coordinates of the pair's four points) and energies/base.py ``project_psd`` (eigenvalues clamped at 0).
 *
 * Distances: the type tests repeat the twin's arithmetic in its order (dot products summed (u0 v0 + u1 v1) + u2 v2,
 * its cross products, its comparisons and priorities), so the types agree and the squared distances with them; the
 * twin maps the gradient and Hessian of the difference vectors u = C x to the points' coordinates with BLAS matrix
 * products (grad_x = C^T grad_u, H_x = C^T H_u C), whose summation order is BLAS's: here the sums run over the rows
 * of C in order, and the results agree to round-off (tests/test_native_ipc.py states the tolerance).
 *
 * PSD projection: cyclic Jacobi rotations (Rutishauser's formulas) instead of LAPACK's eigh; the eigenvalues at or
 * above 0 are kept, the negative ones set to 0, and a matrix with none negative is returned symmetrized, as the twin
 * does. Agreement to round-off of the matrix's norm.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "softsim_native.h"

#define PARALLEL_THRESHOLD 2.5e-16 /* primitives.EDGE_EDGE_PARALLEL_THRESHOLD */
#define JACOBI_SWEEPS 50           /* a bound only: 12 x 12 matrices converge in well under 15 sweeps */

static inline double dot3(const double *u, const double *v)
{
    return (u[0] * v[0] + u[1] * v[1]) + u[2] * v[2];
}

static inline void cross3(const double *u, const double *v, double *out)
{
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
}

static inline void sub3(const double *a, const double *b, double *out)
{
    out[0] = a[0] - b[0];
    out[1] = a[1] - b[1];
    out[2] = a[2] - b[2];
}

/* point_triangle_distance_type: the feature of triangle (a, b, c) closest to p (POINT_TRIANGLE_TYPES' code). */
static int point_triangle_type(const double *p, const double *a, const double *b, const double *c)
{
    double ab[3], ac[3], normal[3];
    sub3(b, a, ab);
    sub3(c, a, ac);
    cross3(ab, ac, normal);
    const double *starts[3] = {a, b, c}, *ends[3] = {b, c, a};
    double along[3], out[3];
    for (int i = 0; i < 3; ++i) {
        double edge[3], rel[3], side[3];
        sub3(ends[i], starts[i], edge);
        sub3(p, starts[i], rel);
        cross3(edge, normal, side);
        double length2 = dot3(edge, edge);
        along[i] = dot3(edge, rel) / (length2 > 1e-300 ? length2 : 1e-300);
        out[i] = dot3(side, rel);
    }
    int type = 6;
    if (along[2] <= 0.0 && along[1] >= 1.0) type = 2;
    if (along[1] <= 0.0 && along[0] >= 1.0) type = 1;
    if (along[0] <= 0.0 && along[2] >= 1.0) type = 0;
    for (int code = 5; code >= 3; --code) { /* the first edge wins: written last */
        int i = code - 3;
        if (along[i] > 0.0 && along[i] < 1.0 && out[i] >= 0.0) type = code;
    }
    return type;
}

/* _edge_edge_parallel_type */
static int edge_edge_parallel_type(const double *ea0, const double *ea1, const double *eb0, const double *eb1)
{
    double ea[3], r0[3], r1[3];
    sub3(ea1, ea0, ea);
    sub3(eb0, ea0, r0);
    sub3(eb1, ea0, r1);
    double length2 = dot3(ea, ea);
    length2 = length2 > 1e-300 ? length2 : 1e-300;
    double alpha = dot3(r0, ea) / length2, beta = dot3(r1, ea) / length2;
    int beta_in = beta >= 0.0 && beta <= 1.0;
    int eac, ebc;
    if (alpha < 0.0) {
        eac = beta_in ? 2 : 0;
        ebc = beta <= alpha ? 0 : (beta <= 1.0 ? 1 : 2);
    } else if (alpha > 1.0) {
        eac = beta_in ? 2 : 1;
        ebc = beta >= alpha ? 0 : (beta >= 0.0 ? 1 : 2);
    } else {
        eac = 2;
        ebc = 0;
    }
    return ebc < 2 ? 2 * eac + ebc : 6 + eac;
}

/* edge_edge_distance_type: the features of edges A (ea0 ea1) and B (eb0 eb1) closest (EDGE_EDGE_TYPES' code). */
static int edge_edge_type(const double *ea0, const double *ea1, const double *eb0, const double *eb1)
{
    double u[3], v[3], w[3];
    sub3(ea1, ea0, u);
    sub3(eb1, eb0, v);
    sub3(ea0, eb0, w);
    double a = dot3(u, u), b = dot3(u, v), c = dot3(v, v), d = dot3(u, w), e = dot3(v, w);
    if (a == 0.0 && c == 0.0) return 0;
    if (a == 0.0) return 6;
    if (c == 0.0) return 4;
    double cr[3];
    cross3(u, v, cr);
    if (dot3(cr, cr) < PARALLEL_THRESHOLD * a * c) return edge_edge_parallel_type(ea0, ea1, eb0, eb1);
    double big_d = a * c - b * b;
    double s_num = b * e - c * d;
    int low = s_num <= 0.0, high = s_num >= big_d;
    double t_num = low ? e : (high ? e + b : a * e - b * d);
    double t_den = (low || high) ? c : big_d;
    int fallback = low ? 6 : (high ? 7 : 8);
    if (t_num <= 0.0) return -d <= 0.0 ? 0 : (-d >= a ? 2 : 4);
    if (t_num >= t_den) return b - d <= 0.0 ? 1 : (b - d >= a ? 3 : 5);
    return fallback;
}

/* The difference vectors of each type as rows of coefficients on the four points (primitives._PT_COEFFS,
 * _EE_COEFFS), and their row counts. */
static const signed char PT_COEFFS[7][3][4] = {
    {{1, -1, 0, 0}}, {{1, 0, -1, 0}}, {{1, 0, 0, -1}},
    {{1, -1, 0, 0}, {0, -1, 1, 0}}, {{1, 0, -1, 0}, {0, 0, -1, 1}}, {{1, 0, 0, -1}, {0, 1, 0, -1}},
    {{1, -1, 0, 0}, {0, -1, 1, 0}, {0, -1, 0, 1}},
};
static const int PT_ROWS[7] = {1, 1, 1, 2, 2, 2, 3};
static const signed char EE_COEFFS[9][3][4] = {
    {{1, 0, -1, 0}}, {{1, 0, 0, -1}}, {{0, 1, -1, 0}}, {{0, 1, 0, -1}},
    {{-1, 0, 1, 0}, {-1, 1, 0, 0}}, {{-1, 0, 0, 1}, {-1, 1, 0, 0}},
    {{1, 0, -1, 0}, {0, 0, -1, 1}}, {{0, 1, -1, 0}, {0, 0, -1, 1}},
    {{1, 0, -1, 0}, {-1, 1, 0, 0}, {0, 0, -1, 1}},
};
static const int EE_ROWS[9] = {1, 1, 1, 1, 2, 2, 2, 2, 3};

#define HU 9 /* leading dimension of the Hessians in u: up to three difference vectors */

/* _point_point_u: |r|^2, gradient g (3), Hessian h (3 x 3 of a HU-wide array) in r. */
static double point_point(const double *r, double *g, double *h)
{
    for (int i = 0; i < 3; ++i) {
        g[i] = 2.0 * r[i];
        for (int j = 0; j < 3; ++j)
            h[HU * i + j] = i == j ? 2.0 : 0.0;
    }
    return dot3(r, r);
}

/* _point_line_u: |r|^2 - (r.e)^2 / |e|^2, gradient (6) and Hessian (6 x 6) in (r, e). */
static double point_line(const double *r, const double *e, double *g, double *h)
{
    double s = dot3(r, e), q = dot3(e, e);
    double sq = s / q, sq2 = s * s / (q * q);
    double f = dot3(r, r) - s * sq;
    for (int i = 0; i < 3; ++i) {
        g[i] = 2.0 * r[i] - 2.0 * sq * e[i];
        g[3 + i] = -2.0 * sq * r[i] + 2.0 * sq2 * e[i];
    }
    double q2 = q * q, q3 = q2 * q, ss = s * s;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double eye = i == j ? 1.0 : 0.0;
            double ee = e[i] * e[j], er = e[i] * r[j], re = e[j] * r[i]; /* er and its transpose */
            h[HU * i + j] = 2.0 * eye - 2.0 * ee / q;
            double h_re = -2.0 * (er + s * eye) / q + 4.0 * s * ee / q2;
            h[HU * i + 3 + j] = h_re;
            h[HU * (3 + j) + i] = h_re;
            h[HU * (3 + i) + 3 + j] = -2.0 * (r[i] * r[j]) / q + 4.0 * s * (er + re) / q2 + 2.0 * ss * eye / q2 -
                                     8.0 * ss * ee / q3;
        }
    return f;
}

/* [v]x into the 3 x 3 block of h at (row, col) times sign. */
static void put_skew(double *h, int row, int col, const double *v, double sign)
{
    h[HU * (row + 0) + col + 1] += -sign * v[2];
    h[HU * (row + 0) + col + 2] += sign * v[1];
    h[HU * (row + 1) + col + 0] += sign * v[2];
    h[HU * (row + 1) + col + 2] += -sign * v[0];
    h[HU * (row + 2) + col + 0] += -sign * v[1];
    h[HU * (row + 2) + col + 1] += sign * v[0];
}

/* _point_plane_u: (r.(e1 x e2))^2 / |e1 x e2|^2, gradient (9) and Hessian (9 x 9) in (r, e1, e2). */
static double point_plane(const double *r, const double *e1, const double *e2, double *grad, double *hess)
{
    double n[3], dg[9], dh[9] = {0.0};
    cross3(e1, e2, n);
    double g = dot3(r, n), h = dot3(n, n);
    dg[0] = n[0];
    dg[1] = n[1];
    dg[2] = n[2];
    cross3(e2, r, dg + 3);
    cross3(r, e1, dg + 6);
    double t[3];
    cross3(e2, n, t);
    for (int i = 0; i < 3; ++i) dh[3 + i] = 2.0 * t[i];
    cross3(n, e1, t);
    for (int i = 0; i < 3; ++i) dh[6 + i] = 2.0 * t[i];
    /* ddg = [[0, -[e2], [e1]], [[e2], 0, -[r]], [-[e1], [r], 0]] and ddh = 2 Jn^T Jn + [[0, 0, 0], [0, 0, -2[n]],
     * [0, 2[n], 0]] with Jn = [0, -[e2], [e1]] */
    double ddg[HU * HU] = {0.0}, ddh[HU * HU] = {0.0}, jn[3 * HU] = {0.0};
    put_skew(ddg, 0, 3, e2, -1.0);
    put_skew(ddg, 0, 6, e1, 1.0);
    put_skew(ddg, 3, 0, e2, 1.0);
    put_skew(ddg, 3, 6, r, -1.0);
    put_skew(ddg, 6, 0, e1, -1.0);
    put_skew(ddg, 6, 3, r, 1.0);
    /* Jn as a 3 x 9 block (rows 0-2 of a HU-wide array) */
    double skew_e2[HU * 3] = {0.0}, skew_e1[HU * 3] = {0.0};
    put_skew(skew_e2, 0, 0, e2, 1.0);
    put_skew(skew_e1, 0, 0, e1, 1.0);
    for (int a = 0; a < 3; ++a)
        for (int j = 0; j < 3; ++j) {
            jn[HU * a + 3 + j] = -skew_e2[HU * a + j];
            jn[HU * a + 6 + j] = skew_e1[HU * a + j];
        }
    for (int i = 0; i < 9; ++i)
        for (int j = 0; j < 9; ++j) {
            double s = jn[i] * jn[j];
            s = s + jn[HU + i] * jn[HU + j];
            s = s + jn[2 * HU + i] * jn[2 * HU + j];
            ddh[HU * i + j] = 2.0 * s;
        }
    put_skew(ddh, 3, 6, n, -2.0);
    put_skew(ddh, 6, 3, n, 2.0);
    double f = g * g / h;
    double gh = g / h, gh2 = gh * gh;
    for (int i = 0; i < 9; ++i) grad[i] = 2.0 * g / h * dg[i] - gh2 * dh[i];
    double h2 = h * h, h3 = h2 * h;
    for (int i = 0; i < 9; ++i)
        for (int j = 0; j < 9; ++j)
            hess[HU * i + j] = 2.0 / h * (dg[i] * dg[j]) + 2.0 * g / h * ddg[HU * i + j] -
                              2.0 * g / h2 * (dg[i] * dh[j] + dh[i] * dg[j]) + 2.0 * (g * g) / h3 * (dh[i] * dh[j]) -
                              gh2 * ddh[HU * i + j];
    return f;
}

SOFTSIM_API int64_t softsim_ipc_distance2(int64_t kind, int64_t k, const double *x0, const double *x1,
                                          const double *x2, const double *x3, int64_t *types, double *D, double *grad,
                                          double *hess)
{
    if (kind != 0 && kind != 1) return -1;
    for (int64_t i = 0; i < k; ++i) {
        const double *x[4] = {x0 + 3 * i, x1 + 3 * i, x2 + 3 * i, x3 + 3 * i};
        int type = kind == 0 ? point_triangle_type(x[0], x[1], x[2], x[3]) : edge_edge_type(x[0], x[1], x[2], x[3]);
        const signed char(*coeffs)[4] = kind == 0 ? PT_COEFFS[type] : EE_COEFFS[type];
        int rows = kind == 0 ? PT_ROWS[type] : EE_ROWS[type];
        double u[3][3];
        for (int m = 0; m < rows; ++m)
            for (int a = 0; a < 3; ++a) {
                double s = 0.0;
                for (int p = 0; p < 4; ++p)
                    if (coeffs[m][p]) s += coeffs[m][p] * x[p][a];
                u[m][a] = s;
            }
        double g_u[HU], h_u[HU * HU];
        double f = rows == 1 ? point_point(u[0], g_u, h_u)
                             : rows == 2 ? point_line(u[0], u[1], g_u, h_u) : point_plane(u[0], u[1], u[2], g_u, h_u);
        types[i] = type;
        D[i] = f;
        double *g = grad + 12 * i, *h = hess + 144 * i;
        for (int p = 0; p < 4; ++p)
            for (int a = 0; a < 3; ++a) {
                double s = 0.0;
                for (int m = 0; m < rows; ++m)
                    if (coeffs[m][p]) s += coeffs[m][p] * g_u[3 * m + a];
                g[3 * p + a] = s;
            }
        for (int p = 0; p < 4; ++p)
            for (int a = 0; a < 3; ++a)
                for (int q = 0; q < 4; ++q)
                    for (int b = 0; b < 3; ++b) {
                        double s = 0.0;
                        for (int m = 0; m < rows; ++m) {
                            if (!coeffs[m][p]) continue;
                            for (int l = 0; l < rows; ++l)
                                if (coeffs[l][q]) s += coeffs[m][p] * coeffs[l][q] * h_u[HU * (3 * m + a) + 3 * l + b];
                        }
                        h[12 * (3 * p + a) + 3 * q + b] = s;
                    }
    }
    return 0;
}

/* sqrt(a^2 + b^2) without overflow or destructive underflow. */
static double pythag(double a, double b)
{
    double x = fabs(a), y = fabs(b);
    if (x > y) return x * sqrt(1.0 + (y / x) * (y / x));
    return y == 0.0 ? 0.0 : y * sqrt(1.0 + (x / y) * (x / y));
}

/* Householder reduction of the symmetric n x n matrix z (row major, overwritten by the orthogonal transform) to
 * tridiagonal form: diagonal d (n), subdiagonal e (n, e[0] = 0) (Numerical Recipes' tred2, with eigenvectors). */
static void tridiagonalize(int n, double *z, double *d, double *e)
{
    for (int i = n - 1; i > 0; --i) {
        int l = i - 1;
        double h = 0.0, scale = 0.0;
        if (l > 0) {
            for (int k = 0; k < i; ++k) scale += fabs(z[n * i + k]);
            if (scale == 0.0)
                e[i] = z[n * i + l];
            else {
                for (int k = 0; k < i; ++k) {
                    z[n * i + k] /= scale;
                    h += z[n * i + k] * z[n * i + k];
                }
                double f = z[n * i + l];
                double g = f >= 0.0 ? -sqrt(h) : sqrt(h);
                e[i] = scale * g;
                h -= f * g;
                z[n * i + l] = f - g;
                f = 0.0;
                for (int j = 0; j < i; ++j) {
                    z[n * j + i] = z[n * i + j] / h;
                    g = 0.0;
                    for (int k = 0; k < j + 1; ++k) g += z[n * j + k] * z[n * i + k];
                    for (int k = j + 1; k < i; ++k) g += z[n * k + j] * z[n * i + k];
                    e[j] = g / h;
                    f += e[j] * z[n * i + j];
                }
                double hh = f / (h + h);
                for (int j = 0; j < i; ++j) {
                    f = z[n * i + j];
                    e[j] = g = e[j] - hh * f;
                    for (int k = 0; k < j + 1; ++k) z[n * j + k] -= f * e[k] + g * z[n * i + k];
                }
            }
        } else
            e[i] = z[n * i + l];
        d[i] = h;
    }
    d[0] = 0.0;
    e[0] = 0.0;
    for (int i = 0; i < n; ++i) {
        if (d[i] != 0.0) {
            for (int j = 0; j < i; ++j) {
                double g = 0.0;
                for (int k = 0; k < i; ++k) g += z[n * i + k] * z[n * k + j];
                for (int k = 0; k < i; ++k) z[n * k + j] -= g * z[n * k + i];
            }
        }
        d[i] = z[n * i + i];
        z[n * i + i] = 1.0;
        for (int j = 0; j < i; ++j) z[n * j + i] = z[n * i + j] = 0.0;
    }
}

/* The eigenvalues d (n) and eigenvectors (the columns of z) of the tridiagonal matrix d, e that tridiagonalize left,
 * z its transform, by the QL algorithm with implicit shifts (Numerical Recipes' tqli); 0, or -1 when an eigenvalue
 * takes more than QL_ITERATIONS iterations (the caller then uses Jacobi rotations). */
#define QL_ITERATIONS 60
static int tridiagonal_ql(int n, double *d, double *e, double *z)
{
    for (int i = 1; i < n; ++i) e[i - 1] = e[i];
    e[n - 1] = 0.0;
    for (int l = 0; l < n; ++l) {
        int iterations = 0, m;
        do {
            for (m = l; m < n - 1; ++m) {
                double dd = fabs(d[m]) + fabs(d[m + 1]);
                if (fabs(e[m]) <= DBL_EPSILON * dd) break;
            }
            if (m != l) {
                if (iterations++ == QL_ITERATIONS) return -1;
                double g = (d[l + 1] - d[l]) / (2.0 * e[l]);
                double r = pythag(g, 1.0);
                g = d[m] - d[l] + e[l] / (g + (g >= 0.0 ? fabs(r) : -fabs(r)));
                double s = 1.0, c = 1.0, p = 0.0;
                int i;
                for (i = m - 1; i >= l; --i) {
                    double f = s * e[i], b = c * e[i];
                    e[i + 1] = (r = pythag(f, g));
                    if (r == 0.0) {
                        d[i + 1] -= p;
                        e[m] = 0.0;
                        break;
                    }
                    s = f / r;
                    c = g / r;
                    g = d[i + 1] - p;
                    r = (d[i] - g) * s + 2.0 * c * b;
                    d[i + 1] = g + (p = s * r);
                    g = c * r - b;
                    for (int k = 0; k < n; ++k) {
                        f = z[n * k + i + 1];
                        z[n * k + i + 1] = s * z[n * k + i] + c * f;
                        z[n * k + i] = c * z[n * k + i] - s * f;
                    }
                }
                if (r == 0.0 && i >= l) continue;
                d[l] -= p;
                e[l] = g;
                e[m] = 0.0;
            }
        } while (m != l);
    }
    return 0;
}

/* The eigenvalues (w) and eigenvectors (columns of V, d x d) of the symmetric d x d matrix a (overwritten), by cyclic
 * Jacobi rotations until the off-diagonal part is below round-off of the matrix's norm. */
static void jacobi_eigen(int d, double *a, double *w, double *V)
{
    double norm2 = 0.0;
    for (int i = 0; i < d * d; ++i) norm2 += a[i] * a[i];
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) V[d * i + j] = i == j ? 1.0 : 0.0;
    for (int sweep = 0; sweep < JACOBI_SWEEPS; ++sweep) {
        double off2 = 0.0;
        for (int p = 0; p < d; ++p)
            for (int q = p + 1; q < d; ++q) off2 += a[d * p + q] * a[d * p + q];
        if (!(off2 > 1e-34 * norm2)) break; /* off-diagonal norm below 1e-17 of the matrix's */
        for (int p = 0; p < d; ++p)
            for (int q = p + 1; q < d; ++q) {
                double apq = a[d * p + q];
                if (apq == 0.0) continue;
                if (sweep > 3 && fabs(a[d * p + p]) + 100.0 * fabs(apq) == fabs(a[d * p + p]) &&
                    fabs(a[d * q + q]) + 100.0 * fabs(apq) == fabs(a[d * q + q])) {
                    a[d * p + q] = a[d * q + p] = 0.0; /* below round-off of both diagonal entries */
                    continue;
                }
                double theta = (a[d * q + q] - a[d * p + p]) / (2.0 * apq);
                double t = fabs(theta) > 1e150 ? 0.5 / theta /* theta^2 would overflow */
                                               : (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < d; ++k) { /* columns p, q */
                    double akp = a[d * k + p], akq = a[d * k + q];
                    a[d * k + p] = c * akp - s * akq;
                    a[d * k + q] = s * akp + c * akq;
                }
                for (int k = 0; k < d; ++k) { /* rows p, q */
                    double apk = a[d * p + k], aqk = a[d * q + k];
                    a[d * p + k] = c * apk - s * aqk;
                    a[d * q + k] = s * apk + c * aqk;
                }
                a[d * p + q] = a[d * q + p] = 0.0; /* what the rotation is for (round-off aside) */
                for (int k = 0; k < d; ++k) {
                    double vkp = V[d * k + p], vkq = V[d * k + q];
                    V[d * k + p] = c * vkp - s * vkq;
                    V[d * k + q] = s * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < d; ++i) w[i] = a[d * i + i];
}

SOFTSIM_API int64_t softsim_project_psd(int64_t k, int64_t d, double *H)
{
    if (d < 1 || d > 12) return -1;
    int n = (int)d;
    double a[144], V[144], w[12], e[12];
    for (int64_t m = 0; m < k; ++m) {
        double *h = H + (int64_t)n * n * m;
        for (int i = 0; i < n; ++i)
            for (int j = i; j < n; ++j) {
                double s = 0.5 * (h[n * i + j] + h[n * j + i]);
                h[n * i + j] = s;
                h[n * j + i] = s;
            }
        memcpy(V, h, sizeof(double) * n * n);
        tridiagonalize(n, V, w, e);
        if (tridiagonal_ql(n, w, e, V) < 0) { /* not converged (never seen): Jacobi rotations, slower and sure */
            memcpy(a, h, sizeof(double) * n * n);
            jacobi_eigen(n, a, w, V);
        }
        int negative = 0;
        for (int i = 0; i < n; ++i) negative |= w[i] < 0.0;
        if (!negative) continue;
        for (int i = 0; i < n; ++i) w[i] = w[i] > 0.0 ? w[i] : 0.0;
        for (int i = 0; i < n; ++i)
            for (int j = i; j < n; ++j) {
                double s = 0.0;
                for (int l = 0; l < n; ++l) s += V[n * i + l] * w[l] * V[n * j + l];
                h[n * i + j] = s;
                h[n * j + i] = s;
            }
    }
    return 0;
}
