"""The scene's force fields and the air acting on a body over one solver step, as a change of its velocities.

Every solver (PBD, XPBD, Projective Dynamics, the mass-spring integrators, Newton) takes the same external loads
through ``apply_loads``, called by ``frame.FrameRun`` before each solver step: the step then starts from velocities
that already carry the fields and the air, the way it already carries gravity. For a free particle, with g gravity,
a = a0 - c v the non-WIND fields' acceleration (``fields.field_terms``, times the body's ``field_weight``), u the
air's velocity (the WIND fields', times ``field_weight``) and D_dt the air drag over dt (``air.AirDrag.relax``):

    p  = (v + dt (g + a0)) / (1 + dt c)      the step's explicit kick, its damping taken implicitly,
    p' = u + D_dt(p - u)                      the air drag on the velocity the step will move with, implicitly,
    v <- p' - dt g                            gravity is added back by the solver's own step.

So each solver moves its free particles with p' over the step (position-based solvers predict x + dt (v + dt g),
Newton's x_tilde + dt^2 g is the same), which is backward Euler in the drag (exact for its quadratic law,
``air.AirDrag.relax``) and in the fields' damping (its coefficient frozen at the step's start). Why this and not a
term in each solver's own system: it is one code path for seven integrators, and it is stable at any step (each
implicit factor shrinks a relative velocity, never reverses it: Newton's and implicit Euler's one or two steps per
frame stay stable however strong the air), and its steady states are exact: a flat sheet falls at exactly
sqrt(2 m g / (rho C A)) at any step (drag balances gravity on p', the velocity positions move with; measured 2.022
m/s against the law's 2.022 for XPBD, implicit Euler and Newton alike), and a sheet held in the wind feels exactly
the drag at its held velocity. What it gives up is the coupling of drag and elasticity within one step (split to
first order, as gravity's kick is).
The acceleration a0 is explicit: a HARMONIC field of strength k is stable while sqrt(k) dt < 2.
"""
from dataclasses import dataclass, field

import numpy as np

from .air import AirDrag
from .fields import air_velocity, blend, field_terms, uniform_air_velocity


@dataclass
class FrameFields:
    """The force fields a body sees over one scene frame: each field at the frame's start and at its end (the same
    fields, in the same order), and the frame's time span [s]. A field's settings and pose move linearly in between
    (``fields.blend``), so an animated field is followed through the substeps."""

    start: list = field(default_factory=list)
    end: list = field(default_factory=list)
    time: float = 0.0
    """Scene time [s] at the frame's start."""
    duration: float = 0.0
    """The frame's length [s]."""

    def at(self, s: float) -> list:
        """The fields a fraction s in [0, 1] of the way through the frame."""
        return [blend(a, b, s) for a, b in zip(self.start, self.end)]


class BodyLoads:
    """The external loads on one body (its Model and SolverConfig): air on its faces (``config.air_drag`` > 0 and it
    has triangles and no tets) and the fields, weighted by ``config.field_weight``. ``active`` says whether any of it
    can act (the body has air, or fields act with a positive weight)."""

    def __init__(self, model, config):
        self.model = model
        self.weight = float(getattr(config, "field_weight", 1.0))
        coefficient = float(getattr(config, "air_drag", 0.0))
        has_faces = len(model.triangle_indices) > 0 and not model.tet_count
        self.air = AirDrag(model.triangle_indices, model.particle_count, coefficient) if coefficient > 0.0 and has_faces else None
        self.gravity = np.asarray(config.gravity, float)
        self.free = model.inv_mass > 0.0
        self.all_free = bool(self.free.all())
        self.native = None
        """The air in C (``native.kernels.AirLoads``, set by ``frame.body_loads`` with the native library), used for
        steps without fields or with WIND fields that blow the same everywhere: the same arithmetic in the same
        order."""
        self.fields_native = None
        """The fields and the air in C (``native.kernels.FieldLoads``, set by ``frame.body_loads`` with the native
        library), used for steps with fields other than uniform wind: the same arithmetic in the same order (pow and
        acos, of a falloff_power or a CONE falloff, are the C library's: within an ulp of NumPy's)."""

    def active(self, fields) -> bool:
        return self.air is not None or (self.weight > 0.0 and bool(fields))

    def apply(self, x: np.ndarray, v: np.ndarray, dt: float, fields, t: float) -> None:
        """Change the velocities v (n, 3) in place for one solver step of ``dt`` seconds from positions x at time t
        [s] under ``fields`` (a list of ``fields.ForceField`` at that instant) (module docstring)."""
        fields = fields if self.weight > 0.0 else []
        if self.native is not None:
            wind = uniform_air_velocity(fields, t) if fields else None
            if not fields or wind is not None:  # with such wind the field terms below add 0 and divide by 1
                self.native.apply(x, v, dt, None if wind is None else self.weight * wind)
                return
        if self.fields_native is not None and fields:
            self.fields_native.apply(x, v, dt, fields, t, self.weight)
            return
        free = self.free
        g = self.gravity
        p = v + dt * g
        if fields:
            a0, c = field_terms(fields, x, v, t)
            p += dt * self.weight * a0
            p /= (1.0 + dt * self.weight * c)[:, None]
        if self.air is not None:
            u = self.weight * air_velocity(fields, x, t) if fields else np.zeros_like(x)
            p = u + self.air.relax(x, p - u, dt, self.model.inv_mass)
        p -= dt * g
        if self.all_free:
            v[:] = p
        else:
            v[free] = p[free]


def apply_loads(loads, frame_fields, state, dt: float, t0: float, t1: float) -> None:
    """``loads.apply`` for a step over the fractions [t0, t1] of a frame of ``frame_fields`` (FrameFields or None):
    the fields at the step's middle."""
    if loads is None:
        return
    middle = 0.5 * (t0 + t1)
    fields = frame_fields.at(middle) if frame_fields is not None else []
    if not loads.active(fields):
        return
    time = frame_fields.time + middle * frame_fields.duration if frame_fields is not None else 0.0
    loads.apply(state.x, state.v, dt, fields, time)
