"""Helpers for verifier tests: run text through the whole detector and read one finding's verdict."""

from __future__ import annotations

from datetime import datetime

from shardscan.engine import CellFinding, Scanner, ScanOptions
from shardscan.model import Candidate
from shardscan.ruleset import load_ruleset
from shardscan.verifiers import VerifyContext, verify_candidate
from tests.conftest import FIXED_NOW

_SCANNERS: dict[datetime, Scanner] = {}


def scanner(now: datetime = FIXED_NOW) -> Scanner:
    """A scanner with the built-in rules and a fixed clock (cached per clock)."""
    if now not in _SCANNERS:
        _SCANNERS[now] = Scanner(load_ruleset(), ScanOptions(now=now))
    return _SCANNERS[now]


def findings(text: str, now: datetime = FIXED_NOW) -> list[CellFinding]:
    """Every finding of one cell text."""
    found, limits = scanner(now).scan_text(text)
    assert not limits
    return found


def only(text: str, rule_id: str | None = None, now: datetime = FIXED_NOW) -> CellFinding:
    """The single finding of ``text`` (of ``rule_id`` when given); fails when there is not exactly one."""
    found = [f for f in findings(text, now) if rule_id is None or f.rule_id == rule_id]
    assert len(found) == 1, [(f.rule_id, f.verdict, f.detail) for f in found]
    return found[0]


def verify(secret: str, rule_id: str, now: datetime = FIXED_NOW, **groups: str):
    """Verify ``secret`` as if rule ``rule_id`` had matched it (bypassing the pattern)."""
    rule = scanner(now).ruleset.get(rule_id)
    candidate = Candidate(rule_id, secret, 0, len(secret), (), tuple(groups.items()))
    return verify_candidate(candidate, rule.verify, VerifyContext(now=now, kind=rule.kind))
