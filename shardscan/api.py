"""Library entry points: scan paths or in-memory tables and get a reconciled Report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from shardscan import executor
from shardscan.allowlist import Allowlist
from shardscan.cache import ResultCache, partition
from shardscan.engine import ScanOptions, Scanner
from shardscan.model import ScanIssue, ShardResult
from shardscan.policy import Policy
from shardscan.reader import ShardRef, discover
from shardscan.reconcile import apply_allowlist, apply_policy
from shardscan.report import Report, RuleInfo, build_report
from shardscan.ruleset import Ruleset, load_ruleset

ProgressCallback = Callable[[ShardResult], None]


def scan(
    paths: Iterable[str],
    *,
    ruleset: Ruleset | None = None,
    policy: Policy | None = None,
    options: ScanOptions | None = None,
    on_shard: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    allowlist: Allowlist | None = None,
    cache: str | Path | ResultCache | None = None,
    only: Callable[[ShardRef], bool] | None = None,
    jobs: int | None = 1,
) -> Report:
    """Scan files, folders and globs of shards and return the reconciled report.

    Findings an ``allowlist`` entry accepts are ``allowlisted`` and never block; the report's
    allowlist section says which entries matched, which are stale and which expired (as of
    ``options.now``). Never raises for bad data or findings: unreadable shards and missing paths
    are issues in the report (``report.exit_code`` 3), findings are in ``report.findings`` and
    ``report.blocking``. Configuration errors (bad rule files) raise ConfigError.

    ``cache`` is a cache folder (or an open ResultCache): shards whose bytes, rules, options and
    shardscan version are unchanged are replayed from it instead of read (see shardscan.cache).
    The allowlist and policy are applied after the cache, so changing them needs no re-reading.
    ``only`` keeps the discovered shards it returns True for (e.g. those changed since a commit).
    ``jobs`` worker processes scan (shard, row group) work items (``None``: all cores); the
    report is identical for any number of jobs.
    """
    ruleset = ruleset or load_ruleset()
    policy = policy or Policy()
    options = options or ScanOptions()
    started = time.perf_counter()
    shards, missing = discover(list(paths))
    if only is not None:
        shards = [s for s in shards if only(s)]
    extra = tuple(ScanIssue(p, "unreadable", "no such file, folder or glob match") for p in missing)
    if on_start:
        on_start(len(shards))
    scanner = Scanner(ruleset, options)
    # Revealed plaintext never goes into the cache, so a revealing scan reads everything afresh.
    if cache is None or options.reveal_secrets:
        results = scan_shards(shards, scanner, on_shard, jobs)
    else:
        store = cache if isinstance(cache, ResultCache) else ResultCache.open(Path(cache), ruleset, options)
        results = _scan_with_cache(shards, scanner, store, on_shard, jobs)
    return _finish(results, ruleset, policy, options, started, extra, allowlist)


def _scan_with_cache(
    shards: list[ShardRef],
    scanner: Scanner,
    cache: ResultCache,
    on_shard: ProgressCallback | None,
    jobs: int | None = 1,
) -> list[ShardResult]:
    """Replay unchanged shards from the cache, scan the rest, store their complete results."""
    replayed, todo = partition(cache, shards)
    for result in replayed:
        if on_shard:
            on_shard(result)
    fresh = scan_shards([shard for shard, _ in todo], scanner, on_shard, jobs)
    for (shard, content), result in zip(todo, fresh, strict=True):
        if content is not None:
            cache.store(shard, content, result)
    cache.save_index()
    return replayed + fresh


def scan_shards(
    shards: list[ShardRef], scanner: Scanner, on_shard: ProgressCallback | None = None, jobs: int | None = 1
) -> list[ShardResult]:
    """Scan shards with ``jobs`` processes (``None``: all cores); results in shard order."""
    return executor.scan_shards(shards, scanner, jobs or executor.default_jobs(), on_shard)


def scan_table(
    table: pa.Table,
    name: str = "<table>",
    *,
    ruleset: Ruleset | None = None,
    policy: Policy | None = None,
    options: ScanOptions | None = None,
    allowlist: Allowlist | None = None,
) -> Report:
    """Scan an in-memory pyarrow Table (e.g. right before uploading it) as one shard named ``name``."""
    ruleset = ruleset or load_ruleset()
    options = options or ScanOptions()
    started = time.perf_counter()
    result = Scanner(ruleset, options).scan_table(table, name)
    return _finish([result], ruleset, policy or Policy(), options, started, (), allowlist)


def _finish(
    results: list[ShardResult],
    ruleset: Ruleset,
    policy: Policy,
    options: ScanOptions,
    started: float,
    extra: tuple[ScanIssue, ...],
    allowlist: Allowlist | None = None,
) -> Report:
    scanned_at = options.now.astimezone(UTC) if options.now.tzinfo else options.now.replace(tzinfo=UTC)
    summary = None
    if allowlist is not None:
        results, summary = apply_allowlist(results, allowlist, scanned_at.date())
    results = apply_policy(results, policy)
    return build_report(
        results,
        policy,
        ruleset_digest=ruleset.digest,
        kinds=ruleset.kinds,
        scanned_at=scanned_at,
        seconds=time.perf_counter() - started,
        extra_issues=extra,
        rules=tuple(RuleInfo(r.id, r.kind, r.name, r.description, r.severity) for r in ruleset.rules),
        allowlist=summary,
    )


def now_utc() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)
