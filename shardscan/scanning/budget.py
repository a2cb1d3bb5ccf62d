"""The memory budget: how many rows are read at once, which row groups cannot be read, how many findings are listed."""

from __future__ import annotations

import pyarrow.parquet as pq

from shardscan.model import IssueKind, ScanIssue
from shardscan.options import ScanOptions
from shardscan.reader.parquet import string_bytes
from shardscan.sizes import format_size

# Peak memory of scanning a slice, per byte of its strings: the decompressed Parquet page, the
# Arrow array, the prefilter's copy, the cell as Python text and the rule gate's copy of it. A
# 200 MB cell measured about 4x above the interpreter's own memory; 6 leaves room for rows larger
# than the footer's average.
MEMORY_PER_STRING_BYTE = 6
# Slices larger than this buy no speed (per-slice costs are milliseconds) and only cost memory:
# with 16 MiB slices a worker scanning 100 MB row groups peaks at about 350 MiB.
MAX_SLICE_BYTES = 16 * 1024 * 1024
# Memory a listed finding takes, with its share of the rendered reports (a JSON entry is about
# 800 bytes): findings may take at most 1/FINDINGS_BUDGET_SHARE of --memory-budget per shard,
# whatever --max-findings-per-shard says (see ``shard_finding_cap``).
MEMORY_PER_FINDING = 4096
FINDINGS_BUDGET_SHARE = 8
# (A budget sized for a test's few rows still lists this many findings: about 4 MB.)
MIN_FINDINGS_BY_MEMORY = 1000


def shard_finding_cap(options: ScanOptions) -> int:
    """Findings listed one by one per shard: ``max_findings_per_shard``, within the memory budget."""
    by_memory = max(MIN_FINDINGS_BY_MEMORY, options.memory_budget // (MEMORY_PER_FINDING * FINDINGS_BUDGET_SHARE))
    return max(1, min(options.max_findings_per_shard, by_memory))


def cell_finding_cap(options: ScanOptions) -> int:
    """Findings listed one by one per cell (never more than per shard)."""
    return max(1, min(options.max_findings_per_cell, shard_finding_cap(options)))


def slice_bytes(options: ScanOptions) -> int:
    """String bytes read at once from a row group: this worker's share of the budget, bounded."""
    share = options.memory_budget // max(1, options.workers)
    return max(1, min(MAX_SLICE_BYTES, share // MEMORY_PER_STRING_BYTE))


def over_budget(options: ScanOptions, shard: str, parquet: pq.ParquetFile, index: int) -> ScanIssue | None:
    """The limit issue of a row group whose rows, read one at a time, would not fit the budget.

    Judged from the footer against the whole budget (not a worker's share), so the outcome
    does not depend on the number of workers.
    """
    rows = parquet.metadata.row_group(index).num_rows
    per_row = string_bytes(parquet, index) / max(1, rows)
    if per_row * MEMORY_PER_STRING_BYTE <= options.memory_budget:
        return None
    message = (
        f"row group {index} not read: {rows} row{'s' if rows != 1 else ''} holding {format_size(per_row * rows)} "
        f"of strings ({format_size(per_row)} per row); scanning a row takes about {MEMORY_PER_STRING_BYTE}x "
        f"its size, more than the memory budget of {format_size(options.memory_budget)} (--memory-budget)"
    )
    return ScanIssue(shard, IssueKind.LIMIT, message, row_group=index)
