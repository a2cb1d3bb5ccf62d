"""Lines a terminal wrapped at its width, joined back (a long token printed in a fixed-width pane).

A screen capture of a terminal (tmux's ``capture-pane`` without ``-J``, a pane scraped by an
agent harness) cuts every line longer than the pane into pieces exactly as wide as the pane: an
OpenAI key exported at column 20 of an 80-column pane spans three lines, and no rule reads it
whole. This decoder joins a line to the next one where the line is as long as the capture's
longest line (the pane's width) and the join falls between token characters.

Only common pane widths (80, 120, 200 columns…) are trusted as widths, and only when the longest
line has that width: PEM bodies (64) and ``base64`` output (76) are wrapped on purpose and left
alone. A line of output that happens to fill the pane exactly and ends in a token is joined to
the next line too; the reading as written is scanned as well, and the engine keeps whichever of
the two readings verification says is the secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, OffsetMap

NAME = "terminal-wrap"

# Pane widths trusted without further evidence: what terminals and harnesses default to.
COMMON_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256})
# A break is joined where token characters end the full line (a token cut at the pane's edge,
# perhaps right after its prefix; not a PEM marker's dashes, whose block is read line by line
# anyway) and a token character starts the next one.
_CUT_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.][A-Za-z0-9_+/=.]\r?\Z")
_TOKEN_START = re.compile(r"[A-Za-z0-9_\-+/=.]")


def _wraps(text: str) -> list[tuple[int, int]]:
    """The line breaks to remove, as (start, end) spans of ``text`` ("\\n" or "\\r\\n").

    Most texts are rejected after C-speed passes: the longest line must be as wide as a common
    pane (a terminal cannot show a longer one).
    """
    lines = text.split("\n")
    if len(lines) < 2:
        return []
    lengths = list(map(len, lines[:-1]))
    # Widths on screen: a CRLF line's "\r" is not shown.
    shown = [n - line.endswith("\r") for n, line in zip(lengths, lines)] if "\r" in text else lengths
    width = max(shown)
    if width not in COMMON_WIDTHS:
        return []
    prefix = list(accumulate(lengths, initial=0))
    out: list[tuple[int, int]] = []
    for i, n in enumerate(shown):
        if n != width or not _CUT_TOKEN.search(lines[i]) or not _TOKEN_START.match(lines[i + 1]):
            continue
        stop = prefix[i] + i + lengths[i]  # offset of the "\n" after the line
        out.append((stop - (lengths[i] - n), stop + 1))
    return out


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with wrapped lines joined (nothing when the text shows no wrapping)."""
    text, within = request.text, request.within
    breaks = [(s, e) for s, e in _wraps(text) if within is None or within.touches(s, e)]
    if not breaks:
        return
    pieces: list[str] = []
    dec: list[int] = []
    cursor = removed = 0
    for start, end in breaks:
        pieces.append(text[cursor:start])
        dec.append(start - removed)
        removed += end - start
        cursor = end
    pieces.append(text[cursor:])
    # Each removed break maps to the empty span where the two pieces meet.
    offsets = OffsetMap(tuple(dec), tuple(dec), tuple(s for s, _ in breaks), tuple(e for _, e in breaks))
    yield Decoded(0, len(text), "".join(pieces), offsets)


def encode(text: str, width: int = 80) -> str:
    """The inverse for tests: every line cut into pieces of ``width`` characters."""
    return "\n".join(
        line[i : i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width)
    )


# Not gated like the escape decoders (a line break near a keyword, which nearly every text has:
# finding the keywords first would cost more than this decoder's own C-speed reject).
DECODER = Decoder(name=NAME, decode=decode, encode=encode, trigger="\n")
