"""The demo's four documented rows get their verdicts, and the demo passes the default gate."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shardscan.demo import EXPIRED_JWT_ROW, GITHUB_RAW_JWT_ROW, OMITTED_KEY_ROW, SNAKEOIL_ROW, shard_name

# Both tests scan the 104-shard demo dataset: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow


def _demo(tmp_path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "demo.json"
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "demo", str(tmp_path / "data"), "--now", "2026-12-02",
         "-f", f"json:{out}", *extra],
        capture_output=True, text=True,
    )
    return proc.returncode, json.loads(out.read_text())


def test_demo_rows_get_the_documented_verdicts_and_the_gate_passes(tmp_path):
    # Without the shipped allowlist: the verdicts alone must keep the gate open.
    code, report = _demo(tmp_path, "--no-allowlist")
    got = {(f["shard"], f["row"]): (f["rule_id"], f["verdict"], f["detail"], f["blocking"]) for f in report["findings"]}
    assert got == {
        (shard_name(EXPIRED_JWT_ROW[0]), EXPIRED_JWT_ROW[1]): (
            "jwt", "expired", "HS256 JWT, iss=auth.shop.example, expired 2019-06-05 (7 years ago)", False),
        (shard_name(GITHUB_RAW_JWT_ROW[0]), GITHUB_RAW_JWT_ROW[1]): (
            "jwt", "expired",
            "HS256 JWT, iss=github.com, aud=raw.githubusercontent.com, expired 2026-07-27 (4 months ago)", False),
        (shard_name(OMITTED_KEY_ROW[0]), OMITTED_KEY_ROW[1]): (
            "private-key", "redacted", "body omitted ('...' on line 2), not a key", False),
        (shard_name(SNAKEOIL_ROW[0]), SNAKEOIL_ROW[1]): (
            "private-key", "invalid",
            "PKCS#8 private key: body is not valid base64 (line 7: '=' padding inside the data), not a key", False),
    }
    assert code == 0
    assert report["gate"]["passed"] is True


def test_demo_under_strict_without_allowlist_fails_the_gate(tmp_path):
    code, report = _demo(tmp_path, "--strict", "--no-allowlist")
    assert code == 1
    assert report["policy"]["strict"] is True
    assert len(report["findings"]) == 4 and all(f["blocking"] for f in report["findings"])
