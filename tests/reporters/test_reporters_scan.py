"""Reporters on real scans of shards built in the test: no leak, same numbers, valid SARIF, determinism, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shardscan.allowlist import parse_allowlist
from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.redaction import fingerprint
from shardscan.reporters import FORMATS, render
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard
from tests.reporters.test_reporters import numbers, sarif_validate

# One planted value per credential family (and encoding), each in its own row of shard a.
TEMPLATES = (
    "{{github:ghp_}}", "{{github_pat}}", "{{jwt}}", "{{openai}}", "{{anthropic}}", "{{hf}}", "{{aws_id}}",
    "{{aws_secret}}", "{{pem}}", "{{pem_escaped}}", "{{jwt:1559692800}}", "{{pem:ec}}",
)
WINDOW = 20


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[Path, list[str]]:
    """Shard a: every family planted in tool messages; shard b: clean; shard c: not Parquet at all."""
    root = tmp_path_factory.mktemp("reporters-scan")
    secrets = [expand(t, seed="reporters") for t in TEMPLATES]
    rows = []
    for i, secret in enumerate(secrets):
        line = f"aws_secret_access_key = {secret}" if TEMPLATES[i] == "{{aws_secret}}" else f"export TOKEN={secret}"
        rows.append(trace_row([("user", "please deploy"), ("tool", f"$ cat .env\n{line}\n# done")]))
    write_trace_shard(root / "data" / "train-a.parquet", rows)
    write_trace_shard(root / "data" / "train-b.parquet", [trace_row([("user", "hello")])] * 3)
    (root / "data" / "train-c.parquet").write_bytes(b"PAR1 this is not really parquet")
    return root / "data", secrets


ACCEPTED_ROW = TEMPLATES.index("{{jwt:1559692800}}")
REASON = "expired session token in a scraped page; reviewed, kept"


@pytest.fixture(scope="module")
def allowlist(dataset):
    """A reviewed allowlist: one entry accepts the expired JWT, one matches nothing (stale)."""
    text = f"""version: 1
entries:
  - fingerprint: {fingerprint(dataset[1][ACCEPTED_ROW], "jwt")}
    rule: jwt
    reason: "{REASON}"
    reviewer: release review
    reviewed: 2026-11-30
  - fingerprint: sha256:{"0" * 64}
    reason: "a token removed from the data since"
    reviewer: release review
    reviewed: 2026-11-30
"""
    return parse_allowlist(text, "allowlist.yaml")


@pytest.fixture(scope="module")
def report(dataset, allowlist):
    return scan([str(dataset[0])], options=ScanOptions(now=FIXED_NOW), allowlist=allowlist)


@pytest.mark.slow
def test_the_scan_found_every_planted_secret(report):
    assert sorted(f.location.row for f in report.findings if f.location.shard == "train-a.parquet") == list(
        range(len(TEMPLATES)))
    assert [(i.shard, i.kind) for i in report.issues] == [("train-c.parquet", "unreadable")]
    assert report.decision.exit_code == 3
    [accepted] = [f for f in report.findings if f.status == "allowlisted"]
    assert (accepted.location.row, accepted.blocking) == (ACCEPTED_ROW, False)
    assert [e.entry for e in report.allowlist.stale] == [2]


def test_allowlisted_row_reaches_sarif_card_and_html(report):
    results = json.loads(render(report, "sarif"))["runs"][0]["results"]
    suppressed = [r for r in results if r.get("suppressions")]
    assert [(r["properties"]["row"], r["suppressions"][0]["justification"]) for r in suppressed] == [
        (ACCEPTED_ROW, REASON)]
    card = render(report, "card")
    assert f"| train-a.parquet | {ACCEPTED_ROW} | conversations\\[1\\].content | JSON Web Tokens |" in card
    assert REASON in card
    html = render(report, "html")
    assert html.count('<tr class="accepted">') == 1 and REASON in html
    assert "stale (matched nothing): entry 2 (line 8)" in html


def _windows(secret: str) -> set[str]:
    core = "".join(secret.replace("\\n", "").split())
    return {core[i:i + WINDOW] for i in range(max(1, len(core) - WINDOW + 1))}


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_format_contains_a_planted_secret(report, dataset, fmt):
    text = render(report, fmt)
    for secret in dataset[1]:
        assert secret not in text, f"{fmt} contains a planted secret in full"
        leaked = [w for w in _windows(secret) if w in text]
        # Report only how much leaked, never the text itself (a failure message must not leak either).
        assert not leaked, f"{fmt} contains {len(leaked)} {WINDOW}-character pieces of a planted secret"


def test_every_format_carries_the_same_numbers_on_a_real_scan(report):
    expected = {"findings": len(TEMPLATES), "blocking": len(report.blocking), "shards": 3, "errors": 1}
    assert expected["blocking"] > 0
    for fmt in FORMATS:
        got = numbers(fmt, render(report, fmt))
        assert got == {k: expected[k] for k in got}, fmt


def test_sarif_of_a_real_scan_validates(report):
    log = sarif_validate(render(report, "sarif"))
    run = log["runs"][0]
    assert {r["ruleId"] for r in run["results"]} <= {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert len(run["tool"]["driver"]["rules"]) == len(report.rules) > 0
    assert run["invocations"][0]["toolExecutionNotifications"][0]["properties"]["shard"] == "train-c.parquet"


@pytest.mark.slow
def test_card_and_markdown_are_deterministic(dataset):
    """Two scans of unchanged data (different durations) give byte-identical card and Markdown text."""
    first = scan([str(dataset[0])], options=ScanOptions(now=datetime(2026, 12, 2, 9, 30, 15, tzinfo=UTC)))
    second = scan([str(dataset[0])], options=ScanOptions(now=datetime(2026, 12, 2, 9, 30, 15, tzinfo=UTC)))
    assert first.stats.seconds != second.stats.seconds  # the reports themselves differ in timing
    for fmt in ("card", "markdown"):
        assert render(first, fmt) == render(second, fmt)
    assert "on 2026-12-02." in render(first, "card")


@pytest.mark.slow
def test_cli_writes_several_formats_at_once(dataset, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(dataset[0]), "--no-allowlist", "--now", "2026-12-02",
         "--format", f"json:{out / 'report.json'}", "--format", f"html:{out / 'audit.html'}",
         "--format", f"sarif:{out / 'report.sarif'}", "--format", f"junit:{out / 'junit.xml'}",
         "--format", f"card:{out / 'card.md'}", "--format", "terminal", "--mkdir"],  # out/ is created on request
        capture_output=True, text=True,
    )
    assert proc.returncode == 3
    assert sorted(p.name for p in out.iterdir()) == ["audit.html", "card.md", "junit.xml", "report.json",
                                                     "report.sarif"]
    assert json.loads((out / "report.json").read_text())["gate"]["exit_code"] == 3
    sarif_validate((out / "report.sarif").read_text())
    assert "shardscan audit" in (out / "audit.html").read_text()
    assert proc.stdout.splitlines()[0].startswith("shardscan ")
    assert "gate: FAIL (exit 3)" in proc.stdout
    assert "\x1b[" not in proc.stdout  # not a TTY: plain output


def test_cli_rejects_two_formats_on_stdout(dataset):
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(dataset[0]), "--no-allowlist", "--format", "json",
         "--format", "markdown"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert "only one --format may go to standard output" in proc.stderr


@pytest.mark.slow
def test_cli_quiet_prints_only_the_decision(dataset):
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(dataset[0]), "--no-allowlist",
         "--quiet"], capture_output=True, text=True,
    )
    assert proc.returncode == 3
    assert proc.stdout == "gate: FAIL (exit 3): scan incomplete: 1 problem(s) in train-c.parquet\n"
