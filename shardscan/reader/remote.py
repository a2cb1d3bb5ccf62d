"""Shards behind filesystem URLs (``s3://``, ``gs://``, ``hf://``, any fsspec protocol): resolve, list, glob.

Object stores that pyarrow implements natively (S3, GCS, HDFS, Azure) go through ``pyarrow.fs``,
which reads Parquet footers and row groups with ranged requests. Every other scheme goes through
fsspec (``hf://`` is huggingface_hub's ``HfFileSystem``), wrapped as a ``pyarrow.fs.PyFileSystem``
so that the readers see one interface. Credentials and endpoints come from each filesystem's own
environment and configuration (``AWS_*`` variables and ``~/.aws``, ``GOOGLE_APPLICATION_CREDENTIALS``,
``HF_TOKEN`` or ``huggingface-cli login``); shardscan has no flag for them, so no secret lands in
shell history.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow.fs as pafs

from shardscan.errors import MissingDependencyError, describe_remote_error
from shardscan.reader.exclude import glob_regex
from shardscan.reader.sources import ShardRef, Unresolved, format_of

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>.*)$", re.DOTALL)
_MAGIC = re.compile(r"[*?\[]")
# Schemes pyarrow implements itself; everything else goes through fsspec.
PYARROW_SCHEMES = frozenset({"s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss", "file"})
# The package that registers an fsspec protocol, for the message when it is missing.
FSSPEC_PACKAGES = {"hf": "huggingface_hub", "az": "adlfs", "http": "aiohttp", "https": "aiohttp", "sftp": "paramiko"}


def is_url(raw: str) -> bool:
    """True when a path given by the user is a filesystem URL (``scheme://...``)."""
    return _URL.match(raw) is not None


@dataclass(frozen=True, slots=True)
class Resolved:
    """A URL's filesystem, the path within it, and how a path of that filesystem is written as a URL."""

    filesystem: pafs.FileSystem
    path: str
    to_url: Callable[[str], str]


def resolve(url: str) -> Resolved:
    """The filesystem for a URL without glob characters, the path within it, and path -> URL.

    Raises OSError, ValueError or ImportError when the URL has no usable filesystem.
    """
    match = _URL.match(url)
    if match is None:
        raise ValueError(f"not a URL: {url}")
    scheme = match["scheme"].lower()
    if scheme in PYARROW_SCHEMES:
        filesystem, path = pafs.FileSystem.from_uri(url)
        return Resolved(filesystem, path, lambda p: f"{scheme}://{p}")
    try:
        import fsspec
    except ImportError:
        hint = f"pip install fsspec{_package_hint(scheme)}"
        raise ImportError(f"{scheme}:// URLs are read through fsspec: {hint}") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        package = FSSPEC_PACKAGES.get(scheme)
        how = f"pip install {package}" if package else f"install the package that registers {scheme}:// ({exc})"
        raise ImportError(f"{scheme}:// URLs need an fsspec implementation: {how}") from None
    return Resolved(pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path, fs.unstrip_protocol)


@dataclass(frozen=True, slots=True)
class Listed:
    """A file found behind a URL, and its path relative to the listed prefix (for exclusions)."""

    ref: ShardRef
    rel: str


@dataclass(frozen=True, slots=True)
class UrlListing:
    """The files behind one URL (sorted by display name), or why there are none."""

    files: tuple[Listed, ...] = ()
    problem: Unresolved | None = None


def discover_url(url: str) -> UrlListing:
    """Every file behind one URL: an object, every file under a prefix, or the objects a glob matches.

    Raises MissingDependencyError when the URL's scheme needs a package that is not installed.
    """
    match = _URL.match(url)
    if match is None:
        raise ValueError(f"not a URL: {url}")
    base, pattern = _split_glob(match["rest"])
    base_url = f"{match['scheme']}://{base}"
    try:
        resolved = resolve(base_url)
    except ImportError as exc:
        raise MissingDependencyError(f"{url}: {exc}") from None
    except Exception as exc:
        return UrlListing(problem=Unresolved(url, describe_remote_error(exc)))
    filesystem, root, to_url = resolved.filesystem, resolved.path, resolved.to_url
    try:
        if pattern is None:
            info = filesystem.get_file_info(root)
            if info.type == pafs.FileType.File:
                return UrlListing((Listed(ShardRef(url, root, filesystem, format_of(root)), info.base_name),))
            if info.type == pafs.FileType.NotFound:
                return UrlListing(problem=Unresolved(url, "no such object, prefix or folder"))
            infos = _list(filesystem, root)
        else:
            # ``pattern`` is the URL's full path; match it against the listed paths below ``root``.
            regex = glob_regex(_join(root, pattern[len(base):].lstrip("/")) if base else pattern)
            info = filesystem.get_file_info(root)
            infos = _list(filesystem, root) if info.type == pafs.FileType.Directory else []
            infos = [i for i in infos if regex.fullmatch(i.path.rstrip("/"))]
        found = [Listed(_ref(i.path, filesystem, to_url), _relative(i.path, root)) for i in infos]
    except Exception as exc:  # listing: missing bucket, access denied, network errors
        return UrlListing(problem=Unresolved(url, describe_remote_error(exc)))
    if not found:
        reason = "no file matched" if pattern is not None else "no file under this prefix"
        return UrlListing(problem=Unresolved(url, reason))
    return UrlListing(tuple(sorted(found, key=lambda f: f.ref.display)))


def _split_glob(rest: str) -> tuple[str, str | None]:
    """Split a URL path at its first segment with glob characters: (base, whole pattern or None)."""
    parts = rest.split("/")
    for index, part in enumerate(parts):
        if _MAGIC.search(part):
            return "/".join(parts[:index]), rest
    return rest.rstrip("/") or rest, None


def _join(root: str, tail: str) -> str:
    return f"{root.rstrip('/')}/{tail}" if tail else root


def _list(filesystem: pafs.FileSystem, root: str) -> list[pafs.FileInfo]:
    selector = pafs.FileSelector(root, recursive=True)
    infos = [i for i in filesystem.get_file_info(selector) if i.type == pafs.FileType.File]
    return sorted(infos, key=lambda i: i.path)


def _ref(path: str, filesystem: pafs.FileSystem, to_url: Callable[[str], str]) -> ShardRef:
    return ShardRef(to_url(path), path, filesystem, format_of(path))


def _package_hint(scheme: str) -> str:
    package = FSSPEC_PACKAGES.get(scheme)
    return f" {package}" if package else ""


def _relative(path: str, root: str) -> str:
    root = root.rstrip("/")
    return path[len(root) + 1:] if root and path.startswith(root + "/") else path.rsplit("/", 1)[-1]
