"""`make bench`'s report writer (bench/run.py): header, how to read the tables, then the tables, into
docs/benchmarks.md. Tested with made-up tables: the benchmarks themselves take far too long for the suite."""
import importlib.util
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "bench", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INFO = {"date": "2031-02-03", "cpu": "Made-up CPU 9000", "cores": "7", "memory": "12.5 GiB", "os": "Linux-test",
        "python": "3.11.9", "blender": "5.0.1", "numpy": "1.26.4", "scipy": "1.13.1",
        "command": "python bench/run.py --sizes 21"}
CLOTH = ("## Cloth\n\nA made-up scene.\n\n| n | method | ms/frame | speed vs Cloth |\n|---:|---|---:|---:|\n"
         "| 21 | Blender Cloth (built-in) | 9.3 | 1.00× |\n| 21 | XPBD 30×1 | 23.6 | 0.39× |")
SOLID = "## Solid\n\n| tets | method | ms/frame |\n|---:|---|---:|\n| 1258 | Newton | 19.9 |\n"


def test_header_states_date_machine_versions_and_command(run):
    report = run.render_report(INFO, [CLOTH, SOLID], seconds=123.4)
    header = report.split("\n## ", 1)[0]
    for value in INFO.values():
        assert value in header, value
    assert re.search(r"\| CPU \| Made-up CPU 9000, 7 cores \|", header)
    assert "| run time | 123 s |" in header
    assert report.startswith("# Soft Sim benchmarks\n")


def test_tables_follow_verbatim_in_order_after_the_reading_notes(run):
    report = run.render_report(INFO, [CLOTH, "", "   \n", SOLID])
    assert CLOTH in report and SOLID.strip() in report
    assert report.index("How to read these tables") < report.index("## Cloth") < report.index("## Solid")
    assert report.count("## ") == 2  # the empty sections left no heading behind
    assert report.endswith("|\n")
    # Ratios and quality are explained without quoting any figure (the notes stay true whatever the numbers).
    assert not re.search(r"\d+\.\d|\d\s*(%|×|ms\b|mm\b)", run.INTERPRETATION)
    assert "ratio" in run.INTERPRETATION and "quality" in run.INTERPRETATION.lower()


def test_report_is_pure(run):
    assert run.render_report(INFO, [CLOTH]) == run.render_report(dict(INFO), [CLOTH])
    assert "| run time |" not in run.render_report(INFO, [CLOTH])
    assert "(no benchmark produced a table)" in run.render_report(INFO, [])


def test_machine_info_describes_this_machine(run):
    info = run.machine_info(["--only", "solid"])
    assert set(INFO) <= set(info)
    assert all(isinstance(v, str) and v for v in info.values())
    assert info["cores"] == str(os.cpu_count())
    assert info["numpy"] == np.__version__
    assert info["command"] == "python bench/run.py --only solid"
    from solvers import native

    assert info["compute"] == native.status()[1]  # which path the figures come from (a stale library means NumPy)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", info["date"])
    if os.path.exists("/proc/meminfo"):
        assert re.fullmatch(r"\d+\.\d GiB", info["memory"])


def test_make_bench_writes_docs_benchmarks_md(run, monkeypatch, tmp_path):
    """A full run writes the report to docs/benchmarks.md; a partial (--only) run writes beside it in bench_out/."""
    assert os.path.normpath(run.OUT) == os.path.join(ROOT, "docs", "benchmarks.md")
    out = tmp_path / "benchmarks.md"
    monkeypatch.setattr(run, "OUT", str(out))
    monkeypatch.setattr(run, "PARTIAL_OUT", str(tmp_path / "bench_{names}.md"))
    monkeypatch.setattr(run, "SECTIONS", {"cloth": lambda args: CLOTH, "solid": lambda args: SOLID})
    run.main(["--frames", "3"])
    written = out.read_text()
    assert CLOTH in written and SOLID.strip() in written and "| numpy / scipy |" in written
    run.main(["--only", "solid"])
    assert (tmp_path / "bench_solid.md").read_text().count("## ") == 1
    assert out.read_text() == written  # the partial run left the full report alone


EXISTING = ("# Soft Sim benchmarks\n\nA curated header.\n\n## Cloth (2026-01-01, a dev machine)\n\nOld cloth table.\n\n"
            "## Solid (2026-01-02)\n\nOld solid table.\n")


def test_merging_replaces_a_section_of_the_same_title_and_keeps_every_other_line(run):
    merged = run.render_report(INFO, [CLOTH], existing=EXISTING)
    assert "Old cloth table." not in merged and CLOTH.split("\n", 1)[1] in merged
    assert merged.startswith("# Soft Sim benchmarks\n\nA curated header.\n\n## Cloth (2031-02-03)\n")
    assert merged.endswith("## Solid (2026-01-02)\n\nOld solid table.\n")  # the next section kept verbatim
    assert merged.count("## ") == 2 and "| numpy / scipy |" not in merged  # no second header
    note = merged.split("## Cloth (2031-02-03)\n\n", 1)[1].split("\n", 1)[0]
    for value in ("python bench/run.py --sizes 21", "Made-up CPU 9000", "7 cores", "12.5 GiB", "5.0.1", "1.26.4"):
        assert value in note, value
    # Merging again replaces the merged section (its title is read without the date), and a new title is appended.
    again = run.render_report(INFO, [CLOTH, SOLID.replace("## Solid", "## Shots")], existing=merged)
    assert again.count("## Cloth") == 1 and again.count("A made-up scene.") == 1
    assert again.index("## Cloth") < again.index("## Solid (2026-01-02)") < again.index("## Shots (2031-02-03)")
    assert "Old solid table." in again


def test_merge_writes_into_docs_benchmarks_md_keeping_the_rest(run, monkeypatch, tmp_path):
    out = tmp_path / "benchmarks.md"
    out.write_text(EXISTING)
    monkeypatch.setattr(run, "OUT", str(out))
    monkeypatch.setattr(run, "PARTIAL_OUT", str(tmp_path / "bench_{names}.md"))
    monkeypatch.setattr(run, "SECTIONS", {"cloth": lambda args: CLOTH, "solid": lambda args: SOLID})
    run.main(["--only", "solid", "--merge"])
    written = out.read_text()
    assert written.startswith(EXISTING.split("## Solid")[0]) and "Old solid table." not in written
    assert "| 1258 | Newton | 19.9 |" in written and not (tmp_path / "bench_solid.md").exists()
    with pytest.raises(SystemExit):
        run.main(["--merge"])  # a full run rewrites the file: merging it is refused
