"""A Report built directly in code that exercises every reporter branch.

It has a finding of every verdict, an allowlisted finding, matched, stale and expired allowlist
entries, an unreadable shard, a limit hit, a path that did not exist, and scanned data that is
hostile to every output syntax (HTML, Markdown, XML, rich markup, control characters).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from shardscan.model import AllowlistRef, CellLocation, Finding, ScanIssue, ScanStats, Status, Verdict
from shardscan.policy import Policy
from shardscan.report import AllowlistSummary, EntryState, ReconciledEntry, Report, RuleInfo, ShardSummary

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
