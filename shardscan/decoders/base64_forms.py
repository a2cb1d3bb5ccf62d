"""Base64 keyword forms: patterns that find a keyword inside base64 text without decoding it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from functools import lru_cache

__all__ = [
    "CONTEXT_KEYWORD_CHARS", "KEYWORD_BYTES", "NESTED_QUANTA", "deep_keyword_forms", "keyword_forms", "nested_forms",
    "twice_forms",
]

KEYWORD_BYTES = 8
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ALT = {"+": "+\\-", "/": "/_"}


def _char_class(values: set[int]) -> str:
    chars = "".join(_ALT.get(_B64[v], _B64[v]) for v in sorted(values))
    if len(chars) == 1:
        return chars if chars.isalnum() else "\\" + chars
    return "[" + chars.replace("\\-", "-").replace("-", "\\-") + "]"


# Keywords longer than this are context words (``aws_secret_access_key``), not the start of a
# secret: a base64-encoded secret is found through its own prefix (``AKIA``) instead.
CONTEXT_KEYWORD_CHARS = 12


# A token keyword (``Ruleset.token_keywords``) is followed by token characters; its base64 forms
# take that into account up to this many bytes in all. Three-character keywords alone leave only
# three fixed base64 characters at two of the three alignments, which a screenshot's base64
# holds by chance every few hundred kilobytes; the top bit of three more bytes (token characters
# are ASCII) makes such chance matches about a hundred times rarer.
TOKEN_FORM_BYTES = 6
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def keyword_forms(keywords: Sequence[str], token_keywords: Collection[str] = ()) -> list[str]:
    """RE2 patterns for the ``keywords`` inside base64 or base64url, at each of the three byte alignments.

    Keywords of one length that differ in one byte are merged first (``ghp_``, ``gho_``, ``ghu_``
    become ``gh[pou]_``), and long keywords are cut to their first bytes: fewer, shorter
    alternatives keep the RE2 automaton fast. Characters only partly fixed by a keyword become
    classes (trailing) or are dropped (leading); characters not fixed at all are dropped. Forms
    with fewer than three fully fixed characters are not selective enough and are left out.
    Keywords in ``token_keywords`` are followed by token characters (see ``TOKEN_FORM_BYTES``).
    """
    patterns = _keyword_patterns(keywords, token_keywords)
    forms: list[str] = []
    for pattern, members in _merge(list(patterns.values())):
        merged = _forms(pattern)
        for align, form in enumerate(merged):
            if form is not None:
                forms.append(form)
            else:
                # Merging blurred this alignment below three fixed characters: keep each keyword's own.
                forms.extend(f for member in members if (f := _forms(member)[align]) is not None)
    return list(dict.fromkeys(forms))


def _keyword_patterns(
    keywords: Sequence[str], token_keywords: Collection[str]
) -> dict[tuple[frozenset[int], ...], tuple[list[set[int]], list[list[set[int]]]]]:
    """Each keyword's byte pattern (its first bytes, then token characters for a token keyword), keyed for dedup."""
    patterns: dict[tuple[frozenset[int], ...], tuple[list[set[int]], list[list[set[int]]]]] = {}
    for keyword in dict.fromkeys(keywords):
        if not 0 < len(keyword) <= CONTEXT_KEYWORD_CHARS:
            continue
        data = keyword.encode("utf-8")[:KEYWORD_BYTES]
        pattern = [{b} for b in data]
        if keyword in token_keywords:
            pattern += [set(_TOKEN_BYTES)] * max(0, TOKEN_FORM_BYTES - len(data))
        patterns.setdefault(tuple(frozenset(p) for p in pattern), (pattern, [pattern]))
    return patterns


def _merge(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]],
) -> list[tuple[list[set[int]], list[list[set[int]]]]]:
    """Merge byte patterns of one length that differ in exactly one position, until none do.

    Each pattern carries the keywords' own patterns it stands for. Always the first mergeable pair
    (in index order) is merged into its first member; the result depends on that order, so the
    search resumes where it can first change rather than from the start: after a merge into
    pattern ``m``, only the pairs of ``m`` with earlier patterns, then the pairs from ``m`` on can
    have become mergeable (the same merges as restarting, without the cubic cost).
    """
    frozen = [tuple(frozenset(p) for p in pattern) for pattern, _ in patterns]
    members = [list(m) for _, m in patterns]

    def differs_once(a: tuple[frozenset[int], ...], b: tuple[frozenset[int], ...]) -> int:
        """The one position where ``a`` and ``b`` differ, or -1."""
        if len(a) != len(b):
            return -1
        found = -1
        for k in range(len(a)):
            if a[k] != b[k]:
                if found >= 0:
                    return -1
                found = k
        return found

    def merge(i: int, j: int, k: int) -> None:
        a, b = frozen[i], frozen[j]
        frozen[i] = a[:k] + (a[k] | b[k],) + a[k + 1 :]
        members[i] = members[i] + members[j]
        del frozen[j], members[j]

    i, j = 0, 1
    while i < len(frozen):
        if j >= len(frozen):
            i, j = i + 1, i + 2
            continue
        k = differs_once(frozen[i], frozen[j])
        if k < 0:
            j += 1
            continue
        merge(i, j, k)
        # Pattern i changed: an earlier pattern may now merge with it, before any later pair.
        back = True
        while back:
            back = False
            for x in range(i):
                k = differs_once(frozen[x], frozen[i])
                if k >= 0:
                    merge(x, i, k)
                    i, back = x, True
                    break
        j = i + 1
    return [([set(p) for p in pattern], m) for pattern, m in zip(frozen, members, strict=True)]


def _forms(pattern: list[set[int]]) -> list[str | None]:
    """The form of one byte pattern (a set of possible bytes per position) at each alignment.

    None where the alignment leaves fewer than three fully fixed characters.
    """
    return list(_frozen_forms(tuple(frozenset(p) for p in pattern)))


# Cached: a scan derives the forms of all rule keywords and again of the keywords that select cells
# (mostly the same merged patterns).
@lru_cache(maxsize=4096)
def _frozen_forms(pattern: tuple[frozenset[int], ...]) -> tuple[str | None, ...]:
    return tuple(None if chars is None else "".join(_char_class(values) for values in chars)
                 for chars in _alignments([set(p) for p in pattern]))


def _alignments(pattern: list[set[int]]) -> list[list[set[int]] | None]:
    """Per byte alignment, the possible 6-bit values of each base64 character of the pattern.

    Leading characters not fully fixed are dropped: a class there would let many ordinary
    characters start a match and slow the RE2 automaton down. Trailing ones stay as classes (they
    only narrow a match that has already started), up to the first that admits every character.
    None where fewer than three characters are fully fixed (``+`` and ``/`` count as classes:
    base64url writes them ``-`` and ``_``).
    """
    out: list[list[set[int]] | None] = []
    frozen = [frozenset(p) for p in pattern]
    for align in range(3):
        total = align + len(pattern)
        total += -total % 3
        known: list[frozenset[int] | None] = [None] * align + frozen + [None] * (total - align - len(pattern))
        chars: list[set[int] | None] = []
        for q in range(0, total, 3):
            group = known[q : q + 3]
            for c in range(4):
                # Output character c takes bits 6c..6c+5 of the group, from at most two bytes.
                first, last = (6 * c) // 8, (6 * c + 5) // 8
                if all(group[i] is None for i in range(first, last + 1)):
                    chars.append(None)
                    continue
                chars.append(set(_char_values(tuple(group[first : last + 1]), c)))
        while chars and (chars[0] is None or not _fixed(chars[0])):
            chars.pop(0)
        while chars and (chars[-1] is None or len(chars[-1]) == 64):
            chars.pop()
        known_chars = [values for values in chars if values is not None]
        selective = len(known_chars) == len(chars) and sum(1 for values in known_chars if _fixed(values)) >= 3
        out.append(known_chars if selective else None)
    return out


@lru_cache(maxsize=8192)
def _char_values(options: tuple[frozenset[int] | None, ...], c: int) -> frozenset[int]:
    """The possible 6-bit values of character ``c`` of a quantum whose bytes under it may be ``options``."""
    first, last = (6 * c) // 8, (6 * c + 5) // 8
    # The character's bits are an OR of each byte's own bits (shifted into place), so the
    # possible values combine the distinct contributions of each byte.
    shift = 8 * (last - first + 1) - (6 * c - 8 * first) - 6
    values = {0}
    for i, byte_options in enumerate(options):
        bits = _bits(byte_options, 8 * (last - first - i), shift)
        values = {v | b for v in values for b in bits}
    return frozenset(values)


@lru_cache(maxsize=4096)
def _bits(options: frozenset[int] | None, place: int, shift: int) -> frozenset[int]:
    """The distinct contributions of one byte (any of ``options``, None: any byte) to a base64 character."""
    return frozenset(((byte << place) >> shift) & 0x3F for byte in (options if options is not None else range(256)))


def _fixed(values: set[int]) -> bool:
    return len(values) == 1 and min(values) < 62


def _as_bytes(chars: list[set[int]]) -> list[set[int]]:
    """Base64 characters (6-bit values per position) as the bytes that write them, in either alphabet."""
    return [{ord(c) for v in values for c in _ALT.get(_B64[v], _B64[v]).replace("\\", "")} for values in chars]


# Nested base64 (a keyword base64-encoded two or three times) shows no first-level form; the forms
# of each level are derived from the level below (its characters, as bytes, encoded again). Three
# fixed characters are kept at every level, so a form stays as selective as a first-level one, and
# the forms are literals with a few classes: Hyperscan searches them at no measurable extra cost.
def deep_keyword_forms(
    keywords: Sequence[str], token_keywords: Collection[str] = (), escaped: Sequence[Sequence[set[int]]] = (),
    depth: int = 3,
) -> list[str]:
    """Prefilter patterns for keywords nested deeper than one encoding, up to ``depth`` decodings:
    the ``escaped`` byte patterns (keywords written with an escape, ``ghp\\u005f``) base64-encoded
    once, and, whatever the keyword, a base64 run that encodes base64 text (:func:`twice_forms`).

    Anything base64-encoded two or more times holds such a run (the inner encoding is base64 text),
    so one structural form selects every deeper level for every rule; the cell is then decoded and
    each level searched. Keyword forms per level (tried first) grew with the rules to ten thousand
    patterns that took seconds to derive and compile on every start without a pattern cache.
    """
    by_escape = {tuple(frozenset(p) for p in pattern): (list(pattern), [list(pattern)]) for pattern in escaped}
    forms = [form for found in _levels(_merge_fast(list(by_escape.values())), 1) for form in found]
    if depth >= 2 and keywords:
        forms += twice_forms()
    return list(dict.fromkeys(forms))


# Bytes of base64 text (either alphabet, padding, wrapped lines): a run encoding only these is base64
# of base64. Random bytes give such a run of NESTED_QUANTA quanta with a probability of about 1e-10
# per position; base64 of prose never does (its spaces and punctuation are not among them).
_BASE64_TEXT_BYTES = frozenset(
    b for b in range(256) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/=-_\r\n")
)


def twice_forms() -> list[str]:
    """RE2 pattern of a base64 or base64url run of :data:`NESTED_QUANTA` quanta that decodes to base64 text."""
    return [_quanta_pattern(_BASE64_TEXT_BYTES)]


# The escaped keyword forms (about a thousand) are written as literals: Hyperscan compiles a literal
# in microseconds and a form with character classes in milliseconds, which made a second or more of
# every start without a pattern cache. Trailing classes are dropped where at least
# LITERAL_FIXED_CHARS fixed characters remain (a superset: a chance match is about 64 ** -6 per
# position of random base64, none in a corpus of screenshots), and the classes left inside are
# spelled out when that makes at most LITERAL_SPELLINGS literals (else the form keeps them).
LITERAL_FIXED_CHARS = 6
LITERAL_SPELLINGS = 16


def _literal_forms(chars: list[set[int]]) -> list[str]:
    """A form's characters (6-bit values per position) as RE2 literals, or as one pattern with classes."""
    kept = list(chars)
    while len(kept) > 1 and not _fixed(kept[-1]) and sum(map(_fixed, kept[:-1])) >= LITERAL_FIXED_CHARS:
        kept.pop()
    spellings = [sorted({c for v in values for c in _SPELLINGS[v]}) for values in kept]
    if math.prod(map(len, spellings)) > LITERAL_SPELLINGS:
        return ["".join(_char_class(values) for values in kept)]
    return ["".join(chosen) for chosen in itertools.product(*spellings)]


# Each 6-bit value's characters in base64 and base64url, escaped for RE2.
_SPELLINGS = tuple(
    tuple(c if c.isalnum() or c == "_" else "\\" + c for c in _ALT.get(char, char).replace("\\", "")) for char in _B64
)


# Characters of a form carried to the next level: enough for a selective form there (the first
# fixed characters hold the keyword), few enough that deriving the levels stays cheap.
DEEP_FORM_CHARS = 8


def _levels(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]], depth: int
) -> list[list[str]]:
    """The forms of byte patterns base64-encoded once, twice, ... ``depth`` times (one list per level)."""
    out: list[list[str]] = []
    level = patterns
    for _ in range(depth):
        forms: list[str] = []
        below: dict[tuple[frozenset[int], ...], tuple[list[set[int]], list[list[set[int]]]]] = {}
        for pattern, members in level:
            merged = _alignments(pattern)
            for align, chars in enumerate(merged):
                # (As in keyword_forms: where merging blurred an alignment, each member's own.)
                for found in [chars] if chars is not None else [_alignments(m)[align] for m in members]:
                    if found is not None:
                        forms.extend(_literal_forms(found))
                        encoded = _as_bytes(found[:DEEP_FORM_CHARS])
                        below.setdefault(tuple(frozenset(p) for p in encoded), (encoded, [encoded]))
        out.append(list(dict.fromkeys(forms)))
        level = _merge_fast(list(below.values()))
    return out


def _merge_fast(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]],
) -> list[tuple[list[set[int]], list[list[set[int]]]]]:
    """:func:`_merge` for the many patterns of the deeper levels: patterns that differ in one
    position are found by grouping on the other positions, one pass per position (linear, not cubic)."""
    current = [(tuple(map(frozenset, pattern)), members) for pattern, members in patterns]
    for k in range(max((len(p) for p, _ in current), default=0)):
        groups: dict[
            tuple[int, tuple[frozenset[int], ...], tuple[frozenset[int], ...]],
            tuple[tuple[frozenset[int], ...], list[list[set[int]]]],
        ] = {}
        for frozen, members in current:
            key = (len(frozen), frozen[:k], frozen[k + 1 :])
            if key in groups:
                kept, kept_members = groups[key]
                if len(frozen) > k:
                    kept = kept[:k] + (kept[k] | frozen[k],) + kept[k + 1 :]
                groups[key] = (kept, kept_members + members)
            else:
                groups[key] = (frozen, members)
        current = list(groups.values())
    return [([set(p) for p in frozen], members) for frozen, members in current]


# Nested encodings (base64 of base64, of percent- or JSON-escaped text, ...) show no keyword form
# until decoded. What they share is that the outer base64 encodes text: printable ASCII, whose bytes
# fix some bits of every base64 character (a byte of 0x20-0x7E has its top bit clear and is not a
# control character). A decoded view holding a run of this many quanta whose every character is
# possible for such bytes is decoded again, and at the depth limit such a run is a limit hit.
# Random bytes (images, archives) give such a run with a
# probability of about 0.07 ** NESTED_QUANTA (6e-10) per position; 24 bytes of text are shorter
# than any credential base64-encoded once more.
NESTED_QUANTA = 8
_TEXT_BYTES = frozenset(range(0x20, 0x7F))


def nested_forms() -> list[str]:
    """RE2 pattern of a base64 or base64url run of :data:`NESTED_QUANTA` quanta that decodes to printable ASCII.

    One class per character of a quantum (three text bytes become four characters): a superset of
    the exact set, which Hyperscan and RE2 match without backtracking.
    """
    return [_quanta_pattern(_TEXT_BYTES)]


def _quanta_pattern(data_bytes: frozenset[int]) -> str:
    """A run of :data:`NESTED_QUANTA` base64 quanta whose bytes are all in ``data_bytes``: one class per
    character of a quantum (three bytes become four characters), a superset of the exact set."""
    classes: list[str] = []
    for c in range(4):
        first, last = (6 * c) // 8, (6 * c + 5) // 8
        shift = 8 * (last - first + 1) - (6 * c - 8 * first) - 6
        values = {0}
        for i in range(first, last + 1):
            place = 8 * (last - i)
            bits = {((byte << place) >> shift) & 0x3F for byte in data_bytes}
            values = {v | b for v in values for b in bits}
        classes.append(_char_class(values))
    return "(?:" + "".join(classes) + f"){{{NESTED_QUANTA}}}"
