"""Every command's --help at 80 columns, through the real entry point: one usage style, no markup
leaking from docstrings, no line wider than the terminal; and the global flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    [], ["scan"], ["hook"], ["gate"], ["demo"], ["redact"], ["review"], ["version"], ["rules"], ["rules", "list"],
    ["rules", "check"], ["allowlist"], ["allowlist", "add"], ["allowlist", "check"],
]


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "shardscan")
def test_help_reads_the_same_everywhere(command):
    proc = run(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith(f"Usage: {' '.join(['shardscan', *command])} [OPTIONS]"), text.splitlines()[0]
    for leak in ("``", "\\[", "<str>", "<int>", "<path>", "<float>", "[/", "╭"):
        assert leak not in text, (leak, command)
    assert "{" not in text.splitlines()[0]  # typer writes required arguments as {paths}...
    assert all(len(line) <= 80 for line in text.splitlines()), command


@pytest.mark.slow
def test_global_flags():
    assert run("--version").stdout == run("version").stdout
    assert run("--version").stdout.startswith("shardscan ")
    help_text = run("--help").stdout
    assert "-v, --verbose  Log progress" in help_text and "[default: 0]" not in help_text


@pytest.mark.slow
def test_unknown_options_suggest_only_near_misses():
    far = run("scan", "data", "--bogus")
    assert far.returncode == 2
    assert far.stderr.splitlines()[-1] == "Error: No such option: --bogus"
    near = run("scan", "data", "--jbos")
    assert near.returncode == 2 and "(Possible options: --jobs)" in near.stderr


# ---- messages --------------------------------------------------------------------------------------


def _corrupt_shard(folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "a.parquet"
    pq.write_table(pa.table({"a": ["x" * 100 + str(i) for i in range(1000)]}), path, compression="snappy")
    data = bytearray(path.read_bytes())
    for i in range(200, 260):  # inside the first data page: its compressed bytes no longer decode
        data[i] ^= 0x55
    path.write_bytes(data)
    return path


@pytest.mark.slow
def test_an_unreadable_shard_is_reported_once(tmp_path):
    _corrupt_shard(tmp_path / "data")
    proc = run("scan", str(tmp_path / "data"), "--no-allowlist", "--no-cache")
    assert proc.returncode == 3
    assert proc.stdout.count("a.parquet row group 0") == 1
    assert "a.parquet" not in proc.stderr


@pytest.mark.slow
def test_verbose_logs_shards_replayed_from_the_cache(tmp_path):
    from tests.conftest import trace_row, write_trace_shard

    write_trace_shard(tmp_path / "data" / "s.parquet", [trace_row([("user", "hello")])])
    args = ("-v", "scan", str(tmp_path / "data"), "--no-allowlist", "--cache-dir", str(tmp_path / "cache"))
    first, second = run(*args), run(*args)
    assert "shardscan: INFO: s.parquet: 1 row group(s), 1 rows" in first.stderr and "(from cache)" not in first.stderr
    assert "s.parquet: 1 row group(s), 1 rows" in second.stderr and "0 finding(s) (from cache)" in second.stderr
    assert "scanned 1 shard(s) (1 from cache)" in second.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-decode-depth", "-1"], "--max-decode-depth must be 0 (no decoding) or more, not -1"),
        (["--max-decode-bytes", "-5"], "--max-decode-bytes must be 0 or more, not -5"),
        (["--regex-timeout", "0"], "--regex-timeout must be a number of seconds above 0, not 0"),
    ],
)
def test_each_bad_limit_has_its_own_message(tmp_path, args, message):
    proc = run("scan", str(tmp_path), *args)
    assert (proc.returncode, proc.stderr.strip()) == (2, f"shardscan: error: {message}")
