/* Analytic collider contacts (ground planes and spheres, still or moving) and the position-based step's prediction
 * and velocity update: the native twins of
 *   solvers/collision/response/contact_set.py        find_contacts / point_contacts / step_margin (point
 *                                                    contacts only),
 *   solvers/collision/response/collider_contacts.py  ContactConstraints.project / apply_friction,
 *                                                    resolve_collider_contacts with one sweep (resolve_contacts, the
 *                                                    sphere face push, resolve_contacts again),
 *   solvers/collision/response/faces.py              resolve_sphere_faces (_near, _Topology.longest_edge, _own_bound,
 *                                                    _push_out),
 *   solvers/collision/colliders/shapes.py            GroundPlane / Sphere distance_and_normal, contact, motion,
 *                                                    padded_radius,
 *   solvers/position_based.py                        the prediction at the top of PositionBasedSolver.step,
 *   solvers/base.py                                  the velocity and damping at the end of finish_step.
 *
 * Arithmetic order follows the twins': NumPy's einsum("ij,ij->i") adds (x*x + z*z) + y*y (dot_rows), einsum over the
 * leading axis of (3, m) arrays and sum(axis=1) add (x + y) + z (dot_columns), faces.py's own _dot3 likewise.
 *
 * Collider table: one row of SOFTSIM_COLLIDER_ROW doubles per collider, filled by the binding (kernels.py,
 * AnalyticContacts.pose) from the posed collider objects:
 *   [0] kind (0 ground plane, 1 sphere)  [1] moving (1 when the collider has a start pose)  [2] friction
 *   ground: [3..5] unit normal, [6] point . normal + thickness, [7..9] point - start.point
 *   sphere: [3..5] centre, [6] rho = radius + thickness, [7] cap2 = ((1 + PAD_LIMIT)^2 - 1) rho^2,
 *           [8..10] start centre, [11] radius - start.radius, [12..14] centre - start.centre
 * Scalars derived from several fields are computed once in Python with the twin's own expressions.
 */
#include <math.h>

#include "contact_common.h"
#include "softsim_native.h"

#define KIND_SPHERE 1.0

/* The sphere face push's dot products: its twin's einsum over (3, k) columns sums in order. */
static inline double dot_columns(const double *u, const double *v) { return dot_in_order(u, v); }

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
    double moved[3] = {(xp[0] - xq[0]) - m[0], (xp[1] - xq[1]) - m[1], (xp[2] - xq[2]) - m[2]};
    double along = dot_rows(moved, n);
    double t[3] = {moved[0] - along * n[0], moved[1] - along * n[1], moved[2] - along * n[2]};
    double slide = sqrt(dot_rows(t, t));
    double remove = slide > 1e-15 ? min2(1.0, budget / max2(slide, 1e-15)) : 0.0;
    xp[0] -= remove * t[0];
    xp[1] -= remove * t[1];
    xp[2] -= remove * t[2];
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

/* ContactConstraints.project: each contact below its plane moved back onto it along n, in the contacts' order (a
 * collider's particles are distinct, and colliders run in order as the twin's loop does). */
void softsim_contacts_project(double *x, int64_t count, const int64_t *particle, const double *normal,
                              const double *offset, double *pushed)
{
    for (int64_t i = 0; i < count; ++i) {
        double *xp = x + 3 * particle[i];
        const double *n = normal + 3 * i;
        double depth = offset[i] - dot_rows(xp, n);
        depth = max2(depth, 0.0);
        xp[0] += depth * n[0];
        xp[1] += depth * n[1];
        xp[2] += depth * n[2];
        pushed[i] += depth;
    }
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

/* faces._reach2 of one triangle. */
static double reach2(const double *a, const double *b, const double *c)
{
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double w[3] = {c[0] - b[0], c[1] - b[1], c[2] - b[2]};
    double z[3] = {a[0] - c[0], a[1] - c[1], a[2] - c[2]};
    double ab = dot_rows(u, u), bc = dot_rows(w, w), ca = dot_rows(z, z);
    double longest = max2(max2(ab, bc), ca);
    if (!(2.0 * longest < ab + bc + ca))
        return 0.25 * longest;
    double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double f[3] = {u[1] * e2[2] - u[2] * e2[1], u[2] * e2[0] - u[0] * e2[2], u[0] * e2[1] - u[1] * e2[0]};
    double area4 = max2(4.0 * dot_rows(f, f), 1e-300);
    return min2(ab * bc * ca / area4, longest / 3.0);
}

/* _Topology.longest_edge: an upper bound on the longest edge, refitted from the edges when the bound has grown past
 * refit_growth (REFIT_GROWTH) times the last exact value. state[0] 1 once x0 holds the positions of the last refit, state[1]
 * that refit's longest edge. */
static double longest_edge(const double *x, int64_t n, int64_t edge_count, const int64_t *edges, double *state,
                           double *x0, double refit_growth)
{
    if (state[0] != 0.0) {
        double largest = 0.0;
        for (int64_t p = 0; p < n; ++p) {
            double m[3] = {x[3 * p] - x0[3 * p], x[3 * p + 1] - x0[3 * p + 1], x[3 * p + 2] - x0[3 * p + 2]};
            double s = dot_columns(m, m);
            if (s > largest || p == 0)
                largest = s;
        }
        double bound = state[1] + 2.0 * sqrt(largest);
        if (bound <= refit_growth * state[1])
            return bound;
    }
    if (edge_count == 0)
        return 0.0;
    double largest = 0.0;
    for (int64_t e = 0; e < edge_count; ++e) {
        const double *a = x + 3 * edges[2 * e], *b = x + 3 * edges[2 * e + 1];
        double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
        double s = dot_rows(d, d);
        if (s > largest || e == 0)
            largest = s;
    }
    state[1] = sqrt(largest);
    for (int64_t k = 0; k < 3 * n; ++k)
        x0[k] = x[k];
    state[0] = 1.0;
    return state[1];
}

/* Work space of the face push, carved from the binding's buffers (softsim_contacts_finish documents the sizes). */
typedef struct {
    int64_t *active;   /* (t,) candidate triangles still in the passes */
    int64_t *vertices; /* (n,) the candidates' corners, ascending */
    int64_t *mark;     /* (n,) 0/1 */
    double *r2;        /* (n,) */
    double *dx;        /* (n, 3) per-vertex sums of a pass */
    double *count;     /* (n,) hit triangles per vertex in a pass */
    double *tri;       /* (t, 8) per active triangle in a pass: dist, hit, coeff (3), delta (3) */
} FaceWork;

/* faces.resolve_sphere_faces for one sphere row c: the triangles reaching within rho of the centre pushed out in up
 * to `passes` Jacobi passes; returns the first pass's hits (0 when the passes stopped at once). */
static int64_t sphere_faces(double *x, const double *x_prev, int64_t n, const double *inv_mass, int64_t t,
                            const int64_t *triangles, int64_t edge_count, const int64_t *edges, double *state,
                            double *x0, const double *c, int64_t passes, const double *settings, FaceWork *w)
{
    if (t == 0 || n == 0)
        return 0;
    const double *center = c + 3;
    double rho = c[6];
    double r2_min = 0.0;
    for (int64_t p = 0; p < n; ++p) {
        double rel[3] = {x[3 * p] - center[0], x[3 * p + 1] - center[1], x[3 * p + 2] - center[2]};
        w->r2[p] = dot_rows(rel, rel);
        if (w->r2[p] < r2_min || p == 0)
            r2_min = w->r2[p];
    }
    double length = longest_edge(x, n, edge_count, edges, state, x0, settings[3]);
    double limit = rho * rho + length * length / 3.0;
    if (r2_min >= limit)
        return 0;
    /* the cull (_near, _own_bound) and the pins' triangles left out, in triangle order */
    int64_t m = 0;
    for (int64_t j = 0; j < t; ++j) {
        const int64_t *tj = triangles + 3 * j;
        double ra = w->r2[tj[0]], rb = w->r2[tj[1]], rc = w->r2[tj[2]];
        if (!(ra < limit || rb < limit || rc < limit))
            continue;
        double low = min2(min2(ra, rb), rc);
        if (!(low - reach2(x + 3 * tj[0], x + 3 * tj[1], x + 3 * tj[2]) < rho * rho))
            continue;
        if (!(max2(max2(inv_mass[tj[0]], inv_mass[tj[1]]), inv_mass[tj[2]]) > 0.0))
            continue;
        w->active[m++] = j;
    }
    if (m == 0)
        return 0;
    for (int64_t i = 0; i < m; ++i)
        for (int k = 0; k < 3; ++k)
            w->mark[triangles[3 * w->active[i] + k]] = 1;
    int64_t V = 0;
    for (int64_t p = 0; p < n; ++p) {
        if (w->mark[p]) {
            w->vertices[V++] = p;
            w->mark[p] = 0;
        }
    }
    double friction = c[2];
    double drift[3] = {0.0, 0.0, 0.0};
    if (c[1] != 0.0) {
        drift[0] = c[12];
        drift[1] = c[13];
        drift[2] = c[14];
    }
    double tolerance = settings[0] * rho; /* FACE_TOLERANCE * rho */
    int64_t contacts = 0;
    for (int64_t pass = 0; pass < passes; ++pass) {
        int64_t hits = 0;
        double deepest = 0.0;
        for (int64_t i = 0; i < m; ++i) {
            const int64_t *tj = triangles + 3 * w->active[i];
            const double *A = x + 3 * tj[0], *B = x + 3 * tj[1], *C = x + 3 * tj[2];
            double *out = w->tri + 8 * i;
            /* primitives.closest_weights over the twin's (3, k) columns: every dot product in order; the twin's
             * u = 1 - v - w is not clamped here */
            double e1[3], e2[3], v, wt;
            closest_vw(center, A, B, C, dot_in_order, dot_in_order, e1, e2, &v, &wt);
            double b[3] = {1.0 - v - wt, v, wt};
            double q[3] = {A[0] + v * e1[0] + wt * e2[0], A[1] + v * e1[1] + wt * e2[1], A[2] + v * e1[2] + wt * e2[2]};
            double r[3] = {q[0] - center[0], q[1] - center[1], q[2] - center[2]};
            double dist = sqrt(dot_columns(r, r));
            double weight[3] = {b[0] * inv_mass[tj[0]], b[1] * inv_mass[tj[1]], b[2] * inv_mass[tj[2]]};
            double norm = dot_columns(b, weight);
            out[0] = dist;
            out[1] = 0.0;
            if (!(dist < rho && norm > 0.0))
                continue;
            out[1] = 1.0;
            ++hits;
            double depth = rho - dist;
            if (depth > deepest)
                deepest = depth;
            double normal[3];
            if (dist > 1e-12) {
                normal[0] = r[0] / dist;
                normal[1] = r[1] / dist;
                normal[2] = r[2] / dist;
            } else { /* a face through the very centre goes out along its own normal */
                double f[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                               e1[0] * e2[1] - e1[1] * e2[0]};
                double length_f = max2(sqrt(dot_columns(f, f)), 1e-300);
                normal[0] = f[0] / length_f;
                normal[1] = f[1] / length_f;
                normal[2] = f[2] / length_f;
            }
            double delta[3] = {depth * normal[0], depth * normal[1], depth * normal[2]};
            if (friction > 0.0) {
                const double *P0 = x_prev + 3 * tj[0], *P1 = x_prev + 3 * tj[1], *P2 = x_prev + 3 * tj[2];
                double moved[3];
                for (int d = 0; d < 3; ++d) {
                    /* einsum("km,ikm->im") over the twin's strided gather adds the corners (0 + 1) + 2 */
                    double before = (b[0] * P0[d] + b[1] * P1[d]) + b[2] * P2[d];
                    moved[d] = q[d] + delta[d] - before - drift[d];
                }
                double along = dot_columns(moved, normal);
                double tangential[3] = {moved[0] - along * normal[0], moved[1] - along * normal[1],
                                        moved[2] - along * normal[2]};
                double slide = sqrt(dot_columns(tangential, tangential));
                double keep = min2(max2(1.0 - friction * depth / max2(slide, 1e-15), 0.0), 1.0);
                double cut = slide > 1e-15 ? 1.0 - keep : 0.0;
                delta[0] -= cut * tangential[0];
                delta[1] -= cut * tangential[1];
                delta[2] -= cut * tangential[2];
            }
            double inverse = 1.0 / norm;
            out[2] = weight[0] * inverse;
            out[3] = weight[1] * inverse;
            out[4] = weight[2] * inverse;
            out[5] = delta[0];
            out[6] = delta[1];
            out[7] = delta[2];
        }
        if (hits == 0 || deepest < tolerance)
            break;
        if (pass == 0)
            contacts = hits;
        for (int64_t k = 0; k < V; ++k) {
            int64_t p = w->vertices[k];
            w->dx[3 * p] = w->dx[3 * p + 1] = w->dx[3 * p + 2] = 0.0;
            w->count[p] = 0.0;
        }
        /* np.bincount over the corners, corner 0 of every triangle first, then corner 1, then corner 2 */
        for (int k = 0; k < 3; ++k) {
            for (int64_t i = 0; i < m; ++i) {
                const double *out = w->tri + 8 * i;
                if (out[1] == 0.0)
                    continue; /* a miss adds zeros */
                int64_t p = triangles[3 * w->active[i] + k];
                double coeff = out[2 + k];
                if (coeff > 0.0)
                    w->count[p] += 1.0;
                w->dx[3 * p] += coeff * out[5];
                w->dx[3 * p + 1] += coeff * out[6];
                w->dx[3 * p + 2] += coeff * out[7];
            }
        }
        double step2_max = 0.0;
        for (int64_t k = 0; k < V; ++k) {
            int64_t p = w->vertices[k];
            double count = max2(w->count[p], 1.0);
            double step2 = 0.0;
            for (int d = 0; d < 3; ++d) {
                double dx = w->dx[3 * p + d] / count;
                x[3 * p + d] += dx;
                step2 += dx * dx;
            }
            if (step2 > step2_max)
                step2_max = step2;
        }
        if (pass + 1 < passes) {
            /* the triangles that can still reach within rho next pass, when that drops a quarter of them */
            double reach = rho + sqrt(step2_max);
            int64_t kept = 0;
            for (int64_t i = 0; i < m; ++i)
                kept += w->tri[8 * i] < reach;
            if (kept < 0.75 * (double)m) {
                int64_t j = 0;
                for (int64_t i = 0; i < m; ++i)
                    if (w->tri[8 * i] < reach)
                        w->active[j++] = w->active[i];
                m = j;
            }
        }
    }
    return contacts;
}

/* response.resolve_collider_contacts for analytic colliders, when it takes one sweep (response.contact_sweeps):
 * resolve_contacts, the face push of every sphere (with triangles), and resolve_contacts again when a face was
 * pushed. Returns the sweeps the step needs: 1 when done here; more, with x untouched, when the caller must walk the
 * step in sweeps (the NumPy path).
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
    int64_t spheres = 0;
    for (int64_t k = 0; k < collider_count; ++k)
        spheres += colliders[SOFTSIM_COLLIDER_ROW * k] == KIND_SPHERE;
    int64_t sweeps;
    if (t > 0 && spheres > 0 && contact_sweeps(x, x_prev, n, inv_mass, settings[1], settings[2], &sweeps))
        return sweeps; /* SWEEP_LENGTH, MAX_SWEEPS */
    resolve_vertices(x, x_prev, n, inv_mass, pad2, collider_count, colliders, particle, owner, normal, distance,
                     scratch);
    if (t == 0 || spheres == 0)
        return 1;
    FaceWork w = {work_i, work_i + t, work_i + t + n, work_d, work_d + n, work_d + 4 * n, work_d + 5 * n};
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
    return 1;
}
