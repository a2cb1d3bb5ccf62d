"""The gate on verdicts: live-looking tokens of every kind block, their twins do not; ``--strict`` blocks all."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from shardscan.synth import (
    anthropic_key,
    aws_key_id,
    aws_secret,
    github_token,
    huggingface_token,
    jwt,
    openai_key,
    private_key_pem,
)
from tests.conftest import trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

FAR_FUTURE = 4_102_444_800  # 2100-01-01
PAST = 1_559_692_800  # 2019-06-05


def _live(rng: random.Random) -> list[tuple[str, set[tuple[str, str]]]]:
    """(cell text, {(rule_id, verdict)}) for a live-looking token of each of the seven kinds."""
    key_id, secret = aws_key_id(rng), aws_secret(rng)
    return [
        (f"Authorization: Bearer {jwt(rng, exp=FAR_FUTURE)}", {("jwt", "valid")}),
        (f"AWS_ACCESS_KEY_ID={key_id}\nAWS_SECRET_ACCESS_KEY={secret}",
         {("aws-access-key-id", "unverified"), ("aws-secret-access-key", "unverified")}),
        (f"export GITHUB_TOKEN={github_token(rng, 'ghp_')}", {("github-pat", "valid")}),
        (f"OPENAI_API_KEY={openai_key(rng, 'sk-proj-')}", {("openai-api-key", "valid")}),
        (f"x-api-key: {anthropic_key(rng)}", {("anthropic-api-key", "valid")}),
        (f"HF_TOKEN={huggingface_token(rng)}", {("huggingface-token", "unverified")}),
        (json.dumps({"content": private_key_pem("rsa")}), {("private-key", "valid")}),
        (private_key_pem("encrypted"), {("private-key", "encrypted")}),
    ]


def _twins(rng: random.Random) -> list[tuple[str, set[tuple[str, str]]]]:
    """Expired, invalid, example and redacted twins of the same seven kinds."""
    ghp = github_token(rng, "ghp_")
    bad_ghp = ghp[:-1] + ("A" if ghp[-1] != "A" else "B")
    openai = openai_key(rng, "sk-proj-")
    marker = openai.index("T3BlbkFJ")
    lopsided = openai[: marker - 4] + "T3BlbkFJ" + openai[marker - 4 : marker] + openai[marker + 8 :]
    anthropic = anthropic_key(rng)
    pkcs8 = private_key_pem("rsa-pkcs8").strip().splitlines()
    bad_b64 = pkcs8[:]
    bad_b64[3] = bad_b64[3][:10] + "=" + bad_b64[3][11:]
    truncated = pkcs8[:6] + [pkcs8[-1]]
    header = jwt(rng, exp=FAR_FUTURE).split(".")[0]
    not_json = base64.urlsafe_b64encode(b'{"not json').rstrip(b"=").decode()
    return [
        (f"token={jwt(rng, exp=PAST)}", {("jwt", "expired")}),
        (f"token={header}.{not_json}.{jwt(rng).split('.')[2]}", {("jwt", "invalid")}),
        ("Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
         "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
         "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", {("jwt", "example")}),
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", {("aws-access-key-id", "example")}),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", {("aws-secret-access-key", "example")}),
        ("AWS_ACCESS_KEY_ID=AKIAYOURACCESSKEYID2", {("aws-access-key-id", "redacted")}),
        (f"export GITHUB_TOKEN={bad_ghp}", {("github-pat", "invalid")}),
        (f"token: ghs_4242_{jwt(rng, exp=PAST)}", {("github-app-installation-jwt-token", "expired")}),
        ("GITHUB_TOKEN=ghp_YourPersonalAccessTokenGoesHere9A8B7", {("github-pat", "redacted")}),
        ("https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r", {("github-pat", "example")}),
        (f"OPENAI_API_KEY={lopsided}", {("openai-api-key", "invalid")}),
        ("OPENAI_API_KEY=sk-proj-your-openai-key-T3BlbkFJ-goes-here-please", {("openai-api-key", "redacted")}),
        (f"x-api-key: {anthropic[:-5]}AA", {("anthropic-api-key", "invalid")}),
        ("x-api-key: sk-ant-api03-your-anthropic-api-key-goes-here-and-nowhere-else", {("anthropic-api-key",
                                                                                        "redacted")}),
        ("HF_TOKEN=hf_ThisIsMyHuggingFaceAccessTokenXyz1", {("huggingface-token", "redacted")}),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA...\n<key body omitted>\n-----END RSA PRIVATE KEY-----",
         {("private-key", "redacted")}),
        ("\n".join(bad_b64), {("private-key", "invalid")}),
        ("\n".join(truncated), {("private-key", "invalid")}),
    ]


def _write(folder: Path, cells: list[tuple[str, set[tuple[str, str]]]]) -> dict[int, set[tuple[str, str]]]:
    rows = [trace_row([("user", "run the task"), ("tool", text)]) for text, _ in cells]
    write_trace_shard(folder / "train-00000-of-00001.parquet", rows)
    return {row: expected for row, (_, expected) in enumerate(cells)}


def _scan(folder: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(folder), "--now", "2026-12-02", "--no-allowlist", "-f",
         f"json:{out}", *extra],
        capture_output=True, text=True,
    )
    return proc.returncode, json.loads(out.read_text()), proc.stdout + proc.stderr + out.read_text()


def _by_row(report: dict) -> dict[int, set[tuple[str, str]]]:
    rows: dict[int, set[tuple[str, str]]] = {}
    for f in report["findings"]:
        assert f["column"] == "conversations[1].content"
        rows.setdefault(f["row"], set()).add((f["rule_id"], f["verdict"]))
    return rows


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, tuple[Path, dict, list[str]]]:
    rng = random.Random(20261202)
    live, twins = _live(rng), _twins(rng)
    base = tmp_path_factory.mktemp("gate")
    mixed = base / "mixed"
    expected_mixed = _write(mixed, live + twins)
    only_twins = base / "twins"
    expected_twins = _write(only_twins, twins)
    texts = [text for text, _ in live + twins]
    return {"mixed": (mixed, expected_mixed, texts), "twins": (only_twins, expected_twins, texts), "n_live": len(live)}


def test_mixed_folder_blocks_exactly_the_live_ones(folders, tmp_path):
    folder, expected, texts = folders["mixed"]
    code, report, output = _scan(folder, tmp_path)
    assert code == 1
    assert _by_row(report) == expected
    n_live = folders["n_live"]
    for f in report["findings"]:
        assert f["blocking"] == (f["row"] < n_live), (f["rule_id"], f["verdict"], f["detail"])
        assert f["verdict"] in ("valid", "unverified", "encrypted") or f["severity"] in ("low", "info")
        assert f["detail"]
    assert report["policy"] == {
        "blocking_verdicts": ["valid", "unverified", "encrypted"], "strict": False, "fail_on_stale": False,
        "skip_unreadable": False, "allowlisted_block": False, "allow_truncated_findings": False,
    }
    assert report["gate"]["exit_code"] == 1
    for f in report["findings"]:
        assert {"verdict", "detail", "severity", "blocking"} <= set(f)
    severities = {(f["rule_id"], f["verdict"]): f["severity"] for f in report["findings"]}
    assert severities[("private-key", "valid")] == "critical"
    assert severities[("private-key", "encrypted")] == "high"
    assert severities[("jwt", "expired")] == "low"
    assert severities[("private-key", "invalid")] == "low"
    assert severities[("aws-access-key-id", "example")] == "info"
    assert severities[("huggingface-token", "redacted")] == "info"
    for text in texts:
        for token in text.replace("\\n", "\n").split():
            if len(token) >= 20:
                assert token not in output.replace(f"{folder}", "")


def test_folder_of_only_twins_passes_the_default_gate(folders, tmp_path):
    folder, expected, _ = folders["twins"]
    code, report, _ = _scan(folder, tmp_path)
    assert _by_row(report) == expected
    assert code == 0
    assert not any(f["blocking"] for f in report["findings"])
    assert report["gate"] == {"passed": True, "exit_code": 0, "reason": "no blocking findings"}


def test_strict_blocks_every_finding(folders, tmp_path):
    folder, expected, _ = folders["twins"]
    code, report, _ = _scan(folder, tmp_path, "--strict")
    assert code == 1
    assert len(report["findings"]) == sum(len(v) for v in expected.values())
    assert all(f["blocking"] for f in report["findings"])
    assert report["policy"]["strict"] is True
    assert report["policy"]["blocking_verdicts"] == [
        "valid", "unverified", "encrypted", "expired", "invalid", "example", "redacted", "test-mode", "local-only"
    ]
