"""Incremental cache: replay a shard's engine result when its content and the scan config are unchanged.

An entry is keyed by the SHA-256 of the shard's bytes and a config digest covering everything that
can change what the engine finds in those bytes: the shardscan version and code, the rule set and
the result-relevant scan options. Entries hold exactly what a report holds for the shard (findings
with fingerprints, redacted previews and contexts, and counters) and never a plaintext secret.

Decisions, written down:

* Reconciliation (the allowlist and the gate policy) runs after the cache, on replayed and fresh
  results alike. Editing the allowlist or ``--strict`` therefore changes the report at once without
  re-reading any shard; the allowlist is not part of the key because it cannot change what the engine
  finds.
* Only complete results are stored. A shard with an unreadable row group or a limit hit (or an LFS
  pointer) is read again next time, so a transient failure is retried and errors are always current.
* A result whose verdicts a verifier decided by reading the clock (an expiry) is replayed only for
  the very same clock; other results are valid whatever the clock.
* The cache folder is not trusted: every entry and the stat index are sealed with an HMAC under a key
  kept outside the folder (see :mod:`shardscan.local_state` for the key and the threat model). An
  entry whose seal does not verify (corrupted, written under another key, or copied to another
  entry's name) is a miss, counted in ``CacheCounters.rejected`` and in the report's stats, and is
  never replayed. Without a key (none can be read or created) nothing is cached.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shardscan import __version__
from shardscan.local_state import atomic_write, cache_key, seal, unseal
from shardscan.model import CellLocation, Finding, ScanStats, Severity, ShardResult, Status, Verdict
from shardscan.options import ScanOptions
from shardscan.reader import ShardRef
from shardscan.ruleset import Ruleset

CACHE_FORMAT = 2
CACHE_DIR_NAME = ".shardscan-cache"
# Options that change how fast a scan runs, never what it finds; everything else is in the key
# (an option added later is in the key until someone decides it is neutral).
RESULT_NEUTRAL_OPTIONS = frozenset({"now", "jobs", "workers", "read_threads", "executor", "pattern_cache"})
# The stat index trusts (size, mtime, ctime, inode) only for files last modified this long before they were
# hashed: a write within the same timestamp tick as the hash could otherwise go unnoticed.
_RACY_SECONDS = 2.0
_HASH_CHUNK = 1 << 20
_INDEX_LABEL = f"stat-index\0{CACHE_FORMAT}"



@functools.cache
def code_digest() -> str:
    """A hash of shardscan's own source, so a changed engine never replays an old engine's results
    (the version number alone does not change between development builds)."""
    h = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def options_digest(options: ScanOptions) -> str:
    """A hash of the scan options that can change results."""
    items = [
        (f.name, repr(getattr(options, f.name)))
        for f in dataclasses.fields(options)
        if f.name not in RESULT_NEUTRAL_OPTIONS
    ]
    return hashlib.sha256(repr(items).encode()).hexdigest()


def config_digest(ruleset: Ruleset, options: ScanOptions) -> str:
    """The part of every cache key that is not the shard's content."""
    parts = (
        CACHE_FORMAT, __version__, code_digest(), ruleset.digest, _rules_fingerprint(ruleset), options_digest(options)
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _rules_fingerprint(ruleset: Ruleset) -> str:
    # The rule set's own digest covers the detection fields; the full repr adds anything it leaves
    # out (a new field on a rule must not let an old result through).
    return hashlib.sha256(repr(ruleset.rules).encode()).hexdigest()


@dataclass(slots=True)
class CacheCounters:
    """What the cache did during one scan."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    uncacheable: int = 0
    # Entries (and stat indexes) present but not replayed: their seal did not verify or their
    # content did not parse. Each is also a miss.
    rejected: int = 0


@dataclass(slots=True)
class ResultCache:
    """Per-shard engine results on disk under ``root``, for one rule set and option set."""

    root: Path
    config: str
    clock: str
    # The key that seals entries (kept outside ``root``); None: nothing is read or stored.
    key: bytes | None = None
    counters: CacheCounters = field(default_factory=CacheCounters)
    rejected_shards: set[str] = field(default_factory=set)
    _hashes: dict[str, tuple[tuple[int, int, int, int], str]] = field(default_factory=dict)
    # By real path: [size, mtime_ns, ctime_ns, inode, sha256, settled] (a JSON list).
    _index: dict[str, list[Any]] | None = None

    @classmethod
    def open(cls, root: Path, ruleset: Ruleset, options: ScanOptions) -> ResultCache:
        """A cache in ``root`` (created on first store) for scans with this rule set and options."""
        return cls(Path(root), config_digest(ruleset, options), options.now.isoformat(), cache_key())

    # ---- lookup and store -----------------------------------------------------------------

    def lookup(self, shard: ShardRef) -> tuple[ShardResult | None, str | None]:
        """The replayed result for ``shard`` (or None) and its content hash (None: not cacheable)."""
        content = self.content_hash(shard) if self.key is not None else None
        if content is None:
            self.counters.uncacheable += 1
            return None, None
        result = self._load(content, shard.display)
        if result is None:
            self.counters.misses += 1
        else:
            self.counters.hits += 1
        return result, content

    def store(self, shard: ShardRef, content: str, result: ShardResult) -> bool:
        """Store a fresh, complete result; skip incomplete ones and shards that changed meanwhile."""
        if not result.complete or result.stats.cached_shards or self.key is None:
            return False
        if self._stat(shard.path) != self._hashes.get(shard.path, (None,))[0]:
            return False  # the file changed while it was scanned: the result may not match the hash
        try:
            payload = json.dumps(_encode(result, self.clock), ensure_ascii=False, sort_keys=True).encode("utf-8")
        except (TypeError, ValueError):
            return False  # a value the cache format cannot carry: scan it again next time
        path = self._entry_path(content)
        try:
            self._ensure_root()
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, seal(self.key, self._entry_label(content), payload))
        except OSError:
            return False  # a read-only or full cache never fails a scan
        self.counters.stored += 1
        return True

    def save_index(self) -> None:
        """Persist the stat → content-hash index (so unchanged files are not even re-hashed)."""
        if self._index is None or self.key is None:
            return
        try:
            self._ensure_root()
            payload = json.dumps(self._index, sort_keys=True).encode("utf-8")
            atomic_write(self._index_path(), seal(self.key, _INDEX_LABEL, payload))
        except OSError:
            pass

    # ---- content hashes -------------------------------------------------------------------

    def content_hash(self, shard: ShardRef) -> str | None:
        """SHA-256 of the shard's bytes (None for anything that is not a local regular file)."""
        if shard.filesystem is not None:
            return None  # a remote object: its path is not a local path, and hashing it would download it
        stat = self._stat(shard.path)
        if stat is None:
            return None
        index = self._load_index()
        real = os.path.realpath(shard.path)
        known = index.get(real)
        if known is not None and tuple(known[:4]) == stat and known[5]:
            digest: str = known[4]
            self._hashes[shard.path] = (stat, digest)
            return digest
        started = time.time()
        try:
            h = hashlib.sha256()
            with open(shard.path, "rb") as handle:
                while chunk := handle.read(_HASH_CHUNK):
                    h.update(chunk)
        except OSError:
            return None
        if self._stat(shard.path) != stat:
            return None  # being written right now: do not cache
        digest = h.hexdigest()
        settled = started - stat[1] / 1e9 > _RACY_SECONDS
        index[real] = [*stat, digest, settled]
        self._hashes[shard.path] = (stat, digest)
        return digest

    @staticmethod
    def _stat(path: str) -> tuple[int, int, int, int] | None:
        # ctime cannot be set back by a user (touching mtime changes it), so an in-place rewrite
        # that restores size and mtime is still noticed.
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not os.path.isfile(path):
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    def _load_index(self) -> dict[str, list[Any]]:
        if self._index is None:
            self._index = self._read_index()
        return self._index

    def _read_index(self) -> dict[str, list[Any]]:
        try:
            raw = self._index_path().read_bytes()
        except OSError:
            return {}
        # The index maps a file's stat to its content hash: a forged one would make a changed
        # shard replay another shard's result, so it is sealed like the entries.
        payload = unseal(self.key, _INDEX_LABEL, raw)
        try:
            data = json.loads(payload) if payload is not None else None
        except ValueError:
            data = None
        if isinstance(data, dict) and all(
            isinstance(v, list) and len(v) == 6 and isinstance(v[4], str) for v in data.values()
        ):
            return data
        self.counters.rejected += 1
        return {}

    # ---- layout ---------------------------------------------------------------------------

    def _entry_path(self, content: str) -> Path:
        return self.root / f"v{CACHE_FORMAT}" / self.config[:32] / content[:2] / f"{content}.json"

    def _index_path(self) -> Path:
        return self.root / f"v{CACHE_FORMAT}" / "stat-index.json"

    def _ensure_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by shardscan: the cache must never be committed\n*\n", encoding="utf-8")

    def _entry_label(self, content: str) -> str:
        # The seal names the entry it belongs to: an entry copied under another shard's hash or
        # another configuration's folder does not verify.
        return f"result\0{CACHE_FORMAT}\0{self.config}\0{content}"

    def _load(self, content: str, display: str) -> ShardResult | None:
        try:
            raw = self._entry_path(content).read_bytes()
        except OSError:
            return None  # absent: an ordinary miss
        payload = unseal(self.key, self._entry_label(content), raw)
        try:
            if payload is not None and (result := _decode(json.loads(payload), display, self.clock)) is not None:
                return result
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        if payload is None or not _clock_mismatch(payload, self.clock):
            # Damaged, forged or foreign (any shape of bytes): never replayed, scanned again.
            self.counters.rejected += 1
            self.rejected_shards.add(display)
        return None



# ---- entry format ----------------------------------------------------------------------------

_STATS_FIELDS = tuple(f.name for f in dataclasses.fields(ScanStats) if f.name not in ("seconds", "cached_shards"))
# "revealed" (plaintext under --show-secrets) never goes into the cache.
_FINDING_FIELDS = tuple(f.name for f in dataclasses.fields(Finding) if f.name not in ("location", "revealed"))


def _encode(result: ShardResult, clock: str) -> dict[str, Any]:
    """A complete engine result without its shard name (the same bytes may live under other names)."""
    findings = []
    for finding in result.findings:
        if finding.allowlist is not None or finding.status != Status.NEW:
            raise ValueError("only engine results (before reconciliation) are cached")
        item = {name: getattr(finding, name) for name in _FINDING_FIELDS}
        item["encoding"] = list(finding.encoding)
        item["verdict"] = str(finding.verdict)
        item["status"] = str(finding.status)
        loc = finding.location
        item["location"] = {"row": loc.row, "column": loc.column, "role": loc.role}
        findings.append(item)
    return {
        "format": CACHE_FORMAT,
        "clock": clock if result.stats.clock_findings else None,
        "stats": {name: getattr(result.stats, name) for name in _STATS_FIELDS},
        "findings": findings,
    }


def _clock_mismatch(payload: bytes, clock: str) -> bool:
    """Whether a verified entry was only left out because it holds verdicts of another clock."""
    try:
        data = json.loads(payload)
        return data.get("format") == CACHE_FORMAT and data["clock"] is not None and data["clock"] != clock
    except (ValueError, KeyError, TypeError, AttributeError):
        return False


def _decode(data: dict[str, Any], display: str, clock: str) -> ShardResult | None:
    if data.get("format") != CACHE_FORMAT:
        return None
    if data["clock"] is not None and data["clock"] != clock:
        return None  # verdicts decided by the clock: valid only for the clock they were decided at
    stats = ScanStats(**{name: data["stats"][name] for name in _STATS_FIELDS}, cached_shards=1)
    findings = []
    for item in data["findings"]:
        loc = item["location"]
        values = {name: item[name] for name in _FINDING_FIELDS}
        values["encoding"] = tuple(values["encoding"])
        values["verdict"] = Verdict(values["verdict"])
        values["severity"] = Severity(values["severity"])
        values["status"] = Status(values["status"])
        findings.append(Finding(location=CellLocation(display, loc["row"], loc["column"], loc["role"]), **values))
    return ShardResult(display, stats, tuple(findings), ())


def partition(
    cache: ResultCache, shards: Iterable[ShardRef]
) -> tuple[list[ShardResult], list[tuple[ShardRef, str | None]]]:
    """Split shards into replayed results and shards to scan (with their content hash, if cacheable)."""
    replayed: list[ShardResult] = []
    todo: list[tuple[ShardRef, str | None]] = []
    for shard in shards:
        result, content = cache.lookup(shard)
        if result is not None:
            replayed.append(result)
        else:
            todo.append((shard, content))
    return replayed, todo
