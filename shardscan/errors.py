"""Exception types; they carry locations and reasons, never cell contents."""

from __future__ import annotations

import re


class ShardscanError(Exception):
    """Root of every error shardscan raises on purpose."""


class ConfigError(ShardscanError):
    """A rule file, allowlist or option is invalid (the CLI maps this to exit code 2).

    The message names the file and, where there is one, the rule or entry: ``rules/x.yaml: rule-id: what``.
    """


class ShardReadError(ShardscanError):
    """A shard (or part of it) could not be read. Names the shard and row group, never the data."""

    def __init__(self, shard: str, reason: str, row_group: int | None = None, row: int | None = None) -> None:
        self.shard = shard
        self.reason = reason
        self.row_group = row_group
        self.row = row
        where = shard if row_group is None else f"{shard} (row group {row_group})"
        where = where if row is None else f"{shard} (row {row})"
        super().__init__(f"{where}: {reason}")


# A run that could be (part of) a credential: ghp_…, sk-proj-…, base64 bodies, JWT segments.
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_+/=.\-]{16,}")


def describe_exception(exc: BaseException) -> str:
    """A one-line reason for an exception raised while reading data, safe to print.

    Library exceptions (pyarrow, zstd, OS) can quote the bytes they choked on; we keep the
    exception type and only as much of the message as cannot carry a secret.
    """
    name = type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        return f"{name}: {exc.strerror}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    # Long messages may echo data; keep a short, token-free prefix.
    text = text[:160]
    if _TOKEN_LIKE.search(text):
        text = "the data could not be decoded (the library's own message is withheld: it may quote the scanned data)"
    return f"{name}: {text}" if text else name


_AWS_ERROR = re.compile(r"AWS Error (?P<code>[A-Z_]+) during (?P<op>\w+) operation: (?P<msg>[^(\n]*)")


def describe_remote_error(exc: BaseException) -> str:
    """Like describe_exception, but keeps an object store's error code and message (``ACCESS_DENIED
    during GetObject: ...``): they name the failure, never the data, and a user needs them."""
    aws = _AWS_ERROR.search(str(exc))
    if aws:
        return f"{aws['code']} during {aws['op']}: {aws['msg'].strip()[:120]}".rstrip(": ")
    return describe_exception(exc)


class OutputError(ShardscanError):
    """An output (a report, a redacted copy, a manifest, an allowlist, standard output) could not be
    written. Names the path, or "standard output", and the OS's reason; never the data (exit 2)."""

    def __init__(self, target: str, reason: str) -> None:
        self.target = target
        self.reason = reason
        super().__init__(f"{target}: cannot write: {reason}")


class MissingDependencyError(ConfigError):
    """An optional package a path or option needs is not installed; the message gives the install command."""


class IncompleteInputError(ShardscanError):
    """An input could not be found or read, so a command did nothing rather than part of its work;
    names the input, never its data (the CLI maps this to exit code 3)."""
