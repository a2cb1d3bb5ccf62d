"""hf:// and other fsspec URLs, through fsspec's filesystem interface with a local stand-in for the Hub.

The stand-in is registered for the ``hf`` protocol in place of huggingface_hub's HfFileSystem (no
network in tests): shardscan resolves ``hf://datasets/org/name/...`` through ``fsspec.core.url_to_fs``
exactly as it does for the real Hub, then lists, globs and reads row groups through it.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import shardscan
from shardscan.reader import discover
from tests.planted import finding_keys, located_keys, planted_rows, planted_table
from tests.reader.test_reader_inputs import write_jsonl

fsspec = pytest.importorskip("fsspec")
from fsspec.implementations.dirfs import DirFileSystem  # noqa: E402
from fsspec.implementations.local import LocalFileSystem  # noqa: E402
from fsspec.registry import _registry  # noqa: E402


class HubStandIn(DirFileSystem):
    """The Hub's path layout (``datasets/<org>/<name>/<file>``) served from a local folder."""

    protocol = "hf"
    root = "/nonexistent"
    cachable = False
    reads: list[tuple[str, str]] = []

    def __init__(self, **_storage_options: object) -> None:
        super().__init__(path=self.root, fs=LocalFileSystem())

    def open(self, path, mode="rb", *args, **kwargs):
        HubStandIn.reads.append((path, mode))
        return super().open(path, mode, *args, **kwargs)


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    repo = tmp_path / "hub" / "datasets" / "org" / "traces"
    (repo / "data").mkdir(parents=True)
    pq.write_table(planted_table("a"), repo / "data" / "train-00000-of-00002.parquet", row_group_size=4)
    pq.write_table(planted_table("b"), repo / "data" / "train-00001-of-00002.parquet", row_group_size=6)
    (repo / "raw").mkdir()
    write_jsonl(repo / "raw" / "extra.jsonl.zst", planted_rows("c"))
    (repo / "README.md").write_text("---\nlicense: mit\n---\n")
    (repo / ".gitattributes").write_text("*.parquet filter=lfs\n")
    monkeypatch.setattr(HubStandIn, "root", str(tmp_path / "hub"))
    monkeypatch.setattr(HubStandIn, "reads", [])
    monkeypatch.setitem(_registry, "hf", HubStandIn)  # what fsspec.register_implementation writes
    return repo


@pytest.mark.slow
def test_hf_dataset_repo_scans_like_the_local_copy_with_full_urls(hub, options):
    remote = shardscan.scan(["hf://datasets/org/traces"], options=options)
    local = shardscan.scan([str(hub)], options=options)
    assert remote.issues == () and len(remote.findings) == 30
    assert sorted({f.location.shard for f in remote.findings}) == [
        "hf://datasets/org/traces/data/train-00000-of-00002.parquet",
        "hf://datasets/org/traces/data/train-00001-of-00002.parquet",
        "hf://datasets/org/traces/raw/extra.jsonl.zst",
    ]
    strip = len("hf://datasets/org/traces/")
    assert [(k[0][strip:], *k[1:]) for k in located_keys(remote)] == located_keys(local)
    # Every read went through the fsspec filesystem, file by file: the dataset card and .gitattributes
    # are published with the shards, so they are read (sniffed, then scanned as text) too.
    assert {Path(p).name for p, _ in HubStandIn.reads} == {
        "train-00000-of-00002.parquet", "train-00001-of-00002.parquet", "extra.jsonl.zst", "README.md", ".gitattributes"
    }
    assert remote.files is not None and remote.files.scanned == 5


@pytest.mark.slow
def test_hf_glob_selects_files_within_the_repo(hub, options):
    report = shardscan.scan(["hf://datasets/org/traces/data/*-00001-*.parquet"], options=options)
    assert {f.location.shard for f in report.findings} == {"hf://datasets/org/traces/data/train-00001-of-00002.parquet"}
    assert finding_keys(report) == finding_keys(shardscan.scan_table(planted_table("b"), options=options))


def test_hf_missing_repo_or_file_is_reported_with_its_url(hub, options):
    shards, unresolved = discover(["hf://datasets/org/missing", "hf://datasets/org/traces/data/nope.parquet"])
    assert shards == []
    assert [(u.path, u.reason) for u in unresolved] == [
        ("hf://datasets/org/missing", "no such object, prefix or folder"),
        ("hf://datasets/org/traces/data/nope.parquet", "no such object, prefix or folder"),
    ]
    report = shardscan.scan(["hf://datasets/org/missing"], options=options)
    assert report.decision.exit_code == 3


def test_unknown_scheme_is_an_error_not_a_crash(options):
    report = shardscan.scan(["nosuchproto://bucket/x"], options=options)
    assert report.decision.exit_code == 3
    [issue] = report.issues
    assert issue.shard == "nosuchproto://bucket/x" and "nosuchproto" in issue.message


@pytest.mark.slow
def test_file_urls_use_pyarrow_local_filesystem(tmp_path, options):
    pq.write_table(planted_table("a"), tmp_path / "x.parquet", row_group_size=4)
    report = shardscan.scan([f"file://{tmp_path}/*.parquet"], options=options)
    assert {f.location.shard for f in report.findings} == {f"file://{tmp_path}/x.parquet"}
    assert finding_keys(report) == finding_keys(shardscan.scan_table(planted_table("a"), options=options))


@pytest.mark.slow
def test_hf_repo_shardscanignore_and_exclude_apply_to_the_prefix(hub, options):
    (hub / ".shardscanignore").write_text("*.md\n")
    report = shardscan.scan(["hf://datasets/org/traces"], options=options, exclude=["raw/"])
    assert report.files is not None
    assert {e.source: e.count for e in report.files.excluded} == {"--exclude": 1, ".shardscanignore": 1}
    assert sorted(s.shard for s in report.shards) == [
        "hf://datasets/org/traces/.gitattributes", "hf://datasets/org/traces/.shardscanignore",
        "hf://datasets/org/traces/data/train-00000-of-00002.parquet",
        "hf://datasets/org/traces/data/train-00001-of-00002.parquet",
    ]
