"""Values handed between the engine's stages: a reading of a secret in a cell, a cell's findings, stage timings."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from shardscan.model import Candidate, CellLocation, Finding, Severity, Verdict

# Messages of issues of kind "truncated" start so (the cell stage reports them with its limits).
TRUNCATED_PREFIX = "findings: "


@dataclass(frozen=True, slots=True)
class Reading:
    """A rule's match read in one view of a cell, placed in the cell.

    ``candidate`` holds the match's offsets in its (possibly decoded) view; ``start``/``end`` are
    the span of the cell the view maps back to (for a match in a decoded run: the whole run).
    """

    candidate: Candidate
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where one of your own secrets (``--known-secrets``, by its digest) occurs in a cell."""

    digest: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class CellFinding:
    """A finding of one cell text, before it is attached to the (possibly many) cells holding that text."""

    rule_id: str
    kind: str
    severity: Severity
    start: int
    end: int
    fingerprint: str
    preview: str
    verdict: Verdict
    detail: str
    encoding: tuple[str, ...]
    context: str
    clock: bool = False  # the verdict was decided by reading the scan clock
    revealed: str | None = field(default=None, repr=False, compare=False)
    count: int = 1  # findings of one shape aggregated into this one (see ``Finding.count``)

    def at(self, location: CellLocation) -> Finding:
        """This finding at one of the cells holding its text."""
        return Finding(
            rule_id=self.rule_id,
            kind=self.kind,
            severity=self.severity,
            location=location,
            start=self.start,
            end=self.end,
            fingerprint=self.fingerprint,
            preview=self.preview,
            verdict=self.verdict,
            detail=self.detail,
            encoding=self.encoding,
            context=self.context,
            revealed=self.revealed,
            count=self.count,
        )


class CellScan(NamedTuple):
    """What scanning one cell's text gave: its findings and the limits it hit (messages without cell content).

    A named tuple, so that ``findings, limits = scanner.scan_text(text)`` reads as it always did.
    """

    findings: list[CellFinding]
    limits: list[str]


@dataclass(slots=True)
class Timer:
    """Seconds spent per stage (``scan --stats``), summed over the work one worker process does."""

    totals: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, stage: str, since: float) -> float:
        """Count the time from ``since`` to now for ``stage``; returns now (the next stage's start)."""
        now = time.perf_counter()
        self.totals[stage] += now - since
        return now
