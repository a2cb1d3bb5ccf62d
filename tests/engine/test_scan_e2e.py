"""End to end: a folder of agent-trace shards with tokens of all seven kinds planted at known
(shard, row, column) positions, scanned by the real CLI. The JSON report must hold exactly the
planted findings, nothing on look-alike identifiers, and no output may contain a full secret."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.synth import expand, private_key_pem
from tests.conftest import TRACE_SCHEMA, trace_row

NUM_SHARDS = 3
ROWS_PER_SHARD = 9
ROW_GROUP_SIZE = 4  # 3 row groups per shard: planted rows sit in the first, middle and last


def shard_name(i: int) -> str:
    return f"train-{i:05d}-of-{NUM_SHARDS:05d}.parquet"


@dataclass(frozen=True)
class Plant:
    """A secret planted in one cell, and the finding the report must have for it."""

    rule_id: str
    kind: str
    shard: int
    row: int
    column: str  # "conversations[i]" for a message, else a string column
    role: str | None
    text: str  # the whole cell
    secret: str  # what the rule's secret group matches

    @property
    def start(self) -> int:
        return self.text.index(self.secret)

    @property
    def end(self) -> int:
        return self.start + len(self.secret)

    @property
    def column_path(self) -> str:
        return self.column + ".content" if self.column.startswith("conversations[") else self.column


def _noise(rng: random.Random) -> list[str]:
    """Look-alikes that must never be findings."""
    sha = f"{rng.getrandbits(160):040x}"
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(3000)).decode()
    jpeg = base64.b64encode(b"\xff\xd8\xff\xe0" + rng.randbytes(3000)).decode()
    return [
        "python -c \"from huggingface_hub import hf_hub_download; hf_hub_download('gpt2', 'config.json')\"",
        "make html && ghp-import -n -p -f _build/html  # pushes to gh_pages",
        "pip install scikit-learn  # people call it sk-learn; sk-learn-intelex is different",
        'def is_pem(s):\n    if s.startswith("-----BEGIN PRIVATE KEY-----"):\n        return True\n'
        '    return s.startswith("-----BEGIN RSA PRIVATE KEY-----")',
        "PEM = '-----BEGIN OPENSSH PRIVATE KEY-----\\n' + body + '\\n-----END OPENSSH PRIVATE KEY-----'",
        f"{sha} is the first bad commit\ncommit {sha}\nMerge: {sha[:7]} {sha[7:14]}",
        f"run_id={uuid.UUID(int=rng.getrandbits(128))} trial={uuid.UUID(int=rng.getrandbits(128)).hex}",
        f"screenshot: data:image/png;base64,{png}",
        f'<img src="data:image/jpeg;base64,{jpeg}">',
        "export HF_TOKEN=$HF_TOKEN OPENAI_API_KEY=${OPENAI_API_KEY} GITHUB_TOKEN=<your token>",
        "sha256:" + hashlib.sha256(sha.encode()).hexdigest(),
    ]


def _plants() -> list[Plant]:
    g = lambda template, seed: expand(template, seed=seed)  # noqa: E731
    jwt = g("{{jwt}}", "e2e-jwt")
    jwe = g("eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..{{alnum:16}}.{{alnum:80}}.{{alnum:22}}", "e2e-jwe")
    akia, aws_secret = g("{{aws_id:AKIA}}", "e2e-aws"), g("{{aws_secret}}", "e2e-aws")
    asia = g("{{aws_id:ASIA}}", "e2e-asia")
    ghp, gh_fine = g("{{github:ghp_}}", "e2e-gh"), g("{{github_pat}}", "e2e-gh")
    ghs_jwt = "ghs_4711_" + g("{{jwt}}", "e2e-ghs")
    sk_proj, sk = g("{{openai:sk-proj-}}", "e2e-oai"), g("{{openai:sk-}}", "e2e-oai")
    ant = g("{{anthropic:api03}}", "e2e-ant")
    hf = g("{{hf}}", "e2e-hf")
    jwt_dot, ghp_escaped = g("{{jwt}}", "e2e-jwt-dot"), g("{{github:ghp_}}", "e2e-gh-esc")
    pem = private_key_pem("rsa").strip()
    pem_ec = private_key_pem("ec").strip()
    truncated = "\n".join(private_key_pem("pkcs8").strip().splitlines()[:8])

    tool_call = json.dumps({"tool": "write_file", "arguments": {"path": "/root/.ssh/id_rsa", "content": pem + "\n"}})
    escaped_pem = pem.replace("\n", "\\n")
    indented_ec = "\n".join("    " + line for line in pem_ec.splitlines())
    return [
        # shard 0
        Plant("jwt", "jwt", 0, 0, "conversations[3]", "tool",
              f"GET https://api.example.com/v1/me?access_token={jwt}&fmt=json -> 200", jwt),
        Plant("github-pat", "github", 0, 4, "instruction", None,
              f"Clone with git clone https://{ghp}@github.com/acme/app.git and run the tests.", ghp),
        Plant("openai-api-key", "openai", 0, 8, "conversations[2]", "assistant",
              f'client = OpenAI(api_key="{sk_proj}")', sk_proj),
        Plant("private-key", "private-key", 0, 8, "conversations[3]", "tool", tool_call, escaped_pem),
        # shard 1
        Plant("aws-access-key-id", "aws", 1, 1, "verifier_output", None,
              f"env dump:\nAWS_ACCESS_KEY_ID={akia}\nAWS_SECRET_ACCESS_KEY={aws_secret}\nAWS_REGION=eu-west-1", akia),
        Plant("aws-secret-access-key", "aws", 1, 1, "verifier_output", None,
              f"env dump:\nAWS_ACCESS_KEY_ID={akia}\nAWS_SECRET_ACCESS_KEY={aws_secret}\nAWS_REGION=eu-west-1",
              aws_secret),
        Plant("anthropic-api-key", "anthropic", 1, 4, "conversations[1]", "user",
              f"my key is {ant} please use it", ant),
        Plant("huggingface-token", "huggingface", 1, 5, "instruction", None,
              f"Log in with huggingface-cli login --token {hf} then push the model.", hf),
        Plant("jwe", "jwt", 1, 7, "conversations[3]", "tool", f"Set-Cookie: __session={jwe}; Path=/; Secure", jwe),
        Plant("private-key", "private-key", 1, 8, "task", None, f"ssl:\n  key: |\n{indented_ec}\n  cert: none",
              indented_ec.lstrip()),
        # shard 2
        Plant("github-fine-grained-pat", "github", 2, 0, "conversations[4]", "assistant",
              f"I set GH_TOKEN={gh_fine} in the workflow.", gh_fine),
        Plant("github-app-installation-jwt-token", "github", 2, 3, "verifier_output", None,
              f"token: {ghs_jwt}\nexpires_at: 2026-07-27T00:00:00Z", ghs_jwt),
        Plant("openai-api-key", "openai", 2, 5, "conversations[0]", "system",
              f"OPENAI_API_KEY={sk}", sk),
        Plant("aws-access-key-id", "aws", 2, 6, "instruction", None, f"The temporary key {asia} expired.", asia),
        # Boundaries: a JWT ending a sentence; a token right after a literal \n in JSON-escaped output.
        Plant("jwt", "jwt", 2, 1, "verifier_output", None, f"FAIL: expected the session {jwt_dot}.", jwt_dot),
        Plant("github-pat", "github", 2, 1, "conversations[3]", "tool",
              json.dumps({"stdout": f"cat ~/.token\n{ghp_escaped}\n", "exit": 0}),
              ghp_escaped),
        Plant("private-key-truncated", "private-key", 2, 8, "conversations[3]", "tool",
              f"$ cat key.pem\n{truncated}\n[output truncated at 500 bytes]", truncated),
    ]


PLANTS = _plants()
SECRETS = sorted({p.secret for p in PLANTS})


def _row(rng: random.Random, shard: int, row: int) -> dict:
    noise = _noise(rng)
    messages = [
        ("system", "You are an agent in a Linux container. Never print credentials."),
        ("user", noise[rng.randrange(len(noise))]),
        ("assistant", json.dumps({"tool": "bash", "arguments": {"command": noise[0]}})),
        ("tool", noise[rng.randrange(len(noise))]),
        ("assistant", noise[3]),
    ]
    columns = {
        "instruction": noise[rng.randrange(len(noise))],
        "verifier_output": noise[5],
        "task": noise[2],
        "run_id": str(uuid.UUID(int=rng.getrandbits(128))),
        "trace_source": noise[7],
    }
    for plant in PLANTS:
        if (plant.shard, plant.row) != (shard, row):
            continue
        if plant.column.startswith("conversations["):
            i = int(plant.column[len("conversations["):-1])
            messages[i] = (plant.role, plant.text)
        else:
            columns[plant.column] = plant.text
    return trace_row(messages, **columns)


def write_dataset(folder: Path) -> list[dict]:
    rng = random.Random(2026)
    all_rows = []
    for shard in range(NUM_SHARDS):
        rows = [_row(rng, shard, row) for row in range(ROWS_PER_SHARD)]
        all_rows += rows
        table = pa.Table.from_pylist(rows, schema=TRACE_SCHEMA)
        pq.write_table(table, folder / shard_name(shard), row_group_size=ROW_GROUP_SIZE)
    return all_rows


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI as a user runs it, from an empty folder (the repository's allowlist.yaml stays out)."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
                              timeout=300, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    data = root / "data"
    data.mkdir()
    rows = write_dataset(data)
    report_path = root / "report.json"
    proc = run_cli("scan", str(data), "--format", "json", "--output", str(report_path), "--now", "2026-12-02")
    terminal = run_cli("scan", str(data), "--now", "2026-12-02")
    return {
        "data": data,
        "rows": rows,
        "proc": proc,
        "terminal": terminal,
        "report_text": report_path.read_text(),
        "report": json.loads(report_path.read_text()),
    }


def test_all_seven_kinds_are_planted():
    assert {p.kind for p in PLANTS} == {"jwt", "aws", "github", "openai", "anthropic", "huggingface", "private-key"}


@pytest.mark.slow
def test_report_has_exactly_the_planted_findings(scanned):
    expected = sorted(
        (p.rule_id, shard_name(p.shard), p.row, p.column_path, p.role, p.start, p.end) for p in PLANTS
    )
    got = sorted(
        (f["rule_id"], f["shard"], f["row"], f["column"], f["role"], f["start"], f["end"])
        for f in scanned["report"]["findings"]
    )
    assert got == expected
    assert scanned["report"]["errors"] == []


def test_findings_carry_kind_fingerprint_preview_and_gate_fields(scanned):
    by_location = {(f["shard"], f["row"], f["column"], f["start"]): f for f in scanned["report"]["findings"]}
    for plant in PLANTS:
        f = by_location[(shard_name(plant.shard), plant.row, plant.column_path, plant.start)]
        assert f["kind"] == plant.kind
        canonical = plant.secret
        if plant.kind == "private-key":  # one key, one fingerprint, however it was wrapped
            canonical = "".join(plant.secret.replace("\\n", "\n").split())
        assert f["fingerprint"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
        # A secret read through a decoder is previewed as decoded (a JSON-escaped key's escapes
        # are not part of the key); its span still covers the escaped text.
        shown = json.loads(f'"{plant.secret}"') if f["encoding"] == ["json-string"] else plant.secret
        assert f["preview"] == f"{shown[:4]}…({len(shown)})"
        assert isinstance(f["verdict"], str) and f["verdict"]
        assert isinstance(f["blocking"], bool)
        assert f["status"] == "new"


def test_same_private_key_has_one_fingerprint_however_wrapped(scanned):
    from shardscan.redaction import fingerprint

    pem = private_key_pem("rsa").strip()
    plant = next(p for p in PLANTS if p.rule_id == "private-key" and p.shard == 0)
    f = next(f for f in scanned["report"]["findings"] if f["start"] == plant.start and f["shard"] == shard_name(0)
             and f["row"] == plant.row and f["column"] == plant.column_path)
    assert f["fingerprint"] == fingerprint(pem, "private-key") == fingerprint(
        pem.replace("\n", "\r\n  "), "private-key")


def test_exit_code_and_scanned_counters(scanned):
    assert scanned["proc"].returncode == 1, scanned["proc"].stderr
    scanned_block = scanned["report"]["scanned"]
    rows = scanned["rows"]
    string_cells = [v for r in rows for k, v in r.items() if k != "conversations" and v is not None]
    message_cells = [v for r in rows for m in r["conversations"] for v in (m["content"], m["role"]) if v is not None]
    assert scanned_block["shards"] == NUM_SHARDS
    assert scanned_block["row_groups"] == NUM_SHARDS * 3
    assert scanned_block["rows"] == NUM_SHARDS * ROWS_PER_SHARD
    assert scanned_block["cells"] == len(string_cells) + len(message_cells)
    assert scanned_block["bytes"] == sum(len(v.encode()) for v in string_cells + message_cells)
    assert scanned_block["seconds"] >= 0


def test_json_contract_keys(scanned):
    report = scanned["report"]
    assert report["version"] == 1
    assert {"version", "scanned", "findings", "errors"} <= set(report)
    assert {"shards", "row_groups", "rows", "cells", "bytes", "seconds"} <= set(report["scanned"])
    required = {"rule_id", "kind", "shard", "row", "column", "role", "start", "end", "fingerprint", "preview",
                "verdict", "blocking", "status"}
    for finding in report["findings"]:
        assert required <= set(finding)
        assert isinstance(finding["row"], int) and isinstance(finding["start"], int) and isinstance(finding["end"], int)
        assert finding["fingerprint"].startswith("sha256:") and len(finding["fingerprint"]) == 7 + 64
    assert isinstance(report["errors"], list)


def test_no_full_secret_in_json_terminal_or_stderr(scanned):
    outputs = {
        "json": scanned["report_text"],
        "json-run stdout": scanned["proc"].stdout,
        "json-run stderr": scanned["proc"].stderr,
        "terminal stdout": scanned["terminal"].stdout,
        "terminal stderr": scanned["terminal"].stderr,
    }
    assert "github-pat" in scanned["terminal"].stdout  # the terminal report did list findings
    for name, text in outputs.items():
        for secret in SECRETS:
            # Neither the secret nor any 16-character piece of its body (a truncated echo is a leak too).
            assert secret not in text, name
            body = secret[8:]
            pieces = {body[i : i + 16] for i in range(0, max(1, len(body) - 16), 8)}
            assert not any(piece in text for piece in pieces if len(piece) == 16), name


@pytest.mark.slow
def test_no_full_secret_in_debug_logs(scanned, caplog):
    from shardscan.api import scan
    from shardscan.engine import ScanOptions
    from tests.conftest import FIXED_NOW

    with caplog.at_level(logging.DEBUG):
        report = scan([str(scanned["data"])], options=ScanOptions(now=FIXED_NOW))
    assert len(report.findings) == len(PLANTS)
    assert caplog.records, "the engine logs its progress at DEBUG"
    logged = caplog.text
    assert "github-pat" in logged  # findings are logged (redacted)
    for secret in SECRETS:
        assert secret not in logged
        assert secret[8:40] not in logged


@pytest.mark.slow
def test_scan_single_file_and_glob_name_shards_as_given(scanned):
    data = scanned["data"]
    proc = run_cli("scan", str(data / shard_name(1)), "--format", "json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert {f["shard"] for f in report["findings"]} == {str(data / shard_name(1))}
    assert len(report["findings"]) == sum(1 for p in PLANTS if p.shard == 1)
    proc = run_cli("scan", str(data / "train-0000[02]-*.parquet"), "--format", "json")
    report = json.loads(proc.stdout)
    assert report["scanned"]["shards"] == 2
    assert len(report["findings"]) == sum(1 for p in PLANTS if p.shard in (0, 2))


@pytest.mark.slow
def test_file_metadata_secret_is_reported_at_row_minus_one(tmp_path):
    token = expand("{{hf}}", seed="meta")
    table = pa.Table.from_pylist([trace_row([("user", "hi")])], schema=TRACE_SCHEMA)
    table = table.replace_schema_metadata({"uploaded_by": f"ci with {token}"})
    pq.write_table(table, tmp_path / "train-00000-of-00001.parquet")
    proc = run_cli("scan", str(tmp_path), "--format", "json")
    [finding] = json.loads(proc.stdout)["findings"]
    assert (finding["rule_id"], finding["row"], finding["column"], finding["start"]) == (
        "huggingface-token", -1, "__metadata__.uploaded_by", 8,
    )
    assert token not in proc.stdout
