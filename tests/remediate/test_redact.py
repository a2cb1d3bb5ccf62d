"""Redacted copies: secret spans replaced, everything else byte-for-byte, verified by re-scan."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.errors import OutputError
from shardscan.synth import expand
from tests.conftest import TRACE_SCHEMA, trace_row

# Nearly every test redacts shards through the command line (2-9 s each): out of the fast loop (-m "not slow").
pytestmark = pytest.mark.slow

GH = expand("{{github:ghp_}}", seed="redact-gh")
HF = expand("{{hf}}", seed="redact-hf")
AWS = expand("{{aws_id:AKIA}}", seed="redact-aws")
PEM = expand("{{pem:ec}}", seed="redact-pem")
B64_GH = base64.b64encode(f"token={GH}\n".encode()).decode()


def _leaks(text: str) -> bool:
    """True when any planted secret appears in full (a bool, so a failure never prints the secret)."""
    return any(secret in text for secret in (GH, HF, AWS, PEM, B64_GH))


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
        cwd=cwd or Path(__file__).resolve().parents[2],
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [
        trace_row([("user", "hello"), ("assistant", f"use {GH} to push")]),
        trace_row([("user", "plain row, nothing here")], instruction=f"login with HF_TOKEN={HF} then train"),
        trace_row([("assistant", json.dumps({"tool": "write_file", "content": PEM}))]),
        trace_row([("tool", "clean"), ("tool", f"aws_access_key_id = {AWS}")]),
        trace_row([("user", f"echo {B64_GH} | base64 -d > .env")]),
    ]
    table = pa.Table.from_pylist(rows, schema=TRACE_SCHEMA.with_metadata({"source": "unit-test"}))
    pq.write_table(table, folder / "train-00000-of-00002.parquet", row_group_size=2)
    pq.write_table(pa.Table.from_pylist([trace_row([("user", "all clean")])], schema=TRACE_SCHEMA),
                   folder / "train-00001-of-00002.parquet")
    return folder


def _scan_json(path: Path, tmp_path: Path, name: str) -> dict:
    out = tmp_path / f"{name}.json"
    _cli("scan", str(path), "--format", "json", "--output", str(out))
    return json.loads(out.read_text())


def test_redacted_copy_keeps_everything_but_the_secrets(dataset: Path, tmp_path: Path):
    before = _scan_json(dataset, tmp_path, "before")
    blocking = [f for f in before["findings"] if f["blocking"]]
    assert {(f["row"], f["column"]) for f in blocking} >= {
        (0, "conversations[1].content"), (1, "instruction"), (2, "conversations[0].content"),
        (3, "conversations[1].content"),
    }
    out = tmp_path / "clean"
    proc = _cli("redact", str(dataset), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not _leaks(proc.stdout + proc.stderr)

    src = pq.ParquetFile(dataset / "train-00000-of-00002.parquet")
    dst = pq.ParquetFile(out / "train-00000-of-00002.parquet")
    assert dst.schema_arrow == src.schema_arrow
    assert dst.schema_arrow.metadata[b"source"] == b"unit-test"
    assert dst.metadata.num_rows == src.metadata.num_rows
    assert [dst.metadata.row_group(i).num_rows for i in range(dst.num_row_groups)] == [2, 2, 1]

    old, new = src.read().to_pylist(), dst.read().to_pylist()
    changed = {(f["row"], f["column"]) for f in blocking}
    for r, (a, b) in enumerate(zip(old, new, strict=True)):
        for col in TRACE_SCHEMA.names:
            if col == "conversations":
                for i, (ma, mb) in enumerate(zip(a[col], b[col], strict=True)):
                    assert ma["role"] == mb["role"]
                    if (r, f"conversations[{i}].content") not in changed:
                        assert ma["content"] == mb["content"]
            elif (r, col) not in changed:
                assert a[col] == b[col]
    assert new[0]["conversations"][1]["content"].startswith("use [REDACTED:github:")
    assert new[0]["conversations"][1]["content"].endswith("] to push")
    assert "[REDACTED:huggingface:" in new[1]["instruction"]
    # The JSON-escaped PEM block is replaced as a whole; the JSON stays valid.
    assert json.loads(new[2]["conversations"][0]["content"])["content"].startswith("[REDACTED:private-key:")
    # The base64-wrapped token is replaced by replacing its whole encoded span.
    still_encoded = B64_GH in new[4]["conversations"][0]["content"]
    assert not still_encoded, "the base64-wrapped token was not redacted"

    # Unaffected shard copied byte for byte.
    assert ((out / "train-00001-of-00002.parquet").read_bytes()
            == (dataset / "train-00001-of-00002.parquet").read_bytes())

    after = _scan_json(out, tmp_path, "after")
    assert [f for f in after["findings"] if f["blocking"]] == []

    manifest = json.loads((tmp_path / "clean.redactions.json").read_text())
    assert sorted((m["row"], m["column"], m["fingerprint"]) for m in manifest["redactions"]) == sorted(
        (f["row"], f["column"], f["fingerprint"]) for f in blocking
    )
    for m in manifest["redactions"]:
        assert m["old_length"] > 0 and m["new_length"] == len("[REDACTED:xxxx:abcd]") - 4 + len(
            next(f["kind"] for f in blocking if f["fingerprint"] == m["fingerprint"])
        )
    assert not _leaks((tmp_path / "clean.redactions.json").read_text())


def test_same_secret_gets_same_placeholder(tmp_path: Path):
    folder = tmp_path / "d"
    rows = [trace_row([("user", f"a {GH}")]), trace_row([("user", f"b {GH}")])]
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=TRACE_SCHEMA), folder / "s.parquet")
    out = tmp_path / "o"
    assert _cli("redact", str(folder), "--out", str(out), "--only-changed").returncode == 0
    new = pq.read_table(out / "s.parquet").to_pylist()
    a = new[0]["conversations"][0]["content"].removeprefix("a ")
    b = new[1]["conversations"][0]["content"].removeprefix("b ")
    assert a == b and a.startswith("[REDACTED:github:")


def test_from_report_and_verdict_selection(dataset: Path, tmp_path: Path):
    report = tmp_path / "r.json"
    _cli("scan", str(dataset), "--format", "json", "--output", str(report))
    out = tmp_path / "o"
    proc = _cli("redact", str(dataset), "--out", str(out), "--from", str(report), "--only-changed",
                "--replacement", "<{rule}>")
    assert proc.returncode == 0, proc.stderr
    assert not (out / "train-00001-of-00002.parquet").exists()
    new = pq.read_table(out / "train-00000-of-00002.parquet").to_pylist()
    assert new[0]["conversations"][1]["content"] == "use <github-pat> to push"


def test_in_place_survives_interruption_before_rename(dataset: Path, monkeypatch):
    from shardscan import remediate
    from shardscan.api import scan
    from shardscan.engine import Scanner
    from shardscan.reader import discover
    from shardscan.ruleset import load_ruleset

    shard = dataset / "train-00000-of-00002.parquet"
    original = shard.read_bytes()
    report = scan([str(dataset)])
    chosen = remediate.select_findings(report.findings)
    shards, _ = discover([str(dataset)])
    scanner = Scanner(load_ruleset())

    def boom(src, dst):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(remediate.os, "replace", boom)
    with pytest.raises(OutputError):
        remediate.replace_atomically(
            shard,
            lambda p: remediate.redact_shard(shards[0], p, [c for c in chosen if c.shard == shards[0].display]),
            lambda p: None,
        )
    assert shard.read_bytes() == original
    assert [p.name for p in dataset.iterdir() if p.name.startswith(".")] == []

    monkeypatch.undo()
    outcome = remediate.redact(
        shards, chosen, None, in_place=True,
        rescan=lambda ref: {f.fingerprint for f in scanner.scan_shard(ref).findings},
    )
    assert outcome.failed == ()
    assert shard.read_bytes() != original
    assert scan([str(dataset)]).blocking == ()


def test_out_or_in_place_is_required(dataset: Path):
    assert _cli("redact", str(dataset)).returncode == 2


def test_allowlisted_findings_are_kept_unless_asked(dataset: Path, tmp_path: Path):
    before = _scan_json(dataset, tmp_path, "b")
    gh = next(f for f in before["findings"] if f["rule_id"] == "github-pat")
    allow = tmp_path / "allowlist.yaml"
    allow.write_text(
        "version: 1\nentries:\n"
        f"  - fingerprint: \"{gh['fingerprint']}\"\n    reason: kept on purpose for the test\n"
        "    reviewer: tester\n    reviewed: 2026-12-01\n"
    )
    kept, redacted = tmp_path / "kept", tmp_path / "all"
    assert _cli("redact", str(dataset), "--out", str(kept), "--allowlist", str(allow)).returncode == 0
    assert _cli("redact", str(dataset), "--out", str(redacted), "--allowlist", str(allow),
                "--include-allowlisted").returncode == 0
    row = pq.read_table(kept / "train-00000-of-00002.parquet").to_pylist()[0]
    still_there = GH in row["conversations"][1]["content"]
    assert still_there, "an allowlisted finding must be kept by default"
    row = pq.read_table(redacted / "train-00000-of-00002.parquet").to_pylist()[0]
    assert row["conversations"][1]["content"].startswith("use [REDACTED:github:")


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_jsonl_shards_are_redacted_line_by_line(tmp_path: Path, suffix: str):
    folder = tmp_path / "d"
    folder.mkdir()
    rows = [
        {"task": "a", "conversations": [{"role": "user", "content": "hi"}, {"role": "tool", "content": f"t={GH}"}]},
        {"task": "b", "conversations": [{"role": "user", "content": "nothing"}]},
        {"task": "c", "instruction": f"HF_TOKEN={HF}", "conversations": []},
        # A content string in one message and a list of parts in the next: walked, not read by pyarrow.
        {"task": "d", "conversations": [{"role": "user", "content": "x"},
                                        {"role": "assistant", "content": [{"type": "text", "text": f"gh {GH}"}]}]},
    ]
    lines = [json.dumps(r) + "\r\n" for r in rows]
    raw = "".join(lines).encode()
    path = folder / f"part-0{suffix}"
    with pa.output_stream(str(path),
                          compression={".jsonl": None, ".jsonl.gz": "gzip", ".jsonl.zst": "zstd"}[suffix]) as out:
        out.write(raw)
    out_dir = tmp_path / "o"
    proc = _cli("redact", str(folder), "--out", str(out_dir), "--no-allowlist")
    assert proc.returncode == 0, proc.stderr
    with pa.input_stream(str(out_dir / path.name), compression="detect") as stream:
        written = stream.read().decode().split("\r\n")
    assert written[1] + "\r\n" == lines[1]  # untouched line, byte for byte
    first, third = json.loads(written[0]), json.loads(written[2])
    assert first["conversations"][1]["content"].startswith("t=[REDACTED:github:")
    assert third["instruction"].startswith("HF_TOKEN=[REDACTED:huggingface:")
    assert json.loads(written[3])["conversations"][1]["content"][0]["text"].startswith("gh [REDACTED:github:")
    assert not _leaks("\n".join(written))
    manifest = json.loads((out_dir.parent / f"{out_dir.name}.redactions.json").read_text())
    assert sorted((m["row"], m["column"]) for m in manifest["redactions"]) == [
        (0, "conversations[1].content"), (2, "instruction"), (3, "conversations[1].content[0].text"),
    ]


def test_a_report_whose_findings_were_capped_redacts_nothing(tmp_path: Path):
    # Over --max-findings-per-shard the report aggregates findings (one names only the first of its
    # occurrences): redacting from it would leave the others in a copy that passes its re-scan.
    tokens = [expand("{{github:ghp_}}", seed=f"capped-{i}") for i in range(8)]
    data = tmp_path / "data"
    data.mkdir()
    (data / "s.jsonl").write_text("".join(json.dumps({"text": f"export GITHUB_TOKEN={t}"}) + "\n" for t in tokens))
    report = tmp_path / "r.json"
    scanned = _cli("scan", str(data), "--max-findings-per-shard", "5", "-f", f"json:{report}")
    assert scanned.returncode == 3
    out = tmp_path / "out"
    proc = _cli("redact", str(data), "--from", str(report), "--out", str(out))
    assert proc.returncode == 3
    assert "truncated" in proc.stderr and "nothing was redacted" in proc.stderr
    assert not out.exists() or not any(out.rglob("*.jsonl"))
