/* A mesh collider's queries through a grid built on another pose of its motion (mesh_collider.c): the same answers
 * as softsim_mesh_closest, softsim_mesh_corner_pairs and softsim_mesh_edge_pairs through a grid of the asking pose,
 * with every element of the grid's pose within drift [m] of its place at the asking pose on each axis. One grid per
 * frame serves every substep's pose of a moving collider (mesh_frame.c, mesh_moving.c). Hidden (not exported).
 * Also the pseudo-normal of a point's nearest feature and the surface's motion there, shared by those files. */
#ifndef SOFTSIM_MESH_QUERY_H
#define SOFTSIM_MESH_QUERY_H

#include <stdint.h>

#include "contact_common.h"
#include "vec3.h"

/* [m] A point this near a mesh collider's surface lies on it (mesh_collider.py ON_SURFACE): on its normal side, its
 * plane the face's (the direction to a nearest point within round-off of it is noise). */
#define SOFTSIM_ON_SURFACE 1e-9

/* Certificates of a moving collider's nearest triangles (mesh_closest_drift, mesh_frame.c keeps them per collider
 * for a frame): point p's says that at pose pose[p] and position x[p] (3,) every triangle but tri[p] (every one when
 * tri[p] is -1; -2: no certificate) lay at least lower[p] [m] away, and every one but tri[p] and its runner-up tri2[p]
 * (-1: none) at least rest[p]. The runner-up is the next nearest the query computed: a point nearest to an edge of
 * the mesh is as near to the two triangles there, so lower proves nothing there and rest may.
 * shift (poses,): shift[k] - shift[j] bounds every vertex's move between poses j and k from above (NaN: not known);
 * current: the asking pose; margin [m]: how far past its nearest a query certifies; counts (2,): answers certified
 * and answers queried, added to. */
typedef struct {
    int64_t *tri, *pose;
    double *x, *lower;
    const double *shift;
    int64_t current;
    double margin;
    int64_t *counts;
    int64_t *tri2;
    double *rest;
} MeshCertificates;

int64_t mesh_closest_drift(const double *x, const int64_t *points, int64_t k, const double *vertices,
                           const int64_t *triangles, const double *grid, const int64_t *dims, const int64_t *cell_start,
                           const int64_t *entry_tri, double limit, double drift, int64_t *stamp, int64_t *out_row,
                           int64_t *out_tri, double *out_bary, double *out_q, double *out_d, int64_t *out_interior,
                           int64_t t, int64_t *hint, const MeshCertificates *cert);
/* One pose of a moving collider whose normals are derived on first use (mesh_frame.c; binding mesh_frame.py): the
 * pose's vertices (m, 3) and rows face (t), edge (e) (the pseudo-normal of each edge, where the per-triangle side
 * normals hold side_edge's rows) and vertex (m) of 3 doubles, row stride `row` doubles apart (an element's rows of
 * every pose of the frame lie side by side, so a frame that reads a few elements touches a few pages), each valid
 * where its ready flag (face_ready[flag_row * f], edge_ready[flag_row * e], vertex_ready[v] (m,): the vertices'
 * flags are shared by every pose of the frame) is 1. Face and edge
 * normals are computed here when first asked (pose_normals' arithmetic, the same bits); a vertex's needs an arccos
 * whose bits are NumPy's, so an unready one is listed in missing (once: asked marks every vertex asked for, ready or
 * not, (m,)) for the binding to compute, and the asking call reports it. The edges' faces:
 * edge_faces[edge_start[e] .. edge_start[e + 1]) in the order pose_normals sums them (corner k-major, then
 * triangle). */
typedef struct {
    const double *vertices;
    const int64_t *triangles, *side_edge, *edge_start, *edge_faces;
    double *face, *edge, *vertex;
    int64_t row, flag_row; /* doubles between two elements' normals, bytes between two elements' ready flags */
    uint8_t *face_ready, *edge_ready, *vertex_ready, *asked;
    int64_t *missing, *missing_count;
    int64_t misses; /* vertex normals asked for and not ready, this pose's reads since it was set up */
} MeshLazyPose;

/* softsim_mesh_contact_rows and softsim_mesh_motion with first guesses per point (mesh_moving.c). With lazy_end and
 * lazy_start (a moving collider's poses whose normals are derived on first use, or null: the normals are the arrays
 * given) it returns -1 when a vertex normal was missing (listed in lazy_end->missing); the start pose's grid is
 * queried start_drift wider (limits[4]: the end pose's). */
int64_t mesh_contact_rows_hinted(
    const double *x, const double *x_prev, const int64_t *points, int64_t k, const int64_t *triangles,
    const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
    const double *face_normals, const double *vertex_normals, const double *side_normals, const double *start_vertices,
    const double *start_grid, const int64_t *start_dims, const int64_t *start_cell_start, const int64_t *start_entry,
    const double *start_face_normals, const double *start_vertex_normals, const double *start_side_normals,
    int64_t *stamp, const double *limits, int64_t *out_row, double *out_d, double *out_normal, double *out_dist,
    int64_t *work_i, double *work_d, int64_t t, int64_t *hint, const MeshCertificates *cert,
    const MeshCertificates *side_cert, MeshLazyPose *lazy_end, MeshLazyPose *lazy_start, double start_drift);
void mesh_motion_hinted(const double *x, const int64_t *points, int64_t k, const int64_t *triangles,
                        const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start,
                        const int64_t *entry, const double *start_vertices, double limit, double drift, int64_t *stamp,
                        double *out, int64_t *work_i, double *work_d, int64_t t, int64_t *hint);
int64_t mesh_corner_pairs_drift(const double *x, const int64_t *triangles, const int64_t *rows, int64_t k,
                                const double *reach, double travel, const double *vertices, const int64_t *corners,
                                const double *grid, const int64_t *dims, const int64_t *cell_start,
                                const int64_t *entry, double drift, int64_t *stamp, int64_t capacity,
                                int64_t *out_corner, int64_t *out_row, double *out_d);
int64_t mesh_edge_pairs_drift(const double *x, const int64_t *edges, const int64_t *rows, int64_t m,
                              const double *reach, double travel, const double *vertices, const int64_t *sharp,
                              const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
                              double drift, int64_t *stamp, int64_t capacity, int64_t *out_edge, int64_t *out_row,
                              double *out_d);

/* The squared distance from P to the axis-aligned box lo .. hi (0 inside; no point of the box lies nearer). */
static inline double mesh_box_distance2(const double *P, const double *lo, const double *hi)
{
    double s = 0.0;
    for (int a = 0; a < 3; ++a) {
        double gap = max2(max2(lo[a] - P[a], P[a] - hi[a]), 0.0);
        s += gap * gap;
    }
    return s;
}

/* Which feature of its triangle MeshCollider.pseudo_normals takes for a point with weights bary: 0 the face (inside),
 * 1 the side opposite corner *k when one weight is 0 (to 1e-12; the first such side), 2 corner *k when two are (the
 * corner of the largest weight, the first of equals). */
static inline int mesh_feature_of(const double *bary, int *k)
{
    int zero[3] = {bary[0] <= 1e-12, bary[1] <= 1e-12, bary[2] <= 1e-12};
    int count = zero[0] + zero[1] + zero[2];
    if (count == 1) {
        *k = zero[0] ? 0 : (zero[1] ? 1 : 2);
        return 1;
    }
    if (count >= 2) {
        *k = 0;
        if (bary[1] > bary[*k])
            *k = 1;
        if (bary[2] > bary[*k])
            *k = 2;
        return 2;
    }
    return 0;
}

/* MeshCollider.pseudo_normals for one point: the normal of its feature (mesh_feature_of). */
static inline const double *mesh_feature_normal(const int64_t *triangles, const double *face_normals,
                                                const double *vertex_normals, const double *side_normals, int64_t tri,
                                                const double *bary)
{
    int k = 0;
    switch (mesh_feature_of(bary, &k)) {
    case 1:
        return side_normals + 9 * tri + 3 * k;
    case 2:
        return vertex_normals + 3 * triangles[3 * tri + k];
    default:
        return face_normals + 3 * tri;
    }
}

/* _cross(c1 - c0, c2 - c0) of triangle tri (its corners' rows c0, c1, c2 of vertices) into n (3,): its normal
 * before the length is divided out. */
static inline void mesh_triangle_cross(const double *vertices, const int64_t *tri, double *n)
{
    const double *c0 = vertices + 3 * tri[0], *c1 = vertices + 3 * tri[1], *c2 = vertices + 3 * tri[2];
    double u[3], w[3];
    for (int a = 0; a < 3; ++a) {
        u[a] = c1[a] - c0[a];
        w[a] = c2[a] - c0[a];
    }
    cross3(u, w, n);
}

/* MeshCollider.face_normals of triangle tri into f (3,): pose_normals' arithmetic (mesh_triangle_cross, the length
 * by dot_rows, 1 where it is 0). */
static inline void mesh_face_normal_of(const double *vertices, const int64_t *tri, double *f)
{
    double normal[3];
    mesh_triangle_cross(vertices, tri, normal);
    double length = sqrt(dot_rows(normal, normal));
    double div = length > 0.0 ? length : 1.0;
    for (int a = 0; a < 3; ++a)
        f[a] = normal[a] / div;
}

/* The lazy pose's normal of triangle tri, computed on first use. */
static inline const double *mesh_lazy_face(MeshLazyPose *p, int64_t tri)
{
    double *f = p->face + p->row * tri;
    if (!p->face_ready[p->flag_row * tri]) {
        mesh_face_normal_of(p->vertices, p->triangles + 3 * tri, f);
        p->face_ready[p->flag_row * tri] = 1;
    }
    return f;
}

/* The lazy pose's pseudo-normal of edge e: its faces' normals summed from 0.0 in pose_normals' order, divided by
 * max(|sum|, 1e-300). */
static inline const double *mesh_lazy_edge(MeshLazyPose *p, int64_t e)
{
    double *out = p->edge + p->row * e;
    if (!p->edge_ready[p->flag_row * e]) {
        double sum[3] = {0.0, 0.0, 0.0};
        for (int64_t j = p->edge_start[e]; j < p->edge_start[e + 1]; ++j) {
            const double *f = mesh_lazy_face(p, p->edge_faces[j]);
            for (int a = 0; a < 3; ++a)
                sum[a] += f[a];
        }
        double length = max2(sqrt(dot_rows(sum, sum)), 1e-300);
        for (int a = 0; a < 3; ++a)
            out[a] = sum[a] / length;
        p->edge_ready[p->flag_row * e] = 1;
    }
    return out;
}

/* The lazy pose's pseudo-normal of vertex v, or null when the binding has not computed it yet: listed in missing
 * the first time (the binding computes it for every pose of the frame before the substep runs again). */
static inline const double *mesh_lazy_vertex(MeshLazyPose *p, int64_t v)
{
    if (p->vertex_ready[v]) {
        p->asked[v] = 1;
        return p->vertex + p->row * v;
    }
    if (!p->asked[v]) {
        p->asked[v] = 1;
        p->missing[(*p->missing_count)++] = v;
    }
    ++p->misses;
    return 0;
}

/* mesh_feature_normal of a lazy pose (null where a vertex normal is missing). */
static inline const double *mesh_lazy_feature_normal(MeshLazyPose *p, int64_t tri, const double *bary)
{
    int k = 0;
    switch (mesh_feature_of(bary, &k)) {
    case 1:
        return mesh_lazy_edge(p, p->side_edge[3 * tri + k]);
    case 2:
        return mesh_lazy_vertex(p, p->triangles[3 * tri + k]);
    default:
        return mesh_lazy_face(p, tri);
    }
}

/* MeshCollider.motion at one point: the motion (pose - start) [m] of the point of triangle tri with weights bary,
 * into out (3,): einsum("kj,kjd->kd", bary, moved) sums the corners in order. */
static inline void mesh_surface_motion(const int64_t *triangles, const double *vertices, const double *start_vertices,
                                       int64_t tri, const double *bary, double *out)
{
    const int64_t *corner = triangles + 3 * tri;
    for (int a = 0; a < 3; ++a) {
        double m0 = vertices[3 * corner[0] + a] - start_vertices[3 * corner[0] + a];
        double m1 = vertices[3 * corner[1] + a] - start_vertices[3 * corner[1] + a];
        double m2 = vertices[3 * corner[2] + a] - start_vertices[3 * corner[2] + a];
        out[a] = (bary[0] * m0 + bary[1] * m1) + bary[2] * m2;
    }
}

#endif
