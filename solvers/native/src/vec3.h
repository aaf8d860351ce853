/* The cross product of two rows, shared by the kernels whose NumPy twins take it (np.cross, primitives._cross: the
 * same three differences of products, so the same bits). Hidden (static inline). */
#ifndef SOFTSIM_VEC3_H
#define SOFTSIM_VEC3_H

/* u x v into out (3,). */
static inline void cross3(const double *u, const double *v, double *out)
{
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
}

#endif
