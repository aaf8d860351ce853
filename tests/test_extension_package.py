"""The installable extension: the manifest, ``tools/build.py`` (Blender's own extension tool with bundled
scipy wheels, one zip set per Blender range), and installing the built zip into Blender, enabling it and baking a
tiny cloth, on whichever Blender runs the suite (``make test``: 5.2 LTS, Python 3.13; ``make test-lts``: 4.2 LTS,
Python 3.11).

Blender's user folders point at a throw-away place (tests/conftest.py sets BLENDER_USER_RESOURCES before
bpy is imported), so installing here never touches a real user's extensions. bpy is imported inside
the tests for that reason.
"""
import importlib.util
import os
import platform
import struct
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "blender_manifest.toml")
BUILD = os.path.join(ROOT, "tools", "build.py")
BUILD_NATIVE = os.path.join(ROOT, "tools", "build_native.py")
SCIPY_VERSION = "1.17.1"
PURE_WHEELS = ["threadpoolctl-3.8.0-py3-none-any.whl"]  # in every zip
MODULE = "bl_ext.user_default.soft_sim"

RANGES = {
    # dist/<folder>: (Python ABI of its wheels, blender_version_min, blender_version_max or None, platforms)
    "blender-4.2-to-5.0": ("cp311", "4.2.0", "5.1.0", {"linux_x64", "macos_arm64", "macos_x64", "windows_x64",
                                                        "windows_arm64"}),
    "blender-5.1-and-newer": ("cp313", "5.1.0", None, {"linux_x64", "macos_arm64", "windows_x64", "windows_arm64"}),
}
WHEEL_MACHINE = {"x64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64")}


def load_manifest():
    with open(MANIFEST, "rb") as fh:
        return tomllib.load(fh)


def this_platform_suffix():
    """This machine as a Blender platform, in zip-name form (``linux_x64``), like blender_ext.py does."""
    system = {"darwin": "macos"}.get(platform.system().lower(), platform.system().lower())
    machine = platform.machine().lower()
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    return f"{system}_{machine}"


def bpy_version():
    """The version of the installed bpy module, read from its folder name without importing it (``(5, 2)``)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None:
        return None
    versions = [name for base in spec.submodule_search_locations for name in os.listdir(base)
                if name.replace(".", "").isdigit()]
    assert len(versions) == 1, versions
    return tuple(int(p) for p in versions[0].split("."))


def range_for(version):
    """The dist/ folder whose zips this Blender version installs."""
    return "blender-4.2-to-5.0" if version < (5, 1) else "blender-5.1-and-newer"


# --- manifest ------------------------------------------------------------------------------------

def test_manifest_contract():
    manifest = load_manifest()
    assert manifest["schema_version"] == "1.0.0"
    assert manifest["id"] == "soft_sim"
    assert manifest["type"] == "add-on"
    assert manifest["blender_version_min"] == "4.2.0"
    # Written into each zip's copy by tools/build.py, per Blender range and platform.
    assert not {"wheels", "platforms", "blender_version_max"} & set(manifest), manifest
    assert any(lic.startswith("SPDX:GPL-") for lic in manifest["license"]), manifest["license"]
    files = manifest["permissions"]["files"]
    assert isinstance(files, str) and files.strip()
    # Blender's validator limits: tagline and permission reasons at most 64 characters, no final period.
    assert len(manifest["tagline"]) <= 64 and not manifest["tagline"].endswith(".")
    assert len(files) <= 64 and not files.endswith(".")


# --- build ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built_zips():
    """Run what `make build` runs once for this module (every platform's native library cross-built and checked,
    then tools/build.py); returns {(range folder, platform suffix): zip path}."""
    for script in (BUILD_NATIVE, BUILD):
        proc = subprocess.run(
            [sys.executable, script, *(["--all"] if script == BUILD_NATIVE else [])], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800,
        )
        assert proc.returncode == 0, f"{script} failed (exit {proc.returncode}):\n{proc.stdout}"
    manifest = load_manifest()
    zips = {}
    for folder, (_, _, _, suffixes) in RANGES.items():
        for suffix in suffixes:
            path = os.path.join(ROOT, "dist", folder, f"{manifest['id']}-{manifest['version']}-{suffix}.zip")
            assert os.path.isfile(path), f"{path} missing; build output:\n{proc.stdout}"
            assert os.path.relpath(path, ROOT) in proc.stdout  # listed in the report with its size
            zips[folder, suffix] = path
    written = sorted(os.path.relpath(p, ROOT) for p in Path(ROOT, "dist").rglob("*.zip"))
    assert written == sorted(os.path.relpath(p, ROOT) for p in zips.values()), written
    return zips


def test_zip_contents(built_zips):
    """Every zip: the package, its own platform and Python's scipy wheel and the pure wheels, its Blender range in
    its manifest, no development files, well under the extension platform's size limit."""
    for (folder, suffix), path in built_zips.items():
        abi, version_min, version_max, _ = RANGES[folder]
        assert os.path.basename(path) == f"soft_sim-{load_manifest()['version']}-{suffix}.zip"
        assert os.path.getsize(path) < 100 * 2 ** 20, (path, os.path.getsize(path))
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            packaged = tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))
        assert "__init__.py" in names and "solvers/__init__.py" in names
        assert any(n.startswith("operators/") for n in names)
        pure = ["wheels/" + p for p in PURE_WHEELS]
        assert sorted(set(names) & set(pure)) == pure, (path, names)
        wheels = [n for n in names if n.endswith(".whl") and n not in pure]
        assert len(wheels) == 1 and wheels[0].startswith(f"wheels/scipy-{SCIPY_VERSION}-{abi}-{abi}-"), (path, wheels)
        assert wheels[0][:-len(".whl")].split("-")[-1].endswith(WHEEL_MACHINE[suffix.split("_")[1]]), (path, wheels)
        assert packaged["wheels"] == ["./" + wheels[0], *("./" + p for p in pure)]
        assert packaged["platforms"] == [suffix.replace("_", "-")]
        # --split-platforms writes the platform into the packaged manifest.
        assert packaged["build"]["generated"]["platforms"] == [suffix.replace("_", "-")]
        assert packaged["blender_version_min"] == version_min
        assert packaged.get("blender_version_max") == version_max
        for forbidden in ("tests/", "bench/", "tools/", ".venv", ".ci/", ".git/", "demo_out/", "bench_out/", "dist/"):
            assert not any(n.startswith(forbidden) for n in names), (path, forbidden)
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
        assert "Makefile" not in names and "ruff.toml" not in names
        # Its own platform's native kernel library, beside the C sources it was built from.
        platform_name = suffix.replace("_", "-")
        library = "softsim_native." + {"windows": "dll", "macos": "dylib", "linux": "so"}[suffix.split("_")[0]]
        assert [n for n in names if n.startswith("solvers/native/lib/")] == [
            f"solvers/native/lib/{platform_name}/{library}"], (path, names)
        assert "solvers/native/src/softsim_native.h" in names


# --- install into Blender, enable, bake ----------------------------------------------------------

def read_pc2(path):
    with open(path, "rb") as fh:
        signature, version, vertex_count, frame_start, sample_rate, frame_count = struct.unpack(
            "<12siiffi", fh.read(32))
        data = fh.read()
    assert signature == b"POINTCACHE2\0"
    assert len(data) == frame_count * vertex_count * 3 * 4
    values = struct.unpack(f"<{frame_count * vertex_count * 3}f", data)
    frames = [[values[(f * vertex_count + v) * 3:(f * vertex_count + v) * 3 + 3] for v in range(vertex_count)]
              for f in range(frame_count)]
    return frames, frame_start, vertex_count


def evaluated_local_coords(bpy, obj, frame):
    scene = bpy.context.scene
    scene.frame_set(frame)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(depsgraph).data
    return [tuple(v.co) for v in mesh.vertices]


def user_default_repo_dir(bpy):
    return next(r.directory for r in bpy.context.preferences.extensions.repos if r.module == "user_default")


def test_install_enable_and_bake(built_zips, tmp_path):
    folder = range_for(bpy_version())
    suffix = this_platform_suffix()
    if (folder, suffix) not in built_zips:
        pytest.skip(f"no zip is built for this platform ({suffix})")
    zip_path = built_zips[folder, suffix]

    import bpy  # first: Blender's own modules (addon_utils) are importable once bpy is
    import addon_utils

    user_resources = os.environ["BLENDER_USER_RESOURCES"]
    extensions_dir = bpy.utils.user_resource("EXTENSIONS")
    assert os.path.realpath(extensions_dir).startswith(os.path.realpath(user_resources)), "not isolated"
    assert not hasattr(bpy.types, "SOFTSIM_OT_bake"), "Soft Sim is already registered by an earlier test"
    repo_dir = user_default_repo_dir(bpy)

    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    assert result == {"FINISHED"}
    try:
        # Installed from the zip into the isolated user repository, and enabled.
        assert os.path.isfile(os.path.join(repo_dir, "soft_sim", "blender_manifest.toml"))
        assert MODULE in bpy.context.preferences.addons
        assert addon_utils.check(MODULE) == (True, True)
        assert os.path.realpath(sys.modules[MODULE].__file__).startswith(os.path.realpath(repo_dir))

        # The bundled wheel is unpacked into the extensions' own site-packages, which is on sys.path.
        # (scipy from the venv comes first on sys.path here, so import the installed copy on its own.)
        site = os.path.join(extensions_dir, ".local", "lib",
                            f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
        assert os.path.isfile(os.path.join(site, "scipy", "__init__.py"))
        assert os.path.isfile(os.path.join(site, "scipy-1.17.1.dist-info", "RECORD"))
        assert os.path.isfile(os.path.join(site, "threadpoolctl.py"))  # one BLAS thread per frame (solvers/linalg)
        assert site in sys.path
        probe = subprocess.run(
            [sys.executable, "-c",
             "import os, sys; site = sys.argv[1]; sys.path.insert(0, site); import scipy, scipy.sparse.linalg; "
             "assert scipy.__version__ == '1.17.1', scipy.__version__; "
             "assert os.path.realpath(scipy.__file__).startswith(os.path.realpath(site)), scipy.__file__",
             site],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        )
        assert probe.returncode == 0, probe.stdout

        # The installed copy runs the native kernels it carries.
        native = importlib.import_module(MODULE + ".solvers.native")
        path, reason = native.status()
        assert path == "native", reason
        assert os.path.realpath(native.library.LIB_DIR).startswith(os.path.realpath(repo_dir))

        # The public contract is registered.
        assert hasattr(bpy.types, "SOFTSIM_OT_bake")
        assert bpy.ops.softsim.bake.get_rna_type() is not None  # KeyError if the operator is missing
        assert "softsim" in bpy.types.Object.bl_rna.properties
        assert "softsim" in bpy.types.Scene.bl_rna.properties

        # A tiny cloth falls under gravity over frames 1..5.
        bpy.ops.wm.read_homefile(use_empty=True)  # keeps add-ons enabled (read_factory_settings would not)
        assert MODULE in bpy.context.preferences.addons
        scene = bpy.context.scene
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, size=2)
        obj = bpy.context.active_object
        obj.softsim.role = "CLOTH"
        scene.frame_start, scene.frame_end = 1, 5
        cache_dir = tmp_path / "cache"
        scene.softsim.cache_dir = str(cache_dir)

        assert bpy.ops.softsim.bake() == {"FINISHED"}

        # The file is found through the modifier that plays it (docs/api.md), never by guessing its name.
        modifier = obj.modifiers["SoftSim Cache"]
        assert modifier.type == "MESH_CACHE"
        pc2 = Path(bpy.path.abspath(modifier.filepath))
        assert pc2.parent == cache_dir and pc2.is_file()
        frames, frame_start, vertex_count = read_pc2(pc2)
        assert len(frames) == 5
        assert frame_start == 1.0
        assert vertex_count == len(obj.data.vertices)

        first = evaluated_local_coords(bpy, obj, 1)
        last = evaluated_local_coords(bpy, obj, 5)
        assert len(first) == len(last) == vertex_count
        mean_z = lambda coords: sum(c[2] for c in coords) / len(coords)  # noqa: E731
        assert mean_z(last) < mean_z(first) - 1e-3, (mean_z(first), mean_z(last))
        # What Blender shows at frame 5 is the cache's last frame.
        assert max(abs(a - b) for va, vb in zip(last, frames[-1]) for a, b in zip(va, vb)) < 1e-5

        # The add-on preference Compute = NumPy bakes the same frames on the NumPy path, and the bake says so.
        preferences = bpy.context.preferences.addons[MODULE].preferences
        assert preferences.compute == "AUTO"
        preferences.compute = "NUMPY"
        job = sys.modules[MODULE].operators.bake.run_bake(bpy.context, [obj])
        assert job.summary.endswith("numpy: Compute set to NumPy"), job.summary
        numpy_frames, _, _ = read_pc2(Path(bpy.path.abspath(obj.modifiers["SoftSim Cache"].filepath)))
        assert numpy_frames == frames
    finally:
        bpy.ops.extensions.package_uninstall(repo_directory=repo_dir, pkg_id="soft_sim")
        if MODULE in bpy.context.preferences.addons:  # uninstall failed: at least disable it
            bpy.ops.preferences.addon_disable(module=MODULE)
        bpy.ops.wm.read_homefile(use_empty=True)

    assert MODULE not in bpy.context.preferences.addons
    assert not hasattr(bpy.types, "SOFTSIM_OT_bake")
    assert not os.path.exists(os.path.join(repo_dir, "soft_sim"))


def test_other_range_is_refused(built_zips):
    """The zip built for the other Blender range does not install here (its version bounds say so before its
    wheels of another Python could break anything), and nothing of it is left."""
    this = range_for(bpy_version())
    other = next(folder for folder in RANGES if folder != this)
    suffix = this_platform_suffix()
    if (other, suffix) not in built_zips:
        pytest.skip(f"no zip of the other range is built for this platform ({suffix})")

    import bpy

    repo_dir = user_default_repo_dir(bpy)
    try:
        bpy.ops.extensions.package_install_files(filepath=built_zips[other, suffix], repo="user_default",
                                                 enable_on_install=True)
        assert not os.path.exists(os.path.join(repo_dir, "soft_sim"))
        assert MODULE not in bpy.context.preferences.addons
        assert not hasattr(bpy.types, "SOFTSIM_OT_bake")
    finally:
        if os.path.exists(os.path.join(repo_dir, "soft_sim")):
            bpy.ops.extensions.package_uninstall(repo_directory=repo_dir, pkg_id="soft_sim")
