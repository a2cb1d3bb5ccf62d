"""Frozen values that cross stage boundaries: locations, candidates, findings, results."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from operator import attrgetter
from typing import TypeVar

_Class = TypeVar("_Class", bound=type)


def pickled_by_position(cls: _Class) -> _Class:
    """Pickle (and copy) a frozen slotted dataclass as its constructor's arguments.

    Findings cross from worker processes to the parent by the thousand. The pickling dataclasses
    give slotted frozen classes sets each field through a Python-level ``__setstate__``, about
    twice the cost of calling the constructor with the values in order.
    """
    values = attrgetter(*(f.name for f in fields(cls) if f.init))

    def __reduce__(self: object) -> tuple[type, tuple[object, ...]]:
        return cls, values(self)

    # Replacing a method on the class is the point; its signature differs from object's only in self.
    cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]
    return cls


class Verdict(StrEnum):
    """Outcome of offline verification of one candidate secret."""

    VALID = "valid"
    UNVERIFIED = "unverified"
    ENCRYPTED = "encrypted"
    EXPIRED = "expired"
    INVALID = "invalid"
    EXAMPLE = "example"
    REDACTED = "redacted"
    # Real credentials that grant nothing a publisher must revoke: a payment provider's test-mode or
    # publishable key, a password for a service reachable only inside the sandbox (localhost, a
    # docker-compose service). Reported so a reviewer sees them; not blocking unless the policy says so.
    TEST_MODE = "test-mode"
    LOCAL_ONLY = "local-only"


class Status(StrEnum):
    """Reconciliation state of a finding against the allowlist."""

    NEW = "new"
    ALLOWLISTED = "allowlisted"


class Severity(StrEnum):
    """How much a finding matters, most severe first (rules set it; verification may adjust it)."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"


class IssueKind(StrEnum):
    """Why part of a scan is incomplete; every kind but ``truncated`` means data was not fully read."""

    # Data that could not be read (a corrupt page, a missing path, a failed worker).
    UNREADABLE = "unreadable"
    # A bound was hit (cell size, regex time, decode budget): the data was read but not fully scanned.
    LIMIT = "limit"
    # Findings over a cap were aggregated: every cell was read, but not every finding is listed
    # (``--allow-truncated-findings`` lets it pass).
    TRUNCATED = "truncated"
    # A file under the scanned paths that is not a format shardscan reads (an image, model weights).
    NOT_SCANNED = "not-scanned"
    # The paths given matched no file at all: an empty scan certifies nothing.
    NOTHING_SCANNED = "nothing-scanned"



@dataclass(frozen=True, slots=True)
class NotScanned:
    """A file found under the scanned paths that cannot be read as data (an image, model weights):
    listed with the reason, and the scan is incomplete unless it was excluded."""

    path: str
    reason: str
    size: int | None = None

@pickled_by_position
@dataclass(frozen=True, slots=True)
class CellLocation:
    """Where a cell lives: shard (relative to the scanned root), 0-based row, column path."""

    shard: str
    row: int
    column: str
    role: str | None = None


@dataclass(frozen=True, slots=True)
class Verification:
    """A verifier's verdict and a human-readable reason a reviewer can act on."""

    verdict: Verdict
    detail: str
    # The secret as the verifier read it when that differs from the match (a key without the line
    # numbers a tool printed in front of its lines), so that one secret has one fingerprint however
    # it was printed. Plaintext: it never leaves the engine, and repr leaves it out.
    canonical: str | None = field(default=None, repr=False, compare=False)
    # A severity above the rule's, when what the verifier read grants more than the kind usually
    # does (a JWT whose role is service_role). Applies only under the verdict given with it.
    severity: Severity | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A rule match inside one view of a cell. Holds plaintext: never leaves the engine."""

    rule_id: str
    secret: str
    start: int
    end: int
    encoding: tuple[str, ...]
    groups: tuple[tuple[str, str], ...] = ()

    def group(self, name: str) -> str | None:
        """Return the named capture group of the match, if the rule's pattern has it."""
        for key, value in self.groups:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class AllowlistRef:
    """The allowlist entry that accepted a finding."""

    entry: int
    reason: str
    reviewer: str
    reviewed: str


@pickled_by_position
@dataclass(frozen=True, slots=True)
class Finding:
    """One secret found at one cell location. Carries no plaintext, only previews and hashes."""

    rule_id: str
    kind: str
    severity: Severity
    location: CellLocation
    start: int
    end: int
    fingerprint: str
    preview: str
    verdict: Verdict
    detail: str
    encoding: tuple[str, ...] = ()
    context: str = ""
    blocking: bool = True
    status: Status = Status.NEW
    allowlist: AllowlistRef | None = None
    # Plaintext, only with ``--show-secrets`` (local manual review); only the terminal reporter
    # prints it, and it is kept out of repr so a traceback cannot carry it.
    revealed: str | None = field(default=None, repr=False, compare=False)
    # How many findings of one shape (rule, verdict, column) this one stands for: more than 1 when
    # a cell or shard held more findings than its cap (``--max-findings-per-cell``/``-shard``) and
    # the rest were aggregated into it. Its span then covers the first to the last of them.
    count: int = 1

    def sort_key(self) -> tuple[str, int, str, int, int, str]:
        """Stable report order: shard, row, column, offset, rule."""
        loc = self.location
        return (loc.shard, loc.row, loc.column, self.start, self.end, self.rule_id)


@dataclass(frozen=True, slots=True)
class ScanIssue:
    """A problem that made part of the scan incomplete (unreadable data or a limit hit)."""

    shard: str
    kind: IssueKind
    message: str
    row_group: int | None = None
    row: int | None = None
    column: str | None = None

    def __post_init__(self) -> None:
        # A kind given as its text (a cache entry, a hand-built issue) becomes the member, and an
        # unknown kind fails here rather than being rendered as something no reporter handles.
        if type(self.kind) is not IssueKind:
            object.__setattr__(self, "kind", IssueKind(self.kind))


@dataclass(frozen=True, slots=True)
class ScanStats:
    """Counters for what was actually read."""

    shards: int = 0
    row_groups: int = 0
    rows: int = 0
    cells: int = 0
    bytes: int = 0
    candidate_cells: int = 0
    seconds: float = 0.0
    # Shards whose result was replayed from the incremental cache instead of being read; their
    # other counters are replayed as recorded, so the rest of the report matches a fresh scan.
    cached_shards: int = 0
    # Findings whose verdict a verifier decided by reading the scan clock (e.g. a token's expiry):
    # a result with any is only valid for that same clock, which the cache must know.
    clock_findings: int = 0
    # Archive members left out by an exclusion glob (files left out are counted by discovery).
    excluded_members: int = 0


    # Cache entries found for a shard but not replayed because their seal did not verify
    # (corrupted, forged or written under another key); the shard was read afresh.
    cache_rejected: int = 0

    def __add__(self, other: ScanStats) -> ScanStats:
        return ScanStats(
            shards=self.shards + other.shards,
            row_groups=self.row_groups + other.row_groups,
            rows=self.rows + other.rows,
            cells=self.cells + other.cells,
            bytes=self.bytes + other.bytes,
            candidate_cells=self.candidate_cells + other.candidate_cells,
            seconds=self.seconds + other.seconds,
            cached_shards=self.cached_shards + other.cached_shards,
            clock_findings=self.clock_findings + other.clock_findings,
            excluded_members=self.excluded_members + other.excluded_members,


            cache_rejected=self.cache_rejected + other.cache_rejected,
        )


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What scanning part of a shard gave (a batch, a row group, a stream, a file): findings, issues, counts."""

    findings: tuple[Finding, ...] = ()
    issues: tuple[ScanIssue, ...] = ()
    stats: ScanStats = field(default_factory=ScanStats)

    def __add__(self, other: BatchResult) -> BatchResult:
        return BatchResult(self.findings + other.findings, self.issues + other.issues, self.stats + other.stats)

    @staticmethod
    def total(parts: Iterable[BatchResult]) -> BatchResult:
        """The sum of ``parts`` in order, in time linear in their findings (``+`` in a loop copies each time)."""
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        stats = ScanStats()
        for part in parts:
            findings += part.findings
            issues += part.issues
            stats += part.stats
        return BatchResult(tuple(findings), tuple(issues), stats)


@dataclass(frozen=True, slots=True)
class ShardResult:
    """Everything the engine learned about one shard."""

    shard: str
    stats: ScanStats
    findings: tuple[Finding, ...] = ()
    issues: tuple[ScanIssue, ...] = ()
    timings: tuple[tuple[str, float], ...] = field(default=())

    @property
    def complete(self) -> bool:
        """True when every cell of the shard was read and scanned within limits."""
        return not self.issues
