"""A shard as independent work items: plan them, scan one, assemble a shard's results (shared by every executor).

The unit of work is a :class:`WorkItem`: a shard reference and a row-group index (``FOOTER`` for the
file's key/value metadata, ``STREAM`` for a whole shard of a format that can only be read in order:
JSON Lines, Arrow IPC, text, CSV, tar). :func:`plan_shard` reads a Parquet shard's footer and lists
its items; :func:`scan_item` is a plain top-level function that scans one item with a Scanner;
:func:`assemble` turns one shard's item results back into its :class:`ShardResult`.
:func:`scan_shard_in_process` does all three in this process: ``Scanner.scan_shard`` and a tar
archive's members use it, the executors (``shardscan.executor``, ``shardscan.engines.ray_engine``)
run the same items elsewhere.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import pyarrow.parquet as pq

from shardscan.errors import ShardReadError, describe_exception
from shardscan.filescan import FILE_SCANNERS
from shardscan.model import BatchResult, Finding, IssueKind, ScanIssue, ScanStats, ShardResult
from shardscan.reader import ShardRef
from shardscan.reader.lfs import lfs_pointer_reason
from shardscan.reader.parquet import open_parquet
from shardscan.reader.parquet_integrity import STATISTICS_COLUMN
from shardscan.scanning.caps import cap_shard_findings
from shardscan.scanning.protocol import ShardScanner
from shardscan.scanning.values import Timer

log = logging.getLogger(__name__)

STATISTICS_PREFIX = STATISTICS_COLUMN + "."
FOOTER = -1  # row-group index of the work item that scans the file's key/value metadata
STREAM = -2  # row-group index of the work item that scans a whole sequential shard (JSONL, Arrow IPC)


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One unit of scanning: a row group of a shard, its file metadata (``row_group == FOOTER``), or a
    whole shard that is read as one stream (``row_group == STREAM``)."""

    shard: ShardRef
    row_group: int


@dataclass(frozen=True, slots=True)
class ItemResult:
    """What scanning one work item produced (no plaintext: findings carry previews and hashes)."""

    item: WorkItem
    findings: tuple[Finding, ...] = ()
    issues: tuple[ScanIssue, ...] = ()
    stats: ScanStats = field(default_factory=ScanStats)
    timings: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """A shard's work items, or the issue that made the shard unreadable before any item could run."""

    shard: ShardRef
    items: tuple[WorkItem, ...] = ()
    issue: ScanIssue | None = None
    seconds: float = 0.0


def plan_shard(shard: ShardRef) -> ShardPlan:
    """Read a shard's footer and list its work items (metadata first, then row groups in order)."""
    started = time.perf_counter()
    # A Git LFS pointer checked out in place of the shard must fail loudly, never scan "clean".
    if (reason := lfs_pointer_reason(shard)) is not None:
        return ShardPlan(shard, issue=ScanIssue(shard.display, IssueKind.UNREADABLE, reason),
                         seconds=time.perf_counter() - started)
    if shard.format != "parquet":
        # Compressed JSON Lines, Arrow IPC streams, text files and tar archives cannot be split:
        # the whole file is one item.
        return ShardPlan(shard, (WorkItem(shard, STREAM),), seconds=time.perf_counter() - started)
    try:
        parquet = open_parquet(shard)
        count = parquet.metadata.num_row_groups
    except ShardReadError as err:
        return ShardPlan(shard, issue=ScanIssue(shard.display, IssueKind.UNREADABLE, err.reason),
                         seconds=time.perf_counter() - started)
    except Exception as exc:  # a footer that parses but cannot be walked
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE,
                          f"not a readable Parquet file ({describe_exception(exc)})")
        return ShardPlan(shard, issue=issue, seconds=time.perf_counter() - started)
    # The footer item always runs: besides key/value metadata it checks the file's layout and scans
    # the column statistics.
    items = [WorkItem(shard, FOOTER)] + [WorkItem(shard, i) for i in range(count)]
    return ShardPlan(shard, tuple(items), seconds=time.perf_counter() - started)


class FooterCache:
    """The most recently opened shards of one worker, so consecutive row groups of a shard share a footer."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._open: dict[str, pq.ParquetFile] = {}  # by display name and path

    def get(self, shard: ShardRef) -> pq.ParquetFile:
        """The opened shard (raises ShardReadError when it cannot be opened)."""
        # Path alone is not unique across filesystems (a bucket key can equal a local path), nor is
        # the display name across scanned folders; the pair is.
        key = f"{shard.display}\0{shard.path}"
        parquet = self._open.pop(key, None)
        if parquet is None:
            # plan_shard opened it with the footer check: a footer that could crash pyarrow never
            # becomes work items.
            parquet = open_parquet(shard, check_footer=False)
        self._open[key] = parquet
        while len(self._open) > self.size:
            self._open.pop(next(iter(self._open)))
        return parquet


def scan_item(scanner: ShardScanner, item: WorkItem, footers: FooterCache | None = None) -> ItemResult:
    """Scan one work item. Never raises: unreadable data and engine errors become issues."""
    started = time.perf_counter()
    timer = Timer()
    shard = item.shard
    row_group = None if item.row_group in (FOOTER, STREAM) else item.row_group
    try:
        if item.row_group == STREAM:
            scan_file = FILE_SCANNERS.get(shard.format)
            # Text, CSV/TSV and tar (see shardscan.filescan), else a columnar stream (JSON Lines, Arrow IPC).
            found = scan_file(scanner, shard, timer) if scan_file is not None else scanner.scan_stream(shard, timer)
            return _item_result(item, found, started, timer)
        parquet = (footers or FooterCache()).get(shard)
        timer.add("read", started)
        if item.row_group == FOOTER:
            found = scanner.scan_footer(shard.display, parquet, timer)
        else:
            found = scanner.scan_row_group(shard, parquet, item.row_group, timer)
    except ShardReadError as err:
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE, err.reason, row_group=row_group)
        return ItemResult(item, issues=(issue,), stats=ScanStats(seconds=time.perf_counter() - started),
                          timings=tuple(sorted(timer.totals.items())))
    except Exception as exc:  # fail closed: an engine bug makes the item incomplete, not the run a crash
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE, f"internal error ({describe_exception(exc)})", row_group)
        return ItemResult(item, issues=(issue,), stats=ScanStats(seconds=time.perf_counter() - started))
    return _item_result(item, found, started, timer)


def _item_result(item: WorkItem, found: BatchResult, started: float, timer: Timer) -> ItemResult:
    stats = replace(found.stats, seconds=time.perf_counter() - started)
    return ItemResult(item, found.findings, found.issues, stats, tuple(sorted(timer.totals.items())))


def assemble(plan: ShardPlan, results: Iterable[ItemResult], finding_cap: int | None = None) -> ShardResult:
    """One shard's ShardResult from its plan and its items' results (in item order).

    With ``finding_cap`` (``Scanner.shard_finding_cap``), findings beyond it are aggregated and
    the shard gets a "truncated" issue (see ``scanning.caps.cap_shard_findings``).
    """
    if plan.issue is not None:
        return ShardResult(plan.shard.display, ScanStats(shards=1, seconds=plan.seconds), (), (plan.issue,))
    findings: list[Finding] = []
    issues: list[ScanIssue] = []
    stats = ScanStats(shards=1, seconds=plan.seconds)
    timings: dict[str, float] = {"read": plan.seconds}
    results = list(results)
    # A row group its own item could not read is reported once, by that item: the footer item's
    # page checks of the same row group describe the same damage.
    # (Only "unreadable" counts: a cell's limit hit in that row group says nothing of its pages.)
    failed = {i.row_group for r in results if r.item.row_group != FOOTER for i in r.issues
              if i.row_group is not None and i.kind == IssueKind.UNREADABLE}
    for result in results:
        findings += result.findings
        issues += [i for i in result.issues if result.item.row_group != FOOTER
                   or i.kind != IssueKind.UNREADABLE or i.row_group not in failed]
        stats += result.stats
        for stage, seconds in result.timings:
            timings[stage] = timings.get(stage, 0.0) + seconds
    # Statistics repeating a cell's secret are dropped before the cap, which counts distinct findings.
    findings = _without_shadowed_statistics(findings)
    if finding_cap is not None:
        findings, truncated = cap_shard_findings(findings, finding_cap, plan.shard.display)
        issues += truncated
    return ShardResult(
        plan.shard.display,
        stats,
        tuple(sorted(findings, key=Finding.sort_key)),
        tuple(_without_shadowed_statistics_issues(issues)),
        tuple(sorted(timings.items())),
    )


def _without_shadowed_statistics(findings: list[Finding]) -> list[Finding]:
    """Drop findings in column statistics whose secret was also found in the shard's cells.

    Statistics repeat cell values; a secret found in both is one secret, reported where it can be
    fixed (its cell: rewriting the shard rewrites the statistics). A secret found only in the
    statistics (its cell is gone, or was never read) stays reported there.
    """
    in_cells = {f.fingerprint for f in findings if not f.location.column.startswith(STATISTICS_PREFIX)}
    return [f for f in findings
            if not (f.location.column.startswith(STATISTICS_PREFIX) and f.fingerprint in in_cells)]


def _without_shadowed_statistics_issues(issues: list[ScanIssue]) -> list[ScanIssue]:
    """Drop limit hits in column statistics that a cell of the shard already hit the same way: the
    statistics repeat cell values, and the cell's issue already makes the scan incomplete."""
    in_cells = {(i.kind, i.message) for i in issues if not (i.column or "").startswith(STATISTICS_PREFIX)}
    return [i for i in issues
            if not ((i.column or "").startswith(STATISTICS_PREFIX) and (i.kind, i.message) in in_cells)]


def scan_shard_in_process(scanner: ShardScanner, shard: ShardRef) -> ShardResult:
    """Plan, scan and assemble one shard's items here, one after the other (the result a parallel scan gives)."""
    plan = plan_shard(shard)
    # One process, one core: pyarrow's thread pool reads only when more cores were asked for.
    worker = scanner.for_workers(1, read_threads=False)
    footers = FooterCache()
    result = assemble(plan, [scan_item(worker, item, footers) for item in plan.items], scanner.shard_finding_cap())
    log_shard(result)
    return result


def log_shard(result: ShardResult, cached: bool = False) -> None:
    """Log a shard's counts (-v), findings (-vv) and problems, whether it was scanned or replayed
    from the result cache. Locations, counts and reasons only: log lines end up in CI logs."""
    s = result.stats
    log.info("%s: %d row group(s), %d rows, %d cells, %d candidate cells, %d finding(s)%s",
             result.shard, s.row_groups, s.rows, s.cells, s.candidate_cells, len(result.findings),
             " (from cache)" if cached else "")
    for finding in result.findings:
        loc = finding.location
        log.debug("%s row %d %s: %s %s (%s)", loc.shard, loc.row, loc.column, finding.rule_id, finding.preview,
                  finding.verdict)
    for issue in result.issues:
        places = (("row group", issue.row_group), ("row", issue.row))
        where = "".join(f" {label} {value}" for label, value in places if value is not None)
        log.warning("%s%s%s: [%s] %s", issue.shard, where, f" {issue.column}" if issue.column else "", issue.kind,
                    issue.message)
