"""Library entry points: scan paths or in-memory tables and get a reconciled Report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

import pyarrow as pa

from shardscan.allowlist import Allowlist
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
) -> Report:
    """Scan files, folders and globs of shards and return the reconciled report.

    Findings an ``allowlist`` entry accepts are ``allowlisted`` and never block; the report's
    allowlist section says which entries matched, which are stale and which expired (as of
    ``options.now``). Never raises for bad data: unreadable shards and missing paths are issues
    in the report (exit code 3). Configuration errors (bad rule files) raise ConfigError.
    """
    ruleset = ruleset or load_ruleset()
    policy = policy or Policy()
    options = options or ScanOptions()
    started = time.perf_counter()
    shards, missing = discover(list(paths))
    extra = tuple(ScanIssue(p, "unreadable", "no such file, folder or glob match") for p in missing)
    if on_start:
        on_start(len(shards))
    results = scan_shards(shards, Scanner(ruleset, options), on_shard)
    return _finish(results, ruleset, policy, options, started, extra, allowlist)


def scan_shards(shards: list[ShardRef], scanner: Scanner, on_shard: ProgressCallback | None = None) -> list[ShardResult]:
    """Scan shards one after another, in order."""
    results = []
    for shard in shards:
        result = scanner.scan_shard(shard)
        results.append(result)
        if on_shard:
            on_shard(result)
    return results


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
