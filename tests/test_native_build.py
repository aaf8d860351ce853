"""tools/build_native.py's static checks read the three binary formats right: every library present in
solvers/native/lib (the host's after ``--host``, all of them after ``--all``) has its platform's architecture, the
exported API and only system runtime imports; a library checked against the wrong platform is refused."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import build_native  # noqa: E402

BUILT = [t for t in build_native.TARGETS if os.path.isfile(build_native.default_path(t.platform))]
NEWEST_SOURCE = max(os.path.getmtime(p) for p in build_native.SOURCES + [build_native.HEADER])


def stale(target) -> bool:
    """A cross-built library older than the sources (``make test`` rebuilds only the host's)."""
    return (target.platform != build_native.host_platform()
            and os.path.getmtime(build_native.default_path(target.platform)) < NEWEST_SOURCE)


@pytest.mark.skipif(not BUILT, reason="no native library built (tools/build_native.py --host or --all)")
@pytest.mark.parametrize("target", BUILT, ids=[t.platform for t in BUILT])
def test_each_built_library_passes_the_static_checks(target):
    if stale(target):
        pytest.skip(f"{target.platform}: built before the latest source change (tools/build_native.py --all)")
    assert build_native.check_binary(build_native.default_path(target.platform), target) == []


@pytest.mark.skipif(not BUILT, reason="no native library built (tools/build_native.py --host or --all)")
def test_a_library_checked_against_another_architecture_is_refused():
    target = BUILT[0]
    other = next(t for t in build_native.TARGETS if t.arch != target.arch)
    problems = build_native.check_binary(build_native.default_path(target.platform), other)
    assert any("architecture" in p for p in problems)


def test_a_file_of_no_known_format_is_refused(tmp_path):
    path = tmp_path / "softsim_native.so"
    path.write_bytes(b"#!/bin/sh\n")
    assert build_native.check_binary(str(path), build_native.TARGETS[0]) == [f"{path}: not an ELF, PE or 64-bit Mach-O file"]
