"""Barycentric embedding of points in tets, so that a tet mesh can drive vertices that are not its own."""
import numpy as np
from scipy.spatial import cKDTree

from .measures import TetrahedralizeError


def _barycentric_frames(tet_vertices, tets):
    """Per tet: corner a (k, 3) and rows R (k, 3, 3) with lambda_1..3 = R @ (p - a); bad (k,) if flat.

    R's rows are (e2 x e3, e3 x e1, e1 x e2) / det with e_i = corner_i - a: the inverse of [e1 e2 e3].
    """
    p = tet_vertices[tets]
    a = p[:, 0]
    e1, e2, e3 = p[:, 1] - a, p[:, 2] - a, p[:, 3] - a
    rows = np.stack([np.cross(e2, e3), np.cross(e3, e1), np.cross(e1, e2)], axis=1)
    det = np.einsum("ij,ij->i", e1, rows[:, 0])
    scale = np.einsum("kij,kij->k", p - p.mean(1, keepdims=True), p - p.mean(1, keepdims=True)) ** 1.5
    bad = np.abs(det) <= 1e-12 * np.maximum(scale, 1e-300)
    rows /= np.where(bad, 1.0, det)[:, None, None]
    return a, rows, bad


def embed_points(points, tet_vertices, tets, candidates: int = 8):
    """Barycentric embedding of points in the tet containing them, or the nearest tet when outside.

    points (m, 3), tet_vertices (n, 3), tets (k, 4). Returns (tet_index (m,) int64, weights (m, 4)
    float64) with points == interpolate_embedded(tet_vertices, tets, tet_index, weights) to rounding,
    also outside the tets (weights are then partly negative, an affine extrapolation).

    Candidates are the tets with the nearest centroids (cKDTree); the one with the largest smallest
    barycentric coordinate wins (>= 0 means inside). Points not inside any candidate are retried with
    8x as many candidates, up to 512, before the least-outside candidate is accepted.
    """
    q = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    xv = np.ascontiguousarray(tet_vertices, np.float64).reshape(-1, 3)
    t = np.ascontiguousarray(tets, np.int64).reshape(-1, 4)
    if len(t) == 0:
        raise TetrahedralizeError("there are no tets to embed points in")
    a, rows, bad = _barycentric_frames(xv, t)
    tree = cKDTree(xv[t].mean(axis=1))
    index = np.zeros(len(q), np.int64)
    weights = np.zeros((len(q), 4))
    score = np.full(len(q), -np.inf)
    todo = np.arange(len(q))
    k = min(candidates, len(t))
    while len(todo):
        for s in range(0, len(todo), max(1, 262144 // k)):  # bound the (points, k, 4) temporaries
            sel = todo[s : s + max(1, 262144 // k)]
            _, cand = tree.query(q[sel], k=k)
            cand = cand.reshape(len(sel), k)
            lam123 = np.einsum("mkij,mkj->mki", rows[cand], q[sel, None, :] - a[cand])
            lam = np.concatenate([1.0 - lam123.sum(-1, keepdims=True), lam123], axis=-1)
            worst = np.where(bad[cand], -np.inf, lam.min(-1))
            best = np.argmax(worst, axis=1)
            pick = np.arange(len(sel))
            better = worst[pick, best] > score[sel]
            chosen = sel[better]
            index[chosen] = cand[pick, best][better]
            weights[chosen] = lam[pick, best][better]
            score[chosen] = worst[pick, best][better]
        if k >= min(512, len(t)):
            break
        todo = todo[score[todo] < -1e-9]
        k = min(8 * k, 512, len(t))
    if not np.all(np.isfinite(score)):
        raise TetrahedralizeError("every candidate tet is flat; the tet mesh is degenerate")
    return index, weights


def interpolate_embedded(x, tets, tet_index, weights) -> np.ndarray:
    """Positions (m, 3) of embedded points: sum_k weights[:, k] * x[tets[tet_index, k]].

    x (n, 3) current tet-mesh positions, tets (k, 4), tet_index (m,), weights (m, 4) from embed_points.
    """
    return np.einsum("mk,mkj->mj", weights, np.asarray(x)[np.asarray(tets)[tet_index]])


def _embed_nearby(points, tet_vertices, tets, candidates: int = 16):
    """Like ``embed_points`` but one pass over the nearest ``candidates`` tets (no widening search):
    good enough to measure how far points lie outside, and cheap for hundreds of thousands of points."""
    a, rows, bad = _barycentric_frames(tet_vertices, tets)
    tree = cKDTree(tet_vertices[tets].mean(axis=1))
    k = min(candidates, len(tets))
    index = np.empty(len(points), np.int64)
    weights = np.empty((len(points), 4))
    step = max(1, 262144 // k)
    for s in range(0, len(points), step):
        q = points[s : s + step]
        _, cand = tree.query(q, k=k)
        cand = cand.reshape(len(q), k)
        lam123 = np.einsum("mkij,mkj->mki", rows[cand], q[:, None, :] - a[cand])
        lam = np.concatenate([1.0 - lam123.sum(-1, keepdims=True), lam123], axis=-1)
        best = np.argmax(np.where(bad[cand], -np.inf, lam.min(-1)), axis=1)
        pick = np.arange(len(q))
        index[s : s + step] = cand[pick, best]
        weights[s : s + step] = lam[pick, best]
    return index, weights
