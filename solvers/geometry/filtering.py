"""Delaunay tets of a point set, and the filters that keep good ones: degenerate tets and slivers."""
import numpy as np
from scipy.spatial import Delaunay, QhullError

from ..model import orient_tets, tet_volumes
from .measures import TetrahedralizeError, tet_quality

_DEGENERATE = 1e-3
"""Tets of lower quality are always dropped: they are numerically flat (e.g. four coplanar points)."""
_DROP_BUDGET = 0.005
"""Slivers are dropped only while their total volume stays within this fraction of the mesh volume."""


def delaunay_tets(points):
    """Delaunay tets (k, 4) int64 of points (p, 3); raises TetrahedralizeError when qhull fails (flat input)."""
    try:
        dt = Delaunay(points)
    except QhullError as exc:  # degenerate input: too few points, or all of them (nearly) in a plane
        raise TetrahedralizeError(
            f"the Delaunay triangulation failed ({exc.__class__.__name__}); the mesh is nearly flat: give it thickness"
        ) from exc
    return dt.simplices.astype(np.int64)


def _kept_tets(points, tets):
    """The inside tets, positively oriented, without degenerate ones: (tets (k, 4), quality (k,)).

    Raises TetrahedralizeError when none is left.
    """
    tets = orient_tets(points, tets)
    quality = tet_quality(points, tets)
    keep = quality >= _DEGENERATE
    if not keep.any():
        raise TetrahedralizeError(
            "nothing was inside the surface after tetrahedralization (self-intersections?); "
            "check the mesh for intersecting faces or raise the resolution"
        )
    return tets[keep], quality[keep]


def _drop_slivers(points, tets, quality, n, min_quality, budget):
    """Drop tets of quality < min_quality, worst first, within a volume budget [length^3].

    A dropped tet is restored when it was the best remaining tet of an input vertex (index < n) that
    would otherwise be left in no tet. Returns (tets, quality) of the kept tets.
    """
    bad = np.flatnonzero(quality < min_quality)
    if len(bad) == 0:
        return tets, quality
    bad = bad[np.argsort(quality[bad])]
    vol = tet_volumes(points, tets[bad])
    bad = bad[np.cumsum(vol) <= budget]
    drop = np.zeros(len(tets), bool)
    drop[bad] = True
    # Input vertices that had tets but would have none left: give each back its best dropped tet.
    count = np.bincount(tets[~drop].ravel(), minlength=len(points))
    corner_tet = np.repeat(bad, 4)
    corner_vertex = tets[bad].ravel()
    stranded = (corner_vertex < n) & (count[corner_vertex] == 0)
    if stranded.any():
        cv, ct = corner_vertex[stranded], corner_tet[stranded]
        order = np.lexsort((-quality[ct], cv))
        _, first = np.unique(cv[order], return_index=True)
        drop[ct[order][first]] = False
    return tets[~drop], quality[~drop]
