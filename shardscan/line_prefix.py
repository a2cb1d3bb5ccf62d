"""What tools print in front of every line of a file or of output: one list, for token joining and key reading.

A Markdown export quotes tool output (``> ``, nested ``> > ``), pytest marks failure lines
(``E   ``), a diff its lines (``+``/``-``/`` ``), ``cat -n``, ``nl``, editors and agent file views
number them (``     12<TAB>``, ``   12 | ``, ``12→``, ``12:``), log collectors stamp them. A
credential printed through such a tool has the prefix on every line it spans. The terminal-wrap
decoder (tokens cut at a line width) and the private-key verifier (PEM bodies) both remove these
prefixes; each pattern is matched at the start of a line (``re.match``) and is bounded, so a line
costs at most a few hundred steps whatever it holds.
"""

from __future__ import annotations

import re
from enum import StrEnum


class LinePrefix(StrEnum):
    """A kind of text a tool puts in front of every line."""

    QUOTE = "quote"  # Markdown or e-mail quote, possibly nested: "> ", "> > ", ">>"
    PYTEST = "pytest"  # pytest's failure lines: "E   ", "E       "
    LOG = "log"  # timestamps and level words of log collectors
    SERVICE = "service"  # docker compose logs: "app-1  | "
    LINE_NUMBER = "line-number"  # cat -n, nl, editors, agent file views, grep -n
    DIFF = "diff"  # a unified diff's "+", "-" or " " (one character)
    INDENT = "indent"  # uniform indentation (a traceback's source lines, an indented block)
    FILE_NAME = "file-name"  # grep -r's "path:" / "path:12:" / "path-13-"
    ANY_TEXT = "any-text"  # anything up to the last blank of the line (only where the rest is one word)


PATTERNS: dict[LinePrefix, re.Pattern[str]] = {
    LinePrefix.QUOTE: re.compile(r"[ \t]{0,3}>(?:[ \t]?>){0,15}[ \t]?"),
    LinePrefix.PYTEST: re.compile(r"E[ \t]{1,16}"),
    # "[2024-05-01 10:00:00] ", "2024-05-01T10:00:00Z INFO ", kubectl logs --timestamps'
    # "2024-05-01T10:00:00.123456789Z ", syslog's "May  1 10:00:00 host app[42]: ", Python
    # logging's "INFO:root:". A level word must end in a colon or a space: a key body or a token
    # starts with capitals too ("MIIE...", "AKIA...").
    LinePrefix.LOG: re.compile(
        r"[ \t]*(?:\[[^\]\n]{1,60}\]|\d{4}-\d\d-\d\d[T ][0-9:.,]+(?:Z|[+-]\d\d:?\d\d)?"
        r"(?:[ \t]+[A-Z]{3,8}(?::|(?=[ \t])))?|[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]+\d\d:\d\d:\d\d[ \t]+\S{1,64}[ \t]+"
        r"[^\s:]{1,64}:|[A-Z]{4,8}:[A-Za-z0-9_.]{1,64}:)[ \t]*"
    ),
    # With -t, a timestamp after the bar.
    LinePrefix.SERVICE: re.compile(
        r"[ \t]*[A-Za-z0-9][A-Za-z0-9_.-]{0,63}[ \t]+\|[ \t]?(?:\d{4}-\d\d-\d\dT[0-9:.,]+(?:Z|[+-]\d\d:?\d\d)?[ \t])?"
    ),
    # cat -n and nl ("     1<TAB>"), Claude Code's file view ("     1→"), grep -n ("12:"), bat ("12 │"),
    # editors ("   12 | ").
    LinePrefix.LINE_NUMBER: re.compile(r"[ \t]*\d{1,7}(?:[ \t]*[→│|:-][ \t]?|[ \t]+|$)"),
    LinePrefix.DIFF: re.compile(r"[+\- ]"),
    LinePrefix.INDENT: re.compile(r"[ \t]{1,64}"),
    LinePrefix.FILE_NAME: re.compile(r"[ \t]*(?:[^\s:]{1,200}:(?:\d{1,7}:)?|[^\s:]{1,200}?-\d{1,7}-)"),
    # (Greedy, then back to the last blank before the last word: the lazy form retried every blank
    # of a long run and was quadratic; the prefix it gives is the same.)
    LinePrefix.ANY_TEXT: re.compile(r"[^\n]*[ \t](?=[^ \t]+[ \t]*$)"),
}
"""Each kind's pattern, matched at the start of a line (what it matches is the prefix)."""

# A diff's "+"/"-" or a quote's ">" (nested quotes too), with any indentation before it: the reading
# of a key pasted into a diff or a reply, where one line of the body may be added and the next kept.
DIFF_OR_QUOTE = re.compile(r"[ \t]*(?:[+\-]|>(?:[ \t]?>){0,15})")

# The prefixes a token wrapped across lines may carry on each of them, most specific first: a line
# that one of the first kinds explains is not taken for a diff line or an indented one.
WRAP_PREFIXES: tuple[LinePrefix, ...] = (
    LinePrefix.QUOTE,
    LinePrefix.PYTEST,
    LinePrefix.LOG,
    LinePrefix.SERVICE,
    LinePrefix.LINE_NUMBER,
    LinePrefix.DIFF,
    LinePrefix.INDENT,
)


def prefix_length(line: str, kind: LinePrefix) -> int:
    """How many characters at the start of ``line`` are a prefix of ``kind`` (-1 when it has none)."""
    match = PATTERNS[kind].match(line)
    return -1 if match is None else match.end()
