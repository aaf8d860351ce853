/* The pair lists of the broad phases (self_collision.c's Verlet lists, mesh_collider.c's face pairs) fill
 * caller-owned buffers of a given capacity: a pair found is written while there is room and counted either way, so
 * a call that finds more than the capacity returns the count it needs and the caller grows the buffers and retries.
 * Hidden (static inline). */
#ifndef SOFTSIM_PAIR_BUFFER_H
#define SOFTSIM_PAIR_BUFFER_H

#include <stdint.h>

/* Pair (a, b) at distance d: written at out_*[count] if count < capacity. Returns count + 1 (by value: the callers'
 * counters stay in registers in their hot loops). */
static inline int64_t record_pair(int64_t *out_a, int64_t *out_b, double *out_d, int64_t count, int64_t capacity,
                                  int64_t a, int64_t b, double d)
{
    if (count < capacity) {
        out_a[count] = a;
        out_b[count] = b;
        out_d[count] = d;
    }
    return count + 1;
}

#endif
