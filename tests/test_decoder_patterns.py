"""Every decoder pattern searched through a text starts each top-level alternative with something searchable."""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
import sys
from pathlib import Path

import pytest

from shardscan import decoders

# Items a search can skip ahead to: one character, or one of a set.
_SEARCHABLE = {sre.LITERAL, sre.IN}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}


def _alternatives(items: list) -> list[list]:
    """The top-level alternatives of a parsed (sub)pattern."""
    if len(items) == 1 and items[0][0] is sre.BRANCH:
        return [list(branch) for branch in items[0][1][1]]
    return [items]


def _lead_problem(items: list) -> str | None:
    """Why this alternative cannot be searched for by its first item (None: it can)."""
    if not items:
        return "an empty alternative (matches at every position)"
    op, av = items[0]
    if op in _SEARCHABLE:
        return None
    if op is sre.BRANCH:
        return next((p for branch in av[1] if (p := _lead_problem(list(branch)))), None)
    if op is sre.SUBPATTERN:
        return next((p for alt in _alternatives(list(av[-1])) if (p := _lead_problem(alt))), None)
    if op in _REPEATS:
        low, _high, sub = av
        if low == 0:
            return "an optional first item (tried at every position)"
        return next((p for alt in _alternatives(list(sub)) if (p := _lead_problem(alt))), None)
    return f"starts with {str(op).lower()} (tried at every position)"


def problems(pattern: re.Pattern[str]) -> list[str]:
    """One message per top-level alternative of ``pattern`` that the engine must try everywhere."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    return [p for alt in _alternatives(list(parsed.data)) if (p := _lead_problem(alt))]


def _searched_patterns() -> list[tuple[str, str, re.Pattern[str]]]:
    """(decoder, attribute, pattern) of every module-level pattern a decoder module searches with.

    A pattern used only with ``.match``/``.fullmatch`` (anchored where the code already stands) is
    not searched; any other use (``search``, ``finditer``, passing it to ``substitute``) is.
    """
    found = []
    for name, decoder in decoders.DECODERS.items():
        module = sys.modules[decoder.decode.__module__]
        source = Path(module.__file__).read_text()
        for attr, value in vars(module).items():
            if not isinstance(value, re.Pattern):
                continue
            uses = re.findall(rf"\b{re.escape(attr)}\b(\.\w+)?(?!\s*=)", source)
            if uses and all(use in (".match", ".fullmatch") for use in uses):
                continue
            found.append((name, attr, value))
        if decoder.reveal is not None:  # searched over a whole view before an escape decoder runs
            found.append((name, "reveal", decoder.reveal))
    return found


SEARCHED = _searched_patterns()


def test_the_lint_sees_the_patterns_it_must_judge() -> None:
    names = {(name, attr) for name, attr, _ in SEARCHED}
    assert {("string-concat", "_JOIN"), ("json-string", "_ESCAPE"), ("shell-prompt", "_SH_PROMPT"),
            ("hexdump", "_LINE"), ("json-string", "reveal"), ("percent", "reveal")} <= names


@pytest.mark.parametrize(("name", "attr", "pattern"), SEARCHED, ids=[f"{n}.{a}" for n, a, _ in SEARCHED])
def test_every_alternative_starts_with_something_searchable(name: str, attr: str, pattern: re.Pattern[str]) -> None:
    assert problems(pattern) == [], f"{name}: {attr}"


@pytest.mark.parametrize(
    ("pattern", "bad"),
    [
        (r"(?<=x)a|b", True),  # a lookbehind-led branch: the old string-concat join's shape
        (r"^[ \t]*[0-9a-f]{6}", True),
        (r"a?b", True),
        (r"(?:a|(?<!b)c)d", True),
        (r"[\"'](?:(?<=\\n.)x|y)", False),
        (r"ab|[cd]e|(?:f|g)h", False),
        (r"[0-9a-f](?<=^.)x", False),
    ],
)
def test_the_lint_tells_bad_leads_from_good(pattern: str, bad: bool) -> None:
    assert bool(problems(re.compile(pattern, re.M))) is bad
