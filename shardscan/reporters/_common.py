"""Numbers and wording shared by every reporter, so all formats say the same thing the same way."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from json.encoder import c_make_encoder, encode_basestring  # what json.dumps itself runs

from shardscan.model import Finding, ScanIssue, Status, Verdict
from shardscan.report import Report

VERDICTS: tuple[str, ...] = tuple(str(v) for v in Verdict)

# What each verdict means to the person signing off a release (legends in HTML and Markdown).
VERDICT_MEANING: dict[str, str] = {
    "valid": "verified offline as a working credential (structure, checksum or key material)",
    "unverified": "looks like a credential; no offline check could confirm or rule it out",
    "encrypted": "an encrypted private key: harmless only while its passphrase stays secret",
    "expired": "a credential that has expired (e.g. a JWT past its exp)",
    "invalid": "fails the credential's own structure or checksum: not usable",
    "example": "a documented example or placeholder value",
    "redacted": "an elided or masked value (e.g. a key body replaced by an omission marker)",
    "test-mode": "a real test-mode or publishable key: grants no access to live data or money",
    "local-only": "a real credential for a service reachable only inside the sandbox (localhost, a compose service)",
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
    "cohere": "Cohere API keys",
    "mistral": "Mistral AI API keys",
    "gitlab": "GitLab tokens",
    "atlassian": "Atlassian and Bitbucket tokens",
    "npm": "npm access tokens",
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
    "heroku": "Heroku API keys",
    "supabase": "Supabase access tokens",
    "vercel": "Vercel tokens",
    "netlify": "Netlify tokens",
    "flyio": "Fly.io tokens",
    "cloudflare": "Cloudflare API tokens and keys",
    "slack": "Slack tokens and webhooks",
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
    "postman": "Postman API keys",
    "sentry": "Sentry tokens and DSNs",
    "newrelic": "New Relic keys",
    "datadog": "Datadog API and application keys",
    "grafana": "Grafana tokens",
    "age": "age secret keys",
    "connection-string": "Passwords in connection strings and URLs",
    "password": "Passwords",
    "generic-secret": "Generic secrets and API keys",
    "known-secret": "Your own secrets (--known-secrets)",
}


@dataclass(frozen=True, slots=True)
class ShardRow:
    """One line of a per-shard summary, including shards known only from an error (e.g. a missing path)."""

    shard: str
    rows: int
    row_groups: int
    cells: int
    bytes: int
    findings: int
    blocking: int
    allowlisted: int
    by_verdict: dict[str, int]
    issues: tuple[ScanIssue, ...]

    @property
    def unreadable(self) -> bool:
        """True when part of the shard could not be read."""
        return any(i.kind == "unreadable" for i in self.issues)

    @property
    def failed(self) -> bool:
        """True when this shard alone would fail the gate: blocking findings or an incomplete read."""
        return self.blocking > 0 or bool(self.issues)


def verdict_counts(findings: tuple[Finding, ...] | list[Finding]) -> dict[str, int]:
    """Findings per verdict, every verdict present (zeros included), in the Verdict enum's order."""
    counts = Counter(str(f.verdict) for f in findings)
    return {v: counts.get(v, 0) for v in VERDICTS}


def shard_rows(report: Report) -> list[ShardRow]:
    """Per-shard numbers in shard order; a path that produced only an error gets a zero row."""
    findings: dict[str, list[Finding]] = {}
    for f in report.findings:
        findings.setdefault(f.location.shard, []).append(f)
    issues: dict[str, list[ScanIssue]] = {}
    for i in report.issues:
        issues.setdefault(i.shard, []).append(i)
    rows: list[ShardRow] = []
    known = set()
    for s in report.shards:
        known.add(s.shard)
        fs = findings.get(s.shard, [])
        rows.append(
            ShardRow(
                shard=s.shard, rows=s.stats.rows, row_groups=s.stats.row_groups, cells=s.stats.cells,
                bytes=s.stats.bytes, findings=len(fs), blocking=sum(1 for f in fs if f.blocking),
                allowlisted=sum(1 for f in fs if f.status == Status.ALLOWLISTED), by_verdict=verdict_counts(fs),
                issues=tuple(issues.get(s.shard, ())),
            )
        )
    for shard in sorted((set(issues) | set(findings)) - known):
        # Known only from an error (a path that matched nothing) or, for a hand-built report, a finding.
        fs = findings.get(shard, [])
        rows.append(
            ShardRow(
                shard, 0, 0, 0, 0, len(fs), sum(1 for f in fs if f.blocking),
                sum(1 for f in fs if f.status == Status.ALLOWLISTED), verdict_counts(fs), tuple(issues.get(shard, ())),
            )
        )
    return sorted(rows, key=lambda r: r.shard)


def summary_numbers(report: Report) -> dict:
    """The headline numbers every format carries (a test checks they agree across formats)."""
    return {
        "shards": report.stats.shards,
        "findings": len(report.findings),
        "blocking": len(report.blocking),
        "allowlisted": sum(1 for f in report.findings if f.status == Status.ALLOWLISTED),
        "errors": len(report.issues),
        "by_verdict": verdict_counts(report.findings),
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
NOT_READ_KINDS = ("not-scanned", "nothing-scanned")


def files_dict(report: Report) -> dict | None:
    """What became of every file under the scanned paths, as plain data (None for in-memory scans)."""
    files = report.files
    if files is None:
        return None
    return {
        "scanned": files.scanned,
        "excluded": files.excluded_total,
        "excluded_by": {e.source: e.count for e in files.excluded},
        "not_scanned": [{"path": n.path, "reason": n.reason, "size": n.size} for n in files.not_scanned],
        "excluded_archive_members": files.excluded_members,
    }


def gate_why(report: Report) -> list[str]:
    """Why the gate decided as it did, beyond the one-line reason: the policy that was applied."""
    policy = report.policy
    blocking = "every verdict (--strict)" if policy.strict else ", ".join(str(v) for v in policy.blocking_verdicts)
    lines = [f"blocking verdicts: {blocking}; allowlisted findings never block"]
    if report.files is not None:
        lines.insert(0, f"files: {report.files.summary()}")
    unreadable = report.unreadable
    limits = [i for i in report.issues if i.kind != "unreadable" and i.kind not in NOT_READ_KINDS]
    not_scanned = [i for i in report.issues if i.kind == "not-scanned"]
    if not_scanned:
        lines.append(f"{len(not_scanned)} file(s) not scanned (not a format shardscan reads): exit 3; "
                     "exclude them (--exclude, .shardscanignore) if they are meant to be published unread")
    if any(i.kind == "nothing-scanned" for i in report.issues):
        lines.append("nothing was scanned: exit 3, an empty scan certifies nothing")
    if unreadable:
        how = "reported but not failing (--skip-unreadable)" if policy.skip_unreadable else "exit 3: an unread shard cannot be certified clean"
        lines.append(f"{len(unreadable)} unreadable problem(s): {how}")
    if limits:
        lines.append(f"{len(limits)} limit(s) hit: exit 3, part of the data was not fully scanned")
    allow = report.allowlist
    if allow and (allow.stale or allow.expired):
        effect = "fail the gate (--fail-on-stale)" if policy.fail_on_stale else "reported, not failing"
        lines.append(f"{len(allow.stale)} stale and {len(allow.expired)} expired allowlist entr(ies): {effect}")
    return lines


def entry_text(entry: dict) -> str:
    """One allowlist entry (matched, stale or expired) in words, from whichever fields it has."""
    parts = [f"entry {entry.get('entry', '?')}" + (f" (line {entry['line']})" if entry.get("line") else "")]
    for key in ("rule", "shard", "column", "row"):
        if entry.get(key) not in (None, ""):
            parts.append(f"{key}={entry[key]}")
    fp = entry.get("fingerprint")
    if fp:
        parts.append(str(fp)[:19] + "…")
    if entry.get("expires"):
        parts.append(f"expires {entry['expires']}")
    if entry.get("reason"):
        parts.append(f"reason: {entry['reason']}")
    return ", ".join(parts)


def sorted_by_kind(findings: tuple[Finding, ...]) -> dict[str, list[Finding]]:
    """Findings grouped by credential kind (kinds sorted), each group in report order."""
    groups: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=lambda f: (f.kind, f.sort_key())):
        groups.setdefault(f.kind, []).append(f)
    return groups


def pretty_json(value: object) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, byte for byte, at C speed for flat containers.

    With ``indent`` the standard library falls back to its pure-Python encoder: about 15
    microseconds per finding, more than 0.1 s after a scan of 8000 findings. A container whose
    values are all scalars or empty containers (every finding) is written by the C encoder in
    one call, its separators carrying the line breaks and indentation; other containers are
    walked here, their flat members again written by the C encoder.
    """
    parts: list[str] = []
    _pretty(value, parts, "\n")
    return "".join(parts)


_CONTAINERS = (dict, list, tuple)


def _pretty(value: object, out: list[str], newline: str) -> None:
    inner = newline + "  "
    encode = _flat_encoder(inner)
    if isinstance(value, dict) and value:
        if _flat(value.values()):
            out.append("{" + inner + encode(value)[1:-1] + newline + "}")
            return
        separator = "{" + inner
        for key, item in value.items():
            # The key through the C encoder, which converts non-string keys as json.dumps does.
            out.append(separator + encode({key: None})[1:-7] + ": ")
            _pretty(item, out, inner)
            separator = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)) and value:
        if _flat(value):
            out.append("[" + inner + encode(value)[1:-1] + newline + "]")
            return
        separator = "[" + inner
        for item in value:
            out.append(separator)
            _pretty(item, out, inner)
            separator = "," + inner
        out.append(newline + "]")
    else:
        out.append(encode(value))  # a scalar or an empty container


def _flat(values: Iterable[object]) -> bool:
    """Whether every value is a scalar or an empty container (written alike at any indentation)."""
    return not any([v for v in values if isinstance(v, _CONTAINERS)])


@lru_cache(maxsize=64)
def _flat_encoder(inner: str) -> Callable[[object], str]:
    """The C encoder writing a flat container's members one per line at indentation ``inner``."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=("," + inner, ": "))
    if c_make_encoder is None:  # an interpreter without the C accelerator
        return encoder.encode
    make = c_make_encoder(None, encoder.default, encode_basestring, None, ": ", "," + inner, False, False, True)

    def encode(value: object) -> str:
        if isinstance(value, str):
            return encode_basestring(value)
        return "".join(make(value, 0))

    return encode
