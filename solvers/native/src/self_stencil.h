/* One contact stencil of cloth self-collision (self_pairs._Stencils, pair by pair): shared by the stencils of a batch
 * (self_response.c softsim_self_stencils) and the response's set-up (self_select.c softsim_self_pass_setup), so both
 * make the same numbers. */
#ifndef SOFTSIM_SELF_STENCIL_H
#define SOFTSIM_SELF_STENCIL_H

#include <stdint.h>

#include "self_geometry.h"

/* The rest of one stencil from its particles idx[0..3] and weights coef[0..3]: r = the sum of coef_j x_j (j in order,
 * as einsum("kj,kjd->kd") sums), the unit normal n of the raw normal `normal` (ok: its length above 1e-6 scale, where
 * scale = sqrt(|e1|^2 |e2|^2) of the two spanning vectors), the distance |r| and the plane distance r . n. */
static inline void stencil_tail(const double *x, const int64_t *idx, const double *coef, const double *normal,
                                const double *u, const double *w, double *r, double *n, double *dist, double *plane,
                                unsigned char *ok) {
    for (int d = 0; d < 3; d++) {
        double sum = coef[0] * x[3 * idx[0] + d];
        for (int j = 1; j < 4; j++) sum = sum + coef[j] * x[3 * idx[j] + d];
        r[d] = sum;
    }
    double length = sqrt(dot3(normal, normal));
    double scale = sqrt(dot3(u, u) * dot3(w, w));
    *ok = length > 1e-6 * scale;
    double divide = *ok ? length : 1.0;
    for (int d = 0; d < 3; d++) n[d] = normal[d] / divide;
    *dist = sqrt(dot3(r, r));
    *plane = dot3(r, n);
}

/* The stencil of vertex v and triangle corners c[0..2] at x (all_border: the batch's, see closest_weights). */
static inline void stencil_vt(const double *x, int64_t v, const int64_t *c, int all_border, int64_t *ix, double *cf,
                              double *r, double *n, double *dist, double *plane, unsigned char *ok,
                              unsigned char *interior) {
    const double *p = x + 3 * v, *a = x + 3 * c[0], *b = x + 3 * c[1], *cc = x + 3 * c[2];
    double bary[3], u[3], w[3], normal[3];
    closest_weights(p, a, b, cc, bary, all_border);
    for (int d = 0; d < 3; d++) {
        u[d] = b[d] - a[d];
        w[d] = cc[d] - a[d];
    }
    cross3(u, w, normal);
    ix[0] = v;
    ix[1] = c[0];
    ix[2] = c[1];
    ix[3] = c[2];
    cf[0] = 1.0;
    cf[1] = -bary[0];
    cf[2] = -bary[1];
    cf[3] = -bary[2];
    stencil_tail(x, ix, cf, normal, u, w, r, n, dist, plane, ok);
    *interior = (bary[1] > 0.0) & (bary[2] > 0.0) & (bary[1] + bary[2] < 1.0) & *ok;
}

/* The stencil of the edges A[0..1] and B[0..1] at x. */
static inline void stencil_ee(const double *x, const int64_t *A, const int64_t *B, int64_t *ix, double *cf, double *r,
                              double *n, double *dist, double *plane, unsigned char *ok, unsigned char *interior) {
    const double *p1 = x + 3 * A[0], *q1 = x + 3 * A[1], *p2 = x + 3 * B[0], *q2 = x + 3 * B[1];
    double s, t, u[3], w[3], normal[3];
    int parallel_ok = closest_segments(p1, q1, p2, q2, &s, &t);
    for (int d = 0; d < 3; d++) {
        u[d] = q1[d] - p1[d];
        w[d] = q2[d] - p2[d];
    }
    cross3(u, w, normal);
    ix[0] = A[0];
    ix[1] = A[1];
    ix[2] = B[0];
    ix[3] = B[1];
    cf[0] = 1.0 - s;
    cf[1] = s;
    cf[2] = t - 1.0;
    cf[3] = -t;
    stencil_tail(x, ix, cf, normal, u, w, r, n, dist, plane, ok);
    *interior = parallel_ok & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0) & *ok;
}

#endif
