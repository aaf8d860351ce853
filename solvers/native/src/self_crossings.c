/* The fail-safe's exact crossing test of cloth self-collision: the twin of
 * solvers/collision/response/impact_zones.py ImpactZones._crossings_in_numpy (its witnesses expanded to edge-triangle pairs,
 * the boxes at x, pairs sharing a vertex dropped, crossings.segments_cross_triangles at x and then at x_start),
 * operation for operation, in the twin's order.
 *
 * segments_cross_triangles' tolerance is 1e-10 scale^3; NumPy's power may round scale^3 otherwise than the product
 * here by an ulp, so a decision could differ only for an orientation within an ulp of the tolerance (the rest is the
 * same arithmetic: the cross products of primitives._cross, the dot products of einsum("ij,ij->i") over rows, dot3). */
#include <math.h>
#include <stddef.h>

#include "self_geometry.h"
#include "softsim_native.h"

#define COPLANAR_TOLERANCE 1e-10 /* crossings.COPLANAR_TOLERANCE */
#define BOX_SLACK 1e-12 /* self_pairs._overlapping's slack at reach 0: 0 * (1 + 1e-9) + 1e-12 */

/* crossings._orient: (b - a) x (c - a) . (d - a). */
static double orient(const double *a, const double *b, const double *c, const double *d)
{
    double u[3], v[3], w[3], n[3];
    for (int i = 0; i < 3; ++i) {
        u[i] = b[i] - a[i];
        v[i] = c[i] - a[i];
        w[i] = d[i] - a[i];
    }
    cross3(u, v, n);
    return dot3(n, w);
}

static double largest_offset(const double *p, const double *a, double largest)
{
    for (int i = 0; i < 3; ++i) {
        double d = fabs(p[i] - a[i]);
        if (d > largest)
            largest = d;
    }
    return largest;
}

/* crossings.segments_cross_triangles for one segment pq and triangle abc. */
static int segment_crosses_triangle(const double *p, const double *q, const double *a, const double *b,
                                    const double *c)
{
    double scale = largest_offset(p, a, 0.0);
    scale = largest_offset(q, a, scale);
    scale = largest_offset(b, a, scale);
    scale = largest_offset(c, a, scale);
    scale = scale > 1e-300 ? scale : 1e-300;
    double tol = COPLANAR_TOLERANCE * (scale * scale * scale);
    double s1 = orient(a, b, c, p), s2 = orient(a, b, c, q);
    int crosses_plane = (s1 > tol && s2 < -tol) || (s1 < -tol && s2 > tol);
    if (!crosses_plane)
        return 0;
    double u = orient(p, q, a, b), v = orient(p, q, b, c), w = orient(p, q, c, a);
    return (u > tol && v > tol && w > tol) || (u < -tol && v < -tol && w < -tol);
}

/* Whether the boxes of edge e and triangle t at x overlap within BOX_SLACK on every axis (self_pairs._overlapping). */
static int boxes_overlap(const double *x, const int64_t *edge, const int64_t *tri)
{
    for (int i = 0; i < 3; ++i) {
        double p = x[3 * edge[0] + i], q = x[3 * edge[1] + i];
        double lo_e = p < q ? p : q, hi_e = p > q ? p : q;
        double a = x[3 * tri[0] + i], b = x[3 * tri[1] + i], c = x[3 * tri[2] + i];
        double lo_t = a < b ? a : b, hi_t = a > b ? a : b;
        lo_t = c < lo_t ? c : lo_t;
        hi_t = c > hi_t ? c : hi_t;
        if (!(lo_e <= hi_t + BOX_SLACK && lo_t <= hi_e + BOX_SLACK))
            return 0;
    }
    return 1;
}

/* Whether edge e and triangle t cross at x and did not at x_start (sharing a vertex: never). */
static int new_crossing(const double *x, const double *x_start, const int64_t *edge, const int64_t *tri)
{
    for (int j = 0; j < 3; ++j)
        if (tri[j] == edge[0] || tri[j] == edge[1])
            return 0;
    if (!boxes_overlap(x, edge, tri))
        return 0;
    if (!segment_crosses_triangle(x + 3 * edge[0], x + 3 * edge[1], x + 3 * tri[0], x + 3 * tri[1], x + 3 * tri[2]))
        return 0;
    return !segment_crosses_triangle(x_start + 3 * edge[0], x_start + 3 * edge[1], x_start + 3 * tri[0],
                                     x_start + 3 * tri[1], x_start + 3 * tri[2]);
}

static int64_t record(int64_t *out_edge, int64_t *out_triangle, int64_t count, int64_t capacity, int64_t e,
                      int64_t t)
{
    if (count < capacity) {
        out_edge[count] = e;
        out_triangle[count] = t;
    }
    return count + 1;
}

int64_t softsim_self_new_crossings(const double *x, const double *x_start, const int64_t *triangles,
                                   const int64_t *edges, const int64_t *vertex_edge_start,
                                   const int64_t *vertex_edges, const int64_t *edge_triangle_start,
                                   const int64_t *edge_triangles, int64_t k_vt, const int64_t *witness_v,
                                   const int64_t *witness_t, int64_t k_ee, const int64_t *witness_a,
                                   const int64_t *witness_b, int64_t capacity, int64_t *out_edge,
                                   int64_t *out_triangle)
{
    int64_t count = 0;
    /* A vertex's edges against the triangle. */
    for (int64_t i = 0; i < k_vt; ++i) {
        const int64_t *tri = triangles + 3 * witness_t[i];
        for (int64_t k = vertex_edge_start[witness_v[i]]; k < vertex_edge_start[witness_v[i] + 1]; ++k) {
            int64_t e = vertex_edges[k];
            if (new_crossing(x, x_start, edges + 2 * e, tri))
                count = record(out_edge, out_triangle, count, capacity, e, witness_t[i]);
        }
    }
    /* Each edge against the other's triangles: first edge against the second's, then the second against the first's. */
    for (int side = 0; side < 2; ++side) {
        const int64_t *own = side == 0 ? witness_a : witness_b, *other = side == 0 ? witness_b : witness_a;
        for (int64_t i = 0; i < k_ee; ++i) {
            const int64_t *edge = edges + 2 * own[i];
            for (int64_t k = edge_triangle_start[other[i]]; k < edge_triangle_start[other[i] + 1]; ++k) {
                int64_t t = edge_triangles[k];
                if (new_crossing(x, x_start, edge, triangles + 3 * t))
                    count = record(out_edge, out_triangle, count, capacity, own[i], t);
            }
        }
    }
    return count;
}
