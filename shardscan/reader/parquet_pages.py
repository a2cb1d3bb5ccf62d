"""A column chunk's pages walked by their headers (no page decoded): what they hold, and their string min/max values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shardscan.reader.parquet_footer import IntegrityError, ReadAt
from shardscan.reader.thrift_compact import NeedMore, Struct, ThriftError, as_int, read_struct

# Page headers are small, but statistics in them can hold values of a few KiB: read this much at
# a page's start and more only when the header runs past it, up to a bound.
_HEADER_READ = 16 * 1024
_MAX_HEADER = 16 * 1024 * 1024
_BLOCK = 64 * 1024
_SMALL_HEADER = 2 * 1024
_DATA_PAGE, _INDEX_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 1, 2, 3
# The Statistics fields of each edge: min_value and the deprecated min; max_value and max.
_BOUND_FIELDS: tuple[tuple[Literal["min", "max"], tuple[int, int]], ...] = (("min", (6, 2)), ("max", (5, 1)))


@dataclass(frozen=True, slots=True)
class PageBound:
    """A string min or max value in a data page header's statistics."""

    page: int  # the data page's ordinal in its column chunk
    edge: Literal["min", "max"]
    value: bytes


@dataclass(frozen=True, slots=True)
class PageCounts:
    """What a column chunk's page headers say it holds."""

    values: int
    rows: int | None  # from v2 data pages; None when any data page is v1 (they do not say)
    pages: int
    bounds: tuple[PageBound, ...] = ()  # string min/max values in data page headers


def walk_pages(read: ReadAt, start: int, end: int, *, bounds: bool = False) -> PageCounts:
    """Walk a column chunk's page headers from ``start``; they must end exactly at ``end``.

    With ``bounds``, the min/max values of the data pages' statistics are collected too.
    """
    values = rows = pages = data_pages = 0
    v1 = False
    found: list[PageBound] = []
    position = start
    block = _Block(read, end)
    while position < end:
        header, header_size = block.header(position)
        kind, size = as_int(header.get(1)), as_int(header.get(3))
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
                for edge, fields in _BOUND_FIELDS:
                    for value in dict.fromkeys(stats.get(f) for f in fields):
                        if isinstance(value, bytes) and value:
                            found.append(PageBound(data_pages, edge, value))
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
            wanted_end = position + min(size, self.end - position)
            if not (self.start <= position and wanted_end <= self.start + len(self.data)):
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
    value = as_int(header.get(field)) if isinstance(header, dict) else None
    if value is None or value < 0:
        raise IntegrityError(f"page at byte {position}: header without a value count")
    return value
