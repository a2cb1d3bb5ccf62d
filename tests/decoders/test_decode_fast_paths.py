"""The decoders' fast paths against straightforward reference implementations of the same decisions."""

from __future__ import annotations

import random

import pytest

from shardscan import detect as detect_module
from shardscan import hyperscan_matcher
from shardscan.decoders import _LABEL_REST as LABEL_REST
from shardscan.decoders import KeywordSet
from shardscan.ruleset import load_ruleset

_RULESET = load_ruleset()
_KEYWORDS = KeywordSet.build(_RULESET.keywords, _RULESET.token_keywords, _RULESET.context_keywords)


def _label_before_reference(keywords: KeywordSet, text: str, start: int) -> str:
    """KeywordSet.label_before as one str.find per context keyword (what the Hyperscan pass replaces)."""
    lo = max(0, start - 96)
    head = text[text.rfind("\n", lo, start) + 1 or lo : start]
    if not keywords.context or not head.rstrip(" \t\"'\\").endswith((":", "=")):
        return ""
    found = sorted((at, len(k)) for k in keywords.context if (at := head.find(k)) >= 0)
    for at, length in found:
        if LABEL_REST.fullmatch(head, at + length):
            while at > 0 and (head[at - 1].isascii() and head[at - 1].isalnum() or head[at - 1] in "_.-"):
                at -= 1
            return head[at:]
    return ""


def _tricky_heads(count: int) -> list[str]:
    """Names and assignments built from context keywords: repeated, overlapping, nested in longer
    names, cut by the 96-character reach or a line break, around non-ASCII text."""
    rng = random.Random(2025)
    context = sorted(_KEYWORDS.context)
    pieces = [" ", "_", "-", ".", ":", "=", '"', "'", "\\", "\n", "x", "DB", "é", "→", "data", "  "]
    heads = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(1, 9)):
            if rng.random() < 0.45:
                keyword = rng.choice(context)
                # A keyword cut short, or glued to itself: a match must be a whole, first occurrence.
                parts.append(keyword[: rng.randrange(1, len(keyword) + 1)] if rng.random() < 0.2 else keyword)
            else:
                parts.append(rng.choice(pieces) * rng.randrange(1, 4))
        if rng.random() < 0.1:
            parts.insert(0, "y" * rng.randrange(60, 120))
        parts.append(rng.choice([": ", "=", '": "', "='", " = ", ":", " := ", '\\": \\"', ": '", ""]))
        heads.append("".join(parts))
    return heads


def test_keyword_database_is_there_for_the_fast_label_search():
    """The comparison below exercises the Hyperscan pass, not only the fallback."""
    if not hyperscan_matcher.enabled():
        pytest.skip("Hyperscan is not installed")
    assert set(_KEYWORDS.context) <= set(_KEYWORDS.plain)


def test_label_before_matches_one_find_per_context_keyword_on_tricky_heads():
    heads = _tricky_heads(4000)
    labelled = 0
    for head in heads:
        text = head + "QUJD" * 8
        expected = _label_before_reference(_KEYWORDS, text, len(head))
        labelled += bool(expected)
        assert _KEYWORDS.label_before(text, len(head)) == expected, head
    assert labelled > 400  # the heads do exercise labels, not only refusals


@pytest.mark.parametrize(
    "head",
    [
        "password_password: ",  # the same keyword twice: its first occurrence decides
        "token token = ",
        "AWS_SECRET_ACCESS_KEY_ID token: ",  # a longer name first, then a shorter one
        "é password: ",  # non-ASCII before the name (offsets are characters)
        "x" * 90 + "password: ",  # cut by the reach of 96 characters
        "DB_PASSWORD\": \"",
    ],
)
def test_label_before_matches_the_reference_on_edge_heads(head):
    text = head + "QUJD" * 8
    assert _KEYWORDS.label_before(text, len(head)) == _label_before_reference(_KEYWORDS, text, len(head))


def test_rules_selected_by_a_views_keywords_are_those_of_a_test_per_rule():
    """detect's keyword index against the test per rule it replaces, keywords outside the searched
    set included (searched in the text), over subsets of the rule tuple (a raw window's rules)."""
    rng = random.Random(7)
    rules = _RULESET.rules
    keywords = sorted({k for rule in rules for k in rule.keywords})
    for _ in range(300):
        known = frozenset(k for k in keywords if rng.random() < 0.9)
        chosen = tuple(rule for rule in rules if rng.random() < 0.5) if rng.random() < 0.5 else rules
        text = " ".join(rng.sample(keywords, rng.randrange(0, 6)))
        present = frozenset(k for k in known if k in text)
        expected = [r for r in chosen if any(k in present if k in known else k in text for k in r.keywords)]
        assert detect_module._with_keywords(chosen, present, known, text) == expected
