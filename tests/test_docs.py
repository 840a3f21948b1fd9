"""Every Python block of the README and of docs/ runs as written: each is extracted and run as
a script in a fresh interpreter, from an empty temporary folder, so a doc cannot go stale.

A block that cannot run here (it needs a paid model's API key) is marked in the Markdown by an
HTML comment on the line before its opening fence, ``<!-- doctest: skip REASON -->``; the
reason is required and shown as the skip reason. Such marks are rare: a block that is only
slow is written small instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SKIP = re.compile(r"<!--\s*doctest:\s*skip\b(.*?)-->\s*\Z", re.S)


def python_blocks() -> list:
    """Every ```python block as a pytest parameter ``file:line`` (skipped ones marked)."""
    blocks = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            name = f"{path.relative_to(ROOT)}:{line}"
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before + "\n")
            marks = []
            if skip is not None:
                reason = skip.group(1).strip()
                assert reason, f"{name}: a doctest skip needs its reason"
                marks.append(pytest.mark.skip(reason=f"{name}: {reason}"))
            blocks.append(pytest.param(match.group(1), id=name, marks=marks))
    return blocks


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_and_few_skips():
    assert len(BLOCKS) >= 13
    skipped = [b for b in BLOCKS if b.marks]
    assert len(skipped) <= 2, [b.id for b in skipped]


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_a_python_block_runs_as_written(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HEURESIS_LLM_BASE_URL")}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (f"the block failed (exit {done.returncode}):\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def _bench_main_job():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_main_job", ROOT / "benchmarks" / "bench_main_job.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_states_the_latest_recorded_main_job_figures():
    """The README's times of the default demo are those of the latest measurement recorded by
    ``benchmarks/bench_main_job.py --record`` (issue 42): every recorded cold and warm run
    lies in the range the README states, the date is the record's, and the sentence names the
    command and the machine's load. Regenerate with ``--update-readme``."""
    bench = _bench_main_job()
    record = bench.latest_record()
    assert record is not None, f"no measurement of the default demo in {bench.RESULTS}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = bench.stated_figures(readme)
    for label in ("cold", "warm"):
        low, high = stated[label]
        for run in record[label]:
            assert low <= round(run["wall"]) <= high, (
                f"README: {label} {low}–{high} s, but the latest record ({record['date']}, "
                f"{record['commit']}) measured {run['wall']:.1f} s; run "
                "python benchmarks/bench_main_job.py --update-readme")
    assert stated["date"] == record["date"]
    block = readme[readme.index(bench.README_BEGIN):readme.index(bench.README_END)]
    assert record["command"] in block and f"at commit {record['commit']}" in block
    assert f"under load {record['load'][0]:.1f}–{record['load'][1]:.1f}" in block


def test_the_performance_page_shows_the_latest_recorded_main_job_runs():
    """docs/performance.md's table of the main job is the latest record's, run by run (wall,
    CPU, load before and after), as ``--update-readme`` writes it."""
    bench = _bench_main_job()
    record = bench.latest_record()
    page = bench.DOCS.read_text(encoding="utf-8")
    start, end = page.find(bench.DOCS_BEGIN), page.find(bench.DOCS_END)
    assert 0 <= start < end, f"{bench.DOCS} has no {bench.DOCS_BEGIN!r} … block"
    assert page[start + len(bench.DOCS_BEGIN):end] == bench.runs_table(record), (
        "docs/performance.md's main-job table is not the latest record's; run "
        "python benchmarks/bench_main_job.py --update-readme")


def test_the_readme_check_fails_on_a_stale_figure():
    """The check above can fail: the README's old claim (34–37 s cold) against a record of
    98 s is outside the stated range."""
    bench = _bench_main_job()
    stale = (f"x {bench.README_BEGIN}Measured on 2026-01-01 ... it took 34–37 s with a cold "
             f"cache (9 s CPU) and 4–5 s warm, served from disk.{bench.README_END} y")
    stated = bench.stated_figures(stale)
    assert stated["cold"] == (34, 37) and stated["warm"] == (4, 5)
    assert not stated["cold"][0] <= 98 <= stated["cold"][1]
    record = {"date": "2026-12-07", "commit": "abc1234", "command": "python x --n 200",
              "cpus": 2, "load": [3.21, 9.87], "cold": [{"wall": 97.6, "user": 120.0,
                                                          "sys": 8.0}],
              "warm": [{"wall": 3.4, "user": 2.0, "sys": 1.0},
                       {"wall": 4.6, "user": 2.0, "sys": 1.0}]}
    text = bench.readme_figures(record)
    regenerated = bench.stated_figures(f"{bench.README_BEGIN}{text}{bench.README_END}")
    assert regenerated["cold"] == (98, 98) and regenerated["warm"] == (3, 5)
    assert "under load 3.2–9.9" in text and "Measured on 2026-12-07" in text


LINK = re.compile(r"\]\(([\w./-]*\.md)?#([^)\s]+)\)")


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (code blocks skipped): the heading's
    text without its link targets and punctuation, lower-cased, spaces as hyphens; a repeated
    anchor gets -1, -2, …"""
    anchors: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if re.match(r" {0,3}```+[^`]*$", line):  # a fence (not inline code at a line's start)
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6} +(.*?) *#* *$", line)
        if match is None:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).lower()
        anchor = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        unique, k = anchor, 0
        while unique in anchors:
            k += 1
            unique = f"{anchor}-{k}"
        anchors.add(unique)
    return anchors


def test_heading_anchors_are_spelled_as_github_spells_them():
    text = ("# Performance: today's figures\n```python\n# not a heading\n```\n"
            "```` ```json ```` inline, not a fence\n"
            "## The full-size job (`--n 600 --count 32`)\n## GES: causal-learn's result\n"
            "### [Ray](x.md) on a *local* cluster\n## Notes\n## Notes\n")
    assert heading_anchors(text) == {
        "performance-todays-figures", "the-full-size-job---n-600---count-32",
        "ges-causal-learns-result", "ray-on-a-local-cluster", "notes", "notes-1"}


def test_every_link_to_a_heading_of_the_docs_finds_it():
    """A link ``page.md#anchor`` (or ``#anchor`` within a page) in the README or docs/ names
    a heading that page has — so moving a section (docs/performance.md's history went to
    docs/performance-log.md) cannot leave a link pointing nowhere."""
    broken = []
    for path in DOCUMENTS:
        for target, anchor in LINK.findall(path.read_text(encoding="utf-8")):
            page = (path.parent / target) if target else path
            if not page.is_file():
                broken.append(f"{path.relative_to(ROOT)}: {target} does not exist")
            elif anchor not in heading_anchors(page.read_text(encoding="utf-8")):
                broken.append(f"{path.relative_to(ROOT)}: {target or 'itself'}#{anchor}")
    assert not broken, broken
