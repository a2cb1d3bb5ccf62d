"""Rules as data: every built-in example through the full detector, load-time validation errors,
user rule files (``--rules``), ``--disable``, and ``shardscan rules check`` on a user's own file."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shardscan.cli import app
from shardscan.engine import Scanner
from shardscan.errors import ConfigError
from shardscan.ruleset import builtin_rule_files, load_rule_file, load_ruleset
from shardscan.ruleset import load as load_module
from shardscan.ruleset.check import check_ruleset
from shardscan.synth import expand

BUILTIN = load_ruleset()
KINDS = {"jwt", "aws", "github", "openai", "anthropic", "huggingface", "private-key"}
# Cloud, messaging, payments and SaaS families.
KINDS |= {"gcp", "azure", "digitalocean", "alibaba", "heroku", "supabase", "vercel", "netlify", "flyio", "cloudflare",
          "slack", "discord", "telegram", "stripe", "sendgrid", "twilio", "mailgun", "mailchimp", "shopify", "notion",
          "linear", "postman", "sentry", "newrelic", "datadog", "grafana", "age"}
UNPREFIXED_KINDS = {"connection-string", "password", "generic-secret"}


def _example_cases() -> list:
    cases = []
    for rule in BUILTIN.rules:
        for i, _ in enumerate(rule.examples):
            cases.append(pytest.param(rule.id, True, i, id=f"{rule.id}-example-{i + 1}"))
        for i, _ in enumerate(rule.negative_examples):
            cases.append(pytest.param(rule.id, False, i, id=f"{rule.id}-negative-{i + 1}"))
    return cases


@pytest.fixture(scope="module")
def check_results() -> dict[tuple[str, bool, int], object]:
    return {(r.rule_id, r.positive, r.index): r for r in check_ruleset(BUILTIN)}


@pytest.mark.parametrize(("rule_id", "positive", "index"), _example_cases())
def test_builtin_rule_example_through_full_detector(check_results, rule_id, positive, index):
    result = check_results[(rule_id, positive, index)]
    assert result.ok, result.problem


def test_every_rule_has_examples_and_negative_examples():
    for rule in BUILTIN.rules:
        assert rule.examples, rule.id
        assert rule.negative_examples, rule.id


def test_builtin_kinds_include_the_seven_families():
    # (More families come as rule files are added; these seven must stay.)
    assert set(BUILTIN.kinds) >= KINDS | UNPREFIXED_KINDS
    assert {
        f"{k}.yaml"
        for k in ("anthropic", "aws", "github", "huggingface", "jwt", "openai", "private-key")
        + ("age", "cloud", "messaging", "saas", "stripe", "connection-string", "password", "generic-secret")
    } <= {p.name for p in builtin_rule_files()}


@pytest.mark.slow
def test_checker_really_uses_the_detector_not_only_the_regex():
    # The placeholder matches github-pat's regex; only the entropy/stopword filters drop it.
    rule = BUILTIN.get("github-pat")
    placeholder = "ghp_" + "x" * 36
    assert rule.pattern.search(placeholder)
    findings, _ = Scanner(BUILTIN).scan_text(placeholder)
    assert findings == []
    findings, _ = Scanner(BUILTIN).scan_text(expand("{{github:ghp_}}", seed=3))
    assert [f.rule_id for f in findings] == ["github-pat"]


# ---- recall and precision on real-world shapes --------------------------------------------------

POSITIVE_TEXTS = [
    ("jwt", "Set-Cookie: session={{jwt}}; Path=/; HttpOnly"),
    ("jwt", '{"access_token":"{{jwt}}","token_type":"Bearer"}'),
    ("jwt", "https://app.example.com/auth/callback#id_token={{jwt}}&expires_in=3600"),
    ("jwt", "curl -H 'Authorization: Bearer {{jwt}}' https://api.example.com"),
    ("jwt", "wss://stream.example.com/ws?token={{jwt}}"),
    ("aws-access-key-id", "export AWS_ACCESS_KEY_ID={{aws_id:AKIA}}"),
    ("aws-access-key-id", "ASIA temp creds: {{aws_id:ASIA}}"),
    ("aws-secret-access-key", "aws_secret_access_key={{aws_secret}}"),
    ("github-pat", "remote: https://x-access-token:{{github:ghp_}}@github.com/o/r"),
    ("github-app-token", "GITHUB_TOKEN={{github:ghs_}}"),
    ("github-refresh-token", "refresh={{github:ghr_}}"),
    ("github-fine-grained-pat", "{{github_pat}}"),
    ("openai-api-key", "OPENAI_API_KEY={{openai:sk-svcacct-}}"),
    ("openai-api-key", "key: {{openai:sk-admin-}}"),
    ("anthropic-api-key", "{{anthropic:api03}}"),
    ("huggingface-token", "HF_TOKEN={{hf}}"),
    ("huggingface-org-token", "api_org_{{alnum:34}}"),
    ("private-key", "{{pem:rsa}}"),
    ("private-key", "{{pem:ec}}"),
    ("private-key", "{{pem:pkcs8}}"),
    ("private-key", "{{pem:openssh}}"),
    ("private-key", "{{pem:encrypted}}"),
]


@pytest.mark.parametrize(("rule_id", "template"), POSITIVE_TEXTS, ids=[f"{r}-{i}" for i, (r,
    _) in enumerate(POSITIVE_TEXTS)])
def test_real_world_shapes_are_found(rule_id, template):
    text = expand(template, seed="shapes")
    findings, limits = Scanner(BUILTIN).scan_text(text)
    assert limits == []
    assert rule_id in {f.rule_id for f in findings}


def _indent(pem: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in pem.splitlines())


@pytest.mark.parametrize(
    "shape",
    ["plain", "indented", "single-line", "escaped-n", "double-escaped-n", "crlf", "yaml-block", "json-value"],
)
def test_pem_body_found_in_every_wrapping(shape):
    pem = expand("{{pem:rsa}}", seed="wrap")
    body_line = pem.splitlines()[1]
    text = {
        "plain": pem,
        "indented": "key: |\n" + _indent(pem, "    "),
        "single-line": pem.replace("\n", " "),
        "escaped-n": pem.replace("\n", "\\n"),
        "double-escaped-n": pem.replace("\n", "\\\\n"),
        "crlf": pem.replace("\n", "\r\n"),
        "yaml-block": "tls:\n  key: |-\n" + _indent(pem, "      ") + "\n  cert: none",
        "json-value": '{"private_key": "' + pem.replace("\n", "\\n") + '", "client_email": "a@b.c"}',
    }[shape]
    findings, limits = Scanner(BUILTIN).scan_text(text)
    assert limits == []
    [finding] = [f for f in findings if f.rule_id.startswith("private-key")]
    matched = text[finding.start : finding.end]
    assert matched.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert body_line in matched


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rsa", "pkcs8", "ec", "openssh"])
def test_truncated_pem_without_end_marker_is_found(kind):
    pem = expand(f"{{{{pem:{kind}}}}}", seed="trunc")
    lines = pem.splitlines()
    truncated = "\n".join(lines[: max(3, len(lines) // 2)])  # BEGIN + some body, no END
    for text in (truncated, "cat id_rsa\n" + truncated + "\n[output truncated]", truncated.replace("\n", "\\n")):
        findings, limits = Scanner(BUILTIN).scan_text(text)
        assert limits == []
        assert [f.kind for f in findings] == ["private-key"], text[:60]
        assert text[findings[0].start :].startswith("-----BEGIN")


NEGATIVE_TEXTS = [
    "from huggingface_hub import hf_hub_download, snapshot_download",
    "hf_hub_download(repo_id='gpt2', filename='config.json')",
    "git push origin gh_pages && ghp-import -n -p -f _build/html",
    "pip install scikit-learn  # a.k.a. sk-learn",
    "import sklearn as sk; sk-learn-pipeline",
    'if s.startswith("-----BEGIN PRIVATE KEY-----"):\n    return True',
    "pem = '-----BEGIN RSA PRIVATE KEY-----\\n' + base64.b64encode(der).decode() + '\\n-----END RSA PRIVATE KEY-----'",
    'PEM_HEADER = "-----BEGIN OPENSSH PRIVATE KEY-----"\nPEM_FOOTER = "-----END OPENSSH PRIVATE KEY-----"',
    "assert text.startswith('-----BEGIN EC PRIVATE KEY-----'), 'not an EC key: ' + path_to_the_private_key_file",
    "grep -l 'BEGIN PRIVATE KEY' /etc/ssl/private/*.key",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "run_id=123e4567-e89b-12d3-a456-426614174000",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Bearer token format is eyJ<header>.eyJ<payload>.<signature>",
    "AKIA followed by 16 characters identifies a long-term key",
    "the token starts with ghp_ and is 40 characters long",
]


@pytest.mark.parametrize("text", NEGATIVE_TEXTS)
def test_identifiers_and_marker_in_code_are_not_findings(text):
    findings, limits = Scanner(BUILTIN).scan_text(text)
    assert limits == []
    assert findings == [], [(f.rule_id, f.preview) for f in findings]


def test_base64_image_is_not_a_finding():
    import base64
    import random

    rng = random.Random(7)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(30000)).decode()
    findings, _ = Scanner(BUILTIN).scan_text(f"data:image/png;base64,{png}")
    assert findings == []


# ---- validation errors: ``<file>: <rule-id>: <what>`` -----------------------------------------

VALID_RULE = {
    "id": "acme-token",
    "kind": "acme",
    "name": "ACME API token",
    "description": "An ACME token; lets an attacker call the ACME API.",
    "severity": "high",
    "keywords": ["acme_"],
    "pattern": r"(?P<secret>acme_[A-Za-z0-9]{24})\b",
    "min_entropy": 3.0,
    "examples": ["token=acme_{{alnum:24}}"],
    "negative_examples": ["acme_xxxxxxxxxxxxxxxxxxxxxxxx"],
}


def _yaml_rule(**changes) -> str:
    import yaml

    rule = {k: v for k, v in {**VALID_RULE, **changes}.items() if v is not None}
    return yaml.safe_dump([rule], sort_keys=False)


def _write(tmp_path: Path, text: str, name: str = "my.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_valid_user_rule_file_loads(tmp_path):
    path = _write(tmp_path, _yaml_rule())
    [rule] = load_rule_file(path)
    assert (rule.id, rule.kind, rule.source) == ("acme-token", "acme", str(path))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pattern": None}, "acme-token: missing required field 'pattern'"),
        ({"keywords": None}, "acme-token: missing required field 'keywords'"),
        ({"description": None}, "acme-token: missing required field 'description'"),
        ({"id": "Acme_Token"}, "Acme_Token: 'id' must be kebab-case (lowercase letters, digits, single dashes)"),
        ({"id": None}, "rule #1: missing required field 'id' (a kebab-case string)"),
        ({"pattern": "(?P<secret>acme_[A-Z"}, "acme-token: pattern does not compile: "),
        ({"pattern": r"acme_[A-Za-z0-9]{24}"}, "acme-token: pattern has no named group 'secret'"),
        ({"verify": ["acme-online-check"]}, "acme-token: unknown verifier 'acme-online-check' (known: "),
        ({"severity": "urgent"}, "acme-token: 'severity' must be one of critical, high, medium, low, info"),
        ({"keywords": []}, "acme-token: 'keywords' must not be empty"),
        ({"keywords": ["acme_", "az"]}, "acme-token: keywords must be at least 3 characters long (not: 'az')"),
        ({"min_entropy": 12}, "acme-token: 'min_entropy' must be a number between 0 and 8"),
        ({"examples": ["token=nothing here"]}, "acme-token: example 'token=nothing here' contains none of the rule's "
                                               "keywords"),
        ({"pattern": r"(?P<secret>(a+)+)"}, "acme-token: pattern risks catastrophic backtracking"),
        ({"regex": "x", "verifiers": []}, "acme-token: unknown field(s) regex, verifiers"),
        ({"token_keywords": ["acme-"]}, "acme-token: 'token_keywords' must be among the rule's keywords (not: acme-)"),
        ({"context_keywords": ["ACME_KEY"]},
         "acme-token: 'context_keywords' must be among the rule's keywords (not: ACME_KEY)"),
        ({"token_keywords": ["acme_"], "context_keywords": ["acme_"]},
         "acme-token: a keyword cannot both begin a token and name it (in 'token_keywords' and 'context_keywords': "
         "acme_)"),
    ],
    ids=["missing-pattern", "missing-keywords", "missing-description", "bad-id", "no-id", "bad-regex",
         "no-secret-group", "unknown-verifier", "bad-severity", "empty-keywords", "short-keyword", "bad-entropy",
         "example-without-keyword", "backtracking", "unknown-keys", "stray-token-keyword", "stray-context-keyword",
         "token-and-context-keyword"],
)
def test_user_rule_validation_errors_name_file_and_rule(tmp_path, changes, message):
    path = _write(tmp_path, _yaml_rule(**changes))
    with pytest.raises(ConfigError) as info:
        load_ruleset([path])
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = _write(tmp_path, "- id: acme-token\n  kind: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_ruleset([path])
    assert str(info.value) == f"{path}: not valid YAML at line 3"


def test_yaml_that_is_not_a_rule_list(tmp_path):
    path = _write(tmp_path, "just: a mapping\n")
    with pytest.raises(ConfigError) as info:
        load_ruleset([path])
    assert str(info.value) == f"{path}: expected a list of rules"


def test_duplicate_id_within_user_file_and_against_builtin(tmp_path):
    path = _write(tmp_path, _yaml_rule() + _yaml_rule())
    with pytest.raises(ConfigError) as info:
        load_ruleset([path])
    assert str(info.value) == f"{path}: acme-token: rule id already defined in {path}"
    clash = _write(tmp_path, _yaml_rule(id="github-pat"), "clash.yaml")
    with pytest.raises(ConfigError) as info:
        load_ruleset([clash])
    assert str(info.value) == f"{clash}: github-pat: rule id already defined in rules/github.yaml"


@pytest.fixture
def broken_builtin_dir(tmp_path, monkeypatch) -> Path:
    """A copy of the built-in rules folder that the loader uses instead of the real one."""
    folder = tmp_path / "builtin"
    shutil.copytree(load_module.builtin_rules_dir(), folder)
    monkeypatch.setattr(load_module, "builtin_rules_dir", lambda: folder)
    return folder


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("(?P<secret> ghp_ [A-Za-z0-9]{36} )", "(?P<token> ghp_ [A-Za-z0-9]{36} )",
         "rules/github.yaml: github-pat: pattern has no named group 'secret'"),
        ("  keywords: [ghp_]\n", "", "rules/github.yaml: github-pat: missing required field 'keywords'"),
        ("  severity: critical\n  keywords: [ghp_]", "  severity: critical\n  keywords: [ghp_]\n  colour: red",
         "rules/github.yaml: github-pat: unknown field(s) colour"),
    ],
)
def test_builtin_rule_errors_are_labelled_rules_slash_file(broken_builtin_dir, old, new, message):
    path = broken_builtin_dir / "github.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        load_ruleset()
    assert str(info.value) == message


# ---- CLI: --rules, --disable, rules list, rules check --------------------------------------------

runner = CliRunner()


def _scan_json(args: list[str]) -> tuple[int, dict]:
    import json

    result = runner.invoke(app, ["scan", *args, "--format", "json"])
    data = json.loads(result.stdout) if result.stdout.startswith("{") else {}
    return result.exit_code, data


@pytest.fixture
def mixed_shard(tmp_path) -> tuple[Path, dict[str, str]]:
    from tests.conftest import trace_row, write_trace_shard

    tokens = {
        "acme": expand("acme_{{alnum:24}}", seed="cli"),
        "github": expand("{{github:ghp_}}", seed="cli"),
        "hf": expand("{{hf}}", seed="cli"),
    }
    rows = [trace_row([("user", f"use {tokens['acme']}")], instruction=f"token {tokens['github']}",
                      verifier_output=f"HF_TOKEN={tokens['hf']}")]
    return write_trace_shard(tmp_path / "data" / "train-00000-of-00001.parquet", rows), tokens


@pytest.mark.slow
def test_user_rule_file_adds_findings(tmp_path, mixed_shard):
    shard, _ = mixed_shard
    rules = _write(tmp_path, _yaml_rule())
    code, report = _scan_json([str(shard)])
    assert code == 1
    assert sorted(f["rule_id"] for f in report["findings"]) == ["github-pat", "huggingface-token"]
    code, report = _scan_json([str(shard), "--rules", str(rules)])
    assert code == 1
    assert [(f["rule_id"], f["kind"], f["column"], f["role"]) for f in report["findings"]] == [
        ("acme-token", "acme", "conversations[0].content", "user"),
        ("github-pat", "github", "instruction", None),
        ("huggingface-token", "huggingface", "verifier_output", None),
    ]


@pytest.mark.slow
def test_disable_by_rule_id_and_by_kind(tmp_path, mixed_shard):
    shard, _ = mixed_shard
    code, report = _scan_json([str(shard), "--disable", "github-pat"])
    assert (code, [f["rule_id"] for f in report["findings"]]) == (1, ["huggingface-token"])
    # With its own rule disabled, a token assigned to a token name is still a generic secret.
    code, report = _scan_json([str(shard), "--disable", "github", "--disable", "huggingface"])
    assert (code, [(f["rule_id"], f["column"]) for f in report["findings"]]) == (
        1, [("generic-secret-assignment", "verifier_output")])
    code, report = _scan_json([str(shard), "--disable", "github", "--disable", "huggingface",
                               "--disable", "generic-secret"])
    assert (code, report["findings"]) == (0, [])


def test_disable_unknown_id_is_a_usage_error(mixed_shard):
    shard, _ = mixed_shard
    result = runner.invoke(app, ["scan", str(shard), "--disable", "no-such-rule"])
    assert result.exit_code == 2
    assert "--disable: no rule or kind named no-such-rule" in result.stderr


def test_rules_list_shows_every_rule_and_user_rules():
    result = runner.invoke(app, ["rules", "list"])
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()[:-1]]
    assert listed == [r.id for r in BUILTIN.rules]
    result = runner.invoke(app, ["rules", "list", "--disable", "aws"])
    assert "aws-access-key-id" not in result.stdout and "github-pat" in result.stdout


@pytest.mark.slow
def test_rules_check_builtin_passes():
    result = runner.invoke(app, ["rules", "check"])
    assert result.exit_code == 0, result.stdout
    assert result.stdout.strip().endswith(", 0 failed")


@pytest.mark.slow
def test_rules_check_user_file_passes_then_fails_on_broken_example(tmp_path):
    good = _write(tmp_path, _yaml_rule(), "good.yaml")
    result = runner.invoke(app, ["rules", "check", str(good)])
    assert result.exit_code == 0, result.stdout
    assert result.stdout.strip() == "1 rules, 2 examples checked, 0 failed"

    broken = _write(
        tmp_path,
        _yaml_rule(
            examples=["token=acme_{{alnum:24}}", "token=acme_short1"],  # too short for the pattern
            negative_examples=["acme_xxxxxxxxxxxxxxxxxxxxxxxx", "real one: acme_{{alnum:24}}"],  # is detected
        ),
        "broken.yaml",
    )
    result = runner.invoke(app, ["rules", "check", str(broken)])
    assert result.exit_code == 1
    assert f"FAIL {broken}: acme-token: example 2 not detected" in result.stdout
    assert f"FAIL {broken}: acme-token: negative example 2 was detected (acme…(29))" in result.stdout
    assert result.stdout.strip().endswith("1 rules, 4 examples checked, 2 failed")


def test_rules_check_invalid_file_is_a_usage_error(tmp_path):
    bad = _write(tmp_path, _yaml_rule(pattern="(?P<secret>acme_[A-Z"), "bad.yaml")
    result = runner.invoke(app, ["rules", "check", str(bad)])
    assert result.exit_code == 2
    assert f"shardscan: error: {bad}: acme-token: pattern does not compile" in result.stderr


def test_user_rule_text_is_dedented_yaml(tmp_path):
    # A rule written by hand, in the verbose style of the built-ins, loads and detects.
    path = _write(tmp_path, textwrap.dedent(r"""
        - id: acme-token
          kind: acme
          name: ACME token
          description: An ACME token.
          severity: high
          keywords: [acme_]
          pattern: |
            (?x) \b (?P<secret> acme_ [A-Za-z0-9]{24} ) \b   # the token
          examples: ['acme_{{alnum:24}}']
          negative_examples: ['acme_']
    """))
    ruleset = load_ruleset([path])
    assert all(r.ok for r in check_ruleset(ruleset, {"acme-token"}))
