"""--show-secrets: plaintext for local review only, refused in CI, never in files or the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shardscan.api import scan
from shardscan.cache import ResultCache
from shardscan.engine import ScanOptions
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TOKEN = expand("{{github:ghp_}}", seed="show-secrets")


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def test_show_secrets_prints_plaintext_locally_with_a_warning(tmp_path: Path):
    write_trace_shard(tmp_path / "d" / "a.parquet", [trace_row([("tool", f"GITHUB_TOKEN={TOKEN}")])])
    report = tmp_path / "r.json"
    proc = _run(["scan", "d", "--show-secrets", "--no-allowlist", "--format", "terminal", "--format",
                 f"json:{report}"], _env(), tmp_path)
    assert proc.returncode == 1
    shown = TOKEN in proc.stdout
    assert shown, "the terminal report should show the secret under --show-secrets"
    assert "WARNING: --show-secrets prints full secrets" in proc.stderr
    in_file = TOKEN in report.read_text()
    assert not in_file, "the JSON report must never carry a plaintext secret"
    assert not (tmp_path / ".shardscan-cache").exists()


def test_show_secrets_refuses_to_run_in_ci(tmp_path: Path):
    write_trace_shard(tmp_path / "d" / "a.parquet", [trace_row([("tool", f"GITHUB_TOKEN={TOKEN}")])])
    proc = _run(["scan", "d", "--show-secrets"], _env(CI="true"), tmp_path)
    assert proc.returncode == 2
    assert "--show-secrets refuses to run when CI is set" in proc.stderr
    leaked = TOKEN in proc.stdout + proc.stderr
    assert not leaked


def test_without_the_flag_nothing_is_revealed(tmp_path: Path):
    write_trace_shard(tmp_path / "d" / "a.parquet", [trace_row([("tool", f"GITHUB_TOKEN={TOKEN}")])])
    proc = _run(["scan", "d", "--no-allowlist"], _env(), tmp_path)
    leaked = TOKEN in proc.stdout + proc.stderr
    assert proc.returncode == 1 and not leaked


def test_revealed_values_never_reach_the_cache_or_repr(tmp_path: Path):
    write_trace_shard(tmp_path / "d" / "a.parquet", [trace_row([("tool", f"GITHUB_TOKEN={TOKEN}")])])
    ruleset = load_ruleset()
    options = ScanOptions(now=FIXED_NOW, reveal_secrets=True)
    cache = ResultCache.open(tmp_path / "cache", ruleset, options)
    report = scan([str(tmp_path / "d")], ruleset=ruleset, options=options, cache=cache)
    [finding] = report.findings
    assert finding.revealed == TOKEN
    in_repr = TOKEN in repr(finding) + repr(report)
    assert not in_repr
    # a revealing scan bypasses the cache altogether (a replay could not reveal): nothing is written
    cached = "".join(p.read_text(errors="replace") for p in (tmp_path / "cache").rglob("*") if p.is_file())
    leaked = TOKEN in cached or json.dumps(TOKEN)[1:-1] in cached
    assert not leaked and not (tmp_path / "cache").exists()
