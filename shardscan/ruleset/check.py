"""Run every rule's examples and negative examples through the full detector (``rules check``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa

from shardscan.engine import Scanner, ScanOptions
from shardscan.ruleset.model import Example, Rule, Ruleset
from shardscan.synth import expand

# Examples are judged against a fixed clock so that expected verdicts (expired, valid) are stable.
CHECK_CLOCK = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ExampleResult:
    """The outcome of one example or negative example."""

    rule_id: str
    positive: bool
    index: int
    ok: bool
    problem: str = ""


def check_ruleset(ruleset: Ruleset, only: set[str] | None = None) -> list[ExampleResult]:
    """Check the examples of every rule (or of the rules whose ids are in ``only``).

    A positive example must yield a finding of its rule (with the expected verdict, when one is
    given); a negative example must yield none. Matching happens with the whole rule set, as in a
    scan, so overlaps between rules are accounted for.
    """
    scanner = Scanner(ruleset, ScanOptions(now=CHECK_CLOCK))
    results: list[ExampleResult] = []
    for rule in ruleset.rules:
        if only is not None and rule.id not in only:
            continue
        if not rule.examples:
            results.append(ExampleResult(rule.id, True, 0, False, "rule has no examples"))
        for i, example in enumerate(rule.examples):
            results.append(_check(scanner, rule, example, i, positive=True))
        for i, example in enumerate(rule.negative_examples):
            results.append(_check(scanner, rule, example, i, positive=False))
    return results


def _check(scanner: Scanner, rule: Rule, example: Example, index: int, positive: bool) -> ExampleResult:
    text = expand(example.text, seed=f"{rule.id}:{index}")
    # (A rule with prefilter patterns is selected by them, which the next check covers; its
    # keywords may only appear once the text is decoded.)
    if positive and not rule.prefilter and not rule.keyword_in(text):
        return ExampleResult(rule.id, True, index, False, f"example {index + 1} contains none of the rule's keywords")
    if positive and not _selected(scanner, text):
        return ExampleResult(rule.id, True, index, False,
                             f"example {index + 1} is not selected by the prefilter (a token keyword inside a word?)")
    findings, limits = scanner.scan_text(text)
    mine = [f for f in findings if f.rule_id == rule.id]
    if limits:
        return ExampleResult(rule.id, positive, index, False, f"limit hit: {limits[0]}")
    if positive and not mine:
        others = sorted({f.rule_id for f in findings})
        extra = f" (matched {', '.join(others)} instead)" if others else ""
        return ExampleResult(rule.id, True, index, False, f"example {index + 1} not detected{extra}")
    if positive and example.verdict and all(f.verdict != example.verdict for f in mine):
        got = ", ".join(sorted({str(f.verdict) for f in mine}))
        return ExampleResult(rule.id, True, index, False, f"example {index + 1}: verdict {got}, expected "
                                                          f"{example.verdict}")
    if not positive and mine:
        return ExampleResult(rule.id, False, index, False, f"negative example {index + 1} was detected "
                                                           f"({mine[0].preview})")
    return ExampleResult(rule.id, positive, index, True)


def _selected(scanner: Scanner, text: str) -> bool:
    """Whether a scan's prefilter would hand ``text`` to the detector (examples run the whole pipeline)."""
    return bool(scanner.prefilter.mask(pa.array([text], pa.large_string()))[0])
