"""Tokens cut at a fixed width, with a tool's prefix on every line: found whole, where they are, as unwrapped."""

from __future__ import annotations

import base64
import random
import time

import pyarrow as pa
import pytest

from shardscan.decoders import terminal_wrap
from shardscan.decoders.base import DecodeRequest
from shardscan.engine import Scanner, ScanOptions
from shardscan.prefilter import Prefilter
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand, private_key_pem
from tests.conftest import FIXED_NOW

WIDTHS = [41, 66, 79, 97, 133]
FAMILIES = {
    "openai-api-key": "{{openai:sk-proj-}}",
    "anthropic-api-key": "{{anthropic:api03}}",
    "huggingface-token": "{{hf}}",
    "github-pat": "{{github:ghp_}}",
    "aws-access-key-id": "{{aws_id:AKIA}}",
    "jwt": "{{jwt}}",
}


def _markdown_quote(_n: int) -> str:
    return "> "


def _nested_quote(_n: int) -> str:
    return "> > "


def _pytest(_n: int) -> str:
    return "E   "


def _diff(_n: int) -> str:
    return "+"


def _gutter(n: int) -> str:
    return f"{n + 12:>5} | "


def _arrow_view(n: int) -> str:
    return f"{n + 7:>6}→"


def _timestamp(n: int) -> str:
    return f"2026-11-30T10:{n // 60:02d}:{n % 60:02d}.{n * 7919 % 1000:03d}Z "


PREFIXES = {
    "none": lambda _n: "",
    "quote": _markdown_quote,
    "nested-quote": _nested_quote,
    "pytest": _pytest,
    "diff": _diff,
    "line-number": _gutter,
    "file-view": _arrow_view,
    "timestamp": _timestamp,
}
FILLER = "Settings(model='gpt-4o-mini', temperature=0.2, max_retries=3, base_url='https://api.example.com/v1', "


def _scanner() -> Scanner:
    return Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW))


SCANNER = _scanner()


def wrapped_cell(token: str, width: int, prefix: str, cut: int) -> tuple[str, int, int]:
    """A pytest-style failure where the repr holding ``token`` is cut every ``width`` characters,
    ``cut`` characters into the token at the end of the second line (or a line before it when the
    token is long); each line after ``prefix``.

    Returns the cell and the span of the token in it (from its first to its last character).
    """
    head_length = max(len("api_key='"), 2 * width - cut)
    head = (FILLER * (head_length // len(FILLER) + 1))[: head_length - len("api_key='")] + "api_key='"
    logical = head + token + "', timeout=30, organization=None, project='default')"
    pieces = [logical[i : i + width] for i in range(0, len(logical), width)]
    maker = PREFIXES[prefix]
    lines = [maker(n) + piece for n, piece in enumerate(pieces)]
    before = "$ python -m pytest tests/test_settings.py -q\n"
    cell = before + "\n".join(lines) + "\n1 failed in 0.31s\n"

    def locate(at: int) -> int:
        """Where the character at ``at`` of the logical line is in the cell."""
        row = at // width
        return len(before) + sum(len(line) + 1 for line in lines[:row]) + len(maker(row)) + at % width

    return cell, locate(len(head)), locate(len(head) + len(token) - 1) + 1


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("rule", sorted(FAMILIES))
def test_a_token_cut_at_any_width_under_any_prefix_is_found_whole(rule, prefix, width):
    token = expand(FAMILIES[rule], seed=f"{rule}-{width}")
    unwrapped, _ = SCANNER.scan_text(f"api_key='{token}'")
    [plain] = unwrapped
    for cut in (2, len(token) // 2):
        cell, start, end = wrapped_cell(token, width, prefix, cut)
        assert cell[start] == token[0] and cell[end - 1] == token[-1]
        found, limits = SCANNER.scan_text(cell)
        assert not limits
        assert [(f.rule_id, f.start, f.end, f.fingerprint, f.verdict) for f in found] == [
            (rule, start, end, plain.fingerprint, plain.verdict)
        ], (cut, cell)
        assert "terminal-wrap" in found[0].encoding


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("prefix", ["none", "quote", "pytest", "diff", "line-number", "timestamp"])
def test_a_private_key_printed_at_any_width_under_any_prefix_is_found_whole(prefix, width):
    pem = private_key_pem("ec", seed=3)
    [plain] = SCANNER.scan_text(pem)[0]
    maker = PREFIXES[prefix]
    pieces = [line[i : i + width] for line in pem.strip().split("\n") for i in range(0, max(len(line), 1), width)]
    lines = [maker(n) + piece for n, piece in enumerate(pieces)]
    before = "$ cat deploy/key.pem\n"
    cell = before + "\n".join(lines) + "\n$ "
    found, limits = SCANNER.scan_text(cell)
    assert not limits
    assert [(f.rule_id, f.fingerprint, str(f.verdict)) for f in found] == [("private-key", plain.fingerprint, "valid")]
    assert (found[0].start, found[0].end) == (len(before) + len(maker(0)), len(cell) - 3)


def test_a_keyword_cut_by_the_wrap_still_selects_the_cell():
    """Nothing but the cut keyword in the cell: the prefilter must pick it by the pieces' shape."""
    rows = []
    expected = []
    for i, (rule, template) in enumerate(sorted(FAMILIES.items())):
        token = expand(template, seed=f"select-{rule}")
        cell, start, end = wrapped_cell(token, 66, "quote", 2)
        assert token[:4] not in cell  # the keyword is nowhere whole
        rows.append({"text": cell, "note": "ok"})
        expected.append((rule, i, "text", start, end))
    result = _scanner().scan_table(pa.Table.from_pylist(rows))
    assert sorted((f.rule_id, f.location.row, f.location.column, f.start, f.end) for f in result.findings) == sorted(
        expected
    )
    assert not result.issues


def _b64_lines(data: bytes, width: int) -> str:
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _negatives() -> dict[str, str]:
    rng = random.Random(27)
    ls = "\n".join(
        f"-rw-r--r-- 1 agent agent {rng.randint(1000, 99999):>6} Nov 30 10:{i:02d} "
        f"{''.join(rng.choice('abcdefghij') for _ in range(12))}_{i:03d}.py"
        for i in range(40)
    )
    dump = "\n".join(
        f"{i * 16:08x}: " + " ".join(rng.randbytes(2).hex() for _ in range(8)) + "  " + "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz.") for _ in range(16))
        for i in range(40)
    )
    # A shell loop printing one hash per line, and prose wrapped at a column by an editor.
    hashes = "\n".join(f"sha256:{rng.randbytes(32).hex()}" for _ in range(30))
    prose = ("The deployment uses short-lived credentials that are rotated by the platform every hour, "
             "so nothing in this log can be replayed later; ") * 12
    wrapped_prose = "\n".join("> " + prose[i : i + 72] for i in range(0, len(prose), 72))
    return {
        "base64-76": "$ base64 model.bin\n" + _b64_lines(rng.randbytes(3000), 76),
        "certificate-64": "-----BEGIN CERTIFICATE-----\n" + _b64_lines(rng.randbytes(1200), 64)
        + "\n-----END CERTIFICATE-----",
        "base64-url-76": "\n".join(
            base64.urlsafe_b64encode(rng.randbytes(3000)).decode()[i : i + 76] for i in range(0, 4000, 76)
        ),
        "ls": ls,
        "hexdump": dump,
        "hashes": hashes,
        "wrapped-prose": wrapped_prose,
    }


@pytest.mark.parametrize("name", sorted(_negatives()))
def test_text_wrapped_on_purpose_gives_no_finding(name):
    text = _negatives()[name]
    assert SCANNER.scan_text(text) == ([], [])


def test_blobs_wrapped_on_purpose_are_not_joined():
    negatives = _negatives()
    for name in ("base64-76", "certificate-64"):
        assert list(terminal_wrap.decode(DecodeRequest(negatives[name]))) == [], name


@pytest.mark.slow
def test_joining_is_linear_in_the_number_of_lines():
    """100,000 lines of one width, every one a cut: each kind of prefix builds its runs once."""

    def seconds(lines: int) -> float:
        rng = random.Random(lines)
        pool = ["> " + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_") for _ in range(64))
                for _ in range(100)]
        text = "\n".join(pool[i % 100] for i in range(lines))
        started = time.perf_counter()
        [decoded] = terminal_wrap.decode(DecodeRequest(text))
        took = time.perf_counter() - started
        assert decoded.text.count("\n") == 0
        return took

    small = min(seconds(10_000) for _ in range(2))
    large = seconds(100_000)
    # Linear: about ten times the small cell's time; quadratic would be a hundred times.
    assert large < 30 * small + 0.5, (small, large)


def _cut_keywords() -> list[tuple[str, int]]:
    ruleset = load_ruleset()
    # The keywords that select cells: a rule with prefilter patterns is selected by those instead.
    keywords = [k for k in dict.fromkeys(ruleset.prefilter_keywords) if k not in ruleset.context_keywords]
    return [(k, cut) for k in keywords for cut in range(1, len(k))]


@pytest.mark.slow
def test_every_keyword_cut_at_every_position_selects_its_cell():
    """The prefilter (Hyperscan where installed, else RE2) picks the cell by the keyword's pieces
    alone: cut after four characters or more under any prefix (and CRLF), cut sooner bare, under a
    quote (nested too) or pytest's E."""
    cells, names = [], []
    for keyword, cut in _cut_keywords():
        prefixes = ["", "> ", "> > ", "E   ", "E       "]
        if cut >= terminal_wrap.MIN_HEAD:
            prefixes += ["+", "   12 | ", "2026-11-30T10:15:01.137Z ", "\r"]
        for prefix in prefixes:
            first = "" if prefix == "\r" else prefix
            cells.append(f"{first}value: {keyword[:cut]}\n{prefix}{keyword[cut:]}Q7xZ2mK9pL4v".replace("\n\r", "\r\n"))
            names.append((keyword, cut, prefix))
    re2_only = Prefilter(SCANNER.prefilter.pattern)  # no Hyperscan expressions: RE2 runs the pattern
    for prefilter in (SCANNER.prefilter, re2_only):
        mask = prefilter.mask(pa.array(cells))
        assert [name for name, hit in zip(names, mask, strict=True) if not hit] == []


def test_words_ending_like_a_keyword_head_do_not_select_a_cell():
    text = ("They said the key\nwas in the task\nand the map was new\nbut nobody knew where to look: ask\n"
            "the owner of the disk\nor check the log output again in a few\nminutes, then try the high\nroad.")
    assert not SCANNER.prefilter.mask(pa.array([text]))[0]


@pytest.mark.slow
def test_keyword_forms_stay_within_hyperscans_pattern_length_for_many_rules():
    """Cut-keyword tries are split: one trie over hundreds of keywords is past Hyperscan's limit."""
    import random

    from shardscan import hyperscan_matcher
    from shardscan.decoders import terminal_wrap

    rng = random.Random(7)
    keywords = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz_-") for _ in range(rng.randint(4, 12)))
                       for _ in range(600)})
    forms = terminal_wrap.keyword_forms(keywords)
    assert len(forms) > 2
    assert all(len(form) < 4000 for form in forms)
    if hyperscan_matcher.enabled():
        assert hyperscan_matcher.database(tuple(forms)) is not None
