"""One scan over good shards, every kind of broken shard and pathological cells: fail closed, leak nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.reporters import EXTENSIONS, FORMATS
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SECRETS = {
    "github": expand("{{github:ghp_}}", seed="fc-gh"),
    "huggingface": expand("{{hf}}", seed="fc-hf"),
    "openai": expand("{{openai:sk-proj-}}", seed="fc-oa"),
    "anthropic": expand("{{anthropic:api03}}", seed="fc-an"),
    "aws": expand("{{aws_id:AKIA}}", seed="fc-aws"),
    "private-key": expand("{{pem:ec}}", seed="fc-pem"),
    "over-budget": expand("{{github:ghp_}}", seed="fc-ob"),
}


def _build(folder: Path) -> None:
    write_trace_shard(
        folder / "good-1.parquet",
        [
            trace_row([("user", "deploy please"), ("tool", f"export GITHUB_TOKEN={SECRETS['github']}")]),
            trace_row([("assistant", json.dumps({"tool": "write_file", "content": SECRETS["private-key"]}))],
                      instruction=f"use HF_TOKEN={SECRETS['huggingface']}"),
        ],
    )
    write_trace_shard(folder / "good-2.parquet", [trace_row([("user", "nothing to see")])] * 3)
    raw = (folder / "good-2.parquet").read_bytes()
    (folder / "truncated.parquet").write_bytes(raw[: len(raw) // 2])
    (folder / "bad-magic.parquet").write_bytes(b"NOPE" + raw[4:])
    (folder / "empty.parquet").write_bytes(b"")
    (folder / "lfs-pointer.parquet").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 123456\n"
    )
    rows = [{"text": f"row {i} OPENAI_API_KEY={SECRETS['openai']}" if i % 10 == 0 else f"row {i}"} for i in range(30)]
    corrupt = folder / "corrupt-row-group.parquet"
    pq.write_table(pa.Table.from_pylist(rows), corrupt, row_group_size=10, compression="NONE")
    page = pq.ParquetFile(corrupt).metadata.row_group(1).column(0).data_page_offset
    data = bytearray(corrupt.read_bytes())
    data[page + 5 : page + 40] = b"\xff" * 35
    corrupt.write_bytes(bytes(data))
    filler = "lorem ipsum dolor sit amet " * (12_000_000 // 27)
    pq.write_table(
        pa.table(
            {
                "cell": [
                    "eyJ" * 40_000,  # near-miss ReDoS shape
                    filler + f" key={SECRETS['anthropic']}",  # 12 MB cell, secret at its very end
                    f"aws_access_key_id = {SECRETS['aws']}",
                ]
            }
        ),
        folder / "pathological.parquet",
    )
    # One row of 16 MiB cannot be scanned within the run's 64 MiB budget (a row takes ~6x its size).
    pq.write_table(pa.table({"cell": [(filler * 2)[: 16 * 1024 * 1024] + f" {SECRETS['over-budget']}"]}),
                   folder / "over-budget.parquet")
    (folder / "notes.txt").write_text(f"not a shard, still scanned as text: {SECRETS['github']}")


def test_everything_at_once(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    _build(data)
    outputs = {fmt: tmp_path / f"report-{fmt}{EXTENSIONS[fmt]}" for fmt in FORMATS}
    args = [arg for fmt, path in outputs.items() for arg in ("--format", f"{fmt}:{path}")]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "-vv", "scan", str(data), "--no-allowlist", "--now", "2026-12-02",
         "--memory-budget", "64MB", *args],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    # The documented bound for this folder (README, "Failing closed"): a hang guard, not a speed target.
    assert time.monotonic() - started < 120
    assert proc.returncode == 3, proc.stderr[-3000:]
    report = json.loads(outputs["json"].read_text())

    found = {(f["shard"], f["row"], f["column"], f["kind"]) for f in report["findings"]}
    assert found == {
        ("good-1.parquet", 0, "conversations[1].content", "github"),
        ("good-1.parquet", 1, "conversations[0].content", "private-key"),
        ("good-1.parquet", 1, "instruction", "huggingface"),
        ("corrupt-row-group.parquet", 0, "text", "openai"),
        ("corrupt-row-group.parquet", 20, "text", "openai"),
        ("pathological.parquet", 1, "cell", "anthropic"),
        ("pathological.parquet", 2, "cell", "aws"),
        ("notes.txt", 0, "__text__", "github"),
    }
    errors = {(e["shard"], e["row_group"]): e["message"] for e in report["errors"]}
    assert set(errors) == {
        ("truncated.parquet", None), ("bad-magic.parquet", None), ("empty.parquet", None),
        ("lfs-pointer.parquet", None), ("corrupt-row-group.parquet", 1), ("over-budget.parquet", 0),
    }
    assert errors[("over-budget.parquet", 0)].startswith("row group 0 not read: 1 row holding 16.0 MiB of strings")
    assert "Git LFS pointer" in errors[("lfs-pointer.parquet", None)]
    assert errors[("corrupt-row-group.parquet", 1)].startswith("row group unreadable")
    for shard in ("truncated.parquet", "bad-magic.parquet", "empty.parquet"):
        assert errors[(shard, None)].startswith("not a readable Parquet file")

    everything = proc.stdout + proc.stderr + "".join(p.read_text(errors="replace") for p in outputs.values())
    assert "shardscan: WARNING: corrupt-row-group.parquet row group 1" in proc.stderr
    assert "shardscan: DEBUG: good-1.parquet row 0 conversations[1].content: github-pat ghp_" in proc.stderr
    leaked = sorted(kind for kind, secret in SECRETS.items() for piece in _pieces(secret) if piece in everything)
    assert leaked == [], f"pieces of planted secrets of these kinds appear in the outputs: {leaked}"


def _pieces(secret: str) -> list[str]:
    """The secret and every 24-character slice of its body (a partial leak is a leak)."""
    body = secret.replace("\n", "")
    return [secret] + [body[i : i + 24] for i in range(8, max(9, len(body) - 24), 12)]
