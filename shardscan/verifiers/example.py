"""Recognise credential values published in documentation (``known_examples.yaml``): verdict ``example``."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from shardscan.errors import ConfigError
from shardscan.model import Candidate, Verdict, Verification
from shardscan.safe_yaml import SAFE_LOADER
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import b64url_decode, json_object, safe_text

EXAMPLES_FILE = Path(__file__).with_name("known_examples.yaml")
_LABEL = "shardscan/verifiers/known_examples.yaml"
_Value = TypeVar("_Value")


@dataclass(frozen=True, slots=True)
class ExamplePattern:
    """Documented values of a kind given as a pattern (a family of sample keys), and their name."""

    kind: str
    pattern: re.Pattern[str]
    name: str


@dataclass(frozen=True, slots=True)
class NamedValue(Generic[_Value]):
    """A documented sample (a JWT payload, an HMAC secret) and its name."""

    value: _Value
    name: str


@dataclass(frozen=True, slots=True)
class KnownExamples:
    """The documented values, indexed for constant-time lookup."""

    values: dict[tuple[str, str], str]  # (kind, sha256 hex of the value) -> name
    patterns: tuple[ExamplePattern, ...]
    jwt_claims: tuple[NamedValue[dict[str, Any]], ...]  # documented payloads
    hmac_secrets: tuple[NamedValue[bytes], ...] = ()  # documented HMAC secrets
    # The signature segments of the documented JWTs (``value`` entries of kind jwt), by name.
    jwt_signatures: dict[str, str] = field(default_factory=dict)
    # Published test private keys: the SHA-256 of their key material (DER, or the OpenSSH blob), by name.
    key_digests: dict[str, str] = field(default_factory=dict)

    def lookup(self, secret: str, kind: str) -> str | None:
        """The example's name when ``secret`` is a documented value of ``kind``."""
        name = self.values.get((kind, _sha256(secret)))
        if name:
            return name
        for documented in self.patterns:
            if documented.kind == kind and documented.pattern.fullmatch(secret):
                return documented.name
        if kind == "jwt":
            return self.lookup_claims(secret) or self.lookup_hmac_secret(secret) or self.lookup_signature(secret)
        return None

    def lookup_signature(self, token: str) -> str | None:
        """A documented token's signature over another header or payload: a sample edited by hand
        (models writing test fixtures paste jwt.io's signature onto their own claims). It verifies
        with no key, so the token is not a credential."""
        parts = token.split(".")
        name = self.jwt_signatures.get(parts[2]) if len(parts) == 3 and parts[2] else None
        return f"the signature of the {name}, over other claims" if name else None

    def lookup_hmac_secret(self, token: str) -> str | None:
        """The documented secret's name when the JWT's HMAC signature verifies with it."""
        signs = hmac_signer(token) if self.hmac_secrets else None
        if signs is None:
            return None
        for secret in self.hmac_secrets:
            if signs(secret.value):
                return f"{secret.name}, signature verifies with {safe_text(secret.value.decode(), 40)!r}"
        return None

    def lookup_claims(self, token: str) -> str | None:
        """The example's name when the JWT's payload is a documented sample payload."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        payload = json_object(b64url_decode(parts[1]))
        if payload is None:
            return None
        for claims in self.jwt_claims:
            if payload == claims.value:
                return claims.name
        return None


_HMAC_DIGESTS = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}


def hmac_signer(token: str) -> Callable[[bytes], bool] | None:
    """For an HS256/384/512 JWT, a test of whether a key produced its signature; None for other tokens."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    header = json_object(b64url_decode(parts[0]))
    alg = header.get("alg") if header else None
    digest = _HMAC_DIGESTS.get(alg) if isinstance(alg, str) else None
    signature = b64url_decode(parts[2])
    if digest is None or not signature:
        return None
    signed = f"{parts[0]}.{parts[1]}".encode("ascii", "replace")
    return lambda key: hmac.compare_digest(hmac.new(key, signed, digest).digest(), signature)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def parse_examples(data: object, label: str = _LABEL) -> KnownExamples:
    """Validate the raw YAML of an examples file; ConfigError names the file and the entry."""
    if not isinstance(data, dict) or not isinstance(data.get("examples"), list):
        raise ConfigError(f"{label}: expected a mapping with an 'examples' list")
    values: dict[tuple[str, str], str] = {}
    patterns: list[ExamplePattern] = []
    claims: list[NamedValue[dict[str, Any]]] = []
    secrets: list[NamedValue[bytes]] = []
    signatures: dict[str, str] = {}
    keys: dict[str, str] = {}
    for i, entry in enumerate(data["examples"], start=1):
        where = f"{label}: example #{i}"
        if not (isinstance(entry, dict) and isinstance(entry.get("kind"), str) and isinstance(entry.get("name"), str)):
            raise ConfigError(f"{where}: needs 'kind' and 'name' strings")
        given = [k for k in _ENTRY_TYPES if k in entry]
        if len(given) != 1:
            raise ConfigError(f"{where}: needs exactly one of {', '.join(_ENTRY_TYPES)}")
        kind, name, how = entry["kind"], entry["name"], given[0]
        raw = entry[how]
        if how == "value" and isinstance(raw, str) and raw:
            values[(kind, _sha256(raw))] = name
            if kind == "jwt" and raw.count(".") == 2:
                signatures[raw.rsplit(".", 1)[1]] = name
        elif how == "fingerprint" and isinstance(raw, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", raw):
            values[(kind, raw.removeprefix("sha256:"))] = name
        elif how == "pattern" and isinstance(raw, str):
            try:
                patterns.append(ExamplePattern(kind, re.compile(raw), name))
            except re.error as exc:
                raise ConfigError(f"{where}: pattern does not compile: {exc}") from None
        elif how == "jwt_claims" and isinstance(raw, dict):
            claims.append(NamedValue(raw, name))
        elif how == "jwt_hmac_secret" and isinstance(raw, str) and raw:
            secrets.append(NamedValue(raw.encode(), name))
        elif how == "key_sha256" and isinstance(raw, str) and re.fullmatch(r"[0-9a-f]{64}", raw):
            keys[raw] = name
        else:
            raise ConfigError(f"{where}: '{how}' has the wrong type")
    return KnownExamples(values, tuple(patterns), tuple(claims), tuple(secrets), signatures, keys)


_ENTRY_TYPES = ("value", "fingerprint", "pattern", "jwt_claims", "jwt_hmac_secret", "key_sha256")


@lru_cache(maxsize=1)
def known_examples() -> KnownExamples:
    """The built-in list, loaded once."""
    try:
        data = yaml.load(EXAMPLES_FILE.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{_LABEL}: cannot load ({type(exc).__name__})") from None
    return parse_examples(data)


def check_example(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """``example`` when the secret is a documented value of the rule's kind; no opinion otherwise."""
    name = known_examples().lookup(candidate.secret, context.kind)
    if name is None:
        return None
    return Verification(Verdict.EXAMPLE, f"published documentation value ({name}), not a live credential")
