/* Cloth self-collision's broad phase (the build of its Verlet lists), the twin of
 * solvers/collision/broad_phase/self_broad_phase.py SelfBroadPhase._query: every vertex-triangle pair and every
 * edge-edge pair (e1 < e2) whose exact distance at x is within reach + the two elements' skins, without pairs that
 * share a vertex and without the rest-close pairs of the sorted exclusion keys.
 *
 * The NumPy twin finds candidates with k-d tree joins of bounding spheres; here a uniform hash grid of axis-aligned
 * boxes does: the triangles (edges) are inserted into the cells their box, grown by reach + their skin (edges:
 * reach / 2 + skin), overlaps; each vertex (edge) visits the cells of its own box grown by its skin (edges: reach / 2
 * + skin) and tests the boxes of what it finds there. Two boxes that overlap share exactly one cell holding the lower
 * corner of their intersection, and a pair is reported only from that cell, so each pair is found once. Overlapping
 * grown boxes are a necessary condition of the exact distance test (|p - q| <= R needs |p - q| <= R on every axis),
 * so the pairs kept by the exact test are the twin's, as a set; the distances repeat the twin's arithmetic
 * (primitives.closest_weights / point_triangle_closest / closest_points_segments, self_pairs._vt_distance /
 * _ee_distance) operation for operation. Between the boxes and the exact distances, cheaper necessary conditions with
 * round-off slack (ee_may_pair's bounding spheres and projection on the line through the midpoints, vt_apart_along's
 * projection) pass over candidates that cannot be within reach: they decide which distances are computed, not which
 * pairs are kept (tests/test_native_self_prefilter.py puts pairs at the limit).
 *
 * Buffers are the caller's: a bucket table (table_size + 1, table_size a power of two), the grid entries up to
 * entry_capacity (entry_element (capacity,) and entry_cell (capacity,) int64: each entry's element and its key, the
 * cell and the axes on which it is the box's first cell, cell_key), and the pair outputs up to pair_capacity. The
 * boxes themselves are kept in box_scratch ((elements, 13) doubles). needs[0] receives the entries the grid needs; when that exceeds entry_capacity nothing else is done and the call returns -1. Otherwise it returns the
 * number of pairs, writing the first pair_capacity of them: a larger return asks the caller to grow and call again.
 * Output order: by pair key (by query element, and within one element's pairs by the other element: sorted here, so
 * the caller's stable sort by key finds it sorted).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "pair_buffer.h"
#include "self_geometry.h"
#include "softsim_native.h"

#define CELL_FACTOR 2.0 /* cell size / mean extent of the inserted boxes (the 64 x 64 lab cloth folding: 1.0 took 1.3-1.8x as long) */
#define CELL_BITS 20 /* bits of a cell coordinate in an entry's key (ENTRY_KEY) */
#define CELL_MAX 1048575.0 /* 2^CELL_BITS - 1: cell coordinates are clamped to [0, CELL_MAX] (far-away or non-finite
                            * input): a monotone clamp, so the grid's tests stay exact, the far cells merge */

/* The grid's cells: size 1 / inv_h, counted from origin (the inserted boxes' lowest corner, so coordinates of the
 * mesh's own boxes start at 0). */
typedef struct {
    double inv_h, origin[3];
} Scale;

/* The cell coordinate of `value` on `axis`: monotone in value (a subtraction, a product by a positive number and a
 * floor all are), which is all FOR_EACH_OVERLAP's test of the pair's cell needs. */
static inline int64_t cell_of(double value, const Scale *scale, int axis) {
    /* floor, then the clamp to [0, CELL_MAX], without libm's floor (a call on the baseline x86-64 target): at most 0
     * (or NaN) gives 0, CELL_MAX + 1 or more gives CELL_MAX, and in between the truncation is the floor. */
    double c = (value - scale->origin[axis]) * scale->inv_h;
    if (!(c > 0.0)) return 0; /* also NaN */
    if (c >= CELL_MAX + 1.0) return (int64_t)CELL_MAX;
    return (int64_t)c;
}

/* An entry's key: its cell's coordinates above ENTRY_FIRST_BITS bits saying on which axes that cell is its box's
 * first (bit i: axis i). */
#define ENTRY_FIRST_BITS 3
static inline int64_t cell_key(int64_t cx, int64_t cy, int64_t cz) {
    return ((cz << (2 * CELL_BITS)) | (cy << CELL_BITS) | cx) << ENTRY_FIRST_BITS;
}

static inline uint64_t bucket_of(int64_t cx, int64_t cy, int64_t cz, uint64_t mask) {
    uint64_t h = (uint64_t)cx * 73856093u ^ (uint64_t)cy * 19349663u ^ (uint64_t)cz * 83492791u;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h & mask;
}

/* The first position in sorted values[0 .. count) whose value is > bound (count if none): a binary search whose steps
 * depend on count only (a conditional move a step: its outcomes are close to random, a branch would mispredict). */
static inline int64_t first_above(const int64_t *values, int64_t count, int64_t bound) {
    if (count <= 0) return 0;
    const int64_t *base = values;
    while (count > 1) {
        int64_t half = count / 2;
        base += (int64_t)(base[half - 1] <= bound) * half; /* arithmetic, not a ternary: compilers branch on that */
        count -= half;
    }
    return (base - values) + (*base <= bound);
}

/* Whether key is among keys[first .. last) (a short run of sorted keys). */
static inline int listed_in(const int64_t *keys, int64_t first, int64_t last, int64_t key) {
    for (int64_t k = first; k < last; k++)
        if (keys[k] == key) return 1;
    return 0;
}

/* The run of sorted keys[0 .. count) within [base, base + span) of a query element whose keys start at base, for
 * queries in ascending order: *cursor (0 before the first query) is moved up to the first key >= base (its first
 * position is returned), then past the run (where it is left: the next query's run starts there or later). The moves
 * add up to count over a query call, where a binary search per element would cost two searches an element. */
static inline int64_t excluded_run_span(const int64_t *keys, int64_t count, int64_t *cursor, int64_t base,
                                        int64_t span) {
    int64_t at = *cursor;
    while (at < count && keys[at] < base) at++;
    int64_t run = at;
    while (at < count && keys[at] < base + span) at++;
    *cursor = at;
    return run;
}

static int excluded_key(const int64_t *keys, int64_t count, int64_t key) {
    int64_t at = first_above(keys, count, key - 1); /* the first key >= key */
    return at < count && keys[at] == key;
}

/* Box of a simplex of `corners` particles grown by `margin`, with round-off slack (self_pairs._overlapping's). */
static void grown_box(const double *x, const int64_t *corners, int corner_count, double margin, double *lo, double *hi) {
    for (int i = 0; i < 3; i++) lo[i] = hi[i] = x[3 * corners[0] + i];
    for (int k = 1; k < corner_count; k++)
        for (int i = 0; i < 3; i++) {
            double value = x[3 * corners[k] + i];
            if (value < lo[i]) lo[i] = value;
            if (value > hi[i]) hi[i] = value;
        }
    margin = margin * (1.0 + 1e-9) + 1e-12;
    for (int i = 0; i < 3; i++) {
        lo[i] -= margin;
        hi[i] += margin;
    }
}

typedef struct {
    const double *x;
    const int64_t *simplex; /* corners per element, `corners` each */
    int corners;
    const double *skin;
    double extra; /* margin = extra + skin[element] */
    const double *cache; /* (count, BOX_STRIDE): lo, hi of every element, for edges their midpoint, half length and
                          * half vector (q - p) / 2; written by fill_boxes only, read-only afterwards */
} Boxes;

#define BOX_STRIDE 13 /* lo 3, hi 3, then for edges midpoint 3, half length, half vector 3 */


/* Fill the box cache (`cache`, the same array as boxes->cache, writable) of elements 0 .. count - 1. */
static void fill_boxes(const Boxes *boxes, double *cache, int64_t count) {
    for (int64_t e = 0; e < count; e++) {
        double *box = cache + BOX_STRIDE * e;
        const int64_t *corners = boxes->simplex + boxes->corners * e;
        grown_box(boxes->x, corners, boxes->corners, boxes->extra + boxes->skin[e], box, box + 3);
        if (boxes->corners == 2) {
            const double *p = boxes->x + 3 * corners[0], *q = boxes->x + 3 * corners[1];
            double d[3];
            for (int i = 0; i < 3; i++) {
                box[6 + i] = 0.5 * (p[i] + q[i]);
                d[i] = q[i] - p[i];
                box[10 + i] = 0.5 * d[i];
            }
            box[9] = 0.5 * sqrt(dot3_in_order(d, d));
        }
    }
}

static inline void box_of(const Boxes *boxes, int64_t element, double *lo, double *hi) {
    const double *box = boxes->cache + BOX_STRIDE * element;
    for (int i = 0; i < 3; i++) {
        lo[i] = box[i];
        hi[i] = box[3 + i];
    }
}

/* Cell size: CELL_FACTOR times the mean grown extent of the inserted boxes, at least an eighth of the largest of them
 * (so no box spans more than nine cells per axis). */
static double cell_size(const Boxes *insert, int64_t insert_count) {
    double sum = 0.0, largest = 0.0;
    for (int64_t e = 0; e < insert_count; e++) {
        double lo[3], hi[3];
        box_of(insert, e, lo, hi);
        for (int i = 0; i < 3; i++) {
            double extent = hi[i] - lo[i];
            if (!(extent <= largest)) largest = extent == extent ? extent : largest;
            sum += extent;
        }
    }
    double h = insert_count ? CELL_FACTOR * sum / (3.0 * (double)insert_count) : 1.0;
    if (h < largest / 8.0) h = largest / 8.0;
    if (!(h > 0.0) || !isfinite(h)) h = 1.0;
    return h;
}

/* The grid's scale: cells of size h from the lowest corner of the boxes 0 .. count - 1 of `insert` (NaN corners
 * passed over). */
static Scale grid_scale(double h, const Boxes *insert, int64_t count) {
    Scale scale = {1.0 / h, {INFINITY, INFINITY, INFINITY}};
    for (int64_t e = 0; e < count; e++)
        for (int i = 0; i < 3; i++) {
            double lo = insert->cache[BOX_STRIDE * e + i];
            if (lo < scale.origin[i]) scale.origin[i] = lo;
        }
    for (int i = 0; i < 3; i++)
        if (!isfinite(scale.origin[i])) scale.origin[i] = 0.0;
    return scale;
}

/* The vertex-triangle grid's scale: the triangles' cell size, raised so that no vertex's query box (the point grown by
 * its skin, built inline by the callers) spans more than nine cells per axis either. */
static Scale vertex_triangle_scale(const Boxes *tris, int64_t t_count, const double *skin_v, int64_t n) {
    double h = cell_size(tris, t_count);
    for (int64_t v = 0; v < n; v++) {
        double extent = 2.0 * (skin_v[v] * (1.0 + 1e-9) + 1e-12);
        if (extent / 8.0 > h) h = extent / 8.0;
    }
    return grid_scale(h, tris, t_count);
}

/* Fill the grid (counting sort into buckets, stable in element order) with the elements 0 .. count - 1, or with
 * subset[0 .. count - 1] (their boxes already in the cache); returns the entries needed. */
static int64_t fill_grid(const Boxes *insert, const int64_t *subset, int64_t count, const Scale *scale,
                         int64_t table_size, int64_t *start, int64_t capacity, int64_t *entry_element,
                         int64_t *entry_key) {
    uint64_t mask = (uint64_t)table_size - 1;
    for (int64_t b = 0; b <= table_size; b++) start[b] = 0;
    int64_t total = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t e = subset != NULL ? subset[i] : i;
        double lo[3], hi[3];
        box_of(insert, e, lo, hi);
        int64_t c0[3], c1[3];
        for (int i = 0; i < 3; i++) {
            c0[i] = cell_of(lo[i], scale, i);
            c1[i] = cell_of(hi[i], scale, i);
        }
        for (int64_t cx = c0[0]; cx <= c1[0]; cx++)
            for (int64_t cy = c0[1]; cy <= c1[1]; cy++)
                for (int64_t cz = c0[2]; cz <= c1[2]; cz++) {
                    start[bucket_of(cx, cy, cz, mask) + 1]++;
                    total++;
                }
    }
    if (total > capacity) return total;
    for (int64_t b = 0; b < table_size; b++) start[b + 1] += start[b];
    /* start[b] is the write cursor of bucket b; afterwards it is the start of bucket b + 1, shifted back below. */
    for (int64_t i = 0; i < count; i++) {
        int64_t e = subset != NULL ? subset[i] : i;
        double lo[3], hi[3];
        box_of(insert, e, lo, hi);
        int64_t c0[3], c1[3];
        for (int i = 0; i < 3; i++) {
            c0[i] = cell_of(lo[i], scale, i);
            c1[i] = cell_of(hi[i], scale, i);
        }
        for (int64_t cx = c0[0]; cx <= c1[0]; cx++)
            for (int64_t cy = c0[1]; cy <= c1[1]; cy++)
                for (int64_t cz = c0[2]; cz <= c1[2]; cz++) {
                    int64_t at = start[bucket_of(cx, cy, cz, mask)]++;
                    entry_element[at] = e;
                    entry_key[at] = cell_key(cx, cy, cz) | (int64_t)(cx == c0[0]) | (int64_t)(cy == c0[1]) << 1 |
                                    (int64_t)(cz == c0[2]) << 2;
                }
    }
    for (int64_t b = table_size; b > 0; b--) start[b] = start[b - 1];
    start[0] = 0;
    return total;
}

/* Run BODY for every inserted box overlapping the query box (qlo, qhi), each once, with ELEMENT its element: from
 * the cell that holds the lower corner of the two boxes' intersection (entries of other cells sharing the bucket are
 * skipped by their keys). Elements for which SKIP holds are passed over before their keys are read.
 *
 * The intersection's lower corner max(qlo, elo) lies, per axis, in the larger of the two boxes' first cells (cell_of
 * is monotone); both boxes cover the visited cell c, so their first cells are <= c and that larger one is c exactly
 * when one of them starts at c. Per axis that is a bit of the query's cell (qfirst_) or of the entry's key: one OR of
 * integers, before the box test (boxes from the insert set's cache), which it spares the duplicates. A bucket's scan
 * reads two int64 an entry. Only the entries of elements > ABOVE are read (the scan runs from the bucket's end back;
 * -1: all), as the buckets' elements ascend when the grid holds all elements or an ascending subset). SKIP (on ELEMENT, with the
 * entry's key) and KEEP (on ELEMENT, after the box test) are int expressions without side effects, evaluated for
 * every entry that reaches them: passed over when SKIP holds or KEEP does not. */

#define SCAN_BUFFER 64 /* FOR_EACH_OVERLAP gathers this many candidates of a bucket before testing their boxes */

#define FOR_EACH_OVERLAP(insert, scale, table_size, start, entry_element, entry_key, qlo, qhi, ELEMENT, ABOVE, SKIP, \
                         KEEP, BODY)                                                                            \
    do {                                                                                                                \
        uint64_t mask_ = (uint64_t)(table_size) - 1;                                                                    \
        int64_t q0_[3], q1_[3];                                                                                         \
        for (int i_ = 0; i_ < 3; i_++) {                                                                                \
            q0_[i_] = cell_of((qlo)[i_], scale, i_);                                                                    \
            q1_[i_] = cell_of((qhi)[i_], scale, i_);                                                                    \
        }                                                                                                               \
        for (int64_t cx_ = q0_[0]; cx_ <= q1_[0]; cx_++)                                                                \
            for (int64_t cy_ = q0_[1]; cy_ <= q1_[1]; cy_++)                                                            \
                for (int64_t cz_ = q0_[2]; cz_ <= q1_[2]; cz_++) {                                                      \
                    uint64_t b_ = bucket_of(cx_, cy_, cz_, mask_);                                                      \
                    int64_t cell_ = cell_key(cx_, cy_, cz_) | 7;                                                        \
                    int64_t qfirst_ = (int64_t)(cx_ == q0_[0]) | (int64_t)(cy_ == q0_[1]) << 1 |                        \
                                      (int64_t)(cz_ == q0_[2]) << 2;                                                    \
                    int64_t first_ = (start)[b_], at_ = (start)[b_ + 1];                                                \
                    while (at_ > first_) {                                                                              \
                        /* Gather without branches (the tests' outcomes are close to random): the entries of this     \
                         * cell that are the pair's cell and not SKIP, then those whose boxes overlap. From the       \
                         * bucket's end back, up to the first element <= ABOVE (the elements ascend). */              \
                        int64_t found_[SCAN_BUFFER], kept_ = 0;                                                         \
                        int64_t stop_ = at_ - first_ > SCAN_BUFFER ? at_ - SCAN_BUFFER : first_;                        \
                        while (at_ > stop_) {                                                                           \
                            int64_t ELEMENT = (entry_element)[--at_];                                                   \
                            if (ELEMENT <= (ABOVE)) {                                                                   \
                                at_ = first_;                                                                           \
                                break;                                                                                  \
                            }                                                                                           \
                            int64_t key_ = (entry_key)[at_];                                                            \
                            found_[kept_] = ELEMENT;                                                                    \
                            kept_ += (int64_t)(!(SKIP)) & (int64_t)((key_ | 7) == cell_) &                              \
                                     (int64_t)(((key_ & 7) | qfirst_) == 7);                                            \
                        }                                                                                               \
                        int64_t boxed_ = 0;                                                                             \
                        for (int64_t k_ = 0; k_ < kept_; k_++) {                                                        \
                            const double *ebox_ = (insert)->cache + BOX_STRIDE * found_[k_];                            \
                            found_[boxed_] = found_[k_];                                                                \
                            /* NaN: overlapping */                                                                      \
                            boxed_ += (int64_t)(!((qlo)[0] > ebox_[3])) & (int64_t)(!(ebox_[0] > (qhi)[0])) &           \
                                      (int64_t)(!((qlo)[1] > ebox_[4])) & (int64_t)(!(ebox_[1] > (qhi)[1])) &           \
                                      (int64_t)(!((qlo)[2] > ebox_[5])) & (int64_t)(!(ebox_[2] > (qhi)[2]));            \
                        }                                                                                               \
                        kept_ = 0;                                                                                      \
                        for (int64_t k_ = 0; k_ < boxed_; k_++) {                                                       \
                            int64_t ELEMENT = found_[k_];                                                               \
                            (void)ELEMENT;                                                                              \
                            found_[kept_] = ELEMENT;                                                                    \
                            kept_ += (int64_t)(KEEP);                                                                   \
                        }                                                                                               \
                        boxed_ = kept_;                                                                                 \
                        for (int64_t k_ = 0; k_ < boxed_; k_++) {                                                       \
                            int64_t ELEMENT = found_[k_];                                                               \
                            BODY                                                                                        \
                        }                                                                                               \
                    }                                                                                                   \
                }                                                                                                       \
    } while (0)

/* Sort the pairs out[first .. last) (other element `other`, distance `d`) by `other`: one query element's pairs,
 * few, found in cell order (insertion sort; no two have the same other element). */
static void sort_group(int64_t *other, double *d, int64_t first, int64_t last) {
    for (int64_t i = first + 1; i < last; i++) {
        int64_t key = other[i];
        double value = d[i];
        int64_t j = i;
        for (; j > first && other[j - 1] > key; j--) {
            other[j] = other[j - 1];
            d[j] = d[j - 1];
        }
        other[j] = key;
        d[j] = value;
    }
}

/* The builds come in two parts so that several threads can share one (src/softsim_native.h): a prepare step (the
 * boxes into box_scratch, the grid's scale into scale_out (4 doubles: 1 / cell size, origin), the grid filled) and a
 * query of a range of the query elements, which only reads x, the boxes, the scale and the grid and writes its own
 * outputs: queries of disjoint ranges may run at once. The query elements it runs are the blocks of `block` elements
 * starting at first, first + stride, first + 2 stride, ... below last (block = stride = last - first: all of them);
 * every query element's pairs come out together, sorted by the other element, in query order. */

/* The grid's scale as prepare leaves it in the caller's 4 doubles. */
static void store_scale(const Scale *scale, double *out) {
    out[0] = scale->inv_h;
    for (int i = 0; i < 3; i++) out[1 + i] = scale->origin[i];
}

static Scale load_scale(const double *stored) {
    Scale scale = {stored[0], {stored[1], stored[2], stored[3]}};
    return scale;
}

SOFTSIM_API int64_t softsim_self_vt_prepare(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                            const double *skin_v, const double *skin_t, double reach,
                                            int64_t table_size, int64_t *table_start, int64_t entry_capacity,
                                            int64_t *entry_element, int64_t *entry_cell, int64_t *needs,
                                            double *box_scratch, double *scale_out) {
    Boxes tris = {x, triangles, 3, skin_t, reach, box_scratch};
    needs[0] = 0;
    if (n == 0 || t_count == 0) return 0;
    fill_boxes(&tris, box_scratch, t_count);
    Scale scale = vertex_triangle_scale(&tris, t_count, skin_v, n);
    store_scale(&scale, scale_out);
    int64_t entries = fill_grid(&tris, NULL, t_count, &scale, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    return entries > entry_capacity ? -1 : entries;
}

/* Whether point p is more than `limit` from triangle (A, B, C) along the line through the triangle's centroid c and
 * p, with round-off slack (then the exact distance would be too: ee_may_pair's projection test, for a point). The
 * triangle's projection on u = g / |g| (g = p - c) reaches at most max_i (corner_i - c) . g / |g| past c's, p's lies
 * |g| past it: the gap g . g - max_i (corner_i - c) . g, over |g|, is at most the distance. Compared squared, without
 * the root; the slack is 1e-9 of limit + the extents of the triangle's grown box (box: its lo, hi) + 1e-12, a million
 * times the round-off of these few operations. It drops the sheet's own near vertices that a box keeps (on the
 * folded 64 x 64 lab cloth, 60% of the vertex-triangle distances). */
static inline int vt_apart_along(const double *p, const double *A, const double *B, const double *C,
                                 const double *box, double limit) {
    double c[3], g[3], a[3], b[3], e[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (A[i] + B[i] + C[i]) / 3.0;
        g[i] = p[i] - c[i];
        a[i] = A[i] - c[i];
        b[i] = B[i] - c[i];
        e[i] = C[i] - c[i];
    }
    double gg = dot3_in_order(g, g);
    double reach_a = dot3_in_order(a, g), reach_b = dot3_in_order(b, g), reach_c = dot3_in_order(e, g);
    double most = reach_a > reach_b ? reach_a : reach_b;
    most = most > reach_c ? most : reach_c;
    double gap = gg - most;
    double extent = (box[3] - box[0]) + (box[4] - box[1]) + (box[5] - box[2]);
    double slack = limit + 1e-9 * (limit + extent) + 1e-12;
    return (gap > 0.0) & (gap * gap > slack * slack * gg);
}

SOFTSIM_API int64_t softsim_self_vt_query(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                          const double *skin_v, const double *skin_t, double reach,
                                          const int64_t *excluded, int64_t excluded_count, int64_t table_size,
                                          const int64_t *table_start, const int64_t *entry_element,
                                          const int64_t *entry_cell, const double *box_scratch,
                                          const double *scale_in, int64_t first, int64_t last, int64_t block,
                                          int64_t stride, int64_t pair_capacity, int64_t *out_v, int64_t *out_t,
                                          double *out_d) {
    const Boxes tris = {x, triangles, 3, skin_t, reach, box_scratch};
    int64_t count = 0;
    if (n == 0 || t_count == 0) return 0;
    const Scale scale = load_scale(scale_in);
    int64_t cursor = 0;
    for (int64_t begin = first; begin < last; begin += stride) {
        int64_t end = last - begin > block ? begin + block : last;
        for (int64_t v = begin; v < end; v++) {
            const double *p = x + 3 * v;
            double qlo[3], qhi[3];
            double margin = skin_v[v] * (1.0 + 1e-9) + 1e-12;
            for (int i = 0; i < 3; i++) {
                qlo[i] = p[i] - margin;
                qhi[i] = p[i] + margin;
            }
            int64_t group = count;
            /* v's excluded triangles: the run of keys v * t_count + t (excluded_run_span: the queries ascend) */
            int64_t ex_first = excluded_run_span(excluded, excluded_count, &cursor, v * t_count, t_count);
            int64_t ex_last = cursor;
            FOR_EACH_OVERLAP(&tris, &scale, table_size, table_start, entry_element, entry_cell, qlo, qhi, t, -1, 0,
                             (triangles[3 * t] != v) & (triangles[3 * t + 1] != v) & (triangles[3 * t + 2] != v), {
                const int64_t *tri = triangles + 3 * t;
                /* v's excluded triangles: the short run of keys found once for v */
                if (listed_in(excluded, ex_first, ex_last, v * t_count + t)) continue;
                double limit = reach + skin_v[v] + skin_t[t];
                const double *A = x + 3 * tri[0];
                const double *B = x + 3 * tri[1];
                const double *C = x + 3 * tri[2];
                if (vt_apart_along(p, A, B, C, tris.cache + BOX_STRIDE * t, limit)) continue;
                double d = vt_distance(p, A, B, C, 0);
                if (!(d <= limit)) continue;
                count = record_pair(out_v, out_t, out_d, count, pair_capacity, v, t, d);
            });
            if (count <= pair_capacity) sort_group(out_t, out_d, group, count);
        }
    }
    return count;
}

SOFTSIM_API int64_t softsim_self_vt_pairs(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                              const double *skin_v, const double *skin_t, double reach, const int64_t *excluded,
                              int64_t excluded_count, int64_t table_size, int64_t *table_start,
                              int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                              int64_t pair_capacity, int64_t *out_v, int64_t *out_t, double *out_d, int64_t *needs,
                              double *box_scratch) {
    double scale[4];
    if (softsim_self_vt_prepare(x, n, triangles, t_count, skin_v, skin_t, reach, table_size, table_start,
                                entry_capacity, entry_element, entry_cell, needs, box_scratch, scale) < 0)
        return -1;
    return softsim_self_vt_query(x, n, triangles, t_count, skin_v, skin_t, reach, excluded, excluded_count, table_size,
                                 table_start, entry_element, entry_cell, box_scratch, scale, 0, n, n, n,
                                 pair_capacity, out_v, out_t, out_d);
}

/* Whether edges a and b may be an edge-edge pair of softsim_self_ee_pairs before the exact distance, without branches:
 * no shared vertex, their bounding spheres (midpoint, half length; cache as fill_boxes leaves it) within reach + the
 * two skins, and the segments' projections on the line through the two midpoints too, each with round-off slack
 * (necessary conditions of the exact test, cheaper).
 *
 * The projection test: projecting on a unit vector u moves no two points farther apart, so the gap between the two
 * segments' intervals along u = g / |g| (g from b's midpoint to a's), |g| - (|h_a . g| + |h_b . g|) / |g| with h the
 * half vectors, is at most their distance. Compared squared, without the root: the gap exceeds L when
 * G = g . g - (|h_a . g| + |h_b . g|) > 0 and G^2 > L^2 g . g. L is the limit plus 1e-9 of limit + the two half
 * lengths (a bound on |g| wherever the test can matter) + 1e-12, a million times the round-off of these few
 * operations, so no pair within the limit is dropped. It drops the sheet's own side-by-side neighbours, which the
 * spheres keep (on the folded 64 x 64 lab cloth, 42% of the exact distances the spheres let through). */
static inline int ee_may_pair(const int64_t *edges, const double *cache, const double *skin_e, double reach, int64_t a,
                              int64_t b) {
    const int64_t *A = edges + 2 * a, *B = edges + 2 * b;
    int apart = (A[0] != B[0]) & (A[0] != B[1]) & (A[1] != B[0]) & (A[1] != B[1]);
    double limit = reach + skin_e[a] + skin_e[b];
    const double *sa = cache + BOX_STRIDE * a + 6;
    const double *sb = cache + BOX_STRIDE * b + 6;
    double g[3];
    for (int i = 0; i < 3; i++) g[i] = sa[i] - sb[i];
    double gg = dot3_in_order(g, g);
    double r = (limit + sa[3] + sb[3]) * (1.0 + 1e-9) + 1e-12;
    double gap = gg - (fabs(dot3_in_order(sa + 4, g)) + fabs(dot3_in_order(sb + 4, g)));
    double slack = limit + 1e-9 * (limit + sa[3] + sb[3]) + 1e-12;
    int apart_along = (gap > 0.0) & (gap * gap > slack * slack * gg);
    return apart & !(gg > r * r) & !apart_along;
}

SOFTSIM_API int64_t softsim_self_ee_prepare(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                            const double *skin_e, double reach, int64_t table_size,
                                            int64_t *table_start, int64_t entry_capacity, int64_t *entry_element,
                                            int64_t *entry_cell, int64_t *needs, double *box_scratch,
                                            double *scale_out) {
    (void)n;
    Boxes boxes = {x, edges, 2, skin_e, 0.5 * reach, box_scratch};
    needs[0] = 0;
    if (e_count < 2) return 0;
    fill_boxes(&boxes, box_scratch, e_count);
    Scale scale = grid_scale(cell_size(&boxes, e_count), &boxes, e_count);
    store_scale(&scale, scale_out);
    int64_t entries = fill_grid(&boxes, NULL, e_count, &scale, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    return entries > entry_capacity ? -1 : entries;
}

SOFTSIM_API int64_t softsim_self_ee_query(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                          const double *skin_e, double reach, const int64_t *excluded,
                                          int64_t excluded_count, int64_t table_size, const int64_t *table_start,
                                          const int64_t *entry_element, const int64_t *entry_cell,
                                          const double *box_scratch, const double *scale_in, int64_t first,
                                          int64_t last, int64_t block, int64_t stride, int64_t pair_capacity,
                                          int64_t *out_a, int64_t *out_b, double *out_d) {
    (void)n;
    const Boxes boxes = {x, edges, 2, skin_e, 0.5 * reach, box_scratch};
    int64_t count = 0;
    if (e_count < 2) return 0;
    const Scale scale = load_scale(scale_in);
    int64_t cursor = 0;
    for (int64_t begin = first; begin < last; begin += stride) {
        int64_t end = last - begin > block ? begin + block : last;
        for (int64_t a = begin; a < end; a++) {
            double qlo[3], qhi[3];
            box_of(&boxes, a, qlo, qhi);
            const int64_t *A = edges + 2 * a;
            int64_t group = count;
            /* a's excluded partners: the run of keys a * e_count + b, found once (few: searched per pair they cost
             * more than the distance; excluded_run_span: the queries ascend) */
            int64_t ex_first = excluded_run_span(excluded, excluded_count, &cursor, a * e_count, e_count);
            int64_t ex_last = cursor;
            FOR_EACH_OVERLAP(&boxes, &scale, table_size, table_start, entry_element, entry_cell, qlo, qhi, b, a, 0,
                             ee_may_pair(edges, boxes.cache, skin_e, reach, a, b), {
                /* a's excluded partners first: a rest-close pair (the two diagonals of a quad) is within reach, its
                 * distance would be spent for nothing */
                if (listed_in(excluded, ex_first, ex_last, a * e_count + b)) continue;
                const int64_t *B = edges + 2 * b;
                double limit = reach + skin_e[a] + skin_e[b];
                double d = ee_distance(x + 3 * A[0], x + 3 * A[1], x + 3 * B[0], x + 3 * B[1]);
                if (!(d <= limit)) continue;
                count = record_pair(out_a, out_b, out_d, count, pair_capacity, a, b, d);
            });
            if (count <= pair_capacity) sort_group(out_b, out_d, group, count);
        }
    }
    return count;
}

SOFTSIM_API int64_t softsim_self_ee_pairs(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                              const double *skin_e, double reach, const int64_t *excluded, int64_t excluded_count,
                              int64_t table_size, int64_t *table_start, int64_t entry_capacity,
                              int64_t *entry_element, int64_t *entry_cell, int64_t pair_capacity, int64_t *out_a,
                              int64_t *out_b, double *out_d, int64_t *needs, double *box_scratch) {
    double scale[4];
    if (softsim_self_ee_prepare(x, n, edges, e_count, skin_e, reach, table_size, table_start, entry_capacity,
                                entry_element, entry_cell, needs, box_scratch, scale) < 0)
        return -1;
    return softsim_self_ee_query(x, n, edges, e_count, skin_e, reach, excluded, excluded_count, table_size,
                                 table_start, entry_element, entry_cell, box_scratch, scale, 0, e_count, e_count,
                                 e_count, pair_capacity, out_a, out_b, out_d);
}

#define GROW_SCAN 256 /* at most this many grown elements: scan every box instead of filling a grid */
#define GROW_CHUNK 8 /* the scan tests an element's box against the union box of each run of this many grown ones */

/* A union box (lo, hi: 6 doubles) that holds nothing yet. */
static inline void empty_box(double *box) {
    for (int i = 0; i < 3; i++) {
        box[i] = INFINITY;
        box[3 + i] = -INFINITY;
    }
}

/* The union box `box` grown to hold the box (lo, hi). NaN boxes: the union takes every axis as overlapping (a NaN
 * compares false both ways, so it is taken where it comes). */
static inline void widen_box(double *box, const double *lo, const double *hi) {
    for (int i = 0; i < 3; i++) {
        box[i] = lo[i] < box[i] || lo[i] != lo[i] ? lo[i] : box[i];
        box[3 + i] = hi[i] > box[3 + i] || hi[i] != hi[i] ? hi[i] : box[3 + i];
    }
}

/* Union boxes (lo, hi: 6 doubles each) of the runs of GROW_CHUNK of `count` boxes, box k at cache + stride * id(k)
 * (id(k) = ids[k]), or, for points (ids of vertices, stride 0 unused), of the points grown by their skins. */
static int64_t chunk_boxes(const double *cache, const int64_t *ids, int64_t count, const double *points,
                           const double *skin, double *chunks) {
    int64_t chunk_count = (count + GROW_CHUNK - 1) / GROW_CHUNK;
    for (int64_t c = 0; c < chunk_count; c++) {
        double *box = chunks + 6 * c;
        empty_box(box);
        for (int64_t k = c * GROW_CHUNK; k < count && k < (c + 1) * GROW_CHUNK; k++) {
            double lo[3], hi[3];
            if (points != NULL) {
                double margin = skin[ids[k]] * (1.0 + 1e-9) + 1e-12;
                for (int i = 0; i < 3; i++) {
                    lo[i] = points[3 * ids[k] + i] - margin;
                    hi[i] = points[3 * ids[k] + i] + margin;
                }
            } else {
                for (int i = 0; i < 3; i++) {
                    lo[i] = cache[BOX_STRIDE * ids[k] + i];
                    hi[i] = cache[BOX_STRIDE * ids[k] + 3 + i];
                }
            }
            widen_box(box, lo, hi);
        }
    }
    return chunk_count;
}

#define GROW_SUPER 8 /* ... and first against the union box of each run of this many of those runs */

/* Union boxes of the runs of GROW_SUPER of chunk_count chunk boxes (widen_box), their count. */
static int64_t super_boxes(const double *chunks, int64_t chunk_count, double *supers) {
    int64_t super_count = (chunk_count + GROW_SUPER - 1) / GROW_SUPER;
    for (int64_t s = 0; s < super_count; s++) {
        double *box = supers + 6 * s;
        empty_box(box);
        for (int64_t c = s * GROW_SUPER; c < chunk_count && c < (s + 1) * GROW_SUPER; c++)
            widen_box(box, chunks + 6 * c, chunks + 6 * c + 3);
    }
    return super_count;
}

/* The chunks c of the runs whose union box overlaps `box`: a loop header (supers, super_count, chunk_count of the
 * caller's). */
#define FOR_EACH_NEAR_CHUNK(c, box)                                                                                     \
    for (int64_t s_ = 0; s_ < super_count; s_++)                                                                        \
        if (box_overlap(supers + 6 * s_, box))                                                                          \
            for (int64_t c = s_ * GROW_SUPER; c < chunk_count && c < (s_ + 1) * GROW_SUPER; c++)

/* Whether boxes (lo, hi) a and b overlap: FOR_EACH_OVERLAP's test (NaN: overlapping). */
static inline int box_overlap(const double *a, const double *b) {
    for (int i = 0; i < 3; i++)
        if (a[i] > b[3 + i] || b[i] > a[3 + i]) return 0;
    return 1;
}

/* Whether the box of point p grown by skin (with _overlapping's slack) overlaps a cached box (lo, hi): the grid's
 * overlap test (FOR_EACH_OVERLAP). */
static inline int point_box_overlap(const double *p, double skin, const double *box) {
    double margin = skin * (1.0 + 1e-9) + 1e-12;
    for (int i = 0; i < 3; i++)
        if (p[i] - margin > box[3 + i] || box[i] > p[i] + margin) return 0;
    return 1;
}

/* A candidate vertex-triangle pair (v, t) of a growth, tri the triangle's corners: the tests of softsim_self_vt_pairs
 * and not listed yet; recorded (a statement inside a loop over candidates: `continue` passes one over). */
#define GROW_VT_PAIR(v, t)                                                                                              \
    {                                                                                                                   \
        if (tri[0] == (v) || tri[1] == (v) || tri[2] == (v)) continue;                                                  \
        double d_ = vt_distance(x + 3 * (v), x + 3 * tri[0], x + 3 * tri[1], x + 3 * tri[2], 0);                        \
        if (!(d_ <= reach + skin_v[v] + skin_t[t])) continue;                                                           \
        int64_t key_ = (v) * t_count + (t);                                                                             \
        if (excluded_count && excluded_key(excluded, excluded_count, key_)) continue;                                   \
        if (listed_count && excluded_key(listed, listed_count, key_)) continue;                                         \
        count = record_pair(out_v, out_t, out_d, count, pair_capacity, (v), (t), d_);                                   \
    }

/* The skin growth of a Verlet list (SelfBroadPhase._grow), twin of its k-d tree queries at the build's positions:
 * the vertex-triangle pairs of the grown vertices grown_v (any triangle) and of the grown triangles grown_t (any
 * vertex not grown: those pairs come from the vertex's own query), within reach + the two elements' (new) skins,
 * admissible (no shared vertex, not excluded) and not listed yet (sorted keys `listed`, v * t_count + t). The same
 * grid and tests as softsim_self_vt_pairs: first a grid of every triangle queried by the grown vertices, then a grid
 * of the grown triangles only queried by every other vertex (same cell size); with at most GROW_SCAN grown vertices
 * and triangles, every triangle's box against the grown vertices' and every vertex's against the grown triangles'
 * instead (the same boxes and tests; runs of GROW_CHUNK grown elements tested by their union box first). grown_v_mask (n,): 1 for a grown vertex. Buffers, needs and the return as softsim_self_vt_pairs; output by query, the caller sorts by key. */
SOFTSIM_API int64_t softsim_self_vt_grow(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                         const double *skin_v, const double *skin_t, double reach,
                                         const int64_t *excluded, int64_t excluded_count, const int64_t *listed,
                                         int64_t listed_count, const int64_t *grown_v, int64_t grown_v_count,
                                         const unsigned char *grown_v_mask, const int64_t *grown_t,
                                         int64_t grown_t_count, int64_t table_size, int64_t *table_start,
                                         int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                                         int64_t pair_capacity, int64_t *out_v, int64_t *out_t, double *out_d,
                                         int64_t *needs, double *box_scratch) {
    Boxes tris = {x, triangles, 3, skin_t, reach, box_scratch};
    int64_t count = 0;
    needs[0] = 0;
    if (n == 0 || t_count == 0 || (grown_v_count == 0 && grown_t_count == 0)) return 0;
    fill_boxes(&tris, box_scratch, t_count);
    if (grown_v_count <= GROW_SCAN && grown_t_count <= GROW_SCAN) {
        /* Grown elements few enough: every box against theirs (runs of them first, by their union box, and runs of
         * those by theirs), no grid (its fill costs more than these tests). */
        double chunks[6 * (GROW_SCAN / GROW_CHUNK)], supers[6 * (GROW_SCAN / GROW_CHUNK)];
        int64_t chunk_count = chunk_boxes(NULL, grown_v, grown_v_count, x, skin_v, chunks);
        int64_t super_count = super_boxes(chunks, chunk_count, supers);
        for (int64_t t = 0; t < t_count && chunk_count; t++) {
            const double *tbox = tris.cache + BOX_STRIDE * t;
            const int64_t *tri = triangles + 3 * t;
            FOR_EACH_NEAR_CHUNK(c, tbox) {
                if (!box_overlap(chunks + 6 * c, tbox)) continue;
                for (int64_t q = c * GROW_CHUNK; q < grown_v_count && q < (c + 1) * GROW_CHUNK; q++) {
                    int64_t v = grown_v[q];
                    if (!point_box_overlap(x + 3 * v, skin_v[v], tbox)) continue;
                    GROW_VT_PAIR(v, t);
                }
            }
        }
        chunk_count = chunk_boxes(tris.cache, grown_t, grown_t_count, NULL, NULL, chunks);
        super_count = super_boxes(chunks, chunk_count, supers);
        for (int64_t v = 0; v < n && chunk_count; v++) {
            if (grown_v_mask[v]) continue;
            double margin = skin_v[v] * (1.0 + 1e-9) + 1e-12, vbox[6];
            for (int i = 0; i < 3; i++) {
                vbox[i] = x[3 * v + i] - margin;
                vbox[3 + i] = x[3 * v + i] + margin;
            }
            FOR_EACH_NEAR_CHUNK(c, vbox) {
                if (!box_overlap(chunks + 6 * c, vbox)) continue;
                for (int64_t q = c * GROW_CHUNK; q < grown_t_count && q < (c + 1) * GROW_CHUNK; q++) {
                    int64_t t = grown_t[q];
                    const int64_t *tri = triangles + 3 * t;
                    if (!point_box_overlap(x + 3 * v, skin_v[v], tris.cache + BOX_STRIDE * t)) continue;
                    GROW_VT_PAIR(v, t);
                }
            }
        }
        return count;
    }
    Scale scale = vertex_triangle_scale(&tris, t_count, skin_v, n); /* the grid's only (the scan above has none) */
    for (int part = 0; part < 2; part++) {
        int64_t queries = part == 0 ? grown_v_count : n;
        if (queries == 0 || (part == 1 && grown_t_count == 0)) continue;
        int64_t entries = fill_grid(&tris, part == 0 ? NULL : grown_t, part == 0 ? t_count : grown_t_count, &scale,
                                    table_size, table_start, entry_capacity, entry_element, entry_cell);
        if (entries > needs[0]) needs[0] = entries;
        if (entries > entry_capacity) return -1;
        for (int64_t q = 0; q < queries; q++) {
            int64_t v = part == 0 ? grown_v[q] : q;
            if (part == 1 && grown_v_mask[v]) continue;
            const double *p = x + 3 * v;
            double qlo[3], qhi[3];
            double margin = skin_v[v] * (1.0 + 1e-9) + 1e-12;
            for (int i = 0; i < 3; i++) {
                qlo[i] = p[i] - margin;
                qhi[i] = p[i] + margin;
            }
            FOR_EACH_OVERLAP(&tris, &scale, table_size, table_start, entry_element, entry_cell, qlo, qhi, t, -1, 0, 1, {
                const int64_t *tri = triangles + 3 * t;
                GROW_VT_PAIR(v, t);
            });
        }
    }
    return count;
}

/* A candidate edge-edge pair of a growth, a and b in either order: the tests of softsim_self_ee_pairs on (lo, hi) =
 * (min, max) and not listed yet; recorded (a statement inside a loop over candidates: `continue` passes one over). */
#define GROW_EE_PAIR(a, b)                                                                                             \
    {                                                                                                                   \
        int64_t lo_ = (a) < (b) ? (a) : (b);                                                                            \
        int64_t hi_ = (a) < (b) ? (b) : (a);                                                                            \
        const int64_t *A_ = edges + 2 * lo_;                                                                            \
        const int64_t *B_ = edges + 2 * hi_;                                                                            \
        if (A_[0] == B_[0] || A_[0] == B_[1] || A_[1] == B_[0] || A_[1] == B_[1]) continue;                             \
        double limit_ = reach + skin_e[lo_] + skin_e[hi_];                                                              \
        /* The bounding-sphere test of softsim_self_ee_pairs. */                                                        \
        const double *sa_ = boxes.cache + BOX_STRIDE * lo_ + 6;                                                         \
        const double *sb_ = boxes.cache + BOX_STRIDE * hi_ + 6;                                                         \
        double g_[3];                                                                                                   \
        for (int i_ = 0; i_ < 3; i_++) g_[i_] = sa_[i_] - sb_[i_];                                                      \
        double r_ = (limit_ + sa_[3] + sb_[3]) * (1.0 + 1e-9) + 1e-12;                                                  \
        if (dot3_in_order(g_, g_) > r_ * r_) continue;                                                                  \
        double d_ = ee_distance(x + 3 * A_[0], x + 3 * A_[1], x + 3 * B_[0], x + 3 * B_[1]);                            \
        if (!(d_ <= limit_)) continue;                                                                                  \
        int64_t key_ = lo_ * e_count + hi_;                                                                             \
        if (excluded_count && excluded_key(excluded, excluded_count, key_)) continue;                                   \
        if (listed_count && excluded_key(listed, listed_count, key_)) continue;                                         \
        count = record_pair(out_a, out_b, out_d, count, pair_capacity, lo_, hi_, d_);                                   \
    }

/* The edge-edge pairs of a skin growth (SelfBroadPhase._grow): every pair (a, b), a < b, with a grown edge (grown_e,
 * grown_e_mask (e,) 1 for those), within reach + the two edges' (new) skins, admissible and not listed yet (sorted
 * keys `listed`, a * e_count + b); the grid and tests of softsim_self_ee_pairs, queried by the grown edges (a pair of
 * two grown edges from the lower one's query), or with at most GROW_SCAN grown edges every box against theirs. Buffers, needs and the return as softsim_self_ee_pairs. */
SOFTSIM_API int64_t softsim_self_ee_grow(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                         const double *skin_e, double reach, const int64_t *excluded,
                                         int64_t excluded_count, const int64_t *listed, int64_t listed_count,
                                         const int64_t *grown_e, int64_t grown_e_count,
                                         const unsigned char *grown_e_mask, int64_t table_size, int64_t *table_start,
                                         int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                                         int64_t pair_capacity, int64_t *out_a, int64_t *out_b, double *out_d,
                                         int64_t *needs, double *box_scratch) {
    (void)n;
    Boxes boxes = {x, edges, 2, skin_e, 0.5 * reach, box_scratch};
    int64_t count = 0;
    needs[0] = 0;
    if (e_count < 2 || grown_e_count == 0) return 0;
    fill_boxes(&boxes, box_scratch, e_count);
    if (grown_e_count <= GROW_SCAN) {
        /* Grown edges few enough: every box against theirs (runs of them first, by their union box, and runs of those
         * by theirs), no grid. */
        double chunks[6 * (GROW_SCAN / GROW_CHUNK)], supers[6 * (GROW_SCAN / GROW_CHUNK)];
        int64_t chunk_count = chunk_boxes(boxes.cache, grown_e, grown_e_count, NULL, NULL, chunks);
        int64_t super_count = super_boxes(chunks, chunk_count, supers);
        for (int64_t b = 0; b < e_count; b++) {
            const double *bbox = boxes.cache + BOX_STRIDE * b;
            FOR_EACH_NEAR_CHUNK(c, bbox) {
                if (!box_overlap(chunks + 6 * c, bbox)) continue;
                for (int64_t q = c * GROW_CHUNK; q < grown_e_count && q < (c + 1) * GROW_CHUNK; q++) {
                    int64_t a = grown_e[q];
                    if (b == a || (grown_e_mask[b] && b < a)) continue;
                    if (!box_overlap(boxes.cache + BOX_STRIDE * a, bbox)) continue;
                    GROW_EE_PAIR(a, b);
                }
            }
        }
        return count;
    }
    Scale scale = grid_scale(cell_size(&boxes, e_count), &boxes, e_count);
    int64_t entries = fill_grid(&boxes, NULL, e_count, &scale, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    if (entries > entry_capacity) return -1;
    for (int64_t q = 0; q < grown_e_count; q++) {
        int64_t a = grown_e[q];
        double qlo[3], qhi[3];
        box_of(&boxes, a, qlo, qhi);
        FOR_EACH_OVERLAP(&boxes, &scale, table_size, table_start, entry_element, entry_cell, qlo, qhi, b, -1,
                         (b == a) | (grown_e_mask[b] & (b < a)), 1, { GROW_EE_PAIR(a, b); });
    }
    return count;
}
