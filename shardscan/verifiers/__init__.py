"""Offline verifiers: named checks that rules reference with ``verify:``; no network, ever."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.placeholder import check_placeholder


@dataclass(frozen=True, slots=True)
class VerifyContext:
    """What a verifier may know besides the candidate: the clock (settable for tests and audits)."""

    now: datetime
    kind: str


Verifier = Callable[[Candidate, VerifyContext], Verification | None]
"""A verifier returns a Verification, or None when it has no opinion on this candidate."""

VERIFIERS: dict[str, Verifier] = {
    "placeholder": check_placeholder,
}

NO_CHECK = Verification(Verdict.UNVERIFIED, "no offline check for this kind")


def verify_candidate(candidate: Candidate, verifier_names: tuple[str, ...], context: VerifyContext) -> Verification:
    """Run the named verifiers in order; the first with an opinion decides.

    The placeholder check runs first for every rule: a body like ``xxxx`` or ``<omitted>`` is
    ``redacted`` whatever the kind.
    """
    names = ("placeholder",) + tuple(n for n in verifier_names if n != "placeholder")
    for name in names:
        try:
            outcome = VERIFIERS[name](candidate, context)
        except Exception as exc:  # a verifier bug must not crash the scan or echo the secret
            return Verification(Verdict.UNVERIFIED, f"verifier {name} failed ({type(exc).__name__})")
        if outcome is not None:
            return outcome
    return NO_CHECK
