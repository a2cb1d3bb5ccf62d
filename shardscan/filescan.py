"""Scan files that are not columnar shards: text in chunks of lines, CSV/TSV by header, tar archives member by member.

Text (Markdown, code, configs, logs, anything that decodes as text) is read as a stream and cut
into cells of up to :data:`CHUNK_LINES` lines (or :data:`CHUNK_BYTES`), consecutive cells sharing
:data:`OVERLAP_LINES` lines so that a secret printed across a cell boundary (a wrapped token, a
string concatenated over lines) is still whole in one cell. A PEM block (``-----BEGIN ...``) is
never cut: its cell grows until the ``-----END`` line, up to :data:`MAX_BLOCK_BYTES`. A finding is
then placed at the line it starts on: row = 0-based line number, column ``__text__``, start and
end offsets in characters from the start of that line (end may run past the line for a
multi-line secret). A line longer than :data:`MAX_PIECE_CHARS` is scanned in overlapping pieces,
each placed by its offset in the line; memory stays bounded however long a line is.

CSV/TSV: one cell per field, column = the header's name, row = 0-based data row (the header line
is not a row). A file the CSV parser cannot read whole (a row whose field count differs from the
header's, an unterminated quote) is scanned as text instead (``__text__``, row = line), so a
malformed split is still fully read.

Tar (WebDataset shards; gzip, bzip2, xz or zstd compressed): each regular member is copied to a
private temporary file (bounded by :data:`MAX_MEMBER_BYTES`) and scanned like a file of its own,
by suffix or content, shown as ``archive.tar!/member.json``. Exclusion globs apply to member
paths. Limits hit (member count, member size, nesting depth) are reported, never skipped silently.
"""

from __future__ import annotations

import codecs
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from shardscan.errors import ShardReadError, describe_exception
from shardscan.model import BatchResult, Finding, IssueKind, NotScanned, ScanIssue, ScanStats
from shardscan.reader.cells import LeafCells
from shardscan.reader.discovery import classify, format_by_suffix
from shardscan.reader.exclude import compile_patterns, default_exclusion, matches
from shardscan.reader.parquet import RowGroupBatch, batch_from_table
from shardscan.reader.sources import ShardRef
from shardscan.scanning.protocol import ShardScanner
from shardscan.scanning.values import Timer

TEXT_COLUMN = "__text__"
CHUNK_LINES = 64
CHUNK_BYTES = 64 << 10
OVERLAP_LINES = 2
MAX_BLOCK_BYTES = 1 << 20
MAX_PIECE_CHARS = 1 << 20
PIECE_OVERLAP_CHARS = 4096
READ_BYTES = 1 << 20
BATCH_CHARS = 8 << 20
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 4 << 30
MAX_ARCHIVE_DEPTH = 3

_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{1,64}-----")
_END = re.compile(r"-----END [A-Z0-9 ]{1,64}-----")
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class TextCell:
    """A cell of a text file: its text, the 0-based line it starts on and its character offset in that line."""

    line: int
    offset: int
    text: str


# ---- text ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Segment:
    """Decoded text of one line, or of part of a line too long to hold (``complete`` False).

    ``advance`` is how far the next segment of the same line starts after this one's start (the
    segments of a long line overlap, so a secret at a cut is whole in one of them).
    """

    text: str
    complete: bool
    advance: int


def text_cells(chunks: Iterator[bytes]) -> Iterator[TextCell | int]:
    """Cut a byte stream into text cells; yields each cell, and the number of lines read (last).

    Bounded: a cell holds at most CHUNK_BYTES of whole lines (MAX_BLOCK_BYTES inside a PEM block),
    and a longer line is split into overlapping pieces of MAX_PIECE_CHARS, placed by their offset
    in the line.
    """
    cutter = _Cutter()
    for item in _decoded_lines(chunks):
        if isinstance(item, _Segment):
            yield from cutter.segment(item)
            continue
        lines = item.lines
        if cutter.offset and lines:  # the end of a line handed over in segments so far
            yield from cutter.segment(_Segment(lines[0], True, len(lines[0])))
            lines = lines[1:]
        if not cutter.in_block and "-----BEGIN" not in item.text and item.longest <= SHORT_LINE_CHARS:
            yield from cutter.short_lines(lines)
        else:
            for line in lines:
                yield from cutter.line(line)
    yield from cutter.finish()
    yield cutter.number


# Lines at most this long go into cells a block at a time (CHUNK_LINES of them stay within CHUNK_BYTES).
SHORT_LINE_CHARS = CHUNK_BYTES // CHUNK_LINES


class _Cutter:
    """The state of cutting lines into cells: the lines waiting, where they start, PEM blocks."""

    def __init__(self) -> None:
        self.buf: list[str] = []
        self.size = 0
        self.first = 0  # line number of buf[0]
        self.number = 0  # lines read
        self.offset = 0  # where the current segment starts in its line (inside a long line only)
        self.in_block = False
        self.fresh = 0  # lines in ``buf`` not yet in an emitted cell

    def short_lines(self, lines: list[str]) -> Iterator[TextCell]:
        """Lines of at most SHORT_LINE_CHARS outside a PEM block: taken by slices, no per-line work."""
        i = 0
        while i < len(lines):
            take = lines[i : i + CHUNK_LINES - len(self.buf)]
            self.buf += take
            self.size += sum(map(len, take))
            self.fresh += len(take)
            self.number += len(take)
            i += len(take)
            if len(self.buf) >= CHUNK_LINES:
                yield self._emit()

    def line(self, line: str) -> Iterator[TextCell]:
        """One whole line (any length); a PEM block's lines stay in one cell."""
        if len(line) > MAX_PIECE_CHARS:
            yield from self.segment(_Segment(line, True, len(line)))
            return
        self.buf.append(line)
        self.size += len(line)
        self.fresh += 1
        self.number += 1
        if _BEGIN.search(line):
            self.in_block = True
        if self.in_block and _END.search(line):
            self.in_block = False
        full = len(self.buf) >= CHUNK_LINES or self.size >= CHUNK_BYTES
        if full and (not self.in_block or self.size >= MAX_BLOCK_BYTES):
            self.in_block = False
            yield self._emit()

    def segment(self, segment: _Segment) -> Iterator[TextCell]:
        """A line too long to hold, or one segment of it: its own pieces, at their offset in the line."""
        yield from self.finish()
        self.buf, self.size, self.fresh, self.in_block = [], 0, 0, False
        yield from _pieces(self.number, segment.text, self.offset)
        self.offset += segment.advance
        if segment.complete:
            self.number += 1
            self.offset = 0
        self.first = self.number

    def finish(self) -> Iterator[TextCell]:
        """The last cell, if lines are waiting that no cell holds yet."""
        if self.fresh:
            yield TextCell(self.first, 0, "".join(self.buf))
            self.fresh = 0

    def _emit(self) -> TextCell:
        cell = TextCell(self.first, 0, "".join(self.buf))
        keep = self.buf[-OVERLAP_LINES:] if len(self.buf) > OVERLAP_LINES else []
        self.buf, self.size, self.fresh = keep, sum(map(len, keep)), 0
        self.first = self.number - len(keep)
        return cell


def _pieces(number: int, line: str, base: int) -> Iterator[TextCell]:
    step = MAX_PIECE_CHARS - PIECE_OVERLAP_CHARS
    for start in range(0, len(line), step):
        yield TextCell(number, base + start, line[start : start + MAX_PIECE_CHARS])
        if start + MAX_PIECE_CHARS >= len(line):
            break


@dataclass(frozen=True, slots=True)
class _Lines:
    """Whole lines decoded together (each with its newline, but maybe the file's last)."""

    text: str
    lines: list[str]
    longest: int


def _decoded_lines(chunks: Iterator[bytes]) -> Iterator[_Lines | _Segment]:
    """The stream's lines decoded as UTF-8 (a byte order mark dropped), a read's worth at a time.

    Memory is bounded: a line still without its newline after 4 * MAX_PIECE_CHARS bytes is handed
    over in segments that overlap by PIECE_OVERLAP_CHARS bytes.
    """
    pending = b""
    first = True
    for chunk in chunks:
        data = pending + chunk
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        first = False
        end = data.rfind(b"\n") + 1
        pending = data[end:]
        if end:
            yield _lines(data[:end].decode("utf-8", "replace"))
        if len(pending) > 4 * MAX_PIECE_CHARS:
            cut = _char_boundary(pending, len(pending) - MAX_PIECE_CHARS)
            keep = _char_boundary(pending, cut - PIECE_OVERLAP_CHARS)
            text = pending[:cut].decode("utf-8", "replace")
            yield _Segment(text, False, len(text) - len(pending[keep:cut].decode("utf-8", "replace")))
            pending = pending[keep:]
    if pending:
        yield _lines(pending.decode("utf-8", "replace"))


def _lines(text: str) -> _Lines:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return _Lines(text, lines, max(map(len, lines), default=0))


def _char_boundary(data: bytes, index: int) -> int:
    """``index`` moved back to the start of a UTF-8 character."""
    while index > 0 and data[index] & 0xC0 == 0x80:
        index -= 1
    return index


def scan_text_file(scanner: ShardScanner, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
    """Scan a text file in bounded batches of cells; findings placed at their line (see module doc)."""
    timer = timer or Timer()
    stream = shard.open_stream()
    issues: list[ScanIssue] = []
    cells_in: Iterator[TextCell | int] = text_cells(_chunks(stream, shard, issues))
    return _scan_cells(scanner, shard, cells_in, timer, issues)


def scan_utf16_text_file(scanner: ShardScanner, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
    """Scan a UTF-16 text file (with a byte order mark) like any text file, transcoded to UTF-8 as it
    streams (offsets are characters either way)."""
    timer = timer or Timer()
    stream = shard.open_stream()
    issues: list[ScanIssue] = []
    decoder = codecs.getincrementaldecoder("utf-16")("replace")
    transcoded = (decoder.decode(chunk).encode("utf-8") for chunk in _chunks(stream, shard, issues))
    return _scan_cells(scanner, shard, text_cells(transcoded), timer, issues)


def _chunks(stream: pa.NativeFile, shard: ShardRef, issues: list[ScanIssue]) -> Iterator[bytes]:
    try:
        with stream:
            while chunk := stream.read(READ_BYTES):
                yield chunk
    except Exception as exc:  # decompression or I/O failure part-way: what was read is still scanned
        issues.append(ScanIssue(shard.display, IssueKind.UNREADABLE, f"read failed ({describe_exception(exc)})"))


def _scan_cells(
    scanner: ShardScanner, shard: ShardRef, cells: Iterator[TextCell | int], timer: Timer, issues: list[ScanIssue]
) -> BatchResult:
    findings: dict[tuple[object, ...], Finding] = {}
    stats = ScanStats()
    batch: list[TextCell] = []
    chars = 0
    index = 0
    lines = 0
    while True:
        t = time.perf_counter()
        cell = next(cells, 0)
        timer.add("read", t)  # reading, decoding and cutting the text into cells
        if isinstance(cell, int):
            lines = cell
            break
        batch.append(cell)
        chars += len(cell.text)
        if chars >= BATCH_CHARS:
            stats += _scan_text_batch(scanner, shard, batch, index, timer, findings, issues)
            batch, chars, index = [], 0, index + 1
    if batch:
        stats += _scan_text_batch(scanner, shard, batch, index, timer, findings, issues)
    stats = replace(stats, rows=lines)
    return BatchResult(tuple(sorted(findings.values(), key=Finding.sort_key)), tuple(issues), stats)


def _scan_text_batch(
    scanner: ShardScanner, shard: ShardRef, cells: list[TextCell], index: int, timer: Timer,
    findings: dict[tuple[object, ...], Finding], issues: list[ScanIssue],
) -> ScanStats:
    """Scan cells as one batch (row = the cell's index), then place findings and issues at their lines."""
    leaf = LeafCells(TEXT_COLUMN, pa.array([c.text for c in cells], pa.large_string()),
                     np.arange(len(cells), dtype=np.int64))
    batch = RowGroupBatch(index=index, row_offset=0, num_rows=0, leaves=(leaf,))
    found = scanner.scan_batch(batch, shard.display, timer)
    for finding in found.findings:
        placed = place(finding, cells[finding.location.row])
        # Overlapping cells find a secret in their shared lines twice, at the same place.
        findings.setdefault(placed.sort_key(), placed)
    for issue in found.issues:
        cell = cells[issue.row] if issue.row is not None and 0 <= issue.row < len(cells) else None
        issues.append(replace(issue, row_group=None, row=cell.line if cell else None))
    return replace(found.stats, row_groups=0)


def place(finding: Finding, cell: TextCell) -> Finding:
    """A finding in a text cell, moved to the line it starts on (offsets from that line's start)."""
    text = cell.text
    before = text.count("\n", 0, finding.start)
    line_start = text.rfind("\n", 0, finding.start) + 1
    start = finding.start - line_start + (cell.offset if before == 0 else 0)
    location = replace(finding.location, row=cell.line + before)
    return replace(finding, location=location, start=start, end=start + finding.end - finding.start)


# ---- CSV / TSV ----------------------------------------------------------------------------------


def scan_csv_file(scanner: ShardScanner, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
    """Scan a CSV (or TSV) file: cells by header name, rows from 0 after the header; falls back to text."""
    timer = timer or Timer()
    delimiter = "\t" if shard.format == "tsv" else ","
    try:
        return _scan_csv(scanner, shard, delimiter, timer)
    except ShardReadError:
        raise
    except Exception:
        # Not parseable as CSV (an unterminated quote, a header the parser refuses): read it as
        # the text it is, so the file is still fully scanned.
        return scan_text_file(scanner, shard, timer)


def _scan_csv(scanner: ShardScanner, shard: ShardRef, delimiter: str, timer: Timer) -> BatchResult:
    read = pacsv.ReadOptions(block_size=1 << 20)
    parse = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
    with shard.open_stream() as stream:
        names = pacsv.open_csv(stream, read_options=read, parse_options=parse).schema.names
    # Every field as bytes: no type inference (a column of numbers in the first block and text
    # later would fail), and text that is not UTF-8 is still scanned.
    convert = pacsv.ConvertOptions(column_types={n: pa.large_binary() for n in names}, check_utf8=False,
                                   strings_can_be_null=False, quoted_strings_can_be_null=False)
    findings: list[Finding] = []
    issues: list[ScanIssue] = []
    stats = ScanStats()
    offset = 0
    with shard.open_stream() as stream:
        reader = pacsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
        for index, record_batch in enumerate(reader):
            batch = batch_from_table(pa.Table.from_batches([record_batch]), index, offset)
            found = scanner.scan_batch(batch, shard.display, timer)
            findings += found.findings
            issues += found.issues
            stats += found.stats
            offset += record_batch.num_rows
    return BatchResult(tuple(sorted(findings, key=Finding.sort_key)), tuple(issues), stats)


# ---- tar ----------------------------------------------------------------------------------------


def scan_tar_file(scanner: ShardScanner, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
    """Scan every regular member of a tar archive as a file of its own (see the module doc)."""
    findings: list[Finding] = []
    issues: list[ScanIssue] = []
    stats = ScanStats()
    if shard.display.count("!/") >= MAX_ARCHIVE_DEPTH:
        reason = f"archive nested {MAX_ARCHIVE_DEPTH} levels deep inside other archives: not read"
        return BatchResult(issues=(ScanIssue(shard.display, IssueKind.LIMIT, reason),))
    patterns = compile_patterns(list(shard.exclude))
    members = 0
    with tempfile.TemporaryDirectory(prefix="shardscan-tar-") as folder, shard.open_stream() as stream:
        try:
            archive = tarfile.open(fileobj=stream, mode="r|*")  # noqa: SIM115 (closed below)
            for member in archive:
                if not member.isfile():
                    continue  # folders and links carry no content of their own
                members += 1
                name = _UNSAFE_NAME.sub("?", member.name.lstrip("/"))
                display = f"{shard.display}!/{name}"
                if members > MAX_MEMBERS:
                    issues.append(ScanIssue(shard.display, IssueKind.LIMIT,
                                            f"more than {MAX_MEMBERS} members: the rest of the archive is not read"))
                    break
                if default_exclusion(name) is not None or matches(patterns, name):
                    stats += ScanStats(excluded_members=1)
                    continue
                if member.size > MAX_MEMBER_BYTES:
                    issues.append(ScanIssue(display, IssueKind.LIMIT, f"member of {member.size} bytes is over the "
                                            f"{MAX_MEMBER_BYTES >> 30} GiB member limit: not read"))
                    continue
                found = _scan_member(scanner, archive, member, display, folder, shard)
                findings += found.findings
                issues += found.issues
                stats += found.stats
            archive.close()
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            issues.append(ScanIssue(shard.display, IssueKind.UNREADABLE,
                                    f"not a readable tar archive ({describe_exception(exc)})"))
    return BatchResult(tuple(sorted(findings, key=Finding.sort_key)), tuple(issues), stats)


def _scan_member(
    scanner: ShardScanner, archive: tarfile.TarFile, member: tarfile.TarInfo, display: str, folder: str, shard: ShardRef
) -> BatchResult:
    source = archive.extractfile(member)
    assert source is not None  # a regular file always has content
    path = os.path.join(folder, "member")
    with source, open(path, "wb") as target:  # a private folder (mode 0700): the copy is never shared
        while chunk := source.read(READ_BYTES):
            target.write(chunk)
    try:
        ref = ShardRef(display=display, path=path, format=format_by_suffix(member.name), exclude=shard.exclude)
        classified = classify(ref)
        if isinstance(classified, NotScanned):
            return BatchResult(issues=(ScanIssue(display, IssueKind.NOT_SCANNED, classified.reason),))
        result = scanner.scan_shard(classified)
    finally:
        os.unlink(path)
    return BatchResult(result.findings, result.issues, replace(result.stats, shards=0, seconds=0.0))


# What each non-columnar format is scanned with (the columnar ones go through shardscan.reader.formats).
FILE_SCANNERS: dict[str, Callable[[ShardScanner, ShardRef, Timer | None], BatchResult]] = {
    "text": scan_text_file,
    "text-utf16": scan_utf16_text_file,
    "csv": scan_csv_file,
    "tsv": scan_csv_file,
    "tar": scan_tar_file,
}
