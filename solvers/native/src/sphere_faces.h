/* The sphere face push (faces.resolve_sphere_faces: _near, _Topology.longest_edge, _own_bound, _push_out), shared by
 * contact.c (ground planes and spheres) and mesh_frame.c (a sphere beside still mesh colliders in the whole-frame
 * call). Dot products in the twin's orders: faces.py's _dot3 and einsum over C-contiguous (3, m) columns add
 * (x + y) + z (dot_in_order); einsum("ij,ij->i") over rows, and over (3, m) columns laid out coordinate fastest (the
 * fancy-indexed gathers of _push_out), (x x + z z) + y y (dot_rows). Collider row c as contact.c documents. */
#ifndef SOFTSIM_SPHERE_FACES_H
#define SOFTSIM_SPHERE_FACES_H

#include <math.h>
#include <stdint.h>

#include "contact_common.h"

/* faces._reach2 of one triangle. */
static inline double reach2(const double *a, const double *b, const double *c)
{
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double w[3] = {c[0] - b[0], c[1] - b[1], c[2] - b[2]};
    double z[3] = {a[0] - c[0], a[1] - c[1], a[2] - c[2]};
    double ab = dot_rows(u, u), bc = dot_rows(w, w), ca = dot_rows(z, z);
    double longest = max2(max2(ab, bc), ca);
    if (!(2.0 * longest < ab + bc + ca))
        return 0.25 * longest;
    double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double f[3] = {u[1] * e2[2] - u[2] * e2[1], u[2] * e2[0] - u[0] * e2[2], u[0] * e2[1] - u[1] * e2[0]};
    double area4 = max2(4.0 * dot_rows(f, f), 1e-300);
    return min2(ab * bc * ca / area4, longest / 3.0);
}

/* _Topology.longest_edge: an upper bound on the longest edge, refitted from the edges when the bound has grown past
 * refit_growth (REFIT_GROWTH) times the last exact value. state[0] 1 once x0 holds the positions of the last refit, state[1]
 * that refit's longest edge. */
static inline double longest_edge(const double *x, int64_t n, int64_t edge_count, const int64_t *edges,
                                  double *state, double *x0, double refit_growth)
{
    if (state[0] != 0.0) {
        double bound = state[1] + 2.0 * sqrt(largest_motion2(x, x0, n, dot_in_order));
        if (bound <= refit_growth * state[1])
            return bound;
    }
    if (edge_count == 0)
        return 0.0;
    state[1] = sqrt(largest_edge2(x, edges, edge_count));
    for (int64_t k = 0; k < 3 * n; ++k)
        x0[k] = x[k];
    state[0] = 1.0;
    return state[1];
}

/* Work space of the face push, carved from the binding's buffers (softsim_contacts_finish documents the sizes). */
typedef struct {
    int64_t *active;   /* (t,) candidate triangles still in the passes */
    int64_t *vertices; /* (n,) the candidates' corners, ascending */
    int64_t *mark;     /* (n,) 0/1 */
    double *r2;        /* (n,) */
    double *dx;        /* (n, 3) per-vertex sums of a pass */
    double *count;     /* (n,) hit triangles per vertex in a pass */
    double *tri;       /* (t, 8) per active triangle in a pass: dist, hit, coeff (3), delta (3) */
} FaceWork;

/* faces.resolve_sphere_faces for one sphere row c: the triangles reaching within rho of the centre pushed out in up
 * to `passes` Jacobi passes; returns the first pass's hits (0 when the passes stopped at once). */
static inline int64_t sphere_faces(double *x, const double *x_prev, int64_t n, const double *inv_mass, int64_t t,
                                   const int64_t *triangles, int64_t edge_count, const int64_t *edges, double *state,
                                   double *x0, const double *c, int64_t passes, const double *settings, FaceWork *w)
{
    if (t == 0 || n == 0)
        return 0;
    const double *center = c + 3;
    double rho = c[6];
    double r2_min = 0.0;
    for (int64_t p = 0; p < n; ++p) {
        double rel[3] = {x[3 * p] - center[0], x[3 * p + 1] - center[1], x[3 * p + 2] - center[2]};
        w->r2[p] = dot_rows(rel, rel);
        if (w->r2[p] < r2_min || p == 0)
            r2_min = w->r2[p];
    }
    double length = longest_edge(x, n, edge_count, edges, state, x0, settings[3]);
    double limit = rho * rho + length * length / 3.0;
    if (r2_min >= limit)
        return 0;
    /* the cull (_near, _own_bound) and the pins' triangles left out, in triangle order */
    int64_t m = 0;
    for (int64_t j = 0; j < t; ++j) {
        const int64_t *tj = triangles + 3 * j;
        double ra = w->r2[tj[0]], rb = w->r2[tj[1]], rc = w->r2[tj[2]];
        if (!(ra < limit || rb < limit || rc < limit))
            continue;
        double low = min2(min2(ra, rb), rc);
        if (!(low - reach2(x + 3 * tj[0], x + 3 * tj[1], x + 3 * tj[2]) < rho * rho))
            continue;
        if (!(max2(max2(inv_mass[tj[0]], inv_mass[tj[1]]), inv_mass[tj[2]]) > 0.0))
            continue;
        w->active[m++] = j;
    }
    if (m == 0)
        return 0;
    for (int64_t i = 0; i < m; ++i)
        for (int k = 0; k < 3; ++k)
            w->mark[triangles[3 * w->active[i] + k]] = 1;
    int64_t V = 0;
    for (int64_t p = 0; p < n; ++p) {
        if (w->mark[p]) {
            w->vertices[V++] = p;
            w->mark[p] = 0;
        }
    }
    double friction = c[2];
    double drift[3] = {0.0, 0.0, 0.0};
    if (c[1] != 0.0) {
        drift[0] = c[12];
        drift[1] = c[13];
        drift[2] = c[14];
    }
    double tolerance = settings[0] * rho; /* FACE_TOLERANCE * rho */
    int64_t contacts = 0;
    for (int64_t pass = 0; pass < passes; ++pass) {
        int64_t hits = 0;
        double deepest = 0.0;
        /* primitives.closest_weights on the twin's gathers: X[:, corner] lays each corner's (3, m) out coordinate
         * fastest, so its einsum adds the Gram system's dot products as (x x + z z) + y y (dot_rows); the border
         * branch runs on np.take copies, (3, k) C-contiguous, added in order, unless no triangle of the pass is
         * inside, when it runs on the gathers themselves (dot_rows again). The pass runs with the border in order
         * first and again with dot_rows when no triangle was inside. */
        int all_outside = 0;
    again:
        hits = 0;
        deepest = 0.0;
        int any_inside = 0;
        for (int64_t i = 0; i < m; ++i) {
            const int64_t *tj = triangles + 3 * w->active[i];
            const double *A = x + 3 * tj[0], *B = x + 3 * tj[1], *C = x + 3 * tj[2];
            double *out = w->tri + 8 * i;
            /* the twin's u = 1 - v - w is not clamped here */
            double e1[3], e2[3], v, wt;
            int inside;
            closest_vw_inside(center, A, B, C, dot_rows, all_outside ? dot_rows : dot_in_order, e1, e2, &v, &wt,
                              &inside);
            any_inside |= inside;
            double b[3] = {1.0 - v - wt, v, wt};
            double q[3] = {A[0] + v * e1[0] + wt * e2[0], A[1] + v * e1[1] + wt * e2[1], A[2] + v * e1[2] + wt * e2[2]};
            double r[3] = {q[0] - center[0], q[1] - center[1], q[2] - center[2]};
            double dist = sqrt(dot_in_order(r, r));
            double weight[3] = {b[0] * inv_mass[tj[0]], b[1] * inv_mass[tj[1]], b[2] * inv_mass[tj[2]]};
            double norm = dot_in_order(b, weight);
            out[0] = dist;
            out[1] = 0.0;
            if (!(dist < rho && norm > 0.0))
                continue;
            out[1] = 1.0;
            ++hits;
            double depth = rho - dist;
            if (depth > deepest)
                deepest = depth;
            double normal[3];
            if (dist > 1e-12) {
                normal[0] = r[0] / dist;
                normal[1] = r[1] / dist;
                normal[2] = r[2] / dist;
            } else { /* a face through the very centre goes out along its own normal */
                double f[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                               e1[0] * e2[1] - e1[1] * e2[0]};
                double length_f = max2(sqrt(dot_in_order(f, f)), 1e-300);
                normal[0] = f[0] / length_f;
                normal[1] = f[1] / length_f;
                normal[2] = f[2] / length_f;
            }
            double delta[3] = {depth * normal[0], depth * normal[1], depth * normal[2]};
            if (friction > 0.0) {
                const double *P0 = x_prev + 3 * tj[0], *P1 = x_prev + 3 * tj[1], *P2 = x_prev + 3 * tj[2];
                double moved[3];
                for (int d = 0; d < 3; ++d) {
                    /* einsum("km,ikm->im") over the twin's strided gather adds the corners (0 + 1) + 2 */
                    double before = (b[0] * P0[d] + b[1] * P1[d]) + b[2] * P2[d];
                    moved[d] = q[d] + delta[d] - before - drift[d];
                }
                double along = dot_in_order(moved, normal);
                double tangential[3] = {moved[0] - along * normal[0], moved[1] - along * normal[1],
                                        moved[2] - along * normal[2]};
                double slide = sqrt(dot_in_order(tangential, tangential));
                double keep = min2(max2(1.0 - friction * depth / max2(slide, 1e-15), 0.0), 1.0);
                double cut = slide > 1e-15 ? 1.0 - keep : 0.0;
                delta[0] -= cut * tangential[0];
                delta[1] -= cut * tangential[1];
                delta[2] -= cut * tangential[2];
            }
            double inverse = 1.0 / norm;
            out[2] = weight[0] * inverse;
            out[3] = weight[1] * inverse;
            out[4] = weight[2] * inverse;
            out[5] = delta[0];
            out[6] = delta[1];
            out[7] = delta[2];
        }
        if (!any_inside && !all_outside && m > 0) {
            all_outside = 1;
            goto again;
        }
        if (hits == 0 || deepest < tolerance)
            break;
        if (pass == 0)
            contacts = hits;
        for (int64_t k = 0; k < V; ++k) {
            int64_t p = w->vertices[k];
            w->dx[3 * p] = w->dx[3 * p + 1] = w->dx[3 * p + 2] = 0.0;
            w->count[p] = 0.0;
        }
        /* np.bincount over the corners, corner 0 of every triangle first, then corner 1, then corner 2 */
        for (int k = 0; k < 3; ++k) {
            for (int64_t i = 0; i < m; ++i) {
                const double *out = w->tri + 8 * i;
                if (out[1] == 0.0)
                    continue; /* a miss adds zeros */
                int64_t p = triangles[3 * w->active[i] + k];
                double coeff = out[2 + k];
                if (coeff > 0.0)
                    w->count[p] += 1.0;
                w->dx[3 * p] += coeff * out[5];
                w->dx[3 * p + 1] += coeff * out[6];
                w->dx[3 * p + 2] += coeff * out[7];
            }
        }
        double step2_max = 0.0;
        for (int64_t k = 0; k < V; ++k) {
            int64_t p = w->vertices[k];
            double count = max2(w->count[p], 1.0);
            double step2 = 0.0;
            for (int d = 0; d < 3; ++d) {
                double dx = w->dx[3 * p + d] / count;
                x[3 * p + d] += dx;
                step2 += dx * dx;
            }
            if (step2 > step2_max)
                step2_max = step2;
        }
        if (pass + 1 < passes) {
            /* the triangles that can still reach within rho next pass, when that drops a quarter of them */
            double reach = rho + sqrt(step2_max);
            int64_t kept = 0;
            for (int64_t i = 0; i < m; ++i)
                kept += w->tri[8 * i] < reach;
            if (kept < 0.75 * (double)m) {
                int64_t j = 0;
                for (int64_t i = 0; i < m; ++i)
                    if (w->tri[8 * i] < reach)
                        w->active[j++] = w->active[i];
                m = j;
            }
        }
    }
    return contacts;
}

/* The FaceWork of the buffers work_i (t + 2 n,) int64, zeroed once, and work_d (8 t + 5 n,) (softsim_contacts_finish
 * documents them). */
static inline FaceWork face_work(int64_t *work_i, double *work_d, int64_t n, int64_t t)
{
    FaceWork w = {work_i, work_i + t, work_i + t + n, work_d, work_d + n, work_d + 4 * n, work_d + 5 * n};
    return w;
}

#endif
