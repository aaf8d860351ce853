/* Cloth self-collision's per-call upkeep of its Verlet lists: the twins of the box and list checks of
 * solvers/collision/broad_phase/self_broad_phase.py (SelfBroadPhase._boxes and the filter of
 * SelfBroadPhase._candidates), which every solver step runs on the whole list (tens of thousands of pairs on the
 * 64 x 64 lab cloth as it folds) and which NumPy runs as dozens of gathers over arrays of that size.
 *
 * Both only compare and take minima and maxima of their inputs, apart from the sums the twin does in the same order
 * ((reach * (1 + 1e-9)) + 1e-12, thickness + (a + b), e_motion + e_moved): the outputs are the twin's bit for bit,
 * and the pair positions come out in the list's order, as np.nonzero gives them.
 */
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
 * (0 .. k + m - 1, ascending) to out_pos and their reaches to out_reach (both up to k + m long); returns how many. */
int64_t softsim_self_list_check(const double *x, int64_t n, const double *motion, const double *moved,
                                const int64_t *triangles, const int64_t *edges, int64_t k, const int64_t *list_v,
                                const int64_t *list_t, int64_t m, const int64_t *list_a, const int64_t *list_b,
                                const double *dist, double thickness, int64_t *out_pos, double *out_reach) {
    (void)n;
    int64_t count = 0;
    double lo_a[3], hi_a[3], lo_b[3], hi_b[3];
    for (int64_t i = 0; i < k; i++) {
        int64_t v = list_v[i];
        const int64_t *c = triangles + 3 * list_t[i];
        double motion_v = motion[v], motion_t = triangle_max(motion, c);
        double both_v = motion_v + moved[v], both_t = motion_t + triangle_max(moved, c);
        if (!(dist[i] - thickness <= both_v + both_t)) continue;
        double reach = thickness + (motion_v + motion_t);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        triangle_box(x, c, lo_b, hi_b);
        if (!boxes_close(x + 3 * v, x + 3 * v, lo_b, hi_b, r)) continue;
        out_pos[count] = i;
        out_reach[count++] = reach;
    }
    for (int64_t i = 0; i < m; i++) {
        const int64_t *ca = edges + 2 * list_a[i], *cb = edges + 2 * list_b[i];
        double motion_a = edge_max(motion, ca), motion_b = edge_max(motion, cb);
        double both_a = motion_a + edge_max(moved, ca), both_b = motion_b + edge_max(moved, cb);
        if (!(dist[k + i] - thickness <= both_a + both_b)) continue;
        double reach = thickness + (motion_a + motion_b);
        double r = reach * (1.0 + 1e-9) + 1e-12;
        edge_box(x, ca, lo_a, hi_a);
        edge_box(x, cb, lo_b, hi_b);
        if (!boxes_close(lo_a, hi_a, lo_b, hi_b, r)) continue;
        out_pos[count] = k + i;
        out_reach[count++] = reach;
    }
    return count;
}
