"""`make bench`: run every benchmark, print its tables in Markdown and write them, under a header naming the
machine, the versions and the command, to docs/benchmarks.md (with --only, to bench_out/bench_<names>.md, so a
partial run never replaces the full report).

Benchmarks: bench/bench_cloth.py (always), bench/bench_solid.py, bench/bench_kernels.py,
bench/bench_tetrahedralize.py and bench/bench_scenarios.py (each when it exists), bench/bench_acceptance.py,
bench/bench_shots.py, bench/bench_fresh_bake.py.
Usage: python bench/run.py [--sizes 21 64 128] [--frames 100] [--repeat 1]
       [--only cloth|kernels|solid|tetrahedralize|scenarios|acceptance|shots|fresh ...] [--merge]
(--sizes, --frames and --repeat apply to the cloth benchmark.) With --only and --merge the sections run replace their
namesakes in docs/benchmarks.md (or are added at its end), every other table there kept as it is.
"""
import argparse
import datetime
import importlib
import inspect
import math
import os
import platform
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
for path in (ROOT, BENCH):
    if path not in sys.path:
        sys.path.insert(0, path)

OUT = os.path.join(ROOT, "docs", "benchmarks.md")
PARTIAL_OUT = os.path.join(ROOT, "bench_out", "bench_{names}.md")

INTERPRETATION = """\
How to read these tables:

- Every figure comes from the one run described above, on that machine. "Speed" is a ratio of times taken in
  the same run against Blender's own solver on the same mesh (> 1: Soft Sim is faster), so it carries over to
  other machines far better than milliseconds do; on a shared machine repeated runs vary, so compare ratios
  within one report, not across reports.
- Quality figures (strain, volume error, penetration, motion error, self-crossings) sit next to speed on the
  same row: a faster row that stretches more, loses volume or crosses itself is not a better choice. Pick the
  fastest row whose quality figures are good enough for the shot.
- Defaults are marked as such; other rows show what changing Substeps, Iterations or the solver costs and buys.
"""


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else whatever ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _memory_gib():
    """Total memory in GiB, or None where neither /proc/meminfo nor sysconf tells."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20  # kB
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def _version(module_name: str) -> str:
    try:
        return importlib.import_module(module_name).__version__
    except Exception as error:  # a missing package is reported in the header, not fatal
        return f"not available ({type(error).__name__})"


def machine_info(argv=None) -> dict:
    """What the report's header states about this run: date, machine, versions and the command (strings)."""
    try:
        import bpy

        blender = bpy.app.version_string
    except Exception as error:
        blender = f"not available ({type(error).__name__})"
    memory = _memory_gib()
    args = sys.argv[1:] if argv is None else list(argv)
    return {
        "date": datetime.date.today().isoformat(),
        "cpu": _cpu_model(),
        "cores": str(os.cpu_count() or "unknown"),
        "memory": f"{memory:.1f} GiB" if memory else "unknown",
        "os": platform.platform(),
        "python": platform.python_version(),
        "blender": blender,
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "command": " ".join(["python bench/run.py", *args]),
        "compute": _compute_path(),
    }


def _compute_path() -> str:
    """Which path Compute AUTO takes in this process: the native library and platform, or why NumPy (a library that
    is missing, stale or failing its self-test makes every figure a NumPy one)."""
    try:
        from solvers import native

        return native.status()[1]
    except Exception as error:  # reported in the header, not fatal
        return f"unknown ({type(error).__name__}: {error})"


def _heading_title(line: str) -> str:
    """A "## " heading's title without its parenthesized run note: "## Cloth (2026-11-25, ...)" -> "Cloth"."""
    return line[3:].split(" (", 1)[0].strip()


def merge_sections(existing: str, info: dict, sections: list) -> str:
    """``existing`` (a report) with each of ``sections`` replacing the "## " section of the same title (see
    ``_heading_title``; up to the next "## " heading), or added at the end; every other line kept verbatim. The
    header of ``existing`` describes another run, so each merged section's heading gets this run's date and a line
    naming this run's machine, versions and command."""
    lines = existing.rstrip("\n").split("\n")
    for text in sections:
        text = text.strip()
        if not text:
            continue
        heading, _, body = text.partition("\n")
        title = _heading_title(heading)
        new = [f"## {heading[3:].strip()} ({info.get('date', 'unknown')})", "",
               f"*One run of `{info.get('command', 'python bench/run.py')}` on {info.get('cpu', 'unknown')}, "
               f"{info.get('cores', '?')} cores, {info.get('memory', 'unknown')}; Blender {info.get('blender', '?')}, "
               f"numpy {info.get('numpy', '?')}, scipy {info.get('scipy', '?')}; Compute AUTO: "
               f"{info.get('compute', '?')}.*", body.rstrip("\n")]
        starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
        match = next((i for i in starts if _heading_title(lines[i]) == title), None)
        if match is None:
            lines += [""] + new
        else:
            end = next((i for i in starts if i > match), len(lines))
            lines[match:end] = new + ([""] if end < len(lines) else [])
    return "\n".join(lines) + "\n"


def render_report(info: dict, sections: list, seconds: float = None, existing: str = None) -> str:
    """The benchmark report as Markdown: a header from ``info`` (``machine_info``'s keys), how to read the tables,
    then ``sections`` in order (each a Markdown string starting with its own "## " heading, as the section_*
    functions return). With ``existing`` (an earlier report's text) the sections are merged into it instead
    (``merge_sections``): its header and its other tables stay. Pure: no clock, no files, so it can be tested with
    made-up tables."""
    if existing is not None:
        return merge_sections(existing, info, sections)
    header = [
        "# Soft Sim benchmarks",
        "",
        "Written by `make bench` (`bench/run.py`); rerun it to replace this file with your machine's figures.",
        "",
        "| | |",
        "|---|---|",
        f"| date | {info.get('date', 'unknown')} |",
        f"| CPU | {info.get('cpu', 'unknown')}, {info.get('cores', '?')} cores |",
        f"| memory | {info.get('memory', 'unknown')} |",
        f"| system | {info.get('os', 'unknown')}, Python {info.get('python', '?')} |",
        f"| Blender (bpy) | {info.get('blender', 'unknown')} |",
        f"| numpy / scipy | {info.get('numpy', '?')} / {info.get('scipy', '?')} |",
        f"| Compute AUTO | {info.get('compute', '?')} |",
        f"| command | `{info.get('command', 'python bench/run.py')}` |",
    ]
    if seconds is not None:
        header.append(f"| run time | {seconds:.0f} s |")
    body = [text.strip() for text in sections if text and text.strip()]
    if not body:
        body = ["(no benchmark produced a table)"]
    return "\n".join(header) + "\n\n" + INTERPRETATION + "\n" + "\n\n".join(body) + "\n"


def table(rows) -> str:
    """A generic Markdown table of a list of dicts (columns: the keys of the first row, in order)."""
    if not rows:
        return "(no rows)"
    keys = list(rows[0].keys())

    def cell(value):
        if isinstance(value, float):
            return "-" if math.isnan(value) else f"{value:.4g}"
        return str(value)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def section_cloth(args) -> str:
    import bench_cloth

    rows = bench_cloth.run(args.sizes, args.frames, repeat=args.repeat)
    return "## Cloth\n\n" + bench_cloth.describe(args.frames) + "\n\n" + bench_cloth.markdown(rows)


def section_tetrahedralize(args) -> str:
    """The tetrahedralize benchmark's section, or "" when that module (or its run()) does not exist."""
    if not os.path.exists(os.path.join(BENCH, "bench_tetrahedralize.py")):
        return ""
    module = importlib.import_module("bench_tetrahedralize")
    if not callable(getattr(module, "run", None)):
        return ""
    result = module.run()
    if isinstance(result, str):
        body = result
    elif callable(getattr(module, "markdown", None)):
        body = module.markdown(result)
    else:
        body = table(list(result))
    title = getattr(module, "TITLE", "Tetrahedralize")
    intro = module.describe() if callable(getattr(module, "describe", None)) and not inspect.signature(
        module.describe).parameters else ""
    return f"## {title}\n\n" + (intro + "\n\n" if intro else "") + body


def section_solid(args) -> str:
    """The solid benchmark's section (bench/bench_solid.py: Soft Sim XPBD vs Blender Soft Body), 100 frames."""
    if not os.path.exists(os.path.join(BENCH, "bench_solid.py")):
        return ""
    module = importlib.import_module("bench_solid")
    return f"## {module.TITLE}\n\n" + module.describe() + "\n\n" + module.markdown(module.run())


def section_kernels(args) -> str:
    """The position-based kernels' ns per constraint update against a memory copy (bench/bench_kernels.py)."""
    if not os.path.exists(os.path.join(BENCH, "bench_kernels.py")):
        return ""
    module = importlib.import_module("bench_kernels")
    rows = module.run(verbose=False)
    return ("## Position-based kernels\n\n" + (module.__doc__ or "").split("\n\n")[0] + f" Large-copy bandwidth "
            f"{module.bandwidth_gb_s():.1f} GB/s (read + write).\n\n" + module.markdown(rows))


def section_scenarios(args) -> str:
    """The scenario table's long run (bench/bench_scenarios.py: every solver on the scenario scenes)."""
    if not os.path.exists(os.path.join(BENCH, "bench_scenarios.py")):
        return ""
    module = importlib.import_module("bench_scenarios")
    return f"## {module.TITLE}\n\n" + module.describe() + "\n\n" + module.markdown(module.run())


def section_acceptance(args) -> str:
    """The acceptance scenes for solids, baked in Blender with every solver's defaults (bench/bench_acceptance.py)."""
    import bench_acceptance

    return f"## {bench_acceptance.TITLE}\n\n" + bench_acceptance.describe() + "\n\n" + bench_acceptance.markdown(bench_acceptance.run())


def section_shots(args) -> str:
    """The real shots against built-in Cloth and the mesh collider's cost (bench/bench_shots.py)."""
    module = importlib.import_module("bench_shots")
    return f"## {module.TITLE}\n\n" + module.describe() + "\n\n" + module.markdown(module.run())


def section_fresh(args) -> str:
    """The 64 x 64 lab scene baked in fresh processes, one setting varied at a time (bench/bench_fresh_bake.py)."""
    module = importlib.import_module("bench_fresh_bake")
    rows = module.run(verbose=False)
    return (f"## {module.TITLE}\n\n" + module.describe() + "\n\n" + module.markdown(rows) + "\n\n"
            + module.phases_markdown(rows))


def section_bodies(args) -> str:
    """Several bodies in one bake and a cube in a hammock (bench/bench_bodies.py)."""
    module = importlib.import_module("bench_bodies")
    return f"## {module.TITLE}\n\n" + module.describe() + "\n\n" + module.markdown(module.run(verbose=False))


SECTIONS = {"cloth": section_cloth, "tetrahedralize": section_tetrahedralize, "solid": section_solid,
            "kernels": section_kernels, "scenarios": section_scenarios, "acceptance": section_acceptance,
            "shots": section_shots, "fresh": section_fresh, "bodies": section_bodies}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run Soft Sim's benchmarks; Markdown to stdout and docs/benchmarks.md")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="cloth grid resolutions n (default 21 64 128)")
    parser.add_argument("--frames", type=int, default=None, help="cloth frames (default 100)")
    parser.add_argument("--repeat", type=int, default=1, help="cloth: time each run this many times, keep the fastest")
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=None, help="run only these benchmarks")
    parser.add_argument("--merge", action="store_true",
                        help="with --only: replace these benchmarks' sections in docs/benchmarks.md, keeping the rest")
    args = parser.parse_args(argv)
    if args.merge and not args.only:
        parser.error("--merge needs --only (a full run rewrites docs/benchmarks.md)")
    import bench_cloth

    args.sizes = args.sizes or list(bench_cloth.SIZES)
    args.frames = args.frames or bench_cloth.FRAMES

    start = time.perf_counter()
    sections = []
    for name in args.only or list(SECTIONS):
        text = SECTIONS[name](args)
        if text:
            sections.append(text)
            print(text + "\n", flush=True)
    existing = None
    if args.merge and os.path.exists(OUT):
        with open(OUT) as f:
            existing = f.read()
    report = render_report(machine_info(argv), sections, time.perf_counter() - start, existing=existing)
    # A partial run (--only) writes beside the full report instead of replacing it, unless told to merge into it.
    out = OUT if not args.only or args.merge else PARTIAL_OUT.format(names="_".join(args.only))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(report)
    print(f"(written to {os.path.relpath(out, ROOT)}; {time.perf_counter() - start:.0f} s in all)", file=sys.stderr)


if __name__ == "__main__":
    main()
