"""Scanning s3:// URLs for real, against moto's S3-compatible server started on 127.0.0.1 by the tests."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import shardscan
from shardscan.engine import Scanner
from shardscan.reader import discover
from shardscan.ruleset import load_ruleset
from shardscan.run import run_shards as scan_shards
from tests.planted import located_keys, planted_rows, planted_table
from tests.reader.test_reader_inputs import write_arrow_file, write_jsonl

# Starts the local S3 server: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

# Dummy credentials: the local server accepts any; they must not look like real keys.
DUMMY_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class S3Server:
    """A moto server on 127.0.0.1 and the environment that points S3 clients at it."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.env = {**DUMMY_ENV, "AWS_ENDPOINT_URL": self.endpoint}

    def client(self, service: str = "s3"):
        keys = {k.lower(): v for k, v in DUMMY_ENV.items() if k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        return boto3.client(service, endpoint_url=self.endpoint, **keys, region_name="us-east-1")

    def upload(self, bucket: str, prefix: str, folder: Path) -> None:
        client = self.client()
        client.create_bucket(Bucket=bucket)
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                client.upload_file(str(file), bucket, f"{prefix}/{file.relative_to(folder).as_posix()}")

    def set_auth(self, unauthenticated_requests: str) -> None:
        """Make moto enforce IAM from now on ("0") or never again ("inf")."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("POST", "/moto-api/reset-auth", body=unauthenticated_requests.encode())
        assert conn.getresponse().status == 200
        conn.close()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server()
    server.server.start()
    with pytest.MonkeyPatch.context() as patch:
        for key, value in server.env.items():
            patch.setenv(key, value)
        try:
            yield server
        finally:
            server.server.stop()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, s3) -> Path:
    """Shards of three formats (and a file that is not a shard) locally and under s3://traces/ds."""
    folder = tmp_path_factory.mktemp("dataset")
    pq.write_table(planted_table("a"), folder / "train-00000-of-00002.parquet", row_group_size=4)
    (folder / "sub").mkdir()
    pq.write_table(planted_table("b"), folder / "sub" / "train-00001-of-00002.parquet", row_group_size=5)
    write_jsonl(folder / "extra.jsonl.gz", planted_rows("c"))
    write_arrow_file(folder / "cache.arrow", planted_table("d"))
    (folder / "README.md").write_text("# dataset card\n")
    s3.upload("traces", "ds", folder)
    return folder


def _cli(args: list[str], env: dict[str, str]) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", *args, "--format", "json", "--now", "2026-12-02"],
        capture_output=True, text=True, env={**os.environ, **env}, timeout=300,
    )
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def _keys(report: dict, prefix: str = "") -> list[tuple]:
    return sorted(
        (f["shard"].removeprefix(prefix), f["rule_id"], f["row"], f["column"], f["start"], f["end"], f["fingerprint"])
        for f in report["findings"]
    )


def test_s3_prefix_scan_is_identical_to_the_local_scan_with_full_urls(s3, dataset):
    local_code, local, _ = _cli([str(dataset)], s3.env)
    code, remote, stderr = _cli(["s3://traces/ds"], s3.env)
    assert (local_code, code) == (1, 1), stderr
    assert remote["errors"] == [] and local["errors"] == []
    assert len(remote["findings"]) == 40
    assert {f["shard"] for f in remote["findings"]} == {
        "s3://traces/ds/cache.arrow",
        "s3://traces/ds/extra.jsonl.gz",
        "s3://traces/ds/sub/train-00001-of-00002.parquet",
        "s3://traces/ds/train-00000-of-00002.parquet",
    }
    assert _keys(remote, "s3://traces/ds/") == _keys(local)
    # 48 data rows, and the one line of the dataset card (scanned as text).
    assert remote["scanned"]["rows"] == local["scanned"]["rows"] == 49
    assert remote["scanned"]["row_groups"] == local["scanned"]["row_groups"]


def test_s3_glob_and_single_object(s3, dataset):
    report = shardscan.scan(["s3://traces/ds/**/train-*.parquet"])
    assert sorted({f.location.shard for f in report.findings}) == [
        "s3://traces/ds/sub/train-00001-of-00002.parquet",
        "s3://traces/ds/train-00000-of-00002.parquet",
    ]
    single = shardscan.scan(["s3://traces/ds/train-00000-of-00002.parquet"])
    local = shardscan.scan([str(dataset / "train-00000-of-00002.parquet")])
    assert [k[1:] for k in located_keys(single)] == [k[1:] for k in located_keys(local)]
    assert single.stats.row_groups == 3  # streamed by row group, not downloaded whole


def test_missing_bucket_and_prefix_exit_3_naming_the_url(s3, dataset):
    code, report, _ = _cli(["s3://no-such-bucket/ds", "s3://traces/nothing-here/", "s3://traces/ds/*.csv"], s3.env)
    assert code == 3
    errors = {e["shard"]: e["message"] for e in report["errors"]}
    assert set(errors) == {"s3://no-such-bucket/ds", "s3://traces/nothing-here/", "s3://traces/ds/*.csv"}
    assert all(e["kind"] == "unreadable" for e in report["errors"])
    assert "no file matched" in errors["s3://traces/ds/*.csv"]


def test_unreadable_object_is_a_shard_error_and_other_shards_still_count(s3, dataset, tmp_path):
    folder = tmp_path / "mixed"
    shutil.copytree(dataset, folder)
    (folder / "corrupt.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    (folder / "bad.jsonl.zst").write_bytes(b"not zstd at all")
    s3.upload("mixed", "ds", folder)
    code, report, _ = _cli(["s3://mixed/ds"], s3.env)
    assert code == 3
    assert sorted(e["shard"] for e in report["errors"]) == ["s3://mixed/ds/bad.jsonl.zst", "s3://mixed/ds/corrupt.parquet"]
    assert len(report["findings"]) == 40


def test_permission_denied_exits_3_naming_each_url(s3, dataset):
    shards, _ = discover(["s3://traces/ds"])  # listed while the default credentials are allowed
    assert len(shards) == 5  # four shards and the dataset card
    iam = s3.client("iam")
    iam.create_user(UserName="lister")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "*"}]}
    iam.put_user_policy(UserName="lister", PolicyName="list-only", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="lister")["AccessKey"]
    s3.set_auth("0")  # from now on moto checks every request against IAM
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
            patch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
            patch.delenv("AWS_SESSION_TOKEN")
            explicit = shardscan.scan(["s3://traces/ds/cache.arrow"])
            results = scan_shards(shards, Scanner(load_ruleset()))
    finally:
        s3.set_auth("inf")
    assert explicit.decision.exit_code == 3
    [issue] = explicit.issues
    assert (issue.shard, issue.kind) == ("s3://traces/ds/cache.arrow", "unreadable")
    assert "ACCESS_DENIED" in issue.message
    assert [r.shard for r in results] == [s.display for s in shards]
    for result in results:
        assert result.findings == () and result.stats.shards == 1
        [issue] = result.issues
        assert issue.kind == "unreadable" and issue.shard == result.shard and "ACCESS_DENIED" in issue.message


def test_server_gone_mid_scan_is_a_per_shard_error_not_a_crash(s3, dataset):
    other = S3Server()
    other.server.start()
    try:
        other.upload("gone", "ds", dataset)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("AWS_ENDPOINT_URL", other.endpoint)
            shards, _ = discover(["s3://gone/ds/cache.arrow"])
            assert [s.display for s in shards] == ["s3://gone/ds/cache.arrow"]
            other.server.stop()  # the connection is refused from here on
            report = shardscan.api._finish(
                scan_shards(shards, Scanner(load_ruleset())), load_ruleset(), shardscan.api.Policy(),
                shardscan.api.ScanOptions(), 0.0, (),
            )
    finally:
        other.server.stop()
    assert report.decision.exit_code == 3
    [issue] = report.issues
    assert issue.shard == "s3://gone/ds/cache.arrow" and "NETWORK_CONNECTION" in issue.message
