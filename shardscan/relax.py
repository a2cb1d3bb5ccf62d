"""Relax a rule pattern into an RE2 pattern that matches a superset of its texts (a vectorised gate).

The rule patterns need the ``regex`` module (lookbehinds, lookaheads), which runs in Python one
cell at a time. Dropping every assertion (lookarounds, ``\\b``, anchors) and widening what RE2
cannot express gives a pattern that matches *every* text the rule can match, and that RE2 runs
over whole Arrow arrays in C++. A cell the relaxed pattern does not match cannot hold a match of
the rule, so the rule is not run on it: findings are exactly those of running every rule, while
the long cells that only share a short keyword with a rule (``eyJ`` or ``A3T`` inside base64
screenshots, ``hf_`` in code) skip the Python regex entirely.

Whatever this module cannot relax with certainty (back-references, conditionals, syntax of the
``regex`` module that ``re`` would read differently) yields ``None``: that rule always runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

try:  # the stdlib parser of ``re`` patterns (private, but stable across 3.11-3.13)
    import re._constants as _c  # type: ignore[import-not-found]  # (private: typeshed has no stub)
    import re._parser as _parser  # type: ignore[import-not-found]  # (private: typeshed has no stub)
except ImportError:  # pragma: no cover (older layouts)
    _parser = None
    _c = None

# RE2 refuses counted repeats above 1000 and large ones inflate its program; above this bound a
# repeat is widened to "at least this many" (a superset).
_MAX_COUNT = 64

# Syntax that the ``regex`` module reads differently from ``re`` (POSIX classes, fuzzy matching,
# braces that are not a counted repeat): do not risk a gate that is not a superset.
_UNSAFE = re.compile(r"\[:\^?[A-Za-z]+:\]|\\[pPNXmMGK]|\{(?!\d*,?\d*\})")

# A flag bit of our own, carried with the ``re`` flags through the emitter: widen every counted
# repeat ``{m,n}`` with ``n > m + 1`` to ``{m,}`` (see ``relax(open_ranges=True)``).
_OPEN_RANGES = 1 << 30

_SPACE = r"\t\n\x{b}\f\r \x{1c}-\x{1f}\x{85}\p{Z}"
_WORD = r"\p{L}\p{N}\p{M}_"
_DIGIT = r"\p{Nd}"
_ANY_CHAR = r"\x{0}-\x{10FFFF}"


class _Unrelaxable(Exception):
    pass


_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)) if _c is not None else ()


def relax(source: str, *, open_ranges: bool = False) -> str | None:
    """An RE2 pattern matching a superset of what ``source`` (a ``regex``-module pattern) matches.

    Returns ``None`` when no safe relaxation is known; the caller must then always run the rule.
    ``open_ranges`` widens every bounded range of repeats (``[^\\n]{0,60}``) to an open one
    (``[^\\n]{0,}``), a looser superset: Hyperscan refuses a pattern whose bounded repeats of
    Unicode classes unroll too far ("Pattern is too large"), and accepts the open form.
    """
    if _parser is None or _UNSAFE.search(_strip_escaped_braces(source)):
        return None
    try:
        items, flags = _trimmed(source)
        if not items:
            return None  # the pattern can match an empty string: every text may match
        emitted = _emit(items, flags | (_OPEN_RANGES if open_ranges else 0))
        return ("(?i)" if flags & re.IGNORECASE else "") + emitted
    except (_Unrelaxable, re.error, RecursionError, ValueError, TypeError, AttributeError):
        return None


def anchor_length(source: str) -> int:
    """The length of the longest run of literal characters that every match of ``source`` holds
    (0 when there is none, or the pattern cannot be read).

    What a search engine can anchor on: a gate whose longest such run is one character (a ``:``, a
    ``{``) is tried at nearly every position of a text.
    """
    if _parser is None or _UNSAFE.search(_strip_escaped_braces(source)):
        return 0
    try:
        items, _flags = _trimmed(source)
    except (re.error, RecursionError, ValueError, TypeError, AttributeError):
        return 0
    return _required_run(items)


def _required_run(items: Any) -> int:
    best = run = 0
    for op, av in _inline(items):
        if op is _c.LITERAL:
            run += 1
            best = max(best, run)
            continue
        run = 0
        if op is _c.BRANCH:
            best = max(best, min(_required_run(branch) for branch in av[1]))
        elif op in _REPEATS and av[0] >= 1:
            best = max(best, _required_run(av[2]))
    return best


def _inline(items: Any) -> Any:
    """``items`` with the sequences of groups spliced in (a group's text is part of the run around it)."""
    for op, av in items:
        if op is _c.SUBPATTERN:
            yield from _inline(av[3])
        elif op is _c.ATOMIC_GROUP:
            yield from _inline(av)
        else:
            yield op, av


def literal_alternation(words: Iterable[str]) -> str:
    """An RE2 pattern matching any of ``words`` literally (case-sensitive)."""
    return "(?:" + "|".join("".join(_char(ord(c)) for c in word) for word in words) + ")"


# A named group's opening (``(?P<name>`` or the ``regex`` module's ``(?<name>``), not escaped.
_NAMED_GROUP = re.compile(r"(?<!\\)\(\?P?<[A-Za-z_][A-Za-z0-9_]*>")


@lru_cache(maxsize=256)
def _trimmed(source: str) -> tuple[list[Any], int]:
    """The parsed pattern's trimmed top-level sequence and its flags (parsed once for both forms;
    nothing downstream modifies them).

    Named groups are read as plain groups: the relaxed pattern captures nothing, and the
    ``regex`` module lets alternatives reuse a name (each way of writing a pair captures its own
    ``secret``), which ``re``'s parser refuses. A back-reference to a name then fails to parse:
    such a pattern is not relaxed, as before.
    """
    parsed = _parser.parse(_NAMED_GROUP.sub("(?:", source))
    return _trim(parsed.data, parsed.state), parsed.state.flags


def _trim(items: Any, state: Any) -> list[Any]:
    """The smallest top-level sequence whose presence in a text is implied by the pattern's.

    A text contains a match of ``A B?`` iff it contains a match of ``A``, and one of ``A X{8,}``
    iff it contains one of ``A X{8}``: optional ends are dropped and open-ended repeats at the ends
    shortened, so RE2 has less to track (assertions go too; they would emit nothing anyway).
    """
    seq = [(op, av) for op, av in items if op not in (_c.AT, _c.ASSERT, _c.ASSERT_NOT)]
    if len(seq) == 1 and seq[0][0] is _c.SUBPATTERN and seq[0][1][1] == 0 and seq[0][1][2] == 0:
        return _trim(seq[0][1][3], state)  # a group around everything (usually ``(?P<secret>...)``)

    def min_width(item: tuple[Any, ...]) -> int:
        width: int = _parser.SubPattern(state, [item]).getwidth()[0]
        return width

    while seq and min_width(seq[0]) == 0:
        seq.pop(0)
    while seq and min_width(seq[-1]) == 0:
        seq.pop()
    for end in ({0, len(seq) - 1} if seq else set()):
        op, av = seq[end]
        if op in _REPEATS and av[0] > 0:
            seq[end] = (_c.MAX_REPEAT, (av[0], av[0], av[2]))
    return seq


def _strip_escaped_braces(source: str) -> str:
    return source.replace("\\{", "").replace("\\}", "")


def _emit(items: Any, flags: int) -> str:
    return "".join(_node(op, av, flags) for op, av in items)


def _node(op: Any, av: Any, flags: int) -> str:  # noqa: C901 (one case per opcode)
    if op is _c.LITERAL:
        return _char(av)
    if op is _c.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is _c.ANY:
        return r"(?s:.)" if flags & re.DOTALL else r"[^\n]"
    if op is _c.IN:
        return _charset(av)
    if op is _c.BRANCH:
        return "(?:" + "|".join(_emit(branch, flags) for branch in av[1]) + ")"
    if op is _c.SUBPATTERN:
        _group, add, delete, body = av
        inner = (flags | add) & ~delete
        # Case-insensitivity is the only scoped flag RE2 needs told about (DOTALL is resolved in ANY).
        if inner & re.IGNORECASE and not flags & re.IGNORECASE:
            return "(?i:" + _emit(body, inner) + ")"
        if flags & re.IGNORECASE and not inner & re.IGNORECASE:
            return "(?-i:" + _emit(body, inner) + ")"
        return "(?:" + _emit(body, inner) + ")"
    if op is _c.ATOMIC_GROUP:
        return "(?:" + _emit(av, flags) + ")"
    if op in _REPEATS:
        low, high, body = av
        inner = "(?:" + _emit(body, flags) + ")"
        if high is _c.MAXREPEAT or high > _MAX_COUNT or (flags & _OPEN_RANGES and high > low + 1):
            return inner + f"{{{min(low, _MAX_COUNT)},}}"
        return inner + f"{{{low},{high}}}"
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return ""  # assertions only narrow a match: dropping them keeps a superset
    raise _Unrelaxable(str(op))


def _char(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF:
        raise _Unrelaxable("surrogate")
    if code < 128 and chr(code).isalnum():
        return chr(code)
    return f"\\x{{{code:x}}}"


def _charset(items: list[Any]) -> str:
    negate = False
    parts: list[str] = []
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            parts.append(_char(av))
        elif op is _c.RANGE:
            parts.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op is _c.CATEGORY:
            parts.append(_category(av))
        else:
            raise _Unrelaxable(str(op))
    if negate:
        if any(p == _ANY_CHAR for p in parts):
            raise _Unrelaxable("negated class with a negated category")
        return "[^" + "".join(parts) + "]"
    return "[" + "".join(parts) + "]"


def _category(code: Any) -> str:
    name = str(code)
    if name.endswith("NOT_DIGIT") or name.endswith("NOT_SPACE") or name.endswith("NOT_WORD"):
        # A complement inside a class cannot be written in RE2 syntax; any character is a superset.
        return _ANY_CHAR
    if name.endswith("DIGIT"):
        return _DIGIT
    if name.endswith("SPACE"):
        return _SPACE
    if name.endswith("WORD"):
        return _WORD
    raise _Unrelaxable(name)
