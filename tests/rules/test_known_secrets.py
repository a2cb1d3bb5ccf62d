"""``--known-secrets``: your own secrets (an environment variable, a file, a SHA-256 fingerprint)
found in plain, JSON-escaped and base64-encoded cells, "0 occurrences" stated in every report
format when absent, and the values in no output, error message or cache file."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from shardscan.cli import app
from shardscan.engine import Scanner, ScanOptions
from shardscan.errors import ConfigError
from shardscan.known_secrets import encoded_forms, load_known_secrets
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

runner = CliRunner()
FORMATS = ("terminal", "json", "markdown", "card")


def _value(seed: str, n: int = 28, extra: str = "") -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits + extra) for _ in range(n))


@pytest.fixture
def secrets(tmp_path) -> dict[str, str]:
    """Three generated secrets: one in the environment, one in a file, one known by fingerprint only.

    The file's value holds characters JSON escapes (a slash, a quote), so its JSON-escaped form
    differs from the value."""
    env = _value("env")
    filed = _value("file", 12) + '/"' + _value("file2", 12)
    hashed = _value("sha", 32)
    (tmp_path / "proxy.token").write_text(filed + "\n", encoding="utf-8")
    (tmp_path / "known.txt").write_text(
        "# secrets of the trace-generation proxy\n"
        "env:IRIS_PROXY_TOKEN\n"
        "file:proxy.token\n"
        f"sha256:{hashlib.sha256(hashed.encode()).hexdigest()}\n",
        encoding="utf-8",
    )
    return {"env": env, "file": filed, "sha": hashed, "list": str(tmp_path / "known.txt")}


def _shard(path: Path, secrets: dict[str, str]) -> Path:
    rows = [
        # row 0: the env secret plain in a tool call's output
        trace_row([("user", "run the job"), ("tool", f"proxy token is {secrets['env']} (do not share)")]),
        # row 1: the file secret JSON-escaped inside a JSON string
        trace_row(instruction=json.dumps({"arguments": json.dumps({"token": secrets["file"]})})),
        # row 2: the fingerprinted secret base64-encoded in a command
        trace_row(
            verifier_output=f"echo {base64.b64encode(('proxy ' + secrets['sha']).encode()).decode()} | base64 -d"),
        # row 3: nothing
        trace_row([("assistant", "All done.")]),
    ]
    return write_trace_shard(path, rows)


def _scan(args: list[str], env: dict[str, str], fmt: str = "json") -> tuple[int, str]:
    result = runner.invoke(app, ["scan", *args, "--format", fmt, "--no-allowlist"], env=env)
    return result.exit_code, result.stdout + (result.stderr if result.stderr_bytes is not None else "")


@pytest.mark.slow
def test_each_entry_is_found_in_its_encoding_at_its_cell(tmp_path, secrets):
    shard = _shard(tmp_path / "data" / "train.parquet", secrets)
    code, out = _scan([str(shard), "--known-secrets", secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]})
    assert code == 1
    report = json.loads(out)
    found = [(f["row"], f["column"], f["rule_id"], f["kind"], f["verdict"], f["blocking"], f["detail"].split(":")[0]
              + ":" + f["detail"].split(":")[1]) for f in report["findings"]]
    assert found == [
        (0, "conversations[1].content", "known-secret", "known-secret", "valid", True, "env:IRIS_PROXY_TOKEN"),
        (1, "instruction", "known-secret", "known-secret", "valid", True, "file:proxy.token"),
        (2, "verifier_output", "known-secret", "known-secret", "valid", True,
         "sha256:" + hashlib.sha256(secrets["sha"].encode()).hexdigest()[:12]),
    ]
    by_row = {f["row"]: f for f in report["findings"]}
    cell0 = f"proxy token is {secrets['env']} (do not share)"
    assert (by_row[0]["start"], by_row[0]["end"]) == (cell0.index(secrets["env"]), cell0.index(secrets["env"]) + 28)
    assert by_row[1]["encoding"] == ["json-string", "json-string"]
    assert by_row[2]["encoding"] == ["base64"]
    statements = [k["statement"] for k in report["known_secrets"]]
    assert statements == [
        f"env:IRIS_PROXY_TOKEN: searched {report['scanned']['cells']:,} cells, 1 occurrence",
        f"file:proxy.token: searched {report['scanned']['cells']:,} cells, 1 occurrence",
        f"sha256:{hashlib.sha256(secrets['sha'].encode()).hexdigest()[:12]}: searched "
        f"{report['scanned']['cells']:,} cells, 1 occurrence",
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_absent_secrets_are_stated_as_zero_occurrences_in_every_format(tmp_path, secrets, fmt):
    shard = write_trace_shard(tmp_path / "data" / "clean.parquet",
                              [trace_row([("user", "hello"), ("assistant", "hi")])])
    code, out = _scan([str(shard), "--known-secrets", secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]}, fmt)
    assert code == 0
    out = out.replace("`", "")  # Markdown and the card quote the entry as code
    cells = 2 * 2 + 12  # two messages (content and role) and twelve string columns
    assert f"env:IRIS_PROXY_TOKEN: searched {cells} cells, 0 occurrences" in out
    assert f"file:proxy.token: searched {cells} cells, 0 occurrences" in out
    assert "sha256:" in out and f"searched {cells} cells, 0 occurrences" in out


@pytest.mark.parametrize("fmt", FORMATS + ("sarif", "html", "jsonl", "compact", "junit"))
def test_no_output_holds_a_value(tmp_path, secrets, fmt):
    shard = _shard(tmp_path / "data" / "train.parquet", secrets)
    code, out = _scan([str(shard), "--known-secrets", secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]}, fmt)
    assert code == 1
    for value in (secrets["env"], secrets["file"], secrets["sha"]):
        for piece in (value, value[:8], value[-8:]):
            assert piece not in out


@pytest.mark.slow
def test_cache_holds_no_value_and_does_not_replay_a_scan_without_the_secrets(tmp_path, secrets):
    shard = _shard(tmp_path / "data" / "train.parquet", secrets)
    cache = tmp_path / "cache"
    env = {"IRIS_PROXY_TOKEN": secrets["env"]}
    code, out = _scan([str(shard), "--cache-dir", str(cache)], env)
    assert (code, json.loads(out)["findings"]) == (0, [])
    code, out = _scan([str(shard), "--cache-dir", str(cache), "--known-secrets", secrets["list"]], env)
    assert code == 1 and len(json.loads(out)["findings"]) == 3
    # Replayed from the cache with the same secrets: same findings.
    code, again = _scan([str(shard), "--cache-dir", str(cache), "--known-secrets", secrets["list"]], env)
    assert (code, json.loads(again)["findings"]) == (1, json.loads(out)["findings"])
    for path in cache.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in (secrets["env"], secrets["file"], secrets["sha"]):
                assert value.encode() not in data, path


def test_missing_environment_variable_or_file_is_a_usage_error_naming_the_entry(tmp_path, secrets):
    shard = write_trace_shard(tmp_path / "data" / "clean.parquet", [trace_row()])
    code, out = _scan([str(shard), "--known-secrets", secrets["list"]], {"IRIS_PROXY_TOKEN": ""} | {})
    # An empty value is shorter than a secret can be.
    assert code == 2 and "env:IRIS_PROXY_TOKEN" in out
    listing = tmp_path / "missing.txt"
    listing.write_text("env:NOT_SET_ANYWHERE_X\n", encoding="utf-8")
    code, out = _scan([str(shard), "--known-secrets", str(listing)], {})
    assert code == 2 and f"{listing}:1: env:NOT_SET_ANYWHERE_X: environment variable is not set" in out
    listing.write_text("file:/nonexistent/secret\n", encoding="utf-8")
    code, out = _scan([str(shard), "--known-secrets", str(listing)], {})
    assert code == 2 and "file:/nonexistent/secret: cannot read the file" in out
    listing.write_text(secrets["env"] + "\n", encoding="utf-8")  # a value pasted by mistake
    code, out = _scan([str(shard), "--known-secrets", str(listing)], {})
    assert code == 2 and secrets["env"] not in out and secrets["env"][:8] not in out
    # Pasted after the prefix: as an assignment, or a token where a variable name belongs.
    token = expand("{{github:ghp_}}", seed="pasted")
    for line in (f"env:PROXY_TOKEN={secrets['env']}", f"env:{token}", f"file:{token}"):
        listing.write_text(line + "\n", encoding="utf-8")
        code, out = _scan([str(shard), "--known-secrets", str(listing)], {})
        assert code == 2 and f"{listing}:1: " in out, line
        assert secrets["env"] not in out and token not in out, line


@pytest.mark.slow
def test_value_entries_select_only_cells_that_hold_a_form_of_them(secrets):
    entries = load_known_secrets([secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]})
    scanner = Scanner(load_ruleset(), ScanOptions(known_secrets=entries[:2]))
    cells = ["ordinary text without secrets", "x" * 40, f"a {secrets['env']} b",
             f"c {base64.b64encode(('k=' + secrets['env']).encode()).decode()} d",
             "percent " + encoded_forms(secrets["file"])[-1][0]]
    assert scanner.known_prefilter.mask(pa.array(cells)).tolist() == [False, False, True, True, True]
    # A fingerprint entry turns every cell holding a token-shaped run into a candidate (documented cost).
    hashed = Scanner(load_ruleset(), ScanOptions(known_secrets=entries[2:]))
    assert hashed.known_prefilter.mask(pa.array(cells)).tolist() == [False, True, True, True, True]


def test_short_values_and_bad_entries_are_refused(tmp_path):
    listing = tmp_path / "k.txt"
    listing.write_text("env:SHORT\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="shorter than 8"):
        load_known_secrets([listing], {"SHORT": "abc"})
    listing.write_text("sha256:abc\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="64 hex digits"):
        load_known_secrets([listing], {})


@pytest.mark.parametrize("form", ["plain", "json-escaped", "base64"])
@pytest.mark.parametrize("entry", ["env", "file", "sha"])
def test_every_entry_in_every_form(secrets, entry, form):
    entries = load_known_secrets([secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]})
    label = {"env": "env:IRIS_PROXY_TOKEN", "file": "file:proxy.token",
             "sha": "sha256:" + hashlib.sha256(secrets["sha"].encode()).hexdigest()[:12]}[entry]
    value = secrets[entry]
    if form == "plain":
        cell, encoded = f"the proxy answered with {value} today", value
    elif form == "json-escaped":
        encoded = json.dumps(value)[1:-1].replace("/", "\\/")
        cell = '{"output": "token=\\"' + encoded + '\\" ok"}'
    else:
        encoded = base64.b64encode(f"export PROXY={value}\n".encode()).decode()
        cell = f"echo {encoded} | base64 -d >> ~/.bashrc"
    scanner = Scanner(load_ruleset(), ScanOptions(known_secrets=entries))
    assert scanner.known_prefilter.mask(pa.array([cell])).tolist() == [True]
    found = [f for f in scanner.scan_text(cell)[0] if f.rule_id == "known-secret"]
    assert [(f.preview, f.fingerprint, str(f.verdict)) for f in found] == [
        (label, "sha256:" + hashlib.sha256(value.encode()).hexdigest(), "valid")
    ]
    [finding] = found
    span = cell[finding.start : finding.end]
    # The span covers the value as written: plain, escaped, or (within) the base64 run.
    assert value in span or encoded in span or span in encoded
    assert value not in finding.context and value[:8] not in finding.preview


def test_gate_takes_known_secrets_and_its_report_files_hold_no_value(tmp_path, secrets):
    shard = _shard(tmp_path / "data" / "train.parquet", secrets)
    reports = tmp_path / "reports"
    result = runner.invoke(app, ["gate", str(shard), "--known-secrets", secrets["list"], "--report-dir", str(reports),
                                 "--no-allowlist"], env={"IRIS_PROXY_TOKEN": secrets["env"]})
    assert result.exit_code == 1
    written = sorted(p.name for p in reports.iterdir())
    assert written == ["shardscan-report.html", "shardscan-report.json", "shardscan-report.sarif"]
    data = json.loads((reports / "shardscan-report.json").read_text(encoding="utf-8"))
    assert [k["occurrences"] for k in data["known_secrets"]] == [1, 1, 1]
    sarif = json.loads((reports / "shardscan-report.sarif").read_text(encoding="utf-8"))
    assert "known-secret" in {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    for path in reports.iterdir():
        text = path.read_text(encoding="utf-8")
        for value in (secrets["env"], secrets["file"], secrets["sha"]):
            assert value not in text and json.dumps(value)[1:-1] not in text, path


def test_an_occurrence_far_from_every_keyword_in_a_long_cell_is_found(secrets):
    """Long cells are read around the prefilter's hits; known secrets are not among those hits, so a
    cell is then read whole: an occurrence 50 KB away from a keyword is still found."""
    entries = load_known_secrets([secrets["list"]], {"IRIS_PROXY_TOKEN": secrets["env"]})
    scanner = Scanner(load_ruleset(), ScanOptions(known_secrets=entries))
    filler = "".join(f"line {i}: ordinary build output, nothing to see\n" for i in range(1200))
    text = "export HF_TOKEN=$HF_TOKEN\n" + filler + f"proxy token is {secrets['env']}\n" + filler
    findings, limits = scanner.scan_text(text)
    known = [f for f in findings if f.kind == "known-secret"]
    assert [(f.start, f.end) for f in known] == [
        (text.index(secrets["env"]), text.index(secrets["env"]) + len(secrets["env"]))]
    assert limits == []
