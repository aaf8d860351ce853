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
 * _ee_distance) operation for operation.
 *
 * Buffers are the caller's: a bucket table (table_size + 1, table_size a power of two), the grid entries up to
 * entry_capacity (entry_element (capacity,) and entry_cell (capacity, ENTRY_STRIDE = 9) int64: the cell x, y, z and
 * the element's box beside it, so a bucket's scan reads its boxes in order), and the pair outputs up to pair_capacity. needs[0] receives the entries the grid
 * needs; when that exceeds entry_capacity nothing else is done and the call returns -1. Otherwise it returns the
 * number of pairs, writing the first pair_capacity of them: a larger return asks the caller to grow and call again.
 * Output order: by pair key (by query element, and within one element's pairs by the other element: sorted here, so
 * the caller's stable sort by key finds it sorted).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "self_geometry.h"
#include "softsim_native.h"

#define CELL_FACTOR 2.0 /* cell size / mean extent of the inserted boxes (the 64 x 64 lab cloth folding: 1.0 took 1.3-1.8x as long) */
#define CELL_LIMIT 1099511627776.0 /* 2^40: cell coordinates are clamped here (far-away or non-finite input) */

static inline int64_t cell_of(double value, double inv_h) {
    double c = floor(value * inv_h);
    if (!(c > -CELL_LIMIT)) c = -CELL_LIMIT; /* also NaN */
    if (c > CELL_LIMIT) c = CELL_LIMIT;
    return (int64_t)c;
}

static inline uint64_t bucket_of(int64_t cx, int64_t cy, int64_t cz, uint64_t mask) {
    uint64_t h = (uint64_t)cx * 73856093u ^ (uint64_t)cy * 19349663u ^ (uint64_t)cz * 83492791u;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h & mask;
}

static int excluded_key(const int64_t *keys, int64_t count, int64_t key) {
    int64_t lo = 0, hi = count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && keys[lo] == key;
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
    double *cache; /* (count, BOX_STRIDE): lo, hi of every element, for edges their midpoint and half length, and the
                    * grid cell of lo (fill_grid) */
} Boxes;

#define BOX_STRIDE 13
#define BOX_CELL 10 /* where the cell of a box's lower corner is kept (as doubles: exact below 2^53) */
#define ENTRY_STRIDE 9 /* a grid entry: its cell (3 int64), then its element's box lo, hi (6 doubles, by memcpy) */

static void fill_boxes(Boxes *boxes, int64_t count) {
    for (int64_t e = 0; e < count; e++) {
        double *box = boxes->cache + BOX_STRIDE * e;
        const int64_t *corners = boxes->simplex + boxes->corners * e;
        grown_box(boxes->x, corners, boxes->corners, boxes->extra + boxes->skin[e], box, box + 3);
        if (boxes->corners == 2) {
            const double *p = boxes->x + 3 * corners[0], *q = boxes->x + 3 * corners[1];
            double d[3];
            for (int i = 0; i < 3; i++) {
                box[6 + i] = 0.5 * (p[i] + q[i]);
                d[i] = q[i] - p[i];
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

/* Cell size: CELL_FACTOR times the mean grown extent of the inserted boxes, at least an eighth of the largest box of either set
 * (so no box spans more than nine cells per axis). */
static double cell_size(const Boxes *insert, int64_t insert_count, const Boxes *query, int64_t query_count) {
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
    for (int64_t e = 0; e < query_count; e++) {
        double lo[3], hi[3];
        box_of(query, e, lo, hi);
        for (int i = 0; i < 3; i++) {
            double extent = hi[i] - lo[i];
            if (!(extent <= largest)) largest = extent == extent ? extent : largest;
        }
    }
    double h = insert_count ? CELL_FACTOR * sum / (3.0 * (double)insert_count) : 1.0;
    if (h < largest / 8.0) h = largest / 8.0;
    if (!(h > 0.0) || !isfinite(h)) h = 1.0;
    return h;
}

/* Fill the grid (counting sort into buckets, stable in element order) with the elements 0 .. count - 1, or with
 * subset[0 .. count - 1] (their boxes already in the cache); returns the entries needed. */
static int64_t fill_grid(Boxes *insert, const int64_t *subset, int64_t count, double inv_h, int64_t table_size,
                         int64_t *start, int64_t capacity, int64_t *entry_element, int64_t *entry_cell) {
    uint64_t mask = (uint64_t)table_size - 1;
    for (int64_t b = 0; b <= table_size; b++) start[b] = 0;
    int64_t total = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t e = subset != NULL ? subset[i] : i;
        double lo[3], hi[3];
        box_of(insert, e, lo, hi);
        int64_t c0[3], c1[3];
        for (int i = 0; i < 3; i++) {
            c0[i] = cell_of(lo[i], inv_h);
            c1[i] = cell_of(hi[i], inv_h);
            insert->cache[BOX_STRIDE * e + BOX_CELL + i] = (double)c0[i];
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
            c0[i] = cell_of(lo[i], inv_h);
            c1[i] = cell_of(hi[i], inv_h);
        }
        for (int64_t cx = c0[0]; cx <= c1[0]; cx++)
            for (int64_t cy = c0[1]; cy <= c1[1]; cy++)
                for (int64_t cz = c0[2]; cz <= c1[2]; cz++) {
                    int64_t at = start[bucket_of(cx, cy, cz, mask)]++;
                    int64_t *entry = entry_cell + ENTRY_STRIDE * at;
                    entry_element[at] = e;
                    entry[0] = cx;
                    entry[1] = cy;
                    entry[2] = cz;
                    memcpy(entry + 3, lo, sizeof lo); /* the box beside its cell: scanned in bucket order */
                    memcpy(entry + 6, hi, sizeof hi);
                }
    }
    for (int64_t b = table_size; b > 0; b--) start[b] = start[b - 1];
    start[0] = 0;
    return total;
}

/* Run BODY for every inserted box overlapping the query box (qlo, qhi), each once, with ELEMENT its element: from
 * the cell that holds the lower corner of the two boxes' intersection (entries of other cells sharing the bucket are
 * skipped by their cell coordinates). Elements for which SKIP holds are passed over before their boxes are read. */

#define FOR_EACH_OVERLAP(insert, inv_h, table_size, start, entry_element, entry_cell, qlo, qhi, ELEMENT, SKIP, BODY)  \
    do {                                                                                                                \
        uint64_t mask_ = (uint64_t)(table_size) - 1;                                                                    \
        int64_t q0_[3], q1_[3];                                                                                         \
        for (int i_ = 0; i_ < 3; i_++) {                                                                                \
            q0_[i_] = cell_of((qlo)[i_], inv_h);                                                                        \
            q1_[i_] = cell_of((qhi)[i_], inv_h);                                                                        \
        }                                                                                                               \
        for (int64_t cx_ = q0_[0]; cx_ <= q1_[0]; cx_++)                                                                \
            for (int64_t cy_ = q0_[1]; cy_ <= q1_[1]; cy_++)                                                            \
                for (int64_t cz_ = q0_[2]; cz_ <= q1_[2]; cz_++) {                                                      \
                    uint64_t b_ = bucket_of(cx_, cy_, cz_, mask_);                                                      \
                    for (int64_t at_ = (start)[b_]; at_ < (start)[b_ + 1]; at_++) {                                     \
                        int64_t ELEMENT = (entry_element)[at_];                                                         \
                        if (SKIP) continue; /* before the cell's coordinates: it passes over half the entries */       \
                        const int64_t *cell_ = (entry_cell) + ENTRY_STRIDE * at_;                                       \
                        if (cell_[0] != cx_ || cell_[1] != cy_ || cell_[2] != cz_) continue;                            \
                        double ebox_[6];                                                                                \
                        memcpy(ebox_, cell_ + 3, sizeof ebox_);                                                         \
                        int overlap_ = 1;                                                                               \
                        for (int i_ = 0; i_ < 3; i_++)                                                                  \
                            if ((qlo)[i_] > ebox_[3 + i_] || ebox_[i_] > (qhi)[i_]) overlap_ = 0;                       \
                        if (!overlap_) continue;                                                                        \
                        /* The cell of the intersection's lower corner, max(qlo, elo) per axis, is the larger of     \
                         * their cells (cell_of is monotone). */                                                        \
                        int64_t e0_ = cell_of(ebox_[0], inv_h), e1_ = cell_of(ebox_[1], inv_h);                         \
                        int64_t e2_ = cell_of(ebox_[2], inv_h);                                                         \
                        if ((q0_[0] > e0_ ? q0_[0] : e0_) != cx_ || (q0_[1] > e1_ ? q0_[1] : e1_) != cy_ ||             \
                            (q0_[2] > e2_ ? q0_[2] : e2_) != cz_)                                                       \
                            continue;                                                                                   \
                        BODY                                                                                            \
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

SOFTSIM_API int64_t softsim_self_vt_pairs(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                              const double *skin_v, const double *skin_t, double reach, const int64_t *excluded,
                              int64_t excluded_count, int64_t table_size, int64_t *table_start,
                              int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                              int64_t pair_capacity, int64_t *out_v, int64_t *out_t, double *out_d, int64_t *needs,
                              double *box_scratch) {
    Boxes tris = {x, triangles, 3, skin_t, reach, box_scratch};
    int64_t count = 0;
    needs[0] = 0;
    if (n == 0 || t_count == 0) return 0;
    fill_boxes(&tris, t_count);
    /* A vertex's query box is the point grown by its skin, built inline (no corner array for it). */
    double h = cell_size(&tris, t_count, &tris, 0);
    for (int64_t v = 0; v < n; v++) {
        double extent = 2.0 * (skin_v[v] * (1.0 + 1e-9) + 1e-12);
        if (extent / 8.0 > h) h = extent / 8.0;
    }
    double inv_h = 1.0 / h;
    int64_t entries = fill_grid(&tris, NULL, t_count, inv_h, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    if (entries > entry_capacity) return -1;
    for (int64_t v = 0; v < n; v++) {
        const double *p = x + 3 * v;
        double qlo[3], qhi[3];
        double margin = skin_v[v] * (1.0 + 1e-9) + 1e-12;
        for (int i = 0; i < 3; i++) {
            qlo[i] = p[i] - margin;
            qhi[i] = p[i] + margin;
        }
        int64_t group = count;
        FOR_EACH_OVERLAP(&tris, inv_h, table_size, table_start, entry_element, entry_cell, qlo, qhi, t, 0, {
            const int64_t *tri = triangles + 3 * t;
            if (tri[0] == v || tri[1] == v || tri[2] == v) continue;
            double d = vt_distance(p, x + 3 * tri[0], x + 3 * tri[1], x + 3 * tri[2], 0);
            if (!(d <= reach + skin_v[v] + skin_t[t])) continue;
            /* after the distance: a binary search costs more than the distance, and few pairs pass that */
            if (excluded_count && excluded_key(excluded, excluded_count, v * t_count + t)) continue;
            if (count < pair_capacity) {
                out_v[count] = v;
                out_t[count] = t;
                out_d[count] = d;
            }
            count++;
        });
        if (count <= pair_capacity) sort_group(out_t, out_d, group, count);
    }
    return count;
}

SOFTSIM_API int64_t softsim_self_ee_pairs(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                              const double *skin_e, double reach, const int64_t *excluded, int64_t excluded_count,
                              int64_t table_size, int64_t *table_start, int64_t entry_capacity,
                              int64_t *entry_element, int64_t *entry_cell, int64_t pair_capacity, int64_t *out_a,
                              int64_t *out_b, double *out_d, int64_t *needs, double *box_scratch) {
    (void)n;
    Boxes boxes = {x, edges, 2, skin_e, 0.5 * reach, box_scratch};
    int64_t count = 0;
    needs[0] = 0;
    if (e_count < 2) return 0;
    fill_boxes(&boxes, e_count);
    double inv_h = 1.0 / cell_size(&boxes, e_count, &boxes, 0);
    int64_t entries = fill_grid(&boxes, NULL, e_count, inv_h, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    if (entries > entry_capacity) return -1;
    for (int64_t a = 0; a < e_count; a++) {
        double qlo[3], qhi[3];
        box_of(&boxes, a, qlo, qhi);
        const int64_t *A = edges + 2 * a;
        int64_t group = count;
        FOR_EACH_OVERLAP(&boxes, inv_h, table_size, table_start, entry_element, entry_cell, qlo, qhi, b, b <= a, {
            const int64_t *B = edges + 2 * b;
            if (A[0] == B[0] || A[0] == B[1] || A[1] == B[0] || A[1] == B[1]) continue;
            double limit = reach + skin_e[a] + skin_e[b];
            {
                /* Bounding spheres (midpoint, half length) farther apart than the limit, with round-off slack: the
                 * segments are too (a necessary condition of the exact test, cheaper). */
                const double *sa = boxes.cache + BOX_STRIDE * a + 6;
                const double *sb = boxes.cache + BOX_STRIDE * b + 6;
                double g[3];
                for (int i = 0; i < 3; i++) g[i] = sa[i] - sb[i];
                double r = (limit + sa[3] + sb[3]) * (1.0 + 1e-9) + 1e-12;
                if (dot3_in_order(g, g) > r * r) continue;
            }
            double d = ee_distance(x + 3 * A[0], x + 3 * A[1], x + 3 * B[0], x + 3 * B[1]);
            if (!(d <= limit)) continue;
            if (excluded_count && excluded_key(excluded, excluded_count, a * e_count + b)) continue;
            if (count < pair_capacity) {
                out_a[count] = a;
                out_b[count] = b;
                out_d[count] = d;
            }
            count++;
        });
        if (count <= pair_capacity) sort_group(out_b, out_d, group, count);
    }
    return count;
}

#define GROW_SCAN 256 /* at most this many grown elements: scan every box instead of filling a grid */
#define GROW_CHUNK 8 /* the scan tests an element's box against the union box of each run of this many grown ones */

/* Union boxes (lo, hi: 6 doubles each) of the runs of GROW_CHUNK of `count` boxes, box k at cache + stride * id(k)
 * (id(k) = ids[k]), or, for points (ids of vertices, stride 0 unused), of the points grown by their skins. */
static int64_t chunk_boxes(const double *cache, const int64_t *ids, int64_t count, const double *points,
                           const double *skin, double *chunks) {
    int64_t chunk_count = (count + GROW_CHUNK - 1) / GROW_CHUNK;
    for (int64_t c = 0; c < chunk_count; c++) {
        double *box = chunks + 6 * c;
        for (int i = 0; i < 3; i++) {
            box[i] = INFINITY;
            box[3 + i] = -INFINITY;
        }
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
            for (int i = 0; i < 3; i++) {
                /* NaN boxes: the union takes every axis as overlapping (a NaN compares false both ways below). */
                box[i] = lo[i] < box[i] || lo[i] != lo[i] ? lo[i] : box[i];
                box[3 + i] = hi[i] > box[3 + i] || hi[i] != hi[i] ? hi[i] : box[3 + i];
            }
        }
    }
    return chunk_count;
}

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
        if (count < pair_capacity) {                                                                                    \
            out_v[count] = (v);                                                                                         \
            out_t[count] = (t);                                                                                         \
            out_d[count] = d_;                                                                                          \
        }                                                                                                               \
        count++;                                                                                                        \
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
    fill_boxes(&tris, t_count);
    double h = cell_size(&tris, t_count, &tris, 0);
    for (int64_t v = 0; v < n; v++) {
        double extent = 2.0 * (skin_v[v] * (1.0 + 1e-9) + 1e-12);
        if (extent / 8.0 > h) h = extent / 8.0;
    }
    double inv_h = 1.0 / h;
    if (grown_v_count <= GROW_SCAN && grown_t_count <= GROW_SCAN) {
        /* Grown elements few enough: every box against theirs (runs of them first, by their union box), no grid (its
         * fill costs more than these tests). */
        double chunks[6 * (GROW_SCAN / GROW_CHUNK)];
        int64_t chunk_count = chunk_boxes(NULL, grown_v, grown_v_count, x, skin_v, chunks);
        for (int64_t t = 0; t < t_count && chunk_count; t++) {
            const double *tbox = tris.cache + BOX_STRIDE * t;
            const int64_t *tri = triangles + 3 * t;
            for (int64_t c = 0; c < chunk_count; c++) {
                if (!box_overlap(chunks + 6 * c, tbox)) continue;
                for (int64_t q = c * GROW_CHUNK; q < grown_v_count && q < (c + 1) * GROW_CHUNK; q++) {
                    int64_t v = grown_v[q];
                    if (!point_box_overlap(x + 3 * v, skin_v[v], tbox)) continue;
                    GROW_VT_PAIR(v, t);
                }
            }
        }
        chunk_count = chunk_boxes(tris.cache, grown_t, grown_t_count, NULL, NULL, chunks);
        for (int64_t v = 0; v < n && chunk_count; v++) {
            if (grown_v_mask[v]) continue;
            double margin = skin_v[v] * (1.0 + 1e-9) + 1e-12, vbox[6];
            for (int i = 0; i < 3; i++) {
                vbox[i] = x[3 * v + i] - margin;
                vbox[3 + i] = x[3 * v + i] + margin;
            }
            for (int64_t c = 0; c < chunk_count; c++) {
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
    for (int part = 0; part < 2; part++) {
        int64_t queries = part == 0 ? grown_v_count : n;
        if (queries == 0 || (part == 1 && grown_t_count == 0)) continue;
        int64_t entries = fill_grid(&tris, part == 0 ? NULL : grown_t, part == 0 ? t_count : grown_t_count, inv_h,
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
            FOR_EACH_OVERLAP(&tris, inv_h, table_size, table_start, entry_element, entry_cell, qlo, qhi, t, 0, {
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
        if (count < pair_capacity) {                                                                                    \
            out_a[count] = lo_;                                                                                         \
            out_b[count] = hi_;                                                                                         \
            out_d[count] = d_;                                                                                          \
        }                                                                                                               \
        count++;                                                                                                        \
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
    fill_boxes(&boxes, e_count);
    if (grown_e_count <= GROW_SCAN) {
        /* Grown edges few enough: every box against theirs (runs of them first, by their union box), no grid. */
        double chunks[6 * (GROW_SCAN / GROW_CHUNK)];
        int64_t chunk_count = chunk_boxes(boxes.cache, grown_e, grown_e_count, NULL, NULL, chunks);
        for (int64_t b = 0; b < e_count; b++) {
            const double *bbox = boxes.cache + BOX_STRIDE * b;
            for (int64_t c = 0; c < chunk_count; c++) {
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
    double inv_h = 1.0 / cell_size(&boxes, e_count, &boxes, 0);
    int64_t entries = fill_grid(&boxes, NULL, e_count, inv_h, table_size, table_start, entry_capacity, entry_element,
                                entry_cell);
    needs[0] = entries;
    if (entries > entry_capacity) return -1;
    for (int64_t q = 0; q < grown_e_count; q++) {
        int64_t a = grown_e[q];
        double qlo[3], qhi[3];
        box_of(&boxes, a, qlo, qhi);
        FOR_EACH_OVERLAP(&boxes, inv_h, table_size, table_start, entry_element, entry_cell, qlo, qhi, b,
                         b == a || (grown_e_mask[b] && b < a), { GROW_EE_PAIR(a, b); });
    }
    return count;
}
