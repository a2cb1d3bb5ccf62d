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

from shardscan.verifiers.age import bech32_polymod
from shardscan.verifiers.aws import account_id

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
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        data = rsa_key.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none)
    elif kind in ("rsa-pkcs8", "pkcs8"):
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        data = rsa_key.private_bytes(enc, serialization.PrivateFormat.PKCS8, none)
    elif kind == "ec":
        ec_key = ec.generate_private_key(ec.SECP256R1())
        data = ec_key.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none)
    elif kind in ("ed25519", "openssh"):
        ed_key = ed25519.Ed25519PrivateKey.generate()
        data = ed_key.private_bytes(enc, serialization.PrivateFormat.OpenSSH, none)
    elif kind == "encrypted":
        ec_key = ec.generate_private_key(ec.SECP256R1())
        data = ec_key.private_bytes(
            enc, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"correct horse")
        )
    else:
        raise ValueError(f"unknown private key kind {kind!r}")
    return data.decode()


def ssh_string(data: bytes) -> bytes:
    """``data`` as an SSH wire-format string (RFC 4251): a big-endian uint32 length, then the bytes."""
    return len(data).to_bytes(4, "big") + data


def ssh_mpint(value: int) -> bytes:
    """A non-negative integer as an SSH wire-format mpint (RFC 4251)."""
    data = value.to_bytes(value.bit_length() // 8 + 1, "big")  # a leading zero byte keeps it positive
    return ssh_string(data)


def ppk_lines(blob: bytes) -> list[str]:
    """``blob`` in base64, cut into the 64-character lines of a .ppk file."""
    text = base64.b64encode(blob).decode()
    return [text[i:i + 64] for i in range(0, len(text), 64)]


@lru_cache(maxsize=16)
def putty_private_key(kind: str = "ed25519", seed: int = 0) -> str:
    """A PuTTY .ppk (version 3) key file generated with ``cryptography``: ``ed25519``, ``rsa``,
    ``rsa4096`` or ``ec`` unencrypted; ``encrypted`` (random private lines under aes256-cbc);
    ``invented`` (a real public half with random private lines, as a model writes one)."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

    rng = random.Random(f"ppk:{kind}:{seed}")
    if kind in ("ed25519", "encrypted", "invented"):
        ed_key = ed25519.Ed25519PrivateKey.generate()
        algorithm = "ssh-ed25519"
        public = ssh_string(b"ssh-ed25519") + ssh_string(ed_key.public_key().public_bytes(Encoding.Raw,
                                                                                             PublicFormat.Raw))
        private = ssh_string(ed_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))
    elif kind in ("rsa", "rsa4096"):
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=4096 if kind == "rsa4096" else 2048)
        numbers = rsa_key.private_numbers()
        algorithm = "ssh-rsa"
        public = ssh_string(b"ssh-rsa") + ssh_mpint(numbers.public_numbers.e) + ssh_mpint(numbers.public_numbers.n)
        private = b"".join(ssh_mpint(v) for v in (numbers.d, numbers.p, numbers.q, numbers.iqmp))
    elif kind == "ec":
        ec_key = ec.generate_private_key(ec.SECP256R1())
        algorithm = "ecdsa-sha2-nistp256"
        public = (ssh_string(b"ecdsa-sha2-nistp256") + ssh_string(b"nistp256")
                  + ssh_string(ec_key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)))
        private = ssh_mpint(ec_key.private_numbers().private_value)
    else:
        raise ValueError(f"unknown PuTTY key kind {kind!r}")
    if kind in ("encrypted", "invented"):
        private = rng.randbytes(48 if kind == "encrypted" else len(private))
        if kind == "invented":
            private = ssh_string(private[4:36])
    encryption = "aes256-cbc" if kind == "encrypted" else "none"
    lines = [f"PuTTY-User-Key-File-3: {algorithm}", f"Encryption: {encryption}", f"Comment: {kind}-key-20240101",
             f"Public-Lines: {len(ppk_lines(public))}", *ppk_lines(public)]
    if kind == "encrypted":
        lines += ["Key-Derivation: Argon2id", "Argon2-Memory: 8192", "Argon2-Passes: 21", "Argon2-Parallelism: 1",
                  f"Argon2-Salt: {rng.randbytes(16).hex()}"]
    lines += [f"Private-Lines: {len(ppk_lines(private))}", *ppk_lines(private),
              f"Private-MAC: {rng.randbytes(32).hex()}"]
    return "\n".join(lines)


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
    "ppk": lambda rng, arg: putty_private_key(arg or "ed25519"),
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


# --- LLM platforms, code hosting, registries and CI ---------------------------------------------


def npm_token(rng: random.Random) -> str:
    """An npm access token: ``npm_``, 30 random alphanumerics and their base62 CRC32 (GitHub's scheme)."""
    body = _mixed(rng, 30)
    return "npm_" + body + base62_crc32(body)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _macaroon_field(field_type: int, data: bytes) -> bytes:
    return _varint(field_type) + _varint(len(data)) + data


def pypi_token(rng: random.Random, arg: str = "user") -> str:
    """A PyPI API token: ``pypi-`` and a base64url macaroon (format v2) signed with a random key.

    ``arg``: ``user`` (whole-account scope), ``project`` (one project), ``expired`` (an expiry
    caveat in 2019), ``legacy`` (the JSON-object caveat PyPI wrote before 2023), ``test``
    (issued by test.pypi.org) or ``broken`` (a cut macaroon).
    """
    import hmac

    location = b"test.pypi.org" if arg == "test" else b"pypi.org"
    identifier = json.dumps({"version": 1, "id": _uuid(rng)}).encode()
    caveats: list[bytes] = []
    if arg == "project":
        caveats.append(json.dumps([1, ["example-project"]]).encode())
    elif arg == "expired":
        caveats.append(json.dumps([0, 1_559_692_800, 1_559_600_000]).encode())
    elif arg == "legacy":
        caveats.append(json.dumps({"version": 1, "permissions": "user"}).encode())
    caveats.append(json.dumps([3, _uuid(rng)]).encode())
    signature = hmac.new(rng.randbytes(32), identifier, hashlib.sha256).digest()
    data = b"\x02" + _macaroon_field(1, location) + _macaroon_field(2, identifier) + b"\x00"
    for caveat in caveats:
        signature = hmac.new(signature, caveat, hashlib.sha256).digest()
        data += _macaroon_field(2, caveat) + b"\x00"
    data += b"\x00" + _macaroon_field(6, signature)
    encoded = b64url(data)
    return "pypi-" + (encoded[: len(encoded) // 2] if arg == "broken" else encoded)


def _uuid(rng: random.Random) -> str:
    hexes = _chars(rng, "0123456789abcdef", 32)
    return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"


def onepassword_service_account(rng: random.Random, arg: str = "") -> str:
    """A 1Password service-account token: ``ops_`` and base64 of its JSON sign-in record
    (``broken``: the record cut in half)."""
    record = {
        "signInAddress": "my.1password.com",
        "userAuth": {"method": "SRPg-4096", "alg": "PBES2g-HS256", "iterations": 650000,
                     "salt": _chars(rng, B64URL, 22)},
        "email": _chars(rng, string.ascii_lowercase, 12) + "@1passwordserviceaccounts.com",
        "srpX": _chars(rng, "0123456789abcdef", 64),
        "muk": {"alg": "A256GCM", "ext": True, "k": _chars(rng, B64URL, 43), "key_ops": ["encrypt", "decrypt"],
                "kty": "oct", "kid": "mp"},
        "secretKey": "A3-" + _chars(rng, string.ascii_uppercase + string.digits, 6) + "-" + _chars(rng, BASE32, 26),
        "deviceUuid": _chars(rng, string.ascii_lowercase + string.digits, 26),
    }
    data = json.dumps(record, separators=(",", ":")).encode()
    if arg == "broken":
        data = data[: len(data) // 2]  # cut: still opens like the record, no longer JSON
    return "ops_" + b64url(data)


GENERATORS.update({
    "b64url": lambda rng, arg: _chars(rng, B64URL, int(arg or 32)),
    "hexu": lambda rng, arg: _chars(rng, "0123456789ABCDEF", int(arg or 8)),
    "lower_alnum": lambda rng, arg: _chars(rng, string.ascii_lowercase + string.digits, int(arg or 32)),
    "npm": lambda rng, arg: npm_token(rng),
    "pypi": lambda rng, arg: pypi_token(rng, arg or "user"),
    "onepassword": lambda rng, arg: onepassword_service_account(rng, arg),
})


# JOSE headers as hand-written scripts and tutorials serialise them: the layout names the
# whitespace json.dumps / JSON.stringify put in (``indent``: ``{\n  "alg": ...``, ``tabs``,
# ``crlf``, ``spaced``: ``{ "alg": ... }``).
_JOSE_LAYOUTS: dict[str, dict[str, object]] = {
    "indent": {"indent": 2},
    "indent4": {"indent": 4},
    "tabs": {"indent": "\t"},
}


def jwt_layout(rng: random.Random, layout: str = "indent", exp: int | None = 4_102_444_800) -> str:
    """A JWT (HS256) whose header and payload are JSON serialised with whitespace (see ``_JOSE_LAYOUTS``)."""
    header: dict[str, object] = {"typ": "JWT", "alg": "HS256"} if layout == "tabs" else {"alg": "HS256", "typ": "JWT"}
    payload: dict[str, object] = {"sub": _chars(rng, string.digits, 10), "iat": 1_500_000_000}
    if exp is not None:
        payload["exp"] = exp
    if layout == "crlf":
        parts = [json.dumps(p, indent=2).replace("\n", "\r\n") for p in (header, payload)]
    elif layout == "spaced":
        parts = ["{ " + json.dumps(p)[1:-1] + " }" for p in (header, payload)]
    else:
        parts = [json.dumps(p, **_JOSE_LAYOUTS[layout]) for p in (header, payload)]  # type: ignore[arg-type]
    return ".".join([b64url(parts[0].encode()), b64url(parts[1].encode()), b64url(rng.randbytes(32))])


GENERATORS["jwt_layout"] = lambda rng, arg: jwt_layout(rng, arg or "indent")


# ---- cloud, messaging, payments and SaaS credentials -------------------------------------------

_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"  # the bech32 alphabet (BIP 173)


def bech32_encode(hrp: str, data: bytes) -> str:
    """``data`` in bech32 (BIP 173) under the human-readable part ``hrp``, lower case."""
    acc, bits, words = 0, 0, []
    for byte in data:
        acc, bits = (acc << 8) | byte, bits + 8
        while bits >= 5:
            bits -= 5
            words.append((acc >> bits) & 31)
    if bits:
        words.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    polymod = bech32_polymod(expanded + words + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_BECH32[w] for w in words + checksum)


def age_secret_key(rng: random.Random) -> str:
    """An age X25519 identity: ``AGE-SECRET-KEY-1`` and 32 random bytes in upper-case bech32, checksum correct."""
    return bech32_encode("age-secret-key-", rng.randbytes(32)).upper()


def wireguard_key(rng: random.Random, arg: str = "") -> str:
    """A WireGuard private key as ``wg genkey`` writes it: 32 random bytes clamped for X25519, in
    base64 (``arg`` "unclamped": with its lowest bit set, as a key from another tool may be;
    "random": 32 random bytes, as a preshared or public key is)."""
    key = bytearray(rng.randbytes(32))
    if arg == "random":
        return base64.b64encode(bytes(key)).decode()
    key[0] &= 0xF8
    key[31] = (key[31] & 0x7F) | 0x40
    if arg == "unclamped":
        key[0] |= 1
    return base64.b64encode(bytes(key)).decode()


def gcp_service_account(rng: random.Random, style: str = "") -> str:
    """A GCP service-account key file whose ``private_key`` is a real RSA key.

    ``style``: ``""`` as downloaded (indented), ``compact`` (one line), ``sorted`` (keys sorted, as
    some tools print it), ``escaped`` (the compact JSON as a JSON string body, inside a tool output).
    """
    project = "proj-" + _chars(rng, string.ascii_lowercase + string.digits, 8)
    account = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": _chars(rng, "0123456789abcdef", 40),
        "private_key": private_key_pem("rsa-pkcs8"),
        "client_email": f"deployer@{project}.iam.gserviceaccount.com",
        "client_id": _chars(rng, string.digits, 21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
        "universe_domain": "googleapis.com",
    }
    if style == "compact":
        return json.dumps(account)
    if style == "sorted":
        return json.dumps(account, indent=2, sort_keys=True)
    if style == "escaped":
        return json.dumps(json.dumps(account))[1:-1]
    return json.dumps(account, indent=2)


def discord_snowflake(rng: random.Random) -> str:
    """A Discord id (snowflake) minted between 2017 and 2024."""
    millis = rng.randrange(1_483_228_800_000, 1_704_067_200_000) - 1_420_070_400_000
    return str(millis << 22 | rng.randrange(1 << 22))


def discord_bot_token(rng: random.Random) -> str:
    """A Discord bot token: base64 of the bot's user id, a timestamp part and an HMAC part."""
    user = b64url(discord_snowflake(rng).encode())
    return f"{user}.{_chars(rng, B64URL, 6)}.{_chars(rng, B64URL, 38)}"


def slack_token(rng: random.Random, kind: str = "bot") -> str:
    """A Slack token or webhook path of the documented shapes (``bot``, ``user``, ``app``, ``config``, ``webhook``)."""
    team = _chars(rng, string.digits, 12)
    if kind == "user":
        return (f"xoxp-{team}-{_chars(rng, string.digits, 12)}-{_chars(rng, string.digits, 13)}-"
                f"{_chars(rng, '0123456789abcdef', 32)}")
    if kind == "app":
        return (f"xapp-1-A{_chars(rng, string.ascii_uppercase + string.digits, 10)}-{_chars(rng, string.digits, 13)}-"
                f"{_chars(rng, '0123456789abcdef', 64)}")
    if kind == "config":
        return "xoxe.xoxp-1-" + _mixed(rng, 166)
    if kind == "webhook":
        upper = string.ascii_uppercase + string.digits
        return f"T{_chars(rng, upper, 10)}/B{_chars(rng, upper, 10)}/{_mixed(rng, 24)}"
    return f"xoxb-{team}-{_chars(rng, string.digits, 13)}-{_mixed(rng, 24)}"


def sentry_org_token(rng: random.Random, org: str = "acme") -> str:
    """A Sentry organisation auth token: ``sntrys_``, base64 JSON naming the org and region, ``_`` and the secret."""
    payload = {"iat": 1_700_000_000.5, "url": "https://sentry.io", "region_url": "https://us.sentry.io",
               "org": org or "acme"}
    return "sntrys_" + base64.b64encode(json.dumps(payload).encode()).decode() + "_" + _chars(rng, B64, 43)


def grafana_cloud_token(rng: random.Random) -> str:
    """A Grafana Cloud access policy token: ``glc_`` and base64 JSON with the org, name, key and region."""
    payload = {"o": _chars(rng, string.digits, 6), "n": "stack-" + _chars(rng, string.digits, 6) + "-deploy",
               "k": _mixed(rng, 32), "m": {"r": "prod-us-east-0"}}
    return "glc_" + base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()


GENERATORS.update({
    "age": lambda rng, arg: age_secret_key(rng),
    "gcp_sa": lambda rng, arg: gcp_service_account(rng, arg),
    "azure_storage": lambda rng, arg: base64.b64encode(rng.randbytes(64)).decode(),
    "discord_bot": lambda rng, arg: discord_bot_token(rng),
    "discord_id": lambda rng, arg: discord_snowflake(rng),
    "slack": lambda rng, arg: slack_token(rng, arg or "bot"),
    "sentry": lambda rng, arg: sentry_org_token(rng, arg),
    "grafana_cloud": lambda rng, arg: grafana_cloud_token(rng),
    "jwt_role": lambda rng, arg: jwt(rng, exp=4_102_444_800, iss="supabase",
                                     ref=_chars(rng, string.ascii_lowercase, 20), role=arg or "service_role"),
    "upper_hex": lambda rng, arg: _chars(rng, "0123456789ABCDEF", int(arg or 32)),
    "upper_alnum": lambda rng, arg: _chars(rng, string.ascii_uppercase + string.digits, int(arg or 27)),
})


def password(rng: random.Random, n: int = 16) -> str:
    """A generated password: mixed-case alphanumerics and a few symbols that URLs, shells and
    YAML leave alone (no ``@ : / # ' "`` or spaces)."""
    while True:
        value = _mixed(rng, n - 2) + _chars(rng, "!%^*-_+=", 1) + _chars(rng, string.digits, 1)
        if value[0].isalnum():
            return value


def basic_credentials(rng: random.Random, user: str = "deploy") -> str:
    """Base64 of ``user:<generated password>``, as an ``Authorization: Basic`` header or a Docker
    ``auth`` field holds it."""
    return base64.b64encode(f"{user or 'deploy'}:{password(rng)}".encode()).decode()


GENERATORS.update({
    "password": lambda rng, arg: password(rng, int(arg or 16)),
    "basic": lambda rng, arg: basic_credentials(rng, arg),
    "wireguard": lambda rng, arg: wireguard_key(rng, arg),
    "uuid": lambda rng, arg: "-".join(_chars(rng, "0123456789abcdef", n) for n in (8, 4, 4, 4, 12)),
})
