#!/usr/bin/env python3
"""Build the native kernel library (``solvers/native/src/*.c``) with the pinned ``zig cc``, and check the binaries.

    tools/build_native.py --host       this machine's platform only (before the tests: ``make test``)
    tools/build_native.py --all        every Blender platform (before packaging: ``make build``)
    tools/build_native.py --check      check the libraries already in solvers/native/lib without building
    tools/build_native.py --sanitize   a host library with AddressSanitizer + UndefinedBehaviorSanitizer

Output: ``solvers/native/lib/<platform>/softsim_native.<so|dll|dylib>`` (``solvers.native.library`` loads it; the
folder is a build output, gitignored). Each library is compiled from all of ``src/*.c`` in one ``zig cc``
invocation: plain C11, -O2, hidden visibility except the exported API, stripped (-s: stripping afterwards would
break the arm64 dylib's signature), and -ffp-contract=off so no platform fuses a*b+c into an FMA (the kernels
promise NumPy's rounding, see src/softsim_native.h).

Every library built is then checked statically (nothing foreign is run): the architecture and file type from its
ELF / PE / Mach-O header, every function of ``solvers.native.library.SIGNATURES`` exported, and its imports limited
to the system C runtime (glibc's libc/libm at symbol versions <= 2.28; KERNEL32 and the UCRT's api-ms-win-crt-*;
libSystem). The host library is also loaded and self-tested (``solvers.native.status()``).

--sanitize builds with the system gcc (zig cc accepts -fsanitize=address but ships no ASan runtime, so nothing is
instrumented) into ``build/native-sanitize/softsim_native.so`` and prints the command that runs the native tests
with it; the ASan runtime must be preloaded into Python (``LD_PRELOAD``), as the library is loaded after start-up.
Exit status: 0 when everything built and checked, 1 otherwise (with ``error:`` lines).
"""
from __future__ import annotations

import argparse
import glob
import os
import shlex
import struct
import subprocess
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from solvers.native.library import LIB_DIR, SIGNATURES, default_path, host_platform, library_file  # noqa: E402, F401

SOURCES = sorted(glob.glob(os.path.join(ROOT, "solvers", "native", "src", "*.c")))
HEADER = os.path.join(ROOT, "solvers", "native", "src", "softsim_native.h")
FLAGS = ["-O2", "-shared", "-fvisibility=hidden", "-fPIC", "-s", "-ffp-contract=off", "-std=c11",
         "-Wall", "-Wextra", "-Werror"]
SANITIZE_DIR = os.path.join(ROOT, "build", "native-sanitize")
SANITIZE_FLAGS = ["-O1", "-g", "-shared", "-fPIC", "-std=c11", "-ffp-contract=off", "-fno-omit-frame-pointer",
                  "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
MAX_GLIBC = (2, 28)


@dataclass(frozen=True)
class Target:
    platform: str  # Blender extension platform name
    triple: str    # zig cc -target
    arch: str      # what the header must say: x86_64 or arm64


TARGETS = (
    Target("linux-x64", "x86_64-linux-gnu.2.28", "x86_64"),  # glibc 2.28: Blender's and manylinux_2_28's floor
    Target("windows-x64", "x86_64-windows-gnu", "x86_64"),  # MinGW-w64 against the UCRT (part of Windows 10+)
    Target("windows-arm64", "aarch64-windows-gnu", "arm64"),
    Target("macos-arm64", "aarch64-macos.11.0", "arm64"),    # macOS 11: Blender's minimum
    Target("macos-x64", "x86_64-macos.11.0", "x86_64"),
)


class BuildError(RuntimeError):
    pass


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build(target: Target) -> str:
    out = default_path(target.platform)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    command = [sys.executable, "-m", "ziglang", "cc", "-target", target.triple, *FLAGS, "-o", out, *SOURCES]
    log(f"building {target.platform}: zig cc -target {target.triple}")
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{target.platform}: zig cc failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    # zig writes a Windows import library (named after the first source) and maybe a debug database next to the
    # DLL; only the DLL ships.
    folder = os.path.dirname(out)
    for extra in glob.glob(os.path.join(folder, "*.lib")) + glob.glob(os.path.join(folder, "*.pdb")):
        os.remove(extra)
    return out


# ------------------------------------------------------------------ static checks of the three binary formats

def check_binary(path: str, target: Target) -> list:
    """Problems found in the library at ``path`` built for ``target`` ([] when it is fine)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == b"\x7fELF":
        info = _elf(data)
    elif data[:2] == b"MZ":
        info = _pe(data)
    elif data[:4] == b"\xcf\xfa\xed\xfe":
        info = _macho(data)
    else:
        return [f"{path}: not an ELF, PE or 64-bit Mach-O file"]
    problems = []
    if info["arch"] != target.arch:
        problems.append(f"architecture {info['arch']}, expected {target.arch}")
    missing = sorted(set(SIGNATURES) - set(info["exports"]))
    if missing:
        problems.append(f"missing exports {', '.join(missing)}")
    extra = sorted(name for name in set(info["exports"]) - set(SIGNATURES) if name.startswith("softsim_"))
    if extra:
        problems.append(f"exports not declared in SIGNATURES: {', '.join(extra)}")
    problems += info["problems"]
    return [f"{target.platform}: {p}" for p in problems]


def _cstring(data: bytes, offset: int) -> str:
    return data[offset:data.index(b"\0", offset)].decode("ascii", "replace")


def _elf(data: bytes) -> dict:
    if data[4] != 2 or data[5] != 1:
        return dict(arch="?", exports=[], problems=["not a 64-bit little-endian ELF"])
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    problems = [] if e_type == 3 else [f"ELF type {e_type}, expected a shared object (3)"]
    exports, imports, needed, versions = [], [], [], []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        strtab = sections[link][4] if link < len(sections) else 0
        if kind == 11:  # SHT_DYNSYM
            for k in range(1, size // entsize):
                name, info, other, shndx = struct.unpack_from("<IBBH", data, offset + k * entsize)
                symbol = _cstring(data, strtab + name)
                if shndx == 0:
                    imports.append(symbol)
                elif info >> 4 in (1, 2) and other & 3 == 0:  # global or weak, default visibility
                    exports.append(symbol)
        elif kind == 6:  # SHT_DYNAMIC
            for k in range(size // 16):
                tag, value = struct.unpack_from("<qQ", data, offset + 16 * k)
                if tag == 1:  # DT_NEEDED
                    needed.append(_cstring(data, strtab + value))
        elif kind == 0x6FFFFFFE:  # SHT_GNU_verneed: the glibc symbol versions used
            entry = offset
            while True:
                _, count, _, aux, next_entry = struct.unpack_from("<HHIII", data, entry)
                at = entry + aux
                for _ in range(count):
                    _, _, _, name, next_aux = struct.unpack_from("<IHHII", data, at)
                    versions.append(_cstring(data, strtab + name))
                    at += next_aux
                if not next_entry:
                    break
                entry += next_entry
    allowed = {"libc.so.6", "libm.so.6"}
    problems += [f"imports {lib} (allowed: {', '.join(sorted(allowed))})" for lib in needed if lib not in allowed]
    for version in versions:
        if version.startswith("GLIBC_") and tuple(int(p) for p in version[6:].split(".")[:2]) > MAX_GLIBC:
            problems.append(f"needs {version}, newer than glibc {'.'.join(map(str, MAX_GLIBC))}")
    arch = {62: "x86_64", 183: "arm64"}.get(e_machine, f"machine {e_machine}")
    return dict(arch=arch, exports=exports, problems=problems, imports=needed + imports)


def _pe(data: bytes) -> dict:
    pe, = struct.unpack_from("<I", data, 0x3C)
    if data[pe:pe + 4] != b"PE\0\0":
        return dict(arch="?", exports=[], problems=["no PE signature"])
    machine, section_count = struct.unpack_from("<HH", data, pe + 4)
    optional_size, characteristics = struct.unpack_from("<HH", data, pe + 20)
    optional = pe + 24
    problems = [] if characteristics & 0x2000 else ["not a DLL (IMAGE_FILE_DLL unset)"]
    if struct.unpack_from("<H", data, optional)[0] != 0x20B:
        problems.append("not PE32+")
    sections = [struct.unpack_from("<8sIIII", data, optional + optional_size + 40 * k) for k in range(section_count)]

    def offset(rva):
        for _, virtual_size, address, raw_size, raw in sections:
            if address <= rva < address + max(virtual_size, raw_size):
                return raw + rva - address
        raise ValueError(f"RVA {rva:#x} in no section")

    export_rva, _ = struct.unpack_from("<II", data, optional + 112)
    import_rva, _ = struct.unpack_from("<II", data, optional + 120)
    exports = []
    if export_rva:
        directory = offset(export_rva)
        count, = struct.unpack_from("<I", data, directory + 24)
        names, = struct.unpack_from("<I", data, directory + 32)
        exports = [_cstring(data, offset(struct.unpack_from("<I", data, offset(names) + 4 * k)[0])) for k in range(count)]
    dlls = []
    if import_rva:
        at = offset(import_rva)
        while True:
            descriptor = struct.unpack_from("<IIIII", data, at)
            if not any(descriptor):
                break
            dlls.append(_cstring(data, offset(descriptor[3])))
            at += 20
    for dll in dlls:
        lower = dll.lower()
        if lower != "kernel32.dll" and not lower.startswith("api-ms-win-crt-"):
            problems.append(f"imports {dll} (allowed: KERNEL32.dll, api-ms-win-crt-*.dll)")
    arch = {0x8664: "x86_64", 0xAA64: "arm64"}.get(machine, f"machine {machine:#x}")
    return dict(arch=arch, exports=exports, problems=problems, imports=dlls)


def _uleb(data: bytes, at: int):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _export_trie(data: bytes, start: int, size: int) -> list:
    """The symbol names of a Mach-O export trie (dyld's LC_DYLD_INFO / LC_DYLD_EXPORTS_TRIE)."""
    names, stack = [], [(0, "")]
    while stack:
        node, prefix = stack.pop()
        at = start + node
        terminal, at = _uleb(data, at)
        if terminal:
            names.append(prefix)
        at += terminal
        count = data[at]
        at += 1
        for _ in range(count):
            end = data.index(b"\0", at)
            edge = data[at:end].decode("ascii", "replace")
            child, at = _uleb(data, end + 1)
            if child >= size:
                raise ValueError("export trie child out of range")
            stack.append((child, prefix + edge))
    return names


def _macho(data: bytes) -> dict:
    cputype, _, filetype, ncmds, _ = struct.unpack_from("<iIIII", data, 4)
    problems = [] if filetype == 6 else [f"Mach-O file type {filetype}, expected a dylib (6)"]
    exports, dylibs, minimum, signed = [], [], None, False
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd in (0xC, 0x18, 0x1F):  # LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB
            dylibs.append(_cstring(data, at + struct.unpack_from("<I", data, at + 8)[0]))
        elif cmd == 0x80000022:  # LC_DYLD_INFO_ONLY: the export trie is its last pair
            export_off, export_size = struct.unpack_from("<II", data, at + 40)
            if export_size:
                exports += _export_trie(data, export_off, export_size)
        elif cmd == 0x80000033:  # LC_DYLD_EXPORTS_TRIE
            export_off, export_size = struct.unpack_from("<II", data, at + 8)
            exports += _export_trie(data, export_off, export_size)
        elif cmd == 0x32:  # LC_BUILD_VERSION: platform, minos (xxxx.yy.zz nibbles)
            minos, = struct.unpack_from("<I", data, at + 12)
            minimum = (minos >> 16, (minos >> 8) & 0xFF)
        elif cmd == 0x24:  # LC_VERSION_MIN_MACOSX
            version, = struct.unpack_from("<I", data, at + 8)
            minimum = (version >> 16, (version >> 8) & 0xFF)
        elif cmd == 0x1D:  # LC_CODE_SIGNATURE
            signed = True
        at += size
    exports = [name[1:] if name.startswith("_") else name for name in exports]  # C symbols carry a leading _
    for dylib in dylibs:
        if not dylib.startswith("/usr/lib/libSystem"):
            problems.append(f"links {dylib} (allowed: /usr/lib/libSystem)")
    if minimum is None or minimum > (11, 0):
        problems.append(f"minimum macOS {minimum}, expected at most 11.0")
    arch = {0x01000007: "x86_64", 0x0100000C: "arm64"}.get(cputype, f"cputype {cputype:#x}")
    if arch == "arm64" and not signed:
        problems.append("arm64 dylib without a code signature (macOS on Apple silicon refuses to load it)")
    return dict(arch=arch, exports=exports, problems=problems, imports=dylibs)


# ------------------------------------------------------------------ commands

def check_all(targets) -> list:
    problems = []
    for target in targets:
        path = default_path(target.platform)
        if not os.path.isfile(path):
            problems.append(f"{target.platform}: {path} missing")
            continue
        found = check_binary(path, target)
        problems += found
        if not found:
            log(f"  ok {os.path.relpath(path, ROOT)} ({os.path.getsize(path)} bytes)")
    host = [t for t in targets if t.platform == host_platform()]
    if host and not problems:
        from solvers import native

        native.reload()
        path, reason = native.status()
        log(f"  host: {reason}")
        if path != "native":
            problems.append(f"host library does not load: {reason}")
    return problems


def sanitize() -> str:
    compiler = os.environ.get("CC", "gcc")
    os.makedirs(SANITIZE_DIR, exist_ok=True)
    out = os.path.join(SANITIZE_DIR, library_file(host_platform()))
    command = [compiler, *SANITIZE_FLAGS, "-o", out, *SOURCES, "-lm"]
    log("building sanitized: " + " ".join(shlex.quote(c) for c in command))
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{compiler} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    python = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else sys.executable
    print("run the native tests under the sanitizers with:\n"
          f"  LD_PRELOAD={runtime} ASAN_OPTIONS=detect_leaks=0 SOFTSIM_NATIVE_LIBRARY={os.path.relpath(out, ROOT)} "
          f"SOFTSIM_REQUIRE_NATIVE=1 {python} -m pytest -q -p no:cacheprovider tests/test_native_*.py")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--host", action="store_true", help="build for this machine's platform")
    mode.add_argument("--all", action="store_true", help="build for every Blender platform")
    mode.add_argument("--check", action="store_true", help="only check the libraries in solvers/native/lib")
    mode.add_argument("--sanitize", action="store_true", help="build a host library with ASan + UBSan (gcc)")
    args = parser.parse_args(argv)
    try:
        if args.sanitize:
            sanitize()
            return 0
        if args.host:
            targets = [t for t in TARGETS if t.platform == host_platform()]
            if not targets:
                raise BuildError(f"no target for this platform ({host_platform()})")
        else:
            targets = list(TARGETS)
        if not args.check:
            for target in targets:
                build(target)
        else:
            targets = [t for t in targets if os.path.isfile(default_path(t.platform))] or targets
        problems = check_all(targets)
    except BuildError as error:
        log(f"error: {error}")
        return 1
    for problem in problems:
        log(f"error: {problem}")
    if not problems:
        log(f"native libraries ok in {os.path.relpath(LIB_DIR, ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
