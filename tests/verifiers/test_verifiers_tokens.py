"""GitHub, AWS, OpenAI, Anthropic, Hugging Face, placeholder and documented-example verdicts."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime

import pytest

from shardscan.model import Verdict
from shardscan.synth import (
    BASE32,
    anthropic_key,
    aws_key_id,
    aws_secret,
    base62_crc32,
    expand,
    github_fine_grained,
    github_token,
    huggingface_token,
    jwt,
    openai_key,
)
from shardscan.verifiers.aws import account_id
from shardscan.verifiers.github import base62_crc32 as verifier_crc
from shardscan.verifiers.placeholder import is_word_like, placeholder_reason
from tests.verifier_helpers import findings, only, verify

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _flip_last(token: str) -> str:
    """The same token with its last character changed (a checksum that no longer matches)."""
    return token[:-1] + ("A" if token[-1] != "A" else "B")


# ---- GitHub ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix, rule", [("ghp_", "github-pat"), ("gho_", "github-oauth-token"),
                                          ("ghu_", "github-user-token"), ("ghs_", "github-app-token"),
                                          ("ghr_", "github-refresh-token")])
def test_classic_tokens_checksum(prefix, rule):
    token = github_token(random.Random(prefix), prefix)
    good = only(f"token: {token}", rule)
    assert good.verdict == Verdict.VALID
    assert good.detail.endswith(f"({prefix}), CRC32 checksum matches")
    bad = verify(_flip_last(token), rule)
    if prefix == "ghr_" and len(token) != 40:
        # Long refresh tokens: no documented checksum layout, so a mismatch stays on the blocking side.
        assert bad.verdict == Verdict.UNVERIFIED
        return
    assert bad.verdict == Verdict.INVALID
    assert "CRC32 checksum does not match: invented or mangled" in bad.detail


def test_short_refresh_token_checksum_is_checked():
    rng = random.Random(12)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(30))
    assert verify("ghr_" + body + base62_crc32(body), "github-refresh-token").verdict == Verdict.VALID
    assert verify("ghr_" + body + _flip_last(base62_crc32(body)), "github-refresh-token").verdict == Verdict.INVALID


def test_checksum_is_over_the_body_without_prefix():
    assert verifier_crc("abc") == base62_crc32("abc")
    rng = random.Random(3)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(30))
    # A checksum computed with the prefix included is wrong.
    assert verify("ghp_" + body + base62_crc32("ghp_" + body), "github-pat").verdict == Verdict.INVALID
    assert verify("ghp_" + body + base62_crc32(body), "github-pat").verdict == Verdict.VALID


def test_fine_grained_token_checksum():
    token = github_fine_grained(random.Random(5))
    assert only(f"GH_TOKEN={token}", "github-fine-grained-pat").verdict == Verdict.VALID
    tampered = token[:-16] + ("A" if token[-16] != "A" else "B") + token[-15:]
    outcome = verify(tampered, "github-fine-grained-pat")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "GitHub fine-grained token whose SHA-256 checksum does not match: invented or mangled"
    )
    # The last 8 characters are not covered by the checksum.
    assert verify(token[:-1] + ("A" if token[-1] != "A" else "B"), "github-fine-grained-pat").verdict == Verdict.VALID


@pytest.mark.slow
def test_app_installation_jwt_token_uses_the_embedded_exp():
    rng = random.Random(9)
    expired = f"ghs_123456_{jwt(rng, exp=1_785_110_400)}"  # 2026-07-27
    live = f"ghs_123456_{jwt(rng, exp=1_800_000_000)}"  # 2027-01-15
    finding = only(f"token: {expired}", "github-app-installation-jwt-token", NOW)
    assert finding.verdict == Verdict.EXPIRED
    assert finding.detail == ("GitHub App installation token (app 123456); embedded HS256 JWT, expired 2026-07-27 (4 "
                              "months ago)")
    assert only(f"token: {live}", "github-app-installation-jwt-token", NOW).verdict == Verdict.VALID


def test_github_documentation_token_is_an_example():
    finding = only("git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r.git", "github-pat")
    assert (finding.verdict, finding.severity) == (Verdict.EXAMPLE, "info")


# ---- AWS ---------------------------------------------------------------------------------------------


def test_account_id_is_decoded_from_the_key_id():
    assert account_id("ASIAY34FZKBOKMUTVV7A") == "609629065308"
    assert account_id("AKIAIOSFODNN7EXAMPLE") is None  # fifth character I: pre-2019 format


def test_key_id_detail_names_account_and_pairing():
    secret = aws_secret(random.Random(1))
    finding = only(f"AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A AWS_SECRET_ACCESS_KEY={secret}", "aws-access-key-id")
    assert finding.verdict == Verdict.UNVERIFIED
    assert finding.detail == (
        "AWS temporary (STS) access key ID, account 609629065308, "
        "paired with an adjacent 40-character secret access key (usable pair)"
    )
    paired_secret = only(f"AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A AWS_SECRET_ACCESS_KEY={secret}",
                         "aws-secret-access-key")
    assert paired_secret.verdict == Verdict.UNVERIFIED
    assert paired_secret.detail.startswith("AWS secret access key next to its key ID (account 609629065308)")
    assert secret not in finding.detail + paired_secret.detail


def test_key_id_next_to_a_commit_hash_is_not_paired():
    """The digest is no secret, so the temporary key ID is judged as if alone (not usable)."""
    commit = f"{random.Random(2).getrandbits(160):040x}"
    finding = only(f"key ASIAY34FZKBOKMUTVV7A at commit {commit}", "aws-access-key-id")
    assert finding.verdict == Verdict.EXPIRED
    assert "the 40 characters next to it are a hex digest, not a secret key, a temporary key ID alone" in finding.detail
    key = _key_id_for_account(609629065308, random.Random(3))
    finding = only(f"key {key} at commit {commit}", "aws-access-key-id")
    assert finding.verdict == Verdict.UNVERIFIED  # a long-term key ID blocks alone too


def test_key_id_encoding_a_thirteen_digit_account_is_made_up():
    """40 bits hold numbers up to 1,099,511,627,775; AWS account IDs have 12 digits."""
    key = _key_id_for_account(10**12 + 4321, random.Random(5))
    assert account_id(key) == "1000000004321"
    finding = only(f"aws_access_key_id = {key}", "aws-access-key-id")
    assert (finding.verdict, finding.detail) == (
        Verdict.INVALID, "encodes a 13-digit account number, and AWS account IDs have 12 digits: a made-up key ID"
    )
    assert all(len(account_id(aws_key_id(random.Random(seed))) or "") <= 12 for seed in range(200))


def test_lone_key_id():
    key = aws_key_id(random.Random(4))
    finding = only(f"aws_access_key_id = {key}", "aws-access-key-id")
    assert finding.verdict == Verdict.UNVERIFIED
    assert finding.detail.endswith("no secret access key next to it")


def test_aws_documentation_keys_are_examples_not_redacted():
    text = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    found = {f.rule_id: f for f in findings(text)}
    assert found["aws-access-key-id"].verdict == Verdict.EXAMPLE
    assert found["aws-secret-access-key"].verdict == Verdict.EXAMPLE
    assert "AWS documentation" in found["aws-access-key-id"].detail


def _key_id_for_account(account: int, rng: random.Random) -> str:
    """A current-format key ID encoding ``account`` (the inverse of the verifier's account_id)."""
    import base64

    head = (1 << 47) | (account << 7) | rng.getrandbits(7)
    body = base64.b32encode(head.to_bytes(6, "big") + rng.randbytes(4)).decode()
    return "AKIA" + body


@pytest.mark.parametrize("account", [123456789012, 111122223333])
def test_key_ids_of_documentation_accounts_are_examples(account):
    """moto mints every key for account 123456789012; AWS documents its examples under these."""
    rng = random.Random(account)
    key_id = _key_id_for_account(account, rng)
    assert account_id(key_id) == f"{account:012d}"
    secret = aws_secret(rng)
    found = {f.rule_id: f for f in findings(f"aws_access_key_id = {key_id}\naws_secret_access_key = {secret}")}
    for rule in ("aws-access-key-id", "aws-secret-access-key"):
        assert found[rule].verdict == Verdict.EXAMPLE
        assert f"encodes account {account:012d}, an AWS documentation account" in found[rule].detail
    # Any other account is a key like any other.
    other = _key_id_for_account(account + 1, rng)
    assert only(f"aws_access_key_id = {other}", "aws-access-key-id").verdict == Verdict.UNVERIFIED


# ---- OpenAI and Anthropic --------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["sk-", "sk-proj-", "sk-svcacct-"])
def test_openai_marker_between_equal_halves(prefix):
    key = openai_key(random.Random(prefix), prefix)
    assert only(f"OPENAI_API_KEY={key}", "openai-api-key").verdict == Verdict.VALID
    marker = key.index("T3BlbkFJ")
    shifted = key[: marker - 2] + "T3BlbkFJ" + key[marker - 2 : marker] + key[marker + 8 :]
    outcome = verify(shifted, "openai-api-key")
    assert outcome.verdict == Verdict.INVALID
    assert "halves around T3BlbkFJ are" in outcome.detail
    doubled = key[: marker + 8] + "T3BlbkFJ" + key[marker + 16 :]
    assert verify(doubled, "openai-api-key").detail.endswith("marker 2 times (real keys have it once): invented")


@pytest.mark.parametrize("kind, rule", [("api03", "anthropic-api-key"), ("admin01", "anthropic-admin-key")])
def test_anthropic_length_and_ending(kind, rule):
    key = anthropic_key(random.Random(kind), kind)
    assert only(f"x-api-key: {key}", rule).verdict == Verdict.VALID
    assert verify(key[:-3] + "AA", rule).verdict == Verdict.INVALID
    assert verify(key[:-2] + "Ab", rule).verdict == Verdict.INVALID


@pytest.mark.parametrize("kind", ["oat01", "ort01"])
def test_anthropic_oauth_tokens_block_whatever_their_length(kind):
    token = anthropic_key(random.Random(kind), kind)
    finding = only(f'{{"accessToken": "{token}"}}', "anthropic-oauth-token")
    name = "access" if kind == "oat01" else "refresh"
    assert (finding.verdict, finding.detail) == (
        Verdict.VALID, f"Anthropic OAuth {name} token (sk-ant-{kind}-), 108 characters ending in AA: well-formed"
    )
    cut = token[:70]
    assert (verify(cut, "anthropic-oauth-token").verdict, verify(cut, "anthropic-oauth-token").detail) == (
        Verdict.UNVERIFIED,
        f"Anthropic OAuth {name} token (sk-ant-{kind}-) of 70 characters: no published format to check it against "
        "offline",
    )


def test_huggingface_has_no_offline_check():
    token = huggingface_token(random.Random(8))
    finding = only(f"HF_TOKEN={token}", "huggingface-token")
    assert (finding.verdict, finding.detail) == (Verdict.UNVERIFIED, "no offline check for this kind")


# ---- placeholders and word-like identifiers --------------------------------------------------------


@pytest.mark.parametrize(
    "text, rule, verdict",
    [
        ("HF_TOKEN=hf_ThisIsMyHuggingFaceAccessTokenXyz1", "huggingface-token", Verdict.REDACTED),
        ("token=hf_YourHuggingFaceTokenGoesHereAb12Cd", "huggingface-token", Verdict.REDACTED),
        ("GITHUB_TOKEN=ghp_YourPersonalAccessTokenGoesHere9A8B7", "github-pat", Verdict.REDACTED),
        ("OPENAI_API_KEY=sk-proj-your-openai-key-T3BlbkFJ-goes-here-please", "openai-api-key", Verdict.REDACTED),
        ("key=sk-ant-api03-your-anthropic-api-key-goes-here-and-nowhere-else", "anthropic-api-key", Verdict.REDACTED),
        ("AWS_ACCESS_KEY_ID=AKIAYOURACCESSKEYID2", "aws-access-key-id", Verdict.REDACTED),
        ("GITHUB_TOKEN=ghp_SampleTokenForTheDocumentationPageX9", "github-pat", Verdict.EXAMPLE),
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_a1B2c3D4e5a1B2c3D4e5a1B2c3D4e5Qr7Z", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1L", "huggingface-token", Verdict.REDACTED),
        ("AWS_SECRET_ACCESS_KEY=Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm3N", "aws-secret-access-key", Verdict.REDACTED),
        ("key=sk-ant-oat01-" + "Xy7_Kq2-Lm9P" * 7 + "Wz4tR0vBcAA", "anthropic-oauth-token", Verdict.REDACTED),
        # Invented by a model: keyboard rows, the alphabet backwards or skipping letters, l33t words,
        # and letters and digits in a fixed rhythm.
        ("HF_TOKEN=hf_ZxCvBnMaSdFgHjKlPoIuYtReWq98765432", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_zYxWvUtSrQpOnMlKjIhGfEdCbA98765432", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_kLmNpQrStVwXyZaBcDeFgHiJkLmNpQrS12", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_R4nd0mT0k3nV4lu3F0rD3m0Purp0s3s123", "huggingface-token", Verdict.REDACTED),
        ("HF_TOKEN=hf_Xk9mP2vL8nQ4rT6wY1zB3cD5fG7hJ0kM4n", "huggingface-token", Verdict.REDACTED),
    ],
)
def test_placeholders_and_word_like_bodies(text, rule, verdict):
    finding = only(text, rule)
    assert finding.verdict == verdict, finding.detail
    assert finding.severity == "info"


def test_random_bodies_are_not_word_like():
    rng = random.Random(11)
    for _ in range(2000):
        assert not is_word_like("".join(rng.choice(string.ascii_letters + string.digits) for _ in range(34)))
        assert not is_word_like("".join(rng.choice(BASE32) for _ in range(16)))


@pytest.mark.slow
def test_random_bodies_are_not_placeholders():
    """Every placeholder signal together (sequences, walks, rhythms, l33t words) spares random bodies."""
    rng = random.Random(12)
    alphabet = string.ascii_letters + string.digits
    for _ in range(20000):
        body = "".join(rng.choice(alphabet) for _ in range(34))
        assert placeholder_reason("hf_" + body) is None, body


@pytest.mark.slow
def test_generated_tokens_of_every_kind_are_never_called_placeholders():
    templates = ["{{github:ghp_}}", "{{github_pat}}", "{{hf}}", "{{openai:sk-proj-}}", "{{anthropic:api03}}",
                 "{{anthropic:oat01}}", "{{aws_id:AKIA}}"]
    for template in templates:
        for seed in range(300):
            token = expand(template, seed=seed)
            found = findings(f"value: {token} ")
            assert found, token[:4]
            assert all(f.verdict not in (Verdict.REDACTED, Verdict.EXAMPLE) for f in found), (template, seed)


def test_body_opening_with_a_placeholder_word_is_redacted_unless_the_checksum_holds():
    rng = random.Random(21)
    tail = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(26))
    assert verify("ghp_your" + tail + base62_crc32("your" + tail)[:2] + "zz", "github-pat").verdict == Verdict.REDACTED
    assert verify("hf_your" + tail + "12345678", "huggingface-token").verdict == Verdict.REDACTED
    # Four letters open a random body about once in a million: a matching checksum wins.
    body = "your" + tail
    assert verify("ghp_" + body + base62_crc32(body), "github-pat").verdict == Verdict.VALID


@pytest.mark.parametrize("colour", ["\x1b[32m", "\x1b[01;31m\x1b[K", "\\u001b[33m", "\\033[1;33m"])
@pytest.mark.parametrize(
    "template, rule",
    [("{{github:ghp_}}", "github-pat"), ("{{hf}}", "huggingface-token"), ("{{openai:sk-proj-}}", "openai-api-key"),
     ("{{anthropic:oat01}}", "anthropic-oauth-token"), ("{{jwt}}", "jwt"), ("{{aws_id:AKIA}}", "aws-access-key-id")],
)
def test_tokens_printed_in_colour_are_found(colour, template, rule):
    """A terminal colour code ends in a letter; the token after it still starts a token."""
    token = expand(template, seed=colour)
    finding = only(f"Your token: {colour}{token}\x1b[0m", rule)
    assert finding.verdict in (Verdict.VALID, Verdict.UNVERIFIED)


def test_forty_base64_characters_of_readable_text_are_no_secret_key():
    """In a Kubernetes Secret the value is base64: 40 characters there encode 30 characters of text
    (a placeholder), never a 40-character secret key; random keys never decode to text."""
    import base64

    value = base64.b64encode(b"replace-with-your-secret-key-1").decode()
    finding = only(f"kind: Secret\ndata:\n  AWS_SECRET_ACCESS_KEY: {value}\n", "aws-secret-access-key")
    assert (finding.verdict, finding.detail) == (Verdict.INVALID, "base64 of readable text, not an AWS secret access "
                                                                  "key")
    assert all(only(f"AWS_SECRET_ACCESS_KEY={aws_secret(random.Random(seed))}", "aws-secret-access-key").verdict
               == Verdict.UNVERIFIED for seed in range(200))
