/* Analytic collider contacts (ground planes and spheres, still or moving) and the position-based step's prediction
 * and velocity update: the native twins of
 *   solvers/collision/response/contact_set.py        find_contacts / point_contacts / step_margin (point
 *                                                    contacts only),
 *   solvers/collision/response/collider_contacts.py  ContactConstraints.project / apply_friction,
 *                                                    resolve_collider_contacts with one sweep (resolve_contacts, the
 *                                                    sphere face push, resolve_contacts again), resolve_deep_faces,
 *   solvers/collision/response/self_contact.py       SelfCollision._keep_out_of_colliders,
 *   solvers/collision/response/faces.py              resolve_sphere_faces (_near, _Topology.longest_edge, _own_bound,
 *                                                    _push_out),
 *   solvers/collision/colliders/shapes.py            GroundPlane / Sphere distance_and_normal, contact, motion,
 *                                                    padded_radius,
 *   solvers/collision/colliders/mesh_collider.py     MeshCollider.distance_and_normal / within (the keep-out's
 *                                                    mesh rows, through softsim_mesh_closest),
 *   solvers/position_based.py                        the prediction at the top of PositionBasedSolver.step,
 *   solvers/base.py                                  the velocity and damping at the end of finish_step.
 *
 * Arithmetic order follows the twins': NumPy's einsum("ij,ij->i") adds (x*x + z*z) + y*y (dot_rows), einsum over the
 * leading axis of (3, m) arrays and sum(axis=1) add (x + y) + z (dot_in_order), faces.py's own _dot3 likewise.
 *
 * Collider table: one row of SOFTSIM_COLLIDER_ROW doubles per collider, filled by the binding (kernels.py,
 * AnalyticContacts.pose) from the posed collider objects:
 *   [0] kind (0 ground plane, 1 sphere)  [1] moving (1 when the collider has a start pose)  [2] friction
 *   (a mesh row, kind 2 (SOFTSIM_KIND_MESH): [1] moving as here, [2] friction; in softsim_resting and
 *   softsim_keep_out [3] the index of its SoftsimKeepOutMesh)
 *   ground: [3..5] unit normal, [6] point . normal + thickness, [7..9] point - start.point
 *   sphere: [3..5] centre, [6] rho = radius + thickness, [7] cap2 = ((1 + PAD_LIMIT)^2 - 1) rho^2,
 *           [8..10] start centre, [11] radius - start.radius, [12..14] centre - start.centre
 * Scalars derived from several fields are computed once in Python with the twin's own expressions.
 */
#include <math.h>

#include "contact_common.h"
#include "softsim_native.h"
#include "sphere_faces.h"

#define KIND_SPHERE 1.0

/* The contact radius of a sphere for a particle: rho, or padded_radius(rho, pad2) with pads. */
static double sphere_reach(const double *c, const double *pad2, int64_t p)
{
    if (!pad2)
        return c[6];
    return sqrt(c[6] * c[6] + min2(pad2[p], c[7]));
}

/* distance_and_normal at the collider's (end) pose: signed distance beyond thickness (and pad) and unit normal. */
static double distance_normal(const double *c, const double *xp, const double *pad2, int64_t p, double n[3])
{
    if (c[0] != KIND_SPHERE) {
        n[0] = c[3];
        n[1] = c[4];
        n[2] = c[5];
        return ((xp[0] * c[3] + xp[1] * c[4]) + xp[2] * c[5]) - c[6];
    }
    double r[3] = {xp[0] - c[3], xp[1] - c[4], xp[2] - c[5]};
    double dist = sqrt(dot_rows(r, r));
    if (dist > 1e-12) {
        n[0] = r[0] / dist;
        n[1] = r[1] / dist;
        n[2] = r[2] / dist;
    } else { /* a particle at the very centre is pushed straight up */
        n[0] = 0.0;
        n[1] = 0.0;
        n[2] = 1.0;
    }
    return dist - sphere_reach(c, pad2, p);
}

/* Collider.contact: distance_and_normal, except that a particle inside a moving sphere that was outside its start
 * pose takes the normal where its relative path first met the contact radius (Sphere.contact, _first_root). */
static double contact(const double *c, const double *xp, const double *xq, const double *pad2, int64_t p, double n[3])
{
    double d = distance_normal(c, xp, pad2, p, n);
    if (c[0] != KIND_SPHERE || c[1] == 0.0 || !(d < 0.0))
        return d;
    double rho = sphere_reach(c, pad2, p);
    double r0[3] = {xq[0] - c[8], xq[1] - c[9], xq[2] - c[10]};
    double r1[3] = {xp[0] - c[3], xp[1] - c[4], xp[2] - c[5]};
    double dr[3] = {r1[0] - r0[0], r1[1] - r0[1], r1[2] - r0[2]};
    double a = dot_rows(dr, dr), b = 2.0 * dot_rows(r0, dr), cc = dot_rows(r0, r0) - rho * rho;
    double disc = b * b - 4.0 * a * cc;
    if (cc <= 0.0 || !(b < 0.0 && disc >= 0.0 && a > 0.0))
        return d; /* s = 0 or no root: not swept */
    double s = 2.0 * cc / (-b + sqrt(max2(disc, 0.0)));
    if (!(isfinite(s) && s > 0.0))
        return d;
    double at[3] = {r0[0] + s * dr[0], r0[1] + s * dr[1], r0[2] + s * dr[2]};
    double length = max2(sqrt(dot_rows(at, at)), 1e-300);
    n[0] = at[0] / length;
    n[1] = at[1] / length;
    n[2] = at[2] / length;
    return dot_rows(r1, n) - rho;
}

/* Collider.motion of the surface under the point xp over the step (zero for a still collider). */
static void motion(const double *c, const double *xp, double m[3])
{
    if (c[1] == 0.0) {
        m[0] = m[1] = m[2] = 0.0;
    } else if (c[0] != KIND_SPHERE) {
        m[0] = c[7];
        m[1] = c[8];
        m[2] = c[9];
    } else {
        double n[3];
        distance_normal(c, xp, 0, 0, n);
        m[0] = c[12] + c[11] * n[0];
        m[1] = c[13] + c[11] * n[1];
        m[2] = c[14] + c[11] * n[2];
    }
}

/* response._remove_slip for one particle: its tangential motion over the step relative to the collider, removed up
 * to budget [m] (all of it when smaller). */
static void remove_slip(const double *c, double *xp, const double *xq, const double *n, double budget)
{
    double m[3];
    motion(c, xq, m);
    remove_slip_relative(xp, xq, m, n, budget);
}

void softsim_predict(double *x, double *v, double *x_prev, int64_t n, const double *inv_mass, const double *gravity,
                     double dt)
{
    /* v += (dt g) * free; x_prev = x; x += dt v */
    double g[3] = {dt * gravity[0], dt * gravity[1], dt * gravity[2]};
    for (int64_t p = 0; p < n; ++p) {
        double free = inv_mass[p] > 0.0 ? 1.0 : 0.0;
        for (int d = 0; d < 3; ++d) {
            v[3 * p + d] += g[d] * free;
            x_prev[3 * p + d] = x[3 * p + d];
            x[3 * p + d] += dt * v[3 * p + d];
        }
    }
}

void softsim_velocity(const double *x, const double *x_prev, double *v, int64_t n, double dt, double damping_factor,
                      int64_t damped)
{
    for (int64_t k = 0; k < 3 * n; ++k) {
        double u = (x[k] - x_prev[k]) / dt;
        v[k] = damped ? u * damping_factor : u;
    }
}

/* find_contacts' point contacts: collider after collider, particle after particle, every free particle closer than
 * its step margin (its own motion plus the collider's motion under it, step_margin) to the collider's contact plane
 * (margin_mode 1), or inside it (margin_mode 0: resolve_contacts). Writes particle, owner (collider row), normal
 * (3 each), offset = n . x - d (or d itself with margin_mode 0) and pushed = 0; returns the count. Room for
 * n * collider_count contacts. */
int64_t softsim_contacts_find(const double *x, const double *x_prev, int64_t n, const double *inv_mass,
                              const double *pad2, int64_t collider_count, const double *colliders, int64_t margin_mode,
                              int64_t *particle, int64_t *owner, double *normal, double *offset, double *pushed)
{
    int64_t count = 0;
    for (int64_t k = 0; k < collider_count; ++k) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
        for (int64_t p = 0; p < n; ++p) {
            if (!(inv_mass[p] > 0.0))
                continue;
            const double *xp = x + 3 * p, *xq = x_prev + 3 * p;
            double nrm[3];
            double d = contact(c, xp, xq, pad2, p, nrm);
            double margin = 0.0;
            if (margin_mode) {
                double moved[3] = {xp[0] - xq[0], xp[1] - xq[1], xp[2] - xq[2]};
                margin = sqrt(dot_rows(moved, moved));
                if (c[1] != 0.0) {
                    double travel[3];
                    motion(c, xp, travel);
                    margin = margin + sqrt(dot_rows(travel, travel));
                }
            }
            if (!(d < margin))
                continue;
            particle[count] = p;
            owner[count] = k;
            normal[3 * count] = nrm[0];
            normal[3 * count + 1] = nrm[1];
            normal[3 * count + 2] = nrm[2];
            offset[count] = margin_mode ? dot_rows(xp, nrm) - d : d;
            pushed[count] = 0.0;
            ++count;
        }
    }
    return count;
}

/* Point p moved onto the plane n . p >= offset along its unit normal n when below it; returns the move [m] (0 above). */
static inline double onto_plane(double *p, const double *n, double offset)
{
    double depth = max2(offset - dot_rows(p, n), 0.0);
    p[0] += depth * n[0];
    p[1] += depth * n[1];
    p[2] += depth * n[2];
    return depth;
}

/* ContactConstraints.project: each contact below its plane moved back onto it along n, in the contacts' order (a
 * collider's particles are distinct, and colliders run in order as the twin's loop does). */
void softsim_contacts_project(double *x, int64_t count, const int64_t *particle, const double *normal,
                              const double *offset, double *pushed)
{
    for (int64_t i = 0; i < count; ++i)
        pushed[i] += onto_plane(x + 3 * particle[i], normal + 3 * i, offset[i]);
}

/* ContactConstraints.stabilize: each contact with a collider standing still over the step (its row's moving flag 0)
 * whose particle started the step inside its plane has that start moved onto the plane along its normal
 * (offset - n . x_prev, when positive), so the push out of a penetration the step began with adds no velocity. */
void softsim_contacts_stabilize(double *x_prev, int64_t count, const double *colliders, const int64_t *particle,
                                const int64_t *owner, const double *normal, const double *offset)
{
    for (int64_t i = 0; i < count; ++i)
        if (colliders[SOFTSIM_COLLIDER_ROW * owner[i] + 1] == 0.0)
            onto_plane(x_prev + 3 * particle[i], normal + 3 * i, offset[i]);
}

/* ContactConstraints.apply_friction: the step's slip of every pushed contact of a collider with friction, removed
 * up to friction * pushed. */
void softsim_contacts_friction(double *x, const double *x_prev, int64_t count, const double *colliders,
                               const int64_t *particle, const int64_t *owner, const double *normal,
                               const double *pushed)
{
    for (int64_t i = 0; i < count; ++i) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * owner[i];
        if (!(c[2] > 0.0) || !(pushed[i] > 0.0))
            continue;
        int64_t p = particle[i];
        remove_slip(c, x + 3 * p, x_prev + 3 * p, normal + 3 * i, c[2] * pushed[i]);
    }
}

/* response.resolve_contacts: the particles inside each collider (found for all colliders from the same x) projected
 * onto its contact plane, each collider's then slipping up to friction * depth. Returns the contacts found. */
static int64_t resolve_vertices(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                const double *pad2, int64_t collider_count, const double *colliders,
                                int64_t *particle, int64_t *owner, double *normal, double *distance, double *scratch)
{
    int64_t count = softsim_contacts_find(x, x_prev, n, inv_mass, pad2, collider_count, colliders, 0, particle,
                                          owner, normal, distance, scratch);
    for (int64_t i = 0; i < count; ++i) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * owner[i];
        double *xp = x + 3 * particle[i];
        const double *nrm = normal + 3 * i;
        double depth = max2(-distance[i], 0.0);
        xp[0] += depth * nrm[0];
        xp[1] += depth * nrm[1];
        xp[2] += depth * nrm[2];
        /* The twin pushes all of a collider's particles, then slips them: they are distinct, so one by one is the same. */
        if (c[2] > 0.0)
            remove_slip(c, xp, x_prev + 3 * particle[i], nrm, c[2] * depth);
    }
    return count;
}

/* collider_contacts._resolve_once for analytic colliders: resolve_contacts, the face push of every sphere (with
 * triangles), and resolve_contacts again when a face was pushed. */
static void resolve_once(double *x, const double *x_prev, int64_t n, const double *inv_mass, const double *pad2,
                         int64_t collider_count, const double *colliders, int64_t spheres, int64_t t,
                         const int64_t *triangles, int64_t edge_count, const int64_t *edges, int64_t face_passes,
                         const double *settings, int64_t *particle, int64_t *owner, double *normal, double *distance,
                         double *scratch, double *topology_state, double *x0, int64_t *work_i, double *work_d)
{
    resolve_vertices(x, x_prev, n, inv_mass, pad2, collider_count, colliders, particle, owner, normal, distance,
                     scratch);
    if (t == 0 || spheres == 0)
        return;
    FaceWork w = face_work(work_i, work_d, n, t);
    int64_t faces = 0;
    for (int64_t k = 0; k < collider_count; ++k) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
        if (c[0] == KIND_SPHERE)
            faces += sphere_faces(x, x_prev, n, inv_mass, t, triangles, edge_count, edges, topology_state, x0, c,
                                  face_passes, settings, &w);
    }
    if (faces)
        resolve_vertices(x, x_prev, n, inv_mass, pad2, collider_count, colliders, particle, owner, normal, distance,
                         scratch);
}

static int64_t sphere_count(int64_t collider_count, const double *colliders)
{
    int64_t spheres = 0;
    for (int64_t k = 0; k < collider_count; ++k)
        spheres += colliders[SOFTSIM_COLLIDER_ROW * k] == KIND_SPHERE;
    return spheres;
}

/* response.resolve_collider_contacts for analytic colliders, when it takes one sweep (response.contact_sweeps):
 * resolve_once. Returns the sweeps the step needs: 1 when done here; more, with x untouched, when the caller must
 * walk the step in sweeps (softsim_contacts_finish_sweeps).
 * settings: FACE_TOLERANCE, SWEEP_LENGTH [m], MAX_SWEEPS, REFIT_GROWTH (the twins' constants, read by the binding).
 * Buffers: particle, owner (n * collider_count,) int64; normal (n * collider_count, 3), distance and scratch
 * (n * collider_count,); topology_state (2,), x0 (n, 3) (kept between calls); work_i (t + 2 n,) int64, zeroed once;
 * work_d (8 t + 5 n,). */
int64_t softsim_contacts_finish(double *x, const double *x_prev, int64_t n, const double *inv_mass, const double *pad2,
                                int64_t collider_count, const double *colliders, int64_t t, const int64_t *triangles,
                                int64_t edge_count, const int64_t *edges, int64_t face_passes, const double *settings,
                                int64_t *particle,
                                int64_t *owner, double *normal, double *distance, double *scratch,
                                double *topology_state, double *x0, int64_t *work_i, double *work_d)
{
    int64_t spheres = sphere_count(collider_count, colliders);
    int64_t sweeps;
    if (t > 0 && spheres > 0 && contact_sweeps(x, x_prev, n, inv_mass, settings[1], settings[2], &sweeps))
        return sweeps; /* SWEEP_LENGTH, MAX_SWEEPS */
    resolve_once(x, x_prev, n, inv_mass, pad2, collider_count, colliders, spheres, t, triangles, edge_count, edges,
                 face_passes, settings, particle, owner, normal, distance, scratch, topology_state, x0, work_i,
                 work_d);
    return 1;
}

/* response.resolve_collider_contacts for analytic colliders walked in `sweeps` sweeps (the count softsim_contacts_finish
 * returned): from start = x_prev, sweep k resolves end = start + (x - x_prev) / sweeps against the colliders posed
 * over that sweep (posed + k * collider_count * SOFTSIM_COLLIDER_ROW: the twin's Collider.over(k / sweeps,
 * (k + 1) / sweeps)) with x_prev = start (resolve_once), then start = end; x = start at the end. Buffers as
 * softsim_contacts_finish's, plus start and end (n, 3). Returns 0, or -1 with nothing done when sweeps < 1. */
int64_t softsim_contacts_finish_sweeps(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                       const double *pad2, int64_t collider_count, const double *posed,
                                       int64_t sweeps, int64_t t, const int64_t *triangles, int64_t edge_count,
                                       const int64_t *edges, int64_t face_passes, const double *settings,
                                       int64_t *particle, int64_t *owner, double *normal, double *distance,
                                       double *scratch, double *topology_state, double *x0, int64_t *work_i,
                                       double *work_d, double *start, double *end)
{
    if (sweeps < 1)
        return -1;
    double count = (double)sweeps;
    for (int64_t i = 0; i < 3 * n; ++i)
        start[i] = x_prev[i];
    for (int64_t k = 0; k < sweeps; ++k) {
        const double *colliders = posed + k * collider_count * SOFTSIM_COLLIDER_ROW;
        for (int64_t i = 0; i < 3 * n; ++i)
            end[i] = start[i] + (x[i] - x_prev[i]) / count; /* the twin's motion = (x - x_prev) / sweeps */
        resolve_once(end, start, n, inv_mass, pad2, collider_count, colliders, sphere_count(collider_count, colliders),
                     t, triangles, edge_count, edges, face_passes, settings, particle, owner, normal, distance,
                     scratch, topology_state, x0, work_i, work_d);
        double *swap = start;
        start = end;
        end = swap;
    }
    for (int64_t i = 0; i < 3 * n; ++i)
        x[i] = start[i];
    return 0;
}

/* collider_contacts.resolve_deep_faces over analytic colliders: the face push of every sphere row k (faces.
 * resolve_sphere_faces) with its contact radius rho[k] (the binding's radius + (thickness - allowance), the twin's
 * own expression), in row order; ground planes have no face push. Returns the contacts found (the first passes'
 * hits). Buffers as softsim_contacts_finish's topology_state, x0, work_i, work_d (the same ones: the twin's cached
 * bound on the longest edge is one per triangles array). */
int64_t softsim_contacts_deep_faces(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                    int64_t collider_count, const double *colliders, const double *rho, int64_t t,
                                    const int64_t *triangles, int64_t edge_count, const int64_t *edges,
                                    int64_t face_passes, const double *settings, double *topology_state, double *x0,
                                    int64_t *work_i, double *work_d)
{
    if (t == 0 || n == 0)
        return 0;
    FaceWork w = face_work(work_i, work_d, n, t);
    int64_t faces = 0;
    for (int64_t k = 0; k < collider_count; ++k) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
        if (c[0] != KIND_SPHERE)
            continue;
        double row[SOFTSIM_COLLIDER_ROW];
        for (int a = 0; a < SOFTSIM_COLLIDER_ROW; ++a)
            row[a] = c[a];
        row[6] = rho[k];
        faces += sphere_faces(x, x_prev, n, inv_mass, t, triangles, edge_count, edges, topology_state, x0, row,
                              face_passes, settings, &w);
    }
    return faces;
}

/* The nearest triangles of a mesh collider row (SoftsimKeepOutMesh) within limit [m] of the points (k,) of x:
 * MeshCollider._closest through softsim_mesh_closest (the binding's MeshClosest.closest). Outputs in scratch
 * (scratch_i (4 n,): the points' list first, then out_row, out_tri, out_interior (n,) each; scratch_d (7 n,):
 * out_bary, out_q (n, 3), out_d (n,)); returns how many points found one. */
static int64_t mesh_nearest(const SoftsimKeepOutMesh *mesh, const double *x, int64_t n, int64_t k, double limit,
                            int64_t *scratch_i, double *scratch_d)
{
    return softsim_mesh_closest(x, scratch_i, k, mesh->vertices, mesh->triangles, mesh->grid, mesh->dims,
                                mesh->cell_start, mesh->entry, limit, mesh->stamp, scratch_i + n, scratch_i + 2 * n,
                                scratch_d, scratch_d + 3 * n, scratch_d + 6 * n, scratch_i + 3 * n);
}

/* SelfCollision.resolve_beside_colliders' resting particles: resting[p] = 1 where particle p lies within band [m] of
 * a collider's surface for some collider row, else 0. Analytic rows: the signed distance beyond thickness and pads
 * (distance_and_normal) below band. Mesh rows (MeshCollider.within): the unsigned distance to the nearest triangle
 * within thickness + max(band, 0) (1 + 1e-9) + 1e-12, less thickness, below band, asked for the particles no earlier
 * row holds (the twin ORs every collider's mask). Returns how many rest. meshes, scratch_i, scratch_d: see
 * mesh_nearest (null without mesh rows). */
int64_t softsim_resting(const double *x, int64_t n, const double *pad2, int64_t collider_count,
                        const double *colliders, const SoftsimKeepOutMesh *meshes, double band, uint8_t *resting,
                        int64_t *scratch_i, double *scratch_d)
{
    int64_t count = 0;
    for (int64_t p = 0; p < n; ++p) {
        uint8_t rests = 0;
        for (int64_t k = 0; k < collider_count && !rests; ++k) {
            const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
            if (c[0] == SOFTSIM_KIND_MESH)
                continue;
            double normal[3];
            rests = distance_normal(c, x + 3 * p, pad2, p, normal) < band;
        }
        resting[p] = rests;
        count += rests;
    }
    for (int64_t k = 0; k < collider_count; ++k) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
        if (c[0] != SOFTSIM_KIND_MESH)
            continue;
        const SoftsimKeepOutMesh *mesh = meshes + (int64_t)c[3];
        int64_t asked = 0;
        for (int64_t p = 0; p < n; ++p)
            if (!resting[p])
                scratch_i[asked++] = p;
        double limit = mesh->thickness + ((band > 0.0 ? band : 0.0) * (1.0 + 1e-9) + 1e-12);
        int64_t found = mesh_nearest(mesh, x, n, asked, limit, scratch_i, scratch_d);
        for (int64_t j = 0; j < found; ++j)
            if (scratch_d[6 * n + j] - mesh->thickness < band) {
                resting[scratch_i[n + j]] = 1;
                ++count;
            }
    }
    return count;
}

/* The keep-out's move of particle p back along nrm by depth (x -= depth nrm), made heavy the first time (its inverse
 * mass divided by mass_factor). */
static inline void push_back(double *x, int64_t p, const double nrm[3], double depth, double *inv_mass, uint8_t *heavy,
                             double mass_factor)
{
    double *xp = x + 3 * p;
    xp[0] -= depth * nrm[0];
    xp[1] -= depth * nrm[1];
    xp[2] -= depth * nrm[2];
    if (!heavy[p]) {
        inv_mass[p] /= mass_factor;
        heavy[p] = 1;
    }
}

/* A mesh row of softsim_keep_out: the free particles of moved (count,) brought back to slack [m] inside the surface
 * along the direction from their nearest point (MeshCollider.distance_and_normal: unsigned distance less thickness,
 * normal (x - q) / distance, or x - q where the distance is 0; nothing found within search_limit: not inside). */
static int64_t keep_out_mesh(const SoftsimKeepOutMesh *mesh, double *x, int64_t n, double *inv_mass, uint8_t *heavy,
                             int64_t count, const int64_t *moved, double slack, double mass_factor,
                             int64_t *scratch_i, double *scratch_d)
{
    int64_t asked = 0;
    for (int64_t i = 0; i < count; ++i)
        if (inv_mass[moved[i]] > 0.0)
            scratch_i[asked++] = moved[i];
    int64_t found = mesh_nearest(mesh, x, n, asked, mesh->search_limit, scratch_i, scratch_d);
    const double *q = scratch_d + 3 * n, *dist = scratch_d + 6 * n;
    int64_t back = 0;
    for (int64_t j = 0; j < found; ++j) {
        double d = dist[j] - mesh->thickness;
        if (!(d < -slack))
            continue;
        int64_t p = scratch_i[n + j];
        const double *xp = x + 3 * p;
        double scale = dist[j] > 0.0 ? dist[j] : 1.0;
        double nrm[3] = {(xp[0] - q[3 * j]) / scale, (xp[1] - q[3 * j + 1]) / scale, (xp[2] - q[3 * j + 2]) / scale};
        push_back(x, p, nrm, d + slack, inv_mass, heavy, mass_factor);
        ++back;
    }
    return back;
}

/* SelfCollision._keep_out_of_colliders: the particles moved (count,) that are free at inv_mass (the response's own
 * copy, (n,)), each collider row in turn, that lie deeper than slack inside it (distance_and_normal with the pads
 * pad2 (n,) or NULL; mesh rows: keep_out_mesh) brought back to that depth along its normal; the first time for a
 * particle (heavy[p] 0) its inv_mass is divided by mass_factor and heavy[p] set. Returns the particles moved back (a
 * particle counts once per collider), or -1 with nothing touched when moved is not strictly increasing in [0, n) (the
 * twin's indices are sorted and distinct; checked here, a pass over count, instead of three NumPy reductions in the
 * binding on every call). meshes, scratch_i, scratch_d: see mesh_nearest (null without mesh rows). */
int64_t softsim_keep_out(double *x, int64_t n, double *inv_mass, uint8_t *heavy, const double *pad2, int64_t count,
                         const int64_t *moved, int64_t collider_count, const double *colliders,
                         const SoftsimKeepOutMesh *meshes, double slack, double mass_factor, int64_t *scratch_i,
                         double *scratch_d)
{
    for (int64_t i = 0; i < count; ++i)
        if (moved[i] < 0 || moved[i] >= n || (i > 0 && moved[i] <= moved[i - 1]))
            return -1;
    int64_t back = 0;
    for (int64_t k = 0; k < collider_count; ++k) {
        const double *c = colliders + SOFTSIM_COLLIDER_ROW * k;
        if (c[0] == SOFTSIM_KIND_MESH) {
            back += keep_out_mesh(meshes + (int64_t)c[3], x, n, inv_mass, heavy, count, moved, slack, mass_factor,
                                  scratch_i, scratch_d);
            continue;
        }
        for (int64_t i = 0; i < count; ++i) {
            int64_t p = moved[i];
            /* the twin filters moved by inv_mass once, before the colliders: a particle made heavy by an earlier
             * collider still has a positive inverse mass */
            if (!(inv_mass[p] > 0.0))
                continue;
            double nrm[3];
            double d = distance_normal(c, x + 3 * p, pad2, p, nrm);
            if (!(d < -slack))
                continue;
            push_back(x, p, nrm, d + slack, inv_mass, heavy, mass_factor);
            ++back;
        }
    }
    return back;
}
