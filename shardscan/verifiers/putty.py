"""Verify a PuTTY private key file (.ppk, versions 2 and 3) offline: its private half must belong to its public half.

``cryptography`` is imported when a key is checked, not with this module: most scans verify no
key at all, and importing it costs start-up time (see ``tests/cli/test_startup.py``).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import safe_text
from shardscan.verifiers.key_truncated import ssh_string

_HEADER = re.compile(r"PuTTY-User-Key-File-(?P<version>[23]):[ \t]*(?P<algorithm>[A-Za-z0-9@._-]{1,64})")
_FIELD = re.compile(r"^(?P<name>[A-Za-z0-9-]{1,40}):[ \t]*(?P<value>[^\r\n]*)$")
_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/=]{1,64}$")
# A key's blobs are small (an RSA-16384 private blob is under 5 KB); bigger counts are not a key.
MAX_LINES = 256

# The curves of PuTTY's ECDSA keys, by the names its key blobs use.
_CURVES = {"nistp256": "SECP256R1", "nistp384": "SECP384R1", "nistp521": "SECP521R1"}


@dataclass(frozen=True)
class PuttyKey:
    """The parts of a .ppk file that decide the verdict."""

    version: str
    algorithm: str
    encryption: str
    public: bytes
    private: bytes
    private_lines_declared: int
    private_lines_read: int


class _Malformed(ValueError):
    pass


def parse_ppk(text: str) -> PuttyKey:
    """The key file in ``text`` (from its header line), or :class:`ValueError` naming what is wrong."""
    header = _HEADER.search(text)
    if header is None:
        raise _Malformed("no PuTTY-User-Key-File header")
    lines = text[header.end():].replace("\r\n", "\n").split("\n")[1:]
    fields: dict[str, str] = {}
    blobs: dict[str, tuple[bytes, int, int]] = {}
    index = 0
    while index < len(lines):
        field = _FIELD.match(lines[index].strip())
        if field is None:
            break
        name, value = field["name"], field["value"].strip()
        index += 1
        if name in ("Public-Lines", "Private-Lines"):
            if not value.isdigit() or not 0 < int(value) <= MAX_LINES:
                raise _Malformed(f"{name}: {safe_text(value, 12)} is not a line count")
            declared, body = int(value), list[str]()
            while len(body) < declared and index < len(lines) and _BASE64_LINE.match(lines[index].strip()):
                body.append(lines[index].strip())
                index += 1
            try:
                blobs[name] = (base64.b64decode("".join(body), validate=True), declared, len(body))
            except (binascii.Error, ValueError) as error:
                raise _Malformed(f"{name} are not base64") from error
        else:
            fields[name] = value
    if "Public-Lines" not in blobs or "Private-Lines" not in blobs:
        raise _Malformed("no public or private lines")
    public, _, _ = blobs["Public-Lines"]
    private, declared, read = blobs["Private-Lines"]
    return PuttyKey(header["version"], header["algorithm"], fields.get("Encryption", "none").lower(), public,
                    private, declared, read)


def _strings(blob: bytes, *, padded: bool = False) -> list[bytes]:
    """The SSH wire-format strings a blob holds, in order. ``padded``: bytes after the last whole
    string are padding (PuTTY pads a private blob to its cipher's block, and keeps the padding
    when the key is decrypted), not a malformed field."""
    out, offset = list[bytes](), 0
    while offset < len(blob):
        try:
            value, offset = ssh_string(blob, offset)
        except IndexError:
            if padded:
                break
            raise _Malformed("a field runs past the blob") from None
        out.append(value)
    return out


# Above this size an integer is no key PuTTY writes (RSA-16384 at most), and arithmetic on it
# (DSA's modular exponent) would take seconds on hostile input.
MAX_INTEGER_BITS = 16_384


def _mpint(data: bytes) -> int:
    if len(data) * 8 > MAX_INTEGER_BITS + 8:
        raise _Malformed("an integer longer than any key's")
    return int.from_bytes(data, "big", signed=False)


def _matches(key: PuttyKey) -> bool:
    """Whether the private blob is the private half of the public blob (keys loaded with ``cryptography``)."""
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = _strings(key.public)
    private = _strings(key.private, padded=True)
    algorithm = public[0].decode("ascii", "replace")
    if algorithm == "ssh-ed25519":
        # PuTTY writes the 32-byte seed as a little-endian integer's bytes: a seed ending in zero
        # bytes comes out shorter.
        seed = private[0].ljust(32, b"\0") if len(private[0]) <= 32 else b""
        derived = ed25519.Ed25519PrivateKey.from_private_bytes(seed).public_key()
        return derived.public_bytes(Encoding.Raw, PublicFormat.Raw) == public[1]
    if algorithm == "ssh-rsa":
        e, n = _mpint(public[1]), _mpint(public[2])
        d, p, q, iqmp = (_mpint(part) for part in private[:4])
        numbers = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), iqmp, rsa.RSAPublicNumbers(e, n))
        return numbers.private_key().public_key().public_numbers().n == n
    if algorithm.startswith("ecdsa-sha2-"):
        curve = getattr(ec, _CURVES[public[1].decode("ascii")])()
        derived_ec = ec.derive_private_key(_mpint(private[0]), curve).public_key()
        return derived_ec.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint) == public[2]
    if algorithm == "ssh-dss":
        p, q, g, y = (_mpint(part) for part in public[1:5])
        parameters = dsa.DSAParameterNumbers(p, q, g)
        dsa.DSAPrivateNumbers(_mpint(private[0]), dsa.DSAPublicNumbers(y, parameters)).private_key()
        return pow(g, _mpint(private[0]), p) == y
    raise KeyError(algorithm)


def check_putty_key(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``valid`` when an unencrypted key's private half loads with ``cryptography`` and derives its
    public half (Ed25519, RSA, ECDSA, DSA); ``encrypted`` for a passphrase-protected file;
    ``unverified`` when the private lines are cut short (what is shown still leaks key material) or
    the algorithm is one this check does not know; ``invalid`` when the halves do not belong
    together, as a key a model invented does not."""
    try:
        key = parse_ppk(candidate.secret)
    except ValueError as error:
        return Verification(Verdict.INVALID, f"not a PuTTY key file: {error}")
    what = f"PuTTY key file v{key.version} ({safe_text(key.algorithm, 32)})"
    if key.encryption != "none":
        return Verification(Verdict.ENCRYPTED, f"{what}, encrypted with {safe_text(key.encryption, 24)}; "
                                               "passphrase unknown")
    if key.private_lines_read < key.private_lines_declared:
        return Verification(Verdict.UNVERIFIED, f"{what}, unencrypted, cut after {key.private_lines_read} of "
                                                f"{key.private_lines_declared} private lines: the part shown is "
                                                "key material")
    try:
        belongs = _matches(key)
    except KeyError:
        return Verification(Verdict.UNVERIFIED, f"{what}, unencrypted; this algorithm is not checked offline")
    except (ValueError, IndexError, TypeError, ZeroDivisionError, UnicodeDecodeError):
        belongs = False
    if not belongs:
        return Verification(Verdict.INVALID, f"{what}: the private lines are not the private half of the public "
                                             "key (an invented or corrupted key)")
    return Verification(Verdict.VALID, f"{what}, unencrypted: the private key loads and derives the file's public key")
