/* A mesh collider's nearest-triangle query, the twin of
 * solvers/collision/colliders/mesh_collider.py MeshCollider._closest: for every asked point, the nearest of the
 * collider's triangles within `limit`, with the barycentric weights of its closest point, that point, the unsigned
 * distance and whether the point is interior to the triangle.
 *
 * The NumPy twin finds candidates with k-d trees over triangle pieces, kept per point between asks
 * (mesh_broad_phase.py); here a uniform grid over the triangles' axis-aligned boxes does, built once per collider pose
 * in the caller's buffers (softsim_mesh_grid_build). A point first tests the triangles of its own cell, which bounds
 * its nearest distance, then every cell within that bound (at most `limit`): a triangle within distance r of the
 * point has its box within r on every axis, so it is listed in a visited cell. The nearest is the least (distance,
 * triangle index) over everything tested, the twin's rule (lowest triangle among equal distances), whatever the
 * visit order. The distances repeat primitives.closest_weights / point_triangle_closest operation for operation in
 * the orders of a mixed batch of the twin (self_collision.c says which einsum sums in which order): the twin's batch
 * is its candidate set, which the grid does not reproduce, so a batch of the twin that is all border sums the border
 * branch's dot products in another order and the two agree to a few ulps there (tests/test_native_mesh_collider.py
 * holds them to 1e-12 relative and the nearest triangles equal).
 *
 * Grid layout (the binding's): grid = (origin x, y, z, cell size h, upper bound x, y, z), the origin and the upper
 * bound those of every triangle's box; dims = (nx, ny, nz); cell (i, j, k) is
 * i + nx (j + ny k); a coordinate a falls in cell floor((a - origin) * (1 / h)) clamped to [0, dim - 1] on each axis, in
 * the build and in the query alike (clamping only ever adds candidates). cell_start (cells + 1) and entry_tri
 * (entries) hold the cells' triangles in CSR form, ascending within a cell.
 */
#include <math.h>

#include "contact_common.h"
#include "pair_buffer.h"
#include "mesh_query.h"
#include "softsim_native.h"
#include "vec3.h"

static inline double clip01(double t) { return min2(max2(t, 0.0), 1.0); }

/* The cell coordinate of a along one axis: floor((a - origin) * inv_h) within [0, dim - 1] (NaN to 0), without a
 * division or libm's floor (a call on the baseline x86-64 target): at most 0 gives 0, dim or more gives dim - 1, and in
 * between the truncation is the floor. Monotone in a, which is all the grid needs: the build and the queries map
 * coordinates to cells alike, so a box covers the cells of every point within it. */
static inline int64_t cell_of(double a, double origin, double inv_h, int64_t dim)
{
    double f = (a - origin) * inv_h;
    if (!(f > 0.0))
        return 0;
    if (f >= (double)dim)
        return dim - 1;
    return (int64_t)f;
}

/* The cell ranges lo[3] .. hi[3] (inclusive) of the box [low, high]. */
static void cell_range(const double *low, const double *high, const double *grid, const int64_t *dims, int64_t *lo,
                       int64_t *hi)
{
    double inv_h = 1.0 / grid[3];
    for (int a = 0; a < 3; ++a) {
        lo[a] = cell_of(low[a], grid[a], inv_h, dims[a]);
        hi[a] = cell_of(high[a], grid[a], inv_h, dims[a]);
    }
}

static void triangle_box(const double *vertices, const int64_t *tri, double *low, double *high)
{
    for (int a = 0; a < 3; ++a) {
        double p = vertices[3 * tri[0] + a], q = vertices[3 * tri[1] + a], r = vertices[3 * tri[2] + a];
        low[a] = min2(min2(p, q), r);
        high[a] = max2(max2(p, q), r);
    }
}

SOFTSIM_API int64_t softsim_mesh_grid_build(const double *vertices, const int64_t *triangles, int64_t t, const double *grid,
                                const int64_t *dims, int64_t *cell_start, int64_t entry_capacity, int64_t *entry_tri)
{
    int64_t cells = dims[0] * dims[1] * dims[2];
    for (int64_t c = 0; c <= cells; ++c)
        cell_start[c] = 0;
    int64_t lo[3], hi[3];
    double low[3], high[3];
    for (int64_t f = 0; f < t; ++f) {
        triangle_box(vertices, triangles + 3 * f, low, high);
        cell_range(low, high, grid, dims, lo, hi);
        for (int64_t k = lo[2]; k <= hi[2]; ++k)
            for (int64_t j = lo[1]; j <= hi[1]; ++j)
                for (int64_t i = lo[0]; i <= hi[0]; ++i)
                    cell_start[i + dims[0] * (j + dims[1] * k)] += 1;
    }
    int64_t total = 0;
    for (int64_t c = 0; c < cells; ++c) { /* cell_start[c]: the end of cell c */
        total += cell_start[c];
        cell_start[c] = total;
    }
    cell_start[cells] = total;
    if (total > entry_capacity)
        return total;
    /* Filled from the last triangle down, each cell from its end: ascending triangles within a cell, and cell_start[c]
     * ends at the start of cell c. */
    for (int64_t f = t - 1; f >= 0; --f) {
        triangle_box(vertices, triangles + 3 * f, low, high);
        cell_range(low, high, grid, dims, lo, hi);
        for (int64_t k = lo[2]; k <= hi[2]; ++k)
            for (int64_t j = lo[1]; j <= hi[1]; ++j)
                for (int64_t i = lo[0]; i <= hi[0]; ++i)
                    entry_tri[--cell_start[i + dims[0] * (j + dims[1] * k)]] = f;
    }
    return total;
}

/* primitives.closest_weights and point_triangle_closest for one point and triangle: bary[3], q[3] (the einsum
 * sum_j bary_j corner_j in order of j), and the return value interior. */
static int closest_on_triangle(const double *P, const double *A, const double *B, const double *C, double *bary,
                               double *q)
{
    /* the Gram system over (k, 3) rows, the border branch over gathered columns (a mixed batch of the twin) */
    double e1[3], e2[3], v, w;
    closest_vw(P, A, B, C, dot_rows, dot_in_order, e1, e2, &v, &w);
    bary[0] = max2(1.0 - v - w, 0.0);
    bary[1] = v;
    bary[2] = w;
    for (int a = 0; a < 3; ++a)
        q[a] = (bary[0] * A[a] + bary[1] * B[a]) + bary[2] * C[a];
    return v > 0.0 && w > 0.0 && v + w < 1.0;
}

/* Whether the box of half-width reach around P lies wholly beside the triangles' bounds grid[4..6] (so no triangle is
 * within reach), or reach is not a length (negative, NaN). */
static int beside(const double *P, double reach, const double *grid)
{
    if (!(reach >= 0.0))
        return 1;
    int out = 0;
    for (int a = 0; a < 3; ++a)
        out |= !(P[a] + reach >= grid[a]) || !(P[a] - reach <= grid[4 + a]);
    return out;
}

typedef struct {
    double d;
    int64_t tri;
    int interior;
    double bary[3], q[3];
} Nearest;

/* The squared distance from P to triangle tri's axis-aligned box (a lower bound on its distance, squared). */
static inline double box_distance2(const double *P, const double *vertices, const int64_t *tri)
{
    double s = 0.0;
    for (int a = 0; a < 3; ++a) {
        double p = vertices[3 * tri[0] + a], q = vertices[3 * tri[1] + a], r = vertices[3 * tri[2] + a];
        double gap = max2(max2(min2(min2(p, q), r) - P[a], P[a] - max2(max2(p, q), r)), 0.0);
        s += gap * gap;
    }
    return s;
}

/* Test triangle f for P: the nearest so far if its (distance, index) is the least. Returns its distance. */
static inline double consider(const double *P, const double *vertices, const int64_t *triangles, int64_t f,
                              Nearest *best)
{
    double bary[3], q[3];
    const int64_t *tri = triangles + 3 * f;
    int interior = closest_on_triangle(P, vertices + 3 * tri[0], vertices + 3 * tri[1], vertices + 3 * tri[2], bary,
                                       q);
    double r[3] = {P[0] - q[0], P[1] - q[1], P[2] - q[2]};
    double d = sqrt(dot_rows(r, r));
    if (d < best->d || (d == best->d && f < best->tri)) {
        best->d = d;
        best->tri = f;
        best->interior = interior;
        for (int a = 0; a < 3; ++a) {
            best->bary[a] = bary[a];
            best->q[a] = q[a];
        }
    }
    return d;
}

typedef struct {
    double d;
    int64_t tri;
} Runner;

/* Triangle tri (-1: none) at computed distance d is not the nearest: the runner-up (the least (distance, index) of
 * those) if it is less than the one so far, which then bounds the others (lower), else it bounds them itself. */
static inline void runner_up(Runner *second, double *lower, double d, int64_t tri)
{
    if (tri < 0)
        return;
    if (d < second->d || (d == second->d && tri < second->tri)) {
        *lower = min2(*lower, second->d);
        second->d = d;
        second->tri = tri;
    } else
        *lower = min2(*lower, d);
}

/* The squared distance from coordinate a to the slab of cell i along one axis of the grid (origin, cell size h, the
 * triangles' upper bound), the slab grown by grow on both sides. Cell_of clamps coordinates beyond the grid into its
 * first and last cells, but every triangle's box lies within origin .. upper: the last cell's slab ends there. */
static inline double slab_gap2(double a, double origin, double h, double upper, int64_t i, double grow)
{
    double low = origin + (double)i * h - grow;
    double high = min2(origin + (double)(i + 1) * h, upper) + grow;
    double gap = max2(max2(low - a, a - high), 0.0);
    return gap * gap;
}

/* Test the triangles of cells lo .. hi not yet tested for this query (stamp[f] != query). A triangle whose box lies
 * farther than the nearest distance so far, or than limit, by more than round-off (the margins of the second visit's
 * reach) is passed over: its computed distance exceeds both, so it could neither be the nearest nor tie with it, nor
 * be within limit; the answer is the one of testing it. The box's distance is compared squared, against the square
 * of that bound grown by 1e-12 relative: a box passed over so lies farther than the bound after the square root
 * too (its rounding and the square's are ~1e-16), so no triangle is passed over that the bound would keep.
 *
 * A whole cell farther than that bound, and than `keep`, is passed over the same way, unread. A triangle's point
 * nearest P lies, at the grid's pose, in a cell the triangle is listed in, and at the asking pose within drift of it:
 * within the cell's slabs grown by drift and by far more than cell_of's round-off (1e-9 of the coordinates, against
 * its ~1e-16). So a triangle whose box is within the bound is tested in the cell of that point, and one listed only
 * in cells passed over lies at least as far as the nearest of them, which bounds it for the certificates (lower); a
 * caller with certificates keeps every cell within the reach its certificate states (keep), so lower is what testing
 * every box there gives it. */
static void visit(const double *P, const double *vertices, const int64_t *triangles, const double *grid,
                  const int64_t *dims, const int64_t *cell_start, const int64_t *entry_tri, const int64_t *lo,
                  const int64_t *hi, int64_t *stamp, int64_t query, double limit, double drift, double keep,
                  Nearest *best, double *lower, Runner *second)
{
    double far = limit * (1.0 + 1e-9) + 1e-12;
    double h = grid[3], grow[3];
    for (int a = 0; a < 3; ++a)
        grow[a] = 1e-9 * (fabs(grid[a]) + (double)(dims[a] + 1) * h) + drift;
    for (int64_t k = lo[2]; k <= hi[2]; ++k) {
        double gz = slab_gap2(P[2], grid[2], h, grid[6], k, grow[2]);
        for (int64_t j = lo[1]; j <= hi[1]; ++j) {
            double gyz = slab_gap2(P[1], grid[1], h, grid[5], j, grow[1]) + gz;
            for (int64_t i = lo[0]; i <= hi[0]; ++i) {
                double cell2 = slab_gap2(P[0], grid[0], h, grid[4], i, grow[0]) + gyz;
                double passed = max2(min2(far, best->d * (1.0 + 1e-9) + 1e-12), keep); /* cells beyond: unread */
                if (cell2 > passed * passed * (1.0 + 1e-12)) {
                    if (lower)
                        *lower = min2(*lower, sqrt(cell2));
                    continue;
                }
                int64_t c = i + dims[0] * (j + dims[1] * k);
                for (int64_t e = cell_start[c]; e < cell_start[c + 1]; ++e) {
                    int64_t f = entry_tri[e];
                    if (stamp[f] == query)
                        continue;
                    stamp[f] = query;
                    double bound = min2(far, best->d * (1.0 + 1e-9) + 1e-12);
                    double box2 = box_distance2(P, vertices, triangles + 3 * f);
                    if (box2 > bound * bound * (1.0 + 1e-12)) {
                        if (lower) /* its box's distance bounds its own (computed, to round-off) */
                            *lower = min2(*lower, sqrt(box2));
                        continue;
                    }
                    double was = best->d;
                    int64_t was_tri = best->tri;
                    double d = consider(P, vertices, triangles, f, best);
                    if (lower) /* the nearest so far it replaced, or itself, is another triangle from now on */
                        runner_up(second, lower, best->tri == f ? was : d, best->tri == f ? was_tri : f);
                }
            }
        }
    }
}

/* The distance from P to the triangles' bounds grid[0..2], grid[4..6] grown by drift on each axis: every triangle
 * of a pose within drift of the grid's lies in them, so none is nearer (0 for P inside, NaN for NaN input). */
static double outside(const double *P, double drift, const double *grid)
{
    double lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
        lo[a] = grid[a] - drift;
        hi[a] = grid[4 + a] + drift;
    }
    return sqrt(mesh_box_distance2(P, lo, hi));
}

/* Leave point p (at P) a certificate at the asking pose: its nearest tri (-1: none), its runner-up (-1: none) at
 * computed distance second->d, and `rest`, a bound from below on the computed distances of every other triangle;
 * both bounds made ones on the true distances (less round-off). */
static void certify(const double *P, int64_t p, const MeshCertificates *cert, int64_t tri, const Runner *second,
                    double rest)
{
    cert->tri[p] = tri;
    cert->tri2[p] = second->tri;
    cert->pose[p] = cert->current;
    cert->lower[p] = min2(rest, second->d) * (1.0 - 1e-9) - 1e-12;
    cert->rest[p] = rest * (1.0 - 1e-9) - 1e-12;
    for (int a = 0; a < 3; ++a)
        cert->x[3 * p + a] = P[a];
}

/* Whether point p's certificate proves its answer at P (mesh_closest_drift says how); then *best holds it (tri -1:
 * nothing within limit). */
static int certified(const double *P, int64_t p, const MeshCertificates *cert, const double *vertices,
                     const int64_t *triangles, double limit, Nearest *best)
{
    const double *at = cert->x + 3 * p;
    double r[3] = {P[0] - at[0], P[1] - at[1], P[2] - at[2]};
    double s0 = cert->shift[cert->pose[p]], s1 = cert->shift[cert->current];
    double poses = s1 > s0 ? s1 - s0 : s0 - s1; /* NaN when a pose's moves are unknown: no proof */
    double others = (cert->lower[p] - (sqrt(dot_rows(r, r)) + poses) * (1.0 + 1e-9) - 1e-12) * (1.0 - 1e-9) - 1e-12;
    int beyond = others > limit * (1.0 + 1e-9) + 1e-12; /* every other triangle beyond limit */
    int64_t tri = cert->tri[p];
    if (tri < 0)
        return beyond;
    double d = consider(P, vertices, triangles, tri, best);
    if (d < others)
        return 1; /* tri is the strict least */
    if (beyond && !(d <= limit)) {
        best->tri = -1; /* nothing within limit */
        return 1;
    }
    /* A tie, or nearly, with the runner-up: the least (distance, index) of the two, as the query ranks them, against
     * every other triangle. */
    int64_t tri2 = cert->tri2[p];
    if (tri2 < 0)
        return 0;
    double rest = (cert->rest[p] - (sqrt(dot_rows(r, r)) + poses) * (1.0 + 1e-9) - 1e-12) * (1.0 - 1e-9) - 1e-12;
    consider(P, vertices, triangles, tri2, best);
    if (best->d < rest)
        return 1;
    if (rest > limit * (1.0 + 1e-9) + 1e-12 && !(best->d <= limit)) {
        best->tri = -1;
        return 1;
    }
    return 0;
}

SOFTSIM_API int64_t softsim_mesh_closest(const double *x, const int64_t *points, int64_t k, const double *vertices,
                             const int64_t *triangles, const double *grid, const int64_t *dims,
                             const int64_t *cell_start, const int64_t *entry_tri, double limit, int64_t *stamp,
                             int64_t *out_row, int64_t *out_tri, double *out_bary, double *out_q, double *out_d,
                             int64_t *out_interior)
{
    return mesh_closest_drift(x, points, k, vertices, triangles, grid, dims, cell_start, entry_tri, limit, 0.0, stamp,
                              out_row, out_tri, out_bary, out_q, out_d, out_interior, 0, 0, 0);
}

/* softsim_mesh_closest through a grid built on another pose of the same triangles, whose every vertex lies within
 * drift [m] of its place at `vertices` on each axis: a triangle within r of a point there has its box at the grid's
 * pose within r + drift of the point, so every cell within that is visited (and the grid's bounds are drift wider);
 * the triangles tested and their distances are those at `vertices`, so the answer is the one of a grid of that pose.
 * hint (null, or one triangle index per point of x, t triangles): point p tests triangle hint[p] first (when within
 * [0, t)) and gets its nearest written back. The answer is the least (distance, index) over the triangles within
 * reach whatever is tested first; a near first guess (the point's nearest at the substep before) bounds the search at
 * once, so the cells' other triangles are passed over on their boxes.
 *
 * cert (null, or the asking collider's certificates, mesh_query.h): a point whose certificate still proves its
 * nearest gets that answer from one distance; any other is queried as above, cert->margin [m] farther, and leaves a
 * certificate. A query's certificate bounds the true distance of every triangle but its nearest from below: the
 * least of the other triangles' computed distances, of the boxes passed over, and of the reach not visited (a
 * triangle in no visited cell lies farther than that, by the drift argument above), less round-off; and, apart, that
 * of every triangle but its nearest and its runner-up (the least (distance, index) of the others it computed). Later,
 * at a pose whose vertices moved at most D from the certificate's and a point that moved at most m, every other
 * triangle lies at least lower - m - D away: when the certified nearest's computed distance is below the least
 * computed distance that leaves (round-off again), it is the strict least, which the query would return; when no
 * nearest was found and that exceeds limit, nothing is within limit. Else (the nearest ties with its runner-up across
 * an edge of the mesh, or nearly) the lesser (distance, index) of the two named triangles' computed
 * distances is tested alike against the bound on the rest. Either way the answer is the query's, bit for bit (the
 * distances are the same computation). */
int64_t mesh_closest_drift(const double *x, const int64_t *points, int64_t k, const double *vertices,
                           const int64_t *triangles, const double *grid, const int64_t *dims, const int64_t *cell_start,
                           const int64_t *entry_tri, double limit, double drift, int64_t *stamp, int64_t *out_row,
                           int64_t *out_tri, double *out_bary, double *out_q, double *out_d, int64_t *out_interior,
                           int64_t t, int64_t *hint, const MeshCertificates *cert)
{
    int64_t found = 0, query = stamp[0];
    int64_t lo[3], hi[3];
    double margin = cert ? cert->margin : 0.0;
    for (int64_t i = 0; i < k; ++i) {
        int64_t p = points[i];
        const double *P = x + 3 * p;
        Nearest best = {INFINITY, -1, 0, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
        if (cert && cert->tri[p] >= -1 && certified(P, p, cert, vertices, triangles, limit, &best)) {
            ++cert->counts[0];
            if (hint && best.tri >= 0)
                hint[p] = best.tri;
        } else {
            double lower = INFINITY; /* certificates: the least distance of any other triangle so far */
            Runner second = {INFINITY, -1}; /* ... but the runner-up's, apart */
            best = (Nearest){INFINITY, -1, 0, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
            if (cert)
                ++cert->counts[1];
            if (beside(P, limit + drift, grid)) { /* nothing within limit (negative or NaN limit too) */
                if (cert)
                    certify(P, p, cert, -1, &second, outside(P, drift, grid));
                continue;
            }
            ++query;
            int64_t guess = hint ? hint[p] : -1;
            if (guess >= 0 && guess < t) {
                stamp[1 + guess] = query;
                consider(P, vertices, triangles, guess, &best);
            }
            if (best.tri < 0) { /* no first guess: its own cell (or the nearest one) first, a bound on the distance */
                cell_range(P, P, grid, dims, lo, hi);
                visit(P, vertices, triangles, grid, dims, cell_start, entry_tri, lo, hi, stamp + 1, query, limit, drift,
                      INFINITY, &best, cert ? &lower : 0, &second);
            }
            /* Then every cell within that bound, widened past round-off (a triangle of the same computed distance
             * may lie a rounding farther), and never beyond limit (plus the certificate's margin). */
            double within = min2(limit, best.d * (1.0 + 1e-9) + 1e-12);
            double reach = within + margin + drift;
            double low[3] = {P[0] - reach, P[1] - reach, P[2] - reach};
            double high[3] = {P[0] + reach, P[1] + reach, P[2] + reach};
            cell_range(low, high, grid, dims, lo, hi);
            visit(P, vertices, triangles, grid, dims, cell_start, entry_tri, lo, hi, stamp + 1, query, limit, drift,
                  cert ? within + margin : 0.0, &best, cert ? &lower : 0, &second);
            if (cert)
                certify(P, p, cert, best.tri, &second, min2(lower, within + margin));
            if (hint && best.tri >= 0)
                hint[p] = best.tri;
        }
        if (best.tri < 0 || !(best.d <= limit))
            continue;
        out_row[found] = p;
        out_tri[found] = best.tri;
        out_d[found] = best.d;
        out_interior[found] = best.interior;
        for (int a = 0; a < 3; ++a) {
            out_bary[3 * found + a] = best.bary[a];
            out_q[3 * found + a] = best.q[a];
        }
        ++found;
    }
    stamp[0] = query;
    return found;
}

/* ------------------------------------------------------------------------------------------------- face pairs */

/* The twin of mesh_face_pairs.MeshFacePairs._pairs_within: the collider corners within reach of body triangles and
 * the collider's sharp edges within reach of body edges, exact distances, in the twin's (sorted) order: by body
 * element in the order asked, then collider feature ascending. The corners and sharp edges are gridded as the
 * triangles are (a corner c as the triangle (c, c, c), an edge (a, b) as (a, b, b)); a body element visits the cells
 * of its box grown by its reach (reach + travel, widened as the twin's test: a pair within reach has the feature in
 * that box). Distances repeat primitives.point_triangle_distance and segment_distance (src comment at the top on
 * all-border batches). Returns the pair count, writing the first `capacity` of them: a larger return asks the caller
 * to grow and call again. */

/* Sort out_f[from .. to) ascending, carrying out_d (a few features per body element: insertion sort). */
static void sort_features(int64_t *out_f, double *out_d, int64_t from, int64_t to)
{
    for (int64_t i = from + 1; i < to; ++i) {
        int64_t f = out_f[i];
        double d = out_d[i];
        int64_t j = i - 1;
        for (; j >= from && out_f[j] > f; --j) {
            out_f[j + 1] = out_f[j];
            out_d[j + 1] = out_d[j];
        }
        out_f[j + 1] = f;
        out_d[j + 1] = d;
    }
}

static void grown_box(const double *const *points, int count, double reach, double *low, double *high)
{
    for (int a = 0; a < 3; ++a) {
        double lo = points[0][a], hi = points[0][a];
        for (int k = 1; k < count; ++k) {
            lo = min2(lo, points[k][a]);
            hi = max2(hi, points[k][a]);
        }
        low[a] = lo - reach;
        high[a] = hi + reach;
    }
}

/* Whether the box [low, high] misses the grid's bounds (or is not a box: NaN). */
static int box_beside(const double *low, const double *high, const double *grid)
{
    int out = 0;
    for (int a = 0; a < 3; ++a)
        out |= !(high[a] >= grid[a]) || !(low[a] <= grid[4 + a]);
    return out;
}

SOFTSIM_API int64_t softsim_mesh_corner_pairs(const double *x, const int64_t *triangles, const int64_t *rows,
                                              int64_t k, const double *reach, double travel, const double *vertices,
                                              const int64_t *corners, const double *grid, const int64_t *dims,
                                              const int64_t *cell_start, const int64_t *entry, int64_t *stamp,
                                              int64_t capacity, int64_t *out_corner, int64_t *out_row,
                                              double *out_d)
{
    return mesh_corner_pairs_drift(x, triangles, rows, k, reach, travel, vertices, corners, grid, dims, cell_start,
                                   entry, 0.0, stamp, capacity, out_corner, out_row, out_d);
}

/* softsim_mesh_corner_pairs through a grid of another pose, its corners within drift [m] of their places at
 * `vertices` on each axis (the cells of the box grown by drift more; the pairs tested at `vertices`). */
int64_t mesh_corner_pairs_drift(const double *x, const int64_t *triangles, const int64_t *rows, int64_t k,
                                const double *reach, double travel, const double *vertices, const int64_t *corners,
                                const double *grid, const int64_t *dims, const int64_t *cell_start,
                                const int64_t *entry, double drift, int64_t *stamp, int64_t capacity,
                                int64_t *out_corner, int64_t *out_row, double *out_d)
{
    int64_t count = 0, query = stamp[0];
    int64_t lo[3], hi[3];
    double low[3], high[3], bary[3], q[3];
    for (int64_t i = 0; i < k; ++i) {
        const int64_t *tri = triangles + 3 * rows[i];
        const double *A = x + 3 * tri[0], *B = x + 3 * tri[1], *C = x + 3 * tri[2];
        const double *corner_points[3] = {A, B, C};
        double limit = (reach[i] + travel) * (1.0 + 1e-12) + 1e-12;
        grown_box(corner_points, 3, limit + drift, low, high);
        if (box_beside(low, high, grid))
            continue;
        ++query;
        cell_range(low, high, grid, dims, lo, hi);
        int64_t first = count;
        for (int64_t cz = lo[2]; cz <= hi[2]; ++cz)
            for (int64_t cy = lo[1]; cy <= hi[1]; ++cy)
                for (int64_t cx = lo[0]; cx <= hi[0]; ++cx) {
                    int64_t c = cx + dims[0] * (cy + dims[1] * cz);
                    for (int64_t e = cell_start[c]; e < cell_start[c + 1]; ++e) {
                        int64_t f = entry[e];
                        if (stamp[1 + f] == query)
                            continue;
                        stamp[1 + f] = query;
                        const double *P = vertices + 3 * corners[f];
                        closest_on_triangle(P, A, B, C, bary, q);
                        /* point_triangle_distance: r = p - b0 a - b1 b - b2 c, left to right */
                        double r[3];
                        for (int a = 0; a < 3; ++a)
                            r[a] = ((P[a] - bary[0] * A[a]) - bary[1] * B[a]) - bary[2] * C[a];
                        double d = sqrt(dot_rows(r, r));
                        if (d <= limit)
                            count = record_pair(out_corner, out_row, out_d, count, capacity, f, rows[i], d);
                    }
                }
        if (count <= capacity)
            sort_features(out_corner, out_d, first, count);
    }
    stamp[0] = query;
    return count;
}

/* primitives.closest_points_segments then segment_distance's r and distance, for one pair. */
static double segment_distance(const double *p1, const double *q1, const double *p2, const double *q2)
{
    double d1[3] = {q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]};
    double d2[3] = {q2[0] - p2[0], q2[1] - p2[1], q2[2] - p2[2]};
    double r[3] = {p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]};
    double a = max2(dot_rows(d1, d1), 1e-300), e = max2(dot_rows(d2, d2), 1e-300);
    double b = dot_rows(d1, d2), c = dot_rows(d1, r), f = dot_rows(d2, r);
    double denom = a * e - b * b;
    int ok = denom > 1e-12 * a * e;
    double s = ok ? clip01((b * f - c * e) / denom) : 0.0;
    double t = (b * s + f) / e;
    s = t < 0.0 ? clip01(-c / a) : (t > 1.0 ? clip01((b - c) / a) : s);
    t = clip01(t);
    double gap[3];
    for (int k = 0; k < 3; ++k)
        gap[k] = ((p1[k] + s * d1[k]) - p2[k]) - t * d2[k];
    return sqrt(dot_rows(gap, gap));
}

SOFTSIM_API int64_t softsim_mesh_edge_pairs(const double *x, const int64_t *edges, const int64_t *rows, int64_t m,
                                            const double *reach, double travel, const double *vertices,
                                            const int64_t *sharp, const double *grid, const int64_t *dims,
                                            const int64_t *cell_start, const int64_t *entry, int64_t *stamp,
                                            int64_t capacity, int64_t *out_edge, int64_t *out_row, double *out_d)
{
    return mesh_edge_pairs_drift(x, edges, rows, m, reach, travel, vertices, sharp, grid, dims, cell_start, entry, 0.0,
                                 stamp, capacity, out_edge, out_row, out_d);
}

/* softsim_mesh_edge_pairs through a grid of another pose (as mesh_corner_pairs_drift). */
int64_t mesh_edge_pairs_drift(const double *x, const int64_t *edges, const int64_t *rows, int64_t m,
                              const double *reach, double travel, const double *vertices, const int64_t *sharp,
                              const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
                              double drift, int64_t *stamp, int64_t capacity, int64_t *out_edge, int64_t *out_row,
                              double *out_d)
{
    int64_t count = 0, query = stamp[0];
    int64_t lo[3], hi[3];
    double low[3], high[3], cells_low[3], cells_high[3];
    for (int64_t i = 0; i < m; ++i) {
        const int64_t *edge = edges + 2 * rows[i];
        const double *A = x + 3 * edge[0], *B = x + 3 * edge[1];
        const double *ends[2] = {A, B};
        double limit = (reach[i] + travel) * (1.0 + 1e-12) + 1e-12;
        grown_box(ends, 2, limit, low, high);
        grown_box(ends, 2, limit + drift, cells_low, cells_high);
        if (box_beside(cells_low, cells_high, grid))
            continue;
        ++query;
        cell_range(cells_low, cells_high, grid, dims, lo, hi);
        int64_t first = count;
        for (int64_t cz = lo[2]; cz <= hi[2]; ++cz)
            for (int64_t cy = lo[1]; cy <= hi[1]; ++cy)
                for (int64_t cx = lo[0]; cx <= hi[0]; ++cx) {
                    int64_t c = cx + dims[0] * (cy + dims[1] * cz);
                    for (int64_t e = cell_start[c]; e < cell_start[c + 1]; ++e) {
                        int64_t f = entry[e];
                        if (stamp[1 + f] == query)
                            continue;
                        stamp[1 + f] = query;
                        const int64_t *mine = sharp + 2 * f;
                        const double *P = vertices + 3 * mine[0], *Q = vertices + 3 * mine[1];
                        /* A sharp edge whose box lies beyond the grown box on an axis (by more than round-off)
                         * is farther than limit: the exact test would refuse it. A coarse grid over a few long
                         * edges lists many such candidates per cell. */
                        int apart = 0;
                        for (int a = 0; a < 3; ++a) {
                            double slack = 1e-9 * (1.0 + fabs(low[a]) + fabs(high[a]));
                            apart |= max2(P[a], Q[a]) < low[a] - slack || min2(P[a], Q[a]) > high[a] + slack;
                        }
                        if (apart)
                            continue;
                        double d = segment_distance(P, Q, A, B);
                        if (d <= limit)
                            count = record_pair(out_edge, out_row, out_d, count, capacity, f, rows[i], d);
                    }
                }
        if (count <= capacity)
            sort_features(out_edge, out_d, first, count);
    }
    stamp[0] = query;
    return count;
}

/* ------------------------------------------------------------------------------------------------- face pushes */

/* The twins of response/mesh_pushes.py MeshFacePushes._corner_pushes, _edge_pushes and _apply, operation for
 * operation in the twins' orders (dot products of rows as dot_rows; einsum("kj,kj->k") over three columns likewise,
 * over two in order; bincount's sums in pair order from 0). The push kernels write the pairs they keep (the corner
 * pairs on their own side, the edge pairs whose closest points lie inside both edges, not parallel) compacted, in
 * pair order, and return how many. */

SOFTSIM_API int64_t softsim_mesh_corner_pushes(const double *x, const double *x_prev, const int64_t *triangles,
                                               const double *vertices, const double *start_vertices,
                                               const int64_t *corners, const int64_t *ci, const int64_t *ti,
                                               int64_t k, double thickness, int64_t *stencil, double *weights,
                                               double *direction, double *depth, double *slip, double *origin)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < k; ++i) {
        const int64_t *tri = triangles + 3 * ti[i];
        const double *A = x + 3 * tri[0], *B = x + 3 * tri[1], *C = x + 3 * tri[2];
        const double *P = vertices + 3 * corners[ci[i]], *S = start_vertices + 3 * corners[ci[i]];
        const double *PA = x_prev + 3 * tri[0], *PB = x_prev + 3 * tri[1], *PC = x_prev + 3 * tri[2];
        double bary[3], q_unused[3];
        int interior = closest_on_triangle(P, A, B, C, bary, q_unused);
        double q[3], q_prev[3], ba[3], ca[3], normal[3], pba[3], pca[3], n_prev[3];
        for (int a = 0; a < 3; ++a) {
            q[a] = (bary[0] * A[a] + bary[1] * B[a]) + bary[2] * C[a]; /* bary[:, :1] * a + ... */
            q_prev[a] = (bary[0] * PA[a] + bary[1] * PB[a]) + bary[2] * PC[a];
            ba[a] = B[a] - A[a];
            ca[a] = C[a] - A[a];
            pba[a] = PB[a] - PA[a];
            pca[a] = PC[a] - PA[a];
        }
        cross3(ba, ca, normal);
        double length = max2(sqrt(dot_rows(normal, normal)), 1e-300);
        for (int a = 0; a < 3; ++a)
            normal[a] /= length;
        cross3(pba, pca, n_prev);
        double lever[3] = {S[0] - q_prev[0], S[1] - q_prev[1], S[2] - q_prev[2]};
        double side = dot_rows(lever, n_prev) < 0.0 ? -1.0 : 1.0;
        double facing[3] = {side * normal[0], side * normal[1], side * normal[2]};
        double r[3] = {P[0] - q[0], P[1] - q[1], P[2] - q[2]};
        double dist = sqrt(dot_rows(r, r));
        double along = dot_rows(r, facing);
        if (!(interior || along >= 0.0))
            continue; /* beyond the plane: the neighbouring face's business */
        double gap = interior ? along : dist;
        double scale = max2(dist, 1e-300);
        for (int a = 0; a < 3; ++a) {
            stencil[3 * kept + a] = tri[a];
            weights[3 * kept + a] = bary[a];
            direction[3 * kept + a] = interior ? -facing[a] : -r[a] / scale;
            slip[3 * kept + a] = (q[a] - q_prev[a]) - (P[a] - S[a]);
            origin[3 * kept + a] = q[a];
        }
        depth[kept] = thickness - gap;
        ++kept;
    }
    return kept;
}

SOFTSIM_API int64_t softsim_mesh_edge_pushes(const double *x, const double *x_prev, const int64_t *edges,
                                             const double *vertices, const double *start_vertices,
                                             const int64_t *sharp, const int64_t *ei, const int64_t *bi, int64_t k,
                                             double thickness, int64_t *stencil, double *weights, double *direction,
                                             double *depth, double *slip, double *origin)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < k; ++i) {
        const int64_t *mine = sharp + 2 * ei[i], *body = edges + 2 * bi[i];
        const double *p1 = vertices + 3 * mine[0], *q1 = vertices + 3 * mine[1];
        const double *A = x + 3 * body[0], *B = x + 3 * body[1];
        /* primitives.closest_points_segments(p1, q1, a, b) */
        double d1[3] = {q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]};
        double d2[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]};
        double r[3] = {p1[0] - A[0], p1[1] - A[1], p1[2] - A[2]};
        double a = max2(dot_rows(d1, d1), 1e-300), e = max2(dot_rows(d2, d2), 1e-300);
        double b = dot_rows(d1, d2), c = dot_rows(d1, r), f = dot_rows(d2, r);
        double denom = a * e - b * b;
        int ok = denom > 1e-12 * a * e;
        double s = ok ? clip01((b * f - c * e) / denom) : 0.0;
        double t = (b * s + f) / e;
        s = t < 0.0 ? clip01(-c / a) : (t > 1.0 ? clip01((b - c) / a) : s);
        t = clip01(t);
        int interior = ok && s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0;
        double normal[3];
        cross3(d1, d2, normal);
        double length = sqrt(dot_rows(normal, normal));
        if (!(interior && length > 1e-12 * sqrt(dot_rows(d1, d1) * dot_rows(d2, d2))))
            continue;
        for (int m = 0; m < 3; ++m)
            normal[m] /= length;
        const double *sp = start_vertices + 3 * mine[0], *sq = start_vertices + 3 * mine[1];
        const double *pa = x_prev + 3 * body[0], *pb = x_prev + 3 * body[1];
        double start_point[3], prev_point[3], collider_point[3], body_point[3], apart[3];
        for (int m = 0; m < 3; ++m) {
            start_point[m] = sp[m] + s * (sq[m] - sp[m]);
            prev_point[m] = pa[m] + t * (pb[m] - pa[m]);
            apart[m] = start_point[m] - prev_point[m];
            collider_point[m] = p1[m] + s * (q1[m] - p1[m]);
            body_point[m] = A[m] + t * (B[m] - A[m]);
        }
        double side = dot_rows(apart, normal) < 0.0 ? -1.0 : 1.0;
        double gap_vector[3] = {collider_point[0] - body_point[0], collider_point[1] - body_point[1],
                                collider_point[2] - body_point[2]};
        double gap = side * dot_rows(gap_vector, normal);
        stencil[2 * kept] = body[0];
        stencil[2 * kept + 1] = body[1];
        weights[2 * kept] = 1.0 - t;
        weights[2 * kept + 1] = t;
        for (int m = 0; m < 3; ++m) {
            direction[3 * kept + m] = -(side * normal[m]);
            slip[3 * kept + m] = (body_point[m] - prev_point[m]) - (collider_point[m] - start_point[m]);
            origin[3 * kept + m] = body_point[m];
        }
        depth[kept] = thickness - gap;
        ++kept;
    }
    return kept;
}

SOFTSIM_API int64_t softsim_mesh_push_apply(double *x, int64_t n, const double *inv_mass, int64_t k, int64_t width,
                                            const int64_t *stencil, const double *weights, const double *direction,
                                            const double *depth, const double *slip, double friction, double *sums,
                                            double *count)
{
    return mesh_push_apply(x, n, inv_mass, k, width, stencil, weights, direction, depth, slip, friction, sums, count,
                           0, 0);
}

/* ------------------------------------------------------------------------------------------------- kept planes */

/* The twins of colliders/kept_planes.py kept_contact's two whole-body passes, in its order: which points' kept
 * planes are stale (drift = |x - x0|; a near plane (finite d0) serves while drift <= drift_limit (KEPT_DRIFT *
 * thickness) and drift + |x - x_prev| < clear, a far one while clear - drift > far_limit (thickness + margin));
 * returns their count, indices ascending in stale), and the planes' answer (d = d0 + n . (x - x0) where d0 is finite
 * and that is <= margin, with n the plane's normal; elsewhere d = inf, n = (0, 0, 1)). */

SOFTSIM_API int64_t softsim_kept_stale(const double *x, const double *x_prev, int64_t n, const double *x0,
                                       const double *d0, const double *clear, double drift_limit, double far_limit,
                                       int64_t *stale)
{
    /* A near plane's test without its two roots where squares settle it, with a relative margin of 1e-9 (far above
     * the round-off of these few operations): drift^2 < limit^2 (1 - 1e-9) puts the rounded root below the limit, and
     * 2 (drift^2 + step^2) < clear^2 (1 - 1e-9) the rounded sum of the roots below clear ((a + b)^2 <= 2 (a^2 + b^2)).
     * Most points of a cloth resting on the mesh pass here; the others take the exact test. */
    const double settled_drift2 = drift_limit * drift_limit * (1.0 - 1e-9);
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double *p = x + 3 * i, *o = x0 + 3 * i, *q = x_prev + 3 * i;
        double shift[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
        double step[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
        double drift2 = dot_rows(shift, shift);
        int valid;
        if (isfinite(d0[i])) {
            double step2 = dot_rows(step, step), c = clear[i];
            if (drift2 < settled_drift2 && c > 0.0 && 2.0 * (drift2 + step2) < c * c * (1.0 - 1e-9))
                continue;
            double drift = sqrt(drift2);
            valid = (drift <= drift_limit) && (drift + sqrt(step2) < c);
        } else
            valid = clear[i] - sqrt(drift2) > far_limit;
        if (!valid)
            stale[count++] = i;
    }
    return count;
}

SOFTSIM_API void softsim_kept_planes(const double *x, int64_t n, const double *x0, const double *normal,
                                     const double *d0, double margin, double *d, double *out_normal)
{
    for (int64_t i = 0; i < n; ++i) {
        double *out = out_normal + 3 * i;
        d[i] = INFINITY;
        out[0] = 0.0;
        out[1] = 0.0;
        out[2] = 1.0;
        if (!isfinite(d0[i]))
            continue;
        const double *p = x + 3 * i, *o = x0 + 3 * i, *m = normal + 3 * i;
        double shift[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
        double linear = d0[i] + dot_rows(shift, m);
        if (linear <= margin) {
            d[i] = linear;
            out[0] = m[0];
            out[1] = m[1];
            out[2] = m[2];
        }
    }
}
