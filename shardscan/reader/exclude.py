"""Exclusion globs (``--exclude`` and ``.shardscanignore``, gitignore-style) and the default exclusions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from shardscan.atomic import TEMP_SUFFIX

IGNORE_FILE = ".shardscanignore"
# The largest ignore file read: it is a short list of globs, and it lives in scanned (hostile) data.
MAX_IGNORE_BYTES = 1 << 20
# shardscan's result cache folder (``shardscan.cache.CACHE_DIR_NAME``; a test keeps them equal:
# the cache imports the reader, so the reader cannot import it).
CACHE_DIR_NAME = ".shardscan-cache"


class ExclusionSource(StrEnum):
    """Why a file was left out on purpose; the value is how reports word it ("excluded by ...")."""

    OPTION = "--exclude"
    IGNORE_FILE = IGNORE_FILE
    GIT = "default (.git/ folders)"
    CACHE = "default (shardscan's cache folder)"
    TEMP = "default (shardscan's temporary files)"


@dataclass(frozen=True, slots=True)
class Pattern:
    """One compiled exclusion glob."""

    text: str
    regex: re.Pattern[str]
    negate: bool


@dataclass(frozen=True, slots=True)
class Exclusions:
    """The globs that exclude files under one scanned root, by source."""

    option: tuple[Pattern, ...] = ()
    ignore_file: tuple[Pattern, ...] = ()

    def source_of(self, rel: str) -> ExclusionSource | None:
        """The source that excludes a path relative to the root (``/``-separated), if any.

        Default exclusions first, then ``--exclude``, then the ignore file (where a later ``!glob``
        re-includes what an earlier line excluded, as in ``.gitignore``).
        """
        default = default_exclusion(rel)
        if default is not None:
            return default
        if matches(self.option, rel):
            return ExclusionSource.OPTION
        if matches(self.ignore_file, rel):
            return ExclusionSource.IGNORE_FILE
        return None


def default_exclusion(rel: str) -> ExclusionSource | None:
    """The default exclusion of a path: git's own folder, shardscan's cache and half-written files."""
    if rel.endswith(TEMP_SUFFIX):
        return ExclusionSource.TEMP
    parts = rel.split("/")
    if ".git" in parts:  # the folder, or the file a worktree or submodule has in its place
        return ExclusionSource.GIT
    if CACHE_DIR_NAME in parts[:-1]:
        return ExclusionSource.CACHE
    return None


def compile_patterns(lines: list[str] | tuple[str, ...], allow_negation: bool = True) -> tuple[Pattern, ...]:
    """Compile gitignore-style globs; blank lines and ``#`` comments are skipped.

    A glob without ``/`` (other than a trailing one) matches a name at any depth; one with a ``/``
    is anchored at the scanned root. A trailing ``/`` matches folders only. A glob that matches a
    folder excludes everything in it. ``*`` and ``?`` stay within a name, ``**`` spans folders,
    ``[...]`` is a character class, ``!glob`` re-includes, ``\\#`` and ``\\!`` are literal.
    """
    out: list[Pattern] = []
    for raw in lines:
        text = raw.rstrip("\r\n").rstrip(" ")
        if not text or text.startswith("#"):
            continue
        negate = allow_negation and text.startswith("!")
        body = text[1:] if negate else text
        if body.startswith(("\\#", "\\!")):
            body = body[1:]
        folder_only = body.endswith("/")
        body = body.rstrip("/")
        if not body:
            continue
        anchored = "/" in body
        glob = glob_regex(body.lstrip("/").removeprefix("./")).pattern
        prefix = "" if anchored else "(?:.*/)?"
        suffix = "/.*" if folder_only else "(?:/.*)?"
        out.append(Pattern(text, re.compile(prefix + glob + suffix, re.DOTALL), negate))
    return tuple(out)


def matches(patterns: tuple[Pattern, ...], rel: str) -> bool:
    """True when the last pattern that matches ``rel`` excludes it (gitignore's rule)."""
    excluded = False
    for pattern in patterns:
        if pattern.negate == excluded and pattern.regex.fullmatch(rel):
            excluded = not pattern.negate
    return excluded


def ignore_file_lines(folder: Path) -> list[str]:
    """The lines of ``.shardscanignore`` in ``folder`` (read bounded), or none when it has none."""
    try:
        with open(folder / IGNORE_FILE, "rb") as handle:
            return handle.read(MAX_IGNORE_BYTES).decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob: ``**`` spans folders, ``*`` and ``?`` stay within one, ``[...]`` is a class."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out), re.DOTALL)
