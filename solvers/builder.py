"""Builds a Model from plain arrays (what the Blender bridge reads off a mesh)."""
import numpy as np

from .model import Model, orient_tets, tet_volumes


class ModelError(ValueError):
    """The input cannot become a simulated body; the message says why and what to change."""


def unique_edges(edges: np.ndarray) -> np.ndarray:
    """Sorted, de-duplicated undirected edges, shape (edge_count, 2), int64; self-loops dropped."""
    edges = np.sort(np.asarray(edges, np.int64).reshape(-1, 2), axis=1)
    edges = edges[edges[:, 0] != edges[:, 1]]
    return np.unique(edges, axis=0)


def tet_edges(tets: np.ndarray) -> np.ndarray:
    """The six edges of every tet, de-duplicated, shape (edge_count, 2)."""
    tets = np.asarray(tets, np.int64).reshape(-1, 4)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    return unique_edges(np.concatenate([tets[:, list(p)] for p in pairs]))


def lumped_masses(vertices, edges, triangles, tets, total_mass: float) -> np.ndarray:
    """Particle masses [kg], shape (n,), summing to ``total_mass``.

    Every element spreads its measure evenly over its corners: tets their volume, triangles their area,
    edges that belong to no triangle or tet their length. A particle in no element gets the mean mass.
    The measures are of different units, so a body is lumped by its highest-dimensional elements first:
    tets if it has any, else triangles (plus loose edges by length scaled to the same mean density).
    """
    n = len(vertices)
    weight = np.zeros(n)
    if len(tets):
        vol = np.abs(tet_volumes(vertices, tets))
        weight += np.bincount(tets.ravel(), np.repeat(vol / 4.0, 4), minlength=n)
    else:
        if len(triangles):
            a, b, c = (vertices[triangles[:, k]] for k in range(3))
            area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
            weight += np.bincount(triangles.ravel(), np.repeat(area / 3.0, 3), minlength=n)
        in_face = np.zeros(n, bool)
        in_face[triangles.ravel()] = True
        loose = edges[~(in_face[edges[:, 0]] & in_face[edges[:, 1]])] if len(edges) else edges
        if len(loose):
            length = np.linalg.norm(vertices[loose[:, 0]] - vertices[loose[:, 1]], axis=1)
            loose_weight = np.bincount(loose.ravel(), np.repeat(length / 2.0, 2), minlength=n)
            if weight.sum() > 0:
                # Give loose edges the face mesh's mean mass per particle per unit of length.
                loose_weight *= weight[weight > 0].mean() / max(loose_weight[loose_weight > 0].mean(), 1e-300)
            weight += loose_weight
    if weight.sum() <= 0.0:
        raise ModelError("the mesh has no length, area or volume to carry its mass (all elements are degenerate)")
    weight[weight <= 0.0] = weight[weight > 0.0].mean()
    return weight * (total_mass / weight.sum())


def build_model(vertices, edges=None, triangles=None, tets=None, pinned=None, total_mass: float = 1.0,
                mass_distribution: str = "ELEMENT", quads=None, mass_weights=None, drawn_triangles=None) -> Model:
    """A Model from arrays.

    vertices: (n, 3) positions [m]; edges: (e, 2) vertex pairs (tet edges are added automatically);
    triangles: (t, 3); tets: (k, 4), re-oriented here to positive volume; pinned: (n,) bool mask
    (pinned particles get ``inv_mass = 0``); total_mass [kg] is spread over the particles by
    ``mass_distribution``: 'ELEMENT' lumps it by element measure (``lumped_masses``), 'UNIFORM' puts the
    same mass on every particle (Blender Cloth's vertex mass, and Li's solid-sim-tutorial).
    mass_weights: (n,) relative masses that replace the element lumping of 'ELEMENT' (a cage's share of its
    surface's volume, ``TetMesh.mass_weights``); ignored by 'UNIFORM'.
    quads: (q, 4) vertex loops of the mesh's quads, if it has any (their triangles must be among ``triangles``,
    split either way): self-collision then keeps both splits of every quad clear of the rest of the cloth
    (``Model.collision_triangles``).
    drawn_triangles: a solid's (tets given) mesh triangles as Blender draws them, over its vertices among the first
    particles; with ``quads`` (over the same vertices) both splits of every quad. Contact with other bodies keeps clear
    of them as well as of the tet boundary (``Model.collision_triangles``,
    ``collision.response.body_contact.surface_triangles``). Raises ModelError on input that cannot be simulated.
    """
    vertices = np.ascontiguousarray(vertices, np.float64).reshape(-1, 3)
    n = len(vertices)
    if n == 0:
        raise ModelError("the mesh has no vertices")
    if not np.all(np.isfinite(vertices)):
        raise ModelError("the mesh has vertices with non-finite coordinates")
    if not total_mass > 0.0:
        raise ModelError(f"mass must be positive, got {total_mass}")
    triangles = np.zeros((0, 3), np.int64) if triangles is None else np.asarray(triangles, np.int64).reshape(-1, 3)
    tets = np.zeros((0, 4), np.int64) if tets is None else np.asarray(tets, np.int64).reshape(-1, 4).copy()
    edges = np.zeros((0, 2), np.int64) if edges is None else np.asarray(edges, np.int64).reshape(-1, 2)
    if len(tets):
        tets = orient_tets(vertices, tets)
        edges = np.concatenate([edges, tet_edges(tets)])
    edges = unique_edges(edges) if len(edges) else edges
    if len(edges) == 0:
        raise ModelError("the mesh has no edges, so nothing holds its vertices together")
    if edges.max() >= n or (len(triangles) and triangles.max() >= n) or (len(tets) and tets.max() >= n):
        raise ModelError("an element refers to a vertex index that does not exist")
    quads = np.zeros((0, 4), np.int64) if quads is None else np.asarray(quads, np.int64).reshape(-1, 4)
    if len(quads) and quads.max() >= n:
        raise ModelError("a quad refers to a vertex index that does not exist")
    drawn = np.zeros((0, 3), np.int64) if drawn_triangles is None else np.asarray(drawn_triangles, np.int64).reshape(-1, 3)
    if len(drawn) and (not len(tets) or drawn.max() >= n):
        raise ModelError("drawn triangles are for a solid's vertices (tets and existing vertex indices)")
    faces = drawn if len(tets) else triangles
    if len(quads):
        collision = both_quad_splits(faces, quads)
    else:
        collision = drawn if len(tets) else np.zeros((0, 3), np.int64)
    rest_length = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    if np.any(rest_length <= 1e-12):
        raise ModelError(f"{int(np.sum(rest_length <= 1e-12))} edge(s) have zero length: merge by distance first")

    if mass_distribution == "UNIFORM":
        mass = np.full(n, total_mass / n)
    elif mass_distribution == "ELEMENT" and mass_weights is not None:
        weights = np.asarray(mass_weights, np.float64).reshape(-1)
        if len(weights) != n or not np.all(weights > 0.0):
            raise ModelError("mass_weights must hold one positive weight per vertex")
        mass = total_mass * weights / weights.sum()
    elif mass_distribution == "ELEMENT":
        mass = lumped_masses(vertices, edges, triangles, tets, total_mass)
    else:
        raise ValueError(f"mass_distribution must be 'ELEMENT' or 'UNIFORM', not {mass_distribution!r}")
    inv_mass = 1.0 / mass
    if pinned is not None:
        pinned = np.asarray(pinned, bool).reshape(-1)
        if len(pinned) != n:
            raise ModelError("the pin mask does not match the vertex count")
        inv_mass[pinned] = 0.0
    return Model(
        rest_positions=vertices.copy(),
        mass=mass,
        inv_mass=inv_mass,
        edge_indices=edges,
        edge_rest_length=rest_length,
        triangle_indices=triangles,
        collision_triangles=collision,
        tet_indices=tets,
        tet_rest_volume=tet_volumes(vertices, tets) if len(tets) else np.zeros(0),
    )


def both_quad_splits(triangles, quads) -> np.ndarray:
    """``triangles`` (t, 3) with both splits of every quad (q, 4) in place of the one among them, (t + 2q, 3).

    Each quad (a, b, c, d) gives (a, b, c), (a, c, d), (a, b, d), (b, c, d): the four faces of the tetrahedron its
    corners span, so a vertex kept outside all four never enters the space between the two splits."""
    quads = np.asarray(quads, np.int64).reshape(-1, 4)
    a, b, c, d = quads.T
    splits = np.concatenate([np.stack(abc, 1) for abc in ((a, b, c), (a, c, d), (a, b, d), (b, c, d))])
    return np.concatenate([triangles_not_in(triangles, splits), splits])


def triangles_not_in(triangles, others) -> np.ndarray:
    """The rows of ``triangles`` (t, 3) whose corners are not those of a row of ``others`` (k, 3), in any order."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    others = np.asarray(others, np.int64).reshape(-1, 3)
    base = int(max(triangles.max(initial=0), others.max(initial=0))) + 1

    def keys(t):  # one int64 per triangle, whatever the order of its corners
        t = np.sort(t, axis=1)
        return (t[:, 0] * base + t[:, 1]) * base + t[:, 2]

    return triangles[~np.isin(keys(triangles), keys(others))]


def grid_quads(n: int) -> np.ndarray:
    """Quads (a, a+1, a+n+1, a+n) of ``grid_cloth``'s vertex ordering, shape ((n-1)^2, 4); its triangles split
    each one along (a, a+n+1)."""
    j, i = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (j * n + i).ravel()
    return np.stack([a, a + 1, a + n + 1, a + n], axis=1)


def grid_cloth(n: int, size: float = 10.0, height: float = 0.0, diagonals: bool = True):
    """A square n x n grid in the plane z = height, centred on the origin: (vertices, edges, triangles).

    Vertex k = j * n + i sits at x = -size/2 + size*i/(n-1), y = -size/2 + size*j/(n-1). Each quad is
    split into two triangles; with ``diagonals`` their shared diagonal is an edge too (as in the
    GAMES103 lab, whose edges are those of its triangles).
    """
    t = np.linspace(-size / 2.0, size / 2.0, n)
    xx, yy = np.meshgrid(t, t)
    vertices = np.stack([xx.ravel(), yy.ravel(), np.full(n * n, height)], axis=1)
    j, i = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (j * n + i).ravel()
    b, c, d = a + 1, a + n + 1, a + n
    triangles = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    edge_list = [np.stack([a, b], 1), np.stack([a, d], 1), np.stack([b, c], 1), np.stack([d, c], 1)]
    if diagonals:
        edge_list.append(np.stack([a, c], 1))
    return vertices, unique_edges(np.concatenate(edge_list)), triangles


def ico_sphere(subdivisions: int = 2, radius: float = 1.0):
    """(vertices (n, 3) [m], triangles (t, 3) int64, faces outward) of a closed sphere: the icosahedron subdivided
    ``subdivisions`` times, every new vertex pushed onto the sphere (Blender's Ico Sphere). A test and bench mesh."""
    t = (1.0 + 5.0**0.5) / 2.0
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    vertices = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        midpoint, faces = {}, []
        for a, b, c in f:
            m = []
            for i, j in ((a, b), (b, c), (c, a)):
                key = (min(i, j), max(i, j))
                if key not in midpoint:
                    p = vertices[i] + vertices[j]
                    vertices.append(p / np.linalg.norm(p))
                    midpoint[key] = len(vertices) - 1
                m.append(midpoint[key])
            faces += [(a, m[0], m[2]), (b, m[1], m[0]), (c, m[2], m[1]), (m[0], m[1], m[2])]
        f = faces
    return radius * np.array(vertices), np.array(f, np.int64)
