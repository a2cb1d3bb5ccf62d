"""The publish gate command, the pipeline API and ``scan --changed-since``."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import shardscan
from shardscan.cli import app
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

NOW = FIXED_NOW.isoformat()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, cwd: Path | None = None) -> Result:
    """Run the real command line in-process (a subprocess per call is slow on a busy machine)."""
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(app, list(args))
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def token() -> str:
    return expand("{{github:ghp_}}", seed="gate")


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    folder = tmp_path / "clean"
    write_trace_shard(folder / "train-00000-of-00002.parquet", [trace_row([("user", "hello")])])
    write_trace_shard(folder / "train-00001-of-00002.parquet", [trace_row([("assistant", "hf_hub_download()")])])
    return folder


@pytest.fixture
def leaky(tmp_path: Path, token: str) -> Path:
    folder = tmp_path / "leaky"
    write_trace_shard(folder / "train-00000-of-00001.parquet", [trace_row(verifier_output=f"token={token}")])
    return folder


def gate(tmp_path: Path, *paths: str, extra: tuple[str, ...] = ()) -> tuple[Result, Path]:
    out = tmp_path / "reports"
    proc = cli("gate", *paths, "--report-dir", str(out), "--now", NOW, *extra)
    return proc, out


def reports_in(folder: Path) -> dict:
    """Check the three gate reports agree with each other; return the JSON one."""
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["shardscan-report.html", "shardscan-report.json", "shardscan-report.sarif"]
    report = json.loads((folder / "shardscan-report.json").read_text())
    sarif = json.loads((folder / "shardscan-report.sarif").read_text())
    [run] = sarif["runs"]
    assert sarif["version"] == "2.1.0"
    assert sorted(r["ruleId"] for r in run["results"]) == sorted(f["rule_id"] for f in report["findings"])
    html = (folder / "shardscan-report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    for finding in report["findings"]:
        assert finding["fingerprint"] in html
    return report


@pytest.mark.slow
def test_gate_passes_clean_shards(tmp_path, clean):
    proc, out = gate(tmp_path, str(clean))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "gate: PASS (exit 0): no blocking findings"
    report = reports_in(out)
    assert (report["gate"]["exit_code"], report["scanned"]["shards"], report["findings"]) == (0, 2, [])


@pytest.mark.slow
def test_gate_fails_on_a_blocking_finding(tmp_path, leaky, token):
    proc, out = gate(tmp_path, str(leaky))
    assert proc.returncode == 1
    report = reports_in(out)
    [finding] = report["findings"]
    assert (finding["shard"], finding["row"], finding["column"], finding["rule_id"], finding["blocking"]) == (
        "train-00000-of-00001.parquet", 0, "verifier_output", "github-pat", True,
    )
    written = "".join(p.read_text() for p in out.iterdir())
    assert token not in written + proc.stdout + proc.stderr


@pytest.mark.slow
def test_gate_exit_3_when_a_shard_cannot_be_read(tmp_path, clean):
    (clean / "train-00002-of-00002.parquet").write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    proc, out = gate(tmp_path, str(clean))
    assert proc.returncode == 3
    report = reports_in(out)
    assert [e["shard"] for e in report["errors"]] == ["train-00002-of-00002.parquet"]
    assert report["gate"] == {"passed": False, "exit_code": 3,
                              "reason": "scan incomplete: 1 problem(s) in train-00002-of-00002.parquet"}


@pytest.mark.slow
def test_gate_exit_3_beats_1(tmp_path, leaky):
    (leaky / "extra.parquet").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 9\n")
    proc, _ = gate(tmp_path, str(leaky))
    assert proc.returncode == 3
    assert "extra.parquet: [unreadable] this is a Git LFS pointer file" in proc.stdout


@pytest.mark.slow
def test_gate_strict_blocks_non_blocking_verdicts(tmp_path, token):
    folder = tmp_path / "placeholders"
    placeholder = "ghp_your" + token[8:]  # a token-shaped placeholder: found, but not a usable token
    write_trace_shard(folder / "a.parquet", [trace_row(instruction=f"GITHUB_TOKEN={placeholder}")])
    relaxed, out = gate(tmp_path, str(folder))
    assert relaxed.returncode == 0
    [finding] = reports_in(out)["findings"]
    assert finding["verdict"] in ("redacted", "invalid") and finding["blocking"] is False
    strict, out = gate(tmp_path, str(folder), extra=("--strict",))
    assert strict.returncode == 1
    assert reports_in(out)["findings"][0]["blocking"] is True


def test_gate_usage_error_is_exit_2(tmp_path, clean):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: Not Kebab\n")
    proc, _ = gate(tmp_path, str(clean), extra=("--rules", str(bad)))
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr


# ---- the pipeline API ------------------------------------------------------------------------


def test_api_scan_returns_a_report_and_raises_nothing(tmp_path, leaky, token):
    (leaky / "torn.parquet").write_bytes(b"PAR1 torn")
    report = shardscan.scan([str(leaky), str(tmp_path / "missing")])
    assert isinstance(report, shardscan.Report)
    assert [(f.location.shard, f.rule_id) for f in report.blocking] == [("train-00000-of-00001.parquet", "github-pat")]
    assert report.findings == report.blocking
    assert sorted(i.shard for i in report.issues) == [str(tmp_path / "missing"), "torn.parquet"]
    assert report.exit_code == 3
    data = json.loads(report.to_json())
    assert data["gate"]["exit_code"] == 3 and len(data["findings"]) == 1
    assert token not in report.to_json()


def test_api_scan_clean(clean):
    report = shardscan.scan([str(clean)], cache=None)
    assert report.blocking == () and report.exit_code == 0
    assert json.loads(report.to_json())["scanned"]["shards"] == 2


# ---- scan --changed-since ----------------------------------------------------------------------


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.mark.slow
def test_changed_since_scans_only_changed_shards(tmp_path, token):
    root = tmp_path / "repo"
    data = root / "data"
    for name in ("old", "edited", "deleted"):
        write_trace_shard(data / f"{name}.parquet", [trace_row(task=f"{name} token={token}")])
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    base = _git(root, "rev-parse", "HEAD")
    write_trace_shard(data / "committed.parquet", [trace_row(task=f"token={token}")])
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "more")
    write_trace_shard(data / "edited.parquet", [trace_row(task=f"edited again token={token}")])
    write_trace_shard(data / "untracked.parquet", [trace_row(task=f"token={token}")])
    (data / "deleted.parquet").unlink()
    out = tmp_path / "r.json"
    proc = cli("scan", "data", "--changed-since", base, "--format", "json", "--output", str(out), cwd=root)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(out.read_text())
    assert [s["shard"] for s in report["shards"]] == ["committed.parquet", "edited.parquet", "untracked.parquet"]
    assert report["errors"] == []

    head = cli("scan", "data/old.parquet", "--changed-since", "HEAD", "--format", "json", "--output", str(out),
               cwd=root)
    assert head.returncode == 0 and json.loads(out.read_text())["scanned"]["shards"] == 0


def test_changed_since_errors_are_usage_errors(tmp_path, clean):
    outside = cli("scan", str(clean), "--changed-since", "HEAD", cwd=tmp_path)
    assert outside.returncode == 2 and "not inside a git repository" in outside.stderr
    _git(clean, "init", "-q")
    _git(clean, "commit", "-q", "--allow-empty", "-m", "x")
    unknown = cli("scan", ".", "--changed-since", "no-such-rev", cwd=clean)
    assert unknown.returncode == 2 and "unknown revision 'no-such-rev'" in unknown.stderr


# ---- the examples ----------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_publish_example_refuses_a_leak_and_publishes_clean_data(tmp_path, clean, leaky, monkeypatch):
    import runpy

    publish = runpy.run_path(str(EXAMPLES / "publish.py"))["publish"]
    monkeypatch.chdir(tmp_path)
    assert publish(leaky) == 1
    assert json.loads((tmp_path / "shardscan-report.json").read_text())["gate"]["exit_code"] == 1
    assert publish(clean) == 0


def test_workflow_example_runs_the_gate_and_uploads_its_sarif():
    import yaml

    workflow = yaml.safe_load((EXAMPLES / "github-actions-publish-gate.yml").read_text())
    steps = workflow["jobs"]["gate"]["steps"]
    assert steps[0]["with"]["lfs"] is True  # without LFS content every shard is a pointer (exit 3)
    [gate_step] = [s for s in steps if s.get("name") == "Gate"]
    assert gate_step["run"].split()[:2] == ["shardscan", "gate"]
    [upload] = [s for s in steps if "upload-sarif" in s.get("uses", "")]
    assert upload["with"]["sarif_file"] == "shardscan-reports/shardscan-report.sarif"
    assert "--report-dir shardscan-reports" in " ".join(gate_step["run"].split())


# ---- the hook command itself -----------------------------------------------------------------


@pytest.mark.slow
def test_hook_cache_follows_rule_edits_and_no_cache(tmp_path, token, monkeypatch):
    monkeypatch.delenv("SHARDSCAN_CACHE_DIR")  # the hook's default: .shardscan-cache/ at the repository root
    root = tmp_path / "repo"
    write_trace_shard(root / "a.parquet", [trace_row([("user", "hello house-marker")])])
    write_trace_shard(root / "b.parquet", [trace_row(task=f"token={token}")])
    _git(root, "init", "-q")
    rule = root / "house.yaml"
    body = (
        "- id: house-marker\n  kind: internal\n  name: House marker\n  description: Marks internal text.\n"
        "  severity: low\n  keywords: [house-]\n  pattern: '(?P<secret>house-marker)'\n"
        "  examples: ['house-marker']\n  negative_examples: ['house']\n"
    )
    rule.write_text(body)

    def hook(*extra: str) -> list[str]:
        proc = cli("hook", "--rules", "house.yaml", "--now", NOW, *extra, "a.parquet", "b.parquet", cwd=root)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert token not in proc.stdout
        return proc.stdout.splitlines()

    first = hook()
    assert first[0].startswith("shardscan: 2 shard(s), 2 rows")
    assert [line.split()[1] for line in first[1:-1]] == ["a.parquet:0", "b.parquet:0"]
    assert "house-marker" in first[1]
    assert hook()[0].startswith("shardscan: 2 shard(s) (2 from cache), 2 rows")
    assert (root / ".shardscan-cache" / "v2").is_dir()
    assert hook("--no-cache")[0].startswith("shardscan: 2 shard(s), 2 rows")

    rule.write_text(body.replace("'(?P<secret>house-marker)'", "'(?P<secret>house-marked)'"))
    edited = hook()
    assert edited[0].startswith("shardscan: 2 shard(s), 2 rows")  # a rule changed: both read again
    assert [line.split()[1] for line in edited[1:-1]] == ["b.parquet:0"]


def test_hook_without_files_passes():
    assert cli("hook").returncode == 0
