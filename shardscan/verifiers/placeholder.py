"""Recognise placeholder and elided secret bodies (``xxxx``, ``...``, ``<your-token>``)."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification

_ELISION = re.compile(r"\.\.\.|…|<[^<>]{0,60}>|\[[^\[\]]{0,60}(?:omitted|redacted|removed|snip)[^\[\]]{0,60}\]|\*{4,}", re.I)
_PLACEHOLDER_WORDS = re.compile(
    r"(?:x{4,}|X{4,}|your[_-]?|example|changeme|placeholder|redacted|dummy|sample|insert|replace[_-]?me|0{8,}|1234567890)",
    re.I,
)


def check_placeholder(candidate: Candidate, _context: object) -> Verification | None:
    """``redacted`` when the secret's body is elided or a placeholder; no opinion otherwise."""
    secret = candidate.secret
    if _ELISION.search(secret):
        return Verification(Verdict.REDACTED, "body is elided (contains an omission marker), not a usable secret")
    match = _PLACEHOLDER_WORDS.search(secret)
    if match:
        return Verification(Verdict.REDACTED, f"placeholder text ({match.group(0)[:12]!r}) instead of a secret body")
    return None
