/* The normals of a moving mesh collider's poses, the native twin of
 *   solvers/collision/colliders/mesh_collider.py   pose_normals (MeshCollider.face_normals, _feature_normals)
 * in two calls around NumPy's arccos (float64 arccos is vectorised in NumPy, whose bits C cannot reproduce): the
 * face normals and the clipped cosines of every corner's angle (softsim_pose_cosines), then, from the angles, the
 * angle-weighted vertex pseudo-normals and the edge pseudo-normals of every triangle side (softsim_pose_sums). The
 * binding is pose_kernels.PoseNormals.
 *
 * Arithmetic follows the twin's operation for operation, bit for bit: _cross's products and differences, _dot /
 * einsum("ij,ij->i") over (k, 3) rows adds (x*x + z*z) + y*y (dot_rows), np.maximum and np.clip propagate NaN
 * (max2, min2 return their first argument when unordered), and np.bincount adds each bin's terms in the order of its
 * index array from 0.0: per pose, corner 0 of every triangle in order, then corner 1, then corner 2. */
#include <math.h>

#include "contact_common.h"
#include "mesh_query.h"
#include "softsim_native.h"

SOFTSIM_API void softsim_pose_cosines(const double *vertices, int64_t poses, int64_t m, const int64_t *triangles,
                                      int64_t t, double *face, double *cosines)
{
    for (int64_t p = 0; p < poses; ++p) {
        const double *v = vertices + 3 * m * p;
        for (int64_t i = 0; i < t; ++i) {
            const int64_t *tri = triangles + 3 * i;
            const double *c[3] = {v + 3 * tri[0], v + 3 * tri[1], v + 3 * tri[2]};
            double side[3][3], square[3];
            mesh_face_normal_of(v, tri, face + 3 * (t * p + i));
            for (int k = 0; k < 3; ++k) {
                for (int a = 0; a < 3; ++a)
                    side[k][a] = c[(k + 1) % 3][a] - c[k][a];
                square[k] = dot_rows(side[k], side[k]);
            }
            for (int k = 0; k < 3; ++k) {
                double cos = -dot_rows(side[k], side[(k + 2) % 3]) / max2(sqrt(square[k] * square[(k + 2) % 3]), 1e-300);
                cosines[poses * t * k + t * p + i] = min2(max2(cos, -1.0), 1.0);
            }
        }
    }
}

/* The rows of a (count, 3) divided by max(|row|, 1e-300) (dot_rows), in place. */
static void normalised(double *a, int64_t count)
{
    for (int64_t r = 0; r < count; ++r) {
        double *row = a + 3 * r;
        double length = max2(sqrt(dot_rows(row, row)), 1e-300);
        for (int d = 0; d < 3; ++d)
            row[d] /= length;
    }
}

SOFTSIM_API void softsim_pose_sums(int64_t poses, int64_t m, int64_t t, const int64_t *triangles,
                                   const int64_t *side_edge, int64_t e, const double *face, const double *angle,
                                   double *vertex, double *edge, double *side)
{
    for (int64_t p = 0; p < poses; ++p) {
        const double *fp = face + 3 * t * p;
        double *vp = vertex + 3 * m * p, *ep = edge + 3 * e * p;
        for (int64_t r = 0; r < 3 * m; ++r)
            vp[r] = 0.0;
        for (int64_t r = 0; r < 3 * e; ++r)
            ep[r] = 0.0;
        for (int k = 0; k < 3; ++k)
            for (int64_t i = 0; i < t; ++i) {
                double weight = angle[poses * t * k + t * p + i];
                double *to = vp + 3 * triangles[3 * i + k], *along = ep + 3 * side_edge[3 * i + k];
                for (int d = 0; d < 3; ++d) {
                    to[d] += weight * fp[3 * i + d];
                    along[d] += fp[3 * i + d];
                }
            }
        normalised(vp, m);
        normalised(ep, e);
        double *sp = side + 9 * t * p;
        for (int64_t i = 0; i < t; ++i)
            for (int k = 0; k < 3; ++k)
                for (int d = 0; d < 3; ++d)
                    sp[9 * i + 3 * k + d] = ep[3 * side_edge[3 * i + k] + d];
    }
}

/* sharp_edges' flat test: the normals as its _cross (mesh_triangle_cross), then the division by
 * max(sqrt(_dot), 1e-300) (dot_rows), and _dot(n1, n2) >= cos_min (dot_rows; NaN is not flat). */
SOFTSIM_API void softsim_flat_edges(const double *vertices, const int64_t *triangles, int64_t t, const int64_t *one,
                                    const int64_t *other, int64_t p, double cos_min, double *normal, uint8_t *flat)
{
    for (int64_t i = 0; i < t; ++i) {
        double *n = normal + 3 * i;
        mesh_triangle_cross(vertices, triangles + 3 * i, n);
        double length = max2(sqrt(dot_rows(n, n)), 1e-300);
        for (int a = 0; a < 3; ++a)
            n[a] /= length;
    }
    for (int64_t k = 0; k < p; ++k)
        flat[k] = dot_rows(normal + 3 * one[k], normal + 3 * other[k]) >= cos_min;
}
