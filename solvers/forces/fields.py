"""Force fields: plain data of each field's settings and pose, and what they do to particles, vectorized.

The behaviour follows Blender's effectors (``source/blender/blenkernel/intern/effect.cc``: ``effector_falloff``,
``falloff_func``, ``get_effector_data``, ``do_physical_effector``), re-derived here for whole arrays of particles
and for velocities in m/s (Blender's cloth measures them per frame). What each kind does:

* WIND moves the air: air velocity u = strength * falloff along the field's +Z axis [m/s]. It acts on a body only
  through its faces, by the air model of ``air.py`` (a cloth's ``air_drag``): a sail catches it, a rope does not.
* FORCE, VORTEX, TURBULENCE, DRAG, HARMONIC act on every free particle as accelerations [m/s^2 = N/kg] (Blender's
  particle convention: its force fields push a particle of mass 1 with these forces), split as a = a0 - c v with a0
  the velocity-free part and c >= 0 [1/s] the damping rate, so that ``loads`` can take the damping implicitly:

  - FORCE       a0 = strength * falloff * r / |r| (r from the field's origin; from its XY plane for shape PLANE);
                with ``use_gravity_falloff`` strength / |r|^2;
  - VORTEX      POINT shape: a0 = strength * falloff * |r| * unit(z x r) (a swirl); other shapes: the air turns about
                the field's Z axis at angular velocity w = strength * falloff [rad/s], a0 = w (z x r) - w^2 r_perp
                (carried along and pulled in), c = 1 [1/s] (the particle relaxes to the swirl's velocity);
  - TURBULENCE  a0 = strength * falloff * (2 T(p) - 1) per axis, T the fractal noise of ``noise.turbulence`` with
                feature size ``size`` [m], p relative to the field's origin (world coordinates with
                ``use_global_coords``);
  - DRAG        c = falloff * (linear + quadratic * |v|) (``linear_drag`` [1/s]; quadratic = ``strength`` [1/m],
                Blender's Quadratic, which it stores as the strength; each at most 2 as in Blender);
  - HARMONIC    a0 = -strength * falloff * (r - rest_length r/|r|) (a spring to the field's origin, per kg),
                c = 2 * harmonic_damping * sqrt(|strength|);

  and ``flow`` > 0 adds c += flow * falloff on FORCE, VORTEX and TURBULENCE (Blender: "convert the force into air
  flow"; a particle then tends to the velocity a0 / c).

Falloff (``falloff``): 1 where ``z_direction`` excludes nothing, times, by ``falloff_type``,
SPHERE f(d), TUBE f(|z|) g(rho) and CONE f(|z|) g(angle in degrees from +Z), with d the distance to the field's
origin (to its plane for shape PLANE), z the height along the field's axis, rho the distance from that axis, and

    f(s) = 0 if use_max_distance and s > distance_max; 1 if use_min_distance and s < distance_min;
           otherwise (1 + s - s_min)^-falloff_power,  s_min = distance_min if use_min_distance else 0,

g the same with the radial settings (``radial_min``, ``radial_max``, ``radial_falloff``). ``noise`` adds to the strength a
smooth random gust field in [-noise, +noise] (``noise.value_noise`` over space and time with the field's ``seed``;
Blender instead draws a new random number per point and frame, which jitters a cloth).
"""
from dataclasses import dataclass, field, fields as dataclass_fields, replace

import numpy as np

from .noise import turbulence, value_noise

FIELD_KINDS = ("WIND", "FORCE", "VORTEX", "TURBULENCE", "DRAG", "HARMONIC")
SHAPES = ("POINT", "LINE", "PLANE")
FALLOFFS = ("SPHERE", "TUBE", "CONE")
Z_DIRECTIONS = ("BOTH", "POSITIVE", "NEGATIVE")
MAX_DRAG = 2.0
"""Blender clamps a Drag field's linear and quadratic coefficients at 2."""
GUST_LENGTH = 2.0
"""[m] Feature size in space of the noise added to a field's strength."""
GUST_TIME = 0.5
"""[s] Feature time of the noise added to a field's strength: gusts change over about this long."""


@dataclass
class ForceField:
    """One force field at one instant: its Blender settings and its world pose (lengths in m, times in s)."""

    kind: str
    """One of FIELD_KINDS."""
    matrix: np.ndarray = field(default_factory=lambda: np.eye(4))
    """World transform of the field's object (4, 4): origin = translation, axis = normalized third column (+Z)."""
    strength: float = 1.0
    """WIND: air speed [m/s]; FORCE, TURBULENCE: acceleration [m/s^2]; VORTEX (POINT): [1/s^2] times distance; VORTEX
    (other shapes): angular velocity [rad/s]; DRAG: quadratic drag [1/m]; HARMONIC: spring rate per kg [1/s^2]."""
    shape: str = "POINT"
    falloff_type: str = "SPHERE"
    falloff_power: float = 0.0
    use_min_distance: bool = False
    distance_min: float = 0.0
    use_max_distance: bool = False
    distance_max: float = 0.0
    use_radial_min: bool = False
    radial_min: float = 0.0
    use_radial_max: bool = False
    radial_max: float = 0.0
    radial_falloff: float = 0.0
    z_direction: str = "BOTH"
    flow: float = 0.0
    """[1/s] FORCE, VORTEX, TURBULENCE: damping toward the field's flow (see the module docstring)."""
    noise: float = 0.0
    """Amplitude of the smooth random change of ``strength`` (its unit)."""
    seed: int = 0
    size: float = 1.0
    """TURBULENCE: feature size of the noise [m]."""
    use_global_coords: bool = False
    """TURBULENCE: the noise is fixed in the world instead of moving with the field."""
    use_gravity_falloff: bool = False
    """FORCE: strength / distance^2."""
    linear_drag: float = 0.0
    """DRAG: [1/s] (the quadratic coefficient [1/m] is ``strength``: Blender keeps Quadratic in the same place)."""
    harmonic_damping: float = 0.0
    """HARMONIC: damping ratio (1 = critical)."""
    rest_length: float = 0.0
    """HARMONIC: distance [m] the spring rests at."""
    name: str = ""

    def __post_init__(self):
        self.matrix = np.asarray(self.matrix, np.float64).reshape(4, 4)
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"unknown force field kind {self.kind!r}; one of {', '.join(FIELD_KINDS)}")
        for value, allowed, what in ((self.shape, SHAPES, "shape"), (self.falloff_type, FALLOFFS, "falloff_type"),
                                     (self.z_direction, Z_DIRECTIONS, "z_direction")):
            if value not in allowed:
                raise ValueError(f"unknown {what} {value!r}; one of {', '.join(allowed)}")

    @property
    def origin(self) -> np.ndarray:
        return self.matrix[:3, 3]

    @property
    def axis(self) -> np.ndarray:
        z = self.matrix[:3, 2]
        length = float(np.linalg.norm(z))
        return z / length if length > 0.0 else np.array([0.0, 0.0, 1.0])


_NUMBERS = tuple(f.name for f in dataclass_fields(ForceField)
                 if f.name not in ("kind", "matrix", "shape", "falloff_type", "z_direction", "seed", "name")
                 and not f.name.startswith("use_"))


def blend(a: ForceField, b: ForceField, s: float) -> ForceField:
    """The field a fraction ``s`` of the way from ``a`` to ``b`` (the same field at two instants): its numbers and
    its matrix interpolated linearly, its switches and choices ``b``'s."""
    if s >= 1.0 or a is b:
        return b
    values = {name: (1.0 - s) * getattr(a, name) + s * getattr(b, name) for name in _NUMBERS}
    return replace(b, matrix=(1.0 - s) * a.matrix + s * b.matrix, **values)


def _distance_falloff(s, use_min, s_min, use_max, s_max, power):
    """Blender's falloff_func over an array of distances s (n,) [m] (or degrees, radially)."""
    base = np.power(1.0 + s - (s_min if use_min else 0.0), -power) if power != 0.0 else np.ones_like(s)
    if use_min:
        base = np.where(s < s_min, 1.0, base)
    if use_max:
        base = np.where(s > s_max, 0.0, base)
    return base


def geometry(f: ForceField, x: np.ndarray):
    """(r, d, z, r_perp) for particles x (n, 3): r (n, 3) from the field's effective centre (its origin; the closest
    point of its Z axis for LINE, of its XY plane for PLANE) to the particle, d = |r| (n,), z (n,) the height along the
    axis above the origin, r_perp (n, 3) the part of x - origin across the axis."""
    rel = x - f.origin
    n = f.axis
    z = (rel[:, 0] * n[0] + rel[:, 1] * n[1]) + rel[:, 2] * n[2]  # in this order, not rel @ n: BLAS's order varies
    along = z[:, None] * n
    r_perp = rel - along
    if f.shape == "PLANE":
        r = along
    elif f.shape == "LINE":
        r = r_perp
    else:
        r = rel
    return r, np.linalg.norm(r, axis=1), z, r_perp


def falloff(f: ForceField, x: np.ndarray) -> np.ndarray:
    """The field's falloff factor (n,) in [0, 1] at particles x (n, 3) (module docstring; Blender's
    ``effector_falloff``)."""
    if _uniform(f):
        return np.ones(len(x))  # 1 everywhere (the default Wind's): no geometry needed
    _, d, z, r_perp = geometry(f, x)
    out = np.ones(len(x))
    if f.z_direction == "POSITIVE":
        out = np.where(z < 0.0, 0.0, out)
    elif f.z_direction == "NEGATIVE":
        out = np.where(z > 0.0, 0.0, out)
    if f.falloff_type == "SPHERE":
        return out * _distance_falloff(d, f.use_min_distance, f.distance_min, f.use_max_distance, f.distance_max,
                                       f.falloff_power)
    out = out * _distance_falloff(np.abs(z), f.use_min_distance, f.distance_min, f.use_max_distance, f.distance_max,
                                  f.falloff_power)
    if f.falloff_type == "TUBE":
        radial = np.linalg.norm(r_perp, axis=1)
    else:  # CONE: the angle [degrees] between the axis and the direction from the origin
        rel = x - f.origin
        length = np.linalg.norm(rel, axis=1)
        cosine = np.divide(z, length, out=np.ones_like(z), where=length > 0.0)
        radial = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    return out * _distance_falloff(radial, f.use_radial_min, f.radial_min, f.use_radial_max, f.radial_max,
                                   f.radial_falloff)


def strength_at(f: ForceField, x: np.ndarray, t: float) -> np.ndarray:
    """The field's strength (n,) at particles x (n, 3) and time t [s]: ``strength`` plus its noise (module
    docstring)."""
    if f.noise <= 0.0:
        return np.full(len(x), float(f.strength))
    p = x / GUST_LENGTH + np.array([1.0, 0.61, 0.37]) * (t / GUST_TIME)
    return f.strength + f.noise * (2.0 * value_noise(p, f.seed) - 1.0)


def _unit(a: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(a, axis=1, keepdims=True)
    return np.divide(a, length, out=np.zeros_like(a), where=length > 0.0)


def _uniform(f: ForceField) -> bool:
    """Whether ``falloff`` is 1 everywhere (its first test: no geometry needed)."""
    return f.z_direction == "BOTH" and f.falloff_power == 0.0 and not f.use_max_distance and (
        f.falloff_type == "SPHERE" or (f.radial_falloff == 0.0 and not f.use_radial_max))


def uniform_air_velocity(fields, t: float = 0.0):
    """The air velocity (3,) [m/s] of ``fields`` when they are all WIND fields that blow the same everywhere (falloff 1
    everywhere, no noise): ``air_velocity`` at any particle, the same arithmetic; None when some field varies over
    space or is not WIND. Lets the native air kernel take the wind as one vector (``native.kernels.AirLoads``)."""
    if not all(f.kind == "WIND" and f.noise <= 0.0 and _uniform(f) for f in fields):
        return None
    return air_velocity(fields, np.zeros((1, 3)), t)[0]


def air_velocity(fields, x: np.ndarray, t: float = 0.0) -> np.ndarray:
    """The air's velocity [m/s] at particles x (n, 3) at time t [s]: the sum of the WIND fields' (n, 3)."""
    u = np.zeros_like(x, dtype=np.float64)
    for f in fields:
        if f.kind == "WIND":
            u += (strength_at(f, x, t) * falloff(f, x))[:, None] * f.axis
    return u


def field_terms(fields, x: np.ndarray, v: np.ndarray, t: float = 0.0):
    """(a0 (n, 3) [m/s^2], c (n,) [1/s]): the non-WIND fields' acceleration on particles at x with velocities v (n, 3)
    at time t [s], split as a = a0 - c v (module docstring): a0 without the velocity, c the damping rate."""
    a0 = np.zeros_like(x, dtype=np.float64)
    c = np.zeros(len(x))
    for f in fields:
        if f.kind == "WIND":
            continue
        k = falloff(f, x)
        if not np.any(k):
            continue
        s = strength_at(f, x, t)
        r, d, _, r_perp = geometry(f, x)
        n = f.axis
        if f.kind == "FORCE":
            scale = s * k
            if f.use_gravity_falloff:
                scale = np.divide(scale, d * d, out=np.zeros_like(d), where=d > 1e-12)
            a0 += scale[:, None] * _unit(r)
        elif f.kind == "VORTEX":
            if f.shape == "POINT":
                a0 += (s * k * d)[:, None] * _unit(np.cross(n, r))
            else:
                w = (s * k)[:, None]
                a0 += w * np.cross(n, r_perp) - w * w * r_perp
                c += 1.0
        elif f.kind == "TURBULENCE":
            p = x if f.use_global_coords else (x - f.origin) + n
            turb = np.stack([turbulence(p, f.size), turbulence(p[:, [1, 2, 0]], f.size),
                             turbulence(p[:, [2, 0, 1]], f.size)], axis=1)
            a0 += (s * k)[:, None] * (2.0 * turb - 1.0)
        elif f.kind == "DRAG":
            speed = np.linalg.norm(v, axis=1)
            c += k * (min(f.linear_drag, MAX_DRAG) + np.minimum(s, MAX_DRAG) * speed)
        elif f.kind == "HARMONIC":
            stretch = r
            if f.rest_length > 0.0:
                stretch = r * np.divide(d - f.rest_length, d, out=np.zeros_like(d), where=d > 0.0)[:, None]
            a0 -= (s * k)[:, None] * stretch
            c += 2.0 * f.harmonic_damping * np.sqrt(np.abs(s))
        if f.flow > 0.0 and f.kind in ("FORCE", "VORTEX", "TURBULENCE"):
            c += f.flow * k
    return a0, c


def field_forces(fields, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
    """The non-WIND fields' force per kilogram [N/kg = m/s^2] on particles at x with velocities v (n, 3) at time t [s],
    shape (n, 3): a0 - c v of ``field_terms`` (WIND acts through the faces: ``air_velocity`` and ``air.py``)."""
    a0, c = field_terms(fields, x, v, t)
    return a0 - c[:, None] * v
