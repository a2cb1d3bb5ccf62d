"""What a truncated private key still exposes: a key cut short in a trace is not harmless.

PKCS#1 stores n, e and d first, and the modulus and private exponent together reveal the whole
key; a SEC1 key its private scalar; an OpenSSH key its Ed25519 seed or RSA exponents. So a
truncated body is read as far as it goes (``cryptography`` only where a key must be derived).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from shardscan.model import Verdict


@dataclass(frozen=True, slots=True)
class Exposure:
    """What the part of a truncated key present still gives away: the verdict, and the reason in
    words (the end of a detail that begins with how the key was cut)."""

    verdict: Verdict
    what: str

_RSA_OID = bytes.fromhex("2a864886f70d010101")
_EC_OID = bytes.fromhex("2a8648ce3d0201")
# Curves by the name of their class in ``cryptography.hazmat.primitives.asymmetric.ec``.
_CURVES = {
    bytes.fromhex("2a8648ce3d030107"): "SECP256R1",
    bytes.fromhex("2b81040022"): "SECP384R1",
    bytes.fromhex("2b81040023"): "SECP521R1",
    bytes.fromhex("2b8104000a"): "SECP256K1",
}
_CURVE_BY_SCALAR = {32: "SECP256R1", 48: "SECP384R1", 66: "SECP521R1"}


def _tlv(data: bytes, offset: int) -> tuple[int, int, int]:
    """(tag, content start, declared content end) of the element at ``offset``; the end may lie past the data."""
    tag = data[offset]
    first = data[offset + 1]
    if first < 0x80:
        return tag, offset + 2, offset + 2 + first
    count = first & 0x7F
    if count == 0 or count > 4 or offset + 2 + count > len(data):
        raise IndexError("bad length")
    start = offset + 2 + count
    return tag, start, start + int.from_bytes(data[offset + 2 : start], "big")


@cache
def _small_primes(limit: int = 20000) -> tuple[int, ...]:
    """The primes below ``limit`` (sieved on first use: only truncated RSA keys need them)."""
    sieve = bytearray([1]) * limit
    sieve[:2] = b"\x00\x00"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return tuple(i for i in range(limit) if sieve[i])


def looks_like_rsa_modulus(n: int) -> bool:
    """A real modulus is odd, at least 1024 bits and has no small prime factor (a random number rarely passes)."""
    return n.bit_length() >= 1024 and n % 2 == 1 and all(n % p for p in _small_primes()[1:])


def partial_exposure(data: bytes) -> Exposure | None:
    """What a truncated PKCS#1, SEC1 or PKCS#8 body still exposes; None when it exposes nothing real."""
    try:
        tag, offset, _ = _tlv(data, 0)
        if tag != 0x30:
            return None
        tag, start, end = _tlv(data, offset)  # version
        if tag != 0x02 or end > len(data):
            return None
        version = int.from_bytes(data[start:end], "big")
        tag, start, end = _tlv(data, end)
        if tag == 0x30:  # PKCS#8: AlgorithmIdentifier, then the key in an OCTET STRING
            algorithm = data[start:end]
            tag, inner, _ = _tlv(data, end)
            if tag != 0x04:
                return None
            if algorithm.find(_RSA_OID) >= 0:
                return _rsa_exposure(data, inner)
            if algorithm.find(_EC_OID) >= 0:
                curve = next((c for oid, c in _CURVES.items() if algorithm.find(oid) >= 0), None)
                return _ec_exposure(data, inner, curve)
            return None
        if version == 0 and tag == 0x02:
            return _rsa_exposure(data, 0)
        if version == 1 and tag == 0x04:
            return _ec_exposure(data, 0, None)
    except (IndexError, ValueError):
        return None
    return None


def _rsa_exposure(data: bytes, offset: int) -> Exposure | None:
    _, offset, _ = _tlv(data, offset)  # RSAPrivateKey SEQUENCE
    numbers: list[int] = []
    for _ in range(4):  # version, n, e, d
        tag, start, end = _tlv(data, offset)
        if tag != 0x02 or end > len(data):
            break
        numbers.append(int.from_bytes(data[start:end], "big"))
        offset = end
    # The public exponent must follow the modulus and be a real one (65537 nearly always): bytes a
    # model invented after a memorised header almost never make a small odd INTEGER there.
    if len(numbers) < 3 or not looks_like_rsa_modulus(numbers[1]):
        return None
    n, e = numbers[1], numbers[2]
    if e < 3 or e % 2 == 0 or e.bit_length() > 32:
        return None
    bits = n.bit_length()
    if len(numbers) == 4:
        d = numbers[3]
        if 1 < d < n and pow(pow(2, e, n), d, n) == 2:
            return Exposure(Verdict.VALID, f"yet its RSA {bits}-bit modulus and private exponent are complete and "
                                           "match: the "
                                   "key is exposed")
        return None
    return rsa_cut_after_modulus(bits)


def rsa_cut_after_modulus(bits: int) -> Exposure:
    return Exposure(
        Verdict.UNVERIFIED,
        f"its RSA {bits}-bit modulus is complete and has no small factors (looks genuine); the private part is cut, "
        "partial exposure",
    )


def _ec_exposure(data: bytes, offset: int, curve_name: str | None) -> Exposure | None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    _, offset, _ = _tlv(data, offset)  # ECPrivateKey SEQUENCE
    tag, start, end = _tlv(data, offset)
    if tag != 0x02 or end > len(data) or data[start:end] != b"\x01":
        return None
    tag, start, end = _tlv(data, end)
    if tag != 0x04 or end > len(data) or len(data[start:end]) < 24:
        return None
    scalar = data[start:end]
    public: bytes | None = None
    offset = end
    while offset < len(data):
        tag, start, end = _tlv(data, offset)
        if end > len(data):
            break
        if tag == 0xA0:
            curve_name = next((c for oid, c in _CURVES.items() if data[start:end].find(oid) >= 0), curve_name)
        elif tag == 0xA1:
            inner_tag, inner_start, inner_end = _tlv(data, start)
            if inner_tag == 0x03 and inner_end <= len(data):
                public = data[inner_start + 1 : inner_end]  # skip the unused-bits byte
        offset = end
    curve_name = curve_name or _CURVE_BY_SCALAR.get(len(scalar))
    if curve_name is None:
        return None
    curve = getattr(ec, curve_name)
    try:
        key = ec.derive_private_key(int.from_bytes(scalar, "big"), curve())
    except ValueError:
        return None
    if public is not None:
        point = key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        if point == public:
            return Exposure(Verdict.VALID, f"yet its EC {curve.name} private scalar is complete and matches its public "
                                           "key: "
                                   "the key is exposed")
        return None
    return Exposure(Verdict.UNVERIFIED, f"yet its EC {curve.name} private scalar is complete: the key is exposed if "
                                        "genuine")



def ssh_string(data: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(data):
        raise IndexError("short")
    (length,) = struct.unpack(">I", data[offset : offset + 4])
    end = offset + 4 + length
    if end > len(data):
        raise IndexError("short")
    return data[offset + 4 : end], end


def openssh_exposure(data: bytes, private_at: int | None, cipher: bytes | None) -> Exposure | None:
    """What a truncated, unencrypted OpenSSH key still exposes (the private section is cut).

    The private section holds two equal check words, the key type, then the key: for Ed25519 the
    public key and the 32-byte seed; for RSA n, e and d first. A seed that derives the stated public
    key, or a d that inverts e modulo n, cannot be invented: the key is exposed. Cut before that,
    the structure still tells a real key (equal check words and the header's public key repeated,
    or a genuine-looking modulus) from invented text: a partial exposure, judged like a PKCS#1
    key cut after its modulus.
    """
    if private_at is None or cipher != b"none":
        return None
    try:
        offset = private_at + 4
        check1, check2 = struct.unpack(">II", data[offset : offset + 8])
        if check1 != check2:
            return None
        key_type, offset = ssh_string(data, offset + 8)
        if key_type == b"ssh-ed25519":
            public, offset = ssh_string(data, offset)
            if len(public) != 32:
                return None
            seed = data[offset + 4 : offset + 36]
            if len(seed) == 32:
                from cryptography.hazmat.primitives.asymmetric import ed25519
                from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

                derived = ed25519.Ed25519PrivateKey.from_private_bytes(seed).public_key()
                if derived.public_bytes(Encoding.Raw, PublicFormat.Raw) == public:
                    return Exposure(Verdict.VALID, "yet its Ed25519 seed is complete and matches its public key: the "
                                                   "key is "
                                           "exposed")
                return None
            if public in data[:private_at]:
                return Exposure(
                    Verdict.UNVERIFIED,
                    f"its Ed25519 public key matches the header and {len(seed)} of 32 seed bytes are visible; "
                    "the private part is cut, partial exposure",
                )
            return None
        if key_type == b"ssh-rsa":
            modulus, offset = ssh_string(data, offset)
            n = int.from_bytes(modulus, "big")
            if not looks_like_rsa_modulus(n):
                return None
            try:
                numbers = []
                for _ in range(2):  # e, d
                    value, offset = ssh_string(data, offset)
                    numbers.append(int.from_bytes(value, "big"))
            except IndexError:
                return rsa_cut_after_modulus(n.bit_length())
            e, d = numbers
            if 1 < d < n and pow(pow(2, e, n), d, n) == 2:
                return Exposure(Verdict.VALID, f"yet its RSA {n.bit_length()}-bit modulus and private exponent are "
                                               "complete "
                                       "and match: the key is exposed")
    except (IndexError, struct.error, ValueError):
        return None
    return None
