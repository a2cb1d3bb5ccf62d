"""Check Slack tokens and webhook URLs offline against their documented structure.

Slack tokens carry no checksum: a well-formed one is ``unverified`` (blocking); one whose parts
have impossible lengths or alphabets is ``invalid`` (a model's guess at the format).
"""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"xoxb-[0-9]{8,14}-[0-9]{8,14}-[A-Za-z0-9]{24}"), "bot token"),
    (re.compile(r"xoxp-[0-9]{8,14}-[0-9]{8,14}-[0-9]{8,14}-[0-9a-f]{32}"), "user token"),
    (re.compile(r"xox[ar]-[0-9]{1,14}-[0-9A-Za-z-]{10,250}"), "legacy or workspace token"),
    (re.compile(r"xoxs-[0-9]{8,14}-[0-9]{8,14}-[0-9]{8,14}-[0-9a-f]{64}"), "session token"),
    (re.compile(r"xapp-1-[A-Z0-9]{8,14}-[0-9]{8,14}-[0-9a-f]{64}"), "app-level token"),
    (re.compile(r"xoxe\.xox[bp]-1-[A-Za-z0-9]{140,200}"), "configuration access token"),
    (re.compile(r"xoxe-1-[A-Za-z0-9]{120,200}"), "configuration refresh token"),
    # A webhook's path after hooks.slack.com/services/ (the rule reports the path: it is the secret).
    (re.compile(r"T[A-Z0-9]{8,12}/[AB][A-Z0-9]{8,12}/(?:[0-9]{8,20}/)?[A-Za-z0-9]{24,32}"), "incoming webhook"),
)


def check_slack(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``unverified`` for a well-formed Slack token or webhook, ``invalid`` for a malformed one."""
    secret = candidate.secret
    for shape, name in _SHAPES:
        if shape.fullmatch(secret):
            return Verification(Verdict.UNVERIFIED, f"Slack {name}, well-formed; Slack tokens carry no checksum")
    what = f"token ({secret[:5]})" if secret.startswith("x") else "webhook path"
    return Verification(Verdict.INVALID, f"Slack {what} whose parts do not have the documented lengths: invented "
                                         "or cut")
