"""Generate credential-shaped test values at run time, so no real-looking secret is ever committed.

Rule examples, tests and the demo write templates such as ``token={{github:ghp_}}``; :func:`expand`
replaces each ``{{generator:argument}}`` with a freshly generated value. Generation is seeded, so
a given template and seed always give the same text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import zlib
from collections.abc import Callable
from functools import lru_cache

ALNUM = string.ascii_letters + string.digits
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
BASE32 = string.ascii_uppercase + "234567"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"

_TEMPLATE = re.compile(r"\{\{(?P<name>[a-z_0-9]+)(?::(?P<arg>[^{}]*))?\}\}")


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    """Random alphanumerics with at least one digit, one upper and one lower case letter."""
    while True:
        value = _chars(rng, ALNUM, n)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value):
            return value


def base62_crc32(text: str) -> str:
    """GitHub's token checksum: CRC32 of ``text`` in base62 (0-9A-Za-z), zero-padded to 6 characters."""
    value = zlib.crc32(text.encode())
    digits = ""
    while value:
        value, rem = divmod(value, 62)
        digits = BASE62[rem] + digits
    return digits.rjust(6, "0")


def github_token(rng: random.Random, prefix: str = "ghp_") -> str:
    """A classic GitHub token (ghp_/gho_/ghu_/ghs_/ghr_) with a correct checksum."""
    body = _mixed(rng, 30 if prefix != "ghr_" else 70)
    return prefix + body + base62_crc32(body)


def github_pat_checksum(token_without_tail: str) -> str:
    """First 8 characters of base32(SHA-256(token minus its last 16 characters))."""
    digest = hashlib.sha256(token_without_tail.encode()).digest()
    return base64.b32encode(digest).decode()[:8]


def github_fine_grained(rng: random.Random) -> str:
    """A ``github_pat_`` fine-grained token with a correct checksum (82 characters after the prefix)."""
    head = "github_pat_" + "11" + _chars(rng, BASE32, 20) + "_" + _mixed(rng, 43)
    return head + github_pat_checksum(head) + _mixed(rng, 8)


def b64url(data: bytes) -> str:
    """Unpadded base64url, as JWTs use."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_SIG_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64, "RS256": 256, "ES256": 64, "EdDSA": 64, "none": 0}


def jwt(rng: random.Random, exp: int | None = None, alg: str = "HS256", **claims: object) -> str:
    """A JWT with the given ``exp`` (Unix seconds, or none) and a random signature of the right length."""
    header = {"alg": alg, "typ": "JWT"}
    payload: dict[str, object] = {"sub": _chars(rng, string.digits, 10), "iat": 1_500_000_000}
    payload.update(claims)
    if exp is not None:
        payload["exp"] = exp
    signature = b64url(rng.randbytes(_SIG_BYTES.get(alg, 32))) if alg != "none" else ""
    return ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()), signature])


def openai_key(rng: random.Random, prefix: str = "sk-proj-") -> str:
    """An OpenAI-shaped key: two random halves of equal length around ``T3BlbkFJ``."""
    half = 20 if prefix == "sk-" else 74
    return prefix + _mixed(rng, half) + "T3BlbkFJ" + _mixed(rng, half)


def anthropic_key(rng: random.Random, kind: str = "api03") -> str:
    """An Anthropic-shaped key: ``sk-ant-<kind>-``, 93 random characters, then ``AA``."""
    return f"sk-ant-{kind}-" + _chars(rng, ALNUM + "-_", 93) + "AA"


def huggingface_token(rng: random.Random, prefix: str = "hf_") -> str:
    """A Hugging Face user token: ``hf_`` and 34 mixed alphanumerics."""
    return prefix + _mixed(rng, 34)


def aws_key_id(rng: random.Random, prefix: str = "AKIA") -> str:
    """An AWS access key ID: a 4-letter prefix and 16 base32 characters (encoding, like an issued
    key, an account ID of at most 12 digits)."""
    from shardscan.verifiers.aws import account_id

    while True:
        key = prefix + _chars(rng, BASE32, 16)
        if len(account_id(key) or "") <= 12:
            return key


def aws_secret(rng: random.Random) -> str:
    """An AWS secret access key: 40 base64 characters."""
    while True:
        value = _chars(rng, ALNUM + "/+", 40)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value):
            return value


@lru_cache(maxsize=32)
def private_key_pem(kind: str = "rsa", seed: int = 0) -> str:
    """A PEM private key generated with ``cryptography`` (cached per kind and seed; keys are slow)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    enc = serialization.Encoding.PEM
    none = serialization.NoEncryption()
    if kind in ("rsa", "rsa-pkcs1"):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        data = key.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none)
    elif kind in ("rsa-pkcs8", "pkcs8"):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        data = key.private_bytes(enc, serialization.PrivateFormat.PKCS8, none)
    elif kind == "ec":
        key = ec.generate_private_key(ec.SECP256R1())
        data = key.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none)
    elif kind in ("ed25519", "openssh"):
        key = ed25519.Ed25519PrivateKey.generate()
        data = key.private_bytes(enc, serialization.PrivateFormat.OpenSSH, none)
    elif kind == "encrypted":
        key = ec.generate_private_key(ec.SECP256R1())
        data = key.private_bytes(
            enc, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"correct horse")
        )
    else:
        raise ValueError(f"unknown private key kind {kind!r}")
    return data.decode()


def _pem_single_line(pem: str) -> str:
    return pem.strip().replace("\n", "\\n")


def _pem_head(arg: str) -> str:
    """The first lines of a generated key, as ``head -N`` prints them (``kind:N``; no END line)."""
    kind, _, count = (arg or "rsa").partition(":")
    return "\n".join(private_key_pem(kind).strip().splitlines()[: int(count or 12)])


def _numbered(text: str) -> str:
    """``text`` as an agent's file view prints it: a right-aligned line number and an arrow per line."""
    return "\n".join(f"{number:6}→{line}" for number, line in enumerate(text.splitlines(), start=1))


def _compose_logs(text: str) -> str:
    """``text`` as ``docker compose logs`` prints it: the service name and a bar on every line after the first."""
    first, *rest = text.splitlines()
    return "\n".join([first] + [f"app-1  | {line}" for line in rest])


Generator = Callable[[random.Random, str], str]

GENERATORS: dict[str, Generator] = {
    "alnum": lambda rng, arg: _mixed(rng, int(arg or 32)),
    "hex": lambda rng, arg: _chars(rng, "0123456789abcdef", int(arg or 32)),
    "b64": lambda rng, arg: _chars(rng, B64, int(arg or 40)),
    "base32": lambda rng, arg: _chars(rng, BASE32, int(arg or 16)),
    "digits": lambda rng, arg: _chars(rng, string.digits, int(arg or 12)),
    "github": lambda rng, arg: github_token(rng, arg or "ghp_"),
    "github_pat": lambda rng, arg: github_fine_grained(rng),
    "jwt": lambda rng, arg: jwt(rng, exp=_exp(arg)),
    "openai": lambda rng, arg: openai_key(rng, arg or "sk-proj-"),
    "anthropic": lambda rng, arg: anthropic_key(rng, arg or "api03"),
    "hf": lambda rng, arg: huggingface_token(rng, arg or "hf_"),
    "aws_id": lambda rng, arg: aws_key_id(rng, arg or "AKIA"),
    "aws_secret": lambda rng, arg: aws_secret(rng),
    "pem": lambda rng, arg: private_key_pem(arg or "rsa").strip(),
    "pem_escaped": lambda rng, arg: _pem_single_line(private_key_pem(arg or "rsa")),
    "pem_head": lambda rng, arg: _pem_head(arg),
    "pem_head_escaped": lambda rng, arg: _pem_head(arg).replace("\n", "\\n"),
    "pem_numbered": lambda rng, arg: _numbered(private_key_pem(arg or "rsa")),
    "pem_head_numbered": lambda rng, arg: _numbered(_pem_head(arg)),
    "pem_compose_logs": lambda rng, arg: _compose_logs(private_key_pem(arg or "rsa").strip()),
}


def _exp(arg: str | None) -> int | None:
    """``exp`` for a generated JWT: an absolute Unix time, ``none``, or the default far future."""
    if arg == "none":
        return None
    if arg:
        return int(arg)
    return 4_102_444_800  # 2100-01-01


def expand(template: str, seed: int | str = 0) -> str:
    """Replace every ``{{generator:arg}}`` in ``template`` with a generated value."""
    rng = random.Random(f"{seed}:{template}")

    def substitute(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise ValueError(f"unknown generator {{{{{name}}}}}")
        return GENERATORS[name](rng, match.group("arg") or "")

    return _TEMPLATE.sub(substitute, template)


def has_template(text: str) -> bool:
    """True when ``text`` contains at least one ``{{generator}}`` placeholder."""
    return _TEMPLATE.search(text) is not None


def password(rng: random.Random, n: int = 16) -> str:
    """A generated password: mixed-case alphanumerics and a few symbols that URLs, shells and
    YAML leave alone (no ``@ : / # ' "`` or spaces)."""
    while True:
        value = _mixed(rng, n - 2) + _chars(rng, "!%^*-_+=", 1) + _chars(rng, string.digits, 1)
        if value[0].isalnum():
            return value


def basic_credentials(rng: random.Random, user: str = "deploy") -> str:
    """Base64 of ``user:<generated password>``, as an ``Authorization: Basic`` header or a Docker ``auth`` field holds it."""
    return base64.b64encode(f"{user or 'deploy'}:{password(rng)}".encode()).decode()


GENERATORS.update({
    "password": lambda rng, arg: password(rng, int(arg or 16)),
    "basic": lambda rng, arg: basic_credentials(rng, arg),
    "uuid": lambda rng, arg: "-".join(_chars(rng, "0123456789abcdef", n) for n in (8, 4, 4, 4, 12)),
})
