"""Native kernels: the hot loops of the solvers in C, compiled ahead of time, loaded with ctypes.

The NumPy code stays the reference and the fallback: a solver built with ``SolverConfig.compute == "AUTO"`` uses
these kernels when the platform's library loads and passes its self-test (``library.load``), and the NumPy path
otherwise; ``"NUMPY"`` always takes the NumPy path. ``status(compute)`` says which path runs and why, in one line.

- ``library``: finding, loading and self-testing the library (layout ``lib/<platform>/softsim_native.<ext>``);
- ``kernels``: the bindings (validation once, raw pointers, one ctypes call per sweep);
- ``selftest``: the checks of every kernel against its NumPy twin (the core at load, each family on first use);
- ``threads``: the shared thread pool of the calls that run on several cores (``thread_count``, ``set_limit``);
- ``src/``: the C11 sources (``tools/build_native.py`` compiles them with the pinned ``zig cc``).
"""
from .library import ABI_VERSION, COMPUTE_MODES, host_platform, load, reload, status, warm_up

__all__ = ["ABI_VERSION", "COMPUTE_MODES", "host_platform", "load", "reload", "status", "warm_up"]
