"""Stream a Parquet shard row group by row group, as flattened string leaves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.errors import ShardReadError, describe_remote_error
from shardscan.reader.cells import LeafCells, field_label, flatten_column, is_string_like, key_label
from shardscan.reader.parquet_footer import (
    Footer,
    IntegrityError,
    column_label,
    crash_risks,
    file_size,
    read_footer,
    reader_for,
)
from shardscan.reader.parquet_integrity import METADATA_ROW, FooterChecks, footer_checks, integrity_issue
from shardscan.reader.parquet_values import leaf_count, leaf_slots
from shardscan.reader.sources import ShardRef

# Parquet key/value metadata that pyarrow writes itself (a serialised schema): not user text.
_GENERATED_METADATA_KEYS = {b"ARROW:schema"}
_LOCAL_READS = {"pre_buffer": False, "buffer_size": 1 << 20}
_BYTE_ARRAY_TYPES = {"BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}


@dataclass(frozen=True, slots=True)
class RowGroupBatch:
    """One row group of a shard, ready for the prefilter."""

    index: int
    row_offset: int
    num_rows: int
    leaves: tuple[LeafCells, ...]


class ParquetShard(pq.ParquetFile):  # type: ignore[misc]  # pyarrow ships no type information
    """A ParquetFile that keeps the byte source it reads, so that the integrity checks read the
    very bytes pyarrow decodes (the same handle, with positional reads), and the footer as we
    parsed it (None when it does not parse: pyarrow's error is then the one reported)."""

    def __init__(self, handle: object, footer: Footer | None, **options: object) -> None:
        super().__init__(handle, **options)
        self.handle = handle
        self.footer = footer


def open_parquet(shard: ShardRef, *, check_footer: bool = True) -> ParquetShard:
    """Open a shard's footer; raise ShardReadError naming the shard when it is not readable Parquet.

    Page checksums are verified where the writer stored them: a page whose bytes changed is an
    unreadable row group, never decoded as if it were intact. ``check_footer`` parses the footer
    ourselves first (pure Python, about 30x the footer's size in memory) to refuse one that would
    crash pyarrow; a caller that opens a shard already opened with the check (a worker reading
    the row groups of a planned shard) leaves it out, and the footer checks parse it again.
    """
    try:
        handle = shard.open()
        # pyarrow only checks the footer's magic; a damaged head means the file is not what it
        # claims to be, and a gate should not vouch for it.
        head = handle.read(4)
        handle.seek(0)
        if head != b"PAR1":
            raise ShardReadError(shard.display, "not a readable Parquet file (bad magic bytes at the start)")
        footer = _parse_footer(handle) if check_footer else None
        # pyarrow aborts the whole process (no exception) on some malformed column metadata: such
        # a shard is refused here, before pyarrow builds any.
        if footer is not None and (risks := crash_risks(footer.meta)):
            raise ShardReadError(shard.display, f"not a readable Parquet file (malformed footer: {risks[0]})")
        # Locally, page-sized buffered reads instead of pre-buffering whole column chunks: memory
        # then follows the rows being decoded, not the row group (and reads are no slower). Remote
        # shards keep pre-buffering, which coalesces ranges into few requests.
        return ParquetShard(handle, footer, page_checksum_verification=True,
                            **(_LOCAL_READS if shard.filesystem is None else {}))
    except ShardReadError:
        raise
    except Exception as exc:  # pyarrow raises several types for bad files
        raise ShardReadError(shard.display, f"not a readable Parquet file ({describe_remote_error(exc)})") from None


def _parse_footer(handle: object) -> Footer | None:
    try:
        return read_footer(reader_for(handle), file_size(handle))
    except IntegrityError:
        return None


def row_group_offsets(parquet: pq.ParquetFile) -> list[int]:
    """First row index (within the shard) of each row group."""
    offsets, total = [], 0
    for i in range(parquet.metadata.num_row_groups):
        offsets.append(total)
        total += parquet.metadata.row_group(i).num_rows
    return offsets


def _read_table(shard: ShardRef, parquet: pq.ParquetFile, index: int, columns: list[str] | None,
                threads: bool) -> pa.Table:
    """One row group's ``columns`` (None: all) as a table."""
    try:
        return parquet.read_row_group(index, columns=columns, use_threads=threads)
    except Exception as exc:
        raise _unreadable(shard, parquet, index, exc) from None


def _unreadable(shard: ShardRef, parquet: pq.ParquetFile, index: int, exc: Exception) -> ShardReadError:
    reason = f"row group unreadable ({describe_remote_error(exc)})"
    try:
        # Locally, re-reading each column names the damaged one; remotely the failure is most
        # likely the connection, and a read per column would only repeat it.
        failing = _failing_columns(parquet, index) if shard.filesystem is None else []
    except Exception:  # naming the column is a courtesy: the row group is unreadable either way
        failing = []
    if failing:
        reason = f"{reason} in column {', '.join(failing)}"
    return ShardReadError(shard.display, reason, index)


def _failing_columns(parquet: pq.ParquetFile, index: int) -> list[str]:
    """The text-holding columns of a row group that fail to decode on their own (a page whose
    checksum fails names no column), read a slice at a time so that memory stays bounded."""
    columns = string_columns(parquet)
    if not columns:
        return []
    rows = max(1, min(parquet.metadata.row_group(index).num_rows, 1024))
    names = parquet.schema_arrow.names
    failing = []
    for name in columns:
        try:
            for _ in parquet.iter_batches(batch_size=rows, row_groups=[index], columns=[name], use_threads=False):
                pass
        except Exception:
            failing.append(field_label(name, names.index(name)))
    return failing


def string_bytes(parquet: pq.ParquetFile, index: int) -> int:
    """Uncompressed bytes of a row group's byte-array column chunks, from the footer (no data read).

    An estimate of the text a reader will hold: a dictionary-encoded column decodes to more
    than its encoded size when values repeat.
    """
    group = parquet.metadata.row_group(index)
    total = 0
    for j in range(group.num_columns):
        chunk = group.column(j)
        if chunk.physical_type in _BYTE_ARRAY_TYPES:
            total += max(0, chunk.total_uncompressed_size)
    return total


def iter_row_group_slices(
    shard: ShardRef, parquet: pq.ParquetFile, index: int, row_offset: int, slice_bytes: int, *, threads: bool = True
) -> Iterator[RowGroupBatch]:
    """Read one row group as batches of whole rows holding about ``slice_bytes`` of strings each.

    The rows per slice come from the footer (the row group's string bytes / its rows), so memory
    follows the slice, not the row group. Each batch carries the row group's ``index`` and its
    own ``row_offset`` (rows keep their shard-level numbers); ``threads`` lets pyarrow decode
    columns in parallel. Raises ShardReadError naming the row group when a slice cannot be read
    (slices read before it have been yielded), and after the last slice when the row group's pages
    hold more (or fewer) values than were decoded (see :mod:`shardscan.reader.parquet_integrity`).
    """
    try:
        num_rows = parquet.metadata.row_group(index).num_rows
        per_row = string_bytes(parquet, index) / max(1, num_rows)
        columns = string_columns(parquet)
    except Exception as exc:
        raise _unreadable(shard, parquet, index, exc) from None
    check = _RowGroupCheck.start(shard, parquet, index, columns)
    rows = max(1, min(num_rows, int(slice_bytes // per_row) if per_row else num_rows))
    if columns == []:  # nothing can hold text: only the row count is needed
        yield RowGroupBatch(index, row_offset, num_rows, ())
        check.finish(num_rows)
        return
    if rows >= num_rows:  # one slice: the plain row-group read
        table = _read_table(shard, parquet, index, columns, threads)
        check.decoded(table.columns)
        yield batch_from_table(table, index, row_offset, parquet.schema_arrow)
        del table
        check.finish(num_rows)
        return
    try:
        batches = parquet.iter_batches(batch_size=rows, row_groups=[index], columns=columns, use_pandas_metadata=False,
                                       use_threads=threads)
    except Exception as exc:
        raise _unreadable(shard, parquet, index, exc) from None
    start = 0
    while True:
        try:
            batch = next(batches, None)
        except Exception as exc:
            raise _unreadable(shard, parquet, index, exc) from None
        if batch is None:
            break
        check.decoded(batch.columns)
        yield batch_from_table(pa.Table.from_batches([batch]), index, row_offset + start, parquet.schema_arrow)
        start += batch.num_rows
        del batch  # drop the slice before the next one is decoded
    if start != num_rows:
        raise ShardReadError(shard.display, f"row group unreadable (read {start} of {num_rows} rows)", index)
    check.finish(num_rows)


@dataclass(slots=True)
class _RowGroupCheck:
    """The integrity checks of one row group that need its decoded values: the footer's counts
    against the rows and values pyarrow decoded (counted slice by slice). (The checks against the
    pages, which need no decoding, run once per shard: :func:`footer_integrity`.)"""

    shard: ShardRef
    index: int
    problems: list[str]
    # Per top-level column position, the footer's num_values of each of its leaves (nested columns
    # only: a flat column's values are its rows, checked from the footer alone).
    expected: dict[int, list[int]]
    decoded_slots: dict[int, list[int]]
    # Schema position of each column read, in the order read (names can repeat: then every column is read).
    positions: list[int]
    labels: dict[int, list[str]]

    @classmethod
    def start(cls, shard: ShardRef, parquet: pq.ParquetFile, index: int, columns: list[str] | None) -> _RowGroupCheck:
        """Check the footer's counts of the row group against each other; prepare the decoded counts."""
        check = cls(shard, index, [], {}, {}, [], {})
        try:
            check._prepare(parquet, columns)
        except Exception as exc:
            raise ShardReadError(shard.display, f"row group unreadable ({describe_remote_error(exc)})", index) from None
        return check

    def _prepare(self, parquet: pq.ParquetFile, columns: list[str] | None) -> None:
        group = parquet.metadata.row_group(self.index)
        rows = group.num_rows
        schema = parquet.metadata.schema
        fields = list(parquet.schema_arrow)
        spans, first = [], 0
        for f in fields:
            spans.append(range(first, first + leaf_count(f.type)))
            first += spans[-1].stop - spans[-1].start
        mapped = first == group.num_columns
        names = [f.name for f in fields]
        selected = range(len(fields)) if columns is None else [names.index(c) for c in columns]
        for j in range(group.num_columns):
            chunk = group.column(j)
            if schema.column(j).max_repetition_level == 0 and chunk.num_values != rows:
                label = column_label(chunk.path_in_schema.split("."), j)
                self.problems.append(f"column {label}: {chunk.num_values} values for {rows} rows "
                                     "(the footer's num_rows disagrees with its column chunk)")
        if not mapped:
            return  # the Arrow schema does not map onto the leaves one to one: the page checks stand alone
        for p in selected:
            leaves = list(spans[p])
            if all(schema.column(j).max_repetition_level == 0 for j in leaves):
                continue  # no lists: every leaf holds one value per row, checked above
            self.expected[p] = [group.column(j).num_values for j in leaves]
            self.labels[p] = [column_label(group.column(j).path_in_schema.split("."), j) for j in leaves]
            self.decoded_slots[p] = [0] * len(leaves)
        self.positions = list(selected)

    def decoded(self, arrays: list[pa.Array | pa.ChunkedArray]) -> None:
        """Count the values of a decoded slice (its columns in the order read), per leaf of each nested column."""
        if not self.expected:
            return
        for position, array in zip(self.positions, arrays, strict=True):
            if position in self.expected:
                slots = leaf_slots(array)
                self.decoded_slots[position] = [a + b for a, b in zip(self.decoded_slots[position], slots, strict=True)]

    def finish(self, rows: int) -> None:
        """Raise ShardReadError for the row group if any check failed."""
        for position, expected in self.expected.items():
            for label, want, got in zip(self.labels[position], expected, self.decoded_slots[position], strict=True):
                if want != got:
                    self.problems.append(f"column {label}: {got} values decoded from {rows} rows, the column chunk "
                                         f"holds {want} (the footer's num_rows is lower than its pages hold)")
        if self.problems:
            more = len(self.problems) - 3
            shown = "; ".join(self.problems[:3]) + (f"; and {more} more" if more > 0 else "")
            raise ShardReadError(self.shard.display, f"integrity: {shown}", self.index)


def string_columns(parquet: pq.ParquetFile) -> list[str] | None:
    """Top-level columns that hold string-like values at any depth (the only ones worth decoding).

    Numeric, boolean and temporal columns cannot carry a credential; skipping them saves their
    decoding time and memory (embeddings and token-id lists can dwarf the text). ``None`` means
    "read every column" (duplicate column names cannot be selected by name).
    """
    schema = parquet.schema_arrow
    names = [f.name for f in schema]
    if len(set(names)) != len(names):
        return None
    return [f.name for f in schema if _holds_text(f.type)]


def _holds_text(dtype: pa.DataType) -> bool:
    if is_string_like(dtype):
        return True
    if pa.types.is_dictionary(dtype):
        return _holds_text(dtype.value_type)
    if pa.types.is_map(dtype):
        return _holds_text(dtype.key_type) or _holds_text(dtype.item_type)
    fields = [dtype.field(i) for i in range(dtype.num_fields)] if dtype.num_fields else []
    return any(_holds_text(f.type) for f in fields)


def batch_from_table(
    table: pa.Table, index: int = 0, row_offset: int = 0, schema: pa.Schema | None = None
) -> RowGroupBatch:
    """Flatten an in-memory table (one row group's worth) into leaves.

    ``schema`` is the file's full schema when ``table`` holds only some of its columns: a column
    shown by position (``#<i>``) is numbered in the file, where redaction looks it up.
    """
    leaves: list[LeafCells] = []
    names = (schema or table.schema).names
    for name, column in zip(table.column_names, table.columns, strict=True):
        position = names.index(name) if name in names else table.column_names.index(name)
        chunk_offset = 0
        for chunk in column.chunks:
            for leaf in flatten_column(name, chunk, position):
                if chunk_offset:
                    leaf = LeafCells(leaf.template, leaf.values, leaf.rows + chunk_offset, leaf.path_args, leaf.roles)
                leaves.append(leaf)
            chunk_offset += len(chunk)
    return RowGroupBatch(index=index, row_offset=row_offset, num_rows=table.num_rows, leaves=tuple(leaves))


def metadata_leaves(parquet: pq.ParquetFile) -> tuple[LeafCells, ...]:
    """File key/value metadata as cells: values in column ``__metadata__.<key>``, keys in
    ``__metadata__.#<i>.key`` (row -1 for both).

    Keys are scanned too (a key can itself be a secret); like map keys, a key is used in a column
    path only when it looks like an identifier, otherwise the entry is shown by index, ``#<i>``.
    """
    return key_value_leaves(parquet.metadata.metadata)


def footer_integrity(shard: str, parquet: pq.ParquetFile) -> FooterChecks:
    """The footer of a shard, as the file holds it, checked against its bytes and pages, and its
    string statistics as cells (see :func:`~shardscan.reader.parquet_integrity.footer_checks`).

    Integrity failures are ``unreadable`` issues of ``shard``. Raises ShardReadError naming
    ``shard`` when the bytes cannot be read. A plain ParquetFile (not opened by
    :func:`open_parquet`) has no byte source to check: nothing is found.
    """
    handle = getattr(parquet, "handle", None)
    if handle is None:
        return FooterChecks((), ())
    try:
        read = reader_for(handle)
        footer = getattr(parquet, "footer", None) or read_footer(read, file_size(handle))
        return footer_checks(shard, read, footer)
    except IntegrityError as err:
        return FooterChecks((integrity_issue(shard, str(err)),), ())
    except Exception as exc:
        raise ShardReadError(shard, f"footer unreadable ({describe_remote_error(exc)})") from None


def schema_metadata_leaves(schema: pa.Schema) -> tuple[LeafCells, ...]:
    """An Arrow schema's key/value metadata (Arrow IPC files, in-memory tables) as cells, like Parquet's."""
    return key_value_leaves(schema.metadata)


def key_value_leaves(raw: dict[bytes, bytes] | None) -> tuple[LeafCells, ...]:
    """Key/value metadata as value and key cells (row -1), without pyarrow's own keys."""
    items = [(k, v) for k, v in (raw or {}).items() if k not in _GENERATED_METADATA_KEYS]
    if not items:
        return ()
    keys = [k.decode("utf-8", "replace") for k, _ in items]
    labels = [key_label(k, i) for i, k in enumerate(keys)]
    rows = np.full(len(items), METADATA_ROW, dtype=np.int64)
    key_cells = LeafCells("__metadata__.#{}.key", pa.array([k for k, _ in items], type=pa.large_binary()), rows,
                          (list(range(len(items))),), None)
    values = LeafCells("__metadata__.{}", pa.array([v for _, v in items], type=pa.large_binary()), rows, (labels,),
                       None)
    return (values, key_cells)


def iter_row_groups(shard: ShardRef) -> Iterator[RowGroupBatch | ShardReadError]:
    """Yield each row group's batch, or the error that made that row group unreadable.

    Opening errors are raised; row-group errors are yielded so the other row groups still count.
    """
    parquet = open_parquet(shard)
    for index, offset in enumerate(row_group_offsets(parquet)):
        yield from _checked_row_group(shard, parquet, index, offset)


def _checked_row_group(
    shard: ShardRef, parquet: pq.ParquetFile, index: int, offset: int
) -> Iterator[RowGroupBatch | ShardReadError]:
    """A whole row group as one batch, with the integrity checks; a failure is yielded (after the
    batch, when the rows were read)."""
    try:
        yield from iter_row_group_slices(shard, parquet, index, offset, 1 << 62)
    except ShardReadError as err:
        yield err


class ParquetReader:
    """A Parquet shard as a ShardReader: file metadata plus independently readable row groups."""

    def __init__(self, shard: ShardRef) -> None:
        self.shard = shard
        self.parquet = open_parquet(shard)
        self._offsets = row_group_offsets(self.parquet)

    def metadata_leaves(self) -> tuple[LeafCells, ...]:
        """File key/value metadata as cells (row -1)."""
        return metadata_leaves(self.parquet)

    def batches(self) -> Iterator[RowGroupBatch | ShardReadError]:
        """Every row group in order; an unreadable one is yielded as its error."""
        for index in range(len(self._offsets)):
            yield from _checked_row_group(self.shard, self.parquet, index, self._offsets[index])
