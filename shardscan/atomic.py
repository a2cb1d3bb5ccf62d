"""Reserved names for files shardscan writes partway, and the one way it writes a file: temp name, fsync, rename."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from shardscan.errors import OutputError

# Every file shardscan writes is first written under its final name plus this suffix and renamed
# when complete, so an interrupted run never leaves a file that looks finished. Discovery skips
# names ending with it (they are shardscan's own half-written output, not data to publish).
TEMP_SUFFIX = ".shardscan-partial"

# How messages name the process's standard output.
STANDARD_OUTPUT = "standard output"

# The reason given for an output whose folder is missing (commands with --mkdir add that hint).
MISSING_FOLDER = "its folder does not exist"

# Errors that say the output side failed (full disk, quota, read-only filesystem, file too big,
# device error), as opposed to a problem with the data being written.
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM})

# A temporary name is ".<name>.<pid>.<8 hex>.shardscan-partial" beside the target; the target's
# name is cut so the whole stays within the 255 bytes most filesystems allow for a name.
_NAME_KEPT = 160
_TEMP_NAME = re.compile(r"\.(?P<name>.*)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))


def reason(exc: BaseException) -> str:
    """The OS's short reason for a failed write ("No space left on device"), never a data excerpt."""
    if isinstance(exc, OSError):
        if exc.errno:
            return os.strerror(exc.errno)
        if exc.strerror:
            return str(exc.strerror)
    return type(exc).__name__


def is_output_failure(exc: BaseException) -> bool:
    """True when ``exc`` (raised while writing) says the destination failed, not the data."""
    return isinstance(exc, OSError) and exc.errno in OUTPUT_ERRNOS


def temp_path(path: Path) -> Path:
    """A fresh temporary name beside ``path``, ending in :data:`TEMP_SUFFIX` and naming this process."""
    return path.with_name(f".{path.name[:_NAME_KEPT]}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}")


def owned_temps(path: Path) -> list[Path]:
    """The temporary files shardscan made for ``path`` (by any run) that still lie beside it."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    prefix = f".{path.name[:_NAME_KEPT]}."
    found = []
    for name in names:
        match = _TEMP_NAME.fullmatch(name) if name.startswith(prefix) else None
        if match and match["name"] == path.name[:_NAME_KEPT]:
            found.append(path.parent / name)
    return sorted(found)


def remove_stale_temps(path: Path) -> list[Path]:
    """Remove the temporary files of ``path`` left by runs that are no longer alive; return them.

    A run that was killed cannot clean up after itself; the next one that writes the same file
    does. A temporary file of a process still running on this machine is left alone.
    """
    removed = []
    for temp in owned_temps(path):
        match = _TEMP_NAME.fullmatch(temp.name)
        assert match is not None
        if _alive(int(match["pid"])):
            continue
        try:
            temp.unlink()
        except (FileNotFoundError, PermissionError):
            # Gone already, or another user's in a shared folder (/tmp is sticky): not ours to
            # remove, and it does not stand in the way of this write (its name is unique).
            continue
        except OSError as exc:
            raise OutputError(str(temp), f"cannot remove a stale temporary file: {reason(exc)}") from None
        removed.append(temp)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process (or a name we cannot judge): not ours to remove
    return True


def prepare_parent(path: Path, mkdir: bool = False) -> None:
    """Check that ``path``'s folder exists (or create it when ``mkdir``); OutputError naming ``path`` otherwise.

    Folders are created only when the user asked: a typo in an output path is an error, not a new
    folder tree.
    """
    parent = path.parent
    if mkdir:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(str(path), f"cannot create its folder: {reason(exc)}") from None
    if not parent.is_dir():
        why = MISSING_FOLDER if not parent.exists() else "its parent is not a folder"
        raise OutputError(str(path), why)
    if path.is_dir():
        raise OutputError(str(path), "it is a folder")


def probe_folder(folder: Path) -> None:
    """Check that a file can be created in ``folder`` (OutputError naming it otherwise), before a
    long run is spent producing output that could not be kept."""
    probe = temp_path(folder / "probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        raise OutputError(str(folder), reason(exc)) from None


def _target(path: Path) -> Path:
    # Writing through a symlink replaces the file it points to, as a plain write would, not the link.
    return path.resolve() if path.is_symlink() else path


@contextmanager
def atomic_path(
    path: Path, *, mkdir: bool = False, like: Path | None = None, owner: bool = False, through_links: bool = True
) -> Iterator[Path]:
    """Yield a new, empty temporary file beside ``path``; when the block ends normally, make it ``path``.

    The file is flushed to disk (fsync) and renamed over ``path``, so ``path`` is either its old
    self or complete, never half-written. It gets the permission bits of ``like`` when given (and
    its owner and group with ``owner``: a file replaced in place), else those of the file it
    replaces, else the umask's default. If the block raises, the temporary file is removed and the
    exception goes on unchanged. Failures of these steps themselves raise :class:`OutputError`
    naming ``path``. A symlink is written through (the file it points to is replaced) unless
    ``through_links`` is False: then the link itself is replaced by the new file.
    """
    path = _target(path) if through_links else path
    prepare_parent(path, mkdir)
    remove_stale_temps(path)
    temp = temp_path(path)
    try:
        # Created here (0666 less the umask, like any new file) so the name is ours alone.
        os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666))
    except OSError as exc:
        raise OutputError(str(path), reason(exc)) from None
    try:
        yield temp
        if like is not None:
            _commit(temp, path, like, owner=owner)
        else:
            # A report written again keeps the mode the user gave the old one, as an overwrite would.
            _commit(temp, path, path if path.exists() else None, owner=False)
    finally:
        try:
            temp.unlink()
        except FileNotFoundError:
            pass  # renamed: the normal end
        except OSError:
            pass  # the block's own error (or the commit's) is the one to report


def _commit(temp: Path, path: Path, like: Path | None, owner: bool) -> None:
    try:
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if like is not None and owner:
            keep_metadata(like, temp)
        elif like is not None:
            os.chmod(temp, stat.S_IMODE(os.stat(like).st_mode))
        os.replace(temp, path)
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(str(path), reason(exc)) from None
    try:
        # The rename itself reaches the disk with the folder's entry.
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass  # some filesystems cannot sync a folder; the file's own data is on disk


def keep_metadata(source: Path, temp: Path) -> None:
    """Give ``temp`` the permission bits, owner and group of ``source`` (OutputError if refused).

    A file replaced in place must not change who may read it: a dataset shard shared by a group
    stays readable by it, and a private one does not become readable by others.
    """
    try:
        info = os.stat(source)
        mine = os.stat(temp)
        if (info.st_uid, info.st_gid) != (mine.st_uid, mine.st_gid):
            os.chown(temp, info.st_uid, info.st_gid)
        os.chmod(temp, stat.S_IMODE(info.st_mode))
    except OSError as exc:
        raise OutputError(str(source), f"cannot keep its owner and mode ({reason(exc)}); left unchanged") from None


def write_file(path: Path, data: str | bytes, *, mkdir: bool = False) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` completely or not at all; return ``path``.

    A regular file (or a new one) is written through :func:`atomic_path`. A path that already
    exists and is not a regular file (``/dev/stdout``, a named pipe) cannot be renamed over: it is
    written directly, with every error caught. Failures raise :class:`OutputError` naming ``path``.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_stream(path):
        try:
            own = _own_descriptor(path)
            if own is not None:
                # This process's stdout or stderr (``-f json:/dev/stdout > r.json``): opened again,
                # the file would be truncated and written from its start, under what the process
                # writes through its own descriptor.
                _write_fd(own, payload)
            else:
                with open(path, "wb") as handle:
                    handle.write(payload)
                    handle.flush()
        except OSError as exc:
            raise OutputError(str(path), reason(exc)) from None
        return path
    try:
        with atomic_path(path, mkdir=mkdir) as temp, open(temp, "wb") as handle:
            handle.write(payload)
    except OSError as exc:  # the write itself (the commit's own failures are already OutputError)
        raise OutputError(str(path), reason(exc)) from None
    return path


def _own_descriptor(path: Path) -> int | None:
    """1 or 2 when ``path`` is this process's standard output or error (flushed first), else None."""
    info = os.stat(path)
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            if os.path.samestat(info, os.fstat(fd)):
                if stream is not None:
                    stream.flush()
                return fd
        except (OSError, ValueError):
            continue
    return None


def _write_fd(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a descriptor; a short write is followed, and its error raised."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        view = view[written:]


def _is_stream(path: Path) -> bool:
    """True for an existing output that is not a regular file to replace: a device, a named pipe,
    or a name for an open descriptor (``/dev/stdout``, ``/proc/self/fd/1``, whatever it leads to:
    renaming a file over it would not reach the reader)."""
    try:
        info = os.stat(path)  # through links: /dev/stdout leads to a pipe, a terminal or a file
    except (OSError, ValueError):
        return False
    if stat.S_ISDIR(info.st_mode):
        return False
    fd_names = ("/dev/", "/proc/")
    return (
        not stat.S_ISREG(info.st_mode) or str(path).startswith(fd_names) or os.path.realpath(path).startswith(fd_names)
    )


def write_stream(stream: IO[str], text: str, name: str = STANDARD_OUTPUT) -> None:
    """Write all of ``text`` to an open stream and flush it; OutputError naming ``name`` if it fails."""
    if isinstance(stream, CheckedStream):
        stream = stream.wrapped
    try:
        _write_all(stream, text)
    except OSError as exc:
        raise OutputError(name, reason(exc)) from None


def _write_all(stream: IO[str], text: str) -> None:
    # With PYTHONUNBUFFERED (common in containers and CI) a text stream writes straight to the
    # file descriptor and drops the rest of a short write without a word: on a disk that fills
    # up, a truncated report and exit 0. Writing to the descriptor ourselves sees every short
    # write, and the next write then reports the error.
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream (tests, embedding)
        stream.write(text)
        stream.flush()
        return
    stream.flush()
    encoding = getattr(stream, "encoding", None) or "utf-8"
    _write_fd(fd, text.encode(encoding, getattr(stream, "errors", None) or "strict"))


class CheckedStream:
    """A text stream whose writes are complete or raise :class:`OutputError` (never a silent short write).

    The command line puts it in place of ``sys.stdout``, so a full disk under ``> file`` or a
    closed pipe ends every command the same way (exit 2, one line), whichever code printed.
    """

    def __init__(self, stream: IO[str], name: str = STANDARD_OUTPUT) -> None:
        self.wrapped = stream
        self._name = name

    def write(self, text: str) -> int:
        """Write all of ``text`` (OutputError on failure)."""
        write_stream(self.wrapped, text, self._name)
        return len(text)

    def flush(self) -> None:
        """Flush (OutputError on failure)."""
        try:
            self.wrapped.flush()
        except OSError as exc:
            raise OutputError(self._name, reason(exc)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
