"""Read JSON Lines shards (``.jsonl``, ``.ndjson``, compressed or not; ``.json``) in bounded batches of lines.

Row = 0-based line number (blank lines count but hold no cells), so a finding's row is the line
to open. Each batch of lines is parsed by pyarrow's JSON reader into the same nested Arrow arrays
as a Parquet row group, so column paths are identical (``conversations[3].content``). Messy
files are expected: when a batch does not parse (a malformed line, or a field whose type changes
between lines) it is split in halves until the offending lines are alone. A JSON object that
pyarrow's reader refuses on its own (a field whose type changes within the line: one message's
content a string, the next one's a list of parts) is parsed and walked in Python, with the same
column paths and roles; a line that is no JSON object is scanned whole as text in column
``__line__``. A line that is not valid JSON at all is additionally reported as unreadable, so a
truncated or corrupt file never passes the gate as clean.

A ``.json`` file is either JSON Lines or one JSON document (``datasets`` reads both). When its
first line is not a JSON object, the file is read whole (up to :data:`DOCUMENT_LIMIT`) as one
document: an array gives a row per element (row = index in the array), an object or any other
value one row. A document that does not parse is scanned whole as text (row 0, ``__line__``) and
reported unreadable, like a malformed line.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from itertools import chain
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from shardscan.errors import ShardReadError, describe_remote_error
from shardscan.reader.cells import LeafCells, escape_template, field_label
from shardscan.reader.parquet import RowGroupBatch, batch_from_table
from shardscan.reader.sources import ShardRef
from shardscan.sizes import format_size

READ_CHUNK_BYTES = 1 << 20
BATCH_BYTES = 8 << 20  # a batch of lines is about one small row group
BATCH_LINES = 65536
RAW_COLUMN = "__line__"
# A .json file that is one document is parsed in memory at once (Python objects take several
# times the file's size); larger documents are reported unreadable, never skipped.
DOCUMENT_LIMIT = 64 << 20
_BOM = b"\xef\xbb\xbf"



class Line(NamedTuple):
    """One line of the shard: its 0-based number (the finding's row) and its bytes.

    A named tuple rather than a dataclass: one is made per line read, and it costs what a tuple does.
    """

    number: int
    text: bytes


class JsonlReader:
    """A JSON Lines shard, read as one stream of line batches."""

    def __init__(self, shard: ShardRef, documents: bool = False) -> None:
        self.shard = shard
        self.documents = documents  # a .json file: JSON Lines or one JSON document
        self._stream = shard.open_stream()

    def metadata_leaves(self) -> tuple[LeafCells, ...]:
        """JSON Lines has no file metadata."""
        return ()

    def batches(self) -> Iterator[RowGroupBatch | ShardReadError]:
        """Batches of parsed lines; malformed lines follow their batch as errors; a read error ends the stream."""
        pending: list[Line] = []
        size = 0
        index = 0
        read = 0  # complete lines read so far
        lines = _lines(self._stream)
        if self.documents:
            try:
                lines = _document_rows(lines)
            except _TooLarge:
                reason = (f"a JSON document (not JSON Lines) over {format_size(DOCUMENT_LIMIT)} is not read; "
                          "convert it to JSON Lines")
                yield ShardReadError(self.shard.display, reason)
                return
            except Exception as exc:  # decompression or network failure while reading the document
                yield ShardReadError(self.shard.display, f"read failed ({describe_remote_error(exc)})")
                return
        while True:
            try:
                line = next(lines, None)
            except Exception as exc:  # decompression or network failure mid-file
                if pending:
                    yield from self._batch(index, pending)
                    index += 1
                reason = f"read failed after {read} complete lines ({describe_remote_error(exc)})"
                yield ShardReadError(self.shard.display, reason, index)
                return
            if line is None:
                break
            read += 1
            if not line.text.strip():
                continue
            pending.append(line)
            size += len(line.text)
            if size >= BATCH_BYTES or len(pending) >= BATCH_LINES:
                yield from self._batch(index, pending)
                index += 1
                pending, size = [], 0
        if pending:
            yield from self._batch(index, pending)

    def _batch(self, index: int, lines: list[Line]) -> Iterator[RowGroupBatch | ShardReadError]:
        leaves: list[LeafCells] = []
        # Only JSON objects go to pyarrow's reader, which crashes the process (not an exception)
        # on a batch of bare nulls or on arrays nested tens of thousands deep.
        parsable = [_parsable_object(text) for _, text in lines]
        objects = [line for line, ok in zip(lines, parsable, strict=True) if ok]
        raw: list[Line] = [line for line, ok in zip(lines, parsable, strict=True) if not ok]
        for table, numbers in _parse(objects, raw) if objects else ():
            for leaf in batch_from_table(table).leaves:
                leaves.append(LeafCells(leaf.template, leaf.values, numbers[leaf.rows], leaf.path_args, leaf.roles))
        problems: list[tuple[int, str]] = []
        # An object pyarrow refuses on its own line changes a field's type within the line (one
        # message's content a string, the next one's a list of parts): walked here instead.
        walked = [(number, value) for number, text in raw if (value := _object_of(text)) is not None]
        if walked:
            leaves += walk_objects(walked)
            done = {number for number, _ in walked}
            raw = [line for line in raw if line.number not in done]
        if raw:
            raw.sort()
            texts = [text.decode("utf-8", "replace") for _, text in raw]
            rows = np.array([number for number, _ in raw], dtype=np.int64)
            leaves.append(LeafCells(RAW_COLUMN, pa.array(texts, type=pa.large_string()), rows))
            problems = [(number, problem) for (number, _), text in zip(raw, texts, strict=True)
                        if (problem := _json_problem(text))]
        yield RowGroupBatch(index=index, row_offset=0, num_rows=len(lines), leaves=tuple(leaves))
        for number, problem in problems:
            yield ShardReadError(self.shard.display, f"{problem} (scanned as text)", index, row=number)


class _TooLarge(Exception):
    """A .json document over DOCUMENT_LIMIT."""


def _document_rows(lines: Iterator[Line]) -> Iterator[Line]:
    """The rows of a .json file as JSON Lines: its own lines when it is JSON Lines, else one
    line per element of the document's array (one line for any other document).

    A document whose objects repeat a key is read as text instead (row 0, ``__line__``): parsed,
    only the last value of a key would survive, and a secret in an earlier one would be lost.
    """
    head: list[Line] = []
    for line in lines:
        head.append(line)
        if line.text.strip():
            break
    first = head[-1].text.strip() if head else b""
    if first.startswith(b"{") and _is_json(first.decode("utf-8", "replace")):
        return chain(head, lines)  # JSON Lines
    body = [text for _, text in head]
    size = sum(len(text) + 1 for text in body)
    if size > DOCUMENT_LIMIT:
        raise _TooLarge
    for _, text in lines:
        size += len(text) + 1
        if size > DOCUMENT_LIMIT:
            raise _TooLarge
        body.append(text)
    whole = b"\n".join(body)
    repeated: list[bool] = []
    try:
        document = json.loads(whole, parse_int=_int_or_digits, object_pairs_hook=_noting_repeats(repeated))
    except (ValueError, RecursionError):  # not JSON, not UTF-8 or too deep
        if all(_is_json(text.decode("utf-8", "replace")) for text in body if text.strip()):
            # JSON Lines after all (a first line that is no object)
            return iter([Line(i, text) for i, text in enumerate(body)])
        return iter([Line(0, whole)])  # scanned as text and reported, like a malformed line
    if repeated:
        return iter([Line(0, whole)])
    elements = document if isinstance(document, list) else [document]
    # A lone surrogate (an emoji cut in half) cannot be written as UTF-8: it is replaced.
    return (Line(i, json.dumps(e, ensure_ascii=False).encode("utf-8", "replace")) for i, e in enumerate(elements))


def _int_or_digits(digits: str) -> int | str:
    """A JSON integer, or its digits when Python would refuse to convert that many."""
    return int(digits) if len(digits) <= 4000 else digits


def _noting_repeats(repeated: list[bool]) -> Callable[[list[tuple[str, object]]], dict[str, object]]:
    """An ``object_pairs_hook`` that builds dicts and notes any object that repeats a key."""

    def hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        built = dict(pairs)
        if len(built) != len(pairs):
            repeated.append(True)
        return built

    return hook


def _lines(stream: pa.NativeFile) -> Iterator[Line]:
    """Split a byte stream into (line number, line) without holding more than one line and one chunk."""
    pending = bytearray()
    number = 0
    searched = 0
    first = True
    while True:
        chunk = stream.read(READ_CHUNK_BYTES)
        if not chunk:
            break
        pending += chunk
        if first:
            if pending.startswith(_BOM):
                del pending[: len(_BOM)]
            first = False
        start = 0
        while (newline := pending.find(b"\n", max(start, searched))) != -1:
            yield Line(number, bytes(pending[start:newline]).rstrip(b"\r"))
            number += 1
            start = newline + 1
        del pending[:start]
        searched = len(pending)
    if pending:
        yield Line(number, bytes(pending).rstrip(b"\r"))


def _parse(lines: list[Line], raw: list[Line], refused: bool = False) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """Parse object lines into tables with each table row's line number; lines pyarrow's reader
    refuses go to ``raw`` (``refused``: it already refused ``lines`` as a whole).

    A refused batch is split in halves until the offending lines are alone. When both halves are
    refused too, offending lines are everywhere (a chat log whose every line mixes content strings
    and lists of parts): the whole batch goes to ``raw``, where Python walks it, instead of being
    split further, since every split parses all of its lines again.
    """
    if not refused:
        table = _read_json([text for _, text in lines])
        if table is not None and table.num_rows == len(lines):
            yield table, np.array([number for number, _ in lines], dtype=np.int64)
            return
    if len(lines) == 1:
        raw.append(lines[0])
        return
    middle = len(lines) // 2
    halves = (lines[:middle], lines[middle:])
    tables = [_read_json([text for _, text in half]) for half in halves]
    readable = [table is not None and table.num_rows == len(half) for half, table in zip(halves, tables, strict=True)]
    if not any(readable):
        raw.extend(lines)
        return
    for half, table, ok in zip(halves, tables, readable, strict=True):
        if ok:
            yield table, np.array([number for number, _ in half], dtype=np.int64)
        else:
            yield from _parse(half, raw, refused=True)


def _read_json(texts: list[bytes]) -> pa.Table | None:
    data = b"\n".join(texts)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        # pyarrow would keep invalid UTF-8 inside string values; make every cell decodable text.
        data = b"\n".join(t.decode("utf-8", "replace").encode("utf-8") for t in texts)
    try:
        options = pj.ReadOptions(block_size=min(len(data) + 1, 2**31 - 1), use_threads=False)
        return pj.read_json(io.BytesIO(data), read_options=options)
    except Exception:  # malformed JSON, type changes between lines, non-object lines
        return None


def _object_of(text: bytes) -> dict[str, object] | None:
    """The line's JSON object, or None (not an object, malformed, too deep, or repeating a key,
    whose earlier value parsing would lose: such a line is scanned as text)."""
    if _OBJECT_START.match(text) is None:
        return None
    repeated: list[bool] = []
    try:
        value = json.loads(text.decode("utf-8", "replace"), parse_int=_int_or_digits,
                           object_pairs_hook=_noting_repeats(repeated))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and not repeated else None


def walk_objects(rows: list[tuple[int, dict[str, object]]]) -> list[LeafCells]:
    """Leaves of parsed JSON objects (row number, object), with the column paths and roles that
    pyarrow's reader and the Parquet flattening give (``messages[1].content[0].text``).

    Strings are cells; numbers, booleans and nulls cannot carry a credential. A key that could
    itself be a secret is shown by position (``#2``) and scanned as a cell of its own (``….#2.name``),
    as for Parquet. Cells of the same path template share one leaf.
    """
    by_template: dict[str, tuple[list[str], list[int], list[tuple[int, ...]], list[str | None]]] = {}

    def add(template: str, text: str, row: int, args: tuple[int, ...], role: str | None) -> None:
        values, numbers, arguments, roles = by_template.setdefault(template, ([], [], [], []))
        values.append(text)
        numbers.append(row)
        arguments.append(args)
        roles.append(role)

    for row, document in rows:
        # Depth first with an explicit stack: a line may nest as deep as json.loads reads.
        stack: list[tuple[object, str, tuple[int, ...], str | None]] = [(document, "", (), None)]
        while stack:
            value, template, args, role = stack.pop()
            if isinstance(value, str):
                add(template, value, row, args, role)
            elif isinstance(value, dict):
                own = value.get("role")
                role = own if isinstance(own, str) else role
                for position, (key, item) in enumerate(value.items()):
                    label = field_label(key, position)
                    path = f"{template}.{escape_template(label)}" if template else escape_template(label)
                    if label != key:
                        add(f"{path}.name", key, row, args, role)
                    stack.append((item, path, args, role))
            elif isinstance(value, list):
                stack.extend((item, template + "[{}]", args + (i,), role) for i, item in enumerate(value))
    leaves: list[LeafCells] = []
    for template, (values, numbers, arguments, roles) in by_template.items():
        path_args = tuple(np.array([a[i] for a in arguments], dtype=np.int64) for i in range(len(arguments[0])))
        # A lone surrogate (an emoji cut in half) cannot be UTF-8: it is replaced, as pyarrow's reader does.
        texts = [v if v.isascii() else v.encode("utf-8", "replace").decode("utf-8") for v in values]
        leaves.append(LeafCells(template, pa.array(texts, pa.large_string()), np.array(numbers, dtype=np.int64),
                                path_args, pa.array(roles, pa.large_string()) if any(roles) else None))
    return leaves


def _is_json(text: str) -> bool:
    return _json_problem(text) is None


def _json_problem(text: str) -> str | None:
    """Why a line is not a readable JSON value (None when it is one)."""
    try:
        json.loads(text)
    except RecursionError:
        return "line is nested too deeply to read"
    except Exception:
        return "line is not valid JSON"
    return None


# Lines with more brackets than this are checked for their nesting depth before pyarrow reads them.
DEEP_BRACKETS = 512
_OBJECT_START = re.compile(rb"[ \t\r\f\v]*\{")


def _parsable_object(line: bytes) -> bool:
    """Whether a line is for pyarrow's reader: a JSON object, not nested deeper than Python's own
    parser reads (about a thousand levels; pyarrow's overflows its stack far beyond that)."""
    if _OBJECT_START.match(line) is None:
        return False
    if line.count(b"[") + line.count(b"{") <= DEEP_BRACKETS:
        return True
    try:
        json.loads(line)
    except RecursionError:
        return False
    except Exception:
        return True  # malformed, not deep: pyarrow rejects it and the line is split off as usual
    return True
