"""A Report built directly in code that exercises every reporter branch.

It has a finding of every verdict, an allowlisted finding, matched, stale and expired allowlist
entries, an unreadable shard, a limit hit, a path that did not exist, and scanned data that is
hostile to every output syntax (HTML, Markdown, XML, rich markup, control characters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from shardscan import redaction
from shardscan.model import AllowlistRef, CellLocation, Finding, NotScanned, ScanIssue, ScanStats, Status, Verdict
from shardscan.policy import Policy
from shardscan.report import (
    AllowlistSummary,
    EntryState,
    ExclusionCount,
    FileCounts,
    KnownSecretSummary,
    ReconciledEntry,
    Report,
    RuleInfo,
    ShardSummary,
)
from shardscan.synth import expand

SCANNED_AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

# A column path and a context an attacker controls (map keys and cell text come from the data).
HOSTILE_COLUMN = "meta{<script>alert(1)</script>|*x*[y](z)]]>`\x07}"
HOSTILE_CONTEXT = 'before </script><img src=x onerror=alert(2)> | [link](http://x) & "quote" [/] \x1b[31m after'

RULES = (
    RuleInfo("github-pat", "github", "GitHub personal access token (classic)",
             "Grants the token owner's access to GitHub repositories and APIs.", "critical"),
    RuleInfo("jwt", "jwt", "JSON Web Token (JWS)", "A signed token; may grant a session or API access.", "high"),
    RuleInfo("private-key", "private-key", "Private key (PEM)", "A private key in PEM form.", "critical"),
    RuleInfo("aws-access-key-id", "aws", "AWS access key ID", "Identifies an AWS access key.", "high"),
    RuleInfo("openai-api-key", "openai", "OpenAI API key", "Grants access to the OpenAI API.", "critical"),
)

SHARD_A = "train-00000-of-00004.parquet"
SHARD_B = "train-00001-of-00004.parquet"
SHARD_BAD = "train-00002-of-00004.parquet"
SHARD_CLEAN = "train-00003-of-00004.parquet"
MISSING = "extra/missing-*.parquet"


def _finding(rule: str, kind: str, shard: str, row: int, column: str, verdict: Verdict, *, role: str | None = None,
             blocking: bool = False, allow: AllowlistRef | None = None, encoding: tuple[str, ...] = (),
             context: str = "", n: int = 0, severity: str = "high") -> Finding:
    return Finding(
        rule_id=rule, kind=kind, severity=severity, location=CellLocation(shard, row, column, role),
        start=10 + n, end=50 + n, fingerprint="sha256:" + f"{n:02x}" * 32, preview=f"{kind[:3]}_…({40 + n})",
        verdict=verdict, detail=f"{verdict} because of check {n}", encoding=encoding,
        context=context or f"…token=[{kind[:3]}_…({40 + n})] end…", blocking=blocking,
        status=Status.ALLOWLISTED if allow else Status.NEW, allowlist=allow,
    )


ALLOW_REF = AllowlistRef(entry=1, reason="expired demo session token in scraped page; reviewed, harmless",
                         reviewer="dana", reviewed="2026-11-30")

FINDINGS = (
    _finding("github-pat", "github", SHARD_A, 0, "conversations[1].content", Verdict.VALID, role="tool",
             blocking=True, n=1, severity="critical"),
    _finding("jwt", "jwt", SHARD_A, 2, "conversations[3].content", Verdict.UNVERIFIED, role="assistant",
             blocking=True, encoding=("base64", "json"), n=2),
    _finding("private-key", "private-key", SHARD_A, 3, "instruction", Verdict.ENCRYPTED, blocking=True, n=3,
             severity="critical"),
    _finding("jwt", "jwt", SHARD_A, 4, "verifier_output", Verdict.EXPIRED, allow=ALLOW_REF, n=4),
    _finding("aws-access-key-id", "aws", SHARD_B, 0, HOSTILE_COLUMN, Verdict.INVALID, context=HOSTILE_CONTEXT, n=5),
    _finding("openai-api-key", "openai", SHARD_B, 1, "task", Verdict.EXAMPLE, encoding=("percent",), n=6,
             severity="critical"),
    _finding("private-key", "private-key", SHARD_B, 5, "conversations[0].content", Verdict.REDACTED, role="user",
             n=7, severity="critical"),
)

ISSUES = (
    ScanIssue(MISSING, "unreadable", "no such file, folder or glob match"),
    ScanIssue(SHARD_BAD, "unreadable", "not a Parquet file (bad magic bytes)"),
    ScanIssue(SHARD_B, "limit", "regex timeout after 2.0s (rule aws-access-key-id)", row_group=0, row=3,
              column="instruction"),
)


def _entry(index: int, line: int, fp: str, state: EntryState, findings: int, **fields: str) -> ReconciledEntry:
    """An allowlist entry as reconciliation lists it, in ``state``."""
    entry = ReconciledEntry(entry=index, line=line, fingerprint="sha256:" + fp * 32, rule=None, shard=None,
                            column=None, reason="", reviewer="dana", reviewed="2026-11-30", expires=None,
                            row=None, state=state, findings=findings)
    return replace(entry, **fields)


ALLOWLIST = AllowlistSummary(
    path="allowlist.yaml",
    entries=3,
    matched=(_entry(1, 10, "04", EntryState.MATCHED, 1, rule="jwt", reason=ALLOW_REF.reason),),
    stale=(_entry(2, 17, "ab", EntryState.STALE, 0, rule="github-pat", shard=SHARD_CLEAN,
                  reason="rotated token from the 2025 release"),),
    expired=(_entry(3, 24, "cd", EntryState.EXPIRED, 1, rule="jwt", expires="2026-06-30",
                    reason="temporary exception until re-scrape"),),
)


def _stats(rows: int, cells: int, nbytes: int, row_groups: int = 1) -> ScanStats:
    return ScanStats(shards=1, row_groups=row_groups, rows=rows, cells=cells, bytes=nbytes, seconds=0.25)


def _summary(shard: str, stats: ScanStats, issues: int) -> ShardSummary:
    fs = [f for f in FINDINGS if f.location.shard == shard]
    return ShardSummary(shard, stats, len(fs), sum(1 for f in fs if f.blocking), issues)


SHARDS = (
    _summary(SHARD_A, _stats(6, 140, 6_100, 2), 0),
    _summary(SHARD_B, _stats(6, 132, 5_900), 1),
    _summary(SHARD_BAD, ScanStats(shards=1), 1),
    _summary(SHARD_CLEAN, _stats(6, 128, 5_700), 0),
)


def sample_report(policy: Policy | None = None) -> Report:
    """The sample report: gate exit 3 (unreadable shard and a limit hit) with 3 blocking findings."""
    policy = policy or Policy()
    findings = tuple(replace(f, blocking=policy.is_blocking(f)) for f in FINDINGS)
    stats = ScanStats(shards=4, row_groups=4, rows=18, cells=400, bytes=17_700, candidate_cells=9, seconds=1.5)
    return Report(
        stats=stats, findings=findings, issues=ISSUES, shards=SHARDS, policy=policy,
        ruleset_digest="0123456789ab", kinds=("aws", "github", "jwt", "openai", "private-key"),
        scanned_at=SCANNED_AT, allowlist=ALLOWLIST, tool_version="0.1.0", rules=RULES,
    )


# ---- the golden files' reports ------------------------------------------------------------------
# Three reports that together reach every branch of every reporter: ``full`` (a finding of every
# verdict, an aggregated finding, a known-secret occurrence, an allowlisted finding, an issue of
# every kind a scan of files can have, excluded and not-scanned files, known-secret entries, matched,
# stale and expired allowlist entries, hostile data), ``clean`` (the gate passes) and ``empty``
# (nothing was scanned). Their findings are made from secrets generated here with fixed seeds, by
# the engine's own preview, fingerprint and context functions, so a golden file holding any of
# ``GOLDEN_SECRETS`` means a reporter leaked one. Everything that differs between runs elsewhere
# (clock, durations, tool version, ruleset digest, paths) is a constant in this module.

GOLDEN_VERSION = "0.1.0"
GOLDEN_DIGEST = "0123456789ab"
NOT_SCANNED_FILE = "assets/screenshot-0001.png"
# Every issue kind a scan can report (ScanIssue.kind); the golden reports hold each at least once.
ISSUE_KINDS = ("unreadable", "limit", "truncated", "not-scanned", "nothing-scanned")


@dataclass(frozen=True, slots=True)
class Planted:
    """One secret of a golden report: the finding a scan reports for it, and the plaintext it hides."""

    finding: Finding
    secret: str


def _planted(rule: str, kind: str, severity: str, verdict: Verdict, where: CellLocation, template: str, detail: str,
             *, encoding: tuple[str, ...] = (), allow: AllowlistRef | None = None, count: int = 1,
             label: str | None = None) -> Planted:
    """The finding for the secret between ``⟦`` and ``⟧`` in a cell holding ``template`` expanded.

    A known-secret occurrence (``label``) is previewed by its entry's label, as the engine does.
    """
    marked = expand(template, seed=f"golden-{rule}-{where.shard}-{where.row}")
    start, end = marked.index("⟦"), marked.index("⟧") - 1
    text = marked.replace("⟦", "").replace("⟧", "")
    secret = text[start:end]
    shown = label or redaction.preview(secret)
    return Planted(
        Finding(
            rule_id=rule, kind=kind, severity=severity, location=where, start=start, end=end,
            fingerprint=redaction.fingerprint(secret, kind), preview=shown, verdict=verdict, detail=detail,
            encoding=encoding, context=redaction.context_snippet(text, start, end, [(start, end, shown)]),
            status=Status.ALLOWLISTED if allow else Status.NEW, allowlist=allow, count=count,
        ),
        secret,
    )


_AGGREGATED = ("37 findings of this rule aggregated (over the cap per cell); they not verified (verification "
               "limit per cell); the span runs from the first to the last")
_ENCRYPTED_KEY = ("Use this key:\n⟦-----BEGIN ENCRYPTED PRIVATE KEY-----\n{{b64:64}}\n{{b64:64}}\n"
                  "-----END ENCRYPTED PRIVATE KEY-----⟧")

PLANTED = (
    _planted("github-pat", "github", "critical", Verdict.VALID,
             CellLocation(SHARD_A, 0, "conversations[1].content", "tool"),
             "$ git remote set-url origin https://⟦{{github:ghp_}}⟧@github.com/acme/infra.git",
             "checksum matches: a well-formed token"),
    _planted("jwt", "jwt", "high", Verdict.UNVERIFIED,
             CellLocation(SHARD_A, 2, "conversations[3].content", "assistant"),
             '{"headers": {"Authorization": "Bearer ⟦{{jwt}}⟧"}}',
             "signature not checked (HS256, no key); expires 2100-01-01", encoding=("base64", "json")),
    _planted("private-key", "private-key", "critical", Verdict.ENCRYPTED, CellLocation(SHARD_A, 3, "instruction"),
             _ENCRYPTED_KEY, "encrypted PKCS#8: protected by a passphrase, which may be in the data too"),
    _planted("jwt", "jwt", "high", Verdict.EXPIRED, CellLocation(SHARD_A, 4, "verifier_output"),
             "<html><script>var session = '⟦{{jwt:1559692800}}⟧';</script></html>", "expired 2019-06-05",
             allow=ALLOW_REF),
    _planted("known-secret", "known-secret", "critical", Verdict.VALID, CellLocation(SHARD_A, 5, "result"),
             "deploy: ⟦{{alnum:40}}⟧ ok", "env:DEPLOY_TOKEN: an occurrence of a secret you named (--known-secrets)",
             encoding=("base64",), label="env:DEPLOY_TOKEN"),
    _planted("slack-token", "slack", "critical", Verdict.UNVERIFIED,
             CellLocation(SHARD_A, 5, "conversations[4].content", "tool"),
             "tokens:\n⟦{{slack:bot}}⟧\n", _AGGREGATED, count=37),
    _planted("aws-access-key-id", "aws", "high", Verdict.INVALID, CellLocation(SHARD_B, 0, HOSTILE_COLUMN),
             HOSTILE_CONTEXT[:60] + " key=⟦{{aws_id:AKIA}}⟧ " + HOSTILE_CONTEXT[60:],
             "fails the key ID's checksum: a look-alike"),
    _planted("openai-api-key", "openai", "critical", Verdict.EXAMPLE, CellLocation(SHARD_B, 1, "task"),
             "export%20OPENAI_API_KEY%3D⟦{{openai:sk-proj-}}⟧", "documentation example (the docs' sample key)",
             encoding=("percent",)),
    _planted("private-key", "private-key", "critical", Verdict.REDACTED,
             CellLocation(SHARD_B, 5, "conversations[0].content", "user"),
             "⟦-----BEGIN RSA PRIVATE KEY-----\n{{b64:12}}<key body omitted>\n-----END RSA PRIVATE KEY-----⟧",
             "the key body is omitted or masked: no key material"),
    _planted("stripe-secret-key", "stripe", "critical", Verdict.TEST_MODE,
             CellLocation(SHARD_B, 2, "conversations[2].content", "assistant"),
             "stripe.api_key = '⟦sk_test_{{alnum:24}}⟧'", "a test-mode key: grants no access to live data or money"),
    _planted("connection-string-password", "connection-string", "high", Verdict.LOCAL_ONLY,
             CellLocation(SHARD_B, 3, "instruction"),
             "DATABASE_URL=postgres://app:⟦{{password:14}}⟧@localhost:5432/app",
             "host localhost: reachable only in the sandbox"),
)
# A redacted match holds no secret (its text is the placeholder the data shows), so it is no leak.
GOLDEN_SECRETS = tuple(p.secret for p in PLANTED if p.finding.verdict != Verdict.REDACTED)

GOLDEN_RULES = RULES + (
    RuleInfo("known-secret", "known-secret", "A secret you named (--known-secrets)",
             "An occurrence, in any decoded form, of a value listed in a --known-secrets file.", "critical"),
    RuleInfo("slack-token", "slack", "Slack token", "A Slack bot, user or app-level token.", "critical"),
    RuleInfo("stripe-secret-key", "stripe", "Stripe secret or restricted key", "A Stripe secret key (sk_).",
             "critical"),
    RuleInfo("connection-string-password", "connection-string", "Password in a connection string or URL",
             "A password in the userinfo of a URL.", "high"),
)
GOLDEN_KINDS = ("aws", "connection-string", "github", "jwt", "openai", "private-key", "slack", "stripe")

GOLDEN_ISSUES = (
    ScanIssue(MISSING, "unreadable", "no such file, folder or glob match"),
    ScanIssue(NOT_SCANNED_FILE, "not-scanned", "an image (PNG): not a data format shardscan reads"),
    ScanIssue(SHARD_A, "truncated", "findings: 38 in this cell, more than the cap of 1 per cell "
              "(--max-findings-per-cell): 37 aggregated by rule and verdict into 1 finding(s) with a count",
              row_group=1, row=5, column="conversations[4].content"),
    ScanIssue(SHARD_BAD, "unreadable", "not a Parquet file (bad magic bytes)"),
    ScanIssue(SHARD_B, "limit", "regex timeout after 2.0s (rule aws-access-key-id)", row_group=0, row=3,
              column="instruction"),
)

GOLDEN_FILES = FileCounts(
    scanned=4,
    excluded=(ExclusionCount("--exclude", 1), ExclusionCount(".shardscanignore", 2)),
    not_scanned=(NotScanned(NOT_SCANNED_FILE, "an image (PNG): not a data format shardscan reads", 48_213),),
    excluded_members=1,
)


def _golden_summary(findings: tuple[Finding, ...], issues: tuple[ScanIssue, ...], shard: str,
                    stats: ScanStats) -> ShardSummary:
    fs = [f for f in findings if f.location.shard == shard]
    return ShardSummary(shard, stats, len(fs), sum(1 for f in fs if f.blocking),
                        sum(1 for i in issues if i.shard == shard))


def _golden(findings: tuple[Finding, ...], issues: tuple[ScanIssue, ...], shards: dict[str, ScanStats],
            policy: Policy, **fields: object) -> Report:
    findings = tuple(sorted((replace(f, blocking=policy.is_blocking(f)) for f in findings), key=Finding.sort_key))
    total = ScanStats()
    for stats in shards.values():
        total += stats
    return Report(
        stats=replace(total, shards=len(shards), candidate_cells=len({f.location for f in findings}), seconds=1.5),
        findings=findings, issues=issues,
        shards=tuple(_golden_summary(findings, issues, s, stats) for s, stats in shards.items()),
        policy=policy, ruleset_digest=GOLDEN_DIGEST, kinds=GOLDEN_KINDS, scanned_at=SCANNED_AT,
        tool_version=GOLDEN_VERSION, rules=GOLDEN_RULES, **fields,  # type: ignore[arg-type]
    )


def full_report(policy: Policy | None = None) -> Report:
    """Every branch: a finding of every verdict, every issue kind but ``nothing-scanned``, files not
    scanned and excluded, known-secret entries, an allowlist with matched, stale and expired entries
    (gate exit 3: an unreadable shard, a limit hit, a truncated cell, a file not scanned)."""
    return _golden(
        tuple(p.finding for p in PLANTED), GOLDEN_ISSUES,
        {SHARD_A: _stats(6, 140, 6_100, 2), SHARD_B: _stats(6, 132, 5_900), SHARD_BAD: ScanStats(shards=1),
         SHARD_CLEAN: _stats(6, 128, 5_700)},
        policy or Policy(), allowlist=ALLOWLIST, files=GOLDEN_FILES,
        known_secrets=(KnownSecretSummary("env:DEPLOY_TOKEN", 400, 1),
                       KnownSecretSummary("sha256:5e884898da28", 400, 0)),
    )


def clean_report() -> Report:
    """The gate passes: only an allowlisted and a non-blocking finding, nothing left unread."""
    kept = tuple(p.finding for p in PLANTED if p.finding.verdict in (Verdict.EXPIRED, Verdict.EXAMPLE))
    matched = ALLOWLIST.matched
    return _golden(
        kept, (), {SHARD_A: _stats(6, 140, 6_100, 2), SHARD_B: _stats(6, 132, 5_900)}, Policy(),
        allowlist=AllowlistSummary(path="allowlist.yaml", entries=1, matched=matched),
        files=FileCounts(scanned=2),
    )


def empty_report() -> Report:
    """Nothing was scanned (the path held no file shardscan reads): exit 3, no allowlist, no rules matched."""
    return _golden((), (ScanIssue("data/", "nothing-scanned", "no file was scanned"),), {}, Policy(),
                   files=FileCounts())


GOLDEN_REPORTS = {"full": full_report, "clean": clean_report, "empty": empty_report}
