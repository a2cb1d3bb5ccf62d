"""Parquet integrity, verified not assumed: what a shard's footer says is checked against its bytes and pages.

pyarrow decodes what the footer points at, as many rows as the footer says, and nothing else:
rows beyond a lowered ``num_rows``, row groups dropped from the footer and pages no column chunk
points at are never decoded, and a scan of them would report "clean". These checks make every
such shard an error naming the shard and the reason (exit 3):

* **Footer against bytes** (:func:`footer_checks`, once per shard: the footer, page headers and
  gap bytes are read, no page is decoded):

  - the column chunks, page indexes, bloom filters and the footer must cover the file from the
    leading magic to the end, without gaps or overlaps (:func:`layout_problems`). A gap whose
    bytes are all zero is alignment padding (some writers pad row groups); any other gap is
    "unreferenced bytes" and names its byte range;
  - the pages of every string column chunk are walked (headers only, their bodies skipped): they
    must fill the chunk exactly, their values must add up to the footer's ``num_values``, and v2
    pages' rows to the row group's ``num_rows``.

* **Footer against decoded values** (``_RowGroupCheck`` in :mod:`shardscan.reader.parquet`, per
  row group read): a column without repetition has one value per row, so its ``num_values`` must
  equal ``num_rows``; for nested columns the values pyarrow decoded (one per leaf slot, empty and
  null lists included, see :func:`leaf_slots`) must equal ``num_values``.

* **Statistics** (:func:`footer_checks`): string min/max values of column chunks (footer) and of
  pages (page index, page headers) are cell values that get published, so they are scanned as
  cells of the pseudo-column ``__statistics__`` at row -1 (see docs/integrity.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from shardscan.reader.cells import LeafCells, field_label
from shardscan.reader.thrift_compact import NeedMore, Struct, ThriftError, read_struct

METADATA_ROW = -1  # row index reported for file-level cells: key/value metadata, statistics
STATISTICS_COLUMN = "__statistics__"
_MAGIC = b"PAR1"
_FOOTER_TAIL = 8  # footer length (4 bytes, little-endian) and the magic
_MAX_FOOTER = 256 * 1024 * 1024
# Page headers are small, but statistics in them can hold values of a few KiB: read this much at
# a page's start and more only when the header runs past it, up to a bound.
_HEADER_READ = 16 * 1024
_MAX_HEADER = 16 * 1024 * 1024
_BLOCK = 64 * 1024
_SMALL_HEADER = 2 * 1024
# A gap between structures that is all zero bytes is padding; longer gaps than this are not
# read to find out.
_MAX_PADDING = 16 * 1024 * 1024
_PADDING_READ = 1024 * 1024
_MAX_INDEX = 64 * 1024 * 1024  # bytes of one column index read to scan its min/max values
_MAX_METADATA_COPY = 1024 * 1024
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 1, 2, 3
_STRING_TYPES = {6, 7}  # BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY

ReadAt = Callable[[int, int], bytes]  # (offset, size) -> bytes, fewer only at the end of the file


class IntegrityError(ValueError):
    """The file's structure contradicts itself; the message names the part, never its data."""


@dataclass(frozen=True, slots=True)
class Footer:
    """A shard's footer as the file holds it (parsed by us, not pyarrow), and where it lies."""

    meta: Struct
    start: int  # offset of the footer's first byte
    size: int  # the file's size


@dataclass(frozen=True, slots=True)
class Span:
    """A byte range of the file that one structure claims."""

    start: int
    end: int
    what: str
    # For a column chunk's pages: its metadata from the footer (a writer may put a copy of it
    # right after the pages).
    meta: Struct | None = None


@dataclass(frozen=True, slots=True)
class PageCounts:
    """What a column chunk's page headers say it holds."""

    values: int
    rows: int | None  # from v2 data pages; None when any data page is v1 (they do not say)
    pages: int
    # String min/max values in data page headers: (data page ordinal, "min" | "max", value).
    bounds: tuple[tuple[int, str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Problem:
    """One integrity failure: what is wrong, and the row group it concerns (None: the whole file)."""

    message: str
    row_group: int | None = None


@dataclass(frozen=True, slots=True)
class FooterChecks:
    """What checking a shard's footer against its bytes found: problems, and statistics as cells."""

    problems: tuple[Problem, ...]
    statistics: tuple[LeafCells, ...]


def reader_for(handle: object) -> ReadAt:
    """Positional reads on an open shard (a pyarrow NativeFile or a Python binary file)."""
    read_at = getattr(handle, "read_at", None)
    if callable(read_at):
        return lambda offset, size: bytes(read_at(size, offset))

    def seek_read(offset: int, size: int) -> bytes:
        handle.seek(offset)  # type: ignore[attr-defined]
        return handle.read(size)  # type: ignore[attr-defined]

    return seek_read


def file_size(handle: object) -> int:
    """The size in bytes of an open shard."""
    size = getattr(handle, "size", None)
    if callable(size):
        return int(size())
    position = handle.seek(0, 2)  # type: ignore[attr-defined]
    return int(position)


def read_footer(read: ReadAt, size: int) -> Footer:
    """Parse the footer at the end of the file; raise IntegrityError when it is not one."""
    if size < 12:
        raise IntegrityError("file too short to hold a footer")
    tail = read(size - _FOOTER_TAIL, _FOOTER_TAIL)
    if len(tail) != _FOOTER_TAIL or tail[4:] != _MAGIC:
        raise IntegrityError("no footer magic at the end of the file")
    length = int.from_bytes(tail[:4], "little")
    start = size - _FOOTER_TAIL - length
    if length > _MAX_FOOTER or start < 4:
        raise IntegrityError(f"footer length {length} does not fit the file")
    raw = read(start, length)
    try:
        meta, used = read_struct(raw)
    except ThriftError as err:
        raise IntegrityError(f"footer is not valid Thrift ({err})") from None
    if used != length:
        raise IntegrityError(f"footer holds {length - used} bytes after its end")
    return Footer(meta, start, size)


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def chunk_span(meta: Struct) -> tuple[int, int] | None:
    """The byte range of a column chunk's pages (dictionary page first, when it has one)."""
    data = _int(meta.get(9))
    length = _int(meta.get(7))
    if data is None or length is None:
        return None
    # (pyarrow ignores the index page offset, which no writer sets: so do we.)
    start = page_start(data, _int(meta.get(11)))
    return start, start + length


def page_start(data: int, dictionary: int | None) -> int:
    """Where a column chunk's first page is: the earlier of its data and dictionary page offsets.
    Offsets below 4 are not pages (writers put 0 for an absent dictionary page, and an empty row
    group's chunk may have only a dictionary page and a data page offset of 0)."""
    offsets = [o for o in (data, dictionary) if o is not None and o >= 4]
    return min(offsets) if offsets else data


def column_label(path: list[object], index: int) -> str:
    """A column path as reports show it: its names joined with dots, or ``#<leaf index>`` when a
    name could be a secret or is not printable."""
    names = [p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in path]
    if names and all(field_label(n, index) == n for n in names):
        return ".".join(names)
    return f"#{index}"


def layout_problems(read: ReadAt, footer: Footer) -> list[str]:
    """Gaps (not zero padding) and overlaps between the structures the footer points at, and
    row groups the footer's counts disagree with. Empty when the footer accounts for every byte."""
    problems: list[str] = []
    spans = [Span(0, 4, "the leading magic"), Span(footer.start, footer.size, "the footer")]
    groups = _list(footer.meta.get(4))
    total_rows = 0
    for g, group in enumerate(groups):
        if not isinstance(group, dict):
            raise IntegrityError(f"row group {g}: not a structure")
        total_rows += _int(group.get(3)) or 0
        for c, chunk in enumerate(_list(group.get(1))):
            if not isinstance(chunk, dict):
                raise IntegrityError(f"row group {g} column {c}: not a structure")
            spans += _chunk_spans(read, chunk, g, c, problems)
    declared = _int(footer.meta.get(3))
    if declared is not None and declared != total_rows:
        problems.append(f"the footer says {declared} rows but its row groups hold {total_rows}")
    spans.sort(key=lambda s: (s.start, s.end))
    covered, last = 0, spans[0]
    for span in spans:
        if span.start > covered and last.meta is not None:
            # The format's original layout puts a copy of the column's metadata after its pages
            # (some writers still do): it covers the gap when it is that chunk's metadata.
            copy_end, problem = _metadata_copy(read, covered, span.start, last)
            if problem:
                problems.append(problem)
            covered = copy_end
        if span.start > covered:
            if not _is_padding(read, covered, span.start):
                problems.append(f"unreferenced bytes {covered}-{span.start} (between {last.what} and {span.what}): "
                                "no column chunk, index or footer covers them")
        elif span.start < covered:
            problems.append(f"{span.what} (bytes {span.start}-{span.end}) overlaps {last.what}")
        if span.end > covered:
            covered, last = span.end, span
    return problems


def _chunk_spans(read: ReadAt, chunk: Struct, g: int, c: int, problems: list[str]) -> list[Span]:
    where = f"row group {g} column {c}"
    if chunk.get(1):
        problems.append(f"{where}: its pages are in another file (file_path), which is not read")
    meta = chunk.get(3)
    if not isinstance(meta, dict):
        problems.append(f"{where}: no column metadata (encrypted or missing)")
        return []
    span = chunk_span(meta)
    out = []
    if span is None or span[0] < 4 or span[1] < span[0]:
        problems.append(f"{where}: no valid page offsets")
    else:
        out.append(Span(span[0], span[1], f"the pages of {where}", meta))
    for offset_field, length_field, what in ((4, 5, "offset index"), (6, 7, "column index")):
        offset, length = _int(chunk.get(offset_field)), _int(chunk.get(length_field))
        if offset is not None and length is not None:
            out.append(Span(offset, offset + length, f"the {what} of {where}"))
    bloom = _int(meta.get(14))
    if bloom is not None:
        length = _int(meta.get(15))
        if length is None:  # older writers do not record it: the header says how long the filter is
            length = _bloom_length(read, bloom)
        out.append(Span(bloom, bloom + length, f"the bloom filter of {where}"))
    return out


def _metadata_copy(read: ReadAt, start: int, end: int, pages: Span) -> tuple[int, str | None]:
    """Where a copy of ``pages``' column metadata written at ``start`` ends (``start`` when there is
    none), and a problem when the copy says something the footer does not (its statistics and
    key/value metadata would be published unscanned)."""
    try:
        copy, used = read_struct(read(start, min(end - start, _MAX_METADATA_COPY)))
    except ThriftError:
        return start, None
    footer = pages.meta or {}
    if used > end - start or any(copy.get(f) != footer.get(f) for f in (5, 7, 9)):
        return start, None  # not this chunk's metadata: the gap is judged as it is
    for field in (8, 12):  # key/value metadata, statistics
        if field in copy and copy.get(field) != footer.get(field):
            return start + used, (f"the copy of the column metadata after {pages.what} (bytes {start}-{start + used}) "
                                  "differs from the footer's")
    return start + used, None


def _bloom_length(read: ReadAt, offset: int) -> int:
    raw = read(offset, 256)
    try:
        header, used = read_struct(raw)
    except ThriftError:
        raise IntegrityError(f"bloom filter header at byte {offset} is not valid") from None
    size = _int(header.get(1))
    if size is None or size < 0:
        raise IntegrityError(f"bloom filter header at byte {offset} has no size")
    return used + size


def _is_padding(read: ReadAt, start: int, end: int) -> bool:
    if end - start > _MAX_PADDING:
        return False
    position = start
    while position < end:
        block = read(position, min(_PADDING_READ, end - position))
        if not block or block.count(0) != len(block):
            return False
        position += len(block)
    return True


# ---- pages ------------------------------------------------------------------------------------


def walk_pages(read: ReadAt, start: int, end: int, *, bounds: bool = False) -> PageCounts:
    """Walk a column chunk's page headers from ``start``; they must end exactly at ``end``.

    With ``bounds``, the min/max values of the data pages' statistics are collected too.
    """
    values = rows = pages = data_pages = 0
    v1 = False
    found: list[tuple[int, str, bytes]] = []
    position = start
    block = _Block(read, end)
    while position < end:
        header, header_size = block.header(position)
        kind, size = _int(header.get(1)), _int(header.get(3))
        if kind is None or size is None or size < 0:
            raise IntegrityError(f"page at byte {position}: header without a type or size")
        if kind in (_DATA_PAGE, _DATA_PAGE_V2):
            page = header.get(5 if kind == _DATA_PAGE else 8)
            values += _count(page, 1, position)
            if kind == _DATA_PAGE:
                v1 = True
            else:
                rows += _count(page, 3, position)
            stats = page.get(5 if kind == _DATA_PAGE else 8) if isinstance(page, dict) else None
            if bounds and isinstance(stats, dict):
                for edge, fields in (("min", (6, 2)), ("max", (5, 1))):
                    for value in dict.fromkeys(stats.get(f) for f in fields):
                        if isinstance(value, bytes) and value:
                            found.append((data_pages, edge, value))
            data_pages += 1
        elif kind not in (_DICTIONARY_PAGE, _INDEX_PAGE):
            raise IntegrityError(f"page at byte {position}: unknown page type {kind}")
        position += header_size + size
        block.large = size > _BLOCK  # the next header is far: read little around it (remote reads)
        pages += 1
    if position != end:
        raise IntegrityError(f"the last page runs {position - end} bytes past the column chunk's end")
    return PageCounts(values, None if v1 else rows, pages, tuple(found))


class _Block:
    """Page headers read through one buffered block: small pages lie many to a block, so a chunk
    of thousands of pages costs a few reads, not one per page."""

    def __init__(self, read: ReadAt, end: int) -> None:
        self.read, self.end = read, end
        self.start, self.data = 0, b""
        self.large = False

    def header(self, position: int) -> tuple[Struct, int]:
        """The page header at ``position`` and its size in bytes."""
        size = _SMALL_HEADER if self.large else _HEADER_READ
        while True:
            if not (self.start <= position and position + min(size, self.end - position) <= self.start + len(self.data)):
                want = size if self.large else max(size, _BLOCK)
                self.start, self.data = position, self.read(position, min(want, self.end - position))
            offset = position - self.start
            try:
                header, after = read_struct(self.data, offset)
                return header, after - offset
            except NeedMore:
                if self.start + len(self.data) >= self.end or size >= _MAX_HEADER:
                    raise IntegrityError(f"page header at byte {position} runs past the column chunk") from None
                size *= 4
                self.data = b""  # read again from the header, larger
            except ThriftError as err:
                raise IntegrityError(f"page header at byte {position} is not valid ({err})") from None


def _count(header: object, field: int, position: int) -> int:
    value = _int(header.get(field)) if isinstance(header, dict) else None
    if value is None or value < 0:
        raise IntegrityError(f"page at byte {position}: header without a value count")
    return value


# ---- decoded values ---------------------------------------------------------------------------


def leaf_count(dtype: pa.DataType) -> int:
    """How many Parquet leaf columns an Arrow type is stored as."""
    if isinstance(dtype, pa.ExtensionType):
        return leaf_count(dtype.storage_type)
    if pa.types.is_dictionary(dtype):
        return 1
    if pa.types.is_map(dtype):
        return leaf_count(dtype.key_type) + leaf_count(dtype.item_type)
    if pa.types.is_struct(dtype):
        return sum(leaf_count(dtype.field(i).type) for i in range(dtype.num_fields))
    if _is_list(dtype):
        return leaf_count(dtype.value_type)
    return 1


def _is_list(dtype: pa.DataType) -> bool:
    return (pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)
            or getattr(pa.types, "is_list_view", lambda _t: False)(dtype)
            or getattr(pa.types, "is_large_list_view", lambda _t: False)(dtype))


def leaf_slots(array: pa.Array | pa.ChunkedArray) -> list[int]:
    """For each Parquet leaf of ``array``, the values (definition levels) it takes to store it.

    A row of a flat column is one value; a null or empty list is one value; a list of n items is
    the values of its items. This is what each column chunk's ``num_values`` counts, so comparing
    the two tells whether pyarrow decoded every value the pages hold.
    """
    if isinstance(array, pa.ChunkedArray):
        totals = [0] * leaf_count(array.type)
        for chunk in array.chunks:
            totals = [a + b for a, b in zip(totals, leaf_slots(chunk), strict=True)]
        return totals
    return [int(per.sum()) for per in _slots(array)]


def _slots(array: pa.Array) -> list[np.ndarray]:
    """Per leaf, the values each element of ``array`` takes."""
    dtype = array.type
    if isinstance(array, pa.ExtensionArray):
        return _slots(array.storage)
    if pa.types.is_struct(dtype):
        out: list[np.ndarray] = []
        for i in range(dtype.num_fields):
            out += _slots(array.field(i))
        return out
    if pa.types.is_map(dtype) or (_is_list(dtype) and not pa.types.is_dictionary(dtype)):
        if pa.types.is_fixed_size_list(dtype):
            size = dtype.list_size
            offsets = (array.offset + np.arange(len(array) + 1, dtype=np.int64)) * size
        elif hasattr(array, "sizes"):  # list views: offsets and sizes per element
            starts = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
            sizes = np.asarray(array.sizes.to_numpy(zero_copy_only=False), dtype=np.int64)
            return _list_slots(array, starts, starts + sizes, array.values)
        else:
            offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        return _list_slots(array, offsets[:-1], offsets[1:], array.values)
    return [np.ones(len(array), dtype=np.int64)]


def _list_slots(array: pa.Array, starts: np.ndarray, ends: np.ndarray, values: pa.Array) -> list[np.ndarray]:
    nulls = ~np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool) if array.null_count else None
    out = []
    for child in _slots(values):
        cumulative = np.concatenate(([0], np.cumsum(child, dtype=np.int64)))
        per = cumulative[ends] - cumulative[starts]
        per[ends <= starts] = 1  # an empty list is one value
        if nulls is not None:
            per[nulls] = 1  # so is a null one, whatever its offsets say
        out.append(per)
    return out


# ---- statistics as cells ----------------------------------------------------------------------


def footer_checks(read: ReadAt, footer: Footer) -> FooterChecks:
    """Every check that needs the footer and the pages but no decoding, and the statistics as cells.

    Problems: the layout (:func:`layout_problems`) and, for each string column chunk, its pages
    (:func:`walk_pages`: they fill the chunk, their values add up to the chunk's ``num_values``
    and v2 pages' rows to the row group's ``num_rows``), named with their row group.

    Cells: string min/max statistics as column ``__statistics__.row_group[<g>].<column>.min`` (or
    ``.max``) for a column chunk's statistics in the footer, and
    ``__statistics__.row_group[<g>].<column>.page[<p>].min`` for a data page's (from the page
    index or the page header), all at row -1. A value listed twice for one place (the deprecated
    and current fields, the page index and the page header) is one cell.
    """
    problems = [Problem(p) for p in layout_problems(read, footer)]
    cells: dict[tuple[str, bytes], None] = {}
    indexes: list[tuple[int, int, str]] = []
    schema_types = _leaf_types(footer.meta)
    for g, group in enumerate(_list(footer.meta.get(4))):
        rows = _int(group.get(3)) if isinstance(group, dict) else None
        for c, chunk in enumerate(_list(group.get(1)) if isinstance(group, dict) else []):
            meta = chunk.get(3) if isinstance(chunk, dict) else None
            if not isinstance(meta, dict):
                continue
            kind = _int(meta.get(1))
            if kind not in _STRING_TYPES and (c >= len(schema_types) or schema_types[c] not in _STRING_TYPES):
                continue  # only byte arrays can hold a credential
            column = column_label(_list(meta.get(3)), c)
            label = f"{STATISTICS_COLUMN}.row_group[{g}].{column}"
            stats = meta.get(12)
            if isinstance(stats, dict):
                for edge, fields in (("min", (6, 2)), ("max", (5, 1))):
                    for f in fields:
                        if isinstance(value := stats.get(f), bytes) and value:
                            cells[(f"{label}.{edge}", value)] = None
            problems += _check_pages(read, footer, meta, rows, g, column, label, cells)
            offset, length = _int(chunk.get(6)), _int(chunk.get(7))
            if offset is not None and length is not None and length > 0 and offset + length <= footer.size:
                indexes.append((offset, length, label))
    for path, value in _page_index_bounds(read, indexes):
        cells[(path, value)] = None
    if not cells:
        return FooterChecks(tuple(problems), ())
    paths = [path for path, _ in cells]
    rows_of = np.full(len(paths), METADATA_ROW, dtype=np.int64)
    values = pa.array([value for _, value in cells], type=pa.large_binary())
    # One template argument per cell: the whole path (built by us, from labels that are safe to print).
    return FooterChecks(tuple(problems), (LeafCells("{}", values, rows_of, (paths,), None),))


def _check_pages(
    read: ReadAt, footer: Footer, meta: Struct, rows: int | None, g: int, column: str, label: str,
    cells: dict[tuple[str, bytes], None],
) -> list[Problem]:
    span = chunk_span(meta)
    if span is None or span[0] < 4 or not span[0] <= span[1] <= footer.start:
        return []  # reported by the layout check
    try:
        counts = walk_pages(read, span[0], span[1], bounds=True)
    except IntegrityError as err:
        return [Problem(f"column {column}: {err}", g)]
    for page, edge, value in counts.bounds:
        cells[(f"{label}.page[{page}].{edge}", value)] = None
    problems = []
    declared = _int(meta.get(5))
    if counts.values != declared:
        problems.append(Problem(f"column {column}: its pages hold {counts.values} values, the footer says {declared}", g))
    if counts.rows is not None and counts.rows != rows:
        problems.append(Problem(f"column {column}: its pages hold {counts.rows} rows, the footer says {rows}", g))
    return problems


def _page_index_bounds(read: ReadAt, indexes: list[tuple[int, int, str]]) -> list[tuple[str, bytes]]:
    """The page min/max values of the column indexes (writers put them next to each other: one
    read when they span little)."""
    if not indexes:
        return []
    low = min(o for o, _, _ in indexes)
    high = max(o + n for o, n, _ in indexes)
    whole = read(low, high - low) if high - low <= _MAX_INDEX else None
    out: list[tuple[str, bytes]] = []
    for offset, length, label in indexes:
        if length > _MAX_INDEX:
            raise IntegrityError(f"the column index at byte {offset} is larger than {_MAX_INDEX} bytes")
        raw = whole[offset - low : offset - low + length] if whole is not None else read(offset, length)
        try:
            index, _ = read_struct(raw)
        except ThriftError:
            raise IntegrityError(f"the column index at byte {offset} is not valid") from None
        for field, edge in ((2, "min"), (3, "max")):
            for page, value in enumerate(_list(index.get(field))):
                if isinstance(value, bytes) and value:
                    out.append((f"{label}.page[{page}].{edge}", value))
    return out


def crash_risks(meta: Struct) -> list[str]:
    """Footer values that pyarrow does not refuse with an error but aborts the process on when their
    column metadata is built (an uncaught C++ exception): checked before pyarrow touches them.

    Level histograms (``SizeStatistics``) must have one entry per level of their column.
    """
    levels = _leaf_levels(_list(meta.get(2)))
    problems = []
    for g, group in enumerate(_list(meta.get(4))):
        for c, chunk in enumerate(_list(group.get(1)) if isinstance(group, dict) else []):
            column = chunk.get(3) if isinstance(chunk, dict) else None
            sizes = column.get(16) if isinstance(column, dict) else None
            if not isinstance(sizes, dict):
                continue
            if c >= len(levels):
                problems.append(f"row group {g} column {c}: no such column in the schema")
                continue
            max_def, max_rep = levels[c]
            for field, top, name in ((2, max_rep, "repetition"), (3, max_def, "definition")):
                histogram = _list(sizes.get(field))
                if histogram and len(histogram) != top + 1:
                    problems.append(f"row group {g} column {c}: {name} level histogram of {len(histogram)} entries "
                                    f"for {top + 1} levels")
    return problems


def _leaf_levels(elements: list[object]) -> list[tuple[int, int]]:
    """(max definition level, max repetition level) of each leaf of a flattened Parquet schema."""
    out: list[tuple[int, int]] = []
    # Depth-first over the flattened tree: each entry is (children left, def level, rep level).
    stack: list[list[int]] = []
    for i, element in enumerate(elements):
        if not isinstance(element, dict):
            return out
        children = _int(element.get(5)) or 0
        parent_def, parent_rep = (stack[-1][1], stack[-1][2]) if stack else (0, 0)
        repetition = _int(element.get(3)) if i else 0  # the root has none
        level_def = parent_def + (1 if repetition in (1, 2) else 0)  # OPTIONAL, REPEATED
        level_rep = parent_rep + (1 if repetition == 2 else 0)
        if stack:
            stack[-1][0] -= 1
        if children > 0:
            stack.append([children, level_def, level_rep])
        else:
            out.append((level_def, level_rep))
        while stack and stack[-1][0] <= 0:
            stack.pop()
    return out


def _leaf_types(meta: Struct) -> list[int | None]:
    """Physical type of each leaf column, in column-chunk order, from the footer's schema."""
    elements = _list(meta.get(2))
    return [_int(e.get(1)) for e in elements[1:] if isinstance(e, dict) and not _int(e.get(5))]
