"""Load decoded private key material with ``cryptography``: DER (PKCS#1, SEC1, DSA, PKCS#8,
encrypted PKCS#8) and OpenSSH; a body cut short is handed to :mod:`key_truncated`.

``cryptography`` is imported by the functions that load keys, not with this module: most scans
verify no private key, and the import costs about 20 ms of every run's start-up.
"""

from __future__ import annotations

import base64
import re
import struct
import textwrap

from shardscan.model import Verdict, Verification
from shardscan.verifiers.key_truncated import openssh_exposure, partial_exposure, ssh_string

# ---- DER (PKCS#1, SEC1, DSA, PKCS#8, encrypted PKCS#8) -----------------------------------------


def der_declared_length(data: bytes) -> int | None:
    """Total length the outer DER SEQUENCE declares (header included); None if it is no SEQUENCE header."""
    if len(data) < 2 or data[0] != 0x30:
        return None
    first = data[1]
    if first < 0x80:
        return 2 + first
    count = first & 0x7F
    if count == 0 or count > 4 or len(data) < 2 + count:
        return None
    return 2 + count + int.from_bytes(data[2 : 2 + count], "big")


def _der_format(data: bytes, label: str) -> str:
    """PKCS#8 when the second element of the outer SEQUENCE is a SEQUENCE (AlgorithmIdentifier)."""
    try:
        offset = _skip_header(data, 0)
        offset = _skip_element(data, offset)  # version INTEGER
        is_pkcs8 = data[offset] == 0x30
    except IndexError:
        is_pkcs8 = label == ""
    if is_pkcs8:
        return "PKCS#8" + (f" under a {label} label" if label not in ("", "ENCRYPTED") else "")
    return {"RSA": "PKCS#1", "EC": "SEC1", "DSA": "OpenSSL DSA"}.get(label, "traditional")


def _skip_header(data: bytes, offset: int) -> int:
    first = data[offset + 1]
    return offset + 2 + (first & 0x7F if first >= 0x80 else 0)


def _skip_element(data: bytes, offset: int) -> int:
    first = data[offset + 1]
    if first < 0x80:
        return offset + 2 + first
    count = first & 0x7F
    return offset + 2 + count + int.from_bytes(data[offset + 2 : offset + 2 + count], "big")


_PBE_OIDS = {
    bytes.fromhex("2a864886f70d01050d"): "PBES2",
    bytes.fromhex("2a864886f70d01050a"): "PBES1 (DES)",
    bytes.fromhex("2a864886f70d010c0103"): "PKCS#12 3DES",
    bytes.fromhex("2a864886f70d010c0106"): "PKCS#12 RC2",
}


def _pbe_scheme(data: bytes) -> str:
    for oid, name in _PBE_OIDS.items():
        if oid in data[:64]:
            return name
    return "unknown scheme"


def check_der(data: bytes, label: str) -> Verification:
    declared = der_declared_length(data)
    if declared is None:
        return Verification(Verdict.INVALID, f"{label_name(label)}: valid base64 but not DER ({len(data)} bytes), not "
                                             "a key")
    if declared > len(data):
        cut = (f"{label_name(label)}: truncated (the DER structure declares {declared} bytes, the body holds "
               f"{len(data)})")
        exposure = partial_exposure(data)
        if exposure is None:
            return Verification(Verdict.INVALID, f"{cut}, no usable key material left")
        return Verification(exposure.verdict, f"{cut}; {exposure.what}")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    try:
        key = load_der_private_key(data, password=None)
    except TypeError:
        # cryptography says a password is needed: the structure is an encrypted PKCS#8 key.
        return Verification(
            Verdict.ENCRYPTED, f"encrypted PKCS#8 private key ({_pbe_scheme(data)}), {len(data)} bytes; passphrase "
                               "unknown"
        )
    except (ValueError, UnsupportedAlgorithm, OverflowError):
        if label == "ENCRYPTED":
            return Verification(Verdict.INVALID, "encrypted PKCS#8 label, but the body is not an "
                                                 "EncryptedPrivateKeyInfo")
        return Verification(
            Verdict.INVALID, f"{label_name(label)}: valid base64 and DER ({len(data)} bytes) but does not parse as a "
                             "key"
        )
    return Verification(Verdict.VALID, f"{describe_key(key)} private key ({_der_format(data, label)}), parses")


def describe_key(key: object) -> str:
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa, x448, x25519

    if isinstance(key, rsa.RSAPrivateKey):
        return f"RSA {key.key_size}-bit"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return f"EC {key.curve.name} ({key.key_size}-bit)"
    if isinstance(key, dsa.DSAPrivateKey):
        return f"DSA {key.key_size}-bit"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "Ed25519"
    if isinstance(key, ed448.Ed448PrivateKey):
        return "Ed448"
    if isinstance(key, x25519.X25519PrivateKey):
        return "X25519"
    if isinstance(key, x448.X448PrivateKey):
        return "X448"
    return type(key).__name__


def label_name(label: str) -> str:
    return {
        "": "PKCS#8 private key",
        "RSA": "RSA private key",
        "EC": "EC private key",
        "DSA": "DSA private key",
        "OPENSSH": "OpenSSH private key",
        "ENCRYPTED": "encrypted PKCS#8 private key",
        "PGP": "PGP private key block",
    }.get(label, f"{safe_label(label)} private key")


def safe_label(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 ,._-]", "?", text)[:32]



# ---- OpenSSH ------------------------------------------------------------------------------------

_OPENSSH_MAGIC = b"openssh-key-v1\x00"


def check_openssh(data: bytes) -> Verification:
    if not data.startswith(_OPENSSH_MAGIC):
        return Verification(Verdict.INVALID,
                            "OpenSSH private key: valid base64 but no openssh-key-v1 header, not a key")
    # What the header gave before it ran out, for judging a truncated key.
    private_at: int | None = None
    seen_cipher: bytes | None = None
    try:
        cipher, offset = ssh_string(data, len(_OPENSSH_MAGIC))
        seen_cipher = cipher
        kdf, offset = ssh_string(data, offset)
        _, offset = ssh_string(data, offset)  # kdf options
        (count,) = struct.unpack(">I", data[offset : offset + 4])
        offset += 4
        for _ in range(min(count, 16)):
            _, offset = ssh_string(data, offset)  # public keys
        private_at = offset
        _, offset = ssh_string(data, offset)  # private section
    except (IndexError, struct.error):
        cut = f"OpenSSH private key: truncated ({len(data)} bytes, a field runs past the end)"
        exposure = openssh_exposure(data, private_at, seen_cipher)
        if exposure is not None:
            return Verification(exposure.verdict, f"{cut}; {exposure.what}")
        return Verification(Verdict.INVALID, f"{cut}, not a key")
    cipher_name = safe_label(cipher.decode("ascii", "replace"))
    if cipher_name != "none":
        kdf_name = safe_label(kdf.decode("ascii", "replace"))
        return Verification(Verdict.ENCRYPTED, f"encrypted OpenSSH private key ({cipher_name}, {kdf_name} KDF); "
                                               "passphrase unknown")
    pem = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(textwrap.wrap(base64.b64encode(data).decode(), 70))
        + "\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import load_ssh_private_key

    try:
        key = load_ssh_private_key(pem.encode(), password=None)
    except TypeError:
        return Verification(Verdict.ENCRYPTED, "encrypted OpenSSH private key; passphrase unknown")
    except (ValueError, UnsupportedAlgorithm, OverflowError):
        return Verification(Verdict.INVALID, "OpenSSH private key: header parses but the key material does not, not a "
                                             "key")
    return Verification(Verdict.VALID, f"{describe_key(key)} private key (OpenSSH), parses")
