"""Tell what a file is from its first bytes: a shard format, an archive, text, or binary."""

from __future__ import annotations

import json
from dataclasses import dataclass

from shardscan.reader.sources import InputFormat

# Bytes read from the start of a file (after decompression, when it is compressed) to decide.
HEAD_BYTES = 8192

# Compression framings pyarrow can decompress as a stream: magic -> pyarrow codec name.
COMPRESSION_MAGIC: dict[bytes, str] = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"BZh": "bz2",
}

# Binary files people keep next to shards, named in the "not scanned" reason so it reads as a
# file type rather than a bare "binary".
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"RIFF", "RIFF media (WAV/WebP/AVI)"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"PK\x05\x06", "zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (b"\xfd7zXZ\x00", "xz-compressed file"),
    (b"\x93NUMPY", "NumPy array"),
    (b"fLaC", "FLAC audio"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
)


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What a file's bytes say it is: a reader format, or None with the reason it is not read."""

    format: InputFormat | None
    reason: str = ""


def compression_of(head: bytes) -> str | None:
    """The stream compression a file's first bytes announce, if any."""
    for magic, codec in COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            return codec
    return None


def sniff(head: bytes, name: str, whole: bool = False) -> Sniffed:
    """Classify uncompressed content from its head (up to HEAD_BYTES).

    ``name`` only breaks ties a file's bytes cannot (CSV and TSV are text either way), and
    ``whole`` says the head is the whole file (so a multi-byte character cut at the end of the
    head is not taken for binary).
    """
    lower = name.lower()
    if head.startswith(b"PAR1"):
        # The footer's magic is not needed to decide: a Parquet head without it is a damaged or
        # truncated shard, which the Parquet reader reports (unreadable), rather than this file
        # passing as "binary, not scanned"; and a remote file is sniffed with one ranged read.
        return Sniffed(InputFormat.PARQUET)
    if head.startswith(b"ARROW1") or (head.startswith(b"\xff\xff\xff\xff") and len(head) >= 8):
        return Sniffed(InputFormat.ARROW)
    if len(head) >= 262 and head[257:262] == b"ustar":
        return Sniffed(InputFormat.TAR)
    for magic, kind in _BINARY_MAGIC:
        if head.startswith(magic):
            return Sniffed(None, f"binary file ({kind}), not a format shardscan reads")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and _is_utf16_text(head):
        # UTF-16 with a byte order mark (what Windows PowerShell's ">" writes): text, transcoded.
        return Sniffed(InputFormat.TEXT_UTF16)
    if not is_text(head, whole):
        return Sniffed(None, "binary file, not a format shardscan reads")
    if lower.endswith((".csv", ".csv.gz", ".csv.zst", ".csv.bz2")):
        return Sniffed(InputFormat.CSV)
    if lower.endswith((".tsv", ".tsv.gz", ".tsv.zst", ".tsv.bz2")):
        return Sniffed(InputFormat.TSV)
    if _first_line_is_json_object(head):
        return Sniffed(InputFormat.JSONL)
    return Sniffed(InputFormat.TEXT)


def is_text(head: bytes, whole: bool = False) -> bool:
    """True when bytes read as text: no NUL, few control characters, and UTF-8 (a character cut at
    the end allowed) or a legacy 8-bit encoding (Latin-1, cp1252: mostly ASCII).

    Binary formats put NUL bytes or control bytes in any 8 KiB; a text file in a legacy encoding
    is still read (as UTF-8 with replacement: credentials are ASCII), never left unscanned.
    """
    if b"\x00" in head:
        return False
    sample = head.removeprefix(b"\xef\xbb\xbf")
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > max(2, len(sample) // 100):
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the sample's end is forgiven; other invalid UTF-8 must be
        # mostly ASCII to be legacy text (random bytes are half high bytes).
        if whole or err.start < len(sample) - 3:
            high = len(sample) - len(sample.translate(None, _HIGH_BYTES))
            return high <= len(sample) * 0.3
    return True


# Control bytes that text does not hold (tab, newlines, form feed and ESC of terminal colours are text).
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\f\v\x1b") + b"\x7f"
_HIGH_BYTES = bytes(range(128, 256))


def _is_utf16_text(head: bytes) -> bool:
    text = head[: len(head) // 2 * 2].decode("utf-16", "replace")
    controls = sum(1 for ch in text if (ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b") or ch == "\ufffd")
    return controls <= max(2, len(text) // 100)


def _first_line_is_json_object(head: bytes) -> bool:
    line = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip()
    if not line.startswith(b"{") or not line.endswith(b"}"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
