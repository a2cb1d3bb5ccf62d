"""Verify npm access tokens offline: npm uses GitHub's token checksum (base62 CRC32 in the last six characters)."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.github import base62_crc32

_TOKEN = re.compile(r"npm_([A-Za-z0-9]{36})")


def check_npm(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Recomputes the CRC32 (base62) of the 30 random characters, which the last six must equal."""
    match = _TOKEN.fullmatch(candidate.secret)
    if match is None:
        return Verification(Verdict.INVALID, f"npm token of {len(candidate.secret)} characters (real: npm_ and 36): "
                                             "invented or cut")
    body = match.group(1)
    if base62_crc32(body[:-6]) == body[-6:]:
        return Verification(Verdict.VALID, "npm access token, CRC32 checksum matches")
    return Verification(Verdict.INVALID, "npm access token whose CRC32 checksum does not match: invented or mangled")
