"""What every decoder shares: the Decoder record, decoded segments and the sparse offset map."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class OffsetMap:
    """Where a text-transform decoder changed its input, as parallel sorted tuples.

    Entry ``i`` says: decoded text ``[dec_starts[i], dec_ends[i])`` came from parent text
    ``[src_starts[i], src_ends[i])`` (one escape, or one run of escapes that decode together).
    Between entries the two texts are identical, so every offset maps exactly; an offset inside a
    decoded escape maps outward to the whole escape, so a mapped span always covers the encoded form.
    """

    dec_starts: tuple[int, ...]
    dec_ends: tuple[int, ...]
    src_starts: tuple[int, ...]
    src_ends: tuple[int, ...]

    def start_in_parent(self, pos: int) -> int:
        """Map an inclusive start offset of the decoded text to the parent text."""
        i = bisect_right(self.dec_starts, pos) - 1
        if i < 0:
            return pos
        if pos < self.dec_ends[i]:
            return self.src_starts[i]
        return self.src_ends[i] + (pos - self.dec_ends[i])

    def end_in_parent(self, pos: int) -> int:
        """Map an exclusive end offset of the decoded text to the parent text."""
        i = bisect_left(self.dec_starts, pos) - 1
        if i < 0:
            return pos
        if pos <= self.dec_ends[i]:
            return self.src_ends[i]
        return self.src_ends[i] + (pos - self.dec_ends[i])

    def touches(self, start: int, end: int, before: int = 0, after: int = 0) -> bool:
        """True when a decoded change lies within ``[start - before, end + after)`` of the decoded text."""
        lo, hi = start - before, end + after
        i = bisect_left(self.dec_ends, lo + 1)  # first change ending after lo
        return i < len(self.dec_starts) and self.dec_starts[i] < hi


@dataclass(frozen=True, slots=True)
class Decoded:
    """One decoded segment of a view: the parent span it came from and the text it reads as.

    ``offsets`` is set by text-transform decoders (escapes decoded in place, offsets kept exact);
    without it, any match in ``text`` maps back to the whole parent span ``[start, end)``.
    """

    start: int
    end: int
    text: str
    offsets: OffsetMap | None = None
    # Set instead of ``text`` for a decoded blob that is not UTF-8 (an image, an archive): the
    # caller searches the bytes for keywords before paying for a text view of them.
    data: bytes | None = None
    # The chain name, when it is not the decoder's own (base64url read by the base64 decoder).
    name: str | None = None


@dataclass(frozen=True, slots=True)
class DecodeRequest:
    """What a decoder is asked to decode, and the bounds it must respect."""

    text: str
    # The offset map of the view being decoded, when it came from a text-transform decoder: only
    # segments touching one of its changes are new (the rest was decoded at the parent already).
    within: OffsetMap | None = None
    # The text is a window cut out of a longer cell: an encoded run at offset 0 may be misaligned.
    continued: bool = False
    # Which binary (not UTF-8) segments the caller can use, by their bytes; a decoder may leave
    # out the others instead of yielding them to be discarded. None: every one is wanted.
    binary_wanted: Callable[[bytes], bool] | None = None


@dataclass(frozen=True, slots=True)
class Decoder:
    """A named decoder: one module in ``shardscan/decoders/``, one entry in the registry.

    ``decode`` yields the decoded segments of a text (never raising on any input); ``encode`` is its
    inverse (tests round-trip through it); ``keyword_forms`` gives RE2 patterns for the encoded
    forms of the keywords, so the Arrow prefilter can select cells that hold a keyword only encoded.
    ``char_forms`` (for escape decoders) gives RE2 alternatives for one escaped character.
    """

    name: str
    decode: Callable[[DecodeRequest], Iterator[Decoded]]
    encode: Callable[[str], str]
    keyword_forms: Callable[[Sequence[str], Collection[str]], list[str]] = field(default=lambda _k, _t: [])
    char_forms: Callable[[str], list[str]] = field(default=lambda _c: [])
    text_transform: bool = False
    # Escape decoders: the text every escape starts with (or one of several texts, one of which
    # every change holds), and a pattern for escapes of keyword characters. Decoding a text pays
    # off only when one of its escapes lies near a keyword or ``reveal`` matches (a keyword
    # written with escapes); otherwise the decoder is not run.
    trigger: str | tuple[str, ...] = ""
    reveal: re.Pattern[str] | None = None
    # RE2 patterns for this encoding wrapped around encoded text (whatever the keywords): runs that
    # must be decoded to see whether a deeper layer hides a keyword (see ``shardscan.decoders.nested_patterns``).
    nested_forms: Callable[[], list[str]] = field(default=lambda: [])
    # RE2 patterns for keywords this encoding re-encodes 2 to ``depth`` times, and for keywords
    # written with an escape (byte patterns) encoded once: a keyword nested deeper than one level
    # (see ``shardscan.decoders.deep_keyword_patterns``).
    deep_keyword_forms: Callable[
        [Sequence[str], Collection[str], Sequence[Sequence[set[int]]], int], list[str]
    ] = field(default=lambda _k, _t, _e, _d: [])


def substitute(
    request: DecodeRequest,
    pattern: re.Pattern[str],
    replace: Callable[[re.Match[str]], str | None],
) -> Decoded | None:
    """Decode every match of ``pattern`` in place (``replace`` returning None leaves it as is).

    Returns the whole decoded text with its offset map, or None when nothing changed (an escape
    is never shorter than what it decodes to; only the shell-prompt split adds a line break). With
    ``request.within``, only escapes touching the parent's own changes are decoded (the others
    were decoded by the sibling path already).
    """
    text = request.text
    within = request.within
    pieces: list[str] = []
    dec_starts: list[int] = []
    dec_ends: list[int] = []
    src_starts: list[int] = []
    src_ends: list[int] = []
    cursor = 0
    length = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        if within is not None and not within.touches(start, end):
            continue
        replacement = replace(match)
        if replacement is None or replacement == match.group(0):
            continue
        if start > cursor:
            pieces.append(text[cursor:start])
            length += start - cursor
        dec_starts.append(length)
        pieces.append(replacement)
        length += len(replacement)
        dec_ends.append(length)
        src_starts.append(start)
        src_ends.append(end)
        cursor = end
    if not dec_starts:
        return None
    pieces.append(text[cursor:])
    offsets = OffsetMap(tuple(dec_starts), tuple(dec_ends), tuple(src_starts), tuple(src_ends))
    return Decoded(0, len(text), "".join(pieces), offsets)


def decode_in_place(
    request: DecodeRequest,
    trigger: str,
    pattern: re.Pattern[str],
    replace: Callable[[re.Match[str]], str | None],
    byte_width: int = 0,
) -> Iterator[Decoded]:
    """The one view of an escape decoder: every match of ``pattern`` decoded in place (see :func:`substitute`).

    Nothing is yielded when the text lacks ``trigger`` (a substring every escape holds, tested
    before the regex runs) or when no escape changed. Byte-escape decoders give ``byte_width``,
    the characters one escaped byte takes (``%2D``: 3), so offsets stay exact inside runs.
    """
    if trigger not in request.text:
        return
    decoded = substitute(request, pattern, replace)
    if decoded is not None:
        yield split_runs(decoded, byte_width) if byte_width else decoded


def byte_run_replacement(prefix: str) -> Callable[[re.Match[str]], str]:
    """The replacement for a run of byte escapes written ``<prefix>NN`` (``%2D``, ``\\x2d``): its bytes
    read as UTF-8, invalid bytes as U+FFFD."""

    def replace(match: re.Match[str]) -> str:
        return bytes.fromhex(match.group(0).replace(prefix, "")).decode("utf-8", "replace")

    return replace


def utf8_or_none(data: bytes) -> str | None:
    """``data`` as UTF-8 text, or None when it is not valid UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_runs(decoded: Decoded, width: int) -> Decoded:
    """Split map entries of byte-escape runs into one entry per decoded character.

    Runs of byte escapes (``%E2%80%93``, ``\\xe2\\x80\\x93``) are decoded together, since a
    character may take several bytes; where the run decoded cleanly, each character gets its own
    entry (its UTF-8 length times ``width`` escape characters), so offsets stay exact inside runs.
    """
    offsets = decoded.offsets
    if offsets is None:
        return decoded
    ds: list[int] = []
    de: list[int] = []
    ss: list[int] = []
    se: list[int] = []
    entries = zip(offsets.dec_starts, offsets.dec_ends, offsets.src_starts, offsets.src_ends, strict=True)
    for d0, d1, s0, s1 in entries:
        sizes = [len(c.encode("utf-8", "surrogatepass")) * width for c in decoded.text[d0:d1]]
        if sum(sizes) != s1 - s0:  # replacement characters: keep the run whole
            ds.append(d0)
            de.append(d1)
            ss.append(s0)
            se.append(s1)
            continue
        src = s0
        for k, size in enumerate(sizes):
            ds.append(d0 + k)
            de.append(d0 + k + 1)
            ss.append(src)
            se.append(src + size)
            src += size
    split = OffsetMap(tuple(ds), tuple(de), tuple(ss), tuple(se))
    return Decoded(decoded.start, decoded.end, decoded.text, split)


def either_case_hex(hex_digits: str) -> str:
    """RE2 for hex digits in either case (``2F`` gives ``2[Ff]``): an escape's encoded keyword forms."""
    return "".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in hex_digits)
