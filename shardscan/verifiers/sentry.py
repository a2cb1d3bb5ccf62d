"""Verify Sentry credentials offline: an org token's payload and a DSN's key parts.

An organisation auth token (``sntrys_``) carries base64 JSON naming the organisation and region
before its secret: it must decode. A DSN with only a public key is meant for clients (it can
only send events); one with a secret key (the legacy ``public:secret@`` form) is a credential.
"""

from __future__ import annotations

import base64
import binascii
import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import json_object, safe_text

_ORG_TOKEN = re.compile(r"sntrys_([A-Za-z0-9+/]+={0,2})_([A-Za-z0-9+/_-]+)")
# A DSN as the rule reports it: its key part, "<public>" or "<public>:<secret>" before the @.
_DSN = re.compile(r"([0-9a-f]{32})(?::([0-9a-f]{32}))?")


def check_sentry(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Verdict for a ``sntrys_`` token or a DSN; None for other Sentry shapes (user tokens)."""
    secret = candidate.secret
    dsn = _DSN.fullmatch(secret)
    if dsn:
        if dsn.group(2):
            return Verification(Verdict.UNVERIFIED, "Sentry DSN with a secret key (legacy public:secret form): "
                                                    "authenticates to the project's API")
        return Verification(Verdict.TEST_MODE, "Sentry DSN with a public key only: meant for clients, it can only "
                                               "send events")
    token = _ORG_TOKEN.fullmatch(secret)
    if token is None:
        return None
    try:
        payload = json_object(base64.b64decode(token.group(1), validate=True))
    except (binascii.Error, ValueError):
        payload = None
    if payload is None:
        return Verification(Verdict.INVALID, "Sentry org token whose payload is not base64 JSON: invented or mangled")
    org = payload.get("org")
    if not isinstance(org, str) or not org:
        return Verification(Verdict.INVALID, "Sentry org token whose payload names no organisation: invented")
    region = payload.get("region_url") or payload.get("url") or "region not named"
    return Verification(Verdict.UNVERIFIED, f"Sentry organisation token of org {safe_text(org, 40)} "
                                            f"({safe_text(region, 48)}): releases, source maps and project settings")
