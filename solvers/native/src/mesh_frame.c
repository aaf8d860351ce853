/* Mesh colliders inside a cloth's whole-frame call (softsim_cloth_substeps): the native twins of
 *   solvers/collision/colliders/kept_planes.py       kept_contact (the stale points measured anew, the planes kept),
 *   solvers/collision/colliders/mesh_collider.py     MeshCollider.contact of a still collider, _contact_rows, _sides,
 *                                                    pseudo_normals, resolve_faces,
 *   solvers/collision/broad_phase/mesh_face_pairs.py MeshFacePairs.face_pairs (the Verlet list: kept, refreshed
 *                                                    around the points beyond their allowances, or found anew),
 *                                                    _refresh, _allowances,
 *   solvers/collision/response/mesh_pushes.py        MeshFacePushes._face_passes (_Pushes.shift / at, _drift),
 *   solvers/collision/response/contact_set.py        find_contacts / point_contacts with mesh colliders,
 *   solvers/collision/response/collider_contacts.py  resolve_contacts / _resolve_once with mesh colliders,
 * built on mesh_collider.c's kernels (nearest triangles, face pairs, pushes, kept planes) and contact.c's (the
 * analytic rows' contacts and the friction of every row), in the order the NumPy pipeline runs them. A mesh row of the
 * collider table (kind SOFTSIM_KIND_MESH) stands still (its motion zero, its start pose its pose, its planes kept), or
 * moves or deforms (moving: mesh_moving.c's planes of every point with the sides read at the substep's start pose,
 * the surface's motion in the contact margin and the friction, the travel in the face-pair list; each substep's poses
 * from the binding's table of addresses, pose_of; its grids of one pose of the frame, queried drift wider), or
 * translates (translating: a still collider's row asked in its own frame, the points less each substep's offsets).
 *
 * Arithmetic follows the twins': _dot / einsum("ij,ij->i") adds (x*x + z*z) + y*y (dot_rows), einsum("ks,ksd->kd")
 * sums the stencil in order, cKDTree's distance is sqrt((dx^2 + dy^2) + dz^2). The kept state (planes, face-pair
 * list) is the NumPy objects' own arrays or copied back to them by the binding, so the per-substep path and this one
 * can take turns.
 *
 * A pair buffer too small for a list (the binding cannot know the count beforehand) ends the call with the substep
 * restored as it was at its start (x, v, the air's clock, the planes and the list: softsim_mesh_frame_save/restore);
 * the binding grows the buffers and runs the substep again, which then repeats the same operations.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "contact_common.h"
#include "mesh_frame.h"
#include "mesh_query.h"
#include "sphere_faces.h"

enum { SEARCH_MARGIN, SIDE_MARGIN, SKIN, KEPT_DRIFT, LINEAR_DRIFT, REFRESH_SHARE, MAX_ALLOWANCE, FACE_PASSES,
       CERTIFICATE_MARGIN };

static SoftsimStillMesh *mesh_of_row(const SoftsimMeshFrame *f, int64_t row)
{
    for (int64_t i = 0; i < f->count; ++i)
        if (f->meshes[i].row == row)
            return f->meshes + i;
    return 0;
}

/* A moving collider's poses of the substep whose collider table is `table` (one table per substep when colliders
 * move: its index is the substep's): the end pose into the collider's own fields, the start pose into its start
 * fields. A still collider's start is its pose. */
static void pose_of(const SoftsimClothPlan *plan, const double *table, SoftsimStillMesh *c)
{
    c->start_face_grid = c->face_grid;
    c->start_face_dims = c->face_dims;
    c->start_face_cell_start = c->face_cell_start;
    c->start_face_entry = c->face_entry;
    if (!c->moving) {
        c->start_vertices = c->vertices;
        c->start_face_normals = c->face_normals;
        c->start_vertex_normals = c->vertex_normals;
        c->start_side_normals = c->side_normals;
        return;
    }
    int64_t k = plan->tables_per_substep
                    ? (int64_t)((table - plan->collider_table) / (plan->collider_count * SOFTSIM_COLLIDER_ROW))
                    : 0;
    const int64_t *a = c->poses + SOFTSIM_POSE_FIELDS * k;
    c->pose_index = k;
    c->vertices = (const double *)(intptr_t)a[0];
    c->face_normals = (const double *)(intptr_t)a[1];
    c->vertex_normals = (const double *)(intptr_t)a[2];
    c->side_normals = (const double *)(intptr_t)a[3];
    c->start_vertices = (const double *)(intptr_t)a[4];
    c->start_face_normals = (const double *)(intptr_t)a[5];
    c->start_vertex_normals = (const double *)(intptr_t)a[6];
    c->start_side_normals = (const double *)(intptr_t)a[7];
}

/* The offsets (end (3), start (3)) [m] of translating collider c over the substep whose collider table is `table`. */
static const double *offsets_of(const SoftsimClothPlan *plan, const double *table, const SoftsimStillMesh *c)
{
    int64_t k = plan->tables_per_substep
                    ? (int64_t)((table - plan->collider_table) / (plan->collider_count * SOFTSIM_COLLIDER_ROW))
                    : 0;
    return c->offsets + 6 * k;
}

/* x and x_prev (n, 3) in a translating collider's own frame (MeshCollider._own_frame): x less the end offset into
 * f->own_x, x_prev less the start offset into f->own_x_prev. */
static void own_frame(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const double *offsets, const double *x,
                      const double *x_prev)
{
    for (int64_t p = 0; p < plan->n; ++p)
        for (int a = 0; a < 3; ++a) {
            f->own_x[3 * p + a] = x[3 * p + a] - offsets[a];
            f->own_x_prev[3 * p + a] = x_prev[3 * p + a] - offsets[3 + a];
        }
}

/* The vertices of moving collider c at pose i of its frame: the first substep's start pose (i = 0), else the end
 * pose of substep i - 1. */
static const double *pose_vertices(const SoftsimStillMesh *c, int64_t i)
{
    const int64_t *a = c->poses + SOFTSIM_POSE_FIELDS * (i ? i - 1 : 0);
    return (const double *)(intptr_t)a[i ? 0 : 4];
}

/* pose_shift measured up to pose k: shift[i] = shift[i - 1] + the largest move of a vertex from pose i - 1 to pose i,
 * grown past round-off, so shift[k] - shift[j] bounds every vertex's move between poses j and k (the triangle
 * inequality along the poses between). */
static void measure_shift(const SoftsimStillMesh *c, int64_t k)
{
    double *shift = c->pose_shift;
    for (int64_t i = 1; i <= k; ++i) {
        if (shift[i] >= 0.0)
            continue;
        const double *now = pose_vertices(c, i), *before = pose_vertices(c, i - 1);
        double most = 0.0;
        for (int64_t v = 0; v < 3 * c->m; v += 3) {
            double r[3] = {now[v] - before[v], now[v + 1] - before[v + 1], now[v + 2] - before[v + 2]};
            most = max2(most, dot_rows(r, r));
        }
        shift[i] = shift[i - 1] + sqrt(most) * (1.0 + 1e-9) + 1e-12;
    }
}

/* The certificates of moving collider c for its asking substep k (mesh_query.h): of the nearest triangles at its end
 * pose (pose k + 1), and in *side those of its start pose (pose k) when that is the very pose array of pose k (else
 * side->tri is null: the side queries go without). */
static MeshCertificates certificates(const SoftsimMeshFrame *f, const SoftsimStillMesh *c, MeshCertificates *side)
{
    int64_t k = c->pose_index;
    measure_shift(c, k + 1);
    MeshCertificates cert = {c->cert_tri, c->cert_pose, c->cert_x, c->cert_lower, c->pose_shift, k + 1,
                             f->settings[CERTIFICATE_MARGIN], c->cert_counts, c->cert_tri2, c->cert_rest};
    *side = cert;
    side->tri = c->start_vertices == pose_vertices(c, k) ? c->side_tri : 0;
    side->tri2 = c->side_tri2;
    side->rest = c->side_rest;
    side->pose = c->side_pose;
    side->x = c->side_x;
    side->lower = c->side_lower;
    side->current = k;
    return cert;
}

/* How much wider than its own distances moving collider c's triangle grid (built halfway between the frame's start
 * and end poses, poses 0 and K of K substeps) is queried from pose j: its poses interpolate its start and end
 * (Collider.over), so a vertex at pose j lies within |j / K - 1/2| times the travel of its place halfway, plus the
 * interpolations' rounding that c->drift holds beyond the travel (mesh_frame.py DRIFT). */
static double drift_at(const SoftsimClothPlan *plan, const SoftsimStillMesh *c, int64_t j)
{
    double K = (double)plan->substeps, off = fabs(2.0 * (double)j - K) / (2.0 * K);
    return c->drift - c->travel * (1.0 - off) * (1.0 - 1e-6);
}

/* Pose `pose` of lazy moving collider c (its substep's end pose, pose_index + 1, or its start pose, pose_index; start
 * says which fields of the substep's row of the pose table address it) of a frame of `poses` poses (substeps + 1):
 * an element's normal 3 poses doubles after the element before's, its flags in column `pose` of ready
 * (t + edge_count, poses). */
static void lazy_pose_of(const SoftsimStillMesh *c, int64_t pose, int64_t poses, int start, MeshLazyPose *p)
{
    const int64_t *a = c->poses + SOFTSIM_POSE_FIELDS * c->pose_index + (start ? 4 : 0);
    uint8_t *flags = c->ready + pose;
    p->vertices = (const double *)(intptr_t)a[0];
    p->face = (double *)(intptr_t)a[1];
    p->vertex = (double *)(intptr_t)a[2];
    p->edge = (double *)(intptr_t)a[3];
    p->triangles = c->triangles;
    p->side_edge = c->side_edge;
    p->edge_start = c->edge_start;
    p->edge_faces = c->edge_faces;
    p->row = 3 * poses;
    p->flag_row = poses;
    p->face_ready = flags;
    p->edge_ready = flags + c->t * poses;
    p->vertex_ready = c->vertex_ready;
    p->asked = c->asked;
    p->missing = c->missing;
    p->missing_count = c->missing_count;
    p->misses = 0;
}

/* MeshCollider.contact of a moving collider (no kept planes: every point measured, its side read at the start pose
 * where it may have crossed; _contact_rows with the travel): f->plane_d (n,) (inf beyond thickness + margin) and
 * f->plane_n (n, 3) ((0, 0, 1) there).
 *
 * memo (the twin's contact_memo: the end of a step asks again after the face push has moved a few points, and only
 * those are looked up again): 1 records this call's answers (x, planes, each point's distance to the surface, or inf
 * where none was found, and the limit thickness + margin), 2 reuses them for a point whose x has the same bits, of
 * the same collider and poses, when the recorded answer holds at the new limit: a point's plane depends on its own
 * x, x_prev (the same within the substep) and on the limit only through whether its nearest triangle lies within it
 * (found within the old limit and within the new one; or not found, and the new limit is no larger). 0: neither.
 * Returns the points found, or -1 when a lazy collider's vertex normal was missing (needs[] = [its index, -1]). */
static int64_t moving_contact(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const SoftsimStillMesh *c,
                              const double *x, const double *x_prev, double margin, int memo)
{
    int64_t n = plan->n;
    double limits[5] = {c->thickness, margin, c->thickness + f->settings[1], c->travel,
                        drift_at(plan, c, c->pose_index + 1)};
    double limit = c->thickness + margin;
    const int64_t *points = f->all_points;
    int64_t k = n;
    int64_t *state = f->memo_state;
    int reuse = memo == 2 && state[0] && state[1] == c - f->meshes && state[2] == (int64_t)(intptr_t)c->vertices &&
                state[3] == (int64_t)(intptr_t)c->start_vertices;
    if (reuse) {
        double old = f->memo_limit[0];
        k = 0;
        for (int64_t p = 0; p < n; ++p) {
            double dist = f->memo_dist[p];
            if (memcmp(x + 3 * p, f->memo_x + 3 * p, 3 * sizeof(double)) == 0 &&
                (dist <= limit || (!(dist <= old) && limit <= old))) {
                int found = dist <= limit; /* found within the old limit and within this one */
                f->plane_d[p] = found ? f->memo_d[p] : INFINITY;
                for (int a = 0; a < 3; ++a)
                    f->plane_n[3 * p + a] = found ? f->memo_n[3 * p + a] : (a == 2 ? 1.0 : 0.0);
                continue;
            }
            f->memo_rows[k++] = p;
            f->plane_d[p] = INFINITY;
            f->plane_n[3 * p] = 0.0;
            f->plane_n[3 * p + 1] = 0.0;
            f->plane_n[3 * p + 2] = 1.0;
        }
        points = f->memo_rows;
    } else
        for (int64_t p = 0; p < n; ++p) {
            f->plane_d[p] = INFINITY;
            f->plane_n[3 * p] = 0.0;
            f->plane_n[3 * p + 1] = 0.0;
            f->plane_n[3 * p + 2] = 1.0;
        }
    state[0] = 0;
    MeshCertificates side = {0}, cert = c->cert_tri ? certificates(f, c, &side) : side;
    MeshLazyPose end_pose, start_pose;
    if (c->lazy) {
        lazy_pose_of(c, c->pose_index + 1, plan->substeps + 1, 0, &end_pose);
        lazy_pose_of(c, c->pose_index, plan->substeps + 1, 1, &start_pose);
    }
    int64_t found = k ? mesh_contact_rows_hinted(
        x, x_prev, points, k, c->triangles, c->vertices, c->face_grid, c->face_dims, c->face_cell_start,
        c->face_entry, c->face_normals, c->vertex_normals, c->side_normals, c->start_vertices, c->start_face_grid,
        c->start_face_dims, c->start_face_cell_start, c->start_face_entry, c->start_face_normals,
        c->start_vertex_normals, c->start_side_normals, c->face_stamp, limits, f->m_row, f->m_d, f->m_normal,
        f->m_dist, f->m_work_i, f->m_work_d, c->t, f->m_hint, c->cert_tri ? &cert : 0, side.tri ? &side : 0,
        c->lazy ? &end_pose : 0, c->lazy ? &start_pose : 0, drift_at(plan, c, c->pose_index)) : 0;
    if (found < 0) { /* a vertex normal the binding computes: the substep runs again (status 3) */
        f->needs[0] = c - f->meshes;
        f->needs[1] = -1;
        return -1;
    }
    for (int64_t j = 0; j < found; ++j) {
        int64_t p = f->m_row[j];
        f->plane_d[p] = f->m_d[j];
        for (int a = 0; a < 3; ++a)
            f->plane_n[3 * p + a] = f->m_normal[3 * j + a];
    }
    if (memo == 1) {
        memcpy(f->memo_x, x, 3 * (size_t)n * sizeof(double));
        memcpy(f->memo_d, f->plane_d, (size_t)n * sizeof(double));
        memcpy(f->memo_n, f->plane_n, 3 * (size_t)n * sizeof(double));
        for (int64_t p = 0; p < n; ++p)
            f->memo_dist[p] = INFINITY;
        for (int64_t j = 0; j < found; ++j)
            f->memo_dist[f->m_row[j]] = f->m_dist[j];
        f->memo_limit[0] = limit;
        state[0] = 1;
        state[1] = c - f->meshes;
        state[2] = (int64_t)(intptr_t)c->vertices;
        state[3] = (int64_t)(intptr_t)c->start_vertices;
    }
    return found;
}

/* MeshCollider.motion of a moving collider at the rows points (k,) of x into f->motion (n, 3) (their rows). */
static void moving_motion(const SoftsimMeshFrame *f, const SoftsimStillMesh *c, const double *x, const int64_t *points,
                          int64_t k)
{
    mesh_motion_hinted(x, points, k, c->triangles, c->vertices, c->face_grid, c->face_dims, c->face_cell_start,
                       c->face_entry, c->start_vertices, c->thickness + f->settings[0], c->drift, c->face_stamp,
                       f->motion, f->m_work_i, f->m_work_d, c->t, f->m_hint);
}

/* moving_motion at every point (f->all_points) of the x that moving_contact just measured, from its answers: its
 * found rows f->m_row with their distances f->m_dist and the nearest triangles and weights its scratch still holds
 * (softsim_mesh_contact_rows' first k and 3 k entries of m_work_i and m_work_d). The motion's limit, thickness +
 * SEARCH_MARGIN, is at most the contact's, thickness + margin, and a point's nearest triangle within both is the least
 * (distance, index) of either query, so this is the motion query's answer without querying again. */
static void motion_from_contact(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const SoftsimStillMesh *c,
                                int64_t found)
{
    double limit = c->thickness + f->settings[SEARCH_MARGIN];
    for (int64_t p = 0; p < 3 * plan->n; ++p)
        f->motion[p] = 0.0;
    for (int64_t j = 0; j < found; ++j)
        if (f->m_dist[j] <= limit)
            mesh_surface_motion(c->triangles, c->vertices, c->start_vertices, f->m_work_i[j], f->m_work_d + 3 * j,
                                f->motion + 3 * f->m_row[j]);
}

/* ------------------------------------------------------------------------------------------ save and restore */

/* One saved array: live into saved (to_save), or saved back into live. */
static void keep(void *live, void *saved, size_t bytes, int to_save)
{
    if (to_save)
        memcpy(saved, live, bytes);
    else
        memcpy(live, saved, bytes);
}

/* The body's kept planes (x0, normal, d0, clear) into their save buffer, or back. */
static void keep_planes(SoftsimStillMesh *c, int64_t n, int to_save)
{
    keep(c->plane_x0, c->save_planes, sizeof(double) * 3 * n, to_save);
    keep(c->plane_normal, c->save_planes + 3 * n, sizeof(double) * 3 * n, to_save);
    keep(c->plane_d0, c->save_planes + 6 * n, sizeof(double) * n, to_save);
    keep(c->plane_clear, c->save_planes + 7 * n, sizeof(double) * n, to_save);
}

/* The face-pair list (its state, reference positions, allowances and pairs) into its save buffers, or back; the pair
 * counts are the saved ones either way. */
static void keep_list(SoftsimStillMesh *c, int64_t n, int to_save)
{
    for (int k = 0; k < 3; ++k)
        keep(c->list_state + k, c->save_state + 1 + k, sizeof(int64_t), to_save);
    keep(c->reference, c->save_reference, sizeof(double) * 3 * n, to_save);
    keep(c->allowance, c->save_allowance, sizeof(double) * n, to_save);
    int64_t nc = c->list_state[1], ne = c->list_state[2];
    keep(c->pair_corner, c->save_pair_corner, sizeof(int64_t) * nc, to_save);
    keep(c->pair_triangle, c->save_pair_triangle, sizeof(int64_t) * nc, to_save);
    keep(c->pair_corner_d, c->save_pair_corner_d, sizeof(double) * nc, to_save);
    keep(c->pair_edge, c->save_pair_edge, sizeof(int64_t) * ne, to_save);
    keep(c->pair_body_edge, c->save_pair_body_edge, sizeof(int64_t) * ne, to_save);
    keep(c->pair_edge_d, c->save_pair_edge_d, sizeof(double) * ne, to_save);
}

static void save_planes(SoftsimStillMesh *c, int64_t n)
{
    if (c->save_state[4])
        return;
    c->save_state[4] = 1;
    keep_planes(c, n, 1);
}

static void save_list(SoftsimStillMesh *c, int64_t n)
{
    if (c->save_state[0])
        return;
    c->save_state[0] = 1;
    keep_list(c, n, 1);
}

void softsim_mesh_frame_save(const SoftsimClothPlan *plan)
{
    const SoftsimMeshFrame *f = plan->mesh;
    memcpy(f->save_x, plan->x, sizeof(double) * 3 * plan->n);
    memcpy(f->save_v, plan->v, sizeof(double) * 3 * plan->n);
    if (plan->air_count) {
        f->save_air[0] = plan->air_state[0];
        f->save_air[1] = plan->air_state[1];
    }
    for (int64_t i = 0; i < f->count; ++i) {
        f->meshes[i].save_state[0] = 0;
        f->meshes[i].save_state[4] = 0;
    }
}

void softsim_mesh_frame_restore(const SoftsimClothPlan *plan)
{
    const SoftsimMeshFrame *f = plan->mesh;
    int64_t n = plan->n;
    memcpy(plan->x, f->save_x, sizeof(double) * 3 * n);
    memcpy(plan->v, f->save_v, sizeof(double) * 3 * n);
    if (plan->air_count) {
        plan->air_state[0] = f->save_air[0];
        plan->air_state[1] = f->save_air[1];
    }
    for (int64_t i = 0; i < f->count; ++i) {
        SoftsimStillMesh *c = f->meshes + i;
        if (c->save_state[4])
            keep_planes(c, n, 0);
        if (c->save_state[0])
            keep_list(c, n, 0);
        c->save_state[0] = 0;
        c->save_state[4] = 0;
    }
}

/* ------------------------------------------------------------------------------------------ contact planes */

/* MeshCollider.pseudo_normals for one point of a mesh row (mesh_feature_normal). */
static const double *pseudo_normal(const SoftsimStillMesh *c, int64_t tri, const double *bary)
{
    return mesh_feature_normal(c->triangles, c->face_normals, c->vertex_normals, c->side_normals, tri, bary);
}

/* MeshCollider._closest through the native grid (MeshClosest.closest): the found points' rows, triangles, weights,
 * closest points, distances and interior flags, in the order of points. Each point tries first the triangle it found
 * nearest last (c->nearest_hint, when the binding gave one): the same answer, found sooner. */
static int64_t closest(const SoftsimStillMesh *c, const double *x, const int64_t *points, int64_t k, double limit,
                       int64_t *row, int64_t *tri, double *bary, double *q, double *d, int64_t *interior)
{
    if (c->t == 0 || k == 0)
        return 0;
    return mesh_closest_drift(x, points, k, c->vertices, c->triangles, c->face_grid, c->face_dims,
                              c->face_cell_start, c->face_entry, limit, 0.0, c->face_stamp, row, tri, bary, q, d,
                              interior, c->t, c->nearest_hint, 0);
}

/* MeshCollider._contact_rows of a still collider for the points (k,) within thickness + margin: the found points'
 * rows (f->out_row), unsigned distances (f->out_d), planes' d (f->plane_d) and normals (f->plane_n), in order;
 * returns how many. The sides of points nearer the surface than their step's motion come from x_prev against their
 * own nearest triangle (_sides, the start pose being the pose). */
static int64_t contact_rows(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const SoftsimStillMesh *c,
                            const double *x, const double *x_prev, double margin, const int64_t *points, int64_t k)
{
    const double *S = f->settings;
    double th = c->thickness;
    int64_t found = closest(c, x, points, k, th + margin, f->out_row, f->out_tri, f->out_bary, f->out_q, f->out_d,
                            f->out_interior);
    int64_t crossing = 0;
    for (int64_t j = 0; j < found; ++j) {
        int64_t p = f->out_row[j];
        const double *xp = x + 3 * p, *q = f->out_q + 3 * j, *xq = x_prev + 3 * p;
        double dist = f->out_d[j];
        double r[3] = {xp[0] - q[0], xp[1] - q[1], xp[2] - q[2]};
        double div = dist > 0.0 ? dist : 1.0;
        double away[3] = {r[0] / div, r[1] / div, r[2] / div};
        double outward = dot_rows(away, pseudo_normal(c, f->out_tri[j], f->out_bary + 3 * j));
        double moved[3] = {xp[0] - xq[0], xp[1] - xq[1], xp[2] - xq[2]};
        f->side[p] = outward < 0.0 && dist > SOFTSIM_ON_SURFACE ? -1.0 : 1.0;
        if (dist <= sqrt(dot_rows(moved, moved)) + 0.0 + SOFTSIM_ON_SURFACE)
            f->crossing[crossing++] = p;
    }
    if (crossing) {
        for (int64_t i = 0; i < crossing; ++i)
            f->side[f->crossing[i]] = 1.0;
        (void)plan;
        int64_t got = closest(c, x_prev, f->crossing, crossing, th + S[SIDE_MARGIN], f->side_row, f->side_tri,
                              f->side_bary, f->side_q, f->side_d, f->side_interior);
        for (int64_t s = 0; s < got; ++s) {
            int64_t p = f->side_row[s];
            const double *xq = x_prev + 3 * p, *q = f->side_q + 3 * s;
            double r[3] = {xq[0] - q[0], xq[1] - q[1], xq[2] - q[2]};
            f->side[p] = dot_rows(r, pseudo_normal(c, f->side_tri[s], f->side_bary + 3 * s)) < 0.0 &&
                                 f->side_d[s] > SOFTSIM_ON_SURFACE
                             ? -1.0
                             : 1.0;
        }
    }
    for (int64_t j = 0; j < found; ++j) {
        int64_t p = f->out_row[j];
        int64_t tri = f->out_tri[j];
        const double *xp = x + 3 * p, *q = f->out_q + 3 * j;
        double dist = f->out_d[j];
        double r[3] = {xp[0] - q[0], xp[1] - q[1], xp[2] - q[2]};
        double div = dist > 0.0 ? dist : 1.0;
        double away[3] = {r[0] / div, r[1] / div, r[2] / div};
        double outward = dot_rows(away, pseudo_normal(c, tri, f->out_bary + 3 * j));
        double side = f->side[p];
        const double *fn = c->face_normals + 3 * tri;
        int use_face = f->out_interior[j] || dist <= SOFTSIM_ON_SURFACE || outward * side < 0.0;
        double *normal = f->plane_n + 3 * j;
        for (int a = 0; a < 3; ++a)
            normal[a] = use_face ? side * fn[a] : away[a];
        f->plane_d[j] = dot_rows(r, normal) - th;
    }
    return found;
}

/* The box of a body's points (n, 3), taken once for every collider that asks at the same positions (body_far): each
 * axis's lowest and highest coordinate, and whether all of that axis's coordinates are numbers. */
typedef struct {
    const double *x; /* the positions it was taken of (0: not yet) */
    double low[3], high[3];
    int nan[3];
} BodyBox;

/* Whether point q lies within reach of the box low .. high on every axis (the gaps' own arithmetic). */
static inline int within_box(const double *q, const double *low, const double *high, double reach)
{
    return q[0] - high[0] <= reach && low[0] - q[0] <= reach && q[1] - high[1] <= reach && low[1] - q[1] <= reach &&
           q[2] - high[2] <= reach && low[2] - q[2] <= reach;
}

/* MeshBroadPhase.far_from: 1 when the points x (n, 3) all lie farther than reach [m] from c's box along one axis
 * (the same arithmetic: each axis's lowest and highest coordinate, then the two gaps; the box of x from b, taken there
 * if b holds another's); 0 without points, without a box (a moving collider) or when no axis separates. An axis where
 * a point has a NaN coordinate never separates (NumPy's min and max carry the NaN, and it compares false).
 * A point within reach of the box on every axis settles it sooner: the lowest and highest coordinate of every axis lie
 * on its either side, so no axis separates (rounding keeps the order of differences). The one that did last
 * (c->far_hint) is tried first: a body resting on the collider answers after one point. A pass that finds no such
 * point has read every point: it takes the box of x on the way (each axis's least and greatest number, whatever the
 * order, and whether a NaN came), for this collider's axis test and every other collider's asking at the same x. */
static int body_far(SoftsimStillMesh *c, BodyBox *b, const double *x, int64_t n, double reach)
{
    if (c->bounds == 0 || c->moving || n == 0)
        return 0;
    const double *low = c->bounds, *high = c->bounds + 3;
    if (b->x != x) {
        int64_t start = c->far_hint >= 0 && c->far_hint < n ? c->far_hint : 0;
        /* in locals: stores through b might alias x, and would be made at every point */
        double least[3] = {INFINITY, INFINITY, INFINITY}, most[3] = {-INFINITY, -INFINITY, -INFINITY};
        int nan[3] = {0, 0, 0};
        for (int64_t k = 0, p = start; k < n; ++k, p = p + 1 < n ? p + 1 : 0) {
            const double *q = x + 3 * p;
            if (within_box(q, low, high, reach)) {
                c->far_hint = p;
                return 0;
            }
            for (int a = 0; a < 3; ++a) {
                least[a] = q[a] < least[a] ? q[a] : least[a];
                most[a] = q[a] > most[a] ? q[a] : most[a];
                nan[a] |= q[a] != q[a];
            }
        }
        for (int a = 0; a < 3; ++a) {
            b->low[a] = least[a];
            b->high[a] = most[a];
            b->nan[a] = nan[a];
        }
        b->x = x;
    }
    for (int a = 0; a < 3; ++a)
        if (!b->nan[a] && (b->low[a] - high[a] > reach || low[a] - b->high[a] > reach))
            return 1;
    return 0;
}

/* kept_contact: the stale points measured anew within margin + SKIN and their planes kept, then every point's
 * answer from the planes: f->plane_d (n,) and f->plane_n (n, 3). Returns 1 (planes untouched, f->plane_d and
 * f->plane_n not written: no point has a plane) when the body is out of that reach of the collider's box
 * (body_far), else 0. */
static int kept_contact(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, SoftsimStillMesh *c,
                        const double *x, const double *x_prev, double margin, BodyBox *box)
{
    const double *S = f->settings;
    int64_t n = plan->n;
    double th = c->thickness;
    if (body_far(c, box, x, n, th + (margin + S[SKIN])))
        return 1;
    int64_t count = softsim_kept_stale(x, x_prev, n, c->plane_x0, c->plane_d0, c->plane_clear, S[KEPT_DRIFT] * th,
                                       th + margin, f->stale);
    if (count) {
        save_planes(c, n);
        double wide = margin + S[SKIN];
        int64_t found = contact_rows(plan, f, c, x, x_prev, wide, f->stale, count);
        for (int64_t i = 0; i < count; ++i) {
            int64_t s = f->stale[i];
            for (int a = 0; a < 3; ++a)
                c->plane_x0[3 * s + a] = x[3 * s + a];
            c->plane_d0[s] = INFINITY;
            c->plane_clear[s] = th + wide;
        }
        for (int64_t j = 0; j < found; ++j) {
            int64_t p = f->out_row[j];
            double d = f->plane_d[j];
            c->plane_d0[p] = d;
            for (int a = 0; a < 3; ++a)
                c->plane_normal[3 * p + a] = f->plane_n[3 * j + a];
            c->plane_clear[p] = d + th > 0.0 ? f->out_d[j] : 0.0;
        }
    }
    softsim_kept_planes(x, n, c->plane_x0, c->plane_normal, c->plane_d0, margin, f->plane_d, f->plane_n);
    return 0;
}

/* ------------------------------------------------------------------------------------------ face-pair list */

#define PIECE_BLOCK 32 /* pieces per box of the nearest-centre search (consecutive pieces lie along one edge) */

/* The boxes (lo x, y, z, hi x, y, z) of c's piece centres in blocks of PIECE_BLOCK, into c->piece_boxes; returns the
 * block count. */
static int64_t piece_blocks(const SoftsimStillMesh *c)
{
    const double *axis[3] = {c->piece_centres, c->piece_centres + c->piece_count, c->piece_centres + 2 * c->piece_count};
    int64_t blocks = (c->piece_count + PIECE_BLOCK - 1) / PIECE_BLOCK;
    for (int64_t b = 0; b < blocks; ++b) {
        int64_t first = b * PIECE_BLOCK, last = first + PIECE_BLOCK < c->piece_count ? first + PIECE_BLOCK : c->piece_count;
        double *box = c->piece_boxes + 6 * b;
        for (int a = 0; a < 3; ++a) {
            box[a] = box[3 + a] = axis[a][first];
            for (int64_t j = first + 1; j < last; ++j) {
                box[a] = min2(box[a], axis[a][j]);
                box[3 + a] = max2(box[3 + a], axis[a][j]);
            }
        }
    }
    return blocks;
}

/* The least squared distance (dx * dx + dy * dy) + dz * dz from P to a piece centre of c: the block nearest by its box
 * first, then every block whose box may hold a nearer centre. A block passed over has its box's squared distance above
 * the least so far by more than round-off, so each of its centres' computed distances is too: the minimum, and its
 * bits, are those of testing every centre (the twin's k-d tree query). */
static double nearest_piece2(const SoftsimStillMesh *c, int64_t blocks, const double *P)
{
    const double *cx = c->piece_centres, *cy = cx + c->piece_count, *cz = cy + c->piece_count;
    int64_t first = 0;
    double first_d2 = INFINITY;
    for (int64_t b = 0; b < blocks; ++b) {
        const double *box = c->piece_boxes + 6 * b;
        double d2 = mesh_box_distance2(P, box, box + 3);
        if (d2 < first_d2) {
            first_d2 = d2;
            first = b;
        }
    }
    double nearest = INFINITY;
    for (int64_t k = -1; k < blocks; ++k) {
        int64_t b = k < 0 ? first : k;
        const double *box = c->piece_boxes + 6 * b;
        if (k == first || mesh_box_distance2(P, box, box + 3) * (1.0 - 1e-9) > nearest)
            continue;
        int64_t end = (b + 1) * PIECE_BLOCK < c->piece_count ? (b + 1) * PIECE_BLOCK : c->piece_count;
        for (int64_t j = b * PIECE_BLOCK; j < end; ++j) {
            double dx = P[0] - cx[j], dy = P[1] - cy[j], dz = P[2] - cz[j];
            double s = (dx * dx + dy * dy) + dz * dz;
            nearest = s < nearest ? s : nearest;
        }
    }
    return nearest;
}

/* _allowances of the points (all when points is 0) at x, written to out[p]. */
static void allowances(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const SoftsimStillMesh *c,
                       const double *x, const int64_t *points, int64_t k, double *out)
{
    const double *S = f->settings;
    double tight = S[SKIN] / 3.0;
    int64_t count = points ? k : plan->n;
    if (c->sharp_count == 0 || plan->edge_count == 0) {
        for (int64_t i = 0; i < count; ++i)
            out[points ? points[i] : i] = tight;
        return;
    }
    double longest = sqrt(largest_edge2(x, plan->edges, plan->edge_count)), reach = c->thickness;
    int64_t blocks = piece_blocks(c);
    for (int64_t i = 0; i < count; ++i) {
        int64_t p = points ? points[i] : i;
        double lower = sqrt(nearest_piece2(c, blocks, x + 3 * p)) - c->piece_radius - 3.0 * c->travel;
        double a = (((lower - longest) - reach) - 2.0 * S[SKIN] / 3.0) * (1.0 - 1e-12);
        a = a < tight ? tight : a;
        out[p] = a > S[MAX_ALLOWANCE] ? S[MAX_ALLOWANCE] : a;
    }
}

/* allowances of the points (k,) of a body at x (n, 3) with edges (e, 2), against a collider's sharp-edge pieces:
 * centres (3, p) by axis, their largest radius, its travel and thickness [m]; settings as SoftsimMeshFrame's;
 * piece_boxes (6 p,) scratch; out (n,) [m] at the points' rows (mesh_frame.allowances, the tests' door to them). */
SOFTSIM_API void softsim_mesh_allowances(const double *x, int64_t n, const int64_t *edges, int64_t e,
                                         const double *centres, int64_t p, double piece_radius, double travel,
                                         double thickness, const double *settings, double *piece_boxes,
                                         const int64_t *points, int64_t k, double *out)
{
    SoftsimClothPlan plan = {0};
    plan.n = n;
    plan.edges = edges;
    plan.edge_count = e;
    SoftsimMeshFrame f = {0};
    f.settings = settings;
    SoftsimStillMesh c = {0};
    c.sharp_count = p;
    c.piece_count = p;
    c.piece_centres = centres;
    c.piece_radius = piece_radius;
    c.travel = travel;
    c.thickness = thickness;
    c.piece_boxes = piece_boxes;
    allowances(&plan, &f, &c, x, points, k, out);
}

/* The corner and edge pairs of the body triangles tri_rows (k,) and edges edge_rows (m,) within their reaches at
 * positions at, written from index `from` of each kind's buffers (_pairs_within); returns 0, or -1 with needs[]
 * set when a buffer is too small. */
static int pairs_within(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, SoftsimStillMesh *c, int64_t index,
                        const double *at, int64_t k, int64_t m, int64_t from_c, int64_t from_e, int64_t *nc,
                        int64_t *ne)
{
    *nc = *ne = 0;
    if (c->corner_count && k) {
        *nc = mesh_corner_pairs_drift(at, plan->faces, f->tri_rows, k, f->tri_reach, c->travel, c->vertices,
                                      c->corners, c->corner_grid, c->corner_dims, c->corner_cell_start, c->corner_entry,
                                      c->drift, c->corner_stamp, c->capacity - from_c, c->pair_corner + from_c,
                                        c->pair_triangle + from_c, c->pair_corner_d + from_c);
        if (*nc > c->capacity - from_c) {
            f->needs[0] = index;
            f->needs[1] = from_c + *nc;
            return -1;
        }
    }
    if (c->sharp_count && m) {
        *ne = mesh_edge_pairs_drift(at, plan->edges, f->edge_rows, m, f->edge_reach, c->travel, c->vertices, c->sharp,
                                    c->sharp_grid, c->sharp_dims, c->sharp_cell_start, c->sharp_entry, c->drift,
                                    c->sharp_stamp, c->capacity - from_e, c->pair_edge + from_e,
                                      c->pair_body_edge + from_e, c->pair_edge_d + from_e);
        if (*ne > c->capacity - from_e) {
            f->needs[0] = index;
            f->needs[1] = from_e + *ne;
            return -1;
        }
    }
    return 0;
}

/* MeshFacePairs._refresh around the points f->beyond (nb,). */
static int refresh(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, SoftsimStillMesh *c, int64_t index,
                   const double *x, int64_t nb)
{
    const double *S = f->settings;
    int64_t t = plan->face_count, e = plan->edge_count;
    for (int64_t i = 0; i < nb; ++i) {
        int64_t p = f->beyond[i];
        for (int a = 0; a < 3; ++a)
            c->reference[3 * p + a] = x[3 * p + a];
    }
    allowances(plan, f, c, x, f->beyond, nb, c->allowance);
    for (int64_t i = 0; i < nb; ++i)
        f->mark[f->beyond[i]] = 1;
    double base = c->thickness + 2.0 * S[SKIN] / 3.0;
    int64_t k = 0, m = 0;
    for (int64_t j = 0; j < t; ++j) {
        const int64_t *tri = plan->faces + 3 * j;
        if (!(f->mark[tri[0]] || f->mark[tri[1]] || f->mark[tri[2]]))
            continue;
        double a = max2(max2(c->allowance[tri[0]], c->allowance[tri[1]]), c->allowance[tri[2]]);
        f->tri_rows[k] = j;
        f->tri_reach[k++] = base + a;
    }
    for (int64_t j = 0; j < e; ++j) {
        const int64_t *edge = plan->edges + 2 * j;
        if (!(f->mark[edge[0]] || f->mark[edge[1]]))
            continue;
        f->edge_rows[m] = j;
        f->edge_reach[m++] = base + max2(c->allowance[edge[0]], c->allowance[edge[1]]);
    }
    /* the untouched elements' pairs kept in order, then the touched ones' found again */
    int64_t kc = 0, ke = 0;
    for (int64_t i = 0; i < c->list_state[1]; ++i) {
        const int64_t *tri = plan->faces + 3 * c->pair_triangle[i];
        if (f->mark[tri[0]] || f->mark[tri[1]] || f->mark[tri[2]])
            continue;
        c->pair_corner[kc] = c->pair_corner[i];
        c->pair_triangle[kc] = c->pair_triangle[i];
        c->pair_corner_d[kc++] = c->pair_corner_d[i];
    }
    for (int64_t i = 0; i < c->list_state[2]; ++i) {
        const int64_t *edge = plan->edges + 2 * c->pair_body_edge[i];
        if (f->mark[edge[0]] || f->mark[edge[1]])
            continue;
        c->pair_edge[ke] = c->pair_edge[i];
        c->pair_body_edge[ke] = c->pair_body_edge[i];
        c->pair_edge_d[ke++] = c->pair_edge_d[i];
    }
    for (int64_t i = 0; i < nb; ++i)
        f->mark[f->beyond[i]] = 0;
    int64_t nc, ne;
    if (pairs_within(plan, f, c, index, c->reference, k, m, kc, ke, &nc, &ne) < 0)
        return -1;
    c->list_state[1] = kc + nc;
    c->list_state[2] = ke + ne;
    return 0;
}

/* MeshFacePairs.face_pairs with reach = thickness at x: the kept list, refreshed, or found anew (within reach +
 * SKIN, references at x, allowances from _allowances). 0; 1 when the body is out of reach of a still collider's box
 * (body_far: no pair, the list untouched); -1 when a buffer is too small. */
static int face_list(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, SoftsimStillMesh *c, int64_t index,
                     const double *x, BodyBox *box)
{
    const double *S = f->settings;
    int64_t n = plan->n, t = plan->face_count, e = plan->edge_count;
    if (body_far(c, box, x, n, c->thickness))
        return 1;
    if (c->list_state[0]) {
        int within = 1;
        for (int64_t p = 0; p < n && within; ++p) {
            const double *xp = x + 3 * p, *r = c->reference + 3 * p;
            double moved[3] = {xp[0] - r[0], xp[1] - r[1], xp[2] - r[2]};
            within = dot_rows(moved, moved) <= c->allowance[p] * c->allowance[p];
        }
        if (within)
            return 0;
        int64_t nb = 0;
        for (int64_t p = 0; p < n; ++p) {
            const double *xp = x + 3 * p, *r = c->reference + 3 * p;
            double moved[3] = {xp[0] - r[0], xp[1] - r[1], xp[2] - r[2]};
            double half = 0.5 * c->allowance[p];
            if (dot_rows(moved, moved) > half * half)
                f->beyond[nb++] = p;
        }
        if ((double)nb <= S[REFRESH_SHARE] * (double)n) {
            save_list(c, n);
            return refresh(plan, f, c, index, x, nb);
        }
    }
    save_list(c, n);
    double reach = c->thickness + S[SKIN];
    for (int64_t j = 0; j < t; ++j) {
        f->tri_rows[j] = j;
        f->tri_reach[j] = reach;
    }
    for (int64_t j = 0; j < e; ++j) {
        f->edge_rows[j] = j;
        f->edge_reach[j] = reach;
    }
    int64_t nc, ne;
    c->list_state[0] = 0;
    if (pairs_within(plan, f, c, index, x, t, e, 0, 0, &nc, &ne) < 0)
        return -1;
    c->list_state[0] = 1;
    c->list_state[1] = nc;
    c->list_state[2] = ne;
    memcpy(c->reference, x, sizeof(double) * 3 * n);
    allowances(plan, f, c, x, 0, 0, c->allowance);
    return 0;
}

/* ------------------------------------------------------------------------------------------ face passes */

/* _Pushes.shift of pair i: sum_s weights x[stencil] (in order) less the origin. */
static void shift_of(const double *x, int width, const int64_t *stencil, const double *weights, const double *origin,
                     double *out)
{
    for (int a = 0; a < 3; ++a) {
        double s = weights[0] * x[3 * stencil[0] + a];
        for (int j = 1; j < width; ++j)
            s = s + weights[j] * x[3 * stencil[j] + a];
        out[a] = s - origin[a];
    }
}

/* The largest squared shift of k pairs (0 with none). */
static double largest_shift(const double *x, int64_t k, int width, const int64_t *stencil, const double *weights,
                            const double *origin)
{
    double largest = 0.0;
    for (int64_t i = 0; i < k; ++i) {
        double s[3];
        shift_of(x, width, stencil + width * i, weights + width * i, origin + 3 * i, s);
        double d = dot_rows(s, s);
        if (d > largest)
            largest = d;
    }
    return largest;
}

/* _Pushes.at(shift(x)) of k pairs into c->at_depth, c->at_slip. */
static void linearized(const SoftsimStillMesh *c, const double *x, int64_t k, int width, const int64_t *stencil,
                       const double *weights, const double *direction, const double *depth, const double *slip,
                       const double *origin)
{
    for (int64_t i = 0; i < k; ++i) {
        double s[3];
        shift_of(x, width, stencil + width * i, weights + width * i, origin + 3 * i, s);
        c->at_depth[i] = depth[i] - dot_rows(s, direction + 3 * i);
        for (int a = 0; a < 3; ++a)
            c->at_slip[3 * i + a] = slip[3 * i + a] + s[a];
    }
}

/* softsim_mesh_push_apply (MeshFacePushes._apply) with its sums kept for the pairs' particles only
 * (mesh_push_apply's touched-particles mode; f->mark is zero between calls). *clean: x holds no -0.0 (set once a
 * call moved: mesh_push_apply then visits only the stencils' particles). */
static int64_t apply(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, const SoftsimStillMesh *c, double *x,
                     int64_t k, int64_t width, const int64_t *stencil, const double *weights, const double *direction,
                     const double *depth, const double *slip, int *clean)
{
    if (k == 0)
        return 0;
    int64_t moved = mesh_push_apply(x, plan->n, plan->inv_mass, k, width, stencil, weights, direction, depth, slip,
                                    c->friction, f->sums, f->counts, f->mark, *clean);
    if (moved)
        *clean = 1;
    return moved;
}

/* MeshFacePushes._face_passes (resolve_faces) in place on x from x_prev (the body's, or a translating collider's
 * frame's), the first pass asking first_box for the box of x (body_far): returns the pairs that pushed in the first
 * pass (0: x untouched), or -1. */
static int64_t face_passes(const SoftsimClothPlan *plan, const SoftsimMeshFrame *f, SoftsimStillMesh *c,
                           int64_t index, double *x, const double *x_prev, BodyBox *first_box)
{
    const double *S = f->settings;
    if (plan->face_count == 0 || c->t == 0)
        return 0;
    int64_t found = 0, nc = 0, ne = 0, passes = (int64_t)S[FACE_PASSES];
    int measured = 0, clean = 0; /* clean: x holds no -0.0 (apply), true from the first pass that moved on */
    for (int64_t pass = 0; pass < passes; ++pass) {
        int64_t moved;
        if (measured && sqrt(max2(largest_shift(x, nc, 3, c->cp_stencil, c->cp_weights, c->cp_origin),
                                  largest_shift(x, ne, 2, c->ep_stencil, c->ep_weights, c->ep_origin))) <=
                            S[LINEAR_DRIFT] * c->thickness) {
            linearized(c, x, nc, 3, c->cp_stencil, c->cp_weights, c->cp_direction, c->cp_depth, c->cp_slip,
                       c->cp_origin);
            moved = apply(plan, f, c, x, nc, 3, c->cp_stencil, c->cp_weights, c->cp_direction, c->at_depth, c->at_slip,
                           &clean);
            /* the edges at the positions the corners left */
            linearized(c, x, ne, 2, c->ep_stencil, c->ep_weights, c->ep_direction, c->ep_depth, c->ep_slip,
                       c->ep_origin);
            moved += apply(plan, f, c, x, ne, 2, c->ep_stencil, c->ep_weights, c->ep_direction, c->at_depth, c->at_slip,
                           &clean);
        } else {
            BodyBox box = {0}; /* x as a later pass finds it (the first pass's: the caller's) */
            int listed = face_list(plan, f, c, index, x, pass == 0 ? first_box : &box);
            if (listed < 0)
                return -1;
            if (listed == 1) /* no pair within reach: nothing to push (the twin's empty pushes; found stays) */
                break;
            nc = softsim_mesh_corner_pushes(x, x_prev, plan->faces, c->vertices, c->start_vertices, c->corners,
                                            c->pair_corner, c->pair_triangle, c->list_state[1], c->thickness,
                                            c->cp_stencil, c->cp_weights, c->cp_direction, c->cp_depth, c->cp_slip,
                                            c->cp_origin);
            moved = apply(plan, f, c, x, nc, 3, c->cp_stencil, c->cp_weights, c->cp_direction, c->cp_depth, c->cp_slip,
                           &clean);
            ne = softsim_mesh_edge_pushes(x, x_prev, plan->edges, c->vertices, c->start_vertices, c->sharp, c->pair_edge,
                                          c->pair_body_edge, c->list_state[2], c->thickness, c->ep_stencil,
                                          c->ep_weights, c->ep_direction, c->ep_depth, c->ep_slip, c->ep_origin);
            moved += apply(plan, f, c, x, ne, 2, c->ep_stencil, c->ep_weights, c->ep_direction, c->ep_depth, c->ep_slip,
                           &clean);
            measured = 1;
        }
        if (pass == 0)
            found = moved;
        if (moved == 0)
            break;
    }
    return found;
}

/* ------------------------------------------------------------------------------------------ the step's contacts */

/* The largest motion of any particle from x_prev to x (0 without particles), measured on a call's first ask
 * (*measured < 0: not yet) and kept in *measured for its later ones. */
static double largest_motion(const double *x, const double *x_prev, int64_t n, double *measured)
{
    if (*measured < 0.0)
        *measured = n ? sqrt(largest_motion2(x, x_prev, n, dot_rows)) : 0.0;
    return *measured;
}

/* Every collider's contacts at x, in table order (point_contacts): mode 1 the step's contact set (a particle within
 * its step's motion, offset = n . x - d, pushed 0; each mesh's face-pair list then brought up to x, as
 * find_contacts asks for it), mode 0 resolve_contacts' (a particle inside, offset = d). Returns the count, or -1. */
static int64_t contacts_at(const SoftsimClothPlan *plan, const double *table, const double *x, const double *x_prev,
                           int64_t mode, int64_t *particle, int64_t *owner, double *normal, double *offset,
                           double *pushed, int memo)
{
    const SoftsimMeshFrame *f = plan->mesh;
    int64_t n = plan->n;
    /* The particles' largest motion over the step (largest_motion; -1: not measured yet): a still collider's margin
     * (MeshCollider.contact's, travel 0) is it, at least SEARCH_MARGIN */
    double reach = -1.0;
    /* the box of x, taken once for every still collider; a translating one's of its own frame's positions */
    BodyBox box = {0}, own_box = {0};
    int64_t count = 0;
    for (int64_t k = 0; k < plan->collider_count; ++k) {
        const double *row = table + SOFTSIM_COLLIDER_ROW * k;
        if (row[0] != SOFTSIM_KIND_MESH) {
            int64_t got = softsim_contacts_find(x, x_prev, n, plan->inv_mass, plan->pad2, 1, row, mode,
                                                particle + count, owner + count, normal + 3 * count, offset + count,
                                                pushed + count);
            for (int64_t i = count; i < count + got; ++i)
                owner[i] = k;
            count += got;
            continue;
        }
        SoftsimStillMesh *c = mesh_of_row(f, k);
        pose_of(plan, table, c);
        double travel[3] = {0.0, 0.0, 0.0}; /* a translating collider's motion over the step */
        int far = 0;                         /* kept_contact found the body out of reach: no plane */
        if (c->moving) {
            /* its own margin: the largest motion plus its travel; step_margin adds the surface's motion under x */
            double own = n ? largest_motion(x, x_prev, n, &reach) + c->travel : 0.0;
            int64_t found = moving_contact(plan, f, c, x, x_prev,
                                           own > f->settings[SEARCH_MARGIN] ? own : f->settings[SEARCH_MARGIN],
                                           mode ? 0 : memo);
            if (found < 0)
                return -1;
            if (mode)
                motion_from_contact(plan, f, c, found);
        } else if (c->translating) {
            /* the anchor's kept planes in its frame, with its own margin: the largest motion there */
            const double *offsets = offsets_of(plan, table, c);
            own_frame(plan, f, offsets, x, x_prev);
            double own = n ? sqrt(largest_motion2(f->own_x, f->own_x_prev, n, dot_rows)) : 0.0;
            own_box.x = 0; /* own_x holds this collider's frame */
            far = kept_contact(plan, f, c, f->own_x, f->own_x_prev,
                               own > f->settings[SEARCH_MARGIN] ? own : f->settings[SEARCH_MARGIN], &own_box);
            for (int a = 0; a < 3; ++a)
                travel[a] = offsets[a] - offsets[3 + a];
        } else {
            double still = largest_motion(x, x_prev, n, &reach) + 0.0;
            far = kept_contact(plan, f, c, x, x_prev,
                               still > f->settings[SEARCH_MARGIN] ? still : f->settings[SEARCH_MARGIN], &box);
        }
        for (int64_t p = 0; p < n && !far; ++p) {
            double d = f->plane_d[p];
            /* no plane here (d = inf) fails d < limit whatever the limit: passed over before its roots */
            if (!(plan->inv_mass[p] > 0.0) || !(d < INFINITY))
                continue;
            const double *xp = x + 3 * p, *xq = x_prev + 3 * p;
            double limit = 0.0;
            if (mode) {
                double moved[3] = {xp[0] - xq[0], xp[1] - xq[1], xp[2] - xq[2]};
                limit = sqrt(dot_rows(moved, moved));
                if (c->moving) {
                    const double *mo = f->motion + 3 * p;
                    limit = limit + sqrt(dot_rows(mo, mo));
                } else if (c->translating)
                    limit = limit + sqrt(dot_rows(travel, travel)); /* step_margin's motion: the same everywhere */
            }
            if (!(d < limit))
                continue;
            const double *nrm = f->plane_n + 3 * p;
            particle[count] = p;
            owner[count] = k;
            for (int a = 0; a < 3; ++a)
                normal[3 * count + a] = nrm[a];
            offset[count] = mode ? dot_rows(xp, nrm) - d : d;
            pushed[count] = 0.0;
            ++count;
        }
        if (mode && plan->face_count &&
            face_list(plan, f, c, c - f->meshes, c->translating ? f->own_x : x, c->translating ? &own_box : &box) < 0)
            return -1;
    }
    return count;
}

int64_t softsim_mesh_frame_find(const SoftsimClothPlan *plan, const double *table)
{
    return contacts_at(plan, table, plan->x, plan->x_prev, 1, plan->c_particle, plan->c_owner, plan->c_normal,
                       plan->c_offset, plan->c_pushed, 0);
}


/* softsim_contacts_friction of count contacts (particle, owner, normal, budget scale pushed), each collider's run in
 * order; a moving mesh's against the motion of its surface under the particles' start positions (motion(x_prev)). */
static void friction(const SoftsimClothPlan *plan, const double *table, int64_t count, const int64_t *particle,
                     const int64_t *owner, const double *normal, const double *pushed)
{
    SoftsimMeshFrame *f = plan->mesh;
    for (int64_t i = 0; i < count;) {
        int64_t j = i;
        while (j < count && owner[j] == owner[i])
            ++j;
        const double *row = table + SOFTSIM_COLLIDER_ROW * owner[i];
        SoftsimStillMesh *c = row[0] == SOFTSIM_KIND_MESH ? mesh_of_row(f, owner[i]) : 0;
        if (c && c->moving && row[2] > 0.0) {
            pose_of(plan, table, c);
            moving_motion(f, c, plan->x_prev, particle + i, j - i);
            for (int64_t q = i; q < j; ++q) {
                int64_t p = particle[q];
                if (pushed[q] > 0.0)
                    remove_slip_relative(plan->x + 3 * p, plan->x_prev + 3 * p, f->motion + 3 * p, normal + 3 * q,
                                       row[2] * pushed[q]);
            }
        } else if (c && c->translating && row[2] > 0.0) { /* against its motion, the same everywhere */
            const double *offsets = offsets_of(plan, table, c);
            double travel[3] = {offsets[0] - offsets[3], offsets[1] - offsets[4], offsets[2] - offsets[5]};
            for (int64_t q = i; q < j; ++q) {
                int64_t p = particle[q];
                if (pushed[q] > 0.0)
                    remove_slip_relative(plan->x + 3 * p, plan->x_prev + 3 * p, travel, normal + 3 * q,
                                         row[2] * pushed[q]);
            }
        } else
            softsim_contacts_friction(plan->x, plan->x_prev, j - i, table, particle + i, owner + i, normal + 3 * i,
                                      pushed + i);
        i = j;
    }
}

void softsim_mesh_frame_friction(const SoftsimClothPlan *plan, const double *table, int64_t count)
{
    friction(plan, table, count, plan->c_particle, plan->c_owner, plan->c_normal, plan->c_pushed);
}

/* resolve_contacts: every collider's particles inside (found from the same x) projected onto its plane, then, per
 * collider in order, slipping up to friction * depth. */
static int64_t resolve_vertices(const SoftsimClothPlan *plan, const double *table, int memo)
{
    double *x = plan->x;
    int64_t count = contacts_at(plan, table, x, plan->x_prev, 0, plan->r_particle, plan->r_owner, plan->r_normal,
                                plan->r_distance, plan->r_scratch, memo);
    for (int64_t i = 0; i < count;) {
        int64_t j = i;
        for (; j < count && plan->r_owner[j] == plan->r_owner[i]; ++j) {
            double *xp = x + 3 * plan->r_particle[j];
            const double *nrm = plan->r_normal + 3 * j;
            double depth = max2(-plan->r_distance[j], 0.0);
            xp[0] += depth * nrm[0];
            xp[1] += depth * nrm[1];
            xp[2] += depth * nrm[2];
            plan->r_scratch[j] = depth;
        }
        friction(plan, table, j - i, plan->r_particle + i, plan->r_owner + i, plan->r_normal + 3 * i,
                 plan->r_scratch + i);
        i = j;
    }
    return count;
}

/* The largest squared motion |x - x_prev - shift| of a free particle (-1: none). */
static double largest_free_motion2(const SoftsimClothPlan *plan, const double *shift)
{
    double largest = -1.0;
    for (int64_t p = 0; p < plan->n; ++p) {
        if (!(plan->inv_mass[p] > 0.0))
            continue;
        const double *xp = plan->x + 3 * p, *xq = plan->x_prev + 3 * p;
        double m[3] = {(xp[0] - xq[0]) - shift[0], (xp[1] - xq[1]) - shift[1], (xp[2] - xq[2]) - shift[2]};
        double s = dot_rows(m, m);
        if (s > largest)
            largest = s;
    }
    return largest;
}

/* collider_contacts.contact_sweeps: ceil(the largest free motion / sweep length), at most the most sweeps, each
 * particle's motion relative to every translating collider counted too; 1 without a free particle. */
static int64_t finish_sweeps(const SoftsimClothPlan *plan, const double *table)
{
    const SoftsimMeshFrame *f = plan->mesh;
    const double zero[3] = {0.0, 0.0, 0.0};
    double largest = largest_free_motion2(plan, zero);
    if (largest < 0.0)
        return 1;
    for (int64_t i = 0; i < f->count; ++i) {
        const SoftsimStillMesh *c = f->meshes + i;
        if (!c->translating)
            continue;
        const double *offsets = offsets_of(plan, table, c);
        double travel[3] = {offsets[0] - offsets[3], offsets[1] - offsets[4], offsets[2] - offsets[5]};
        largest = max2(largest, largest_free_motion2(plan, travel));
    }
    double count = ceil(sqrt(largest) / plan->finish_settings[1]);
    if (!(count > 1.0))
        return 1;
    return count > plan->finish_settings[2] ? (int64_t)plan->finish_settings[2] : (int64_t)count;
}

/* resolve_collider_contacts with still mesh colliders (and ground planes and spheres) when it takes one sweep:
 * vertices, each mesh's and sphere's face passes in table order, vertices again when a face was pushed. Returns the
 * sweeps the step needs (x untouched when more than 1), or -1. */
int64_t softsim_mesh_frame_finish(const SoftsimClothPlan *plan, const double *table)
{
    SoftsimMeshFrame *f = plan->mesh;
    int64_t n = plan->n, t = plan->face_count;
    if (t > 0) { /* f->count > 0: a mesh collider reaches between corners */
        int64_t sweeps = finish_sweeps(plan, table);
        if (sweeps > 1)
            return sweeps;
    }
    /* the moving colliders' planes recorded for the second resolve (moving_contact's memo) */
    if (resolve_vertices(plan, table, 1) < 0)
        return -1;
    if (t == 0)
        return 1;
    int64_t faces = 0;
    BodyBox box = {0}; /* of x, for the still colliders' passes until a collider moves x */
    for (int64_t k = 0; k < plan->collider_count; ++k) {
        const double *row = table + SOFTSIM_COLLIDER_ROW * k;
        if (row[0] == SOFTSIM_KIND_SPHERE) { /* contact.c's sphere face push, with the contacts binding's buffers */
            box.x = 0;
            FaceWork w = face_work(plan->work_i, plan->work_d, n, t);
            faces += sphere_faces(plan->x, plan->x_prev, n, plan->inv_mass, t, plan->faces, plan->edge_count,
                                  plan->edges, plan->topology_state, plan->x0, row, plan->face_passes,
                                  plan->finish_settings, &w);
            continue;
        }
        if (row[0] != SOFTSIM_KIND_MESH)
            continue;
        SoftsimStillMesh *c = mesh_of_row(f, k);
        pose_of(plan, table, c);
        int64_t got;
        if (c->translating) { /* the anchor's passes in its frame, their moves added to x */
            own_frame(plan, f, offsets_of(plan, table, c), plan->x, plan->x_prev);
            memcpy(f->own_before, f->own_x, sizeof(double) * 3 * n);
            BodyBox own_box = {0};
            got = face_passes(plan, f, c, c - f->meshes, f->own_x, f->own_x_prev, &own_box);
            for (int64_t i = 0; i < 3 * n; ++i)
                plan->x[i] += f->own_x[i] - f->own_before[i];
            box.x = 0;
        } else {
            got = face_passes(plan, f, c, c - f->meshes, plan->x, plan->x_prev, &box);
            if (got != 0) /* its first pass moved x (none that moved nothing touches it) */
                box.x = 0;
        }
        if (got < 0)
            return -1;
        faces += got;
    }
    if (faces && resolve_vertices(plan, table, 2) < 0)
        return -1;
    return 1;
}

/* The binding (mesh_frame.py) mirrors both structs field by field, 8 bytes each. */
_Static_assert(sizeof(SoftsimStillMesh) == 113 * 8, "SoftsimStillMesh layout changed: update mesh_frame._MESH_FIELDS");
_Static_assert(sizeof(SoftsimMeshFrame) == 51 * 8, "SoftsimMeshFrame layout changed: update mesh_frame._FRAME_FIELDS");
