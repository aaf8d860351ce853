/* XPBD constraint sweeps (Macklin et al. 2016), the native twins of solvers/constraints/distance.py
 * (DistanceColourSweep / _project_ends) and solvers/constraints/bending.py (BendingColourSweep).
 *
 * Gauss-Seidel by colour: within one colour no two constraints share a particle (solvers/colouring.py), so the
 * constraints of a colour may be projected in any order with the same result; colours run in the given order,
 * each seeing the positions the previous ones left. x is (n, 3) row-major: particle p at x[3p .. 3p+2].
 */
#include <math.h>

#include "softsim_native.h"

/* edges (m, 2), rest_length, w_i, w_j, alpha, inverse_denominator, lambda (m,), all in colour order: colour c holds
 * constraints colour_start[c] .. colour_start[c + 1] - 1. inverse_denominator = 1 / (w_i + w_j + alpha) (0 where
 * that is 0), alpha = compliance / dt^2, both computed by the binding with NumPy once per dt. use_alpha = 0 is
 * PBD: the alpha * lambda term is skipped, exactly as _project_ends skips it for a scalar alpha of 0. */
void softsim_distance_sweep(double *x, int64_t colour_count, const int64_t *colour_start, const int64_t *edges,
                            const double *rest_length, const double *w_i, const double *w_j, const double *alpha,
                            const double *inverse_denominator, double *lambda, int64_t use_alpha)
{
    for (int64_t c = 0; c < colour_count; ++c) {
        for (int64_t e = colour_start[c]; e < colour_start[c + 1]; ++e) {
            double *xi = x + 3 * edges[2 * e];
            double *xj = x + 3 * edges[2 * e + 1];
            double dx = xi[0] - xj[0], dy = xi[1] - xj[1], dz = xi[2] - xj[2];
            /* NumPy's row sum d.d adds (x^2 + z^2) + y^2 (einsum's pairing, kept by _project_ends): same order here. */
            double length = sqrt((dx * dx + dz * dz) + dy * dy);
            /* A zero-length edge has no direction: 1e-12 keeps the division finite, as the NumPy path does. */
            double safe = length > 1e-12 ? length : 1e-12;
            double dlam = rest_length[e] - length;
            if (use_alpha)
                dlam = dlam - alpha[e] * lambda[e];
            dlam = dlam * inverse_denominator[e];
            double s = dlam / safe;
            double tx = s * dx, ty = s * dy, tz = s * dz;
            /* +w_i t on the first end, -w_j t on the second: x + (-w t) equals x - w t bit for bit. */
            xi[0] += w_i[e] * tx;
            xi[1] += w_i[e] * ty;
            xi[2] += w_i[e] * tz;
            xj[0] += -w_j[e] * tx;
            xj[1] += -w_j[e] * ty;
            xj[2] += -w_j[e] * tz;
            lambda[e] += dlam;
        }
    }
}

/* hinges (m, 4), K (m, 4) Bergou's weights, wK (m, 4) = w_a K_a, rest_norm (m,), alpha (m,), inverse_denominator
 * (m,) = 1 / (sum_a w_a K_a^2 + alpha) (0 where that is 0), lambda (m, 3), all in colour order; curved (colour_count,)
 * 1 where the colour has a hinge of r0 > 0 (BendingConstraints.curved of that colour's subset).
 * Per hinge: y = sum_a K_a x_a summed from 0 in the given corner order (the binding lists each hinge's corners in
 * increasing particle order, the order in which SciPy's canonical CSR product of the NumPy twin adds them),
 * C = y - r0 y/|y| for a curved colour, dlambda = -(C + alpha lambda) * inverse_denominator,
 * x_a += w_a K_a dlambda, lambda += dlambda. */
void softsim_bending_sweep(double *x, int64_t colour_count, const int64_t *colour_start, const int64_t *curved,
                           const int64_t *hinges, const double *K, const double *wK, const double *rest_norm,
                           const double *alpha, const double *inverse_denominator, double *lambda)
{
    for (int64_t c = 0; c < colour_count; ++c) {
        for (int64_t h = colour_start[c]; h < colour_start[c + 1]; ++h) {
            const int64_t *corner = hinges + 4 * h;
            double y[3] = {0.0, 0.0, 0.0};
            for (int a = 0; a < 4; ++a) {
                const double *xa = x + 3 * corner[a];
                double k = K[4 * h + a];
                y[0] += k * xa[0];
                y[1] += k * xa[1];
                y[2] += k * xa[2];
            }
            if (curved[c]) {
                /* _curve: scale by 1 - r0/|y|; a hinge with y = 0 gets C = 0 (the energy's subgradient there). */
                double norm = sqrt((y[0] * y[0] + y[1] * y[1]) + y[2] * y[2]);
                if (norm > 0.0) {
                    double scale = 1.0 - rest_norm[h] / norm;
                    y[0] *= scale;
                    y[1] *= scale;
                    y[2] *= scale;
                } else {
                    y[0] = y[1] = y[2] = 0.0;
                }
            }
            double *lam = lambda + 3 * h;
            double t[3];
            for (int d = 0; d < 3; ++d)
                t[d] = -((y[d] + alpha[h] * lam[d]) * inverse_denominator[h]);
            for (int a = 0; a < 4; ++a) {
                double *xa = x + 3 * corner[a];
                double wk = wK[4 * h + a];
                xa[0] += wk * t[0];
                xa[1] += wk * t[1];
                xa[2] += wk * t[2];
            }
            lam[0] += t[0];
            lam[1] += t[1];
            lam[2] += t[2];
        }
    }
}

/* Pin tethers (solvers/constraints/tether.py, PinTethers.apply): slot s holds tethers slot_start[s] ..
 * slot_start[s + 1] - 1, each a free particle, its pin and the largest distance allowed between them [m]; no particle
 * is twice in a slot and no pin is a tethered particle, so the tethers of a slot are independent and a loop over them
 * equals the NumPy twin's whole-slot arithmetic. A particle past its limit is put on it: x_p = x_pin + d limit/|d|.
 * Slots run in order (Gauss-Seidel over the pins); the passes repeat while some particle was more than 0.1% past
 * its limit, at most `passes` times (once when there is a single slot). A pass that finds nothing past ends the
 * call, as the twin's up-front check (_any_past) does.
 *
 * Pins do not move within a call, so after its first visit a slot need only look again at particles projected since
 * that visit began (the twin's passes after the first do the same): stamp[p] (scratch, indexed by particle) counts
 * when p was last projected, seen[s] (scratch, one per slot) the count when slot s last began a visit. Looking again
 * at any other particle would find it where the slot left it, so skipping it changes nothing. Returns the passes run. */
int64_t softsim_tether_apply(double *x, int64_t slot_count, const int64_t *slot_start, const int64_t *particle,
                             const int64_t *pin, const double *limit, int64_t passes, int64_t *stamp, int64_t *seen)
{
    int64_t run = 0, count = 0;
    for (int64_t k = 0; k < slot_start[slot_count]; ++k)
        stamp[particle[k]] = 0;
    for (int64_t s = 0; s < slot_count; ++s)
        seen[s] = -1; /* never visited: look at every tether */
    for (int64_t pass = 0; pass < passes; ++pass) {
        int far_past = 0;
        ++run;
        for (int64_t s = 0; s < slot_count; ++s) {
            int64_t since = seen[s];
            seen[s] = count;
            for (int64_t k = slot_start[s]; k < slot_start[s + 1]; ++k) {
                if (since >= 0 && stamp[particle[k]] <= since)
                    continue;
                double *xp = x + 3 * particle[k];
                const double *xa = x + 3 * pin[k];
                double dx = xp[0] - xa[0], dy = xp[1] - xa[1], dz = xp[2] - xa[2];
                double length = sqrt((dx * dx + dz * dz) + dy * dy); /* the twin's (x^2 + z^2) + y^2 */
                if (length > limit[k]) {
                    /* 1.001 * limit as the twin computes it, so both stop after the same pass */
                    if (length > 1.001 * limit[k])
                        far_past = 1;
                    double scale = limit[k] / length;
                    xp[0] = xa[0] + dx * scale;
                    xp[1] = xa[1] + dy * scale;
                    xp[2] = xa[2] + dz * scale;
                    stamp[particle[k]] = ++count;
                }
            }
        }
        if (!far_past || slot_count == 1)
            break;
    }
    return run;
}
