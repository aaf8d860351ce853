"""Role SOLID: a closed mesh becomes a tet mesh, simulated as a volume (no bpy calls: plain arrays in and out).

Two ways, chosen by ``Object.softsim.use_embedded``:
- Default: ``tetrahedralize`` fills the surface; the mesh's own vertices are the first particles, so the
  mesh's faces move with the simulated body (vertices the tetrahedralizer left in no tet are embedded). Other bodies
  keep clear of those faces as drawn as well as of the finer tet boundary (``drawn_faces``).
- Embedded: ``tetrahedralize_cage`` builds a coarse cage of tets around a dense mesh (a sculpt); only the
  cage is simulated and every mesh vertex follows the tet around it by its barycentric coordinates
  (Müller, Ten Minute Physics lesson 11). Cost depends on the cage resolution, not the mesh.

Tet meshes are cached per object, keyed by a hash of the world-space vertices and triangles and by the
mode and resolution, so repeated bakes, live resets and the Tetrahedralize button reuse them.
"""
import hashlib
from collections import OrderedDict

import numpy as np

from .. import solvers
from ..solvers.geometry import (
    TetrahedralizeError,
    interpolate_embedded,
    mesh_volume,
    tetrahedralize,
    tetrahedralize_cage,
)
from .bridge import InputError, read_body

_CACHE_SIZE = 8
_cache = OrderedDict()  # (object name, embedded, resolution, digest) -> TetMesh; never holds bpy data


def _digest(*arrays) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.data)
    return h.digest()


def _key(obj, body, settings):
    embedded = bool(settings.use_embedded)
    resolution = int(settings.embedded_resolution if embedded else settings.tet_resolution)
    return (obj.name, embedded, resolution, _digest(body.world_positions, body.triangles))


def has_tet_mesh(obj, matrix_world) -> bool:
    """Whether ``obj``'s tet mesh for its current mesh and settings is already built (cached)."""
    try:
        body = read_body(obj, matrix_world)
    except InputError:
        return False
    return _key(obj, body, obj.softsim) in _cache


def tet_mesh_for(obj, body, settings):
    """The cached (or newly built) TetMesh of ``obj``'s current world-space mesh; raises InputError.

    obj: the Blender object (only its name is used), body: bridge.BodyInput, settings: Object.softsim.
    """
    embedded = bool(settings.use_embedded)
    resolution = int(settings.embedded_resolution if embedded else settings.tet_resolution)
    key = _key(obj, body, settings)
    tet = _cache.get(key)
    if tet is not None:
        _cache.move_to_end(key)
        return tet
    try:
        if embedded:
            tet = tetrahedralize_cage(body.world_positions, body.triangles, resolution=resolution)
        else:
            tet = tetrahedralize(body.world_positions, body.triangles, resolution=resolution)
    except TetrahedralizeError as error:
        raise InputError(f"'{obj.name}': {error}") from error
    _cache[key] = tet
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return tet


def solid_pins(tet, pinned: np.ndarray) -> np.ndarray:
    """Pin mask over the tet mesh's vertices from the mesh's pin mask (n,).

    Mesh vertices that are tet vertices pin themselves; a pinned vertex that is embedded (always, for a
    cage) pins the four corners of the tet that carries it, so it moves with the object.
    """
    mask = np.zeros(len(tet.vertices), bool)
    mask[: tet.surface_count] = pinned[: tet.surface_count]
    carried = pinned[tet.embedded_vertices]
    if carried.any():
        mask[tet.tets[tet.embed_tet[carried]].ravel()] = True
    return mask


def mesh_mapping(tet):
    """to_mesh(x) for a TetMesh: particle positions (tet vertices) -> mesh vertex positions (n, 3)."""
    surface_count = tet.surface_count
    embedded, embed_tet, weights, tets = tet.embedded_vertices, tet.embed_tet, tet.embed_weights, tet.tets

    def to_mesh(x):
        if surface_count == 0:  # a cage: every mesh vertex is embedded, in order
            return interpolate_embedded(x, tets, embed_tet, weights)
        out = np.array(x[:surface_count], dtype=np.float64)
        if len(embedded):
            out[embedded] = interpolate_embedded(x, tets, embed_tet, weights)
        return out

    return to_mesh


def drawn_faces(tet, triangles, quads):
    """(triangles (t, 3), quads (q, 4)): the mesh's faces whose corners are all simulated particles (mesh vertices in
    a tet), over the tet mesh's particles; none for a cage, whose particles are not the mesh's vertices. Other bodies
    keep clear of them (``build_model``'s ``drawn_triangles``)."""
    if tet.surface_count == 0:
        return np.zeros((0, 3), np.int64), np.zeros((0, 4), np.int64)
    simulated = np.ones(tet.surface_count, bool)
    simulated[tet.embedded_vertices] = False

    def kept(faces):
        faces = faces[(faces < tet.surface_count).all(axis=1)]
        return faces[simulated[faces].all(axis=1)]

    return kept(np.asarray(triangles, np.int64).reshape(-1, 3)), kept(np.asarray(quads, np.int64).reshape(-1, 4))


def build_solid(obj, body, settings):
    """(Model, to_mesh, surface_count) for an object with role SOLID; raises InputError naming the object.

    body: bridge.BodyInput read at the current transform, settings: ``obj.softsim``. The model's
    particles are the tet vertices in world space; ``to_mesh`` maps them to the mesh's vertices; the first
    ``surface_count`` particles are the mesh's first vertices (0 for a cage).
    Mass (``settings.mass``) is lumped by tet volume (a cage: by the share of the mesh's own volume each cage vertex
    carries, ``TetMesh.mass_weights``), or spread evenly with Mass Distribution Uniform.
    """
    tet = tet_mesh_for(obj, body, settings)
    drawn, quads = drawn_faces(tet, body.triangles, body.quads)
    try:
        model = solvers.build_model(tet.vertices, None, None, tet.tets, solid_pins(tet, body.pinned), settings.mass,
                                    mass_distribution=settings.mass_distribution, mass_weights=tet.mass_weights,
                                    quads=quads, drawn_triangles=drawn)
    except solvers.ModelError as error:
        raise InputError(f"'{obj.name}': {error}") from error
    return model, mesh_mapping(tet), tet.surface_count


def figures(tet, body) -> dict:
    """What the Tetrahedralize button reports: counts, volume coverage and worst quality of a TetMesh."""
    outside = 0
    if tet.surface_count == 0 and len(tet.embed_weights):
        outside = int(np.sum(tet.embed_weights.min(axis=1) < -1e-6))
    try:
        own_volume = abs(mesh_volume(body.world_positions, body.triangles))
    except TetrahedralizeError:
        own_volume = tet.mesh_volume
    return dict(
        vertices=len(tet.vertices),
        tets=len(tet.tets),
        coverage=100.0 * tet.volume / own_volume if own_volume > 0 else float("nan"),
        worst_quality=tet.worst_quality,
        outside=outside,
        embedded=len(tet.embedded_vertices),
    )
