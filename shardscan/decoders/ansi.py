"""Terminal control sequences taken out of a text (colour and cursor codes inside a token).

A terminal capture made through a pseudo-terminal keeps the control sequences a program wrote.
``grep --color=always hf_`` (and ``rg``, ``git diff --color-words``) colours the matched part of
a token, which splits it: ``ESC[01;31mESC[Khf_ESC[mESC[K`` and the rest of the token. This
decoder removes CSI sequences (colours, cursor moves, ``ESC[?2004h``), OSC sequences (window
titles, hyperlinks) and the two-character escapes (``ESC7``, ``ESC8``, ``ESC(B``), so the token
reads whole. Sequences written as escapes (``\\u001b[31m`` in JSON) are removed after the
json-string decoder turned them into real ESC characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, decode_in_place

NAME = "ansi"

ESC = "\x1b"
_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9=>78cDEHMNOZ])"
)


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view without terminal control sequences (nothing when it has none)."""
    yield from decode_in_place(request, ESC, _SEQUENCE, lambda _match: "")


def encode(text: str) -> str:
    """The inverse for tests: each character coloured, as ``grep --color=always`` writes a match."""
    return "".join(f"\x1b[01;31m\x1b[K{c}\x1b[m\x1b[K" for c in text)


DECODER = Decoder(name=NAME, decode=decode, encode=encode, text_transform=True, trigger=ESC)
