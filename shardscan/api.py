"""Library entry points: scan paths or in-memory tables and get a reconciled Report."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from shardscan.allowlist import Allowlist
from shardscan.cache import ResultCache
from shardscan.engine import Scanner
from shardscan.hyperscan_matcher import PATTERN_CACHE_DIR
from shardscan.known_secrets import KIND as KNOWN_KIND
from shardscan.known_secrets import RULE_ID as KNOWN_RULE
from shardscan.known_secrets import KnownSecret
from shardscan.model import IssueKind, ScanIssue, Severity, ShardResult
from shardscan.options import ScanOptions
from shardscan.policy import Policy
from shardscan.reader import ShardRef, discover_files
from shardscan.reconcile import apply_allowlist, apply_policy
from shardscan.report import ExclusionCount, FileCounts, KnownSecretSummary, Report, RuleInfo, build_report
from shardscan.ruleset import Ruleset, load_ruleset
from shardscan.run import ProgressCallback, check_engine, run_shards


def scan(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
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
    engine: str = "local",
    ray_address: str | None = None,
    exclude: Sequence[str] = (),
    ignore_patterns: Sequence[str] = (),
) -> Report:
    """Scan files, folders, globs and filesystem URLs of shards and return the reconciled report.

    ``engine`` is ``"local"`` (this process) or ``"ray"`` (Ray tasks, one per Parquet row group or
    streamed shard, on the cluster at ``ray_address`` or a local Ray). Findings an ``allowlist``
    entry accepts are ``allowlisted`` and never block; the report's allowlist section says which
    entries matched, which are stale and which expired (as of ``options.now``). Never raises for
    bad data or findings: unreadable shards and paths or URLs that yield nothing are issues in the
    report (``report.exit_code`` 3), findings are in ``report.findings`` and ``report.blocking``.
    Configuration errors (bad rule files, an engine that is not installed) raise ConfigError.

    ``cache`` is a cache folder (or an open ResultCache): shards whose bytes, rules, options and
    shardscan version are unchanged are replayed from it instead of read (see shardscan.cache;
    only local files are cached; entries are sealed with a key kept outside the folder, and compiled
    patterns are reused from its ``hyperscan/``; without ``cache`` no local state is read). The
    allowlist and policy are applied after the cache, so
    changing them needs no re-reading. ``only`` keeps the discovered shards it returns True for
    (e.g. those changed since a commit). ``jobs`` worker processes scan (shard, row group) work
    items locally (``None``: all cores); the report is identical for any number of jobs.

    ``paths`` is one path (a ``str`` or ``Path``) or several. Every file under them is accounted
    for (``shardscan.reader.discovery``): scanned (shards, text, CSV, tar members), excluded by a
    default, by an ``exclude`` glob or by a ``.shardscanignore`` (``ignore_patterns`` are lines of
    one the caller read), or not scanned (a binary file: an issue, exit 3). A path that yields no
    file, and a run that scans nothing, are incomplete too. Raises MissingDependencyError (a
    ConfigError) when a URL needs a package that is not installed.
    """
    check_engine(engine)  # (a configuration error is raised before any file is read)
    ruleset = ruleset or load_ruleset()
    policy = policy or Policy()
    options = options or ScanOptions()
    if cache is not None and not options.reveal_secrets and options.pattern_cache is None:
        # Compiled pattern databases live next to the results, sealed the same way; without a
        # cache (``--no-cache``) they are compiled in memory and no file is read.
        folder = cache.root if isinstance(cache, ResultCache) else Path(cache)
        options = replace(options, pattern_cache=folder / PATTERN_CACHE_DIR)
    started = time.perf_counter()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    given = [os.fspath(p) for p in paths]
    found = discover_files(given, exclude, ignore_patterns)
    shards = list(found.shards)
    if only is not None:
        shards = [s for s in shards if only(s)]
    extra = tuple(ScanIssue(p.path, IssueKind.UNREADABLE, p.reason) for p in found.unresolved)
    extra += tuple(ScanIssue(n.path, IssueKind.NOT_SCANNED, n.reason) for n in found.not_scanned)
    # Files named one by one and all excluded (a commit of excluded files only) leave nothing to do.
    only_excluded_files = bool(found.excluded) and not found.unresolved and not found.not_scanned
    if not shards and only is None and not only_excluded_files and (policy.skip_unreadable or not extra):
        # Nothing read is no evidence of anything: never a pass, even when --skip-unreadable lets
        # the paths that yielded nothing pass (otherwise they already make the scan incomplete).
        named = ", ".join(given) if given else "(no path given)"
        extra += (ScanIssue(named, IssueKind.NOTHING_SCANNED, "no file was scanned"),)
    files = FileCounts(
        scanned=len(shards),
        excluded=tuple(ExclusionCount(str(source), n) for source, n in found.excluded_by().items()),
        not_scanned=found.not_scanned,
    )
    if on_start:
        on_start(len(shards))
    scanner = Scanner(ruleset, options)
    # Revealed plaintext never goes into the cache, so a revealing scan reads everything afresh.
    store = None
    if cache is not None and not options.reveal_secrets:
        store = cache if isinstance(cache, ResultCache) else ResultCache.open(Path(cache), ruleset, options)
    results = run_shards(shards, scanner, engine=engine, jobs=jobs, ray_address=ray_address, on_shard=on_shard,
                         cache=store)
    return _finish(results, ruleset, policy, options, started, extra, allowlist, files)


def scan_table(
    table: object,
    name: str = "<table>",
    *,
    ruleset: Ruleset | None = None,
    policy: Policy | None = None,
    options: ScanOptions | None = None,
    allowlist: Allowlist | None = None,
) -> Report:
    """Scan in-memory data (e.g. right before ``push_to_hub``) as one shard named ``name``.

    ``table`` is a ``pyarrow.Table`` or ``RecordBatch``, a Hugging Face ``datasets.Dataset``
    (read zero-copy through its Arrow table), anything with a ``to_arrow()`` method (Polars), or a
    mapping of names to those (a ``DatasetDict``: each split is a shard named ``name/split``).
    Rows are numbered from 0 in the order the object presents them.
    """
    ruleset = ruleset or load_ruleset()
    options = options or ScanOptions()
    started = time.perf_counter()
    scanner = Scanner(ruleset, options)
    results = [scanner.scan_table(tbl, shard) for shard, tbl in as_tables(table, name)]
    return _finish(results, ruleset, policy or Policy(), options, started, (), allowlist)


def as_tables(data: object, name: str) -> list[tuple[str, pa.Table]]:
    """Turn in-memory data into named pyarrow Tables; raise TypeError naming what is not supported."""
    if isinstance(data, pa.Table):
        return [(name, data)]
    if isinstance(data, pa.RecordBatch):
        return [(name, pa.Table.from_batches([data]))]
    if isinstance(data, Mapping):
        return [(f"{name}/{key}", tbl) for key, value in data.items() for _, tbl in as_tables(value, str(key))]
    table = _dataset_table(data)
    if table is not None:
        return [(name, table)]
    to_arrow = getattr(data, "to_arrow", None)
    if callable(to_arrow):
        table = to_arrow()
        if isinstance(table, pa.Table):
            return [(name, table)]
    hint = "; to scan files, folders or URLs use shardscan.scan()" if isinstance(data, (str, os.PathLike)) else ""
    raise TypeError(
        f"scan_table: cannot read a {type(data).__module__}.{type(data).__qualname__}; "
        "pass a pyarrow.Table or RecordBatch, a datasets.Dataset or DatasetDict, an object with to_arrow() "
        f"(e.g. a polars.DataFrame), or a mapping of names to those{hint}"
    )


def _dataset_table(data: object) -> pa.Table | None:
    """The rows of a Hugging Face ``datasets.Dataset``, duck-typed (no import of ``datasets``).

    Its ``.data.table`` is the backing Arrow table (memory-mapped, zero-copy). After ``select``,
    ``shuffle`` or ``filter`` the dataset is a view through an indices mapping over that table;
    then the rows are taken in the view's order through ``with_format("arrow")``.
    """
    backing = getattr(getattr(data, "data", None), "table", None)
    if not isinstance(backing, pa.Table):
        return None
    if getattr(data, "_indices", None) is None:
        return backing
    with_format = getattr(data, "with_format", None)
    if callable(with_format):
        view = with_format("arrow")[:]
        if isinstance(view, pa.Table):
            return view
    raise TypeError("scan_table: this Dataset is a view with an indices mapping; call .flatten_indices() first")


def _finish(
    results: list[ShardResult],
    ruleset: Ruleset,
    policy: Policy,
    options: ScanOptions,
    started: float,
    extra: tuple[ScanIssue, ...],
    allowlist: Allowlist | None = None,
    files: FileCounts | None = None,
) -> Report:
    scanned_at = options.now.astimezone(UTC) if options.now.tzinfo else options.now.replace(tzinfo=UTC)
    summary = None
    if allowlist is not None:
        results, summary = apply_allowlist(results, allowlist, scanned_at.date())
    results = apply_policy(results, policy)
    rules = tuple(RuleInfo(r.id, r.kind, r.name, r.description, r.severity) for r in ruleset.rules)
    if options.known_secrets:
        rules += (KNOWN_SECRET_RULE,)
    return build_report(
        results,
        policy,
        ruleset_digest=ruleset.digest,
        kinds=ruleset.kinds,
        scanned_at=scanned_at,
        seconds=time.perf_counter() - started,
        extra_issues=extra,
        rules=rules,
        allowlist=summary,
        files=files,
        known_secrets=known_secret_summaries(results, options.known_secrets),
    )


KNOWN_SECRET_RULE = RuleInfo(
    KNOWN_RULE, KNOWN_KIND, "A secret you named (--known-secrets)",
    "An occurrence, in any decoded form, of a value listed in a --known-secrets file (an environment "
    "variable, a file's content, or a SHA-256 fingerprint).", Severity.CRITICAL,
)


def known_secret_summaries(
    results: list[ShardResult], entries: tuple[KnownSecret, ...]
) -> tuple[KnownSecretSummary, ...]:
    """Per entry: the cells the scan searched (every string cell read) and the occurrences found."""
    cells = sum(r.stats.cells for r in results)
    found: dict[str, int] = {}
    for result in results:
        for finding in result.findings:
            if finding.rule_id == KNOWN_RULE:
                found[finding.fingerprint] = found.get(finding.fingerprint, 0) + finding.count
    return tuple(KnownSecretSummary(e.label, cells, found.get(e.fingerprint, 0)) for e in entries)


def now_utc() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)
