"""Base64 and base64url runs (padded or not, line-wrapped), decoded into separate views.

Only runs long enough to hold a credential are decoded. A match inside a decoded run maps back to
the whole run: that is what a person has to remove, and a byte-exact span inside base64 would
not be removable on its own.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, utf8_or_none

NAME = "base64"
URL_NAME = "base64url"

# The shortest credential a rule reports is 20 characters (an AWS key ID): 28 base64 characters.
MIN_RUN = 24
# Wrapped base64 (``base64`` wraps at 76, PEM at 64): lines of one length, separated by real
# or JSON-escaped line breaks, the last line no longer than the others.
_RUN = re.compile(r"[A-Za-z0-9+/_-]{%d,}(?:(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/_-]{4,})*={0,2}" % MIN_RUN)
_BREAK = re.compile(r"(?:\r?\n|\\r\\n|\\n)[ \t]*")
_URL_ONLY = frozenset("-_")
_STD_ONLY = frozenset("+/")
_URL_TO_STD = str.maketrans("-_", "+/")


def _runs(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, joined base64 characters) of each plausible run, cut where wrapping stops."""
    for match in _RUN.finditer(text):
        start, end = match.span()
        body = match.group(0)
        breaks = list(_BREAK.finditer(body))
        if breaks:
            first = breaks[0].start()
            if first % 4 or first < 16:
                # Not wrapped base64: only the first line is a run.
                end = start + first
                body = body[:first]
            else:
                pieces = []
                cursor = 0
                for brk in breaks:
                    line = body[cursor : brk.start()]
                    if len(line) != first:
                        break
                    pieces.append(line)
                    cursor = brk.end()
                else:
                    line = body[cursor:]
                if len(line) <= first and "=" not in line.rstrip("="):
                    pieces.append(line)
                    end = start + cursor + len(line)
                else:
                    end = start + cursor - (breaks[len(pieces) - 1].end() - breaks[len(pieces) - 1].start())
                body = "".join(pieces)
        yield start, end, body


def decode_run(body: str, shift: int = 0) -> tuple[str, bytes] | None:
    """Decode joined base64 characters (standard or URL alphabet) into (decoder name, bytes)."""
    chars = set(body)
    url = bool(chars & _URL_ONLY)
    if url and chars & _STD_ONLY:
        return None  # two alphabets mixed: a path or an identifier, not base64
    core = body[shift:].rstrip("=")
    if "=" in core or len(core) < MIN_RUN - 4:
        return None
    core = core[: len(core) - (len(core) % 4 == 1)]
    if url:
        core = core.translate(_URL_TO_STD)
    try:
        data = binascii.a2b_base64(core + "=" * (-len(core) % 4))
    except (binascii.Error, ValueError):
        return None
    return (URL_NAME if url else NAME), data


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield one segment per base64 run that decodes; non-UTF-8 blobs as bytes (``data``)."""
    text = request.text
    within = request.within
    for start, end, body in _runs(text):
        if within is not None and not within.touches(start, end):
            continue  # unchanged by the parent's decoding: decoded at the parent already
        # A run cut by a window boundary may start mid-quantum: try every alignment.
        shifts = range(4) if request.continued and start == 0 else (0,)
        for shift in shifts:
            decoded = decode_run(body, shift)
            if decoded is None:
                continue
            name, data = decoded
            as_text = utf8_or_none(data)
            if as_text is None:
                yield Decoded(start, end, "", data=data, name=name)
            else:
                yield Decoded(start, end, as_text, name=name)


def encode(text: str) -> str:
    """Standard padded base64 of the UTF-8 bytes of ``text``."""
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


KEYWORD_BYTES = 8
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ALT = {"+": "+\\-", "/": "/_"}


def _char_class(values: set[int]) -> str:
    chars = "".join(_ALT.get(_B64[v], _B64[v]) for v in sorted(values))
    if len(chars) == 1:
        return chars if chars.isalnum() else "\\" + chars
    return "[" + chars.replace("\\-", "-").replace("-", "\\-") + "]"


def keyword_forms(keyword: str) -> list[str]:
    """RE2 patterns for ``keyword`` inside base64 or base64url, at each of the three byte alignments.

    Characters only partly fixed by the keyword become classes (trailing) or are dropped
    (leading); characters not fixed at all are dropped. Forms with fewer than three fully fixed
    characters are not selective enough to be worth a prefilter branch and are left out.
    """
    # A long keyword's first bytes are as selective as all of it, and a shorter pattern is faster.
    data = keyword.encode("utf-8")[:KEYWORD_BYTES]
    forms: list[str] = []
    for align in range(3):
        # Bit positions: known bits come from the keyword, the rest are free.
        total = align + len(data)
        total += -total % 3
        known = [None] * align + list(data) + [None] * (total - align - len(data))
        pieces: list[str] = []
        for q in range(0, total, 3):
            group = known[q : q + 3]
            for c in range(4):
                values = set()
                # Enumerate the 6 bits of output character c from the 24 bits of the group.
                bits = []
                for k in range(6):
                    pos = 6 * c + k
                    byte = group[pos // 8]
                    bits.append(None if byte is None else (byte >> (7 - pos % 8)) & 1)
                free = [k for k, b in enumerate(bits) if b is None]
                if len(free) == 6:
                    pieces.append("")
                    continue
                for combo in range(1 << len(free)):
                    value = 0
                    for k, b in enumerate(bits):
                        if b is None:
                            b = (combo >> free.index(k)) & 1
                        value = (value << 1) | b
                    values.add(value)
                pieces.append(_char_class(values))
        # Leading characters not fully fixed by the keyword are dropped: a class there would let
        # many ordinary characters start a match and slow the RE2 automaton down. Trailing ones
        # stay as classes (they only narrow a match that has already started).
        while pieces and (pieces[0] == "" or pieces[0].startswith("[")):
            pieces.pop(0)
        while pieces and pieces[-1] == "":
            pieces.pop()
        if sum(1 for piece in pieces if not piece.startswith("[")) >= 3 and "" not in pieces:
            forms.append("".join(pieces))
    return forms


DECODER = Decoder(name=NAME, decode=decode, encode=encode, keyword_forms=keyword_forms)
