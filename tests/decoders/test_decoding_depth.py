"""Decoding depth is a promise: a secret encoded up to --max-decode-depth times, in any mix of encodings, is found;
one encoded deeper is a limit hit (exit 3), and random binary data and images never are."""

from __future__ import annotations

import base64
import gzip
import json
import random
import string
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pytest

from shardscan import decoders, hyperscan_matcher
from shardscan.api import scan_table
from shardscan.decoders import DecodeLimits, KeywordSet, base64_, nested_patterns
from shardscan.engine import Scanner, ScanOptions
from shardscan.prefilter import Prefilter
from shardscan.ruleset import load_ruleset
from shardscan.synth import github_token
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

RULESET = load_ruleset()
COLUMN = "conversations[1].content"
# The deep keyword forms run in Hyperscan only (RE2 cannot hold them; see Prefilter.from_keywords).
needs_hyperscan = pytest.mark.skipif(not hyperscan_matcher.enabled(), reason="deep keyword forms need Hyperscan")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def token(seed: str) -> str:
    return github_token(random.Random(seed))


def found(cell: str, depth: int = 3) -> list[tuple[str, int, int, int, str, tuple[str, ...], str]]:
    """(rule, row, start, end, column, decode chain, verdict) of every finding of a one-cell trace table."""
    table = pa.Table.from_pylist([trace_row([("user", "hi"), ("tool", cell)])])
    report = scan_table(table, "t.parquet", options=ScanOptions(now=FIXED_NOW, decode=DecodeLimits(max_depth=depth)))
    assert not report.issues, [i.message for i in report.issues]
    return [(f.rule_id, f.location.row, f.start, f.end, f.location.column, f.encoding, str(f.verdict))
            for f in report.findings]


@needs_hyperscan
@pytest.mark.parametrize("times", [2, 3])
@pytest.mark.parametrize("prefix", ["", "echo ", '{"data": "', "data:\\n  token: "])
def test_token_base64_encoded_several_times_is_found_at_the_outer_run(times, prefix):
    secret = token(f"{times}{prefix}")
    run = secret
    for _ in range(times):
        run = b64(run)
    cell = prefix + run + " | base64 -d" * times
    assert found(cell) == [
        ("github-pat", 0, len(prefix), len(prefix) + len(run), COLUMN, ("base64",) * times, "valid")
    ]


@needs_hyperscan
def test_nested_base64_in_the_url_alphabet_and_wrapped_is_found():
    secret = token("url")
    inner = base64.urlsafe_b64encode(("GITHUB_TOKEN=" + secret + "\n").encode()).decode()
    outer = base64.encodebytes(inner.encode()).decode()  # wrapped at 76 with real line breaks
    cell = "$ cat secret.b64\n" + outer
    [(rule, _, start, end, _, chain, verdict)] = found(cell)
    url = "base64url" if "-" in inner or "_" in inner else "base64"
    assert (rule, start, chain, verdict) == ("github-pat", len("$ cat secret.b64\n"), ("base64", url), "valid")
    assert end == len(cell.rstrip("\n"))


@needs_hyperscan
def test_base64_of_a_json_escaped_keyword_is_found():
    """The keyword is escaped (``ghp\\u005f``) before base64: no keyword form shows in the raw cell."""
    secret = token("json")
    # (Not a JSON object: base64 of '{"' is eyJ, a keyword of its own.)
    escaped = json.dumps(["env", "auth", secret]).replace("_", "\\u005f")
    run = b64(escaped)
    cell = f"kubectl get secret ci -o json | jq .data.config -> {run}"
    start = cell.index(run)
    assert found(cell) == [("github-pat", 0, start, start + len(run), COLUMN, ("base64", "json-string"), "valid")]


@needs_hyperscan
def test_base64_of_a_percent_encoded_token_is_found():
    secret = token("pct")
    run = b64("https://x.test/cb?token=" + urllib.parse.quote(secret, safe="").replace("_", "%5F"))
    cell = f"state={run}"
    assert found(cell) == [("github-pat", 0, 6, 6 + len(run), COLUMN, ("base64", "percent"), "valid")]


@needs_hyperscan
def test_percent_encoding_of_nested_base64_is_found():
    """A redirect state: base64 of base64 of JSON holding the token, percent-encoded into a URL (``%3D``)."""
    secret = token("state")
    run = b64(b64(json.dumps(["t", secret, "next", "/home?tab=1~x>"])))
    quoted = urllib.parse.quote(run, safe="")
    assert quoted.endswith("%3D")
    cell = f"GET /callback?state={quoted}&code=1 HTTP/1.1"
    start = cell.index(quoted)
    [(rule, _, f_start, f_end, _, chain, verdict)] = found(cell)
    assert (rule, chain[-2:], verdict) == ("github-pat", ("base64", "base64"), "valid")
    assert start == f_start < f_end <= start + len(quoted)


@pytest.mark.slow
@needs_hyperscan
def test_token_base64_encoded_three_times_inside_a_mix_is_found():
    """percent( base64( json-escaped( base64( token ) ) ) ): four decodings, depth 4."""
    secret = token("mix")
    inner = json.dumps(["auth", b64("x=" + secret)])
    cell = "curl 'https://x.test/?p=" + urllib.parse.quote(b64(inner), safe="") + "'"
    chains = {f[5] for f in found(cell, depth=4)}
    assert [f[0] for f in found(cell, depth=4)] == ["github-pat"]
    assert chains <= {
        ("percent", "base64", "base64"), ("base64", "base64"), ("percent", "base64", "json-string", "base64"),
    }


def _shard(tmp_path: Path, cell: str) -> Path:
    return write_trace_shard(tmp_path / "data" / "s.parquet", [trace_row([("user", "hi"), ("tool", "ok")]),
                                                                 trace_row([("user", "hi"), ("tool", cell)])])


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", "scan", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])


@pytest.mark.slow
@needs_hyperscan
def test_token_encoded_beyond_the_depth_is_a_limit_hit_naming_the_cell(tmp_path):
    secret = token("deep")
    run = secret
    for _ in range(4):
        run = b64(run)
    shard = _shard(tmp_path, "blob: " + run)
    out = tmp_path / "r.json"
    proc = _cli(str(shard.parent), "--no-cache", "--no-allowlist", "-f", f"json:{out}")
    assert proc.returncode == 3
    report = json.loads(out.read_text())
    assert report["findings"] == []
    assert [(e["shard"], e["kind"], e["row"], e["column"], e["message"]) for e in report["errors"]] == [
        ("s.parquet", "limit", 1, COLUMN, "decoding: depth limit (3) reached with encoded text left")
    ]
    for text in (proc.stdout, proc.stderr, out.read_text()):
        assert secret not in text and secret[4:] not in text
    # With the depth the data needs, the token is found and the scan is complete.
    deeper = _cli(str(shard.parent), "--no-cache", "--no-allowlist", "--max-decode-depth", "4", "-f", f"json:{out}")
    assert deeper.returncode == 1
    report = json.loads(out.read_text())
    assert [(f["row"], f["start"], f["end"], f["encoding"]) for f in report["findings"]] == [
        (1, 6, 6 + len(run), ["base64"] * 4)
    ]
    assert report["errors"] == []


def _negatives() -> list[str]:
    rng = random.Random(5)
    png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(6000)
    blob = rng.randbytes(3000)
    password = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(32))
    cells = [
        '{"type": "image_url", "url": "data:image/png;base64,' + base64.b64encode(png).decode() + '"}',
        "data: " + base64.b64encode(gzip.compress(json.dumps({"rows": list(range(2000))}).encode())).decode(),
        "data:application/json;base64," + b64(json.dumps({"k": "v" * 40, "list": list(range(50))})),
    ]
    # Random bytes and images base64-encoded one to five times, and a random password base64-encoded
    # four times (text that is merely base64-like, one level beyond the depth limit: five times
    # would leave base64 of text at the limit, which needs deeper decoding).
    for times in range(1, 6):
        for data in (blob, png, gzip.compress(blob)):
            run = base64.b64encode(data).decode()
            for _ in range(times - 1):
                run = b64(run)
            cells.append('{"data": "' + run + '"}')
    for times in (4,):
        run = password
        for _ in range(times):
            run = b64(run)
        # (Under a neutral name: under "secret:" the generic-secret rule reports the run itself.)
        cells.append("blob: " + run)
    return cells


@pytest.mark.slow
def test_random_binary_images_and_base64_like_text_never_hit_the_depth_limit():
    scanner = Scanner(RULESET, ScanOptions(now=FIXED_NOW))
    for cell in _negatives():
        assert scanner.scan_text(cell) == ([], [])
    table = pa.Table.from_pylist([trace_row([("tool", c)]) for c in _negatives()])
    report = scan_table(table, "n.parquet", options=ScanOptions(now=FIXED_NOW))
    assert (report.findings, report.issues) == ((), ())


@needs_hyperscan
@pytest.mark.parametrize("keyword", ["ghp_", "AKIA", "hf_", "sk-ant-api", "eyJ", "-----BEGIN"])
@pytest.mark.parametrize("times", [2, 3, 4])
def test_deep_forms_select_a_keyword_nested_at_every_alignment(keyword, times):
    """The prefilter selects a keyword base64-encoded 2 to depth + 1 times, at each byte offset of each level."""
    prefilter = Scanner(RULESET, ScanOptions(now=FIXED_NOW)).prefilter
    rng = random.Random(f"{keyword}{times}")
    cells = []
    for lead in ("", "a", "ab", "abc", "x: ", "token="):
        run = lead + keyword + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))
        for level in range(times):
            encode = base64.urlsafe_b64encode if (level + len(lead)) % 2 else base64.b64encode
            run = encode(run.encode()).decode()
        cells.append('{"blob": "' + run + '"}')
    assert prefilter.mask(pa.array(cells)).tolist() == [True] * len(cells)


@pytest.mark.slow
def test_deep_forms_select_no_more_random_base64_than_the_first_level():
    """4 MB of random base64 (what a screenshot or an archive looks like): the deep forms add no cell."""
    scanner = Scanner(RULESET, ScanOptions(now=FIXED_NOW))
    first_level = _first_level(scanner)
    rng = random.Random(9)
    cells = pa.array(['{"data": "' + base64.b64encode(rng.randbytes(30_000)).decode() + '"}' for _ in range(100)])
    assert scanner.prefilter.mask(cells).tolist() == first_level.mask(cells).tolist()


@pytest.mark.slow
@needs_hyperscan
def test_deep_forms_follow_the_decoding_depth():
    """Decoding on: the structural form of base64 of base64 selects every deeper level (the same for
    any depth from 1: the levels are searched when the cell is decoded); decoding off: none."""
    def deep(depth: int) -> set[str]:
        return set(Scanner(RULESET, ScanOptions(decode=DecodeLimits(max_depth=depth))).prefilter.expressions)

    assert deep(0) < deep(1) == deep(2) == deep(3)
    assert set(base64_.twice_forms()) <= deep(1) - deep(0)
    twice = b64(b64("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"))
    assert KeywordSet.build(["ghp_"]).matches(twice)  # a decoded view of it is kept: it holds base64 of text
    assert nested_patterns()


@pytest.mark.slow
def test_the_re2_fallback_leaves_the_deep_forms_out(monkeypatch):
    monkeypatch.setenv(hyperscan_matcher.MATCHER_ENV, "re2")
    with_re2 = Scanner(RULESET, ScanOptions()).prefilter
    assert with_re2.pattern == _first_level(Scanner(RULESET)).pattern


def _first_level(scanner: Scanner) -> Prefilter:
    """The prefilter the scanner would build without the deep forms: the selecting keywords, their
    forms encoded once, and the rules' own prefilter patterns."""
    selecting = RULESET.prefilter_keywords
    encoded = scanner.keywords.encoded if selecting == RULESET.keywords else tuple(
        decoders.encoded_keyword_patterns(selecting, RULESET.token_keywords, RULESET.context_keywords))
    return Prefilter.from_keywords(selecting, encoded + RULESET.prefilter_patterns, RULESET.token_keywords)
