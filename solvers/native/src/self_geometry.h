/* The exact pair geometry of cloth self-collision, shared by the broad phase (self_collision.c) and the per-call
 * upkeep and response (self_response.c): primitives.closest_weights / point_triangle_closest /
 * closest_points_segments and self_pairs._vt_distance / _ee_distance, operation for operation. */
#ifndef SOFTSIM_SELF_GEOMETRY_H
#define SOFTSIM_SELF_GEOMETRY_H

#include <math.h>
#include <stdint.h>

#include "vec3.h"

/* NumPy's einsum("ij,ij->i") over rows of three sums (x x + z z) + y y; over contiguous (3, m) columns it sums in
 * order. The twin's dot products are of the first kind except in closest_weights' border branch on a batch that is
 * not all border (np.take copies the columns): closest_weights takes which of the two its batch is. */
static inline double dot3(const double *u, const double *v) { return u[0] * v[0] + u[2] * v[2] + u[1] * v[1]; }
static inline double dot3_in_order(const double *u, const double *v) { return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]; }

static inline double clip01(double t) {
    /* np.maximum(t, 0) then np.minimum(t, 1) (_unit_clip); np.clip(t, 0, 1) gives the same for finite t. */
    t = t > 0.0 ? t : (t == t ? 0.0 : t);
    return t < 1.0 ? t : (t == t ? 1.0 : t);
}

static inline double max_zero(double a, double b) { return a > b ? a : (a == a ? b : a); } /* np.maximum(a, b) */

/* The Gram system of p over (A, B, C) as primitives.closest_weights forms it: the edges from A, their dot products
 * with A->p and each other, the unscaled weights v, w of the foot of the perpendicular, and whether that foot is
 * taken (inside: within the triangle and the triangle not degenerate). */
typedef struct {
    double e1[3], e2[3], ap[3];
    double d1, d2, e11, e12, e22, denom, v, w;
    int inside;
} GramSystem;

static inline GramSystem gram_system(const double *p, const double *A, const double *B, const double *C) {
    GramSystem g;
    for (int i = 0; i < 3; i++) {
        g.e1[i] = B[i] - A[i];
        g.e2[i] = C[i] - A[i];
        g.ap[i] = p[i] - A[i];
    }
    g.d1 = dot3(g.e1, g.ap);
    g.d2 = dot3(g.e2, g.ap);
    g.e11 = dot3(g.e1, g.e1);
    g.e12 = dot3(g.e1, g.e2);
    g.e22 = dot3(g.e2, g.e2);
    g.denom = g.e11 * g.e22 - g.e12 * g.e12;
    g.v = g.e22 * g.d1 - g.e12 * g.d2;
    g.w = g.e11 * g.d2 - g.e12 * g.d1;
    g.inside = (g.v >= 0.0) & (g.w >= 0.0) & (g.v + g.w <= g.denom) & (g.denom > 1e-12 * g.e11 * g.e22);
    return g;
}

/* Whether primitives.closest_weights takes the foot of the perpendicular (the Gram system) for p over (A, B, C). */
static inline int closest_inside(const double *p, const double *A, const double *B, const double *C) {
    return gram_system(p, A, B, C).inside;
}

/* Whether the twin's closest_weights sums the dot products of its border branch as (0 + 2) + 1 (dot3) for a batch of
 * k vertex-triangle pairs of which `border` are not inside: when none is inside (it reads the columns in place: numpy's
 * einsum over (3, k) columns whose rows are adjacent) or exactly one is not (its one copied column, (3, 1), is read
 * the same way); else it reads them in order (dot3_in_order). */
static inline int border_rows_order(int64_t border, int64_t k) { return border == k || border == 1; }

/* Closest point of triangle (a, b, c) to p: barycentric weights (bary[0..2]); primitives.point_triangle_closest.
 * all_border: border_rows_order of the twin's batch (the border branch's dot products sum as (0 + 2) + 1); else they
 * sum in order. */
static inline void closest_weights(const double *p, const double *A, const double *B, const double *C, double *bary,
                                   int all_border) {
    GramSystem g = gram_system(p, A, B, C);
    const double *e1 = g.e1, *e2 = g.e2, *ap = g.ap;
    double d1 = g.d1, d2 = g.d2, e11 = g.e11, e22 = g.e22, denom = g.denom, v = g.v, w = g.w;
    if (g.inside) {
        double scale = 1.0 / denom;
        v *= scale;
        w *= scale;
    } else {
        double e3[3], bp[3];
        for (int i = 0; i < 3; i++) {
            e3[i] = e2[i] - e1[i];
            bp[i] = ap[i] - e1[i];
        }
        double (*dot)(const double *, const double *) = all_border ? dot3 : dot3_in_order;
        double o33 = dot(e3, e3), d3 = dot(e3, bp);
        double t_ab = clip01(d1 / max_zero(e11, 1e-300));
        double t_ac = clip01(d2 / max_zero(e22, 1e-300));
        double t_bc = clip01(d3 / max_zero(o33, 1e-300));
        double s_ab = t_ab * (t_ab * e11 - 2.0 * d1);
        double s_ac = t_ac * (t_ac * e22 - 2.0 * d2);
        double s_bc = dot(bp, bp) - dot(ap, ap) + t_bc * (t_bc * o33 - 2.0 * d3);
        int use_ac = s_ac < s_ab;
        double lower = s_ab < s_ac ? s_ab : s_ac; /* np.minimum(s_ab, s_ac) for finite values */
        int use_bc = s_bc < lower;
        v = use_bc ? 1.0 - t_bc : (use_ac ? 0.0 : t_ab);
        w = use_bc ? t_bc : (use_ac ? t_ac : 0.0);
    }
    double u = 1.0 - v - w;
    bary[0] = u > 0.0 ? u : 0.0;
    bary[1] = v;
    bary[2] = w;
}

/* self_pairs._vt_distance of one pair. */
static inline double vt_distance(const double *p, const double *a, const double *b, const double *c, int all_border) {
    double bary[3], r[3];
    closest_weights(p, a, b, c, bary, all_border);
    for (int i = 0; i < 3; i++) r[i] = p[i] - bary[0] * a[i] - bary[1] * b[i] - bary[2] * c[i];
    return sqrt(dot3(r, r));
}

/* primitives.closest_points_segments of one pair: s, t, and whether the segments are not parallel (ok). */
static inline int closest_segments(const double *p1, const double *q1, const double *p2, const double *q2, double *s_out,
                                   double *t_out) {
    double d1[3], d2[3], r[3];
    for (int i = 0; i < 3; i++) {
        d1[i] = q1[i] - p1[i];
        d2[i] = q2[i] - p2[i];
        r[i] = p1[i] - p2[i];
    }
    double a = max_zero(dot3(d1, d1), 1e-300), e = max_zero(dot3(d2, d2), 1e-300);
    double b = dot3(d1, d2), c = dot3(d1, r), f = dot3(d2, r);
    double denom = a * e - b * b;
    int ok = denom > 1e-12 * a * e;
    double s = ok ? clip01((b * f - c * e) / denom) : 0.0;
    double t = (b * s + f) / e;
    s = t < 0.0 ? clip01(-c / a) : (t > 1.0 ? clip01((b - c) / a) : s);
    t = clip01(t);
    *s_out = s;
    *t_out = t;
    return ok;
}

/* self_pairs._ee_distance of one pair. */
static inline double ee_distance(const double *p1, const double *q1, const double *p2, const double *q2) {
    double s, t, g[3];
    closest_segments(p1, q1, p2, q2, &s, &t);
    double d1[3], d2[3];
    for (int i = 0; i < 3; i++) {
        d1[i] = q1[i] - p1[i];
        d2[i] = q2[i] - p2[i];
    }
    for (int i = 0; i < 3; i++) g[i] = p1[i] + s * d1[i] - p2[i] - t * d2[i];
    return sqrt(dot3(g, g));
}

#endif
