"""Base64 and base64url runs (padded or not, line-wrapped), decoded into separate views.

Only runs long enough to hold a credential are decoded. A match inside a decoded run maps back to
the whole run: that is what a person has to remove, and a byte-exact span inside base64 would
not be removable on its own.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, utf8_or_none

NAME = "base64"
URL_NAME = "base64url"

# The shortest credential a rule reports is 20 characters (an AWS key ID): 28 base64 characters.
MIN_RUN = 24
# Wrapped base64 (``base64`` wraps at 76, PEM at 64): lines of one length, separated by real
# or JSON-escaped line breaks, the last line no longer than the others. The leading boundary
# character makes a failed attempt cost one step inside a word instead of a rescan of its tail.
_RUN = re.compile(
    r"[^A-Za-z0-9+/_-]([A-Za-z0-9+/_-]{%d,}(?:(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/_-]+)*={0,2})" % MIN_RUN
)
_BREAK = re.compile(r"(?:\r?\n|\\r\\n|\\n)[ \t]*")
_URL_TO_STD = str.maketrans("-_", "+/")
# Base64 of image formats' magic bytes (PNG, JPEG, GIF, WebP): screenshots are common in traces,
# and pixels hold no text credential, so these runs are not decoded at all.
IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGODdh", "R0lGODlh", "UklGR")
_HEX_LOWER = "0123456789abcdef"
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_B64_STAR = re.compile(r"[A-Za-z0-9+/_=-]*")
_HEX_UPPER = "0123456789ABCDEF"
_B64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"


def _image_spans(padded: str) -> list[tuple[int, int]]:
    """Spans of base64 images in ``padded``: found by their magic with C-speed ``find`` and skipped
    whole, so the run pattern never walks through screenshot data."""
    spans: list[tuple[int, int]] = []
    for magic in IMAGE_MAGIC:
        at = padded.find(magic)
        while at > 0:
            end = at
            if padded[at - 1] not in _B64_CHARS:
                end = _B64_STAR.match(padded, at).end()
                spans.append((at, end))
            at = padded.find(magic, max(end, at + 1))
    spans.sort()
    return spans


def runs(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, joined base64 characters) of each plausible run, cut where wrapping stops."""
    padded = " " + text
    cursor = 0
    pieces = []
    for lo, hi in _image_spans(padded):
        if lo > cursor:
            pieces.append((cursor, lo))
        cursor = max(cursor, hi)
    pieces.append((cursor, len(padded)))
    for lo, hi in pieces:
        yield from _runs_in(padded, lo, hi)


def _runs_in(padded: str, lo: int, hi: int) -> Iterator[tuple[int, int, str]]:
    # ``padded[lo]`` is the leading space or the character that ended a skipped image: either
    # way a boundary the run pattern can start on.
    for match in _RUN.finditer(padded, lo, hi):
        start, end = match.start(1) - 1, match.end(1) - 1
        body = match.group(1)
        breaks = list(_BREAK.finditer(body)) if "\n" in body or "\\n" in body else []
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
                # A shorter last line belongs to the run when it completes the last quantum.
                complete = (first * len(pieces) + len(line.rstrip("="))) % 4 != 1
                if len(line) <= first and complete and "=" not in line.rstrip("="):
                    pieces.append(line)
                    end = start + cursor + len(line)
                else:
                    end = start + cursor - (breaks[len(pieces) - 1].end() - breaks[len(pieces) - 1].start())
                body = "".join(pieces)
        if len(body) >= MIN_RUN:
            yield start, end, body


def mostly_base64(text: str) -> bool:
    """True when ``text`` is essentially base64 (the next layer of nested base64)."""
    if len(text) < MIN_RUN or not text.isascii():
        return False
    data = text.encode("ascii")
    return len(data.translate(None, _B64_BYTES)) <= 0.05 * len(data)


def decode_run(body: str, shift: int = 0) -> tuple[str, bytes] | None:
    """Decode joined base64 characters (standard or URL alphabet) into (decoder name, bytes)."""
    url = "-" in body or "_" in body
    if url and ("+" in body or "/" in body):
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
    within = request.within
    for start, end, body in runs(request.text):
        if within is not None and not within.touches(start, end):
            continue  # unchanged by the parent's decoding: decoded at the parent already
        if body.startswith(IMAGE_MAGIC) or not body.strip(_HEX_LOWER) or not body.strip(_HEX_UPPER):
            continue  # an image, or a hash / commit id (hex digits are base64 characters too)
        shift = _alignment(body) if request.continued and start == 0 else 0
        decoded = decode_run(body, shift)
        if decoded is None:
            continue
        name, data = decoded
        as_text = utf8_or_none(data)
        if as_text is None:
            yield Decoded(start, end, "", data=data, name=name)
        else:
            yield Decoded(start, end, as_text, name=name)


def _alignment(body: str) -> int:
    """For a run cut by a scan window, the character shift at which its start decodes as text.

    A cut run may start mid-quantum; a probe of its first characters at each shift finds the one
    that reads as UTF-8 (a character cut at either end of the probe is forgiven). Binary blobs
    read at none, and keep shift 0.
    """
    for shift in range(4):
        probe = decode_run(body[shift : shift + 4096], 0)
        if probe is None:
            continue
        data = probe[1].lstrip(_CONTINUATION)
        try:
            codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
        except UnicodeDecodeError:
            continue
        return shift
    return 0


_CONTINUATION = bytes(range(0x80, 0xC0))


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
