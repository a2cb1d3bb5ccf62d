"""Pathological cells: huge cells, many tiny cells, near-miss ReDoS shapes for every built-in rule."""

from __future__ import annotations

import pyarrow as pa
import pytest

from shardscan.decoders import base64_
from shardscan.engine import Scanner, ScanOptions
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand

# Hundreds of adversarial cells under a time bound: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

RULESET = load_ruleset()


def _near_misses(keyword: str) -> dict[str, str]:
    """Long texts that keep a pattern busy without containing a secret."""
    n = 120_000
    return {
        "repeated-keyword": keyword * (n // len(keyword)),
        "keyword-then-run": keyword + "A" * n,
        "keyword-run-dots": (keyword + "a" * 30 + "..") * (n // (len(keyword) + 32)),
        "keyword-newlines": (keyword + "\n" + "B" * 63 + "\n") * (n // (len(keyword) + 65)),
    }


CASES = [
    pytest.param(rule.id, name, text, id=f"{rule.id}-{keyword}-{name}")
    for rule in RULESET.rules
    for keyword in rule.keywords[:2]
    for name, text in _near_misses(keyword).items()
]


@pytest.mark.parametrize("rule_id, shape, text", CASES)
def test_near_miss_shapes_finish_without_findings(rule_id: str, shape: str, text: str):
    scanner = Scanner(RULESET, ScanOptions(regex_timeout=5.0))
    findings, limits = scanner.scan_text(text)
    # Either the patterns finish (no secret here to find) or the timeout reports a limit: never a hang.
    assert [f.rule_id for f in findings if f.verdict in ("valid", "unverified")] == [] or limits


def test_secret_across_a_window_boundary_of_a_huge_cell_is_found_once():
    options = ScanOptions(window_chars=1_000_000, window_overlap=4096)
    token = expand("{{github:ghp_}}", seed="huge")
    filler = "lorem ipsum dolor sit amet " * (20_000_000 // 27)
    position = options.window_chars - 15  # starts in the first window, ends in the overlap
    cell = filler[:position] + " " + token + " " + filler[position:]
    result = Scanner(RULESET, options).scan_table(pa.table({"c": pa.array([cell], pa.large_string())}))
    assert [(f.rule_id, f.start, f.end) for f in result.findings] == [
        ("github-pat", position + 1, position + 1 + len(token))
    ]
    assert result.issues == ()


def test_ten_million_tiny_cells_stay_columnar():
    table = pa.table({"c": pa.array(["ok"] * 10_000_000)})
    result = Scanner(RULESET).scan_table(table)
    assert result.stats.cells == 10_000_000
    assert result.stats.candidate_cells == 0
    assert result.findings == () and result.issues == ()


def test_regex_timeout_is_reported_as_a_limit_not_a_hang():
    # A timeout this small cannot be met on a 4 MB candidate cell: the cell is reported, not skipped.
    scanner = Scanner(RULESET, ScanOptions(regex_timeout=1e-6))
    findings, limits = scanner.scan_text("eyJ" + "a" * 4_000_000)
    assert findings == []
    assert limits and "time limit" in limits[0]


def test_lines_that_only_look_wrapped_are_read_once():
    """Keyword lines between 63-character lines, over a whole 4 MB scan window.

    Each 63-character line starts a base64 run that is not wrapped (63 is not a multiple of 4);
    reading every run to the end of the window made this quadratic (7.6 s for 120 KB, hours for
    4 MB). Runs are now read line by line, up to the line that decides them.
    """
    text = ("AKIA\n" + "B" * 63 + "\n") * (4_000_000 // 69)
    runs = list(base64_.runs(text))
    assert len(runs) == 4_000_000 // 69
    assert {(end - start, body) for start, end, body in runs} == {(63, "B" * 63)}
    findings, limits = Scanner(RULESET).scan_text(text)
    assert (findings, limits) == ([], [])


def test_a_cell_of_thousands_of_tokens_is_deduplicated_without_comparing_every_pair(monkeypatch):
    """Deduplication and context redaction index the matches: a cell holding N tokens must not cost
    N x N comparisons (a hostile cell of 30,000 tokens would otherwise take minutes)."""
    from shardscan import redaction
    from shardscan.scanning import resolve

    tokens = [expand("{{hf}}" if i % 2 else "{{github:ghp_}}", seed=f"many-{i}") for i in range(2000)]
    text = "\n".join(f"TOKEN={token}" for token in tokens)
    inside_calls = []
    real_inside = resolve._inside
    monkeypatch.setattr(resolve, "_inside", lambda item, outer: inside_calls.append(1) or real_inside(item, outer))
    # (Above the default cap of findings listed per cell, which would aggregate most of them.)
    findings, _ = Scanner(load_ruleset(), ScanOptions(max_findings_per_cell=5000)).scan_text(text)
    assert [text[f.start : f.end] for f in findings] == tokens
    assert inside_calls == []  # no match of the other rule could contain one: none compared

    class CountingSpans(list):
        reads = 0

        def __getitem__(self, index):
            CountingSpans.reads += 1
            return super().__getitem__(index)

    spans = CountingSpans(sorted((f.start, f.end, f.preview) for f in findings))
    middle = findings[1000]
    reach = redaction.span_reach(spans)
    CountingSpans.reads = 0
    snippet = redaction.context_snippet(text, middle.start, middle.end, spans, reach)
    assert f"[{middle.preview}]" in snippet
    assert CountingSpans.reads < 50  # the spans near the window, found by bisection, not all 2000
