"""Local state is proved, not trusted: sealed cache entries and pattern databases, and ``--no-cache`` reads none."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shardscan import hyperscan_matcher, local_state
from shardscan.api import scan
from shardscan.cli import app
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard
from tests.run.test_cache import comparable

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow


@pytest.fixture
def token_shard(tmp_path: Path) -> tuple[Path, str]:
    token = expand("{{github:ghp_}}", seed="cache-integrity")
    data = tmp_path / "data"
    write_trace_shard(data / "leak.parquet", [trace_row([("user", "hi"), ("tool", f"export GITHUB_TOKEN={token}")])])
    write_trace_shard(data / "clean.parquet", [trace_row([("user", "hello")])])
    return data, token


def _blind_database(ids: list[int]) -> bytes:
    """A genuine compiled database that matches nothing, holding the same expression ids."""
    db, _ = hyperscan_matcher._build([r"never-matches-\x00{3}q{9}"] * len(ids), ids, 0)
    return hyperscan_matcher.hyperscan.dumpb(db)


def _plant(folder: Path, how: str) -> int:
    """Replace every compiled database in ``folder`` by one that matches nothing; return how many."""
    planted = 0
    for path in sorted(folder.glob("*.db")):
        raw = path.read_bytes()
        header = raw[: raw.index(b"\n") + 1]
        ids_line, _, rest = raw[len(header) + 32 :].partition(b"\n")
        aliases_line = rest.partition(b"\n")[0]
        payload = ids_line + b"\n" + aliases_line + b"\n" + _blind_database([int(i) for i in ids_line.split(b",")])
        if how == "digest":  # framed with a plain digest of its own content, as an unkeyed check expects
            path.write_bytes(header + hashlib.sha256(payload).digest() + payload)
        else:  # sealed, but with a key that is not this machine's
            path.write_bytes(local_state.seal(b"k" * 32, hyperscan_matcher._label(path.stem), payload))
        planted += 1
    return planted


@pytest.mark.parametrize("how", ["digest", "foreign-key"])
@pytest.mark.parametrize("no_cache", [True, False])
def test_a_planted_pattern_database_never_hides_a_token(token_shard, tmp_path, monkeypatch, how, no_cache):
    if not hyperscan_matcher.enabled():
        pytest.skip("Hyperscan is not enabled (no wheel for this platform, or SHARDSCAN_MATCHER=re2)")
    data, token = token_shard
    cache = tmp_path / "cache"
    # Fill the cache the way a normal run does, in the folder the default run (and older
    # versions, even with --no-cache) read databases from.
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(cache))
    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})
    runner = CliRunner()
    first = runner.invoke(app, ["scan", str(data), "-f", "json", "--now", "2026-12-02"])
    assert first.exit_code == 1
    databases = cache / hyperscan_matcher.PATTERN_CACHE_DIR
    assert _plant(databases, how) >= 2  # the prefilter's and the rule gate's
    for entry in (cache / "v2").rglob("*.json"):
        entry.unlink()  # results are not what this test is about: every shard is read

    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})  # a new process
    args = ["scan", str(data), "-f", "json", "--now", "2026-12-02"] + (["--no-cache"] if no_cache else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert [(f["shard"], f["row"], f["rule_id"]) for f in report["findings"]] == [
        ("leak.parquet", 0, "github-pat")
    ]
    assert token not in result.output
    if no_cache:  # --no-cache reads no file: the planted ones are still there, untouched
        assert all(local_state.unseal(local_state.cache_key(), hyperscan_matcher._label(p.stem), p.read_bytes()) is None
                   for p in databases.glob("*.db"))
    else:  # the cache noticed and compiled them again, sealed with this machine's key
        assert all(local_state.unseal(local_state.cache_key(), hyperscan_matcher._label(p.stem), p.read_bytes())
                   for p in databases.glob("*.db"))


def test_no_cache_reads_no_result_entry(token_shard, tmp_path, monkeypatch, ruleset, options):
    data, _ = token_shard
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    assert runner.invoke(app, ["scan", str(data), "-f", "compact", "--now", "2026-12-02"]).exit_code == 1
    replayed = runner.invoke(app, ["scan", str(data), "-f", "compact", "--now", "2026-12-02"])
    assert "(2 from cache)" in replayed.stdout
    fresh = runner.invoke(app, ["scan", str(data), "-f", "compact", "--now", "2026-12-02", "--no-cache"])
    assert fresh.exit_code == 1 and "from cache" not in fresh.stdout


def _entry(cache: Path, shard_bytes: bytes) -> Path:
    digest = hashlib.sha256(shard_bytes).hexdigest()
    (path,) = (cache / "v2").rglob(f"{digest}.json")
    return path


def test_single_byte_corruptions_of_an_entry_are_misses_counted_and_never_replayed(token_shard, tmp_path, ruleset,
                                                                                    options):
    data, _ = token_shard
    cache = tmp_path / "cache"
    uncached = scan([str(data)], ruleset=ruleset, options=options)
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    entry = _entry(cache, (data / "leak.parquet").read_bytes())
    sealed = entry.read_bytes()
    payload_start = sealed.index(b"\n") + 1 + 32
    digits = [i for i in range(payload_start, len(sealed)) if sealed[i : i + 1].isdigit()]
    offsets = sorted({0, 5, payload_start - 20, payload_start, payload_start + 1, len(sealed) // 2, len(sealed) - 1,
                      *digits[:: max(1, len(digits) // 6)]})
    for offset in offsets:
        corrupted = bytearray(sealed)
        corrupted[offset] ^= 0x01  # one bit: a digit stays a digit, JSON stays JSON
        entry.write_bytes(bytes(corrupted))
        report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
        assert report.stats.cached_shards == 1, offset  # clean.parquet only
        assert report.stats.cache_rejected == 1, offset
        assert comparable(report) == comparable(uncached), offset
        assert report.findings == uncached.findings
        entry.write_bytes(sealed)
        assert scan([str(data)], ruleset=ruleset, options=options, cache=cache).stats.cached_shards == 2


def test_an_entry_copied_under_another_shard_is_foreign(token_shard, tmp_path, ruleset, options):
    """A genuine entry of a clean shard, copied under a leaking shard's name, is not replayed."""
    data, _ = token_shard
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    clean = _entry(cache, (data / "clean.parquet").read_bytes())
    leak = _entry(cache, (data / "leak.parquet").read_bytes())
    leak.write_bytes(clean.read_bytes())
    report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert report.exit_code == 1 and [f.location.shard for f in report.findings] == ["leak.parquet"]
    assert report.stats.cache_rejected == 1 and report.stats.cached_shards == 1


def test_entries_written_under_another_key_are_misses(token_shard, tmp_path, ruleset, options, monkeypatch):
    """A cache restored from another machine or job (another key) replays nothing; a shared key
    ($SHARDSCAN_CACHE_KEY) lets jobs that hold it share a cache."""
    data, _ = token_shard
    cache = tmp_path / "cache"
    monkeypatch.setenv(local_state.KEY_ENV, "ci-secret-one")
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert scan([str(data)], ruleset=ruleset, options=options, cache=cache).stats.cached_shards == 2
    monkeypatch.setenv(local_state.KEY_ENV, "ci-secret-two")
    report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert report.stats.cached_shards == 0 and report.exit_code == 1
    assert report.stats.cache_rejected == 2


def test_a_forged_stat_index_is_rejected(token_shard, tmp_path, ruleset, options):
    """The stat index maps a file to its content hash: pointing the leaking shard at the clean
    shard's hash (with a plain digest, no key) must not replay the clean result for it."""
    data, _ = token_shard
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    index_path = cache / "v2" / "stat-index.json"
    raw = index_path.read_bytes()
    header = raw[: raw.index(b"\n") + 1]
    index = json.loads(raw[len(header) + 32 :])
    leak, clean = (str((data / name).resolve()) for name in ("leak.parquet", "clean.parquet"))
    index[leak][4:6] = [index[clean][4], True]
    payload = json.dumps(index, sort_keys=True).encode()
    index_path.write_bytes(header + hashlib.sha256(payload).digest() + payload)
    report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert report.exit_code == 1 and [f.location.shard for f in report.findings] == ["leak.parquet"]


def test_the_key_lives_outside_the_cache_folder(token_shard, tmp_path, ruleset, options, monkeypatch):
    data, _ = token_shard
    key_file = tmp_path / "state" / "cache-key"
    monkeypatch.setenv(local_state.KEY_FILE_ENV, str(key_file))
    cache = tmp_path / "cache"
    scan([str(data)], ruleset=ruleset, options=options, cache=cache)
    assert key_file.stat().st_mode & 0o077 == 0
    assert not any(key_file.read_bytes().strip() in p.read_bytes() for p in cache.rglob("*") if p.is_file())
    key_file.unlink()  # a new key: every entry written under the old one is foreign
    assert scan([str(data)], ruleset=ruleset, options=options, cache=cache).stats.cached_shards == 0


def test_without_a_key_nothing_is_cached(token_shard, tmp_path, ruleset, options, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(local_state.KEY_FILE_ENV, str(blocker / "cache-key"))
    data, _ = token_shard
    cache = tmp_path / "cache"
    for _ in range(2):
        report = scan([str(data)], ruleset=ruleset, options=options, cache=cache)
        assert report.exit_code == 1 and report.stats.cached_shards == 0
    assert not list((cache / "v2").rglob("*.json")) if (cache / "v2").exists() else True
