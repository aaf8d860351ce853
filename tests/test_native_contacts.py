"""The native contact kernels (``solvers.native.kernels.AnalyticContacts``, ``src/contact.c``) against their NumPy
twins: prediction, point contacts of ground planes and spheres (still and moving, with friction), their projection
and friction, the end-of-step vertex and sphere face push, the velocity update; the binding's validation; and XPBD
runs of the lab cloth equal on both Compute paths."""
import dataclasses

import numpy as np
import pytest

from native_helpers import assert_same, native_library
from solvers import SolverConfig, State, advance_frame, make_solver
from solvers.builder import build_model, grid_cloth
from solvers.collision.response import faces
from solvers.collision.colliders.shapes import GroundPlane, Sphere, frame_colliders
from solvers.native.kernels import AnalyticContacts
from solvers.native.selftest import contact_scene, contact_step_native, contact_step_numpy

GRAVITY, DT = np.array([0.0, 0.0, -9.81]), 1.0 / 720.0
FACE_TOLERANCE = 1e-12
"""[m] Where the sphere face push acts: the twin's closest point (``primitives.closest_weights``) adds its 3-term dot
products with ``einsum``, whose order ((x + y) + z or (x x + z z) + y y) depends on the operands' layout; the C code
follows the orders it takes on x86-64 with NumPy 2.3 and 1.26 (``src/sphere_faces.h``: equal bit for bit there), and
this bounds an einsum that orders its sums otherwise. Everything else is bitwise."""


def assert_close(a, b, tolerance=FACE_TOLERANCE):
    np.testing.assert_allclose(a, b, rtol=0.0, atol=tolerance)


@pytest.fixture(scope="module")
def library():
    return native_library()


def _binding(library, model):
    pad2 = faces.sphere_pads(model.rest_positions, model.triangle_indices)
    return AnalyticContacts(library, model.inv_mass, pad2, model.triangle_indices), pad2


@pytest.mark.parametrize("moving", [False, True])
@pytest.mark.parametrize("friction", [0.0, 0.4])
@pytest.mark.parametrize("pads", [True, False])
@pytest.mark.parametrize("seed", [2, 5])
def test_contact_steps_equal_their_numpy_twins(library, moving, friction, pads, seed, monkeypatch):
    """Without the sphere pads the faces dip into the sphere and the face push acts."""
    model, x0, v0, colliders = contact_scene(seed=seed, moving=moving, friction=friction)
    binding, pad2 = _binding(library, model)
    if not pads:
        pad2 = None
        binding = AnalyticContacts(library, model.inv_mass, None, model.triangle_indices)
    face_hits = []
    original = faces.resolve_sphere_faces
    monkeypatch.setattr(faces, "resolve_sphere_faces", lambda *a, **k: face_hits.append(original(*a, **k)) or face_hits[-1])
    x, v, y, u = x0.copy(), v0.copy(), x0.copy(), v0.copy()
    factor = float(np.exp(-0.1 * DT))
    counts = []
    for _ in range(8):
        assert contact_step_native(binding, x, v, colliders, DT, GRAVITY, factor) == 1
        contact_step_numpy(model, y, u, colliders, pad2, DT, GRAVITY, factor)
        counts.append(binding.count)
        if pads:
            assert_same(x, y)
            assert_same(v, u)
        else:  # the face push acts (FACE_TOLERANCE); velocities are (x - x_prev) / dt
            assert_close(x, y)
            assert_close(v, u, FACE_TOLERANCE / DT)
    assert min(counts) > 0
    assert pads or sum(face_hits) > 0  # the face push acted


def test_contacts_found_match_the_contact_set(library):
    from solvers.collision.response.contact_set import find_contacts

    model, x, v, colliders = contact_scene()
    binding, pad2 = _binding(library, model)
    binding.pose(colliders)
    x_prev = x - DT * v
    count = binding.find(x, np.ascontiguousarray(x_prev))
    found = find_contacts(x, x_prev, model.inv_mass, colliders, pad2, model.triangle_indices)
    assert count == sum(len(c.particles) for c in found.points)
    assert_same(binding.particle[:count], np.concatenate([c.particles for c in found.points]))
    assert_same(binding.normal[:count], np.concatenate([c.normal for c in found.points]))
    assert_same(binding.offset[:count], np.concatenate([c.offset for c in found.points]))


def test_finish_leaves_a_step_of_several_sweeps_untouched(library):
    model, x, v, colliders = contact_scene()
    binding, _ = _binding(library, model)
    binding.pose(colliders)
    x_prev = np.ascontiguousarray(x - np.array([0.0, 0.0, 0.1]))  # 10 cm in one step: 5 sweeps of 2 cm
    before = x.copy()
    assert binding.finish(x, x_prev) == 5
    assert np.array_equal(x, before)


@pytest.mark.parametrize("moving", [False, True])
@pytest.mark.parametrize("friction", [0.0, 0.4])
@pytest.mark.parametrize("pads", [True, False])
@pytest.mark.parametrize("drop", [0.05, 0.13])
def test_steps_walked_in_sweeps_equal_their_numpy_twin(library, moving, friction, pads, drop):
    """A step of several centimetres into the sphere (3 and 7 sweeps of at most 2 cm, still or moving sphere, ground
    too): ``finish_sweeps`` against ``resolve_collider_contacts``, which walks it in the same sweeps. Without the pads
    the faces dip in and the face push acts (FACE_TOLERANCE, as above)."""
    from solvers.collision.response.collider_contacts import contact_sweeps, resolve_collider_contacts, sweep_poses

    model, x, v, colliders = contact_scene(seed=3, moving=moving, friction=friction)
    binding, pad2 = _binding(library, model)
    if not pads:
        pad2 = None
        binding = AnalyticContacts(library, model.inv_mass, None, model.triangle_indices)
    binding.pose(colliders)
    x_prev = np.ascontiguousarray(x + np.array([0.0, 0.01, drop]))  # the step moves down, into the sphere
    sweeps = contact_sweeps(x, x_prev, model.inv_mass, model.triangle_indices, colliders)
    assert sweeps == int(np.ceil(np.hypot(0.01, drop) / 0.02)) and sweeps > 1
    ours, theirs = x.copy(), x.copy()
    assert binding.finish(ours, x_prev) == sweeps
    binding.finish_sweeps(ours, x_prev, sweep_poses(colliders, sweeps))
    resolve_collider_contacts(theirs, x_prev, model.inv_mass, model.triangle_indices, colliders, pad2)
    assert not np.array_equal(theirs, x)  # the sweeps moved particles back out
    if pads:
        assert_same(ours, theirs)
    else:
        assert_close(ours, theirs)


def test_finish_sweeps_refuses_uneven_poses(library):
    model, x, v, colliders = contact_scene()
    binding, _ = _binding(library, model)
    binding.pose(colliders)
    with pytest.raises(ValueError, match="one list of colliders per sweep"):
        binding.finish_sweeps(x, x - 0.1, [colliders, colliders[:1]])
    with pytest.raises(ValueError, match="one list of colliders per sweep"):
        binding.finish_sweeps(x, x - 0.1, [])


def test_a_particle_swept_past_by_a_fast_sphere_goes_back_out_where_it_came_from(library):
    vertices, edges, triangles = grid_cloth(3, 0.2, diagonals=True)
    model = build_model(vertices, edges, triangles, total_mass=1.0)
    start = Sphere(np.array([0.0, 0.0, -0.5]), 0.3)
    sphere = Sphere(np.array([0.0, 0.0, 0.1]), 0.3).moving_from(start)  # through the cloth in one step
    binding, pad2 = _binding(library, model)
    binding.pose([sphere])
    x = np.ascontiguousarray(vertices.astype(float))
    count = binding.find(x, x.copy())
    d, n = sphere.contact(x, x.copy(), pad2)
    assert count == len(x) and np.all(n[:, 2] > 0.0)  # pushed out above, the side they came from
    assert_same(binding.normal[:count], n)


def _lab(n, compute, frames, friction=0.0, moving=False):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    sphere = Sphere(np.zeros(3), 2.7, friction=friction, thickness=0.01)
    ground = GroundPlane(np.array([0.0, 0.0, -3.0]), np.array([0.0, 0.0, 1.0]), friction=friction)
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=30, iterations=1, tether_stretch=0.01,
                          compute=compute)
    solver = make_solver(model, config)
    faces._TOPOLOGY.clear()  # the NumPy face push's cached edge bound starts afresh, as the binding's does
    state, previous, out = State.at_rest(model), None, []
    for f in range(frames):
        current = [sphere, ground]
        if moving:
            current = [dataclasses.replace(sphere, center=np.array([0.2 * np.sin(f / 3.0), 0.0, 0.1 * f]),
                                           radius=2.7 + 0.05 * np.sin(f / 2.0)),
                       dataclasses.replace(ground, point=np.array([0.0, 0.0, -3.0 + 0.05 * f]))]
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, frame_colliders(previous, current))
        previous = current
        out.append(state.x.copy())
    return out


@pytest.mark.parametrize("friction, moving", [(0.0, False), (0.5, True)])
def test_lab_cloth_frames_equal_on_both_compute_paths(library, friction, moving):
    """20 x 20 (50 cm quads: the pads' cap leaves faces to the face push) over 10 frames: equal to 1e-9 m."""
    reference = _lab(20, "NUMPY", 10, friction, moving)
    native = _lab(20, "AUTO", 10, friction, moving)
    for a, b in zip(native, reference):
        assert_close(a, b, 1e-9)


@pytest.mark.parametrize("change, message", [
    (dict(inv_mass=np.zeros(5)), "inv_mass: shape"),
    (dict(inv_mass="float32"), "inv_mass: dtype"),
    (dict(pad2=np.zeros(3)), "pad2: shape"),
    (dict(triangles="out of range"), "triangles: index"),
    (dict(edges="negative"), "edges: index"),
    (dict(triangles="strided"), "triangles: must be C-contiguous"),
])
def test_contact_binding_refuses_bad_arrays(library, change, message):
    model, _, _, _ = contact_scene()
    binding, pad2 = _binding(library, model)
    args = dict(inv_mass=binding.inv_mass.copy(), pad2=pad2.copy(), triangles=binding.triangles.copy(),
                edges=binding.edges.copy())
    for key, value in change.items():
        if not isinstance(value, str):
            pass
        elif value == "float32":
            value = args[key].astype(np.float32)
        elif value == "out of range":
            value = args[key].copy()
            value[3, 1] = len(model.inv_mass)
        elif value == "negative":
            value = args[key].copy()
            value[0, 0] = -1
        elif value == "strided":
            value = np.asfortranarray(args[key])
        args[key] = value
    with pytest.raises(ValueError, match=message):
        binding.bind(len(model.inv_mass), args["inv_mass"], args["pad2"], args["triangles"], args["edges"])


def test_contact_binding_refuses_bad_positions(library):
    model, x, v, colliders = contact_scene()
    binding, _ = _binding(library, model)
    binding.pose(colliders)
    with pytest.raises(ValueError, match="x: shape"):
        binding.find(x[:-1].copy(), x.copy())
    with pytest.raises(ValueError, match="x_prev: dtype"):
        binding.find(x, x.astype(np.float32))
    with pytest.raises(ValueError, match="x: must be C-contiguous"):
        binding.project(np.asfortranarray(x))
