"""The incremental cache: unchanged shards are replayed, not read; any change to them, the rules or
the options is read again; replayed reports equal fresh ones; the cache holds no plaintext."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from shardscan.allowlist import load_allowlist
from shardscan.api import scan
from shardscan.decoders import DecodeLimits
from shardscan.model import Verdict, Verification
from shardscan.redaction import fingerprint
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand
from shardscan.verifiers import VERIFIERS
from tests.conftest import trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 52428800\n".format("4d" * 32)


def comparable(report) -> dict:
    """The JSON report without what legitimately differs between two runs (wall-clock timings)."""
    data = json.loads(report.to_json())
    data["scanned"].pop("seconds")
    data.pop("scanned_at")
    return data


def sealed_payload(path: Path) -> bytes:
    """A cache file's content without its seal (magic line and 32-byte HMAC)."""
    raw = path.read_bytes()
    magic = b"shardscan-sealed-1\n"
    assert raw.startswith(magic)
    return raw[len(magic) + 32 :]


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Three shards: clean, one GitHub token, one token in base64 inside a metadata-free row."""
    tokens = {"b": expand("{{github:ghp_}}", seed="cache-b"), "c": expand("{{github:ghp_}}", seed="cache-c")}
    data = tmp_path / "data"
    write_trace_shard(data / "a.parquet", [trace_row([("user", "hello")]) for _ in range(3)])
    write_trace_shard(
        data / "b.parquet",
        [trace_row([("user", "hi")]), trace_row([("user", "deploy"), ("tool", f"GITHUB_TOKEN={tokens['b']}")])],
    )
    write_trace_shard(data / "c.parquet", [trace_row(instruction=f"use {tokens['c']} to push")], row_group_size=1)
    return data, tokens


def test_second_scan_reads_nothing_and_reports_the_same(dataset, tmp_path, ruleset, options):
    data, tokens = dataset
    cache = tmp_path / "cache"
    first = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert first.stats.cached_shards == 0
    assert [(f.location.shard, f.location.row, f.location.column) for f in first.findings] == [
        ("b.parquet", 1, "conversations[1].content"),
        ("c.parquet", 0, "instruction"),
    ]
    second = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert second.stats.cached_shards == 3
    assert comparable(second) == comparable(first)
    assert second.decision == first.decision and second.exit_code == 1
    assert second.findings == first.findings

    text = b"".join(p.read_bytes() for p in cache.rglob("*") if p.is_file())
    assert b"sha256:" in text
    for token in tokens.values():
        assert token.encode() not in text


def test_a_changed_shard_is_read_again_and_the_others_are_not(dataset, tmp_path, ruleset, options):
    data, tokens = dataset
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    write_trace_shard(data / "b.parquet", [trace_row([("user", "the token was rotated")])])
    report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert report.stats.cached_shards == 2
    assert [f.location.shard for f in report.findings] == ["c.parquet"]
    assert comparable(report) == comparable(scan([str(data)], ruleset=ruleset, options=options))


def test_allowlist_edits_apply_without_reading_again(dataset, tmp_path, ruleset, options):
    """The allowlist is reconciled after the cache: editing it changes the report, not the reads."""
    data, tokens = dataset
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    allow = tmp_path / "allowlist.yaml"
    allow.write_text(
        "version: 1\nentries:\n"
        f"  - fingerprint: {fingerprint(tokens['b'], 'github')}\n"
        "    reason: revoked before the dataset was exported\n"
        "    reviewer: release review\n"
        "    reviewed: 2026-11-30\n"
    )
    accepted = scan([str(data)], ruleset=ruleset, options=options, cache=cache, allowlist=load_allowlist(allow))
    assert accepted.stats.cached_shards == 3
    assert [(f.location.shard, str(f.status), f.blocking) for f in accepted.findings] == [
        ("b.parquet", "allowlisted", False), ("c.parquet", "new", True),
    ]
    fresh = scan([str(data)], ruleset=ruleset, options=options, allowlist=load_allowlist(allow))
    assert comparable(accepted) == comparable(fresh)
    allow.write_text(allow.read_text().replace("revoked before", "rotated before"))
    edited = scan([str(data)], ruleset=ruleset, options=options, cache=cache, allowlist=load_allowlist(allow))
    assert edited.findings[0].allowlist.reason == "rotated before the dataset was exported"


def test_rules_and_options_are_part_of_the_key(dataset, tmp_path, ruleset, options):
    data, _ = dataset
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)

    # a rule changes: nothing may be replayed (a replay would still report the disabled rule)
    fewer = load_ruleset(disable=["github-pat", "generic-secret"])
    report = scan([str(data)], ruleset=fewer, options=options, cache=cache)
    assert report.stats.cached_shards == 0
    assert report.findings == ()

    # an option that changes results changes the key; the clock alone does not
    shallow = replace(options, decode=DecodeLimits(max_depth=0))
    assert scan([str(data)], ruleset=ruleset, options=shallow, cache=cache).stats.cached_shards == 0
    later = replace(options, now=options.now + timedelta(days=30))
    assert scan([str(data)], ruleset=ruleset, options=later, cache=cache).stats.cached_shards == 3


def test_edited_rule_file_invalidates(dataset, tmp_path, options):
    data, _ = dataset
    cache = tmp_path / "cache"
    rule = tmp_path / "rules" / "extra.yaml"
    rule.parent.mkdir()
    body = """- id: house-style-marker
  kind: internal
  name: Internal marker
  description: A marker our team treats as sensitive.
  severity: low
  keywords: [hello]
  pattern: '(?P<secret>hello)'
  examples: ['hello']
  negative_examples: ['goodbye']
"""
    rule.write_text(body)
    first = scan([str(data)], ruleset=load_ruleset([rule]), options=options, cache=cache)
    assert sum(f.rule_id == "house-style-marker" for f in first.findings) == 3
    assert scan([str(data)], ruleset=load_ruleset([rule]), options=options, cache=cache).stats.cached_shards == 3
    rule.write_text(body.replace("(?P<secret>hello)", "(?P<secret>hellx)"))
    edited = scan([str(data)], ruleset=load_ruleset([rule]), options=options, cache=cache)
    assert edited.stats.cached_shards == 0
    assert not any(f.rule_id == "house-style-marker" for f in edited.findings)


def test_incomplete_shards_are_never_cached(dataset, tmp_path, ruleset, options):
    data, _ = dataset
    cache = tmp_path / "cache"
    (data / "lfs.parquet").write_text(LFS_POINTER)
    (data / "broken.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    for run in range(2):
        report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
        assert report.stats.cached_shards == (0 if run == 0 else 3)
        assert sorted(i.shard for i in report.issues) == ["broken.parquet", "lfs.parquet"]
        assert report.exit_code == 3
    [lfs] = [i for i in report.issues if i.shard == "lfs.parquet"]
    assert "Git LFS pointer" in lfs.message and "git lfs pull" in lfs.message


def test_same_bytes_under_another_name_report_the_current_name(dataset, tmp_path, ruleset, options):
    data, _ = dataset
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    other = tmp_path / "renamed"
    other.mkdir()
    (other / "train-0001.parquet").write_bytes((data / "b.parquet").read_bytes())
    report = scan([str(other)], ruleset=ruleset, options=options, cache=cache)
    assert report.stats.cached_shards == 1
    assert [(f.location.shard, f.location.row) for f in report.findings] == [("train-0001.parquet", 1)]


def test_verdicts_read_from_the_clock_replay_only_for_the_same_clock(tmp_path, options, monkeypatch):
    """A verifier that decides by the clock (an expiry) makes the entry valid for that clock only."""
    cutoff = options.now + timedelta(days=1)

    def expiry(candidate, context):
        return Verification(Verdict.EXPIRED if context.now > cutoff else Verdict.VALID, "test expiry")

    monkeypatch.setitem(VERIFIERS, "test-expiry", expiry)
    rule = tmp_path / "clock.yaml"
    rule.write_text(
        """- id: test-clocked
  kind: internal
  name: Clocked marker
  description: A marker whose verdict depends on the clock.
  severity: high
  keywords: [clocked-]
  pattern: '(?P<secret>clocked-[a-z]{6})'
  verify: [test-expiry]
  examples: ['clocked-abcdef']
  negative_examples: ['clocked']
"""
    )
    ruleset = load_ruleset([rule])
    data = tmp_path / "data"
    write_trace_shard(data / "clocked.parquet", [trace_row(task="clocked-rivmus")])
    cache = tmp_path / "cache"
    first = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert [f.verdict for f in first.findings] == [Verdict.VALID]
    assert scan([str(data)], ruleset=ruleset, options=options, cache=cache).stats.cached_shards == 1
    later = replace(options, now=cutoff + timedelta(days=1))
    report = scan([str(data)], ruleset=ruleset, options=later, cache=cache)
    assert report.stats.cached_shards == 0
    assert [f.verdict for f in report.findings] == [Verdict.EXPIRED]


def test_damaged_entries_are_misses(dataset, tmp_path, ruleset, options):
    data, _ = dataset
    cache = tmp_path / "cache"
    first = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    for damage in ("{not json", "[]", '{"format": 1, "clock": null, "stats": 7, "findings": {}}', '"x"'):
        for entry in (cache / "v2").rglob("*.json"):
            entry.write_text(damage)  # entries and the stat index alike
        report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
        assert report.stats.cached_shards == 0, damage
        assert comparable(report) == comparable(first)


def test_cache_folder_ignores_itself_for_git(dataset, tmp_path, ruleset, options):
    data, _ = dataset
    scan([str(data)], ruleset=ruleset, options=options, cache=tmp_path / "cache")
    assert (tmp_path / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_stat_index_notices_in_place_rewrites(dataset, tmp_path, ruleset, options):
    """Settled files are not re-hashed, yet a same-size rewrite with its mtime put back is noticed."""
    data, _ = dataset
    old = options.now.timestamp() - 3600
    for shard in data.iterdir():
        os.utime(shard, (old, old))
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    index = json.loads(sealed_payload(cache / "v2" / "stat-index.json"))
    assert len(index) == 3 and all(entry[5] for entry in index.values())  # settled: trusted next time

    clean = data / "a.parquet"
    body = clean.read_bytes()
    stat = clean.stat()
    planted = body.replace(b"hello", b"hellp")  # same size; page checksums are off by default
    assert planted != body and len(planted) == len(body)
    with open(clean, "r+b") as handle:
        handle.write(planted)
    os.utime(clean, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert report.stats.cached_shards == 2  # a.parquet was hashed again, missed, and read


def test_a_jwt_expiry_is_judged_at_the_clock_of_each_scan(tmp_path, ruleset, options):
    """The built-in JWT verifier reads the clock: its shard is replayed only for the same --now,
    while a shard whose verdicts ignore the clock is replayed at any time."""
    import random

    from shardscan.synth import jwt

    cutoff = options.now + timedelta(days=1)
    token = jwt(random.Random(7), exp=int(cutoff.timestamp()))
    data = tmp_path / "data"
    write_trace_shard(data / "session.parquet", [trace_row([("tool", f"Authorization: Bearer {token}")])])
    write_trace_shard(data / "clean.parquet", [trace_row([("user", "hello")])])
    cache = tmp_path / "cache"
    before = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    [finding] = before.findings
    assert finding.verdict != Verdict.EXPIRED
    assert scan([str(data)], ruleset=ruleset, options=options, cache=cache).stats.cached_shards == 2
    after = scan([str(data)], ruleset=ruleset, options=replace(options, now=cutoff + timedelta(days=1)), cache=cache)
    assert after.stats.cached_shards == 1  # clean.parquet only
    assert [f.verdict for f in after.findings] == [Verdict.EXPIRED]
    assert token.encode() not in b"".join(p.read_bytes() for p in cache.rglob("*.json"))


def test_a_revealing_scan_neither_uses_nor_fills_the_cache(dataset, tmp_path, ruleset, options):
    data, tokens = dataset
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    revealing = replace(options, reveal_secrets=True)
    report = scan([str(data)], ruleset=ruleset, options=revealing, cache=tmp_path / "other")
    assert report.stats.cached_shards == 0
    assert sorted(f.revealed for f in report.findings) == sorted(tokens.values())
    assert not (tmp_path / "other").exists()
    assert scan([str(data)], ruleset=ruleset, options=revealing, cache=cache).stats.cached_shards == 0
