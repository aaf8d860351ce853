"""Sewing and shrinking a cloth: which edges are seams, where the seams close, and shrunk rest lengths.

Sewing (``config.use_sewing``): the loose edges of a cloth, the edges in no face, are seams. Each pulls its two ends
together to zero length with at most ``config.sewing_force`` N (0 = no cap), with the body's ``config.stiffness``
(``energies/sewing.py``, ``constraints/sewing.py``, PD's ``projective.constraints.SewingSprings``); a seam is then no
spring of its modelled length any more. Self-collision treats what is close once the seams are closed as
neighbours (``sewn_positions``), and pin tethers measure distances along the mesh with seams of no length.

Shrinking (``shrink_rest_lengths``): every edge's rest length times 1 - shrink w_e, w_e the mean of its two ends'
weights (1 without a vertex group). A uniform shrink scales the rest shape, which keeps every bending rest angle;
the bending terms read angles from the rest positions, so they stay as modelled.
"""
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

SEAM_LENGTH = 1e-9
"""Length [m] a seam stands for in distances measured along the mesh (a graph edge of length 0 would be no edge)."""


def loose_edges(model) -> np.ndarray:
    """(edge_count,) bool: the model's edges that are no side of any of its triangles (a body without faces has
    none: a rope is no seam)."""
    edges = np.sort(np.asarray(model.edge_indices, np.int64).reshape(-1, 2), axis=1)
    triangles = np.asarray(model.triangle_indices, np.int64).reshape(-1, 3)
    if len(triangles) == 0 or len(edges) == 0:
        return np.zeros(len(edges), bool)
    sides = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    n = int(max(edges.max(), sides.max())) + 1
    return ~np.isin(edges[:, 0] * n + edges[:, 1], sides[:, 0] * n + sides[:, 1])


def seam_edges(model, config) -> np.ndarray:
    """(edge_count,) bool: the seams of a cloth with ``config.use_sewing`` (its loose edges), all False otherwise."""
    if not getattr(config, "use_sewing", False) or model.tet_count:
        return np.zeros(model.edge_count, bool)
    return loose_edges(model)


def seam_force(config) -> float:
    """A seam's force cap [N]: ``config.sewing_force``, inf for 0 (no cap)."""
    force = float(getattr(config, "sewing_force", 0.0))
    return force if force > 0.0 else np.inf


def sewn_positions(model, seams) -> np.ndarray:
    """The rest positions (n, 3) with every group of particles joined by seams at the group's mean: where the seams
    close. Pairs closer than the self-collision distance there are neighbours, not collisions."""
    x = model.rest_positions.copy()
    pairs = model.edge_indices[seams]
    if len(pairs) == 0:
        return x
    n = model.particle_count
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    count, label = connected_components(graph, directed=False)
    size = np.bincount(label, minlength=count).astype(float)
    mean = np.stack([np.bincount(label, x[:, k], minlength=count) for k in range(3)], axis=1) / size[:, None]
    joined = size[label] > 1
    x[joined] = mean[label[joined]]
    return x


def with_seams_closed(model, seams):
    """``model`` with its seams' rest lengths at SEAM_LENGTH: for distances along the mesh (pin tethers)."""
    if not seams.any():
        return model
    return replace(model, edge_rest_length=np.where(seams, SEAM_LENGTH, model.edge_rest_length))


def shrink_factors(edge_indices, shrink: float, vertex_weights=None) -> np.ndarray:
    """(e,) rest-length factors 1 - shrink w_e, w_e the mean of the edge's ends' weights (1 without weights)."""
    edges = np.asarray(edge_indices, np.int64).reshape(-1, 2)
    if vertex_weights is None:
        w = np.ones(len(edges))
    else:
        weights = np.asarray(vertex_weights, np.float64)
        w = 0.5 * (weights[edges[:, 0]] + weights[edges[:, 1]])
    return 1.0 - float(shrink) * w


def shrink_rest_lengths(model, shrink: float, vertex_weights=None):
    """``model`` with every edge's rest length scaled by ``shrink_factors`` (shrink 0.1: 10% shorter; negative
    grows). vertex_weights (n,) in [0, 1] or None. Raises ValueError where a factor is not positive."""
    if shrink == 0.0:
        return model
    factor = shrink_factors(model.edge_indices, shrink, vertex_weights)
    if not np.all(factor > 0.0):
        raise ValueError(f"shrink {shrink:g} leaves {int(np.sum(factor <= 0.0))} edge(s) with no length")
    return replace(model, edge_rest_length=model.edge_rest_length * factor)
