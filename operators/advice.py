"""What to tell the user when an explicit mass-spring bake diverges: the limit, the substeps that would work.

The numbers come from the engine (``solvers.mass_spring``: the stability bound); the sentences live here.
"""
import math

import numpy as np

from ..solvers.mass_spring import explicit_stable_substep, substeps_needed


def _seconds(t: float) -> str:
    """A duration with two significant digits in a fitting unit: '4.2 ms', '0.42 ms', '17 µs'."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if t >= 0.1 * scale or unit == "ns":
            return f"{t / scale:.2g} {unit}"
    return f"{t:.2g} s"  # pragma: no cover


def _frame(frame_dt: float) -> str:
    fps = 1.0 / frame_dt
    return f"1/{round(fps)} s" if abs(fps - round(fps)) < 1e-6 * fps else _seconds(frame_dt)


def explicit_stability_message(frame_dt: float, substeps: int, model, stiffness,
                               solver: str = "SYMPLECTIC_EULER", damping: float = 0.0,
                               bending_stiffness: float = 0.0) -> str:
    """What to tell the user when an explicit bake diverged (``solvers.frame.SimulationDiverged``).

    ``stiffness`` [N/m]: a scalar for every edge (the advice names the Stiffness to lower it to) or a per-edge
    array (a solid: the advice names the factor by which to make the material softer, i.e. lower E).

    Pass ``solver=config.solver``, ``damping=config.damping`` and ``bending_stiffness=config.bending_stiffness``:
    forward Euler's limit is far smaller than symplectic Euler's and depends on the damping; cloth bending adds to
    the highest frequency.
    """
    dt = frame_dt / substeps
    uses = f"this bake uses {_seconds(dt)} ({_frame(frame_dt)} ÷ {substeps} substeps)"
    limit = explicit_stable_substep(model, stiffness, solver, damping, bending_stiffness)
    name = "explicit (forward) Euler" if solver == "EXPLICIT_EULER" else "symplectic Euler"
    if limit == math.inf:
        return f"{name} diverged although no spring can oscillate; {uses}: check the pins and the colliders"
    if limit <= 0.0:
        per_damping = explicit_stable_substep(model, stiffness, solver, 1.0, bending_stiffness)
        return (f"explicit (forward) Euler gains energy at every step size unless damped; {uses}: raise Damping "
                f"(each 1/s of Damping makes it stable for steps up to {_seconds(per_damping)}), or use "
                "SYMPLECTIC_EULER or IMPLICIT_EULER")
    if dt <= limit:
        return (f"{name} diverged although {uses}, within its estimated limit of {_seconds(limit)}: "
                "large deformations or collisions can still excite it; raise Substeps or use IMPLICIT_EULER")
    needed = substeps_needed(frame_dt, model, stiffness, solver, damping, bending_stiffness)
    # dt_max scales as 1/sqrt(k) for symplectic Euler and 1/k for forward Euler.
    power = 1.0 if solver == "EXPLICIT_EULER" else 2.0
    factor = (limit / dt) ** power
    if np.ndim(stiffness) == 0:
        softer = f"lower Stiffness to {float(stiffness) * factor:.2g} N/m"
    else:
        softer = f"make the material {1.0 / factor:.2g}x softer (lower Young's modulus)"
    return (f"{name} is stable only for steps up to {_seconds(limit)}; {uses}: raise Substeps to at least "
            f"{needed} or {softer}, or use IMPLICIT_EULER")
