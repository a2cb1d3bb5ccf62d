"""The report: every shard's results reconciled under a policy, the gate decision, and the JSON document."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from shardscan import __version__
from shardscan.model import Finding, IssueKind, NotScanned, ScanIssue, ScanStats, Severity, ShardResult, Status, Verdict
from shardscan.policy import EXIT_BLOCKING, EXIT_CLEAN, EXIT_INCOMPLETE, GateDecision, Policy
from shardscan.pretty_json import pretty_json

REPORT_VERSION = 1

# JSON-shaped data: what the report's document and its parts are made of.
JsonObject = dict[str, Any]

VERDICTS: tuple[str, ...] = tuple(str(v) for v in Verdict)


@dataclass(frozen=True, slots=True)
class ShardSummary:
    """Per-shard numbers for summaries and JUnit-style outputs."""

    shard: str
    stats: ScanStats
    findings: int
    blocking: int
    issues: int


class EntryState(StrEnum):
    """What reconciliation made of one allowlist entry."""

    MATCHED = "matched"  # unexpired, and accepted at least one finding
    STALE = "stale"  # unexpired, and matched nothing: the secret it accepted is gone
    EXPIRED = "expired"  # past its ``expires`` date: accepts nothing, whatever it matches


@dataclass(frozen=True, slots=True)
class ReconciledEntry:
    """One allowlist entry as reports list it (metadata only: the file never holds a secret), with
    its state and the number of findings it matched (would have matched, when expired)."""

    entry: int
    line: int
    fingerprint: str
    rule: str | None
    shard: str | None
    column: str | None
    reason: str
    reviewer: str
    reviewed: str
    expires: str | None
    row: int | str | None
    state: EntryState
    findings: int

    def to_dict(self) -> JsonObject:
        """The entry as the JSON report spells it (keys in contract order: the fields' order)."""
        return {**asdict(self), "state": str(self.state)}


@dataclass(frozen=True, slots=True)
class AllowlistSummary:
    """Allowlist reconciliation: which entries matched, which are stale or expired."""

    path: str | None
    entries: int = 0
    matched: tuple[ReconciledEntry, ...] = ()
    stale: tuple[ReconciledEntry, ...] = ()
    expired: tuple[ReconciledEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class KnownSecretSummary:
    """What the scan learnt about one ``--known-secrets`` entry: how many cells it searched, and
    how many occurrences it found (the entry by its label only, never its value)."""

    label: str
    cells: int
    occurrences: int

    @property
    def sentence(self) -> str:
        """The statement a dataset card can quote: ``env:X: searched 1,204 cells, 0 occurrences``."""
        return f"{self.label}: {self.outcome}"

    @property
    def outcome(self) -> str:
        """``searched 1,204 cells, 0 occurrences`` (the sentence without the label)."""
        return (f"searched {self.cells:,} cell{'s' if self.cells != 1 else ''}, "
                f"{self.occurrences} occurrence{'s' if self.occurrences != 1 else ''}")


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What reporters need to know about a rule (SARIF rule entries, legends): never its pattern."""

    id: str
    kind: str
    name: str
    description: str
    severity: Severity


@dataclass(frozen=True, slots=True)
class ExclusionCount:
    """How many files one exclusion source left out (``--exclude``, ``.shardscanignore``, a default)."""

    source: str
    count: int


@dataclass(frozen=True, slots=True)
class FileCounts:
    """What became of every file under the scanned paths: scanned, excluded on purpose, or not scanned."""

    scanned: int = 0
    excluded: tuple[ExclusionCount, ...] = ()
    not_scanned: tuple[NotScanned, ...] = ()
    excluded_members: int = 0

    @property
    def excluded_total(self) -> int:
        """Files excluded, all sources together (archive members not included)."""
        return sum(e.count for e in self.excluded)

    def summary(self) -> str:
        """One line for every report format: ``12 files scanned, 2 files excluded by .shardscanignore,
        1 file excluded by --exclude, 1 not scanned`` (``0 excluded`` when nothing was)."""
        text = f"{self.scanned} file{'' if self.scanned == 1 else 's'} scanned, "
        text += ", ".join(f"{e.count} file{'' if e.count == 1 else 's'} excluded by {e.source}"
                          for e in self.excluded) or "0 excluded"
        text += f", {len(self.not_scanned)} not scanned"
        if self.excluded_members:
            text += f"; {self.excluded_members} archive member{'' if self.excluded_members == 1 else 's'} excluded"
        return text


@dataclass(frozen=True, slots=True)
class Report:
    """What a scan found, ready for any reporter. Holds no plaintext secret."""

    stats: ScanStats
    findings: tuple[Finding, ...]
    issues: tuple[ScanIssue, ...]
    shards: tuple[ShardSummary, ...]
    policy: Policy
    ruleset_digest: str
    kinds: tuple[str, ...]
    scanned_at: datetime
    allowlist: AllowlistSummary | None = None
    tool_version: str = __version__
    timings: tuple[tuple[str, float], ...] = field(default=())
    rules: tuple[RuleInfo, ...] = ()
    # None for in-memory scans (``scan_table``), which have no files.
    files: FileCounts | None = None
    known_secrets: tuple[KnownSecretSummary, ...] = ()

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """Findings that fail the gate."""
        return tuple(f for f in self.findings if f.blocking)

    @property
    def exit_code(self) -> int:
        """The gate's exit code: 0 clean, 1 blocking findings, 3 incomplete scan."""
        return self.decision.exit_code

    def to_json(self) -> str:
        """The versioned JSON report (the same document as ``--format json``)."""
        return pretty_json(report_dict(self)) + "\n"

    @property
    def unreadable(self) -> tuple[ScanIssue, ...]:
        """Issues that mean part of the data was not read."""
        return tuple(i for i in self.issues if i.kind == IssueKind.UNREADABLE)

    @property
    def decision(self) -> GateDecision:
        """Exit 3 when the scan is incomplete (it cannot certify what it did not read), else 1 on
        blocking findings (or stale allowlist entries under ``--fail-on-stale``), else 0."""
        limits = [i for i in self.issues if i.kind != IssueKind.UNREADABLE
                  and not (i.kind == IssueKind.TRUNCATED and self.policy.allow_truncated_findings)]
        incomplete = limits + ([] if self.policy.skip_unreadable else list(self.unreadable))
        if incomplete:
            shards = sorted({i.shard for i in incomplete})
            named = ", ".join(shards[:3]) + (f" and {len(shards) - 3} more" if len(shards) > 3 else "")
            return GateDecision(
                EXIT_INCOMPLETE, False, f"scan incomplete: {len(incomplete)} problem(s) in {named}"
            )
        if self.blocking:
            return GateDecision(EXIT_BLOCKING, False, f"{len(self.blocking)} blocking finding(s)")
        if self.policy.fail_on_stale and self.allowlist and (self.allowlist.stale or self.allowlist.expired):
            n = len(self.allowlist.stale) + len(self.allowlist.expired)
            return GateDecision(EXIT_BLOCKING, False, f"{n} stale or expired allowlist entr{'y' if n == 1 else 'ies'}")
        note = f" ({len(self.unreadable)} unreadable shard problem(s) skipped)" if self.unreadable else ""
        return GateDecision(EXIT_CLEAN, True, f"no blocking findings{note}")


def build_report(
    results: list[ShardResult],
    policy: Policy,
    ruleset_digest: str,
    kinds: tuple[str, ...],
    scanned_at: datetime,
    seconds: float,
    extra_issues: tuple[ScanIssue, ...] = (),
    allowlist: AllowlistSummary | None = None,
    rules: tuple[RuleInfo, ...] = (),
    files: FileCounts | None = None,
    known_secrets: tuple[KnownSecretSummary, ...] = (),
) -> Report:
    """Assemble a report from per-shard results whose findings are already reconciled."""
    results = sorted(results, key=lambda r: r.shard)
    stats = ScanStats()
    timings: dict[str, float] = {}
    for result in results:
        stats += result.stats
        for stage, secs in result.timings:
            timings[stage] = timings.get(stage, 0.0) + secs
    stats = ScanStats(
        shards=len(results),
        row_groups=stats.row_groups,
        rows=stats.rows,
        cells=stats.cells,
        bytes=stats.bytes,
        candidate_cells=stats.candidate_cells,
        seconds=seconds,
        cached_shards=stats.cached_shards,
        clock_findings=stats.clock_findings,
        excluded_members=stats.excluded_members,


        cache_rejected=stats.cache_rejected,
    )
    findings = tuple(sorted((f for r in results for f in r.findings), key=Finding.sort_key))
    issues = tuple(extra_issues) + tuple(i for r in results for i in r.issues)
    shards = tuple(
        ShardSummary(
            shard=r.shard,
            stats=r.stats,
            findings=len(r.findings),
            blocking=sum(1 for f in r.findings if f.blocking),
            issues=len(r.issues),
        )
        for r in results
    )
    return Report(
        stats=stats,
        findings=findings,
        issues=issues,
        shards=shards,
        policy=policy,
        ruleset_digest=ruleset_digest,
        kinds=kinds,
        scanned_at=scanned_at,
        allowlist=allowlist,
        timings=tuple(sorted(timings.items())),
        rules=tuple(rules),
        files=None if files is None else replace(files, excluded_members=stats.excluded_members),
        known_secrets=tuple(known_secrets),
    )


# ---- the numbers every format carries, and the JSON document ---------------------------------


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
        return any(i.kind == IssueKind.UNREADABLE for i in self.issues)

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
    known: set[str] = set()
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


def summary_numbers(report: Report) -> JsonObject:
    """The headline numbers every format carries (a test checks they agree across formats)."""
    return {
        "shards": report.stats.shards,
        "findings": len(report.findings),
        "blocking": len(report.blocking),
        "allowlisted": sum(1 for f in report.findings if f.status == Status.ALLOWLISTED),
        "errors": len(report.issues),
        "by_verdict": verdict_counts(report.findings),
    }


def files_dict(report: Report) -> JsonObject | None:
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


def finding_dict(finding: Finding) -> JsonObject:
    """One finding as the JSON contract spells it."""
    loc = finding.location
    allow = finding.allowlist
    entry = {
        "rule_id": finding.rule_id,
        "kind": finding.kind,
        "severity": str(finding.severity),
        "shard": loc.shard,
        "row": loc.row,
        "column": loc.column,
        "role": loc.role,
        "start": finding.start,
        "end": finding.end,
        "encoding": list(finding.encoding),
        "fingerprint": finding.fingerprint,
        "preview": finding.preview,
        "verdict": str(finding.verdict),
        "detail": finding.detail,
        "blocking": finding.blocking,
        "status": str(finding.status),
        "allowlist": (
            {"entry": allow.entry, "reason": allow.reason, "reviewer": allow.reviewer, "reviewed": allow.reviewed}
            if allow
            else None
        ),
        "context": finding.context,
    }
    if finding.count > 1:  # findings over a cap aggregated into this one (absent: 1)
        entry["count"] = finding.count
    return entry


def issue_dict(issue: ScanIssue) -> JsonObject:
    """One scan issue (unreadable data or a limit hit)."""
    return {
        "shard": issue.shard,
        "kind": str(issue.kind),
        "row_group": issue.row_group,
        "row": issue.row,
        "column": issue.column,
        "message": issue.message,
    }


def report_dict(report: Report) -> JsonObject:
    """The whole report as plain data (used by the JSON, JSONL and other machine formats)."""
    stats = report.stats
    decision = report.decision
    allowlist = report.allowlist
    per_shard = {row.shard: row for row in shard_rows(report)}
    return _with_files({
        "version": REPORT_VERSION,
        "tool": {"name": "shardscan", "version": report.tool_version, "ruleset": report.ruleset_digest},
        "scanned_at": report.scanned_at.isoformat(timespec="seconds"),
        "scanned": {
            "shards": stats.shards,
            "row_groups": stats.row_groups,
            "rows": stats.rows,
            "cells": stats.cells,
            "bytes": stats.bytes,
            "candidate_cells": stats.candidate_cells,
            "seconds": round(stats.seconds, 3),
        },
        "summary": summary_numbers(report),
        "kinds": list(report.kinds),
        "rules": [
            {"id": r.id, "kind": r.kind, "name": r.name, "severity": str(r.severity), "description": r.description}
            for r in report.rules
        ],
        "policy": report.policy.to_dict(),
        "gate": {"passed": decision.passed, "exit_code": decision.exit_code, "reason": decision.reason},
        "findings": [finding_dict(f) for f in report.findings],
        "known_secrets": [
            {"entry": k.label, "cells_searched": k.cells, "occurrences": k.occurrences, "statement": k.sentence}
            for k in report.known_secrets
        ],
        "errors": [issue_dict(i) for i in report.issues],
        "allowlist": (
            {
                "path": allowlist.path,
                "entries": allowlist.entries,
                "matched": [e.to_dict() for e in allowlist.matched],
                "stale": [e.to_dict() for e in allowlist.stale],
                "expired": [e.to_dict() for e in allowlist.expired],
            }
            if allowlist
            else None
        ),
        "shards": [
            {
                "shard": s.shard,
                "rows": s.stats.rows,
                "row_groups": s.stats.row_groups,
                "cells": s.stats.cells,
                "bytes": s.stats.bytes,
                "findings": s.findings,
                "blocking": s.blocking,
                "allowlisted": per_shard[s.shard].allowlisted,
                "by_verdict": per_shard[s.shard].by_verdict,
                "errors": s.issues,
            }
            for s in report.shards
        ],
    }, report)


def _with_files(data: JsonObject, report: Report) -> JsonObject:
    """Add ``files`` (scanned / excluded / not scanned) after ``scanned``, for scans of files."""
    files = files_dict(report)
    if files is None:
        return data
    out: JsonObject = {}
    for key, value in data.items():
        out[key] = value
        if key == "scanned":
            out["files"] = files
    return out
