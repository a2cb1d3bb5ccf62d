"""Numbers and wording shared by every reporter, so all formats say the same thing the same way."""

from __future__ import annotations

from shardscan.model import Finding, IssueKind, ScanIssue, Verdict
from shardscan.pretty_json import pretty_json as pretty_json
from shardscan.report import VERDICTS as VERDICTS
from shardscan.report import ReconciledEntry, Report
from shardscan.report import ShardRow as ShardRow
from shardscan.report import files_dict as files_dict
from shardscan.report import shard_rows as shard_rows
from shardscan.report import summary_numbers as summary_numbers
from shardscan.report import verdict_counts as verdict_counts

# The numbers every format carries (``ShardRow``, ``shard_rows``, ``summary_numbers``, ``files_dict``)
# live with the report, whose JSON document is built from them; they are re-exported here, where
# every reporter finds what it shares with the others.

# What each verdict means to the person signing off a release (legends in HTML and Markdown).
# Keyed by the members (a test checks every member has an entry), typed by their text, which is
# how reporters look verdicts up (``by_verdict`` counts are keyed by text).
VERDICT_MEANING: dict[str, str] = {
    Verdict.VALID: "verified offline as a working credential (structure, checksum or key material)",
    Verdict.UNVERIFIED: "looks like a credential; no offline check could confirm or rule it out",
    Verdict.ENCRYPTED: "an encrypted private key: harmless only while its passphrase stays secret",
    Verdict.EXPIRED: "a credential that has expired (e.g. a JWT past its exp)",
    Verdict.INVALID: "fails the credential's own structure or checksum: not usable",
    Verdict.EXAMPLE: "a documented example or placeholder value",
    Verdict.REDACTED: "an elided or masked value (e.g. a key body replaced by an omission marker)",
    Verdict.TEST_MODE: "a real test-mode or publishable key: grants no access to live data or money",
    Verdict.LOCAL_ONLY: "a real credential for a service reachable only inside the sandbox (localhost, a compose "
                        "service)",
}

# Display names of credential families, for the dataset card and legends; unknown kinds show as-is.
KIND_NAMES: dict[str, str] = {
    "anthropic": "Anthropic API keys",
    "aws": "AWS access keys",
    "github": "GitHub tokens",
    "huggingface": "Hugging Face tokens",
    "jwt": "JSON Web Tokens",
    "openai": "OpenAI API keys",
    "private-key": "PEM private keys",
    "openrouter": "OpenRouter API keys",
    "openai-compatible": "OpenAI-compatible sk- keys (DeepSeek, DashScope, Moonshot, others)",
    "groq": "Groq API keys",
    "xai": "xAI API keys",
    "google-api-key": "Google API keys",
    "perplexity": "Perplexity API keys",
    "replicate": "Replicate API tokens",
    "fireworks": "Fireworks AI API keys",
    "tavily": "Tavily API keys",
    "langsmith": "LangSmith API keys",
    "pinecone": "Pinecone API keys",
    "cerebras": "Cerebras API keys",
    "databricks": "Databricks tokens",
    "elevenlabs": "ElevenLabs API keys",
    "wandb": "Weights and Biases API keys",
    "kaggle": "Kaggle API tokens and keys",
    "nvidia": "NVIDIA API keys",
    "cohere": "Cohere API keys",
    "mistral": "Mistral AI API keys",
    "gitlab": "GitLab tokens",
    "atlassian": "Atlassian and Bitbucket tokens",
    "npm": "npm access tokens",
    "rubygems": "RubyGems API keys",
    "nuget": "NuGet API keys",
    "pypi": "PyPI API tokens",
    "docker-hub": "Docker Hub access tokens",
    "terraform-cloud": "Terraform Cloud tokens",
    "vault": "HashiCorp Vault tokens",
    "onepassword": "1Password service account tokens",
    "doppler": "Doppler tokens",
    "pulumi": "Pulumi access tokens",


    "gcp": "GCP service-account keys",
    "azure": "Azure storage keys and client secrets",
    "digitalocean": "DigitalOcean tokens",
    "alibaba": "Alibaba Cloud access keys",
    "tencent": "Tencent Cloud SecretIds",
    "heroku": "Heroku API keys",
    "supabase": "Supabase access tokens",
    "vercel": "Vercel tokens",
    "netlify": "Netlify tokens",
    "flyio": "Fly.io tokens",
    "cloudflare": "Cloudflare API tokens and keys",
    "slack": "Slack tokens and webhooks",
    "zapier": "Zapier webhooks",
    "discord": "Discord bot tokens and webhooks",
    "telegram": "Telegram bot tokens",
    "stripe": "Stripe API keys",
    "sendgrid": "SendGrid API keys",
    "twilio": "Twilio API keys and auth tokens",
    "mailgun": "Mailgun API keys",
    "mailchimp": "Mailchimp API keys",
    "shopify": "Shopify access tokens",
    "notion": "Notion integration tokens",
    "linear": "Linear API keys",
    "okta": "Okta API tokens",
    "laravel": "Laravel application keys",
    "postman": "Postman API keys",
    "sentry": "Sentry tokens and DSNs",
    "newrelic": "New Relic keys",
    "datadog": "Datadog API and application keys",
    "grafana": "Grafana tokens",
    "age": "age secret keys",
    "google-oauth": "Google OAuth client secrets and tokens",
    "tailscale": "Tailscale auth keys and API keys",
    "figma": "Figma access tokens",
    "posthog": "PostHog personal API keys",
    "sonarqube": "SonarQube tokens",
    "sourcegraph": "Sourcegraph access tokens",
    "buildkite": "Buildkite API tokens",
    "circleci": "CircleCI API tokens",
    "neon": "Neon API keys",
    "planetscale": "PlanetScale tokens and passwords",
    "resend": "Resend API keys",
    "brevo": "Brevo (Sendinblue) keys",
    "dynatrace": "Dynatrace tokens",
    "airtable": "Airtable access tokens",
    "dropbox": "Dropbox access tokens",
    "mapbox": "Mapbox secret tokens",
    "e2b": "E2B API keys",
    "firecrawl": "Firecrawl API keys",
    "jina": "Jina AI API keys",
    "hubspot": "HubSpot access tokens",
    "square": "Square access tokens and OAuth secrets",
    "jfrog": "JFrog Artifactory API keys",
    "microsoft-teams": "Microsoft Teams webhooks",
    "wireguard": "WireGuard private and preshared keys",
    "connection-string": "Passwords in connection strings and URLs",
    "password": "Passwords",
    "generic-secret": "Generic secrets and API keys",
    "known-secret": "Your own secrets (--known-secrets)",
}


def issue_where(issue: ScanIssue) -> str:
    """Where an issue is, in words: ``shard row group 2 row 5 column``."""
    where = issue.shard
    if issue.row_group is not None:
        where += f" row group {issue.row_group}"
    if issue.row is not None:
        where += f" row {issue.row}"
    if issue.column:
        where += f" {issue.column}"
    return where


def decision_line(report: Report) -> str:
    """The gate decision as one line: ``gate: PASS (exit 0): <reason>``."""
    decision = report.decision
    return f"gate: {'PASS' if decision.passed else 'FAIL'} (exit {decision.exit_code}): {decision.reason}"


# Issue kinds for files that were found but not read at all (discovery), as opposed to data that
# was read only in part (unreadable, limit).
NOT_READ_KINDS: tuple[IssueKind, ...] = (IssueKind.NOT_SCANNED, IssueKind.NOTHING_SCANNED)


def gate_why(report: Report) -> list[str]:
    """Why the gate decided as it did, beyond the one-line reason: the policy that was applied."""
    policy = report.policy
    blocking = "every verdict (--strict)" if policy.strict else ", ".join(str(v) for v in policy.blocking_verdicts)
    lines = [f"blocking verdicts: {blocking}; allowlisted findings never block"]
    if report.files is not None:
        lines.insert(0, f"files: {report.files.summary()}")
    unreadable = report.unreadable
    limits = [i for i in report.issues if i.kind == IssueKind.LIMIT]
    truncated = [i for i in report.issues if i.kind == IssueKind.TRUNCATED]
    not_scanned = [i for i in report.issues if i.kind == IssueKind.NOT_SCANNED]
    if not_scanned:
        lines.append(f"{len(not_scanned)} file(s) not scanned (not a format shardscan reads): exit 3; "
                     "exclude them (--exclude, .shardscanignore) if they are meant to be published unread")
    if any(i.kind == IssueKind.NOTHING_SCANNED for i in report.issues):
        lines.append("nothing was scanned: exit 3, an empty scan certifies nothing")
    if unreadable:
        if policy.skip_unreadable:
            how = "reported but not failing (--skip-unreadable)"
        else:
            how = "exit 3: an unread shard cannot be certified clean"
        lines.append(f"{len(unreadable)} unreadable problem(s): {how}")
    if limits:
        lines.append(f"{len(limits)} limit(s) hit: exit 3, part of the data was not fully scanned")
    if truncated:
        if policy.allow_truncated_findings:
            how = "reported but not failing (--allow-truncated-findings)"
        else:
            how = "exit 3: findings over a cap were counted in aggregates, not listed one by one"
        lines.append(f"{len(truncated)} finding cap(s) hit: {how}")
    allow = report.allowlist
    if allow and (allow.stale or allow.expired):
        effect = "fail the gate (--fail-on-stale)" if policy.fail_on_stale else "reported, not failing"
        lines.append(f"{len(allow.stale)} stale and {len(allow.expired)} expired allowlist entr(ies): {effect}")
    return lines


def entry_text(entry: ReconciledEntry) -> str:
    """One allowlist entry (matched, stale or expired) in words, from whichever fields it has."""
    parts = [f"entry {entry.entry}" + (f" (line {entry.line})" if entry.line else "")]
    narrowing: tuple[tuple[str, object], ...] = (
        ("rule", entry.rule), ("shard", entry.shard), ("column", entry.column), ("row", entry.row),
    )
    for key, value in narrowing:
        if value not in (None, ""):
            parts.append(f"{key}={value}")
    if entry.fingerprint:
        parts.append(entry.fingerprint[:19] + "…")
    if entry.expires:
        parts.append(f"expires {entry.expires}")
    if entry.reason:
        parts.append(f"reason: {entry.reason}")
    return ", ".join(parts)


def sorted_by_kind(findings: tuple[Finding, ...]) -> dict[str, list[Finding]]:
    """Findings grouped by credential kind (kinds sorted), each group in report order."""
    groups: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=lambda f: (f.kind, f.sort_key())):
        groups.setdefault(f.kind, []).append(f)
    return groups
