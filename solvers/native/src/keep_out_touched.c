/* The keep-out of self-collision's native passes straight from the pass's touched mask (self_kernels.SelfPass's
 * touched_mask), so a pass's collider check is one C call with no index array built in Python between the two halves
 * of the pass.
 *
 * NumPy twin: solvers/collision/response/self_contact.py SelfCollision._keep_out_of_colliders on
 * np.flatnonzero(touched) (SelfPass.touched), the same particles in the same increasing order, so bit for bit. */
#include "softsim_native.h"

/* softsim_keep_out on the particles p with touched[p] != 0 (touched (n,), one byte each), in increasing order;
 * scratch (n,) int64 receives their indices (its contents on return are unspecified); meshes, scratch_i and scratch_d
 * as softsim_keep_out's. Returns softsim_keep_out's count of particles moved back. */
int64_t softsim_keep_out_touched(double *x, int64_t n, double *inv_mass, uint8_t *heavy, const double *pad2,
                                 const uint8_t *touched, int64_t *scratch, int64_t collider_count,
                                 const double *colliders, const SoftsimKeepOutMesh *meshes, double slack,
                                 double mass_factor, int64_t *scratch_i, double *scratch_d)
{
    int64_t count = 0;
    for (int64_t p = 0; p < n; ++p)
        if (touched[p])
            scratch[count++] = p;
    if (count == 0)
        return 0;
    return softsim_keep_out(x, n, inv_mass, heavy, pad2, count, scratch, collider_count, colliders, meshes, slack,
                            mass_factor, scratch_i, scratch_d);
}
