/* A moving or deforming mesh collider's contact planes in one call: the native twin of
 *   solvers/collision/colliders/mesh_collider.py   MeshCollider._contact_rows with _sides and pseudo_normals
 * (the collider's pose at the step's end, its start pose for the sides, its travel), built on mesh_collider.c's
 * nearest-triangle query at each pose. The binding is mesh_kernels.MeshClosest.contact_rows.
 *
 * Arithmetic follows the twin's: _dot / einsum("ij,ij->i") adds (x*x + z*z) + y*y (dot_rows); the sides of the
 * points nearer the surface than their step's motion plus the travel come from x_prev against their own nearest
 * triangle at the start pose (a point's side depends on its x_prev alone, so the twin's per-point memo of sides
 * gives the same answer). */
#include <math.h>

#include "contact_common.h"
#include "mesh_query.h"
#include "softsim_native.h"

SOFTSIM_API int64_t softsim_mesh_contact_rows(
    const double *x, const double *x_prev, const int64_t *points, int64_t k, const int64_t *triangles,
    const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
    const double *face_normals, const double *vertex_normals, const double *side_normals, const double *start_vertices,
    const double *start_grid, const int64_t *start_dims, const int64_t *start_cell_start, const int64_t *start_entry,
    const double *start_face_normals, const double *start_vertex_normals, const double *start_side_normals,
    int64_t *stamp, const double *limits, int64_t *out_row, double *out_d, double *out_normal, double *out_dist,
    int64_t *work_i, double *work_d)
{
    return mesh_contact_rows_hinted(x, x_prev, points, k, triangles, vertices, grid, dims, cell_start, entry,
                                    face_normals, vertex_normals, side_normals, start_vertices, start_grid, start_dims,
                                    start_cell_start, start_entry, start_face_normals, start_vertex_normals,
                                    start_side_normals, stamp, limits, out_row, out_d, out_normal, out_dist, work_i,
                                    work_d, 0, 0, 0, 0, 0, 0, limits[4]);
}

/* The pseudo-normal of a point's nearest feature: from the arrays given, or of a lazy pose (a missing vertex normal
 * reads as zeros: the call then reports it and its answers are not used). */
static const double *feature_normal(MeshLazyPose *lazy, const int64_t *triangles, const double *face_normals,
                                    const double *vertex_normals, const double *side_normals, int64_t tri,
                                    const double *bary)
{
    static const double missing[3] = {0.0, 0.0, 0.0};
    if (!lazy)
        return mesh_feature_normal(triangles, face_normals, vertex_normals, side_normals, tri, bary);
    const double *normal = mesh_lazy_feature_normal(lazy, tri, bary);
    return normal ? normal : missing;
}

/* softsim_mesh_contact_rows with the first guesses hint (null, or one triangle index per point of x, t triangles) of
 * both its nearest-triangle queries (mesh_closest_drift) and the collider's certificates (null, or mesh_query.h's) of
 * the nearest triangles at x (cert) and at x_prev on the start pose (side_cert): the same answers, sooner. With the
 * lazy poses (mesh_query.h MeshLazyPose; null: the normals arrays given) the normals are read through them, and -1
 * says a vertex normal was missing. The start pose's query is widened by start_drift (limits[4] the end pose's). */
int64_t mesh_contact_rows_hinted(
    const double *x, const double *x_prev, const int64_t *points, int64_t k, const int64_t *triangles,
    const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
    const double *face_normals, const double *vertex_normals, const double *side_normals, const double *start_vertices,
    const double *start_grid, const int64_t *start_dims, const int64_t *start_cell_start, const int64_t *start_entry,
    const double *start_face_normals, const double *start_vertex_normals, const double *start_side_normals,
    int64_t *stamp, const double *limits, int64_t *out_row, double *out_d, double *out_normal, double *out_dist,
    int64_t *work_i, double *work_d, int64_t t, int64_t *hint, const MeshCertificates *cert,
    const MeshCertificates *side_cert, MeshLazyPose *lazy_end, MeshLazyPose *lazy_start, double start_drift)
{
    double thickness = limits[0], margin = limits[1], side_limit = limits[2], travel = limits[3], drift = limits[4];
    /* scratch (work_i (6 k), work_d (14 k)): the found points' triangles and interior flags, the crossing points,
     * then the start pose's answers for them (rows, triangles, interior flags); the found points' weights, closest
     * points and sides, then the start pose's distances, weights and closest points */
    int64_t *tri = work_i, *interior = work_i + k, *crossing = work_i + 2 * k, *side_row = work_i + 3 * k;
    int64_t *s_tri = work_i + 4 * k, *s_interior = work_i + 5 * k;
    double *bary = work_d, *q = work_d + 3 * k, *side = work_d + 6 * k, *side_d = work_d + 7 * k;
    double *s_bary = work_d + 8 * k, *s_q = work_d + 11 * k;
    int64_t found = mesh_closest_drift(x, points, k, vertices, triangles, grid, dims, cell_start, entry,
                                       thickness + margin, drift, stamp, out_row, tri, bary, q, out_dist, interior,
                                       t, hint, cert);
    int64_t crossings = 0;
    for (int64_t j = 0; j < found; ++j) {
        int64_t p = out_row[j];
        const double *xp = x + 3 * p, *qj = q + 3 * j, *xq = x_prev + 3 * p;
        double dist = out_dist[j];
        double r[3] = {xp[0] - qj[0], xp[1] - qj[1], xp[2] - qj[2]};
        double div = dist > 0.0 ? dist : 1.0;
        double away[3] = {r[0] / div, r[1] / div, r[2] / div};
        double outward = dot_rows(away, feature_normal(lazy_end, triangles, face_normals, vertex_normals, side_normals,
                                                       tri[j], bary + 3 * j));
        double moved[3] = {xp[0] - xq[0], xp[1] - xq[1], xp[2] - xq[2]};
        side[j] = outward < 0.0 && dist > SOFTSIM_ON_SURFACE ? -1.0 : 1.0;
        if (dist <= sqrt(dot_rows(moved, moved)) + travel + SOFTSIM_ON_SURFACE) {
            side[j] = 1.0; /* no triangle within SIDE_MARGIN at the start pose: the normal side */
            crossing[crossings++] = p;
        }
    }
    if (crossings) {
        int64_t got = mesh_closest_drift(x_prev, crossing, crossings, start_vertices, triangles, start_grid,
                                         start_dims, start_cell_start, start_entry, side_limit, start_drift, stamp,
                                         side_row, s_tri, s_bary, s_q, side_d, s_interior, t, hint, side_cert);
        /* the found rows are a subsequence of the crossing ones, which are a subsequence of the found rows */
        int64_t j = 0;
        for (int64_t s = 0; s < got; ++s) {
            int64_t p = side_row[s];
            while (out_row[j] != p)
                ++j;
            const double *xq = x_prev + 3 * p, *qs = s_q + 3 * s;
            double r[3] = {xq[0] - qs[0], xq[1] - qs[1], xq[2] - qs[2]};
            side[j] = dot_rows(r, feature_normal(lazy_start, triangles, start_face_normals, start_vertex_normals,
                                                 start_side_normals, s_tri[s], s_bary + 3 * s)) < 0.0 &&
                              side_d[s] > SOFTSIM_ON_SURFACE
                          ? -1.0
                          : 1.0;
        }
    }
    for (int64_t j = 0; j < found; ++j) {
        int64_t p = out_row[j];
        int64_t t = tri[j];
        const double *xp = x + 3 * p, *qj = q + 3 * j;
        double dist = out_dist[j];
        double r[3] = {xp[0] - qj[0], xp[1] - qj[1], xp[2] - qj[2]};
        double div = dist > 0.0 ? dist : 1.0;
        double away[3] = {r[0] / div, r[1] / div, r[2] / div};
        double outward = dot_rows(away, feature_normal(lazy_end, triangles, face_normals, vertex_normals, side_normals,
                                                       t, bary + 3 * j));
        const double *fn = lazy_end ? mesh_lazy_face(lazy_end, t) : face_normals + 3 * t;
        int use_face = interior[j] || dist <= SOFTSIM_ON_SURFACE || outward * side[j] < 0.0;
        double *normal = out_normal + 3 * j;
        for (int a = 0; a < 3; ++a)
            normal[a] = use_face ? side[j] * fn[a] : away[a];
        out_d[j] = dot_rows(r, normal) - thickness;
    }
    if ((lazy_end && lazy_end->misses) || (lazy_start && lazy_start->misses))
        return -1;
    return found;
}

SOFTSIM_API void softsim_mesh_motion(const double *x, const int64_t *points, int64_t k, const int64_t *triangles,
                                     const double *vertices, const double *grid, const int64_t *dims,
                                     const int64_t *cell_start, const int64_t *entry, const double *start_vertices,
                                     double limit, double drift, int64_t *stamp, double *out, int64_t *work_i,
                                     double *work_d)
{
    mesh_motion_hinted(x, points, k, triangles, vertices, grid, dims, cell_start, entry, start_vertices, limit, drift,
                       stamp, out, work_i, work_d, 0, 0);
}

/* softsim_mesh_motion with the first guesses hint of its nearest-triangle query (mesh_contact_rows_hinted). */
void mesh_motion_hinted(const double *x, const int64_t *points, int64_t k, const int64_t *triangles,
                        const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start,
                        const int64_t *entry, const double *start_vertices, double limit, double drift, int64_t *stamp,
                        double *out, int64_t *work_i, double *work_d, int64_t t, int64_t *hint)
{
    /* scratch (work_i (3 k), work_d (7 k)): the found points' rows, triangles and interior flags; weights, closest
     * points, distances */
    int64_t *row = work_i, *tri = work_i + k, *interior = work_i + 2 * k;
    double *bary = work_d, *q = work_d + 3 * k, *d = work_d + 6 * k;
    for (int64_t i = 0; i < k; ++i)
        for (int a = 0; a < 3; ++a)
            out[3 * points[i] + a] = 0.0;
    int64_t found = mesh_closest_drift(x, points, k, vertices, triangles, grid, dims, cell_start, entry, limit, drift,
                                       stamp, row, tri, bary, q, d, interior, t, hint, 0);
    for (int64_t j = 0; j < found; ++j)
        mesh_surface_motion(triangles, vertices, start_vertices, tri[j], bary + 3 * j, out + 3 * row[j]);
}
