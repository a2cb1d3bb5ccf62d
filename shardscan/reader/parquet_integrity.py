"""Parquet integrity, verified not assumed: what a shard's footer says is checked against its bytes and pages.

pyarrow decodes what the footer points at, as many rows as the footer says, and nothing else:
rows beyond a lowered ``num_rows``, row groups dropped from the footer and pages no column chunk
points at are never decoded, and a scan of them would report "clean". These checks make every
such shard an error naming the shard and the reason (exit 3):

* **Footer against bytes** (:func:`footer_checks`, once per shard: the footer, page headers and
  gap bytes are read, no page is decoded):

  - the column chunks, page indexes, bloom filters and the footer must cover the file from the
    leading magic to the end, without gaps or overlaps
    (:func:`~shardscan.reader.parquet_footer.layout_problems`). A gap whose
    bytes are all zero is alignment padding (some writers pad row groups); any other gap is
    "unreferenced bytes" and names its byte range;
  - the pages of every string column chunk are walked (headers only, their bodies skipped): they
    must fill the chunk exactly, their values must add up to the footer's ``num_values``, and v2
    pages' rows to the row group's ``num_rows`` (:func:`~shardscan.reader.parquet_pages.walk_pages`).

* **Footer against decoded values** (``_RowGroupCheck`` in :mod:`shardscan.reader.parquet`, per
  row group read): a column without repetition has one value per row, so its ``num_values`` must
  equal ``num_rows``; for nested columns the values pyarrow decoded (one per leaf slot, empty and
  null lists included, see :func:`~shardscan.reader.parquet_values.leaf_slots`) must equal ``num_values``.

* **Statistics** (:func:`footer_checks`): string min/max values of column chunks (footer) and of
  pages (page index, page headers) are cell values that get published, so they are scanned as
  cells of the pseudo-column ``__statistics__`` at row -1 (see docs/integrity.md).

Each job has its module: the footer and the layout (:mod:`shardscan.reader.parquet_footer`), the
pages (:mod:`shardscan.reader.parquet_pages`), the decoded values
(:mod:`shardscan.reader.parquet_values`). This one runs the checks that need no decoding and
turns what they find into the scan's issues (:func:`integrity_issue`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from shardscan.model import IssueKind, ScanIssue
from shardscan.reader.cells import LeafCells
from shardscan.reader.parquet_footer import (
    Footer,
    IntegrityError,
    ReadAt,
    chunk_span,
    column_label,
    file_size,
    layout_problems,
    read_footer,
    reader_for,
)
from shardscan.reader.parquet_pages import walk_pages
from shardscan.reader.parquet_values import leaf_slots
from shardscan.reader.thrift_compact import Struct, ThriftError, as_int, as_list, read_struct

# The parts tests and callers reach through this module (the checks' one public face).
__all__ = [
    "METADATA_ROW",
    "STATISTICS_COLUMN",
    "FooterChecks",
    "IntegrityError",
    "file_size",
    "footer_checks",
    "integrity_issue",
    "layout_problems",
    "leaf_slots",
    "read_footer",
    "reader_for",
    "walk_pages",
]

METADATA_ROW = -1  # row index reported for file-level cells: key/value metadata, statistics
STATISTICS_COLUMN = "__statistics__"
_MAX_INDEX = 64 * 1024 * 1024  # bytes of one column index read to scan its min/max values
_STRING_TYPES = {6, 7}  # BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY


@dataclass(frozen=True, slots=True)
class FooterChecks:
    """What checking a shard's footer against its bytes found: issues, and statistics as cells."""

    issues: tuple[ScanIssue, ...]
    statistics: tuple[LeafCells, ...]


@dataclass(frozen=True, slots=True)
class _StatisticsCell:
    """One string min/max value and the pseudo-column path it is reported at."""

    path: str
    value: bytes


@dataclass(frozen=True, slots=True)
class _ColumnIndex:
    """Where a column chunk's column index lies, and the statistics path of its chunk."""

    offset: int
    length: int
    label: str


def integrity_issue(shard: str, message: str, row_group: int | None = None) -> ScanIssue:
    """An integrity failure as the scan reports it: the shard unreadable, naming the part and the
    reason (never its data), for the whole file or one row group."""
    return ScanIssue(shard, IssueKind.UNREADABLE, f"integrity: {message}", row_group)


# ---- statistics as cells ----------------------------------------------------------------------


def footer_checks(shard: str, read: ReadAt, footer: Footer) -> FooterChecks:
    """Every check that needs the footer and the pages but no decoding, and the statistics as cells.

    Issues (of ``shard``, see :func:`integrity_issue`): the layout (:func:`layout_problems`) and,
    for each string column chunk, its pages (:func:`walk_pages`: they fill the chunk, their values
    add up to the chunk's ``num_values`` and v2 pages' rows to the row group's ``num_rows``), named
    with their row group.

    Cells: string min/max statistics as column ``__statistics__.row_group[<g>].<column>.min`` (or
    ``.max``) for a column chunk's statistics in the footer, and
    ``__statistics__.row_group[<g>].<column>.page[<p>].min`` for a data page's (from the page
    index or the page header), all at row -1. A value listed twice for one place (the deprecated
    and current fields, the page index and the page header) is one cell.
    """
    issues = [integrity_issue(shard, p) for p in layout_problems(read, footer)]
    cells: dict[_StatisticsCell, None] = {}  # a dict, not a set: cells keep the order they were found in
    indexes: list[_ColumnIndex] = []
    schema_types = _leaf_types(footer.meta)
    for g, group in enumerate(as_list(footer.meta.get(4))):
        rows = as_int(group.get(3)) if isinstance(group, dict) else None
        for c, chunk in enumerate(as_list(group.get(1)) if isinstance(group, dict) else []):
            if not isinstance(chunk, dict) or not isinstance(meta := chunk.get(3), dict):
                continue
            kind = as_int(meta.get(1))
            if kind not in _STRING_TYPES and (c >= len(schema_types) or schema_types[c] not in _STRING_TYPES):
                continue  # only byte arrays can hold a credential
            column = column_label(as_list(meta.get(3)), c)
            label = f"{STATISTICS_COLUMN}.row_group[{g}].{column}"
            stats = meta.get(12)
            if isinstance(stats, dict):
                for edge, fields in (("min", (6, 2)), ("max", (5, 1))):
                    for f in fields:
                        if isinstance(value := stats.get(f), bytes) and value:
                            cells[_StatisticsCell(f"{label}.{edge}", value)] = None
            issues += _check_pages(shard, read, footer, meta, rows, g, column, label, cells)
            offset, length = as_int(chunk.get(6)), as_int(chunk.get(7))
            if offset is not None and length is not None and length > 0 and offset + length <= footer.size:
                indexes.append(_ColumnIndex(offset, length, label))
    for cell in _page_index_bounds(read, indexes):
        cells[cell] = None
    if not cells:
        return FooterChecks(tuple(issues), ())
    paths = [cell.path for cell in cells]
    rows_of = np.full(len(paths), METADATA_ROW, dtype=np.int64)
    values = pa.array([cell.value for cell in cells], type=pa.large_binary())
    # One template argument per cell: the whole path (built by us, from labels that are safe to print).
    return FooterChecks(tuple(issues), (LeafCells("{}", values, rows_of, (paths,), None),))


def _check_pages(
    shard: str, read: ReadAt, footer: Footer, meta: Struct, rows: int | None, g: int, column: str, label: str,
    cells: dict[_StatisticsCell, None],
) -> list[ScanIssue]:
    span = chunk_span(meta)
    if span is None or span.start < 4 or not span.start <= span.end <= footer.start:
        return []  # reported by the layout check
    try:
        counts = walk_pages(read, span.start, span.end, bounds=True)
    except IntegrityError as err:
        return [integrity_issue(shard, f"column {column}: {err}", g)]
    for bound in counts.bounds:
        cells[_StatisticsCell(f"{label}.page[{bound.page}].{bound.edge}", bound.value)] = None
    issues = []
    declared = as_int(meta.get(5))
    if counts.values != declared:
        issues.append(integrity_issue(
            shard, f"column {column}: its pages hold {counts.values} values, the footer says {declared}", g))
    if counts.rows is not None and counts.rows != rows:
        issues.append(integrity_issue(
            shard, f"column {column}: its pages hold {counts.rows} rows, the footer says {rows}", g))
    return issues


def _page_index_bounds(read: ReadAt, indexes: list[_ColumnIndex]) -> list[_StatisticsCell]:
    """The page min/max values of the column indexes (writers put them next to each other: one
    read when they span little)."""
    if not indexes:
        return []
    low = min(i.offset for i in indexes)
    high = max(i.offset + i.length for i in indexes)
    whole = read(low, high - low) if high - low <= _MAX_INDEX else None
    out: list[_StatisticsCell] = []
    for ref in indexes:
        offset, length = ref.offset, ref.length
        if length > _MAX_INDEX:
            raise IntegrityError(f"the column index at byte {offset} is larger than {_MAX_INDEX} bytes")
        raw = whole[offset - low : offset - low + length] if whole is not None else read(offset, length)
        try:
            index, _ = read_struct(raw)
        except ThriftError:
            raise IntegrityError(f"the column index at byte {offset} is not valid") from None
        for field, edge in ((2, "min"), (3, "max")):
            for page, value in enumerate(as_list(index.get(field))):
                if isinstance(value, bytes) and value:
                    out.append(_StatisticsCell(f"{ref.label}.page[{page}].{edge}", value))
    return out


def _leaf_types(meta: Struct) -> list[int | None]:
    """Physical type of each leaf column, in column-chunk order, from the footer's schema."""
    elements = as_list(meta.get(2))
    return [as_int(e.get(1)) for e in elements[1:] if isinstance(e, dict) and not as_int(e.get(5))]
