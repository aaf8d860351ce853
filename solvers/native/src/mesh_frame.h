/* Still mesh colliders in a cloth's whole-frame call (mesh_frame.c; binding solvers/native/mesh_frame.py).
 *
 * Every field is 8 bytes (int64_t, double or a pointer): mesh_frame.py mirrors both layouts field by field. The
 * binding validates every array and index once, owns every buffer, and grows the pair buffers when a call returns
 * status 3 (SoftsimMeshFrame.needs).
 */
#ifndef SOFTSIM_MESH_FRAME_H
#define SOFTSIM_MESH_FRAME_H

#include "softsim_native.h"

/* One mesh collider standing still through the frame (MeshCollider with start None and travel 0). */
typedef struct {
    int64_t row;        /* its row in the collider table (kind SOFTSIM_KIND_MESH, friction in [2]) */
    int64_t m, t;       /* its vertices and triangles */
    const double *vertices;     /* (m, 3) */
    const int64_t *triangles;   /* (t, 3) */
    /* the triangles' grid (mesh_kernels._Grid of its pose) and the query stamps (1 + t) */
    const double *face_grid;
    const int64_t *face_dims, *face_cell_start, *face_entry;
    int64_t *face_stamp;
    /* MeshCollider.face_normals (t, 3) and _feature_normals: per vertex (m, 3), per triangle side (t, 3, 3) */
    const double *face_normals, *vertex_normals, *side_normals;
    double thickness, friction;
    /* corners (c,) and sharp edges (s, 2) (_Shared.corners, .edges), gridded as (c, c, c) and (a, b, b) */
    int64_t corner_count;
    const int64_t *corners;
    const double *corner_grid;
    const int64_t *corner_dims, *corner_cell_start, *corner_entry;
    int64_t *corner_stamp;
    int64_t sharp_count;
    const int64_t *sharp;
    const double *sharp_grid;
    const int64_t *sharp_dims, *sharp_cell_start, *sharp_entry;
    int64_t *sharp_stamp;
    /* the sharp edges' pieces: centres (3, p) (by axis) and largest radius (_Shared.edge_tree_for) */
    int64_t piece_count;
    const double *piece_centres;
    double piece_radius;
    /* the body's kept contact planes (kept_planes.KeptPlanes): x0 (n, 3), normal (n, 3), d0 (n,), clear (n,) */
    double *plane_x0, *plane_normal, *plane_d0, *plane_clear;
    /* the body's face-pair list (mesh_face_pairs._FaceList): list_state [valid, corner pairs, edge pairs],
     * reference (n, 3), allowance (n,), the pairs (capacity each kind) */
    int64_t *list_state;
    double *reference, *allowance;
    int64_t capacity;
    int64_t *pair_corner, *pair_triangle;
    double *pair_corner_d;
    int64_t *pair_edge, *pair_body_edge;
    double *pair_edge_d;
    /* the measured pushes (mesh_pushes._Pushes) of the corners (stencil width 3) and edges (width 2), capacity
     * rows each; at_depth (capacity,), at_slip (capacity, 3) the linearized ones of a later pass */
    int64_t *cp_stencil;
    double *cp_weights, *cp_direction, *cp_depth, *cp_slip, *cp_origin;
    int64_t *ep_stencil;
    double *ep_weights, *ep_direction, *ep_depth, *ep_slip, *ep_origin;
    double *at_depth, *at_slip;
    /* the list and planes as at the substep's start (restored when the substep must be run again) */
    double *save_reference, *save_allowance;
    int64_t *save_pair_corner, *save_pair_triangle;
    double *save_pair_corner_d;
    int64_t *save_pair_edge, *save_pair_body_edge;
    double *save_pair_edge_d;
    int64_t *save_state; /* (5,): [list saved this substep, its valid, corner pairs, edge pairs, planes saved] */
    double *save_planes; /* (n, 8): x0, normal, d0, clear */
    /* A collider moving or deforming through the frame (moving 1; mesh_frame.py MOVING_IN_FRAME): its travel [m]
     * (_Shared.travel) and, per substep, the addresses of its poses (poses, (substeps, SOFTSIM_POSE_FIELDS): the end
     * pose's vertices, face, vertex and side normals, then the start pose's), copied into the fields above and the
     * start fields below at each substep. Its grids (above) are built on one pose of the frame, every other pose's
     * vertices within drift [m] of theirs there on each axis (mesh_query.h). A still collider: moving 0, travel 0,
     * drift 0, the start fields its own pose's. */
    int64_t moving;
    double travel;
    const int64_t *poses;
    const double *start_vertices, *start_face_normals, *start_vertex_normals, *start_side_normals;
    const double *start_face_grid;
    const int64_t *start_face_dims, *start_face_cell_start, *start_face_entry;
    double drift;
    /* A moving collider's certificates of its nearest triangles (mesh_query.h MeshCertificates), kept through the
     * frame: per particle cert_tri, cert_pose (n,), cert_x (n, 3), cert_lower (n,) of the points' nearest at x and
     * the end pose, side_tri .. side_lower the same of their x_prev at the start pose (the side of a point that may
     * have crossed); pose_shift (substeps + 1,) the running sum of the poses' largest vertex moves, pose 0 the first
     * substep's start and pose k + 1 substep k's end (NaN until mesh_frame.c measures it; [0] = 0); cert_counts (2,)
     * answers certified and queried; cert_tri2, cert_rest, side_tri2, side_rest (n,) the runners-up and the bounds
     * on the rest. Null for a still collider. pose_index: the asking substep (pose_of). */
    int64_t pose_index;
    int64_t *cert_tri, *cert_pose;
    double *cert_x, *cert_lower;
    int64_t *side_tri, *side_pose;
    double *side_x, *side_lower, *pose_shift;
    int64_t *cert_counts;
    int64_t *cert_tri2, *side_tri2;
    double *cert_rest, *side_rest;
    /* scratch of the allowances (mesh_frame.c): the boxes of the sharp edges' pieces in blocks, (6 * piece_count,) */
    double *piece_boxes;
    /* a still collider's first guesses (n,): each point's nearest triangle when last measured, tested first by the
     * next query of the point (mesh_closest_drift's hint; -1: none) */
    int64_t *nearest_hint;
    /* A moving collider whose normals are derived on first use (lazy 1; mesh_query.h MeshLazyPose): its pose table's
     * face, vertex and side fields address each pose's first face, vertex and edge normal in arrays (t, poses, 3),
     * (m, poses, 3) and (edge_count, poses, 3) (poses = substeps + 1: an element's normals of every pose side by
     * side); ready (t + edge_count, poses) holds each pose's face and edge flags, vertex_ready (m,) and asked (m,) the
     * vertices' (every pose's alike), missing (m,) and missing_count (1,) the vertex normals asked for before they were
     * ready; side_edge (t, 3), edge_start (edge_count + 1,) and edge_faces (3 t,) the edge of each triangle side and
     * the faces of each edge. lazy 0: the normals are the arrays themselves (the side field per triangle side). */
    int64_t lazy, edge_count;
    uint8_t *ready, *vertex_ready, *asked;
    int64_t *missing, *missing_count;
    const int64_t *side_edge, *edge_start, *edge_faces;
    /* A collider whose poses are a still collider's translated (translating 1; MeshCollider.translation): this struct
     * is that anchor's (still, its planes and face-pair list kept), asked in its own frame, the points less the
     * substep's offsets: offsets (substeps, 6) [m], each substep's end offset then start offset. */
    int64_t translating;
    const double *offsets;
    /* A still collider's box (6,) [m]: the lowest x, y, z of its vertices, then the highest (MeshBroadPhase.box);
     * null for a moving one. A body out of reach of it skips the collider's passes (mesh_frame.c body_far). */
    const double *bounds;
    /* the point that last lay within reach of that box on every axis (body_far tries it first; 0 as each frame's call
     * begins) */
    int64_t far_hint;
} SoftsimStillMesh;

#define SOFTSIM_POSE_FIELDS 8

/* The still mesh colliders of a frame and their shared scratch (n = the body's particles, t its triangles, e its
 * edges). */
typedef struct SoftsimMeshFrame {
    int64_t count;
    SoftsimStillMesh *meshes;
    /* settings: SEARCH_MARGIN, SIDE_MARGIN, SKIN, KEPT_DRIFT, LINEAR_DRIFT, REFRESH_SHARE, MAX_ALLOWANCE, FACE_PASSES,
     * CERTIFICATE_MARGIN */
    const double *settings;
    int64_t *needs; /* (2,): [mesh, pairs] of the last status 3 (pairs -1: a lazy collider's vertex normals missing) */
    int64_t *stale, *out_row, *out_tri, *out_interior, *crossing; /* (n,) */
    double *out_bary, *out_q, *out_d;                            /* (n, 3), (n, 3), (n,) */
    int64_t *side_row, *side_tri, *side_interior;                /* (n,) */
    double *side_bary, *side_q, *side_d, *side;                  /* (n, 3), (n, 3), (n,), (n,) */
    double *plane_d, *plane_n;                                   /* (n,), (n, 3) */
    double *sums, *counts;                                       /* (n, 3), (n,) */
    double *save_x, *save_v, *save_air;                          /* (n, 3), (n, 3), (2,) */
    int64_t *mark, *beyond;                                      /* (n,) */
    int64_t *tri_rows, *edge_rows;                               /* (t,), (e,) */
    double *tri_reach, *edge_reach;                              /* (t,), (e,) */
    /* moving colliders: 0 .. n-1, the contact rows' outputs and scratch (mesh_moving.c), the motion under points */
    int64_t *all_points, *m_row;                                 /* (n,), (n,) */
    double *m_d, *m_normal, *m_dist;                             /* (n,), (n, 3), (n,) */
    int64_t *m_work_i;                                           /* (6 n) */
    double *m_work_d, *motion;                                   /* (14 n), (n, 3) */
    /* per point, the triangle its last nearest-triangle query of a moving collider found (or anything: an index out
     * of the collider's range is no guess), tested first by the next (mesh_closest_drift's hint) */
    int64_t *m_hint; /* (n,) */
    /* a moving collider's planes of the step's first resolve, for its second (mesh_frame.c moving_contact): x (n, 3),
     * plane d (n,), normal (n, 3), distance to the surface (n,) (inf: none within the limit), the limit (1,), state
     * (4,): [recorded, collider index, vertices and start vertices addresses], and the rows asked again (n,) */
    double *memo_x, *memo_d, *memo_n, *memo_dist, *memo_limit;
    int64_t *memo_state, *memo_rows;
    /* a translating collider's frame: x and x_prev less its offsets, and x there before its face passes (n, 3) */
    double *own_x, *own_x_prev, *own_before;
} SoftsimMeshFrame;

#define SOFTSIM_KIND_SPHERE 1.0 /* contact.c KIND_SPHERE */

/* The substep loop's hooks (substep.c): the substep's start saved, the step's point contacts (analytic rows with
 * softsim_contacts_find, mesh rows from their kept planes, in table order, then each mesh's face-pair list at the
 * prediction), and the end-of-step push (vertices, the mesh faces, vertices again). find returns the contacts or -1
 * (a pair buffer is too small: the substep restored, needs[] set); finish returns the sweeps the step needs (x
 * untouched when more than 1) or -1 likewise. */
void softsim_mesh_frame_save(const SoftsimClothPlan *plan);
void softsim_mesh_frame_restore(const SoftsimClothPlan *plan);
int64_t softsim_mesh_frame_find(const SoftsimClothPlan *plan, const double *table);
int64_t softsim_mesh_frame_finish(const SoftsimClothPlan *plan, const double *table);
/* The step's friction (softsim_contacts_friction of the step's contacts; a moving mesh collider's against its
 * surface's motion). */
void softsim_mesh_frame_friction(const SoftsimClothPlan *plan, const double *table, int64_t count);

#endif
