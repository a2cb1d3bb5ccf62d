"""Percent-encoding (``%2D``, ``%E2%80%93``), as in URLs and form bodies; ``+`` is left alone.

A ``+`` is a space only in form bodies and is a legitimate character of base64 secrets, so it is
never turned into a space.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, split_runs, substitute, utf8_or_none

NAME = "percent"

_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _replace(match: re.Match[str]) -> str:
    data = bytes.fromhex(match.group(0).replace("%", ""))
    text = utf8_or_none(data)
    return text if text is not None else data.decode("utf-8", "replace")


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every run of percent escapes decoded (nothing when it has none)."""
    if "%" not in request.text:
        return
    decoded = substitute(request, _RUN, _replace)
    if decoded is not None:
        yield split_runs(decoded, 3)


def encode(text: str) -> str:
    """Every character percent-encoded as its UTF-8 bytes (the strictest form an encoder emits)."""
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def char_forms(char: str) -> list[str]:
    """RE2 alternatives for ``char`` as percent-encoded UTF-8 bytes (either hex case)."""
    return ["".join("%" + "".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in f"{b:02X}") for b in char.encode())]


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, char_forms=char_forms, text_transform=True,
    trigger="%", reveal=re.compile(r"%(?:2[dD]|5[fF]|[3-7][0-9a-fA-F])"),
)
