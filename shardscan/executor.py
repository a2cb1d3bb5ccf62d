"""Run a scan as independent (shard, row group) work items, in this process or in worker processes.

The unit of work is a :class:`WorkItem`: a shard reference and a row-group index (``FOOTER`` for the
file's key/value metadata, ``STREAM`` for a whole shard of a format that can only be read in order:
JSON Lines, Arrow IPC). :func:`plan_shard` reads a Parquet shard's footer and lists its items;
:func:`scan_item` is a plain top-level function that scans one item with a :class:`Scanner`;
:func:`assemble` turns one shard's item results back into the :class:`ShardResult` a sequential
scan gives. Another engine (for example a cluster scheduler) only has to ship the Scanner once per
worker, call ``scan_item`` on items and hand the results back in item order.

Output never depends on the number of workers: results are consumed in item order, findings are
sorted, and issues keep the order of the items that raised them.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.engine import Scanner, _Timer, cap_shard_findings
from shardscan.errors import ShardReadError, describe_exception
from shardscan.filescan import FILE_SCANNERS
from shardscan.model import Finding, IssueKind, ScanIssue, ScanStats, ShardResult
from shardscan.reader import ShardRef
from shardscan.reader.lfs import lfs_pointer_reason
from shardscan.reader.parquet import open_parquet
from shardscan.reader.parquet_integrity import STATISTICS_COLUMN
from shardscan.verifiers import prepare_verifiers

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

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


def default_jobs() -> int:
    """All cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


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
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE, f"not a readable Parquet file ({describe_exception(exc)})")
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
            parquet = open_parquet(shard)
        self._open[key] = parquet
        while len(self._open) > self.size:
            self._open.pop(next(iter(self._open)))
        return parquet


def scan_item(scanner: Scanner, item: WorkItem, footers: FooterCache | None = None) -> ItemResult:
    """Scan one work item. Never raises: unreadable data and engine errors become issues."""
    started = time.perf_counter()
    timer = _Timer()
    shard = item.shard
    row_group = None if item.row_group in (FOOTER, STREAM) else item.row_group
    try:
        if item.row_group == STREAM:
            scan_file = FILE_SCANNERS.get(shard.format)
            if scan_file is not None:  # text, CSV/TSV, tar: see shardscan.filescan
                findings, issues, stats = scan_file(scanner, shard, timer)
            else:
                findings, issues, stats = scanner.scan_stream(shard, timer)
            stats = replace(stats, seconds=time.perf_counter() - started)
            return ItemResult(item, tuple(findings), tuple(issues), stats, tuple(sorted(timer.totals.items())))
        parquet = (footers or FooterCache()).get(shard)
        timer.add("read", started)
        if item.row_group == FOOTER:
            findings, issues, stats = scanner.scan_footer(shard.display, parquet, timer)
        else:
            findings, issues, stats = scanner.scan_row_group(shard, parquet, item.row_group, timer)
    except ShardReadError as err:
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE, err.reason, row_group=row_group)
        return ItemResult(item, issues=(issue,), stats=ScanStats(seconds=time.perf_counter() - started),
                          timings=tuple(sorted(timer.totals.items())))
    except Exception as exc:  # fail closed: an engine bug makes the item incomplete, not the run a crash
        issue = ScanIssue(shard.display, IssueKind.UNREADABLE, f"internal error ({describe_exception(exc)})", row_group)
        return ItemResult(item, issues=(issue,), stats=ScanStats(seconds=time.perf_counter() - started))
    stats = replace(stats, seconds=time.perf_counter() - started)
    return ItemResult(item, tuple(findings), tuple(issues), stats, tuple(sorted(timer.totals.items())))


def assemble(plan: ShardPlan, results: Iterable[ItemResult], finding_cap: int | None = None) -> ShardResult:
    """One shard's ShardResult from its plan and its items' results (in item order).

    With ``finding_cap`` (``Scanner.shard_finding_cap``), findings beyond it are aggregated and
    the shard gets a "truncated" issue (see ``engine.cap_shard_findings``).
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
    failed = {i.row_group for r in results if r.item.row_group != FOOTER for i in r.issues if i.row_group is not None}
    for result in results:
        findings += result.findings
        issues += [i for i in result.issues if result.item.row_group != FOOTER or i.row_group not in failed]
        stats += result.stats
        for stage, seconds in result.timings:
            timings[stage] = timings.get(stage, 0.0) + seconds
    if finding_cap is not None:
        findings, truncated = cap_shard_findings(findings, finding_cap, plan.shard.display)
        issues += truncated
    return ShardResult(
        plan.shard.display,
        stats,
        tuple(sorted(_without_shadowed_statistics(findings), key=Finding.sort_key)),
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


# ---- running items -------------------------------------------------------------------------------

def _init_worker() -> None:
    # The workers are the parallelism: pyarrow's own thread pools (one thread per core in every
    # worker) would only oversubscribe the cores.
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    # Ctrl-C reaches the whole process group: the parent answers it (and stops the workers);
    # a worker would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_main(conn: Connection, scanner: Scanner) -> None:
    """A worker process: scan the (index, item) pairs received until told to stop (None) or the
    parent is gone, sending back (index, result)."""
    _init_worker()
    footers = FooterCache()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, item = message
        conn.send((index, scan_item(scanner, item, footers)))


def _context() -> BaseContext:
    """How worker processes start: ``fork`` on Linux, else ``forkserver``/``spawn``.

    fork starts a worker in milliseconds with every module already imported (forkserver and spawn
    re-import pyarrow, about a second per scan, which dominates hook- and gate-sized scans). Before
    the pool starts, the parent has only read footers and compiled patterns; pyarrow resets its
    thread pools in a forked child. ``SHARDSCAN_START_METHOD`` overrides the choice (an escape
    hatch for platforms where fork misbehaves).
    """
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    method = os.environ.get("SHARDSCAN_START_METHOD", "")
    if method not in methods:
        method = "fork" if sys.platform == "linux" and "fork" in methods else (
            "forkserver" if "forkserver" in methods else "spawn"
        )
    return multiprocessing.get_context(method)


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """Keep the garbage collector of forked workers off the heap they inherit.

    Everything alive before the fork (modules, compiled rules, the scanner) lives as long as a
    worker does, yet each worker's first full collection would walk all of it (30-60 ms) and
    write to every page holding it, copying memory the worker shares with this process. Frozen
    objects are left out of collections; this process unfreezes them once the workers are forked,
    unless they were frozen before (the command line freezes its start-up heap for good).
    """
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


def run_items(scanner: Scanner, items: list[WorkItem], jobs: int = 1) -> Iterator[ItemResult]:
    """Scan work items and yield their results in item order, using up to ``jobs`` processes.

    If a worker process dies (killed for memory, or a crash inside a native library), the item
    it was scanning is reported unreadable rather than silently dropped; the other workers go on
    (and scan the items that worker had waiting).
    """
    requested = max(1, jobs)
    jobs = min(requested, max(1, len(items)))
    # The workers share the memory budget. Each is one core: pyarrow's thread pool may only use
    # requested cores left without a worker (``--jobs 1`` is one core, like ``make -j1``).
    scanner = scanner.for_workers(jobs, read_threads=requested > jobs)
    if jobs == 1:
        footers = FooterCache()
        for item in items:
            yield scan_item(scanner, item, footers)
        return
    # What every worker would otherwise load for itself on its first candidate, loaded once here.
    prepare_verifiers()
    scanner.keywords.warm()
    yield from _WorkerPool(scanner, jobs).run(items)


class _WorkerPool:
    """Worker processes fed through one pipe each, with the results read back in this thread.

    Deliberately small: ``concurrent.futures``' pool spends about half a millisecond of this
    process's CPU per work item on its helper threads, locks and futures (0.11 s for 200 items),
    CPU the workers lack while they use every core. Here each worker holds at most
    :data:`IN_FLIGHT` items (one scanning, one waiting, so it never idles on a round trip), and
    results are put back in item order as they arrive.
    """

    IN_FLIGHT = 2

    def __init__(self, scanner: Scanner, jobs: int) -> None:
        self.scanner = scanner
        self.jobs = jobs

    def run(self, items: list[WorkItem]) -> Iterator[ItemResult]:
        import multiprocessing.connection

        context = _context()
        workers: dict[Connection, tuple[BaseProcess, list[int]]] = {}  # by connection: process, items held
        finished = False
        try:
            with _frozen_heap():
                for _ in range(self.jobs):  # fork workers start here
                    mine, theirs = context.Pipe()
                    process = context.Process(target=_worker_main, args=(theirs, self.scanner), daemon=True)
                    process.start()
                    theirs.close()  # a worker's death must read as the end of its pipe
                    workers[mine] = (process, [])
            todo = deque(range(len(items)))
            done: dict[int, ItemResult] = {}
            for conn in list(workers):
                self._feed(conn, workers, todo, items, done)
            for index in range(len(items)):
                while index not in done:
                    if not workers:  # every worker died: nothing can scan what is left
                        while todo:
                            rest = todo.popleft()
                            done[rest] = _died(items[rest])
                        break
                    for conn in multiprocessing.connection.wait(list(workers)):
                        self._receive(conn, workers, todo, items, done)
                yield done.pop(index)
            finished = True
        finally:
            self._stop(workers, finished)

    def _feed(self, conn: Connection, workers: dict, todo: deque[int], items: list[WorkItem],
              done: dict[int, ItemResult]) -> None:
        """Top up a worker's items to IN_FLIGHT, in item order."""
        held = workers[conn][1]
        while len(held) < self.IN_FLIGHT and todo:
            index = todo.popleft()
            try:
                conn.send((index, items[index]))
            except (OSError, ValueError):  # the worker is gone: the item goes to another one
                todo.appendleft(index)
                self._bury(conn, workers, todo, done, items)
                return
            held.append(index)

    def _receive(self, conn: Connection, workers: dict, todo: deque[int], items: list[WorkItem],
                 done: dict[int, ItemResult]) -> None:
        if conn not in workers:
            return
        try:
            index, result = conn.recv()
        except (EOFError, OSError):
            self._bury(conn, workers, todo, done, items)
            for other in list(workers):  # the items it had waiting go to the workers left
                self._feed(other, workers, todo, items, done)
            return
        workers[conn][1].remove(index)
        done[index] = result
        self._feed(conn, workers, todo, items, done)

    @staticmethod
    def _bury(conn: Connection, workers: dict, todo: deque[int], done: dict[int, ItemResult],
              items: list[WorkItem]) -> None:
        """A dead worker: the item it was scanning (the first it held) is unreadable, the ones it
        had waiting go back to the front of the queue; its pipe is closed."""
        process, held = workers.pop(conn)
        if held:
            done[held[0]] = _died(items[held[0]])
            todo.extendleft(reversed(held[1:]))
        conn.close()
        process.join(timeout=1)

    @staticmethod
    def _stop(workers: dict, finished: bool) -> None:
        """Stop every worker: idle ones are told to, and a scan cut short (Ctrl-C, an error while
        reading results) ends the ones still scanning at once. None is left behind."""
        for conn in workers:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for conn, (process, _held) in workers.items():
            process.join(timeout=5 if finished else 0)
            if process.is_alive():
                process.terminate()
                process.join()
            conn.close()


def _died(item: WorkItem) -> ItemResult:
    row_group = None if item.row_group in (FOOTER, STREAM) else item.row_group
    reason = "worker process died while scanning (out of memory or a crash in a native library)"
    return ItemResult(item, issues=(ScanIssue(item.shard.display, IssueKind.UNREADABLE, reason, row_group),))


def scan_shards(
    shards: list[ShardRef],
    scanner: Scanner,
    jobs: int = 1,
    on_shard: Callable[[ShardResult], None] | None = None,
) -> list[ShardResult]:
    """Scan shards over (shard, row group) work items with ``jobs`` processes; results in shard order."""
    plans = [plan_shard(shard) for shard in shards]
    items = [item for plan in plans for item in plan.items]
    results = run_items(scanner, items, jobs)
    try:
        return _collect(plans, results, on_shard, scanner.shard_finding_cap())
    finally:
        # Close the item generator now, while the interpreter is whole: it holds open pyarrow
        # files (and, with jobs > 1, a process pool) that must not be torn down at exit.
        results.close()


def _collect(
    plans: list[ShardPlan], results: Iterator[ItemResult], on_shard: Callable[[ShardResult], None] | None,
    finding_cap: int | None = None,
) -> list[ShardResult]:
    out: list[ShardResult] = []
    for plan in plans:
        shard_results = [next(results) for _ in plan.items]
        result = assemble(plan, shard_results, finding_cap)
        out.append(result)
        log_shard(result)
        if on_shard:
            on_shard(result)
    return out


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
        where = "".join(
            f" {label} {value}" for label, value in (("row group", issue.row_group), ("row", issue.row)) if value is not None
        )
        log.warning("%s%s%s: [%s] %s", issue.shard, where, f" {issue.column}" if issue.column else "", issue.kind,
                    issue.message)
