/* Soft Sim native kernels: the C side of solvers/native (loaded with ctypes by solvers/native/library.py).
 *
 * Conventions every kernel follows (the Python bindings in solvers/native/kernels.py rely on them):
 * - Arrays are C-contiguous float64 (double) or int64 (int64_t), passed as raw pointers; counts are int64_t.
 *   The binding validates shapes, dtypes and every index once when it is built: the C code checks nothing,
 *   so a wrong index here would write outside an array and crash Blender.
 * - No allocation, no global state, no threads: the binding owns every buffer, and a call only touches the
 *   arrays it is given. Loops run in a fixed order, so results are bitwise repeatable.
 * - The arithmetic repeats the NumPy twin's operations in the same order (built with -ffp-contract=off so no
 *   a*b+c becomes a fused multiply-add), so a kernel agrees with NumPy bit for bit; tests/test_native_*.py
 *   check that. ipc_distance.c agrees to round-off only: its twins sum through BLAS and LAPACK.
 * - Bump SOFTSIM_ABI_VERSION whenever a signature or an array layout changes: the loader refuses a library
 *   whose version differs from the one solvers/native/library.py declares.
 */
#ifndef SOFTSIM_NATIVE_H
#define SOFTSIM_NATIVE_H

#include <stdint.h>

#define SOFTSIM_ABI_VERSION 27

/* Doubles per collider in the collider table of the contact kernels (contact.c). */
#define SOFTSIM_COLLIDER_ROW 16
/* The kind ([0]) of a mesh collider's row in that table (mesh_frame.h, SoftsimKeepOutMesh). */
#define SOFTSIM_KIND_MESH 2.0

/* Force fields (fields.c): the fields of one instant as a table of SOFTSIM_FIELD_ROW doubles a field, packed by
 * kernels.field_table from fields.ForceField:
 *   0 kind (0 WIND, 1 FORCE, 2 VORTEX, 3 TURBULENCE, 4 DRAG, 5 HARMONIC), 1 shape (0 POINT, 1 LINE, 2 PLANE),
 *   2 falloff_type (0 SPHERE, 1 TUBE, 2 CONE), 3 z_direction (0 BOTH, 1 POSITIVE, 2 NEGATIVE), 4 flags (the
 *   SOFTSIM_FIELD_* bits below), 5 strength, 6 falloff_power, 7 distance_min, 8 distance_max, 9 radial_min,
 *   10 radial_max, 11 radial_falloff, 12 flow, 13 noise, 14 the seed's hash term ((seed * 2654435761) ^ 0x9E3779B9)
 *   & 0xFFFFFFFF (noise._hash), 15 size, 16 linear_drag, 17 harmonic_damping, 18 rest_length, 19-21 origin [m],
 *   22-24 axis (unit, ForceField.axis). */
#define SOFTSIM_FIELD_ROW 25
#define SOFTSIM_FIELD_ORIGIN 19
#define SOFTSIM_FIELD_AXIS 22
#define SOFTSIM_FIELD_USE_MIN 1
#define SOFTSIM_FIELD_USE_MAX 2
#define SOFTSIM_FIELD_USE_RADIAL_MIN 4
#define SOFTSIM_FIELD_USE_RADIAL_MAX 8
#define SOFTSIM_FIELD_GLOBAL_COORDS 16
#define SOFTSIM_FIELD_GRAVITY_FALLOFF 32
#define SOFTSIM_FIELD_UNIFORM 64 /* fields._uniform: the falloff is 1 everywhere */

/* Everything a cloth's or a solid's substeps read and write (substep.c, softsim_cloth_substeps), filled by the binding
 * (kernels.ClothFrame) from validated arrays it keeps alive; NULL / 0 counts for the parts a cloth has not. Every
 * field is 8 bytes (int64_t, double or a pointer): the ctypes mirror lists them in this order. */
typedef struct {
    int64_t n, substeps, iterations;
    double dt, damping_factor, max_speed;
    int64_t damped;
    double *x, *v, *x_prev;
    const double *inv_mass, *gravity;
    /* air: air_count triangles (0: no air); air_wind (substeps, 3) the wind's air velocity [m/s] of each substep, or
     * NULL for still air */
    int64_t air_count;
    const int64_t *air_triangles, *air_corner_start, *air_corner_face;
    double *air_cross, *air_area, *air_normal, *air_state;
    const double *air_settings, *air_wind;
    /* force fields: field_count fields (0: none, or the air_wind path), field_table (substeps, field_count,
     * SOFTSIM_FIELD_ROW) each substep's fields at its middle, field_time (substeps,) its time [s], field_weight the
     * body's field_weight; field_a0 (n, 3), field_c (n,), field_u (n, 3) scratch (softsim_fields_apply) */
    int64_t field_count;
    const double *field_table, *field_time;
    double field_weight;
    double *field_a0, *field_c, *field_u;
    /* pins: pin_start + (pin_end - pin_start) * k / substeps, written to pin_to (scratch) */
    int64_t pin_count;
    const int64_t *pin_index;
    const double *pin_start, *pin_end;
    double *pin_to;
    /* analytic colliders: one table of collider_count rows, or one per substep (tables_per_substep) */
    int64_t collider_count, tables_per_substep;
    const double *collider_table, *pad2;
    int64_t *c_particle, *c_owner;
    double *c_normal, *c_offset, *c_pushed;
    int64_t face_count, edge_count, face_passes;
    const int64_t *faces, *edges;
    const double *finish_settings;
    int64_t *r_particle, *r_owner;
    double *r_normal, *r_distance, *r_scratch, *topology_state, *x0;
    int64_t *work_i;
    double *work_d;
    /* distance sweep (softsim_distance_sweep) */
    int64_t distance_m, distance_colours, distance_use_alpha;
    const int64_t *distance_start, *distance_edges;
    const double *distance_rest, *distance_wi, *distance_wj, *distance_alpha, *distance_inverse;
    double *distance_lambda;
    /* bending sweep (softsim_bending_sweep) and its Jacobi tail (softsim_bending_jacobi) */
    int64_t bending_m, bending_colours;
    const int64_t *bending_start, *bending_curved, *bending_hinges;
    const double *bending_K, *bending_wK, *bending_rest, *bending_alpha, *bending_inverse;
    double *bending_lambda;
    int64_t tail_m, tail_curved;
    const int64_t *tail_hinges, *tail_scatter_start, *tail_scatter_entry;
    const double *tail_K, *tail_wK, *tail_rest, *tail_alpha, *tail_inverse, *tail_scale;
    double *tail_lambda, *tail_dx;
    /* pin tethers (softsim_tether_apply) */
    int64_t tether_slots;
    const int64_t *tether_start, *tether_particle, *tether_pin;
    const double *tether_limit;
    int64_t *tether_stamp, *tether_seen;
    /* still mesh colliders (mesh_frame.h; NULL: none, the analytic rows' contact.c path) */
    struct SoftsimMeshFrame *mesh;
    /* hand_over 1: every substep is handed back to the caller after the end-of-step push (self-collision runs there),
     * with true_start (n, 3) the step's start x_prev as it was before pre-stabilization when the step has contacts */
    int64_t hand_over;
    double *true_start;
    /* a solid's tet-strain sweep (softsim_tet_strain_sweep: tet_m tets in tet_colours colours, 0: none) and its Jacobi
     * tail (softsim_tet_strain_jacobi: tet_tail_m tets, 0: none). A step with contacts runs at least
     * contact_iterations iterations (0: as many as the others); with symmetric != 0 the last iteration sweeps the
     * colours both ways (softsim_tet_strain_symmetric_sweep), the others alternate their order, last to first when
     * (iteration + step) is odd, step = first_step + k - 1 for substep k. tet_damping: internal damping gamma (0:
     * none), against the step's start x_prev. */
    int64_t tet_m, tet_colours, contact_iterations, symmetric, first_step;
    double tet_damping;
    const int64_t *tet_start, *tet_tets;
    const double *tet_D, *tet_w, *tet_kappa, *tet_alpha;
    double *tet_lambda, *tet_x_back, *tet_lambda_back;
    int64_t tet_tail_m;
    const int64_t *tet_tail_tets, *tet_tail_scatter_start, *tet_tail_scatter_entry;
    const double *tet_tail_D, *tet_tail_w, *tet_tail_kappa, *tet_tail_alpha, *tet_tail_scale;
    double *tet_tail_lambda, *tet_tail_dx;
} SoftsimClothPlan;

#if defined(_WIN32)
#define SOFTSIM_API __declspec(dllexport)
#else
#define SOFTSIM_API __attribute__((visibility("default")))
/* Pin tethers: project particles past their distance limit from a pin back onto it, slot after slot (xpbd.c). */
SOFTSIM_API int64_t softsim_tether_apply(double *x, int64_t slot_count, const int64_t *slot_start,
                                         const int64_t *particle, const int64_t *pin, const double *limit,
                                         int64_t passes, int64_t *stamp, int64_t *seen);

#endif

/* The ABI version the library was built with (SOFTSIM_ABI_VERSION). */
SOFTSIM_API int64_t softsim_abi_version(void);

/* One Gauss-Seidel sweep of XPBD distance constraints C = |x_i - x_j| - l0, colour after colour (xpbd.c). */
SOFTSIM_API void softsim_distance_sweep(double *x, int64_t colour_count, const int64_t *colour_start,
                                        const int64_t *edges, const double *rest_length, const double *w_i,
                                        const double *w_j, const double *alpha, const double *inverse_denominator,
                                        double *lambda, int64_t use_alpha);

/* One Gauss-Seidel sweep of isometric bending (vector) constraints, colour after colour (xpbd.c). */
SOFTSIM_API void softsim_bending_sweep(double *x, int64_t colour_count, const int64_t *colour_start,
                                       const int64_t *curved, const int64_t *hinges, const double *K,
                                       const double *wK, const double *rest_norm, const double *alpha,
                                       const double *inverse_denominator, double *lambda);

/* Pin tethers: project particles past their distance limit from a pin back onto it, slot after slot (xpbd.c). */
SOFTSIM_API int64_t softsim_tether_apply(double *x, int64_t slot_count, const int64_t *slot_start,
                                         const int64_t *particle, const int64_t *pin, const double *limit,
                                         int64_t passes, int64_t *stamp, int64_t *seen);

/* Solids (tets.c): one Gauss-Seidel sweep of XPBD Neo-Hookean tet constraint pairs (C_D, C_H), colour after colour
 * (reverse != 0: last to first), and the mean of a forward and a backward sweep from the same state. */
SOFTSIM_API void softsim_tet_strain_sweep(double *x, int64_t colour_count, const int64_t *colour_start,
                                          const int64_t *tets, const double *D, const double *w, const double *kappa,
                                          const double *alpha, double *lambda, double damping, const double *x_prev,
                                          int64_t reverse);
SOFTSIM_API void softsim_tet_strain_symmetric_sweep(double *x, int64_t particle_count, int64_t colour_count,
                                                    const int64_t *colour_start, const int64_t *tets, const double *D,
                                                    const double *w, const double *kappa, const double *alpha,
                                                    double *lambda, double damping, const double *x_prev,
                                                    double *x_back, double *lambda_back);
/* A Jacobi sweep of such tets (a Gauss-Seidel sweep's tail of tiny colours, or XPBD's Jacobi scheme), each tet's
 * update scaled by scale (m,) and summed per particle in the set's (tet, corner) order (tets.c). */
SOFTSIM_API void softsim_tet_strain_jacobi(double *x, int64_t m, const int64_t *tets, const double *D, const double *w,
                                           const double *kappa, const double *alpha, const double *scale,
                                           double *lambda, double damping, const double *x_prev,
                                           int64_t particle_count, const int64_t *scatter_start,
                                           const int64_t *scatter_entry, double *dx);
/* The position-based step's prediction: v += dt g on free particles, x_prev = x, x += dt v (contact.c). */
SOFTSIM_API void softsim_predict(double *x, double *v, double *x_prev, int64_t n, const double *inv_mass,
                                 const double *gravity, double dt);

/* The step's velocity from positions, v = (x - x_prev) / dt, times damping_factor when damped (contact.c). */
SOFTSIM_API void softsim_velocity(const double *x, const double *x_prev, double *v, int64_t n, double dt,
                                  double damping_factor, int64_t damped);

/* Point contacts of analytic colliders (ground planes, spheres), within the step's margin or inside (contact.c). */
SOFTSIM_API int64_t softsim_contacts_find(const double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                          const double *pad2, int64_t collider_count, const double *colliders,
                                          int64_t margin_mode, int64_t *particle, int64_t *owner, double *normal,
                                          double *offset, double *pushed);

/* Contacts projected onto their planes, the normal corrections accumulated (contact.c). */
SOFTSIM_API void softsim_contacts_project(double *x, int64_t count, const int64_t *particle, const double *normal,
                                          const double *offset, double *pushed);

/* The step's start moved onto the contact planes of still colliders it lies inside (contact.c): the push out of a
 * penetration the step began with adds no velocity. */
SOFTSIM_API void softsim_contacts_stabilize(double *x_prev, int64_t count, const double *colliders,
                                            const int64_t *particle, const int64_t *owner, const double *normal,
                                            const double *offset);

/* Position-level Coulomb friction of the step's pushed contacts (contact.c). */
SOFTSIM_API void softsim_contacts_friction(double *x, const double *x_prev, int64_t count, const double *colliders,
                                           const int64_t *particle, const int64_t *owner, const double *normal,
                                           const double *pushed);

/* The end of a step against analytic colliders: vertices, sphere faces, vertices again (contact.c). */
SOFTSIM_API int64_t softsim_contacts_finish(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                            const double *pad2, int64_t collider_count, const double *colliders,
                                            int64_t t, const int64_t *triangles, int64_t edge_count,
                                            const int64_t *edges, int64_t face_passes, const double *settings,
                                            int64_t *particle, int64_t *owner, double *normal, double *distance,
                                            double *scratch, double *topology_state, double *x0, int64_t *work_i,
                                            double *work_d);

/* The same, walked in sweeps against the colliders posed over each sweep (contact.c). */
SOFTSIM_API int64_t softsim_contacts_finish_sweeps(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                                   const double *pad2, int64_t collider_count, const double *posed,
                                                   int64_t sweeps, int64_t t, const int64_t *triangles,
                                                   int64_t edge_count, const int64_t *edges, int64_t face_passes,
                                                   const double *settings, int64_t *particle, int64_t *owner,
                                                   double *normal, double *distance, double *scratch,
                                                   double *topology_state, double *x0, int64_t *work_i,
                                                   double *work_d, double *start, double *end);

/* collider_contacts.resolve_deep_faces over analytic colliders: each sphere's face push with its own contact radius
 * (contact.c). */
SOFTSIM_API int64_t softsim_contacts_deep_faces(double *x, const double *x_prev, int64_t n, const double *inv_mass,
                                                int64_t collider_count, const double *colliders, const double *rho,
                                                int64_t t, const int64_t *triangles, int64_t edge_count,
                                                const int64_t *edges, int64_t face_passes, const double *settings,
                                                double *topology_state, double *x0, int64_t *work_i, double *work_d);

/* A mesh collider at one pose for self-collision's keep-out and resting test: its row in the collider table has kind
 * SOFTSIM_KIND_MESH (mesh_frame.h) and [3] the index of this struct. Every field is 8 bytes (kernels.KeepOut mirrors
 * it). The triangles' grid of that pose and the query stamps as softsim_mesh_closest takes them. */
typedef struct {
    const double *vertices;   /* (m, 3) [m] */
    const int64_t *triangles; /* (t, 3) */
    const double *grid;
    const int64_t *dims, *cell_start, *entry;
    int64_t *stamp;           /* (1 + t,) */
    double thickness;         /* [m] */
    double search_limit;      /* [m] distance_and_normal's reach, thickness + SEARCH_MARGIN (mesh_collider.py) */
} SoftsimKeepOutMesh;

/* SelfCollision.resolve_beside_colliders' resting particles over ground planes, spheres and mesh colliders
 * (contact.c); meshes: the mesh rows' structs (null without mesh rows); scratch_i (4 n,), scratch_d (7 n,). */
SOFTSIM_API int64_t softsim_resting(const double *x, int64_t n, const double *pad2, int64_t collider_count,
                                    const double *colliders, const SoftsimKeepOutMesh *meshes, double band,
                                    uint8_t *resting, int64_t *scratch_i, double *scratch_d);

/* SelfCollision._keep_out_of_colliders over ground planes, spheres and mesh colliders (contact.c); meshes, scratch_i
 * and scratch_d as softsim_resting's. */
SOFTSIM_API int64_t softsim_keep_out(double *x, int64_t n, double *inv_mass, uint8_t *heavy, const double *pad2,
                                     int64_t count, const int64_t *moved, int64_t collider_count,
                                     const double *colliders, const SoftsimKeepOutMesh *meshes, double slack,
                                     double mass_factor, int64_t *scratch_i, double *scratch_d);
/* The same on the particles with touched[p] != 0 (touched (n,), self-collision's pass mask), scratch (n,) int64
 * (keep_out_touched.c). */
SOFTSIM_API int64_t softsim_keep_out_touched(double *x, int64_t n, double *inv_mass, uint8_t *heavy,
                                             const double *pad2, const uint8_t *touched, int64_t *scratch,
                                             int64_t collider_count, const double *colliders,
                                             const SoftsimKeepOutMesh *meshes, double slack, double mass_factor,
                                             int64_t *scratch_i, double *scratch_d);

/* Cloth self-collision's broad phase (self_collision.c): the vertex-triangle and edge-edge pairs within reach + the
 * two elements' skins (exact distances), from a hash grid of boxes in caller-owned buffers. Returns the pair count
 * (only the first pair_capacity written; more asks for a retry), or -1 with needs[0] the grid entries wanted.
 * box_scratch: (triangles or edges, 13) doubles. */
SOFTSIM_API int64_t softsim_self_vt_pairs(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                          const double *skin_v, const double *skin_t, double reach,
                                          const int64_t *excluded, int64_t excluded_count, int64_t table_size,
                                          int64_t *table_start, int64_t entry_capacity, int64_t *entry_element,
                                          int64_t *entry_cell, int64_t pair_capacity, int64_t *out_v, int64_t *out_t,
                                          double *out_d, int64_t *needs, double *box_scratch);
SOFTSIM_API int64_t softsim_self_ee_pairs(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                          const double *skin_e, double reach, const int64_t *excluded,
                                          int64_t excluded_count, int64_t table_size, int64_t *table_start,
                                          int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                                          int64_t pair_capacity, int64_t *out_a, int64_t *out_b, double *out_d,
                                          int64_t *needs, double *box_scratch);
/* The same builds in two parts, so that threads can share one: *_prepare fills box_scratch, the grid and scale_out (4
 * doubles) and returns the grid entries (-1 with needs[0] the entries wanted when they exceed entry_capacity); *_query
 * then lists the pairs of the query elements (vertices, edges) in the blocks of `block` elements at first, first +
 * stride, ... below last, reading the prepared state only (queries of disjoint ranges may run at once, each with its
 * own outputs), and returns their count as *_pairs does. *_pairs is prepare then query of every element. */
SOFTSIM_API int64_t softsim_self_vt_prepare(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                            const double *skin_v, const double *skin_t, double reach,
                                            int64_t table_size, int64_t *table_start, int64_t entry_capacity,
                                            int64_t *entry_element, int64_t *entry_cell, int64_t *needs,
                                            double *box_scratch, double *scale_out);
SOFTSIM_API int64_t softsim_self_vt_query(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                          const double *skin_v, const double *skin_t, double reach,
                                          const int64_t *excluded, int64_t excluded_count, int64_t table_size,
                                          const int64_t *table_start, const int64_t *entry_element,
                                          const int64_t *entry_cell, const double *box_scratch,
                                          const double *scale_in, int64_t first, int64_t last, int64_t block,
                                          int64_t stride, int64_t pair_capacity, int64_t *out_v, int64_t *out_t,
                                          double *out_d);
SOFTSIM_API int64_t softsim_self_ee_prepare(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                            const double *skin_e, double reach, int64_t table_size,
                                            int64_t *table_start, int64_t entry_capacity, int64_t *entry_element,
                                            int64_t *entry_cell, int64_t *needs, double *box_scratch,
                                            double *scale_out);
SOFTSIM_API int64_t softsim_self_ee_query(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                          const double *skin_e, double reach, const int64_t *excluded,
                                          int64_t excluded_count, int64_t table_size, const int64_t *table_start,
                                          const int64_t *entry_element, const int64_t *entry_cell,
                                          const double *box_scratch, const double *scale_in, int64_t first,
                                          int64_t last, int64_t block, int64_t stride, int64_t pair_capacity,
                                          int64_t *out_a, int64_t *out_b, double *out_d);
/* A cloth's substeps (substep.c): the Jacobi tail of a bending set, the air on the faces (area vectors, and the loads
 * of BodyLoads.apply with air and no fields), the frame's state check, and substeps first .. last of a frame. */
SOFTSIM_API void softsim_bending_jacobi(double *x, int64_t m, const int64_t *hinges, const double *K, const double *wK,
                                        const double *rest_norm, const double *alpha,
                                        const double *inverse_denominator, const double *scale, double *lambda,
                                        int64_t curved, int64_t particle_count, const int64_t *scatter_start,
                                        const int64_t *scatter_entry, double *dx);
SOFTSIM_API void softsim_air_areas(const double *x, int64_t n, int64_t t, const int64_t *triangles,
                                   const int64_t *corner_start, const int64_t *corner_face, double *cross,
                                   double *area, double *normal);
SOFTSIM_API void softsim_air_apply(const double *x, double *v, int64_t n, const double *inv_mass,
                                   const double *gravity, double dt, int64_t t, const int64_t *triangles,
                                   const int64_t *corner_start, const int64_t *corner_face, double *cross,
                                   double *area, double *normal, double *state, const double *settings,
                                   const double *wind);
/* Force fields (fields.c, kernels.FieldLoads): field_terms' a0 (n, 3) and c (n,), air_velocity's u (n, 3) of
 * field_count fields (table rows above) at positions x, velocities v (n, 3) and time t [s]; and BodyLoads.apply with
 * them: v changed on free particles for a step of dt [s], the fields times weight, the air on air_t triangles
 * (0: none; then the air's arrays may be NULL) as softsim_air_apply's; a0, c, u scratch. */
SOFTSIM_API void softsim_field_terms(const double *x, const double *v, int64_t n, double t, int64_t field_count,
                                     const double *fields, double *a0, double *c);
SOFTSIM_API void softsim_air_velocity(const double *x, int64_t n, double t, int64_t field_count, const double *fields,
                                      double *u);
SOFTSIM_API void softsim_fields_apply(const double *x, double *v, int64_t n, const double *inv_mass,
                                      const double *gravity, double dt, double t, double weight, int64_t field_count,
                                      const double *fields, double *a0, double *c, double *u, int64_t air_t,
                                      const int64_t *triangles, const int64_t *corner_start,
                                      const int64_t *corner_face, double *cross, double *area, double *normal,
                                      double *state, const double *settings);
SOFTSIM_API int64_t softsim_check_state(const double *x, const double *v, int64_t n, double max_speed);
SOFTSIM_API int64_t softsim_cloth_substeps(const SoftsimClothPlan *plan, int64_t first, int64_t last,
                                           int64_t *status);

/* A mesh collider's nearest-triangle query (mesh_collider.c, mesh_kernels.MeshClosest): a uniform grid over the
 * collider's triangles in caller-owned buffers (returns the entries it needs; more than entry_capacity: nothing
 * filled, grow and call again), and the nearest triangle within limit of each asked point (returns how many points
 * have one). grid: (origin x, y, z, cell size, upper bound x, y, z); stamp: (1 + triangles). */
SOFTSIM_API int64_t softsim_mesh_grid_build(const double *vertices, const int64_t *triangles, int64_t t,
                                           const double *grid, const int64_t *dims, int64_t *cell_start,
                                           int64_t entry_capacity, int64_t *entry_tri);
SOFTSIM_API int64_t softsim_mesh_closest(const double *x, const int64_t *points, int64_t k, const double *vertices,
                                         const int64_t *triangles, const double *grid, const int64_t *dims,
                                         const int64_t *cell_start, const int64_t *entry_tri, double limit,
                                         int64_t *stamp, int64_t *out_row, int64_t *out_tri, double *out_bary,
                                         double *out_q, double *out_d, int64_t *out_interior);

/* The face-pair list's allowances of the points (k,) of a body at x (n, 3) with edges (e, 2) beside a mesh collider's
 * sharp edges (mesh_frame.c; MeshFacePairs._allowances): their pieces' centres (3, p) by axis and largest radius,
 * the collider's travel and thickness [m], settings (SEARCH_MARGIN, SIDE_MARGIN, SKIN, KEPT_DRIFT, LINEAR_DRIFT,
 * REFRESH_SHARE, MAX_ALLOWANCE, FACE_PASSES), piece_boxes (6 p,) scratch; out (n,) [m] written at the points. */
SOFTSIM_API void softsim_mesh_allowances(const double *x, int64_t n, const int64_t *edges, int64_t e,
                                         const double *centres, int64_t p, double piece_radius, double travel,
                                         double thickness, const double *settings, double *piece_boxes,
                                         const int64_t *points, int64_t k, double *out);

/* A moving or deforming mesh collider's contact planes (mesh_moving.c, mesh_kernels.MeshClosest.contact_rows, twin
 * of MeshCollider._contact_rows): the asked points within thickness + margin of the pose (vertices, its grid and
 * normals), their sides read at the start pose (start_*) where they lie within their step's motion plus the travel.
 * limits: (thickness, margin, the start pose's thickness + SIDE_MARGIN, travel, drift) [m], drift: how far (per
 * axis) the grids' pose lies from the poses asked (0: the grids are theirs; mesh_collider.c mesh_closest_drift). Writes the found points' rows, plane offsets d, normals and
 * unsigned distances in the order asked; returns how many. work_i (6 k), work_d (14 k): scratch. */
SOFTSIM_API int64_t softsim_mesh_contact_rows(
    const double *x, const double *x_prev, const int64_t *points, int64_t k, const int64_t *triangles,
    const double *vertices, const double *grid, const int64_t *dims, const int64_t *cell_start, const int64_t *entry,
    const double *face_normals, const double *vertex_normals, const double *side_normals, const double *start_vertices,
    const double *start_grid, const int64_t *start_dims, const int64_t *start_cell_start, const int64_t *start_entry,
    const double *start_face_normals, const double *start_vertex_normals, const double *start_side_normals,
    int64_t *stamp, const double *limits, int64_t *out_row, double *out_d, double *out_normal, double *out_dist,
    int64_t *work_i, double *work_d);

/* A moving mesh collider's motion under points (mesh_moving.c, mesh_kernels.MeshClosest.motion, twin of
 * MeshCollider.motion): for each asked point (rows of x) within limit of the pose, its nearest triangle's motion
 * from the start pose at the closest point's weights, written to its row of out (n, 3) (zero for an asked point with
 * no triangle within limit; the rows not asked untouched); the grid's pose within drift [m] of vertices (0: its
 * own). work_i (3 k), work_d (7 k): scratch. */
SOFTSIM_API void softsim_mesh_motion(const double *x, const int64_t *points, int64_t k, const int64_t *triangles,
                                     const double *vertices, const double *grid, const int64_t *dims,
                                     const int64_t *cell_start, const int64_t *entry, const double *start_vertices,
                                     double limit, double drift, int64_t *stamp, double *out, int64_t *work_i,
                                     double *work_d);

/* The normals of P poses of one mesh (pose_normals.c; pose_kernels.PoseNormals), the twin of mesh_collider.py
 * pose_normals, in two calls around NumPy's arccos: vertices (poses, m, 3), triangles (t, 3) within [0, m) ->
 * face normals face (poses, t, 3) and the clipped cosines of the corners' angles cosines (3, poses, t) (corner k of
 * triangle i at pose p: k poses t + p t + i); then from the angles (arccos of the cosines, the same layout) and the
 * side ids side_edge (t, 3) within [0, e): the vertex pseudo-normals vertex (poses, m, 3), the edge pseudo-normals
 * edge (poses, e, 3) and the side pseudo-normals side (poses, t, 3, 3). */
SOFTSIM_API void softsim_pose_cosines(const double *vertices, int64_t poses, int64_t m, const int64_t *triangles,
                                      int64_t t, double *face, double *cosines);
SOFTSIM_API void softsim_pose_sums(int64_t poses, int64_t m, int64_t t, const int64_t *triangles,
                                   const int64_t *side_edge, int64_t e, const double *face, const double *angle,
                                   double *vertex, double *edge, double *side);

/* Which edges of a mesh are not sharp (pose_normals.c; pose_kernels.flat_edges), the twin of mesh_broad_phase.py
 * sharp_edges' test: the unit normals of the triangles (t, 3) within [0, m) of vertices (m, 3) into normal (t, 3),
 * then for each of the p edges with two triangles one[k], other[k] (within [0, t)) flat[k] = 1 where the two normals'
 * dot product is at least cos_min, else 0. */
SOFTSIM_API void softsim_flat_edges(const double *vertices, const int64_t *triangles, int64_t t, const int64_t *one,
                                    const int64_t *other, int64_t p, double cos_min, double *normal, uint8_t *flat);

/* A mesh collider's face pairs (mesh_collider.c): its corners within reach of body triangles and its sharp edges
 * within reach of body edges, with exact distances, sorted by body element then feature; grids of the corners (as
 * triangles (c, c, c)) and sharp edges (as (a, b, b)) from softsim_mesh_grid_build. Return the pair count (only
 * the first capacity written; more asks for a retry). */
SOFTSIM_API int64_t softsim_mesh_corner_pairs(const double *x, const int64_t *triangles, const int64_t *rows,
                                              int64_t k, const double *reach, double travel, const double *vertices,
                                              const int64_t *corners, const double *grid, const int64_t *dims,
                                              const int64_t *cell_start, const int64_t *entry, int64_t *stamp,
                                              int64_t capacity, int64_t *out_corner, int64_t *out_row,
                                              double *out_d);
SOFTSIM_API int64_t softsim_mesh_edge_pairs(const double *x, const int64_t *edges, const int64_t *rows, int64_t m,
                                            const double *reach, double travel, const double *vertices,
                                            const int64_t *sharp, const double *grid, const int64_t *dims,
                                            const int64_t *cell_start, const int64_t *entry, int64_t *stamp,
                                            int64_t capacity, int64_t *out_edge, int64_t *out_row, double *out_d);

/* A mesh collider's corner and edge pushes (mesh_collider.c): the pairs measured (kept ones written compacted,
 * returns how many) and one Jacobi application of pushes (returns the pairs that moved; sums (n, 3) and count (n,)
 * are scratch). */
SOFTSIM_API int64_t softsim_mesh_corner_pushes(const double *x, const double *x_prev, const int64_t *triangles,
                                               const double *vertices, const double *start_vertices,
                                               const int64_t *corners, const int64_t *ci, const int64_t *ti,
                                               int64_t k, double thickness, int64_t *stencil, double *weights,
                                               double *direction, double *depth, double *slip, double *origin);
SOFTSIM_API int64_t softsim_mesh_edge_pushes(const double *x, const double *x_prev, const int64_t *edges,
                                             const double *vertices, const double *start_vertices,
                                             const int64_t *sharp, const int64_t *ei, const int64_t *bi, int64_t k,
                                             double thickness, int64_t *stencil, double *weights, double *direction,
                                             double *depth, double *slip, double *origin);
SOFTSIM_API int64_t softsim_mesh_push_apply(double *x, int64_t n, const double *inv_mass, int64_t k, int64_t width,
                                            const int64_t *stencil, const double *weights, const double *direction,
                                            const double *depth, const double *slip, double friction, double *sums,
                                            double *count);

/* A still mesh collider's kept contact planes (mesh_collider.c, twins of kept_planes.kept_contact's passes). */
SOFTSIM_API int64_t softsim_kept_stale(const double *x, const double *x_prev, int64_t n, const double *x0,
                                       const double *d0, const double *clear, double drift_limit, double far_limit,
                                       int64_t *stale);
SOFTSIM_API void softsim_kept_planes(const double *x, int64_t n, const double *x0, const double *normal,
                                     const double *d0, double margin, double *d, double *out_normal);
/* Cloth self-collision's per-call list upkeep (self_response.c): the boxes of the triangles and edges over particle
 * boxes lo..hi ((3, n) each), and the filter of the Verlet list by the near bound and the box test at x (returns the
 * kept positions' count, positions and reaches written to out_pos / out_reach, up to k + m of them). */
SOFTSIM_API void softsim_self_boxes(const double *lo, const double *hi, int64_t n, const int64_t *triangles,
                                    int64_t t_count, const int64_t *edges, int64_t e_count, double *lo_t, double *hi_t,
                                    double *lo_e, double *hi_e);
SOFTSIM_API int64_t softsim_self_list_check(const double *x, int64_t n, const double *motion, const double *moved,
                                            const int64_t *triangles, const int64_t *edges, int64_t k,
                                            const int64_t *list_v, const int64_t *list_t, int64_t m,
                                            const int64_t *list_a, const int64_t *list_b, const double *dist,
                                            double thickness, int64_t *out_pos, double *out_reach,
                                            int64_t t_count, int64_t e_count, double *scratch);
/* The contact stencils of vertex-triangle then edge-edge pairs (self_response.c; self_pairs._Stencils): idx, coef
 * (k, 4), r, n (k, 3), dist, plane (k,), ok, interior (k,) bytes. */
SOFTSIM_API void softsim_self_stencils(const double *x, const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                       const int64_t *list_v, const int64_t *list_t, int64_t k_ee,
                                       const int64_t *list_a, const int64_t *list_b, int64_t *idx, double *coef,
                                       double *r, double *n, double *dist, double *plane, unsigned char *ok,
                                       unsigned char *interior);
/* The fail-safe's witnesses among a Verlet list (self_response.c; ImpactZones._new_crossings): the listed pairs near
 * enough to touch in the step, with overlapping swept boxes and distances at both ends within their motion. */
SOFTSIM_API int64_t softsim_self_witnesses(const double *x, const double *x_start, int64_t n, const double *lo,
                                           const double *hi, const double *motion, const double *bound,
                                           const int64_t *triangles, const int64_t *edges, int64_t k,
                                           const int64_t *list_v, const int64_t *list_t, int64_t m,
                                           const int64_t *list_a, const int64_t *list_b, const double *dist,
                                           double slack, int64_t *out_pos, int64_t t_count, int64_t e_count,
                                           double *scratch);
/* Whether a Verlet list still holds: every element's motion since the build and in the step within its skin
 * (self_response.c; SelfBroadPhase._list_holds). */
SOFTSIM_API int64_t softsim_self_list_holds(const double *moved, const double *motion, int64_t n,
                                            const int64_t *triangles, int64_t t_count, const int64_t *edges,
                                            int64_t e_count, const double *skin_v, const double *skin_t,
                                            const double *skin_e);
/* A Verlet list's skin growth (self_collision.c; SelfBroadPhase._grow): the pairs of the grown elements within reach +
 * their new skins, admissible and not listed yet; buffers and return as softsim_self_vt_pairs / softsim_self_ee_pairs. */
SOFTSIM_API int64_t softsim_self_vt_grow(const double *x, int64_t n, const int64_t *triangles, int64_t t_count,
                                         const double *skin_v, const double *skin_t, double reach,
                                         const int64_t *excluded, int64_t excluded_count, const int64_t *listed,
                                         int64_t listed_count, const int64_t *grown_v, int64_t grown_v_count,
                                         const unsigned char *grown_v_mask, const int64_t *grown_t,
                                         int64_t grown_t_count, int64_t table_size, int64_t *table_start,
                                         int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                                         int64_t pair_capacity, int64_t *out_v, int64_t *out_t, double *out_d,
                                         int64_t *needs, double *box_scratch);
SOFTSIM_API int64_t softsim_self_ee_grow(const double *x, int64_t n, const int64_t *edges, int64_t e_count,
                                         const double *skin_e, double reach, const int64_t *excluded,
                                         int64_t excluded_count, const int64_t *listed, int64_t listed_count,
                                         const int64_t *grown_e, int64_t grown_e_count,
                                         const unsigned char *grown_e_mask, int64_t table_size, int64_t *table_start,
                                         int64_t entry_capacity, int64_t *entry_element, int64_t *entry_cell,
                                         int64_t pair_capacity, int64_t *out_a, int64_t *out_b, double *out_d,
                                         int64_t *needs, double *box_scratch);
/* One pass of self-collision's response (self_pass.c; the pass loop of SelfCollision._respond): the batch of watched
 * pairs the last pass touched, their stencils, the active ones swept colour by colour (Gauss-Seidel) with their
 * corrections applied to x (returns how many moved); then, after the caller's collider check, the recovery share
 * applied to x_prev and the friction depths. */
SOFTSIM_API int64_t softsim_self_pass(double *x, const double *inv_mass, int64_t n, const int64_t *triangles,
                                      const int64_t *edges, int64_t count, int64_t k_vt, const int64_t *list_v,
                                      const int64_t *list_t, const int64_t *list_a, const int64_t *list_b,
                                      const double *side, const double *target, double thickness, double tolerance,
                                      double relaxation, int64_t restrict_violating, int64_t given,
                                      unsigned char *changed, unsigned char *touched, int64_t *pos, int64_t *batch,
                                      int64_t *idx, double *coef, double *r, double *normal, double *dist,
                                      double *plane, unsigned char *ok, unsigned char *interior, double *work_d,
                                      unsigned char *flags, int64_t *colour,
                                      int64_t *order, int64_t *start, int64_t *last, int64_t *t_pos, int64_t *t_idx,
                                      double *t_coef, double *t_r, double *t_normal, double *t_dist, double *t_plane,
                                      unsigned char *t_ok, unsigned char *t_interior, int64_t *batch_size);
SOFTSIM_API void softsim_self_pass_finish(double *x_prev, const double *inv_mass, int64_t n,
                                          const double *approach_target, const int64_t *pos, int64_t m,
                                          const int64_t *idx, const double *coef, double *work_d,
                                          const unsigned char *flags, double *depth, unsigned char *ever,
                                          double *recovery, double *delta);
/* Cloth self-collision's candidate selection in one call (self_select.c; SelfBroadPhase._candidates): with
 * SELF_SELECT_MOTION the step's motion and the motion since the list's build (relative to the mean) and whether the
 * list holds (-1 when not), with SELF_SELECT_PAIRS the listed pairs near enough at x, in list order (sorted by key). */
enum { SELF_SELECT_MOTION = 1, SELF_SELECT_PAIRS = 2 };
SOFTSIM_API int64_t softsim_self_select(const double *x, const double *x_prev, const double *x0, int64_t n,
                                        const int64_t *triangles, int64_t t_count, const int64_t *edges,
                                        int64_t e_count, int64_t k, const int64_t *list_v, const int64_t *list_t,
                                        int64_t m, const int64_t *list_a, const int64_t *list_b, const double *dist,
                                        const double *skin_v, const double *skin_t, const double *skin_e,
                                        double thickness, int64_t what, double *motion, double *moved,
                                        int64_t *out_v, int64_t *out_t, int64_t *out_a, int64_t *out_b,
                                        double *out_reach, int64_t *out_split, double *scratch);
/* Self-collision's response set-up in one call (self_select.c; the preamble of SelfCollision._respond and
 * SelfPass.begin): the candidates' stencils at x, the kept ones compacted with their stencils, their side and targets
 * from their stencils at x_prev; returns how many are kept. */
SOFTSIM_API int64_t softsim_self_pass_setup(const double *x, const double *x_prev, const double *inv_mass,
                                            const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                            const int64_t *cand_v, const int64_t *cand_t, int64_t k_ee,
                                            const int64_t *cand_a, const int64_t *cand_b, const double *reach,
                                            double thickness, double recovery, int64_t *list_v, int64_t *list_t,
                                            int64_t *list_a, int64_t *list_b, int64_t *kept_vt, int64_t *idx,
                                            double *coef, double *r, double *n, double *dist, double *plane,
                                            unsigned char *ok, unsigned char *interior, double *side, double *target,
                                            double *approach_target, double *depth, unsigned char *ever);
/* The watched pairs' sides read where the step really started (self_sides.c; SelfCollision._true_sides): in place on
 * side, approach_target and target (k_vt + k_ee,); moved (n,) zero on entry and on return, pick (k_vt + k_ee,)
 * scratch; returns how many pairs took their true side. */
SOFTSIM_API int64_t softsim_self_true_sides(const double *x_prev, const double *true_start, int64_t n,
                                            const int64_t *triangles, const int64_t *edges, int64_t k_vt,
                                            const int64_t *v, const int64_t *t, int64_t k_ee, const int64_t *a,
                                            const int64_t *b, double target_value, unsigned char *moved,
                                            int64_t *pick, double *side, double *approach_target, double *target);
/* The fail-safe's new crossings (edge, triangle) that its witnesses can show (self_crossings.c;
 * ImpactZones._crossings_in_numpy): returns their count, writing the first `capacity`. */
SOFTSIM_API int64_t softsim_self_new_crossings(const double *x, const double *x_start, const int64_t *triangles,
                                               const int64_t *edges, const int64_t *vertex_edge_start,
                                               const int64_t *vertex_edges, const int64_t *edge_triangle_start,
                                               const int64_t *edge_triangles, int64_t k_vt, const int64_t *witness_v,
                                               const int64_t *witness_t, int64_t k_ee, const int64_t *witness_a,
                                               const int64_t *witness_b, int64_t capacity, int64_t *out_edge,
                                               int64_t *out_triangle);

/* The fail-safe's set-up and witnesses in one call (self_select.c; ImpactZones._new_crossings): the motions and
 * whether the list holds (-1 when not, with SELF_SELECT_MOTION), the particles' boxes over the step, the witnesses'
 * positions in the list (returns their count). */
SOFTSIM_API int64_t softsim_self_fail_safe_witnesses(const double *x, const double *x_start, const double *x0,
                                                     int64_t n, const int64_t *triangles, int64_t t_count,
                                                     const int64_t *edges, int64_t e_count, int64_t k,
                                                     const int64_t *list_v, const int64_t *list_t, int64_t m,
                                                     const int64_t *list_a, const int64_t *list_b,
                                                     const double *dist, const double *skin_v, const double *skin_t,
                                                     const double *skin_e, int64_t what, double *motion,
                                                     double *moved, double *lo, double *hi, double *bound,
                                                     int64_t *out_pos, double *scratch);

/* Self-collision's whole call in one (self_step.c; SelfCollision.resolve_beside_colliders and resolve with the native
 * kernels above): the resting test and the call's inverse masses, the candidate selection, the response's set-up,
 * true sides, passes with the collider keep-out, friction, and the fail-safe's witnesses and new crossings, each the
 * kernel above with the arguments its binding passes. It stops where Python has work: a Verlet list that no longer
 * holds (SOFTSIM_SELF_STEP_LIST: refresh it, bind the new list, call again at `resume`), pass buffers smaller than the
 * candidates (SOFTSIM_SELF_STEP_CAPACITY: grow them to `candidates`, call again at SOFTSIM_SELF_STAGE_SETUP), new
 * crossings (SOFTSIM_SELF_STEP_CROSSINGS: `crossings` of them, the first crossing_capacity written, for the impact
 * zones); -1 for an unknown stage. Every pointer is a buffer the binding (self_step.SelfStep) owns or checked; every
 * field is 8 bytes. */
enum {
    SOFTSIM_SELF_STAGE_START = 0,         /* resting test, x_start, selection with the step's motion */
    SOFTSIM_SELF_STAGE_SELECT_GIVEN = 1,  /* selection with the motion given (after a refresh) */
    SOFTSIM_SELF_STAGE_SETUP = 2,         /* from the response's set-up on, the selection's candidates kept */
    SOFTSIM_SELF_STAGE_WITNESS_GIVEN = 3  /* the fail-safe's witnesses with the motion given (after a refresh) */
};
enum {
    SOFTSIM_SELF_STEP_DONE = 0,
    SOFTSIM_SELF_STEP_LIST = 1,
    SOFTSIM_SELF_STEP_CAPACITY = 2,
    SOFTSIM_SELF_STEP_CROSSINGS = 3
};
typedef struct {
    /* the body: n particles, its triangles (t, 3) and edges (e, 2), their inverse masses (n,) [1/kg] */
    int64_t n, t_count, e_count;
    const int64_t *triangles, *edges;
    const double *inv_mass;
    /* settings [m] and counts: thickness, RECOVERY * thickness, the true sides' target, PASS_TOLERANCE, RELAXATION,
     * friction; passes, MAX_PASSES */
    double thickness, recovery, side_target, tolerance, relaxation, friction;
    int64_t passes, max_passes;
    /* this call: x, x_prev (n, 3) [m] in place, true_start (n, 3) or null; x_start (n, 3) written at the start */
    double *x, *x_prev;
    const double *true_start;
    double *x_start;
    /* colliders (0: none; then inv_call is the body's inv_mass and nothing is heavy): the keep-out table as
     * kernels.KeepOut posed it, the call's inverse masses and heavy flags (n,), keep_out_touched's scratch (n,) */
    int64_t collider_count;
    const double *colliders;
    const SoftsimKeepOutMesh *meshes;
    const double *pad2;
    int64_t *mesh_scratch_i;
    double *mesh_scratch_d;
    double band, slack, mass_factor;
    double *inv_call;
    uint8_t *heavy;
    int64_t *keep_out_scratch;
    /* the Verlet list: build positions (n, 3), k vertex-triangle and m edge-edge pairs, distances (k + m,), skins */
    const double *x0;
    int64_t k;
    const int64_t *list_v, *list_t;
    int64_t m;
    const int64_t *list_a, *list_b;
    const double *dist, *skin_v, *skin_t, *skin_e;
    /* the selection's buffers (self_kernels.SelfSelect; outputs of capacity >= k + m) */
    double *motion, *moved;
    int64_t *out_v, *out_t, *out_a, *out_b;
    double *out_reach;
    int64_t *out_split;
    double *select_scratch, *lo, *hi, *bound;
    int64_t *out_pos;
    /* the response's buffers (self_kernels.SelfPass) of capacity pass_capacity */
    int64_t pass_capacity;
    int64_t *kept_v, *kept_t, *kept_a, *kept_b, *kept_count, *idx;
    double *coef, *r, *normal, *pair_dist, *plane;
    uint8_t *ok, *interior;
    double *side, *target, *approach_target, *depth;
    uint8_t *ever, *sides_scratch;
    int64_t *pick;
    uint8_t *changed, *touched;
    int64_t *pos, *batch;
    double *work_d;
    uint8_t *flags;
    int64_t *colour, *order, *start, *last, *t_pos, *t_idx;
    double *t_coef, *t_r, *t_normal, *t_dist, *t_plane;
    uint8_t *t_ok, *t_interior;
    int64_t *batch_size;
    double *recovery_share, *delta, *load;
    /* the fail-safe: adjacency (SelfCollision's CSR), the witnesses' pairs (capacity >= k + m), the crossings */
    const int64_t *vertex_edge_start, *vertex_edges, *edge_triangle_start, *edge_triangles;
    int64_t witness_capacity;
    int64_t *witness_v, *witness_t, *witness_a, *witness_b;
    int64_t crossing_capacity;
    int64_t *crossing_edge, *crossing_triangle;
    /* results: the selection's candidates and how many are vertex-triangle ones, the pairs kept within reach, those
     * ever corrected, the witnesses, the new crossings, the stage to call again at after SOFTSIM_SELF_STEP_LIST */
    int64_t candidates, split, kept, corrected, witnesses, crossings, resume;
} SoftsimSelfStep;
/* sizeof(SoftsimSelfStep), for the binding's check of its mirror. */
SOFTSIM_API int64_t softsim_self_step_size(void);
SOFTSIM_API int64_t softsim_self_step(SoftsimSelfStep *step, int64_t stage);

/* Self-collision's friction after the passes (self_pass.c; SelfCollision._friction on the corrected pairs): applied to
 * x; returns how many pairs it ran on. */
SOFTSIM_API int64_t softsim_self_pass_friction(double *x, const double *x_prev, const double *inv_mass, int64_t n,
                                               const int64_t *triangles, const int64_t *edges, int64_t count,
                                               int64_t k_vt, const int64_t *list_v, const int64_t *list_t,
                                               const int64_t *list_a, const int64_t *list_b, const double *side,
                                               const double *depth, const unsigned char *ever, double friction,
                                               unsigned char *touched, int64_t *pos, int64_t *batch, int64_t *idx,
                                               double *coef, double *r, double *normal, double *dist, double *plane,
                                               unsigned char *ok, unsigned char *interior, double *work_d,
                                               unsigned char *flags, double *load, double *delta);
/* The implicit solvers (implicit.c): Projective Dynamics' local step for the sets projected onto a sphere (edge
 * springs, curved hinges) and the scatter of their targets into the global right-hand side; the 3x3-block sparse
 * matrix-vector product of the implicit mass-spring solver's linear solves. */
SOFTSIM_API void softsim_pd_sphere_project(int64_t rows, const int64_t *indptr, const int64_t *indices,
                                           const double *data, const double *x_free, const double *z_pinned,
                                           const double *weighted_radius, const double *fallback, double tiny,
                                           double *length, double *q);
SOFTSIM_API void softsim_pd_scatter_add(int64_t rows, const int64_t *indptr, const int64_t *indices,
                                        const double *data, const double *q, const double *b_in, double *b_out);
SOFTSIM_API void softsim_bsr3_matvec(int64_t block_rows, const int64_t *indptr, const int64_t *indices,
                                     const double *blocks, const double *x, double *y);
/* y (rows, 9) = S x for S (rows, entries) in CSR and x (entries, 9): the implicit solver's assembly of its energies'
 * Hessian blocks into its block pattern (implicit.c). */
SOFTSIM_API void softsim_csr9_matvecs(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                                      const double *x, double *y);
/* The implicit mass-spring solver's linear solve (block_cg.c): conjugate gradients on that matrix (block_rows x
 * block_rows blocks) preconditioned with d_inv (block_rows, 3, 3), the inverses of its diagonal blocks, from x (3
 * block_rows,) in place until |b - A x| <= max(tol |r0|, atol) or max_iterations; returns the iterations and writes
 * |b - A x| / |r0| to residual (0 for r0 = 0, 1 when |r0| <= atol). work: (4, 3 block_rows) scratch. */
SOFTSIM_API int64_t softsim_block_cg(int64_t block_rows, const int64_t *indptr, const int64_t *indices,
                                     const double *blocks, const double *d_inv, const double *b, double *x, double tol,
                                     double atol, int64_t max_iterations, double *work, double *residual);
/* The rotation-fixed SVD F = U diag(S) V^T of m 3x3 matrices (eigen3.c), structure of arrays: F, U, V (3, 3, m),
 * S (3, m); U and V rotations, S descending with only S_2 negative (an inverted F). */
SOFTSIM_API void softsim_rotation_svd(int64_t m, const double *F, double *U, double *S, double *V);
/* Projective Dynamics' per-tet targets (eigen3.c): that SVD, the singular values s closest to S with s0 s1 s2 = 1 and
 * the targets q (3 m, 3) = rows of U diag(w_s + w_v s) V^T; work (11, m) scratch. */
SOFTSIM_API void softsim_tet_targets(int64_t m, const double *F, const double *w_s, const double *w_v, double *U,
                                     double *S, double *V, double *s, double *work, double *q);
/* NEWTON's IPC contact (ipc_distance.c): the squared distances D (k,) of k point-triangle (kind 0: points x0,
 * triangles x1 x2 x3) or edge-edge pairs (kind 1: edges x0 x1 and x2 x3), every x (k, 3), with their distance types
 * (k,), gradients (k, 12) and Hessians (k, 12, 12) over the four points' coordinates; returns 0, or -1 for an unknown
 * kind. The PSD projection of k symmetric d x d matrices H (k, d, d) in place, 1 <= d <= 12 (else -1). */
SOFTSIM_API int64_t softsim_ipc_distance2(int64_t kind, int64_t k, const double *x0, const double *x1,
                                          const double *x2, const double *x3, int64_t *types, double *D, double *grad,
                                          double *hess);
SOFTSIM_API int64_t softsim_project_psd(int64_t k, int64_t d, double *H);
/* NEWTON's contact distances and CCD (ipc_ccd.c): the distances (k,) of k point-triangle (kind 0) or edge-edge
 * (kind 1) pairs x0..x3 (k, 3) each; the times of impact toi (n,) in [0, 1] (inf: none) of n pairs moving linearly
 * from s0..s3 to e0..e3 (n, 3) each, within min_distance + tolerance [m], after at most max_rounds advancements.
 * Both return 0, or -1 for an unknown kind. */
SOFTSIM_API int64_t softsim_ipc_gaps(int64_t kind, int64_t k, const double *x0, const double *x1, const double *x2,
                                     const double *x3, double *distance);
SOFTSIM_API int64_t softsim_ipc_ccd(int64_t kind, int64_t n, const double *s0, const double *s1, const double *s2,
                                    const double *s3, const double *e0, const double *e1, const double *e2,
                                    const double *e3, double min_distance, double tolerance, int64_t max_rounds,
                                    double *toi);

#endif
