"""A rule's ``prefilter`` patterns in the detector: Hyperscan's answer is Python ``re``'s answer."""

from __future__ import annotations

import random

import pytest

from shardscan import hyperscan_matcher
from shardscan.detect import _same_in_hyperscan, prefilter_matches
from shardscan.ruleset import Rule, load_ruleset
from shardscan.ruleset.load import compile_rule
from shardscan.synth import expand

pytestmark = pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="needs Hyperscan")

RULES = [rule for rule in load_ruleset().rules if rule.prefilter]


def _texts(rule: Rule) -> list[str]:
    """The rule's examples, cut and stitched: texts on both sides of its prefilter patterns."""
    examples = [expand(e.text, seed=i) for i, e in enumerate(rule.examples + rule.negative_examples)]
    rng = random.Random(rule.id)
    out = list(examples)
    for example in examples:
        for _ in range(20):
            lo, hi = sorted(rng.sample(range(len(example) + 1), 2))
            out.append(example[:lo] + example[hi:])  # a piece cut out: often no longer a match
            out.append("é " + example[lo:] + " ✓")  # non-ASCII around the example
    out += [f"{keyword} = {keyword}" for keyword in rule.keywords]
    return out


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_every_builtin_prefilter_gives_python_re_answer(rule):
    texts = _texts(rule)
    answers = [prefilter_matches(rule, text) for text in texts]
    assert answers == [rule.prefilter_in(text) for text in texts]
    assert True in answers and False in answers  # both sides were tried


def test_the_automaton_answers_ascii_text_without_python_re(monkeypatch):
    rule = next(rule for rule in RULES if rule.id == "generic-secret-assignment")
    text = 'config = {"api_key": "' + "Zq8" * 8 + '"}'
    assert rule.prefilter_in(text)

    def refuse(_self: Rule, _text: str) -> bool:
        raise AssertionError("Python's re ran")

    monkeypatch.setattr(Rule, "prefilter_in", refuse)
    assert prefilter_matches(rule, text)
    assert not prefilter_matches(rule, "token: short")


def _caseless_rule() -> Rule:
    return compile_rule(
        {
            "id": "acme-secret", "kind": "acme", "name": "ACME secret", "description": "An ACME secret.",
            "severity": "high", "keywords": ["vate"], "pattern": r"(?i:private)=(?P<secret>[A-Za-z0-9]{16})",
            "prefilter": ["(?i:private)="],
        },
        "test",
    )


def test_case_folding_outside_ascii_is_python_re_answer():
    # Python's re folds LATIN SMALL LETTER DOTLESS I and LATIN CAPITAL LETTER I WITH DOT ABOVE onto
    # "i"; Hyperscan does not.
    rule = _caseless_rule()
    assert prefilter_matches(rule, "pr\u0131vate=x")
    assert prefilter_matches(rule, "PR\u0130VATE=x")
    assert prefilter_matches(rule, "PRIVATE=x")
    assert not prefilter_matches(rule, "private x")


def test_a_lone_surrogate_is_python_re_answer():
    rule = next(rule for rule in RULES if rule.id == "generic-secret-assignment")
    text = '\ud800 api_key = "' + "Zq8" * 8 + '"'
    assert prefilter_matches(rule, text) is rule.prefilter_in(text) is True


def _rule_with_prefilter(pattern: str) -> Rule:
    return compile_rule(
        {
            "id": "acme-assigned", "kind": "acme", "name": "ACME token", "description": "An ACME token.",
            "severity": "high", "keywords": ["token"], "pattern": r"token\s*=\s*(?P<secret>[A-Za-z0-9]{16})",
            "prefilter": [pattern],
        },
        "test",
    )


def test_a_repeat_without_lower_bound_is_python_re_answer():
    # Python 3.11 reads {,5} as {0,5}; Hyperscan reads it as the text "{,5}".
    rule = _rule_with_prefilter(r"token=a{,5}b")
    assert prefilter_matches(rule, "token=aaab")
    assert not prefilter_matches(rule, "token=c")


def test_a_class_shorthand_is_python_re_answer():
    # Python's \s takes the ASCII separators \x1c-\x1f for spaces; Hyperscan's does not.
    rule = _rule_with_prefilter(r"token\s*=")
    assert prefilter_matches(rule, "token\x1f=x")
    assert not prefilter_matches(rule, "token: x")


@pytest.mark.parametrize(
    ("pattern", "same"),
    [
        (r"token[ \t]*[:=]", True), (r"[:=]\-x\.", True), (r"\\u00[0-9a-f]{2}", True), (r"a\x41\n", True),
        (r"(?i:secret)=", True), (r"token\s*=", False), (r"\bkey", False), (r"a\xff", False), (r"a\Z", False),
        (r"[[:space:]]=", False), (r"(?=x)y", False), (r"(?s)a.b", False), (r"(?im)^key$", False),
        (r"a{,5}b", False), (r"(?i)key", True),
    ],
)
def test_which_patterns_the_engines_read_alike(pattern, same):
    assert _same_in_hyperscan(pattern) is same


def test_every_builtin_prefilter_runs_in_hyperscan():
    assert [rule.id for rule in RULES if not all(_same_in_hyperscan(p) for p in rule.prefilter)] == []
