"""Verify age secret keys offline through their bech32 checksum (BIP 173)."""

from __future__ import annotations

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GENERATOR = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
KEY_BYTES = 32


def bech32_polymod(values: list[int]) -> int:
    """BIP 173's checksum polynomial over 5-bit ``values`` (1 for a valid string)."""
    chk = 1
    for value in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ value
        for i in range(5):
            chk ^= _GENERATOR[i] if (top >> i) & 1 else 0
    return chk


def bech32_valid(text: str) -> bool:
    """Whether ``text`` (one case) is a bech32 string with a correct checksum."""
    lowered = text.lower()
    hrp, sep, data = lowered.rpartition("1")
    if not sep or not hrp or len(data) < 6 or any(c not in _CHARSET for c in data):
        return False
    values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + [_CHARSET.index(c) for c in data]
    return bech32_polymod(values) == 1


def check_age(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``valid`` when the bech32 checksum holds and the key is 32 bytes; ``invalid`` otherwise."""
    key = candidate.secret
    if not bech32_valid(key):
        return Verification(Verdict.INVALID, "age secret key whose bech32 checksum does not match: invented or mangled")
    data_chars = len(key) - len("AGE-SECRET-KEY-1") - 6
    if data_chars * 5 // 8 != KEY_BYTES:
        return Verification(Verdict.INVALID, f"age secret key of {data_chars * 5 // 8} bytes (X25519 keys are 32)")
    return Verification(Verdict.VALID, "age X25519 secret key, bech32 checksum matches: decrypts the files "
                                       "encrypted to it")
