"""The report: every shard's results reconciled under a policy, and the gate decision."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from shardscan import __version__
from shardscan.model import Finding, NotScanned, ScanIssue, ScanStats, ShardResult
from shardscan.policy import EXIT_BLOCKING, EXIT_CLEAN, EXIT_INCOMPLETE, GateDecision, Policy

REPORT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ShardSummary:
    """Per-shard numbers for summaries and JUnit-style outputs."""

    shard: str
    stats: ScanStats
    findings: int
    blocking: int
    issues: int


@dataclass(frozen=True, slots=True)
class AllowlistSummary:
    """Allowlist reconciliation: which entries matched, which are stale or expired."""

    path: str | None
    entries: int = 0
    matched: tuple[dict, ...] = ()
    stale: tuple[dict, ...] = ()
    expired: tuple[dict, ...] = ()


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
    severity: str


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
        from shardscan.reporters.json_report import render

        return render(self)

    @property
    def unreadable(self) -> tuple[ScanIssue, ...]:
        """Issues that mean part of the data was not read."""
        return tuple(i for i in self.issues if i.kind == "unreadable")

    @property
    def decision(self) -> GateDecision:
        """Exit 3 when the scan is incomplete (it cannot certify what it did not read), else 1 on
        blocking findings (or stale allowlist entries under ``--fail-on-stale``), else 0."""
        limits = [i for i in self.issues if i.kind != "unreadable"
                  and not (i.kind == "truncated" and self.policy.allow_truncated_findings)]
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
