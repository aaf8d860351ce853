/* Self-collision's sides read where a step really started: the twin of self_contact.SelfCollision._true_sides, bit
 * for bit. Pre-stabilization moves some particles of x_prev onto collider planes (ContactConstraints.stabilize) from
 * where the step started (true_start); a watched pair with a moved particle whose side at true_start (its plane
 * distance beyond 1e-12) differs from its side at x_prev keeps its true side, with approach target minus its distance
 * at x_prev and target `target_value`. The twin's stencils come in two batches (the pairs with a moved particle at
 * true_start, then the flipped ones at x_prev), each vertex-triangle batch reading its border dot products in its
 * batch's order (self_geometry.h), as here. */
#include <math.h>
#include <string.h>

#include "self_stencil.h"
#include "softsim_native.h"

/* The border order (border_rows_order) of the vertex-triangle pairs pick[0 .. count) at x. */
static int batch_order(const double *x, const int64_t *triangles, const int64_t *v, const int64_t *t,
                       const int64_t *pick, int64_t count)
{
    int64_t border = 0;
    for (int64_t i = 0; i < count; ++i) {
        const int64_t *c = triangles + 3 * t[pick[i]];
        border += !closest_inside(x + 3 * v[pick[i]], x + 3 * c[0], x + 3 * c[1], x + 3 * c[2]);
    }
    return border_rows_order(border, count);
}

/* The stencil of pair i (vertex-triangle below k_vt, else edge-edge) at x: its distance and plane distance, and ok. */
static void pair_stencil(const double *x, const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                         const int64_t *v, const int64_t *t, const int64_t *a, const int64_t *b, int64_t i,
                         int all_border, double *dist, double *plane, unsigned char *ok)
{
    int64_t idx[4];
    double coef[4], r[3], n[3];
    unsigned char interior;
    if (i < k_vt)
        stencil_vt(x, v[i], triangles + 3 * t[i], all_border, idx, coef, r, n, dist, plane, ok, &interior);
    else
        stencil_ee(x, edges + 2 * a[i - k_vt], edges + 2 * b[i - k_vt], idx, coef, r, n, dist, plane, ok, &interior);
}

SOFTSIM_API int64_t softsim_self_true_sides(const double *x_prev, const double *true_start, int64_t n,
                                            const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                            const int64_t *v, const int64_t *t, int64_t k_ee, const int64_t *a,
                                            const int64_t *b, double target_value, unsigned char *moved,
                                            int64_t *pick, double *side, double *approach_target, double *target)
{
    int any = 0;
    for (int64_t i = 0; i < 3 * n; ++i)
        if (x_prev[i] != true_start[i]) { /* NaN differs, as the twin's != */
            moved[i / 3] = 1;
            any = 1;
        }
    if (!any)
        return 0;
    /* the pairs with a moved particle, vertex-triangle ones first */
    int64_t picked = 0, picked_vt;
    for (int64_t i = 0; i < k_vt; ++i) {
        const int64_t *c = triangles + 3 * t[i];
        if (moved[v[i]] | moved[c[0]] | moved[c[1]] | moved[c[2]])
            pick[picked++] = i;
    }
    picked_vt = picked;
    for (int64_t j = 0; j < k_ee; ++j) {
        const int64_t *e = edges + 2 * a[j], *f = edges + 2 * b[j];
        if (moved[e[0]] | moved[e[1]] | moved[f[0]] | moved[f[1]])
            pick[picked++] = k_vt + j;
    }
    memset(moved, 0, (size_t)n);
    /* their sides at true_start; the flipped ones compacted to the front of pick (in order) */
    int order = batch_order(true_start, triangles, v, t, pick, picked_vt);
    int64_t flipped = 0, flipped_vt = 0;
    for (int64_t k = 0; k < picked; ++k) {
        int64_t i = pick[k];
        double dist, plane;
        unsigned char ok;
        pair_stencil(true_start, triangles, edges, k_vt, v, t, a, b, i, order, &dist, &plane, &ok);
        double true_side = ok && fabs(plane) > 1e-12 ? (plane > 0.0 ? 1.0 : -1.0) : side[i];
        if (true_side != side[i]) {
            pick[flipped++] = i;
            flipped_vt += i < k_vt;
        }
    }
    /* the flipped ones' distances at x_prev */
    order = batch_order(x_prev, triangles, v, t, pick, flipped_vt);
    for (int64_t k = 0; k < flipped; ++k) {
        int64_t i = pick[k];
        double dist, plane;
        unsigned char ok;
        pair_stencil(x_prev, triangles, edges, k_vt, v, t, a, b, i, order, &dist, &plane, &ok);
        side[i] = -side[i];
        approach_target[i] = -dist;
        target[i] = target_value;
    }
    return flipped;
}
