"""Names that are data: a secret in a message's role, a JSON key read into a field name, a column name.

Every report prints a finding's column path and role, so a secret there would leak into every
output; such names are shown by position instead, and scanned as cells of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.api import scan
from shardscan.reader.cells import field_label
from shardscan.synth import expand

GH = expand("{{github:ghp_}}", seed="field-names-gh")
HF = expand("{{hf}}", seed="field-names-hf")
AWS = expand("{{aws_id:AKIA}}", seed="field-names-aws")


def _leaks(text: str) -> bool:
    """True when a planted secret appears in full (a bool, so a failure never prints it)."""
    return any(secret in text for secret in (GH, HF, AWS))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"conversations": [{"role": HF, "content": "hi"}, {"role": "tool", "content": f"key {AWS}"}]}]
    pq.write_table(pa.Table.from_pylist(rows), folder / "roles.parquet")
    pq.write_table(pa.table({GH: ["plain"], "note": ["nothing"]}), folder / "columns.parquet")
    lines = [{"id": 1, "headers": {"accept": "json"}}, {"id": 2, "headers": {GH: f"HF_TOKEN={HF}"}}]
    (folder / "keys.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_names_that_could_be_secrets_are_shown_by_position_and_scanned(shards: Path):
    report = scan([str(shards)])
    found = sorted((f.location.shard, f.location.row, f.location.column, f.location.role, f.rule_id)
                   for f in report.findings)
    assert found == [
        ("columns.parquet", 0, "#0.name", None, "github-pat"),
        ("keys.jsonl", 1, "headers.#1", None, "huggingface-token"),
        ("keys.jsonl", 1, "headers.#1.name", None, "github-pat"),
        # The role is a token: scanned as a cell, and never printed as a role.
        ("roles.parquet", 0, "conversations[0].role", None, "huggingface-token"),
        ("roles.parquet", 0, "conversations[1].content", "tool", "aws-access-key-id"),
    ]
    assert report.issues == ()


@pytest.mark.parametrize("fmt", ["terminal", "json", "jsonl", "sarif", "markdown", "html", "card", "junit", "compact"])
def test_no_report_format_prints_a_secret_name(shards: Path, tmp_path: Path, fmt: str):
    out = tmp_path / f"report.{fmt}"
    proc = _cli("-vv", "scan", str(shards), "--format", fmt, "--output", str(out), "--no-cache", "--no-allowlist")
    assert proc.returncode == 1
    assert not _leaks(out.read_text(encoding="utf-8") + proc.stdout + proc.stderr)


def test_redaction_renames_a_secret_json_key_and_keeps_the_source(shards: Path, tmp_path: Path):
    source = shards / "keys.jsonl"
    before = source.read_bytes()
    out = tmp_path / "clean"
    proc = _cli("redact", str(source.resolve()), "--out", str(out), "--no-allowlist")
    assert proc.returncode == 0, proc.stderr[-500:]
    assert source.read_bytes() == before  # an absolute input path never makes the copy overwrite it
    [written] = [p for p in out.rglob("keys.jsonl")]
    first, second = [json.loads(line) for line in written.read_text().splitlines()]
    assert first == {"id": 1, "headers": {"accept": "json"}}
    [(key, value)] = second["headers"].items()
    assert key.startswith("[REDACTED:github:") and value.startswith("HF_TOKEN=[REDACTED:huggingface:")
    assert not _leaks(written.read_text())


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("conversations", True), ("verifier_output_2", True), ("conversationHistory", True), ("Ответ модели", True),
        ("x" * 65, False), ("tab\there", False), ("AKIA" + "Q" * 16, False), ("hf_" + "ab12" * 9, False),
    ],
)
def test_field_labels(name: str, shown: bool):
    assert (field_label(name, 3) == name) is shown
    assert field_label(name, 3) in (name, "#3")
