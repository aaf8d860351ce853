/* Self-collision's whole call in one: the twin of the native flow of solvers/collision/response/self_contact.py
 * (SelfCollision.resolve_beside_colliders / resolve -> _resolve -> _respond, _may_cross, the start of _fail_safe),
 * calling the same kernels with the same arguments in the same order, so the results are those of that flow bit for
 * bit. What the flow does in Python between the kernels (about 90 calls a substep on the 64 x 64 lab cloth, some
 * 150 us) happens here; the step returns to Python only for what stays there: refreshing a Verlet list that no longer
 * holds, growing the response's buffers, and the impact zones of new crossings.
 *
 * The stages and return codes are those of SoftsimSelfStep (softsim_native.h). Inputs are validated by the binding
 * (self_kernels.SelfStep); nothing here allocates.
 */
#include "softsim_native.h"

int64_t softsim_self_step_size(void) { return (int64_t)sizeof(SoftsimSelfStep); }

/* _may_cross's last case: with no pair kept within reach, a new crossing needs a candidate whose particles are all
 * pinned (inv_call 0: the response leaves those out, the fail-safe does not). */
static int pinned_candidate(const SoftsimSelfStep *s) {
    const double *w = s->inv_call;
    for (int64_t i = 0; i < s->split; i++) {
        const int64_t *c = s->triangles + 3 * s->out_t[i];
        if (w[s->out_v[i]] == 0.0 && w[c[0]] == 0.0 && w[c[1]] == 0.0 && w[c[2]] == 0.0) return 1;
    }
    for (int64_t i = 0; i < s->candidates - s->split; i++) {
        const int64_t *a = s->edges + 2 * s->out_a[i], *b = s->edges + 2 * s->out_b[i];
        if (w[a[0]] == 0.0 && w[a[1]] == 0.0 && w[b[0]] == 0.0 && w[b[1]] == 0.0) return 1;
    }
    return 0;
}

/* The bound keep-out of SelfCollision._keep_out_of_colliders on the pass's touched particles (kernels.KeepOut). */
static void keep_out(SoftsimSelfStep *s) {
    softsim_keep_out_touched(s->x, s->n, s->inv_call, s->heavy, s->pad2, s->touched, s->keep_out_scratch,
                             s->collider_count, s->colliders, s->meshes, s->slack, s->mass_factor, s->mesh_scratch_i,
                             s->mesh_scratch_d);
}

/* SelfSelect.select (what: SELF_SELECT_MOTION | SELF_SELECT_PAIRS, or the pairs alone with the motion given). */
static int64_t select_candidates(SoftsimSelfStep *s, int64_t what) {
    return softsim_self_select(s->x, (what & SELF_SELECT_MOTION) ? s->x_prev : 0, s->x0, s->n, s->triangles,
                               s->t_count, s->edges, s->e_count, s->k, s->list_v, s->list_t, s->m, s->list_a,
                               s->list_b, s->dist, s->skin_v, s->skin_t, s->skin_e, s->thickness, what, s->motion,
                               s->moved, s->out_v, s->out_t, s->out_a, s->out_b, s->out_reach, s->out_split,
                               s->select_scratch);
}

/* SelfPass.setup, true_sides, the pass loop of SelfCollision._native_passes and the friction step: the pairs ever
 * corrected. */
static int64_t respond(SoftsimSelfStep *s) {
    int64_t k_vt = s->split, k_ee = s->candidates - s->split;
    int64_t c = softsim_self_pass_setup(s->x, s->x_prev, s->inv_call, s->triangles, s->edges, k_vt, s->out_v,
                                        s->out_t, k_ee, s->out_a, s->out_b, s->out_reach, s->thickness, s->recovery,
                                        s->kept_v, s->kept_t, s->kept_a, s->kept_b, s->kept_count, s->idx, s->coef,
                                        s->r, s->normal, s->pair_dist, s->plane, s->ok, s->interior, s->side,
                                        s->target, s->approach_target, s->depth, s->ever);
    s->kept = c;
    if (c == 0) return 0;
    int64_t kept_vt = s->kept_count[0]; /* of the c kept pairs, the vertex-triangle ones (first) */
    if (s->true_start)
        softsim_self_true_sides(s->x_prev, s->true_start, s->n, s->triangles, s->edges, kept_vt, s->kept_v,
                                s->kept_t, c - kept_vt, s->kept_a, s->kept_b, s->side_target, s->sides_scratch, s->pick,
                                s->side, s->approach_target, s->target);
    for (int64_t pass = 0; pass < s->max_passes; pass++) {
        int64_t active = softsim_self_pass(
            s->x, s->inv_call, s->n, s->triangles, s->edges, c, kept_vt, s->kept_v, s->kept_t, s->kept_a, s->kept_b,
            s->side, s->target, s->thickness, s->tolerance, s->relaxation, pass >= s->passes, pass == 0, s->changed,
            s->touched, s->pos, s->batch, s->idx, s->coef, s->r, s->normal, s->pair_dist, s->plane, s->ok,
            s->interior, s->work_d, s->flags, s->colour, s->order, s->start, s->last, s->t_pos, s->t_idx, s->t_coef,
            s->t_r, s->t_normal, s->t_dist, s->t_plane, s->t_ok, s->t_interior, s->batch_size);
        if (active == 0) break;
        if (s->collider_count) keep_out(s);
        softsim_self_pass_finish(s->x_prev, s->inv_call, s->n, s->approach_target, s->pos, s->batch_size[0], s->idx,
                                 s->coef, s->work_d, s->flags, s->depth, s->ever, s->recovery_share, s->delta);
    }
    if (s->friction > 0.0 &&
        softsim_self_pass_friction(s->x, s->x_prev, s->inv_call, s->n, s->triangles, s->edges, c, kept_vt, s->kept_v,
                                   s->kept_t, s->kept_a, s->kept_b, s->side, s->depth, s->ever, s->friction,
                                   s->touched, s->pos, s->batch, s->idx, s->coef, s->r, s->normal, s->pair_dist,
                                   s->plane, s->ok, s->interior, s->work_d, s->flags, s->load, s->delta) &&
        s->collider_count)
        keep_out(s);
    int64_t corrected = 0;
    for (int64_t i = 0; i < c; i++) corrected += s->ever[i] != 0;
    return corrected;
}

/* ImpactZones._new_crossings from its witnesses on: the witnesses' pairs gathered from the list, their new
 * crossings. */
static int64_t new_crossings(SoftsimSelfStep *s, int64_t count) {
    int64_t k_vt = 0;
    while (k_vt < count && s->out_pos[k_vt] < s->k) k_vt++;
    for (int64_t i = 0; i < k_vt; i++) {
        s->witness_v[i] = s->list_v[s->out_pos[i]];
        s->witness_t[i] = s->list_t[s->out_pos[i]];
    }
    for (int64_t i = k_vt; i < count; i++) {
        s->witness_a[i - k_vt] = s->list_a[s->out_pos[i] - s->k];
        s->witness_b[i - k_vt] = s->list_b[s->out_pos[i] - s->k];
    }
    if (count == 0) return 0;
    return softsim_self_new_crossings(s->x, s->x_start, s->triangles, s->edges, s->vertex_edge_start, s->vertex_edges,
                                      s->edge_triangle_start, s->edge_triangles, k_vt, s->witness_v, s->witness_t,
                                      count - k_vt, s->witness_a, s->witness_b, s->crossing_capacity,
                                      s->crossing_edge, s->crossing_triangle);
}

int64_t softsim_self_step(SoftsimSelfStep *s, int64_t stage) {
    int64_t count;
    switch (stage) {
    case SOFTSIM_SELF_STAGE_START:
        if (s->collider_count) {
            softsim_resting(s->x, s->n, s->pad2, s->collider_count, s->colliders, s->meshes, s->band, s->heavy,
                            s->mesh_scratch_i, s->mesh_scratch_d);
            for (int64_t p = 0; p < s->n; p++)
                s->inv_call[p] = s->heavy[p] ? s->inv_mass[p] / s->mass_factor : s->inv_mass[p];
        }
        for (int64_t i = 0; i < 3 * s->n; i++) s->x_start[i] = s->x_prev[i];
        s->corrected = s->kept = s->witnesses = s->crossings = 0;
        count = select_candidates(s, SELF_SELECT_MOTION | SELF_SELECT_PAIRS);
        if (count < 0) {
            s->resume = SOFTSIM_SELF_STAGE_SELECT_GIVEN;
            return SOFTSIM_SELF_STEP_LIST;
        }
        s->candidates = count;
        s->split = s->out_split[0];
        break;
    case SOFTSIM_SELF_STAGE_SELECT_GIVEN:
        s->candidates = select_candidates(s, SELF_SELECT_PAIRS);
        s->split = s->out_split[0];
        break;
    case SOFTSIM_SELF_STAGE_SETUP:
    case SOFTSIM_SELF_STAGE_WITNESS_GIVEN:
        break;
    default:
        return -1;
    }
    if (stage != SOFTSIM_SELF_STAGE_WITNESS_GIVEN) {
        if (s->candidates > s->pass_capacity) return SOFTSIM_SELF_STEP_CAPACITY;
        s->corrected = respond(s);
        /* _may_cross */
        if (!(s->kept > 0 || !(s->thickness > 0.0)) && !pinned_candidate(s)) return SOFTSIM_SELF_STEP_DONE;
        if (s->e_count == 0) return SOFTSIM_SELF_STEP_DONE; /* no edge: nothing can cross */
    }
    count = softsim_self_fail_safe_witnesses(
        s->x, s->x_start, s->x0, s->n, s->triangles, s->t_count, s->edges, s->e_count, s->k, s->list_v, s->list_t,
        s->m, s->list_a, s->list_b, s->dist, s->skin_v, s->skin_t, s->skin_e,
        stage == SOFTSIM_SELF_STAGE_WITNESS_GIVEN ? 0 : SELF_SELECT_MOTION, s->motion, s->moved, s->lo, s->hi,
        s->bound, s->out_pos, s->select_scratch);
    if (count < 0) {
        s->resume = SOFTSIM_SELF_STAGE_WITNESS_GIVEN;
        return SOFTSIM_SELF_STEP_LIST;
    }
    s->witnesses = count;
    s->crossings = new_crossings(s, count);
    return s->crossings ? SOFTSIM_SELF_STEP_CROSSINGS : SOFTSIM_SELF_STEP_DONE;
}
