"""Scan windows of a long candidate cell: bounded spans around the prefilter's hits, widened where an encoding needs it.

A long cell is selected because a keyword (plain or in an encoded form) occurs somewhere in it.
Decoding, detecting and verifying the whole cell costs time in proportion to its length, while
only the text around those occurrences can hold what a rule reports. :func:`hits` finds
where the prefilter's expressions match (Hyperscan, C speed); :func:`windows` turns those offsets
into merged windows of whole lines and widens a window only where the text proves it must:

- to both ends of a token it cuts (a long JWT, a one-line base64 value, an image: a token is
  read whole or not at all, so that no rule sees a boundary the cell does not have);
- over the lines of a token a terminal wrapped, after a token keyword's hit (whose reach is
  otherwise short: what its rules report begins at the keyword);
- over the neighbouring lines of a wrapped base64 block (lines of base64 characters only, and
  the block's last line however short);
- to the ``-----END`` marker of a PEM block that starts inside it, and past the private lines of
  a PuTTY key file whose header is inside it.

Whenever the windows cannot be trusted to cover everything or would not help (no Hyperscan,
text that is not valid UTF-8, more hits than :data:`MAX_HITS`, a cell longer than
:data:`MAX_CELL`, windows covering most of the cell, a PEM block whose END marker is further than
:data:`MAX_BLOCK`), the caller scans the whole cell, exactly as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from shardscan import hyperscan_matcher
from shardscan.decoders import NEAR_AFTER, NEAR_BEFORE

# Text kept before a hit's end (the keyword itself, the name a value is assigned to, a secret a
# keyword ends, escapes that decode next to it) and after it (the secret a keyword starts or
# names). The decoders' "near a keyword" reach (``decoders.NEAR_BEFORE`` and ``NEAR_AFTER``)
# plus the longest keyword, so that every escape that decides whether an escape decoding pays off
# lies inside the window; a secret longer than that is a token or a block, widened below.
BEFORE = NEAR_BEFORE + 256
AFTER = NEAR_AFTER + 256
# The reach of a token keyword's hit (``Ruleset.token_keywords``: a keyword every rule that lists it
# matches only where it begins a token, ``eyJ``, ``ghp_``, ``AKIA``) and of a deep keyword form's
# (a base64 run): those rules' matches begin at the keyword, so what they report is the token, read
# whole below, and at most TOKEN_AFTER characters after the keyword (the built-in rules reach at
# most about 200: an AWS secret key on the line after its key ID); a lookbehind or an escape before
# it is within TOKEN_BEFORE. A token printed across wrapped lines is followed line by line
# (:func:`_wrapped_token_span`). Escape decoders still see every escape near the keyword inside the window,
# so their decisions there are the same. On coding-agent traces, where pagination cursors
# (``cursor=eyJ…``) are most of the hits, a third less text is decoded.
TOKEN_BEFORE = 256
TOKEN_AFTER = 512
# Windows are cut at line breaks: a line longer than this is cut at a token boundary instead.
LINE_SNAP = 4096
# How far a PEM block or a wrapped base64 block may widen a window.
MAX_BLOCK = 256 * 1024
# More hits than this in one cell: the whole cell is scanned (windows would cover it anyway).
MAX_HITS = 4096
# Cells longer than this are read whole (in the engine's overlapping 4 M-character windows):
# locating hits copies the text twice (its UTF-8 bytes, a map of its token characters), which
# on a 200 MB cell would add more memory than the scan's own budget allows for.
MAX_CELL = 16 * 1024 * 1024
# When the windows cover more than this share of the cell, the whole cell is scanned in one go.
MOST = 0.85

# Characters of a token a rule may report, a base64 line, a JWT, an escaped value: a window that
# ends (or starts) inside such a run is widened to the run's end (start).
_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.%\\~:@")
_TOKEN_MAP = bytes(ord("A") if chr(b) in _TOKEN else ord(" ") for b in range(256))
_B64_LINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_PEM_BEGIN = "-----BEGIN"
# A BEGIN marker starts a block to read to its END marker when a base64 run follows it within
# BODY_WITHIN characters, with only line breaks (real or escaped), quotes, concatenation, line
# numbers and PEM header lines between them. (A body in another shape still gets the window's
# own reach after the marker, and the wrapped-block widening over base64 lines.)
BODY_WITHIN = 512
_BODY_FOLLOWS = re.compile(
    r"""(?:[ \t\r\n"'`+,.&|>#*;:()\[\]{}]|\\[nrt]|\\|<br\s*/?>|&#1[03];|%0[AaDd]|[0-9]{1,6}(?:→|:|\t)"""
    r"|(?:Proc-Type|DEK-Info|Comment):[^\n]*)*[A-Za-z0-9+/=]{16}"
)
_PEM_END = "-----END"
_PPK_HEADER = "PuTTY-User-Key-File-"
_PPK_PRIVATE = "Private-Lines:"


@dataclass(frozen=True, slots=True)
class Window:
    """A span ``[start, end)`` of a cell's text to scan."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Hits:
    """Where the prefilter's expressions end a match in a text (character offsets, sorted):
    ``ends`` of every match, and ``token_ends``, those that only a token keyword's expression ends
    (given the narrower reach :data:`TOKEN_BEFORE` / :data:`TOKEN_AFTER`)."""

    ends: list[int]
    token_ends: frozenset[int] = frozenset()


def hits(
    text: str, compiled: hyperscan_matcher.Compiled | None, start_keywords: tuple[bytes, ...] = (),
    token_ids: frozenset[int] = frozenset(),
) -> Hits | None:
    """Where the prefilter's expressions end a match in ``text``, and which ends are token keywords' alone.

    ``start_keywords`` (token keywords, UTF-8) also count at the very start of the text, where
    the prefilter's buffer scan saw the previous cell's bytes. ``token_ids`` are the ids of the
    expressions that match a token keyword where it begins a token. None when the offsets cannot
    be had (no Hyperscan database, text that does not encode as UTF-8) or are too many to help.
    """
    if compiled is None or hyperscan_matcher.hyperscan is None:
        return None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return None
    ends: list[int] = []
    tokens: list[int] = []  # each match's end, token keywords' apart (most texts have none)
    token_ids = compiled.reported_ids(token_ids)

    def note(expression_id: int, _start: int, to: int, _flags: int, _context: object) -> bool:
        (tokens if expression_id in token_ids else ends).append(to)
        return len(ends) + len(tokens) > MAX_HITS

    try:
        compiled.db.scan(data, match_event_handler=note)
    except hyperscan_matcher.hyperscan.ScanTerminated:
        return None
    return _assembled(text, data, ends, tokens, start_keywords)


def buffer_hits(
    matches: hyperscan_matcher.CellMatches, cell: int, text: str, start_keywords: tuple[bytes, ...] = (),
    token_ids: frozenset[int] = frozenset(),
) -> Hits | None:
    """:func:`hits` of cell ``cell`` (whose text is ``text``) as the prefilter's scan of its array's
    buffer reported them, without scanning the cell again.

    None when that scan did not report all of the cell's matches (it stopped inside the cell, or
    left it to RE2), or when ``text`` is not the cell's bytes: the caller then calls :func:`hits`.
    A match that began in the bytes of the cell before it adds a hit near the cell's start (a
    superset: one more window, never one less).
    """
    if cell >= matches.scanned or cell in matches.cut:
        return None
    lo, hi = int(matches.offsets[cell]), int(matches.offsets[cell + 1])
    first, last = np.searchsorted(matches.ends, [lo, hi], side="right").tolist()
    if last - first > MAX_HITS:
        return None
    try:
        data = text.encode("utf-8") if not text.isascii() else None
    except UnicodeEncodeError:  # lone surrogates: not the text of a string cell
        return None
    if (len(data) if data is not None else len(text)) != hi - lo:
        return None
    found = matches.ends[first:last] - lo
    ids = matches.ids[first:last]
    table = _id_table(token_ids)
    # (A table lookup rather than np.isin, whose set-up costs more than the lookup on a cell's few hits.)
    token = table[np.minimum(ids, len(table) - 1)]
    return _assembled(text, data, found[~token].tolist(), found[token].tolist(), start_keywords)


@lru_cache(maxsize=8)
def _id_table(ids: frozenset[int]) -> np.ndarray:
    """Whether each id is in ``ids``, for the ids up to the largest of them, and one more (False)
    that every larger id is looked up at."""
    table = np.zeros(max(ids, default=-1) + 2, dtype=bool)
    table[list(ids)] = True
    return table


def _assembled(
    text: str, data: bytes | None, ends: list[int], tokens: list[int], start_keywords: tuple[bytes, ...]
) -> Hits:
    """The hits of ``text`` from the byte offsets of its matches' ends (``data``: its UTF-8 bytes,
    None when it is ASCII), with the token keywords at its very start added."""
    head = data if data is not None else text[:64].encode("ascii")
    if start_keywords and head.startswith(start_keywords):
        tokens = tokens + [len(k) for k in start_keywords if head.startswith(k)]
    if data is not None and len(data) != len(text) and (ends or tokens):
        # Byte offsets to character offsets: count the bytes that start a character before each end.
        raw = np.frombuffer(data, dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum((raw & 0xC0) != 0x80)))
        ends = starts[np.array(ends, dtype=np.int64)].tolist()
        tokens = starts[np.array(tokens, dtype=np.int64)].tolist()
    wide = set(ends)
    return Hits(sorted(wide.union(tokens)), frozenset(tokens).difference(wide))


def windows(text: str, ends: list[int], token_ends: frozenset[int] = frozenset()) -> list[Window] | None:
    """Merged windows around the hit ``ends``, widened where an encoding needs it (see the module docstring).

    The ends in ``token_ends`` (token keywords' hits) reach :data:`TOKEN_BEFORE` and
    :data:`TOKEN_AFTER`, and on over the lines of a token wrapped across them; the others
    :data:`BEFORE` and :data:`AFTER`. None means "scan the whole cell": no hit to anchor on, a PEM
    block past its bound, or windows covering most of the cell.
    """
    if not ends:
        return None
    n = len(text)
    mapped, spans = _merged_reaches(text, ends, token_ends)
    out: list[Window] = []
    for lo, hi in spans:
        # A span the previous window already covers adds nothing; and a window is widened no further
        # back than the previous one's end (in a long wrapped block, every span walked its lines again).
        floor = out[-1].end if out else 0
        if hi <= floor:
            continue
        lo, hi = _line_start(text, lo), _line_end(text, hi)
        if mapped is None:
            mapped = text.encode("ascii", "replace").translate(_TOKEN_MAP)
        lo, hi = _token_start(mapped, lo), _token_end(mapped, hi)
        lo, hi = _wrapped_block(text, lo, hi, floor)
        hi = _pem_end(text, lo, hi)
        if hi < 0:
            return None
        hi = _ppk_end(text, lo, hi)
        if out and lo <= out[-1].end:
            out[-1] = Window(out[-1].start, max(out[-1].end, hi))
        else:
            out.append(Window(lo, hi))
    if sum(w.end - w.start for w in out) > MOST * n:
        return None
    return out


def _merged_reaches(text: str, ends: list[int], token_ends: frozenset[int]) -> tuple[bytes | None, list[list[int]]]:
    """The reach of every hit (a token keyword's narrower, see :func:`_wrapped_token_span`), overlapping
    reaches merged, in order; and the text's map of token characters, when it was needed.

    A page of JSON holds a pagination cursor (a token hit) every few hundred characters: the
    common case of a token hit, a token that ends on its line, is decided here without a call.
    """
    n = len(text)
    mapped = None
    if token_ends:
        shown = text.encode("ascii", "replace")  # (one byte per character: offsets are kept)
        mapped = shown.translate(_TOKEN_MAP)
        find = mapped.find
        reaches = []
        for end in ends:
            if end not in token_ends:
                reaches.append((max(0, end - BEFORE), min(n, end + AFTER)))
                continue
            # A token that runs to the end of its line is followed over the lines a terminal may
            # have wrapped it onto; most end on their line, and reach the narrow span.
            gap = find(b" ", end)
            if gap >= 0 and shown[gap] in _LINE_BREAKS:
                reaches.append(_wrapped_token_span(text, mapped, end, gap))
            else:
                reaches.append((max(0, end - TOKEN_BEFORE), min(n, end + TOKEN_AFTER)))
        reaches.sort()  # (by start: a token hit's reach may start after that of a later hit)
    else:
        reaches = [(max(0, end - BEFORE), min(n, end + AFTER)) for end in ends]  # (in order already)
    spans: list[list[int]] = []
    for lo, hi in reaches:
        if spans and lo <= spans[-1][1]:
            if hi > spans[-1][1]:
                spans[-1][1] = hi
        else:
            spans.append([lo, hi])
    return mapped, spans


_LINE_BREAKS = frozenset(b"\r\n")


def _wrapped_token_span(text: str, mapped: bytes, end: int, gap: int) -> tuple[int, int]:
    """The reach of a token hit ending at ``end`` whose token runs to the end of its line (its first
    character that is not a token's, at ``gap``, is a line break), as a token a terminal wrapped
    does; a token that ends on its line reaches :data:`TOKEN_BEFORE` before the hit and
    :data:`TOKEN_AFTER` after it (see :func:`_merged_reaches`).

    The window then takes the line before the hit's, and the lines after it while each is a piece
    of that token (token characters up to its end, after a prefix of at most ``MAX_PREFIX``
    characters: ``> ``, ``E   ``, a line number or a time stamp), and the line after the last
    piece: the token's end, and the neighbouring lines that are the terminal-wrap decoder's
    evidence of the width.
    """
    n = len(text)
    lo, reach = max(0, end - TOKEN_BEFORE), min(n, end + TOKEN_AFTER)
    line = text.rfind("\n", 0, end)
    lo = min(lo, _line_start(text, line) if line > 0 else 0)
    at, limit = gap, min(n, end + MAX_BLOCK)
    while at < limit:
        start = text.find("\n", at) + 1
        if start <= 0 or start >= n:
            return lo, n
        stop = text.find("\n", start)
        stop = n if stop < 0 else stop
        line_end = stop - 1 if stop > start and text[stop - 1] == "\r" else stop
        piece = mapped.rfind(b" ", start, line_end) + 1 or start
        at = stop
        if piece >= line_end or piece - start > MAX_PREFIX:
            break  # not a piece of the token: its last line (or the line after it) is in
    return lo, max(reach, min(n, at + 1))


# The longest prefix a wrapped token's line may carry before its piece (see the terminal-wrap decoder).
MAX_PREFIX = 160


def _line_start(text: str, lo: int) -> int:
    """``lo`` moved back to the start of its line (or left where it is if that is too far)."""
    if lo <= 0:
        return 0
    brk = text.rfind("\n", max(0, lo - LINE_SNAP), lo)
    return brk + 1 if brk >= 0 else (0 if lo <= LINE_SNAP else lo)


def _line_end(text: str, hi: int) -> int:
    """``hi`` moved on to the end of its line, line break included (or left where it is if too far)."""
    if hi >= len(text):
        return len(text)
    brk = text.find("\n", hi, hi + LINE_SNAP)
    return brk + 1 if brk >= 0 else (len(text) if len(text) - hi <= LINE_SNAP else hi)


def _token_start(mapped: bytes, lo: int) -> int:
    """``lo`` moved back out of a token it cuts, however long (an image's base64 costs a search in C)."""
    if lo <= 0 or lo >= len(mapped) or mapped[lo - 1] == 0x20 or mapped[lo] == 0x20:
        return lo
    return mapped.rfind(b" ", 0, lo) + 1


def _token_end(mapped: bytes, hi: int) -> int:
    """``hi`` moved on out of a token it cuts, however long."""
    n = len(mapped)
    if hi >= n or mapped[hi] == 0x20 or mapped[hi - 1] == 0x20:
        return hi
    gap = mapped.find(b" ", hi)
    return gap if gap >= 0 else n


def _b64_body(line: str) -> str | None:
    """A line's base64 characters, indentation, quotes and escaped breaks aside (None when it holds others)."""
    body = line.strip().strip("\"',").removesuffix("\\n").removesuffix("\\r")
    return None if set(body) - _B64_LINE else body


def _is_b64_line(line: str) -> bool:
    """A line of a wrapped base64 block (PEM body, ``base64`` output)."""
    body = _b64_body(line)
    return body is not None and len(body) >= 16


def _is_b64_tail(line: str) -> bool:
    """The last line of a wrapped base64 block: 1 to 15 base64 characters."""
    body = _b64_body(line)
    return body is not None and 0 < len(body) < 16


def _wrapped_block(text: str, lo: int, hi: int, floor: int = 0) -> tuple[int, int]:
    """Widen ``[lo, hi)`` over the base64 lines next to it, when it starts or ends inside a wrapped block.

    Lines are the text's own (``\\n``) or JSON-escaped ones (``\\\\n``); the block is followed at most
    :data:`MAX_BLOCK` characters either way, and backwards not past ``floor`` (covered already).
    """
    limit_lo, limit_hi = max(floor, lo - MAX_BLOCK), min(len(text), hi + MAX_BLOCK)
    # Forward: while the next line is base64, and then a block's last line, however short (a .ppk
    # file's private lines end with one, and no END marker follows them).
    widened = hi > limit_lo and _is_b64_line(text[_prev_break(text, hi, limit_lo):hi])
    while hi < limit_hi:
        nxt = _next_break(text, hi, limit_hi)
        if not _is_b64_line(text[hi:nxt]):
            if widened and _is_b64_tail(text[hi:nxt]):
                hi = nxt
            break
        hi, widened = nxt, True
    while lo > limit_lo:
        prev = _prev_break(text, lo, limit_lo)
        if not _is_b64_line(text[prev:lo]):
            break
        lo = prev
    return lo, hi


def _next_break(text: str, at: int, limit: int) -> int:
    """The offset just past the next line break (real or JSON-escaped) after ``at``, or ``limit``."""
    real = text.find("\n", at, limit)
    # The escaped break is only looked for before the real one (each search stops there).
    escaped = text.find("\\n", at, real + 1 if real >= 0 else limit)
    if escaped >= 0:
        return escaped + 2
    return real + 1 if real >= 0 else limit


def _prev_break(text: str, at: int, limit: int) -> int:
    """The start of the line that ends at ``at`` (after a real or JSON-escaped break), or ``limit``."""
    # Skip the break ``at`` itself stands after.
    end = at - 1 if at > 0 and text[at - 1] == "\n" else at - 2 if text.startswith("\\n", at - 2) else at
    real = text.rfind("\n", limit, end)
    escaped = text.rfind("\\n", real if real >= 0 else limit, end)
    if escaped >= 0:
        return escaped + 2
    return real + 1 if real >= 0 else limit


def _pem_end(text: str, lo: int, hi: int) -> int:
    """``hi``, or past the ``-----END`` line of each PEM block that begins in ``[lo, hi)`` and ends after it.

    A BEGIN marker starts a block only when base64 follows it closely (:func:`_has_body`): code
    that tests for a marker (``line.startswith('-----BEGIN PRIVATE KEY-----')``) has no body to
    read. -1 when an END marker lies further than :data:`MAX_BLOCK` away (or is missing while the
    text goes on past that bound): the caller scans the whole cell.
    """
    out = hi
    begin = text.find(_PEM_BEGIN, lo, hi)
    while begin >= 0:
        if _has_body(text, begin):
            end = text.find(_PEM_END, begin + len(_PEM_BEGIN), min(len(text), hi + MAX_BLOCK))
            if end < 0:
                if len(text) - hi > MAX_BLOCK:
                    return -1
                return len(text)
            if end + len(_PEM_END) > hi:
                out = max(out, _line_end(text, end + len(_PEM_END)))
        begin = text.find(_PEM_BEGIN, begin + len(_PEM_BEGIN), hi)
    return out


def _ppk_end(text: str, lo: int, hi: int) -> int:
    """``hi``, or past the private lines of each PuTTY key file whose header begins in ``[lo, hi)``.

    A .ppk has no END marker: its public lines, then a ``Private-Lines:`` header and that many
    base64 lines. A key of 8192 bits or more has public lines longer than a window's reach, and
    the wrapped-block widening stops at the ``Private-Lines:`` line, so the header alone decides.
    Looked for at most :data:`MAX_BLOCK` characters past the window; the block's lines are read
    as :func:`_wrapped_block` reads them.
    """
    out = hi
    begin = text.find(_PPK_HEADER, lo, hi)
    while begin >= 0:
        private = text.find(_PPK_PRIVATE, begin, min(len(text), hi + MAX_BLOCK))
        if private >= 0:
            _, end = _wrapped_block(text, private, _next_break(text, private, len(text)))
            out = max(out, end)
        begin = text.find(_PPK_HEADER, begin + len(_PPK_HEADER), hi)
    return out


def _has_body(text: str, begin: int) -> bool:
    """Whether a run of base64 characters (a body line, a DEK-Info value) follows the BEGIN marker at ``begin``."""
    close = text.find("-----", begin + len(_PEM_BEGIN), begin + len(_PEM_BEGIN) + 64)
    start = close + 5 if close >= 0 else begin + len(_PEM_BEGIN)
    return _BODY_FOLLOWS.match(text, start, start + BODY_WITHIN) is not None
