"""Verify an Azure storage account key offline: 88 base64 characters that decode to 64 bytes of
random data (readable text there is documentation or a placeholder, not a key)."""

from __future__ import annotations

import base64
import binascii

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

KEY_BYTES = 64


def check_azure_storage_key(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``unverified`` for 64 random-looking bytes (the account key shape); ``invalid`` otherwise."""
    try:
        data = base64.b64decode(candidate.secret, validate=True)
    except (binascii.Error, ValueError):
        return Verification(Verdict.INVALID, "not valid base64, not an Azure storage account key")
    if len(data) != KEY_BYTES:
        return Verification(Verdict.INVALID, f"decodes to {len(data)} bytes (account keys are {KEY_BYTES}): not an "
                                             "account key")
    if all(32 <= byte < 127 for byte in data):
        return Verification(Verdict.INVALID, "decodes to readable text, not 64 random bytes: not an account key")
    return Verification(Verdict.UNVERIFIED, "Azure storage account key shape (64 bytes): full access to the account's "
                                            "blobs, queues and tables; no offline check proves it live")
