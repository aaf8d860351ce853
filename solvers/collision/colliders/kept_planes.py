"""Contact planes kept between the queries of a mesh collider that stands still (``MeshCollider.contact``).

A position-level step asks a collider for the contact plane of every particle several times (the contact set at the
prediction, the vertex projection at the step's end, again after the face push), at every substep; a cloth lying on
a box moves a fraction of a millimetre between the asks, and the nearest-triangle search costs the same for each.
For a collider that does not move over the frame, a point's answer is a property of where the point is and of the
side it is on, so it is kept per point and reused, linearized, while the point stays close to where it was measured:

- near the surface (within thickness + the query's margin + SKIN when measured, on its own side, at unsigned
  distance u0 from the surface): the plane n . x >= n . x0 - d0 is kept while the point stays within KEPT_DRIFT *
  thickness of x0 and that drift plus its step's motion stays below u0 (no surface point lies within u0 of x0, so the
  point did not cross the surface: it came from the side it is on). Its signed distance d(x) = d0 + n . (x - x0)
  differs from the exact one by at most twice the drift (both are 1-Lipschitz in x and equal at x0) and is exact on a
  face's interior: a point held at d >= 0 stays at least (1 - 2 KEPT_DRIFT) * thickness from the surface.
- far (no triangle within thickness + margin + SKIN): reported far while its drift is less than the slack left.
- any other point (inside, on the other side of its plane than it came from; drifted; a new query's margin wider
  than the slack): measured anew, exactly, and kept from there.
"""
from dataclasses import dataclass

import numpy as np

from ..broad_phase.mesh_broad_phase import SKIN, _Slots
from ..narrow_phase.primitives import _dot

KEPT_DRIFT = 0.2
"""A kept plane serves a point while it stays within this times the thickness of where the plane was measured."""


@dataclass
class KeptPlanes:
    """The contact planes of the n points of one body (rows aligned with its particles), as last measured."""

    x0: np.ndarray
    """(n, 3) [m] where each point was measured."""
    normal: np.ndarray
    """(n, 3) the unit normal of its contact plane."""
    d0: np.ndarray
    """(n,) [m] its signed distance beyond the thickness along normal at x0; inf: far (no plane)."""
    clear: np.ndarray
    """(n,) [m] a lower bound on the unsigned distance from x0 to the surface (0: measure anew at every ask)."""

    @classmethod
    def unmeasured(cls, x):
        """Planes for the points x (n, 3) of a body, none measured yet."""
        normal = np.zeros((len(x), 3))
        normal[:, 2] = 1.0
        return cls(np.array(x, float), normal, np.full(len(x), np.inf), np.full(len(x), -np.inf))


def body_planes(collider, x) -> KeptPlanes:
    """The kept planes of the body whose points are at x (n, 3) against a still collider at its thickness: the
    asking body's (``mesh_broad_phase._Slots``: the planes last asked for nearest x), none measured yet if it has none."""
    thickness = collider.thickness
    kept = collider.shared.kept_planes
    if thickness not in kept:
        if len(kept) >= 4:  # a few thicknesses at most
            kept.clear()
        kept[thickness] = _Slots(lambda planes: planes.x0)
    planes = kept[thickness].nearest(x)
    if planes is None:
        planes = kept[thickness].add(KeptPlanes.unmeasured(x))
    return planes


def _no_planes(count: int):
    """``kept_contact``'s answer for ``count`` points with no plane: d inf (count,), n +z (count, 3)."""
    n = np.zeros((count, 3))
    n[:, 2] = 1.0
    return np.full(count, np.inf), n


def kept_contact(collider, x, x_prev, margin: float):
    """``MeshCollider.contact`` of a collider standing still through its frame: (d (n,) [m], n (n, 3)), d inf for points
    farther than thickness + margin [m] along their plane (module docstring)."""
    thickness = collider.thickness
    planes = body_planes(collider, x)
    if collider.far_from(x, thickness + (margin + SKIN)):
        # Nothing of the collider within the widest search below: no plane, and the kept ones stay as they are (each
        # is checked against its own x0 when the body comes near).
        return _no_planes(len(x))
    native = collider.shared.native  # the same passes in C (native/mesh_kernels.py), or None
    if native is not None:
        x, x_prev = np.ascontiguousarray(x, np.float64), np.ascontiguousarray(x_prev, np.float64)
        stale = native.kept_stale(planes, x, x_prev, KEPT_DRIFT * thickness, thickness + margin)
    else:
        shift, step = x - planes.x0, x - x_prev
        drift = np.sqrt(_dot(shift, shift))
        near = np.isfinite(planes.d0)
        valid = np.where(near, (drift <= KEPT_DRIFT * thickness) & (drift + np.sqrt(_dot(step, step)) < planes.clear),
                         planes.clear - drift > thickness + margin)
        stale = np.flatnonzero(~valid)
    if len(stale):
        wide = margin + SKIN
        rows, d, normal, dist = collider._contact_rows(x, x_prev, wide, stale)
        planes.x0[stale] = x[stale]
        planes.d0[stale] = np.inf
        planes.clear[stale] = thickness + wide  # no triangle within that
        planes.d0[rows], planes.normal[rows] = d, normal
        planes.clear[rows] = np.where(d + thickness > 0.0, dist, 0.0)  # 0: not on its own side, measured every time
    if native is not None:
        return native.kept_planes(planes, x, margin)
    d, n = _no_planes(len(x))
    rows = np.flatnonzero(np.isfinite(planes.d0))
    linear = planes.d0[rows] + _dot(x[rows] - planes.x0[rows], planes.normal[rows])
    rows, linear = rows[linear <= margin], linear[linear <= margin]
    d[rows], n[rows] = linear, planes.normal[rows]
    return d, n


__all__ = ["KEPT_DRIFT", "KeptPlanes", "body_planes", "kept_contact"]
