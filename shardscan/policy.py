"""Gate policy: which findings block a publish, and the gate's decision and exit code."""

from __future__ import annotations

from dataclasses import dataclass

from shardscan.model import Finding, Status, Verdict

DEFAULT_BLOCKING_VERDICTS: tuple[Verdict, ...] = (Verdict.VALID, Verdict.UNVERIFIED, Verdict.ENCRYPTED)

EXIT_CLEAN = 0
EXIT_BLOCKING = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


@dataclass(frozen=True, slots=True)
class Policy:
    """What fails the gate."""

    blocking_verdicts: tuple[Verdict, ...] = DEFAULT_BLOCKING_VERDICTS
    strict: bool = False
    fail_on_stale: bool = False
    skip_unreadable: bool = False
    # Findings aggregated over a cap (issues of kind "truncated") do not make the exit code 3.
    allow_truncated_findings: bool = False

    def is_blocking(self, finding: Finding) -> bool:
        """Allowlisted findings never block; under ``strict`` every other finding does."""
        if finding.status == Status.ALLOWLISTED:
            return False
        return self.strict or finding.verdict in self.blocking_verdicts

    @property
    def verdicts_that_block(self) -> tuple[Verdict, ...]:
        """The verdicts whose findings block (every verdict under ``strict``), allowlisted ones aside."""
        return tuple(Verdict) if self.strict else self.blocking_verdicts

    def to_dict(self) -> dict[str, object]:
        """The ``policy`` block of reports, so a reader knows why the gate passed or failed."""
        return {
            "blocking_verdicts": [str(v) for v in self.verdicts_that_block],
            "strict": self.strict,
            "fail_on_stale": self.fail_on_stale,
            "skip_unreadable": self.skip_unreadable,
            "allow_truncated_findings": self.allow_truncated_findings,
            "allowlisted_block": False,
        }


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's answer: an exit code and the reason, in words."""

    exit_code: int
    passed: bool
    reason: str
