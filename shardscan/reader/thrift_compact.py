"""A bounded reader of the Thrift compact protocol, enough to walk Parquet footers and page headers ourselves.

pyarrow parses the same structures but does not expose every field (page index and bloom filter
locations, page header counts), and the integrity checks must read what the file says rather
than what pyarrow chose to keep. The input is hostile: every length is checked against the bytes
left, nesting is bounded, and any malformation raises :class:`ThriftError` (never an IndexError
or a huge allocation).
"""

from __future__ import annotations

import struct

MAX_DEPTH = 32

# Compact protocol type ids.
_BOOL_TRUE, _BOOL_FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
_SIZES = {_BYTE: 1, _DOUBLE: 8}

Struct = dict[int, object]


class ThriftError(ValueError):
    """The bytes are not a well-formed Thrift compact structure (or one deeper than we accept)."""


class NeedMore(ThriftError):
    """The structure runs past the end of the bytes given: a reader may fetch more and try again."""


def read_struct(data: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
    """Decode the struct starting at ``pos``: its fields by id (structs as dicts, lists as lists,
    binaries as bytes, integers as int, booleans as bool), and the position after it."""
    reader = _Reader(memoryview(data), pos)
    value = reader.struct(0)
    return value, reader.pos


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: memoryview, pos: int) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise NeedMore("truncated")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ThriftError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, size: int) -> bytes:
        if size < 0:
            raise ThriftError("negative length")
        end = self.pos + size
        if end > len(self.data):
            raise NeedMore("truncated")
        out = bytes(self.data[self.pos : end])
        self.pos = end
        return out

    def value(self, kind: int, depth: int) -> object:
        if kind in (_BOOL_TRUE, _BOOL_FALSE):  # inside a container: one byte each
            return self.byte() == _BOOL_TRUE
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind in _SIZES:
            raw = self.take(_SIZES[kind])
            return struct.unpack("<d", raw)[0] if kind == _DOUBLE else raw[0]
        if kind == _BINARY:
            return self.take(self.varint())
        if kind in (_LIST, _SET):
            return self.sequence(depth)
        if kind == _MAP:
            return self.mapping(depth)
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise ThriftError(f"unknown type {kind}")

    def sequence(self, depth: int) -> list[object]:
        if depth >= MAX_DEPTH:
            raise ThriftError("nested too deeply")
        header = self.byte()
        size, kind = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        if size > len(self.data) - self.pos:  # every element takes at least one byte
            raise NeedMore("list longer than the bytes left")
        return [self.value(kind, depth + 1) for _ in range(size)]

    def mapping(self, depth: int) -> list[tuple[object, object]]:
        if depth >= MAX_DEPTH:
            raise ThriftError("nested too deeply")
        size = self.varint()
        if size == 0:
            return []
        if size > len(self.data) - self.pos:
            raise NeedMore("map longer than the bytes left")
        kinds = self.byte()
        return [(self.value(kinds >> 4, depth + 1), self.value(kinds & 0x0F, depth + 1)) for _ in range(size)]

    def struct(self, depth: int) -> Struct:
        if depth >= MAX_DEPTH:
            raise ThriftError("nested too deeply")
        fields: Struct = {}
        last = 0
        while True:
            header = self.byte()
            if header == 0:
                return fields
            delta, kind = header >> 4, header & 0x0F
            field_id = last + delta if delta else self.zigzag()
            if kind in (_BOOL_TRUE, _BOOL_FALSE):
                fields[field_id] = kind == _BOOL_TRUE
            else:
                fields[field_id] = self.value(kind, depth)
            last = field_id


def as_list(value: object) -> list[object]:
    """A field read as a list: itself when it is one, else empty (a hostile file may put anything there)."""
    return value if isinstance(value, list) else []


def as_int(value: object) -> int | None:
    """A field read as an integer: itself when it is one (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
