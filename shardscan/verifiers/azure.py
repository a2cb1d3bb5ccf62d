"""Verify Azure storage credentials offline: an account key (88 base64 characters that decode to
64 bytes of random data; readable text there is documentation or a placeholder, not a key) and a
shared access signature (an HMAC-SHA256 of 32 bytes, valid until the expiry its URL states)."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from urllib.parse import unquote

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import ago, day, safe_text

KEY_BYTES = 64
SAS_SIGNATURE_BYTES = 32  # HMAC-SHA256


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


SHARED_ACCESS_KEY_BYTES = 32


def check_azure_shared_access_key(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """A Service Bus, Event Hubs or IoT Hub ``SharedAccessKey=``: ``unverified`` for 32 random-looking
    bytes (the key shape those services generate), ``invalid`` otherwise; the detail names the
    namespace or hub the connection string points at."""
    try:
        data = base64.b64decode(candidate.secret, validate=True)
    except (binascii.Error, ValueError):
        return Verification(Verdict.INVALID, "not valid base64, not an Azure shared access key")
    if len(data) != SHARED_ACCESS_KEY_BYTES or all(32 <= byte < 127 for byte in data):
        return Verification(Verdict.INVALID, f"decodes to {len(data)} bytes that are not a generated key (shared "
                                             f"access keys are {SHARED_ACCESS_KEY_BYTES} random bytes)")
    host = candidate.group("host")
    where = f" for {safe_text(host, 80)}" if host else ""
    return Verification(Verdict.UNVERIFIED, f"Azure shared access key{where} (32 bytes): sends, listens or manages "
                                            "as its policy allows; no offline check proves it live")


# The query parameters of a SAS that the detail names: its expiry and the permissions it grants
# (a query printed on its own line may follow a JSON-escaped line break).
_SAS_FIELD = re.compile(r"(?:^|[?&;=]|\\[nrt])(se|sp)=([^&\s\"'<>\\]{1,64})")
_SAS_EXPIRY = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?")


def check_azure_sas(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """A shared access signature (``sig=`` of an Azure storage URL or connection string): its
    signature must be an HMAC-SHA256 (32 bytes once URL- and base64-decoded), else it was invented;
    ``expired`` after the expiry (``se=``) the same URL states; the detail names the expiry and
    the permissions (``sp=``)."""
    try:
        signature = base64.b64decode(unquote(candidate.secret), validate=True)
    except (binascii.Error, ValueError):
        return Verification(Verdict.INVALID, "SAS signature that is not base64: not a signature Azure issued")
    if len(signature) != SAS_SIGNATURE_BYTES:
        return Verification(Verdict.INVALID, f"SAS signature of {len(signature)} bytes (an HMAC-SHA256 has "
                                             f"{SAS_SIGNATURE_BYTES}): not a signature Azure issued")
    fields = dict(_SAS_FIELD.findall(unquote(candidate.group("query") or "")))
    permissions = f", permissions sp={safe_text(fields['sp'], 12)}" if "sp" in fields else ""
    expiry = _expiry(fields.get("se", ""))
    if expiry is None:
        return Verification(Verdict.UNVERIFIED, f"Azure shared access signature (expiry not stated{permissions}); "
                                                "grants what it signs until it expires or its key is rotated")
    if expiry <= context.now:
        return Verification(Verdict.EXPIRED, f"Azure shared access signature{permissions}, expired {day(expiry)} "
                                             f"({ago(expiry, context.now)})")
    return Verification(Verdict.UNVERIFIED, f"Azure shared access signature{permissions}, valid until {day(expiry)}; "
                                            "grants what it signs until then or until its key is rotated")


def _expiry(text: str) -> datetime | None:
    """The moment a SAS's ``se=`` value names (a date, or a date and time, in UTC), or None."""
    match = _SAS_EXPIRY.match(text)
    if match is None:
        return None
    year, month, date, hour, minute, second = (int(part) if part else 0 for part in match.groups())
    try:
        return datetime(year, month, date, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None

