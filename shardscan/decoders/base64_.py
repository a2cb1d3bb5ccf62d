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
from functools import lru_cache

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, utf8_or_none
from shardscan.decoders.base64_forms import (
    CONTEXT_KEYWORD_CHARS,
    KEYWORD_BYTES,
    NESTED_QUANTA,
    deep_keyword_forms,
    keyword_forms,
    nested_forms,
    twice_forms,
)

NAME = "base64"
URL_NAME = "base64url"

# The shortest credential a rule reports is 20 characters (an AWS key ID): 28 base64 characters.
MIN_RUN = 24
# Line widths base64 is wrapped at (PEM 64, MIME and the base64 tool 76, uuencode-style 60, and a
# few others tools use): a run of one full line and a short last line is read as wrapped only at
# these. Three or more lines of one width are wrapped at any width.
WRAP_WIDTHS = frozenset({60, 64, 72, 76, 80, 100, 120})
# Wrapped base64 (``base64`` wraps at 76, PEM at 64): lines of one length, separated by real
# or JSON-escaped line breaks, the last line no longer than the others. The leading boundary
# character makes a failed attempt cost one step inside a word instead of a rescan of its tail.
_FIRST_LINE = re.compile(rf"[^A-Za-z0-9+/_-]([A-Za-z0-9+/_-]{{{MIN_RUN},}})")
_LINE = re.compile(r"[A-Za-z0-9+/_-]+")
_BREAK = re.compile(r"(?:\r?\n|\\r\\n|\\n)[ \t]*")
_PADDING = re.compile(r"={0,2}")
# The characters that can follow a run's first line and extend it: padding, or a line break
# (real or JSON-escaped) before a wrapped line. After any other character the line is the run.
_RUN_CONTINUES = frozenset("=\r\n\\")
_URL_TO_STD = str.maketrans("-_", "+/")
# Base64 of image formats' magic bytes (PNG, JPEG, GIF, WebP): screenshots are common in traces,
# and pixels hold no text credential, so these runs are not decoded at all.
IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGODdh", "R0lGODlh", "UklGR")
# A label written in front of a value, glued by a dash: "base64-eyJ…" (Supabase's auth cookie).
_LABELS = ("base64-", "base64_")
# Hex digits, and the dash of a UUID or a dashed hash: a run of only these is an identifier, not
# base64 of text (every third character of that text would be one of "h" to "~", a control
# character or not ASCII), and no plain keyword can be in its decoded bytes (a test checks the
# built-in ones).
_IDENTIFIER_LOWER = "0123456789abcdef-"
_RUN_MAP = bytes(
    ord("A") if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/_-") else ord(" ") for b in range(256)
)
_RUN_NEEDLE = b"A" * MIN_RUN
_SPACE = ord(" ")
_IDENTIFIER_UPPER = "0123456789ABCDEF-"
_B64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"


def runs(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, joined base64 characters) of each plausible run, cut where wrapping stops.

    Runs are located in C: the text is mapped to one byte per character (base64 characters to
    ``A``, everything else to a space; non-ASCII characters count as one byte each, so offsets are
    kept) and searched with ``bytes.find``. Screenshot runs (image magic) are skipped without
    being walked character by character, and only runs that may continue past their first line
    (padding, or a next line that could be wrapped base64) are read with the run patterns.
    """
    mapped = text.encode("ascii", "replace").translate(_RUN_MAP)
    padded = ""  # built on the first run that may be wrapped or padded
    pos = 0
    while True:
        start = mapped.find(_RUN_NEEDLE, pos)
        if start < 0:
            return
        line_end = mapped.find(b" ", start)
        if line_end < 0:
            line_end = len(mapped)
        if text.startswith(IMAGE_MAGIC, start):
            pos = line_end
            continue
        if start == 0 or mapped[start - 1] == _SPACE:
            end = _first_line_only(text, mapped, start, line_end)
            if end:
                # The common case (an identifier, a hash, a one-line token): the run is its first
                # line (and its padding), found without walking it with the run patterns.
                pos = end
                yield start, end, text[start:end]
                continue
        if not padded:
            padded = " " + text
        found = False
        for run in _runs_in(padded, start, len(padded)):
            found = True
            pos = run[1]
            yield run
            break
        if not found:
            pos = line_end


def _first_line_only(text: str, mapped: bytes, start: int, line_end: int) -> int:
    """The end of the run at ``start`` when :func:`_runs_in` would read it as exactly its first line
    and its padding (0: not sure, the caller reads the run with :func:`_runs_in`).

    Decided from what follows the line (padding and nothing else; no line break, or a next line
    that cannot continue a wrapped run), so most runs skip the line-by-line reading.
    """
    if line_end == len(text) or text[line_end] not in _RUN_CONTINUES:
        return line_end  # nothing can extend the line: no padding, no line break
    if text[line_end] == "=":
        # Padding ends a run of one line (no line break can follow "=" in it), up to two of them.
        return line_end + (2 if text.startswith("==", line_end) else 1)
    first = line_end - start
    if first % 4:
        return line_end  # not wrapped base64: a run of one line, whatever follows
    brk = _BREAK.match(text, line_end)
    if brk is None:
        return line_end
    second = mapped.find(b" ", brk.end())
    second = (len(mapped) if second < 0 else second) - brk.end()
    # No next line, a longer one (not a wrapped run's last line), or one too short by a number of
    # characters no base64 quantum can end with: the first line is the run. So is a shorter next
    # line after a first line of a width base64 is not usually wrapped at: a run of one full line
    # and a short last one is only read at WRAP_WIDTHS (a hash, then the next line's word).
    if second == 0 or second > first or second % 4 == 1 or (second < first and first not in WRAP_WIDTHS):
        return line_end
    return 0


def _runs_in(padded: str, lo: int, hi: int) -> Iterator[tuple[int, int, str]]:
    """The run starting after ``padded[lo]`` (a boundary character), read line by line.

    Lines are read only up to the first one whose length differs from the first line's (the
    last line of a wrapped run, or the end of it), so the work is linear in the run: text that
    merely looks wrapped (a keyword line between lines of 63 characters, repeated) never makes
    every run rescan the rest of the cell.
    """
    head = _FIRST_LINE.match(padded, lo, hi)
    if head is None:
        return
    start = head.start(1) - 1  # in the text (``padded`` has one leading character)
    first = len(head.group(1))
    wrapped = first % 4 == 0 and first >= 16
    lines = [head.group(1)]
    line_starts = [head.start(1)]
    break_lengths: list[int] = []
    pos = head.end()
    more = True  # whether another break and line follow the last line read
    while True:
        brk = _BREAK.match(padded, pos, hi)
        line = _LINE.match(padded, brk.end(), hi) if brk is not None else None
        if brk is None or line is None:
            more = False
            break
        if len(lines) > 1 and len(lines[-1]) != first or len(lines) == 2 and not wrapped:
            break  # the lines read so far decide the run; this one only says the last was not last
        break_lengths.append(brk.end() - brk.start())
        lines.append(line.group())
        line_starts.append(line.start())
        pos = line.end()
    padded_end = None if more else _PADDING.match(padded, pos, hi)  # (``={0,2}`` always matches)
    padding = padded_end.group() if padded_end is not None else ""
    if len(lines) == 1:
        body = lines[0] + padding
        end = start + len(body)
    elif not wrapped:
        body, end = lines[0], start + first  # not wrapped base64: only the first line is a run
    else:
        pieces, last = lines[:-1], lines[-1] + padding
        cursor = line_starts[-1] - 1
        # A shorter last line belongs to the run when it completes the last quantum. After a single
        # line it must also read as base64's last line rather than the next line's own text (the
        # next key of a YAML Secret, an HTTP header, a .npmrc setting): the first line is a usual
        # wrap width, and the last line is not followed by ":" or by more text after its padding.
        complete = (first * len(pieces) + len(last.rstrip("="))) % 4 != 1
        if len(pieces) == 1:
            after = padded[line_starts[-1] + len(last) : line_starts[-1] + len(last) + 1]
            complete = complete and first in WRAP_WIDTHS and after != ":" and not (padding and _LINE.match(after))
        if len(last) <= first and complete and "=" not in last.rstrip("="):
            pieces.append(last)
            end = cursor + len(last)
        else:
            end = cursor - break_lengths[-1]
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
    within, wanted = request.within, request.binary_wanted
    for start, end, body in runs(request.text):
        if within is not None and not within.touches(start, end):
            continue  # unchanged by the parent's decoding: decoded at the parent already
        if body.startswith(IMAGE_MAGIC) or not body.strip(_IDENTIFIER_LOWER) or not body.strip(_IDENTIFIER_UPPER):
            continue  # an image, or a hash, commit id or UUID (hex digits are base64 characters too)
        shift = _alignment(body) if request.continued and start == 0 else 0
        if body.startswith(_LABELS):
            # The label joins the run (its characters are base64's) and would misalign it.
            body, start = body[len(_LABELS[0]) :], start + len(_LABELS[0])
        read = _read(body, shift)
        if read is None:
            continue
        name, as_text, data = read
        if as_text is not None:
            yield Decoded(start, end, as_text, name=name)
        elif wanted is None or wanted(data):
            yield Decoded(start, end, "", data=data, name=name)
    if _SECRET_MANIFEST.search(request.text):
        yield from _short_secret_values(request)


# A Kubernetes Secret (YAML, or kubectl's JSON): its data values are base64 of any length, and a
# password of a few characters encodes to fewer than MIN_RUN. In such a manifest only, values of a
# key on their own line (``  password: aHVudGVyMg==``, ``"password": "aHVudGVyMg=="``) are read
# down to two characters; they are kept only when they decode to printable text.
_SECRET_MANIFEST = re.compile(r"""kind["']?[ \t]*:[ \t]*["']?Secret\b""")
# (The indented form starts a line: the pattern includes the line break, a literal the engine
# searches for, and runs on the text after a "\n". An anchor would be tried at every position, and
# a leading blank at every blank of a long run: quadratic.)
_SHORT_VALUE = re.compile(
    r"""(?m)(?:\n[ \t]+[A-Za-z0-9_.\-]{1,253}:[ \t]+["']?|"[A-Za-z0-9_.\-]{1,253}"[ \t]*:[ \t]*")"""
    rf"""(?P<v>[A-Za-z0-9+/]{{2,{MIN_RUN - 1}}}={{0,2}})(?=["']?[ \t]*(?:,|\r?$|\}}))"""
)


def _short_secret_values(request: DecodeRequest) -> Iterator[Decoded]:
    """The data values of a Kubernetes Secret too short for :func:`runs`, decoded."""
    within = request.within
    source = request.text
    for match in _SHORT_VALUE.finditer("\n" + source):  # (offsets one past the source's)
        start, end = match.start("v") - 1, match.end("v") - 1
        value = match.group("v")
        if len(value) % 4 or (within is not None and not within.touches(start, end)):
            continue
        try:
            text = binascii.a2b_base64(value).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if text and text.rstrip("\n").isprintable():
            yield Decoded(start, end, text, name=NAME)


def _read(body: str, shift: int) -> tuple[str, str | None, bytes] | None:
    """A run decoded: (chain name, its text or None when not UTF-8, its bytes); None when it does not decode.

    Short runs go through a cache: the same token, placeholder or identifier recurs across the
    turns of a conversation and the rows of a shard.
    """
    if shift == 0 and len(body) <= CACHED_RUN_CHARS:
        return _read_short(body)
    return _read_any(body, shift)


def _read_any(body: str, shift: int) -> tuple[str, str | None, bytes] | None:
    decoded = decode_run(body, shift)
    if decoded is None:
        return None
    name, data = decoded
    return name, utf8_or_none(data), data


# Runs up to this long are cached by :func:`_read`, at most 1024 of them (under a megabyte).
CACHED_RUN_CHARS = 256


@lru_cache(maxsize=1024)
def _read_short(body: str) -> tuple[str, str | None, bytes] | None:
    return _read_any(body, 0)


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


# The keyword forms live in base64_forms; these names stay importable from here.
__all__ = [
    "CONTEXT_KEYWORD_CHARS", "DECODER", "KEYWORD_BYTES", "NAME", "NESTED_QUANTA", "URL_NAME", "decode", "decode_run",
    "encode", "mostly_base64", "runs", "twice_forms",
]

DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, keyword_forms=keyword_forms, nested_forms=nested_forms,
    deep_keyword_forms=deep_keyword_forms,
)
