"""Fail closed on hostile or broken input: every problem is a named per-shard error, exit code 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shardscan
from shardscan.engine import Scanner, ScanOptions
from shardscan.reader import ShardRef, discover
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

REPO = Path(__file__).resolve().parents[2]
TOKEN = expand("{{github:ghp_}}", seed="hostile")


def _cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True, cwd=REPO,
                          **kwargs)


def _good_shard(path: Path) -> Path:
    return write_trace_shard(path, [trace_row([("user", "hi")]), trace_row([("tool", f"token {TOKEN}")])])


def _three_row_groups(path: Path) -> Path:
    rows = [{"text": f"row {i}: " + (f"GITHUB_TOKEN={TOKEN}" if i % 10 == 0 else "nothing here")} for i in range(30)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10, compression="NONE")
    return path


def _corrupt_row_group(path: Path, index: int) -> None:
    column = pq.ParquetFile(path).metadata.row_group(index).column(0)
    data = bytearray(path.read_bytes())
    start = column.data_page_offset
    data[start + 5 : start + 40] = b"\xff" * 35
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_corrupt_page_in_one_row_group_keeps_the_others(tmp_path: Path):
    shard = _three_row_groups(tmp_path / "s.parquet")
    _corrupt_row_group(shard, 1)
    result = Scanner(__import__("shardscan.ruleset").ruleset.load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_shard(
        ShardRef("s.parquet", str(shard))
    )
    assert [f.location.row for f in result.findings] == [0, 20]
    [issue] = result.issues
    assert (issue.shard, issue.kind, issue.row_group) == ("s.parquet", "unreadable", 1)
    assert result.stats.row_groups == 2 and result.stats.rows == 20


@pytest.mark.slow
@pytest.mark.parametrize(
    "breakage, reason",
    [
        ("truncated", "not a readable Parquet file"),
        ("bad-magic", "not a readable Parquet file"),
        ("zero-bytes", "not a readable Parquet file"),
        ("directory", "not a readable Parquet file"),
    ],
)
def test_broken_shard_among_good_ones_is_named_and_exits_3(tmp_path: Path, breakage: str, reason: str):
    data = tmp_path / "data"
    _good_shard(data / "train-00000.parquet")
    _good_shard(data / "train-00002.parquet")
    broken = data / "train-00001.parquet"
    if breakage == "directory":
        (broken / "inner").mkdir(parents=True)
        (broken / "inner" / "readme.txt").write_text("not a shard")
    else:
        _good_shard(broken)
        raw = broken.read_bytes()
        broken.write_bytes({"truncated": raw[: len(raw) // 2], "bad-magic": b"XXXX" + raw[4:-4] + b"XXXX",
                            "zero-bytes": b""}[breakage])
    out = tmp_path / "r.json"
    proc = _cli("scan", str(data), "--format", "json", "--output", str(out))
    report = json.loads(out.read_text())
    expected_good = {"train-00000.parquet", "train-00002.parquet"}
    if breakage == "directory":
        # A folder named like a shard is walked into; the text file in it is not a shard.
        assert proc.returncode == 1
        assert {f["shard"] for f in report["findings"]} == expected_good
        return
    assert proc.returncode == 3, proc.stderr
    assert {f["shard"] for f in report["findings"]} == expected_good
    [error] = report["errors"]
    assert error["shard"] == "train-00001.parquet" and error["kind"] == "unreadable"
    assert error["message"].startswith(reason)
    assert "train-00001.parquet" in proc.stdout


@pytest.mark.slow
def test_skip_unreadable_lists_but_does_not_gate(tmp_path: Path):
    data = tmp_path / "data"
    _good_shard(data / "a.parquet")
    (data / "b.parquet").write_bytes(b"PAR1 garbage")
    out = tmp_path / "r.json"
    proc = _cli("scan", str(data), "--skip-unreadable", "--format", "json", "--output", str(out))
    assert proc.returncode == 1  # the blocking finding in a.parquet still counts
    report = json.loads(out.read_text())
    assert [e["shard"] for e in report["errors"]] == ["b.parquet"]


def test_non_shard_files_in_a_folder_are_scanned_as_text(tmp_path: Path):
    data = tmp_path / "data"
    _good_shard(data / "a.parquet")
    (data / "README.md").write_text(f"the token {TOKEN} is in a readme, not a shard")
    (data / ".gitattributes").write_text("*.parquet filter=lfs")
    shards, missing = discover([str(data)])
    assert [(s.display, s.format) for s in shards] == [
        (".gitattributes", "text"), ("README.md", "text"), ("a.parquet", "parquet"),
    ] and missing == []
    report = shardscan.scan([str(data)])
    assert {(f.location.shard, f.location.row, f.location.column, f.start) for f in report.findings
            if f.location.shard == "README.md"} == {("README.md", 0, "__text__", 10)}


def test_file_vanishing_after_discovery_is_an_error(tmp_path: Path):
    data = tmp_path / "data"
    _good_shard(data / "a.parquet")
    [shard], _ = discover([str(data)])
    (data / "a.parquet").unlink()
    result = Scanner(__import__("shardscan.ruleset").ruleset.load_ruleset()).scan_shard(shard)
    [issue] = result.issues
    assert issue.kind == "unreadable" and "No such file" in issue.message


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX fork and users")
def test_permission_denied_is_an_error():
    import shutil
    import tempfile

    from shardscan.api import scan
    from shardscan.report import report_dict

    # Root reads anything, so the scan runs in a forked child that drops to an unprivileged user
    # (fork, not exec: the interpreter may live where that user cannot reach).
    base = Path(tempfile.mkdtemp(prefix="shardscan-perm-"))
    try:
        data = base / "data"
        _good_shard(data / "a.parquet")
        _good_shard(data / "b.parquet")
        for p in (base, data):
            os.chmod(p, 0o755)
        os.chmod(data / "a.parquet", 0o644)
        os.chmod(data / "b.parquet", 0o000)
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(read_fd)
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                report = scan([str(data)])
                payload = json.dumps({"code": report.decision.exit_code, "report": report_dict(report)})
                with os.fdopen(write_fd, "w") as out:
                    out.write(payload)
            finally:
                os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd) as pipe:
            result = json.loads(pipe.read())
        os.waitpid(pid, 0)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert result["code"] == 3
    [error] = result["report"]["errors"]
    assert error["shard"] == "b.parquet" and "Permission denied" in error["message"]
    assert [f["shard"] for f in result["report"]["findings"]] == ["a.parquet"]


def test_unsupported_and_odd_column_types_do_not_crash(tmp_path: Path):
    table = pa.table(
        {
            "amount": pa.array([1.5, None], pa.decimal128(10, 2)) if False else pa.array([1.5, None]),
            "when": pa.array([1, 2], pa.timestamp("s")),
            "span": pa.array([1, 2], pa.duration("s")),
            "flag": pa.array([True, None]),
            "nested": pa.array([[[["x", f"k {TOKEN}"]]], None], pa.list_(pa.list_(pa.list_(pa.string())))),
            "blob": pa.array([b"\xff\xfe" + f" {TOKEN}".encode(), b"\x00" * 10], pa.binary()),
        }
    )
    pq.write_table(table, tmp_path / "odd.parquet")
    result = Scanner(__import__("shardscan.ruleset").ruleset.load_ruleset()).scan_shard(
        ShardRef("odd.parquet", str(tmp_path / "odd.parquet"))
    )
    assert result.issues == ()
    assert sorted((f.location.row, f.location.column) for f in result.findings) == [
        (0, "blob"), (0, "nested[0][0][1]"),
    ]


@pytest.mark.slow
def test_schemas_may_differ_between_shards(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"a": [f"x {TOKEN}"]}), data / "one.parquet")
    pq.write_table(pa.table({"b": [[{"role": "tool", "content": f"y {TOKEN}"}]]}), data / "two.parquet")
    out = tmp_path / "r.json"
    assert _cli("scan", str(data), "--format", "json", "--output", str(out)).returncode == 1
    findings = json.loads(out.read_text())["findings"]
    assert [(f["shard"], f["column"], f["role"]) for f in findings] == [
        ("one.parquet", "a", None), ("two.parquet", "b[0].content", "tool"),
    ]


def test_deeply_nested_lists(tmp_path: Path):
    dtype: pa.DataType = pa.string()
    value: object = f"deep {TOKEN}"
    for _ in range(40):
        dtype = pa.list_(dtype)
        value = [value]
    pq.write_table(pa.table({"d": pa.array([value], dtype)}), tmp_path / "deep.parquet")
    result = Scanner(__import__("shardscan.ruleset").ruleset.load_ruleset()).scan_shard(
        ShardRef("deep.parquet", str(tmp_path / "deep.parquet"))
    )
    assert result.issues == ()
    [finding] = result.findings
    assert finding.location.column == "d" + "[0]" * 40


def test_nesting_beyond_the_parquet_reader_limit_is_an_error(tmp_path: Path):
    dtype: pa.DataType = pa.string()
    value: object = "x"
    for _ in range(60):
        dtype = pa.list_(dtype)
        value = [value]
    pq.write_table(pa.table({"d": pa.array([value], dtype)}), tmp_path / "deep.parquet")
    result = Scanner(__import__("shardscan.ruleset").ruleset.load_ruleset()).scan_shard(
        ShardRef("deep.parquet", str(tmp_path / "deep.parquet"))
    )
    [issue] = result.issues
    assert issue.kind == "unreadable" and "too deeply nested" in issue.message
