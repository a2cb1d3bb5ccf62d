"""Rewriting a shard with cell spans replaced: the Parquet and JSON Lines writers of redaction.

The engine knows exactly which characters of which cell hold a secret (the encoded span, for a
secret found inside JSON escapes or base64). Redaction replaces those spans in the original cell
text and rewrites only the affected columns of the affected row groups; schema, row order, row
count, row-group layout and file metadata are kept.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.errors import ShardscanError
from shardscan.reader import METADATA_ROW, ShardRef
from shardscan.reader.cells import field_label
from shardscan.reader.parquet import row_group_offsets
from shardscan.reader.parquet_integrity import STATISTICS_COLUMN

DEFAULT_REPLACEMENT = "[REDACTED:{kind}:{fp}]"


class RedactionError(ShardscanError):
    """Redaction could not be completed safely for a shard; names the shard, never the data."""


@dataclass(frozen=True, slots=True)
class Redaction:
    """One span of one cell to replace."""

    shard: str
    row: int
    column: str
    rule_id: str
    kind: str
    fingerprint: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """What was replaced where (lengths only, never content)."""

    shard: str
    row: int
    column: str
    rule_id: str
    fingerprint: str
    start: int
    old_length: int
    new_length: int

def replacement_text(template: str, redaction: Redaction) -> str:
    """Fill the placeholder template: ``{kind}``, ``{rule}`` and ``{fp}`` (first 4 hex of the fingerprint).

    The same secret always gets the same placeholder, so analyses comparing rows still work.
    """
    digest = redaction.fingerprint.removeprefix("sha256:")
    return template.replace("{kind}", redaction.kind).replace("{rule}", redaction.rule_id).replace("{fp}", digest[:4])


def apply_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """Replace each (start, end, replacement) span of ``text``; overlapping spans are merged."""
    merged: list[list[Any]] = []
    for start, end, repl in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            continue
        merged.append([start, end, repl])
    for start, end, repl in reversed(merged):
        text = text[:start] + repl + text[end:]
    return text


# ---- column paths -------------------------------------------------------------------------------

Step = tuple[str, Any]  # ("field", name) | ("index", n) | ("map", label) | ("map_key", label)


def parse_column_path(path: str, schema: pa.Schema) -> tuple[str, list[Step]]:
    """Split a reported column path into its top-level column and the steps below it.

    Field names are matched against the schema (longest first), so names containing dots or
    brackets still resolve; a field shown as ``#<i>`` (a name that could be a secret) is the
    i-th field. A finding in a field *name* (``….name`` after ``#<i>``) cannot be redacted in
    place: the schema would change.
    """
    if _NAME_CELL.search(path):
        raise RedactionError(
            f"column path {path!r} is a field name: rename the field (a redacted copy keeps the schema)"
        )
    resolved = _field_at(path, schema.names)
    if resolved is None:
        raise RedactionError(f"column path {path!r} does not match the shard's schema")
    top, shown = resolved
    steps: list[Step] = []
    rest = path[shown:]
    dtype = schema.field(top).type
    while rest:
        if pa.types.is_dictionary(dtype):
            dtype = dtype.value_type
        if pa.types.is_struct(dtype) and rest.startswith("."):
            field = _field_at(rest[1:], [f.name for f in dtype])
            if field is None:
                raise RedactionError(f"column path {path!r}: no struct field at {rest[:20]!r}")
            name, shown = field
            steps.append(("field", name))
            dtype = dtype.field(name).type
            rest = rest[1 + shown:]
        elif pa.types.is_map(dtype) and rest.startswith("{"):
            close = rest.index("}")
            label = rest[1:close]
            rest = rest[close + 1:]
            if rest.startswith(".key"):
                steps.append(("map_key", label))
                dtype, rest = dtype.key_type, rest[4:]
            else:
                steps.append(("map", label))
                dtype = dtype.item_type
        elif rest.startswith("["):
            match = re.match(r"\[(\d+)\]", rest)
            if not match:
                raise RedactionError(f"column path {path!r}: bad list index")
            steps.append(("index", int(match.group(1))))
            dtype = dtype.value_type
            rest = rest[match.end():]
        else:
            raise RedactionError(f"column path {path!r} does not match the shard's schema at {rest[:20]!r}")
    return top, steps


# A field name reported as a cell of its own: ``…#<i>.name`` (see reader.cells.field_label).
_NAME_CELL = re.compile(r"#\d+\.name$")
_POSITION = re.compile(r"#(\d+)(?=$|[.\[{])")


def _field_at(text: str, names: list[str]) -> tuple[str, int] | None:
    """The field ``text`` starts with and how many characters show it: its name, or ``#<i>``
    for a field whose name is not shown."""
    name = _longest_prefix(text, names)
    if name is not None:
        return name, len(name)
    match = _POSITION.match(text)
    if match and int(match.group(1)) < len(names):
        position = int(match.group(1))
        if field_label(names[position], position) != names[position]:
            return names[position], match.end()
    return None


def _longest_prefix(text: str, names: Iterable[str]) -> str | None:
    for name in sorted(names, key=len, reverse=True):
        if text.startswith(name) and (len(text) == len(name) or text[len(name)] in ".[{"):
            return name
    return None


def _edit(value: Any, steps: list[Step], fn: Callable[[Any], Any]) -> Any:
    if not steps:
        return fn(value)
    (kind, arg), rest = steps[0], steps[1:]
    if value is None:
        raise RedactionError("path leads through a null value")
    if kind == "field":
        value = dict(value)
        value[arg] = _edit(value[arg], rest, fn)
        return value
    if kind == "index":
        value = list(value)
        value[arg] = _edit(value[arg], rest, fn)
        return value
    entries = list(value)
    for i, (key, item) in enumerate(entries):
        label = f"#{i}"
        if arg == label or (kind == "map" and str(key) == arg):
            if kind == "map_key":
                entries[i] = (_edit(key, rest, fn), item)
            else:
                entries[i] = (key, _edit(item, rest, fn))
            return entries
    raise RedactionError("map entry of the path not found")


def _replace_cell(spans: list[tuple[int, int, str]]) -> Callable[[Any], Any]:
    def fn(cell: Any) -> Any:
        if isinstance(cell, bytes):
            # Offsets were taken on the text decoded with replacement; write back that text.
            return apply_spans(cell.decode("utf-8", "replace"), spans).encode("utf-8")
        if not isinstance(cell, str):
            raise RedactionError("path does not lead to a string cell")
        return apply_spans(cell, spans)

    return fn


# ---- shards -------------------------------------------------------------------------------------


def redact_shard(
    source: ShardRef,
    destination: Path,
    redactions: list[Redaction],
    template: str = DEFAULT_REPLACEMENT,
) -> list[ManifestEntry]:
    """Write ``destination``: ``source`` with every redaction applied; return the manifest entries.

    Only the row groups and top-level columns that hold a redaction are converted to Python and
    rebuilt; every other column is written as read.
    """
    with pq.ParquetFile(source.path) as parquet:
        return _redact_parquet(parquet, source, destination, redactions, template)


def _redact_parquet(
    parquet: pq.ParquetFile, source: ShardRef, destination: Path, redactions: list[Redaction], template: str
) -> list[ManifestEntry]:
    schema = parquet.schema_arrow
    by_cell: dict[tuple[int, str], list[Redaction]] = defaultdict(list)
    for r in redactions:
        by_cell[(r.row, r.column)].append(r)

    manifest: list[ManifestEntry] = []
    metadata = dict(schema.metadata or {})
    for (row, column), items in sorted(by_cell.items()):
        if row != METADATA_ROW:
            continue
        if column.startswith(STATISTICS_COLUMN + "."):
            continue  # the copy's statistics are computed from its (redacted) cells: the stale ones are gone
        key = column.removeprefix("__metadata__.").encode()
        if key not in metadata:
            raise RedactionError(f"{source.display}: metadata key of {column!r} not found")
        text = metadata[key].decode("utf-8", "replace")
        spans = [(r.start, r.end, replacement_text(template, r)) for r in items]
        metadata[key] = apply_spans(text, spans).encode()
        manifest += _manifest(items, template)
    schema = schema.with_metadata(metadata) if metadata else schema

    offsets = row_group_offsets(parquet)
    compression = _compression(parquet)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(destination, schema, compression=compression) as writer:
        for index, first in enumerate(offsets):
            table = parquet.read_row_group(index)
            last = first + table.num_rows
            here = {k: v for k, v in by_cell.items() if first <= k[0] < last}
            if here:
                table = _redact_row_group(table, schema, first, here, template, source.display)
                for items in here.values():
                    manifest += _manifest(items, template)
            writer.write_table(table.replace_schema_metadata(schema.metadata), row_group_size=max(1, table.num_rows))
    return sorted(manifest, key=lambda m: (m.row, m.column, m.start))


def _redact_row_group(
    table: pa.Table,
    schema: pa.Schema,
    first_row: int,
    cells: dict[tuple[int, str], list[Redaction]],
    template: str,
    shard: str,
) -> pa.Table:
    by_top: dict[str, list[tuple[int, list[Step], list[Redaction]]]] = defaultdict(list)
    for (row, column), items in cells.items():
        try:
            top, steps = parse_column_path(column, schema)
        except RedactionError as err:
            raise RedactionError(f"{shard}: row {row}: {err}") from None
        by_top[top].append((row - first_row, steps, items))
    for top, edits in by_top.items():
        index = table.schema.get_field_index(top)
        column = table.column(index)
        values = column.to_pylist()
        for row, steps, items in edits:
            spans = [(r.start, r.end, replacement_text(template, r)) for r in items]
            try:
                values[row] = _edit(values[row], steps, _replace_cell(spans))
            except (RedactionError, KeyError, IndexError, TypeError) as err:
                raise RedactionError(f"{shard}: row {row + first_row}: cannot apply redaction ({err})") from None
        table = table.set_column(index, table.field(index), pa.array(values, type=column.type))
    return table


def redact_jsonl_shard(
    source: ShardRef,
    destination: Path,
    redactions: list[Redaction],
    template: str = DEFAULT_REPLACEMENT,
) -> list[ManifestEntry]:
    """Write a JSON Lines shard with every redaction applied, in the source's compression.

    Lines without a redaction are copied byte for byte; a line with one is parsed, edited along
    the column path and written back as compact JSON (its key order kept).
    """
    by_row: dict[int, list[Redaction]] = defaultdict(list)
    for r in redactions:
        by_row[r.row].append(r)
    compression = stream_compression(source.path)
    manifest: list[ManifestEntry] = []
    destination.parent.mkdir(parents=True, exist_ok=True)
    stream = source.open_stream()
    with pa.output_stream(str(destination), compression=compression) as out:
        for number, line in enumerate(_raw_lines(stream)):
            items = by_row.pop(number, None)
            if items:
                line = _redact_json_line(line, items, template, number == 0, source.display)
                manifest += _manifest(items, template)
            out.write(line)
    if by_row:
        raise RedactionError(f"{source.display}: row {min(by_row)} not found in the file")
    return sorted(manifest, key=lambda m: (m.row, m.column, m.start))


def _raw_lines(stream: Any) -> Iterable[bytes]:
    """Lines with their terminators, so untouched lines are written back exactly."""
    pending = b""
    while chunk := stream.read(1 << 20):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
    if pending:
        yield pending


def _redact_json_line(line: bytes, items: list[Redaction], template: str, first: bool, shard: str) -> bytes:
    body = line.rstrip(b"\r\n")
    ending = line[len(body):]
    bom = b"\xef\xbb\xbf" if first and body.startswith(b"\xef\xbb\xbf") else b""
    text = body[len(bom):].decode("utf-8", "replace")
    by_column: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for r in items:
        by_column[r.column].append((r.start, r.end, replacement_text(template, r)))
    if set(by_column) == {"__line__"}:
        # The line was scanned whole as text (it is not a JSON object): edit it as text.
        return bom + apply_spans(text, by_column["__line__"]).encode("utf-8") + ending
    try:
        value = json.loads(text)
        for column, spans in by_column.items():
            value = _edit_json(value, column, _replace_cell(spans), top=True)
    except (ValueError, KeyError, IndexError, TypeError, RedactionError) as err:
        raise RedactionError(f"{shard}: row {items[0].row}: cannot apply redaction ({type(err).__name__})") from None
    return bom + json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + ending


def _edit_json(value: Any, path: str, fn: Callable[[Any], Any], top: bool = False) -> Any:
    """Follow a reported column path (``a.b[2].c``) through parsed JSON and apply ``fn`` at its end."""
    if not path:
        return fn(value)
    if isinstance(value, list):
        match = re.match(r"\[(\d+)\]", path)
        if not match:
            raise RedactionError("column path does not match the JSON value")
        value = list(value)
        i = int(match.group(1))
        value[i] = _edit_json(value[i], path[match.end():], fn)
        return value
    if isinstance(value, dict):
        if not top:
            if not path.startswith("."):
                raise RedactionError("column path does not match the JSON value")
            path = path[1:]
        key = _longest_prefix(path, value.keys())
        shown = len(key) if key is not None else 0
        if key is None and (match := _POSITION.match(path)):
            # A key shown by position (it could be a secret): the position is the field's in the
            # batch the line was read in, so the line's own key is the one key it hides.
            hidden = [k for i, k in enumerate(value) if field_label(k, i) != k]
            if len(hidden) != 1:
                raise RedactionError("column path names a hidden key the line does not hold exactly once")
            key, shown = hidden[0], match.end()
        if key is None:
            raise RedactionError("column path names a key the line does not have")
        if path[shown:] == ".name":  # the key itself holds the secret: rename it
            return {(fn(k) if k == key else k): v for k, v in value.items()}
        value = dict(value)
        value[key] = _edit_json(value[key], path[shown:], fn)
        return value
    raise RedactionError("column path leads through a scalar")


def _manifest(items: list[Redaction], template: str) -> list[ManifestEntry]:
    return [
        ManifestEntry(r.shard, r.row, r.column, r.rule_id, r.fingerprint, r.start, r.end - r.start,
                      len(replacement_text(template, r)))
        for r in items
    ]


def stream_compression(name: str) -> str | None:
    """The compression a JSON Lines shard's name implies (``.gz``, ``.zst``, ``.bz2``), or None."""
    lower = name.lower()
    suffixes = ((".gz", "gzip"), (".zst", "zstd"), (".bz2", "bz2"))
    return next((c for suffix, c in suffixes if lower.endswith(suffix)), None)


def _compression(parquet: pq.ParquetFile) -> str:
    try:
        codec = parquet.metadata.row_group(0).column(0).compression
        return "NONE" if codec == "UNCOMPRESSED" else codec
    except Exception:
        return "snappy"

