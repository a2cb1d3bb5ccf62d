"""Lines cut at a fixed width, joined back: a long token printed in a pane, a pytest diff, a quoted export.

A screen capture of a terminal (tmux's ``capture-pane`` without ``-J``, a pane scraped by an
agent harness) cuts every line longer than the pane into pieces exactly as wide as the pane; a
pytest assertion diff prints a config object's repr cut at its own width (66 columns, say); a
Markdown export of a session then puts ``> `` in front of every line of the tool output, pytest
``E   ``, a diff ``+``, a file view a line number. A key printed there spans several lines, with
that prefix between its pieces, and no rule reads it whole. This decoder joins a line to the next
one, removing the next line's prefix, where:

* the join falls between token characters (the first line ends in one, the next line's text
  after its prefix starts with one), perhaps inside a token's prefix (``sk-an`` | ``t-api03-``),
  inside a run of at least 20 of them across the cut (the shortest secret a rule reports);
* the first line's text (after its prefix) has the width the text was cut at. The width is taken
  from evidence, not from a list: the line before or after it carries the same kind of prefix
  (:mod:`shardscan.line_prefix`) and has exactly the same width of text after it (a run of lines
  of one width: text long enough to be cut more than once), at any width from 40 to 400 columns.
  A common pane width (80, 120, 200 columns…) needs no second line, as before, when no line of
  the run of lines around it (consecutive lines with that prefix, or non-blank lines) is wider:
  a pane capture of a single export line. The first line of a run may be glued to text before it
  (a JSON observation after ``"observation": "``): the two lines after it then give the width.

Runs whose lines of that width are all standard base64 (PEM bodies at 64, ``base64`` output at
76, OpenSSH keys at 70) are wrapped on purpose and left alone, and so are the lines of a PEM
block: the private-key verifier reads a body across its line breaks and the prefixes tools
print, and a blob's own decoder reads the blob. A line of output that happens to fill the width
and ends in a token is joined to the next line too; the reading as written is scanned as well,
and the engine keeps whichever of the two readings verification says is the secret (the joined
one on a tie). See docs/wrapped-tokens.md.

A keyword cut by the wrap (``gh`` | ``p_``) is not in the text for the prefilter to find: the
prefilter looks for each keyword's pieces on either side of a line break (:func:`keyword_forms`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, OffsetMap
from shardscan.line_prefix import WRAP_PREFIXES, LinePrefix, prefix_length

NAME = "terminal-wrap"

# Pane widths trusted on a single cut line: what terminals and harnesses default to.
COMMON_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256})
# Widths taken from evidence (two adjacent lines that wide).
MIN_WIDTH = 40
MAX_WIDTH = 400
# The longest prefix a line of a run may carry besides its text (a syslog stamp and host name).
MAX_PREFIX = 160
# Characters a cut line may end in: a token's (a PEM marker's dashes end in a dash after a dash,
# and its block is read line by line anyway; a dash after a letter or digit is a token's, as in
# ``sk-`` | ``ant-``).
_TOKEN_END = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_TOKEN_START = _TOKEN_END | {"-"}
_TOKEN_CHARS = "".join(sorted(_TOKEN_START))
# The shortest secret a rule reports (an AWS access key ID): a cut inside a shorter run of token
# characters (a file name at the end of an ``ls -l`` line, then the next line's permissions)
# cannot have split one.
MIN_TOKEN = 20
_STANDARD_BASE64 = re.compile(r"[A-Za-z0-9+/=]+")
# Kinds of prefix whose pattern cannot be mistaken for the start of a wrapped token's next piece:
# when both lines carry one, that is the prefix. The others (a diff's one character, indentation)
# are tried in turn with the evidence of the width, then no prefix at all.
_DISTINCT = frozenset({LinePrefix.QUOTE, LinePrefix.PYTEST, LinePrefix.LOG, LinePrefix.SERVICE, LinePrefix.LINE_NUMBER})


# By how many token characters a next line must hold in a row (at least one: it starts with one).
_TOKEN_RUNS = [re.compile(f"[{re.escape(_TOKEN_CHARS)}]{{{max(1, n)}}}") for n in range(MIN_TOKEN + 1)]
# The kinds of prefix a line can carry, by its first character: each kind's pattern
# (shardscan.line_prefix.PATTERNS) can only start with these (blanks before a quote, a level word's
# capital, a service name, a line number; a diff's mark; indentation). Order kept, None last.
_FIRST_CHARS: dict[LinePrefix, str] = {
    LinePrefix.QUOTE: " \t>",
    LinePrefix.PYTEST: "E",
    LinePrefix.LOG: " \t[0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    LinePrefix.SERVICE: " \t" + "".join(sorted(_ALNUM)),
    LinePrefix.LINE_NUMBER: " \t0123456789",
    LinePrefix.DIFF: "+- ",
    LinePrefix.INDENT: " \t",
}
_NO_PREFIX: tuple[LinePrefix | None, ...] = (None,)
_KINDS_BY_FIRST: dict[str, tuple[LinePrefix | None, ...]] = {
    first: (*(kind for kind in WRAP_PREFIXES if first in _FIRST_CHARS[kind]), None)
    for first in set("".join(_FIRST_CHARS.values()))
}


def _ends_in_token(line: str) -> bool:
    """Whether ``line`` ends in a token character (see :data:`_TOKEN_END`)."""
    last = line[-1:]
    return last in _TOKEN_END if last != "-" else line[-2:-1] in _ALNUM and len(line) > 1


@dataclass(frozen=True, slots=True)
class _Run:
    """What a run of lines says about the width it was cut at.

    A run is a maximal stretch of consecutive lines carrying one kind of prefix (for no prefix: of
    non-blank lines). ``blob_widths`` are the widths at which every line of the run is standard
    base64 (a blob wrapped on purpose: PEM at 64, ``base64`` at 76).
    """

    widest: int
    blob_widths: frozenset[int]


class _Runs:
    """Per kind of prefix (None: no prefix), each line's run, computed once per kind and text.

    A run is found from the line asked about, outwards, when first asked: most kinds of prefix
    are on few lines of a text, and testing every line of a long window for every kind cost more
    than the rest of the decoder.
    """

    def __init__(self, lines: list[str], lengths: list[int]) -> None:
        self.lines = lines
        self.lengths = lengths  # of each line
        self._cache: dict[tuple[LinePrefix | None, int], _Run] = {}
        # Runs without a prefix (stretches of non-blank lines), by their first line; the blank lines.
        self._plain: dict[int, _Run] = {}
        self._blanks: list[int] | None = None
        self._widths: dict[tuple[LinePrefix | None, int], int] = {}
        # A line is the next line of one cut and the cut line of the next: its prefixes are matched once.
        self._prefixes: dict[tuple[LinePrefix, int], int] = {}

    def run(self, kind: LinePrefix | None, index: int) -> _Run:
        """The run of ``kind`` holding line ``index`` (which carries that prefix)."""
        if kind is None and self.lengths[index]:
            return self._plain_run(index)
        return self._walked_run(kind, index)

    def _walked_run(self, kind: LinePrefix | None, index: int) -> _Run:
        """The run of ``kind`` holding line ``index``, its bounds found line by line."""
        found = self._cache.get((kind, index))
        if found is None:
            first = index
            while self.width(kind, first - 1) >= 0:
                first -= 1
            last = index
            while self.width(kind, last + 1) >= 0:
                last += 1
            found = self._build(kind, first, last)
            for member in range(first, last + 1):
                self._cache[(kind, member)] = found
        return found

    def width(self, kind: LinePrefix | None, index: int) -> int:
        """The width of line ``index`` after its prefix of ``kind`` (-1 when there is no such line or prefix)."""
        if not 0 <= index < len(self.lines):
            return -1
        if kind is None:
            return len(self.lines[index]) or -1
        key = (kind, index)
        width = self._widths.get(key)
        if width is None:
            line = self.lines[index]
            at = self.prefix(kind, index)
            width = self._widths[key] = -1 if at < 0 or not line else len(line) - at
        return width

    def prefix(self, kind: LinePrefix, index: int) -> int:
        """The length of line ``index``'s prefix of ``kind`` (-1 when it has none), matched once per line and kind."""
        key = (kind, index)
        at = self._prefixes.get(key)
        if at is None:
            at = self._prefixes[key] = prefix_length(self.lines[index], kind)
        return at

    def _plain_run(self, index: int) -> _Run:
        """The stretch of non-blank lines holding line ``index`` (not blank): its bounds are the
        blank lines around it, found by bisection instead of line by line."""
        if self._blanks is None:
            self._blanks = [i for i, n in enumerate(self.lengths) if not n]
        blanks = self._blanks
        at = bisect_left(blanks, index)
        first = blanks[at - 1] + 1 if at else 0
        found = self._plain.get(first)
        if found is None:
            last = blanks[at] if at < len(blanks) else len(self.lines)
            lengths = self.lengths[first:last]
            pure: dict[int, bool] = {}
            for line, width in zip(self.lines[first:last], lengths, strict=True):
                if width >= MIN_WIDTH and pure.get(width, True):
                    pure[width] = _STANDARD_BASE64.fullmatch(line) is not None
            found = self._plain[first] = _Run(max(lengths), frozenset(w for w, p in pure.items() if p))
        return found

    def _build(self, kind: LinePrefix | None, first: int, last: int) -> _Run:
        """The run of lines ``first`` to ``last`` (each carrying a prefix of ``kind``)."""
        widest = -1
        pure: dict[int, bool] = {}
        for index in range(first, last + 1):
            width = self.width(kind, index)
            widest = max(widest, width)
            if width >= MIN_WIDTH and pure.get(width, True):
                line = self.lines[index]
                pure[width] = _STANDARD_BASE64.fullmatch(line, len(line) - width) is not None
        return _Run(widest, frozenset(w for w, p in pure.items() if p))


def cut_lines(text: str) -> tuple[list[str], list[str], list[int], list[int]] | None:
    """The lines of ``text``, as shown (without a CRLF line's "\\r"), their lengths, and the lines
    that may have been cut at a width (the candidates :func:`_wraps` tests); None when none may."""
    lines = text.split("\n")
    if len(lines) < 2:
        return None
    # Widths on screen: a CRLF line's "\r" is not shown.
    shown = [line[:-1] if line.endswith("\r") else line for line in lines] if "\r" in text else lines
    lengths = list(map(len, shown))
    # Most texts stop here, after C-speed passes: evidence needs two lines of one length (a
    # constant prefix keeps lengths equal) or a line as wide as a common pane.
    counts = Counter(lengths)
    widths = {
        n for n, c in counts.items() if MIN_WIDTH <= n <= MAX_WIDTH + MAX_PREFIX and (c >= 2 or n in COMMON_WIDTHS)
    }
    if not widths:
        return None
    # A line of that width, or the first line of a run of two of that width (see _joins).
    last = len(lines) - 1
    cuts = [
        i for i, n in enumerate(lengths[:-1])
        if (n in widths or (n >= MIN_WIDTH and i + 2 <= last and lengths[i + 1] == lengths[i + 2] in widths))
        and (shown[i][-1] in _TOKEN_END or _ends_in_token(shown[i]))  # (the first test inline: n >= MIN_WIDTH)
    ]
    if cuts and "-----BEGIN" in text:
        armored = _armored(shown)
        cuts = [i for i in cuts if not armored[i]]
    if not cuts:
        return None
    return lines, shown, lengths, cuts


def _wraps(text: str) -> list[tuple[int, int]]:
    """The spans to remove, each a line break and the next line's prefix ("\\n", "\\r\\n" and what follows).

    Linear in the text: each line is looked at a bounded number of times, and each kind of prefix
    builds its runs once (a cell of 100,000 lines of one width costs one pass per kind).
    """
    cut = cut_lines(text)
    if cut is None:
        return []
    lines, shown, lengths, cuts = cut
    # Line i starts after the i lines before it and their line breaks (summed in C).
    ends = list(accumulate(map(len, lines), initial=0))
    runs = _Runs(shown, lengths)
    out: list[tuple[int, int]] = []
    for i in cuts:
        line, following = shown[i], shown[i + 1]
        # Whatever the next line's prefix, a join needs a run of token characters in it long enough
        # to make MIN_TOKEN with the cut line's tail (see _joins): without one anywhere in the
        # line (one C search), no kind of prefix can join, and none is matched.
        # Only the kinds of prefix the next line can start with are matched (the others would
        # find none, and a kind the next line lacks is passed over below anyway).
        kinds = _KINDS_BY_FIRST.get(following[:1], _NO_PREFIX)
        if kinds is _NO_PREFIX and following[:1] not in _TOKEN_START:
            continue  # no prefix, and no token piece at the start of the next line (see _joins)
        tail = line[-MIN_TOKEN:]
        tail_run = len(tail) - len(tail.rstrip(_TOKEN_CHARS))
        if _TOKEN_RUNS[MIN_TOKEN - tail_run].search(following) is None:
            continue
        if LinePrefix.SERVICE in kinds and "|" not in following:
            kinds = tuple(kind for kind in kinds if kind is not LinePrefix.SERVICE)
        for kind in kinds:
            after = 0 if kind is None else runs.prefix(kind, i + 1)
            if after < 0:
                continue
            at = 0 if kind is None else runs.prefix(kind, i)
            if _joins(runs, kind, i, len(line) - at if at >= 0 else -1, following, after, tail_run):
                out.append((ends[i] + i + len(line), ends[i + 1] + i + 1 + after))
                break
            if kind in _DISTINCT and at >= 0:
                break  # both lines carry this prefix: it is not a diff mark, indentation or text
    return out


def _armored(lines: list[str]) -> list[bool]:
    """Whether each line lies in a PEM block, from its BEGIN line to its END line.

    A PEM body is wrapped on purpose and its verifier reads it across line breaks and the prefixes
    tools print; joined, the lines of a body printed through a log collector would read as one
    line holding the collector's words.
    """
    out: list[bool] = []
    inside = False
    for line in lines:
        inside = inside or "-----BEGIN" in line
        out.append(inside)
        if "-----END" in line:
            inside = False
    return out


def _joins(
    runs: _Runs, kind: LinePrefix | None, index: int, width: int, following: str, after: int, tail_run: int
) -> bool:
    """Whether line ``index`` (``width`` characters after its prefix of ``kind``; -1: it has none;
    ``tail_run`` token characters at its end, up to MIN_TOKEN) was cut at the width of its run,
    the next line carrying that prefix."""
    if following[after : after + 1] not in _TOKEN_START:
        return False
    line = runs.lines[index]
    head = following[after : after + MIN_TOKEN]
    if tail_run + len(head) - len(head.lstrip(_TOKEN_CHARS)) < MIN_TOKEN:
        return False  # too short a run of token characters across the cut to be a secret
    # The first line of a run, glued to what came before it on its line (a JSON-serialised
    # observation starts after '"observation": "'): its own width says nothing, the two lines
    # after it say the width, and it holds at least that much.
    next_width = runs.width(kind, index + 1)
    glued = (
        MIN_WIDTH <= next_width <= MAX_WIDTH and runs.width(kind, index + 2) == next_width and len(line) >= next_width
    )
    if MIN_WIDTH <= width <= MAX_WIDTH:
        adjacent = runs.width(kind, index - 1) == width or next_width == width  # two lines of one width in a row
        if not (adjacent or width in COMMON_WIDTHS or glued):
            return False  # (decided without the run of lines, the costly part)
        run = runs.run(kind, index)
        if width in run.blob_widths:
            return False
        if adjacent:
            return True  # text cut there
        if width in COMMON_WIDTHS and width == run.widest:
            return True  # a pane: nothing is printed wider
    return glued and next_width not in runs.run(kind, index + 1).blob_widths


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with wrapped lines joined (nothing when the text shows no wrapping)."""
    text, within = request.text, request.within
    breaks = [(s, e) for s, e in _wraps(text) if within is None or within.touches(s, e)]
    if not breaks:
        return
    pieces: list[str] = []
    dec: list[int] = []
    cursor = removed = 0
    for start, end in breaks:
        pieces.append(text[cursor:start])
        dec.append(start - removed)
        removed += end - start
        cursor = end
    pieces.append(text[cursor:])
    # Each removed break maps to the empty span where the two pieces meet.
    offsets = OffsetMap(tuple(dec), tuple(dec), tuple(s for s, _ in breaks), tuple(e for _, e in breaks))
    yield Decoded(0, len(text), "".join(pieces), offsets)


# A keyword cut by a wrap, for the prefilter. Where the head before the line break has
# MIN_HEAD characters or more, the head at the end of a line (whatever prefix the next line
# has); where it is shorter (``e`` | ``yJ``, ``gh`` | ``p_``), the whole keyword with the line
# break and one of these prefixes inside it. Both as literals (written as tries), which Hyperscan
# matches at no measurable cost; a pattern with a repeated class (any line number, any
# timestamp) or single-character prefixes (a diff's ``+``) after the short heads cost a fifth of
# the prefilter's time.
MIN_HEAD = 4
_SHORT_HEAD_PREFIXES = ("", "> ", "> > ", "E   ", "E       ")


def keyword_forms(keywords: Sequence[str], token_keywords: Collection[str] = ()) -> list[str]:
    """Prefilter patterns for each keyword cut at each of its positions by a line break.

    Two patterns for all keywords together: the heads of :data:`MIN_HEAD` characters or more
    followed by a line break, and the keywords cut after a shorter head, with a line break and a
    prefix of :data:`_SHORT_HEAD_PREFIXES` at the cut (the tail cut to :data:`MAX_TAIL`
    characters). ``token_keywords`` need no special form: the pieces are selective enough.
    """
    heads: set[str] = set()
    split: set[str] = set()
    for keyword in keywords:
        for cut in range(1, len(keyword)):
            head, tail = keyword[:cut], keyword[cut:][:MAX_TAIL]
            if cut >= MIN_HEAD:
                heads.add(head)
            else:
                split.update(head + "\n" + prefix + tail for prefix in _SHORT_HEAD_PREFIXES)
    # A few tries rather than one: Hyperscan refuses a pattern beyond its length limit, and with a
    # hundred rules a single trie of every cut keyword is past it.
    at_line_end = [_trie(chunk) + r"\r?\n" for chunk in _chunks(sorted(heads))]
    return at_line_end + [_trie(chunk) for chunk in _chunks(sorted(split))]


# Characters of words per trie: well inside Hyperscan's pattern length limit once escaped.
_TRIE_BUDGET = 2000


def _chunks(words: list[str]) -> list[list[str]]:
    """``words`` (sorted) in consecutive runs of about :data:`_TRIE_BUDGET` characters."""
    chunks: list[list[str]] = []
    size = _TRIE_BUDGET
    for word in words:
        if size >= _TRIE_BUDGET:
            chunks.append([])
            size = 0
        chunks[-1].append(word)
        size += len(word)
    return chunks


# A tail is searched for by its first characters only (a superset: the cell is scanned exactly).
MAX_TAIL = 4


def _trie(words: list[str]) -> str:
    """A regex matching exactly ``words`` (sorted), their common prefixes factored out."""
    if words == [""]:
        return ""
    groups: dict[str, list[str]] = {}
    ends = False
    for word in words:
        if not word:
            ends = True
            continue
        groups.setdefault(word[0], []).append(word[1:])
    branches = [_literal(first) + _trie(rest) for first, rest in groups.items()]
    body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
    return body + ("?" if ends and branches else "")


def _literal(text: str) -> str:
    """``text`` as a regex matching it literally, in syntax both RE2 and Hyperscan read the same way."""
    return "".join(c if c.isalnum() or c == "_" else "\\n" if c == "\n" else "\\" + c for c in text)


def encode(text: str, width: int = 80, prefix: str = "") -> str:
    """The inverse for tests: every line cut into pieces of ``width`` characters, each after ``prefix``."""
    return "\n".join(
        prefix + line[i : i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width)
    )


# Not gated like the escape decoders (a line break near a keyword, which nearly every text has:
# finding the keywords first would cost more than this decoder's own reject of texts without a cut).
DECODER = Decoder(name=NAME, decode=decode, encode=encode, keyword_forms=keyword_forms, trigger="\n")
