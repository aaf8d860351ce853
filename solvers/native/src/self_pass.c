/* One pass of cloth self-collision's position-level response, the twin of the pass loop of
 * solvers/collision/response/self_contact.py (SelfCollision._respond): which of the watched pairs the last pass
 * touched, their stencils at x, gaps, push directions and constraint values, the active ones, their colours and the
 * Gauss-Seidel sweep over them (each colour's pairs measured again at x, moved by RELAXATION of their shortfall);
 * then (softsim_self_pass_finish, after the caller has kept the moved particles out of its colliders, which may make
 * some of them heavier) the velocity-free share applied to x_prev, the pairs' friction depth, and the pairs still
 * violating for the next pass.
 *
 * Every operation is the twin's in the twin's order, so the result is the twin's bit for bit on x86-64:
 * - the stencils are softsim_self_stencils' (self_response.c) on the same batch of pairs (the pairs the last pass
 *   touched, vertex-triangle ones first, each in ascending list position), or, on the first pass, the caller's
 *   (the twin's first pass reads the stencils made for the whole candidate batch);
 * - W = einsum("kj,kj->k", coef**2, w[idx]) sums its four products as (p0 + p2) + (p1 + p3) (numpy's two-lane
 *   SIMD loop for a contiguous axis of four);
 * - a colour's corrections go to x pair after pair, corner after corner (np.add.at, _add_each); the recovery's on
 *   x_prev as np.bincount accumulates each particle's share in stencil order from 0.0, added to every particle's
 *   coordinate, also where it is 0.0 (which turns -0.0 into 0.0): so does this;
 * - np.clip(a, 0, hi) is min(max(a, 0), hi).
 * Inputs are validated by the binding (self_kernels.SelfPass); nothing here allocates.
 */
#include <math.h>
#include <stddef.h>

#include "self_geometry.h"
#include "softsim_native.h"

/* Per-pair state the pass keeps for its finish, in work_d (doubles, per position in the pass's batch): */
enum { PASS_GAP, PASS_C, PASS_SCALE, PASS_IMPULSE, PASS_STRIDE = PASS_IMPULSE + 3 };

static inline double np_maximum(double a, double b) { return (a > b || a != a) ? a : b; }
static inline double np_minimum(double a, double b) { return (a < b || a != a) ? a : b; }

static inline void stencil_particles(const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                     const int64_t *list_v, const int64_t *list_t, const int64_t *list_a,
                                     const int64_t *list_b, int64_t p, int64_t *out) {
    if (p < k_vt) {
        const int64_t *c = triangles + 3 * list_t[p];
        out[0] = list_v[p];
        out[1] = c[0];
        out[2] = c[1];
        out[3] = c[2];
    } else {
        const int64_t *A = edges + 2 * list_a[p - k_vt], *B = edges + 2 * list_b[p - k_vt];
        out[0] = A[0];
        out[1] = A[1];
        out[2] = B[0];
        out[3] = B[1];
    }
}

/* The stencils at x of the batch of pairs at list positions pos (m, ascending) as the twin hands them to _Stencils:
 * vertex-triangle ones, then edge-edge ones (batch (2 m) holds their elements). */
static void batch_stencils(const double *x, const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                           const int64_t *list_v, const int64_t *list_t, const int64_t *list_a, const int64_t *list_b,
                           const int64_t *pos, int64_t m, int64_t *batch, int64_t *idx, double *coef, double *r,
                           double *normal, double *dist, double *plane, unsigned char *ok, unsigned char *interior) {
    int64_t m_vt = 0;
    while (m_vt < m && pos[m_vt] < k_vt) m_vt++;
    int64_t *sub_v = batch, *sub_t = batch + m_vt, *sub_a = batch + 2 * m_vt, *sub_b = batch + 2 * m_vt + (m - m_vt);
    for (int64_t i = 0; i < m_vt; i++) {
        sub_v[i] = list_v[pos[i]];
        sub_t[i] = list_t[pos[i]];
    }
    for (int64_t i = m_vt; i < m; i++) {
        sub_a[i - m_vt] = list_a[pos[i] - k_vt];
        sub_b[i - m_vt] = list_b[pos[i] - k_vt];
    }
    softsim_self_stencils(x, triangles, edges, m_vt, sub_v, sub_t, m - m_vt, sub_a, sub_b, idx, coef, r, normal, dist,
                          plane, ok, interior);
}

/* Adds the Jacobi application of `impulse * factor` (factor NULL: 1) of the moved pairs to positions (n, 3): per
 * particle the sum over the pairs, in their order, of (inv_mass * coef) * (factor * impulse), from 0.0, then added to
 * every particle (SelfCollision._apply). */
static void apply_pairs(double *positions, int64_t n, const double *inv_mass, int64_t m, const int64_t *idx,
                        const double *coef, const unsigned char *active, const double *state, const double *factor,
                        double *delta) {
    for (int64_t i = 0; i < 3 * n; i++) delta[i] = 0.0;
    for (int64_t i = 0; i < m; i++) {
        if (!(active[i] & 1)) continue; /* bit 0: moved */
        const double *impulse = state + PASS_STRIDE * i + PASS_IMPULSE;
        for (int j = 0; j < 4; j++) {
            int64_t p = idx[4 * i + j];
            double weight = inv_mass[p] * coef[4 * i + j];
            for (int d = 0; d < 3; d++) {
                double value = factor != NULL ? factor[i] * impulse[d] : impulse[d];
                delta[3 * p + d] += weight * value;
            }
        }
    }
    for (int64_t i = 0; i < 3 * n; i++) positions[i] += delta[i];
}

/* A pair's gap, constraint value C = gap - target, W = sum_j coef_j^2 inv_mass_j and push direction (3,) from its
 * stencil (coef (4), idx (4), r (3), normal (3), dist, plane, ok, interior) with side `sd` (the twin's evaluate and
 * _directions). */
static inline void pair_values(const double *inv_mass, double sd, double target, const int64_t *ix, const double *c,
                               const double *r, const double *normal, double dist, double plane, unsigned char ok,
                               unsigned char interior, double *gap, double *C, double *W, double *direction) {
    double signed_distance = sd * plane;
    int inside = interior != 0;
    int edge_ok = !inside && (signed_distance >= 0.0 || !ok) && dist > 1e-12;
    *gap = inside ? signed_distance : (edge_ok ? dist : INFINITY);
    double sq[4];
    for (int j = 0; j < 4; j++) sq[j] = (c[j] * c[j]) * inv_mass[ix[j]];
    *W = (sq[0] + sq[2]) + (sq[1] + sq[3]);
    *C = *gap - target;
    double divide = dist > 1e-12 ? dist : 1.0;
    for (int d = 0; d < 3; d++) direction[d] = inside ? sd * normal[d] : r[d] / divide;
}

/* The first half of a pass over the watched pairs (count of them: vertex-triangle pairs list_v, list_t (k_vt), then
 * edge-edge pairs list_a, list_b (count - k_vt)) with side, target (count,) of SelfCollision._respond. given != 0:
 * the batch is every pair and its stencils are already in idx .. interior (the first pass); else the batch is the
 * pairs with a particle marked in `changed` (n,) and their stencils are made here into those buffers (capacity
 * count). restrict_violating: only the violating pairs are active (passes beyond SelfCollision.passes).
 *
 * The active pairs are coloured in batch order (colour: 1 + the colour of the last earlier active pair at each of its
 * particles of nonzero weight, the twin's _colours; by counting sort into `order`, `start` (count + 1), `last` (n,)
 * scratch) and swept colour by colour: each colour's pairs measured again at x as the colours before left it (their
 * stencils through the t_* buffers into the batch's rows), and those still short of their target (C < 0, W > 0)
 * moved by relaxation * -C / W along their direction, each particle's share added in pair order (_add_each). Writes
 * pos (the batch's list positions), the per-pair state (work_d, PASS_STRIDE per pair: the gap and C where its colour
 * measured it, the relaxation, the impulse), flags (bit 0 moved), `changed`
 * (every particle of a moved pair) and `touched` (those with a nonzero weight), and returns the number of pairs
 * moved (0: nothing changed; the twin's loop ends). */
int64_t softsim_self_pass(double *x, const double *inv_mass, int64_t n, const int64_t *triangles, const int64_t *edges,
                          int64_t count, int64_t k_vt, const int64_t *list_v, const int64_t *list_t,
                          const int64_t *list_a, const int64_t *list_b, const double *side, const double *target,
                          double thickness, double tolerance, double relaxation, int64_t restrict_violating,
                          int64_t given, unsigned char *changed,
                          unsigned char *touched, int64_t *pos, int64_t *batch, int64_t *idx, double *coef, double *r,
                          double *normal, double *dist, double *plane, unsigned char *ok, unsigned char *interior,
                          double *work_d, unsigned char *flags, int64_t *colour, int64_t *order, int64_t *start,
                          int64_t *last, int64_t *t_pos, int64_t *t_idx, double *t_coef, double *t_r,
                          double *t_normal, double *t_dist, double *t_plane, unsigned char *t_ok,
                          unsigned char *t_interior, int64_t *batch_size) {
    int64_t m = 0;
    if (given) {
        for (int64_t i = 0; i < count; i++) pos[m++] = i;
    } else {
        int64_t corners[4];
        for (int64_t i = 0; i < count; i++) {
            stencil_particles(triangles, edges, k_vt, list_v, list_t, list_a, list_b, i, corners);
            if (changed[corners[0]] | changed[corners[1]] | changed[corners[2]] | changed[corners[3]]) pos[m++] = i;
        }
        batch_stencils(x, triangles, edges, k_vt, list_v, list_t, list_a, list_b, pos, m, batch, idx, coef, r, normal,
                       dist, plane, ok, interior);
    }
    *batch_size = m;
    int64_t active_count = 0;
    const double limit = -tolerance * thickness;
    for (int64_t i = 0; i < m; i++) {
        double gap, C, W, direction[3];
        pair_values(inv_mass, side[pos[i]], target[pos[i]], idx + 4 * i, coef + 4 * i, r + 3 * i, normal + 3 * i,
                    dist[i], plane[i], ok[i], interior[i], &gap, &C, &W, direction);
        int active = C < 0.0 && W > 0.0;
        if (restrict_violating) active = active && (gap < 0.0 || C < limit);
        flags[i] = (unsigned char)active;
        if (active) order[active_count++] = i;
    }
    if (active_count == 0) return 0;
    /* colours (the active pairs in batch order) */
    for (int64_t a = 0; a < active_count; a++)
        for (int j = 0; j < 4; j++)
            if (coef[4 * order[a] + j] != 0.0) last[idx[4 * order[a] + j]] = -1;
    int64_t colours = 0;
    for (int64_t a = 0; a < active_count; a++) {
        const int64_t *ix = idx + 4 * order[a];
        const double *c = coef + 4 * order[a];
        int64_t k = 0;
        for (int j = 0; j < 4; j++)
            if (c[j] != 0.0 && last[ix[j]] + 1 > k) k = last[ix[j]] + 1;
        for (int j = 0; j < 4; j++)
            if (c[j] != 0.0) last[ix[j]] = k;
        colour[a] = k;
        if (k + 1 > colours) colours = k + 1;
    }
    for (int64_t k = 0; k <= colours; k++) start[k] = 0;
    for (int64_t a = 0; a < active_count; a++) start[colour[a] + 1]++;
    for (int64_t k = 0; k < colours; k++) start[k + 1] += start[k];
    /* t_pos first holds each colour's batch indices (ascending within a colour: a stable counting sort) */
    for (int64_t a = 0; a < active_count; a++) t_pos[start[colour[a]]++] = order[a];
    for (int64_t k = colours; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
    for (int64_t a = 0; a < active_count; a++) order[a] = t_pos[a];
    int64_t moved = 0;
    for (int64_t k = 0; k < colours; k++) {
        int64_t first = start[k], mc = start[k + 1] - first;
        for (int64_t j = 0; j < mc; j++) t_pos[j] = pos[order[first + j]];
        batch_stencils(x, triangles, edges, k_vt, list_v, list_t, list_a, list_b, t_pos, mc, batch, t_idx, t_coef,
                       t_r, t_normal, t_dist, t_plane, t_ok, t_interior);
        for (int64_t j = 0; j < mc; j++) {
            int64_t i = order[first + j];
            double gap, C, W, direction[3];
            pair_values(inv_mass, side[pos[i]], target[pos[i]], t_idx + 4 * j, t_coef + 4 * j, t_r + 3 * j,
                        t_normal + 3 * j, t_dist[j], t_plane[j], t_ok[j], t_interior[j], &gap, &C, &W, direction);
            for (int q = 0; q < 4; q++) {
                idx[4 * i + q] = t_idx[4 * j + q];
                coef[4 * i + q] = t_coef[4 * j + q];
            }
            double *state = work_d + PASS_STRIDE * i;
            state[PASS_GAP] = gap;
            state[PASS_C] = C;
            if (!(C < 0.0 && W > 0.0)) {
                flags[i] &= (unsigned char)~1u;
                continue;
            }
            moved++;
            double lam = relaxation * -C / W;
            state[PASS_SCALE] = relaxation;
            for (int d = 0; d < 3; d++) state[PASS_IMPULSE + d] = lam * direction[d];
            for (int q = 0; q < 4; q++) {
                int64_t p = idx[4 * i + q];
                double weight = inv_mass[p] * coef[4 * i + q];
                for (int d = 0; d < 3; d++) x[3 * p + d] += weight * state[PASS_IMPULSE + d];
            }
        }
    }
    if (moved == 0) return 0;
    for (int64_t i = 0; i < n; i++) {
        changed[i] = 0;
        touched[i] = 0;
    }
    for (int64_t i = 0; i < m; i++) {
        if (!(flags[i] & 1)) continue;
        for (int j = 0; j < 4; j++) {
            changed[idx[4 * i + j]] = 1;
            if (coef[4 * i + j] != 0.0) touched[idx[4 * i + j]] = 1;
        }
    }
    return moved;
}

/* The second half of a pass (after the caller's collider check, which may have made particles heavier: inv_mass is
 * read again): per active pair, the part of its correction beyond restoring its gap at the step's start
 * (approach_target) is recovery, applied to x_prev too (when any pair has some); depth += approach * scale, ever = 1. */
void softsim_self_pass_finish(double *x_prev, const double *inv_mass, int64_t n, const double *approach_target,
                              const int64_t *pos, int64_t m, const int64_t *idx, const double *coef, double *work_d,
                              const unsigned char *flags, double *depth, unsigned char *ever, double *recovery,
                              double *delta) {
    int any_recovery = 0;
    for (int64_t i = 0; i < m; i++) {
        if (!(flags[i] & 1)) continue;
        const double *state = work_d + PASS_STRIDE * i;
        double hi = -state[PASS_C];
        double approach = np_minimum(np_maximum(approach_target[pos[i]] - state[PASS_GAP], 0.0), hi);
        recovery[i] = 1.0 - approach / hi;
        if (recovery[i] > 0.0) any_recovery = 1;
        depth[pos[i]] += approach * state[PASS_SCALE];
        ever[pos[i]] = 1;
    }
    if (any_recovery) apply_pairs(x_prev, n, inv_mass, m, idx, coef, flags, work_d, recovery, delta);
}

/* The response's friction (SelfCollision._respond's friction step and SelfCollision._friction) over the pairs the
 * passes corrected (ever (count,)): their stencils at x (one batch, as evaluate(pos) makes them), push directions
 * (as the pass), the relative motion over the step r = sum_j coef_j (x - x_prev)_j (j in order), its tangential part
 * t = r - (r . d) d, slide |t|, cut = min(1, friction depth / max(slide, 1e-15)) where slide > 1e-15 (else 0),
 * W = sum coef^2 inv_mass ((p0 + p2) + (p1 + p3)), the Jacobi scale as the pass's, and the impulse
 * -(cut scale / W) t (0 where W is not > 0) applied to x (SelfCollision._apply). Writes pos (the corrected pairs'
 * list positions), the batch's stencils and `touched` (the particles with a nonzero weight in them, for the
 * caller's collider check); returns how many pairs there are. Scratch: batch (2 count), work_d, flags, load, delta
 * as softsim_self_pass's. */
int64_t softsim_self_pass_friction(double *x, const double *x_prev, const double *inv_mass, int64_t n,
                                   const int64_t *triangles, const int64_t *edges, int64_t count, int64_t k_vt,
                                   const int64_t *list_v, const int64_t *list_t, const int64_t *list_a,
                                   const int64_t *list_b, const double *side, const double *depth,
                                   const unsigned char *ever, double friction, unsigned char *touched, int64_t *pos,
                                   int64_t *batch, int64_t *idx, double *coef, double *r, double *normal,
                                   double *dist, double *plane, unsigned char *ok, unsigned char *interior,
                                   double *work_d, unsigned char *flags, double *load, double *delta) {
    int64_t m = 0;
    for (int64_t i = 0; i < count; i++)
        if (ever[i]) pos[m++] = i;
    for (int64_t i = 0; i < n; i++) {
        touched[i] = 0;
        load[i] = 0.0;
    }
    if (m == 0) return 0;
    batch_stencils(x, triangles, edges, k_vt, list_v, list_t, list_a, list_b, pos, m, batch, idx, coef, r, normal,
                   dist, plane, ok, interior);
    for (int64_t i = 0; i < m; i++)
        for (int j = 0; j < 4; j++)
            if (coef[4 * i + j] != 0.0) {
                touched[idx[4 * i + j]] = 1;
                load[idx[4 * i + j]] += 1.0;
            }
    for (int64_t i = 0; i < m; i++) {
        int64_t p = pos[i];
        const double *c = coef + 4 * i;
        const int64_t *ix = idx + 4 * i;
        double gap, C, W, direction[3], relative[3], tangential[3]; /* the pass's W and direction (gap, C unused) */
        pair_values(inv_mass, side[p], 0.0, ix, c, r + 3 * i, normal + 3 * i, dist[i], plane[i], ok[i], interior[i],
                    &gap, &C, &W, direction);
        for (int d = 0; d < 3; d++) {
            double sum = c[0] * (x[3 * ix[0] + d] - x_prev[3 * ix[0] + d]);
            for (int j = 1; j < 4; j++) sum = sum + c[j] * (x[3 * ix[j] + d] - x_prev[3 * ix[j] + d]);
            relative[d] = sum;
        }
        double along = dot3(relative, direction);
        for (int d = 0; d < 3; d++) tangential[d] = relative[d] - along * direction[d];
        double slide = sqrt(dot3(tangential, tangential));
        double cut = slide > 1e-15 ? np_minimum(1.0, friction * depth[p] / np_maximum(slide, 1e-15)) : 0.0;
        double most = c[0] != 0.0 ? load[ix[0]] : 0.0;
        for (int j = 1; j < 4; j++) most = np_maximum(most, c[j] != 0.0 ? load[ix[j]] : 0.0);
        double scale = 1.0 / np_maximum(1.0, most);
        int positive = W > 0.0;
        double amount = -(cut * scale / (positive ? W : 1.0) * (positive ? 1.0 : 0.0));
        double *state = work_d + PASS_STRIDE * i;
        for (int d = 0; d < 3; d++) state[PASS_IMPULSE + d] = amount * tangential[d];
        flags[i] = 1;
    }
    apply_pairs(x, n, inv_mass, m, idx, coef, flags, work_d, NULL, delta);
    return m;
}
