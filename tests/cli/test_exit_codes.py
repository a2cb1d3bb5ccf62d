"""Exit codes of the publish gate, through the real CLI in a subprocess:
0 clean, 1 blocking findings, 2 usage or configuration error, 3 incomplete scan (wins over 1)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

TOKEN = expand("{{github:ghp_}}", seed="exit-codes")


def run(*args: str) -> subprocess.CompletedProcess:
    # From an empty folder: the repository's own allowlist.yaml must not take part.
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run(
            [sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True, timeout=300,
            cwd=cwd, env=_env(),
        )


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    # Run the checkout's package even when the subprocess starts in another folder.
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def clean_shard(path: Path) -> Path:
    return write_trace_shard(path, [trace_row([("user", "hi"), ("assistant", "hello")]) for _ in range(5)])


def dirty_shard(path: Path, row: int = 2) -> Path:
    rows = [trace_row([("user", "hi")]) for _ in range(5)]
    rows[row] = trace_row([("user", "hi"), ("tool", f"GITHUB_TOKEN={TOKEN}")])
    return write_trace_shard(path, rows, row_group_size=2)


@pytest.mark.slow
def test_exit_0_when_everything_is_clean(tmp_path):
    clean_shard(tmp_path / "data" / "train-00000-of-00002.parquet")
    clean_shard(tmp_path / "data" / "train-00001-of-00002.parquet")
    proc = run("scan", str(tmp_path / "data"))
    assert proc.returncode == 0, proc.stderr
    assert "gate: PASS (exit 0)" in proc.stdout


@pytest.mark.slow
def test_exit_1_on_blocking_finding(tmp_path):
    clean_shard(tmp_path / "data" / "train-00000-of-00002.parquet")
    dirty_shard(tmp_path / "data" / "train-00001-of-00002.parquet")
    proc = run("scan", str(tmp_path / "data"), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["shard"], f["row"], f["column"], f["blocking"]) for f in report["findings"]] == [
        ("train-00001-of-00002.parquet", 2, "conversations[1].content", True)
    ]
    assert report["gate"]["exit_code"] == 1


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _bad_magic(data: bytes) -> bytes:
    return b"JUNK" + data[4:-4] + b"JUNK"


def _zero(data: bytes) -> bytes:
    return b""


def _footer_only_garbage(data: bytes) -> bytes:
    return data[:-12] + b"\xff" * 8 + data[-4:]


@pytest.mark.slow
@pytest.mark.parametrize("corrupt", [_truncated, _bad_magic, _zero, _footer_only_garbage],
                         ids=["truncated", "bad-magic", "zero-bytes", "bad-footer"])
def test_exit_3_on_corrupt_shard_among_good_ones_and_good_findings_still_reported(tmp_path, corrupt):
    data = tmp_path / "data"
    dirty_shard(data / "train-00000-of-00003.parquet", row=1)
    bad = dirty_shard(data / "train-00001-of-00003.parquet", row=3)
    bad.write_bytes(corrupt(bad.read_bytes()))
    dirty_shard(data / "train-00002-of-00003.parquet", row=4)
    report_path = tmp_path / "report.json"
    proc = run("scan", str(data), "--format", "terminal", "--format", f"json:{report_path}")
    assert proc.returncode == 3, proc.stderr  # 3 wins over the 1 the findings alone would give
    report = json.loads(report_path.read_text())
    assert [(f["shard"], f["row"]) for f in report["findings"]] == [
        ("train-00000-of-00003.parquet", 1),
        ("train-00002-of-00003.parquet", 4),
    ]
    [error] = report["errors"]
    assert error["shard"] == "train-00001-of-00003.parquet"
    assert error["kind"] == "unreadable"
    assert error["message"].startswith("not a readable Parquet file (")
    assert report["scanned"]["shards"] == 3
    # The terminal report names the shard and why the gate failed.
    assert "[unreadable] train-00001-of-00003.parquet: not a readable Parquet file" in proc.stdout
    assert "gate: FAIL (exit 3): scan incomplete: 1 problem(s) in train-00001-of-00003.parquet" in proc.stdout
    assert TOKEN not in proc.stdout + proc.stderr + report_path.read_text()


@pytest.mark.slow
def test_exit_3_on_unreadable_row_group_keeps_other_row_groups(tmp_path):
    data = tmp_path / "data"
    path = data / "train-00000-of-00001.parquet"
    rows = [trace_row([("user", "hi"), ("tool", f"token {TOKEN}")]) for _ in range(6)]
    data.mkdir()
    import pyarrow as pa

    from tests.conftest import TRACE_SCHEMA

    pq.write_table(pa.Table.from_pylist(rows, schema=TRACE_SCHEMA), path, row_group_size=2, compression="none")
    # Smash the first page header of row group 1: its footer entry stays valid, its data does not.
    meta = pq.ParquetFile(path).metadata
    offset = meta.row_group(1).column(0).data_page_offset
    if meta.row_group(1).column(0).has_dictionary_page:
        offset = meta.row_group(1).column(0).dictionary_page_offset
    raw = bytearray(path.read_bytes())
    raw[offset : offset + 24] = b"\xff" * 24
    path.write_bytes(bytes(raw))
    proc = run("scan", str(data), "--format", "json")
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert [f["row"] for f in report["findings"]] == [0, 1, 4, 5]
    [error] = report["errors"]
    assert (error["shard"], error["row_group"], error["kind"]) == ("train-00000-of-00001.parquet", 1, "unreadable")
    assert error["message"].startswith("row group unreadable (")


@pytest.mark.slow
def test_skip_unreadable_reports_but_does_not_exit_3(tmp_path):
    data = tmp_path / "data"
    (data).mkdir()
    (data / "train-00000-of-00002.parquet").write_bytes(b"")
    clean_shard(data / "train-00001-of-00002.parquet")
    proc = run("scan", str(data), "--skip-unreadable", "--format", "json")
    assert proc.returncode == 0
    assert [e["shard"] for e in json.loads(proc.stdout)["errors"]] == ["train-00000-of-00002.parquet"]


@pytest.mark.slow
def test_exit_3_on_missing_path(tmp_path):
    clean_shard(tmp_path / "data" / "train-00000-of-00001.parquet")
    missing = tmp_path / "nope"
    proc = run("scan", str(tmp_path / "data"), str(missing), "--format", "json")
    assert proc.returncode == 3
    [error] = json.loads(proc.stdout)["errors"]
    assert error["shard"] == str(missing)
    assert error["message"] == "no such file, folder or glob match"


@pytest.mark.slow
def test_exit_3_on_glob_matching_nothing(tmp_path):
    proc = run("scan", str(tmp_path / "train-*.parquet"))
    assert proc.returncode == 3


def test_exit_2_on_bad_rule_file(tmp_path):
    clean_shard(tmp_path / "data" / "train-00000-of-00001.parquet")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: acme-token\n  kind: acme\n")
    proc = run("scan", str(tmp_path / "data"), "--rules", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"shardscan: error: {bad}: acme-token: missing required field 'name'"
    assert proc.stdout == ""


def test_exit_2_on_missing_rule_file(tmp_path):
    proc = run("scan", str(tmp_path), "--rules", str(tmp_path / "absent.yaml"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'absent.yaml'}: cannot read rule file" in proc.stderr


def test_exit_2_on_unknown_option_in_subprocess(tmp_path):
    proc = run("scan", str(tmp_path), "--no-such-option")
    assert proc.returncode == 2
    assert "No such option: --no-such-option" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["scan"],
        ["scan", "DATA", "--format", "yaml"],
        ["scan", "DATA", "--output", "OUT"],  # --output with no --format is fine...
        ["scan", "DATA", "--format", "json", "--format", "terminal"],  # ...two formats on stdout are not
        ["scan", "DATA", "--now", "yesterday"],
        ["scan", "DATA", "--disable", "no-such-rule"],
        ["scan", "DATA", "--regex-timeout", "0"],
        ["scan", "DATA", "--max-decode-depth", "-1"],
        ["no-such-command"],
    ],
    ids=["no-path", "unknown-format", "output-ok", "two-stdout-formats", "bad-now", "unknown-disable",
         "bad-timeout", "bad-depth", "unknown-command"],
)
def test_exit_2_on_usage_errors(tmp_path, args):
    # The same Typer app the console script runs, in-process (a subprocess per case would be slow).
    from typer.testing import CliRunner

    from shardscan.cli import app

    dirty_shard(tmp_path / "data" / "train-00000-of-00001.parquet")
    argv = [str(tmp_path / "data") if a == "DATA" else str(tmp_path / "out.json") if a == "OUT" else a for a in args]
    result = CliRunner().invoke(app, argv)
    if "OUT" in args:
        assert result.exit_code == 1  # a valid command line: the planted token blocks
        return
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.strip()


@pytest.mark.slow
def test_a_large_report_on_a_pipe_is_complete_when_the_process_ends(tmp_path):
    """The CLI ends without interpreter teardown: everything buffered for stdout must still arrive."""
    tokens = [expand("{{github:ghp_}}", seed=f"pipe-{i}") for i in range(400)]
    rows = [trace_row([("tool", f"export GITHUB_TOKEN={token}")]) for token in tokens]
    write_trace_shard(tmp_path / "data" / "train-00000-of-00001.parquet", rows, row_group_size=100)
    proc = run("scan", str(tmp_path / "data"), "--format", "jsonl")
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stdout) > 65536  # more than a pipe buffer holds
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    rows_found = sorted(r["row"] for r in records if r.get("type", "finding") == "finding" and "row" in r)
    assert rows_found == list(range(400))
