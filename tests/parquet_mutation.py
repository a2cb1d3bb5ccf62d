"""Hand-mutate a Parquet footer in tests: a small typed Thrift compact reader and writer.

The footer is a Thrift compact ``FileMetaData``; these helpers read it keeping every field's type,
let a test change one field (a row group's ``num_rows``, a column chunk's page offset) or drop a
row group, and write the file back with the footer length fixed. Independent of the production
reader on purpose: a test should not trust the code it checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12


@dataclass
class TStruct:
    """A Thrift struct: field id -> (type id, value), in the order read."""

    fields: dict[int, tuple[int, object]] = field(default_factory=dict)

    def __getitem__(self, field_id: int) -> object:
        return self.fields[field_id][1]

    def __setitem__(self, field_id: int, value: object) -> None:
        kind = self.fields[field_id][0]
        self.fields[field_id] = (kind, value)

    def put(self, field_id: int, kind: int, value: object) -> None:
        """Set a field, adding it with type ``kind`` when absent."""
        self.fields[field_id] = (kind, value)

    def __contains__(self, field_id: int) -> bool:
        return field_id in self.fields


@dataclass
class TList:
    """A Thrift list: element type id and the items."""

    kind: int
    items: list


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> object:
        if kind in (1, 2):
            return self.byte() == 1
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 3:
            return self.byte()
        if kind == 7:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if kind == BINARY:
            size = self.varint()
            self.pos += size
            return self.data[self.pos - size : self.pos]
        if kind in (LIST, 10):
            header = self.byte()
            size, elem = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            return TList(elem, [self.value(elem) for _ in range(size)])
        if kind == STRUCT:
            return self.struct()
        raise ValueError(f"type {kind} not supported by the test helper")

    def struct(self) -> TStruct:
        out = TStruct()
        last = 0
        while (header := self.byte()) != 0:
            delta, kind = header >> 4, header & 0x0F
            fid = last + delta if delta else self.zigzag()
            out.fields[fid] = (kind, kind == 1) if kind in (1, 2) else (kind, self.value(kind))
            last = fid
        return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _encode_value(kind: int, value: object) -> bytes:
    if kind in (1, 2):
        return bytes([1 if value else 2])
    if kind in (4, 5, 6):
        return _zigzag(value)
    if kind == 3:
        return bytes([value])
    if kind == 7:
        return bytes(value)
    if kind == BINARY:
        return _varint(len(value)) + bytes(value)
    if kind in (LIST, 10):
        size = len(value.items)
        head = bytes([(size << 4) | value.kind]) if size < 15 else bytes([0xF0 | value.kind]) + _varint(size)
        return head + b"".join(_encode_value(value.kind, item) for item in value.items)
    if kind == STRUCT:
        return encode_struct(value)
    raise ValueError(kind)


def encode_struct(struct: TStruct) -> bytes:
    """The compact encoding of ``struct`` (fields in ascending id order)."""
    out = bytearray()
    last = 0
    for fid in sorted(struct.fields):
        kind, value = struct.fields[fid]
        wire = (1 if value else 2) if kind in (1, 2) else kind
        delta = fid - last
        out += bytes([(delta << 4) | wire]) if 0 < delta <= 15 else bytes([wire]) + _zigzag(fid)
        if kind not in (1, 2):
            out += _encode_value(kind, value)
        last = fid
    return bytes(out + b"\x00")


def read_struct_at(data: bytes, pos: int) -> tuple[TStruct, int]:
    """The typed struct at ``pos`` (e.g. a page header) and the position after it."""
    reader = _Reader(data, pos)
    return reader.struct(), reader.pos


@dataclass
class ParquetFooter:
    """A shard split into its bytes before the footer and its footer, typed."""

    body: bytes
    meta: TStruct

    @classmethod
    def read(cls, path: Path) -> ParquetFooter:
        raw = path.read_bytes()
        length = int.from_bytes(raw[-8:-4], "little")
        start = len(raw) - 8 - length
        meta, end = read_struct_at(raw, start)
        assert end == len(raw) - 8
        return cls(raw[:start], meta)

    def write(self, path: Path) -> None:
        """Write the shard back, with the footer length of the (possibly changed) footer."""
        footer = encode_struct(self.meta)
        path.write_bytes(self.body + footer + len(footer).to_bytes(4, "little") + b"PAR1")

    @property
    def row_groups(self) -> list[TStruct]:
        return self.meta[4].items

    def column_meta(self, row_group: int, column: int) -> TStruct:
        """A column chunk's ColumnMetaData."""
        return self.row_groups[row_group][1].items[column][3]
