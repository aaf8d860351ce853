"""Run the Windows x64 native library under Wine and compare it with the Linux one, bit for bit.

`make build` checks every cross-built library statically (architecture, exports, imports); this runs one of them.
It builds tools/native_smoke.c twice with the pinned zig (a Linux program and a Windows program), runs the Linux one
on ``solvers/native/lib/linux-x64`` and the Windows one under Wine on ``solvers/native/lib/windows-x64`` (both from
``tools/build_native.py --all``, the same sources and flags), and requires the same output: the ABI version and the
positions and multipliers of ten XPBD distance sweeps as hexadecimal doubles.

The macOS and arm64 libraries cannot run here (no emulator for them); they stay checked statically only.

Run: ``python tools/cross_check.py`` (after ``python tools/build_native.py --all``). Exit 0: equal; 1: a difference or
a failure; 2: Wine is not installed (Debian: ``apt-get install wine64``).
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE = os.path.join(ROOT, "tools", "native_smoke.c")
LIB = os.path.join(ROOT, "solvers", "native", "lib")
PROGRAMS = {  # platform: (zig target, program name, library file)
    "linux-x64": ("x86_64-linux-gnu.2.28", "smoke", "softsim_native.so"),
    "windows-x64": ("x86_64-windows-gnu", "smoke.exe", "softsim_native.dll"),
}


def build_program(platform: str, folder: str) -> str:
    target, name, _ = PROGRAMS[platform]
    out = os.path.join(folder, name)
    command = [sys.executable, "-m", "ziglang", "cc", "-target", target, "-O2", "-std=c11", "-ffp-contract=off",
               "-Wall", "-Wextra", "-Werror", "-o", out, SMOKE]
    if platform.startswith("linux"):
        command.append("-ldl")
    subprocess.run(command, check=True)
    return out


def run(platform: str, program: str) -> str:
    library = os.path.join(LIB, platform, PROGRAMS[platform][2])
    if not os.path.isfile(library):
        raise FileNotFoundError(f"{library} is missing: run tools/build_native.py --all first")
    command = [program, library]
    env = dict(os.environ)
    if platform.startswith("windows"):
        command = [shutil.which("wine"), program, library]
        env.setdefault("WINEDEBUG", "-all")  # Wine's own diagnostics on stderr only; none of them matter here
        env.setdefault("WINEPREFIX", os.path.join(os.path.dirname(program), "wineprefix"))
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{platform}: {' '.join(command)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def main() -> int:
    if shutil.which("wine") is None:
        print("wine not found: install it (Debian: apt-get install wine64) to run the Windows library", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="softsim-cross-") as folder:
        try:
            outputs = {p: run(p, build_program(p, folder)) for p in PROGRAMS}
        except (OSError, RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    linux, windows = outputs["linux-x64"], outputs["windows-x64"]
    values = len(linux.split()) - 2
    if linux != windows or values <= 0:
        print(f"error: windows-x64 under Wine differs from linux-x64:\n--- linux\n{linux}\n--- windows\n{windows}",
              file=sys.stderr)
        return 1
    print(f"windows-x64 under Wine equals linux-x64 bit for bit ({linux.split()[1]}: ABI; {values} doubles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
