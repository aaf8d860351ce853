"""Any triangle mesh as a collider (``MeshCollider``), open or closed, moving and deforming through the frame.

Bodies keep ``thickness`` from its triangles on both sides of the surface. What a vertex-only test misses is
covered too: the collider's corners and edges pressing into a body's faces (``resolve_faces``: corner against
triangle and edge against edge, position-level, as ``faces.py`` does for spheres).

Sides: which side of the surface a point belongs on is read from where it was at the step's start against its own
nearest triangle, relative to the normal of the feature that holds its nearest point (the triangle's normal inside
it, the angle-weighted pseudo-normal of an edge or a vertex on its border: Baerentzen and Aanaes 2005, exact for a
closed mesh), so a mesh must be consistently oriented (Blender's Recalculate Normals); a closed mesh keeps bodies
outside when its normals point out. (The triangle's own normal cannot tell a point level with a box's top, beside a
side face and 1e-11 m inside its plane, from one inside the box: such a cloth vertex resting on the rim was pushed
into the top.)

Distances: for a point x the exact unsigned distance to the nearest triangle (``primitives.point_triangle_distance``
on the candidates of a k-d tree over the centres of the triangles' pieces (``samples.Samples``: large triangles cut
into pieces about 25 cm across, so one big face does not widen every query): every triangle with a piece whose centre
lies within the nearest centre's distance plus the largest piece radius), computed for points within
``thickness + SEARCH_MARGIN`` of the surface; farther points report ``inf`` (nothing acts on them). The side a point
is on comes from where it was at the step's start (``contact``), so a body that a thin or fast collider went through
is put back on its own side; ``distance_and_normal`` alone (no history) points away from the nearest surface point.

Motion: the collider's vertices move linearly between its pose at the step's start (``start``) and its own pose; the
k-d tree is built once per pose read from Blender (once per frame) and shared by the interpolated substep poses, its
query widened by how far any vertex travels between them. CCD (``time_of_impact``) tests every point against the
triangles its swept segment can reach (``ccd.point_triangle_ccd`` on the relative motion).
"""
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.spatial import cKDTree

from .ccd import point_triangle_ccd
from .colliders import Collider
from .crossings import triangle_edges
from .mesh_barrier import MeshContactBarrier
from .primitives import _cross, closest_points_segments, point_triangle_closest
from .samples import Samples

SEARCH_MARGIN = 0.05
"""[m] Points farther than thickness + this from the surface get distance inf: contact, barriers and friction only ever
act within a step's motion of the surface, and CCD (``time_of_impact``) covers longer motions. (Every triangle within a
point's distance is a candidate, so the margin sets the cost on a finely tessellated collider.)"""
SIDE_MARGIN = 0.25
"""[m] A point near the surface at the step's end has its side read from its start position if that lay within
thickness + this of the surface (a step's motion); farther, it counts as on the normal side (outside a closed mesh)."""
SHARP_ANGLE = 10.0
"""[degrees] Collider edges whose faces bend by less than this take no part in the edge and corner tests
(``sharp_edges``)."""
FACE_PASSES = 4
"""Jacobi passes of ``resolve_faces`` per call (as ``faces.FACE_PASSES``)."""
SKIN = 0.03
"""[m] Candidate pairs are found this much farther than asked and kept until the points that asked have moved far
enough to use it up (``_Shared.pair_cache``, ``_Shared.face_cache``): the k-d tree joins, not the exact distances,
were most of the mesh collider's cost (a 31 x 31 XPBD cloth on a box asks ~8 times per substep)."""


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


def sharp_edges(vertices, triangles, min_angle: float = SHARP_ANGLE) -> np.ndarray:
    """The edges (e, 2) of a triangle mesh that can press into a body's face: borders (one triangle), non-manifold
    edges (more than two), and edges whose two triangles' normals differ by more than min_angle [degrees]. An edge
    between two nearly coplanar triangles stays within thickness of both (a 20 cm face of a body bent over a 10 degree
    edge sags 9 mm into it), so the vertex-face contacts cover it; a subdivided box keeps only its 12 edges' pieces."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if len(triangles) == 0:
        return np.zeros((0, 2), np.int64)
    corners = vertices[triangles]
    normal = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normal /= np.maximum(np.sqrt(_dot(normal, normal)), 1e-300)[:, None]
    half = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    owner = np.tile(np.arange(len(triangles)), 3)
    edges, inverse, count = np.unique(half, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(len(edges)))
    pair = count == 2
    n1, n2 = normal[owner[order[first[pair]]]], normal[owner[order[first[pair] + 1]]]
    flat = np.zeros(len(edges), bool)
    flat[pair] = _dot(n1, n2) >= np.cos(np.radians(min_angle))  # a knife edge (opposite normals) is the sharpest
    return edges[~flat]


class _Shared:
    """What every pose of one collider shares: its topology, the broad phase's pieces (``samples.Samples``) and the
    k-d tree of the pose it was built on."""

    def __init__(self, vertices, triangles):
        self.triangles = triangles
        sides = np.sort(np.stack([triangles[:, [1, 2]], triangles[:, [2, 0]], triangles[:, [0, 1]]], axis=1), axis=2)
        _, side_edge = np.unique(sides.reshape(-1, 2), axis=0, return_inverse=True)
        self.side_edge = side_edge.reshape(-1, 3)
        """(t, 3): an id of the edge opposite each triangle's corner k, shared by the triangles on that edge."""
        self.edges = sharp_edges(vertices, triangles)
        self.triangle_pieces = Samples(vertices, triangles)
        self.edge_pieces = Samples(vertices, self.edges)
        self.corners = np.unique(self.edges)
        self.tree = self.edge_tree = self.corner_tree = None
        self.sides = None
        """(the start pose's vertex array, x_prev, sides): the last ``MeshCollider._sides`` answer."""
        self.body_edges = (None, None)
        """(a body's triangles array, its edges): the last body ``resolve_faces`` saw (solvers pass the same array)."""
        self.travel = 0.0
        """[m] The most a vertex (so a piece's centre) moves between the tree's pose and any pose that queries it."""
        self.pair_cache = None
        """(x_ref (n, 3), covered (n,) [m], keys (k,) sorted point * t + triangle): point-triangle candidates of the
        point sets of one size ``_closest`` saw (``_near_pairs``): point i's keys hold every triangle with a point
        within covered[i] [m] of x_ref[i] (-inf: none asked yet)."""
        self.face_cache = None
        """(body triangles array, (thickness, travel) [m], x_ref (n, 3), corner pairs, edge pairs): ``corner_pairs`` and
        ``edge_pairs`` of the last ``resolve_faces``, found at x_ref within thickness + SKIN."""

    def tree_for(self, vertices):
        """The k-d tree over the triangles' pieces, built on the first pose that asks (once per frame)."""
        if self.tree is None:
            self.tree = cKDTree(self.triangle_pieces.centres(vertices))
        return self.tree

    def edge_tree_for(self, vertices):
        """The k-d tree over the edges' pieces and their largest radius [m], built on the first pose that asks."""
        if self.edge_tree is None:
            self.edge_tree = (cKDTree(self.edge_pieces.centres(vertices)), self.edge_pieces.radius(vertices))
        return self.edge_tree

    def corner_tree_for(self, vertices):
        """The k-d tree over the corners (``corners``), built on the first pose that asks."""
        if self.corner_tree is None:
            self.corner_tree = cKDTree(vertices[self.corners])
        return self.corner_tree


@dataclass
class MeshCollider(Collider):
    """A triangle mesh in world space; bodies stay ``thickness`` away from it on both sides."""

    vertices: np.ndarray
    """Vertex positions [m], shape (m, 3), world space."""
    triangles: np.ndarray
    """Vertex indices, shape (t, 3) int."""
    thickness: float = 0.0
    friction: float = 0.0
    name: str = ""
    start: object = None
    """The mesh at the start of its motion (same triangles), or None (``Collider.start``)."""
    shared: object = field(default=None, repr=False, compare=False)

    reaches_between_corners = True

    def __post_init__(self):
        self.vertices = np.ascontiguousarray(self.vertices, float).reshape(-1, 3)
        self.triangles = np.ascontiguousarray(self.triangles, np.int64).reshape(-1, 3)
        if self.shared is None:
            self.shared = _Shared(self.vertices, self.triangles)
        corners = self.vertices[self.triangles]
        self.radius = self.shared.triangle_pieces.radius(self.vertices)
        """[m] The largest radius of the broad phase's triangle pieces at this pose."""
        normal = _cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]) if len(corners) else np.zeros((0, 3))
        length = np.sqrt(_dot(normal, normal))
        self.face_normals = normal / np.where(length > 0.0, length, 1.0)[:, None]

    def _feature_normals(self):
        """The angle-weighted pseudo-normals (Baerentzen and Aanaes 2005) at this pose: (per vertex (m, 3), per
        triangle side (t, 3, 3), side k opposite corner k): at a vertex the incident faces' normals weighted by their
        angles there, on an edge the sum of its faces' normals, both normalised. Built on first use."""
        known = self.__dict__.get("_pseudo")
        if known is None:
            corners = self.vertices[self.triangles]
            angle = np.zeros((len(corners), 3))
            for k in range(3):
                u, w = corners[:, (k + 1) % 3] - corners[:, k], corners[:, (k + 2) % 3] - corners[:, k]
                cos = _dot(u, w) / np.maximum(np.sqrt(_dot(u, u) * _dot(w, w)), 1e-300)
                angle[:, k] = np.arccos(np.clip(cos, -1.0, 1.0))
            vertex = np.zeros_like(self.vertices)
            edge = np.zeros((int(self.shared.side_edge.max()) + 1 if len(corners) else 0, 3))
            for k in range(3):
                np.add.at(vertex, self.triangles[:, k], angle[:, k, None] * self.face_normals)
                np.add.at(edge, self.shared.side_edge[:, k], self.face_normals)
            for a in (vertex, edge):
                a /= np.maximum(np.sqrt(_dot(a, a)), 1e-300)[:, None]
            known = self.__dict__["_pseudo"] = (vertex, edge[self.shared.side_edge])
        return known

    def pseudo_normals(self, tris, bary):
        """The normal (k, 3) of the feature of triangles tris (k,) that holds the points with barycentric weights bary
        (k, 3): the face's normal inside, an edge's or a vertex's pseudo-normal (``_feature_normals``) on its border.
        (x - q) . n > 0 for the closest surface point q of x tells the outside of a closed, outward-oriented mesh at
        every feature (a point level with a box's top, beside its side face, is outside: the side face's own normal
        cannot say)."""
        normal = self.face_normals[tris].copy()
        zero = bary <= 1e-12
        count = zero.sum(axis=1)
        vertex, side = self._feature_normals()
        rows = np.flatnonzero(count == 1)
        if len(rows):
            normal[rows] = side[tris[rows], np.argmax(zero[rows], axis=1)]
        rows = np.flatnonzero(count >= 2)
        if len(rows):
            normal[rows] = vertex[self.triangles[tris[rows], np.argmax(bary[rows], axis=1)]]
        return normal

    # ----------------------------------------------------------------- motion

    def pose_differs(self, other) -> bool:
        return self.vertices.shape != other.vertices.shape or not np.array_equal(self.vertices, other.vertices)

    def moving_from(self, previous):
        moving = super().moving_from(previous if previous is not None and previous.vertices.shape == self.vertices.shape
                                     else None)
        if moving.start is not None:
            # One tree for the frame: built on this pose, queried from every pose in between.
            moving.start = replace(moving.start, shared=moving.shared)
            shift = moving.start.vertices - moving.vertices
            moving.shared.travel = max(moving.shared.travel, float(np.sqrt(_dot(shift, shift).max())) if len(shift) else 0.0)
        return moving

    def interpolate(self, other, s: float):
        return replace(other, vertices=self.vertices + s * (other.vertices - self.vertices), start=None, shared=other.shared)

    # ----------------------------------------------------------------- nearest triangles

    def _pairs(self, x, reach):
        """Candidate (point, triangle) pairs (k,), (k,), each once: every triangle with a point of it within reach (n,)
        [m] of the point. One k-d tree join with the broad phase's pieces, widened by the largest piece radius and
        the travel since the tree's pose."""
        empty = np.zeros(0, np.int64)
        if len(x) == 0 or len(self.triangles) == 0:
            return empty, empty
        tree = self.shared.tree_for(self.vertices)
        radius = np.broadcast_to(np.asarray(reach, float) + self.radius + self.shared.travel, (len(x),))
        # Points joined in classes of similar radius (within a factor 2): one far point must not widen every query.
        size_class = np.floor(np.log2(radius / max(float(radius.min()), 1e-9))).astype(np.int64)
        keys = []
        for c in np.unique(size_class):
            rows = np.flatnonzero(size_class == c)
            found = cKDTree(x[rows]).sparse_distance_matrix(tree, float(radius[rows].max()), output_type="ndarray")
            points, pieces = rows[found["i"].astype(np.int64)], found["j"].astype(np.int64)
            keep = found["v"] <= radius[points]
            keys.append(points[keep] * len(self.triangles) + self.shared.triangle_pieces.owner[pieces[keep]])
        key = np.unique(np.concatenate(keys))
        return key // len(self.triangles), key % len(self.triangles)

    def _bounds(self):
        """Each triangle's bounding sphere at this pose: (centres (t, 3), radii (t,)) [m]. Built on first use."""
        known = self.__dict__.get("_spheres")
        if known is None:
            corners = self.vertices[self.triangles]
            centre = corners.mean(axis=1)
            known = self.__dict__["_spheres"] = (centre, np.sqrt(((corners - centre[:, None]) ** 2).sum(axis=2).max(axis=1)))
        return known

    def _near_pairs(self, x, near, need):
        """(rows into near (k,), triangles (k,)), sorted by row: a superset of the triangles within need (k,) [m] of
        the points x[near], with no triangle whose bounding sphere lies farther.

        Broad phase kept per point in ``_Shared.pair_cache`` for point sets of x's size: a point whose need plus its
        motion m since its entry was found still lies within what the entry covered reuses it (a triangle within r
        of x lies within r + m of where x was); the others are found anew (``_pairs``) within need + SKIN and replace
        their entries. Every solver step asks for the whole body several times from nearly the same positions
        (contact constraints, the vertex projections before and after the face push, the sides at the step's
        start). The bounding spheres then drop what the skin added, before the exact distances."""
        count = len(self.triangles)
        cache = self.shared.pair_cache
        if cache is None or cache[0].shape != x.shape:
            if cache is not None and len(x) < len(cache[0]):
                return self._pairs(x[near], need)  # a few points (friction's motion) keep the body's entries
            cache = self.shared.pair_cache = (np.zeros_like(x), np.full(len(x), -np.inf), np.zeros(0, np.int64))
        x_ref, covered, keys = cache
        moved = x[near] - x_ref[near]
        miss = need + np.sqrt(_dot(moved, moved)) > covered[near]
        if miss.any():
            again = near[miss]
            rows, tris = self._pairs(x[again], need[miss] + SKIN)  # every triangle with a point within that
            stale = np.zeros(len(x), bool)
            stale[again] = True
            keys = np.sort(np.concatenate([keys[~stale[keys // count]], again[rows] * count + tris]))
            x_ref[again] = x[again]
            covered[again] = need[miss] + SKIN
            self.shared.pair_cache = (x_ref, covered, keys)
        position = np.full(len(x), -1)
        position[near] = np.arange(len(near))
        found = keys[position[keys // count] >= 0]
        rows, tris = position[found // count], found % count
        centre, radius = self._bounds()
        gap = x[near][rows] - centre[tris]
        keep = np.sqrt(_dot(gap, gap)) - radius[tris] <= need[rows] * (1.0 + 1e-12) + 1e-12
        return rows[keep], tris[keep]

    def _closest(self, x, margin: float = None, among=None):
        """For every point (of the rows ``among`` of x, default all) within thickness + margin (default
        SEARCH_MARGIN) [m]: its nearest triangle. Returns (rows of x (k,), triangle (k,), bary (k, 3), closest point
        (k, 3), unsigned distance (k,), interior (k,) bool)."""
        if len(self.triangles) == 0 or len(x) == 0 or (among is not None and len(among) == 0):
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, bool)
        tree = self.shared.tree_for(self.vertices)
        if among is None:
            nearest, _ = tree.query(x)
        else:  # the other rows can never count as near
            nearest = np.full(len(x), np.inf)
            nearest[among] = tree.query(x[among])[0]
        # The nearest piece's centre lies on the surface, so it bounds the distance from above (plus the travel since
        # the tree's pose); every triangle that can be nearer has a piece whose centre lies within that bound plus the
        # largest piece radius (``_pairs`` adds it).
        limit = self.thickness + (SEARCH_MARGIN if margin is None else margin)
        near = np.flatnonzero(nearest - self.radius - self.shared.travel <= limit)
        if len(near) == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, bool)
        rows, tris = self._near_pairs(x, near, np.minimum(nearest[near] + self.shared.travel, limit))
        corners = self.vertices[self.triangles[tris]]
        p = x[near][rows]
        bary, interior = point_triangle_closest(p, corners[:, 0], corners[:, 1], corners[:, 2])
        q = np.einsum("kj,kjd->kd", bary, corners)
        d = np.sqrt(_dot(p - q, p - q))
        order = np.lexsort((d, rows))
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
        keep = d[first] <= limit
        first = first[keep]
        return near[rows[first]], tris[first], bary[first], q[first], d[first], interior[first]

    # ----------------------------------------------------------------- the protocol

    def surface_distance(self, x):
        d = np.full(len(x), np.inf)
        n = np.zeros((len(x), 3))
        n[:, 2] = 1.0
        rows, _, _, q, dist, _ = self._closest(x)
        d[rows] = dist
        r = x[rows] - q
        n[rows] = r / np.where(dist > 0.0, dist, 1.0)[:, None]
        return d, n

    def distance_and_normal(self, x, pad2=None):
        d, n = self.surface_distance(x)
        return d - self.thickness, n

    def distance(self, x, pad2=None):
        return self.distance_and_normal(x)[0]

    def contact(self, x, x_prev, pad2=None):
        """The contact plane on the side each point came from. The side s is where x_prev lay against its own nearest
        triangle at the start pose: s = sign((x_prev - q0) . N0), N0 the pseudo-normal of the feature holding q0
        (``pseudo_normals``), a label that means "the normal side" or "the other side" of a consistently oriented mesh
        (the outside of a closed mesh whose normals point out). At the end pose, with q the nearest surface point of
        x on triangle N: inside that triangle's prism the plane's normal is s N; beside it, the direction from q to
        the point, unless that points to the other side of q's feature (then s N)."""
        d = np.full(len(x), np.inf)
        n = np.zeros((len(x), 3))
        n[:, 2] = 1.0
        # A point that went into a closed collider during the step lies within its own motion of the surface.
        moved = x - x_prev
        reach = float(np.sqrt(_dot(moved, moved).max())) + self.shared.travel if len(x) else 0.0
        rows, tris, bary, q, dist, interior = self._closest(x, max(SEARCH_MARGIN, reach))
        if len(rows) == 0:
            return d, n
        side = self._sides(x_prev, rows)
        face = side[:, None] * self.face_normals[tris]
        r = x[rows] - q
        away = r / np.where(dist > 0.0, dist, 1.0)[:, None]
        # Beside the triangle the point is on its own side when it is so against the nearest feature's pseudo-normal.
        use_face = interior | (dist <= 0.0) | (_dot(away, self.pseudo_normals(tris, bary)) * side < 0.0)
        normal = np.where(use_face[:, None], face, away)
        n[rows] = normal
        d[rows] = _dot(r, normal) - self.thickness
        return d, n

    def _sides(self, x_prev, rows):
        """The side (k,) (+1: the normal side, -1: the other; +1 where no triangle is within SIDE_MARGIN) that the
        points x_prev[rows] lie on at the start pose, against their own nearest triangle there. Kept per point for the
        last x_prev: a step asks for the contacts of the same start positions several times."""
        start = self if self.start is None else self.start
        known = self.shared.sides
        if known is None or known[0] is not start.vertices or not np.array_equal(known[1], x_prev):
            known = (start.vertices, x_prev.copy(), np.full(len(x_prev), np.nan))
            self.shared.sides = known
        side = known[2]
        todo = rows[np.isnan(side[rows])]
        if len(todo):
            side[todo] = 1.0
            found, tris, bary, q, _, _ = start._closest(x_prev, SIDE_MARGIN, among=todo)
            normal = start.pseudo_normals(tris, bary)
            side[found] = np.where(_dot(x_prev[found] - q, normal) < 0.0, -1.0, 1.0)
        return side[rows]

    def motion(self, x):
        out = np.zeros_like(x)
        if self.start is None:
            return out
        rows, tris, bary, _, _, _ = self._closest(x)
        moved = self.vertices[self.triangles[tris]] - self.start.vertices[self.triangles[tris]]
        out[rows] = np.einsum("kj,kjd->kd", bary, moved)
        return out

    def time_of_impact(self, x, dx):
        """First s >= 0 (inf: none within the step, s <= 1) at which x + s dx comes within thickness of a triangle
        moving from ``start`` to here (``ccd.point_triangle_ccd`` on candidate pairs)."""
        toi = np.full(len(x), np.inf)
        start = self if self.start is None else self.start
        if len(x) == 0 or len(self.triangles) == 0:
            return toi
        reach = np.sqrt(_dot(dx, dx)) + self.thickness
        rows, tris = self._pairs(x, reach)
        if len(rows) == 0:
            return toi
        a0, a1 = start.vertices[self.triangles[tris]], self.vertices[self.triangles[tris]]
        hit = point_triangle_ccd(x[rows], a0[:, 0], a0[:, 1], a0[:, 2], x[rows] + dx[rows], a1[:, 0], a1[:, 1], a1[:, 2])
        np.minimum.at(toi, rows, hit)
        return toi

    # ----------------------------------------------------------------- corners and edges against a body's faces

    def _body_edges(self, triangles):
        known, edges = self.shared.body_edges
        if known is not triangles:
            edges = triangle_edges(triangles)
            self.shared.body_edges = (triangles, edges)
        return edges

    def face_barrier(self, triangles, kappa, d_hat):
        return MeshContactBarrier(self, triangles, self._body_edges(triangles), kappa, d_hat)

    def move_faces_out(self, x, inv_mass, triangles, reach):
        # The side of each pair is read at the collider's start pose with the body held still (x_prev = x).
        replace(self, thickness=0.5 * reach, friction=0.0).resolve_faces(x, x, inv_mass, triangles, passes=8)

    def resolve_faces(self, x, x_prev, inv_mass, triangles, passes=None) -> int:
        """Push a body's triangles (t, 3) off the collider's corners and its edges off the collider's edges, in place
        on x, to ``thickness`` on the side they came from (x_prev); returns the pairs found in the first pass.

        Corner c against body triangle (x_a, x_b, x_c) with closest point q = sum_k b_k x_k: gap g = s n . (c - q) for
        the face normal n and the side s at the step's start; a triangle nearer than thickness moves by
        dx_k = -b_k w_k / (sum_j b_j^2 w_j) (thickness - g) s n (w = inv_mass; pinned corners do not move). Edge
        against edge: the same with the closest points of the two segments and the side of their common normal. All
        pairs of a pass are applied at once, each particle taking the mean of its corrections (Jacobi)."""
        if len(triangles) == 0 or len(self.triangles) == 0:
            return 0
        start = self if self.start is None else self.start
        edges = self._body_edges(triangles)
        found = 0
        for k in range(FACE_PASSES if passes is None else passes):
            moved = self._push_corners(x, x_prev, inv_mass, triangles, edges, start) + self._push_edges(x, x_prev, inv_mass, triangles, edges, start)
            if k == 0:
                found = moved
            if moved == 0:
                break
        return found

    def edge_pairs(self, x, edges, reach: float):
        """Candidate pairs (collider edge (k,), body edge (k,)), each once, of the collider's edges and a body's edges
        (e, 2) at x that may come within reach [m]: the body edges' midpoints joined with the collider edges' pieces
        (``samples.Samples``) in one k-d tree join."""
        empty = np.zeros(0, np.int64)
        if len(edges) == 0 or len(self.shared.edges) == 0:
            return empty, empty
        a, b = x[edges[:, 0]], x[edges[:, 1]]
        half = 0.5 * np.sqrt(_dot(b - a, b - a))
        tree, piece_radius = self.shared.edge_tree_for(self.vertices)
        # The pieces' radius at the tree's pose; a deforming collider's pieces may grow by up to twice the travel.
        found = tree.sparse_distance_matrix(cKDTree(0.5 * (a + b)), reach + piece_radius + 3.0 * self.shared.travel
                                            + float(half.max()), output_type="ndarray")
        count = len(edges)
        key = np.unique(self.shared.edge_pieces.owner[found["i"].astype(np.int64)] * count + found["j"].astype(np.int64))
        return key // count, key % count

    def corner_pairs(self, x, triangles, reach: float):
        """Candidate pairs (corner (k,) (an index into ``shared.corners``), body triangle (k,)) of the collider's
        corners and a body's triangles (t, 3) at x that may come within reach [m]: one k-d tree join of the corners
        with the triangles' bounding spheres."""
        empty = np.zeros(0, np.int64)
        if len(triangles) == 0 or len(self.shared.corners) == 0:
            return empty, empty
        body = x[triangles]
        centre = body.mean(axis=1)
        radius = np.sqrt(((body - centre[:, None]) ** 2).sum(axis=2).max(axis=1))
        found = self.shared.corner_tree_for(self.vertices).sparse_distance_matrix(
            cKDTree(centre), reach + float(radius.max()) + self.shared.travel, output_type="ndarray")
        ci, ti = found["i"].astype(np.int64), found["j"].astype(np.int64)
        keep = found["v"] <= reach + radius[ti] + self.shared.travel
        return ci[keep], ti[keep]

    def _face_pairs(self, x, triangles, edges):
        """(corner pairs, edge pairs) of ``corner_pairs`` and ``edge_pairs`` within thickness at x, or supersets:
        from ``_Shared.face_cache`` while no point has moved more than SKIN / 3 from where they were found within
        thickness + SKIN (a triangle's bounding sphere, an edge's midpoint and half length then change by at most
        SKIN together); else found anew and cached."""
        cache = self.shared.face_cache
        if cache is not None and cache[0] is triangles and cache[1] == (self.thickness, self.shared.travel) and cache[2].shape == x.shape:
            moved = x - cache[2]
            if float(_dot(moved, moved).max(initial=0.0)) <= (SKIN / 3.0) ** 2:
                return cache[3], cache[4]
        pairs = self.corner_pairs(x, triangles, self.thickness + SKIN), self.edge_pairs(x, edges, self.thickness + SKIN)
        self.shared.face_cache = (triangles, (self.thickness, self.shared.travel), x.copy()) + pairs
        return pairs

    def _push_corners(self, x, x_prev, inv_mass, triangles, edges, start):
        corners = self.shared.corners
        c = self.vertices[corners]
        ci, ti = self._face_pairs(x, triangles, edges)[0]
        if len(ci) == 0:
            return 0
        tri = triangles[ti]
        a, b, cc = x[tri[:, 0]], x[tri[:, 1]], x[tri[:, 2]]
        p = c[ci]
        bary, interior = point_triangle_closest(p, a, b, cc)
        q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * cc
        normal = _cross(b - a, cc - a)
        normal /= np.maximum(np.sqrt(_dot(normal, normal)), 1e-300)[:, None]
        # Side at the step's start: the corner where it was against the triangle where it was.
        pa, pb, pc = x_prev[tri[:, 0]], x_prev[tri[:, 1]], x_prev[tri[:, 2]]
        q_prev = bary[:, :1] * pa + bary[:, 1:2] * pb + bary[:, 2:] * pc
        n_prev = _cross(pb - pa, pc - pa)
        corner_start = start.vertices[corners][ci]
        side = np.where(_dot(corner_start - q_prev, n_prev) < 0.0, -1.0, 1.0)
        facing = side[:, None] * normal
        r = p - q
        dist = np.sqrt(_dot(r, r))
        # Inside the triangle's prism the gap is along the face normal; beside it, the distance to the closest point
        # on its border, if the corner is on its own side (beyond the plane it is the neighbouring face's business).
        gap = np.where(interior, _dot(r, facing), dist)
        direction = np.where(interior[:, None], -facing, -r / np.maximum(dist, 1e-300)[:, None])
        depth = np.where(interior | (_dot(r, facing) >= 0.0), self.thickness - gap, 0.0)
        return self._apply(x, inv_mass, tri, bary, direction, depth, (q - q_prev) - (p - corner_start))

    def _push_edges(self, x, x_prev, inv_mass, triangles, edges, start):
        mine = self.shared.edges
        p1, q1 = self.vertices[mine[:, 0]], self.vertices[mine[:, 1]]
        ei, bi = self._face_pairs(x, triangles, edges)[1]
        if len(ei) == 0:
            return 0
        body = edges[bi]
        a, b = x[body[:, 0]], x[body[:, 1]]
        s, t, interior = closest_points_segments(p1[ei], q1[ei], a, b)
        keep = interior
        if not keep.any():
            return 0
        ei, body, s, t, a, b = ei[keep], body[keep], s[keep], t[keep], a[keep], b[keep]
        d1, d2 = q1[ei] - p1[ei], b - a
        normal = _cross(d1, d2)
        length = np.sqrt(_dot(normal, normal))
        ok = length > 1e-12 * np.sqrt(_dot(d1, d1) * _dot(d2, d2))
        if not ok.any():
            return 0
        ei, body, s, t, a, b, normal, length = ei[ok], body[ok], s[ok], t[ok], a[ok], b[ok], normal[ok], length[ok]
        normal /= length[:, None]
        # Side: the collider edge's point against the body edge's point at the step's start, along the same normal.
        sp, sq = start.vertices[mine[ei, 0]], start.vertices[mine[ei, 1]]
        pa, pb = x_prev[body[:, 0]], x_prev[body[:, 1]]
        side = np.where(_dot((sp + s[:, None] * (sq - sp)) - (pa + t[:, None] * (pb - pa)), normal) < 0.0, -1.0, 1.0)
        collider_point = p1[ei] + s[:, None] * (q1[ei] - p1[ei])
        body_point = a + t[:, None] * (b - a)
        gap = side * _dot(collider_point - body_point, normal)
        weights = np.stack([1.0 - t, t], axis=1)
        slip = (body_point - (pa + t[:, None] * (pb - pa))) - (collider_point - (sp + s[:, None] * (sq - sp)))
        return self._apply(x, inv_mass, body, weights, -(side[:, None] * normal), self.thickness - gap, slip)

    def _apply(self, x, inv_mass, stencil, weights, direction, depth, slip):
        """Move the body points sum_k weights_k x_stencil_k of the pairs with depth > 0 by depth [m] along direction,
        less the friction on their slip (k, 3) [m] (the body point's motion over the step relative to the collider's
        point): its part across direction is taken off up to ``friction * depth``, as ``faces.py`` does for spheres.
        Mass-weighted over the stencil, Jacobi mean per particle, in place on x; returns the pairs moved."""
        hit = depth > 0.0
        w = inv_mass[stencil] * weights
        norm = np.einsum("kj,kj->k", weights, w)
        hit &= norm > 0.0
        if not hit.any():
            return 0
        stencil, w, norm, direction, depth = stencil[hit], w[hit], norm[hit], direction[hit], depth[hit]
        delta = depth[:, None] * direction
        if self.friction > 0.0:
            across = slip[hit] - _dot(slip[hit], direction)[:, None] * direction
            slide = np.sqrt(_dot(across, across))
            delta -= np.minimum(1.0, self.friction * depth / np.maximum(slide, 1e-15))[:, None] * across
        coef = w / norm[:, None]  # (k, s)
        flat = stencil.ravel()
        count = np.maximum(np.bincount(flat, (coef > 0.0).ravel(), minlength=len(x)), 1.0)
        for axis in range(3):
            x[:, axis] += np.bincount(flat, (coef * delta[:, axis, None]).ravel(), minlength=len(x)) / count
        return int(len(depth))
