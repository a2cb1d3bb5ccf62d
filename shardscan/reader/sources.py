"""Find shards from the paths a user gives: files, folders (recursive), globs and filesystem URLs."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.fs as pafs

from shardscan.errors import ShardReadError, describe_exception, describe_remote_error

# Suffix -> input format. Longest suffixes first, so ``.jsonl.gz`` is not taken for something else.
# ``.json`` is JSON Lines or one JSON document (see ``shardscan.reader.jsonl``), as the Hugging Face
# Hub and ``datasets`` name both.
FORMAT_SUFFIXES: tuple[tuple[str, str], ...] = (
    (".jsonl.gz", "jsonl"),
    (".jsonl.zst", "jsonl"),
    (".jsonl.bz2", "jsonl"),
    (".ndjson.gz", "jsonl"),
    (".ndjson.zst", "jsonl"),
    (".ndjson.bz2", "jsonl"),
    (".json.gz", "json"),
    (".json.zst", "json"),
    (".json.bz2", "json"),
    (".parquet", "parquet"),
    (".jsonl", "jsonl"),
    (".ndjson", "jsonl"),
    (".json", "json"),
    (".arrow", "arrow"),
    (".feather", "arrow"),
)
SHARD_SUFFIXES: tuple[str, ...] = tuple(suffix for suffix, _ in FORMAT_SUFFIXES)
DEFAULT_FORMAT = "parquet"


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
    format: str = DEFAULT_FORMAT

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
        """Open the shard as a sequential stream, decompressing ``.gz``/``.zst``/``.bz2`` by suffix."""
        try:
            if self.filesystem is None:
                return pa.input_stream(self.path, compression="detect")
            return self.filesystem.open_input_stream(self.path, compression="detect")
        except Exception as exc:
            raise ShardReadError(self.display, self._describe(exc)) from None

    def _describe(self, exc: BaseException) -> str:
        return describe_exception(exc) if self.filesystem is None else describe_remote_error(exc)

    def size(self) -> int | None:
        """The shard's size in bytes, if it can be known without reading it."""
        try:
            if self.filesystem is None:
                return os.path.getsize(self.path)
            return self.filesystem.get_file_info(self.path).size
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


def format_of(name: str) -> str:
    """The input format a file name implies; Parquet when the suffix says nothing."""
    lower = name.lower()
    for suffix, fmt in FORMAT_SUFFIXES:
        if lower.endswith(suffix):
            return fmt
    return DEFAULT_FORMAT


def discover(paths: list[str]) -> tuple[list[ShardRef], list[Unresolved]]:
    """Expand user paths and URLs into shards, in a stable order, and report what matched nothing.

    A folder (or URL prefix) yields every shard below it: locally named relative to the folder,
    remotely by full URL. A file, URL or glob match is named as given. Explicitly named files are
    scanned whatever their suffix (as Parquet unless the suffix names another format).
    """
    shards: dict[str, ShardRef] = {}
    problems: list[Unresolved] = []
    for raw in paths:
        if _is_url(raw):
            from shardscan.reader.remote import discover_url

            found, problem = discover_url(raw)
            if problem is not None:
                problems.append(problem)
            for ref in found:
                shards.setdefault(ref.display, ref)
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and is_shard_name(p.name))
            for file in files:
                ref = ShardRef(display=file.relative_to(path).as_posix(), path=str(file), format=format_of(file.name))
                shards.setdefault(ref.path, ref)
        elif path.exists():
            shards.setdefault(str(path), ShardRef(display=_display(raw), path=str(path), format=format_of(path.name)))
        elif glob.has_magic(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            if not files:
                problems.append(Unresolved(raw, "no such file, folder or glob match"))
            for match in files:
                shards.setdefault(match, ShardRef(display=_display(match), path=match, format=format_of(match)))
        else:
            problems.append(Unresolved(raw, "no such file, folder or glob match"))
    return sorted(shards.values(), key=lambda ref: (ref.display, ref.path)), problems


def _is_url(raw: str) -> bool:
    # The remote readers are imported for URLs only: a local scan never loads them.
    if "://" not in raw:
        return False
    from shardscan.reader.remote import is_url

    return is_url(raw)


def _display(raw: str) -> str:
    return Path(raw).as_posix().removeprefix("./")
