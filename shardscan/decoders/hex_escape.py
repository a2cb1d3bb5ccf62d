"""``\\xNN`` byte escapes (C, Python, shell ``$'...'`` and ``printf``), decoded as UTF-8 in place."""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import (
    Decoded,
    Decoder,
    DecodeRequest,
    byte_run_replacement,
    decode_in_place,
    either_case_hex,
)

NAME = "hex-escape"

_RUN = re.compile(r"(?:\\x[0-9A-Fa-f]{2})+")


_REPLACE = byte_run_replacement("\\x")


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every run of ``\\xNN`` escapes decoded (nothing when it has none)."""
    yield from decode_in_place(request, "\\x", _RUN, _REPLACE, byte_width=4)


def encode(text: str) -> str:
    """Every character as ``\\xNN`` escapes of its UTF-8 bytes."""
    return "".join(f"\\x{b:02x}" for b in text.encode("utf-8", "surrogatepass"))


def char_forms(char: str) -> list[str]:
    """RE2 alternatives for a non-alphanumeric ``char`` as ``\\xNN`` escapes (either hex case).

    Letters and digits are not byte-escaped in practice; leaving them out keeps the prefilter fast.
    """
    if char.isascii() and char.isalnum():
        return []
    return ["".join(r"\\x" + either_case_hex(f"{b:02X}") for b in char.encode())]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="\\x", reveal=re.compile(r"\\x(?:2[dD]|5[fF])"),
)
