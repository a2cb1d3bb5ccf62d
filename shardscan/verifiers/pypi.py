"""Verify PyPI API tokens offline: decode the macaroon and read what its location and caveats grant.

A PyPI token is ``pypi-`` and a base64url macaroon (libmacaroons format v2): a location
(``pypi.org`` or ``test.pypi.org``), an identifier, first-party caveats (JSON; since 2023 tagged
arrays such as ``[1, ["project"]]``, before that ``{"permissions": ...}`` objects) and a 32-byte
HMAC signature. Without the server's key the signature cannot be checked, but a string that does
not parse as such a macaroon is no token, and an expiry caveat in the past means it is dead.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import b64url_decode, day, safe_text

_MAX_BYTES = 16 * 1024
_MAX_CAVEATS = 64
_LOCATIONS = {"pypi.org": "PyPI", "test.pypi.org": "TestPyPI"}


@dataclass(frozen=True, slots=True)
class Macaroon:
    """The parts of a decoded macaroon that tell what it grants."""

    location: str
    caveats: tuple[bytes, ...]
    signature: bytes


class _Malformed(ValueError):
    """The bytes are not a format-v2 macaroon."""


def parse_macaroon(data: bytes) -> Macaroon:
    """Parse a libmacaroons v2 binary macaroon; raises ``ValueError`` when ``data`` is not one."""
    if len(data) > _MAX_BYTES or not data or data[0] != 2:
        raise _Malformed("not a version 2 macaroon")
    reader = _Reader(data, 1)
    location = b""
    header = reader.section()
    for field_type, value in header:
        if field_type == 1:
            location = value
    if not any(field_type == 2 for field_type, _ in header):
        raise _Malformed("no identifier")
    caveats: list[bytes] = []
    while True:
        section = reader.section()
        if not section:
            break
        if len(caveats) >= _MAX_CAVEATS:
            raise _Malformed("too many caveats")
        caveats.extend(value for field_type, value in section if field_type == 2)
    field_type, signature = reader.field()
    if field_type != 6 or len(signature) != 32 or reader.pos != len(data):
        raise _Malformed("no 32-byte signature at the end")
    return Macaroon(location.decode("ascii", "replace"), tuple(caveats), signature)


class _Reader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def varint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise _Malformed("bad varint")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def field(self) -> tuple[int, bytes]:
        field_type = self.varint()
        if field_type == 0:
            return 0, b""
        length = self.varint()
        if self.pos + length > len(self.data):
            raise _Malformed("field runs past the end")
        value = self.data[self.pos : self.pos + length]
        self.pos += length
        return field_type, value

    def section(self) -> list[tuple[int, bytes]]:
        fields: list[tuple[int, bytes]] = []
        while True:
            field_type, value = self.field()
            if field_type == 0:
                return fields
            fields.append((field_type, value))


@dataclass(frozen=True, slots=True)
class Grant:
    """What the caveats say: the scope in words and the expiry, if any."""

    scope: str
    expires: datetime | None


def read_caveats(caveats: tuple[bytes, ...]) -> Grant:
    """The scope and expiry PyPI's caveats give (unknown caveats are ignored: they only restrict)."""
    scope = "the whole account (all projects)"
    expires: datetime | None = None
    for raw in caveats:
        try:
            caveat = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(caveat, dict):
            permissions = caveat.get("permissions")
            if isinstance(permissions, dict) and isinstance(permissions.get("projects"), list):
                scope = _projects(permissions["projects"])
        elif isinstance(caveat, list) and caveat and caveat[0] == 0 and len(caveat) >= 2:
            if isinstance(caveat[1], int) and not isinstance(caveat[1], bool):
                with contextlib.suppress(OverflowError, OSError, ValueError):
                    expires = datetime.fromtimestamp(caveat[1], UTC)
        elif isinstance(caveat, list) and len(caveat) >= 2 and caveat[0] == 1 and isinstance(caveat[1], list):
            scope = _projects(caveat[1])
        elif isinstance(caveat, list) and len(caveat) >= 2 and caveat[0] == 2 and isinstance(caveat[1], list):
            scope = f"{len(caveat[1])} project(s) by id"
    return Grant(scope, expires)


def _projects(names: list[object]) -> str:
    shown = ", ".join(safe_text(n, 40) for n in names[:3] if isinstance(n, str))
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"upload to project(s) {shown}{more}" if shown else "no project"


def check_pypi(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Decodes the macaroon: a PyPI or TestPyPI location, a 32-byte signature; the caveats give scope and expiry."""
    data = b64url_decode(candidate.secret.removeprefix("pypi-"))
    try:
        macaroon = parse_macaroon(data or b"")
    except ValueError:
        return Verification(Verdict.INVALID, "PyPI token whose body is not a macaroon: invented or cut")
    index = _LOCATIONS.get(macaroon.location)
    if index is None:
        return Verification(Verdict.INVALID, "macaroon of another location than pypi.org, not a PyPI token")
    grant = read_caveats(macaroon.caveats)
    if grant.expires is not None and grant.expires <= context.now:
        return Verification(Verdict.EXPIRED, f"{index} API token for {grant.scope}, expired {day(grant.expires)}")
    until = f", until {day(grant.expires)}" if grant.expires else ""
    return Verification(Verdict.VALID, f"{index} API token for {grant.scope}{until}: a well-formed macaroon")
