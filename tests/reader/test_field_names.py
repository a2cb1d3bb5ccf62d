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

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

GH = expand("{{github:ghp_}}", seed="field-names-gh")
HF = expand("{{hf}}", seed="field-names-hf")
AWS = expand("{{aws_id:AKIA}}", seed="field-names-aws")


def _leaks(text: str) -> bool:
    """True when a planted secret appears in full (a bool, so a failure never prints it)."""
    return any(secret in text for secret in (GH, HF, AWS))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])


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


def test_a_secret_key_on_several_lines_is_reported_and_redacted_on_each(tmp_path: Path):
    folder = tmp_path / "d"
    folder.mkdir()
    lines = [{GH: "v1"}, {"normal": "plain"}, {GH: "again"}]
    (folder / "k.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = sorted((f.location.row, f.location.column, f.rule_id) for f in scan([str(folder)]).findings)
    assert found == [(0, "#0.name", "github-pat"), (2, "#0.name", "github-pat")]
    proc = _cli("redact", str(folder), "--out", str(tmp_path / "o"), "--no-allowlist")
    assert proc.returncode == 0, proc.stderr[-500:]
    assert not _leaks((tmp_path / "o" / "k.jsonl").read_text())


def test_a_hidden_parquet_column_is_numbered_in_the_file_and_redacted_there(tmp_path: Path):
    folder = tmp_path / "d"
    folder.mkdir()
    # The first column holds no text, so it is not read: positions still count it.
    pq.write_table(pa.table({"id": [1, 2], GH: ["x", f"key {HF}"]}), folder / "p.parquet")
    found = sorted((f.location.row, f.location.column, f.rule_id) for f in scan([str(folder)]).findings)
    assert found == [(0, "#1.name", "github-pat"), (1, "#1", "huggingface-token"), (1, "#1.name", "github-pat")]
    report = tmp_path / "r.json"
    _cli("scan", str(folder), "--format", "json", "--output", str(report), "--no-allowlist")
    data = json.loads(report.read_text())
    data["findings"] = [f for f in data["findings"] if f["column"] == "#1"]
    report.write_text(json.dumps(data))
    proc = _cli("redact", str(folder), "--out", str(tmp_path / "o"), "--from", str(report), "--no-allowlist")
    assert proc.returncode == 0, proc.stderr[-500:]
    column = pq.read_table(tmp_path / "o" / "p.parquet").column(1).to_pylist()
    assert column[0] == "x" and column[1].startswith("key [REDACTED:huggingface:")


def test_redact_never_writes_over_another_input(tmp_path: Path):
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.jsonl").write_text(json.dumps({"t": f"token {GH}"}) + "\n")
    (folder / "sub" / "a.jsonl").write_text(json.dumps({"t": "other data"}) + "\n")
    before = (folder / "sub" / "a.jsonl").read_bytes()
    # (The manifest goes outside the scanned folder: its default, beside --out, would be refused first.)
    proc = _cli("redact", str(folder), "--out", str(folder / "sub"), "--no-allowlist",
                "--manifest", str(tmp_path / "redactions.json"))
    assert proc.returncode != 0
    assert "would overwrite another input shard" in proc.stdout + proc.stderr
    assert (folder / "sub" / "a.jsonl").read_bytes() == before
    assert "Traceback" not in proc.stderr
