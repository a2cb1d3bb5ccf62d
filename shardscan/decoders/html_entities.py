"""HTML character references: ``&amp;``, ``&#45;``, ``&#x2d;`` and every HTML5 named entity.

Only references closed by ``;`` are decoded: the legacy unterminated forms (``&amp`` inside a
URL) are ambiguous and would shift offsets in ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.entities import html5

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, decode_in_place

NAME = "html-entity"

_REFERENCE = re.compile(r"&(?:#([0-9]{1,8})|#[xX]([0-9a-fA-F]{1,7})|([A-Za-z][A-Za-z0-9]{1,31}));")


def _replace(match: re.Match[str]) -> str | None:
    decimal, hexa, name = match.groups()
    if name is not None:
        return html5.get(name + ";")
    code = int(decimal, 10) if decimal is not None else int(hexa, 16)
    if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return chr(code)


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every character reference decoded (nothing when it has none)."""
    yield from decode_in_place(request, "&", _REFERENCE, _replace)


def encode(text: str) -> str:
    """Every character that is not an ASCII letter or digit as a decimal reference (``&#45;``)."""
    return "".join(c if c.isascii() and c.isalnum() else f"&#{ord(c)};" for c in text)


def char_forms(char: str) -> list[str]:
    """RE2 alternatives for a non-alphanumeric ``char`` as a decimal or hexadecimal reference.

    Letters and digits are not entity-encoded in practice; leaving them out keeps the prefilter fast.
    """
    if char.isascii() and char.isalnum():
        return []
    code = ord(char)
    hexa = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in f"{code:x}")
    return [f"&#0*{code};", f"&#[xX]0*{hexa};"]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="&", reveal=re.compile(r"&#0*(?:45|95);|&#[xX]0*(?:2[dD]|5[fF]);|&lowbar;|&UnderBar;"),
)
