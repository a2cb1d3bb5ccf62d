"""The realistic corpus (tests/realworld_corpus.py), asserted exactly: every labelled credential found
once by its rule with a right verdict, nothing blocking on a hard negative, and docs/precision.md current."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from shardscan.engine import Scanner, ScanOptions
from tests import realworld_corpus as rc
from tests.conftest import CONVERSATIONS

# Scans the whole precision corpus: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

REPORT = Path(__file__).resolve().parent.parent / "docs" / "precision.md"

# Every finding on a hard negative, as (rule, verdict): reported for review, never blocking. A new
# entry here is a new false alarm; a verdict moving into the blocking set fails the gate test below.
NEGATIVE_FINDINGS: dict[str, list[tuple[str, str]]] = {
    "docs-your-token": [("aws-access-key-id", "redacted"), ("huggingface-token", "redacted")]
    + [("generic-secret-assignment", "redacted")] * 2,
    "aws-doc-example": [("aws-access-key-id", "example"), ("aws-secret-access-key", "example")],
    "pem-structure-prompt": [("private-key", "redacted")],
    "pem-begin-then-prose": [("private-key-truncated", "invalid")],
    "pem-ellipsis": [("private-key", "redacted")],
    "fake-fixtures": [("jwt", "invalid")],
    "jwt-truncated-logs": [("jwt", "example")],
    "jwt-io-sample": [("jwt", "example")],
    "aws-secret-next-to-sha": [("aws-access-key-id", "example")],
    "rfc7519-example-jwt": [("jwt", "example")],
    "uppercase-words-after-asia": [("aws-access-key-id", "redacted")],
    "key-prefix-constants": [("aws-access-key-id", "redacted")],
    "ghs-installation-token-placeholder": [("github-app-token", "invalid")],
    "pem-invented-in-file-view": [("private-key", "invalid")],
    "k8s-secret-placeholders": [("aws-secret-access-key", "example")],
    "jwt-fixture-text-signature": [("jwt", "invalid")],
    "aws-alphabet-placeholder": [("aws-secret-access-key", "redacted")],
    "invented-openai-key": [("openai-api-key", "invalid")],
    "npm-bad-checksum": [("npm-access-token", "invalid")],
    "pypi-expired": [("pypi-api-token", "expired")],
    # README placeholders under API-key names: reported as placeholders, never blocking.
    "readme-placeholders": [("generic-secret-assignment", "redacted")] * 2,


    # Test-mode and publishable Stripe keys, a DSN's public key, the Azurite emulator's published key.
    "stripe-and-slack-docs": [("stripe-secret-key", "test-mode")],
    "stripe-test-mode-and-publishable": [("stripe-publishable-key", "test-mode"), ("stripe-secret-key", "test-mode")],
    "sentry-public-dsn": [("sentry-dsn", "test-mode")],
    "azurite-connection-string": [("azure-storage-account-key", "example")],
    # Credentials without a vendor prefix: placeholders, defaults and local-only services.
    "docs-placeholders": [("generic-secret-assignment", "redacted")],
    "compose-variables": [("connection-string-password", "redacted")],
    "helm-template": [("password-assignment", "redacted")],
    "python-format": [("connection-string-password", "redacted"), ("password-assignment", "redacted")],
    "masked-output": [("connection-string-password", "redacted")],
    "docs-connection-strings": [("connection-string-password", "example")] * 3 + [("password-assignment", "example")],
    "docs-your-password-here": [("password-assignment", "redacted")],
    "markup-without-values": [("password-name-value", "redacted")],  # <password>${env.X}</password>
    "compose-local-only": [("connection-string-password", "local-only"), ("password-assignment", "local-only")],
    "localhost-services": ([("connection-string-password", "local-only")]
                           + [("password-command-line", "local-only")] * 2),
    "bearer-to-the-local-api": [("bearer-token", "local-only")],
    "azure-sas-expired-and-code": [("azure-sas-token", "expired")],
    "redis-in-compose": [("password-command-line", "local-only")],  # (one password, set and used)
}


# The cloud, messaging, payments and SaaS families of the corpus.
CLOUD_SAAS_KINDS = {
    "gcp", "azure", "digitalocean", "alibaba", "heroku", "supabase", "vercel", "netlify", "flyio", "cloudflare",
    "slack", "discord", "telegram", "stripe", "sendgrid", "twilio", "mailgun", "mailchimp", "shopify", "notion",
    "linear", "postman", "sentry", "newrelic", "datadog", "grafana", "age",
}


@pytest.fixture(scope="module")
def cases() -> list[rc.Case]:
    return rc.corpus()


@pytest.fixture(scope="module")
def results(cases, ruleset) -> list[rc.CaseResult]:
    return rc.run(ruleset, cases)


def test_corpus_covers_every_kind_and_place(cases):
    kinds = {e.kind for c in cases for e in c.expect}
    assert kinds >= {"jwt", "aws", "github", "openai", "anthropic", "huggingface", "private-key",
                     "connection-string", "password", "generic-secret"} | CLOUD_SAAS_KINDS
    # Every kind of the LLM, ML, code-hosting, registry and secret-manager rules has a labelled cell.
    assert kinds >= {
        "openrouter", "openai-compatible", "groq", "xai", "google-api-key", "perplexity", "replicate", "fireworks",
        "tavily", "langsmith", "pinecone", "cerebras", "cohere", "mistral", "elevenlabs", "databricks", "wandb",
        "kaggle", "npm", "pypi", "docker-hub", "gitlab", "atlassian", "terraform-cloud", "vault", "onepassword",
        "doppler", "pulumi",
    }
    # And of the developer services an agent's environment holds keys for (rules/developer-services.yaml).
    assert kinds >= {
        "google-oauth", "tailscale", "figma", "firecrawl", "sonarqube", "sourcegraph", "buildkite", "neon",
        "planetscale", "resend", "e2b", "nvidia", "rubygems", "nuget", "tencent", "okta", "zapier",
        "laravel",
    }
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    assert sum(1 for c in cases if c.negative) >= 40
    assert sum(len(c.expect) for c in cases) >= 100


def test_every_positive_is_found_once_by_its_rule_with_a_right_verdict(results):
    problems = [
        (r.case.name, what)
        for r in results
        if not r.case.negative
        for what in (
            [f"missed {e.rule_id}" for e in r.missed]
            + [f"{e.rule_id} reported as {other}" for e, other in r.wrong_rule]
            + [f"{e.rule_id} verdict {v}" for e, v in r.wrong_verdict]
            + [f"{e.rule_id} reported twice" for e in r.duplicated]
            + [f"unlabelled {rule} ({verdict})" for rule, verdict in r.extra]
        )
    ]
    assert problems == []
    assert sum(len(r.found) for r in results) == sum(len(r.case.expect) for r in results)


def test_live_looking_positives_block_and_the_expired_twin_does_not(results):
    for r in results:
        for exp in r.case.expect:
            assert (exp.verdicts <= rc.BLOCKING) or exp.verdicts == {"expired"}, r.case.name


def test_hard_negatives_never_block_and_their_findings_are_exactly_the_reviewed_ones(results):
    got = {r.case.name: sorted(r.extra) for r in results if r.case.negative and r.extra}
    assert got == {name: sorted(v) for name, v in NEGATIVE_FINDINGS.items()}
    assert [r.case.name for r in results if r.case.negative and r.extra_blocking] == []


def test_figures(results):
    fig = rc.figures(results)
    assert (fig.found, fig.missed, fig.wrong_rule, fig.wrong_verdict, fig.duplicated) == (fig.positives, 0, 0, 0, 0)
    assert (fig.negative_cases_blocking, fig.negative_blocking_findings) == (0, 0)
    assert fig.negative_findings == sum(len(v) for v in NEGATIVE_FINDINGS.values())


def test_the_same_cells_in_a_trace_shard_give_the_same_findings_at_their_rows(cases, ruleset):
    """The corpus as tool messages of a conversations column: findings land on the right row and cell."""
    rows = [[{"role": "user", "content": "run it"}, {"role": "tool", "content": c.text}] for c in cases]
    table = pa.table({"conversations": pa.array(rows, type=CONVERSATIONS)})
    scanner = Scanner(ruleset, ScanOptions(now=rc.NOW))
    result = scanner.scan_table(table, shard="train-00000-of-00001.parquet")
    assert result.issues == ()
    by_row: dict[int, list[tuple[str, str, str]]] = {}
    for f in result.findings:
        assert (f.location.column, f.location.role) == ("conversations[1].content", "tool")
        by_row.setdefault(f.location.row, []).append((f.rule_id, f.fingerprint, str(f.verdict)))
    for row, case in enumerate(cases):
        findings, _ = scanner.scan_text(case.text)
        assert sorted(by_row.get(row, [])) == sorted(
            (f.rule_id, f.fingerprint, str(f.verdict)) for f in findings), case.name


def test_docs_precision_is_generated_from_the_corpus(results, ruleset):
    gaps = rc.run(ruleset, rc.gaps())
    assert REPORT.read_text(encoding="utf-8") == rc.render(results, gaps), (
        "docs/precision.md is stale: run python -m tests.realworld_corpus --report docs/precision.md"
    )


def test_the_report_holds_no_credential(cases, results):
    text = rc.render(results)
    for case in cases:
        for exp in case.expect:
            for piece in (exp.secret, *exp.secret.splitlines()[1:-1]):
                if len(piece) >= 16:
                    assert piece not in text


def test_exported_transcripts_are_covered(results):
    """Markdown exports, aider histories, pytest repr failures and SWE-agent trajectories: every
    credential cut by their widths and prefixes found, their wrapped ordinary text quiet."""
    mine = [r for r in results if r.case.category == "transcripts"]
    assert {r.case.name for r in mine if not r.case.negative} == {
        "md-export-quoted-pane", "aider-chat-history", "pytest-failure-config-repr", "swe-agent-trajectory",
    }
    assert sum(len(r.found) for r in mine) == sum(len(r.case.expect) for r in mine) == 8
    assert [r.case.name for r in mine if r.case.negative and r.extra] == []
