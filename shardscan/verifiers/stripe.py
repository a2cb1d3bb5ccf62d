"""Judge Stripe keys by mode: live secret and restricted keys block, test-mode and publishable keys do not.

There is no checksum in a Stripe key; its prefix says what it grants. A test-mode key reaches
only test data, and a publishable key is built to be shipped in web pages.
"""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

_KEY = re.compile(r"(sk|rk|pk)_(live|test)_[A-Za-z0-9]+")
_NAMES = {"sk": "secret key", "rk": "restricted key", "pk": "publishable key"}


def check_stripe(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``test-mode`` for test-mode and publishable keys, ``unverified`` for live secret and restricted keys."""
    match = _KEY.fullmatch(candidate.secret)
    if match is None:
        return None
    kind, mode = match.groups()
    if kind == "pk":
        return Verification(Verdict.TEST_MODE, f"Stripe publishable key ({mode} mode): meant for browsers, "
                                               "creates tokens only")
    if mode == "test":
        return Verification(Verdict.TEST_MODE, f"Stripe test-mode {_NAMES[kind]}: no live data or money")
    return Verification(Verdict.UNVERIFIED, f"Stripe live {_NAMES[kind]}: charges, refunds and customer data of the "
                                            "account; no offline check proves it live")
