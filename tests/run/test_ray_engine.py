"""The Ray engine against a local Ray started by the test: findings identical to the local engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import shardscan
from tests.planted import located_keys, planted_rows, planted_table
from tests.reader.test_reader_inputs import write_arrow_stream, write_jsonl

# Starts a Ray cluster: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")
ROOT = Path(shardscan.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    """A 2-CPU Ray started here; workers import shardscan from this checkout. Yields its address."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield context.address_info["gcs_address"]
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ray-data")
    for i in range(3):
        pq.write_table(planted_table(f"p{i}"), folder / f"train-{i:05d}-of-00003.parquet", row_group_size=3)
    write_jsonl(folder / "extra.jsonl.gz", planted_rows("j"))
    write_arrow_stream(folder / "cache.arrow", planted_table("s"))
    (folder / "corrupt.parquet").write_bytes(b"PAR1 not really PAR1")
    return folder


def _issues(report) -> list[tuple]:
    return sorted((i.shard, i.kind, i.row_group, i.row) for i in report.issues)


def test_ray_engine_findings_are_identical_to_local(local_ray, dataset, options):
    local = shardscan.scan([str(dataset)], options=options)
    distributed = shardscan.scan([str(dataset)], options=options, engine="ray")
    assert len(local.findings) == 50
    assert located_keys(distributed) == located_keys(local)
    assert [(f.verdict, f.blocking, f.preview) for f in distributed.findings] == [
        (f.verdict, f.blocking, f.preview) for f in local.findings
    ]
    assert _issues(distributed) == _issues(local) == [
        (str(dataset / "corrupt.parquet")[len(str(dataset)) + 1 :], "unreadable", None, None)]
    for field in ("shards", "row_groups", "rows", "cells", "bytes", "candidate_cells"):
        assert getattr(distributed.stats, field) == getattr(local.stats, field), field
    assert distributed.decision.exit_code == local.decision.exit_code == 3


def test_cli_connects_to_an_existing_ray_cluster(local_ray, dataset):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    args = [str(dataset / "train-00000-of-00003.parquet"), "--format", "json", "--now", "2026-12-02"]
    run = [sys.executable, "-m", "shardscan.cli", "scan", *args]
    local = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    remote = subprocess.run([*run, "--engine", "ray", "--ray-address", local_ray],
                            capture_output=True, text=True, env=env, timeout=120)
    assert (local.returncode, remote.returncode) == (1, 1), remote.stderr
    local_report, remote_report = json.loads(local.stdout), json.loads(remote.stdout)
    assert remote_report["findings"] == local_report["findings"]
    assert len(remote_report["findings"]) == 10 and remote_report["scanned"]["row_groups"] == 4


def test_missing_ray_is_a_clear_usage_error(tmp_path, dataset):
    # A ``ray`` package that cannot be imported stands in for an environment without Ray.
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(dataset), "--engine", "ray"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 2
    assert "pip install 'shardscan[ray]'" in proc.stderr
    assert proc.stdout == ""


def test_ray_address_without_ray_engine_is_a_usage_error(dataset):
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(dataset), "--ray-address", "auto"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2 and "--ray-address needs --engine ray" in proc.stderr


def test_ray_engine_scans_text_csv_and_tar_members_like_local(local_ray, tmp_path, options):
    import io
    import tarfile

    from shardscan.synth import expand

    token = expand("{{github:ghp_}}", seed="ray-files")
    (tmp_path / "README.md").write_text(f"# card\n\nexport GITHUB_TOKEN={token}\n")
    (tmp_path / "split.csv").write_text(f"id,text\n1,hello\n2,{token}\n")
    with tarfile.open(tmp_path / "shard-000.tar", "w") as archive:
        data = json.dumps({"text": f"t {token}"}).encode()
        info = tarfile.TarInfo("000.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    local = shardscan.scan(tmp_path, options=options)
    distributed = shardscan.scan(tmp_path, options=options, engine="ray")
    expected = [("README.md", 2, "__text__"), ("shard-000.tar!/000.json", 0, "text"), ("split.csv", 1, "text")]
    assert [(f.location.shard, f.location.row, f.location.column) for f in local.findings] == expected
    assert located_keys(distributed) == located_keys(local)
    assert distributed.issues == local.issues == ()
