"""Load-time checks that a rule pattern cannot backtrack catastrophically."""

from __future__ import annotations

import re

# A group that contains an unbounded quantifier and is itself repeated: (a+)+, (\w*x)*, (?:a+b?){2,}.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*(?<!\\)[+*](?:[^()\\]|\\.)*\)(?:[+*]|\{\d*,\})")


def backtracking_risk(pattern: str) -> str | None:
    """Describe a catastrophic-backtracking shape in ``pattern``, or return None when none is seen.

    This is a heuristic on the pattern text; the per-cell regex timeout remains the backstop.
    """
    match = _NESTED_QUANTIFIER.search(pattern)
    if match:
        return f"nested unbounded quantifier in {match.group(0)[:60]!r}"
    return None
