"""Force fields in C (``src/fields.c``) against their NumPy twins: ``fields.field_terms`` and ``fields.air_velocity``
(``kernels.FieldLoads.terms`` / ``air_velocity``) for every kind x shape x falloff x z direction with and without
flow, noise, gravity falloff, world coordinates and distance / radial limits; ``BodyLoads.apply`` with fields
(``FieldLoads``) with and without air; and whole frames of a cloth with animated fields in one call
(``PositionBasedSolver.native_frame`` with ``FrameRun.substep_fields``) against the per-substep path and Compute NUMPY.

Bit for bit (x86-64, ``assert_same``) where the arithmetic is the same: the integer hash and the value noise, the
elementwise arithmetic. A falloff power (``np.power``) or a CONE falloff (``np.arccos``) goes through the C library's
pow / acos, which may differ from NumPy's (SIMD) versions by an ulp: those agree to RELATIVE (of the largest value)."""
import zlib

import numpy as np
import pytest

from native_helpers import assert_same, jittered_cloth, native_library
from solvers import SolverConfig, State, advance_frame, make_solver
from solvers.builder import build_model, grid_cloth
from solvers.collision.colliders.shapes import GroundPlane, Sphere, frame_colliders
from solvers.forces.fields import FALLOFFS, FIELD_KINDS, SHAPES, Z_DIRECTIONS, ForceField, air_velocity, field_terms
from solvers.forces.loads import BodyLoads, FrameFields
from solvers.frame import FrameRun
from solvers.native.kernels import FIELD_ROW, AirLoads, FieldLoads, field_table
from solvers.position_based import PositionBasedSolver

RELATIVE = 1e-12
"""Native vs NumPy with pow or acos in the falloff, relative to the largest value compared."""


@pytest.fixture(scope="module")
def library():
    return native_library()


def _pose(rng):
    """A field's world matrix: turned, scaled (the axis is normalized), moved."""
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    matrix = np.eye(4)
    matrix[:3, :3] = q * rng.uniform(0.5, 2.0)
    matrix[:3, 3] = rng.normal(scale=0.5, size=3)
    return matrix


VARIANTS = {
    "plain": dict(),
    "limits": dict(use_min_distance=True, distance_min=0.4, use_max_distance=True, distance_max=1.6,
                   use_radial_min=True, radial_min=0.2, use_radial_max=True, radial_max=1.2),
    "flow_noise": dict(flow=0.7, noise=0.8, seed=7, use_gravity_falloff=True, use_global_coords=True,
                       linear_drag=3.0, harmonic_damping=0.4, rest_length=0.3, size=0.6),
    "power": dict(falloff_power=1.5, radial_falloff=0.8, use_max_distance=True, distance_max=2.0, flow=0.2,
                  noise=0.3, seed=12345, linear_drag=0.5, strength=-1.7, rest_length=0.0),
}


def _exact(f: ForceField) -> bool:
    """Whether the C arithmetic is NumPy's throughout (no pow, no acos that matters)."""
    return f.falloff_power == 0.0 and (f.falloff_type != "CONE" or (f.radial_falloff == 0.0 and not f.use_radial_min
                                                                    and not f.use_radial_max))


def _compare(got, want, exact):
    if exact:
        assert_same(got, want)
    else:
        scale = max(float(np.max(np.abs(want))), 1e-300)
        np.testing.assert_allclose(got, want, rtol=0.0, atol=RELATIVE * scale)


def _points(rng, n=400):
    x = rng.normal(scale=1.2, size=(n, 3))
    x[:3] = 0.0  # on the origin and the axes (zero distances, the where= branches)
    return np.ascontiguousarray(x)


@pytest.mark.parametrize("falloff", FALLOFFS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", FIELD_KINDS)
def test_field_terms_and_air_velocity_equal_numpy(library, kind, shape, falloff):
    rng = np.random.default_rng(zlib.crc32(f"{kind} {shape} {falloff}".encode()))
    x = _points(rng)
    v = np.ascontiguousarray(rng.normal(size=x.shape))
    loads = FieldLoads(library, np.ones(len(x)), np.array([0.0, 0.0, -9.81]))
    for z_direction in Z_DIRECTIONS:
        for name, variant in VARIANTS.items():
            settings = {"strength": 1.3, **variant}
            matrix = _pose(rng)
            f = ForceField(kind, matrix=matrix, shape=shape, falloff_type=falloff, z_direction=z_direction,
                           **settings)
            table = field_table([f])
            t = float(rng.uniform(0.0, 3.0))
            a0, c = loads.terms(x, v, table, t)
            want_a0, want_c = field_terms([f], x, v, t)
            _compare(a0, want_a0, _exact(f))
            _compare(c, want_c, _exact(f))
            _compare(loads.air_velocity(x, table, t), air_velocity([f], x, t), _exact(f))
            if kind != "WIND" and name != "limits":
                assert np.any(want_a0) or np.any(want_c), (kind, shape, falloff, z_direction, name)


def test_many_fields_at_once_equal_numpy(library):
    """Every kind together (the terms summed in field order), WIND among them, with noise and pow."""
    rng = np.random.default_rng(4)
    x = _points(rng, 600)
    v = np.ascontiguousarray(rng.normal(size=x.shape))
    loads = FieldLoads(library, np.ones(len(x)), np.zeros(3))
    for exact in (True, False):
        fields = []
        for kind in FIELD_KINDS + FIELD_KINDS:
            settings = dict(VARIANTS["flow_noise" if exact else "power"])
            fields.append(ForceField(kind, matrix=_pose(rng), shape=SHAPES[rng.integers(3)],
                                     falloff_type=FALLOFFS[rng.integers(2)], **settings))
        table = field_table(fields)
        got, want = loads.terms(x, v, table, 0.7), field_terms(fields, x, v, 0.7)
        for a, b in zip(got, want):
            _compare(a, b, exact)
        _compare(loads.air_velocity(x, table, 0.7), air_velocity(fields, x, 0.7), exact)


def _cloth(n=9, seed=3):
    return jittered_cloth(n, curved=False, seed=seed)


@pytest.mark.parametrize("air", [0.0, 1.3])
def test_body_loads_with_fields_equal_numpy(library, air):
    """``BodyLoads.apply`` with turbulence, a vortex, drag, a harmonic spring and a gusty wind (field weight 0.7), on
    a cloth with pins, with and without air, over a few steps (the air's faces re-measured on its clock): C bit for
    bit with NumPy, the air's cache handed back and forth."""
    model, x0, rng = _cloth()
    config = SolverConfig(solver="XPBD", air_drag=air, field_weight=0.7)
    numpy_loads, native_loads = BodyLoads(model, config), BodyLoads(model, config)
    inv_mass = np.ascontiguousarray(model.inv_mass)
    if air:
        native_loads.native = AirLoads(library, native_loads.air, inv_mass, native_loads.gravity)
    native_loads.fields_native = FieldLoads(library, inv_mass, np.ascontiguousarray(native_loads.gravity),
                                            native_loads.native)
    fields = [ForceField("TURBULENCE", strength=5.0, size=0.7), ForceField("VORTEX", shape="LINE", strength=0.8),
              ForceField("DRAG", strength=0.3, linear_drag=0.5), ForceField("HARMONIC", strength=2.0, rest_length=0.5),
              ForceField("WIND", matrix=_pose(rng), strength=2.0, noise=1.0, z_direction="POSITIVE")]
    x, v = x0.copy(), rng.normal(size=x0.shape)
    y, u = x.copy(), v.copy()
    pinned, start = model.inv_mass == 0.0, v.copy()
    dt = 1.0 / 720.0
    for step in range(6):
        numpy_loads.apply(x, v, dt, fields, 0.3 + step * dt)
        native_loads.apply(y, u, dt, fields, 0.3 + step * dt)
        assert_same(u, v)
        x += dt * v
        y += dt * u
    assert np.array_equal(u[pinned], start[pinned])  # the loads move free particles only
    assert not np.array_equal(u[~pinned], start[~pinned])


def _lab(n=20):
    vertices, edges, triangles = grid_cloth(n, 10.0, height=3.0, diagonals=False)
    pinned = np.zeros(n * n, bool)
    pinned[[0, n - 1]] = True
    model = build_model(vertices, edges, triangles, pinned=pinned, total_mass=1.0)
    return model, Sphere(np.zeros(3), 2.7, name="sphere"), GroundPlane(np.array([0.0, 0.0, -3.0]),
                                                                        np.array([0.0, 0.0, 1.0]), name="ground")


def _frames(model, colliders, compute, frames, fields, air=0.0, whole=True):
    config = SolverConfig(solver="XPBD", stiffness=1.0e4, damping=0.1, substeps=12, iterations=2, tether_stretch=0.01,
                          compute=compute, air_drag=air, field_weight=0.8)
    solver = make_solver(model, config)
    if not whole:
        solver.native_frame = lambda run, dt, colliders=(): False
    state, previous, out = State.at_rest(model), None, []
    for f in range(frames):
        targets = model.rest_positions.copy()
        targets[:, 0] += (f + 1) / 24.0
        advance_frame(solver, state, 1.0 / 24.0, config.substeps, frame_colliders(previous, colliders), targets,
                      fields(f))
        previous = colliders
        out.append(state.x.copy())
    return out


def _animated(kind, **settings):
    """FrameFields of frame f: a field turning and strengthening over the frames."""
    def at(f):
        def field(g):
            matrix = np.eye(4)
            angle = 0.3 * g
            matrix[:3, :3] = [[1.0, 0.0, 0.0], [0.0, np.cos(angle), -np.sin(angle)], [0.0, np.sin(angle), np.cos(angle)]]
            matrix[:3, 3] = [0.2 * g, 0.0, 1.0]
            return ForceField(kind, matrix=matrix, strength=settings.get("strength", 3.0) + 0.5 * g,
                              **{k: value for k, value in settings.items() if k != "strength"})
        return FrameFields([field(f)], [field(f + 1)], f / 24.0, 1.0 / 24.0)
    return at


CASES = {
    "turbulence": (dict(kind="TURBULENCE", strength=5.0, size=1.0, flow=0.3), 0.0, True),
    "force": (dict(kind="FORCE", strength=-4.0, shape="LINE", use_max_distance=True, distance_max=6.0), 1.0, True),
    "gusty_wind": (dict(kind="WIND", strength=4.0, noise=1.0, seed=3), 1.0, True),
    "vortex_drag": (dict(kind="VORTEX", strength=0.5, shape="PLANE"), 0.0, True),
    "harmonic_cone": (dict(kind="HARMONIC", strength=1.5, rest_length=1.0, falloff_type="CONE",
                           radial_falloff=0.5, falloff_power=0.7), 1.0, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_animated_fields_take_the_frame_call(library, case, monkeypatch):
    """Fields animated over frames (pose and strength): whole frames in one call equal the per-substep native path
    (bit for bit: the same kernel) and Compute NUMPY (bit for bit, or to RELATIVE with pow / acos); and the fields
    move the cloth."""
    settings, air, exact = CASES[case]
    fields = _animated(**settings)
    model, sphere, ground = _lab()
    colliders = [sphere, ground]
    done = []
    original = PositionBasedSolver.native_frame
    monkeypatch.setattr(PositionBasedSolver, "native_frame", lambda self, *a: done.append(original(self, *a)) or done[-1])
    whole = _frames(model, colliders, "AUTO", 4, fields, air)
    assert done == [True] * 4
    monkeypatch.setattr(PositionBasedSolver, "native_frame", original)
    pieces = _frames(model, colliders, "AUTO", 4, fields, air, whole=False)
    reference = _frames(model, colliders, "NUMPY", 4, fields, air)
    still = _frames(model, colliders, "NUMPY", 4, lambda f: None, air)
    for a, b, c in zip(whole, pieces, reference):
        assert_same(a, b)
        _compare(a, c, exact) if exact else np.testing.assert_allclose(a, c, rtol=0.0, atol=1e-9)
    assert np.abs(whole[-1] - still[-1]).max() > 1e-4


def test_field_bindings_refuse_bad_input(library):
    model, x, _ = _cloth()
    n = model.particle_count
    inv_mass = np.ascontiguousarray(model.inv_mass)
    loads = FieldLoads(library, inv_mass, np.zeros(3))
    v = np.zeros((n, 3))
    good = field_table([ForceField("FORCE"), ForceField("TURBULENCE", seed=5)])
    for column, value, message in [(0, 6.0, "kind"), (1, 3.0, "shape"), (2, -1.0, "falloff_type"),
                                   (3, 1.5, "z_direction"), (4, 128.0, "flags"), (14, 2.0 ** 32, "seed term"),
                                   (0, np.nan, "kind")]:
        bad = good.copy()
        bad[1, column] = value
        with pytest.raises(ValueError, match=message):
            loads.apply_table(x, v, 0.01, bad, 0.0, 1.0)
    with pytest.raises(ValueError, match="table: shape"):
        loads.terms(x, v, good[:, :-1].copy(), 0.0)
    with pytest.raises(ValueError, match="table: dtype"):
        loads.air_velocity(x, good.astype(np.float32), 0.0)
    with pytest.raises(ValueError, match="table: must be C-contiguous"):
        loads.apply_table(x, v, 0.01, np.zeros((4, FIELD_ROW))[::2], 0.0, 1.0)
    with pytest.raises(ValueError, match="x: shape"):
        loads.apply_table(x[:-1].copy(), v, 0.01, good, 0.0, 1.0)
    with pytest.raises(ValueError, match="x: dtype"):
        loads.apply_table(x.astype(np.float32), v, 0.01, good, 0.0, 1.0)
    with pytest.raises(ValueError, match="inv_mass: dtype"):
        FieldLoads(library, inv_mass.astype(np.float32), np.zeros(3))
    with pytest.raises(ValueError, match="gravity: shape"):
        FieldLoads(library, inv_mass, np.zeros(2))
    other, _, _ = _cloth(n=5)
    air = AirLoads(library, BodyLoads(other, SolverConfig(air_drag=1.0)).air, np.ascontiguousarray(other.inv_mass),
                   np.zeros(3))
    with pytest.raises(ValueError, match="air: expected"):
        FieldLoads(library, inv_mass, np.zeros(3), air)


def test_the_frame_call_refuses_a_bad_fields_table(library):
    model, sphere, ground = _lab(8)
    solver = make_solver(model, SolverConfig(solver="XPBD", substeps=4, air_drag=1.0))
    frame = solver._cloth_frame()
    state = State.at_rest(model)
    args = (state.x, state.v, 0.01, 4, 1, True, 1.0, None, 100.0, solver._gravity, state.x[[0, 7]], state.x[[0, 7]],
            [[sphere]] * 4)
    table = np.zeros((4, 1, FIELD_ROW))
    table[:, 0, 0] = 1.0
    for fields, message in [((table[:3].copy(), np.zeros(3), 1.0), "fields: shape"),
                            ((table, np.zeros(5), 1.0), "field times: shape"),
                            ((table * 9.0, np.zeros(4), 1.0), "fields: kind")]:
        with pytest.raises(ValueError, match=message):
            frame.prepare(*args, fields=fields)
    with pytest.raises(ValueError, match="either wind or force fields"):
        frame.prepare(*args, wind=np.zeros((4, 3)), fields=(table, np.zeros(4), 1.0))
    frame.prepare(*args, fields=(table, np.zeros(4), 1.0))
    assert frame.plan.field_count == 1


def test_substep_fields_follow_apply_loads(library):
    """``FrameRun.substep_fields``: each substep's fields at its middle and its time, as ``apply_loads`` takes them."""
    model, _, _ = _lab(6)
    solver = make_solver(model, SolverConfig(solver="XPBD", substeps=5, field_weight=0.6))
    fields = _animated("FORCE", strength=2.0, noise=0.5)(3)
    run = FrameRun(solver, State.at_rest(model), 5, None, fields)
    table, times, weight = run.substep_fields()
    assert table.shape == (5, 1, FIELD_ROW) and weight == 0.6
    for k in range(1, 6):
        middle = 0.5 * ((k - 1) / 5 + k / 5)
        assert np.array_equal(table[k - 1], field_table(fields.at(middle)))
        assert times[k - 1] == fields.time + middle * fields.duration
    assert FrameRun(solver, State.at_rest(model), 5, None, None).substep_fields() is None
