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
#include "self_stencil.h"
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
    }
    *out_split = 0;
    /* Each element's largest motion, and that plus its largest moved: the filter's bounds, and (the same sums, as
     * addition commutes bit for bit) softsim_self_list_holds' test of the element against its skin. */
    double *motion_t = scratch, *both_t = scratch + t_count;
    double *motion_e = scratch + 2 * t_count, *both_e = scratch + 2 * t_count + e_count;
    for (int64_t i = 0; i < t_count; i++) {
        const int64_t *c = triangles + 3 * i;
        motion_t[i] = triangle_max(motion, c);
        both_t[i] = motion_t[i] + triangle_max(moved, c);
    }
    for (int64_t i = 0; i < e_count; i++) {
        const int64_t *c = edges + 2 * i;
        motion_e[i] = edge_max(motion, c);
        both_e[i] = motion_e[i] + edge_max(moved, c);
    }
    if (what & SELF_SELECT_MOTION) {
        for (int64_t i = 0; i < n; i++)
            if (moved[i] + motion[i] > skin_v[i]) return -1;
        for (int64_t i = 0; i < t_count; i++)
            if (both_t[i] > skin_t[i]) return -1;
        for (int64_t i = 0; i < e_count; i++)
            if (both_e[i] > skin_e[i]) return -1;
    }
    if (!(what & SELF_SELECT_PAIRS)) return 0;
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

/* The preamble of SelfCollision._respond and SelfPass.begin in one call, over the candidates (k_vt vertex-triangle
 * pairs cand_v, cand_t, then k_ee edge-edge pairs cand_a, cand_b, their reaches reach (k_vt + k_ee,)):
 * - the stencils at x of the candidates (one batch, as the twin makes them);
 * - kept: the pairs within reach (dist <= reach) with a particle that moves (the largest inverse mass over the
 *   stencil's particles > 0), compacted in order: their elements to list_v, list_t (*kept_vt of them) and list_a,
 *   list_b, their stencils at x to idx .. interior (the first pass's, SelfPass);
 * - the kept pairs' stencils at x_prev (one batch): side (the sign of the plane distance at x_prev where there is a
 *   normal and it is beyond 1e-12, else that of the plane distance at x, + for 0), approach_target = min(thickness,
 *   dist at x_prev) and target = min(thickness, dist at x_prev + recovery) (recovery = RECOVERY * thickness);
 * - depth = 0, ever = 0 (SelfPass.begin).
 * Returns c, the kept pairs' count. Every output buffer holds k_vt + k_ee pairs (list_v, list_t, list_a, list_b
 * and side .. ever each that many, the stencils that many rows). */
int64_t softsim_self_pass_setup(const double *x, const double *x_prev, const double *inv_mass,
                                const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                const int64_t *cand_v, const int64_t *cand_t, int64_t k_ee, const int64_t *cand_a,
                                const int64_t *cand_b, const double *reach, double thickness, double recovery,
                                int64_t *list_v, int64_t *list_t, int64_t *list_a, int64_t *list_b, int64_t *kept_vt,
                                int64_t *idx, double *coef, double *r, double *n, double *dist, double *plane,
                                unsigned char *ok, unsigned char *interior, double *side, double *target,
                                double *approach_target, double *depth, unsigned char *ever) {
    int64_t border = 0;
    for (int64_t i = 0; i < k_vt; i++) {
        const int64_t *c = triangles + 3 * cand_t[i];
        border += !closest_inside(x + 3 * cand_v[i], x + 3 * c[0], x + 3 * c[1], x + 3 * c[2]);
    }
    int all_border = border_rows_order(border, k_vt);
    /* The stencil of candidate i goes to slot `count`; it stays there when kept (count <= i: in place). */
    int64_t count = 0, kept = 0;
    for (int64_t i = 0; i < k_vt + k_ee; i++) {
        int64_t s = count;
        if (i < k_vt)
            stencil_vt(x, cand_v[i], triangles + 3 * cand_t[i], all_border, idx + 4 * s, coef + 4 * s, r + 3 * s,
                       n + 3 * s, dist + s, plane + s, ok + s, interior + s);
        else
            stencil_ee(x, edges + 2 * cand_a[i - k_vt], edges + 2 * cand_b[i - k_vt], idx + 4 * s, coef + 4 * s,
                       r + 3 * s, n + 3 * s, dist + s, plane + s, ok + s, interior + s);
        const int64_t *ix = idx + 4 * s;
        double heaviest = np_max(np_max(np_max(inv_mass[ix[0]], inv_mass[ix[1]]), inv_mass[ix[2]]), inv_mass[ix[3]]);
        if (!(dist[s] <= reach[i] && heaviest > 0.0)) continue;
        if (i < k_vt) {
            list_v[count] = cand_v[i];
            list_t[count] = cand_t[i];
            kept = count + 1;
        } else {
            list_a[count - kept] = cand_a[i - k_vt];
            list_b[count - kept] = cand_b[i - k_vt];
        }
        count++;
    }
    *kept_vt = kept;
    /* The kept pairs' stencils at x_prev: one batch of the kept vertex-triangle pairs, then the edge-edge ones. */
    int border_prev = 1;
    for (int64_t i = 0; i < kept && border_prev; i++) {
        const int64_t *c = triangles + 3 * list_t[i];
        if (closest_inside(x_prev + 3 * list_v[i], x_prev + 3 * c[0], x_prev + 3 * c[1], x_prev + 3 * c[2]))
            border_prev = 0;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t ix[4];
        double cf[4], r_prev[3], n_prev[3], dist_prev, plane_prev;
        unsigned char ok_prev, interior_prev;
        if (i < kept)
            stencil_vt(x_prev, list_v[i], triangles + 3 * list_t[i], border_prev, ix, cf, r_prev, n_prev, &dist_prev,
                       &plane_prev, &ok_prev, &interior_prev);
        else
            stencil_ee(x_prev, edges + 2 * list_a[i - kept], edges + 2 * list_b[i - kept], ix, cf, r_prev, n_prev,
                       &dist_prev, &plane_prev, &ok_prev, &interior_prev);
        /* np.where(ok & (|plane| > 1e-12), np.sign(plane), np.where(plane_now < 0, -1, 1)) */
        if (ok_prev && fabs(plane_prev) > 1e-12)
            side[i] = plane_prev > 0.0 ? 1.0 : -1.0;
        else
            side[i] = plane[i] < 0.0 ? -1.0 : 1.0;
        approach_target[i] = np_min(thickness, dist_prev);
        target[i] = np_min(thickness, dist_prev + recovery);
        depth[i] = 0.0;
        ever[i] = 0;
    }
    return count;
}

/* The set-up of ImpactZones._new_crossings and its witnesses (softsim_self_witnesses) in one call, over a Verlet list
 * as softsim_self_select's. With what & SELF_SELECT_MOTION, motion (n,) of the step x_start -> x and moved (n,) since
 * the build are written and -1 returned when the list does not hold (the caller grows or rebuilds it and calls again
 * without the bit, moved then its own). Then the particles' boxes over the step with the mean motion taken out,
 * lo = min(x, back), hi = max(x, back) (3, n) (back = x - step), bound = moved + motion (n,), slack = 1e-12 + 1e-9
 * max(motion), and the witnesses' positions in the list (ascending) to out_pos; returns their count. lo, hi, bound
 * are the caller's buffers; scratch (t_count + e_count,). */
int64_t softsim_self_fail_safe_witnesses(const double *x, const double *x_start, const double *x0, int64_t n,
                                         const int64_t *triangles, int64_t t_count, const int64_t *edges,
                                         int64_t e_count, int64_t k, const int64_t *list_v, const int64_t *list_t,
                                         int64_t m, const int64_t *list_a, const int64_t *list_b, const double *dist,
                                         const double *skin_v, const double *skin_t, const double *skin_e,
                                         int64_t what, double *motion, double *moved, double *lo, double *hi,
                                         double *bound, int64_t *out_pos, double *scratch) {
    if (what & SELF_SELECT_MOTION) {
        relative_motion(x, x_start, n, motion);
        relative_motion(x, x0, n, moved);
        if (!softsim_self_list_holds(moved, motion, n, triangles, t_count, edges, e_count, skin_v, skin_t, skin_e))
            return -1;
    }
    double mean[3] = {0.0, 0.0, 0.0};
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) mean[d] = mean[d] + (x[3 * i + d] - x_start[3 * i + d]);
    for (int d = 0; d < 3; d++) mean[d] = mean[d] / (double)n;
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) {
            double back = x[3 * i + d] - ((x[3 * i + d] - x_start[3 * i + d]) - mean[d]);
            lo[d * n + i] = np_min(x[3 * i + d], back);
            hi[d * n + i] = np_max(x[3 * i + d], back);
        }
    double most = n ? motion[0] : 0.0;
    for (int64_t i = 1; i < n; i++) most = np_max(most, motion[i]);
    for (int64_t i = 0; i < n; i++) bound[i] = moved[i] + motion[i];
    double slack = 1e-12 + 1e-9 * most;
    return softsim_self_witnesses(x, x_start, n, lo, hi, motion, bound, triangles, edges, k, list_v, list_t, m, list_a,
                                  list_b, dist, slack, out_pos, t_count, e_count, scratch);
}
