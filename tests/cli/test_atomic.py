"""Every output fails cleanly: written whole under a temporary name or not at all, exit 2 naming it."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shardscan import atomic
from shardscan.atomic import TEMP_SUFFIX, remove_stale_temps, temp_path, write_file
from shardscan.cli import app
from shardscan.errors import OutputError
from shardscan.reporters import EXTENSIONS, FORMATS
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

REPO = Path(__file__).resolve().parents[2]
TOKEN = expand("{{github:ghp_}}", seed="atomic-outputs")


def _cli(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, cwd=REPO)


def _dirty(folder: Path, rows: int = 3) -> Path:
    write_trace_shard(folder / "train-00000-of-00001.parquet",
                      [trace_row([("tool", f"export GITHUB_TOKEN={TOKEN}")])] * rows)
    return folder


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@contextlib.contextmanager
def _small_tmpfs(where: Path, size: str = "16k") -> Iterator[Path]:
    """A tiny filesystem that fills up quickly; skipped unless the test runs as root (it does in CI)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


# ---- the writer ---------------------------------------------------------------------------------


def test_a_file_is_written_whole_through_a_reserved_temporary_name(tmp_path: Path, monkeypatch):
    seen: list[str] = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        assert Path(src).read_bytes() == b"complete"  # renamed only once fully written
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    assert write_file(tmp_path / "r.json", "complete") == tmp_path / "r.json"
    assert (tmp_path / "r.json").read_text() == "complete"
    assert len(seen) == 1 and seen[0].startswith(".r.json.") and seen[0].endswith(TEMP_SUFFIX)
    assert _files(tmp_path) == ["r.json"]


def test_a_failed_write_leaves_neither_the_file_nor_a_temporary_one(tmp_path: Path, monkeypatch):
    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OutputError) as caught:
        write_file(tmp_path / "r.json", "x" * 1000)
    assert str(caught.value) == f"{tmp_path / 'r.json'}: cannot write: No space left on device"
    assert _files(tmp_path) == []


def test_missing_folders_are_created_only_when_asked(tmp_path: Path):
    with pytest.raises(OutputError, match="its folder does not exist"):
        write_file(tmp_path / "a" / "b" / "r.json", "x")
    assert _files(tmp_path) == []
    write_file(tmp_path / "a" / "b" / "r.json", "x", mkdir=True)
    assert (tmp_path / "a" / "b" / "r.json").read_text() == "x"


def test_mode_of_a_replaced_file_and_the_umask_for_a_new_one_are_kept(tmp_path: Path):
    old = os.umask(0o022)
    try:
        write_file(tmp_path / "new.json", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644
    (tmp_path / "kept.json").write_text("old")
    (tmp_path / "kept.json").chmod(0o640)
    write_file(tmp_path / "kept.json", "new")
    assert stat.S_IMODE((tmp_path / "kept.json").stat().st_mode) == 0o640


def test_a_symlink_is_written_through_and_a_device_is_written_directly(tmp_path: Path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    write_file(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"
    write_file(Path("/dev/null"), "discarded")  # no rename over a device
    with pytest.raises(OutputError, match="No space left on device"):
        write_file(Path("/dev/full"), "x")


def test_stale_temporary_files_of_dead_runs_are_removed_and_live_ones_kept(tmp_path: Path):
    target = tmp_path / "shard.parquet"
    target.write_bytes(b"data")
    stale = tmp_path / f".shard.parquet.{_dead_pid()}.0123abcd{TEMP_SUFFIX}"
    live = temp_path(target)  # this process: alive
    other = tmp_path / f".other.parquet.{_dead_pid()}.0123abcd{TEMP_SUFFIX}"
    for path in (stale, live, other):
        path.write_bytes(b"partial")
    assert remove_stale_temps(target) == [stale]
    assert _files(tmp_path) == sorted([live.name, other.name, "shard.parquet"])


# ---- every output of the command line -----------------------------------------------------------


def _unwritable(tmp_path: Path, case: str, name: str) -> Path:
    if case == "proc":
        return Path("/proc") / name  # nothing can be created there, not even by root
    if case == "under-a-file":
        (tmp_path / "a-file").write_text("")
        return tmp_path / "a-file" / name
    return tmp_path / "no" / "such" / name  # missing folders: not created unless --mkdir


@pytest.mark.slow
@pytest.mark.parametrize("case", ["proc", "under-a-file", "missing-folder"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unwritable_report_is_exit_2_naming_it_and_leaves_nothing(tmp_path: Path, fmt: str, case: str):
    data = _dirty(tmp_path / "data")
    target = _unwritable(tmp_path, case, f"report{EXTENSIONS[fmt]}")
    for argv in (["-f", f"{fmt}:{target}"], ["-f", fmt, "-o", str(target)]):
        result = CliRunner().invoke(app, ["scan", str(data), "--no-allowlist", *argv])
        assert result.exit_code == 2, (fmt, case, result.stdout, result.stderr)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stderr.count("\n") == 1 and str(target) in result.stderr
        assert result.stderr.startswith("shardscan: error: ")
        if case == "missing-folder":
            assert result.stderr.endswith("cannot write: its folder does not exist (--mkdir creates it)\n")
    assert not (tmp_path / "no").exists()
    assert _files(tmp_path) == sorted(["data", *(["a-file"] if case == "under-a-file" else [])])


def test_mkdir_creates_the_report_folders(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    target = tmp_path / "reports" / "today" / "r.json"
    result = CliRunner().invoke(app, ["scan", str(data), "--no-allowlist", "-f", f"json:{target}", "--mkdir"])
    assert result.exit_code == 1, result.stderr
    assert target.is_file() and _files(target.parent) == ["r.json"]


@pytest.mark.slow
def test_gate_report_dir_that_cannot_be_created_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    for report_dir in (Path("/proc/shardscan-reports"), _unwritable(tmp_path, "under-a-file", "reports")):
        result = CliRunner().invoke(app, ["gate", str(data), "--no-allowlist", "--report-dir", str(report_dir)])
        assert result.exit_code == 2, result.stderr
        assert result.stderr.count("\n") == 1 and str(report_dir) in result.stderr


@pytest.mark.parametrize("case", ["proc", "under-a-file", "missing-folder"])
def test_redact_out_that_cannot_be_written_is_exit_2_before_any_work(tmp_path: Path, case: str):
    data = _dirty(tmp_path / "data")
    before = (data / "train-00000-of-00001.parquet").read_bytes()
    out = _unwritable(tmp_path, case, "clean")
    result = CliRunner().invoke(app, ["redact", str(data), "--out", str(out), "--no-allowlist"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and str(out) in result.stderr
    assert (data / "train-00000-of-00001.parquet").read_bytes() == before
    assert _files(tmp_path) == sorted(["data", *(["a-file"] if case == "under-a-file" else [])])


@pytest.mark.slow
def test_allowlist_add_to_a_missing_folder_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    report = tmp_path / "r.json"
    CliRunner().invoke(app, ["scan", str(data), "--no-allowlist", "-f", f"json:{report}"])
    target = tmp_path / "missing" / "allowlist.yaml"
    result = CliRunner().invoke(app, ["allowlist", "add", "--from", str(report), "--finding", "1", "--reason",
                                      "a test fixture generated by this suite", "--reviewer", "me", "--confirm-live",
                                      "--allowlist", str(target)])
    assert result.exit_code == 2, result.stderr
    assert str(target) in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "missing").exists()


@pytest.mark.slow
def test_review_into_a_missing_folder_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    report = tmp_path / "r.json"
    CliRunner().invoke(app, ["scan", str(data), "--no-allowlist", "-f", f"json:{report}"])
    target = tmp_path / "missing" / "allowlist.yaml"
    result = CliRunner().invoke(app, ["review", str(report), "--reviewer", "me", "--allowlist", str(target)],
                                input="a\npublish live\na test fixture generated by this suite\nq\n")
    assert result.exit_code == 2, result.stderr
    assert result.stderr == f"shardscan: error: {target}: cannot write: its folder does not exist\n"
    assert not (tmp_path / "missing").exists()


def test_an_unwritable_cache_dir_given_by_the_user_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    (tmp_path / "a-file").write_text("")
    result = CliRunner().invoke(app, ["scan", str(data), "--cache-dir", str(tmp_path / "a-file")])
    assert result.exit_code == 2 and "--cache-dir" in result.stderr and str(tmp_path / "a-file") in result.stderr


@pytest.mark.slow
def test_a_full_filesystem_under_a_report_file_is_exit_2_with_nothing_left(tmp_path: Path):
    data = _dirty(tmp_path / "data", rows=200)
    with _small_tmpfs(tmp_path / "full") as full:
        proc = _cli("scan", str(data), "--no-allowlist", "-f", f"json:{full / 'r.json'}")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == f"shardscan: error: {full / 'r.json'}: cannot write: No space left on device"
        assert _files(full) == []


# ---- standard output ----------------------------------------------------------------------------


@pytest.mark.slow
def test_standard_output_on_a_full_device_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data")
    with open("/dev/full", "w") as full:
        proc = _cli("scan", str(data), "--no-allowlist", "-f", "json", stdout=full)
    assert proc.returncode == 2
    assert proc.stderr == "shardscan: error: standard output: cannot write: No space left on device\n"


@pytest.mark.slow
def test_standard_output_on_a_full_filesystem_is_exit_2_not_a_truncated_report(tmp_path: Path):
    data = _dirty(tmp_path / "data", rows=200)
    with _small_tmpfs(tmp_path / "full") as full:
        with open(full / "r.json", "w") as report:
            proc = _cli("scan", str(data), "--no-allowlist", "-f", "json", stdout=report)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == "shardscan: error: standard output: cannot write: No space left on device\n"


@pytest.mark.slow
def test_a_closed_pipe_is_exit_2(tmp_path: Path):
    data = _dirty(tmp_path / "data", rows=200)
    proc = subprocess.Popen([sys.executable, "-m", "shardscan.cli", "scan", str(data), "--no-allowlist", "-f", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 2
    assert stderr == "shardscan: error: standard output: cannot write: Broken pipe\n"


def test_other_commands_check_standard_output_too():
    with open("/dev/full", "w") as full:
        proc = _cli("rules", "list", stdout=full)
    assert proc.returncode == 2
    assert proc.stderr == "shardscan: error: standard output: cannot write: No space left on device\n"


@pytest.mark.slow
def test_redact_onto_a_full_filesystem_stops_with_exit_2_and_leaves_no_partial_copy(tmp_path: Path):
    import random

    rng = random.Random(3)
    rows = [trace_row([("tool", f"export GITHUB_TOKEN={TOKEN}" if i == 0 else rng.randbytes(200).hex())])
            for i in range(400)]
    write_trace_shard(tmp_path / "data" / "train-00000-of-00001.parquet", rows)  # ~170 KB: more than fits
    with _small_tmpfs(tmp_path / "full", size="64k") as full:
        proc = _cli("redact", str(tmp_path / "data"), "--out", str(full), "--no-allowlist")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            f"shardscan: error: {full / 'train-00000-of-00001.parquet'}: cannot write: No space left on device; "
            "stopped there; the shards counted above are complete"
        ]
        assert _files(full) == []
    manifest = json.loads((tmp_path / "full.redactions.json").read_text())  # the run is recorded, beside --out
    assert manifest["redactions"] == [] and [r["redactions"] for r in manifest["runs"]] == [0]


@pytest.mark.slow
@pytest.mark.parametrize("into", ["pipe", "file"])
def test_a_report_to_dev_stdout_reaches_a_pipe_or_a_redirected_file_whole(tmp_path: Path, into: str):
    data = _dirty(tmp_path / "data")
    if into == "pipe":
        proc = _cli("scan", str(data), "--no-allowlist", "-f", "json:/dev/stdout")
        text = proc.stdout
    else:
        with open(tmp_path / "out.txt", "w") as out:  # `> out.txt`: the report must not be written over
            proc = _cli("scan", str(data), "--no-allowlist", "-f", "json:/dev/stdout", stdout=out)
        text = (tmp_path / "out.txt").read_text()
    assert proc.returncode == 1, proc.stderr
    report, _, decision = text.rpartition("}\n")
    assert json.loads(report + "}")["gate"]["exit_code"] == 1
    assert decision.startswith("gate: FAIL")
