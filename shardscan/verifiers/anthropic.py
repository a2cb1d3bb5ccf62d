"""Verify Anthropic API keys offline: exact length for the key type and the ``AA`` ending."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification

# Prefix, 93 random characters from [A-Za-z0-9_-], then "AA".
BODY_CHARS = 93
_KEY = re.compile(r"(sk-ant-(api|admin)([0-9]{2})-)([A-Za-z0-9_-]*)")


def check_anthropic(candidate: Candidate, _context: object) -> Verification | None:
    """``valid`` when the body is exactly 93 characters followed by ``AA``; ``invalid`` otherwise."""
    match = _KEY.fullmatch(candidate.secret)
    if match is None:
        return Verification(Verdict.INVALID, "not sk-ant-<type><nn>- and a body, not an Anthropic key")
    prefix, kind, _version, rest = match.groups()
    name = f"Anthropic {'API' if kind == 'api' else 'Admin API'} key ({prefix})"
    expected = len(prefix) + BODY_CHARS + 2
    if len(candidate.secret) != expected or not rest.endswith("AA"):
        ending = "ends in AA" if rest.endswith("AA") else "does not end in AA"
        return Verification(
            Verdict.INVALID,
            f"{name} of {len(candidate.secret)} characters that {ending} (real keys: {expected}, ending AA): invented or cut",
        )
    return Verification(Verdict.VALID, f"{name}, {expected} characters ending in AA: well-formed")
