"""The decoders' fast paths against straightforward reference implementations of the same decisions."""

from __future__ import annotations

import base64
import random
from itertools import accumulate

import pytest

from shardscan import detect as detect_module
from shardscan import hyperscan_matcher
from shardscan.decoders import _LABEL_REST as LABEL_REST
from shardscan.decoders import KeywordSet
from shardscan.decoders import base64_ as b64
from shardscan.decoders import terminal_wrap as tw
from shardscan.line_prefix import WRAP_PREFIXES, LinePrefix, prefix_length
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


# ---- the terminal-wrap decoder's joins: the per-line reading it had before its fast paths ----------


class _RefRuns(tw._Runs):
    """The decoder's runs of lines, each found line by line (without bisecting the blank lines)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(lines, [len(line) for line in lines])

    def run(self, kind: LinePrefix | None, index: int) -> tw._Run:
        return self._walked_run(kind, index)


def _ref_wraps(text: str) -> list[tuple[int, int]]:
    """The decoder's joins as it made them before its fast paths: every kind of prefix tried on
    every candidate cut, line by line (the candidates are the decoder's own: ``cut_lines``)."""
    cut = tw.cut_lines(text)
    if cut is None:
        return []
    lines, shown, _lengths, cuts = cut
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))
    runs = _RefRuns(shown)
    out: list[tuple[int, int]] = []
    for i in cuts:
        line, following = shown[i], shown[i + 1]
        for kind in (*WRAP_PREFIXES, None):
            at = 0 if kind is None else prefix_length(line, kind)
            after = 0 if kind is None else prefix_length(following, kind)
            if after < 0:
                continue
            if _ref_joins(runs, kind, i, len(line) - at if at >= 0 else -1, following, after):
                out.append((starts[i] + len(line), starts[i + 1] + after))
                break
            if kind in tw._DISTINCT and at >= 0:
                break  # both lines carry this prefix: it is not a diff mark, indentation or text
    return out


def _ref_joins(runs: _RefRuns, kind: LinePrefix | None, index: int, width: int, following: str, after: int) -> bool:
    """Whether line ``index`` (``width`` characters after its prefix of ``kind``; -1: it has none) was
    cut at the width of its run, the next line carrying that prefix."""
    if following[after : after + 1] not in tw._TOKEN_START:
        return False
    line = runs.lines[index]
    tail = line[-tw.MIN_TOKEN:]
    head = following[after : after + tw.MIN_TOKEN]
    if len(tail) - len(tail.rstrip(tw._TOKEN_CHARS)) + len(head) - len(head.lstrip(tw._TOKEN_CHARS)) < tw.MIN_TOKEN:
        return False  # too short a run of token characters across the cut to be a secret
    if tw.MIN_WIDTH <= width <= tw.MAX_WIDTH:
        run = runs.run(kind, index)
        if width in run.blob_widths:
            return False
        if any(runs.width(kind, j) == width for j in (index - 1, index + 1)):
            return True  # two lines of one width in a row: text cut there
        if width in tw.COMMON_WIDTHS and width == run.widest:
            return True  # a pane: nothing is printed wider
    # The first line of a run, glued to what came before it on its line (a JSON-serialised
    # observation starts after '"observation": "'): its own width says nothing, the two lines
    # after it say the width, and it holds at least that much.
    next_width = runs.width(kind, index + 1)
    return (
        tw.MIN_WIDTH <= next_width <= tw.MAX_WIDTH
        and runs.width(kind, index + 2) == next_width
        and len(line) >= next_width
        and next_width not in runs.run(kind, index + 1).blob_widths
    )


_PREFIXES = ["", "> ", "> > ", "E   ", "E       ", "+", "-", " ", "    ", "  12 | ", "     3\t", "12→", "12:",
             "[2024-05-01 10:00:00] ", "2024-05-01T10:00:00Z INFO ", "app-1  | ", "May  1 10:00:00 host app[42]: ",
             "INFO:root:", "src/x.py:12:", "some text "]
_PIECES = ["ghp_", "sk-ant-api03-", "eyJhbGciOi", "AKIA", "-rw-r--r-- 1 root root", "password=", "hf_", "x", "=",
           "a" * 30, "QUJD" * 10, "-", "_", ".", "/", "|", "\\n", "é"]


def _wrapped_texts(count: int) -> list[str]:
    """Lines cut at various widths (near 40, common panes, base64 widths, random), each piece after
    a tool's prefix, mixed with plain lines, blank lines, CRLF and PEM markers."""
    rng = random.Random(4242)
    texts = []
    for _ in range(count):
        chunks: list[str] = []
        for _ in range(rng.randrange(1, 6)):
            source = "".join(
                rng.choice(_PIECES) if rng.random() < 0.5 else rng.choice("abcdefXYZ0123456789 _-+/=:.")
                * rng.randrange(1, 30)
                for _ in range(rng.randrange(1, 40))
            )
            width = rng.choice([39, 40, 41, 60, 64, 66, 76, 80, 100, 120, 200, 400, 401, rng.randrange(20, 420)])
            chunks.append(tw.encode(source, width, rng.choice(_PREFIXES)))
            if rng.random() < 0.2:
                chunks.append("")
            if rng.random() < 0.1:
                chunks.append(rng.choice(["-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"]))
        text = "\n".join(chunks)
        texts.append(text.replace("\n", "\r\n") if rng.random() < 0.15 else text)
    return texts


def test_terminal_wrap_joins_the_same_breaks_as_its_per_line_reading():
    joined = 0
    for text in _wrapped_texts(1500):
        expected = _ref_wraps(text)
        joined += len(expected)
        assert tw._wraps(text) == expected, text
    assert joined > 500  # the texts do exercise joins, not only refusals


# ---- base64 runs: the first-line shortcut against the line-by-line reading ----------------------


def _base64_texts(count: int) -> list[str]:
    rng = random.Random(64)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            roll = rng.random()
            if roll < 0.4:
                body = base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randrange(10, 200)))).decode()
                width = rng.choice([16, 24, 40, 44, 60, 64, 72, 76, 80, 100, 120, rng.randrange(20, 130)])
                sep = rng.choice(["\n", "\r\n", "\\n", "\n  "])
                parts.append(sep.join(body[i : i + width] for i in range(0, len(body), width)))
            elif roll < 0.6:
                # A hash-like line, then a shorter one: a commit and its author, a key and the next setting.
                first = "".join(rng.choice(alphabet) for _ in range(rng.choice([24, 28, 40, 60, 64, 76, 80])))
                second = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
                parts.append(first + rng.choice(["\n", "\\n", "="]) + rng.choice(["", "=", "=="]) + second
                             + rng.choice(["", ":", " x", "=", "\nmore"]))
            else:
                parts.append(rng.choice(["commit ", "Author: x", "key: ", "sha512-", '"', " ", "\n", "=", "é"]))
        texts.append("".join(parts))
    return texts


def test_base64_runs_are_those_of_the_line_by_line_reading(monkeypatch):
    texts = _base64_texts(3000)
    fast = [list(b64.runs(text)) for text in texts]
    monkeypatch.setattr(b64, "_first_line_only", lambda *_args: 0)  # every run read line by line
    assert [list(b64.runs(text)) for text in texts] == fast
    assert sum(map(len, fast)) > 3000
