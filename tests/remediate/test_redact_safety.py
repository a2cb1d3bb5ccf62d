"""Redaction leaves nothing behind: mode and owner kept, manifests appended outside the data, temporary
files under the reserved suffix and removed by the next run, and a killed run changes no later result."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shardscan import remediate
from shardscan.api import scan
from shardscan.atomic import TEMP_SUFFIX
from shardscan.cli import app
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SHARD = "train-00000-of-00001.parquet"


def _token(seed: str) -> str:
    return expand("{{github:ghp_}}", seed=f"redact-safety-{seed}")


def _dirty(folder: Path, seed: str = "a", name: str = SHARD) -> Path:
    return write_trace_shard(folder / name, [trace_row([("user", "hi")]),
                                             trace_row([("tool", f"export GITHUB_TOKEN={_token(seed)}")])])


def _redact(*args: str, cwd: Path) -> tuple[int, str]:
    """Run ``redact`` in-process from ``cwd`` (where the --in-place manifest goes by default)."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, ["redact", *args, "--no-allowlist", "--now", FIXED_NOW.isoformat()])
    finally:
        os.chdir(here)
    return result.exit_code, result.stderr


def _blocking(folder: Path) -> list[tuple[str, int, str, str]]:
    report = scan([str(folder)], allowlist=None)
    assert not report.unreadable
    return sorted((f.location.shard, f.location.row, f.location.column, f.fingerprint) for f in report.blocking)


# ---- mode and owner -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664])
def test_in_place_keeps_the_mode(tmp_path: Path, mode: int):
    shard = _dirty(tmp_path / "data")
    shard.chmod(mode)
    code, err = _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert _blocking(tmp_path / "data") == []
    assert stat.S_IMODE(shard.stat().st_mode) == mode


def test_in_place_keeps_the_owner_and_group(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another owner needs root")
    shard = _dirty(tmp_path / "data")
    os.chown(shard, 4321, 8765)
    code, err = _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert (shard.stat().st_uid, shard.stat().st_gid) == (4321, 8765)
    assert _blocking(tmp_path / "data") == []


def test_copies_get_the_source_mode(tmp_path: Path):
    _dirty(tmp_path / "data").chmod(0o640)
    write_trace_shard(tmp_path / "data" / "clean.parquet", [trace_row([("user", "hi")])]).chmod(0o604)
    code, err = _redact(str(tmp_path / "data"), "--out", str(tmp_path / "clean"), cwd=tmp_path)
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "clean" / SHARD).stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "clean" / "clean.parquet").stat().st_mode) == 0o604


# ---- the manifest -------------------------------------------------------------------------------


def test_manifest_lies_beside_out_and_a_scan_of_out_does_not_read_it(tmp_path: Path):
    _dirty(tmp_path / "data")
    code, err = _redact(str(tmp_path / "data"), "--out", str(tmp_path / "clean"), cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "clean").iterdir()) == [SHARD]
    manifest = json.loads((tmp_path / "clean.redactions.json").read_text())
    assert [(m["run"], Path(m["shard"]).name, m["row"]) for m in manifest["redactions"]] == [(1, SHARD, 1)]
    report = scan([str(tmp_path / "clean")])
    assert [Path(s.shard).name for s in report.shards] == [SHARD] and report.blocking == ()


def test_a_second_run_appends_to_the_manifest(tmp_path: Path):
    _dirty(tmp_path / "data", seed="first")
    assert _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)[0] == 0
    _dirty(tmp_path / "data", seed="second", name="train-more.parquet")
    assert _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)[0] == 0
    manifest = json.loads((tmp_path / "redactions.json").read_text())
    assert [(m["run"], Path(m["shard"]).name) for m in manifest["redactions"]] == [
        (1, SHARD), (2, "train-more.parquet")]
    assert [(r["run"], r["mode"], r["redactions"]) for r in manifest["runs"]] == [
        (1, "in-place", 1), (2, "in-place", 1)]
    # A third run with nothing left to redact records itself and keeps both entries.
    assert _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)[0] == 0
    manifest = json.loads((tmp_path / "redactions.json").read_text())
    assert len(manifest["redactions"]) == 2 and len(manifest["runs"]) == 3


def test_a_file_that_is_not_a_manifest_is_refused_before_anything_is_redacted(tmp_path: Path):
    shard = _dirty(tmp_path / "data")
    before = shard.read_bytes()
    (tmp_path / "notes.json").write_text('{"mine": true}\n')
    code, err = _redact(str(tmp_path / "data"), "--in-place", "--manifest", str(tmp_path / "notes.json"), cwd=tmp_path)
    assert code == 2 and str(tmp_path / "notes.json") in err and "not a shardscan redaction manifest" in err
    assert shard.read_bytes() == before
    assert (tmp_path / "notes.json").read_text() == '{"mine": true}\n'


@pytest.mark.parametrize("where", ["in-out", "in-data", "default-in-data", "default-beside-a-file",
                                   "default-beside-a-glob"])
def test_a_manifest_inside_the_data_or_out_is_refused(tmp_path: Path, where: str):
    shard = _dirty(tmp_path / "data")
    before = shard.read_bytes()
    if where.startswith("default-"):
        given = {"default-in-data": ".", "default-beside-a-file": SHARD, "default-beside-a-glob": "*.parquet"}[where]
        code, err = _redact(given, "--in-place", cwd=tmp_path / "data")  # ./redactions.json would be data
    else:
        inside = tmp_path / ("clean" if where == "in-out" else "data") / "r.json"
        code, err = _redact(str(tmp_path / "data"), "--out", str(tmp_path / "clean"), "--manifest", str(inside),
                            cwd=tmp_path)
    assert code == 2 and "a later scan would read it as data" in err, err
    assert shard.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [SHARD]


# ---- temporary files ----------------------------------------------------------------------------


def test_the_in_place_temporary_file_carries_the_reserved_suffix(tmp_path: Path, monkeypatch):
    shard = _dirty(tmp_path / "data")
    seen: list[Path] = []
    real = remediate._WRITERS["parquet"]

    def spy(source, destination, items, template):
        seen.append(destination)
        return real(source, destination, items, template)

    monkeypatch.setitem(remediate._WRITERS, "parquet", spy)
    code, err = _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert len(seen) == 1 and seen[0].parent == shard.parent
    assert seen[0].name.startswith(f".{SHARD}.") and seen[0].name.endswith(TEMP_SUFFIX)
    assert sorted(p.name for p in shard.parent.iterdir()) == [SHARD]


def test_the_next_run_removes_temporary_files_that_killed_runs_left(tmp_path: Path):
    shard = _dirty(tmp_path / "data")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = shard.with_name(f".{SHARD}.{dead.pid}.00c0ffee{TEMP_SUFFIX}")
    stale.write_bytes(shard.read_bytes()[:100])
    code, err = _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in shard.parent.iterdir()) == [SHARD]


def test_a_compressed_jsonl_shard_is_checked_decompressed_in_place(tmp_path: Path):
    import pyarrow as pa

    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "part-0.jsonl.gz"
    with pa.output_stream(str(path), compression="gzip") as out:
        out.write((json.dumps({"text": f"GITHUB_TOKEN={_token('gz')}"}) + "\n").encode())
    code, err = _redact(str(folder), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.jsonl.gz"]
    assert _blocking(folder) == []


# ---- a killed redact --in-place -----------------------------------------------------------------


def _big_dataset(folder: Path) -> None:
    """A shard of ~6 MB (random text, 12 row groups) with tokens in several row groups, and a clean one."""
    rng = random.Random(7)
    rows = [
        trace_row([("tool", f"export GITHUB_TOKEN={_token(f'big-{i}')}" if i % 1000 == 500
                    else rng.randbytes(250).hex())])
        for i in range(12000)
    ]
    write_trace_shard(folder / SHARD, rows, row_group_size=1000)
    write_trace_shard(folder / "train-clean.parquet", [trace_row([("user", "nothing here")])])


def _start_redact(folder: Path, cwd: Path) -> subprocess.Popen:
    cwd.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "shardscan.cli", "redact", str(folder), "--in-place",
                             "--no-allowlist"],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _has_temp(folder: Path) -> bool:
    return any(name.endswith(TEMP_SUFFIX) for name in os.listdir(folder))


def _wait_for_temp(folder: Path, proc: subprocess.Popen, present: bool = True, timeout: float = 60.0) -> float | None:
    """When a temporary file beside the shard first appears (or, with ``present=False``, is gone);
    None if the run ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if _has_temp(folder) == present:
            return time.monotonic()
        time.sleep(0.002)
    return None


def test_a_killed_in_place_redaction_changes_no_later_result(tmp_path: Path):
    pristine = tmp_path / "pristine"
    _big_dataset(pristine)
    names = sorted(p.name for p in pristine.iterdir())
    before = _blocking(pristine)
    assert len(before) == 12

    # One complete run: the result after it, and how long its temporary file lives on this machine
    # (written, then re-scanned, then renamed).
    complete = tmp_path / "complete"
    shutil.copytree(pristine, complete)
    proc = _start_redact(complete, tmp_path / "cwd-complete")
    appeared = _wait_for_temp(complete, proc)
    renamed = _wait_for_temp(complete, proc, present=False)
    assert proc.wait(timeout=120) == 0
    writing = renamed - appeared if appeared and renamed else 0.2
    after = _blocking(complete)
    assert after == [] and sorted(p.name for p in complete.iterdir()) == names

    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    outcomes = []
    for trial in range(4):
        folder = tmp_path / f"trial-{trial}"
        shutil.copytree(pristine, folder)
        proc = _start_redact(folder, tmp_path / f"cwd-{trial}")
        if trial == 0:
            time.sleep(rng.uniform(0.0, 0.5))  # anywhere up to the start of writing
        elif _wait_for_temp(folder, proc) is not None and trial > 1:
            time.sleep(rng.uniform(0.0, writing))  # while the copy is written or checked (trial 1: as it starts)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        left = sorted(p.name for p in folder.iterdir())
        # Nothing discovery would read as data: the shards as they were, and reserved temporary names.
        assert [n for n in left if n not in names and not n.endswith(TEMP_SUFFIX)] == [], (seed, trial, left)
        result = _blocking(folder)
        assert result in (before, after), (seed, trial)
        outcomes.append((result == after, any(n.endswith(TEMP_SUFFIX) for n in left)))
        if not outcomes[-1][1]:
            continue
        # The next run completes and removes what the killed one left.
        code, err = _redact(str(folder), "--in-place", cwd=tmp_path / f"cwd-{trial}")
        assert code == 0, (seed, trial, err)
        assert sorted(p.name for p in folder.iterdir()) == names, (seed, trial)
        assert _blocking(folder) == after
    # At least one kill landed while a temporary file existed (the case that used to break scans).
    assert any(temp for _, temp in outcomes), (seed, outcomes)


def test_in_place_replaces_a_symlinked_shard_and_leaves_the_file_it_pointed_to(tmp_path: Path):
    blob = _dirty(tmp_path / "blobs")
    before = blob.read_bytes()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / SHARD).symlink_to(blob)
    code, err = _redact(str(tmp_path / "data"), "--in-place", cwd=tmp_path)
    assert code == 0, err
    assert not (tmp_path / "data" / SHARD).is_symlink() and _blocking(tmp_path / "data") == []
    assert blob.read_bytes() == before
