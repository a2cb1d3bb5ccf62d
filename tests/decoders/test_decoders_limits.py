"""Decoding is bounded: bombs end within the limits and are reported; big images cost no findings."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys

import pyarrow as pa
import pytest

from shardscan.api import scan, scan_table
from shardscan.decoders import DecodeLimits
from shardscan.engine import ScanOptions
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow


def limit_issues(report):
    return [(i.kind, i.row, i.column, i.message) for i in report.issues]


def test_deep_json_nesting_stops_at_depth_and_is_reported(tmp_path):
    pem = expand("{{pem:ec}}", seed="deep")
    cell = pem
    for _ in range(8):
        cell = json.dumps(cell)
    shard = write_trace_shard(tmp_path / "data" / "s.parquet", [trace_row([("user", "hi"), ("tool", cell)])])
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(shard.parent), "--format", "json", "--output", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 3  # incomplete: a limit was hit
    report = json.loads(out.read_text())
    assert [(e["kind"], e["row"], e["column"], e["message"]) for e in report["errors"]] == [
        ("limit", 0, "conversations[1].content", "decoding: depth limit (3) reached with encoded text left")
    ]
    # The key is still reported, read three levels down, at the span of its escaped form.
    [finding] = report["findings"]
    assert finding["rule_id"] == "private-key"
    assert finding["encoding"] == ["json-string", "json-string", "json-string"]
    assert cell[finding["start"] : finding["start"] + 10] == "-----BEGIN"
    assert cell[: finding["end"]].endswith("-----END EC PRIVATE KEY-----")
    assert pem not in out.read_text() + proc.stdout + proc.stderr


def test_depth_zero_disables_decoding_and_reports_nothing(tmp_path):
    token = expand("{{github:ghp_}}", seed="depth0")
    cell = f"echo {base64.b64encode(token.encode()).decode()} | base64 -d"
    for depth, expected in ((0, []), (1, [("github-pat", ("base64",))])):
        options = ScanOptions(now=FIXED_NOW, regex_timeout=60, decode=DecodeLimits(max_depth=depth))
        report = scan_table(pa.table({"c": [cell]}), options=options)
        assert [(f.rule_id, f.encoding) for f in report.findings] == expected
        assert report.issues == ()


def test_nested_base64_is_followed_to_the_depth_limit():
    token = expand("{{github:ghp_}}", seed="nested")
    layered = f"TOKEN={token}"
    for _ in range(3):
        layered = base64.b64encode(layered.encode()).decode()
    # The cell is a candidate through its plain keyword; the nested base64 is decoded three deep.
    cell = f"from huggingface_hub import hf_hub_download\necho {layered} | base64 -d | base64 -d | base64 -d"
    report = scan_table(pa.table({"c": [cell]}), options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert [(f.rule_id, f.encoding, f.start, f.end) for f in report.findings] == [
        ("github-pat", ("base64", "base64", "base64"), cell.index(layered), cell.index(layered) + len(layered))
    ]
    deeper = base64.b64encode(base64.b64encode(layered.encode())).decode()
    report = scan_table(pa.table({"c": [cell.replace(layered, deeper)]}),
                        options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert report.findings == ()
    assert limit_issues(report) == [("limit", 0, "c", "decoding: depth limit (3) reached with encoded text left")]


def test_many_encoded_values_hit_the_view_limit():
    lines = [f"key{i}: {base64.b64encode(f'hf_hub_download #{i} of many'.encode()).decode()}" for i in range(200)]
    report = scan_table(pa.table({"c": ["\n".join(lines)]}), options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert report.findings == ()
    assert limit_issues(report) == [("limit", 0, "c", "decoding: view limit (64 per cell) reached")]


def test_byte_budget_is_per_cell_and_reported():
    token = expand("{{hf}}", seed="budget")
    blob = base64.b64encode(("x" * 2000 + f" HF_TOKEN={token}").encode()).decode()
    options = ScanOptions(now=FIXED_NOW, regex_timeout=60, decode=DecodeLimits(max_bytes=1000))
    report = scan_table(pa.table({"c": [f"echo {blob} | base64 -d"]}), options=options)
    assert report.findings == ()
    assert limit_issues(report) == [("limit", 0, "c", "decoding: byte budget (1000 characters per cell) exhausted")]
    report = scan_table(pa.table({"c": [f"echo {blob} | base64 -d"]}),
                        options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert [f.rule_id for f in report.findings] == ["huggingface-token"]


def test_fifty_megabyte_base64_cell_ends_within_the_budget_and_is_reported():
    """50 MB of base64 whose decoded text keeps mentioning a keyword: decoded up to the budget, then reported."""
    line = b"2026-01-01 INFO fetched model with hf_hub_download in 0.2s\n"
    blob = base64.b64encode(line * (37_600_000 // len(line))).decode()
    assert len(blob) >= 50_000_000
    report = scan_table(pa.table({"c": [blob, "harmless"]}), options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert report.findings == ()
    assert limit_issues(report) == [("limit", 0, "c", "decoding: byte budget (8388608 characters per cell) exhausted")]


def test_large_base64_images_produce_no_findings_and_no_limits(tmp_path):
    rng = random.Random(7)
    rows = []
    for i in range(6):
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(1_000_000)).decode()
        jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + rng.randbytes(500_000)).decode()
        raw = base64.b64encode(rng.randbytes(300_000)).decode()  # no magic: decoded, found to hold no keyword
        rows.append(trace_row([
            ("user", f"screenshot {i}: data:image/png;base64,{png}"),
            ("tool", f"<img src='data:image/jpeg;base64,{jpeg}'> hf_hub_download eyJ"),
            ("tool", f"blob {raw} ghp_"),
        ]))
    shard = write_trace_shard(tmp_path / "imgs" / "s.parquet", rows)
    report = scan([str(shard)], options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    assert report.findings == ()
    assert report.issues == ()
    assert report.stats.candidate_cells >= 12  # the keyword cells were scanned, decoders included
