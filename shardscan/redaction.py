"""Turn a plaintext secret into what may leave the engine: a fingerprint, a preview, a masked context."""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from itertools import accumulate

PREVIEW_CHARS = 4
CONTEXT_CHARS = 40
# Any long token-like run in a context snippet is cut to its first characters: the snippet may hold
# another secret that no rule matched (or that a disabled rule would have).
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_\-.~%]{20,}")
_PEM_NOISE = re.compile(r"(?:\\+r|\\+n|\s)+")


def normalise_secret(secret: str, kind: str) -> str:
    """The canonical form a fingerprint is taken over.

    Private keys are compared without line breaks (real or escaped) and indentation, so one key
    has one fingerprint however it was wrapped; other secrets are taken exactly as matched.
    """
    if kind == "private-key":
        return _PEM_NOISE.sub("", secret)
    return secret


def fingerprint(secret: str, kind: str = "") -> str:
    """``sha256:`` and the hex SHA-256 of the (normalised) secret."""
    return "sha256:" + hashlib.sha256(normalise_secret(secret, kind).encode("utf-8", "surrogatepass")).hexdigest()


def preview(secret: str) -> str:
    """The first four characters, an ellipsis and the length: never more.

    A value shorter than 20 characters (a password; no token is that short) shows one character
    per eight: four characters would be half of an eight-character password.
    """
    shown = PREVIEW_CHARS if len(secret) >= 20 else len(secret) // 8
    return f"{secret[:shown]}…({len(secret)})"


def mask_tokens(text: str) -> str:
    """Cut every long token-like run in ``text`` to its first four characters."""
    return _TOKEN_RUN.sub(lambda m: m.group(0)[:PREVIEW_CHARS] + "…", text)


def span_reach(spans: list[tuple[int, int, str]]) -> list[int]:
    """For sorted ``spans``, the furthest end among each span and those before it (for :func:`context_snippet`)."""
    return list(accumulate((e for _, e, _ in spans), max))


def context_snippet(
    cell: str, start: int, end: int, spans: list[tuple[int, int, str]], reach: list[int] | None = None
) -> str:
    """A short, redacted window around ``cell[start:end]``.

    ``spans`` are every finding span of the cell with its preview, sorted; each is replaced by its
    preview in brackets and long token runs are masked *before* the window is cut, so the cut can
    never expose the tail of a token that masking would otherwise have caught. With ``reach``
    (:func:`span_reach` of the spans, computed once per cell), only the spans near the window are
    visited, so a cell with thousands of findings costs no comparison of every pair.
    """
    reach = reach if reach is not None else span_reach(spans)
    margin = CONTEXT_CHARS * 5
    lo, hi = max(0, start - margin), min(len(cell), end + margin)
    pieces: list[str] = []
    cursor = lo
    anchor = 0
    # The first span ending after the window starts: every span before it ends before.
    for k in range(bisect_right(reach, lo), len(spans)):
        s, e, label = spans[k]
        if s >= hi:
            break
        if e <= cursor:
            continue
        if s > cursor:
            pieces.append(mask_tokens(cell[cursor:s]))
        if (s, e) == (start, end) or (s <= start and end <= e):
            anchor = sum(len(p) for p in pieces)
        pieces.append(f"[{label}]")
        cursor = max(cursor, e)
    if cursor < hi:
        pieces.append(mask_tokens(cell[cursor:hi]))
    region = "".join(pieces)
    marker_end = region.index("]", anchor) + 1 if "]" in region[anchor:] else anchor
    cut_lo, cut_hi = max(0, anchor - CONTEXT_CHARS), min(len(region), marker_end + CONTEXT_CHARS)
    snippet = region[cut_lo:cut_hi].replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return ("…" if cut_lo > 0 or lo > 0 else "") + snippet + ("…" if cut_hi < len(region) or hi < len(cell) else "")
