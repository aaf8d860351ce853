/* Force fields and the air on a body over one solver step, in C: the native twin of
 *   solvers/forces/noise.py    _hash, value_noise, turbulence (bit for bit: integer hash, the same blend order),
 *   solvers/forces/fields.py   geometry, falloff, strength_at, field_terms, air_velocity,
 *   solvers/forces/loads.py    BodyLoads.apply (fields, air, free particles only).
 * The fields of one instant come as a table of SOFTSIM_FIELD_ROW doubles a field (softsim_native.h; packed by
 * kernels.field_table). Arithmetic follows the twins' elementwise order; np.linalg.norm over a row of 3 is
 * sqrt((x*x + y*y) + z*z), einsum("ij,ij->i") (x*x + z*z) + y*y. pow (falloff_power != 0) and acos (CONE falloff)
 * are libm's, which may differ from NumPy's (SIMD) versions by an ulp. */
#include <math.h>
#include <stddef.h>

#include "air_relax.h"
#include "softsim_native.h"
#include "vec3.h"

enum { KIND_WIND, KIND_FORCE, KIND_VORTEX, KIND_TURBULENCE, KIND_DRAG, KIND_HARMONIC };
enum { SHAPE_POINT, SHAPE_LINE, SHAPE_PLANE };
enum { FALL_SPHERE, FALL_TUBE, FALL_CONE };
enum { Z_BOTH, Z_POSITIVE, Z_NEGATIVE };

static double norm3(const double *a) { return sqrt((a[0] * a[0] + a[1] * a[1]) + a[2] * a[2]); }

/* noise._hash's mixing of h = ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791) ^ seed_term) & 0xFFFFFFFF (all
 * uint64, wrapping as NumPy's): uniform in [0, 1). seed_term = ((seed * 2654435761) ^ 0x9E3779B9) & 0xFFFFFFFF. */
static double hash_mix(uint64_t h)
{
    const uint64_t mask = 0xFFFFFFFFu;
    h &= mask;
    h ^= h >> 16;
    h = (h * 0x7FEB352Du) & mask;
    h ^= h >> 15;
    h = (h * 0x846CA68Bu) & mask;
    h ^= h >> 16;
    return (double)(int64_t)h / 4294967296.0; /* h < 2^32: the signed conversion is exact (and one instruction) */
}

static uint64_t seed_term(int64_t seed)
{
    return (((uint64_t)seed * 2654435761u) ^ 0x9E3779B9u) & 0xFFFFFFFFu;
}

/* float64 -> int64 as NumPy's astype gives it on x86-64: out of range (or NaN) INT64_MIN. */
static int64_t to_int64(double c)
{
    return (c >= -9223372036854775808.0 && c < 9223372036854775808.0) ? (int64_t)c : INT64_MIN;
}

/* noise.value_noise at one point p (3,); the hash's products per axis taken once for both corners. */
static double value_noise(const double *p, uint64_t term)
{
    static const uint64_t prime[3] = {73856093u, 19349663u, 83492791u};
    double w[3];
    uint64_t h[3][2];
    for (int d = 0; d < 3; ++d) {
        double cell = floor(p[d]);
        uint64_t i = (uint64_t)to_int64(cell);
        double f = p[d] - cell;
        w[d] = f * f * f * (f * (f * 6.0 - 15.0) + 10.0);
        h[d][0] = i * prime[d];
        h[d][1] = (i + 1u) * prime[d];
    }
    double out = 0.0;
    for (int dx = 0; dx < 2; ++dx) {
        double wx = dx ? w[0] : 1.0 - w[0];
        for (int dy = 0; dy < 2; ++dy) {
            double wy = dy ? w[1] : 1.0 - w[1];
            for (int dz = 0; dz < 2; ++dz) {
                double wz = dz ? w[2] : 1.0 - w[2];
                out += wx * wy * wz * hash_mix(h[0][dx] ^ h[1][dy] ^ h[2][dz] ^ term);
            }
        }
    }
    return out;
}

/* noise.turbulence(p, size) with its default 2 octaves and seed 0. */
static double turbulence(const double *p, double size)
{
    double scale = 1e-9 > size ? 1e-9 : size; /* max(float(size), 1e-9) */
    double q[3] = {p[0] / scale, p[1] / scale, p[2] / scale};
    double total = 0.0, amplitude = 1.0, norm = 0.0, frequency = 1.0;
    for (int k = 0; k < 2; ++k) {
        double r[3] = {q[0] * frequency, q[1] * frequency, q[2] * frequency};
        total += amplitude * value_noise(r, seed_term(101 * k));
        norm += amplitude;
        amplitude *= 0.5;
        frequency *= 2.0;
    }
    return total / norm;
}

/* fields._distance_falloff at one distance s. */
static double distance_falloff(double s, int use_min, double s_min, int use_max, double s_max, double power)
{
    double base = power != 0.0 ? pow(1.0 + s - (use_min ? s_min : 0.0), -power) : 1.0;
    if (use_min && s < s_min)
        base = 1.0;
    if (use_max && s > s_max)
        base = 0.0;
    return base;
}

typedef struct {
    const double *row;
    int kind, shape, falloff, zdir, flags;
} Field;

/* fields.geometry at one particle: rel, r, d, z, r_perp. */
static void field_geometry(const Field *f, const double *x, double *rel, double *r, double *d, double *z,
                           double *r_perp)
{
    const double *origin = f->row + SOFTSIM_FIELD_ORIGIN, *n = f->row + SOFTSIM_FIELD_AXIS;
    for (int k = 0; k < 3; ++k)
        rel[k] = x[k] - origin[k];
    *z = (rel[0] * n[0] + rel[1] * n[1]) + rel[2] * n[2];
    double along[3] = {*z * n[0], *z * n[1], *z * n[2]};
    for (int k = 0; k < 3; ++k)
        r_perp[k] = rel[k] - along[k];
    const double *pick = f->shape == SHAPE_PLANE ? along : f->shape == SHAPE_LINE ? r_perp : rel;
    for (int k = 0; k < 3; ++k)
        r[k] = pick[k];
    *d = norm3(r);
}

/* fields.falloff at one particle. */
static double field_falloff(const Field *f, const double *x)
{
    const double *row = f->row;
    int flags = f->flags;
    if (flags & SOFTSIM_FIELD_UNIFORM)
        return 1.0;
    double rel[3], r[3], d, z, r_perp[3];
    field_geometry(f, x, rel, r, &d, &z, r_perp);
    double out = 1.0;
    if (f->zdir == Z_POSITIVE && z < 0.0)
        out = 0.0;
    else if (f->zdir == Z_NEGATIVE && z > 0.0)
        out = 0.0;
    int use_min = (flags & SOFTSIM_FIELD_USE_MIN) != 0, use_max = (flags & SOFTSIM_FIELD_USE_MAX) != 0;
    if (f->falloff == FALL_SPHERE)
        return out * distance_falloff(d, use_min, row[7], use_max, row[8], row[6]);
    out = out * distance_falloff(fabs(z), use_min, row[7], use_max, row[8], row[6]);
    double radial;
    if (f->falloff == FALL_TUBE)
        radial = norm3(r_perp);
    else {
        double length = norm3(rel);
        double cosine = length > 0.0 ? z / length : 1.0;
        cosine = cosine < -1.0 ? -1.0 : cosine > 1.0 ? 1.0 : cosine; /* np.clip */
        radial = acos(cosine) * (180.0 / 3.14159265358979323846); /* np.degrees */
    }
    return out * distance_falloff(radial, (flags & SOFTSIM_FIELD_USE_RADIAL_MIN) != 0, row[9],
                                  (flags & SOFTSIM_FIELD_USE_RADIAL_MAX) != 0, row[10], row[11]);
}

/* fields.strength_at at one particle and time t [s] (GUST_LENGTH 2 m, GUST_TIME 0.5 s). */
static double field_strength(const Field *f, const double *x, double t)
{
    const double *row = f->row;
    if (row[13] <= 0.0) /* `if f.noise <= 0.0` (NaN noise takes the noise branch, as there) */
        return row[5];
    static const double drift[3] = {1.0, 0.61, 0.37};
    double step = t / 0.5, p[3];
    for (int k = 0; k < 3; ++k)
        p[k] = x[k] / 2.0 + drift[k] * step;
    return row[5] + row[13] * (2.0 * value_noise(p, (uint64_t)row[14]) - 1.0);
}

/* fields._unit of one row into out. */
static void unit3(const double *a, double *out)
{
    double length = norm3(a);
    for (int k = 0; k < 3; ++k)
        out[k] = length > 0.0 ? a[k] / length : 0.0;
}

static Field read_field(const double *row)
{
    Field f = {row, (int)row[0], (int)row[1], (int)row[2], (int)row[3], (int)row[4]};
    return f;
}

/* One non-WIND field's share of field_terms at one particle (k its falloff, nonzero somewhere): adds to a0 (3,), c. */
static void field_particle(const Field *f, const double *x, const double *v, double t, double k, double *a0,
                           double *c)
{
    const double *row = f->row, *n = row + SOFTSIM_FIELD_AXIS;
    double s = field_strength(f, x, t);
    double rel[3], r[3], d, z, r_perp[3];
    field_geometry(f, x, rel, r, &d, &z, r_perp);
    if (f->kind == KIND_FORCE) {
        double scale = s * k;
        if (f->flags & SOFTSIM_FIELD_GRAVITY_FALLOFF)
            scale = d > 1e-12 ? scale / (d * d) : 0.0;
        double e[3];
        unit3(r, e);
        for (int q = 0; q < 3; ++q)
            a0[q] += scale * e[q];
    } else if (f->kind == KIND_VORTEX) {
        if (f->shape == SHAPE_POINT) {
            double swirl[3], e[3];
            cross3(n, r, swirl);
            unit3(swirl, e);
            for (int q = 0; q < 3; ++q)
                a0[q] += s * k * d * e[q];
        } else {
            double w = s * k, swirl[3];
            cross3(n, r_perp, swirl);
            for (int q = 0; q < 3; ++q)
                a0[q] += w * swirl[q] - w * w * r_perp[q];
            *c += 1.0;
        }
    } else if (f->kind == KIND_TURBULENCE) {
        double p[3];
        for (int q = 0; q < 3; ++q)
            p[q] = (f->flags & SOFTSIM_FIELD_GLOBAL_COORDS) ? x[q] : rel[q] + n[q];
        double p1[3] = {p[1], p[2], p[0]}, p2[3] = {p[2], p[0], p[1]};
        double turb[3] = {turbulence(p, row[15]), turbulence(p1, row[15]), turbulence(p2, row[15])};
        for (int q = 0; q < 3; ++q)
            a0[q] += s * k * (2.0 * turb[q] - 1.0);
    } else if (f->kind == KIND_DRAG) {
        double speed = norm3(v);
        double linear = 2.0 < row[16] ? 2.0 : row[16];     /* min(linear_drag, MAX_DRAG) */
        double quadratic = (s < 2.0 || s != s) ? s : 2.0; /* np.minimum(s, MAX_DRAG), NaN kept */
        *c += k * (linear + quadratic * speed);
    } else if (f->kind == KIND_HARMONIC) {
        double stretch[3] = {r[0], r[1], r[2]};
        if (row[18] > 0.0) {
            double factor = d > 0.0 ? (d - row[18]) / d : 0.0;
            for (int q = 0; q < 3; ++q)
                stretch[q] = r[q] * factor;
        }
        for (int q = 0; q < 3; ++q)
            a0[q] -= s * k * stretch[q];
        *c += 2.0 * row[17] * sqrt(fabs(s));
    }
    if (row[12] > 0.0 && (f->kind == KIND_FORCE || f->kind == KIND_VORTEX || f->kind == KIND_TURBULENCE))
        *c += row[12] * k;
}

SOFTSIM_API void softsim_field_terms(const double *x, const double *v, int64_t n, double t, int64_t field_count,
                                     const double *fields, double *a0, double *c)
{
    for (int64_t p = 0; p < 3 * n; ++p)
        a0[p] = 0.0;
    for (int64_t p = 0; p < n; ++p)
        c[p] = 0.0;
    for (int64_t i = 0; i < field_count; ++i) {
        Field f = read_field(fields + i * SOFTSIM_FIELD_ROW);
        if (f.kind == KIND_WIND)
            continue;
        int64_t first = -1; /* `if not np.any(k): continue` */
        for (int64_t p = 0; p < n && first < 0; ++p)
            if (field_falloff(&f, x + 3 * p) != 0.0)
                first = p;
        if (first < 0)
            continue;
        for (int64_t p = 0; p < n; ++p)
            field_particle(&f, x + 3 * p, v + 3 * p, t, field_falloff(&f, x + 3 * p), a0 + 3 * p, c + p);
    }
}

SOFTSIM_API void softsim_air_velocity(const double *x, int64_t n, double t, int64_t field_count, const double *fields,
                                      double *u)
{
    for (int64_t p = 0; p < 3 * n; ++p)
        u[p] = 0.0;
    for (int64_t i = 0; i < field_count; ++i) {
        Field f = read_field(fields + i * SOFTSIM_FIELD_ROW);
        if (f.kind != KIND_WIND)
            continue;
        const double *axis = f.row + SOFTSIM_FIELD_AXIS;
        for (int64_t p = 0; p < n; ++p) {
            double speed = field_strength(&f, x + 3 * p, t) * field_falloff(&f, x + 3 * p);
            for (int q = 0; q < 3; ++q)
                u[3 * p + q] += speed * axis[q];
        }
    }
}

SOFTSIM_API void softsim_fields_apply(const double *x, double *v, int64_t n, const double *inv_mass,
                                      const double *gravity, double dt, double t, double weight, int64_t field_count,
                                      const double *fields, double *a0, double *c, double *u, int64_t air_t,
                                      const int64_t *triangles, const int64_t *corner_start,
                                      const int64_t *corner_face, double *cross, double *area, double *normal,
                                      double *state, const double *settings)
{
    if (field_count)
        softsim_field_terms(x, v, n, t, field_count, fields, a0, c);
    if (air_t) {
        softsim_air_refresh(x, n, dt, air_t, triangles, corner_start, corner_face, cross, area, normal, state,
                            settings);
        softsim_air_velocity(x, n, t, field_count, fields, u);
        for (int64_t p = 0; p < 3 * n; ++p)
            u[p] = weight * u[p];
    }
    double g[3] = {dt * gravity[0], dt * gravity[1], dt * gravity[2]};
    double kick = dt * weight;
    for (int64_t p = 0; p < n; ++p) {
        if (!(inv_mass[p] > 0.0))
            continue;
        double q[3] = {v[3 * p] + g[0], v[3 * p + 1] + g[1], v[3 * p + 2] + g[2]};
        if (field_count) {
            double divisor = 1.0 + kick * c[p];
            for (int d = 0; d < 3; ++d)
                q[d] = (q[d] + kick * a0[3 * p + d]) / divisor;
        }
        if (air_t) {
            double relaxed[3];
            air_relax_particle(q, u + 3 * p, normal + 3 * p, area[p], inv_mass[p], dt, settings, relaxed);
            for (int d = 0; d < 3; ++d)
                q[d] = relaxed[d];
        }
        for (int d = 0; d < 3; ++d)
            v[3 * p + d] = q[d] - g[d];
    }
}
