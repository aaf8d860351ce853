/* Pieces of the collider contact kernels shared by contact.c (ground planes and spheres), mesh_collider.c (a mesh
 * collider's queries and face push) and mesh_frame.c (still mesh colliders inside the whole-frame call): each is the
 * twin of one NumPy expression, operation for operation, so every file that uses it stays bit for bit with its twin.
 * All static inline: no symbol leaves a translation unit, and the optimiser sees the callers' constant arguments
 * (the dot product orders, the push's mode) as it did in the copies this header replaces. */
#ifndef SOFTSIM_CONTACT_COMMON_H
#define SOFTSIM_CONTACT_COMMON_H

#include <math.h>
#include <stdint.h>

/* NumPy's einsum("ij,ij->i") over (k, 3) rows sums (x x + z z) + y y ... */
static inline double dot_rows(const double *u, const double *v) { return (u[0] * v[0] + u[2] * v[2]) + u[1] * v[1]; }

/* ... and over contiguous (3, k) columns (or a gathered copy) in order. */
static inline double dot_in_order(const double *u, const double *v) { return (u[0] * v[0] + u[1] * v[1]) + u[2] * v[2]; }

/* np.minimum / np.maximum of two finite numbers (b when they compare unordered, as the twins' NaN never reaches). */
static inline double min2(double a, double b) { return b < a ? b : a; }
static inline double max2(double a, double b) { return b > a ? b : a; }

/* response._remove_slip for one particle xp (its step's start xq): cut its slip tangential to the unit normal n,
 * relative to the collider's surface, which moved by m under it over the step, by up to budget [m] (all of it when
 * smaller). */
static inline void remove_slip_relative(double *xp, const double *xq, const double *m, const double *n, double budget)
{
    double moved[3] = {(xp[0] - xq[0]) - m[0], (xp[1] - xq[1]) - m[1], (xp[2] - xq[2]) - m[2]};
    double along = dot_rows(moved, n);
    double t[3] = {moved[0] - along * n[0], moved[1] - along * n[1], moved[2] - along * n[2]};
    double slide = sqrt(dot_rows(t, t));
    double remove = slide > 1e-15 ? min2(1.0, budget / max2(slide, 1e-15)) : 0.0;
    xp[0] -= remove * t[0];
    xp[1] -= remove * t[1];
    xp[2] -= remove * t[2];
}

/* The largest |x_p - x0_p|^2 over particles 0 .. n - 1 (NumPy's max of the row sums; 0 for n = 0), each row sum by
 * `dot` (the order of the twin's expression: dot_rows or dot_in_order). */
static inline double largest_motion2(const double *x, const double *x0, int64_t n,
                                     double (*dot)(const double *, const double *))
{
    double largest = 0.0;
    for (int64_t p = 0; p < n; ++p) {
        double m[3] = {x[3 * p] - x0[3 * p], x[3 * p + 1] - x0[3 * p + 1], x[3 * p + 2] - x0[3 * p + 2]};
        double s = dot(m, m);
        if (s > largest || p == 0)
            largest = s;
    }
    return largest;
}

/* The largest squared length of edges (count, 2) at x (the max of the rows' d . d by dot_rows; 0 for no edge).
 * Either end may come first: a - b is -(b - a) exactly, so its square is the same. */
static inline double largest_edge2(const double *x, const int64_t *edges, int64_t count)
{
    double largest = 0.0;
    for (int64_t e = 0; e < count; ++e) {
        const double *a = x + 3 * edges[2 * e], *b = x + 3 * edges[2 * e + 1];
        double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
        double s = dot_rows(d, d);
        if (s > largest || e == 0)
            largest = s;
    }
    return largest;
}

/* collider_contacts.contact_sweeps: the sweeps a step's end-of-step push needs, ceil(largest free motion |x - x_prev|
 * / sweep_length) at most max_sweeps. Returns 1 and sets *sweeps when that is more than one (the caller hands the
 * step back to be walked in sweeps), else 0 (no free particle, or one sweep: the caller goes on). */
static inline int contact_sweeps(const double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                 double sweep_length, double max_sweeps, int64_t *sweeps)
{
    double largest = -1.0;
    for (int64_t p = 0; p < n; ++p) {
        if (!(inv_mass[p] > 0.0))
            continue;
        double m[3] = {x[3 * p] - x_prev[3 * p], x[3 * p + 1] - x_prev[3 * p + 1], x[3 * p + 2] - x_prev[3 * p + 2]};
        double s = dot_rows(m, m);
        if (s > largest)
            largest = s;
    }
    if (largest >= 0.0) {
        double count = ceil(sqrt(largest) / sweep_length);
        if (count > 1.0) {
            *sweeps = count > max_sweeps ? (int64_t)max_sweeps : (int64_t)count;
            return 1;
        }
    }
    return 0;
}

/* primitives.closest_weights of point P over triangle (A, B, C), up to its weights v, w of B and C (the caller forms
 * u = 1 - v - w, clamped or not as its twin does): the Gram system's dot products summed by `gram`, the border
 * branch's by `border` (the twins' layouts differ: dot_rows or dot_in_order). e1 = B - A, e2 = C - A are handed back
 * (the callers' closest point and face normal use them); *inside is 1 when the foot of the perpendicular was taken
 * (the twin's `inside`), 0 when the border branch ran. */
static inline void closest_vw_inside(const double *P, const double *A, const double *B, const double *C,
                                     double (*gram)(const double *, const double *),
                                     double (*border)(const double *, const double *), double *e1, double *e2,
                                     double *v_out, double *w_out, int *inside)
{
    for (int a = 0; a < 3; ++a) {
        e1[a] = B[a] - A[a];
        e2[a] = C[a] - A[a];
    }
    double ap[3] = {P[0] - A[0], P[1] - A[1], P[2] - A[2]};
    double d1 = gram(e1, ap), d2 = gram(e2, ap);
    double e11 = gram(e1, e1), e12 = gram(e1, e2), e22 = gram(e2, e2);
    double denom = e11 * e22 - e12 * e12;
    double v = e22 * d1 - e12 * d2;
    double w = e11 * d2 - e12 * d1;
    *inside = v >= 0.0 && w >= 0.0 && v + w <= denom && denom > 1e-12 * e11 * e22;
    if (*inside) {
        double scale = 1.0 / denom;
        v *= scale;
        w *= scale;
    } else {
        double e3[3] = {e2[0] - e1[0], e2[1] - e1[1], e2[2] - e1[2]};
        double bp[3] = {ap[0] - e1[0], ap[1] - e1[1], ap[2] - e1[2]};
        double o33 = border(e3, e3), d3 = border(e3, bp);
        double t_ab = min2(max2(d1 / max2(e11, 1e-300), 0.0), 1.0);
        double t_ac = min2(max2(d2 / max2(e22, 1e-300), 0.0), 1.0);
        double t_bc = min2(max2(d3 / max2(o33, 1e-300), 0.0), 1.0);
        double s_ab = t_ab * (t_ab * e11 - 2.0 * d1);
        double s_ac = t_ac * (t_ac * e22 - 2.0 * d2);
        double s_bc = border(bp, bp) - border(ap, ap) + t_bc * (t_bc * o33 - 2.0 * d3);
        int use_ac = s_ac < s_ab;
        int use_bc = s_bc < min2(s_ab, s_ac);
        v = use_bc ? 1.0 - t_bc : (use_ac ? 0.0 : t_ab);
        w = use_bc ? t_bc : (use_ac ? t_ac : 0.0);
    }
    *v_out = v;
    *w_out = w;
}

/* closest_vw_inside without the flag. */
static inline void closest_vw(const double *P, const double *A, const double *B, const double *C,
                              double (*gram)(const double *, const double *),
                              double (*border)(const double *, const double *), double *e1, double *e2, double *v_out,
                              double *w_out)
{
    int inside;
    closest_vw_inside(P, A, B, C, gram, border, e1, e2, v_out, w_out, &inside);
}

/* MeshFacePushes._apply (mesh_face_pushes.py): k face pushes of `width` (3: corner on triangle, 2: edge on edge)
 * particles each (stencil, weights (k, width); direction, slip (k, 3); depth (k,)), with Coulomb friction
 * `friction` against the slip; each particle moves by the mean of the mass-weighted shares it gets, x += sums /
 * max(count, 1). Returns the pushes that moved (0: x untouched).
 *
 * mark NULL: sums and count (n, 3) and (n,) are zeroed and x updated for all n particles, the twin's whole-body
 * arrays. mark non-NULL (n,), zero on entry and on return: the sums are zeroed and x moved only for the stencils'
 * particles (the same operations in the same order on those), every other particle gets x + 0.0, the twin's
 * x + 0 / 1 (it turns -0.0 into 0.0); for a few pushes on a large cloth. With `clean` as well, x holds no -0.0 (an
 * earlier call that moved has run since x was last written otherwise): x + 0.0 would change nothing, so only the
 * stencils' particles are visited. No sum here yields -0.0 (in round-to-nearest a sum is -0.0 only when both terms
 * are, and sums start at +0.0), so after a call that moved, x holds none. */
static inline int64_t mesh_push_apply(double *x, int64_t n, const double *inv_mass, int64_t k, int64_t width,
                                      const int64_t *stencil, const double *weights, const double *direction,
                                      const double *depth, const double *slip, double friction, double *sums,
                                      double *count, int64_t *mark, int clean)
{
    if (mark) {
        for (int64_t i = 0; i < width * k; ++i) {
            int64_t p = stencil[i];
            sums[3 * p] = sums[3 * p + 1] = sums[3 * p + 2] = 0.0;
            count[p] = 0.0;
        }
    } else {
        for (int64_t p = 0; p < n; ++p) {
            sums[3 * p] = sums[3 * p + 1] = sums[3 * p + 2] = 0.0;
            count[p] = 0.0;
        }
    }
    int64_t moved = 0;
    for (int64_t i = 0; i < k; ++i) {
        if (!(depth[i] > 0.0))
            continue;
        const int64_t *st = stencil + width * i;
        const double *wt = weights + width * i;
        double w[3] = {0.0, 0.0, 0.0};
        for (int j = 0; j < width; ++j)
            w[j] = inv_mass[st[j]] * wt[j];
        double norm = width == 3 ? (wt[0] * w[0] + wt[2] * w[2]) + wt[1] * w[1] : wt[0] * w[0] + wt[1] * w[1];
        if (!(norm > 0.0))
            continue;
        ++moved;
        const double *dir = direction + 3 * i;
        double delta[3] = {depth[i] * dir[0], depth[i] * dir[1], depth[i] * dir[2]};
        if (friction > 0.0) {
            const double *sl = slip + 3 * i;
            double normal_part = dot_rows(sl, dir);
            double across[3] = {sl[0] - normal_part * dir[0], sl[1] - normal_part * dir[1], sl[2] - normal_part * dir[2]};
            double slide = sqrt(dot_rows(across, across));
            double share = min2(1.0, friction * depth[i] / max2(slide, 1e-15));
            for (int a = 0; a < 3; ++a)
                delta[a] -= share * across[a];
        }
        for (int j = 0; j < width; ++j) {
            double coef = w[j] / norm;
            int64_t p = st[j];
            count[p] += coef > 0.0 ? 1.0 : 0.0;
            for (int a = 0; a < 3; ++a)
                sums[3 * p + a] += coef * delta[a];
        }
    }
    if (moved == 0)
        return 0;
    if (!mark) {
        for (int64_t p = 0; p < n; ++p) {
            double c = max2(count[p], 1.0);
            for (int a = 0; a < 3; ++a)
                x[3 * p + a] += sums[3 * p + a] / c;
        }
        return moved;
    }
    if (clean) { /* each stencil particle moved once (mark: moved already), in any order: the moves are independent */
        for (int64_t i = 0; i < width * k; ++i) {
            int64_t p = stencil[i];
            if (mark[p])
                continue;
            mark[p] = 1;
            double c = max2(count[p], 1.0);
            for (int a = 0; a < 3; ++a)
                x[3 * p + a] += sums[3 * p + a] / c;
        }
        for (int64_t i = 0; i < width * k; ++i)
            mark[stencil[i]] = 0;
        return moved;
    }
    for (int64_t i = 0; i < width * k; ++i)
        mark[stencil[i]] = 1;
    for (int64_t p = 0; p < n; ++p) {
        if (mark[p]) {
            double c = max2(count[p], 1.0);
            for (int a = 0; a < 3; ++a)
                x[3 * p + a] += sums[3 * p + a] / c;
            mark[p] = 0;
        } else {
            x[3 * p] += 0.0;
            x[3 * p + 1] += 0.0;
            x[3 * p + 2] += 0.0;
        }
    }
    return moved;
}

#endif
