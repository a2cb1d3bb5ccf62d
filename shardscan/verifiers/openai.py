"""Verify OpenAI API keys offline: exactly one ``T3BlbkFJ`` marker between two random halves of equal length."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification

MARKER = "T3BlbkFJ"  # base64 of "OpenAI"
_PREFIX = re.compile(r"sk-(?:(proj|svcacct|admin|None)-)?")
_NAMES = {None: "user", "proj": "project", "svcacct": "service account", "admin": "admin", "None": "legacy"}


def check_openai(candidate: Candidate, _context: object) -> Verification | None:
    """``valid`` when the key has the marker once, centred; ``invalid`` otherwise."""
    key = candidate.secret
    prefix = _PREFIX.match(key)
    if prefix is None:
        return Verification(Verdict.INVALID, "does not start with sk-, not an OpenAI key")
    body = key[prefix.end() :]
    name = f"OpenAI {_NAMES[prefix.group(1)]} key ({prefix.group(0)})"
    count = body.count(MARKER)
    if count != 1:
        return Verification(Verdict.INVALID, f"{name} with the T3BlbkFJ marker {count} times (real keys have it once): invented")
    left, right = body.split(MARKER)
    if len(left) != len(right) or len(left) < 16:
        return Verification(
            Verdict.INVALID,
            f"{name} whose halves around T3BlbkFJ are {len(left)} and {len(right)} characters (real keys: equal): invented or cut",
        )
    return Verification(Verdict.VALID, f"{name}, marker between two {len(left)}-character halves: well-formed")
