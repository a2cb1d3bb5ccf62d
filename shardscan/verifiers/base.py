"""What every verifier is given and must answer: the context and the Verifier protocol (no check lives here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from shardscan.model import Candidate, Verification


@dataclass(frozen=True, slots=True)
class VerifyContext:
    """What a verifier may know besides the candidate: the clock (settable for tests and audits)
    and the text of the cell it was found in (plaintext: repr leaves it out)."""

    now: datetime
    kind: str
    text: str = field(default="", repr=False, compare=False)


class Verifier(Protocol):
    """A named offline check (``verify:`` in a rule): a Verification, or None when it has no opinion
    on this candidate (the next verifier is asked)."""

    def __call__(self, candidate: Candidate, context: VerifyContext, /) -> Verification | None:
        """Judge ``candidate`` found in ``context``; never raise for malformed input."""
        ...
