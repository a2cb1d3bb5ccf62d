"""Run a scan's work items in this process or in worker processes (the local executor).

The work items, their planning, the scanning of one item and the assembly of a shard's results live
in :mod:`shardscan.scanning.items` (re-exported here: another engine, for example a cluster
scheduler, only has to ship the Scanner once per worker, call ``scan_item`` on items and hand the
results back in item order). This module runs them: :func:`run_items` with up to ``jobs`` worker
processes, :func:`run_local` for whole shards.

Output never depends on the number of workers: results are consumed in item order, findings are
sorted, and issues keep the order of the items that raised them.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, cast

import pyarrow as pa

from shardscan.engine import Scanner
from shardscan.model import IssueKind, ScanIssue, ShardResult
from shardscan.reader import ShardRef
from shardscan.scanning.items import (
    FOOTER,
    STREAM,
    FooterCache,
    ItemResult,
    ShardPlan,
    WorkItem,
    assemble,
    log_shard,
    plan_shard,
    scan_item,
)
from shardscan.verifiers import prepare_verifiers

__all__ = [
    "FOOTER", "STREAM", "FooterCache", "ItemResult", "ShardPlan", "WorkItem", "assemble", "default_jobs", "log_shard",
    "plan_shard", "run_items", "run_local", "scan_item",
]

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess


def default_jobs() -> int:
    """All cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


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


def _context() -> ForkContext | ForkServerContext | SpawnContext:
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
    # (typeshed types get_context(str) as the BaseContext, which lacks Process; it is one of these three.)
    return cast("ForkContext | ForkServerContext | SpawnContext", multiprocessing.get_context(method))


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


def run_items(scanner: Scanner, items: list[WorkItem], jobs: int = 1) -> Generator[ItemResult, None, None]:
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
                    for ready in multiprocessing.connection.wait(list(workers)):
                        # (wait returns what it was given: these connections)
                        self._receive(cast("Connection", ready), workers, todo, items, done)
                yield done.pop(index)
            finished = True
        finally:
            self._stop(workers, finished)

    def _feed(
        self, conn: Connection, workers: dict[Connection, tuple[BaseProcess, list[int]]], todo: deque[int],
        items: list[WorkItem], done: dict[int, ItemResult],
    ) -> None:
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

    def _receive(
        self, conn: Connection, workers: dict[Connection, tuple[BaseProcess, list[int]]], todo: deque[int],
        items: list[WorkItem], done: dict[int, ItemResult],
    ) -> None:
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
    def _bury(
        conn: Connection, workers: dict[Connection, tuple[BaseProcess, list[int]]], todo: deque[int],
        done: dict[int, ItemResult], items: list[WorkItem],
    ) -> None:
        """A dead worker: the item it was scanning (the first it held) is unreadable, the ones it
        had waiting go back to the front of the queue; its pipe is closed."""
        process, held = workers.pop(conn)
        if held:
            done[held[0]] = _died(items[held[0]])
            todo.extendleft(reversed(held[1:]))
        conn.close()
        process.join(timeout=1)

    @staticmethod
    def _stop(workers: dict[Connection, tuple[BaseProcess, list[int]]], finished: bool) -> None:
        """Stop every worker: idle ones are told to, and a scan cut short (Ctrl-C, an error while
        reading results) ends the ones still scanning at once. None is left behind."""
        for conn in workers:
            with suppress(OSError, ValueError):
                conn.send(None)
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


def run_local(
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
