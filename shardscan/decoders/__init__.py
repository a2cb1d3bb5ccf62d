"""Decoding stage: views of a cell's text (raw first, then decoded ones) with offset maps back.

The stage's entry point is :func:`views` (in :mod:`shardscan.decoders.walk`): given a cell's text,
its :class:`DecodeLimits` and the rule keywords (a :class:`KeywordSet`), it yields :class:`View` s
breadth-first, up to a depth, a byte budget and a number of views per cell, and only keeps a
decoded view where it can pay off: it holds a rule keyword (plain or itself encoded) that its
parent did not show as plainly, or the decoding changed text right next to a keyword.

Each decoder is one module with a ``DECODER`` record; :data:`DECODERS` is the registry (adding a
decoder is one file and one line in :mod:`shardscan.decoders.registry`). This module holds the
:class:`KeywordSet` (the keywords and their encoded forms, searched with Hyperscan where it is
installed) and the derivation of the keyword forms the prefilter selects cells by.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from shardscan import arrow_compute as compute
from shardscan import hyperscan_matcher
from shardscan.decoders import keyword_forms
from shardscan.decoders.base import Decoded, Decoder, OffsetMap
from shardscan.decoders.keyword_forms import re2_literal as _re2_literal
from shardscan.decoders.registry import DECODERS
from shardscan.decoders.walk import NEAR_AFTER, NEAR_BEFORE, DecodeBudget, DecodeLimits, KeywordSearch, View, views

# What a Hyperscan scan raises when a match handler stops it (the first match answers the question).
try:
    import hyperscan

    _SCAN_STOPPED: tuple[type[BaseException], ...] = (hyperscan.ScanTerminated,)
except ImportError:  # no wheel: hyperscan_matcher.database() gives None, so no scan runs to be stopped
    _SCAN_STOPPED = ()

__all__ = [
    "DECODERS",
    "NEAR_AFTER",
    "NEAR_BEFORE",
    "DecodeBudget",
    "DecodeLimits",
    "Decoded",
    "Decoder",
    "KeywordSearch",
    "KeywordSet",
    "OffsetMap",
    "View",
    "deep_keyword_patterns",
    "encoded_keyword_patterns",
    "nested_patterns",
    "views",
]

# In a binary blob, the bytes read as text around each plain keyword (and at most this many).
EXCERPT_BEFORE = 512
EXCERPT_AFTER = 16 * 1024
MAX_EXCERPTS = 64
# Printable bytes after a keyword in a binary blob at the depth limit that make it worth decoding
# further: random bytes have 16 of them in a row about once in ten million occurrences.
TOKEN_TAIL_BYTES = 16
# Inputs longer than this are searched with RE2 (C++); shorter ones with Python's re.
RE2_ABOVE = 64 * 1024
# A name a base64 value is assigned to (see KeywordSet.label_before): at most this many characters
# before the value, on its line: the keyword, the rest of the name, a quote, ":" or "=", a quote.
LABEL_CHARS = 96
_LABEL_QUOTES = " \t\"'\\"
_LABEL_REST = re.compile(r"""[A-Za-z0-9_ .-]{0,40}\\{0,2}["']?[ \t]*[:=][ \t]*\\{0,2}["']?""")


@dataclass(frozen=True, slots=True)
class KeywordSet:
    """The rule keywords, plain and encoded, that decide whether a decoded view is worth scanning."""

    plain: tuple[str, ...]
    # RE2 alternation of the plain keywords and their encoded forms (the prefilter's pattern).
    pattern: str
    # RE2 alternation of the plain keywords only.
    plain_pattern: str = ""
    plain_bytes: tuple[bytes, ...] = ()  # the plain keywords as UTF-8 bytes
    # RE2 patterns of the encoded forms (:func:`encoded_keyword_patterns`), which the prefilter uses too.
    encoded: tuple[str, ...] = ()
    # The keywords that name a secret rather than start it (``Ruleset.context_keywords``).
    context: tuple[str, ...] = ()
    # RE2 patterns of encoded runs that hide encoded text, whatever the keywords (:func:`nested_patterns`):
    # a decoded view holding one is kept (``matches``), so a chain of encodings is followed to the
    # depth, and at the depth limit one is a limit hit. (The prefilter selects such cells by the
    # deep keyword forms, :func:`deep_keyword_patterns`.)
    nested: tuple[str, ...] = ()
    # Derived once (see __post_init__): the Hyperscan expressions of the plain keywords, and of
    # them with every form (None where a form is not plain ASCII, where bytes and characters could
    # disagree). ``hyperscan_matcher.database`` answers for the same tuple without hashing it, a
    # few microseconds saved per decoded base64 run.
    _plain_literals: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _forms: tuple[str, ...] | None = field(init=False, repr=False, compare=False)
    # Another database's expressions that hold most of the forms (the prefilter's, see
    # :meth:`sharing`), and the folder it may be loaded from: the forms found there are searched
    # there, and only the others (``_rest``) compiled for this set.
    shared: tuple[str, ...] = field(default=(), repr=False, compare=False)
    shared_cache_dir: Path | None = field(default=None, repr=False, compare=False)
    _shared_ids: frozenset[int] = field(init=False, repr=False, compare=False)
    _rest: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        literals = tuple(_re2_literal(k) for k in self.plain)
        forms = self.encoded + self.nested
        all_forms = literals + forms if all(f.isascii() for f in forms) else None
        object.__setattr__(self, "_plain_literals", literals)
        object.__setattr__(self, "_forms", all_forms)
        position = {expression: i for i, expression in enumerate(self.shared)}
        ids = frozenset(position[f] for f in all_forms or () if f in position)
        object.__setattr__(self, "_shared_ids", ids)
        object.__setattr__(self, "_rest", tuple(f for f in all_forms or () if f not in position))

    def sharing(self, expressions: tuple[str, ...], cache_dir: Path | None = None) -> KeywordSet:
        """This set, searching its forms that are among ``expressions`` in the database of those
        (compiled anyway, for the prefilter; loaded from ``cache_dir`` where it was) and compiling
        a database of the others only.

        Most forms are the prefilter's expressions too: compiled twice, they were a fifth of the
        compilations every start without a pattern cache waits for.
        """
        return replace(self, shared=expressions, shared_cache_dir=cache_dir)

    @classmethod
    def build(
        cls, keywords: Iterable[str], token_keywords: Collection[str] = (), context_keywords: Collection[str] = (),
        *, encoded: tuple[str, ...] | None = None,
    ) -> KeywordSet:
        """Plain keywords and their encoded forms as one RE2 alternation (see ``Ruleset.token_keywords``
        and ``Ruleset.context_keywords``). ``encoded``: the forms :func:`encoded_keyword_patterns`
        gives for the same arguments, when the caller derived them already."""
        plain = tuple(dict.fromkeys(k for k in keywords if k))
        literals = sorted({_re2_literal(k) for k in plain})
        if encoded is None:
            encoded = tuple(encoded_keyword_patterns(plain, token_keywords, context_keywords))
        nested = tuple(nested_patterns()) if plain else ()
        parts = literals + sorted(set(encoded)) + list(nested)
        context = tuple(k for k in dict.fromkeys(context_keywords) if k)
        return cls(plain, "|".join(parts), "|".join(literals), tuple(k.encode("utf-8") for k in plain), encoded,
                   context, nested)

    def label_before(self, text: str, start: int) -> str:
        """The name a value at ``start`` is assigned to, when it is a context keyword (else "").

        ``  aws_secret_access_key: <base64>`` in a Kubernetes Secret gives
        ``aws_secret_access_key: ``: decoded, the value would stand alone, and a rule that needs
        its name next to it would no longer see it.
        """
        lo = max(0, start - LABEL_CHARS)
        head = text[text.rfind("\n", lo, start) + 1 or lo : start]
        if not self.context or not head.rstrip(_LABEL_QUOTES).endswith((":", "=")):
            return ""
        for at, length in self._context_in(head):
            if _LABEL_REST.fullmatch(head, at + length):
                # From the start of the name the keyword is part of (DB_PASSWORD, not _PASSWORD).
                while at > 0 and (head[at - 1].isascii() and head[at - 1].isalnum() or head[at - 1] in "_.-"):
                    at -= 1
                return head[at:]
        return ""

    def _context_in(self, head: str) -> list[tuple[int, int]]:
        """(start, length) of each context keyword's first occurrence in ``head``, by start then length."""
        # One Hyperscan pass of the plain keywords (the context keywords are among them) rather
        # than a str.find per context keyword (over a hundred): this runs for every decoded base64
        # run assigned with ":" or "=" (each ``"cursor": "eyJ…"`` of a JSON page). Byte offsets
        # are character offsets only in ASCII text.
        lengths = _context_lengths(self.plain, self.context) if head.isascii() else None
        compiled = self._keyword_database() if lengths is not None else None
        if compiled is None or lengths is None:
            return sorted((at, len(k)) for k in self.context if (at := head.find(k)) >= 0)
        first: dict[int, int] = {}

        def note(keyword: int, _start: int, to: int, _flags: int, _context: object) -> None:
            length = lengths[keyword]
            if length and to - length < first.get(keyword, to):
                first[keyword] = to - length

        compiled.db.scan(head.encode("ascii"), match_event_handler=note)
        return sorted((at, lengths[keyword]) for keyword, at in first.items())

    def in_binary(self, data: bytes) -> bool:
        """True when a binary blob holds a plain keyword (only then is it worth reading as text)."""
        # Python's alternation tries every keyword at every byte (a decoded 30 KB screenshot: 0.7 ms
        # with 43 keywords, 3.2 ms with 106); Hyperscan's automaton does not grow with their number.
        compiled = self._keyword_database()
        if compiled is not None:
            return hyperscan_matcher.any_match(compiled, data)
        if len(data) > RE2_ABOVE:
            return _re2_search(self.plain_pattern, data)
        # One search for all keywords, in C, rather than one per keyword.
        return bool(self.plain_bytes) and _bytes_alternation(self.plain_bytes).search(data) is not None

    def token_in_binary(self, data: bytes) -> bool:
        """True when a plain keyword in a binary blob is followed by token-like text (printable ASCII)."""
        if not self.plain_bytes or not self.in_binary(data):
            return False
        return _bytes_alternation(self.plain_bytes, TOKEN_TAIL_BYTES).search(data) is not None

    def binary_excerpts(self, data: bytes) -> str | None:
        """Text around each plain keyword in a binary blob (None when there is none)."""
        if not self.in_binary(data):
            return None
        spans: list[list[int]] = []
        for needle in self.plain_bytes:
            at = data.find(needle)
            while at >= 0 and len(spans) < MAX_EXCERPTS:
                spans.append([max(0, at - EXCERPT_BEFORE), min(len(data), at + EXCERPT_AFTER)])
                at = data.find(needle, at + 1)
        if not spans:
            return None
        spans.sort()
        merged = [spans[0]]
        for lo, hi in spans[1:]:
            if lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        # Excerpts are separated by a blank line, so no match can span two of them.
        return "\n\n".join(data[lo:hi].decode("utf-8", "replace") for lo, hi in merged)

    def matches(self, value: str | bytes) -> bool:
        """True when ``value`` holds a keyword in plain or encoded form.

        Small texts are searched with the pattern compiled once for Python's ``re``; big ones with
        RE2 in C++ (pyarrow compiles it per call, which only pays off on big inputs).
        """
        # Hyperscan's automaton first: Python's alternation of some 500 keyword forms tries each at
        # every position (a decoded pagination cursor of 300 characters: 0.3 ms).
        searches = self._form_searches()
        if searches is not None:
            try:
                data = value if isinstance(value, bytes) else value.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: Python's re below
                data = None
            if data is not None:
                return any(hyperscan_matcher.any_match(compiled, data, ids) for compiled, ids in searches)
        if len(value) > RE2_ABOVE:
            return _re2_search(self.pattern, value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return _compiled(self.pattern).search(value) is not None


    def occurrences(self, text: str) -> Iterator[tuple[int, int]]:
        """Spans of every plain keyword occurrence in ``text`` (in no particular order)."""
        # One Hyperscan pass rather than one str.find loop per keyword (over a hundred of them);
        # byte offsets are character offsets only in ASCII text.
        compiled = self._keyword_database() if text.isascii() else None
        if compiled is not None:
            spans: list[tuple[int, int]] = []
            plain = self.plain

            def note(keyword: int, _start: int, to: int, _flags: int, _context: object) -> None:
                spans.append((to - len(plain[keyword]), to))

            compiled.db.scan(text.encode("ascii"), match_event_handler=note)
            yield from spans
            return
        for keyword in self.plain:
            at = text.find(keyword)
            while at >= 0:
                yield at, at + len(keyword)
                at = text.find(keyword, at + 1)

    def present(self, text: str) -> frozenset[str] | None:
        """The plain keywords that occur in ``text``, from one Hyperscan pass (None without Hyperscan).

        Rules test their keywords against this set instead of searching the text once per keyword
        and rule (over a hundred searches of the whole text per view).
        """
        compiled = self._keyword_database()
        if compiled is None:
            return None
        found: set[int] = set()

        def note(keyword: int, _start: int, _to: int, _flags: int, _context: object) -> bool:
            found.add(keyword)
            return len(found) == len(self.plain)  # every keyword seen: nothing left to learn

        # A lone surrogate's bytes cannot be part of any keyword's UTF-8, so presence is exact.
        with contextlib.suppress(*_SCAN_STOPPED):  # every keyword seen: the scan was stopped
            compiled.db.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=note)
        return frozenset(self.plain[i] for i in found)

    def counts(self, text: str) -> tuple[int, ...]:
        """How often each plain keyword occurs in ``text``."""
        return tuple(text.count(k) for k in self.plain)

    def compile_ahead(self) -> None:
        """Start compiling the Hyperscan database of the keyword forms (those not :meth:`sharing`
        another database) in the background (see :func:`hyperscan_matcher.compile_ahead`), so that
        it compiles alongside the prefilter's and the rule gate's; :meth:`warm` and the first
        search wait for it."""
        if self.plain and self._forms is not None:
            hyperscan_matcher.compile_ahead(self._rest if self.shared else self._forms)

    def warm(self) -> None:
        """Compile the keyword searches now, e.g. before worker processes fork."""
        forms = self._form_searches() if self.plain_bytes else None
        if forms is None:
            # Python's alternation of every form (a quarter of a second) is only the fallback of
            # Hyperscan's database: compiled ahead only where it is what ``matches`` runs.
            _compiled(self.pattern)
        if self.plain_bytes:
            _bytes_alternation(self.plain_bytes)
            self._keyword_database()

    def _keyword_database(self) -> hyperscan_matcher.Compiled | None:
        """Hyperscan's database of the plain keywords as literals (None without Hyperscan).

        Each expression is one literal, so a match reports the keyword's index itself (no aliases).
        """
        return hyperscan_matcher.database(self._plain_literals) if self.plain else None

    def _form_searches(self) -> tuple[tuple[hyperscan_matcher.Compiled, frozenset[int] | None], ...] | None:
        """The Hyperscan searches for the plain keywords and their encoded forms, nested-run forms
        included: the shared database with the ids of the forms in it, and the database of the
        others (every id); or the database of them all. None without Hyperscan, or when a form is
        not plain ASCII."""
        if not self.plain or self._forms is None:
            return None
        if self.shared:
            whole = hyperscan_matcher.database(self.shared, cache_dir=self.shared_cache_dir)
            rest = hyperscan_matcher.database(self._rest) if self._rest else None
            # (Asked for whole, the shared database holds every expression or is None.)
            if whole is not None and (rest is not None or not self._rest):
                return ((whole, self._shared_ids),) + (((rest, None),) if rest is not None else ())
        forms = hyperscan_matcher.database(self._forms)
        return ((forms, None),) if forms is not None else None


@lru_cache(maxsize=8)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@lru_cache(maxsize=8)
def _context_lengths(plain: tuple[str, ...], context: tuple[str, ...]) -> tuple[int, ...] | None:
    """Per plain keyword, its length when it is a context keyword, else 0 (None when a context
    keyword is not a plain one, so the keyword database would not find it)."""
    names = set(context)
    if not names <= set(plain):
        return None
    return tuple(len(k) if k in names else 0 for k in plain)


def _bytes_alternation(needles: tuple[bytes, ...], tail: int = 0) -> re.Pattern[bytes]:
    """One compiled search for any of ``needles`` (literal bytes), followed by ``tail`` printable ASCII bytes."""
    pattern = b"(?:" + b"|".join(re.escape(needle) for needle in needles) + b")"
    return re.compile(pattern + (b"[\x20-\x7e]{%d}" % tail if tail else b""))


def _re2_search(pattern: str, value: str | bytes) -> bool:
    """One RE2 search of ``pattern`` in ``value`` through pyarrow (C++ speed on big blobs)."""
    if not pattern:
        return False
    if isinstance(value, str):
        try:
            array = pa.array([value], pa.large_string())
        except (pa.ArrowException, UnicodeEncodeError):
            array = pa.array([value.encode("utf-8", "replace")], pa.large_binary())
    else:
        array = pa.array([value], pa.large_binary())
    return bool(compute.match_substring_regex(array, pattern)[0].as_py())




def nested_patterns() -> list[str]:
    """RE2 patterns, from every decoder, of encoded runs whose decoding is itself encoded text (see
    :func:`shardscan.decoders.keyword_forms.nested_patterns`)."""
    return keyword_forms.nested_patterns(DECODERS.values())


def deep_keyword_patterns(
    keywords: Iterable[str], token_keywords: Collection[str] = (), context_keywords: Collection[str] = (),
    depth: int = 3, cache_dir: Path | None = None,
) -> list[str]:
    """RE2 patterns of keywords nested deeper than one encoding, from every decoder (see
    :func:`shardscan.decoders.keyword_forms.deep_keyword_patterns`)."""
    return keyword_forms.deep_keyword_patterns(
        DECODERS.values(), keywords, token_keywords, context_keywords, depth, cache_dir
    )


def encoded_keyword_patterns(
    keywords: Iterable[str], token_keywords: Collection[str] = (), context_keywords: Collection[str] = ()
) -> list[str]:
    """RE2 patterns matching the encoded forms of ``keywords``, from every decoder (see
    :func:`shardscan.decoders.keyword_forms.encoded_keyword_patterns`)."""
    return keyword_forms.encoded_keyword_patterns(DECODERS.values(), keywords, token_keywords, context_keywords)
