"""Shard references (where a file lives, how to read it, how reports name it) and formats by suffix."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO

import pyarrow as pa
import pyarrow.fs as pafs

from shardscan.errors import ShardReadError, describe_exception, describe_remote_error


class InputFormat(StrEnum):
    """How a file is read. A member is its string (``"parquet"``), so registries keyed by the
    strings find it and reports print it unchanged."""

    PARQUET = "parquet"
    JSONL = "jsonl"
    JSON = "json"  # JSON Lines or one JSON document (shardscan.reader.jsonl)
    ARROW = "arrow"  # Arrow IPC file or stream
    # Dataset files that are not columnar shards, scanned by shardscan.filescan.
    TAR = "tar"
    CSV = "csv"
    TSV = "tsv"
    TEXT = "text"
    TEXT_UTF16 = "text-utf16"  # text with a UTF-16 byte order mark, transcoded
    # Not known from the suffix: decided by sniffing the content (an empty, false string).
    UNDECIDED = ""


# Suffix -> input format. Longest suffixes first, so ``.jsonl.gz`` is not taken for something else.
# ``.json`` is JSON Lines or one JSON document (see ``shardscan.reader.jsonl``), as the Hugging Face
# Hub and ``datasets`` name both.
FORMAT_SUFFIXES: tuple[tuple[str, InputFormat], ...] = (
    (".jsonl.gz", InputFormat.JSONL),
    (".jsonl.zst", InputFormat.JSONL),
    (".jsonl.bz2", InputFormat.JSONL),
    (".ndjson.gz", InputFormat.JSONL),
    (".ndjson.zst", InputFormat.JSONL),
    (".ndjson.bz2", InputFormat.JSONL),
    (".json.gz", InputFormat.JSON),
    (".json.zst", InputFormat.JSON),
    (".json.bz2", InputFormat.JSON),
    (".parquet", InputFormat.PARQUET),
    (".jsonl", InputFormat.JSONL),
    (".ndjson", InputFormat.JSONL),
    (".json", InputFormat.JSON),
    (".arrow", InputFormat.ARROW),
    (".feather", InputFormat.ARROW),
    # Dataset files that are not columnar shards (``shardscan.filescan``): WebDataset tar shards
    # and CSV/TSV splits. Any other file is sniffed by content (``shardscan.reader.sniff``).
    (".tar.gz", InputFormat.TAR),
    (".tar.zst", InputFormat.TAR),
    (".tar.bz2", InputFormat.TAR),
    (".tgz", InputFormat.TAR),
    (".tar", InputFormat.TAR),
    (".csv.gz", InputFormat.CSV),
    (".csv", InputFormat.CSV),
    (".tsv.gz", InputFormat.TSV),
    (".tsv", InputFormat.TSV),
)
SHARD_SUFFIXES: tuple[str, ...] = tuple(suffix for suffix, _ in FORMAT_SUFFIXES)
DEFAULT_FORMAT = InputFormat.PARQUET
NO_COMPRESSION = "none"  # ShardRef.compression of a sniffed file that is not compressed


@dataclass(frozen=True, slots=True)
class ShardRef:
    """A shard to scan: where it lives, how to read it and how reports name it.

    ``filesystem`` is None for local files (plain ``open``) or a ``pyarrow.fs`` filesystem for
    remote ones (object stores, fsspec filesystems wrapped by ``pyarrow.fs.PyFileSystem``);
    ``path`` is then the filesystem's own path and ``display`` the full URL.
    """

    display: str
    path: str
    filesystem: pafs.FileSystem | None = field(default=None, compare=False, repr=False)
    format: InputFormat = DEFAULT_FORMAT
    # The stream compression found by sniffing the content (a ``.bin`` that is gzip-compressed
    # JSON Lines; NO_COMPRESSION for a plain file whatever its suffix); None: judged by the suffix.
    compression: str | None = None
    # Exclusion globs that also apply inside this file (tar members), as given by the user.
    exclude: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def open(self) -> IO[bytes] | pa.NativeFile:
        """Open the shard for random access; raise ShardReadError naming it on failure."""
        try:
            if self.filesystem is None:
                try:
                    # Native reads: through a Python file object, every read of a column chunk is a
                    # Python call (holding the GIL) and an extra copy.
                    return pa.OSFile(self.path)
                except OSError:
                    return open(self.path, "rb")  # the OS's own error (or a file only Python opens)
            return self.filesystem.open_input_file(self.path)
        except Exception as exc:  # OSError locally; pyarrow and fsspec raise several types remotely
            raise ShardReadError(self.display, self._describe(exc)) from None

    def open_stream(self) -> pa.NativeFile:
        """Open the shard as a sequential stream, decompressing ``.gz``/``.zst``/``.bz2`` by suffix
        (or as sniffed: ``compression``)."""
        try:
            if self.filesystem is None:
                return pa.input_stream(self.path, compression=self._codec())
            return self.filesystem.open_input_stream(self.path, compression=self._codec())
        except Exception as exc:
            raise ShardReadError(self.display, self._describe(exc)) from None

    def _codec(self) -> str | None:
        if self.compression == NO_COMPRESSION:
            return None
        return self.compression or "detect"

    def _describe(self, exc: BaseException) -> str:
        return describe_exception(exc) if self.filesystem is None else describe_remote_error(exc)

    def size(self) -> int | None:
        """The shard's size in bytes, if it can be known without reading it."""
        try:
            if self.filesystem is None:
                return os.path.getsize(self.path)
            size: int | None = self.filesystem.get_file_info(self.path).size  # pyarrow: None when unknown
            return size
        except Exception:
            return None


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A path or URL the user gave that yielded no shard, and why (reported; exit code 3)."""

    path: str
    reason: str


def is_shard_name(name: str) -> bool:
    """True when a file name has a suffix shardscan reads."""
    return name.lower().endswith(SHARD_SUFFIXES)


def format_of(name: str) -> InputFormat:
    """The input format a file name implies; Parquet when the suffix says nothing."""
    lower = name.lower()
    for suffix, fmt in FORMAT_SUFFIXES:
        if lower.endswith(suffix):
            return fmt
    return DEFAULT_FORMAT

