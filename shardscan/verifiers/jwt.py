"""Verify JSON Web Tokens offline: structure, algorithm, signature length and time claims.

A JWS (three parts) is ``valid`` when its header and payload are base64url JSON, the header names
an ``alg``, the signature has the length that ``alg`` produces and ``exp`` is not past; it is
``expired`` when ``exp`` is before the verification clock (``--now``). A JWE (five parts) has an
encrypted payload, so its expiry is unknown: ``unverified`` when its parts are consistent with
its ``enc``. Unsigned tokens (``alg: none``) prove nothing by themselves and cannot be replayed
as a secret, so they are ``invalid`` as credentials.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from shardscan.model import Candidate, Severity, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import ago, as_timestamp, b64url_decode, day, json_object, printable_base64, safe_text
from shardscan.verifiers.example import hmac_signer
from shardscan.verifiers.placeholder import covered_by_words

# Signature sizes in bytes; RSA signatures are as long as the modulus.
_SIGNATURE_BYTES: dict[str, tuple[int, ...]] = {
    "HS256": (32,), "HS384": (48,), "HS512": (64,),
    "ES256": (64,), "ES256K": (64,), "ES384": (96,), "ES512": (132,),
    "EdDSA": (64, 114), "Ed25519": (64,), "Ed448": (114,),
}
_RSA_BYTES = (128, 192, 256, 384, 512, 1024)
for _alg in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"):
    _SIGNATURE_BYTES[_alg] = _RSA_BYTES

# JWE content encryption: (IV bytes, authentication tag bytes, ciphertext block size).
_JWE_ENC = {
    "A128GCM": (12, 16, 1), "A192GCM": (12, 16, 1), "A256GCM": (12, 16, 1),
    "A128CBC-HS256": (16, 16, 16), "A192CBC-HS384": (16, 24, 16), "A256CBC-HS512": (16, 32, 16),
}


def check_jwt(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Verdict for a JWS or JWE token; the clock is ``context.now``.

    A token signed with a placeholder key written in the same cell (``SECRET_KEY = "change-me"``
    above the token a test mints) is a test or tutorial token: anyone reading the cell can mint it.
    """
    outcome = verify_jwt(candidate.secret, context.now)
    if outcome.verdict in (Verdict.VALID, Verdict.UNVERIFIED, Verdict.EXPIRED):
        key = placeholder_key_in(candidate.secret, context.text)
        if key is not None:
            return Verification(Verdict.EXAMPLE, f"signed with a placeholder key written in the same cell "
                                                 f"({key[:4]!r}…): a test or tutorial token, anyone can mint it")
    return service_role_raise(outcome, candidate.secret)


# Quoted strings and assigned values: where code and configuration write a signing key.
_KEY_LITERALS = re.compile(r"""["'`]([^"'`\\\n]{4,100})\\?["'`]|[=:][ \t]*([^\s"'`,;)]{4,100})""")
_KEY_TEXT_LIMIT = 1 << 20
# The words placeholder keys are made of ("your-secret-key-change-in-production", "supersecretkey123",
# "test_jwt_secret"): a key made of these and digits alone carries nothing of its project.
_KEY_WORDS = frozenset(
    [
        "a", "an", "the", "my", "your", "our", "this", "that", "is", "it", "at", "in", "to", "of", "for", "and", "or",
        "with", "not", "no", "do", "dont", "only", "use", "me", "here", "please", "change", "changeme", "replace",
        "set", "own", "new", "some", "another", "any", "real", "very", "super", "long", "random", "string", "strong",
        "simple", "basic", "secret", "secrets", "key", "keys", "jwt", "jws", "token", "tokens", "sign", "signing",
        "hmac", "hs", "auth", "access", "refresh", "session", "api", "app", "password", "pass", "value", "test",
        "tests", "testing", "dev", "develop", "development", "local", "demo", "example", "sample", "dummy", "fake",
        "mock", "default", "insecure", "unsafe", "placeholder", "todo", "temp", "temporary", "production", "prod",
        "staging", "env", "environment", "config", "settings", "least", "bits", "bit", "characters", "chars", "char",
        "min", "minimum", "max", "foo", "bar", "baz", "hello", "world", "tutorial", "course", "practice", "project",
        "flask", "django", "fastapi", "express", "node", "server", "backend", "generate", "generated", "unit", "used",
        "which", "should", "be", "changed", "encoded", "base", "fixture", "fixtures"
    ]
)
_KEY_MARKS = frozenset(["secret", "secrets", "key", "keys", "jwt", "token", "signing", "hmac", "password", "pass"])


def placeholder_key_in(token: str, text: str) -> str | None:
    """A placeholder-like string of ``text`` that the HS256/384/512 token's signature verifies with, if any."""
    signs = hmac_signer(token) if text else None
    if signs is None:
        return None
    return next((shown for shown, keys in _placeholder_keys(text) if any(signs(key) for key in keys)), None)


# Placeholder keys a cell may hold: at most this many are tried against each token.
MAX_KEYS = 256


@lru_cache(maxsize=2)
def _placeholder_keys(text: str) -> tuple[tuple[str, tuple[bytes, ...]], ...]:
    """The placeholder-like strings of a cell, each with the keys to try: found once per cell
    (a cell holding thousands of tokens is searched once, not once per token)."""
    found: dict[str, tuple[bytes, ...]] = {}
    for match in _KEY_LITERALS.finditer(text, 0, _KEY_TEXT_LIMIT):
        key = match.group(1) or match.group(2)
        if key in found:
            continue
        # Frameworks take the key base64-encoded (JHipster's base64-secret), and some tests sign
        # with the encoded text itself: a key that encodes a generic phrase is tried both ways.
        if _generic_phrase(key):
            found[key] = (key.encode("utf-8", "replace"),)
        elif len(key) >= 16 and (phrase := printable_base64(key)) is not None and _generic_phrase(phrase):
            found[key] = (phrase.encode("ascii"), key.encode("ascii"))
        if len(found) >= MAX_KEYS:
            break
    return tuple(found.items())


def _generic_phrase(key: str) -> bool:
    """Whether ``key`` is only generic words (one naming a secret) and short digit runs."""
    digits = [run for run in re.findall(r"[0-9]{7,}", key) if run not in "012345678901234567890"]
    if digits or re.search(r"[^A-Za-z0-9 _.!\-]", key):
        return False
    words: list[str] = []
    for segment in re.findall(r"[A-Za-z]+", key):
        covered, pieces = covered_by_words(segment.lower(), _KEY_WORDS)
        if covered != len(segment):
            return False
        words += pieces
    return any(word in _KEY_MARKS for word in words)



def verify_jwt(token: str, now: datetime, what: str = "JWT") -> Verification:
    """Judge one compact-serialised token against the clock ``now`` (UTC when it has no timezone)."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    parts = token.split(".")
    if len(parts) == 5:
        return _verify_jwe(parts, now)
    if len(parts) != 3:
        return Verification(Verdict.INVALID, f"{len(parts)} dot-separated parts (a JWS has 3, a JWE 5), not a {what}")
    header = json_object(b64url_decode(parts[0]))
    if header is None:
        return Verification(Verdict.INVALID, f"header is not base64url JSON, not a {what}")
    alg = header.get("alg")
    if not isinstance(alg, str) or not alg:
        return Verification(Verdict.INVALID, f"header has no 'alg', not a {what}")
    alg_shown = safe_text(alg, 16)
    payload = json_object(b64url_decode(parts[1]))
    if payload is None:
        return Verification(Verdict.INVALID, f"{alg_shown} {what} whose payload is not base64url JSON, not a usable "
                                             "token")
    summary = _summary(alg_shown, what, payload)
    times = _time_claims(payload)
    if times.problem is not None:
        # Whether the issuer's server accepts such a claim is unknown: stay on the blocking side.
        return Verification(Verdict.UNVERIFIED, f"{summary}, {times.problem}; expiry unknown")
    exp, nbf = times.exp, times.nbf
    issued = as_timestamp(payload.get("iat"))
    if exp is not None and exp <= now:
        return Verification(Verdict.EXPIRED, f"{summary}, expired {day(exp)} ({ago(exp, now)})")
    signature = parts[2]
    if alg.lower() == "none":
        if signature:
            return Verification(Verdict.INVALID, f"{summary}: alg none with a signature part, malformed")
        return Verification(Verdict.INVALID, f"{summary}: unsigned (alg none), grants nothing by itself")
    raw_signature = b64url_decode(signature)
    if not signature:
        return Verification(Verdict.INVALID, f"{summary}: signature part is empty (stripped), not usable")
    if raw_signature is None:
        return Verification(Verdict.INVALID, f"{summary}: signature is not base64url, not usable")
    if len(raw_signature) >= 16 and all(0x20 <= b < 0x7F for b in raw_signature):
        # A MAC or signature is random bytes: 16 of them are all printable once in ten million.
        # Test fixtures write one as text ("fake-signature-for-tests...").
        return Verification(Verdict.INVALID, f"{summary}: the signature is readable text, not a signature (a fixture)")
    expected = _SIGNATURE_BYTES.get(alg)
    if expected is not None and len(raw_signature) not in expected:
        sizes = "/".join(str(n) for n in expected[:3]) + ("…" if len(expected) > 3 else "")
        return Verification(
            Verdict.INVALID, f"{summary}: {len(raw_signature)}-byte signature, {alg_shown} signs with {sizes} bytes "
                             "(mangled)"
        )
    when = _validity(exp, nbf, now, issued)
    if expected is None:
        return Verification(Verdict.UNVERIFIED, f"{summary}, {when}; signature length unchecked for this alg")
    return Verification(Verdict.VALID, f"{summary}, {when}")


def _summary(alg: str, what: str, payload: dict[str, Any]) -> str:
    pieces = [f"{alg} {what}"]
    for claim in ("iss", "aud"):
        value = payload.get(claim)
        if isinstance(value, list):
            value = ",".join(str(v) for v in value[:3])
        if value not in (None, ""):
            pieces.append(f"{claim}={safe_text(value)}")
    return ", ".join(pieces)


@dataclass(frozen=True, slots=True)
class TimeClaims:
    """A token's ``exp`` and ``nbf`` (None when absent), or the problem that makes them unreadable."""

    exp: datetime | None = None
    nbf: datetime | None = None
    # Set when a present claim is not a NumericDate; ``exp`` and ``nbf`` are then not read.
    problem: str | None = None


def _time_claims(payload: dict[str, Any]) -> TimeClaims:
    """``exp`` and ``nbf`` as datetimes, or the problem when a present claim is not a NumericDate."""
    out: list[datetime | None] = []
    for claim in ("exp", "nbf"):
        value = payload.get(claim)
        if value is None:
            out.append(None)
            continue
        moment = as_timestamp(value)
        if moment is None:
            return TimeClaims(problem=f"'{claim}' is not a NumericDate")
        out.append(moment)
    return TimeClaims(exp=out[0], nbf=out[1])


def _validity(exp: datetime | None, nbf: datetime | None, now: datetime, issued: datetime | None) -> str:
    if nbf is not None and nbf > now:
        return f"not valid before {day(nbf)} ({ago(nbf, now)})" + (f", expires {day(exp)}" if exp else "")
    if exp is None:
        return "no expiry (no exp claim)" + (f", issued {day(issued)} ({ago(issued, now)})" if issued else "")
    return f"expires {day(exp)} ({ago(exp, now)})"


def _verify_jwe(parts: list[str], now: datetime) -> Verification:
    header = json_object(b64url_decode(parts[0]))
    if header is None or not isinstance(header.get("alg"), str) or not isinstance(header.get("enc"), str):
        return Verification(Verdict.INVALID, "five parts but the header is not base64url JSON with alg and enc, not a "
                                             "JWE")
    alg, enc = header["alg"], header["enc"]
    shown = f"JWE ({safe_text(alg, 20)}, {safe_text(enc, 20)})"
    decoded = [d for d in (b64url_decode(p) for p in parts[1:]) if d is not None]
    if len(decoded) != 4:
        return Verification(Verdict.INVALID, f"{shown} with a part that is not base64url, malformed")
    key, iv, ciphertext, tag = decoded
    if alg == "dir" and key:
        return Verification(Verdict.INVALID, f"{shown}: direct encryption must have an empty key part, malformed")
    sizes = _JWE_ENC.get(enc)
    if sizes is not None:
        iv_bytes, tag_bytes, block = sizes
        if len(iv) != iv_bytes or len(tag) != tag_bytes or len(ciphertext) % block or not ciphertext:
            return Verification(
                Verdict.INVALID,
                f"{shown}: IV {len(iv)} bytes, tag {len(tag)} bytes; {safe_text(enc, 20)} uses {iv_bytes} and "
                f"{tag_bytes} (mangled)",
            )
    payload = f"{shown}, {len(ciphertext)}-byte encrypted payload"
    return _jwe_header_times(header, now, payload) or Verification(
        Verdict.UNVERIFIED, f"{payload}: expiry cannot be read offline"
    )


def _jwe_header_times(header: dict[str, Any], now: datetime, shown: str) -> Verification | None:
    """The verdict a JWE's protected header gives by its own time claims, or None when it has none.

    Some issuers copy ``exp``/``nbf``/``iat`` into the protected header, which is readable without
    the key (Auth0's ``alg: dir`` session cookies; RFC 7516 section 5.3 allows replicated claims).
    The header is authenticated with the payload, so its expiry is the token's. Only ``exp`` decides
    the verdict: a token with ``iat`` alone may live for ever, and stays ``unverified``.
    """
    times = _time_claims(header)
    if times.problem is not None:
        return None  # an unreadable claim proves nothing: the token stays unverified, blocking
    exp, nbf = times.exp, times.nbf
    issued = as_timestamp(header.get("iat"))
    if exp is None and nbf is None and issued is None:
        return None
    if exp is not None and exp <= now:
        return Verification(Verdict.EXPIRED, f"{shown}, expired {day(exp)} ({ago(exp, now)}) by its protected header")
    when = _validity(exp, nbf, now, issued)
    return Verification(Verdict.UNVERIFIED, f"{shown}, {when} by its protected header")


# Verdicts under which a JWT may still be accepted: a service-role token then grants everything.
_LIVE = (Verdict.VALID, Verdict.UNVERIFIED)


def service_role_raise(outcome: Verification, token: str) -> Verification:
    """``outcome`` raised to critical when the token's ``role`` claim is ``service_role``.

    Supabase (and PostgREST setups modelled on it) sign a service-role JWT that bypasses
    row-level security: the whole database, not one user's session.
    """
    if outcome.verdict not in _LIVE:
        return outcome
    parts = token.split(".")
    payload = json_object(b64url_decode(parts[1])) if len(parts) == 3 else None
    if payload is None or payload.get("role") != "service_role":
        return outcome
    return Verification(outcome.verdict, f"{outcome.detail}; role service_role: a Supabase service key, bypasses "
                                         "row-level security", canonical=outcome.canonical,
                        severity=Severity.CRITICAL)
