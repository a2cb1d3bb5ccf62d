"""A Parquet footer as the file holds it (parsed by us, not pyarrow), and its layout checked against the file's bytes.

The checks of :mod:`shardscan.reader.parquet_integrity` that need the footer and no page: the
structures it points at must cover the file without gaps or overlaps (:func:`layout_problems`),
and values pyarrow would abort the process on are refused before it sees them (:func:`crash_risks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, cast

from shardscan.reader.cells import field_label
from shardscan.reader.thrift_compact import Struct, ThriftError, as_int, as_list, read_struct

_MAGIC = b"PAR1"
_FOOTER_TAIL = 8  # footer length (4 bytes, little-endian) and the magic
_MAX_FOOTER = 256 * 1024 * 1024
# A gap between structures that is all zero bytes is padding; longer gaps than this are not
# read to find out.
_MAX_PADDING = 16 * 1024 * 1024
_PADDING_READ = 1024 * 1024
_MAX_METADATA_COPY = 1024 * 1024

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



def reader_for(handle: object) -> ReadAt:
    """Positional reads on an open shard (a pyarrow NativeFile or a Python binary file)."""
    read_at = getattr(handle, "read_at", None)
    if callable(read_at):
        return lambda offset, size: bytes(read_at(size, offset))

    binary = cast(IO[bytes], handle)  # not a NativeFile: a Python binary file

    def seek_read(offset: int, size: int) -> bytes:
        binary.seek(offset)
        return binary.read(size)

    return seek_read


def file_size(handle: object) -> int:
    """The size in bytes of an open shard."""
    size = getattr(handle, "size", None)
    if callable(size):
        return int(size())
    return cast(IO[bytes], handle).seek(0, 2)


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


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Bytes ``start`` to ``end`` (exclusive) of the file, as the footer gives them (not yet checked)."""

    start: int
    end: int


def chunk_span(meta: Struct) -> ByteRange | None:
    """The byte range of a column chunk's pages (dictionary page first, when it has one)."""
    data = as_int(meta.get(9))
    length = as_int(meta.get(7))
    if data is None or length is None:
        return None
    # (pyarrow ignores the index page offset, which no writer sets: so do we.)
    start = page_start(data, as_int(meta.get(11)))
    return ByteRange(start, start + length)


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
    groups = as_list(footer.meta.get(4))
    total_rows = 0
    for g, group in enumerate(groups):
        if not isinstance(group, dict):
            raise IntegrityError(f"row group {g}: not a structure")
        total_rows += as_int(group.get(3)) or 0
        for c, chunk in enumerate(as_list(group.get(1))):
            if not isinstance(chunk, dict):
                raise IntegrityError(f"row group {g} column {c}: not a structure")
            spans += _chunk_spans(read, chunk, g, c, problems)
    declared = as_int(footer.meta.get(3))
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
    if span is None or span.start < 4 or span.end < span.start:
        problems.append(f"{where}: no valid page offsets")
    else:
        out.append(Span(span.start, span.end, f"the pages of {where}", meta))
    for offset_field, length_field, what in ((4, 5, "offset index"), (6, 7, "column index")):
        offset, length = as_int(chunk.get(offset_field)), as_int(chunk.get(length_field))
        if offset is not None and length is not None:
            out.append(Span(offset, offset + length, f"the {what} of {where}"))
    bloom = as_int(meta.get(14))
    if bloom is not None:
        length = as_int(meta.get(15))
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
    size = as_int(header.get(1))
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


def crash_risks(meta: Struct) -> list[str]:
    """Footer values that pyarrow does not refuse with an error but aborts the process on when their
    column metadata is built (an uncaught C++ exception): checked before pyarrow touches them.

    Level histograms (``SizeStatistics``) must have one entry per level of their column.
    """
    levels = _leaf_levels(as_list(meta.get(2)))
    problems = []
    for g, group in enumerate(as_list(meta.get(4))):
        for c, chunk in enumerate(as_list(group.get(1)) if isinstance(group, dict) else []):
            column = chunk.get(3) if isinstance(chunk, dict) else None
            sizes = column.get(16) if isinstance(column, dict) else None
            if not isinstance(sizes, dict):
                continue
            if c >= len(levels):
                problems.append(f"row group {g} column {c}: no such column in the schema")
                continue
            max_def, max_rep = levels[c]
            for field, top, name in ((2, max_rep, "repetition"), (3, max_def, "definition")):
                histogram = as_list(sizes.get(field))
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
        children = as_int(element.get(5)) or 0
        parent_def, parent_rep = (stack[-1][1], stack[-1][2]) if stack else (0, 0)
        repetition = as_int(element.get(3)) if i else 0  # the root has none
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

