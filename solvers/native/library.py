"""Finding, loading and checking the native kernel library (C sources in ``solvers/native/src``).

Layout: one shared library per Blender platform, built by ``tools/build_native.py`` with ``zig cc``:

    solvers/native/lib/<platform>/softsim_native.<so|dll|dylib>

with <platform> the Blender extension platform name (``linux-x64``, ``windows-x64``, ``windows-arm64``,
``macos-arm64``, ``macos-x64``; ``host_platform()``). The ``lib/`` folder is a build output (gitignored).

The library is loaded lazily, on the first ``load()`` (which the solvers call when they are built), once per
process: ``ctypes.CDLL``, the ABI version check (``softsim_abi_version`` must return ``ABI_VERSION``), the
argument types of every function (raw pointers as ``c_void_p``, counts as ``c_int64``, so a call costs ~1 us),
and the core self-test (``selftest.run``: the constraint sweeps and tethers every solver uses, on a small problem,
bit for bit with their NumPy twins). Any failure leaves the NumPy path in charge and says why in ``status()``;
nothing raises.

The other kernels come in families (``selftest.FAMILIES``: contacts, substeps, mesh, solids, self, implicit), each
with a self-test of its own, run the first time a solver binds one of its kernels (``NativeLibrary.ready(family)``)
and cached with the library: a box drape never pays for the self-collision or solid tests. A family whose test fails
stays on the NumPy path (the rest of the library runs native) and ``status()`` says which and why.

Environment (for tests and sanitizer runs, not for users): ``SOFTSIM_NATIVE_LIBRARY`` = a path loads that file
instead of the platform's; ``SOFTSIM_COMPUTE=NUMPY`` forces the NumPy path in the whole process.
"""
import ctypes
import os
import platform
import sys
import threading

import numpy as np

ABI_VERSION = 27
"""The C side's SOFTSIM_ABI_VERSION (src/softsim_native.h) these bindings were written for."""

COMPUTE_MODES = ("AUTO", "NUMPY")
"""``SolverConfig.compute``: AUTO runs the native kernels when the library loads and passes its self-test, else
NumPy; NUMPY always runs the NumPy code (the reference)."""

LIBRARY_NAME = "softsim_native"
HERE = os.path.dirname(os.path.abspath(__file__))
LIB_DIR = os.path.join(HERE, "lib")

_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
SIGNATURES = {
    # name: (restype, argtypes); every exported function, checked by tools/build_native.py in each binary too.
    "softsim_abi_version": (_I, ()),
    "softsim_distance_sweep": (None, (_P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _I)),
    "softsim_bending_sweep": (None, (_P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_tether_apply": (_I, (_P, _I, _P, _P, _P, _P, _I, _P, _P)),
    # Solids (src/tets.c, kernels.TetStrainSweep).
    "softsim_tet_strain_sweep": (None, (_P, _I, _P, _P, _P, _P, _P, _P, _P, _D, _P, _I)),
    "softsim_tet_strain_jacobi": (None, (_P, _I, _P, _P, _P, _P, _P, _P, _P, _D, _P, _I, _P, _P, _P)),
    "softsim_tet_strain_symmetric_sweep": (None, (_P, _I, _I, _P, _P, _P, _P, _P, _P, _P, _D, _P, _P, _P)),
    "softsim_predict": (None, (_P, _P, _P, _I, _P, _P, _D)),
    "softsim_velocity": (None, (_P, _P, _P, _I, _D, _D, _I)),
    "softsim_contacts_find": (_I, (_P, _P, _I, _P, _P, _I, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_contacts_project": (None, (_P, _I, _P, _P, _P, _P)),
    "softsim_contacts_stabilize": (None, (_P, _I, _P, _P, _P, _P, _P)),
    "softsim_contacts_friction": (None, (_P, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_contacts_finish": (_I, (_P, _P, _I, _P, _P, _I, _P, _I, _P, _I, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P,
                                     _P, _P)),
    "softsim_contacts_finish_sweeps": (_I, (_P, _P, _I, _P, _P, _I, _P, _I, _I, _P, _I, _P, _I, _P, _P, _P, _P, _P,
                                            _P, _P, _P, _P, _P, _P, _P)),
    "softsim_contacts_deep_faces": (_I, (_P, _P, _I, _P, _I, _P, _P, _I, _P, _I, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_resting": (_I, (_P, _I, _P, _I, _P, _P, _D, _P, _P, _P)),
    "softsim_keep_out": (_I, (_P, _I, _P, _P, _P, _I, _P, _I, _P, _P, _D, _D, _P, _P)),
    "softsim_keep_out_touched": (_I, (_P, _I, _P, _P, _P, _P, _P, _I, _P, _P, _D, _D, _P, _P)),
    # Cloth self-collision's broad phase (src/self_collision.c, self_kernels.SelfPairQuery).
    "softsim_self_vt_pairs": (_I, (_P, _I, _P, _I, _P, _P, _D, _P, _I, _I, _P, _I, _P, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_self_ee_pairs": (_I, (_P, _I, _P, _I, _P, _D, _P, _I, _I, _P, _I, _P, _P, _I, _P, _P, _P, _P, _P)),
    # The same builds split in a prepare step and queries of ranges (self_kernels.SelfPairQuery with threads).
    "softsim_self_vt_prepare": (_I, (_P, _I, _P, _I, _P, _P, _D, _I, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_self_vt_query": (_I, (_P, _I, _P, _I, _P, _P, _D, _P, _I, _I, _P, _P, _P, _P, _P, _I, _I, _I, _I, _I, _P,
                                   _P, _P)),
    "softsim_self_ee_prepare": (_I, (_P, _I, _P, _I, _P, _D, _I, _P, _I, _P, _P, _P, _P, _P)),
    "softsim_self_ee_query": (_I, (_P, _I, _P, _I, _P, _D, _P, _I, _I, _P, _P, _P, _P, _P, _I, _I, _I, _I, _I, _P, _P,
                                   _P)),
    # A cloth's substeps (src/substep.c): the bending Jacobi tail (kernels.BendingJacobi), the air
    # (kernels.AirLoads), the frame's state check, and whole frames of substeps (kernels.ClothFrame: one pointer to a
    # SoftsimClothPlan).
    "softsim_bending_jacobi": (None, (_P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _I, _I, _P, _P, _P)),
    "softsim_air_areas": (None, (_P, _I, _I, _P, _P, _P, _P, _P, _P)),
    "softsim_air_apply": (None, (_P, _P, _I, _P, _P, _D, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_check_state": (_I, (_P, _P, _I, _D)),
    # Force fields (src/fields.c, kernels.FieldLoads): their terms, the WIND fields' air velocity, BodyLoads.apply.
    "softsim_field_terms": (None, (_P, _P, _I, _D, _I, _P, _P, _P)),
    "softsim_air_velocity": (None, (_P, _I, _D, _I, _P, _P)),
    "softsim_fields_apply": (None, (_P, _P, _I, _P, _P, _D, _D, _D, _I, _P, _P, _P, _P, _I, _P, _P, _P, _P, _P, _P,
                                    _P, _P)),
    "softsim_cloth_substeps": (_I, (_P, _I, _I, _P)),
    # A mesh collider's nearest-triangle query (src/mesh_collider.c, mesh_kernels.MeshClosest).
    "softsim_mesh_grid_build": (_I, (_P, _P, _I, _P, _P, _P, _I, _P)),
    "softsim_mesh_closest": (_I, (_P, _P, _I, _P, _P, _P, _P, _P, _P, _D, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_mesh_corner_pairs": (_I, (_P, _P, _P, _I, _P, _D, _P, _P, _P, _P, _P, _P, _P, _I, _P, _P, _P)),
    "softsim_mesh_edge_pairs": (_I, (_P, _P, _P, _I, _P, _D, _P, _P, _P, _P, _P, _P, _P, _I, _P, _P, _P)),
    "softsim_mesh_corner_pushes": (_I, (_P, _P, _P, _P, _P, _P, _P, _P, _I, _D, _P, _P, _P, _P, _P, _P)),
    "softsim_mesh_edge_pushes": (_I, (_P, _P, _P, _P, _P, _P, _P, _P, _I, _D, _P, _P, _P, _P, _P, _P)),
    "softsim_mesh_push_apply": (_I, (_P, _I, _P, _I, _I, _P, _P, _P, _P, _P, _D, _P, _P)),
    "softsim_kept_stale": (_I, (_P, _P, _I, _P, _P, _P, _D, _D, _P)),
    "softsim_kept_planes": (None, (_P, _I, _P, _P, _P, _D, _P, _P)),
    "softsim_mesh_allowances": (None, (_P, _I, _P, _I, _P, _I, _D, _D, _D, _P, _P, _P, _I, _P)),
    # A moving mesh collider's contact planes (src/mesh_moving.c, mesh_kernels.MeshClosest.contact_rows).
    "softsim_mesh_contact_rows": (_I, (_P, _P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P,
                                       _P, _P, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_mesh_motion": (None, (_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _D, _D, _P, _P, _P, _P)),
    # A moving mesh collider's pose normals (src/pose_normals.c, pose_kernels.PoseNormals).
    "softsim_pose_cosines": (None, (_P, _I, _I, _P, _I, _P, _P)),
    "softsim_pose_sums": (None, (_I, _I, _I, _P, _P, _I, _P, _P, _P, _P, _P)),
    # A collider's edges that are not sharp (src/pose_normals.c, pose_kernels.flat_edges).
    "softsim_flat_edges": (None, (_P, _P, _I, _P, _P, _I, _D, _P, _P)),
    # Cloth self-collision's per-call kernels (src/self_response.c, self_kernels.SelfCallKernels).
    "softsim_self_boxes": (None, (_P, _P, _I, _P, _I, _P, _I, _P, _P, _P, _P)),
    "softsim_self_list_check": (_I, (_P, _I, _P, _P, _P, _P, _I, _P, _P, _I, _P, _P, _P, _D, _P, _P, _I, _I, _P)),
    "softsim_self_stencils": (None, (_P, _P, _P, _I, _P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_self_witnesses": (_I, (_P, _P, _I, _P, _P, _P, _P, _P, _P, _I, _P, _P, _I, _P, _P, _P, _D, _P, _I, _I,
                                    _P)),
    "softsim_self_list_holds": (_I, (_P, _P, _I, _P, _I, _P, _I, _P, _P, _P)),
    # A Verlet list's skin growth (src/self_collision.c; self_kernels.SelfPairQuery.*_grow).
    "softsim_self_vt_grow": (_I, (_P, _I, _P, _I, _P, _P, _D, _P, _I, _P, _I, _P, _I, _P, _P, _I, _I, _P, _I, _P, _P,
                                  _I, _P, _P, _P, _P, _P)),
    "softsim_self_ee_grow": (_I, (_P, _I, _P, _I, _P, _D, _P, _I, _P, _I, _P, _I, _P, _I, _P, _I, _P, _P, _I, _P, _P,
                                  _P, _P, _P)),
    # Self-collision's response passes (src/self_pass.c; self_kernels.SelfPass).
    "softsim_self_pass": (_I, (_P, _P, _I, _P, _P, _I, _I, _P, _P, _P, _P, _P, _P, _D, _D, _D, _I, _I) + (_P,) * 28),
    "softsim_self_pass_finish": (None, (_P, _P, _I, _P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P)),
    # Self-collision's candidate selection in one call (src/self_select.c; self_kernels.SelfSelect).
    "softsim_self_select": (_I, (_P, _P, _P, _I, _P, _I, _P, _I, _I, _P, _P, _I, _P, _P, _P, _P, _P, _P, _D, _I, _P, _P,
                                 _P, _P, _P, _P, _P, _P, _P)),
    "softsim_self_fail_safe_witnesses": (_I, (_P, _P, _P, _I, _P, _I, _P, _I, _I, _P, _P, _I, _P, _P, _P, _P, _P, _P,
                                              _I, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_self_new_crossings": (_I, (_P, _P, _P, _P, _P, _P, _P, _P, _I, _P, _P, _I, _P, _P, _I, _P, _P)),
    "softsim_self_pass_friction": (_I, (_P, _P, _P, _I, _P, _P, _I, _I, _P, _P, _P, _P, _P, _P, _P, _D) + (_P,) * 15),
    # Self-collision's response set-up in one call (src/self_select.c; self_kernels.SelfPass.setup).
    "softsim_self_pass_setup": (_I, (_P, _P, _P, _P, _P, _I, _P, _P, _I, _P, _P, _P, _D, _D) + (_P,) * 18),
    # Self-collision's whole call in one (src/self_step.c; self_step.SelfStep).
    "softsim_self_step_size": (_I, ()),
    "softsim_self_step": (_I, (_P, _I)),
    # The watched pairs' sides at the step's true start (src/self_sides.c; self_kernels.SelfPass.true_sides).
    "softsim_self_true_sides": (_I, (_P, _P, _I, _P, _P, _I, _P, _P, _I, _P, _P, _D, _P, _P, _P, _P, _P)),
    # The implicit solvers (src/implicit.c): PD's local step of sphere-projected sets and its right-hand side scatter
    # (implicit_kernels.SphereProjection), the 3x3-block matrix-vector product (implicit_kernels.BlockMatrix), the
    # assembly of Hessian blocks into a block pattern (implicit_kernels.BlockAssembly).
    "softsim_pd_sphere_project": (None, (_I, _P, _P, _P, _P, _P, _P, _P, _D, _P, _P)),
    "softsim_pd_scatter_add": (None, (_I, _P, _P, _P, _P, _P, _P)),
    "softsim_bsr3_matvec": (None, (_I, _P, _P, _P, _P, _P)),
    "softsim_csr9_matvecs": (None, (_I, _P, _P, _P, _P, _P)),
    # The implicit mass-spring solver's conjugate gradients (src/block_cg.c; implicit_kernels.BlockMatrix.block_cg).
    "softsim_block_cg": (_I, (_I, _P, _P, _P, _P, _P, _P, _D, _D, _I, _P, _P)),
    # The rotation-fixed SVD of 3x3 matrices (src/eigen3.c): PD's per-tet local step (implicit_kernels.RotationSVD).
    "softsim_rotation_svd": (None, (_I, _P, _P, _P, _P)),
    "softsim_tet_targets": (None, (_I, _P, _P, _P, _P, _P, _P, _P, _P, _P)),
    # NEWTON's IPC contact (src/ipc_distance.c; ipc_kernels): distances with their derivatives, the PSD projection.
    "softsim_ipc_distance2": (_I, (_I, _I, _P, _P, _P, _P, _P, _P, _P, _P)),
    "softsim_project_psd": (_I, (_I, _I, _P)),
    "softsim_ipc_gaps": (_I, (_I, _I, _P, _P, _P, _P, _P)),
    "softsim_ipc_ccd": (_I, (_I, _I) + (_P,) * 8 + (_D, _D, _I, _P)),
}


def host_platform() -> str:
    """The Blender platform name of this process ('linux-x64', 'windows-x64', 'macos-arm64', ...), or
    '<sys.platform>-<machine>' for one Blender does not ship to."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    return f"{system}-{arch}"


def library_file(platform_name: str) -> str:
    """The library's file name on a platform: softsim_native.so / .dll / .dylib."""
    extension = ".dll" if platform_name.startswith("windows") else ".dylib" if platform_name.startswith("macos") else ".so"
    return LIBRARY_NAME + extension


def default_path(platform_name: str = None) -> str:
    """Where the platform's library sits: solvers/native/lib/<platform>/<library_file>."""
    platform_name = platform_name or host_platform()
    return os.path.join(LIB_DIR, platform_name, library_file(platform_name))


class NativeLibrary:
    """A loaded, checked library: ``functions[name]`` is the ctypes function of SIGNATURES[name]; ``cdll`` keeps the
    handle alive; ``path`` is the file it came from."""

    def __init__(self, cdll, path: str):
        self.cdll, self.path = cdll, path
        self.functions = {}
        for name, (restype, argtypes) in SIGNATURES.items():
            function = getattr(cdll, name)  # AttributeError for a missing export
            function.restype, function.argtypes = restype, argtypes
            self.functions[name] = function
        self.verdicts = {}
        """family -> '' (its self-test passed) or why it failed; a family not in it has not been tested yet."""
        self._family_lock = threading.RLock()

    def ready(self, family: str) -> bool:
        """Whether ``family``'s kernels (a key of ``selftest.FAMILIES``) may run: its self-test against the NumPy
        twins, run the first time it is asked for (a few milliseconds) and remembered. False leaves the caller on
        the NumPy path; the reason joins ``status()``. Never raises for a failing test (a test that raises fails);
        ValueError for a family name that is not registered."""
        from . import selftest

        if family not in selftest.FAMILIES:
            raise ValueError(f"unknown kernel family {family!r}; one of {', '.join(selftest.FAMILIES)}")
        with self._family_lock:
            if family not in self.verdicts:
                self.verdicts[family] = "its self-test is still running"  # a re-entrant ask runs NumPy
                try:
                    problem = selftest.run_family(self, family)
                except Exception as error:  # a binding that refuses the test problem is a failed self-test too
                    problem = f"{type(error).__name__}: {error}"
                self.verdicts[family] = problem
            return not self.verdicts[family]

    def failed_families(self) -> str:
        """'' or '; <family> on NumPy: self-test failed: <why>' for every family that failed, in test order."""
        return "".join(f"; {family} on NumPy: self-test failed: {problem}"
                       for family, problem in list(self.verdicts.items()) if problem)

    def __getattr__(self, name):
        try:
            return self.__dict__["functions"][name]
        except KeyError:
            raise AttributeError(name) from None


class _Loader:
    """The process's one attempt to load the library (``load``), remembered with its reason."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.done, self.library, self.reason = False, None, "not loaded yet"

    def load(self):
        with self.lock:
            if not self.done:
                self.library, self.reason = _load(os.environ.get("SOFTSIM_NATIVE_LIBRARY") or default_path())
                self.done = True
            return self.library


_LOADER = _Loader()


def _load(path: str):
    """(NativeLibrary or None, one-line reason)."""
    name = f"{os.path.basename(path)} ({host_platform()})"
    if not os.path.isfile(path):
        return None, f"numpy: library not found at {path}"
    try:
        library = NativeLibrary(ctypes.CDLL(path), path)
    except (OSError, AttributeError) as error:
        return None, f"numpy: cannot load {path}: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
    version = library.softsim_abi_version()
    if version != ABI_VERSION:
        return None, f"numpy: {name} has ABI version {version}, these bindings need {ABI_VERSION}"
    try:
        problem = _self_test(library)
    except Exception as error:  # a kernel binding that refuses the test problem is a failed self-test too
        problem = f"{type(error).__name__}: {error}"
    if problem:
        return None, f"numpy: self-test failed: {problem}"
    return library, f"native: {name}"


def _self_test(library) -> str:
    """The core self-test (``selftest.run``: the sweeps and tethers on a small cloth against their NumPy twins); '' if
    all agree bit for bit, else what differs. The kernel families test themselves on first use (``ready``)."""
    from . import selftest

    return selftest.run(library)


def load(compute: str = "AUTO"):
    """The checked library for ``compute`` (one of COMPUTE_MODES), or None for the NumPy path."""
    if compute not in COMPUTE_MODES:
        raise ValueError(f"unknown compute {compute!r}; one of {', '.join(COMPUTE_MODES)}")
    if compute == "NUMPY" or _forced_numpy():
        return None
    return _LOADER.load()


def status(compute: str = "AUTO") -> tuple:
    """(path, reason): path 'native' or 'numpy', reason one line, e.g. 'native: softsim_native.so (linux-x64)',
    'numpy: library not found at ...', 'numpy: self-test failed: ...', 'numpy: Compute set to NumPy'; a kernel
    family whose self-test failed (``NativeLibrary.ready``) adds '; mesh on NumPy: self-test failed: ...'.
    Loads the library if nothing has tried yet."""
    if compute == "NUMPY":
        return "numpy", "numpy: Compute set to NumPy"
    if _forced_numpy():
        return "numpy", "numpy: SOFTSIM_COMPUTE=NUMPY in the environment"
    library = load(compute)
    if library is None:
        return "numpy", _LOADER.reason
    return "native", _LOADER.reason + library.failed_families()


def _forced_numpy() -> bool:
    return os.environ.get("SOFTSIM_COMPUTE", "").upper() == "NUMPY"


WARM_UP_FAMILIES = ("contacts", "substeps", "mesh")
"""The kernel families a cloth's bake binds first (colliders' contacts, the whole-frame call, mesh colliders): the
ones ``warm_up`` self-tests ahead of it."""

_WARM_UP = []
"""The warm-up thread ``warm_up`` started last (a list of at most one), joined by ``reload``."""


def warm_up(compute: str = "AUTO"):
    """Load the library and self-test WARM_UP_FAMILIES in a background thread, so that a user's first bake does not
    wait for them (~50 ms on the 2-core dev machine: the load with its core test ~20 ms, the three families ~30 ms).
    The add-on calls this when it is enabled; a solver asking for the library meanwhile waits on the same locks
    (``_Loader.lock``, ``NativeLibrary._family_lock``) and gets the same verdicts. The thread touches no bpy, never
    raises (``load`` and ``ready`` report failures through ``status()``) and is not a daemon, so a process that exits
    at once waits for it instead of unloading the library under it. Returns the thread, or None for Compute NumPy."""
    if compute == "NUMPY" or _forced_numpy():
        return None

    def run():
        library = load(compute)
        if library is not None:
            for family in WARM_UP_FAMILIES:
                library.ready(family)

    thread = threading.Thread(target=run, name="softsim-native-warm-up")
    thread.start()
    _WARM_UP[:] = [thread]
    return thread


def reload() -> None:
    """Forget the loaded library (and its reason), so the next ``load`` tries again: for tests that point
    SOFTSIM_NATIVE_LIBRARY elsewhere. Waits for a warm-up still running (it would load the old path). Kernel objects
    built before keep the library they hold."""
    for thread in _WARM_UP:
        thread.join()
    with _LOADER.lock:
        _LOADER.reset()


def pointer(array: np.ndarray) -> int:
    """The address of an array's first element (the caller keeps the array alive)."""
    return array.ctypes.data
