"""Verify AWS access keys offline: key-ID alphabet, the account ID encoded in it, and pairing.

Key IDs are a four-character prefix and 16 base32 characters (``A-Z2-7``). For key IDs issued
since about 2019 (fifth character ``Q``-``Z`` or ``2``-``7``) the AWS account ID is encoded in
bits of the base32 payload; the detail shows it for triage. A key ID alone cannot sign requests,
and there is no offline check that proves an ID/secret pair is live, so these findings are
``unverified`` (blocking under the default policy) with what was learnt in the detail.
"""

from __future__ import annotations

import base64
import binascii
import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import printable_base64
from shardscan.verifiers.example import known_examples
from shardscan.verifiers.placeholder import placeholder_reason

_KEY_ID = re.compile(r"(A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)([A-Z0-9]{16})")
_PREFIXES = {
    "AKIA": "long-term access key ID",
    "ASIA": "temporary (STS) access key ID",
    "ABIA": "STS service bearer token key ID",
    "ACCA": "context-specific credential key ID",
}
_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")


def account_id(key_id: str) -> str | None:
    """The 12-digit AWS account ID encoded in a key ID, when its format encodes one."""
    match = _KEY_ID.fullmatch(key_id)
    if match is None or re.search(r"[0189]", match.group(2)):
        return None
    try:
        payload = base64.b32decode(match.group(2))
    except (binascii.Error, ValueError):
        return None
    if not payload[0] & 0x80:
        return None  # older key IDs (fifth character A-P) do not encode the account
    value = (int.from_bytes(payload[:6], "big") & 0x7FFFFFFFFF80) >> 7
    return f"{value:012d}"


def looks_like_secret_key(value: str) -> str | None:
    """None when ``value`` could be an AWS secret access key, else why it cannot."""
    if not _SECRET.fullmatch(value):
        return "not 40 base64 characters"
    if re.fullmatch(r"[0-9a-f]{40}|[0-9A-F]{40}", value):
        return "a hex digest"
    if not (re.search(r"[A-Z]", value) and re.search(r"[a-z]", value) and re.search(r"[0-9/+]", value)):
        return "not mixed-case base64"
    if printable_base64(value) is not None:
        # A Kubernetes Secret's value is base64: 40 characters there encode a 30-character text,
        # never a 40-character secret key (30 random bytes are all printable once in 10^13).
        return "base64 of readable text"
    return None


# Account IDs the AWS documentation uses in its examples (moto, the AWS mock, uses the first for
# every key it mints): a key ID that encodes one was never issued to a customer.
DOCUMENTATION_ACCOUNTS = frozenset({"123456789012", "111122223333", "444455556666", "777788889999"})


def _documentation_account(account: str | None) -> Verification | None:
    if account in DOCUMENTATION_ACCOUNTS:
        return Verification(
            Verdict.EXAMPLE,
            f"encodes account {account}, an AWS documentation account (also moto's mock account): not an issued key",
        )
    return None


def check_aws_key_id(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Checks the base32 key-ID alphabet, decodes the account ID (documentation accounts: example)
    and pairs an adjacent secret key."""
    key_id = candidate.secret
    match = _KEY_ID.fullmatch(key_id)
    if match is None:
        return Verification(Verdict.INVALID, "not a prefix and 16 characters, not an AWS key ID")
    prefix, body = match.groups()
    bad = re.search(r"[0189]", body)
    if bad:
        return Verification(Verdict.INVALID, "contains 0, 1, 8 or 9, outside the base32 key-ID alphabet: not an AWS "
                                             "key ID")
    name = _PREFIXES.get(prefix, "access key ID (A3T prefix)")
    account = account_id(key_id)
    if documented := _documentation_account(account):
        return documented
    if account is not None and len(account) > 12:
        # 40 bits hold numbers up to 13 digits; AWS account IDs have 12.
        return Verification(Verdict.INVALID, f"encodes a {len(account)}-digit account number, and AWS account IDs "
                                             "have 12 digits: a made-up key ID")
    pieces = [f"AWS {name}"]
    pieces.append(f"account {account}" if account else "account not encoded (pre-2019 key ID format)")
    pair = candidate.group("pair")
    usable = False
    if pair:
        example = known_examples().lookup(pair, "aws")
        reason = "the documentation example secret" if example else looks_like_secret_key(pair)
        if placeholder_reason(pair) is not None:
            reason = "a placeholder"
        usable = reason is None
        if usable:
            pieces.append("paired with an adjacent 40-character secret access key (usable pair)")
        else:
            pieces.append(f"the 40 characters next to it are {reason}, not a secret key")
    else:
        pieces.append("no secret access key next to it")
    if not usable and prefix == "ASIA":
        # CloudTrail records and STS output print these by the hundred. Without its secret and
        # session token a temporary key ID grants nothing, and its session lasts 36 hours at most.
        pieces.append("a temporary key ID alone, from a session that lasts 36 hours at most: not usable")
        return Verification(Verdict.EXPIRED, ", ".join(pieces))
    return Verification(Verdict.UNVERIFIED, ", ".join(pieces))


def check_aws_secret(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Verdict for an AWS secret access key: shape only (no offline check can prove one)."""
    secret = candidate.secret
    reason = looks_like_secret_key(secret)
    if reason is not None:
        return Verification(Verdict.INVALID, f"{reason}, not an AWS secret access key")
    key_id = candidate.group("keyid")
    if key_id:
        account = account_id(key_id)
        if documented := _documentation_account(account):
            return documented
        where = f" (account {account})" if account else ""
        return Verification(Verdict.UNVERIFIED, f"AWS secret access key next to its key ID{where}: a usable pair; no "
                                                "offline check")
    return Verification(Verdict.UNVERIFIED, "AWS secret access key (assigned to a secret-key variable); no offline "
                                            "check")
