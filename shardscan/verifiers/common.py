"""Helpers shared by verifiers: tolerant decoding, safe detail text, human-readable times."""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any

_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_UNSAFE = re.compile(r"[^\x20-\x7e]")
# Claim values shown in a detail are cut, and long token-like runs in them masked: a claim could
# itself hold a credential.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{24,}")


def b64url_decode(part: str) -> bytes | None:
    """Decode unpadded base64url; None when ``part`` is not base64url (or has an impossible length)."""
    if not _B64URL.fullmatch(part) or len(part) % 4 == 1:
        return None
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return None


def printable_base64(value: str) -> str | None:
    """The printable ASCII text that padded standard base64 ``value`` encodes, or None (not
    base64, or the bytes are not all printable: random bytes almost never are)."""
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data.decode("ascii") if data and all(32 <= byte < 127 for byte in data) else None


def json_object(data: bytes | None, max_bytes: int = 64 * 1024) -> dict[str, Any] | None:
    """Parse ``data`` as a JSON object; None when it is not one (or is too large to be a JWT part)."""
    if data is None or len(data) > max_bytes:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def safe_text(value: object, limit: int = 48) -> str:
    """A claim value as it may appear in a detail: printable ASCII, token runs masked, cut to ``limit``."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=True, default=str)
    text = _UNSAFE.sub("?", text)
    text = _TOKEN_RUN.sub(lambda m: m.group(0)[:4] + "…", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_timestamp(value: object) -> datetime | None:
    """A NumericDate claim as an aware datetime; None when it is not a usable number.

    Values past the year 5000 are read as milliseconds, a common mistake of issuers whose
    servers then accept the token as such.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    if abs(value) > 100_000_000_000:
        value = value / 1000
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def ago(moment: datetime, now: datetime) -> str:
    """``7 years ago`` / ``in 3 days``: the distance between ``moment`` and ``now`` in one unit."""
    seconds = (moment - now).total_seconds()
    past = seconds < 0
    seconds = abs(seconds)
    for unit, size in (("year", 365.25 * 86400), ("month", 30.44 * 86400), ("day", 86400), ("hour", 3600),  # noqa: B007 -- read after the loop
                       ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            break
    else:
        return "just now"
    phrase = f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{phrase} ago" if past else f"in {phrase}"


def day(moment: datetime) -> str:
    """ISO date of ``moment`` in UTC."""
    return moment.astimezone(UTC).date().isoformat()
