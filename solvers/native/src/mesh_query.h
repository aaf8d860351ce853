/* A mesh collider's queries through a grid built on another pose of its motion (mesh_collider.c): the same answers
 * as softsim_mesh_closest, softsim_mesh_corner_pairs and softsim_mesh_edge_pairs through a grid of the asking pose,
 * with every element of the grid's pose within drift [m] of its place at the asking pose on each axis. One grid per
 * frame serves every substep's pose of a moving collider (mesh_frame.c, mesh_moving.c). Hidden (not exported). */
#ifndef SOFTSIM_MESH_QUERY_H
#define SOFTSIM_MESH_QUERY_H

#include <stdint.h>

int64_t mesh_closest_drift(const double *x, const int64_t *points, int64_t k, const double *vertices,
                           const int64_t *triangles, const double *grid, const int64_t *dims, const int64_t *cell_start,
                           const int64_t *entry_tri, double limit, double drift, int64_t *stamp, int64_t *out_row,
                           int64_t *out_tri, double *out_bary, double *out_q, double *out_d, int64_t *out_interior);
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

#endif
