"""The prefilter's two matchers: Hyperscan over whole data buffers selects exactly the cells RE2 selects."""

from __future__ import annotations

import base64
import json
import os
import platform
import random
import re
import sys
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from shardscan import hit_windows, hyperscan_matcher
from shardscan import prefilter as prefilter_module
from shardscan.decoders import terminal_wrap
from shardscan.engine import Scanner
from shardscan.prefilter import Prefilter, RuleGate
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand
from tests.conftest import near_misses

SCANNER = Scanner(load_ruleset())
PREFILTER = SCANNER.prefilter
TOKEN_KEYWORDS = sorted(SCANNER.ruleset.token_keywords)


def _masks(values: pa.Array, monkeypatch) -> tuple[list[bool], list[bool]]:
    """(Hyperscan mask, RE2 mask) of ``values``."""
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    fast = PREFILTER.mask(values).tolist()
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    slow = PREFILTER.mask(values).tolist()
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV)
    return fast, slow


def test_hyperscan_is_the_matcher_where_its_wheels_exist(monkeypatch):
    """pyproject installs the bindings on these platforms; a missing import there is a packaging bug."""
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    machine = platform.machine()
    if machine in ("x86_64", "AMD64") or (sys.platform == "darwin" and machine == "arm64"):
        assert hyperscan_matcher.enabled()
        assert hyperscan_matcher.database(PREFILTER.expressions) is not None
        gate = SCANNER.gate._compiled()
        assert gate is not None and len(gate.ids) >= len([g for g in SCANNER.gate.gates if g]) - 1
    assert PREFILTER.expressions, "the built-in keyword patterns must all be usable by Hyperscan"


def test_re2_can_be_forced(monkeypatch):
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    assert not hyperscan_matcher.enabled()
    assert hyperscan_matcher.database(PREFILTER.expressions) is None


def _fragments() -> list[str]:
    """Pieces that make or almost make a keyword match, plain and encoded."""
    pieces = ["x", "a", "7", " ", "/", "=", "\n", "\\n", "%3D", "\\u003d", "\\x3d", "é", "-----", "BEGIN"]
    pieces += ["PRIVATE KEY"]
    pieces += TOKEN_KEYWORDS + [k[:-1] for k in TOKEN_KEYWORDS] + [k[1:] for k in TOKEN_KEYWORDS]
    pieces += ["-----BEGIN", "LS0tLS1CRUdJTi", "tLS0tLUJFR0lO", "%2DBEGIN", "ghp\\u005f", "sk&#45;ant"]
    pieces += ["aws_secret_access_key"]
    pieces += ["ZXlK", "Z2hwX", "eyJhbGci", "AKIAIOSF", "hf_abcdefg"]
    return pieces


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 3, 512])
def test_both_matchers_select_the_same_cells_of_random_arrays(batch, monkeypatch):
    """Random cells made of keyword fragments: Hyperscan selects every cell RE2 selects, and any
    other cell it selects ends a match that begins in the bytes of the cells before it (whether
    the scan stops and resumes after every match, every few, or runs through)."""
    monkeypatch.setattr(hyperscan_matcher, "BATCH_MATCHES", batch)
    rng = random.Random(7)
    pieces = _fragments()
    for _ in range(40):
        texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 60))]
        texts = [t if rng.random() > 0.1 else None for t in texts]
        fast, slow = _masks(pa.array(texts, pa.large_string()), monkeypatch)
        for index, (hs, re2) in enumerate(zip(fast, slow, strict=True)):
            if hs == re2:
                continue
            assert hs and not re2, f"cell {index} of {texts!r} is missed by Hyperscan"
            before = "".join(t or "" for t in texts[:index])[-64:]
            window = pa.array([before + texts[index]], pa.large_string())
            assert index and PREFILTER.mask(window)[0], f"cell {index} of {texts!r}: unexplained selection"


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
def test_a_token_keyword_at_the_start_of_a_cell_after_a_word_is_selected(kind, monkeypatch):
    """The cell before ends in a letter, so only the cell's own start makes the keyword a token."""
    texts = ["abc", "ghp_" + "a" * 36, "xyz", "eyJhbGciOiJIUzI1NiJ9", "wordghp_" + "b" * 36, "hf", "ey", "AKIb"]
    expected = [False, True, False, True, False, False, False, False]
    values = pa.array([t.encode() if "binary" in str(kind) else t for t in texts], kind)
    assert _masks(values, monkeypatch) == (expected, expected)
    # A slice starts at an offset into the buffers; the cell before the slice is not part of it.
    assert _masks(values.slice(1, 4), monkeypatch) == (expected[1:5], expected[1:5])


@pytest.mark.parametrize(
    ("before", "selected"),
    [(" ", True), ("=", True), ("x%3D", True), ("x%253d", True), ("x\\u003d", True), ("x\\x3D", True),
     ("x\\n", True), ("x\x1b[1;33m", True), ("x", False), ("x3D", False), ("x%3", False), ("x\\u03d", False)],
)
def test_every_kind_of_token_boundary_selects_in_both_matchers(before: str, selected: bool, monkeypatch):
    """Hyperscan runs the token boundary as three expressions (see ``prefilter._HYPERSCAN_BOUNDARIES``):
    each kind still selects, and a keyword glued to a word does not."""
    cells = pa.array(["no keyword here", f"{before}ghp_" + "a" * 36], pa.large_string())
    assert _masks(cells, monkeypatch) == ([False, selected], [False, selected])


def test_a_null_cell_is_never_selected_even_when_its_slot_holds_a_keyword(monkeypatch):
    """Arrow lets a null slot span bytes; they are not a cell's text."""
    data = b"abc" + b"ghp_" + b"a" * 36 + b"xyz"
    offsets = pa.py_buffer(np.array([0, 3, 43, 46], dtype=np.int32).tobytes())
    validity = pa.py_buffer(np.packbits([1, 0, 1], bitorder="little").tobytes())
    values = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, pa.py_buffer(data)], null_count=1)
    assert _masks(values, monkeypatch) == ([False, False, False], [False, False, False])


@pytest.mark.parametrize(
    "sequence", ["\x1b[?2004l", "\x1b[2K\x1b[1G", "\x1b[?25l", "\x1b[1C", "\\u001b[?2004l", "\x1b[38;5;208m"]
)
def test_a_token_right_after_a_terminal_control_sequence_is_selected_and_found(sequence, monkeypatch):
    """Terminal captures put bracketed-paste, cursor and colour sequences (all ending in a letter)
    right before command output; the token after one still starts a token."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
    token = "hf_" + "".join(random.Random(sequence).choices(alphabet, k=34))
    cells = pa.array([f"$ cat token\r\n{sequence}{token}\r\n", f"plain{token}"], pa.large_string())
    assert _masks(cells, monkeypatch) == ([True, False], [True, False])
    found, _ = SCANNER.scan_text(cells[0].as_py())
    assert [(f.rule_id, f.start) for f in found] == [("huggingface-token", len("$ cat token\r\n" + sequence))]


def test_cells_are_selected_in_sliced_string_and_dictionary_arrays():
    texts = ["plain", "-----BEGIN RSA PRIVATE KEY-----", "noise", "AKIA" + "Q" * 16, "noise"]
    sliced = pa.array(["-----BEGIN"] + texts, pa.string()).slice(1)
    assert PREFILTER.mask(sliced).tolist() == [False, True, False, True, False]
    dictionary = pa.array(texts * 2).dictionary_encode()
    assert PREFILTER.mask(dictionary).tolist() == [False, True, False, True, False] * 2
    binary = pa.array([t.encode() for t in texts], pa.binary())
    assert PREFILTER.mask(binary).tolist() == [False, True, False, True, False]


def test_a_null_slot_whose_bytes_hold_a_keyword_is_not_selected():
    """Arrow leaves the bytes behind a null undefined: they may hold anything, and must not count."""
    data = b"noise-----BEGIN PRIVATE KEY-----tail"
    offsets = np.array([0, 5, 31, 35], dtype=np.int64)
    validity = np.packbits(np.array([1, 0, 1, 0, 0, 0, 0, 0], dtype=bool), bitorder="little")
    values = pa.Array.from_buffers(
        pa.large_string(), 3, [pa.py_buffer(validity), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)],
        null_count=1,
    )
    assert PREFILTER.mask(values).tolist() == [False, False, False]


def test_dense_matches_are_finished_by_re2(monkeypatch):
    """When most cells match, the rest of the array goes to RE2; the selection is the same."""
    monkeypatch.setattr(hyperscan_matcher, "DENSE_AFTER_HITS", 4)
    monkeypatch.setattr(hyperscan_matcher, "BATCH_MATCHES", 8)  # density is judged after each batch
    texts = [("token ghp_" + "c" * 36) if i % 3 else "quiet" for i in range(200)]
    values = pa.array(texts, pa.large_string())
    compiled = hyperscan_matcher.database(PREFILTER.expressions)
    if compiled is not None:
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
        _, scanned = hyperscan_matcher.first_match_cells(compiled.db, offsets, memoryview(values.buffers()[2]))
        assert scanned < len(values)  # the early stop is what this test exercises
    assert PREFILTER.mask(values).tolist() == [bool(i % 3) for i in range(200)]


def test_a_cell_that_keeps_matching_costs_a_few_callbacks_and_the_scan_resumes_after_it(monkeypatch):
    """One call runs over the buffer; a cell full of keywords stops it after BATCH_MATCHES matches."""
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    compiled = hyperscan_matcher.database(PREFILTER.expressions)
    if compiled is None:
        pytest.skip("Hyperscan is not enabled (no wheel for this platform, or SHARDSCAN_MATCHER=re2)")
    texts = ["quiet", "-----BEGIN " * 5000, "still quiet", "x -----BEGIN y", "-----BEGIN", "", "end"]
    values = pa.array(texts, pa.large_string())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
    calls, callbacks = [], []

    class Counting:
        def scan(self, data, match_event_handler):
            calls.append(len(data))

            def counted(*args):
                callbacks.append(args[2])
                return match_event_handler(*args)

            return compiled.db.scan(data, match_event_handler=counted)

    mask, scanned = hyperscan_matcher.first_match_cells(Counting(), offsets, memoryview(values.buffers()[2]))
    assert (mask.tolist(), scanned) == ([False, True, False, True, True, False, False], len(texts))
    assert len(calls) == 2  # the whole buffer, then the rest after the repeating cell
    assert calls[1] == int(offsets[-1] - offsets[2])  # resumed exactly where the repeating cell ends
    assert len(callbacks) <= hyperscan_matcher.BATCH_MATCHES + 4


@pytest.mark.parametrize(
    "extra",
    [r"^start", r"end$", r"\bword", r"(?<=x)y", r"a.b", r"[^a]x", r"[é]x", r"\x{e9}", r"\p{Lu}", r"(?i)abc", r"\D"],
)
def test_an_extra_pattern_whose_meaning_differs_on_bytes_or_at_cell_boundaries_runs_in_re2(extra):
    assert Prefilter.from_keywords(["needle"], extra_patterns=[extra]).expressions == ()


@pytest.mark.parametrize("extra", [r"[ab]x\^", r"%2[Dd]", r"\\u005[fF]", r"a\.b", r"\x41\d"])
def test_an_extra_pattern_that_means_the_same_on_bytes_runs_in_hyperscan(extra):
    assert Prefilter.from_keywords(["needle"], extra_patterns=[extra]).expressions != ()


def test_a_non_ascii_keyword_selects_the_same_cells_in_both_matchers(monkeypatch):
    """A keyword's non-ASCII letters are its UTF-8 bytes to Hyperscan, as they are to RE2."""
    prefilter = Prefilter.from_keywords(["clé_privée"], extra_patterns=[], token_keywords=["clé_privée"])
    assert prefilter.expressions != ()
    texts = ["clé_privée=1", "laclé_privée", " clé_privée", "cle_privee", "é clé_privée", None, "xclé_privéex"]
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    fast = prefilter.mask(pa.array(texts)).tolist()
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    assert fast == prefilter.mask(pa.array(texts)).tolist() == [True, False, True, False, True, False, False]


def test_compiled_databases_are_cached_on_disk_and_a_damaged_file_is_compiled_again(tmp_path, monkeypatch):
    if not hyperscan_matcher.enabled():
        pytest.skip("Hyperscan is not enabled (no wheel for this platform, or SHARDSCAN_MATCHER=re2)")
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})
    expressions = ("alpha", "be+ta")
    values = pa.array(["an alpha", "gamma", "beeeta"], pa.large_string())

    def selected(compiled) -> list[bool]:
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
        return hyperscan_matcher.first_match_cells(compiled.db, offsets, memoryview(values.buffers()[2]))[0].tolist()

    folder = tmp_path / "hyperscan"
    assert selected(hyperscan_matcher.database(expressions, cache_dir=folder)) == [True, False, True]
    (cached,) = folder.iterdir()
    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})
    monkeypatch.setattr(hyperscan_matcher, "_compile", lambda *_: pytest.fail("compiled although cached"))
    assert selected(hyperscan_matcher.database(expressions, cache_dir=folder)) == [True, False, True]

    key_file = os.environ["SHARDSCAN_CACHE_KEY_FILE"]
    monkeypatch.undo()
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SHARDSCAN_CACHE_KEY_FILE", key_file)
    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})
    blob = bytearray(cached.read_bytes())
    blob[-1] ^= 0xFF
    cached.write_bytes(bytes(blob))
    assert selected(hyperscan_matcher.database(expressions, cache_dir=folder)) == [True, False, True]
    assert cached.read_bytes() != bytes(blob)  # rewritten


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    if not hyperscan_matcher.enabled():
        pytest.skip("Hyperscan is not enabled (no wheel for this platform, or SHARDSCAN_MATCHER=re2)")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(blocker))
    monkeypatch.setattr(hyperscan_matcher, "_DATABASES", {})
    assert hyperscan_matcher.database(("gamma",), cache_dir=blocker / "hyperscan") is not None


@pytest.mark.slow
def test_both_matchers_gate_the_same_rules_for_near_misses_of_every_example(monkeypatch):
    """The rule gate in Hyperscan (wide gates, one pass per text) keeps every rule RE2's keeps, and on
    near misses of the examples no more: the wide forms cost no extra rule runs there."""
    texts = near_misses(SCANNER.rules, seed=11, per_example=8)
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    fast = SCANNER.gate.rules_for(texts)
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    slow = SCANNER.gate.rules_for(texts)
    assert all(set(s) <= set(f) for f, s in zip(fast, slow, strict=True))
    assert fast == slow
    assert any(slow) and not all(slow)  # the gates select some texts and reject others


def test_string_views_and_binary_dictionaries_are_selected_like_strings():
    texts = ["quiet", "ghp_" + "d" * 36, None, "the key: -----BEGIN PRIVATE KEY-----", "eyJhbGciOiJub25lIn0"]
    expected = [False, True, False, True, True]
    assert PREFILTER.mask(pa.array(texts, pa.string_view())).tolist() == expected
    blobs = pa.array([t.encode() if t is not None else None for t in texts], pa.large_binary()).dictionary_encode()
    assert PREFILTER.mask(blobs).tolist() == expected
    views, strings = PREFILTER.masks([pa.array(texts, pa.string_view()), pa.array(texts[::-1])])
    assert (views.tolist(), strings.tolist()) == (expected, expected[::-1])


def test_a_gate_that_folds_case_runs_in_hyperscan_and_keeps_unicode_folding(monkeypatch):
    """RE2 folds ``ſ`` (long s) to ``s`` and the Kelvin sign to ``k``: a text holding either keeps every
    rule whose gate folds case, whatever Hyperscan's own folding does."""
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    gate = RuleGate.from_patterns(["(?i)secret", "abc", None, "(?i:tok)en"])
    compiled = gate._compiled()
    if hyperscan_matcher.enabled():
        assert compiled.ids == (0, 1, 3)
    texts = ["ſecret here", "SECRET abc", "nothing", "xabcx", "\u212aey", "TOKen"]
    expected = [(0, 2, 3), (0, 1, 2), (2,), (1, 2), (0, 2, 3), (2, 3)]
    assert gate.rules_for(texts) == expected
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    assert [set(r) <= set(e) for r, e in zip(gate.rules_for(texts), expected, strict=True)] == [True] * len(texts)
    assert gate.rules_for(texts)[1:4] == expected[1:4]


def test_re2_folds_only_long_s_and_the_kelvin_sign_onto_ascii_letters():
    """The fallback above names every such character: checked against RE2 over all of Unicode."""
    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    folded = pc.match_substring_regex(pa.array(chars, pa.string()), "(?i)^[a-z]$").to_numpy(zero_copy_only=False)
    assert {chars[i] for i in np.flatnonzero(folded)} == set(prefilter_module._FOLDS_TO_ASCII)


def test_every_builtin_gate_runs_in_hyperscan(monkeypatch):
    """Gates that fold case, or repeat Unicode classes a bounded number of times (which Hyperscan
    refuses as too large), run in Hyperscan in their wide form: no RE2 pass over the candidates."""
    monkeypatch.delenv(hyperscan_matcher.MATCHER_ENV, raising=False)
    if not hyperscan_matcher.enabled():
        pytest.skip("Hyperscan is not enabled (no wheel for this platform, or SHARDSCAN_MATCHER=re2)")
    gated = tuple(i for i, g in enumerate(SCANNER.gate.gates) if g is not None)
    assert SCANNER.gate._compiled().ids == gated
    aws = [r.id for r in SCANNER.rules].index("aws-secret-access-key")
    assert aws in gated and "{0,30}" in SCANNER.gate.gates[aws] and "{0,30}" not in SCANNER.gate.wide[aws]




def test_a_trie_of_literals_is_compiled_as_its_literals() -> None:
    """The terminal-wrap tries of cut keywords are spelled out; anything else is left as it is."""
    words = ["gh", "ghp_", "ghp_x", "sk-ant", "sk-", "-----BEGIN", "a.b", "x\n> y", "x\nE   y"]
    trie = terminal_wrap._trie(sorted(words))
    spelled = hyperscan_matcher.spelled_out(trie)
    assert spelled is not None
    unescaped = [re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m[1], m[1]), s) for s in spelled]
    assert sorted(unescaped) == sorted(words)
    assert hyperscan_matcher.spelled_out(r"ab\r?\n") == [r"ab\r\n", r"ab\n"]
    for other in (r"a[bc]", r"ab+", r"a{2}", r"^ab", r"a.b", r"\d", r"(?i)ab", r"(?:a)?", r"a|", "é", r"(?:ab"):
        assert hyperscan_matcher.spelled_out(other) is None, other


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_spelled_out_tries_report_the_matches_of_the_trie() -> None:
    """Every (expression, end) the prefilter's expressions report, with tries compiled as regexes
    or as their literals, on keywords cut by a line break and a prefix at every position."""
    ruleset = load_ruleset()
    expressions = list(Scanner(ruleset).prefilter.expressions)
    assert sum(1 for e in expressions if len(hyperscan_matcher.spelled_out(e) or ()) > 1) >= 5
    as_regex = hyperscan_matcher.hyperscan.Database(mode=hyperscan_matcher.hyperscan.HS_MODE_BLOCK)
    as_regex.compile(expressions=[e.encode() for e in expressions], ids=list(range(len(expressions))),
                     elements=len(expressions))
    spelled, aliases = hyperscan_matcher._build(expressions, list(range(len(expressions))), 0)
    assert aliases is not None and len(aliases) > len(expressions)  # (the tries' literals report ids of their own)
    rng = random.Random(25)
    texts = []
    for keyword in ruleset.keywords:
        for cut in range(1, len(keyword)):
            brk = rng.choice(["\n", "\r\n", "\n> ", "\nE   ", "\n> > ", " "])
            texts.append(f"x{keyword[:cut]}{brk}{keyword[cut:]}abc_{keyword}")
    for text in texts:
        by_regex: set[tuple[int, int]] = set()
        by_literals: set[tuple[int, int]] = set()
        as_regex.scan(text.encode(), match_event_handler=lambda i, _f, to, _fl, found: found.add((i, to)),
                      context=by_regex)
        spelled.scan(text.encode(), match_event_handler=lambda i, _f, to, _fl, found: found.add((int(aliases[i]), to)),
                     context=by_literals)
        assert by_regex == by_literals, text


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_a_tries_literals_report_the_tries_id_to_every_reader() -> None:
    """A trie compiled as its literals, each under an id of its own, reads as the trie's id
    everywhere a match's id is used: the prefilter's recorded matches, the hit windows' token
    ends, a search for some expressions only, the rule gate's ids per cell."""
    trie = terminal_wrap._trie(sorted(["ghp_", "gho_", "github_pat_"]))
    compiled = hyperscan_matcher.database(["needle", trie])
    assert compiled is not None and compiled.aliases is not None and compiled.ids == (0, 1)
    assert compiled.reported_ids(frozenset({1})) == frozenset({2, 3, 4})  # (the literals' own ids)
    cells = ["a needle, a gho_ and a github_pat_", "nothing", "ghp_"]
    assert hyperscan_matcher.any_match(compiled, cells[0].encode(), frozenset({1}))
    assert not hyperscan_matcher.any_match(compiled, b"only a needle", frozenset({1}))
    values = pa.array(cells, pa.large_string())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(cells) + 1]
    data = memoryview(values.buffers()[2])
    found = hyperscan_matcher.match_cells(compiled.db, offsets, data, record=True, aliases=compiled.aliases)
    assert found.ids.tolist() == [0, 1, 1, 1] and found.mask.tolist() == [True, False, True]
    assert hyperscan_matcher.ids_per_cell(compiled, offsets.tolist(), data) == [{0, 1}, set(), {1}]
    hits = hit_windows.hits(cells[0], compiled, token_ids=frozenset({1}))
    assert hits is not None and hits.ends == [8, 16, 34] and hits.token_ends == frozenset({16, 34})


def _compiled_in_child(expressions: tuple[str, ...], out) -> None:
    """In a forked child: whether the parent's background compilation arrived finished."""
    here = (expressions, 0, False, tuple(range(len(expressions))), None)
    out.put(here in hyperscan_matcher._DATABASES and here not in hyperscan_matcher._PENDING)


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_a_database_compiled_ahead_is_waited_for_by_its_callers_and_by_a_fork() -> None:
    import multiprocessing

    expressions = tuple(f"ahead{i}_[a-f]{{2,4}}x" for i in range(300))
    hyperscan_matcher.compile_ahead(expressions)
    assert hyperscan_matcher.database(expressions) is not None
    assert (expressions, 0, False, tuple(range(300)), None) not in hyperscan_matcher._PENDING
    more = tuple(f"fork{i}_[a-f]{{2,4}}y" for i in range(300))
    hyperscan_matcher.compile_ahead(more)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_compiled_in_child, args=(more, out))
    child.start()
    child.join(60)
    assert out.get(timeout=5) is True
    compiled = hyperscan_matcher.database(more)
    assert compiled is not None
    found: list[int] = []
    compiled.db.scan(b"..fork7_abcy..", match_event_handler=lambda i, _f, _t, _fl, _c: found.append(i))
    assert found == [7]


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="the deep forms are Hyperscan's")
def test_a_token_encoded_twice_is_selected_after_a_run_of_dense_matches():
    # Dense matches hand the rest of an array to RE2, whose pattern leaves the deep forms out:
    # the rest is searched for them too, so a twice-encoded token late in a busy column is kept.
    token = expand("{{github:ghp_}}", seed="dense-deep")
    twice = base64.b64encode(base64.b64encode(f"token = {token}".encode())).decode()
    busy = [f"aws key AKIA{i:016d} and eyJhbGciOi{i}" for i in range(3000)]
    alone = PREFILTER.mask(pa.array([twice], type=pa.large_string()))
    late = PREFILTER.mask(pa.array([*busy, twice], type=pa.large_string()))
    assert alone.tolist() == [True]
    assert late[-1]


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_a_scanner_starts_every_database_compiling_as_it_is_built() -> None:
    """Without a pattern cache the compilations are a run's start-up: the keyword forms' database
    and the rules' prefilter databases start with the prefilter's, not when first needed."""
    from shardscan.ruleset import Ruleset
    from shardscan.ruleset.load import compile_rule

    def known(expressions: tuple[str, ...], flags: int) -> bool:
        here = (expressions, flags, False, tuple(range(len(expressions))), None)
        return here in hyperscan_matcher._PENDING or here in hyperscan_matcher._DATABASES

    word = f"ahead{random.Random().randrange(10**9)}"  # patterns no other test compiled
    rule = compile_rule({
        "id": "acme-ahead", "kind": "acme", "name": "ACME", "description": "An ACME key.", "severity": "high",
        "keywords": [word], "pattern": word + r"=(?P<secret>[A-Za-z0-9]{16})", "prefilter": [word + "="],
    }, "test")
    ruleset = Ruleset((rule,))
    text_only = Scanner(ruleset, text_only=True)
    assert not known(text_only.keywords._forms, 0)
    assert not known(rule.prefilter, hyperscan_matcher.UNICODE_SINGLE_MATCH)
    scanner = Scanner(ruleset)
    assert scanner.keywords.shared == scanner.prefilter.expressions
    assert known(scanner.keywords._rest, 0)  # (the forms that are not the prefilter's expressions)
    assert known(rule.prefilter, hyperscan_matcher.UNICODE_SINGLE_MATCH)


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_keyword_forms_searched_in_the_prefilters_database_give_the_same_answers() -> None:
    """A scanner's keyword forms that are the prefilter's expressions too are searched in the
    prefilter's database (compiled once), the others in their own: ``matches`` answers as with one
    database of every form, on every kind of form and on near misses."""
    ruleset = load_ruleset()
    shared = Scanner(ruleset).keywords
    alone = Scanner(ruleset, text_only=True).keywords
    assert not alone.shared and shared.shared
    assert 0 < len(shared._rest) < len(shared._forms) // 2
    rng = random.Random(7)
    texts = ["", "nothing to see here", "ghp", "eyJ", "AKIA" + "Q" * 16]
    for keyword in ruleset.keywords:
        for text in (f"x {keyword} y", f"prefix{keyword}", keyword[:-1], keyword.upper(), keyword[1:]):
            texts.append(text)
            texts.append(base64.b64encode(f"{'.' * rng.randrange(3)}{text}".encode()).decode())
            texts.append(base64.b64encode(base64.b64encode(f"a={text}".encode())).decode())
        # Escaped, then base64-encoded: a form the prefilter selects by (a deep form) and a view is
        # not kept for, unless it holds another form.
        escaped = "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in keyword)
        texts.append(base64.b64encode(f"v = {escaped}abcdefgh".encode()).decode())
        # Cut by a terminal's wrap: the terminal-wrap decoder's tries (literals reporting ids of their own).
        cut = rng.randrange(1, len(keyword))
        texts.append(f"x {keyword[:cut]}\n{rng.choice(['', '> ', 'E   '])}{keyword[cut:]} y")
    cursor = {"page": 2, "after": str(uuid.UUID(int=rng.getrandbits(128)))}  # base64 text inside: the nested form
    texts.append(base64.b64encode(json.dumps(cursor).encode()).decode())
    assert [shared.matches(t) for t in texts] == [alone.matches(t) for t in texts]
    assert True in (shared.matches(t) for t in texts) and False in (shared.matches(t) for t in texts)


@pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="Hyperscan only")
def test_background_compilations_take_turns_on_the_cores(monkeypatch) -> None:
    """At most one background compilation per usable core: more at once slowed the prefilter's
    (the longest, the one a scan waits for) by a third on two cores."""
    import threading
    import time

    hyperscan_matcher._finish_pending()  # (a scanner built at import may still be compiling)
    monkeypatch.setattr(hyperscan_matcher, "_COMPILE_SLOTS", threading.BoundedSemaphore(2))
    active, most = [0], [0]
    lock = threading.Lock()
    original = hyperscan_matcher._build

    def slow_build(expressions, ids, flags):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return original(expressions, ids, flags)

    monkeypatch.setattr(hyperscan_matcher, "_build", slow_build)
    tag = random.Random().randrange(10**9)
    sets = [tuple(f"turns{tag}_{n}_{i}x" for i in range(5)) for n in range(6)]
    for expressions in sets:
        hyperscan_matcher.compile_ahead(expressions)
    assert all(hyperscan_matcher.database(expressions) is not None for expressions in sets)
    assert most[0] == 2
