"""The walk of a cell's decodings: views breadth first, within a depth, a byte budget and a number of views.

:func:`views` is the decoding stage's entry point (re-exported by :mod:`shardscan.decoders`). It
needs of the rule keywords only what :class:`KeywordSearch` names, so it does not depend on how
the keyword forms are derived (:class:`shardscan.decoders.KeywordSet` is the implementation).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, OffsetMap
from shardscan.decoders.base64_ import mostly_base64
from shardscan.decoders.registry import DECODERS, triggers_of

# Each decoder with its triggers as a tuple (empty: it always runs), in registry order. A trigger
# is tested for its first character before the whole of it: a one-character search is a memchr,
# while a longer needle is compared position by position ("\\x" in a text is about thirty
# times slower than "\\"), and most texts lack an escape's lead character altogether.
_TRIGGER_PLAN: tuple[tuple[Decoder, tuple[str, ...]], ...] = tuple(
    (decoder, tuple(t for t in triggers_of(decoder) if t)) for decoder in DECODERS.values()
)

# A decoded change this close to a keyword may be part of the secret (a keyword can sit inside
# one, as OpenAI's T3BlbkFJ does, or start it):
# a PEM body's escaped line breaks, a JWT's percent-encoded dots, a dash inside a key.
NEAR_BEFORE = 512
NEAR_AFTER = 2048


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



class KeywordSearch(Protocol):
    """What the walk asks of the rule keywords to decide whether a decoded view can pay off."""

    def occurrences(self, text: str) -> Iterator[tuple[int, int]]:
        """Spans of every plain keyword occurrence in ``text``."""
        ...

    def matches(self, value: str | bytes) -> bool:
        """Whether ``value`` holds a keyword in plain or encoded form (or an encoded run of text)."""
        ...

    def label_before(self, text: str, start: int) -> str:
        """The name a value at ``start`` is assigned to, when it is a context keyword (else "")."""
        ...

    def in_binary(self, data: bytes) -> bool:
        """Whether a binary blob holds a plain keyword."""
        ...

    def token_in_binary(self, data: bytes) -> bool:
        """Whether a plain keyword in a binary blob is followed by token-like text."""
        ...

    def binary_excerpts(self, data: bytes) -> str | None:
        """Text around each plain keyword in a binary blob (None when there is none)."""
        ...


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
    keywords: KeywordSearch | None = None,
    *,
    continued: bool = False,
    budget: DecodeBudget | None = None,
) -> Iterator[View]:
    """Yield the raw view of ``text``, then its decoded views within ``limits``, breadth first.

    With ``keywords``, a decoded view is kept only where it can pay off (see
    :mod:`shardscan.decoders`); without, every decoding is kept (within the limits). ``continued`` says ``text``
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


def _needs_deeper(decoder: Decoder, decoded: Decoded, keywords: KeywordSearch | None) -> bool:
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
        for trigger in triggers_of(decoder)
        for start, end in occurrences
    )


def _safe(decoder: Decoder, request: DecodeRequest) -> Iterator[Decoded]:
    """Run a decoder; a decoder bug on hostile input ends that decoding, never the scan."""
    try:
        yield from decoder.decode(request)
    except (ValueError, OverflowError, IndexError, KeyError, UnicodeError, MemoryError, RecursionError):
        return


def _worth_it(decoder: Decoder, parent: View, decoded: Decoded, keywords: KeywordSearch | None) -> str | None:
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
        return text if keywords.matches(text) or mostly_base64(text) else None
    offsets = decoded.offsets
    if offsets is None:
        return text
    # An escape decoder: worth it when the decoding changed text at or near a keyword.
    for start, end in keywords.occurrences(text):
        if offsets.touches(start, end, NEAR_BEFORE, NEAR_AFTER):
            return text
    # Or when it revealed an encoded keyword form that was itself escaped.
    return text if keywords.matches(text) and not keywords.matches(parent.text) else None
