"""Verify Grafana Cloud access policy tokens offline: ``glc_`` and base64 JSON with org, name and key."""

from __future__ import annotations

import base64
import binascii
import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import json_object, safe_text

_CLOUD = re.compile(r"glc_([A-Za-z0-9+/]+={0,2})")


def check_grafana(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Verdict for a ``glc_`` token (its payload must decode); None for other Grafana tokens."""
    match = _CLOUD.fullmatch(candidate.secret)
    if match is None:
        return None
    body = match.group(1)
    try:
        payload = json_object(base64.b64decode(body + "=" * (-len(body) % 4), validate=True))
    except (binascii.Error, ValueError):
        payload = None
    if payload is None or not isinstance(payload.get("k"), str) or "o" not in payload:
        return Verification(Verdict.INVALID, "Grafana Cloud token whose payload is not base64 JSON with an org and a "
                                             "key: invented or mangled")
    region = payload.get("m", {}).get("r") if isinstance(payload.get("m"), dict) else None
    name = payload.get("n")
    pieces = [f"org {safe_text(payload['o'], 20)}"]
    if name:
        pieces.append(f"token {safe_text(name, 40)}")
    if region:
        pieces.append(f"region {safe_text(region, 30)}")
    return Verification(Verdict.UNVERIFIED, f"Grafana Cloud access policy token ({', '.join(pieces)}); no offline "
                                            "check proves it live")
