"""Verify 1Password service-account tokens offline: ``ops_`` and base64 of a JSON sign-in record."""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import b64url_decode, json_object, safe_text

# The fields that sign a service account in; a record without the secret ones grants nothing.
_SECRET_FIELDS = ("srpX", "muk", "secretKey")
_ADDRESS = re.compile(r"[A-Za-z0-9.-]{1,80}")


def check_onepassword(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Decodes the base64 body: a JSON record with a sign-in address and the account's secret key material."""
    body = candidate.secret.removeprefix("ops_").rstrip("=")
    record = json_object(b64url_decode(body.replace("+", "-").replace("/", "_")))
    if record is None:
        return Verification(Verdict.INVALID, "1Password service-account token whose body is not base64 JSON: invented "
                                             "or cut")
    missing = [name for name in _SECRET_FIELDS if not record.get(name)]
    if missing:
        return Verification(
            Verdict.INVALID,
            f"1Password service-account token without {', '.join(missing)}: not a sign-in record",
        )
    address = record.get("signInAddress")
    where = f" for {safe_text(address, 60)}" if isinstance(address, str) and _ADDRESS.fullmatch(address) else ""
    return Verification(Verdict.VALID, f"1Password service-account token{where}: decodes to a complete sign-in record")
