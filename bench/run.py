"""`make bench`: run every benchmark and print its tables in Markdown (also written to bench_out/bench.md;
with --only, to bench_out/bench_<names>.md).

Benchmarks: bench/bench_cloth.py (always), bench/bench_solid.py, bench/bench_kernels.py,
bench/bench_tetrahedralize.py and bench/bench_scenarios.py (each when it exists), bench/bench_acceptance.py.
Usage: python bench/run.py [--sizes 21 64 128] [--frames 100] [--repeat 1]
       [--only cloth|kernels|solid|tetrahedralize|scenarios|acceptance ...]
(--sizes, --frames and --repeat apply to the cloth benchmark.)
"""
import argparse
import importlib
import inspect
import math
import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
for path in (ROOT, BENCH):
    if path not in sys.path:
        sys.path.insert(0, path)

OUT = os.path.join(ROOT, "bench_out", "bench.md")


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


SECTIONS = {"cloth": section_cloth, "tetrahedralize": section_tetrahedralize, "solid": section_solid,
            "kernels": section_kernels, "scenarios": section_scenarios, "acceptance": section_acceptance}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run Soft Sim's benchmarks; Markdown to stdout and bench_out/bench.md")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="cloth grid resolutions n (default 21 64 128)")
    parser.add_argument("--frames", type=int, default=None, help="cloth frames (default 100)")
    parser.add_argument("--repeat", type=int, default=1, help="cloth: time each run this many times, keep the fastest")
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=None, help="run only these benchmarks")
    args = parser.parse_args(argv)
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
    report = "# Soft Sim benchmarks\n\n" + "\n\n".join(sections) + "\n"
    # A partial run (--only) writes beside the full report instead of replacing it.
    out = OUT if not args.only else OUT.replace("bench.md", "bench_" + "_".join(args.only) + ".md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write(report)
    print(f"(written to {os.path.relpath(out, ROOT)}; {time.perf_counter() - start:.0f} s in all)", file=sys.stderr)


if __name__ == "__main__":
    main()
