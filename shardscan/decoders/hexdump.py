"""Hex dumps read back into the bytes they show (``xxd`` and ``hexdump -C`` of a file).

Agents dump files in hex to look for a byte-order mark or carriage returns (``xxd .env``). The dump
shows the file's text only 16 bytes a line, in a column beside the hex, so a token is cut into
pieces no rule reads. This decoder reads the hex of each run of consecutive dump lines and yields
the bytes as text; a match maps to the whole dump.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, utf8_or_none

NAME = "hexdump"

# xxd: "00000010: 3d68 665f 6162 6364  =hf_abcd"; hexdump -C: "00000010  3d 68 66 5f  |=hf_|".
# The line start is checked after the first character (``(?<=^.)``), so that each branch starts
# with a character class the engine searches for instead of trying ``^`` at every position.
_LINE = re.compile(
    r"(?:[ \t](?<=^.)[ \t]*[0-9a-fA-F]{6,16}|[0-9a-fA-F](?<=^.)[0-9a-fA-F]{5,15})(?::[ ]|[ ]{2})"
    r"((?:[0-9a-fA-F]{2}(?:[0-9a-fA-F]{2})?[ ]{1,2}){0,16}[0-9a-fA-F]{2}(?:[0-9a-fA-F]{2})?)"
    r"(?:[ ]{2,}.*)?$",
    re.M,
)
# A dump shorter than this many lines holds no credential worth reading.
MIN_LINES = 2
MAX_BYTES = 1 << 20


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the bytes of every run of consecutive dump lines, as text (nothing without a dump)."""
    text = request.text
    block: list[re.Match[str]] = []
    for match in _LINE.finditer(text):
        if block and match.start() != block[-1].end() + 1:
            yield from _block(block)
            block = []
        block.append(match)
    yield from _block(block)


def _block(lines: list[re.Match[str]]) -> Iterator[Decoded]:
    if len(lines) < MIN_LINES:
        return
    data = bytes.fromhex("".join(line.group(1).replace(" ", "") for line in lines)[: 2 * MAX_BYTES])
    text = utf8_or_none(data)
    if text is not None and text.strip():
        yield Decoded(lines[0].start(), lines[-1].end(), text)


def encode(text: str) -> str:
    """The inverse for tests: ``xxd`` of the text's UTF-8 bytes."""
    data = text.encode("utf-8")
    out = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        out.append(f"{offset:08x}: {groups:<40}  {shown}")
    return "\n".join(out)


def dump_lines(_keywords: object, _token_keywords: object) -> list[str]:
    """Prefilter patterns for a dump of either tool: a keyword's characters are 16 a line in the
    text column, so the dump itself selects the cell, by its second line's offset (a literal:
    a pattern of hex classes would slow the whole prefilter down by a quarter)."""
    return [r"00000010: ", r"00000010  "]


DECODER = Decoder(name=NAME, decode=decode, encode=encode, keyword_forms=dump_lines, trigger="0000000")
