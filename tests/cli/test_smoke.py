"""End-to-end smoke test of the scan command on a shard built in the test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow


def test_scan_reports_planted_token_at_exact_location(tmp_path):
    token = expand("{{github:ghp_}}", seed="smoke")
    write_trace_shard(
        tmp_path / "data" / "train-00000-of-00001.parquet",
        [trace_row([("user", "hello")]), trace_row([("user", "hi"), ("tool", f"export GITHUB_TOKEN={token}")])],
    )
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(tmp_path / "data"), "--format", "json",
         "--output", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 1
    report = json.loads(out.read_text())
    [finding] = report["findings"]
    assert (finding["shard"], finding["row"], finding["column"], finding["role"]) == (
        "train-00000-of-00001.parquet", 1, "conversations[1].content", "tool",
    )
    assert finding["rule_id"] == "github-pat"
    assert token not in out.read_text() + proc.stdout + proc.stderr
