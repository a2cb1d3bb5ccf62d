"""The values the engine's stages hand each other: BatchResult sums in order, a cell's scan unpacks as before."""

from __future__ import annotations

import random

import pyarrow as pa

from shardscan.engine import Scanner, ScanOptions
from shardscan.model import BatchResult, CellLocation, Finding, ScanIssue, ScanStats, Verdict
from shardscan.reader import batch_from_table
from shardscan.ruleset import load_ruleset
from shardscan.synth import github_token
from tests.conftest import FIXED_NOW


def finding(row: int) -> Finding:
    return Finding("r", "k", "high", CellLocation("s", row, "c"), 0, 1, f"sha256:{row}", "p…", Verdict.UNVERIFIED, "d")


def test_batch_results_add_up_in_order():
    a = BatchResult((finding(1),), (ScanIssue("s", "limit", "a"),), ScanStats(rows=2, cells=3))
    b = BatchResult((finding(0), finding(2)), (), ScanStats(rows=5, clock_findings=1))
    c = BatchResult(issues=(ScanIssue("s", "unreadable", "c"),), stats=ScanStats(row_groups=1))
    total = a + b + c
    assert [f.location.row for f in total.findings] == [1, 0, 2]
    assert [i.message for i in total.issues] == ["a", "c"]
    assert total.stats == ScanStats(row_groups=1, rows=7, cells=3, clock_findings=1)
    assert BatchResult.total([a, b, c]) == total
    assert BatchResult.total([]) == BatchResult() == BatchResult((), (), ScanStats())


def test_a_batch_scan_returns_its_findings_issues_and_counts():
    token = github_token(random.Random(11))
    scanner = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW))
    table = pa.table({"text": ["nothing here", f"export GITHUB_TOKEN={token}", None]})
    result = scanner.scan_batch(batch_from_table(table), "t.parquet")
    assert isinstance(result, BatchResult)
    assert [(f.location.row, f.location.column, f.rule_id, f.verdict) for f in result.findings] == [
        (1, "text", "github-pat", Verdict.VALID)
    ]
    assert result.issues == ()
    assert (result.stats.rows, result.stats.cells, result.stats.candidate_cells) == (3, 2, 1)


def test_a_cell_scan_unpacks_into_findings_and_limits():
    token = github_token(random.Random(12))
    scan = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_text(f"token: {token}")
    findings, limits = scan
    assert (findings, limits) == (scan.findings, scan.limits)
    assert [(f.rule_id, f.verdict, f.start) for f in findings] == [("github-pat", Verdict.VALID, 7)] and limits == []
    assert Scanner(load_ruleset()).scan_text("nothing to see") == ([], [])
