#!/usr/bin/env python3
"""Build the installable Soft Sim extension zips into ``dist/``: one set per Blender range, one zip per platform.

Blender's extension installer reads the Python versions an extension supports from the wheels it carries, and
Blender 4.2 unpacks every wheel in a zip whatever its Python: one zip cannot carry scipy for both CPython 3.11
(Blender 4.2 to 5.0) and 3.13 (Blender 5.1 and newer). So each ``BlenderRange`` gets its own zips, each with its
``blender_version_min`` / ``blender_version_max`` and only its own Python's scipy wheel:

    dist/blender-4.2-to-5.0/soft_sim-<version>-<platform>.zip     cp311 wheels
    dist/blender-5.1-and-newer/soft_sim-<version>-<platform>.zip  cp313 wheels

Steps (any failure stops the build with a non-zero exit status and an ``error:`` message):

1. Download the unmodified scipy wheels of each range's Python for each of its platforms, and the pure-Python
   wheels of ``PURE_WHEELS`` (one for every zip), into ``wheels/`` with pip; a wheel already there is reused.
2. For each range and platform, lay out a staging copy of the extension (the repository less its development
   folders, with only that platform's native kernel library) whose ``blender_manifest.toml`` is the repository's
   with the range's version bounds, the platform and its wheels added; every other byte of the manifest is kept.
3. Run Blender's own extension tool on it (``blender_ext.py`` from the installed ``bpy`` package, the code behind
   ``blender --command extension``): ``build --split-platforms``, then ``validate`` on the zip.
4. Check each zip's contents (manifest, package, exactly its own wheels and native library, the library's C
   sources, no development files) and print the zips with their sizes.

The native kernel libraries must be built first (``tools/build_native.py --all``; ``make build`` does both).

Run with the development venv: ``make build`` or ``.venv/bin/python tools/build.py``.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "blender_manifest.toml")
WHEELS_DIR = os.path.join(ROOT, "wheels")
DIST_DIR = os.path.join(ROOT, "dist")

SCIPY_VERSION = "1.17.1"
PURE_WHEELS = (("threadpoolctl", "3.8.0"),)
"""Pure-Python runtime dependencies (name, version): one ``py3-none-any`` wheel each, in every zip.
threadpoolctl keeps BLAS on one thread while a frame is simulated (``solvers/linalg/threads.py`` says why)."""


@dataclass(frozen=True)
class Platform:
    name: str          # Blender platform name, as in a manifest's `platforms` list.
    pip_platform: str  # `pip download --platform`: the oldest system Blender supports (pip accepts older tags).
    tag_regex: str     # Matches the platform tag of a wheel file name for this platform.


LINUX_X64 = Platform("linux-x64", "manylinux_2_28_x86_64", r"^manylinux[0-9_]*_x86_64(\.manylinux[0-9_]*_x86_64)*$")
# scipy's oldest Apple-silicon wheel needs macOS 12 (there is no macosx_11_0_arm64 build).
MACOS_ARM64 = Platform("macos-arm64", "macosx_12_0_arm64", r"^macosx_1[0-9]_0_arm64$")
# Intel Macs: pip picks the macosx_10_14_x86_64 wheel (runs on macOS 11, Blender's minimum).
MACOS_X64 = Platform("macos-x64", "macosx_11_0_x86_64", r"^macosx_1[01]_[0-9]+_x86_64$")
WINDOWS_X64 = Platform("windows-x64", "win_amd64", r"^win_amd64$")
WINDOWS_ARM64 = Platform("windows-arm64", "win_arm64", r"^win_arm64$")


@dataclass(frozen=True)
class BlenderRange:
    folder: str                   # dist/<folder>/ holds this range's zips.
    python: str                   # The CPython Blender bundles in this range ("3.11").
    blender_min: str              # blender_version_min (inclusive).
    blender_max: str | None       # blender_version_max (exclusive), None for open-ended.
    platforms: tuple[Platform, ...]

    @property
    def abi(self) -> str:
        return "cp" + self.python.replace(".", "")


RANGES = (
    # Blender 4.2 LTS to 5.0 bundle CPython 3.11. Intel Macs are served up to 4.5 LTS (Blender 5.0 dropped them).
    BlenderRange("blender-4.2-to-5.0", "3.11", "4.2.0", "5.1.0",
                 (LINUX_X64, MACOS_ARM64, MACOS_X64, WINDOWS_X64, WINDOWS_ARM64)),
    # Blender 5.1 moved to CPython 3.13 (5.2 LTS too); no Intel Mac builds.
    BlenderRange("blender-5.1-and-newer", "3.13", "5.1.0", None, (LINUX_X64, MACOS_ARM64, WINDOWS_X64, WINDOWS_ARM64)),
)
"""The zip sets `make build` writes. Linux on ARM is left out: Blender ships no build for it and the extension
platform does not accept it."""

# Top-level paths that must never be shipped (checked in every zip after the build).
FORBIDDEN_PREFIXES = (
    "tests/", "bench/", "tools/", ".venv/", "demo_out/", "bench_out/", "dist/", ".ci/", ".git/",
    ".github/", ".pytest_cache/", "Makefile", "requirements-", "ruff.toml", ".gitignore",
)

# Not copied into a staging folder at all (big, or never shipped); the manifest's exclude patterns do the rest.
STAGING_SKIP = (".git", ".venv*", "dist", "wheels", "build", "bench_out", "demo_out", ".pytest_cache",
                ".ruff_cache", "__pycache__")

NATIVE_LIB_DIR = os.path.join(ROOT, "solvers", "native", "lib")
"""tools/build_native.py --all writes one library per platform here (``<platform>/softsim_native.*``); each zip
carries only its own platform's, beside the C sources it was built from (``solvers/native/src``)."""


class BuildError(Exception):
    pass


def log(msg: str) -> None:
    print(msg, flush=True)


# -----------------------------------------------------------------------------
# 1. Wheels

def wheel_platform_tag(filename: str) -> str:
    # name-version(-build)?-python-abi-platform.whl
    return os.path.basename(filename)[:-len(".whl")].split("-")[-1]


def find_cached_wheel(abi: str, platform: Platform) -> str | None:
    pattern = os.path.join(WHEELS_DIR, "scipy-{:s}-{:s}-{:s}-*.whl".format(SCIPY_VERSION, abi, abi))
    found = sorted(p for p in glob.glob(pattern) if re.match(platform.tag_regex, wheel_platform_tag(p)))
    if len(found) > 1:
        raise BuildError("several {:s} scipy wheels in wheels/ match {:s}: {:s}; remove all but one".format(
            abi, platform.name, ", ".join(os.path.basename(p) for p in found)))
    return found[0] if found else None


def check_wheel(path: str, abi: str) -> None:
    """Cheap sanity check of a wheel file (a readable zip holding scipy's metadata with the right tag)."""
    name = os.path.basename(path)
    try:
        with zipfile.ZipFile(path) as zf:
            wheel_meta = zf.read("scipy-{:s}.dist-info/WHEEL".format(SCIPY_VERSION)).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as ex:
        raise BuildError("{:s} is not a valid scipy {:s} wheel ({:s}); delete it and rerun".format(
            path, SCIPY_VERSION, str(ex))) from ex
    expected = "{:s}-{:s}-".format(abi, abi)
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    if not any(t.startswith(expected) for t in tags):
        raise BuildError("{:s}: WHEEL tags {!r} are not {:s}".format(name, tags, abi))


def pip_download(requirement: str, extra_args: list[str], what: str) -> str:
    """Download one wheel into wheels/ with pip; returns its path."""
    os.makedirs(WHEELS_DIR, exist_ok=True)
    # Download into a private folder first so an interrupted download never looks like a cached wheel.
    with tempfile.TemporaryDirectory(prefix=".download-", dir=WHEELS_DIR) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", *extra_args, "--dest", tmp]
        log("downloading " + what)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        files = glob.glob(os.path.join(tmp, "*.whl"))
        if proc.returncode != 0 or len(files) != 1:
            raise BuildError("pip download of {:s} failed or gave {!r} (exit {:d}):\n{:s}".format(
                what, [os.path.basename(f) for f in files], proc.returncode, proc.stdout.rstrip()))
        dest = os.path.join(WHEELS_DIR, os.path.basename(files[0]))
        os.replace(files[0], dest)
    return dest


def ensure_scipy_wheel(blender_range: BlenderRange, platform: Platform) -> str:
    abi = blender_range.abi
    path = find_cached_wheel(abi, platform)
    if path is None:
        path = pip_download("scipy=={:s}".format(SCIPY_VERSION), [
            "--python-version", blender_range.python, "--implementation", "cp", "--abi", abi,
            "--platform", platform.pip_platform,
        ], "scipy {:s} {:s} for {:s} ({:s})".format(SCIPY_VERSION, abi, platform.name, platform.pip_platform))
        if not re.match(platform.tag_regex, wheel_platform_tag(path)):
            os.remove(path)
            raise BuildError("pip chose {:s} for {:s}, which does not match {:s}".format(
                os.path.basename(path), platform.name, platform.tag_regex))
    else:
        log("using wheels/{:s}".format(os.path.basename(path)))
    check_wheel(path, abi)
    return path


def ensure_pure_wheels() -> list[str]:
    """The paths of the ``PURE_WHEELS`` in wheels/, downloaded with pip where missing."""
    paths = []
    for name, version in PURE_WHEELS:
        path = os.path.join(WHEELS_DIR, "{:s}-{:s}-py3-none-any.whl".format(name, version))
        if os.path.isfile(path):
            log("using wheels/{:s}".format(os.path.basename(path)))
        elif pip_download("{:s}=={:s}".format(name, version), [], "{:s} {:s}".format(name, version)) != path:
            raise BuildError("pip download of {:s} {:s} did not give {:s}".format(name, version, path))
        try:
            with zipfile.ZipFile(path) as zf:
                zf.read("{:s}-{:s}.dist-info/WHEEL".format(name, version))
        except (OSError, KeyError, zipfile.BadZipFile) as ex:
            raise BuildError("{:s} is not a valid {:s} wheel ({:s}); delete it and rerun".format(path, name, str(ex))) from ex
        paths.append(path)
    return paths


# -----------------------------------------------------------------------------
# 2. The staging copy and its manifest

def toml_string_list(key: str, values: list[str]) -> str:
    return "{:s} = [\n{:s}]".format(key, "".join('  "{:s}",\n'.format(v) for v in values))


def top_level_span(text: str) -> int:
    """Offset of the first table header: top-level keys live before it."""
    m = re.search(r"^\[", text, flags=re.M)
    return m.start() if m else len(text)


def set_top_level(text: str, key: str, rendered: str, value_regex: str, insert_after_key: str) -> str:
    """Replace the top-level ``key = <value>`` of a TOML text by ``rendered``, or add it after ``insert_after_key``."""
    head_end = top_level_span(text)
    head, tail = text[:head_end], text[head_end:]
    regex = re.compile(r"^{:s}[ \t]*=[ \t]*{:s}".format(re.escape(key), value_regex), flags=re.M)
    matches = list(regex.finditer(head))
    if len(matches) > 1:
        raise BuildError("blender_manifest.toml declares `{:s}` more than once".format(key))
    if matches:
        m = matches[0]
        return head[:m.start()] + rendered + head[m.end():] + tail
    anchor = re.compile(r"^{:s}[ \t]*=[^\n]*\n".format(re.escape(insert_after_key)), flags=re.M)
    m = anchor.search(head)
    if m is None:
        raise BuildError("cannot place `{:s}` in blender_manifest.toml: no top-level `{:s}`".format(
            key, insert_after_key))
    return head[:m.end()] + rendered + "\n" + head[m.end():] + tail


def staged_manifest(text: str, blender_range: BlenderRange, platform: Platform, wheel_names: list[str]) -> str:
    """The repository's manifest text with the range's version bounds, the platform and its wheels."""
    before = tomllib.loads(text)
    for key in ("wheels", "platforms", "blender_version_max"):
        if key in before:
            raise BuildError("blender_manifest.toml must not set `{:s}`: tools/build.py writes it into each zip".format(key))
    new = set_top_level(text, "blender_version_min", 'blender_version_min = "{:s}"'.format(blender_range.blender_min),
                        r'"[^"\n]*"', "version")
    if blender_range.blender_max:
        new = set_top_level(new, "blender_version_max", 'blender_version_max = "{:s}"'.format(blender_range.blender_max),
                            r'"[^"\n]*"', "blender_version_min")
    new = set_top_level(new, "wheels", toml_string_list("wheels", ["./wheels/" + n for n in wheel_names]),
                        r"\[[^\]]*\]", "license")
    new = set_top_level(new, "platforms", toml_string_list("platforms", [platform.name]), r"\[[^\]]*\]", "license")
    after = tomllib.loads(new)
    changed = {"wheels", "platforms", "blender_version_min", "blender_version_max"}
    strip = lambda d: {k: v for k, v in d.items() if k not in changed}  # noqa: E731
    if strip(after) != strip(before) or after["platforms"] != [platform.name]:
        raise BuildError("internal error: staging the manifest would change more than its range, platform and wheels")
    return new


def native_library(platform: Platform) -> str:
    """The path of the platform's native kernel library, which must have been built (``build_native.py --all``)."""
    found = glob.glob(os.path.join(NATIVE_LIB_DIR, platform.name, "softsim_native.*"))
    if len(found) != 1:
        raise BuildError("expected one native library in {:s}, found {!r}: run tools/build_native.py --all".format(
            os.path.join(NATIVE_LIB_DIR, platform.name), found))
    return found[0]


def stage(stage_dir: str, manifest_text: str, wheel_paths: list[str], library: str) -> None:
    """Copy the extension into ``stage_dir`` with the given manifest text, wheels and native library."""
    shutil.copytree(ROOT, stage_dir, ignore=shutil.ignore_patterns(*STAGING_SKIP), symlinks=False)
    staged_lib = os.path.join(stage_dir, os.path.relpath(NATIVE_LIB_DIR, ROOT))
    shutil.rmtree(staged_lib, ignore_errors=True)
    os.makedirs(os.path.join(staged_lib, os.path.basename(os.path.dirname(library))))
    shutil.copy2(library, os.path.join(staged_lib, os.path.relpath(library, NATIVE_LIB_DIR)))
    with open(os.path.join(stage_dir, "blender_manifest.toml"), "w", encoding="utf-8") as fh:
        fh.write(manifest_text)
    os.makedirs(os.path.join(stage_dir, "wheels"))
    for path in wheel_paths:
        shutil.copy2(path, os.path.join(stage_dir, "wheels", os.path.basename(path)))


# -----------------------------------------------------------------------------
# 3. Blender's extension tool

def find_blender_ext() -> tuple[str, str]:
    """Return (blender_ext.py, tags.py) from the installed ``bpy`` package (without importing it)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("the bpy package is not installed in {:s}; run `make` to set up .venv".format(sys.executable))
    found = []
    for base in spec.submodule_search_locations:
        found += glob.glob(os.path.join(base, "*", "scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py"))
    if not found:
        raise BuildError("blender_ext.py not found under the bpy package ({:s})".format(
            ", ".join(spec.submodule_search_locations)))

    def version_key(path: str) -> tuple[int, ...]:
        ver = path.split(os.sep)[-6]  # bpy/<version>/scripts/addons_core/bl_pkg/cli/blender_ext.py
        return tuple(int(p) if p.isdigit() else -1 for p in ver.split("."))

    blender_ext = max(found, key=version_key)
    scripts = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(blender_ext))))
    # `blender --command extension build` checks tags against this file; do the same.
    tags = os.path.join(scripts, "modules", "_bpy_internal", "extensions", "tags.py")
    if not os.path.isfile(tags):
        raise BuildError("Blender's tag list {:s} is missing".format(tags))
    return blender_ext, tags


def run_blender_ext(blender_ext: str, args: list[str]) -> None:
    cmd = [sys.executable, blender_ext, *args]
    log("$ blender_ext.py {:s}".format(" ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in args)))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    for line in proc.stdout.splitlines():
        log("  " + line)
    if proc.returncode != 0:
        raise BuildError("blender_ext.py {:s} failed (exit {:d})".format(args[0], proc.returncode))
    # The tool reports some problems as messages; never let one pass silently.
    bad = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FATAL_ERROR:", "ERROR:"))]
    if bad:
        raise BuildError("blender_ext.py {:s} reported errors:\n{:s}".format(args[0], "\n".join(bad)))


def zip_name(manifest: dict, platform: Platform) -> str:
    return "{:s}-{:s}-{:s}.zip".format(manifest["id"], manifest["version"], platform.name.replace("-", "_"))


# -----------------------------------------------------------------------------
# 4. Checking the zips

def check_zip(path: str, wheel_names: list[str], library: str) -> None:
    with zipfile.ZipFile(path) as zf:
        bad_member = zf.testzip()
        names = zf.namelist()
    if bad_member is not None:
        raise BuildError("{:s}: corrupt member {:s}".format(path, bad_member))
    problems = []
    for required in ("blender_manifest.toml", "__init__.py"):
        if required not in names:
            problems.append("missing " + required)
    if not any(n.startswith("solvers/") for n in names):
        problems.append("missing solvers/")
    wheels = sorted(n for n in names if n.endswith(".whl"))
    expected = sorted("wheels/" + n for n in wheel_names)
    if wheels != expected:
        problems.append("wheels are {!r}, expected {!r}".format(wheels, expected))
    leaks = sorted(n for n in names if n.startswith(FORBIDDEN_PREFIXES) or "__pycache__/" in n or n.endswith(".pyc"))
    if leaks:
        problems.append("development files included: " + ", ".join(leaks[:20]))
    libraries = sorted(n for n in names if n.startswith("solvers/native/lib/"))
    expected_lib = os.path.relpath(library, ROOT).replace(os.sep, "/")
    if libraries != [expected_lib]:
        problems.append("native libraries are {!r}, expected {!r}".format(libraries, [expected_lib]))
    if not any(n.startswith("solvers/native/src/") and n.endswith(".c") for n in names):
        problems.append("missing the native library's C sources (solvers/native/src)")
    if problems:
        raise BuildError("{:s}:\n  {:s}".format(os.path.basename(path), "\n  ".join(problems)))


def main() -> int:
    with open(MANIFEST, encoding="utf-8") as fh:
        manifest_text = fh.read()
    try:
        manifest = tomllib.loads(manifest_text)
    except tomllib.TOMLDecodeError as ex:
        raise BuildError("blender_manifest.toml does not parse: {:s}".format(str(ex))) from ex
    pure = ensure_pure_wheels()
    blender_ext, tags = find_blender_ext()

    # Remove earlier zips so only what this run writes is left (e.g. a dropped platform or range).
    shutil.rmtree(DIST_DIR, ignore_errors=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="softsim-stage-") as staging_root:
        for blender_range in RANGES:
            out_dir = os.path.join(DIST_DIR, blender_range.folder)
            os.makedirs(out_dir)
            for platform in blender_range.platforms:
                wheel_paths = [ensure_scipy_wheel(blender_range, platform), *pure]
                wheel_names = [os.path.basename(p) for p in wheel_paths]
                stage_dir = os.path.join(staging_root, blender_range.folder, platform.name)
                library = native_library(platform)
                stage(stage_dir, staged_manifest(manifest_text, blender_range, platform, wheel_names), wheel_paths,
                      library)
                run_blender_ext(blender_ext, ["build", "--split-platforms", "--source-dir", stage_dir,
                                              "--output-dir", out_dir, "--valid-tags", tags])
                path = os.path.join(out_dir, zip_name(manifest, platform))
                if not os.path.isfile(path):
                    raise BuildError("expected {:s} was not written".format(path))
                check_zip(path, wheel_names, library)
                run_blender_ext(blender_ext, ["validate", path, "--valid-tags", tags])
                written.append(path)

    log("")
    log("zips written:")
    for path in written:
        size = os.path.getsize(path)
        log("  {:<60s} {:6.1f} MiB  ({:d} bytes)".format(os.path.relpath(path, ROOT), size / (1 << 20), size))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BuildError as ex:
        print("error: {:s}".format(str(ex)), file=sys.stderr, flush=True)
        print("error: build failed", file=sys.stderr, flush=True)
        sys.exit(1)
