/* One call for what cloth self-collision runs between its kernels on every solver step: the twins of the candidate
 * selection of solvers/collision/broad_phase/self_broad_phase.py (SelfBroadPhase._candidates: the step's motion and
 * the motion since the list's build relative to the mean, whether the list holds, its near filter and box test) and
 * of the preamble of solvers/collision/response/self_contact.py (SelfCollision._respond: the candidates' stencils at
 * x, the kept pairs, their stencils at x_prev, side and targets).
 *
 * The operations are the twins' in the twins' order, so the results are theirs bit for bit on x86-64:
 * - x.mean(axis=0) of a C-contiguous (n, 3) array adds its rows one after another from 0.0 and divides by n;
 * - einsum("ij,ij->i") of three columns sums (x x + z z) + y y (self_geometry.h dot3);
 * - the filter and the stencils are those of self_response.c (softsim_self_list_check, softsim_self_stencils);
 * - the Verlet list is kept sorted by pair key (SelfBroadPhase._build, _add_grown), so the kept pairs in list order
 *   are the candidates in the order of the twin's key sort.
 * Inputs are validated by the bindings (self_kernels.SelfSelect, SelfPass.setup); nothing here allocates.
 */
#include <math.h>

#include "self_geometry.h"
#include "softsim_native.h"

static inline double np_min(double a, double b) { return (a < b || a != a) ? a : b; }
static inline double np_max(double a, double b) { return (a > b || a != a) ? a : b; }

static inline double triangle_max(const double *values, const int64_t *c) {
    return np_max(np_max(values[c[0]], values[c[1]]), values[c[2]]);
}

static inline double edge_max(const double *values, const int64_t *c) { return np_max(values[c[0]], values[c[1]]); }

/* Per particle |(a - b) - mean(a - b)| (n,) (a, b (n, 3)): SelfBroadPhase._moved and the step's motion of
 * _candidates. */
static void relative_motion(const double *a, const double *b, int64_t n, double *out) {
    double mean[3] = {0.0, 0.0, 0.0};
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) mean[d] = mean[d] + (a[3 * i + d] - b[3 * i + d]);
    for (int d = 0; d < 3; d++) mean[d] = mean[d] / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double step[3];
        for (int d = 0; d < 3; d++) step[d] = (a[3 * i + d] - b[3 * i + d]) - mean[d];
        out[i] = sqrt(dot3(step, step));
    }
}

static inline int boxes_close(const double *la, const double *ha, const double *lb, const double *hb, double r) {
    for (int axis = 0; axis < 3; axis++)
        if (!(la[axis] <= hb[axis] + r && lb[axis] <= ha[axis] + r)) return 0;
    return 1;
}

static inline void corner_box(const double *x, const int64_t *c, int corners, double *lo, double *hi) {
    for (int axis = 0; axis < 3; axis++) {
        double a = x[3 * c[0] + axis], b = a;
        for (int j = 1; j < corners; j++) {
            a = np_min(a, x[3 * c[j] + axis]);
            b = np_max(b, x[3 * c[j] + axis]);
        }
        lo[axis] = a;
        hi[axis] = b;
    }
}

/* The candidate selection of SelfBroadPhase._candidates over a Verlet list (k vertex-triangle pairs list_v, list_t,
 * m edge-edge pairs list_a, list_b, their distances at the build dist (k + m,), the build's positions x0 (n, 3) and
 * skins skin_v (n,), skin_t (t_count,), skin_e (e_count,)).
 * what & SELF_SELECT_MOTION: motion (n,) = |step - mean step| of the step x_prev -> x and moved (n,) = the same of
 *   x0 -> x are written, and when the list does not hold (SelfBroadPhase._list_holds) -1 is returned (the caller
 *   grows or rebuilds it); else motion and moved are read as given.
 * what & SELF_SELECT_PAIRS: the listed pairs near enough (softsim_self_list_check's filter) are written in list order:
 *   out_v, out_t (the vertex-triangle ones, *out_split of them), out_a, out_b (the edge-edge ones) and their reaches
 *   out_reach (vertex-triangle ones first), each up to k + m long; returns their count (else 0).
 * scratch: (2 t_count + 2 e_count,) the caller's. */
int64_t softsim_self_select(const double *x, const double *x_prev, const double *x0, int64_t n,
                            const int64_t *triangles, int64_t t_count, const int64_t *edges, int64_t e_count,
                            int64_t k, const int64_t *list_v, const int64_t *list_t, int64_t m,
                            const int64_t *list_a, const int64_t *list_b, const double *dist, const double *skin_v,
                            const double *skin_t, const double *skin_e, double thickness, int64_t what,
                            double *motion, double *moved, int64_t *out_v, int64_t *out_t, int64_t *out_a,
                            int64_t *out_b, double *out_reach, int64_t *out_split, double *scratch) {
    if (what & SELF_SELECT_MOTION) {
        relative_motion(x, x_prev, n, motion);
        relative_motion(x, x0, n, moved);
        if (!softsim_self_list_holds(moved, motion, n, triangles, t_count, edges, e_count, skin_v, skin_t, skin_e))
            return -1;
    }
    *out_split = 0;
    if (!(what & SELF_SELECT_PAIRS)) return 0;
    double *motion_t = scratch, *both_t = scratch + t_count;
    double *motion_e = scratch + 2 * t_count, *both_e = scratch + 2 * t_count + e_count;
    for (int64_t i = 0; k && i < t_count; i++) {
        const int64_t *c = triangles + 3 * i;
        motion_t[i] = triangle_max(motion, c);
        both_t[i] = motion_t[i] + triangle_max(moved, c);
    }
    for (int64_t i = 0; m && i < e_count; i++) {
        const int64_t *c = edges + 2 * i;
        motion_e[i] = edge_max(motion, c);
        both_e[i] = motion_e[i] + edge_max(moved, c);
    }
    int64_t count = 0;
    double lo_a[3], hi_a[3], lo_b[3], hi_b[3];
    for (int64_t i = 0; i < k; i++) {
        int64_t v = list_v[i], t = list_t[i];
        double motion_v = motion[v];
        double both_v = motion_v + moved[v];
        if (!(dist[i] - thickness <= both_v + both_t[t])) continue;
        double reach = thickness + (motion_v + motion_t[t]);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        corner_box(x, triangles + 3 * t, 3, lo_b, hi_b);
        if (!boxes_close(x + 3 * v, x + 3 * v, lo_b, hi_b, r)) continue;
        out_v[count] = v;
        out_t[count] = t;
        out_reach[count++] = reach;
    }
    *out_split = count;
    int64_t ee = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t a = list_a[i], b = list_b[i];
        if (!(dist[k + i] - thickness <= both_e[a] + both_e[b])) continue;
        double reach = thickness + (motion_e[a] + motion_e[b]);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        corner_box(x, edges + 2 * a, 2, lo_a, hi_a);
        corner_box(x, edges + 2 * b, 2, lo_b, hi_b);
        if (!boxes_close(lo_a, hi_a, lo_b, hi_b, r)) continue;
        out_a[ee] = a;
        out_b[ee++] = b;
        out_reach[count++] = reach;
    }
    return count;
}
