/* NEWTON's contact distances without derivatives and its CCD: the twins of collision/narrow_phase/primitives.py
 * ``point_triangle_distance`` / ``segment_distance`` (the distances only: the line search's energy, the contact set's
 * filter) and of collision/narrow_phase/ccd.py ``point_triangle_ccd`` / ``edge_edge_ccd`` (additive CCD, Li, Kaufman
 * and Jiang 2021: conservative advancement with the speed bound of the four points' displacements less their mean).
 *
 * The distances are self_geometry.h's (the self-collision kernels' twins of the same NumPy functions, operation for
 * operation). The CCD walks each query's times one query at a time, where the twin walks all active queries a round
 * at a time: the same sequence of times per query, each from the same formulas; the twin's means and norms reduce
 * through NumPy (its summation order), so the times agree to round-off (tests/test_native_ipc.py).
 */
#include <math.h>

#include "self_geometry.h"
#include "softsim_native.h"

static double gap_of(int64_t kind, const double x[4][3])
{
    return kind == 0 ? vt_distance(x[0], x[1], x[2], x[3], 0) : ee_distance(x[0], x[1], x[2], x[3]);
}

SOFTSIM_API int64_t softsim_ipc_gaps(int64_t kind, int64_t k, const double *x0, const double *x1, const double *x2,
                                     const double *x3, double *distance)
{
    if (kind != 0 && kind != 1) return -1;
    const double *points[4] = {x0, x1, x2, x3};
    for (int64_t i = 0; i < k; ++i) {
        double x[4][3];
        for (int p = 0; p < 4; ++p)
            for (int a = 0; a < 3; ++a) x[p][a] = points[p][3 * i + a];
        distance[i] = gap_of(kind, x);
    }
    return 0;
}

SOFTSIM_API int64_t softsim_ipc_ccd(int64_t kind, int64_t n, const double *s0, const double *s1, const double *s2,
                                    const double *s3, const double *e0, const double *e1, const double *e2,
                                    const double *e3, double min_distance, double tolerance, int64_t max_rounds,
                                    double *toi)
{
    if (kind != 0 && kind != 1) return -1;
    const double *start[4] = {s0, s1, s2, s3}, *end[4] = {e0, e1, e2, e3};
    for (int64_t i = 0; i < n; ++i) {
        double x0[4][3], dx[4][3], x[4][3], length[4];
        for (int p = 0; p < 4; ++p)
            for (int a = 0; a < 3; ++a) {
                x0[p][a] = start[p][3 * i + a];
                dx[p][a] = end[p][3 * i + a] - x0[p][a];
            }
        for (int a = 0; a < 3; ++a) { /* a common translation changes no distance */
            double mean = (((dx[0][a] + dx[1][a]) + dx[2][a]) + dx[3][a]) / 4.0;
            for (int p = 0; p < 4; ++p) dx[p][a] -= mean;
        }
        for (int p = 0; p < 4; ++p) length[p] = sqrt(dot3(dx[p], dx[p]));
        double bound = kind == 0 ? length[0] + max_zero(max_zero(length[1], length[2]), length[3])
                                 : max_zero(length[0], length[1]) + max_zero(length[2], length[3]);
        double t = 0.0, result = INFINITY;
        int64_t round;
        for (round = 0; round < max_rounds; ++round) {
            for (int p = 0; p < 4; ++p)
                for (int a = 0; a < 3; ++a) x[p][a] = x0[p][a] + t * dx[p][a];
            double gap = gap_of(kind, x) - min_distance;
            if (gap <= tolerance) {
                result = t;
                break;
            }
            double t_next = t + (bound > 0.0 ? gap / bound : INFINITY);
            if (!(t_next <= 1.0)) {
                /* past t = 1: no contact in exact arithmetic; a contact exactly at 1 may round past it, so the end
                 * pose is checked too */
                if (t < 1.0) {
                    for (int p = 0; p < 4; ++p)
                        for (int a = 0; a < 3; ++a) x[p][a] = x0[p][a] + dx[p][a];
                    if (gap_of(kind, x) - min_distance <= tolerance) result = 1.0;
                }
                break;
            }
            t = t_next;
        }
        if (round == max_rounds) result = t; /* unresolved at the cap: a hit no later than any contact */
        toi[i] = result;
    }
    return 0;
}
