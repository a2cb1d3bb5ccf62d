"""The terminal report's layout at 60, 80, 120 and 200 columns, on a terminal and in a pipe, with and
without colour: golden snapshots of the demo dataset's audit and of a blocking, incomplete scan.

Set SHARDSCAN_UPDATE_GOLDEN=1 to rewrite the snapshots after an intended change (review the diff).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shardscan import demo
from shardscan.allowlist import load_allowlist, shipped_allowlist
from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.reporters import RenderOptions, render
from tests.report_samples import sample_report

SNAPSHOTS = Path(__file__).resolve().parents[1] / "data" / "golden" / "terminal"
WIDTHS = (60, 80, 120, 200)
# How the CLI renders for each destination: a terminal folds lines between words; NO_COLOR on a
# terminal drops colour only; a pipe or file (a CI log) keeps each line whole and has no colour.
MODES = {
    "tty": RenderOptions(color=True, wrap=True),
    "tty-no-color": RenderOptions(color=False, wrap=True),
    "pipe": RenderOptions(color=False, wrap=False),
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """The demo's audit (the reviewed allowlist shipped with shardscan, a fixed clock and duration)
    and a sample with blocking findings, errors and hostile column names."""
    folder = tmp_path_factory.mktemp("demo")
    demo.write_demo_dataset(folder)
    audit = scan([str(folder)], options=ScanOptions(now=NOW), allowlist=load_allowlist(shipped_allowlist()))
    # Fixed where runs differ (duration) and where rule changes elsewhere would churn every snapshot.
    audit = replace(audit, stats=replace(audit.stats, seconds=0.5), scanned_at=NOW, ruleset_digest="0123456789ab",
                    allowlist=replace(audit.allowlist, path="allowlist.yaml"))
    return {"demo": audit, "blocking": sample_report()}


def _cases():
    return [(name, mode, width) for name in ("demo", "blocking") for mode in MODES for width in WIDTHS]


@pytest.mark.parametrize(("name", "mode", "width"), _cases())
def test_snapshot(reports, name, mode, width):
    text = render(reports[name], "terminal", replace(MODES[mode], width=width))
    path = SNAPSHOTS / f"{name}-{mode}-{width}.txt"
    if os.environ.get("SHARDSCAN_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["demo", "blocking"])
def test_a_terminal_never_gets_a_line_wider_than_itself(reports, name, width):
    """Every line fits, except one that is a single unbreakable word (a long column path)."""
    for mode in ("tty", "tty-no-color"):
        text = ANSI.sub("", render(reports[name], "terminal", replace(MODES[mode], width=width)))
        for line in text.splitlines():
            assert len(line) <= width or " " not in line.strip(), (mode, line)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_never_cuts_a_word(reports, width):
    """Each word of every finding's detail and allowlist reason appears whole at the narrow widths:
    the record layout wraps at spaces only."""
    text = render(reports["demo"], "terminal", replace(MODES["tty-no-color"], width=width))
    words = set(text.split())
    for finding in reports["demo"].findings:
        for word in (finding.detail + " " + finding.allowlist.reason).split():
            assert word in words, word


def test_narrow_output_is_one_block_per_finding_and_wide_output_a_table(reports):
    narrow = render(reports["blocking"], "terminal", RenderOptions(width=80))
    assert ("train-00000-of-00004.parquet:0  conversations[1].content  (tool)\n"
            "    github-pat  valid  BLOCKING  git_…(41)\n"
            "    valid because of check 1\n") in narrow
    short = replace(reports["blocking"], findings=tuple(
        replace(f, location=replace(f.location, column="c")) for f in reports["blocking"].findings))
    wide = render(short, "terminal", RenderOptions(width=200))
    header = next(line for line in wide.splitlines() if line.lstrip().startswith("rule "))
    assert header.split() == ["rule", "shard", "row", "column", "role", "verdict", "status", "preview", "detail"]
    assert re.search(r"github-pat +train-00000-of-00004\.parquet +0 +c +tool +valid +BLOCKING +git_…\(41\) "
                     r"+valid because of check 1", wide)


def test_plain_output_draws_no_borders(reports):
    """In a pipe or a file, nothing the report adds looks like a table border or a field separator."""
    for name in ("demo", "blocking"):
        for width in WIDTHS:
            text = render(reports[name], "terminal", replace(MODES["pipe"], width=width))
            hostile = "meta{<script>alert(1)</script>|*x*[y](z)]]>`}"
            stripped = text.replace(hostile, "")
            assert "|" not in stripped and "+--" not in stripped and "─" not in stripped, (name, width)


def test_cached_shards_are_counted_in_the_summary_line(reports):
    report = reports["blocking"]
    cached = replace(report, stats=replace(report.stats, cached_shards=2))
    assert "scanned 4 shard(s) (2 from cache), " in render(cached, "terminal", RenderOptions(width=200))


README = Path(__file__).resolve().parents[2] / "README.md"
README_START = ("<!-- demo-output:start (generated by tests/reporters/test_terminal_layout.py; "
                "SHARDSCAN_UPDATE_GOLDEN=1 rewrites it) -->\n")
README_END = "<!-- demo-output:end -->"


def test_readme_shows_the_demo_output_as_the_code_prints_it(reports):
    """The README's example is the demo's real report at 80 columns (the 80-column snapshot)."""
    text = render(reports["demo"], "terminal", replace(MODES["tty-no-color"], width=80))
    readme = README.read_text(encoding="utf-8")
    head, rest = readme.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    block = "```text\n" + text + "```\n"
    if os.environ.get("SHARDSCAN_UPDATE_GOLDEN"):
        README.write_text(head + README_START + block + README_END + tail, encoding="utf-8")
    assert rest.split(README_END, 1)[0] == block
