"""The installable extension: the manifest, ``tools/build.py`` (Blender's own extension tool with bundled
scipy wheels), and installing the built zip into Blender, enabling it and baking a tiny cloth.

Blender's user folders point at a throw-away place (tests/conftest.py sets BLENDER_USER_RESOURCES before
bpy is imported), so installing here never touches a real user's extensions. bpy is imported inside
the tests for that reason.
"""
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
SCIPY_WHEEL_PREFIX = "scipy-1.17.1-cp311-cp311-"
PURE_WHEELS = ["threadpoolctl-3.8.0-py3-none-any.whl"]  # in every platform's zip
MODULE = "bl_ext.user_default.soft_sim"


def load_manifest():
    with open(MANIFEST, "rb") as fh:
        return tomllib.load(fh)


def this_platform_suffix():
    """This machine as a Blender platform, in zip-name form (``linux_x64``), like blender_ext.py does."""
    system = {"darwin": "macos"}.get(platform.system().lower(), platform.system().lower())
    machine = platform.machine().lower()
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    return f"{system}_{machine}"


# --- manifest ------------------------------------------------------------------------------------

def test_manifest_contract():
    manifest = load_manifest()
    assert manifest["schema_version"] == "1.0.0"
    assert manifest["id"] == "soft_sim"
    assert manifest["type"] == "add-on"
    assert manifest["blender_version_min"] == "4.2.0"
    assert any(lic.startswith("SPDX:GPL-") for lic in manifest["license"]), manifest["license"]
    files = manifest["permissions"]["files"]
    assert isinstance(files, str) and files.strip()
    # Blender's validator limits: tagline and permission reasons at most 64 characters, no final period.
    assert len(manifest["tagline"]) <= 64 and not manifest["tagline"].endswith(".")
    assert len(files) <= 64 and not files.endswith(".")


def test_manifest_wheels_match_platforms():
    manifest = load_manifest()
    wheels = [w for w in manifest["wheels"] if w not in ["./wheels/" + p for p in PURE_WHEELS]]
    assert len(wheels) == len(manifest["wheels"]) - len(PURE_WHEELS), manifest["wheels"]
    assert all(w.startswith("./wheels/" + SCIPY_WHEEL_PREFIX) and w.endswith(".whl") for w in wheels), wheels
    platforms = manifest["platforms"]
    assert {"linux-x64", "linux-arm64", "macos-arm64", "windows-x64"} <= set(platforms)
    assert len(wheels) == len(platforms)  # one scipy wheel per platform


# --- build ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built_zips():
    """Run tools/build.py once for this module; returns {platform suffix: zip path}."""
    proc = subprocess.run(
        [sys.executable, BUILD], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800,
    )
    assert proc.returncode == 0, f"tools/build.py failed (exit {proc.returncode}):\n{proc.stdout}"
    manifest = load_manifest()
    zips = {}
    for plat in manifest["platforms"]:
        suffix = plat.replace("-", "_")
        path = os.path.join(ROOT, "dist", f"{manifest['id']}-{manifest['version']}-{suffix}.zip")
        assert os.path.isfile(path), f"{path} missing; build output:\n{proc.stdout}"
        assert os.path.basename(path) in proc.stdout  # listed in the report with its size
        zips[suffix] = path
    return zips


def test_linux_zip_contents(built_zips):
    path = built_zips["linux_x64"]
    assert os.path.basename(path) == f"soft_sim-{load_manifest()['version']}-linux_x64.zip"
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        packaged_manifest = tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names
    assert "solvers/__init__.py" in names
    assert any(n.startswith("operators/") for n in names)
    wheels = [n for n in names if n.endswith(".whl") and n not in ["wheels/" + p for p in PURE_WHEELS]]
    assert sorted(set(names) & {"wheels/" + p for p in PURE_WHEELS}) == ["wheels/" + p for p in PURE_WHEELS]
    assert len(wheels) == 1 and wheels[0].startswith("wheels/" + SCIPY_WHEEL_PREFIX + "manylinux"), wheels
    assert wheels[0].endswith("_x86_64.whl")
    for forbidden in ("tests/", "bench/", "tools/", ".venv/", ".ci/", ".git/", "demo_out/", "bench_out/", "dist/"):
        assert not any(n.startswith(forbidden) for n in names), forbidden
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "Makefile" not in names and "ruff.toml" not in names
    # --split-platforms writes the platform into the packaged manifest.
    assert packaged_manifest["build"]["generated"]["platforms"] == ["linux-x64"]


def test_each_zip_has_only_its_own_wheel(built_zips):
    for suffix, path in built_zips.items():
        with zipfile.ZipFile(path) as zf:
            wheels = [n for n in zf.namelist() if n.endswith(".whl")]
        assert sorted(w for w in wheels if w in ["wheels/" + p for p in PURE_WHEELS]) == ["wheels/" + p for p in PURE_WHEELS]
        wheels = [w for w in wheels if w not in ["wheels/" + p for p in PURE_WHEELS]]
        assert len(wheels) == 1, (suffix, wheels)
        tag = wheels[0][:-len(".whl")].split("-")[-1]
        machine = {"x64": ("x86_64", "amd64"), "arm64": ("aarch64", "arm64")}[suffix.split("_")[1]]
        assert tag.endswith(machine), (suffix, wheels[0])


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
    suffix = this_platform_suffix()
    if suffix not in built_zips:
        pytest.skip(f"no zip is built for this platform ({suffix})")
    zip_path = built_zips[suffix]

    import addon_utils
    import bpy

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
    finally:
        bpy.ops.extensions.package_uninstall(repo_directory=repo_dir, pkg_id="soft_sim")
        if MODULE in bpy.context.preferences.addons:  # uninstall failed: at least disable it
            bpy.ops.preferences.addon_disable(module=MODULE)
        bpy.ops.wm.read_homefile(use_empty=True)

    assert MODULE not in bpy.context.preferences.addons
    assert not hasattr(bpy.types, "SOFTSIM_OT_bake")
    assert not os.path.exists(os.path.join(repo_dir, "soft_sim"))
