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

_DECIMAL_DIGITS, _HEX_DIGITS = 8, 7  # the longest numeric references read (larger ones are not code points)
_REFERENCE = re.compile(
    rf"&(?:#([0-9]{{1,{_DECIMAL_DIGITS}}})|#[xX]([0-9a-fA-F]{{1,{_HEX_DIGITS}}})|([A-Za-z][A-Za-z0-9]{{1,31}}));"
)


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
    Leading zeros are bounded by the digits :data:`_REFERENCE` decodes (8 decimal, 7 hexadecimal):
    the forms match exactly the references this decoder reads, and Hyperscan runs a bounded
    ``0{0,6}`` at full speed where an unbounded ``0*`` before a keyword (``&#0*45;BEGIN``) cost
    a third of its scan.
    """
    if char.isascii() and char.isalnum():
        return []
    code = ord(char)
    decimal, hexadecimal = str(code), f"{code:x}"
    if len(decimal) > _DECIMAL_DIGITS or len(hexadecimal) > _HEX_DIGITS:
        return []  # beyond what _REFERENCE decodes
    hexa = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in hexadecimal)
    return [f"&#0{{0,{_DECIMAL_DIGITS - len(decimal)}}}{decimal};",
            f"&#[xX]0{{0,{_HEX_DIGITS - len(hexadecimal)}}}{hexa};"]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="&", reveal=re.compile(r"&#0*(?:45|95);|&#[xX]0*(?:2[dD]|5[fF]);|&lowbar;|&UnderBar;"),
)
