"""The force fields and the air, pure engine, checked against physics and against Blender's documented formulas.

Blender's falloff (``effect.cc``, ``falloff_func``): f(s) = 0 beyond distance_max (when used), 1 within distance_min
(when used), else (1 + s - s_min)^-power; TUBE multiplies f(|z|) by the radial g(rho), CONE by g(angle in degrees).
"""
import numpy as np
import pytest

import solvers
from solvers.forces import AIR_DENSITY, AirDrag, ForceField, FrameFields, air_velocity, falloff, field_forces
from solvers.forces.noise import turbulence

FRAME = 1.0 / 24.0


def sheet_model(n=11, size=1.0, mass=0.25, edge_on=False, pinned_top=False):
    v, e, t = solvers.grid_cloth(n, size, 0.0)
    if edge_on or pinned_top:
        v = v[:, [0, 2, 1]]  # the sheet in the XZ plane: hanging, its normal along Y
    pinned = np.isclose(v[:, 2], v[:, 2].max()) if pinned_top else None
    return solvers.build_model(v, e, t, pinned=pinned, total_mass=mass)


def run(model, config, frames, fields=None):
    solver = solvers.make_solver(model, config)
    state = solvers.State.at_rest(model)
    history = []
    for f in range(frames):
        frame_fields = fields(f) if callable(fields) else fields
        solvers.advance_frame(solver, state, FRAME, config.substeps, fields=frame_fields)
        history.append(state.x.copy())
    return np.array(history)


def wind(strength, direction=(0.0, 1.0, 0.0), **settings):
    """A WIND field blowing along ``direction`` (its +Z axis turned there), planar, no falloff."""
    z = np.asarray(direction, float)
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    matrix = np.eye(4)
    matrix[:3, 0], matrix[:3, 1], matrix[:3, 2] = x, np.cross(z, x), z
    matrix[:3, 3] = -5.0 * z
    return ForceField("WIND", matrix=matrix, strength=strength, shape="PLANE", **settings)


def steady(fields):
    return FrameFields(fields, fields, 0.0, FRAME)


# ---------------------------------------------------------------------- air: falling sheets


@pytest.mark.parametrize("solver", ["XPBD", "PBD", "PROJECTIVE", "IMPLICIT_EULER", "NEWTON"])
def test_a_flat_sheet_falls_at_the_terminal_velocity_of_the_drag_law(solver):
    """m g = 1/2 rho C A v^2: a 1 m^2 sheet of 0.25 kg with C = 1 falls at sqrt(2 m g / (rho C A)) = 2.02 m/s."""
    model = sheet_model()
    config = solvers.SolverConfig(solver=solver, air_drag=1.0, damping=0.0)
    z = run(model, config, 72)[:, :, 2].mean(axis=1)
    measured = -(z[-1] - z[-13]) / (12 * FRAME)
    law = np.sqrt(2 * 0.25 * 9.81 / (AIR_DENSITY * 1.0 * 1.0))
    assert measured == pytest.approx(law, rel=0.02)


def test_an_edge_on_sheet_falls_much_faster_and_a_sheet_in_vacuum_freely():
    model, edge = sheet_model(), sheet_model(edge_on=True)
    config = solvers.SolverConfig(solver="XPBD", air_drag=1.0, damping=0.0)
    flat_drop = -run(model, config, 24)[-1, :, 2].mean()
    edge_drop = -(run(edge, config, 24)[-1, :, 2].mean() - edge.rest_positions[:, 2].mean())
    vacuum = -run(model, solvers.SolverConfig(solver="XPBD", damping=0.0), 24)[-1, :, 2].mean()
    assert vacuum == pytest.approx(0.5 * 9.81, rel=0.02)
    assert edge_drop > 2.5 * flat_drop  # 4.6 m against 1.7 m in the first second
    assert edge_drop > 0.9 * vacuum  # edge-on only the skin friction (2%) acts


def test_air_relax_is_backward_euler_of_the_quadratic_law_and_never_reverses():
    model = sheet_model(n=3)
    air = AirDrag(model.triangle_indices, model.particle_count, 1.0)
    w = np.tile([0.3, -0.2, -50.0], (model.particle_count, 1))
    dt = 0.5
    after = air.relax(model.rest_positions, w, dt, model.inv_mass)
    # m (w' - w) / dt = F(w') exactly
    residual = model.mass[:, None] * (after - w) / dt - air.forces(model.rest_positions, after)
    assert np.abs(residual).max() < 1e-9 * np.abs(model.mass[:, None] * w / dt).max()
    assert np.all(np.sign(after[:, 2]) == np.sign(w[:, 2])) and np.all(np.abs(after[:, 2]) < 50.0)


# ---------------------------------------------------------------------- wind on a hanging sheet


def test_a_steady_wind_deflects_a_hanging_sheet_to_its_force_balance():
    """A 1 m sheet pinned along its top edge in a wind across it comes to rest where the moments about its top edge
    balance: a flat sheet at angle theta from the vertical meets the air at u cos(theta) across its normal, so the
    drag 1/2 rho C A (u cos theta)^2 and the weight m g, both at half its height, balance when
    sin(theta) = 1/2 rho C A u^2 cos(theta)^2 / (m g): 53.0 degrees at 3 m/s for 0.25 kg."""
    model = sheet_model(pinned_top=True)
    u, mass = 3.0, 0.25
    config = solvers.SolverConfig(solver="XPBD", air_drag=1.0, damping=1.0, bending_stiffness=1e-3)
    x = run(model, config, 96, steady([wind(u)]))
    last = x[-1]
    free = model.inv_mass > 0
    # The sheet's mean tilt: from the pinned edge to the centroid of the free part.
    top = model.rest_positions[~free].mean(axis=0)
    arm = last[free].mean(axis=0) - top
    theta = np.arctan2(arm[1], -arm[2])
    q = 0.5 * AIR_DENSITY * 1.0 * 1.0 * u * u
    ratio = q / (mass * 9.81)
    predicted = np.arcsin((-1.0 + np.sqrt(1.0 + 4.0 * ratio * ratio)) / (2.0 * ratio))  # s = ratio (1 - s^2)
    assert np.degrees(theta) == pytest.approx(np.degrees(predicted), abs=2.0)
    assert np.abs(x[-1] - x[-13]).max() < 0.05  # settled (a flag flutters a little at its hem)


def test_field_strength_zero_and_field_weight_zero_leave_a_hanging_sheet_still():
    model = sheet_model(pinned_top=True)
    # (A planar VORTEX at strength 0 still damps motion toward its still air, as Blender's does: not in this list.)
    for fields, weight in (([wind(0.0), ForceField("FORCE", strength=0.0), ForceField("TURBULENCE", strength=0.0)], 1.0),
                           ([wind(5.0), ForceField("FORCE", strength=20.0)], 0.0)):
        config = solvers.SolverConfig(solver="XPBD", air_drag=1.0, field_weight=weight)
        x = run(model, config, 24, steady(fields))
        still = run(model, solvers.SolverConfig(solver="XPBD", air_drag=1.0), 24)
        assert np.abs(x - still).max() < 1e-9


def test_wind_acts_through_faces_so_a_rope_feels_none_and_air_drag_zero_turns_it_off():
    verts = np.stack([np.zeros(11), np.zeros(11), -np.linspace(0, 1, 11)], axis=1)
    edges = np.stack([np.arange(10), np.arange(1, 11)], axis=1)
    rope = solvers.build_model(verts, edges, pinned=np.arange(11) == 0, total_mass=0.25)
    config = solvers.SolverConfig(solver="XPBD", air_drag=1.0)
    x = run(rope, config, 24, steady([wind(5.0)]))
    assert np.abs(x - run(rope, config, 24)).max() < 1e-12
    sail = sheet_model(pinned_top=True)
    moved = run(sail, config, 24, steady([wind(5.0)]))[-1, :, 1].max()
    calm = run(sail, solvers.SolverConfig(solver="XPBD", air_drag=0.0), 24, steady([wind(5.0)]))[-1, :, 1].max()
    assert moved > 0.3 and abs(calm) < 1e-6


def test_animated_strength_is_followed_through_the_frame():
    """The strength ramps from 0 to 6 m/s over frames 0..24 (FrameFields interpolate within each frame): the sheet
    stays still while it is 0 and moves once it rises; half the ramp moves less than the full one."""
    model = sheet_model(pinned_top=True)
    config = solvers.SolverConfig(solver="XPBD", air_drag=1.0)

    def ramp(f, top=24):
        return FrameFields([wind(6.0 * min(f, top) / top)], [wind(6.0 * min(f + 1, top) / top)], f * FRAME, FRAME)

    def late(f):
        return FrameFields([wind(0.0 if f < 12 else 6.0)], [wind(0.0 if f < 11 else 6.0)], f * FRAME, FRAME)

    x = run(model, config, 24, late)
    assert np.abs(x[10, :, 1]).max() < 1e-9 and x[-1, :, 1].max() > 0.1
    full = run(model, config, 24, ramp)[-1, :, 1].max()
    half = run(model, config, 24, lambda f: ramp(f, 48))[-1, :, 1].max()
    assert 0.0 < half < full


# ---------------------------------------------------------------------- falloff against Blender's formulas


def blender_falloff(s, use_min, s_min, use_max, s_max, power):
    if use_max and s > s_max:
        return 0.0
    if use_min and s < s_min:
        return 1.0
    return (1.0 + s - (s_min if use_min else 0.0)) ** -power


def points(k=400, seed=1):
    return np.random.default_rng(seed).uniform(-4, 4, (k, 3))


@pytest.mark.parametrize("use_min,use_max,power", [(False, False, 2.0), (True, False, 1.5), (False, True, 3.0), (True, True, 0.5)])
def test_sphere_falloff_matches_blenders_formula(use_min, use_max, power):
    f = ForceField("FORCE", matrix=np.eye(4), falloff_type="SPHERE", falloff_power=power, use_min_distance=use_min,
                   distance_min=1.0, use_max_distance=use_max, distance_max=3.0)
    x = points()
    expected = [blender_falloff(np.linalg.norm(p), use_min, 1.0, use_max, 3.0, power) for p in x]
    assert falloff(f, x) == pytest.approx(expected, rel=1e-12)


def test_tube_and_cone_falloff_match_blenders_formulas():
    m = np.eye(4)
    m[:3, 3] = (0.5, -0.2, 0.1)
    x = points()
    tube = ForceField("FORCE", matrix=m, falloff_type="TUBE", falloff_power=1.0, use_max_distance=True, distance_max=2.5,
                      use_radial_min=True, radial_min=0.5, use_radial_max=True, radial_max=3.0, radial_falloff=2.0)
    cone = ForceField("FORCE", matrix=m, falloff_type="CONE", falloff_power=1.0, use_min_distance=True, distance_min=1.0,
                      use_radial_max=True, radial_max=60.0, radial_falloff=0.5)
    rel = x - m[:3, 3]
    z, rho = rel[:, 2], np.linalg.norm(rel[:, :2], axis=1)
    angle = np.degrees(np.arccos(z / np.linalg.norm(rel, axis=1)))
    expected_tube = [blender_falloff(abs(a), False, 0, True, 2.5, 1.0) * blender_falloff(r, True, 0.5, True, 3.0, 2.0)
                     for a, r in zip(z, rho)]
    expected_cone = [blender_falloff(abs(a), True, 1.0, False, 0, 1.0) * blender_falloff(g, False, 0, True, 60.0, 0.5)
                     for a, g in zip(z, angle)]
    assert falloff(tube, x) == pytest.approx(expected_tube, rel=1e-12)
    assert falloff(cone, x) == pytest.approx(expected_cone, rel=1e-12)


def test_plane_shape_measures_distance_from_the_plane_and_z_direction_cuts_a_side():
    f = ForceField("FORCE", strength=2.0, shape="PLANE", falloff_power=1.0, z_direction="POSITIVE")
    x = np.array([[3.0, -1.0, 1.0], [0.0, 0.0, 3.0], [1.0, 1.0, -2.0]])
    assert falloff(f, x) == pytest.approx([0.5, 0.25, 0.0])
    a = field_forces([f], x, np.zeros_like(x))
    assert a == pytest.approx(np.array([[0, 0, 1.0], [0, 0, 0.5], [0, 0, 0]]))  # pushed away from the plane


# ---------------------------------------------------------------------- each field's law


def test_each_field_kind_follows_its_law():
    x = np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 1.0]])
    v = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    force = field_forces([ForceField("FORCE", strength=-3.0)], x, v)
    assert force == pytest.approx(-3.0 * x / np.linalg.norm(x, axis=1)[:, None])  # an attractor
    harmonic = field_forces([ForceField("HARMONIC", strength=4.0, harmonic_damping=0.5)], x, v)
    assert harmonic == pytest.approx(-4.0 * x - 2 * 0.5 * 2.0 * v)
    drag = field_forces([ForceField("DRAG", strength=0.5, linear_drag=1.0)], x, v)
    assert drag == pytest.approx(-(1.0 + 0.5 * np.linalg.norm(v, axis=1))[:, None] * v)
    swirl = field_forces([ForceField("VORTEX", strength=2.0, shape="POINT")], x, np.zeros_like(x))
    assert swirl[0] == pytest.approx([0.0, 2.0 * 2.0, 0.0])  # tangential, strength * distance
    turbulence_a = field_forces([ForceField("TURBULENCE", strength=5.0, size=0.5)], points(), np.zeros((400, 3)))
    assert np.abs(turbulence_a).max() <= 5.0 and turbulence_a.std() > 0.5
    assert air_velocity([wind(4.0, (1.0, 0.0, 0.0), falloff_power=0.0)], x) == pytest.approx(np.tile([4.0, 0, 0], (2, 1)))


def test_turbulence_noise_is_deterministic_smooth_and_in_range():
    p = points(2000)
    a, b = turbulence(p, 1.0), turbulence(p, 1.0)
    assert np.array_equal(a, b) and a.min() >= 0.0 and a.max() <= 1.0 and abs(a.mean() - 0.5) < 0.05
    near = turbulence(p + 1e-4, 1.0)
    assert np.abs(near - a).max() < 1e-2


def test_a_vortex_carries_particles_around_its_axis():
    verts = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    model = solvers.build_model(verts, np.array([[0, 1]]), total_mass=1.0)
    config = solvers.SolverConfig(solver="XPBD", gravity=(0.0, 0.0, 0.0), damping=0.0)
    x = run(model, config, 48, steady([ForceField("VORTEX", strength=1.0, shape="PLANE")]))
    angle = np.arctan2(x[:, 0, 1], x[:, 0, 0])
    assert np.all(np.diff(np.unwrap(angle)) > 0)  # turning counter-clockwise about +Z
    assert np.linalg.norm(x[-1, 0, :2]) == pytest.approx(1.0, abs=0.1)  # on its circle
