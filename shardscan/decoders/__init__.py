"""Decoding stage: views of a cell's text (raw first, then decoded ones) with offset maps back.

Each decoder is one module with a ``DECODER`` record; :data:`DECODERS` is the registry (adding a
decoder is one file and one line here). :func:`views` walks the decodings breadth-first, up to a
depth, a byte budget and a number of views per cell, and only keeps a decoded view where it can
pay off: it holds a rule keyword (plain or itself encoded) that its parent did not show as
plainly, or the decoding changed text right next to a keyword.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from shardscan import arrow_compute as compute
from shardscan import hyperscan_matcher
from shardscan.decoders import (
    ansi,
    base64_,
    hex_escape,
    hexdump,
    html_entities,
    json_string,
    keyword_forms,
    percent,
    shell_prompt,
    string_concat,
    terminal_wrap,
)
from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, OffsetMap
from shardscan.decoders.keyword_forms import re2_literal as _re2_literal

__all__ = [
    "DECODERS",
    "DecodeBudget",
    "DecodeLimits",
    "Decoded",
    "Decoder",
    "KeywordSet",
    "OffsetMap",
    "View",
    "deep_keyword_patterns",
    "encoded_keyword_patterns",
    "nested_patterns",
    "views",
]

DECODERS: dict[str, Decoder] = {
    json_string.NAME: json_string.DECODER,
    percent.NAME: percent.DECODER,
    base64_.NAME: base64_.DECODER,
    html_entities.NAME: html_entities.DECODER,
    hex_escape.NAME: hex_escape.DECODER,
    string_concat.NAME: string_concat.DECODER,
    shell_prompt.NAME: shell_prompt.DECODER,
    terminal_wrap.NAME: terminal_wrap.DECODER,
    ansi.NAME: ansi.DECODER,
    hexdump.NAME: hexdump.DECODER,
}
"""Every decoder, by the name that appears in a finding's decode chain."""


def _triggers(decoder: Decoder) -> tuple[str, ...]:
    return (decoder.trigger,) if isinstance(decoder.trigger, str) else decoder.trigger


# Each decoder with its triggers as a tuple (empty: it always runs), in registry order. A trigger
# is tested for its first character before the whole of it: a one-character search is a memchr,
# while a longer needle is compared position by position ("\\x" in a text is about thirty
# times slower than "\\"), and most texts lack an escape's lead character altogether.
_TRIGGER_PLAN: tuple[tuple[Decoder, tuple[str, ...]], ...] = tuple(
    (decoder, tuple(t for t in _triggers(decoder) if t)) for decoder in DECODERS.values()
)

# A decoded change this close to a keyword may be part of the secret (a keyword can sit inside
# one, as OpenAI's T3BlbkFJ does, or start it):
# a PEM body's escaped line breaks, a JWT's percent-encoded dots, a dash inside a key.
NEAR_BEFORE = 512
NEAR_AFTER = 2048
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
class View:
    """One reading of a cell: the raw text, or text decoded from (part of) a parent view.

    ``encoding`` is the decode chain from the raw cell, outermost first. ``span_in_parent`` is the
    span of the parent's text this view was decoded from. With ``offsets`` (escape decoders) a
    match maps back character by character; without (base64), a match anywhere in the view maps
    back to that whole encoded span (the honest location of what a person would have to remove).
    """

    text: str
    encoding: tuple[str, ...] = ()
    parent: View | None = field(default=None, repr=False)
    span_in_parent: tuple[int, int] | None = None
    offsets: OffsetMap | None = field(default=None, repr=False)

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Map a span of this view's text to a span of the raw cell text."""
        view: View = self
        while view.parent is not None and view.span_in_parent is not None:
            if view.offsets is not None:
                base = view.span_in_parent[0]
                start, end = base + view.offsets.start_in_parent(start), base + view.offsets.end_in_parent(end)
            else:
                start, end = view.span_in_parent
            view = view.parent
        return start, end


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """Bounds on decoding work per cell (per scan window of a very long cell)."""

    max_depth: int = 3
    max_bytes: int = 8 * 1024 * 1024
    max_views: int = 64


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

    @classmethod
    def build(
        cls, keywords: Iterable[str], token_keywords: Collection[str] = (), context_keywords: Collection[str] = ()
    ) -> KeywordSet:
        """Plain keywords and their encoded forms as one RE2 alternation (see ``Ruleset.token_keywords``
        and ``Ruleset.context_keywords``)."""
        plain = tuple(dict.fromkeys(k for k in keywords if k))
        literals = sorted({_re2_literal(k) for k in plain})
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
        found = sorted((at, len(k)) for k in self.context if (at := head.find(k)) >= 0)
        for at, length in found:
            if _LABEL_REST.fullmatch(head, at + length):
                # From the start of the name the keyword is part of (DB_PASSWORD, not _PASSWORD).
                while at > 0 and (head[at - 1].isascii() and head[at - 1].isalnum() or head[at - 1] in "_.-"):
                    at -= 1
                return head[at:]
        return ""

    def in_binary(self, data: bytes) -> bool:
        """True when a binary blob holds a plain keyword (only then is it worth reading as text)."""
        # Python's alternation tries every keyword at every byte (a decoded 30 KB screenshot: 0.7 ms
        # with 43 keywords, 3.2 ms with 106); Hyperscan's automaton does not grow with their number.
        compiled = _keyword_database(self.plain) if self.plain else None
        if compiled is not None:
            return _any_match(compiled, data)
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
        compiled = _forms_database(self.plain, self.encoded + self.nested) if self.plain else None
        if compiled is not None:
            try:
                data = value if isinstance(value, bytes) else value.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: Python's re below
                data = None
            if data is not None:
                return _any_match(compiled, data)
        if len(value) > RE2_ABOVE:
            return _re2_search(self.pattern, value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        return _compiled(self.pattern).search(value) is not None


    def occurrences(self, text: str) -> Iterator[tuple[int, int]]:
        """Spans of every plain keyword occurrence in ``text`` (in no particular order)."""
        # One Hyperscan pass rather than one str.find loop per keyword (over a hundred of them);
        # byte offsets are character offsets only in ASCII text.
        compiled = _keyword_database(self.plain) if self.plain and text.isascii() else None
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
        compiled = _keyword_database(self.plain) if self.plain else None
        if compiled is None:
            return None
        found: set[int] = set()

        def note(keyword: int, _start: int, _to: int, _flags: int, _context: object) -> bool:
            found.add(keyword)
            return len(found) == len(self.plain)  # every keyword seen: nothing left to learn

        try:
            # A lone surrogate's bytes cannot be part of any keyword's UTF-8, so presence is exact.
            compiled.db.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=note)
        except hyperscan_matcher.hyperscan.ScanTerminated:
            pass
        return frozenset(self.plain[i] for i in found)

    def counts(self, text: str) -> tuple[int, ...]:
        """How often each plain keyword occurs in ``text``."""
        return tuple(text.count(k) for k in self.plain)

    def warm(self) -> None:
        """Compile the keyword searches now, e.g. before worker processes fork."""
        forms = _forms_database(self.plain, self.encoded + self.nested) if self.plain_bytes else None
        if forms is None:
            # Python's alternation of every form (a quarter of a second) is only the fallback of
            # Hyperscan's database: compiled ahead only where it is what ``matches`` runs.
            _compiled(self.pattern)
        if self.plain_bytes:
            _bytes_alternation(self.plain_bytes)
            _keyword_database(self.plain)


@lru_cache(maxsize=8)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@lru_cache(maxsize=8)
def _keyword_database(plain: tuple[str, ...]) -> hyperscan_matcher.Compiled | None:
    """Hyperscan's database of the plain keywords as literals (None without Hyperscan)."""
    return hyperscan_matcher.database(_literals(plain))


def _stop(*_match: object) -> bool:
    return True  # the first match answers the question: stop the scan


def _any_match(compiled: hyperscan_matcher.Compiled, data: bytes) -> bool:
    """Whether any expression of ``compiled`` matches in ``data`` (one Hyperscan call, stopped at the first match)."""
    try:
        compiled.db.scan(data, match_event_handler=_stop)
    except hyperscan_matcher.hyperscan.ScanTerminated:
        return True
    return False


@lru_cache(maxsize=8)
def _forms_database(plain: tuple[str, ...], encoded: tuple[str, ...]) -> hyperscan_matcher.Compiled | None:
    """Hyperscan's database of the plain keywords and their encoded forms, nested-run forms included
    (None without Hyperscan, or when a form is not plain ASCII, where bytes and characters could disagree)."""
    if not all(form.isascii() for form in encoded):
        return None
    return hyperscan_matcher.database(_literals(plain) + encoded)


@lru_cache(maxsize=8)
def _literals(plain: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_re2_literal(k) for k in plain)


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


@dataclass(slots=True)
class DecodeBudget:
    """What is left of a cell's decoding allowance; shared by the scan windows of one cell."""

    chars: int
    views: int

    @classmethod
    def of(cls, limits: DecodeLimits) -> DecodeBudget:
        """A full budget for one cell."""
        return cls(limits.max_bytes, limits.max_views)


def views(
    text: str,
    limits: DecodeLimits,
    on_limit: Callable[[str], None],
    keywords: KeywordSet | None = None,
    *,
    continued: bool = False,
    budget: DecodeBudget | None = None,
) -> Iterator[View]:
    """Yield the raw view of ``text``, then its decoded views within ``limits``, breadth first.

    With ``keywords``, a decoded view is kept only where it can pay off (see the module
    docstring); without, every decoding is kept (within the limits). ``continued`` says ``text``
    is a window of a longer cell, so an encoded run at its start may be cut mid-quantum; the
    windows of one cell share one ``budget`` (default: a fresh one for ``text``).

    Every limit hit is reported through ``on_limit``, once per kind, with a message that holds no
    cell content. A limit is only reported when the decoding it stopped could have paid off, so
    that a big image or an ordinary escaped string never makes a scan incomplete.
    """
    root = View(text)
    yield root
    if limits.max_depth <= 0:
        return
    reported: set[str] = set()

    def hit(kind: str, message: str) -> None:
        if kind not in reported:
            reported.add(kind)
            on_limit(message)

    budget = budget if budget is not None else DecodeBudget.of(limits)
    # Binary segments without a plain keyword are discarded by _worth_it: decoders can drop them.
    binary_wanted = keywords.in_binary if keywords is not None else None
    queue: deque[View] = deque([root])
    while queue:
        view = queue.popleft()
        depth = len(view.encoding)
        request = DecodeRequest(
            view.text, within=view.offsets, continued=continued and view is root, binary_wanted=binary_wanted
        )
        near: list[tuple[int, int]] | None = None  # keyword spans in this view, found once
        text = view.text
        for decoder, triggers in _TRIGGER_PLAN:
            # Inline, without a call or a generator: this runs per view and decoder, and most
            # views hold no trigger at all (the first character is searched first, a memchr).
            if triggers:
                for trigger in triggers:
                    if trigger[0] in text and (len(trigger) == 1 or trigger in text):
                        break
                else:
                    continue  # not one escape of this kind: the decoder would yield nothing
            if keywords is not None and view.offsets is None and decoder.text_transform:
                if near is None:
                    near = list(keywords.occurrences(view.text))
                if not _may_pay(decoder, view.text, near):
                    continue
            for decoded in _safe(decoder, request):
                child_text = _worth_it(decoder, view, decoded, keywords)
                if child_text is None:
                    continue
                if depth >= limits.max_depth:
                    if _needs_deeper(decoder, decoded, keywords):
                        hit("depth", f"decoding: depth limit ({limits.max_depth}) reached with encoded text left")
                        break
                    continue
                if len(child_text) > budget.chars:
                    hit("bytes", f"decoding: byte budget ({limits.max_bytes} characters per cell) exhausted")
                    continue
                if budget.views <= 0:
                    hit("views", f"decoding: view limit ({limits.max_views} per cell) reached")
                    break
                budget.chars -= len(child_text)
                budget.views -= 1
                child = View(
                    child_text,
                    view.encoding + (decoded.name or decoder.name,),
                    view,
                    (decoded.start, decoded.end),
                    decoded.offsets,
                )
                yield child
                queue.append(child)


def _needs_deeper(decoder: Decoder, decoded: Decoded, keywords: KeywordSet | None) -> bool:
    """Whether a decoding one level beyond the depth limit could reveal a secret (a limit hit).

    A run that decodes to text holding a keyword, plain or encoded, or another encoded run of
    text (:func:`nested_patterns`) does. Text that is merely base64-like (a random password, an
    id) does not, nor does a blob of bytes unless a plain keyword in it is followed by token
    characters: random binary data and images never make a scan incomplete. An escape decoder's
    view was already judged by where its changes lie.
    """
    if keywords is None or decoder.text_transform:
        return True
    if decoded.data is not None:
        return keywords.token_in_binary(decoded.data)
    return keywords.matches(decoded.text)


def _may_pay(decoder: Decoder, text: str, occurrences: list[tuple[int, int]]) -> bool:
    """Cheap test before running an escape decoder on a whole text (raw or base64-decoded) that holds its trigger.

    Most candidate cells are escaped JSON whose escapes are nowhere near a keyword; decoding them
    would be thrown away by :func:`_worth_it`, so the decoder is not run at all.
    """
    if not decoder.trigger:
        return True
    if decoder.reveal is not None and decoder.reveal.search(text):
        return True
    return any(
        text.find(trigger, max(0, start - NEAR_BEFORE), end + NEAR_AFTER) >= 0
        for trigger in _triggers(decoder)
        for start, end in occurrences
    )


def _safe(decoder: Decoder, request: DecodeRequest) -> Iterator[Decoded]:
    """Run a decoder; a decoder bug on hostile input ends that decoding, never the scan."""
    try:
        yield from decoder.decode(request)
    except (ValueError, OverflowError, IndexError, KeyError, UnicodeError, MemoryError, RecursionError):
        return


def _worth_it(decoder: Decoder, parent: View, decoded: Decoded, keywords: KeywordSet | None) -> str | None:
    """The text of a decoded segment when a view of it can pay off, else None."""
    if decoded.data is not None:
        # Not UTF-8 (an image, an archive): only the surroundings of plain keywords in the bytes
        # are read as text, so a big blob costs one C-speed search and never a big view.
        return None if keywords is None else keywords.binary_excerpts(decoded.data)
    text = decoded.text
    if not text or text == parent.text:
        return None
    if keywords is None:
        return text
    if not decoder.text_transform:
        # A whole new text (base64): read under the name it was assigned to when that is a
        # context keyword; else worth it when it holds a keyword, plain or encoded, or is itself
        # encoded again (nested base64, where no keyword form can be seen yet).
        if label := keywords.label_before(parent.text, decoded.start):
            return label + text
        return text if keywords.matches(text) or base64_.mostly_base64(text) else None
    offsets = decoded.offsets
    if offsets is None:
        return text
    # An escape decoder: worth it when the decoding changed text at or near a keyword.
    for start, end in keywords.occurrences(text):
        if offsets.touches(start, end, NEAR_BEFORE, NEAR_AFTER):
            return text
    # Or when it revealed an encoded keyword form that was itself escaped.
    return text if keywords.matches(text) and not keywords.matches(parent.text) else None


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
