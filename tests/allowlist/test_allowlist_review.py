"""The review workflow: `allowlist add`, interactive `review` fed through stdin, `allowlist check`, the demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shardscan.allowlist import load_allowlist
from shardscan.api import scan
from shardscan.cli import app
from shardscan.engine import ScanOptions
from shardscan.policy import Policy
from shardscan.redaction import fingerprint
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

# Most tests here take over half a second (measured): out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOKENS = [expand("{{github:ghp_}}", seed=f"review-{i}") for i in range(3)]
FPS = [fingerprint(t) for t in TOKENS]

COMMENTED = """\
# Team allowlist: keep this header.
version: 1   # format version
entries:
  # First reviewed finding.
  - fingerprint: sha256:{zero}
    reason: "placeholder from a tutorial"  # inline note
    reviewer: bob
    reviewed: 2026-10-01

# A trailing comment that must stay last.
"""


def run_process(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The CLI as users run it: a separate process, a real pipe on standard input."""
    return subprocess.run(
        [sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True, cwd=cwd, input=stdin,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.fixture
def run(tmp_path, monkeypatch):
    """The CLI in this process (much faster than a subprocess), from ``tmp_path``, with git's config there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")

    def invoke(*args: str, stdin: str | None = None):
        return CliRunner().invoke(app, list(args), input=stdin, catch_exceptions=False)

    return invoke


@pytest.fixture
def report(tmp_path, run) -> Path:
    """A JSON report with three findings, one per token, in rows 0..2 of one shard."""
    write_trace_shard(
        tmp_path / "data" / "s.parquet",
        [trace_row([("user", "go"), ("tool", f"TOKEN={t}")]) for t in TOKENS],
    )
    out = tmp_path / "report.json"
    proc = run("scan", "data", "--no-allowlist", "--now", "2026-12-02", "--format", "json", "--output", str(out))
    assert proc.exit_code == 1, proc.output
    assert [f["fingerprint"] for f in json.loads(out.read_text())["findings"]] == FPS
    return out


def test_add_appends_an_entry_and_keeps_comments_and_order(tmp_path, run, report):
    path = tmp_path / "allowlist.yaml"
    original = COMMENTED.format(zero="0" * 64)
    path.write_text(original)
    proc = run("allowlist", "add", "--from", "report.json", "--finding", "2", "--reason", "revoked test token, rotated "
                                                                                          "on the same day",
               "--reviewer", "carol", "--expires", "2027-03-31", "--now", "2026-12-02", "--confirm-live")
    assert proc.exit_code == 0, proc.stderr
    assert proc.stdout.startswith("added entry 2 to allowlist.yaml (line 9)")
    head, tail = original.split("\n# A trailing", 1)
    expected = head + (
        f"  - fingerprint: {FPS[1]}\n"
        '    reason: "revoked test token, rotated on the same day"\n'
        '    reviewer: "carol"\n'
        "    reviewed: 2026-12-02\n"
        "    expires: 2027-03-31\n"
        '    verdict: "valid"\n'
        '    row: "s.parquet row 1, conversations[1].content"\n'
    ) + "\n# A trailing" + tail
    assert path.read_text() == expected
    assert all(t not in path.read_text() for t in TOKENS)

    # Round trip: the new entry accepts exactly that finding on the next scan.
    out = tmp_path / "again.json"
    again = run("scan", "data", "--now", "2026-12-02", "--format", "json", "--output", str(out))
    data = json.loads(out.read_text())
    assert [f["status"] for f in data["findings"]] == ["new", "allowlisted", "new"]
    assert data["findings"][1]["allowlist"] == {
        "entry": 2, "reason": "revoked test token, rotated on the same day", "reviewer": "carol",
        "reviewed": "2026-12-02",
    }
    assert ([e["entry"] for e in data["allowlist"]["matched"]], [e["entry"] for e in data["allowlist"]["stale"]]) == (
        [2], [1],
    )
    assert again.exit_code == 1

    # Adding the same finding again changes nothing.
    repeat = run("allowlist", "add", "--from", "report.json", "--finding", "2", "--reason", "again",
                 "--reviewer", "carol")
    assert (repeat.exit_code, repeat.stdout.strip()) == (0, "finding 2 is already accepted by entry 2 "
                                                            "(allowlist.yaml:9)")
    assert path.read_text() == expected


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, None),  # a missing file is created with a header
        ("version: 1\nentries: []  # none yet\n", "version: 1\nentries:   # none yet\n  - fingerprint: {fp}\n"),
        ("entries:\nversion: 1\n", "entries:\n  - fingerprint: {fp}\n"),
        ("version: 1\r\nentries:\r\n  - fingerprint: sha256:{zero}\r\n    reason: x\r\n    reviewer: y\r\n"
         "    reviewed: 2026-01-01\r\n", "    reviewed: 2026-01-01\r\n  - fingerprint: {fp}\r\n"),
        ("version: 1\nentries:\n-   fingerprint: sha256:{zero}\n    reason: x\n    reviewer: y\n    reviewed: "
         "2026-01-01",
         "    reviewed: 2026-01-01\n-   fingerprint: {fp}\n"
         "    reason: \"fixture token generated by the test suite\"\n"),
    ],
)
def test_add_handles_empty_new_crlf_and_unusual_indentation(tmp_path, run, report, before, after):
    path = tmp_path / "allowlist.yaml"
    if before is not None:
        path.write_bytes(before.format(zero="0" * 64).encode())
    proc = run("allowlist", "add", "--from", "report.json", "--finding", "1", "--reason", "fixture token generated by "
        "the test suite", "--reviewer", "d",
               "--confirm-live")
    assert proc.exit_code == 0, proc.stderr
    text = path.read_bytes().decode()
    if after is None:
        assert text.startswith("# Reviewed allowlist for shardscan") and "version: 1\nentries:\n  - fingerprint" in text
    else:
        assert after.format(fp=FPS[0]) in text
    assert [e.fingerprint for e in load_allowlist(path).entries][-1] == FPS[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--finding", "0"], "--finding 0: the report has 3 finding(s), numbered from 1"),
        (["--finding", "4"], "--finding 4: the report has 3 finding(s), numbered from 1"),
        (["--finding", "1"], "finding 1 was verified offline as a working credential: revoke or rotate it"),
        (["--finding", "1", "--confirm-live"], "--reason: a live credential needs a reason of at least 6 words"),
        (["--finding", "1", "--expires", "soon"], "--expires: not a date (YYYY-MM-DD): 'soon'"),
        (["--finding", "1", "--expires", "2020-01-31", "--now", "2026-12-02"],
         "--expires 2020-01-31 is before the review date 2026-12-02: the entry would never apply"),
    ],
)
def test_add_refuses_bad_requests_without_touching_the_file(tmp_path, run, report, args, message):
    proc = run("allowlist", "add", "--from", "report.json", "--reason", "r", "--reviewer", "d", *args)
    assert (proc.exit_code, message in proc.stderr) == (2, True), proc.stderr
    assert not (tmp_path / "allowlist.yaml").exists()


def test_add_refuses_a_reason_holding_a_secret(tmp_path, run, report):
    secret = expand("{{hf:hf_}}", seed="reason")
    proc = run("allowlist", "add", "--from", "report.json", "--finding", "1", "--reason",
               f"the same token as {secret} in the fixtures", "--reviewer", "d", "--confirm-live")
    assert proc.exit_code == 2 and "looks like it contains a raw credential" in proc.stderr
    assert secret not in proc.stderr + proc.stdout
    assert not (tmp_path / "allowlist.yaml").exists()


def test_add_reviewer_defaults_to_git_user_name(tmp_path, run, report):
    subprocess.run(["git", "config", "--global", "user.name", "Gita Reviewer"], cwd=tmp_path, check=True)
    proc = run("allowlist", "add", "--from", "report.json", "--finding", "3", "--reason", "fixture token generated by "
        "the test suite", "--confirm-live")
    assert proc.exit_code == 0, proc.stderr
    [entry] = load_allowlist(tmp_path / "allowlist.yaml").entries
    assert (entry.reviewer, entry.fingerprint) == ("Gita Reviewer", FPS[2])


def test_review_through_stdin_writes_exactly_the_accepted_entries(tmp_path, run, report):
    path = tmp_path / "allowlist.yaml"
    path.write_text(COMMENTED.format(zero="0" * 64))
    answers = ("a\npublish live\n\ntoo short\nfixture token of the test suite, revoked\nwhat\ns\n"
               "accept\npublish live\nsecond fixture token of the test suite\n")
    proc = run_process("review", "report.json", "--reviewer", "erin", "--now", "2026-12-02", cwd=tmp_path,
                       stdin=answers)
    assert proc.returncode == 0, proc.stderr
    entries = load_allowlist(path).entries
    assert [(e.fingerprint, e.reason, e.reviewer, e.reviewed.isoformat()) for e in entries[1:]] == [
        (FPS[0], "fixture token of the test suite, revoked", "erin", "2026-12-02"),
        (FPS[2], "second fixture token of the test suite", "erin", "2026-12-02"),
    ]
    # The verdict at review time is recorded with each entry: a reader of the file sees a live key was accepted.
    assert [e.verdict for e in entries[1:]] == ["valid", "valid"]
    assert path.read_text().startswith(COMMENTED.format(zero="0" * 64).split("\n# A trailing")[0])
    assert path.read_text().endswith("\n# A trailing comment that must stay last.\n")
    out = proc.stdout
    assert "a reason is required" in out and "a = accept" in out  # the empty reason and 'what' were re-asked
    assert "WARNING: this credential was verified offline as working" in out
    assert "a live credential needs a reason of at least 6 words" in out
    assert "[1/3] github (github-pat): ghp_…(40)" in out
    assert "at:      s.parquet row 0, conversations[1].content (role tool)" in out
    assert "context: TOKEN=[ghp_…(40)]" in out
    assert out.rstrip().endswith("review: 2 accepted, 1 skipped, 0 already accepted, 0 not reviewed")
    assert all(t not in out + proc.stderr + path.read_text() for t in TOKENS)


def test_review_quits_on_q_or_end_of_input_and_skips_accepted_findings(tmp_path, run, report):
    path = tmp_path / "allowlist.yaml"
    proc = run("review", "report.json", "--reviewer", "erin", stdin="a\npublish live\nfirst fixture token of the "
                                                                    "suite\nq\n")
    assert proc.stdout.rstrip().endswith("review: 1 accepted, 0 skipped, 0 already accepted, 2 not reviewed")
    assert [e.fingerprint for e in load_allowlist(path).entries] == [FPS[0]]
    # The same (stale) report again: the first finding is already accepted; input ends mid-reason.
    proc = run("review", "report.json", "--reviewer", "erin", stdin="s\na\n")
    assert "already accepted by entry 1 (line 6)" in proc.stdout
    assert proc.stdout.rstrip().endswith("review: 0 accepted, 1 skipped, 1 already accepted, 1 not reviewed")
    assert [e.fingerprint for e in load_allowlist(path).entries] == [FPS[0]]


def test_review_skips_a_live_credential_unless_the_reviewer_confirms(tmp_path, run, report):
    proc = run("review", "report.json", "--reviewer", "erin", stdin="a\nyes\na\nok\nq\n")
    assert proc.stdout.count("WARNING: this credential was verified offline as working") == 2
    assert proc.stdout.count("  not accepted\n") == 2
    assert proc.stdout.rstrip().endswith("review: 0 accepted, 2 skipped, 0 already accepted, 1 not reviewed")
    assert not (tmp_path / "allowlist.yaml").exists()


def test_add_without_a_finding_lists_the_findings_and_succeeds(tmp_path, run, report):
    proc = run("allowlist", "add", "--from", "report.json")
    assert proc.exit_code == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["1", "2", "3"]
    assert "s.parquet row 2, conversations[1].content" in lines[2]
    assert lines[3] == "add one with: shardscan allowlist add --from report.json --finding N --reason '...'"
    assert not (tmp_path / "allowlist.yaml").exists()
    missing_reason = run("allowlist", "add", "--from", "report.json", "--finding", "2")
    assert missing_reason.exit_code == 2
    assert "--finding needs --reason" in missing_reason.stderr


def test_check_reports_duplicates_and_entries_that_can_never_match(tmp_path, run):
    path = tmp_path / "allowlist.yaml"
    base = COMMENTED.format(zero="0" * 64).split("\n# A trailing")[0]
    path.write_text(base + f"  - fingerprint: sha256:{'0' * 64}\n    reason: r\n    reviewer: b\n    reviewed: "
                           "2026-10-02\n")
    dup = run("allowlist", "check")
    assert dup.exit_code == 2
    assert "allowlist.yaml:9: entry 2: duplicate of entry 1 (line 5)" in dup.stderr

    path.write_text(base + (
        f"  - fingerprint: {FPS[0]}\n    rule: no-such-rule\n    reason: r\n    reviewer: b\n    reviewed: 2026-10-02\n"
        f"  - fingerprint: {FPS[1]}\n    reason: r\n    reviewer: b\n    reviewed: 2026-10-02\n    expires: "
        "2026-11-01\n"
        f"  - fingerprint: sha256:{'0' * 64}\n    shard: a.parquet\n    reason: r\n    reviewer: b\n    reviewed: "
        "2026-10-02\n"
    ))
    never = run("allowlist", "check", "--now", "2026-12-02")
    assert never.exit_code == 1
    assert never.stdout.splitlines() == [
        "allowlist.yaml:9: entry 2: 'rule' no-such-rule is neither a rule id nor a kind of the active rules",
        "allowlist.yaml:14: entry 3: expired on 2026-11-01; it no longer accepts anything",
        "allowlist.yaml:19: entry 4: redundant: entry 1 (line 5) already accepts everything it does",
        "allowlist.yaml: 4 entries, valid; 3 can never match",
    ]
    assert run("allowlist", "check", str(ROOT / "allowlist.yaml"), "--now", "2026-12-02").exit_code == 0


def test_shipped_allowlist_accepts_the_four_demo_rows_under_strict(tmp_path):
    # Run outside the repository: the demo must find its own allowlist, not one in the cwd.
    out = tmp_path / "demo.json"
    proc = run_process("demo", str(tmp_path / "d"), "--strict", "--now", "2026-12-02", "--format", "json",
                       "--output", str(out), cwd=tmp_path)
    report = json.loads(out.read_text())
    # Fingerprints are hashes, safe to print: if a rule change moved a match, this says what to update.
    unaccepted = [(f["shard"], f["row"], f["rule_id"], f["fingerprint"]) for f in report["findings"]
                  if f["status"] != "allowlisted"]
    assert unaccepted == [], f"allowlist.yaml no longer accepts these demo findings: {unaccepted}"
    assert proc.returncode == 0, proc.stderr + proc.stdout
    found = {(f["shard"][6:11], f["row"], f["status"], f["blocking"]) for f in report["findings"]}
    assert found == {
        ("00012", 4, "allowlisted", False), ("00068", 3, "allowlisted", False),
        ("00089", 1, "allowlisted", False), ("00100", 2, "allowlisted", False),
    }
    assert all(f["allowlist"]["reason"] and f["allowlist"]["reviewer"] for f in report["findings"])
    assert (report["allowlist"]["entries"], len(report["allowlist"]["matched"])) == (4, 4)
    assert report["allowlist"]["stale"] == [] and report["allowlist"]["expired"] == []
    assert report["gate"] == {"passed": True, "exit_code": 0, "reason": "no blocking findings"}
    # Without the allowlist the strict gate fails on exactly those four (same data, scanned in-process).
    bare = scan([str(tmp_path / "d")], policy=Policy(strict=True), options=ScanOptions(now=FIXED_NOW))
    assert (bare.decision.exit_code, len(bare.blocking), len(bare.findings)) == (1, 4, 4)


def test_review_in_a_real_terminal(tmp_path, run, report):
    """The same triage on a pseudo-terminal: prompts, echoed answers, accepted entry written."""
    pty = pytest.importorskip("pty")
    import os

    try:
        master, slave = pty.openpty()
    except OSError:
        pytest.skip("no pseudo-terminals here")
    proc = subprocess.Popen(
        [sys.executable, "-m", "shardscan.cli", "review", "report.json", "--reviewer", "tty user"],
        stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "dumb"},
    )
    os.close(slave)
    os.write(master, b"s\na\npublish live\nrevoked in the terminal an hour ago\nq\n")
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "[2/3] github (github-pat)" in screen and "accept, skip or quit? [a/s/q]" in screen
    assert "review: 1 accepted, 1 skipped, 0 already accepted, 1 not reviewed" in screen
    [entry] = load_allowlist(tmp_path / "allowlist.yaml").entries
    assert (entry.fingerprint, entry.reason, entry.reviewer) == (FPS[1], "revoked in the terminal an hour ago",
                                                                 "tty user")
    assert all(t not in screen for t in TOKENS)
