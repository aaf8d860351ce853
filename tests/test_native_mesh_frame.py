"""Still mesh colliders inside a cloth's whole-frame call (``src/mesh_frame.c``, binding ``native.mesh_frame.MeshFrame``,
``PositionBasedSolver.native_frame``): whole frames equal to the per-substep path (``step`` with the mesh collider's
queries in C) bit for bit, and to Compute NUMPY, on the box drape of bench/profile_mesh_collider.py, a subdivided
box, an open slanted sheet and a concave trough; nothing inside the box and no box edge through the cloth at any
frame; a moving mesh collider goes substep by substep with MOVING_IN_FRAME off (moving ones in the frame call:
tests/test_native_mesh_moving.py); the binding refuses bad inputs."""
import dataclasses
import os
import sys

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import GroundPlane, MeshCollider, SolverConfig, State, advance_frame, build_model, make_solver
from solvers.builder import grid_cloth
from solvers.collision.colliders.shapes import frame_colliders
from solvers.collision.narrow_phase.crossings import segments_cross_triangles
from solvers.native import mesh_frame
from solvers.native.mesh_frame import MeshFrame, frame_supports

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from profile_mesh_collider import box_mesh  # noqa: E402

FPS = 24


@pytest.fixture(scope="module")
def library():
    return native_library()


def _box_edges(vertices):
    """The 12 edges of the axis-aligned box through the corners of ``vertices`` (index pairs into the 8 corners)."""
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    corners = np.array([[(lo, hi)[a][0], (lo, hi)[b][1], (lo, hi)[c][2]] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
    pairs = [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1]
    return corners[[p[0] for p in pairs]], corners[[p[1] for p in pairs]]


def _bake(read, count, size, height, frames, compute="AUTO", whole=True, substeps=None, check_box=None,
          self_collision=False):
    """A cloth (count x count, size [m], at height [m]) baked ``frames`` frames over the colliders ``read()`` gives
    each frame (fresh objects, paired with the previous frame's as the bridge does). whole False: the whole-frame call
    declined (the per-substep path). check_box: (vertices) of a box collider: asserts at every frame end that no
    vertex is inside it and no box edge crosses a cloth triangle. self_collision: the cloth's. Returns (final state,
    frames taken whole)."""
    v, e, t = grid_cloth(count, size, height=height)
    model = build_model(v, e, t)
    config = SolverConfig(solver="XPBD", compute=compute, use_self_collision=self_collision)
    if substeps is not None:
        config = dataclasses.replace(config, substeps=substeps)
    body = make_solver(model, config)
    taken = []
    original = body.native_frame
    body.native_frame = (lambda run, dt, colliders=(): taken.append(original(run, dt, colliders)) or taken[-1]) if whole \
        else (lambda run, dt, colliders=(): False)
    state = State.at_rest(model)
    previous = None
    if check_box is not None:
        P, Q = _box_edges(check_box)
        lo, hi = check_box.min(axis=0), check_box.max(axis=0)
        i, j = (a.ravel() for a in np.meshgrid(np.arange(len(P)), np.arange(len(t)), indexing="ij"))
    for frame in range(1, frames + 1):
        current = read()
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, current))
        previous = current
        if check_box is not None:
            x = state.x
            depth = np.min(np.concatenate([x - lo, hi - x], axis=1), axis=1)
            assert depth.max() < 1e-3, f"frame {frame}: a vertex {1000 * depth.max():.1f} mm inside the box"
            cuts = segments_cross_triangles(P[i], Q[i], x[t[j, 0]], x[t[j, 1]], x[t[j, 2]])
            assert not cuts.any(), f"frame {frame}: {int(cuts.sum())} box edge/cloth triangle crossings"
    return state, sum(taken)


def _box_scene(level=0, thickness=0.01, friction=0.2):
    vertices, triangles = box_mesh(level)
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=thickness, friction=friction, name="Ground")
    return vertices, lambda: [MeshCollider(vertices.copy(), triangles.copy(), thickness, friction, "Box"), ground]


def _three_ways(read, count, size, height, frames, **kw):
    whole, taken = _bake(read, count, size, height, frames, **kw)
    assert taken == frames, f"the whole-frame call took {taken} of {frames} frames"
    kw.pop("check_box", None)
    per_substep, _ = _bake(read, count, size, height, frames, whole=False, **kw)
    numpy, _ = _bake(read, count, size, height, frames, compute="NUMPY", **kw)
    return whole, per_substep, numpy


def _assert_all_same(whole, per_substep, numpy):
    """Positions and velocities of the three bakes of ``_three_ways``, bit for bit."""
    for other in (per_substep, numpy):
        assert_same(whole.x, other.x)
        assert_same(whole.v, other.v)


def test_the_box_drape_in_whole_frames_equals_the_per_substep_path_and_numpy(library):
    """The box drape of bench/profile_mesh_collider.py (31 x 31, 3 m, dropped from 1.5 m on the 12-triangle box on a
    ground, XPBD defaults), 16 frames: it lands at frame 11 and slides over the rim; positions and velocities bit for
    bit, nothing inside the box and no box edge through the cloth at any frame."""
    vertices, read = _box_scene()
    whole, per_substep, numpy = _three_ways(read, 31, 3.0, 1.5, 16, check_box=vertices)
    _assert_all_same(whole, per_substep, numpy)
    assert whole.x[len(whole.x) // 2, 2] < 0.6  # it landed on the top


def test_a_still_box_read_anew_every_frame_reuses_its_struct_from_the_second_frame(library):
    """The bridge reads a still collider anew every frame; the frame's read takes over the normals and grids derived
    for the first (``MeshCollider.moving_from``), so from the second frame on its struct is the last one's
    (``MeshFrame.fast``): the first frame alone derives them."""
    _, read = _box_scene(level=2)
    v, e, t = grid_cloth(11, 2.0, height=0.7)
    body = make_solver(build_model(v, e, t), SolverConfig(solver="XPBD"))
    state, previous = State.at_rest(body.model), None
    for _ in range(6):
        current = read()
        advance_frame(body, state, 1.0 / FPS, body.config.substeps, frame_colliders(previous, current))
        previous = current
    assert body._frame_kernel.meshes.fast == 5


def test_a_subdivided_box_in_whole_frames_equals_the_per_substep_path(library):
    """The box cut by a level-2 Simple Subdivision (192 triangles, 48 sharp edges in straight runs, 8 corners)."""
    vertices, read = _box_scene(level=2)
    whole, per_substep, numpy = _three_ways(read, 21, 2.6, 0.9, 14, check_box=vertices)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)


def test_a_cloth_sliding_off_a_finely_cut_box_in_whole_frames(library):
    """A cloth dropped over one edge of the box cut at level 3 (768 triangles of 25 cm) slides off it, 24 frames: the
    points measured anew keep crossing onto other triangles, each query trying first the triangle the point found
    last (``SoftsimStillMesh.nearest_hint``). Bit for bit with the per-substep path, nothing inside the box; Compute
    NUMPY to 1e-9 m (its nearest triangles' distances in an all-border batch differ by a few ulps, src/mesh_collider.c:
    here 1e-10 m after 24 frames, with or without first guesses)."""
    vertices, triangles = box_mesh(3)
    vertices = vertices + [1.1, 0.0, 0.0]
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read():
        return [MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.1, "Box"), ground]

    whole, per_substep, numpy = _three_ways(read, 17, 2.0, 0.8, 24, check_box=vertices)
    assert np.array_equal(whole.x.view(np.int64), per_substep.x.view(np.int64))
    assert np.array_equal(whole.v.view(np.int64), per_substep.v.view(np.int64))
    np.testing.assert_allclose(whole.x, numpy.x, rtol=0.0, atol=1e-9)
    assert whole.x[:, 0].min() < 0.0  # part of it hangs off the box's edge at x = 0.1


def test_substeps_walked_in_sweeps_and_grown_pair_buffers_keep_the_whole_frame_equal(library, monkeypatch):
    """6 substeps a frame: the landing cloth moves more than 2 cm a substep, so the end-of-step push of those substeps
    is walked in sweeps by the NumPy code between C calls (status 1), reading the face-pair lists the C code kept; pair
    buffers of 8 pairs make the C code ask for more (status 3: the substep restored and run again)."""
    monkeypatch.setattr(mesh_frame, "CAPACITY", 8)
    vertices, read = _box_scene()
    whole, per_substep, numpy = _three_ways(read, 21, 2.6, 0.9, 14, substeps=6)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)


@pytest.mark.parametrize("substeps", [None, 6])
def test_self_collision_over_the_box_in_whole_frames_equals_the_per_substep_path(library, monkeypatch, substeps):
    """Self-collision on: every substep is handed back after its end-of-step push for self-collision (status 4). The
    box drape in whole frames equals the per-substep path and NUMPY bit for bit, nothing inside the box, no box edge
    through the cloth; at 6 substeps a frame with pair buffers of 8 pairs, also the substeps walked in sweeps (status
    1) and restored (status 3) take self-collision there."""
    if substeps is not None:
        monkeypatch.setattr(mesh_frame, "CAPACITY", 8)
    vertices, read = _box_scene()
    whole, per_substep, numpy = _three_ways(read, 21, 2.6, 0.9, 14, substeps=substeps, check_box=vertices,
                                            self_collision=True)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)
    assert whole.x[len(whole.x) // 2, 2] < 0.6  # it landed on the top


def test_an_open_slanted_sheet_in_whole_frames_equals_the_per_substep_path(library):
    """One slanted quad (2 triangles, open: every border edge sharp, its corners too), no ground: the cloth lands on
    it, slides down and off its lower border."""
    quad = np.array([[-1.0, -1.0, 0.2], [1.0, -1.0, 0.6], [1.0, 1.0, 0.6], [-1.0, 1.0, 0.2]])
    triangles = np.array([[0, 1, 2], [0, 2, 3]])

    def read():
        return [MeshCollider(quad.copy(), triangles.copy(), 0.01, 0.1, "Sheet")]

    whole, per_substep, numpy = _three_ways(read, 15, 1.4, 1.0, 16)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)
    assert np.all(np.isfinite(whole.x))


def test_a_concave_trough_in_whole_frames_equals_the_per_substep_path(library):
    """Two slanted quads meeting in a valley (a concave edge, not sharp on the cloth's side) on a ground."""
    vertices = np.array([[-1.0, -1.0, 0.6], [0.0, -1.0, 0.2], [1.0, -1.0, 0.6],
                         [-1.0, 1.0, 0.6], [0.0, 1.0, 0.2], [1.0, 1.0, 0.6]])
    triangles = np.array([[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4]])
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read():
        return [MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.2, "Trough"), ground]

    whole, per_substep, numpy = _three_ways(read, 15, 1.6, 1.0, 16)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)
    assert whole.x[len(whole.x) // 2, 2] > 0.2  # held in the trough


def test_two_boxes_in_whole_frames_equal_the_per_substep_path(library):
    """Two still boxes side by side and a ground: each box keeps its own planes and face-pair list, their contacts
    joined in collider order."""
    a, triangles = box_mesh(0, half=(0.5, 0.5, 0.25), centre=(-0.6, 0.0, 0.25))
    b, _ = box_mesh(0, half=(0.5, 0.5, 0.15), centre=(0.6, 0.0, 0.15))
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read():
        return [MeshCollider(a.copy(), triangles.copy(), 0.01, 0.3, "A"), ground,
                MeshCollider(b.copy(), triangles.copy(), 0.01, 0.1, "B")]

    whole, per_substep, numpy = _three_ways(read, 17, 2.2, 0.8, 14)
    assert_same(whole.x, per_substep.x)
    assert_same(whole.v, per_substep.v)
    assert_same(whole.x, numpy.x)


def test_boxes_out_of_reach_in_whole_frames_equal_the_per_substep_path_and_numpy(library):
    """The box drape with two more boxes the cloth never reaches (4 m beside it, one cut at level 2) and the box it
    lands on: the out-of-reach test (``MeshBroadPhase.far_from``, mesh_frame.c body_far) skips each box while the
    falling cloth is far from it, the same way in C and in NumPy; positions and velocities bit for bit."""
    vertices, triangles = box_mesh(0)
    beside, beside_triangles = box_mesh(2, centre=(4.0, 0.0, 0.25))
    behind = vertices + np.array([0.0, -4.0, 0.0])
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")

    def read():
        return [MeshCollider(beside.copy(), beside_triangles.copy(), 0.01, 0.2, "Beside"),
                MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.2, "Box"), ground,
                MeshCollider(behind.copy(), triangles.copy(), 0.02, 0.5, "Behind")]

    whole, per_substep, numpy = _three_ways(read, 21, 2.6, 1.2, 14, check_box=vertices)
    _assert_all_same(whole, per_substep, numpy)
    assert whole.x[len(whole.x) // 2, 2] < 0.6  # it landed on the box


def test_a_moving_mesh_collider_goes_substep_by_substep_when_switched_off(library, monkeypatch):
    """With MOVING_IN_FRAME off, a box rising through the frames moves (``start`` set): the whole-frame call declines
    every frame after the first (which has no earlier pose, so stands still), and the bake is the per-substep path's.
    (Switched on, the default, the frame call takes it: tests/test_native_mesh_moving.py.)"""
    from solvers.native import mesh_frame

    from solvers.collision.colliders import mesh_collider

    monkeypatch.setattr(mesh_frame, "MOVING_IN_FRAME", False)
    monkeypatch.setattr(mesh_collider, "TRANSLATIONS", False)  # rising, it is a translation: moving as any other
    base, triangles = box_mesh(0)

    def make_read():
        frame = [0]

        def read():
            frame[0] += 1
            return [MeshCollider(base + [0.0, 0.0, 0.01 * frame[0]], triangles.copy(), 0.01, 0.2, "Box")]
        return read

    whole, taken = _bake(make_read(), 15, 1.6, 0.9, 6)
    assert taken == 1
    per_substep, _ = _bake(make_read(), 15, 1.6, 0.9, 6, whole=False)
    assert_same(whole.x, per_substep.x)
    moving = frame_colliders([MeshCollider(base, triangles, 0.01, name="Box")],
                             [MeshCollider(base + 0.01, triangles, 0.01, name="Box")])
    assert moving[0].start is not None and not frame_supports(moving)
    still = frame_colliders([MeshCollider(base, triangles, 0.01, name="Box")],
                            [MeshCollider(base.copy(), triangles, 0.01, name="Box")])
    assert frame_supports(still)


def test_a_sphere_beside_a_mesh_collider_goes_substep_by_substep_when_switched_off(library, monkeypatch):
    from solvers.collision.colliders.shapes import Sphere
    from solvers.native import mesh_frame

    monkeypatch.setattr(mesh_frame, "SPHERES_BESIDE_MESHES", False)
    base, triangles = box_mesh(0)
    assert not frame_supports([MeshCollider(base, triangles, 0.01), Sphere([0.0, 0.0, 2.0], 0.3)])
    assert frame_supports([MeshCollider(base, triangles, 0.01), GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0])])
    assert not frame_supports([MeshCollider(np.zeros((0, 3)), np.zeros((0, 3), np.int64), 0.01)])  # no triangles


def _binding(library):
    v, e, t = grid_cloth(7, 1.0, height=0.8)
    model = build_model(v, e, t)
    body = make_solver(model, SolverConfig(solver="XPBD"))
    contacts = body.native_contacts
    base, triangles = box_mesh(0)
    return MeshFrame(library, model.particle_count, contacts.triangles, contacts.edges), model, base, triangles


def test_the_binding_takes_a_still_box(library):
    binding, model, base, triangles = _binding(library)
    collider = MeshCollider(base, triangles, 0.01, 0.2)
    binding.prepare([collider], np.ascontiguousarray(model.rest_positions), model.triangle_indices)
    assert binding.struct.count == 1


def test_the_binding_refuses_bad_inputs(library):
    binding, model, base, triangles = _binding(library)
    x = np.ascontiguousarray(model.rest_positions)
    other = np.ascontiguousarray(model.triangle_indices[::-1])
    with pytest.raises(ValueError, match="body triangles"):
        binding.prepare([MeshCollider(base, triangles, 0.01)], x, other)
    bad = base.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="vertices"):
        binding.prepare([MeshCollider(bad, triangles, 0.01)], x, model.triangle_indices)
    with pytest.raises(ValueError, match="thickness"):
        binding.prepare([MeshCollider(base, triangles, float("inf"))], x, model.triangle_indices)
    collider = MeshCollider(base, triangles, 0.01)
    collider.shared.__dict__["corners"] = np.array([0, 99], np.int64)  # a corner index beyond the vertices
    with pytest.raises(ValueError, match="corners"):
        binding.prepare([collider], x, model.triangle_indices)
    collider = MeshCollider(base, triangles, 0.01)
    binding.prepare([collider], x, model.triangle_indices)
    planes = next(iter(collider.shared.kept_planes[0.01].items))
    planes.d0 = planes.d0.astype(np.float32)  # the kept planes must be float64
    with pytest.raises(ValueError, match="planes d0"):
        binding.prepare([collider], x, model.triangle_indices)
    collider = MeshCollider(base, triangles, 0.01)
    collider.__dict__["face_normals"] = np.zeros((3, 3))  # not one per triangle
    with pytest.raises(ValueError, match="face normals"):
        binding.prepare([collider], x, model.triangle_indices)



def test_allowances_equal_the_twins_beside_many_sharp_edges(library):
    """The face-pair list's allowances (``softsim_mesh_allowances``: each point's nearest sharp-edge piece centre found
    block by block, the nearest block by its box first, blocks whose box lies farther than the nearest so far passed
    over) against ``MeshFacePairs._allowances`` (a k-d tree query): bit for bit, for cloths over a box cut at level 4
    (its vertices jittered by 0.1 mm, so that its edges stay 192 sharp edges, not straight runs: several blocks of
    pieces) lying on its top, draped over an edge, far above it, and crumpled around a corner, each point alone and all
    at once."""
    from solvers.collision.broad_phase.mesh_broad_phase import SKIN
    from solvers.collision.broad_phase.mesh_face_pairs import MAX_ALLOWANCE

    vertices, triangles = box_mesh(4)
    vertices = vertices + np.random.default_rng(3).normal(scale=1e-4, size=vertices.shape)
    collider = MeshCollider(vertices, triangles, 0.01, 0.2, "Box")
    assert len(collider.shared.edges) == 192
    tree, radius = collider.shared.edge_tree_for(collider.vertices)
    centres = np.asarray(tree.data, np.float64)
    assert len(centres) >= 4 * 32
    v, e, _ = grid_cloth(17, 2.4, height=0.0)
    rng = np.random.default_rng(11)
    between = 0
    for offset, scale in (((0.0, 0.0, 0.52), 0.0), ((1.0, 0.3, 0.45), 0.02), ((0.0, 0.0, 3.0), 0.0),
                          ((0.9, 0.9, 0.4), 0.3)):
        x = v + np.asarray(offset) + rng.normal(scale=scale, size=v.shape) if scale else v + np.asarray(offset)
        x = np.ascontiguousarray(x)
        points = np.arange(len(x), dtype=np.int64)
        ours = mesh_frame.allowances(library, x, e, points, centres, radius, 0.0, 0.01)
        twin = collider._allowances(x, e, 0.01, points)
        assert np.array_equal(ours.view(np.int64), twin.view(np.int64))
        some = rng.choice(len(x), 40, replace=False).astype(np.int64)
        assert np.array_equal(mesh_frame.allowances(library, x, e, some, centres, radius, 0.0, 0.01), twin[some])
        between += int(np.count_nonzero((twin > SKIN / 3.0) & (twin < MAX_ALLOWANCE)))
    assert between > 100  # most allowances come from the nearest centre, not from a bound


def test_allowances_refuse_bad_input(library):
    x = np.zeros((4, 3))
    edges = np.array([[0, 1], [2, 3]], np.int64)
    points = np.arange(4, dtype=np.int64)
    centres = np.zeros((2, 3))
    with pytest.raises(ValueError):
        mesh_frame.allowances(library, x, np.array([[0, 4]], np.int64), points, centres, 0.1, 0.0, 0.01)
    with pytest.raises(ValueError):
        mesh_frame.allowances(library, x, edges, np.array([5], np.int64), centres, 0.1, 0.0, 0.01)
    with pytest.raises(ValueError):
        mesh_frame.allowances(library, x, edges, points, np.full((2, 3), np.nan), 0.1, 0.0, 0.01)
    with pytest.raises(ValueError):
        mesh_frame.allowances(library, x, edges, points, centres, -1.0, 0.0, 0.01)
