"""Verify a WireGuard key offline: 32 bytes of base64, and a private key as ``wg genkey`` writes it
(an X25519 scalar already clamped: its lowest three bits clear, its top bit clear, the next one set)."""

from __future__ import annotations

import base64
import binascii

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

KEY_BYTES = 32


def check_wireguard(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``valid`` for a clamped private key (what ``wg genkey`` prints; a random 32 bytes is clamped
    once in 32), ``unverified`` for other 32-byte keys (a preshared key, a key from another tool),
    ``invalid`` for anything that is not 32 bytes."""
    try:
        key = base64.b64decode(candidate.secret, validate=True)
    except (binascii.Error, ValueError):
        return Verification(Verdict.INVALID, "not valid base64: not a WireGuard key")
    if len(key) != KEY_BYTES:
        return Verification(Verdict.INVALID, f"decodes to {len(key)} bytes (WireGuard keys are {KEY_BYTES})")
    field = (candidate.group("field") or "").lower()
    if "preshared" in field:
        return Verification(Verdict.UNVERIFIED, "WireGuard preshared key (32 bytes): with the peers' keys, it "
                                                "decrypts the tunnel's traffic")
    if key[0] & 7 == 0 and key[31] & 0xC0 == 0x40:
        return Verification(Verdict.VALID, "WireGuard private key, clamped as wg genkey writes it: whoever holds it "
                                           "joins the tunnel as this peer")
    return Verification(Verdict.UNVERIFIED, "WireGuard private key (32 bytes, not clamped as wg genkey writes it): "
                                            "no offline check proves it live")
