"""Percent-encoding (``%2D``, ``%E2%80%93``), as in URLs and form bodies; ``+`` is left alone.

A ``+`` is a space only in form bodies and is a legitimate character of base64 secrets, so it is
never turned into a space.
"""

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

NAME = "percent"

_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


_REPLACE = byte_run_replacement("%")


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every run of percent escapes decoded (nothing when it has none)."""
    yield from decode_in_place(request, "%", _RUN, _REPLACE, byte_width=3)


def encode(text: str) -> str:
    """Every character percent-encoded as its UTF-8 bytes (the strictest form an encoder emits)."""
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def char_forms(char: str) -> list[str]:
    """RE2 alternatives for ``char`` as percent-encoded UTF-8 bytes (either hex case)."""
    return ["".join("%" + either_case_hex(f"{b:02X}") for b in char.encode())]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="%", reveal=re.compile(r"%(?:2[dD]|5[fF]|[3-7][0-9a-fA-F])"),
)
