#!/usr/bin/env python3
"""Build the installable Soft Sim extension zips, one per platform, into ``dist/``.

Steps (any failure stops the build with a non-zero exit status and an ``error:`` message):

1. Download the unmodified scipy wheels (cp311, the Python of Blender 4.2+) for every platform in
   ``TARGETS``, and the pure-Python wheels of ``PURE_WHEELS`` (one for every platform), into ``wheels/`` with pip;
   a wheel already in ``wheels/`` is reused.
2. Make the ``wheels = [...]`` and ``platforms = [...]`` lists of ``blender_manifest.toml`` name exactly
   those wheels and platforms. Only these two lists are rewritten (and only when they differ);
   every other byte of the manifest is kept.
3. Run Blender's own extension tool (``blender_ext.py`` from the installed ``bpy`` package, the code
   behind ``blender --command extension``): ``build --split-platforms`` and then ``validate`` on
   each zip written.
4. Check each zip's contents (manifest, package, exactly its own scipy wheel and the pure wheels, no development
   files)
   and print the zips with their sizes.

Run with the development venv: ``make build`` or ``.venv/bin/python tools/build.py``.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
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
PYTHON_VERSION = "3.11"  # Blender 4.2 up to 5.x bundle CPython 3.11.
ABI = "cp311"
PURE_WHEELS = (("threadpoolctl", "3.8.0"),)
"""Pure-Python runtime dependencies (name, version): one ``py3-none-any`` wheel each, in every platform's zip.
threadpoolctl keeps BLAS on one thread while a frame is simulated (``solvers/linalg/threads.py`` says why)."""


@dataclass(frozen=True)
class Target:
    platform: str      # Blender platform name, as in the manifest's `platforms` list.
    pip_platform: str  # `pip download --platform`: the oldest system Blender supports (pip accepts older tags).
    tag_regex: str     # Matches the platform tag of a wheel file name for this target.
    required: bool     # When False the platform is left out if PyPI has no cp311 wheel for it.


TARGETS = (
    Target("linux-x64", "manylinux_2_28_x86_64", r"^manylinux[0-9_]*_x86_64(\.manylinux[0-9_]*_x86_64)*$", True),
    Target("linux-arm64", "manylinux_2_28_aarch64", r"^manylinux[0-9_]*_aarch64(\.manylinux[0-9_]*_aarch64)*$", True),
    # scipy's oldest Apple-silicon wheel needs macOS 12 (there is no macosx_11_0_arm64 build).
    Target("macos-arm64", "macosx_12_0_arm64", r"^macosx_12_0_arm64$", True),
    # Intel Macs: pip picks the macosx_10_14_x86_64 wheel (runs on macOS 11, Blender's minimum).
    Target("macos-x64", "macosx_11_0_x86_64", r"^macosx_1[01]_[0-9]+_x86_64$", False),
    Target("windows-x64", "win_amd64", r"^win_amd64$", True),
)

# Top-level paths that must never be shipped (checked in every zip after the build).
FORBIDDEN_PREFIXES = (
    "tests/", "bench/", "tools/", ".venv/", "demo_out/", "bench_out/", "dist/", ".ci/", ".git/",
    ".github/", ".pytest_cache/", "Makefile", "requirements-", "ruff.toml", ".gitignore",
)


class BuildError(Exception):
    pass


def log(msg: str) -> None:
    print(msg, flush=True)


# -----------------------------------------------------------------------------
# 1. Wheels

def wheel_platform_tag(filename: str) -> str:
    # name-version(-build)?-python-abi-platform.whl
    return os.path.basename(filename)[:-len(".whl")].split("-")[-1]


def find_cached_wheel(target: Target) -> str | None:
    pattern = os.path.join(WHEELS_DIR, "scipy-{:s}-{:s}-{:s}-*.whl".format(SCIPY_VERSION, ABI, ABI))
    found = sorted(p for p in glob.glob(pattern) if re.match(target.tag_regex, wheel_platform_tag(p)))
    if len(found) > 1:
        raise BuildError("several scipy wheels in wheels/ match {:s}: {:s}; remove all but one".format(
            target.platform, ", ".join(os.path.basename(p) for p in found)))
    return found[0] if found else None


def check_wheel(path: str) -> None:
    """Cheap sanity check of a wheel file (a readable zip holding scipy's metadata with the right tag)."""
    name = os.path.basename(path)
    try:
        with zipfile.ZipFile(path) as zf:
            wheel_meta = zf.read("scipy-{:s}.dist-info/WHEEL".format(SCIPY_VERSION)).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as ex:
        raise BuildError("{:s} is not a valid scipy {:s} wheel ({:s}); delete it and rerun".format(
            path, SCIPY_VERSION, str(ex))) from ex
    expected = "{:s}-{:s}-".format(ABI, ABI)
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    if not any(t.startswith(expected) for t in tags):
        raise BuildError("{:s}: WHEEL tags {!r} are not {:s}".format(name, tags, ABI))


def download_wheel(target: Target) -> str | None:
    """Download the wheel for ``target`` into wheels/. Returns its path, or None if PyPI has none (optional targets)."""
    os.makedirs(WHEELS_DIR, exist_ok=True)
    # Download into a private folder first so an interrupted download never looks like a cached wheel.
    with tempfile.TemporaryDirectory(prefix=".download-", dir=WHEELS_DIR) as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "scipy=={:s}".format(SCIPY_VERSION),
            "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
            "--python-version", PYTHON_VERSION, "--implementation", "cp", "--abi", ABI,
            "--platform", target.pip_platform, "--dest", tmp,
        ]
        log("downloading scipy {:s} for {:s} ({:s})".format(SCIPY_VERSION, target.platform, target.pip_platform))
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            if not target.required and "No matching distribution found" in proc.stdout:
                log("warning: PyPI has no scipy {:s} {:s} wheel for {:s}; that platform is left out".format(
                    SCIPY_VERSION, ABI, target.platform))
                return None
            raise BuildError("pip download failed for {:s} (exit {:d}):\n{:s}".format(
                target.platform, proc.returncode, proc.stdout.rstrip()))
        files = glob.glob(os.path.join(tmp, "*.whl"))
        if len(files) != 1:
            raise BuildError("pip download for {:s} produced {!r}, expected one wheel".format(
                target.platform, [os.path.basename(f) for f in files]))
        name = os.path.basename(files[0])
        if not re.match(target.tag_regex, wheel_platform_tag(name)):
            raise BuildError("pip chose {:s} for {:s}, which does not match {:s}".format(
                name, target.platform, target.tag_regex))
        dest = os.path.join(WHEELS_DIR, name)
        os.replace(files[0], dest)
    return dest


def ensure_wheels() -> list[tuple[Target, str]]:
    result = []
    for target in TARGETS:
        path = find_cached_wheel(target)
        if path is None:
            path = download_wheel(target)
            if path is None:
                continue
        else:
            log("using wheels/{:s}".format(os.path.basename(path)))
        check_wheel(path)
        result.append((target, path))
    return result


def ensure_pure_wheels() -> list[str]:
    """The paths of the ``PURE_WHEELS`` in wheels/, downloaded with pip where missing."""
    os.makedirs(WHEELS_DIR, exist_ok=True)
    paths = []
    for name, version in PURE_WHEELS:
        path = os.path.join(WHEELS_DIR, "{:s}-{:s}-py3-none-any.whl".format(name, version))
        if os.path.isfile(path):
            log("using wheels/{:s}".format(os.path.basename(path)))
        else:
            with tempfile.TemporaryDirectory(prefix=".download-", dir=WHEELS_DIR) as tmp:
                cmd = [sys.executable, "-m", "pip", "download", "{:s}=={:s}".format(name, version), "--no-deps",
                       "--only-binary=:all:", "--disable-pip-version-check", "--dest", tmp]
                log("downloading {:s} {:s}".format(name, version))
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                files = glob.glob(os.path.join(tmp, "*.whl"))
                if proc.returncode != 0 or [os.path.basename(f) for f in files] != [os.path.basename(path)]:
                    raise BuildError("pip download of {:s} {:s} failed or gave {!r} (exit {:d}):\n{:s}".format(
                        name, version, [os.path.basename(f) for f in files], proc.returncode, proc.stdout.rstrip()))
                os.replace(files[0], path)
        try:
            with zipfile.ZipFile(path) as zf:
                zf.read("{:s}-{:s}.dist-info/WHEEL".format(name, version))
        except (OSError, KeyError, zipfile.BadZipFile) as ex:
            raise BuildError("{:s} is not a valid {:s} wheel ({:s}); delete it and rerun".format(path, name, str(ex))) from ex
        paths.append(path)
    return paths


# -----------------------------------------------------------------------------
# 2. Manifest

def toml_string_list(key: str, values: list[str]) -> str:
    return "{:s} = [\n{:s}]".format(key, "".join('  "{:s}",\n'.format(v) for v in values))


def top_level_span(text: str) -> int:
    """Offset of the first table header: top-level keys live before it."""
    m = re.search(r"^\[", text, flags=re.M)
    return m.start() if m else len(text)


def set_top_level_list(text: str, key: str, values: list[str], insert_after_key: str) -> str:
    head_end = top_level_span(text)
    head, tail = text[:head_end], text[head_end:]
    rendered = toml_string_list(key, values)
    regex = re.compile(r"^{:s}[ \t]*=[ \t]*\[[^\]]*\]".format(re.escape(key)), flags=re.M)
    matches = list(regex.finditer(head))
    if len(matches) > 1:
        raise BuildError("blender_manifest.toml declares `{:s}` more than once".format(key))
    if matches:
        m = matches[0]
        return head[:m.start()] + rendered + head[m.end():] + tail
    # Missing: add it on the line after the `insert_after_key` list.
    anchor = re.compile(r"^{:s}[ \t]*=[ \t]*\[[^\]]*\][^\n]*\n".format(re.escape(insert_after_key)), flags=re.M)
    m = anchor.search(head)
    if m is None:
        raise BuildError("cannot place `{:s}` in blender_manifest.toml: no top-level `{:s}` list".format(
            key, insert_after_key))
    return head[:m.end()] + rendered + "\n" + head[m.end():] + tail


def sync_manifest(wheels: list[tuple[Target, str]], pure: list[str] = ()) -> dict:
    with open(MANIFEST, "rb") as fh:
        raw = fh.read()
    text = raw.decode("utf-8")
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as ex:
        raise BuildError("blender_manifest.toml does not parse: {:s}".format(str(ex))) from ex

    want_wheels = ["./wheels/{:s}".format(os.path.basename(path)) for _, path in wheels]
    want_wheels += ["./wheels/{:s}".format(os.path.basename(path)) for path in pure]
    want_platforms = [target.platform for target, _ in wheels]
    if before.get("wheels") == want_wheels and before.get("platforms") == want_platforms:
        log("blender_manifest.toml: wheels and platforms are up to date")
        return before

    if "wheels" not in before:
        raise BuildError("blender_manifest.toml has no top-level `wheels` list to update")
    new_text = set_top_level_list(text, "wheels", want_wheels, insert_after_key="wheels")
    new_text = set_top_level_list(new_text, "platforms", want_platforms, insert_after_key="wheels")

    after = tomllib.loads(new_text)
    strip = lambda d: {k: v for k, v in d.items() if k not in ("wheels", "platforms")}  # noqa: E731
    if (after.get("wheels") != want_wheels or after.get("platforms") != want_platforms
            or strip(after) != strip(before)):
        raise BuildError("internal error: rewriting blender_manifest.toml would change more than wheels/platforms")

    tmp = MANIFEST + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(new_text.encode("utf-8"))
    os.replace(tmp, MANIFEST)
    log("blender_manifest.toml: updated wheels = {!r}, platforms = {!r}".format(want_wheels, want_platforms))
    return after


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
    log("$ blender_ext.py {:s}".format(" ".join(args)))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    for line in proc.stdout.splitlines():
        log("  " + line)
    if proc.returncode != 0:
        raise BuildError("blender_ext.py {:s} failed (exit {:d})".format(args[0], proc.returncode))
    # The tool reports some problems as messages; never let one pass silently.
    bad = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FATAL_ERROR:", "ERROR:"))]
    if bad:
        raise BuildError("blender_ext.py {:s} reported errors:\n{:s}".format(args[0], "\n".join(bad)))


def zip_name(manifest: dict, platform: str) -> str:
    return "{:s}-{:s}-{:s}.zip".format(manifest["id"], manifest["version"], platform.replace("-", "_"))


# -----------------------------------------------------------------------------
# 4. Checking the zips

def check_zip(path: str, wheel_name: str, pure_names: list[str] = ()) -> None:
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
    expected = sorted("wheels/" + n for n in [wheel_name, *pure_names])
    if wheels != expected:
        problems.append("wheels are {!r}, expected {!r}".format(wheels, expected))
    leaks = sorted(n for n in names if n.startswith(FORBIDDEN_PREFIXES) or "__pycache__/" in n or n.endswith(".pyc"))
    if leaks:
        problems.append("development files included: " + ", ".join(leaks[:20]))
    if problems:
        raise BuildError("{:s}:\n  {:s}".format(os.path.basename(path), "\n  ".join(problems)))


def main() -> int:
    if sys.version_info[:2] != (3, 11):
        log("warning: running under Python {:d}.{:d}; the venv (.venv/bin/python) uses 3.11".format(
            *sys.version_info[:2]))
    wheels = ensure_wheels()
    pure = ensure_pure_wheels()
    manifest = sync_manifest(wheels, pure)
    blender_ext, tags = find_blender_ext()

    os.makedirs(DIST_DIR, exist_ok=True)
    # Remove earlier zips of this version so only what this run writes is left (e.g. a dropped platform).
    for old in glob.glob(os.path.join(DIST_DIR, "{:s}-{:s}*.zip".format(manifest["id"], manifest["version"]))):
        os.remove(old)

    run_blender_ext(blender_ext, [
        "build", "--split-platforms", "--source-dir", ROOT, "--output-dir", DIST_DIR, "--valid-tags", tags,
    ])

    written = []
    for target, wheel_path in wheels:
        path = os.path.join(DIST_DIR, zip_name(manifest, target.platform))
        if not os.path.isfile(path):
            raise BuildError("expected {:s} was not written".format(path))
        check_zip(path, os.path.basename(wheel_path), [os.path.basename(p) for p in pure])
        written.append(path)

    # The Linux x64 zip first (the one tested), then the others.
    for path in written:
        run_blender_ext(blender_ext, ["validate", path, "--valid-tags", tags])

    log("")
    log("zips written:")
    for path in written:
        size = os.path.getsize(path)
        log("  {:<40s} {:6.1f} MiB  ({:d} bytes)".format(os.path.relpath(path, ROOT), size / (1 << 20), size))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BuildError as ex:
        print("error: {:s}".format(str(ex)), file=sys.stderr, flush=True)
        print("error: build failed", file=sys.stderr, flush=True)
        sys.exit(1)
