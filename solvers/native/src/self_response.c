/* Cloth self-collision's per-call upkeep of its Verlet lists: the twins of the box and list checks of
 * solvers/collision/broad_phase/self_broad_phase.py (SelfBroadPhase._boxes and the filter of
 * SelfBroadPhase._candidates), which every solver step runs on the whole list (tens of thousands of pairs on the
 * 64 x 64 lab cloth as it folds) and which NumPy runs as dozens of gathers over arrays of that size.
 *
 * Both only compare and take minima and maxima of their inputs, apart from the sums the twin does in the same order
 * ((reach * (1 + 1e-9)) + 1e-12, thickness + (a + b), e_motion + e_moved): the outputs are the twin's bit for bit,
 * and the pair positions come out in the list's order, as np.nonzero gives them.
 */
#include "self_geometry.h"
#include "self_stencil.h"
#include "softsim_native.h"

/* np.minimum / np.maximum: a NaN in either operand gives NaN. */
static inline double np_min(double a, double b) { return (a < b || a != a) ? a : b; }
static inline double np_max(double a, double b) { return (a > b || a != a) ? a : b; }

/* SelfBroadPhase._boxes: per axis, the boxes of the triangles and edges over particle boxes from lo to hi (both
 * (3, n), structure of arrays; the same pointer for boxes at points). Outputs lo_t, hi_t (3, t), lo_e, hi_e (3, e). */
void softsim_self_boxes(const double *lo, const double *hi, int64_t n, const int64_t *triangles, int64_t t_count,
                        const int64_t *edges, int64_t e_count, double *lo_t, double *hi_t, double *lo_e,
                        double *hi_e) {
    for (int64_t axis = 0; axis < 3; axis++) {
        const double *l = lo + axis * n, *h = hi + axis * n;
        double *lt = lo_t + axis * t_count, *ht = hi_t + axis * t_count;
        for (int64_t i = 0; i < t_count; i++) {
            const int64_t *c = triangles + 3 * i;
            lt[i] = np_min(np_min(l[c[0]], l[c[1]]), l[c[2]]);
            ht[i] = np_max(np_max(h[c[0]], h[c[1]]), h[c[2]]);
        }
        double *le = lo_e + axis * e_count, *he = hi_e + axis * e_count;
        for (int64_t i = 0; i < e_count; i++) {
            const int64_t *c = edges + 2 * i;
            le[i] = np_min(l[c[0]], l[c[1]]);
            he[i] = np_max(h[c[0]], h[c[1]]);
        }
    }
}

/* _overlapping's per-axis test of box a against box b within r: la <= hb + r and lb <= ha + r. */
static inline int boxes_close(const double *la, const double *ha, const double *lb, const double *hb, double r) {
    for (int axis = 0; axis < 3; axis++)
        if (!(la[axis] <= hb[axis] + r && lb[axis] <= ha[axis] + r)) return 0;
    return 1;
}

static inline void triangle_box(const double *x, const int64_t *c, double *lo, double *hi) {
    for (int axis = 0; axis < 3; axis++) {
        double a = x[3 * c[0] + axis], b = x[3 * c[1] + axis], d = x[3 * c[2] + axis];
        lo[axis] = np_min(np_min(a, b), d);
        hi[axis] = np_max(np_max(a, b), d);
    }
}

static inline void edge_box(const double *x, const int64_t *c, double *lo, double *hi) {
    for (int axis = 0; axis < 3; axis++) {
        double a = x[3 * c[0] + axis], b = x[3 * c[1] + axis];
        lo[axis] = np_min(a, b);
        hi[axis] = np_max(a, b);
    }
}

static inline double triangle_max(const double *values, const int64_t *c) {
    return np_max(np_max(values[c[0]], values[c[1]]), values[c[2]]);
}

static inline double edge_max(const double *values, const int64_t *c) { return np_max(values[c[0]], values[c[1]]); }

/* The filter of SelfBroadPhase._candidates over a Verlet list of k vertex-triangle pairs (list_v, list_t) and m
 * edge-edge pairs (list_a, list_b), their distances at the build dist (k + m,): a pair is near when
 * dist - thickness <= both_A + both_B (both_E = the largest motion over element E's particles + the largest moved),
 * its reach is thickness + (motion_A + motion_B), and it is kept when its two elements' boxes at x are within
 * reach * (1 + 1e-9) + 1e-12 of each other on every axis (_overlapping). Writes the kept positions in the list
 * (0 .. k + m - 1, ascending) to out_pos and their reaches to out_reach (both up to k + m long); returns how many.
 * t_count, e_count: the body's triangles and edges; scratch (2 t_count + 2 e_count,) the caller's. */
int64_t softsim_self_list_check(const double *x, int64_t n, const double *motion, const double *moved,
                                const int64_t *triangles, const int64_t *edges, int64_t k, const int64_t *list_v,
                                const int64_t *list_t, int64_t m, const int64_t *list_a, const int64_t *list_b,
                                const double *dist, double thickness, int64_t *out_pos, double *out_reach,
                                int64_t t_count, int64_t e_count, double *scratch) {
    (void)n;
    int64_t count = 0;
    double lo_a[3], hi_a[3], lo_b[3], hi_b[3];
    /* Each element's largest motion and that plus its largest moved, once (the pairs outnumber the elements and
     * would gather them pair by pair): the same sums, so the same bits. */
    double *motion_t = scratch, *both_t_of = scratch + t_count;
    double *motion_e = scratch + 2 * t_count, *both_e_of = scratch + 2 * t_count + e_count;
    for (int64_t i = 0; k && i < t_count; i++) {
        const int64_t *c = triangles + 3 * i;
        motion_t[i] = triangle_max(motion, c);
        both_t_of[i] = motion_t[i] + triangle_max(moved, c);
    }
    for (int64_t i = 0; m && i < e_count; i++) {
        const int64_t *c = edges + 2 * i;
        motion_e[i] = edge_max(motion, c);
        both_e_of[i] = motion_e[i] + edge_max(moved, c);
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t v = list_v[i], t = list_t[i];
        double motion_v = motion[v];
        double both_v = motion_v + moved[v];
        if (!(dist[i] - thickness <= both_v + both_t_of[t])) continue;
        const int64_t *c = triangles + 3 * t;
        double reach = thickness + (motion_v + motion_t[t]);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        triangle_box(x, c, lo_b, hi_b);
        if (!boxes_close(x + 3 * v, x + 3 * v, lo_b, hi_b, r)) continue;
        out_pos[count] = i;
        out_reach[count++] = reach;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t a = list_a[i], b = list_b[i];
        if (!(dist[k + i] - thickness <= both_e_of[a] + both_e_of[b])) continue;
        const int64_t *ca = edges + 2 * a, *cb = edges + 2 * b;
        double reach = thickness + (motion_e[a] + motion_e[b]);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        edge_box(x, ca, lo_a, hi_a);
        edge_box(x, cb, lo_b, hi_b);
        if (!boxes_close(lo_a, hi_a, lo_b, hi_b, r)) continue;
        out_pos[count] = k + i;
        out_reach[count++] = reach;
    }
    return count;
}

/* self_pairs._Stencils of k_vt vertex-triangle pairs (list_v, list_t) followed by k_ee edge-edge pairs (list_a,
 * list_b) at x: per pair its particles idx (4), weights coef (4), relative vector r (3), unit normal n (3), distance,
 * plane distance, ok (a normal exists) and interior (closest points inside both elements, and ok). The vertex-triangle
 * batch's closest points read their border dot products in the order the twin's batch does (self_geometry.h). */
void softsim_self_stencils(const double *x, const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                           const int64_t *list_v, const int64_t *list_t, int64_t k_ee, const int64_t *list_a,
                           const int64_t *list_b, int64_t *idx, double *coef, double *r, double *n, double *dist,
                           double *plane, unsigned char *ok, unsigned char *interior) {
    int64_t border = 0;
    for (int64_t i = 0; i < k_vt; i++) {
        const int64_t *c = triangles + 3 * list_t[i];
        border += !closest_inside(x + 3 * list_v[i], x + 3 * c[0], x + 3 * c[1], x + 3 * c[2]);
    }
    int all_border = border_rows_order(border, k_vt);
    for (int64_t i = 0; i < k_vt; i++)
        stencil_vt(x, list_v[i], triangles + 3 * list_t[i], all_border, idx + 4 * i, coef + 4 * i, r + 3 * i,
                   n + 3 * i, dist + i, plane + i, ok + i, interior + i);
    for (int64_t j = 0; j < k_ee; j++) {
        int64_t i = k_vt + j;
        stencil_ee(x, edges + 2 * list_a[j], edges + 2 * list_b[j], idx + 4 * i, coef + 4 * i, r + 3 * i, n + 3 * i,
                   dist + i, plane + i, ok + i, interior + i);
    }
}

/* Swept boxes (particle boxes lo..hi, (3, n) each) of a triangle or an edge, per axis. */
static inline void swept_box(const double *lo, const double *hi, int64_t n, const int64_t *c, int corners,
                             double *box_lo, double *box_hi) {
    for (int axis = 0; axis < 3; axis++) {
        const double *l = lo + axis * n, *h = hi + axis * n;
        double a = l[c[0]], b = h[c[0]];
        for (int j = 1; j < corners; j++) {
            a = np_min(a, l[c[j]]);
            b = np_max(b, h[c[j]]);
        }
        box_lo[axis] = a;
        box_hi[axis] = b;
    }
}

/* The witnesses of ImpactZones._new_crossings among a Verlet list of k vertex-triangle pairs (list_v, list_t) and m
 * edge-edge pairs (list_a, list_b), dist (k + m,) their distances at the build: a pair is near when dist <= bound_A +
 * bound_B (bound_E the largest `bound` (n,) over E's particles: moved + motion), its two elements' boxes swept over
 * the step (particle boxes lo..hi, (3, n) each) overlap within 1e-12 on every axis (_overlapping with reach 0), and its
 * distances at x and at x_start sum to at most (motion_A + motion_B) + slack (motion_E the largest motion (n,) over
 * E's particles). The vertex-triangle distances are those of self_pairs._vt_distance over the batch of pairs whose
 * boxes overlap (its border dot products in that batch's order, once at x and once at x_start). Writes the kept
 * positions in the list (ascending, up to k + m) to out_pos and returns how many. t_count, e_count: the body's
 * triangles and edges; scratch (t_count + e_count,) the caller's. */
int64_t softsim_self_witnesses(const double *x, const double *x_start, int64_t n, const double *lo, const double *hi,
                               const double *motion, const double *bound, const int64_t *triangles,
                               const int64_t *edges, int64_t k, const int64_t *list_v, const int64_t *list_t,
                               int64_t m, const int64_t *list_a, const int64_t *list_b, const double *dist,
                               double slack, int64_t *out_pos, int64_t t_count, int64_t e_count, double *scratch) {
    const double r = 0.0 * (1.0 + 1e-9) + 1e-12;
    int64_t count = 0;
    double lo_a[3], hi_a[3], lo_b[3], hi_b[3];
    /* Each element's largest bound, once (softsim_self_list_check says why). */
    double *bound_t = scratch, *bound_e = scratch + t_count;
    for (int64_t i = 0; k && i < t_count; i++) bound_t[i] = triangle_max(bound, triangles + 3 * i);
    for (int64_t i = 0; m && i < e_count; i++) bound_e[i] = edge_max(bound, edges + 2 * i);
    /* Vertex-triangle pairs: near and swept boxes overlapping, then the batch's distance test. */
    for (int64_t i = 0; i < k; i++) {
        int64_t v = list_v[i];
        if (!(dist[i] <= bound[v] + bound_t[list_t[i]])) continue;
        const int64_t *c = triangles + 3 * list_t[i];
        swept_box(lo, hi, n, &v, 1, lo_a, hi_a);
        swept_box(lo, hi, n, c, 3, lo_b, hi_b);
        if (!boxes_close(lo_a, hi_a, lo_b, hi_b, r)) continue;
        out_pos[count++] = i;
    }
    int border_now = 1, border_start = 1;
    for (int64_t j = 0; j < count && (border_now || border_start); j++) {
        int64_t i = out_pos[j], v = list_v[i];
        const int64_t *c = triangles + 3 * list_t[i];
        if (closest_inside(x + 3 * v, x + 3 * c[0], x + 3 * c[1], x + 3 * c[2])) border_now = 0;
        if (closest_inside(x_start + 3 * v, x_start + 3 * c[0], x_start + 3 * c[1], x_start + 3 * c[2]))
            border_start = 0;
    }
    int64_t kept = 0;
    for (int64_t j = 0; j < count; j++) {
        int64_t i = out_pos[j], v = list_v[i];
        const int64_t *c = triangles + 3 * list_t[i];
        double now = vt_distance(x + 3 * v, x + 3 * c[0], x + 3 * c[1], x + 3 * c[2], border_now);
        double start = vt_distance(x_start + 3 * v, x_start + 3 * c[0], x_start + 3 * c[1], x_start + 3 * c[2],
                                   border_start);
        if (now + start <= motion[v] + triangle_max(motion, c) + slack) out_pos[kept++] = i;
    }
    /* Edge-edge pairs (their distances do not depend on the batch). */
    for (int64_t i = 0; i < m; i++) {
        if (!(dist[k + i] <= bound_e[list_a[i]] + bound_e[list_b[i]])) continue;
        const int64_t *ca = edges + 2 * list_a[i], *cb = edges + 2 * list_b[i];
        swept_box(lo, hi, n, ca, 2, lo_a, hi_a);
        swept_box(lo, hi, n, cb, 2, lo_b, hi_b);
        if (!boxes_close(lo_a, hi_a, lo_b, hi_b, r)) continue;
        double now = ee_distance(x + 3 * ca[0], x + 3 * ca[1], x + 3 * cb[0], x + 3 * cb[1]);
        double start = ee_distance(x_start + 3 * ca[0], x_start + 3 * ca[1], x_start + 3 * cb[0], x_start + 3 * cb[1]);
        if (now + start <= edge_max(motion, ca) + edge_max(motion, cb) + slack) out_pos[kept++] = k + i;
    }
    return kept;
}

/* SelfBroadPhase._list_holds: 1 when every element's largest `moved` plus its largest `motion` (n,) is within its
 * skin (vertices skin_v (n,), triangles skin_t (t,), edges skin_e (e,)), else 0. */
int64_t softsim_self_list_holds(const double *moved, const double *motion, int64_t n, const int64_t *triangles,
                                int64_t t_count, const int64_t *edges, int64_t e_count, const double *skin_v,
                                const double *skin_t, const double *skin_e) {
    for (int64_t i = 0; i < n; i++)
        if (moved[i] + motion[i] > skin_v[i]) return 0;
    for (int64_t i = 0; i < t_count; i++) {
        const int64_t *c = triangles + 3 * i;
        if (triangle_max(moved, c) + triangle_max(motion, c) > skin_t[i]) return 0;
    }
    for (int64_t i = 0; i < e_count; i++) {
        const int64_t *c = edges + 2 * i;
        if (edge_max(moved, c) + edge_max(motion, c) > skin_e[i]) return 0;
    }
    return 1;
}
