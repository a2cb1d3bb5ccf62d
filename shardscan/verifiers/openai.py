"""Verify OpenAI API keys offline: exactly one ``T3BlbkFJ`` marker between two random halves of equal length."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

MARKER = "T3BlbkFJ"  # base64 of "OpenAI"
_PREFIX = re.compile(r"sk-(?:(proj|svcacct|admin|None)-)?")
_NAMES = {None: "user", "proj": "project", "svcacct": "service account", "admin": "admin", "None": "legacy"}


def check_openai(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Checks the T3BlbkFJ marker occurs once, between two random halves of equal length (after an
    optional name part)."""
    key = candidate.secret
    prefix = _PREFIX.match(key)
    if prefix is None:
        return Verification(Verdict.INVALID, "does not start with sk-, not an OpenAI key")
    body = key[prefix.end() :]
    name = f"OpenAI {_NAMES[prefix.group(1)]} key ({prefix.group(0)})"
    count = body.count(MARKER)
    if count != 1:
        return Verification(Verdict.INVALID, f"{name} with the T3BlbkFJ marker {count} times (real keys have it once): "
                                             "invented")
    left, right = body.split(MARKER)
    if prefix.group(1) is None and len(left) > len(right) >= 16 and left[: len(left) - len(right)].endswith("-"):
        # The 2024 service-account shape sk-<account name>-<half>T3BlbkFJ<half>: the name is not
        # random and not part of either half (its length is not shown: the name is the owner's).
        return Verification(
            Verdict.VALID, f"OpenAI service account key with a name part, marker between two {len(right)}-character "
                           "halves: well-formed"
        )
    if len(left) != len(right) or len(left) < 16:
        return Verification(
            Verdict.INVALID,
            f"{name} whose halves around T3BlbkFJ are {len(left)} and {len(right)} characters (real keys: equal): "
            "invented or cut",
        )
    return Verification(Verdict.VALID, f"{name}, marker between two {len(left)}-character halves: well-formed")
