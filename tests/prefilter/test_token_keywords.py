"""Token keywords: the prefilter counts them only at a token start, and their base64 forms include the token characters
after them."""

from __future__ import annotations

import base64
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml

from shardscan.api import scan_table
from shardscan.decoders import encoded_keyword_patterns
from shardscan.engine import Scanner, ScanOptions
from shardscan.ruleset import load_rule_file, load_ruleset
from shardscan.ruleset.check import check_ruleset
from shardscan.ruleset.model import Ruleset
from shardscan.synth import aws_key_id, jwt

RULESET = load_ruleset()
SCANNER = Scanner(RULESET, ScanOptions())
TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def _selected(texts: list[str]) -> list[bool]:
    return SCANNER.prefilter.mask(pa.array(texts, pa.large_string())).tolist()


def test_builtin_token_keywords():
    # OpenAI's T3BlbkFJ sits inside its token and a PEM marker is followed by a space: not token keywords.
    assert set(RULESET.token_keywords) >= {
        "eyJ", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
        "hf_", "api_org_", "sk-ant-api", "sk-ant-admin", "sk-ant-oat", "sk-ant-ort",
    } | _jose_layouts() | CLOUD_SAAS_TOKEN_KEYWORDS
    assert not {"T3BlbkFJ", "-----BEGIN"} & set(RULESET.token_keywords)
    # Short prefixes of the LLM, registry and CI families that ordinary words contain (task-,
    # ufw_, rapidapi, --sk-): counted only at a token start.
    assert set(RULESET.token_keywords) >= {"sk-", "r8_", "fw_", "csk-", "AIza", "dapi", "pul-", "npm_", "dp.st."}


def _jose_layouts() -> set[str]:
    """JOSE headers serialised with whitespace: "{", the whitespace of the common layouts, a quoted
    alg/typ/kid/enc, in base64url, only the characters those bytes fix (rules/jwt.yaml)."""
    out = set()
    for space in (" ", "\n  ", "\n    ", "\n\t"):
        for name in ("alg", "typ", "kid", "enc"):
            data = ("{" + space + '"' + name + '"').encode()
            out.add(base64.urlsafe_b64encode(data).decode()[: len(data) * 8 // 6])
    return out


# The short prefixes of the cloud, messaging, payments and SaaS rules, which occur inside words and
# base64 by chance. (Longer ones such as sk_live_ or xoxb- are plain keywords: each token keyword
# adds a per-cell start check, and a prefix of five or more characters rarely occurs by chance.)
CLOUD_SAAS_TOKEN_KEYWORDS = {
    "LTAI", "sbp_", "vcp_", "vci_", "vca_", "vcr_", "vck_", "nfp_", "nfc_", "nfo_", "nfu_", "fo1_", "fm2_", "fm1r_",
    "fm1a_", "v1.0-", "SG.", "ntn_", "glc_", "glsa_",
}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        # Inside a long base64-like run (a screenshot holds eyJ or A3T by chance): not a token start.
        ("data:image/png;base64," + "xyzw" * 500 + "eyJ" + "xyzw" * 500, False),
        # (Filler that decodes to binary: base64 of base64 text is selected to be decoded, see
        # test_decoding_depth.)
        ('{"data": "' + "+/9w" * 500 + "A3TQ" + "+/9w" * 500 + '"}', False),
        ("keyAKIA" + "Q" * 16, False),
        # At a token start: after punctuation, a path slash, or an escape ending in a letter or digit.
        ('{"token": "eyJhbGciOi"}', True),
        ("https://app.example.com/session/eyJhbGciOi", True),
        ("redirect%3Fsession%3DeyJhbGciOi", True),
        ("next=%252Fx%253Ftoken%253DeyJhbGciOi", True),  # a redirect URL encoded twice
        ("\\u003deyJhbGciOi", True),
        ("\\x3deyJhbGciOi", True),
        ('{"out": "a\\neyJhbGciOi"}', True),
        ("eyJhbGciOi at the very start", True),
        ("id AKIA" + "Q" * 16, True),
        ("disk-" + "a1b2" * 8 + " task-" + "c7d8" * 8 + " ask-" + "e5f6" * 8, False),
        ("OPENAI_API_KEY=sk-" + "a1b2" * 8, True),
        ("rapidapi" + "0a" * 16 + " ufw_" + "Ab1" * 8, False),
        # Keywords that are not token keywords count anywhere.
        ("prefixT3BlbkFJsuffix", True),
    ],
)
def test_prefilter_counts_token_keywords_only_at_a_token_start(text, selected):
    assert _selected([text]) == [selected]


@pytest.mark.parametrize("keyword", sorted(k for k in RULESET.token_keywords if len(k) <= 12))
@pytest.mark.parametrize("align", [0, 1, 2])
@pytest.mark.parametrize("url", [False, True])
def test_token_keyword_base64_forms_match_every_alignment(keyword, align, url):
    rng = random.Random(f"{keyword}{align}{url}")
    tail = "".join(rng.choice(TOKEN_CHARS) for _ in range(12))
    data = b"\xfb\xef\xbe"[:align] + (keyword + tail).encode()
    encoded = (base64.urlsafe_b64encode if url else base64.b64encode)(data).decode()
    pattern = "|".join(encoded_keyword_patterns([keyword], {keyword}))
    assert pc.match_substring_regex(pa.array([encoded]), pattern)[0].as_py()


@pytest.mark.parametrize("align", [0, 1, 2])
def test_token_keyword_base64_forms_need_token_characters_after_the_keyword(align):
    """Three bytes that cannot follow a token keyword (not ASCII) rule the form out; a plain keyword's form still
    matches."""
    encoded = base64.b64encode(b"\xfb\xef\xbe"[:align] + b"eyJ\xff\xfe\xfd\xfc\xfb\xfa").decode()
    as_token = "|".join(encoded_keyword_patterns(["eyJ"], {"eyJ"}))
    as_plain = "|".join(encoded_keyword_patterns(["eyJ"]))
    assert not pc.match_substring_regex(pa.array([encoded]), as_token)[0].as_py()
    assert pc.match_substring_regex(pa.array([encoded]), as_plain)[0].as_py()


@pytest.mark.slow
def test_screenshot_with_keywords_inside_is_not_a_candidate_and_real_tokens_are_found():
    rng = random.Random(7)
    token = jwt(rng, exp=4102444800)
    key_id = aws_key_id(rng)
    # PNG magic, then base64 "pixels" holding eyJ and A3T mid-run (and no encoded token keyword).
    screenshot = "iVBORw0KGgo" + "xyzw" * 2000 + "eyJ" + "xyzw" * 2000 + "A3TQ" + "xyzw" * 100
    table = pa.table({
        "content": [
            f'{{"type": "image", "data": "{screenshot}"}}',
            f"GET https://api.example.com/v1/session/{token} HTTP/1.1",
            f"aws configure set aws_access_key_id {key_id}",
        ],
    })
    report = scan_table(table, "shard.parquet", options=ScanOptions())
    found = sorted((f.location.row, f.location.column, f.rule_id, f.start) for f in report.findings)
    assert found == [
        (1, "content", "jwt", len("GET https://api.example.com/v1/session/")),
        (2, "content", "aws-access-key-id", len("aws configure set aws_access_key_id ")),
    ]
    assert report.stats.candidate_cells == 2


def test_a_keyword_is_a_token_keyword_only_when_every_rule_listing_it_says_so(tmp_path):
    def rule(rule_id: str, token: bool) -> dict:
        return {
            "id": rule_id, "kind": "acme", "name": "ACME", "description": "An ACME token.", "severity": "high",
            "keywords": ["acme_"], "pattern": r"(?<![A-Za-z0-9])(?P<secret>acme_[A-Za-z0-9]{24})\b",
            **({"token_keywords": ["acme_"]} if token else {}),
        }

    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump([rule("acme-a", True), rule("acme-b", True)]))
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump([rule("acme-a", True), rule("acme-b", False)]))
    assert Ruleset(tuple(load_rule_file(both))).token_keywords == ("acme_",)
    assert Ruleset(tuple(load_rule_file(mixed))).token_keywords == ()


@pytest.mark.slow
def test_rules_check_fails_an_example_the_prefilter_would_not_select(tmp_path):
    """A rule that declares a token keyword but matches it inside a word: its example is reported, not
    silently missed."""
    path = tmp_path / "glued.yaml"
    path.write_text(yaml.safe_dump([{
        "id": "acme-glued", "kind": "acme", "name": "ACME", "description": "An ACME token.", "severity": "high",
        "keywords": ["acme_"], "token_keywords": ["acme_"], "pattern": r"(?P<secret>acme_[A-Za-z0-9]{24})",
        "examples": ["tokenacme_{{alnum:24}}"],
    }]))
    [result] = [r for r in check_ruleset(load_ruleset([path])) if r.rule_id == "acme-glued"]
    assert (result.ok, result.problem) == (False, "example 1 is not selected by the prefilter (a token keyword inside "
                                                  "a word?)")


@pytest.mark.parametrize("colour", ["\x1b[32m", "\x1b[01;31m\x1b[K", "\\u001b[33m", "\\033[1;33m", "\x1b[0m"])
def test_a_token_after_a_colour_code_selects_the_cell(colour):
    text = '{"stdout": "cat ~/.token\\n' + colour + "ghp_" + "a1B2" * 9 + '\\n"}'
    assert _selected([text, "x" + colour + "word"]) == [True, False]
