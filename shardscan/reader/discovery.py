"""Account for every file under the paths a user gives: a shard or text to scan, excluded, or not scanned (why).

Files, folders (recursive), globs and filesystem URLs are expanded into files. Each file is then,
in this order: excluded by default (``.git/``, shardscan's cache folder, shardscan's half-written
``*.shardscan-partial`` files), excluded by ``--exclude`` or the root's ``.shardscanignore``, read
in the format its suffix names (the fast path), or sniffed by content (``shardscan.reader.sniff``):
a shard format, a tar archive, CSV/TSV, text, or a binary file that is listed as not scanned.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from shardscan.model import NotScanned
from shardscan.reader.exclude import (
    IGNORE_FILE,
    MAX_IGNORE_BYTES,
    Exclusions,
    ExclusionSource,
    compile_patterns,
    ignore_file_lines,
)
from shardscan.reader.sniff import HEAD_BYTES, Sniffed, compression_of, sniff
from shardscan.reader.sources import FORMAT_SUFFIXES, NO_COMPRESSION, InputFormat, ShardRef, Unresolved

if TYPE_CHECKING:
    from shardscan.reader.remote import Listed


@dataclass(frozen=True, slots=True)
class Excluded:
    """A file left out on purpose, and by what."""

    path: str
    source: ExclusionSource


@dataclass(frozen=True, slots=True)
class Discovery:
    """Every file under the user's paths, each in exactly one of: shards, excluded, not_scanned;
    and the paths that yielded no file at all."""

    shards: tuple[ShardRef, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    excluded: tuple[Excluded, ...] = ()
    not_scanned: tuple[NotScanned, ...] = ()

    def excluded_by(self) -> dict[ExclusionSource, int]:
        """How many files each source excluded, in the enum's order."""
        counts = Counter(e.source for e in self.excluded)
        return {source: counts[source] for source in ExclusionSource if counts[source]}


@dataclass(frozen=True, slots=True)
class _Found:
    """A file found under one argument, before classification."""

    ref: ShardRef
    rel: str  # relative to the argument's root, ``/``-separated (what exclusion globs match)
    prefixed: str  # the display name that names the file unambiguously (the argument joined with ``rel``)


@dataclass(frozen=True, slots=True)
class _Expanded:
    """The files one argument names, the problem when it names none, and its root's ignore globs."""

    files: tuple[_Found, ...] = ()
    problem: Unresolved | None = None
    ignore: tuple[str, ...] = ()  # lines of the root's .shardscanignore
    # Entries under a folder that hold no readable file: a folder that could not be listed, a
    # broken link, a FIFO or socket. Each is "not scanned" (the scan is incomplete) unless excluded;
    # their paths are relative to the root.
    unlisted: tuple[NotScanned, ...] = ()


@dataclass(frozen=True, slots=True)
class _Sniffing:
    """A sniffed file: what it is, the compression to read it through, and its size if known."""

    sniffed: Sniffed
    compression: str | None = None
    size: int | None = None


def discover(paths: Sequence[str]) -> tuple[list[ShardRef], list[Unresolved]]:
    """The files to scan and the paths that yielded nothing (see :func:`discover_files`)."""
    found = discover_files(paths)
    return list(found.shards), list(found.unresolved)


def discover_files(
    paths: Sequence[str] | str | os.PathLike[str],
    exclude: Sequence[str] = (),
    ignore_patterns: Sequence[str] = (),
) -> Discovery:
    """Expand user paths and URLs into files and account for each of them, in a stable order.

    A folder (or URL prefix) yields every file below it: locally named relative to the folder,
    remotely by full URL; when two arguments hold the same relative name, those files are named by
    their path as given instead (``dupA/x.parquet``, ``dupB/x.parquet``). A file, URL or glob match
    is named as given. ``exclude`` globs apply to every argument; ``ignore_patterns`` (lines of a
    ``.shardscanignore`` the caller read, e.g. at a repository root) apply to every argument with a
    folder's own ``.shardscanignore`` after them. A folder, prefix or glob whose files are all
    excluded is unresolved ("no file to scan"); a file named on its own and excluded is only
    counted as excluded. Raises MissingDependencyError for a URL whose
    filesystem is not installed.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [os.fspath(paths)]
    option = compile_patterns(list(exclude))
    base_ignore = compile_patterns(list(ignore_patterns))
    chosen: dict[tuple[str, str], _Found] = {}  # by (path, URL or ""), first argument wins
    excluded: list[Excluded] = []
    not_scanned: list[NotScanned] = []
    problems: list[Unresolved] = []
    for raw in (os.fspath(p) for p in paths):
        expanded = _expand(raw)
        files = expanded.files
        if expanded.problem is not None:
            problems.append(expanded.problem)
            continue
        rules = Exclusions(option, base_ignore + compile_patterns(expanded.ignore))
        for entry in expanded.unlisted:
            source = rules.source_of(entry.path)
            if source is not None:
                excluded.append(Excluded(_display(os.path.join(raw, entry.path)), source))
            else:
                not_scanned.append(entry)
        # Tar members are matched against the same globs (as lines: they travel to workers).
        member_globs = tuple(exclude) + tuple(ignore_patterns) + expanded.ignore
        kept = 0
        for item in files:
            source = rules.source_of(item.rel)
            if source is not None:
                excluded.append(Excluded(item.prefixed, source))
                continue
            kept += 1
            key = (item.ref.path, item.ref.display if item.ref.filesystem is not None else "")
            if key not in chosen:
                chosen[key] = replace(item, ref=replace(item.ref, exclude=member_globs))
        if not files and not expanded.unlisted:
            problems.append(Unresolved(raw, "no file to scan: empty folder"))
        elif not kept and not _names_one_file(raw, files):
            # A file named on its own and excluded is simply excluded (a commit hook passes every
            # staged file by name); a folder, prefix or glob with nothing left is a mistake to flag.
            problems.append(Unresolved(raw, f"no file to scan: all {len(files)} file(s) are excluded"))
    shards: list[ShardRef] = []
    for item in _unambiguous(list(chosen.values())):
        classified = classify(item.ref)
        if isinstance(classified, NotScanned):
            not_scanned.append(classified)
        else:
            shards.append(classified)
    return Discovery(
        tuple(sorted(shards, key=lambda r: (r.display, r.path))),
        tuple(problems),
        tuple(sorted(excluded, key=lambda e: e.path)),
        tuple(sorted(not_scanned, key=lambda n: n.path)),
    )


def _expand(raw: str) -> _Expanded:
    """The files one argument names, the problem when it names none, and its root's ignore globs."""
    if _is_url(raw):
        from shardscan.reader.remote import discover_url  # remote readers load for URLs only

        listing = discover_url(raw)
        listed, problem = listing.files, listing.problem
        found = tuple(_Found(replace(f.ref, format=_format_of(f.ref.path)), f.rel, f.ref.display) for f in listed)
        return _Expanded(found, problem, _remote_ignore(listed) if problem is None and len(listed) > 1 else ())
    path = Path(raw)
    if path.is_dir():
        files, unlisted = _walk(path)
        walked: list[_Found] = []
        for rel in files:
            ref = ShardRef(display=rel, path=str(path / rel), format=_format_of(rel))
            walked.append(_Found(ref, rel, _display(str(path / rel))))
        return _Expanded(tuple(walked), None, _local_ignore(path), tuple(unlisted))
    if path.exists():
        display = _display(raw)
        return _Expanded((_Found(ShardRef(display=display, path=str(path), format=_format_of(path.name)), display,
                                 display),))
    if glob.has_magic(raw):
        matches = [m for m in sorted(glob.glob(raw, recursive=True)) if os.path.isfile(m)]
        if not matches:
            return _Expanded(problem=Unresolved(raw, "no such file, folder or glob match"))
        return _Expanded(tuple(_Found(ShardRef(display=_display(m), path=m, format=_format_of(m)), _display(m),
                                      _display(m)) for m in matches))
    return _Expanded(problem=Unresolved(raw, "no such file, folder or glob match"))


def _walk(root: Path) -> tuple[list[str], list[NotScanned]]:
    """Every regular file below ``root`` (relative, ``/``-separated, sorted), following linked
    folders once each, and every entry that holds no readable file with the reason.

    ``Path.rglob`` skips what it cannot list and does not enter linked folders: a folder of mode
    000 or a linked-in folder would pass unread.
    """
    files: list[str] = []
    unlisted: list[NotScanned] = []
    seen: set[tuple[int, int]] = set()

    def failed(error: OSError) -> None:
        where = os.path.relpath(error.filename, root) if error.filename else "."
        reason = f"folder could not be listed ({error.strerror or type(error).__name__})"
        unlisted.append(NotScanned(Path(where).as_posix(), reason))

    for folder, dirs, names in os.walk(root, onerror=failed, followlinks=True):
        try:
            info = os.stat(folder)
        except OSError as error:
            failed(error)
            dirs[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:  # a link back into a folder already walked
            dirs[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        dirs.sort()
        for name in names:
            full = os.path.join(folder, name)
            rel = Path(os.path.relpath(full, root)).as_posix()
            if os.path.isfile(full):
                files.append(rel)
            elif os.path.islink(full) and not os.path.exists(full):
                unlisted.append(NotScanned(rel, "a link to nothing"))
            else:
                unlisted.append(NotScanned(rel, "not a regular file (a FIFO, socket or device)"))
    return sorted(files), unlisted


def _names_one_file(raw: str, files: tuple[_Found, ...]) -> bool:
    return len(files) == 1 and files[0].ref.display in (raw, _display(raw))


def _unambiguous(found: list[_Found]) -> list[_Found]:
    """Rename files whose display name another file also has to their path as given."""
    names = Counter(item.ref.display for item in found)
    return [
        replace(item, ref=replace(item.ref, display=item.prefixed)) if names[item.ref.display] > 1 else item
        for item in found
    ]


def classify(ref: ShardRef) -> ShardRef | NotScanned:
    """The file with its format decided: by its suffix when shardscan knows it (no read), else by
    sniffing its content; or why it is not scanned."""
    if ref.format:
        return ref
    found = _sniff(ref)
    if found.sniffed.format is None:
        return NotScanned(ref.display, found.sniffed.reason, found.size)
    return replace(ref, format=found.sniffed.format, compression=found.compression or NO_COMPRESSION)


def format_by_suffix(name: str) -> InputFormat:
    """The format a known suffix names, or ``InputFormat.UNDECIDED`` (``""``) when the content must be sniffed."""
    return _format_of(name)


def _format_of(name: str) -> InputFormat:
    lower = name.lower()
    for suffix, fmt in FORMAT_SUFFIXES:
        if lower.endswith(suffix):
            return fmt
    return InputFormat.UNDECIDED  # decided by sniffing


def _sniff(ref: ShardRef) -> _Sniffing:
    """Sniff a file by its first bytes (after decompression when it is compressed): one read, which
    for a remote file is one ranged request."""
    size = ref.size()
    try:
        with ref.open() as handle:
            head = handle.read(HEAD_BYTES)
    except Exception:
        # Unreadable files are the reader's to report (unreadable, exit 3), with its own message.
        return _Sniffing(Sniffed(InputFormat.TEXT), size=size)
    compression = compression_of(head)
    if compression is None:
        return _Sniffing(sniff(head, ref.display, whole=size is not None and size <= HEAD_BYTES), size=size)
    try:
        with replace(ref, compression=compression).open_stream() as stream:
            inner = stream.read(HEAD_BYTES)
    except Exception:
        return _Sniffing(Sniffed(None, f"{compression}-compressed file that does not decompress"), size=size)
    sniffed = sniff(inner, ref.display, whole=len(inner) < HEAD_BYTES)
    if sniffed.format == InputFormat.PARQUET:  # Parquet needs random access: a compressed one is not a shard
        return _Sniffing(Sniffed(None, f"{compression}-compressed Parquet file (decompress it to scan it)"), size=size)
    if sniffed.format is None:
        return _Sniffing(Sniffed(None, f"{compression}-compressed {sniffed.reason}"), size=size)
    return _Sniffing(sniffed, compression, size)


def _local_ignore(folder: Path) -> tuple[str, ...]:
    return tuple(ignore_file_lines(folder))


def _remote_ignore(listed: Sequence[Listed]) -> tuple[str, ...]:
    for item in listed:
        if item.rel == IGNORE_FILE:
            try:
                with item.ref.open() as handle:
                    return tuple(handle.read(MAX_IGNORE_BYTES).decode("utf-8", "replace").splitlines())
            except Exception:  # an unreadable ignore file excludes nothing; it is scanned (and reported) too
                return ()
    return ()


def _is_url(raw: str) -> bool:
    if "://" not in raw:
        return False
    from shardscan.reader.remote import is_url  # remote readers load for URLs only

    return is_url(raw)


def _display(raw: str) -> str:
    return Path(raw).as_posix().removeprefix("./")
