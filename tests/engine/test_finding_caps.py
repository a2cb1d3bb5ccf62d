"""Bounded cost per cell: findings over the per-cell and per-shard caps are aggregated with a count,
the scan reports it (exit 3 unless --allow-truncated-findings), and a blocking finding is never hidden."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shardscan.engine as engine
import shardscan.scanning.verification as verification
from shardscan.api import scan_table
from shardscan.engine import Scanner, ScanOptions
from shardscan.model import ScanIssue
from shardscan.ruleset import load_ruleset
from shardscan.synth import github_token
from tests.conftest import FIXED_NOW

RULESET = load_ruleset()
ALNUM = string.ascii_letters + string.digits


def lookalikes(n: int, seed: int = 3) -> list[str]:
    """``ghp_`` and 36 random alphanumerics: the shape of a token, with a checksum that fails."""
    rng = random.Random(seed)
    return ["ghp_" + "".join(rng.choices(ALNUM, k=36)) for _ in range(n)]


def flood(n: int, valid_at: int, seed: int = 3) -> tuple[str, str]:
    """A cell of ``n`` look-alikes with one valid token at index ``valid_at``, and that token."""
    token = github_token(random.Random(f"valid{seed}"))
    parts = lookalikes(n, seed)
    parts.insert(valid_at, token)
    return " ".join(parts), token


def options(**caps: int) -> ScanOptions:
    # (A generous pattern time limit: on a loaded machine, 2 s could end a rule early and add a limit issue.)
    return ScanOptions(now=FIXED_NOW, regex_timeout=60.0, **caps)


def test_a_flood_of_lookalikes_is_aggregated_and_the_valid_token_listed():
    cell, token = flood(20_000, valid_at=12_345)
    started = time.perf_counter()
    report = scan_table(pa.table({"text": [cell]}), "t.parquet", options=options(max_findings_per_cell=100))
    assert time.perf_counter() - started < 60  # a hang guard; about 3 s on a quiet machine
    findings = report.findings
    assert sum(f.count for f in findings) == 20_001
    start = cell.index(token)
    assert [(f.start, f.end, str(f.verdict), f.count, f.blocking) for f in findings if str(f.verdict) == "valid"] == [
        (start, start + len(token), "valid", 1, True)
    ]
    listed = [f for f in findings if f.count == 1]
    assert len(listed) == 100
    assert [(str(f.verdict), f.count, f.blocking, f.start, f.end) for f in findings if f.count > 1] == [
        ("invalid", 19_901, False, cell.index(lookalikes(100)[99]), len(cell))
    ]
    # The 99 look-alikes listed are the first ones in the cell.
    first = lookalikes(99)
    assert sorted(f.start for f in listed if str(f.verdict) == "invalid") == [cell.index(x) for x in first]
    assert report.issues == (
        ScanIssue("t.parquet", "truncated", "findings: 20001 in this cell, more than the cap of 100 per cell "
                  "(--max-findings-per-cell): 19901 aggregated by rule and verdict into 1 finding(s) with a count",
                  0, 0, "text"),
    )
    assert report.exit_code == 3


def test_aggregation_never_hides_a_blocking_finding():
    """More valid tokens than the cap: they are listed first, and the rest stay valid (blocking), counted."""
    tokens = [github_token(random.Random(f"t{i}")) for i in range(30)]
    cell = " ".join(lookalikes(50) + tokens)
    report = scan_table(pa.table({"text": [cell]}), "t.parquet", options=options(max_findings_per_cell=20))
    shapes = sorted((str(f.verdict), f.count, f.blocking) for f in report.findings)
    assert shapes == [("invalid", 50, False)] + [("valid", 1, True)] * 20 + [("valid", 10, True)]
    assert len(report.blocking) == 21
    assert report.exit_code == 3


def test_verification_is_memoised_per_distinct_value(monkeypatch):
    calls: list[str] = []
    real = verification.verify_candidate

    def counting(cand, names, context):
        calls.append(cand.secret)
        return real(cand, names, context)

    monkeypatch.setattr(verification, "verify_candidate", counting)
    tokens = [github_token(random.Random(f"m{i}")) for i in range(40)]
    scanner = Scanner(RULESET, options(max_findings_per_cell=10))
    findings, limits = scanner.scan_text(" ".join(tokens + lookalikes(200)))
    assert sum(f.count for f in findings) == 240
    assert len(calls) == len(set(calls))  # each distinct value verified once
    assert len(calls) == 40  # the 40 that pass their checksum; look-alikes only get the checksum
    assert len(limits) == 1 and limits[0].startswith("findings: 240 in this cell")


def _shard(path: Path, cells: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": cells}), path)
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", "scan", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])


@pytest.mark.slow
def test_cli_reports_the_cap_and_exits_3_unless_truncation_is_allowed(tmp_path):
    cell, token = flood(2_000, valid_at=1_000, seed=5)
    shard = _shard(tmp_path / "data" / "s.parquet", ["nothing here", cell])
    out = tmp_path / "r.json"
    common = (str(shard.parent), "--no-cache", "--no-allowlist", "--max-findings-per-cell", "50",
              "--regex-timeout", "60", "-f", f"json:{out}")
    proc = _cli(*common)
    assert proc.returncode == 3
    report = json.loads(out.read_text())
    assert [(e["kind"], e["row"], e["column"]) for e in report["errors"]] == [("truncated", 1, "text")]
    aggregated = [f for f in report["findings"] if "count" in f]
    assert [(f["verdict"], f["count"], f["blocking"]) for f in aggregated] == [("invalid", 1_951, False)]
    assert len(report["findings"]) == 51
    assert [f["verdict"] for f in report["findings"]].count("valid") == 1
    assert report["policy"]["allow_truncated_findings"] is False
    for text in (proc.stdout, proc.stderr, out.read_text()):
        assert token not in text and token[4:] not in text
    assert aggregated[0]["detail"].startswith("1951 findings of this rule aggregated (over the cap per cell)")
    allowed = _cli(*common, "--allow-truncated-findings")
    assert allowed.returncode == 1  # the valid token still blocks
    assert json.loads(out.read_text())["policy"]["allow_truncated_findings"] is True
    assert _cli(str(shard.parent), "--max-findings-per-cell", "0").returncode == 2


def test_per_shard_cap_aggregates_by_rule_verdict_and_column(tmp_path):
    rows = [f"token {x}" for x in lookalikes(30, seed=9)]
    token = github_token(random.Random("shard"))
    rows[17] = f"token {token}"
    table = pa.table({"a": rows, "b": rows})
    report = scan_table(table, "s.parquet", options=options(max_findings_per_shard=12))
    assert sum(f.count for f in report.findings) == 60
    aggregated = [f for f in report.findings if f.count > 1]
    assert sorted((f.location.column, str(f.verdict), f.count, f.location.row) for f in aggregated) == [
        ("a", "invalid", 24, 5), ("b", "invalid", 24, 5),
    ]
    assert sorted((f.location.row, f.location.column) for f in report.findings if str(f.verdict) == "valid") == [
        (17, "a"), (17, "b"),
    ]
    assert [(i.kind, i.row, i.column) for i in report.issues] == [("truncated", None, None)]
    assert report.issues[0].message.startswith(
        "findings: 60 in this shard (60 counted), more than the cap of 12 per shard"
    )


@pytest.mark.slow
def test_the_memory_budget_bounds_the_findings_kept():
    small = Scanner(RULESET, ScanOptions(memory_budget=64 * 1024**2))
    per_finding = engine.MEMORY_PER_FINDING * engine.FINDINGS_BUDGET_SHARE
    assert small.shard_finding_cap() == 64 * 1024**2 // per_finding == 2048
    assert small.cell_finding_cap() == 1000
    tiny = Scanner(RULESET, ScanOptions(memory_budget=16 * 1024**2))
    assert tiny.shard_finding_cap() == engine.MIN_FINDINGS_BY_MEMORY
    assert Scanner(RULESET).shard_finding_cap() == engine.DEFAULT_MAX_FINDINGS_PER_SHARD


def test_known_secret_occurrences_are_counted_through_the_per_shard_cap(tmp_path):
    """Over the shard cap, a known secret's occurrences are aggregated under its own fingerprint,
    so the report's per-entry count stays exact (it said 0 when an aggregate hid them)."""
    from shardscan.known_secrets import load_known_secrets

    value = "".join(random.Random("known").choices(ALNUM, k=28))
    listing = tmp_path / "known.txt"
    listing.write_text("env:PROXY_TOKEN\n", encoding="utf-8")
    entries = load_known_secrets([listing], {"PROXY_TOKEN": value})
    rows = [f"proxy token {value} used" for _ in range(40)]
    table = pa.table({"a": rows})
    report = scan_table(table, "s.parquet", options=ScanOptions(
        now=FIXED_NOW, regex_timeout=60.0, max_findings_per_shard=12, known_secrets=entries))
    assert sum(f.count for f in report.findings) == 40
    assert [(s.label, s.occurrences) for s in report.known_secrets] == [("env:PROXY_TOKEN", 40)]
    assert all(value not in f.preview + f.detail + f.context for f in report.findings)
