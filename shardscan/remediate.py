"""Remediation: write copies of shards with secret spans replaced, keeping everything else intact.

The engine knows exactly which characters of which cell hold a secret (the encoded span, for a
secret found inside JSON escapes or base64). Redaction replaces those spans in the original cell
text and rewrites only the affected columns of the affected row groups; schema, row order, row
count, row-group layout and file metadata are kept. The output is re-read and re-scanned before
it is accepted, and a manifest records what changed without ever holding a secret.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.atomic import atomic_path, is_output_failure, reason, remove_stale_temps, temp_path, write_file
from shardscan.errors import ConfigError, OutputError, ShardscanError
from shardscan.model import Finding, Status, Verdict
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


def select_findings(
    findings: Iterable[Finding],
    verdicts: set[Verdict] | None = None,
    include_allowlisted: bool = False,
) -> list[Redaction]:
    """The findings to redact: blocking ones by default, or those with the given verdicts.

    Allowlisted findings are reviewed and kept on purpose, so they are left alone unless asked.
    """
    chosen: list[Redaction] = []
    for f in findings:
        if f.status == Status.ALLOWLISTED and not include_allowlisted:
            continue
        wanted = f.verdict in verdicts if verdicts is not None else (f.blocking or f.status == Status.ALLOWLISTED)
        if wanted:
            loc = f.location
            chosen.append(Redaction(loc.shard, loc.row, loc.column, f.rule_id, f.kind, f.fingerprint, f.start, f.end))
    return chosen


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
        raise RedactionError(f"column path {path!r} is a field name: rename the field (a redacted copy keeps the schema)")
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
    return next((c for suffix, c in ((".gz", "gzip"), (".zst", "zstd"), (".bz2", "bz2")) if lower.endswith(suffix)), None)


def _compression(parquet: pq.ParquetFile) -> str:
    try:
        codec = parquet.metadata.row_group(0).column(0).compression
        return "NONE" if codec == "UNCOMPRESSED" else codec
    except Exception:
        return "snappy"


def output_path(out_dir: Path, shard: ShardRef, inputs: frozenset[str] = frozenset()) -> Path:
    """Where a shard's copy goes under ``out_dir``: its display name as a path inside ``out_dir``.

    A shard given by an absolute path (or with ``..``) is displayed that way; joined as it is, it
    would name the source itself, which writing the copy would overwrite. Its root and ``..``
    parts are dropped instead. A target that is the source, or any other input (``inputs``: real
    paths; ``--out`` inside the scanned folder can name one), is refused: redaction never writes
    over, or removes, a file it was given.
    """
    parts = [part for part in PurePosixPath(shard.display.replace("\\", "/")).parts if part not in ("/", ".", "..")]
    target = out_dir.joinpath(*(part.replace(":", "_") for part in parts)) if parts else out_dir / "shard"
    if shard.filesystem is None and target.exists() and os.path.samefile(target, shard.path):
        raise RedactionError(f"{shard.display}: the output would overwrite the shard itself (use --in-place for that)")
    if os.path.realpath(target) in inputs:
        raise RedactionError(f"{shard.display}: the output would overwrite another input shard; choose an --out "
                             "folder outside the inputs")
    return target


def copy_shard(source: ShardRef, destination: Path) -> None:
    """Copy an unaffected shard byte for byte (through a temporary name, with the source's mode)."""
    with atomic_path(destination, mkdir=True, like=Path(source.path)) as temp:
        shutil.copyfile(source.path, temp)


def replace_atomically(source_path: Path, write: Callable[[Path], None], check: Callable[[Path], None]) -> None:
    """Write a new version of ``source_path`` to a temporary file beside it, check it, then rename.

    The temporary name ends in :data:`shardscan.atomic.TEMP_SUFFIX`, which discovery never reads
    as data, so a run killed before the rename leaves nothing a later scan or gate would count;
    the next run that writes the shard removes it. The new file gets the shard's mode, owner and
    group. If writing or checking fails, the original is intact and the temporary file is removed.
    A shard that is a symlink is replaced by the redacted file; the file it pointed to (which other
    links, such as a Hugging Face cache's snapshots, may share) is left as it was.
    """
    with atomic_path(source_path, like=source_path, owner=True, through_links=False) as temp:
        write(temp)
        check(temp)


@contextmanager
def readable_copy(written: Path, original_name: str) -> Iterator[Path]:
    """A path the reader reads ``written`` from as it would read a file named ``original_name``.

    The reader picks a JSON Lines shard's decompression from its name, and a temporary name ends
    in the reserved suffix: a compressed one is decompressed into a second temporary file (also
    with the reserved suffix) for the check, which also proves it decompresses completely.
    """
    compression = stream_compression(original_name)
    if compression is None:
        yield written
        return
    plain = temp_path(written.with_name(Path(original_name).name))
    try:
        with pa.input_stream(str(written), compression=compression) as source, open(plain, "wb") as sink:
            while chunk := source.read(1 << 20):
                sink.write(chunk)
        yield plain
    finally:
        plain.unlink(missing_ok=True)


# ---- manifest -----------------------------------------------------------------------------------

MANIFEST_VERSION = 1
MANIFEST_NAME = "redactions.json"


def default_manifest(out_dir: Path | None) -> Path:
    """Where the manifest goes unless ``--manifest`` says: beside ``--out`` (``clean`` ->
    ``clean.redactions.json``), never inside it; ``redactions.json`` here for ``--in-place``."""
    if out_dir is None:
        return Path(MANIFEST_NAME)
    resolved = out_dir.resolve()
    return resolved.with_name(f"{resolved.name}.{MANIFEST_NAME}")


def load_manifest(path: Path) -> dict:
    """The manifest at ``path`` (an empty one when missing); ConfigError naming it when it is not one.

    Redaction appends to an existing manifest, so a file that is not a shardscan manifest is
    refused rather than replaced.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": MANIFEST_VERSION, "runs": [], "redactions": []}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the existing redaction manifest ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if (
        not isinstance(data, dict)
        or data.get("version") != MANIFEST_VERSION
        or not isinstance(data.get("redactions"), list)
        or not isinstance(data.get("runs", []), list)
    ):
        raise ConfigError(f"{path}: exists and is not a shardscan redaction manifest; choose another --manifest")
    data.setdefault("runs", [])
    return data


def append_manifest(path: Path, entries: list[ManifestEntry], run: dict[str, Any] | None = None) -> dict:
    """Add this run's ``entries`` to the manifest at ``path`` (created if missing); return what was written.

    Earlier runs' entries are kept: a second ``redact`` of the same data adds to the record (each
    entry names its run), it never replaces it. Written through a temporary file and a rename.
    """
    data = load_manifest(path)
    number = len(data["runs"]) + 1
    data["runs"].append({"run": number, **(run or {}), "redactions": len(entries)})
    data["redactions"].extend(
        {
            "run": number,
            "shard": e.shard,
            "row": e.row,
            "column": e.column,
            "rule_id": e.rule_id,
            "fingerprint": e.fingerprint,
            "start": e.start,
            "old_length": e.old_length,
            "new_length": e.new_length,
        }
        for e in entries
    )
    write_file(path, json.dumps(data, indent=2) + "\n")
    return data


def write_manifest(path: Path, entries: list[ManifestEntry]) -> None:
    """``redactions.json``: shard, row, column, rule, fingerprint, old and new lengths (appended to
    an existing manifest, see :func:`append_manifest`)."""
    append_manifest(path, entries)


# ---- orchestration ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RedactOutcome:
    """What ``redact`` did: manifest entries, shards written, copied and failed (with reasons).

    ``stopped`` is set when an output could not be written (a full disk, a read-only folder): the
    run stopped there, and what it lists before that is complete.
    """

    entries: tuple[ManifestEntry, ...]
    written: tuple[str, ...]
    copied: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    stopped: OutputError | None = None


_WRITERS: dict[str, Callable[..., list[ManifestEntry]]] = {"parquet": redact_shard, "jsonl": redact_jsonl_shard}


def redactions_from_report(data: dict, verdicts: set[Verdict] | None, include_allowlisted: bool) -> list[Redaction]:
    """Select redactions from a JSON report (``shardscan scan --format json``)."""
    chosen = []
    for f in data.get("findings", []):
        allowlisted = f.get("status") == str(Status.ALLOWLISTED)
        if allowlisted and not include_allowlisted:
            continue
        wanted = f.get("verdict") in {str(v) for v in verdicts} if verdicts is not None else (f.get("blocking") or allowlisted)
        if wanted:
            chosen.append(
                Redaction(f["shard"], int(f["row"]), f["column"], f["rule_id"], f["kind"], f["fingerprint"],
                          int(f["start"]), int(f["end"]))
            )
    return chosen


def redact(
    shards: list[ShardRef],
    redactions: list[Redaction],
    out_dir: Path | None,
    *,
    rescan: Callable[[ShardRef], set[str]],
    template: str = DEFAULT_REPLACEMENT,
    only_changed: bool = False,
    in_place: bool = False,
) -> RedactOutcome:
    """Write redacted copies (or replace in place, atomically) and verify each by re-scanning.

    ``rescan`` returns the fingerprints found in a written shard; a shard whose output still holds
    a fingerprint that was to be redacted fails, and (in place) the original is left untouched.
    Every file is written under a temporary name (see :mod:`shardscan.atomic`) and renamed once
    complete and checked; temporary files that killed runs left beside the files written are
    removed first. An output that cannot be written stops the run (``stopped``).
    """
    by_shard: dict[str, list[Redaction]] = defaultdict(list)
    for r in redactions:
        by_shard[r.shard].append(r)
    inputs = frozenset(os.path.realpath(s.path) for s in shards if s.filesystem is None)
    entries: list[ManifestEntry] = []
    written: list[str] = []
    copied: list[str] = []
    failed: list[tuple[str, str]] = []

    def outcome(stopped: OutputError | None = None) -> RedactOutcome:
        return RedactOutcome(tuple(entries), tuple(written), tuple(copied), tuple(failed), stopped)

    if in_place:
        try:
            for shard in shards:
                if shard.filesystem is None:
                    remove_stale_temps(Path(shard.path))
        except OutputError as err:
            return outcome(err)
    for shard in shards:
        items = by_shard.get(shard.display, [])
        if not items:
            if not in_place and not only_changed and out_dir is not None:
                target = out_dir
                try:
                    target = output_path(out_dir, shard, inputs)
                    copy_shard(shard, target)
                except RedactionError as err:
                    failed.append((shard.display, str(err)))
                    continue
                except OutputError as err:
                    return outcome(err)
                except OSError as exc:
                    if is_output_failure(exc):
                        return outcome(OutputError(str(target), reason(exc)))
                    failed.append((shard.display, f"{shard.display}: copy failed ({type(exc).__name__})"))
                    continue
                copied.append(shard.display)
            continue
        wanted = {r.fingerprint for r in items}

        def check(path: Path, shard: ShardRef = shard, wanted: set[str] = wanted) -> None:
            with readable_copy(path, shard.path) as readable:
                left = rescan(ShardRef(display=shard.display, path=str(readable), format=shard.format)) & wanted
            if left:
                raise RedactionError(f"{shard.display}: {len(left)} secret(s) still present after redaction")

        result: list[ManifestEntry] = []

        def write(path: Path, shard: ShardRef = shard, items: list[Redaction] = items) -> None:
            result.extend(writer(shard, path, items, template))

        if shard.filesystem is not None or shard.format not in _WRITERS:
            message = f"{shard.display}: redaction writes local Parquet and JSON Lines (.jsonl, .ndjson) shards only"
            failed.append((shard.display, message))
            continue
        writer = _WRITERS[shard.format]

        target = Path(shard.path)
        try:
            if in_place:
                replace_atomically(target, write, check)
            else:
                assert out_dir is not None
                target = output_path(out_dir, shard, inputs)
                # Folders below --out mirror the inputs' layout: they are part of the asked-for output.
                with atomic_path(target, mkdir=True, like=Path(shard.path)) as temp:
                    write(temp)
                    check(temp)
        except RedactionError as err:
            failed.append((shard.display, str(err)))
            continue
        except OutputError as err:
            return outcome(err)
        except Exception as exc:  # a pyarrow failure must not escape with data in its message
            if is_output_failure(exc):
                return outcome(OutputError(str(target), reason(exc)))
            failed.append((shard.display, f"{shard.display}: redaction failed ({type(exc).__name__})"))
            continue
        entries += result
        written.append(shard.display)
    known = {s.display for s in shards}
    for name in sorted(set(by_shard) - known):
        failed.append((name, f"{name}: shard named in the findings was not among the inputs"))
    return outcome()
