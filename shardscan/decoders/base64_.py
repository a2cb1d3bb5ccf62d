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
from collections.abc import Collection, Iterator, Sequence
from functools import lru_cache

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, utf8_or_none

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
_FIRST_LINE = re.compile(r"[^A-Za-z0-9+/_-]([A-Za-z0-9+/_-]{%d,})" % MIN_RUN)
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
_HEX_LOWER = "0123456789abcdef"
_RUN_MAP = bytes(
    ord("A") if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/_-") else ord(" ") for b in range(256)
)
_RUN_NEEDLE = b"A" * MIN_RUN
_SPACE = ord(" ")
_HEX_UPPER = "0123456789ABCDEF"
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
        if (start == 0 or mapped[start - 1] == _SPACE) and _first_line_only(text, mapped, start, line_end):
            # The common case (an identifier, a hash, a one-line token): the run is its first
            # line, found without walking it with the run patterns.
            pos = line_end
            yield start, line_end, text[start:line_end]
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


def _first_line_only(text: str, mapped: bytes, start: int, line_end: int) -> bool:
    """True when :func:`_runs_in` would read the run at ``start`` as exactly its first line.

    Decided from what follows the line (no padding; no line break, or a next line that cannot
    continue a wrapped run), so most runs skip the line-by-line reading. False means "not sure":
    the caller reads the run with :func:`_runs_in`.
    """
    if line_end == len(text) or text[line_end] not in _RUN_CONTINUES:
        return True  # nothing can extend the line: no padding, no line break
    if text[line_end] == "=":
        return False  # padding belongs to the run
    first = line_end - start
    if first % 4:
        return True  # not wrapped base64: a run of one line, whatever follows
    brk = _BREAK.match(text, line_end)
    if brk is None:
        return True
    second = mapped.find(b" ", brk.end())
    second = (len(mapped) if second < 0 else second) - brk.end()
    # No next line, a longer one (not a wrapped run's last line), or one too short by a number of
    # characters no base64 quantum can end with: the first line is the run.
    return second == 0 or second > first or second % 4 == 1


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
        if line is None:
            more = False
            break
        if len(lines) > 1 and len(lines[-1]) != first or len(lines) == 2 and not wrapped:
            break  # the lines read so far decide the run; this one only says the last was not last
        break_lengths.append(brk.end() - brk.start())
        lines.append(line.group())
        line_starts.append(line.start())
        pos = line.end()
    padding = "" if more else _PADDING.match(padded, pos, hi).group()
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
        if body.startswith(IMAGE_MAGIC) or not body.strip(_HEX_LOWER) or not body.strip(_HEX_UPPER):
            continue  # an image, or a hash / commit id (hex digits are base64 characters too)
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
# (The indented form must start a line; that is checked on the match, so that the pattern begins
# with a class the engine can search for instead of an anchor tried at every position.)
_SHORT_VALUE = re.compile(
    r"""(?m)(?:[ \t]+[A-Za-z0-9_.\-]{1,253}:[ \t]+["']?|"[A-Za-z0-9_.\-]{1,253}"[ \t]*:[ \t]*")"""
    r"""(?P<v>[A-Za-z0-9+/]{2,%d}={0,2})(?=["']?[ \t]*(?:,|\r?$|\}))""" % (MIN_RUN - 1)
)


def _short_secret_values(request: DecodeRequest) -> Iterator[Decoded]:
    """The data values of a Kubernetes Secret too short for :func:`runs`, decoded."""
    within = request.within
    source = request.text
    for match in _SHORT_VALUE.finditer(source):
        at = match.start()
        if source[at] in " \t" and at > 0 and source[at - 1] != "\n":
            continue  # indentation that does not start a line
        start, end = match.span("v")
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


KEYWORD_BYTES = 8
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_ALT = {"+": "+\\-", "/": "/_"}


def _char_class(values: set[int]) -> str:
    chars = "".join(_ALT.get(_B64[v], _B64[v]) for v in sorted(values))
    if len(chars) == 1:
        return chars if chars.isalnum() else "\\" + chars
    return "[" + chars.replace("\\-", "-").replace("-", "\\-") + "]"


# Keywords longer than this are context words (``aws_secret_access_key``), not the start of a
# secret: a base64-encoded secret is found through its own prefix (``AKIA``) instead.
CONTEXT_KEYWORD_CHARS = 12


# A token keyword (``Ruleset.token_keywords``) is followed by token characters; its base64 forms
# take that into account up to this many bytes in all. Three-character keywords alone leave only
# three fixed base64 characters at two of the three alignments, which a screenshot's base64
# holds by chance every few hundred kilobytes; the top bit of three more bytes (token characters
# are ASCII) makes such chance matches about a hundred times rarer.
TOKEN_FORM_BYTES = 6
_TOKEN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def keyword_forms(keywords: Sequence[str], token_keywords: Collection[str] = ()) -> list[str]:
    """RE2 patterns for the ``keywords`` inside base64 or base64url, at each of the three byte alignments.

    Keywords of one length that differ in one byte are merged first (``ghp_``, ``gho_``, ``ghu_``
    become ``gh[pou]_``), and long keywords are cut to their first bytes: fewer, shorter
    alternatives keep the RE2 automaton fast. Characters only partly fixed by a keyword become
    classes (trailing) or are dropped (leading); characters not fixed at all are dropped. Forms
    with fewer than three fully fixed characters are not selective enough and are left out.
    Keywords in ``token_keywords`` are followed by token characters (see ``TOKEN_FORM_BYTES``).
    """
    patterns = _keyword_patterns(keywords, token_keywords)
    forms: list[str] = []
    for pattern, members in _merge(list(patterns.values())):
        merged = _forms(pattern)
        for align, form in enumerate(merged):
            if form is not None:
                forms.append(form)
            else:
                # Merging blurred this alignment below three fixed characters: keep each keyword's own.
                forms.extend(f for member in members if (f := _forms(member)[align]) is not None)
    return list(dict.fromkeys(forms))


def _keyword_patterns(
    keywords: Sequence[str], token_keywords: Collection[str]
) -> dict[tuple, tuple[list[set[int]], list[list[set[int]]]]]:
    """Each keyword's byte pattern (its first bytes, then token characters for a token keyword), keyed for dedup."""
    patterns: dict[tuple, tuple[list[set[int]], list[list[set[int]]]]] = {}
    for keyword in dict.fromkeys(keywords):
        if not 0 < len(keyword) <= CONTEXT_KEYWORD_CHARS:
            continue
        data = keyword.encode("utf-8")[:KEYWORD_BYTES]
        pattern = [{b} for b in data]
        if keyword in token_keywords:
            pattern += [set(_TOKEN_BYTES)] * max(0, TOKEN_FORM_BYTES - len(data))
        patterns.setdefault(tuple(frozenset(p) for p in pattern), (pattern, [pattern]))
    return patterns


def _merge(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]],
) -> list[tuple[list[set[int]], list[list[set[int]]]]]:
    """Merge byte patterns of one length that differ in exactly one position, until none do.

    Each pattern carries the keywords' own patterns it stands for.
    """
    patterns = list(patterns)
    merged = True
    while merged:
        merged = False
        for i in range(len(patterns)):
            for j in range(i + 1, len(patterns)):
                (a, ma), (b, mb) = patterns[i], patterns[j]
                if len(a) != len(b):
                    continue
                differing = [k for k in range(len(a)) if a[k] != b[k]]
                if len(differing) == 1:
                    k = differing[0]
                    patterns[i] = (a[:k] + [a[k] | b[k]] + a[k + 1 :], ma + mb)
                    del patterns[j]
                    merged = True
                    break
            if merged:
                break
    return patterns




def _forms(pattern: list[set[int]]) -> list[str | None]:
    """The form of one byte pattern (a set of possible bytes per position) at each alignment.

    None where the alignment leaves fewer than three fully fixed characters.
    """
    return [None if chars is None else "".join(_char_class(values) for values in chars)
            for chars in _alignments(pattern)]


def _alignments(pattern: list[set[int]]) -> list[list[set[int]] | None]:
    """Per byte alignment, the possible 6-bit values of each base64 character of the pattern.

    Leading characters not fully fixed are dropped: a class there would let many ordinary
    characters start a match and slow the RE2 automaton down. Trailing ones stay as classes (they
    only narrow a match that has already started), up to the first that admits every character.
    None where fewer than three characters are fully fixed (``+`` and ``/`` count as classes:
    base64url writes them ``-`` and ``_``).
    """
    out: list[list[set[int]] | None] = []
    frozen = [frozenset(p) for p in pattern]
    for align in range(3):
        total = align + len(pattern)
        total += -total % 3
        known: list[frozenset[int] | None] = [None] * align + frozen + [None] * (total - align - len(pattern))
        chars: list[set[int] | None] = []
        for q in range(0, total, 3):
            group = known[q : q + 3]
            for c in range(4):
                # Output character c takes bits 6c..6c+5 of the group, from at most two bytes.
                first, last = (6 * c) // 8, (6 * c + 5) // 8
                if all(group[i] is None for i in range(first, last + 1)):
                    chars.append(None)
                    continue
                chars.append(set(_char_values(tuple(group[first : last + 1]), c)))
        while chars and (chars[0] is None or not _fixed(chars[0])):
            chars.pop(0)
        while chars and (chars[-1] is None or len(chars[-1]) == 64):
            chars.pop()
        selective = None not in chars and sum(1 for values in chars if _fixed(values)) >= 3  # type: ignore[arg-type]
        out.append(chars if selective else None)  # type: ignore[arg-type]
    return out


@lru_cache(maxsize=8192)
def _char_values(options: tuple[frozenset[int] | None, ...], c: int) -> frozenset[int]:
    """The possible 6-bit values of character ``c`` of a quantum whose bytes under it may be ``options``."""
    first, last = (6 * c) // 8, (6 * c + 5) // 8
    # The character's bits are an OR of each byte's own bits (shifted into place), so the
    # possible values combine the distinct contributions of each byte.
    shift = 8 * (last - first + 1) - (6 * c - 8 * first) - 6
    values = {0}
    for i, byte_options in enumerate(options):
        bits = _bits(byte_options, 8 * (last - first - i), shift)
        values = {v | b for v in values for b in bits}
    return frozenset(values)


@lru_cache(maxsize=4096)
def _bits(options: frozenset[int] | None, place: int, shift: int) -> frozenset[int]:
    """The distinct contributions of one byte (any of ``options``, None: any byte) to a base64 character."""
    return frozenset(((byte << place) >> shift) & 0x3F for byte in (options if options is not None else range(256)))


def _fixed(values: set[int]) -> bool:
    return len(values) == 1 and min(values) < 62


def _as_bytes(chars: list[set[int]]) -> list[set[int]]:
    """Base64 characters (6-bit values per position) as the bytes that write them, in either alphabet."""
    return [{ord(c) for v in values for c in _ALT.get(_B64[v], _B64[v]).replace("\\", "")} for values in chars]


# Nested base64 (a keyword base64-encoded two or three times) shows no first-level form; the forms
# of each level are derived from the level below (its characters, as bytes, encoded again). Three
# fixed characters are kept at every level, so a form stays as selective as a first-level one, and
# the forms are literals with a few classes: Hyperscan searches them at no measurable extra cost.
def deep_keyword_forms(
    keywords: Sequence[str], token_keywords: Collection[str] = (), escaped: Sequence[Sequence[set[int]]] = (),
    depth: int = 3,
) -> list[str]:
    """Prefilter patterns for keywords nested deeper than one encoding, up to ``depth`` decodings:
    the ``escaped`` byte patterns (keywords written with an escape, ``ghp\\u005f``) base64-encoded
    once, and, whatever the keyword, a base64 run that encodes base64 text (:func:`twice_forms`).

    Anything base64-encoded two or more times holds such a run (the inner encoding is base64 text),
    so one structural form selects every deeper level for every rule; the cell is then decoded and
    each level searched. Keyword forms per level (tried first) grew with the rules to ten thousand
    patterns that took seconds to derive and compile on every start without a pattern cache.
    """
    by_escape = {tuple(frozenset(p) for p in pattern): (list(pattern), [list(pattern)]) for pattern in escaped}
    forms = [form for found in _levels(_merge_fast(list(by_escape.values())), 1) for form in found]
    if depth >= 2 and keywords:
        forms += twice_forms()
    return list(dict.fromkeys(forms))


# Bytes of base64 text (either alphabet, padding, wrapped lines): a run encoding only these is base64
# of base64. Random bytes give such a run of NESTED_QUANTA quanta with a probability of about 1e-10
# per position; base64 of prose never does (its spaces and punctuation are not among them).
_BASE64_TEXT_BYTES = frozenset(
    b for b in range(256) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "+/=-_\r\n")
)


def twice_forms() -> list[str]:
    """RE2 pattern of a base64 or base64url run of :data:`NESTED_QUANTA` quanta that decodes to base64 text."""
    return [_quanta_pattern(_BASE64_TEXT_BYTES)]


# Characters of a form carried to the next level: enough for a selective form there (the first
# fixed characters hold the keyword), few enough that deriving the levels stays cheap.
DEEP_FORM_CHARS = 8


def _levels(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]], depth: int
) -> list[list[str]]:
    """The forms of byte patterns base64-encoded once, twice, ... ``depth`` times (one list per level)."""
    out: list[list[str]] = []
    level = patterns
    for _ in range(depth):
        forms: list[str] = []
        below: dict[tuple, tuple[list[set[int]], list[list[set[int]]]]] = {}
        for pattern, members in level:
            merged = _alignments(pattern)
            for align, chars in enumerate(merged):
                # (As in keyword_forms: where merging blurred an alignment, each member's own.)
                for found in [chars] if chars is not None else [_alignments(m)[align] for m in members]:
                    if found is not None:
                        forms.append("".join(_char_class(values) for values in found))
                        encoded = _as_bytes(found[:DEEP_FORM_CHARS])
                        below.setdefault(tuple(frozenset(p) for p in encoded), (encoded, [encoded]))
        out.append(list(dict.fromkeys(forms)))
        level = _merge_fast(list(below.values()))
    return out


def _merge_fast(
    patterns: list[tuple[list[set[int]], list[list[set[int]]]]],
) -> list[tuple[list[set[int]], list[list[set[int]]]]]:
    """:func:`_merge` for the many patterns of the deeper levels: patterns that differ in one
    position are found by grouping on the other positions, one pass per position (linear, not cubic)."""
    current = [(tuple(map(frozenset, pattern)), members) for pattern, members in patterns]
    for k in range(max((len(p) for p, _ in current), default=0)):
        groups: dict[tuple, tuple[tuple[frozenset[int], ...], list[list[set[int]]]]] = {}
        for frozen, members in current:
            key = (len(frozen), frozen[:k], frozen[k + 1 :])
            if key in groups:
                kept, kept_members = groups[key]
                if len(frozen) > k:
                    kept = kept[:k] + (kept[k] | frozen[k],) + kept[k + 1 :]
                groups[key] = (kept, kept_members + members)
            else:
                groups[key] = (frozen, members)
        current = list(groups.values())
    return [([set(p) for p in frozen], members) for frozen, members in current]


# Nested encodings (base64 of base64, of percent- or JSON-escaped text, ...) show no keyword form
# until decoded. What they share is that the outer base64 encodes text: printable ASCII, whose bytes
# fix some bits of every base64 character (a byte of 0x20-0x7E has its top bit clear and is not a
# control character). A decoded view holding a run of this many quanta whose every character is
# possible for such bytes is decoded again, and at the depth limit such a run is a limit hit.
# Random bytes (images, archives) give such a run with a
# probability of about 0.07 ** NESTED_QUANTA (6e-10) per position; 24 bytes of text are shorter
# than any credential base64-encoded once more.
NESTED_QUANTA = 8
_TEXT_BYTES = frozenset(range(0x20, 0x7F))


def nested_forms() -> list[str]:
    """RE2 pattern of a base64 or base64url run of :data:`NESTED_QUANTA` quanta that decodes to printable ASCII.

    One class per character of a quantum (three text bytes become four characters): a superset of
    the exact set, which Hyperscan and RE2 match without backtracking.
    """
    return [_quanta_pattern(_TEXT_BYTES)]


def _quanta_pattern(data_bytes: frozenset[int]) -> str:
    """A run of :data:`NESTED_QUANTA` base64 quanta whose bytes are all in ``data_bytes``: one class per
    character of a quantum (three bytes become four characters), a superset of the exact set."""
    classes: list[str] = []
    for c in range(4):
        first, last = (6 * c) // 8, (6 * c + 5) // 8
        shift = 8 * (last - first + 1) - (6 * c - 8 * first) - 6
        values = {0}
        for i in range(first, last + 1):
            place = 8 * (last - i)
            bits = {((byte << place) >> shift) & 0x3F for byte in data_bytes}
            values = {v | b for v in values for b in bits}
        classes.append(_char_class(values))
    return "(?:" + "".join(classes) + "){%d}" % NESTED_QUANTA


DECODER = Decoder(
    name=NAME, decode=decode, encode=encode, keyword_forms=keyword_forms, nested_forms=nested_forms,
    deep_keyword_forms=deep_keyword_forms,
)
