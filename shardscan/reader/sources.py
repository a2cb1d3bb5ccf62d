"""Find shards from the paths a user gives: files, folders (recursive) and globs."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from shardscan.errors import ShardReadError, describe_exception

SHARD_SUFFIXES: tuple[str, ...] = (".parquet",)


@dataclass(frozen=True, slots=True)
class ShardRef:
    """A shard to scan: how to open it and how reports name it."""

    display: str
    path: str

    def open(self) -> IO[bytes]:
        """Open the shard for reading; raise ShardReadError naming it on failure."""
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise ShardReadError(self.display, describe_exception(exc)) from None

    def size(self) -> int | None:
        """The shard's size in bytes, if it can be known without reading it."""
        try:
            return os.path.getsize(self.path)
        except OSError:
            return None


def is_shard_name(name: str) -> bool:
    """True when a file name has a suffix shardscan reads."""
    return name.lower().endswith(SHARD_SUFFIXES)


def discover(paths: list[str]) -> tuple[list[ShardRef], list[str]]:
    """Expand user paths into shards, in a stable order, and report paths that matched nothing.

    A folder yields every shard below it, named relative to the folder; a file or glob match is
    named as given. Explicitly named files are scanned whatever their suffix.
    """
    shards: dict[str, ShardRef] = {}
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and is_shard_name(p.name))
            for file in found:
                ref = ShardRef(display=file.relative_to(path).as_posix(), path=str(file))
                shards.setdefault(ref.path, ref)
        elif path.exists():
            shards.setdefault(str(path), ShardRef(display=_display(raw), path=str(path)))
        elif glob.has_magic(raw):
            matches = sorted(glob.glob(raw, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            if not files:
                missing.append(raw)
            for match in files:
                shards.setdefault(match, ShardRef(display=_display(match), path=match))
        else:
            missing.append(raw)
    return sorted(shards.values(), key=lambda ref: (ref.display, ref.path)), missing


def _display(raw: str) -> str:
    return Path(raw).as_posix().removeprefix("./")
