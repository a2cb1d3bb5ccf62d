"""Verification glue of the cell stage: each distinct value verified once per cell, noting which read the clock."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shardscan.model import Candidate, Verdict, Verification
from shardscan.ruleset import Rule
from shardscan.verifiers import ALWAYS_FIRST, VERIFIERS, VerifyContext, verify_candidate

# Distinct values whose structural check is memoised per cell (see ``Verifications``).
STRUCTURE_MEMO = 4096


# The slot descriptors of VerifyContext's fields: a WatchedContext sets and reads its fields
# through them, since its own ``now`` is a property (a frozen dataclass sets fields with
# ``object.__setattr__``, which the property would refuse).
_FIELD_SLOTS: dict[str, Any] = {name: vars(VerifyContext)[name] for name in ("now", "kind", "text")}


class WatchedContext(VerifyContext):
    """A VerifyContext that records whether a verifier read the clock.

    The cache needs to know which verdicts depend on the time of the scan (an expiry) without
    every verifier having to declare it. ``dataclasses.replace`` reads ``now`` from the original,
    so a verifier deriving a new context is counted too (conservatively).
    """

    __slots__ = ("_reads",)
    _reads: list[bool]

    def __init__(self, now: datetime, kind: str, reads: list[bool] | None = None, text: str = "") -> None:
        _FIELD_SLOTS["now"].__set__(self, now)
        _FIELD_SLOTS["kind"].__set__(self, kind)
        _FIELD_SLOTS["text"].__set__(self, text)
        object.__setattr__(self, "_reads", reads if reads is not None else [])

    @property
    def now(self) -> datetime:
        """The scan clock, noting that it was read."""
        self._reads.append(True)
        value: datetime = _FIELD_SLOTS["now"].__get__(self, VerifyContext)
        return value


class Verifications:
    """Verification of one cell's candidates, memoised per distinct value (in memory only).

    A flood of identical look-alikes is verified once; ``fails_structure`` runs only the rule's
    own verifiers (a checksum costs microseconds, the placeholder checks a millisecond).
    """

    def __init__(self, now: datetime, text: str) -> None:
        self.now = now
        self.text = text
        self.clock = False  # any verification read the clock
        self._full: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[Verification, bool]] = {}
        self._structure: dict[tuple[str, str, tuple[tuple[str, str], ...]], bool] = {}

    def full(self, cand: Candidate, rule: Rule) -> tuple[Verification, bool]:
        """The candidate's verification and whether it read the clock."""
        key = (rule.id, cand.secret, cand.groups)
        if key not in self._full:
            reads: list[bool] = []
            verification = verify_candidate(cand, rule.verify, WatchedContext(self.now, rule.kind, reads, self.text))
            self._full[key] = (verification, bool(reads))
            self.clock = self.clock or bool(reads)
        return self._full[key]

    def known(self, cand: Candidate, rule: Rule) -> Verification | None:
        """The full verification when it was already made, else None."""
        found = self._full.get((rule.id, cand.secret, cand.groups))
        return found[0] if found is not None else None

    def fails_structure(self, cand: Candidate, rule: Rule) -> bool:
        """Whether the rule's own first verifier with an opinion calls the candidate invalid."""
        key = (rule.id, cand.secret, cand.groups)
        known = self._structure.get(key)
        if known is None:
            known = self._check_structure(cand, rule)
            # A flood of distinct look-alikes would make the memo as big as the flood; a checksum
            # is cheaper to compute again than to keep.
            if len(self._structure) < STRUCTURE_MEMO:
                self._structure[key] = known
        return known

    def _check_structure(self, cand: Candidate, rule: Rule) -> bool:
        reads: list[bool] = []
        context = WatchedContext(self.now, rule.kind, reads, self.text)
        for name in rule.verify:
            if name in ALWAYS_FIRST or name not in VERIFIERS:
                continue
            try:
                outcome = VERIFIERS[name](cand, context)
            except Exception:  # a verifier bug: let the full verification decide (unverified)
                return False
            if outcome is not None:
                self.clock = self.clock or bool(reads)
                return outcome.verdict == Verdict.INVALID
        return False
