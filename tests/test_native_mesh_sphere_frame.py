"""Spheres beside still mesh colliders in a cloth's whole-frame call (``mesh_frame.SPHERES_BESIDE_MESHES``:
``softsim_mesh_frame_finish`` runs the sphere face push of src/sphere_faces.h in table order), still and moving
spheres. The per-substep path runs such colliders in NumPy (the native contacts take ground planes and spheres only),
so the whole frames agree with it and with Compute NumPy to FACE_TOLERANCE where the sphere face push acts, as the
sphere-only frames do with NumPy (tests/test_native_contacts.py says why: the twin's einsum order depends on its
operands' layout); the differences grow from ulps as the cloth keeps touching the ball, faster or slower with the
NumPy version (NumPy 2.3: ~1e-13 m after 8 frames, ~1e-11 m after 12; NumPy 1.26: 5e-12 m after 7 frames with the
moving ball), so the runs are short."""
import os
import sys

import numpy as np
import pytest

from native_helpers import native_library
from solvers import GroundPlane, MeshCollider
from solvers.collision.colliders.shapes import Sphere
from solvers.native import mesh_frame
from solvers.native.mesh_frame import frame_supports

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_native_mesh_frame import _bake, _three_ways  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from profile_mesh_collider import box_mesh  # noqa: E402


FACE_TOLERANCE = 1e-9
"""[m]: round-off grown over a few frames of contact on any supported NumPy (module docstring), a million times below
what a wrong contact, push or order does to these ~1 m scenes (millimetres)."""


def assert_close(a, b):
    np.testing.assert_allclose(a, b, rtol=0.0, atol=FACE_TOLERANCE)


@pytest.fixture
def library(monkeypatch):
    monkeypatch.setattr(mesh_frame, "SPHERES_BESIDE_MESHES", True)
    return native_library()


def _scene(sphere_at, box_first=True):
    """A box on a ground with a sphere (radius 0.35 m) whose centre ``sphere_at(frame)`` gives, read anew each
    frame (so a sphere whose centre changes moves through the frame)."""
    vertices, triangles = box_mesh(0, half=(0.6, 0.6, 0.2), centre=(0.3, 0.0, 0.2))
    ground = GroundPlane([0.0, 0.0, 0.0], [0.0, 0.0, 1.0], thickness=0.01, friction=0.2, name="Ground")
    frame = [0]

    def read():
        frame[0] += 1
        box = MeshCollider(vertices.copy(), triangles.copy(), 0.01, 0.2, "Box")
        sphere = Sphere(np.asarray(sphere_at(frame[0]), float), 0.35, thickness=0.01, friction=0.3, name="Ball")
        return [box, sphere, ground] if box_first else [sphere, ground, box]
    return read


def test_the_frame_takes_a_sphere_beside_a_mesh_only_when_switched_on(library, monkeypatch):
    base, triangles = box_mesh(0)
    both = [MeshCollider(base, triangles, 0.01), Sphere([0.0, 0.0, 2.0], 0.3)]
    assert frame_supports(both)
    monkeypatch.setattr(mesh_frame, "SPHERES_BESIDE_MESHES", False)
    assert not frame_supports(both)


@pytest.mark.parametrize("box_first", [True, False])
def test_a_still_sphere_beside_a_box_in_whole_frames_equals_the_per_substep_path(library, box_first):
    """The cloth lands on the sphere (the face push acts where its faces wrap the ball) and on the box beside it."""
    read = _scene(lambda frame: (-0.55, 0.0, 0.3), box_first)
    whole, per_substep, numpy = _three_ways(read, 17, 2.2, 0.8, 8)
    assert_close(whole.x, per_substep.x)
    assert_close(whole.x, numpy.x)
    assert_close(whole.v / 720.0, numpy.v / 720.0)  # a substep's motion
    ball = np.array([-0.55, 0.0, 0.3])
    assert np.min(np.linalg.norm(whole.x - ball, axis=1)) < 0.38  # the cloth lies on the ball


def test_a_moving_sphere_beside_a_box_in_whole_frames_equals_the_per_substep_path(library):
    """The ball rises 1 cm a frame under the cloth: its table is posed per substep, the box's rows stand still."""
    def at(frame):
        return (-0.55, 0.0, 0.25 + 0.01 * frame)

    whole, taken = _bake(_scene(at), 15, 2.0, 0.7, 7)  # a fresh scene per bake: its frame count starts at 1
    assert taken == 7
    per_substep, _ = _bake(_scene(at), 15, 2.0, 0.7, 7, whole=False)
    numpy, _ = _bake(_scene(at), 15, 2.0, 0.7, 7, compute="NUMPY")
    assert_close(whole.x, per_substep.x)
    assert_close(whole.x, numpy.x)
    assert np.min(np.linalg.norm(whole.x - [-0.55, 0.0, 0.32], axis=1)) < 0.38


def test_walked_sweeps_and_grown_buffers_beside_a_sphere(library, monkeypatch):
    """6 substeps a frame (status 1: sweeps walked in NumPy) and pair buffers of 8 pairs (status 3: the substep
    restored and run again, the sphere's face push with it)."""
    monkeypatch.setattr(mesh_frame, "CAPACITY", 8)
    read = _scene(lambda frame: (-0.55, 0.0, 0.3))
    whole, per_substep, numpy = _three_ways(read, 17, 2.2, 0.8, 8, substeps=6)
    assert_close(whole.x, per_substep.x)
    assert_close(whole.x, numpy.x)
