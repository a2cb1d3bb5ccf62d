"""Encoded and nested keyword forms: the RE2 patterns by which the prefilter selects a cell whose keyword is encoded."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable
from functools import lru_cache
from pathlib import Path

from shardscan import __version__
from shardscan.decoders.base import Decoder
from shardscan.local_state import atomic_write, cache_key, seal, unseal

__all__ = ["FULLY_ESCAPED_CHARS", "deep_keyword_patterns", "encoded_keyword_patterns", "nested_patterns", "re2_literal"]

# Part of the cache key of derived deep forms: raised when their derivation changes within a version
# (2: escaped forms written as literals), so that a pattern cache never serves the old ones.
_DEEP_FORMS_FORMAT = 2

# The functions take the decoder registry (``shardscan.decoders.DECODERS``) as an argument: this
# module sits below the package that holds the registry, and the package re-exports them bound to it.


def nested_patterns(decoders: Iterable[Decoder]) -> list[str]:
    """RE2 patterns, from every decoder, of encoded runs whose decoding is itself encoded text.

    A decoded view holding one is kept and decoded again, whatever keywords it shows (base64 of
    base64 shows none until decoded twice). They are keyword-free, so they do not grow with the rules.
    """
    return list(dict.fromkeys(form for decoder in decoders for form in decoder.nested_forms()))


def deep_keyword_patterns(
    decoders: Iterable[Decoder], keywords: Iterable[str], token_keywords: Collection[str] = (),
    context_keywords: Collection[str] = (), depth: int = 3, cache_dir: Path | None = None,
) -> list[str]:
    """RE2 patterns (for the prefilter) of keywords nested deeper than one encoding, up to ``depth`` decodings.

    From every decoder that re-encodes whole runs: its forms of a keyword encoded 2 to ``depth``
    times, and of a keyword written with one escaped punctuation character (``ghp\\u005f``,
    ``sk%2Dant``) encoded once (base64 of an escaped tool call, of a percent-encoded URL).
    Context keywords get none, as for the first level. ``cache_dir``: the folder of sealed
    compiled patterns, where the derived forms are kept too (None: derived in memory).
    """
    in_runs = tuple(k for k in dict.fromkeys(keywords) if k and k not in context_keywords)
    if depth < 2 or not in_runs:
        return []
    tokens = frozenset(token_keywords)
    registry = tuple(decoders)
    if cache_dir is None:
        return list(_deep_keyword_patterns(registry, in_runs, tokens, depth))
    # Deriving the forms of a hundred rules' keywords takes seconds: a scan with a pattern cache
    # keeps them there, sealed like the compiled databases (a tampered file is derived again).
    key = hashlib.sha256(
        json.dumps([sorted(in_runs), sorted(tokens), depth, __version__, _DEEP_FORMS_FORMAT]).encode()
    ).hexdigest()
    path = cache_dir / f"deep-forms-{key}.json"
    label = f"deep-keyword-forms\0{key}"
    try:
        payload = unseal(cache_key(), label, path.read_bytes())
        if payload is not None:
            return list(json.loads(payload))
    except (OSError, ValueError):
        pass
    forms = list(_deep_keyword_patterns(registry, in_runs, tokens, depth))
    secret = cache_key()
    if secret is not None:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(path, seal(secret, label, json.dumps(forms).encode()))
        except OSError:  # a cache that cannot be written only costs time
            pass
    return forms


@lru_cache(maxsize=4)
def _deep_keyword_patterns(
    decoders: tuple[Decoder, ...], keywords: tuple[str, ...], token_keywords: frozenset[str], depth: int
) -> tuple[str, ...]:
    # Cached: deriving the levels takes tens of milliseconds, and a command may build more than
    # one scanner for the same rules (the allowlist's secret check, the scan).
    escaped = [pattern for keyword in keywords for pattern in _escaped_byte_patterns(decoders, keyword)]
    return tuple(dict.fromkeys(
        form for decoder in decoders for form in decoder.deep_keyword_forms(keywords, token_keywords, escaped, depth)
    ))


def _alnum_neighbours(keyword: str, i: int) -> tuple[int, int]:
    """The bounds of the alphanumeric runs on either side of ``keyword[i]``: ``keyword[left:i]`` and
    ``keyword[i + 1:right]``."""
    left = i
    while left > 0 and keyword[left - 1].isalnum():
        left -= 1
    right = i + 1
    while right < len(keyword) and keyword[right].isalnum():
        right += 1
    return left, right


def _escaped_byte_patterns(decoders: tuple[Decoder, ...], keyword: str) -> list[list[set[int]]]:
    """Byte patterns of ``keyword``'s first escapable punctuation character escaped by each decoder
    (``ghp\\u005[fF]``), with the alphanumeric run beside it (as :func:`_escaped_punctuation`)."""
    out: list[list[set[int]]] = []
    for i, char in enumerate(keyword):
        if char.isalnum():
            continue
        left, right = _alnum_neighbours(keyword, i)
        for form in (f for decoder in decoders for f in decoder.char_forms(char)):
            escape = _literal_pattern(form)
            if escape is None:
                continue
            if left < i:
                out.append([{b} for b in keyword[left:i].encode()] + escape)
            elif right > i + 1:
                out.append(escape + [{b} for b in keyword[i + 1 : right].encode()])
        break
    return out


def _literal_pattern(regex: str) -> list[set[int]] | None:
    """A char form (``\\u005[fF]``, ``&#0{0,6}95;``) as bytes per position, in its shortest spelling.

    Understands literals, backslash escapes, classes of literal characters and ``{0,n}`` (taken as
    none); anything else gives None.
    """
    out: list[set[int]] = []
    i = 0
    while i < len(regex):
        char = regex[i]
        if char == "\\" and i + 1 < len(regex):
            out.append({ord(regex[i + 1])})
            i += 2
        elif char == "[":
            end = regex.find("]", i)
            if end < 0:
                return None
            out.append({ord(c) for c in regex[i + 1 : end].replace("\\", "")})
            i = end + 1
        elif char == "{":
            end = regex.find("}", i)
            if end < 0 or not regex[i + 1 : end].startswith("0,") or not out:
                return None
            out.pop()  # the repeated item, zero times
            i = end + 1
        elif char.isalnum() or char in "%&#;:_-":
            out.append({ord(char)})
            i += 1
        else:
            return None
    return out if all(b < 0x80 for p in out for b in p) else None


def encoded_keyword_patterns(
    decoders: Iterable[Decoder], keywords: Iterable[str], token_keywords: Collection[str] = (),
    context_keywords: Collection[str] = (),
) -> list[str]:
    """RE2 patterns matching the encoded forms of ``keywords`` (for the prefilter).

    * Whole-keyword forms from decoders that re-encode a whole run: base64 at its three byte
      alignments (with the token characters that follow a token keyword, see
      ``Ruleset.token_keywords``); none for context keywords (``Ruleset.context_keywords``).
    * Escaped punctuation, the way serialisers write it: each non-alphanumeric keyword character
      in any escape form next to the alphanumeric run beside it (``ghp\\u005f``,
      ``%2DBEGIN``, ``sk&#45;ant``), the runs of all keywords that share an escape in one pattern.
    * Fully escaped keywords (every character ``\\u00XX`` or ``%XX``): their first characters.
    * Encodings that cut every keyword apart select by their own shape (a hex dump's lines).

    The patterns are a superset filter, kept small on purpose: RE2 compiles the alternation for
    every Arrow array it filters, and a compact pattern keeps that cost negligible.
    """
    registry = tuple(decoders)
    keywords = [k for k in dict.fromkeys(keywords) if k]
    patterns: list[str] = []
    in_runs = [k for k in keywords if k not in context_keywords]
    for decoder in registry:
        patterns.extend(decoder.keyword_forms(in_runs, token_keywords))
    patterns.extend(_escaped_punctuation(registry, keywords))
    for keyword in keywords:
        head = keyword[:FULLY_ESCAPED_CHARS]
        for decoder in registry:
            forms = [decoder.char_forms(char) for char in head]
            if all(len(f) == 1 for f in forms):
                patterns.append("".join(f[0] for f in forms))
    return list(dict.fromkeys(patterns))


# How many leading characters of a fully escaped keyword the prefilter looks for.
FULLY_ESCAPED_CHARS = 4


def re2_literal(text: str) -> str:
    """``text`` as an RE2 literal: every character other than a letter, digit or ``_`` escaped."""
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in text)


def _escaped_punctuation(decoders: tuple[Decoder, ...], keywords: Iterable[str]) -> list[str]:
    """Patterns for keywords with one punctuation character escaped, anchored on its alphanumeric neighbour.

    One pattern per escaped character and side, with the runs of every keyword beside it as one
    alternation (``(?:AZURE|lin|rk)(?:\\u005[fF]|%5[Ff]|...)``): the same matches as a pattern per
    keyword, and a few dozen expressions instead of hundreds for Hyperscan to compile on every start.
    """
    runs: dict[tuple[str, bool], list[str]] = {}
    for keyword in keywords:
        for i, char in enumerate(keyword):
            if char.isalnum():
                continue
            forms = [form for decoder in decoders for form in decoder.char_forms(char)]
            if not forms:
                continue
            escaped = "(?:" + "|".join(forms) + ")"
            left, right = _alnum_neighbours(keyword, i)
            if left < i:
                runs.setdefault((escaped, True), []).append(re2_literal(keyword[left:i]))
            elif right > i + 1:
                runs.setdefault((escaped, False), []).append(re2_literal(keyword[i + 1 : right]))
    out: list[str] = []
    for (escaped, after_run), found in runs.items():
        alternation = "(?:" + "|".join(sorted(set(found))) + ")"
        out.append(alternation + escaped if after_run else escaped + alternation)
    return out
