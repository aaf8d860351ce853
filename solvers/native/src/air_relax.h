/* The air's drag on one particle (substep.c, fields.c): AirDrag.relax's closed-form backward Euler of a relative
 * velocity, and the faces' re-measurement, shared by softsim_air_apply and softsim_fields_apply. Internal. */
#ifndef SOFTSIM_AIR_RELAX_H
#define SOFTSIM_AIR_RELAX_H

#include <math.h>
#include <stdint.h>

/* AirDrag.relax's refresh: re-measure area/normal at x when state[0] is 0 or state[1] >= AREA_REFRESH_TIME
 * (settings[0]), then state[1] += dt (substep.c). */
void softsim_air_refresh(const double *x, int64_t n, double dt, int64_t t, const int64_t *triangles,
                         const int64_t *corner_start, const int64_t *corner_face, double *cross, double *area,
                         double *normal, double *state, const double *settings);

/* p' = u + relax(p - u) for one particle (BodyLoads.apply's air line): p, u (3,) [m/s], nrm (3,) its face normal,
 * area its |a_i|, settings as softsim_air_apply's; einsum's (x*x + z*z) + y*y order. */
static inline void air_relax_particle(const double *p, const double *u, const double *nrm, double area,
                                      double inv_mass, double dt, const double *settings, double *out)
{
    double half_rho = 0.5 * settings[1], cn = settings[3], tangential = settings[2];
    double w[3] = {p[0] - u[0], p[1] - u[1], p[2] - u[2]};
    double wn = (w[0] * nrm[0] + w[2] * nrm[2]) + w[1] * nrm[1];
    double wt[3] = {w[0] - wn * nrm[0], w[1] - wn * nrm[1], w[2] - wn * nrm[2]};
    double b = half_rho * area * dt * inv_mass;
    double factor_n = 2.0 / (1.0 + sqrt(1.0 + 4.0 * b * cn * fabs(wn)));
    double factor_t =
        2.0 / (1.0 + sqrt(1.0 + 4.0 * b * cn * tangential * sqrt((wt[0] * wt[0] + wt[2] * wt[2]) + wt[1] * wt[1])));
    for (int d = 0; d < 3; ++d)
        out[d] = u[d] + ((factor_n * wn) * nrm[d] + factor_t * wt[d]);
}

#endif
