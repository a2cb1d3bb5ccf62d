"""Adjacent string literals joined, as code that builds a private key from pieces reads once it runs.

An agent writing a config loader or a test fixture often embeds a private key as one literal per
PEM line: ``"-----BEGIN ... KEY-----\\n"`` then ``"MIIE...\\n"`` on the next line (Python and C
join adjacent literals), or ``'...' +`` (JavaScript, Java, C#), ``"..." .`` (PHP), ``"..." &``
(VB), a backslash line continuation. Joining the literals gives back the text the program holds;
the PEM line breaks inside the literals are then undone by the JSON-string decoder.

Only the separator between two literals of the same quote kind is removed: a closing quote,
whitespace with at least one line break or an operator, and the next opening quote. Commas join
only the lines of a key kept as a list of lines (a notebook cell's ``"source"``, ``readlines()``,
``pem.splitlines()``): after a literal that ends in an escaped line break, a PEM marker's dashes
or a run of base64, and before one that opens with base64 or dashes. Colons (JSON objects,
arguments) never join.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, decode_in_place

NAME = "string-concat"

_GAP = r"[ \t]*"
_BREAK = r"(?:\\?\r?\n" + _GAP + r")+"
_LIST_SEPARATOR = _GAP + "," + _GAP + r"(?:\\?\r?\n" + _GAP + r")*"
# Every branch starts with the closing quote (one top-level alternative led by a character class),
# so the regex engine looks for a quote and tries nothing elsewhere; what must come before the
# quote is checked by lookbehinds placed after it (a lookbehind first would be tried at every
# position of the text).
_JOIN = re.compile(
    r"""(["'])"""  # the closing quote of a literal
    + r"(?:" + _GAP
    + r"(?:[+.&]" + _GAP + r"(?:" + _BREAK + r")?"  # an operator, maybe with line breaks after it
    + r"|" + _BREAK + r"(?:[+.&]" + _GAP + r")?"  # or line breaks, maybe with an operator after them
    + r")\1"  # the opening quote of the next literal, of the same kind
    # Or one line of a list of lines, a comma, and the next line: a base64 line (a short one only
    # when it is the whole literal), or the END marker after any line.
    + r"""|(?:(?<=\\n.)|(?<=-----.)|(?<=[A-Za-z0-9+/=]{16}.))""" + _LIST_SEPARATOR
    + r"\1(?=[A-Za-z0-9+/=]{16}|[A-Za-z0-9+/=]{1,15}(?:\\n)?\1)"
    + r"|" + _LIST_SEPARATOR + r"\1(?=-----END)"
    + r")"
)


# Only texts that hold a private key marker are joined. A key is the credential code writes line
# by line, one literal per PEM line; tokens fit in one literal. One substring test (C speed)
# keeps the join pattern off the many JSON and code texts near other keywords.
TRIGGER = "PRIVATE KEY"


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with every pair of adjacent literals joined (nothing when there is none)."""
    yield from decode_in_place(request, TRIGGER, _JOIN, lambda match: "")


def encode(text: str) -> str:
    """``text`` as implicitly joined double-quoted literals of up to 64 characters, one per line."""
    pieces = [text[i : i + 64] for i in range(0, len(text), 64)] or [""]
    return '"' + '"\n    "'.join(pieces) + '"'


DECODER = Decoder(name=NAME, decode=decode, encode=encode, text_transform=True, trigger=TRIGGER)
