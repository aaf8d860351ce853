/* The end of a Jacobi sweep (substep.c's bending tail, tets.c's tet-strain sweep): every constraint's corrections,
 * computed from the same positions, added to their particles. Internal. */
#ifndef SOFTSIM_JACOBI_SCATTER_H
#define SOFTSIM_JACOBI_SCATTER_H

#include <stdint.h>

/* x (n, 3) += each particle's corrections dx (rows, 3), summed from 0 in the order of scatter_entry: particle p's rows
 * are scatter_entry[scatter_start[p] .. scatter_start[p + 1]), the order of its row of the twin's CSR scatter matrix
 * (position_based._Jacobi.scatter: increasing (constraint, corner)), so the sums round as scipy's product does. */
static inline void jacobi_scatter(double *x, int64_t particle_count, const int64_t *scatter_start,
                                  const int64_t *scatter_entry, const double *dx)
{
    for (int64_t p = 0; p < particle_count; ++p) {
        if (scatter_start[p] == scatter_start[p + 1])
            continue; /* the twin adds 0.0: x unchanged (up to the sign of a zero) */
        double sum[3] = {0.0, 0.0, 0.0};
        for (int64_t k = scatter_start[p]; k < scatter_start[p + 1]; ++k) {
            const double *row = dx + 3 * scatter_entry[k];
            sum[0] += row[0];
            sum[1] += row[1];
            sum[2] += row[2];
        }
        x[3 * p] += sum[0];
        x[3 * p + 1] += sum[1];
        x[3 * p + 2] += sum[2];
    }
}

#endif
