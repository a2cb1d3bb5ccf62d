"""Verify Anthropic keys offline: exact length for the key type and the ``AA`` ending.

API and Admin API keys have a known shape. OAuth tokens (``sk-ant-oat01-``, ``sk-ant-ort01-``) have
no published one: a token with the API keys' shape is ``valid``, any other well-formed one
``unverified`` (it still blocks), since an offline check cannot tell a real one from a cut one.
"""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

# Prefix, 93 random characters from [A-Za-z0-9_-], then "AA".
BODY_CHARS = 93
_KEY = re.compile(r"(sk-ant-(api|admin|oat|ort)([0-9]{2})-)([A-Za-z0-9_-]*)")
_NAMES = {"api": "API key", "admin": "Admin API key", "oat": "OAuth access token", "ort": "OAuth refresh token"}


def check_anthropic(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``valid`` when the body is exactly 93 characters followed by ``AA``; ``invalid`` otherwise."""
    match = _KEY.fullmatch(candidate.secret)
    if match is None:
        return Verification(Verdict.INVALID, "not sk-ant-<type><nn>- and a body, not an Anthropic key")
    prefix, kind, _version, rest = match.groups()
    name = f"Anthropic {_NAMES[kind]} ({prefix})"
    expected = len(prefix) + BODY_CHARS + 2
    well_formed = len(candidate.secret) == expected and rest.endswith("AA")
    if kind in ("oat", "ort") and not well_formed:
        return Verification(
            Verdict.UNVERIFIED,
            f"{name} of {len(candidate.secret)} characters: no published format to check it against offline",
        )
    if not well_formed:
        ending = "ends in AA" if rest.endswith("AA") else "does not end in AA"
        return Verification(
            Verdict.INVALID,
            f"{name} of {len(candidate.secret)} characters that {ending} (real keys: {expected}, ending AA): invented "
            "or cut",
        )
    return Verification(Verdict.VALID, f"{name}, {expected} characters ending in AA: well-formed")
