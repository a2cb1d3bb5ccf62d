"""JWT verifier: tokens built at test time with controlled claims, judged against a fixed clock."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from shardscan.model import Verdict
from shardscan.synth import b64url
from tests.verifier_helpers import findings, only, verify

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SIGNATURE_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64, "RS256": 256, "ES256": 64, "ES384": 96, "EdDSA": 64}


def make_jwt(payload: dict, alg: str = "HS256", signature_bytes: int | None = None, header: dict | None = None) -> str:
    rng = random.Random(json.dumps(payload, sort_keys=True) + alg)
    head = header if header is not None else {"alg": alg, "typ": "JWT"}
    size = SIGNATURE_BYTES.get(alg, 32) if signature_bytes is None else signature_bytes
    return ".".join([b64url(json.dumps(head).encode()), b64url(json.dumps(payload).encode()),
                     b64url(rng.randbytes(size))])


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def test_documented_detail_for_an_expired_token():
    token = make_jwt({"iss": "auth.example.com", "sub": "42", "exp": ts("2019-06-05T10:00:00")})
    outcome = verify(token, "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (
        Verdict.EXPIRED, "HS256 JWT, iss=auth.example.com, expired 2019-06-05 (7 years ago)"
    )


@pytest.mark.parametrize("alg", sorted(SIGNATURE_BYTES))
def test_well_formed_unexpired_token_is_valid(alg):
    token = make_jwt({"iss": "auth.example.com", "aud": ["api", "web"], "exp": ts("2027-01-01T00:00:00")}, alg)
    outcome = verify(token, "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (
        Verdict.VALID, f"{alg} JWT, iss=auth.example.com, aud=api,web, expires 2027-01-01 (in 29 days)"
    )


@pytest.mark.slow
def test_expiry_follows_the_clock():
    token = make_jwt({"exp": ts("2026-07-27T00:00:00")})
    assert verify(token, "jwt", datetime(2026, 7, 26, tzinfo=UTC)).verdict == Verdict.VALID
    assert verify(token, "jwt", datetime(2026, 7, 28, tzinfo=UTC)).verdict == Verdict.EXPIRED
    assert verify(token, "jwt", datetime(2026, 7, 27, tzinfo=UTC)).verdict == Verdict.EXPIRED  # exp is exclusive


@pytest.mark.slow
def test_a_clock_without_timezone_is_utc():
    """The library takes ``now`` as given; a naive datetime must not break the time checks."""
    from shardscan.engine import Scanner, ScanOptions
    from shardscan.ruleset import load_ruleset

    token = make_jwt({"exp": ts("2026-07-27T00:00:00")})
    for now, verdict in ((datetime(2026, 7, 26), Verdict.VALID), (datetime(2026, 7, 28), Verdict.EXPIRED)):
        [finding], _ = Scanner(load_ruleset(), ScanOptions(now=now)).scan_text(f"Bearer {token}")
        assert finding.verdict == verdict, finding.detail
        assert verify(token, "jwt", now).verdict == verdict


def test_not_yet_valid_token_is_valid_and_says_when():
    token = make_jwt({"nbf": ts("2027-03-01T00:00:00"), "exp": ts("2027-04-01T00:00:00")})
    outcome = verify(token, "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (
        Verdict.VALID, "HS256 JWT, not valid before 2027-03-01 (in 2 months), expires 2027-04-01"
    )


def test_token_without_exp_is_valid():
    outcome = verify(make_jwt({"sub": "svc"}), "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (Verdict.VALID, "HS256 JWT, no expiry (no exp claim)")
    outcome = verify(make_jwt({"sub": "svc", "iat": ts("2024-03-01T00:00:00")}), "jwt", NOW)
    assert outcome.detail == "HS256 JWT, no expiry (no exp claim), issued 2024-03-01 (2 years ago)"


def test_supabase_local_development_keys_are_examples():
    for role in ("anon", "service_role"):
        token = make_jwt({"iss": "supabase-demo", "role": role, "exp": 1983812996})
        finding = only(f"SUPABASE_KEY={token}", "jwt")
        assert finding.verdict == Verdict.EXAMPLE
        assert "Supabase local-development" in finding.detail
    assert only("k=" + make_jwt({"iss": "supabase-demo", "role": "admin", "exp": 1983812996}),
                "jwt").verdict == Verdict.VALID


def test_signature_length_must_match_alg():
    outcome = verify(make_jwt({"sub": "1"}, "HS256", signature_bytes=20), "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "HS256 JWT: 20-byte signature, HS256 signs with 32 bytes (mangled)"
    )
    assert verify(make_jwt({"sub": "1"}, "RS256", signature_bytes=100), "jwt", NOW).verdict == Verdict.INVALID
    assert verify(make_jwt({"sub": "1"}, "RS256", signature_bytes=512), "jwt", NOW).verdict == Verdict.VALID


def test_alg_none_is_not_a_credential():
    token = make_jwt({"sub": "1"}, header={"alg": "none"}).rsplit(".", 1)[0] + "."
    outcome = verify(token, "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (Verdict.INVALID, "none JWT: unsigned (alg none), grants nothing by "
                                                                  "itself")


def test_empty_signature_is_invalid():
    token = make_jwt({"sub": "1"}).rsplit(".", 1)[0] + "."
    assert verify(token, "jwt", NOW).detail == "HS256 JWT: signature part is empty (stripped), not usable"


@pytest.mark.parametrize(
    "token, detail",
    [
        (b64url(b"not json") + "." + b64url(b'{"a":1}') + ".abc", "header is not base64url JSON, not a JWT"),
        (b64url(b'{"typ":"JWT"}') + "." + b64url(b'{"a":1}') + ".abc", "header has no 'alg', not a JWT"),
        (b64url(b'{"alg":"HS256"}') + "." + b64url(b"\xff\xfe") + ".abc",
         "HS256 JWT whose payload is not base64url JSON, not a usable token"),
    ],
)
def test_malformed_tokens_are_invalid(token, detail):
    outcome = verify(token, "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (Verdict.INVALID, detail)


def test_unreadable_exp_is_unverified_not_dismissed():
    outcome = verify(make_jwt({"exp": "tomorrow"}), "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (
        Verdict.UNVERIFIED, "HS256 JWT, 'exp' is not a NumericDate; expiry unknown"
    )


def test_exp_in_milliseconds_is_read_as_such():
    assert verify(make_jwt({"exp": ts("2019-06-05T00:00:00") * 1000}), "jwt", NOW).verdict == Verdict.EXPIRED
    outcome = verify(make_jwt({"exp": ts("2027-06-05T00:00:00") * 1000}), "jwt", NOW)
    assert (outcome.verdict, outcome.detail) == (Verdict.VALID, "HS256 JWT, expires 2027-06-05 (in 6 months)")


def test_jwe_is_recognised():
    header = b64url(json.dumps({"alg": "dir", "enc": "A256GCM"}).encode())
    rng = random.Random(7)
    token = ".".join([header, "", b64url(rng.randbytes(12)), b64url(rng.randbytes(90)), b64url(rng.randbytes(16))])
    finding = only(f"session={token}", "jwe")
    assert (finding.verdict, finding.detail) == (
        Verdict.UNVERIFIED, "JWE (dir, A256GCM), 90-byte encrypted payload: expiry cannot be read offline"
    )
    broken = ".".join([header, "", b64url(rng.randbytes(9)), b64url(rng.randbytes(90)), b64url(rng.randbytes(16))])
    assert verify(broken, "jwe", NOW).verdict == Verdict.INVALID


def test_jwt_io_sample_is_an_example_whatever_its_signature():
    payload = {"sub": "1234567890", "name": "John Doe", "iat": 1516239022}
    token = make_jwt(payload)
    finding = only(f"Authorization: Bearer {token}", "jwt")
    assert finding.verdict == Verdict.EXAMPLE
    assert finding.severity == "info"
    assert "jwt.io sample token" in finding.detail


@pytest.mark.parametrize("sample", ["jwt.io sample token", "jwt.io sample token (2024 edition)"])
def test_documented_signature_over_edited_claims_is_an_example(sample):
    """A model writing a fixture keeps jwt.io's token and edits its payload: no key verifies it."""
    import yaml

    from shardscan.verifiers.example import EXAMPLES_FILE

    entries = yaml.safe_load(EXAMPLES_FILE.read_text(encoding="utf-8"))["examples"]
    [documented] = [e["value"] for e in entries if e["name"] == sample and "value" in e]
    header, _, signature = documented.split(".")
    token = ".".join([header, b64url(json.dumps({"sub": "user123", "role": "admin"}).encode()), signature])
    finding = only(f"const token = '{token}';", "jwt")
    assert finding.verdict == Verdict.EXAMPLE
    assert f"the signature of the {sample}, over other claims" in finding.detail
    # The same claims under another signature are a token like any other.
    forged = ".".join([header, token.split(".")[1], b64url(random.Random(5).randbytes(32))])
    assert only(f"const token = '{forged}';", "jwt").verdict == Verdict.VALID


def test_signature_that_reads_as_text_is_a_fixture():
    head = b64url(json.dumps({"alg": "HS256",
                              "typ": "JWT"}).encode()) + "." + b64url(json.dumps({"sub": "u1"}).encode())
    token = head + "." + b64url(b"fake-signature-for-tests-only-32")
    outcome = verify(token, "jwt", NOW)
    assert outcome.verdict == Verdict.INVALID
    assert outcome.detail.endswith("the signature is readable text, not a signature (a fixture)")
    # 32 random bytes: a signature.
    assert verify(head + "." + b64url(random.Random(9).randbytes(32)), "jwt", NOW).verdict == Verdict.VALID


def test_claims_in_the_detail_are_masked_and_bounded():
    secretish = "Zk9vQmFyQmF6UXV4UXV1eENvcmdlR3JhdWx0"
    outcome = verify(make_jwt({"iss": secretish, "aud": "x" * 300}), "jwt", NOW)
    assert secretish not in outcome.detail
    assert len(outcome.detail) < 200


def test_expired_and_valid_jwt_severities_through_the_detector():
    expired = only("token=" + make_jwt({"exp": ts("2020-01-01T00:00:00")}), "jwt", NOW)
    live = only("token=" + make_jwt({"exp": ts("2030-01-01T00:00:00")}), "jwt", NOW)
    assert (expired.verdict, expired.severity) == (Verdict.EXPIRED, "low")
    assert (live.verdict, live.severity) == (Verdict.VALID, "high")


def _signed(payload: dict, key: bytes, alg: str = "HS256") -> str:
    import hashlib
    import hmac

    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode()) + "." + b64url(json.dumps(payload).encode())
    return head + "." + b64url(hmac.new(key, head.encode(), digest).digest())


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_token_signed_with_a_documented_secret_is_an_example(alg):
    token = _signed({"user_id": 7, "exp": ts("2030-01-01T00:00:00")}, b"your-256-bit-secret", alg)
    finding = only(f"Bearer {token}", "jwt")
    assert (finding.verdict, finding.severity) == (Verdict.EXAMPLE, "info")
    assert "signature verifies with 'your-256-bit-secret'" in finding.detail


@pytest.mark.parametrize("secret", [b"test-secret", b"secret-key", b"jwt_secret"])
def test_token_signed_with_a_test_suite_secret_is_an_example(secret):
    token = _signed({"sub": "user-1"}, secret)
    finding = only(f"Authorization: Bearer {token}", "jwt")
    assert finding.verdict == Verdict.EXAMPLE
    assert f"signature verifies with '{secret.decode()}'" in finding.detail


@pytest.mark.parametrize("key", ["please-change-this-secret", "supersecretkey123", "test_jwt_secret",
                                 "dev-signing-key-2024", "MySuperSecret"])
def test_token_signed_with_a_placeholder_key_written_in_the_same_cell_is_an_example(key):
    """Models writing auth code mint a token right under their SECRET_KEY: anyone can mint it again."""
    token = _signed({"sub": "alice", "exp": ts("2030-01-01T00:00:00")}, key.encode())
    for cell in (f'SECRET_KEY = "{key}"\ntoken = jwt.encode(claims, SECRET_KEY)\nprint(token)  # {token}',
                 f"JWT_SECRET={key}\n$ curl -H 'Authorization: Bearer {token}' localhost:8000/me"):
        finding = only(cell, "jwt")
        assert finding.verdict == Verdict.EXAMPLE, finding.detail
        assert finding.detail == (f"signed with a placeholder key written in the same cell ({key[:4]!r}…): "
                                  "a test or tutorial token, anyone can mint it")
    # Elsewhere the key is unknown, and the token is judged on its own.
    assert only(f"Authorization: Bearer {token}", "jwt").verdict == Verdict.VALID


@pytest.mark.parametrize("decoded", [True, False])
def test_a_base64_key_encoding_a_placeholder_phrase_counts_either_way(decoded):
    """JHipster takes its key as base64-secret: the phrase is decoded first (some tests sign with the text)."""
    import base64

    phrase = "my-secret-key-which-should-be-changed-in-production-and-be-base64-encoded"
    encoded = base64.b64encode(phrase.encode()).decode()
    token = _signed({"sub": "admin", "auth": "ROLE_ADMIN"}, (phrase if decoded else encoded).encode(), "HS512")
    cell = f"jhipster:\n  security:\n    authentication:\n      jwt:\n        base64-secret: {encoded}\nBearer {token}"
    assert only(cell, "jwt").verdict == Verdict.EXAMPLE


def test_a_cell_of_many_tokens_is_searched_for_keys_once():
    """The cell's key literals are found once, not once per token (a hostile cell holding thousands
    of tokens would otherwise be scanned thousands of times)."""
    from shardscan.verifiers import jwt as jwt_verifier

    tokens = [_signed({"sub": f"user-{i}"}, b"supersecretkey123") for i in range(50)]
    cell = 'SECRET_KEY = "supersecretkey123"\n' + "\n".join(f"token {i}: {t}" for i, t in enumerate(tokens))
    jwt_verifier._placeholder_keys.cache_clear()
    # (The key's own assignment is a generic secret, a placeholder: not blocking.)
    assert [f.verdict for f in findings(cell) if f.kind == "jwt"] == [Verdict.EXAMPLE] * 50
    assert jwt_verifier._placeholder_keys.cache_info().misses == 1


@pytest.mark.parametrize("key", ["acme-prod-signing-key", "Zq8rT2vLw9kP", "k3y-9f8e7d6c5b4a"])
def test_a_key_with_anything_of_its_own_in_the_same_cell_keeps_the_token_blocking(key):
    """A key naming its project, or random, may well be the real one: the token stays a credential."""
    token = _signed({"sub": "alice", "exp": ts("2030-01-01T00:00:00")}, key.encode())
    assert only(f'SECRET_KEY = "{key}"\nBearer {token}', "jwt").verdict == Verdict.VALID


def test_fastapi_tutorial_key_is_documented():
    token = _signed({"sub": "johndoe"}, b"09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7")
    assert "FastAPI tutorial HMAC secret" in only(f"Bearer {token}", "jwt").detail


def test_token_signed_with_an_unknown_secret_is_valid():
    token = _signed({"user_id": 7, "exp": ts("2030-01-01T00:00:00")}, random.Random(3).randbytes(32))
    assert only(f"Bearer {token}", "jwt").verdict == Verdict.VALID


def test_examples_file_errors_name_the_entry():
    from shardscan.errors import ConfigError
    from shardscan.verifiers.example import parse_examples

    with pytest.raises(ConfigError, match=r"known_examples.yaml: example #2: needs exactly one of"):
        parse_examples({"examples": [{"kind": "jwt", "name": "a", "value": "x"}, {"kind": "jwt", "name": "b"}]})
    with pytest.raises(ConfigError, match=r"example #1: pattern does not compile"):
        parse_examples({"examples": [{"kind": "aws", "name": "a", "pattern": "("}]})


def _auth0_jwe(header_claims: dict, seed: int = 11) -> str:
    """An Auth0-style session cookie: ``alg: dir``, ``enc: A256GCM``, time claims in the protected header."""
    rng = random.Random(seed)
    header = b64url(json.dumps({"alg": "dir", "enc": "A256GCM", **header_claims}).encode())
    return ".".join([header, "", b64url(rng.randbytes(12)), b64url(rng.randbytes(120)), b64url(rng.randbytes(16))])


def test_jwe_protected_header_expiry_is_read():
    from shardscan.policy import Policy

    expired = only(f"appSession={_auth0_jwe({'iat': ts('2024-03-01T00:00:00'), 'exp': ts('2024-03-02T00:00:00')})}",
                   "jwe")
    assert (expired.verdict, expired.detail) == (
        Verdict.EXPIRED,
        "JWE (dir, A256GCM), 120-byte encrypted payload, expired 2024-03-02 (2 years ago) by its protected header",
    )
    live = only(f"appSession={_auth0_jwe({'iat': ts('2026-12-01T00:00:00'), 'exp': ts('2026-12-03T00:00:00')})}", "jwe")
    assert (live.verdict, live.detail) == (
        Verdict.UNVERIFIED,
        "JWE (dir, A256GCM), 120-byte encrypted payload, expires 2026-12-03 (in 12 hours) by its protected header",
    )
    assert live.verdict in Policy().blocking_verdicts and expired.verdict not in Policy().blocking_verdicts


def test_jwe_header_without_expiry_stays_unverified():
    issued_only = only(f"appSession={_auth0_jwe({'iat': ts('2024-03-01T00:00:00')})}", "jwe")
    assert (issued_only.verdict, issued_only.detail) == (
        Verdict.UNVERIFIED,
        "JWE (dir, A256GCM), 120-byte encrypted payload, no expiry (no exp claim), issued 2024-03-01 (2 years ago) "
        "by its protected header",
    )
    broken_claim = only(f"appSession={_auth0_jwe({'exp': 'tomorrow'})}", "jwe")
    assert (broken_claim.verdict, broken_claim.detail) == (
        Verdict.UNVERIFIED, "JWE (dir, A256GCM), 120-byte encrypted payload: expiry cannot be read offline"
    )


@pytest.mark.parametrize("layout", ["indent", "indent4", "tabs", "spaced"])
def test_a_header_serialised_with_whitespace_is_a_jwt(layout):
    """``{\\n  "alg": …`` is base64url ``ewog…``, ``{ "alg"`` is ``eyAi…``: found by the prefilter and verified."""
    import pyarrow as pa

    from shardscan.synth import expand
    from tests.verifier_helpers import scanner

    token = expand(f"{{{{jwt_layout:{layout}}}}}", seed=layout)
    assert not token.startswith("eyJ")
    text = f'resp = requests.get(url, headers={{"Authorization": "Bearer {token}"}})'
    result = scanner().scan_table(pa.table({"code": [text, "print('done')"]}))
    assert [(f.rule_id, f.location.row, f.start, f.end, str(f.verdict)) for f in result.findings] == [
        ("jwt", 0, text.index(token), text.index(token) + len(token), "valid")
    ]
    assert result.findings[0].detail == "HS256 JWT, expires 2100-01-01 (in 73 years)"


def test_a_spaced_header_without_alg_is_not_a_jwt():
    header = b64url(b'{\n  "typ": "JWT"\n}')
    token = f"{header}.{b64url(json.dumps({'sub': '1'}).encode())}.{b64url(random.Random(3).randbytes(32))}"
    assert verify(token, "jwt", NOW).verdict == Verdict.INVALID

