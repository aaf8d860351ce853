/* One Jacobi pass of cloth self-collision's position-level response, the twin of the pass loop of
 * solvers/collision/response/self_contact.py (SelfCollision._respond): which of the watched pairs the last pass
 * touched, their stencils at x, gaps, push directions and constraint values, the active ones, their Jacobi scale
 * (1 / the largest number of active pairs any of their moved particles is in), and the correction applied to x;
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
 * - np.bincount accumulates each particle's share in stencil order (pair after pair, corner after corner) from 0.0,
 *   and the twin adds that sum to every particle's coordinate, also where it is 0.0 (which turns -0.0 into 0.0):
 *   so does this;
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

/* Adds the Jacobi application of `impulse * factor` (factor NULL: 1) of the active pairs to positions (n, 3): per
 * particle the sum over the pairs, in their order, of (inv_mass * coef) * (factor * impulse), from 0.0, then added to
 * every particle (SelfCollision._apply). */
static void apply_pairs(double *positions, int64_t n, const double *inv_mass, int64_t m, const int64_t *idx,
                        const double *coef, const unsigned char *active, const double *state, const double *factor,
                        double *delta) {
    for (int64_t i = 0; i < 3 * n; i++) delta[i] = 0.0;
    for (int64_t i = 0; i < m; i++) {
        if (!active[i]) continue;
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

/* The first half of a pass over the watched pairs (count of them: vertex-triangle pairs list_v, list_t (k_vt), then
 * edge-edge pairs list_a, list_b (count - k_vt)) with side, target, approach_target (count,) of SelfCollision._respond.
 * live (*live_count of them, ascending): the pairs still in play. given != 0: the batch is every live pair and its
 * stencils are already in idx .. interior (the first pass); else the batch is the live pairs with a particle marked
 * in `changed` (n,) and their stencils are made here into those buffers (capacity count). restrict_violating: only
 * the violating pairs are active (passes beyond SelfCollision.passes). Writes pos (the batch's list positions), the
 * per-pair state (work_d, PASS_STRIDE per pair), flags (bit 0 active, bit 1 violating), `changed` (every particle of
 * an active stencil) and `touched` (those with a nonzero weight), applies the correction to x, and returns the
 * number of active pairs (0: nothing changed; the twin's loop ends). load (n,) and delta (3 n) are scratch. */
int64_t softsim_self_pass(double *x, const double *inv_mass, int64_t n, const int64_t *triangles, const int64_t *edges,
                          int64_t count, int64_t k_vt, const int64_t *list_v, const int64_t *list_t,
                          const int64_t *list_a, const int64_t *list_b, const double *side, const double *target,
                          double thickness, double tolerance, int64_t restrict_violating, int64_t given,
                          const int64_t *live, int64_t live_count, unsigned char *changed, unsigned char *touched,
                          int64_t *pos, int64_t *batch, int64_t *idx, double *coef, double *r, double *normal,
                          double *dist, double *plane, unsigned char *ok, unsigned char *interior, double *work_d,
                          unsigned char *flags, double *load, double *delta, int64_t *batch_size) {
    (void)count;
    int64_t m = 0;
    if (given) {
        for (int64_t i = 0; i < live_count; i++) pos[m++] = live[i];
    } else {
        int64_t corners[4];
        for (int64_t i = 0; i < live_count; i++) {
            stencil_particles(triangles, edges, k_vt, list_v, list_t, list_a, list_b, live[i], corners);
            if (changed[corners[0]] | changed[corners[1]] | changed[corners[2]] | changed[corners[3]])
                pos[m++] = live[i];
        }
        batch_stencils(x, triangles, edges, k_vt, list_v, list_t, list_a, list_b, pos, m, batch, idx, coef, r, normal,
                       dist, plane, ok, interior);
    }
    *batch_size = m;
    int64_t active_count = 0;
    const double limit = -tolerance * thickness;
    for (int64_t i = 0; i < m; i++) {
        int64_t p = pos[i];
        double sd = side[p], signed_distance = sd * plane[i];
        int inside = interior[i] != 0;
        int edge_ok = !inside && (signed_distance >= 0.0 || !ok[i]) && dist[i] > 1e-12;
        double gap = inside ? signed_distance : (edge_ok ? dist[i] : INFINITY);
        const double *c = coef + 4 * i;
        const int64_t *ix = idx + 4 * i;
        double sq[4];
        for (int j = 0; j < 4; j++) sq[j] = (c[j] * c[j]) * inv_mass[ix[j]];
        double W = (sq[0] + sq[2]) + (sq[1] + sq[3]);
        double C = gap - target[p];
        int active = C < 0.0 && W > 0.0;
        int violating = active && (gap < 0.0 || C < limit);
        if (restrict_violating) active = violating;
        flags[i] = (unsigned char)(active | (violating << 1));
        double *state = work_d + PASS_STRIDE * i;
        state[PASS_GAP] = gap;
        state[PASS_C] = C;
        if (!active) continue;
        active_count++;
        double divide = dist[i] > 1e-12 ? dist[i] : 1.0;
        for (int d = 0; d < 3; d++)
            state[PASS_IMPULSE + d] = inside ? sd * normal[3 * i + d] : r[3 * i + d] / divide;
        state[PASS_SCALE] = W; /* for now: the scale below needs every active pair's particles counted first */
    }
    if (active_count == 0) return 0;
    for (int64_t i = 0; i < n; i++) {
        changed[i] = 0;
        touched[i] = 0;
        load[i] = 0.0;
    }
    for (int64_t i = 0; i < m; i++) {
        if (!(flags[i] & 1)) continue;
        for (int j = 0; j < 4; j++) {
            int64_t p = idx[4 * i + j];
            changed[p] = 1;
            if (coef[4 * i + j] != 0.0) {
                touched[p] = 1;
                load[p] += 1.0;
            }
        }
    }
    for (int64_t i = 0; i < m; i++) {
        if (!(flags[i] & 1)) continue;
        const double *c = coef + 4 * i;
        const int64_t *ix = idx + 4 * i;
        double most = c[0] != 0.0 ? load[ix[0]] : 0.0;
        for (int j = 1; j < 4; j++) most = np_maximum(most, c[j] != 0.0 ? load[ix[j]] : 0.0);
        double scale = 1.0 / np_maximum(1.0, most);
        double *state = work_d + PASS_STRIDE * i;
        double W = state[PASS_SCALE];
        double lam = -state[PASS_C] / W * scale;
        state[PASS_SCALE] = scale;
        for (int d = 0; d < 3; d++) state[PASS_IMPULSE + d] = lam * state[PASS_IMPULSE + d];
    }
    apply_pairs(x, n, inv_mass, m, idx, coef, flags, work_d, NULL, delta);
    return active_count;
}

/* The second half of a pass (after the caller's collider check, which may have made particles heavier: inv_mass is
 * read again): per active pair, the part of its correction beyond restoring its gap at the step's start
 * (approach_target) is recovery, applied to x_prev too (when any pair has some); depth += approach * scale, ever = 1;
 * with update_live, live becomes the batch's violating pairs (returned count; else *live_count is returned as
 * given). */
int64_t softsim_self_pass_finish(double *x_prev, const double *inv_mass, int64_t n, const double *approach_target,
                                 const int64_t *pos, int64_t m, const int64_t *idx, const double *coef, double *work_d,
                                 const unsigned char *flags, double *depth, unsigned char *ever, int64_t update_live,
                                 int64_t *live, int64_t live_count, double *recovery, double *delta) {
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
    if (!update_live) return live_count;
    int64_t kept = 0;
    for (int64_t i = 0; i < m; i++)
        if (flags[i] & 2) live[kept++] = pos[i];
    return kept;
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
        double direction[3], relative[3], tangential[3];
        double divide = dist[i] > 1e-12 ? dist[i] : 1.0;
        for (int d = 0; d < 3; d++)
            direction[d] = interior[i] ? side[p] * normal[3 * i + d] : r[3 * i + d] / divide;
        for (int d = 0; d < 3; d++) {
            double sum = c[0] * (x[3 * ix[0] + d] - x_prev[3 * ix[0] + d]);
            for (int j = 1; j < 4; j++) sum = sum + c[j] * (x[3 * ix[j] + d] - x_prev[3 * ix[j] + d]);
            relative[d] = sum;
        }
        double along = dot3(relative, direction);
        for (int d = 0; d < 3; d++) tangential[d] = relative[d] - along * direction[d];
        double slide = sqrt(dot3(tangential, tangential));
        double cut = slide > 1e-15 ? np_minimum(1.0, friction * depth[p] / np_maximum(slide, 1e-15)) : 0.0;
        double sq[4];
        for (int j = 0; j < 4; j++) sq[j] = (c[j] * c[j]) * inv_mass[ix[j]];
        double W = (sq[0] + sq[2]) + (sq[1] + sq[3]);
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
