/* A cloth's (or a solid's) position-based substeps in C: the bending Jacobi tail, the air on the faces, the state
 * check, and whole frames of XPBD/PBD substeps in one call. Native twins of
 *   solvers/position_based.py   PositionBasedSolver._jacobi for a bending tail (BendingConstraints.corrections and
 *                               the sparse scatter), _native_contact_step and _iterate for a cloth or a solid (its
 *                               tet sweeps and their tail: tets.c),
 *   solvers/forces/air.py       AirDrag.area_vectors, _split, AirDrag.relax,
 *   solvers/forces/loads.py     BodyLoads.apply with air and no fields or uniform wind (with fields: fields.c),
 *   solvers/frame.py            FrameRun.posed_substep / _step (the pins moved per substep) and check_finite.
 * Arithmetic order follows the twins' (see each function); NumPy's einsum("ij,ij->i") adds (x*x + z*z) + y*y.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "air_relax.h"
#include "jacobi_scatter.h"
#include "mesh_frame.h"
#include "softsim_native.h"

/* Every field of the plan is 8 bytes, 103 of them: kernels._plan_structure mirrors this layout. */
_Static_assert(sizeof(SoftsimClothPlan) == 129 * 8, "SoftsimClothPlan layout changed: update kernels._plan_structure");

static double row_dot(const double *u, const double *v) { return (u[0] * v[0] + u[2] * v[2]) + u[1] * v[1]; }

/* One XPBD Jacobi sweep of a bending tail (PositionBasedSolver._jacobi, not the lab's per-particle average):
 * hinges (m, 4) in the NumPy set's own order and corner order, K (m, 4), wK (m, 4), rest_norm, alpha,
 * inverse_denominator and scale = 1 / (relaxation + max constraint count) (m,), lambda (m, 3); curved: whether the set
 * has a hinge with r0 > 0. The scatter adds each particle's corrections in increasing (hinge, corner) order, the order
 * of its row of the twin's CSR scatter matrix: scatter_start (n + 1,) and scatter_entry (4 m,) = 4 h + a, per
 * particle in that order. dx (4 m, 3) and sum (3,) are scratch. Every correction is computed from x before any
 * is applied, as in the twin. */
void softsim_bending_jacobi(double *x, int64_t m, const int64_t *hinges, const double *K, const double *wK,
                           const double *rest_norm, const double *alpha, const double *inverse_denominator,
                           const double *scale, double *lambda, int64_t curved, int64_t particle_count,
                           const int64_t *scatter_start, const int64_t *scatter_entry, double *dx)
{
    for (int64_t h = 0; h < m; ++h) {
        const int64_t *corner = hinges + 4 * h;
        const double *x0 = x + 3 * corner[0];
        double y[3];
        /* constraint(): einsum("hk,hkd->hd", K[:, 1:], corners[:, 1:] - corners[:, :1]), k summed in order */
        for (int d = 0; d < 3; ++d) {
            double acc = 0.0;
            for (int a = 1; a < 4; ++a)
                acc += K[4 * h + a] * (x[3 * corner[a] + d] - x0[d]);
            y[d] = acc;
        }
        if (curved) {
            double norm = sqrt(row_dot(y, y));
            double ratio = norm > 0.0 ? rest_norm[h] / norm : 0.0;
            for (int d = 0; d < 3; ++d)
                y[d] = norm == 0.0 ? 0.0 : (1.0 - ratio) * y[d];
        }
        double *lam = lambda + 3 * h;
        double dlam[3];
        for (int d = 0; d < 3; ++d)
            dlam[d] = -(y[d] + alpha[h] * lam[d]) * inverse_denominator[h];
        for (int a = 0; a < 4; ++a)
            for (int d = 0; d < 3; ++d)
                dx[3 * (4 * h + a) + d] = (wK[4 * h + a] * dlam[d]) * scale[h];
        for (int d = 0; d < 3; ++d)
            lam[d] += dlam[d] * scale[h];
    }
    jacobi_scatter(x, particle_count, scatter_start, scatter_entry, dx);
}

/* AirDrag.area_vectors and _split: cross (t, 3) scratch e1 x e2 per face; a_i summed over the particle's faces in
 * increasing face order (corner_start (n + 1,), corner_face (3 t,): the twin's CSR rows), each times 1/6;
 * area (n,) = |a|, normal (n, 3) = a / |a| (0 where |a| = 0). */
void softsim_air_areas(const double *x, int64_t n, int64_t t, const int64_t *triangles, const int64_t *corner_start,
                       const int64_t *corner_face, double *cross, double *area, double *normal)
{
    for (int64_t f = 0; f < t; ++f) {
        const double *p0 = x + 3 * triangles[3 * f], *p1 = x + 3 * triangles[3 * f + 1],
                     *p2 = x + 3 * triangles[3 * f + 2];
        double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
        double e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
        cross[3 * f] = e1[1] * e2[2] - e1[2] * e2[1];
        cross[3 * f + 1] = e1[2] * e2[0] - e1[0] * e2[2];
        cross[3 * f + 2] = e1[0] * e2[1] - e1[1] * e2[0];
    }
    for (int64_t p = 0; p < n; ++p) {
        double a[3] = {0.0, 0.0, 0.0};
        for (int64_t k = corner_start[p]; k < corner_start[p + 1]; ++k) {
            const double *c = cross + 3 * corner_face[k];
            a[0] += (1.0 / 6.0) * c[0];
            a[1] += (1.0 / 6.0) * c[1];
            a[2] += (1.0 / 6.0) * c[2];
        }
        double length = sqrt(row_dot(a, a));
        area[p] = length;
        for (int d = 0; d < 3; ++d)
            normal[3 * p + d] = length > 0.0 ? a[d] / length : 0.0;
    }
}

/* BodyLoads.apply with air and either no fields (wind NULL: u = 0) or WIND fields that blow the same everywhere
 * (wind (3,): their air velocity u [m/s], fields.uniform_air_velocity), including AirDrag.relax's refresh of the faces:
 * state[0] 1 once area/normal hold a measurement, state[1] the step time since (the twin's _since, added to the same
 * way); settings: AREA_REFRESH_TIME, AIR_DENSITY, TANGENTIAL_FRACTION, the coefficient C_n. v changes on free
 * particles (inv_mass > 0) only. */
void softsim_air_apply(const double *x, double *v, int64_t n, const double *inv_mass, const double *gravity, double dt,
                       int64_t t, const int64_t *triangles, const int64_t *corner_start, const int64_t *corner_face,
                       double *cross, double *area, double *normal, double *state, const double *settings,
                       const double *wind)
{
    double u[3] = {0.0, 0.0, 0.0};
    if (wind)
        for (int d = 0; d < 3; ++d)
            u[d] = wind[d];
    softsim_air_refresh(x, n, dt, t, triangles, corner_start, corner_face, cross, area, normal, state, settings);
    double g[3] = {dt * gravity[0], dt * gravity[1], dt * gravity[2]};
    for (int64_t p = 0; p < n; ++p) {
        if (!(inv_mass[p] > 0.0))
            continue;
        double kicked[3] = {v[3 * p] + g[0], v[3 * p + 1] + g[1], v[3 * p + 2] + g[2]}; /* p = v + dt g */
        double relaxed[3];
        air_relax_particle(kicked, u, normal + 3 * p, area[p], inv_mass[p], dt, settings, relaxed);
        for (int d = 0; d < 3; ++d)
            v[3 * p + d] = relaxed[d] - g[d]; /* p -= dt g */
    }
}

/* AirDrag.relax's refresh of the faces (air_relax.h). */
void softsim_air_refresh(const double *x, int64_t n, double dt, int64_t t, const int64_t *triangles,
                         const int64_t *corner_start, const int64_t *corner_face, double *cross, double *area,
                         double *normal, double *state, const double *settings)
{
    if (state[0] == 0.0 || state[1] >= settings[0]) {
        softsim_air_areas(x, n, t, triangles, corner_start, corner_face, cross, area, normal);
        state[0] = 1.0;
        state[1] = 0.0;
    }
    state[1] += dt;
}

/* check_finite: 0 when every x and v is finite and no speed exceeds max_speed, 1 for a non-finite value, 2 for a
 * speed past the limit (the caller raises the twin's error). */
int64_t softsim_check_state(const double *x, const double *v, int64_t n, double max_speed)
{
    for (int64_t k = 0; k < 3 * n; ++k)
        if (!isfinite(x[k]) || !isfinite(v[k]))
            return 1;
    double largest = 0.0;
    for (int64_t p = 0; p < n; ++p) {
        double s = row_dot(v + 3 * p, v + 3 * p);
        if (s > largest || p == 0)
            largest = s;
    }
    return sqrt(largest) > max_speed ? 2 : 0;
}

/* The pins' positions at fraction s of the frame: start + (end - start) * s (FrameRun.posed_substep's expression). */
static void pin_pose(const SoftsimClothPlan *plan, double s, double *out)
{
    for (int64_t k = 0; k < 3 * plan->pin_count; ++k)
        out[k] = plan->pin_start[k] + (plan->pin_end[k] - plan->pin_start[k]) * s;
}

/* Substeps first .. last (1-based, of substeps) of a cloth's frame (plan: softsim_native.h). Each substep: the loads
 * (softsim_fields_apply with the substep's fields, else the air: softsim_air_apply with its row of air_wind), the pins' velocities v = (pin_to - x) / dt, the step
 * (predict, zeroed multipliers, contacts found and projected, per iteration the distance sweep, the bending sweep and its Jacobi tail, the tethers (1 pass, 8
 * in the last iteration) and the contacts projected, friction, the end-of-step push, velocity with damping), the pins
 * put exactly on pin_to, and the state check. Returns the substeps completed; status[0] says why it stopped early:
 * 1 the end-of-step push of substep (returned + 1) needs several sweeps (status[1]), x as after friction, x_prev the
 * plan's buffer: the caller finishes that substep; 2 the state check failed after substep (returned); 3 a still mesh
 * collider's pair buffer is too small for substep (returned + 1), which is restored as it was at its start
 * (plan->mesh->needs says which and how many: the caller grows the buffers and runs it again); 4 (plan->hand_over)
 * substep (returned + 1) is done up to its end-of-step push: the caller runs self-collision, the velocity update, the
 * pins and the state check of that substep (as after status 1). status[2] is 1 when that substep (status 1 or 4) had
 * contacts, and then plan->true_start holds its x_prev from before pre-stabilization, else 0. status: 3 int64. */
int64_t softsim_cloth_substeps(const SoftsimClothPlan *plan, int64_t first, int64_t last, int64_t *status)
{
    int64_t n = plan->n;
    double dt = plan->dt;
    double *x = plan->x, *v = plan->v;
    status[0] = 0;
    status[1] = 0;
    status[2] = 0;
    for (int64_t k = first; k <= last; ++k) {
        if (plan->mesh)
            softsim_mesh_frame_save(plan);
        if (plan->field_count)
            softsim_fields_apply(x, v, n, plan->inv_mass, plan->gravity, dt, plan->field_time[k - 1],
                                 plan->field_weight, plan->field_count,
                                 plan->field_table + (k - 1) * plan->field_count * SOFTSIM_FIELD_ROW, plan->field_a0,
                                 plan->field_c, plan->field_u, plan->air_count, plan->air_triangles,
                                 plan->air_corner_start, plan->air_corner_face, plan->air_cross, plan->air_area,
                                 plan->air_normal, plan->air_state, plan->air_settings);
        else if (plan->air_count)
            softsim_air_apply(x, v, n, plan->inv_mass, plan->gravity, dt, plan->air_count, plan->air_triangles,
                              plan->air_corner_start, plan->air_corner_face, plan->air_cross, plan->air_area,
                              plan->air_normal, plan->air_state, plan->air_settings,
                              plan->air_wind ? plan->air_wind + 3 * (k - 1) : NULL);
        pin_pose(plan, (double)k / (double)plan->substeps, plan->pin_to);
        for (int64_t i = 0; i < plan->pin_count; ++i)
            for (int d = 0; d < 3; ++d)
                v[3 * plan->pin_index[i] + d] = (plan->pin_to[3 * i + d] - x[3 * plan->pin_index[i] + d]) / dt;
        const double *table = plan->collider_table + (plan->tables_per_substep ? (k - 1) : 0) *
                                                         plan->collider_count * SOFTSIM_COLLIDER_ROW;
        softsim_predict(x, v, plan->x_prev, n, plan->inv_mass, plan->gravity, dt);
        for (int64_t i = 0; i < plan->distance_m; ++i)
            plan->distance_lambda[i] = 0.0;
        for (int64_t i = 0; i < 3 * plan->bending_m; ++i)
            plan->bending_lambda[i] = 0.0;
        for (int64_t i = 0; i < 3 * plan->tail_m; ++i)
            plan->tail_lambda[i] = 0.0;
        for (int64_t i = 0; i < 2 * plan->tet_m; ++i)
            plan->tet_lambda[i] = 0.0;
        for (int64_t i = 0; i < 2 * plan->tet_tail_m; ++i)
            plan->tet_tail_lambda[i] = 0.0;
        int64_t contacts = 0;
        if (plan->collider_count && plan->mesh) {
            contacts = softsim_mesh_frame_find(plan, table);
            if (contacts < 0) {
                softsim_mesh_frame_restore(plan);
                status[0] = 3;
                return k - first;
            }
        } else if (plan->collider_count)
            contacts = softsim_contacts_find(x, plan->x_prev, n, plan->inv_mass, plan->pad2, plan->collider_count,
                                             table, 1, plan->c_particle, plan->c_owner, plan->c_normal,
                                             plan->c_offset, plan->c_pushed);
        if (contacts) {
            if (plan->hand_over) { /* self-collision reads the sides of its pairs from the start before this move */
                memcpy(plan->true_start, plan->x_prev, sizeof(double) * 3 * (size_t)n);
                status[2] = 1;
            }
            softsim_contacts_stabilize(plan->x_prev, contacts, table, plan->c_particle, plan->c_owner, plan->c_normal,
                                       plan->c_offset);
            softsim_contacts_project(x, contacts, plan->c_particle, plan->c_normal, plan->c_offset, plan->c_pushed);
        }
        int64_t iterations = plan->iterations;
        if (contacts && plan->contact_iterations > iterations)
            iterations = plan->contact_iterations;
        int64_t step = plan->first_step + k - 1;
        for (int64_t it = 0; it < iterations; ++it) {
            if (plan->distance_m)
                softsim_distance_sweep(x, plan->distance_colours, plan->distance_start, plan->distance_edges,
                                       plan->distance_rest, plan->distance_wi, plan->distance_wj, plan->distance_alpha,
                                       plan->distance_inverse, plan->distance_lambda, plan->distance_use_alpha);
            if (plan->bending_m)
                softsim_bending_sweep(x, plan->bending_colours, plan->bending_start, plan->bending_curved,
                                      plan->bending_hinges, plan->bending_K, plan->bending_wK, plan->bending_rest,
                                      plan->bending_alpha, plan->bending_inverse, plan->bending_lambda);
            if (plan->tail_m)
                softsim_bending_jacobi(x, plan->tail_m, plan->tail_hinges, plan->tail_K, plan->tail_wK,
                                       plan->tail_rest, plan->tail_alpha, plan->tail_inverse, plan->tail_scale,
                                       plan->tail_lambda, plan->tail_curved, n, plan->tail_scatter_start,
                                       plan->tail_scatter_entry, plan->tail_dx);
            if (plan->tet_m) {
                if (plan->symmetric && it + 1 == iterations)
                    softsim_tet_strain_symmetric_sweep(x, n, plan->tet_colours, plan->tet_start, plan->tet_tets,
                                                       plan->tet_D, plan->tet_w, plan->tet_kappa, plan->tet_alpha,
                                                       plan->tet_lambda, plan->tet_damping, plan->x_prev,
                                                       plan->tet_x_back, plan->tet_lambda_back);
                else
                    softsim_tet_strain_sweep(x, plan->tet_colours, plan->tet_start, plan->tet_tets, plan->tet_D,
                                             plan->tet_w, plan->tet_kappa, plan->tet_alpha, plan->tet_lambda,
                                             plan->tet_damping, plan->x_prev, (it + step) % 2 == 1);
            }
            if (plan->tet_tail_m)
                softsim_tet_strain_jacobi(x, plan->tet_tail_m, plan->tet_tail_tets, plan->tet_tail_D, plan->tet_tail_w,
                                          plan->tet_tail_kappa, plan->tet_tail_alpha, plan->tet_tail_scale,
                                          plan->tet_tail_lambda, plan->tet_damping, plan->x_prev, n,
                                          plan->tet_tail_scatter_start, plan->tet_tail_scatter_entry,
                                          plan->tet_tail_dx);
            if (plan->tether_slots)
                softsim_tether_apply(x, plan->tether_slots, plan->tether_start, plan->tether_particle,
                                     plan->tether_pin, plan->tether_limit, it + 1 < iterations ? 1 : 8,
                                     plan->tether_stamp, plan->tether_seen);
            if (contacts)
                softsim_contacts_project(x, contacts, plan->c_particle, plan->c_normal, plan->c_offset,
                                         plan->c_pushed);
        }
        if (contacts && plan->mesh) /* a moving mesh collider's friction reads its surface's motion */
            softsim_mesh_frame_friction(plan, table, contacts);
        else if (contacts)
            softsim_contacts_friction(x, plan->x_prev, contacts, table, plan->c_particle, plan->c_owner,
                                      plan->c_normal, plan->c_pushed);
        if (plan->collider_count) {
            int64_t sweeps = plan->mesh ? softsim_mesh_frame_finish(plan, table) : softsim_contacts_finish(
                x, plan->x_prev, n, plan->inv_mass, plan->pad2, plan->collider_count, table, plan->face_count,
                plan->faces, plan->edge_count, plan->edges, plan->face_passes, plan->finish_settings, plan->r_particle,
                plan->r_owner, plan->r_normal, plan->r_distance, plan->r_scratch, plan->topology_state, plan->x0,
                plan->work_i, plan->work_d);
            if (sweeps < 0) {
                softsim_mesh_frame_restore(plan);
                status[0] = 3;
                return k - first;
            }
            if (sweeps > 1) {
                status[0] = 1;
                status[1] = sweeps;
                return k - first;
            }
        }
        if (plan->hand_over) {
            status[0] = 4;
            return k - first;
        }
        softsim_velocity(x, plan->x_prev, v, n, dt, plan->damping_factor, plan->damped);
        for (int64_t i = 0; i < plan->pin_count; ++i)
            for (int d = 0; d < 3; ++d)
                x[3 * plan->pin_index[i] + d] = plan->pin_to[3 * i + d];
        if (softsim_check_state(x, v, n, plan->max_speed)) {
            status[0] = 2;
            return k - first + 1;
        }
    }
    return last - first + 1;
}
