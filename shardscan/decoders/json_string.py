"""JSON string escapes: ``\\n``, ``\\"``, ``\\\\``, ``\\uXXXX`` and surrogate pairs, decoded in place.

The whole view is unescaped (outside string literals valid JSON has no backslashes), so a tool
call's arguments read as the text the tool received. Applied again to its own output, it undoes
double-encoded JSON one level per step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, decode_in_place

NAME = "json-string"

_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|([\"\\/bfnrt]))"
)


def _replace(match: re.Match[str]) -> str:
    high, low, single, simple = match.groups()
    if simple is not None:
        return _SIMPLE[simple]
    if high is not None:
        code = 0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        return chr(code)
    code = int(single, 16)
    # A lone surrogate cannot be encoded as UTF-8 downstream; it reads as the replacement character.
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every JSON string escape decoded (nothing when it has none)."""
    yield from decode_in_place(request, "\\", _ESCAPE, _replace)


def encode(text: str) -> str:
    """JSON string body of ``text`` (``json.dumps`` without the quotes), non-ASCII as ``\\uXXXX``."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def char_forms(char: str) -> list[str]:
    """RE2 alternatives for ``char`` written as a ``\\uXXXX`` escape (either hex case)."""
    if len(char) != 1 or ord(char) > 0xFFFF:
        return []
    code = f"{ord(char):04x}"
    hexes = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in code)
    return [r"\\u" + hexes]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="\\", reveal=re.compile(r"\\u00(?:2[dD]|5[fF]|[3-7][0-9a-fA-F])"),
)
