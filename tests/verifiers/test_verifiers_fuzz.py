"""Verifiers never raise on arbitrary input and never echo a secret in their detail."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardscan.model import Candidate, Verdict, Verification
from shardscan.synth import private_key_pem
from shardscan.verifiers import VERIFIERS, VerifyContext, verify_candidate

# Hypothesis fuzzing: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

NOW = datetime(2026, 12, 2, tzinfo=UTC)
_PROSE = re.compile(r"[a-z ,.:;'()-]+")
PREFIXES = [
    "", "ghp_", "ghs_12_eyJ", "github_pat_", "sk-", "sk-proj-", "sk-ant-api03-", "hf_", "AKIA", "ASIA", "eyJ",
    "eyJhbGciOiJIUzI1NiJ9.", "-----BEGIN PRIVATE KEY-----\n", "-----BEGIN OPENSSH PRIVATE KEY-----\\n",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n",
    "npm_", "pypi-AgEIcHlwaS5vcmc", "pypi-AgE", "ops_eyJ", "sk-or-v1-",
]
SUFFIXES = ["", "\n-----END PRIVATE KEY-----", "\\n-----END OPENSSH PRIVATE KEY-----", "=AbCd\n-----END PGP PRIVATE "
                                                                                       "KEY BLOCK-----"]
ALPHABET = st.sampled_from(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.\\n <>…"))


KINDS = ("private-key", "jwt", "github", "aws", "openai", "anthropic", "huggingface")


def _run_all(secret: str, pair: str | None = None, kinds: tuple[str, ...] = KINDS) -> None:
    groups = (("pair", pair), ("keyid", "ASIAY34FZKBOKMUTVV7A")) if pair is not None else ()
    candidate = Candidate("r", secret, 0, len(secret), (), groups)
    for kind in kinds:
        context = VerifyContext(now=NOW, kind=kind)
        for name, verifier in VERIFIERS.items():
            outcome = verifier(candidate, context)
            assert outcome is None or isinstance(outcome, Verification), name
        outcome = verify_candidate(candidate, tuple(VERIFIERS), context)
        assert isinstance(outcome.verdict, Verdict)
        assert "failed (" not in outcome.detail, outcome.detail  # no verifier crashed
        # A detail is prose around a fixed vocabulary ("placeholder text ('placeholder')"), and
        # Hypothesis draws strings from that vocabulary: lowercase prose is not a secret to leak.
        if len(secret) >= 12 and not _PROSE.fullmatch(secret):
            assert secret not in outcome.detail


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PREFIXES), st.lists(ALPHABET, max_size=300).map("".join), st.sampled_from(SUFFIXES))
def test_structured_noise_never_raises(prefix, body, suffix):
    _run_all(prefix + body + suffix, pair=body[:40])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text):
    _run_all(text)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=1500), st.integers(min_value=0, max_value=1500), st.text(max_size=5))
def test_mangled_keys_never_raise(cut, insert_at, junk):
    pem = private_key_pem("rsa-pkcs8")
    body_start = pem.index("\n") + 1
    mangled = pem[: body_start + cut] + junk + pem[body_start + cut + insert_at % 7 :]
    _run_all(mangled, kinds=("private-key",))


@pytest.mark.parametrize("kind", ["rsa", "ec", "ed25519", "encrypted"])
def test_detail_of_a_real_key_holds_no_body_line(kind):
    pem = private_key_pem(kind)
    candidate = Candidate("private-key", pem, 0, len(pem), ())
    detail = verify_candidate(candidate, ("private-key",), VerifyContext(now=NOW, kind="private-key")).detail
    assert not any(line in detail for line in pem.splitlines()[1:-1] if len(line) >= 8)
