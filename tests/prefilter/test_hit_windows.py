"""Scanning long cells in windows around the prefilter's hits finds exactly what scanning them whole finds."""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.generate import generate, generator_digest, manifest_path
from shardscan import hit_windows, hyperscan_matcher, synth
from shardscan.engine import Scanner, ScanOptions
from shardscan.ruleset import load_ruleset
from tests import realworld_corpus as rc

NOW = datetime(2026, 12, 2, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="hit offsets come from Hyperscan")

# Prose without any rule keyword: what surrounds a hit in a long tool output.
FILLER_LINE = "the parser returns none when the list is empty so handle that case first and rerun the suite\n"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset()


def scanners(ruleset) -> tuple[Scanner, Scanner]:
    """The whole-cell scanner and one that windows every cell, however short."""
    whole = Scanner(ruleset, ScanOptions(now=NOW, hit_windows_above=None))
    windowed = Scanner(ruleset, ScanOptions(now=NOW, hit_windows_above=0))
    return whole, windowed


def padded(text: str, lines: int = 400) -> str:
    return FILLER_LINE * lines + text + "\n" + FILLER_LINE * lines


def test_the_filler_selects_nothing(ruleset) -> None:
    whole, _ = scanners(ruleset)
    assert not whole.prefilter.mask(pa.array([FILLER_LINE * 50])).any()


def test_windows_cover_a_hit_and_skip_the_rest(ruleset) -> None:
    whole, _ = scanners(ruleset)
    token = synth.expand("{{github:ghp_}}", seed="windows")
    text = padded(f"export GITHUB_TOKEN={token}\n")
    ends = hit_windows.hits(text, hyperscan_matcher.database(whole.prefilter.expressions),
                            whole.prefilter.start_keywords).ends
    spans = hit_windows.windows(text, ends)
    assert spans is not None and len(spans) == 1
    at = text.index(token)
    assert spans[0].start <= at and at + len(token) <= spans[0].end
    assert spans[0].end - spans[0].start < len(text) / 4
    # Whole lines: a window starts after a line break and ends after one.
    assert text[spans[0].start - 1] == "\n" and text[spans[0].end - 1] == "\n"


@pytest.mark.slow
def test_a_pem_body_longer_than_the_window_is_read_to_its_end_marker(ruleset, monkeypatch) -> None:
    whole, windowed = scanners(ruleset)
    # Short windows, and a key as a file viewer prints it (numbered lines: not a bare base64 block),
    # so only the END marker can tell where the body stops.
    monkeypatch.setattr(hit_windows, "AFTER", 256)
    monkeypatch.setattr(hit_windows, "BEFORE", 128)
    key = synth.expand("{{pem:rsa}}", seed="windows")
    text = padded(synth._numbered(key))
    assert text.index("-----END") - text.index("-----BEGIN") > 4 * hit_windows.AFTER
    ends = hit_windows.hits(text, hyperscan_matcher.database(whole.prefilter.expressions),
                            whole.prefilter.start_keywords).ends
    spans = hit_windows.windows(text, ends)
    assert spans is not None and len(spans) == 1
    assert spans[0].start <= text.index("-----BEGIN") and text.index("-----END") < spans[0].end
    found_whole, _ = whole.scan_text(text)
    assert [f.rule_id for f in found_whole] == ["private-key"]
    assert windowed.scan_text(text)[0] == found_whole


@pytest.mark.slow
def test_a_wrapped_base64_block_is_read_whole(ruleset, monkeypatch) -> None:
    whole, windowed = scanners(ruleset)
    monkeypatch.setattr(hit_windows, "AFTER", 256)
    monkeypatch.setattr(hit_windows, "BEFORE", 128)

    token = synth.expand("{{github:ghp_}}", seed="wrapped")
    blob = base64.b64encode(("x" * 6000 + f"\nGITHUB_TOKEN={token}\n").encode()).decode()
    wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    text = padded("config_b64: |\n" + wrapped + "\n")
    found_whole, _ = whole.scan_text(text)
    assert [f.rule_id for f in found_whole] == ["github-pat"]
    assert windowed.scan_text(text)[0] == found_whole


@pytest.mark.parametrize("after", [200, 256, 300, 400, 512, 700])
def test_a_putty_key_longer_than_the_window_is_read_to_its_last_short_line(ruleset, monkeypatch, after) -> None:
    """A .ppk's private lines end in a short line and no END marker: the window takes that line too,
    wherever the window's own reach ends inside the block."""
    whole, windowed = scanners(ruleset)
    monkeypatch.setattr(hit_windows, "AFTER", after)
    monkeypatch.setattr(hit_windows, "BEFORE", 128)
    key = synth.putty_private_key("rsa4096")
    assert len(key.split("\nPrivate-MAC")[0].rsplit("\n", 1)[1]) < 16  # its private lines end short
    text = padded(f"$ cat deploy.ppk\n{key}")
    found_whole, _ = whole.scan_text(text)
    assert [(f.rule_id, str(f.verdict)) for f in found_whole] == [("putty-private-key", "valid")]
    assert windowed.scan_text(text)[0] == found_whole


def test_a_wrapped_blocks_last_short_line_joins_a_window_that_ends_before_it() -> None:
    lines = ["A" * 64, "B" * 64, "C" * 64, "Dx=="]
    text = "Private-Lines: 4\n" + "\n".join(lines) + "\nPrivate-MAC: 00\n"
    before_last = text.index("Dx==")
    assert hit_windows._wrapped_block(text, 0, before_last) == (0, before_last + len("Dx==\n"))
    # Prose after a window is no block's last line.
    prose = "Private-Lines: 4\nok\n"
    assert hit_windows._wrapped_block(prose, 0, prose.index("ok")) == (0, prose.index("ok"))


@pytest.mark.slow
def test_the_realworld_corpus_gives_the_same_findings_inside_long_cells(ruleset) -> None:
    """Every case of the precision corpus, buried in a long cell: windows change no finding."""
    whole, windowed = scanners(ruleset)
    differ = []
    for case in rc.corpus():
        text = padded(case.text, 200)
        a, la = whole.scan_text(text)
        b, lb = windowed.scan_text(text)
        if a != b or la != lb:
            differ.append(case.name)
    assert differ == []


@pytest.mark.slow
def test_the_seed_profile_gives_the_same_findings(tmp_path: Path, ruleset) -> None:
    """A small shard of the benchmark's seed profile, scanned whole and in windows."""
    folder = tmp_path / "seed"
    generate(folder, mb=3.0, shards=1, row_groups=1, seed=3, plants_per_shard=7, profile="seed")
    planted = json.loads(manifest_path(folder).read_text())["planted"]
    table = pq.read_table(next(folder.glob("*.parquet")))
    whole = Scanner(ruleset, ScanOptions(now=NOW, hit_windows_above=None)).scan_table(table, "seed")
    default = Scanner(ruleset, ScanOptions(now=NOW)).scan_table(table, "seed")
    windowed = Scanner(ruleset, ScanOptions(now=NOW, hit_windows_above=0)).scan_table(table, "seed")
    assert default.findings == whole.findings
    assert windowed.findings == whole.findings
    assert default.issues == whole.issues
    located = {(f.location.row, f.location.column, f.rule_id) for f in whole.findings}
    assert len(planted) == 7
    assert all((p["row"], p["column"], p["rule_id"]) in located for p in planted)


# Findings on a fixed `seed` profile shard, recorded from the code before the throughput work:
# the benchmark's planted credentials and everything else the rules report there (look-alikes
# included) must stay the same, offset for offset. Locations and rules only: no secret is stored.
# After an intended change of the rules or the generator, regenerate with
# ``SHARDSCAN_UPDATE_GOLDEN=1 python -m pytest tests/prefilter/test_hit_windows.py -k recorded`` and review the diff.
RECORDED_SEED = Path(__file__).resolve().parents[1] / "data" / "seed_profile_findings.json"


def seed_profile_findings(folder: Path, ruleset) -> list[list[object]]:
    """The findings of a 2 MB `seed` profile shard (fixed seed, 7 planted credentials), scanned by default."""
    generate(folder, mb=2.0, shards=1, row_groups=2, seed=5, plants_per_shard=7, profile="seed")
    table = pq.read_table(next(folder.glob("*.parquet")))
    result = Scanner(ruleset, ScanOptions(now=NOW)).scan_table(table, "seed")
    return [
        [f.location.row, f.location.column, f.start, f.end, f.rule_id, list(f.encoding), f.verdict.value, f.count]
        for f in sorted(result.findings, key=lambda f: f.sort_key())
    ]


def test_the_seed_profile_findings_are_the_recorded_ones(tmp_path: Path, ruleset) -> None:
    findings = seed_profile_findings(tmp_path / "seed", ruleset)
    if os.environ.get("SHARDSCAN_UPDATE_GOLDEN"):
        RECORDED_SEED.write_text(json.dumps({"generator": generator_digest(), "findings": findings}, indent=0) + "\n")
    recorded = json.loads(RECORDED_SEED.read_text())
    planted = json.loads(manifest_path(tmp_path / "seed").read_text())["planted"]
    assert len(planted) == 7
    assert all([p["row"], p["column"]] in [f[:2] for f in findings] for p in planted)
    assert findings == recorded["findings"]


def test_a_long_wrapped_block_is_walked_about_once_however_many_hits_it_holds(monkeypatch):
    # Each hit's window used to walk the block's lines again (a 4 MB block, a hit every 4 KB: 20 s).
    blob = base64.encodebytes(bytes(range(256)) * 4000).decode()
    lines = blob.count("\n")
    seen = []
    original = hit_windows._is_b64_line
    monkeypatch.setattr(hit_windows, "_is_b64_line", lambda line: seen.append(1) or original(line))
    hit_windows.windows(blob, list(range(100, len(blob), 4000)))
    assert len(seen) <= 3 * lines


def token_hits(scanner: Scanner, text: str) -> hit_windows.Hits:
    found = hit_windows.hits(text, hyperscan_matcher.database(scanner.prefilter.expressions),
                             scanner.prefilter.start_keywords, scanner.prefilter.token_ids)
    assert found is not None
    return found


def test_a_token_keywords_window_is_the_lines_around_its_token(ruleset) -> None:
    """A pagination cursor (``eyJ`` begins a token in every rule that lists it) gets a window of the
    few lines around it, not the reach of a keyword that names a secret further on."""
    whole, windowed = scanners(ruleset)
    cursor = base64.urlsafe_b64encode(json.dumps({"page": 7, "after": "x" * 60}).encode()).decode().rstrip("=")
    text = padded(f"GET /v1/items?cursor={cursor} 200\n")
    found = token_hits(whole, text)
    assert found.ends and set(found.ends) == found.token_ends
    spans = hit_windows.windows(text, found.ends, found.token_ends)
    assert spans is not None and len(spans) == 1
    at = text.index(cursor)
    assert spans[0].start <= at and at + len(cursor) <= spans[0].end
    assert spans[0].end - spans[0].start <= hit_windows.TOKEN_BEFORE + hit_windows.TOKEN_AFTER + 3 * len(FILLER_LINE)
    # A keyword a secret follows (a PEM marker) keeps the wide reach.
    named = padded("if line.startswith('-----BEGIN PRIVATE KEY-----'):\n")
    wide = token_hits(whole, named)
    assert wide.ends and not wide.token_ends
    assert windowed.scan_text(text) == whole.scan_text(text)


@pytest.mark.parametrize("prefix", ["", "> ", "E   ", "  12\t"])
def test_a_token_wrapped_over_many_lines_is_read_to_its_end(ruleset, prefix: str) -> None:
    """A JWT far longer than a token keyword's reach, printed by a terminal at 80 columns (and
    quoted, in a pytest diff, numbered): its window follows the pieces to the last one."""
    from shardscan.decoders import terminal_wrap

    whole, windowed = scanners(ruleset)
    token = synth.jwt(__import__("random").Random(7), exp=4_102_444_800, claims="c" * 3000)
    assert len(token) > 6 * hit_windows.TOKEN_AFTER
    text = padded(terminal_wrap.encode(f"the session cookie was {token}", 80, prefix) + "\n")
    # The window of the hit of ``eyJ`` alone (the token's own base64 has hits all along it).
    hit = text.index("eyJ") + 3
    spans = hit_windows.windows(text, [hit], frozenset([hit]))
    assert spans is not None and len(spans) == 1
    last_piece = text.rindex(token[-6:])
    assert spans[0].start <= text.index("cookie") and last_piece < spans[0].end
    # It ends a line or two after the token's last piece: the rest of the cell is not read.
    assert text.count("\n", last_piece, spans[0].end) <= 3
    findings, _ = whole.scan_text(text)
    assert [f.rule_id for f in findings] == ["jwt"]
    assert windowed.scan_text(text)[0] == findings


def test_an_aws_secret_key_on_the_line_after_its_key_id_is_in_the_window(ruleset) -> None:
    whole, windowed = scanners(ruleset)
    rng = __import__("random").Random(11)
    key_id, secret = synth.aws_key_id(rng), synth.aws_secret(rng)
    text = padded(f"created access key {key_id}\n   with secret {secret}\n")
    found = token_hits(whole, text)
    assert found.token_ends
    findings, _ = whole.scan_text(text)
    assert "aws-secret-access-key" in [f.rule_id for f in findings]
    assert windowed.scan_text(text)[0] == findings


def test_the_prefilters_buffer_scan_gives_each_long_cell_the_hits_a_scan_of_the_cell_finds(ruleset) -> None:
    """The hits the prefilter's scan of a whole array reported are those a scan of each cell finds,
    for ASCII and non-ASCII cells, a token keyword at a cell's very start, and cells that follow one."""
    whole, _ = scanners(ruleset)
    prefilter = whole.prefilter
    rng = __import__("random").Random(3)
    token = synth.expand("{{github:ghp_}}", seed="buffer")
    cursor = base64.urlsafe_b64encode(json.dumps({"page": 2, "after": "y" * 40}).encode()).decode()
    cells = [
        padded(f"export GITHUB_TOKEN={token}\n", 60),
        token + "\n" + FILLER_LINE * 60,  # a token keyword at the very start, after a cell ending in a letter
        "é" * 3000 + f" cursor={cursor} " + "ü" * 3000,
        padded(f"if line.startswith('-----BEGIN PRIVATE KEY-----'): key = {synth.aws_key_id(rng)}\n", 60),
        "short and clean",
    ]
    values = pa.array(cells, pa.large_string())
    (mask,), (found,) = prefilter.select([values], record=True)
    assert found is not None and mask.tolist() == [True, True, True, True, False]
    database = hyperscan_matcher.database(prefilter.expressions)
    for cell in range(4):
        from_buffer = hit_windows.buffer_hits(found, cell, cells[cell], prefilter.start_keywords, prefilter.token_ids)
        rescanned = hit_windows.hits(cells[cell], database, prefilter.start_keywords, prefilter.token_ids)
        assert from_buffer is not None and from_buffer == rescanned, cell
    # A text that is not the cell's bytes is looked for again.
    assert hit_windows.buffer_hits(found, 0, cells[0] + "x", prefilter.start_keywords, prefilter.token_ids) is None


def test_a_cell_whose_buffer_scan_stopped_inside_it_is_scanned_again(ruleset, monkeypatch) -> None:
    whole, _ = scanners(ruleset)
    prefilter = whole.prefilter
    monkeypatch.setattr(hyperscan_matcher, "BATCH_MATCHES", 4)
    token = synth.expand("{{github:ghp_}}", seed="cut")
    cells = [padded(" ".join([token] * 6), 50), padded(token, 50)]
    (mask,), (found,) = prefilter.select([pa.array(cells, pa.large_string())], record=True)
    assert found is not None and mask.all() and 0 in found.cut
    assert hit_windows.buffer_hits(found, 0, cells[0], prefilter.start_keywords, prefilter.token_ids) is None
    assert hit_windows.buffer_hits(found, 1, cells[1], prefilter.start_keywords, prefilter.token_ids) is not None


def test_a_table_scan_does_not_look_for_a_long_cells_hits_again(ruleset, monkeypatch) -> None:
    scanner = Scanner(ruleset, ScanOptions(now=NOW))
    token = synth.expand("{{github:ghp_}}", seed="table")
    table = pa.table({"text": [padded(f"export GITHUB_TOKEN={token}\n", 100), "clean"]})
    looked = []
    original = hit_windows.hits
    monkeypatch.setattr(hit_windows, "hits", lambda *a, **k: looked.append(1) or original(*a, **k))
    result = scanner.scan_table(table, "t")
    assert [(f.location.row, f.rule_id) for f in result.findings] == [(0, "github-pat")]
    assert looked == []


def test_without_hyperscan_long_cells_are_gated_together_in_the_batch(ruleset, monkeypatch) -> None:
    """Hits are located only with Hyperscan; without it, gating each long cell on its own compiled the
    gate's RE2 patterns once per cell. The batch gates all its cells in one call, as before windows."""
    from shardscan.prefilter import RuleGate

    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    scanner = Scanner(ruleset, ScanOptions(now=NOW))
    tokens = [synth.expand("{{github:ghp_}}", seed=f"re2-{i}") for i in range(3)]
    table = pa.table({"text": [padded(f"export GITHUB_TOKEN={t}\n", 100) for t in tokens]})
    calls = []
    original = RuleGate.rules_for
    monkeypatch.setattr(RuleGate, "rules_for", lambda self, texts: calls.append(len(texts)) or original(self, texts))
    result = scanner.scan_table(table, "t")
    assert [(f.location.row, f.rule_id) for f in result.findings] == [(0, "github-pat"), (1, "github-pat"),
                                                                       (2, "github-pat")]
    assert calls == [3]


def test_a_long_cells_windows_are_gated_in_one_call(ruleset, monkeypatch) -> None:
    """With Hyperscan, each window of a long cell gets its own raw rules, from one gate call per cell
    (a call per window cost more than gating the window itself)."""
    from shardscan.prefilter import RuleGate

    scanner = Scanner(ruleset, ScanOptions(now=NOW))
    first, second = (synth.expand("{{github:ghp_}}", seed=f"gated-once-{i}") for i in range(2))
    log = "".join(f"step {i}: {'ok ' * (i % 7)}\n" for i in range(2000))  # lines of many widths: no wrapped block
    cell = padded(f"export GITHUB_TOKEN={first}\n" + log + f"again: {second}\n")
    calls = []
    original = RuleGate.rules_for
    monkeypatch.setattr(RuleGate, "rules_for", lambda self, texts: calls.append(len(texts)) or original(self, texts))
    result = scanner.scan_table(pa.table({"text": [cell]}), "t")
    assert [(f.location.row, f.rule_id, f.start) for f in result.findings] == [
        (0, "github-pat", cell.index(first)), (0, "github-pat", cell.index(second))]
    assert calls == [0, 2]  # the batch's short cells (none), then the long cell's two windows in one call


def test_windows_are_gated_in_batches_bounded_in_count_and_characters() -> None:
    from shardscan.scanning.cell import GATED_AT_ONCE, GATED_CHARS, _gathered

    def sizes(lengths: list[int]) -> list[int]:
        windows = iter([(i, "x" * n, False) for i, n in enumerate(lengths)])
        out = []
        while batch := _gathered(windows):
            out.append(len(batch))
        return out

    assert sizes([]) == []
    assert sizes([10] * (GATED_AT_ONCE + 36)) == [GATED_AT_ONCE, 36]
    big = GATED_CHARS * 3 // 5  # two of them pass the bound
    assert sizes([big] * 5) == [2, 2, 1]
    assert sizes([GATED_CHARS * 2, 10]) == [1, 1]


def _reaches_one_by_one(text: str, ends: list[int], token_ends: frozenset[int]) -> list[list[int]]:
    """The merged reaches of the hits, each hit's reach found on its own (what the windows did before
    the common case of a token hit was decided inline)."""
    n = len(text)
    mapped = text.encode("ascii", "replace").translate(hit_windows._TOKEN_MAP)

    def token_reach(end: int) -> tuple[int, int]:
        gap = mapped.find(b" ", end)
        if gap >= 0 and text[gap] in "\r\n":  # the token runs to the end of its line
            return hit_windows._wrapped_token_span(text, mapped, end, gap)
        return max(0, end - hit_windows.TOKEN_BEFORE), min(n, end + hit_windows.TOKEN_AFTER)

    reaches = sorted(
        token_reach(end) if end in token_ends else (max(0, end - hit_windows.BEFORE), min(n, end + hit_windows.AFTER))
        for end in ends
    )
    spans: list[list[int]] = []
    for lo, hi in reaches:
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    return spans


def test_the_reaches_of_many_hits_are_those_of_each_hit_merged() -> None:
    """Token hits that end on their line, run to a line break (a wrapped token: LF, CRLF, after a
    prefix), or to the end of the text, among hits of other keywords, in ASCII and other text."""
    import random

    rng = random.Random(12)
    pieces = ["eyJhbGciOi" + "x" * 40, "\n", "\r\n", " ", "cursor=", "> ", "E   ", "aGVsbG8gd29ybGQ=" * 5, "é",
              "token: ", "\\n", "ghp_" + "A" * 36, "-" * 30, "\u2028"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 300)))
        ends = sorted({rng.randrange(0, len(text) + 1) for _ in range(rng.randrange(1, 40))})
        token_ends = frozenset(end for end in ends if rng.random() < 0.6) if rng.random() < 0.8 else frozenset()
        _, merged = hit_windows._merged_reaches(text, ends, token_ends)
        assert merged == _reaches_one_by_one(text, ends, token_ends), (text, ends, token_ends)
