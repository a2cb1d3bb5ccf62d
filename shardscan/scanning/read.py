"""Shard reading for the engine: a Parquet footer, a row group in slices within the memory budget, a stream, a table."""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.errors import ShardReadError
from shardscan.model import BatchResult, Finding, IssueKind, ScanIssue, ScanStats, ShardResult
from shardscan.options import ScanOptions
from shardscan.reader import RowGroupBatch, ShardRef, batch_from_table
from shardscan.reader.formats import open_shard
from shardscan.reader.parquet import (
    footer_integrity,
    iter_row_group_slices,
    metadata_leaves,
    row_group_offsets,
    schema_metadata_leaves,
)
from shardscan.scanning.batch import BatchScanner
from shardscan.scanning.budget import over_budget, shard_finding_cap, slice_bytes
from shardscan.scanning.caps import cap_shard_findings
from shardscan.scanning.values import Timer


def read_footer(batches: BatchScanner, shard: str, parquet: pq.ParquetFile, timer: Timer) -> BatchResult:
    """Scan a shard's file-level key/value metadata and string statistics (reported at row -1),
    and check that its footer accounts for every byte of the file (problems are issues)."""
    checked = footer_integrity(shard, parquet)
    result = BatchResult(issues=checked.issues)
    meta = metadata_leaves(parquet)
    if meta:
        result += batches.scan(RowGroupBatch(-1, 0, 0, meta), shard, timer)
    if checked.statistics:
        # Statistics repeat values of data cells: they are scanned, but not counted as cells.
        found = batches.scan(RowGroupBatch(-1, 0, 0, checked.statistics), shard, timer)
        result += BatchResult(found.findings, found.issues, ScanStats(clock_findings=found.stats.clock_findings))
    return result


def read_row_group(
    batches: BatchScanner, options: ScanOptions, shard: ShardRef, parquet: pq.ParquetFile, index: int, timer: Timer
) -> BatchResult:
    """Read and scan one row group, a slice of rows at a time (see ``budget.slice_bytes``).

    A row group that cannot fit the memory budget is not read: it is a limit issue. Raises
    ShardReadError when the row group cannot be read at all; when a later slice fails, the
    findings of the slices before it are kept and the failure is an issue. Identical texts
    are scanned once per slice.
    """
    if (issue := over_budget(options, shard.display, parquet, index)) is not None:
        return BatchResult(issues=(issue,))
    parts: list[BatchResult] = []
    t = time.perf_counter()
    slices = iter_row_group_slices(shard, parquet, index, row_group_offsets(parquet)[index], slice_bytes(options),
                                   threads=options.read_threads)
    try:
        while (batch := next(slices, None)) is not None:
            timer.add("read", t)
            parts.append(batches.scan(batch, shard.display, timer))
            del batch  # free this slice before the next one is read
            t = time.perf_counter()
    except ShardReadError as err:
        if not parts:
            raise
        parts.append(BatchResult(issues=(ScanIssue(shard.display, IssueKind.UNREADABLE, err.reason, row_group=index),)))
    finally:
        if isinstance(slices, Generator):  # (close the file it holds now, not when collected)
            slices.close()
    timer.add("read", t)
    total = BatchResult.total(parts)
    # However many slices it was read in, a row group counts once.
    return replace(total, stats=replace(total.stats, row_groups=1))


def read_stream(batches: BatchScanner, shard: ShardRef, timer: Timer) -> BatchResult:
    """Read and scan a shard that is one sequential stream (JSON Lines, Arrow IPC): metadata, then every batch.

    Raises ShardReadError when the shard cannot be opened; a batch or line that cannot be read
    is an issue, and the findings of everything read before it are kept.
    """
    t = time.perf_counter()
    reader = open_shard(shard)
    timer.add("read", t)
    parts: list[BatchResult] = []
    meta = reader.metadata_leaves()
    if meta:
        found = batches.scan(RowGroupBatch(index=-1, row_offset=0, num_rows=0, leaves=meta), shard.display, timer)
        parts.append(replace(found, stats=replace(found.stats, row_groups=0)))
    items = iter(reader.batches())
    while True:
        t = time.perf_counter()
        item = next(items, None)
        timer.add("read", t)
        if item is None:
            break
        if isinstance(item, ShardReadError):
            issue = ScanIssue(shard.display, IssueKind.UNREADABLE, item.reason, row_group=item.row_group, row=item.row)
            parts.append(BatchResult(issues=(issue,)))
            continue
        parts.append(batches.scan(item, shard.display, timer))
    return BatchResult.total(parts)


def read_table(
    batches: BatchScanner, options: ScanOptions, table: pa.Table, shard: str, rows_per_batch: int, timer: Timer
) -> ShardResult:
    """Scan an in-memory table as one shard: schema metadata, then slices of ``rows_per_batch`` rows.

    Slicing bounds the memory of flattening a large table; rows are numbered from the table's start.
    """
    started = time.perf_counter()
    todo = []
    meta = schema_metadata_leaves(table.schema)
    if meta:
        todo.append(RowGroupBatch(index=-1, row_offset=0, num_rows=0, leaves=meta))
    for index, start in enumerate(range(0, table.num_rows, max(1, rows_per_batch))):
        todo.append(batch_from_table(table.slice(start, rows_per_batch), index, start))
    if not todo:
        todo.append(batch_from_table(table))
    total = BatchResult(stats=ScanStats(shards=1)) + BatchResult.total(batches.scan(b, shard, timer) for b in todo)
    stats = replace(total.stats, seconds=time.perf_counter() - started)
    findings, truncated = cap_shard_findings(list(total.findings), shard_finding_cap(options), shard)
    return ShardResult(shard, stats, tuple(sorted(findings, key=Finding.sort_key)), total.issues + tuple(truncated))
