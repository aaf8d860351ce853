"""Points spread over a collider's edges or triangles, for a broad phase whose elements differ widely in size.

A k-d tree over element centres needs every query widened by the largest element's radius: one 2 m box face makes
every point within 2 m a candidate of every face. Elements are therefore cut, for the broad phase only, into
``divisions`` pieces per side (an edge into d segments, a triangle into d^2 similar triangles, Loop-style), each
represented by its centre; a piece's radius is its element's radius / d. A point within r of an element lies within
r + (piece radius) of some piece's centre, so a query widened by the largest piece radius finds every element.

Pieces are fixed by the topology and the sizes of the pose the samples are built on (barycentric weights); their
centres follow any later pose of the same mesh, as convex combinations of its vertices.
"""
from functools import lru_cache

import numpy as np

SPACING = 0.25
"""[m] Elements longer than this are cut into pieces about this long (about the mesh collider's search margin:
finer pieces only add k-d tree hits of the same triangles)."""
MAX_PIECES = 400_000
"""The spacing grows so that the pieces of one collider stay below this many."""


class Samples:
    """Pieces of the elements (k, s) (s = 2: edges, s = 3: triangles) of a mesh.

    owner (p,): the element of each piece; weights (p, s): its centre as barycentric weights of the element's
    corners; divisions (k,): pieces per side of each element."""

    def __init__(self, vertices: np.ndarray, elements: np.ndarray, spacing: float = SPACING):
        self.elements = np.asarray(elements, np.int64)
        k, s = self.elements.shape if self.elements.ndim == 2 else (0, 2)
        corners = vertices[self.elements]
        longest = np.zeros(k)
        for i in range(s):  # the element's longest side
            d = corners[:, (i + 1) % s] - corners[:, i]
            longest = np.maximum(longest, np.sqrt(np.einsum("ij,ij->i", d, d)))
        divisions = np.maximum(1, np.ceil(longest / spacing)).astype(np.int64)
        pieces = divisions if s == 2 else divisions**2
        if pieces.sum() > MAX_PIECES:
            scale = np.sqrt(pieces.sum() / MAX_PIECES) if s == 3 else pieces.sum() / MAX_PIECES
            divisions = np.maximum(1, np.ceil(longest / (spacing * scale))).astype(np.int64)
        self.divisions = divisions
        owners, weights = [], []
        for d in np.unique(divisions):
            members = np.flatnonzero(divisions == d)
            template = _edge_template(d) if s == 2 else _triangle_template(d)
            owners.append(np.repeat(members, len(template)))
            weights.append(np.tile(template, (len(members), 1)))
        self.owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
        self.weights = np.concatenate(weights) if weights else np.zeros((0, s))

    def centres(self, vertices: np.ndarray) -> np.ndarray:
        """The pieces' centres (p, 3) [m] at the pose ``vertices``."""
        return np.einsum("ps,psd->pd", self.weights, vertices[self.elements[self.owner]])

    def radius(self, vertices: np.ndarray) -> float:
        """[m] The largest piece's radius (centre to corner) at the pose ``vertices``."""
        if len(self.elements) == 0:
            return 0.0
        corners = vertices[self.elements]
        centre = corners.mean(axis=1)
        radius = np.sqrt(((corners - centre[:, None]) ** 2).sum(axis=2).max(axis=1))
        return float((radius / self.divisions).max())


@lru_cache(maxsize=64)
def _edge_template(d: int) -> np.ndarray:
    """Weights (d, 2) of the midpoints of an edge's d equal segments (read-only: kept for the next collider cut
    alike, a moving one's every frame)."""
    u = (np.arange(d) + 0.5) / d
    weights = np.stack([1.0 - u, u], axis=1)
    weights.flags.writeable = False
    return weights


@lru_cache(maxsize=64)
def _triangle_template(d: int) -> np.ndarray:
    """Weights (d^2, 3) of the centroids of the d^2 similar triangles a triangle is cut into (d per side; read-only,
    kept as ``_edge_template``'s)."""
    i, j = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
    up = (i + j) <= d - 1
    down = (i + j) <= d - 2
    u = np.concatenate([i[up] + 1.0 / 3.0, i[down] + 2.0 / 3.0]) / d
    v = np.concatenate([j[up] + 1.0 / 3.0, j[down] + 2.0 / 3.0]) / d
    weights = np.stack([1.0 - u - v, u, v], axis=1)
    weights.flags.writeable = False
    return weights
