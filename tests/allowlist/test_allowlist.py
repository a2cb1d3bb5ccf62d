"""Allowlist parsing, validation, matching and reconciliation, through the library and the CLI."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from shardscan.allowlist import AllowlistError, compile_glob, load_allowlist, parse_allowlist
from shardscan.api import scan
from shardscan.cli import app
from shardscan.model import Status
from shardscan.policy import Policy
from shardscan.redaction import fingerprint
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

TOKEN = expand("{{github:ghp_}}", seed="allowlist-accepted")
OTHER = expand("{{hf:hf_}}", seed="allowlist-other")
FP = fingerprint(TOKEN)
UNUSED_FP = "sha256:" + "0" * 64


def entry(fp: str = FP, **extra: object) -> str:
    """One allowlist entry as YAML text (block style, two-space indented)."""
    fields = {"fingerprint": fp, "reason": "test fixture token", "reviewer": "alice", "reviewed": "2026-11-01", **extra}
    lines = [f"  - {k}: {v}" if i == 0 else f"    {k}: {v}" for i, (k, v) in enumerate(fields.items())]
    return "\n".join(lines) + "\n"


def allowlist_file(path: Path, *entries: str) -> Path:
    path.write_text("version: 1\nentries:\n" + "".join(entries), encoding="utf-8")
    return path


def locations(report) -> dict[tuple[str, int, str], str]:
    return {(f.location.shard, f.location.row, f.location.column): str(f.status) for f in report.findings}


# ---- identity survives moving data ------------------------------------------------------------


def test_fingerprint_entry_follows_the_secret_across_shards_and_resharding(tmp_path, ruleset, options):
    before = tmp_path / "v1"
    write_trace_shard(before / "train-00000-of-00002.parquet", [trace_row([("user", "hi")])] * 3)
    write_trace_shard(
        before / "train-00001-of-00002.parquet",
        [trace_row([("user", "a")]), trace_row([("user", "x"), ("tool", f"GITHUB_TOKEN={TOKEN}")]), trace_row()],
    )
    allow = load_allowlist(allowlist_file(tmp_path / "allowlist.yaml", entry()))
    first = scan([str(before)], ruleset=ruleset, options=options, allowlist=allow)
    assert locations(first) == {("train-00001-of-00002.parquet", 1, "conversations[1].content"): "allowlisted"}

    # Re-shard into three shards of different sizes: the row lands elsewhere, in another message,
    # next to a secret nobody reviewed.
    after = tmp_path / "v2"
    write_trace_shard(after / "part-0.parquet", [trace_row()] * 2)
    write_trace_shard(after / "part-1.parquet", [trace_row()] * 4)
    write_trace_shard(
        after / "nested" / "part-2.parquet",
        [
            trace_row([("system", "s"), ("user", "u"), ("assistant", "ok"), ("tool", f"token={TOKEN}")]),
            trace_row(instruction=f"use HF_TOKEN={OTHER}"),
        ],
    )
    report = scan([str(after)], ruleset=ruleset, options=options, allowlist=allow)
    assert locations(report) == {
        ("nested/part-2.parquet", 0, "conversations[3].content"): "allowlisted",
        ("nested/part-2.parquet", 1, "instruction"): "new",
    }
    accepted = next(f for f in report.findings if f.status == Status.ALLOWLISTED)
    assert (accepted.allowlist.entry, accepted.allowlist.reason, accepted.allowlist.reviewer) == (
        1, "test fixture token", "alice",
    )
    assert not accepted.blocking
    assert [f.blocking for f in report.findings if f.status == Status.NEW] == [True]
    assert [(e.entry, e.findings) for e in report.allowlist.matched] == [(1, 1)]
    assert report.allowlist.stale == () and report.allowlist.expired == ()
    assert report.decision.exit_code == 1  # the unreviewed token still blocks


# ---- narrowing --------------------------------------------------------------------------------


@pytest.fixture
def two_places(tmp_path):
    """The same token in shard a (instruction) and shard b (conversations[12].content)."""
    data = tmp_path / "data"
    write_trace_shard(data / "a-00000.parquet", [trace_row(instruction=f"export T={TOKEN}")])
    messages = [("user", f"m{i}") for i in range(12)] + [("tool", f"T={TOKEN}")]
    write_trace_shard(data / "b-00000.parquet", [trace_row(), trace_row(messages)])
    return data


A = ("a-00000.parquet", 0, "instruction")
B = ("b-00000.parquet", 1, "conversations[12].content")


@pytest.mark.parametrize(
    ("narrowing", "allowlisted"),
    [
        ({}, {A, B}),
        ({"shard": "a-*"}, {A}),
        ({"shard": "b-00000.parquet"}, {B}),
        ({"shard": "data/b-*"}, set()),  # a glob with a folder is matched against the whole shard path
        ({"column": "'conversations[12].content'"}, {B}),  # brackets are literal, not a character class
        ({"column": "'conversations[1].content'"}, set()),
        ({"column": "'conversations[*].content'"}, {B}),
        ({"column": "instr*"}, {A}),
        ({"rule": "github-pat"}, {A, B}),
        ({"rule": "github"}, {A, B}),  # a kind
        ({"rule": "jwt"}, set()),
        ({"rule": "github", "shard": "b-*", "column": "conversations*"}, {B}),
    ],
)
def test_narrowing_by_shard_column_and_rule(tmp_path, two_places, ruleset, options, narrowing, allowlisted):
    allow = load_allowlist(allowlist_file(tmp_path / "allowlist.yaml", entry(**narrowing)))
    report = scan([str(two_places)], ruleset=ruleset, options=options, allowlist=allow)
    assert locations(report) == {loc: "allowlisted" if loc in allowlisted else "new" for loc in (A, B)}
    assert len(report.allowlist.matched if allowlisted else report.allowlist.stale) == 1


def test_globs_only_know_star_and_question_mark():
    assert compile_glob("conversations[1?].content").fullmatch("conversations[12].content")
    assert not compile_glob("conversations[12].content").fullmatch("conversations[1].content")
    assert compile_glob("*.parquet").fullmatch("deep/dir/x.parquet")


# ---- states: matched, stale, expired ----------------------------------------------------------


@pytest.mark.slow
def test_stale_and_expired_entries_are_reported_and_expired_ones_stop_accepting(tmp_path, ruleset, options):
    data = tmp_path / "data"
    write_trace_shard(data / "s.parquet", [trace_row(instruction=f"T={TOKEN}"), trace_row(instruction=f"H={OTHER}")])
    allow = load_allowlist(
        allowlist_file(
            tmp_path / "allowlist.yaml",
            entry(expires="2026-12-02"),  # the scan's day (FIXED_NOW): still valid through it
            entry(UNUSED_FP),
            entry(fingerprint(OTHER), expires="2026-12-01"),
        )
    )
    report = scan([str(data)], ruleset=ruleset, options=options, allowlist=allow)
    assert locations(report) == {("s.parquet", 0, "instruction"): "allowlisted", ("s.parquet", 1, "instruction"): "new"}
    summary = report.allowlist
    assert (summary.entries, [e.entry for e in summary.matched]) == (3, [1])
    assert [(e.entry, e.line, e.state, e.fingerprint) for e in summary.stale] == [
        (2, 8, "stale", UNUSED_FP)
    ]
    assert [(e.entry, e.state, e.expires, e.findings) for e in summary.expired] == [
        (3, "expired", "2026-12-01", 1)
    ]
    assert [f.blocking for f in report.findings] == [False, True]
    assert report.decision.exit_code == 1
    strict_stale = scan([str(data)], ruleset=ruleset, options=options, allowlist=allow,
                        policy=Policy(fail_on_stale=True, blocking_verdicts=()))
    assert (strict_stale.decision.exit_code, strict_stale.decision.reason) == (
        1, "2 stale or expired allowlist entries",
    )


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The CLI, in this process, from ``tmp_path``: returns (exit code, stderr)."""
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
        return result.exit_code, result.stderr

    return invoke


@pytest.mark.slow
def test_fail_on_stale_changes_the_exit_code_and_default_file_is_found(tmp_path, cli):
    data = tmp_path / "data"
    write_trace_shard(data / "s.parquet", [trace_row(instruction=f"T={TOKEN}")])
    allowlist_file(tmp_path / "allowlist.yaml", entry(), entry(UNUSED_FP))
    out = tmp_path / "r.json"
    base = ("scan", "data", "--now", "2026-12-02", "--format", "json", "--output", str(out))

    code, stderr = cli(*base)  # allowlist.yaml in the current folder is used
    assert code == 0, stderr
    assert stderr == ("shardscan: warning: allowlist.yaml: allowlist entries that accepted nothing: entry #2 (stale, "
                      "line 7); "
                      "--fail-on-stale makes them fail the gate\n")
    report = json.loads(out.read_text())
    assert [f["status"] for f in report["findings"]] == ["allowlisted"]
    assert report["findings"][0]["allowlist"] == {
        "entry": 1, "reason": "test fixture token", "reviewer": "alice", "reviewed": "2026-11-01",
    }
    assert (len(report["allowlist"]["matched"]), report["allowlist"]["stale"][0]["entry"]) == (1, 2)
    assert report["gate"]["passed"] is True

    assert cli(*base, "--fail-on-stale")[0] == 1
    assert json.loads(out.read_text())["gate"]["reason"] == "1 stale or expired allowlist entry"
    assert cli(*base, "--no-allowlist")[0] == 1
    assert json.loads(out.read_text())["allowlist"] is None
    code, stderr = cli(*base, "--allowlist", "nope.yaml")
    assert (code, "nope.yaml: no such allowlist file" in stderr) == (2, True)


# ---- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version: 1\nentries:\n" + entry() + "    note: hi\n", ["allowlist.yaml:7: entry 1: unknown key 'note'"]),
        (
            "version: 1\nentries:\n" + entry() + entry(UNUSED_FP).replace("    reason: test fixture token\n", ""),
            ["allowlist.yaml:7: entry 2: missing 'reason'"],
        ),
        (
            "version: 1\nentries:\n" + entry().replace("    reviewer: alice\n", "    reviewer: ''\n"),
            ["allowlist.yaml:5: entry 1: 'reviewer' must not be empty"],
        ),
        (
            "version: 1\nentries:\n" + entry().replace("reviewer: alice", "reviewer2: alice"),
            ["allowlist.yaml:5: entry 1: unknown key 'reviewer2'", "allowlist.yaml:3: entry 1: missing 'reviewer'"],
        ),
        (
            "version: 1\nentries:\n" + entry(expires="2026-02-30"),
            ["allowlist.yaml:7: entry 1: 'expires' must be a date written YYYY-MM-DD"],
        ),
        (
            "version: 1\nentries:\n" + entry().replace("2026-11-01", "'01/11/2026'"),
            ["allowlist.yaml:6: entry 1: 'reviewed' must be a date written YYYY-MM-DD"],
        ),
        (
            "version: 1\nentries:\n" + entry() + entry(UNUSED_FP) + entry(),
            ["allowlist.yaml:11: entry 3: duplicate of entry 1 (line 3): same fingerprint, rule, shard and column"],
        ),
        ("version: 2\nentries: []\n", ["allowlist.yaml:1: unsupported version (this shardscan reads version 1)"]),
        ("entries: []\nextra: 1\n", ["allowlist.yaml:2: unknown key 'extra'",
                                     "allowlist.yaml:1: missing 'version: 1'"]),
        ("version: 1\nentries:\n  - fingerprint: [a\n", ["allowlist.yaml:4: not valid YAML"]),
        (
            "version: 1\nentries:\n" + entry("0" * 64),
            ["allowlist.yaml:3: entry 1: 'fingerprint' needs the 'sha256:' prefix, as in the report"],
        ),
        (
            "version: 1\nentries:\n" + entry(row="-2"),
            ["allowlist.yaml:7: entry 1: 'row' must be a row index (>= 0, -1 for file metadata) or a location string"],
        ),
    ],
)
def test_malformed_files_name_file_line_and_entry(text, expected):
    with pytest.raises(AllowlistError) as err:
        parse_allowlist(text, "allowlist.yaml")
    for message in expected:
        assert any(p.startswith(message) for p in err.value.problems), err.value.problems
    assert len(err.value.problems) == len(expected)


@pytest.mark.parametrize("secret", [TOKEN, expand("{{jwt}}", seed="al"), expand("{{aws_id:AKIA}}", seed="al"),
                                    expand("{{openai}}", seed="al")])
def test_a_raw_credential_instead_of_a_fingerprint_is_refused_without_echoing_it(secret):
    with pytest.raises(AllowlistError) as err:
        parse_allowlist("version: 1\nentries:\n" + entry(f"'{secret}'"), "allowlist.yaml")
    [problem] = err.value.problems
    assert problem.startswith("allowlist.yaml:3: entry 1: 'fingerprint' holds what looks like a raw credential")
    assert secret not in problem and secret[:12] not in problem


def test_a_credential_pasted_into_a_reason_is_refused():
    with pytest.raises(AllowlistError) as err:
        parse_allowlist("version: 1\nentries:\n" + entry(reason=f"'the token {OTHER} is fake'"), "allowlist.yaml")
    assert err.value.problems[0].startswith("allowlist.yaml:4: entry 1: 'reason' looks like it contains a raw")
    assert OTHER not in str(err.value)


def test_valid_file_parses_every_field():
    text = (
        "# reviewed\nversion: 1\nentries:\n"
        + entry(rule="github", shard="'train-*'", column="instruction", expires="2027-01-01", row=7)
        + entry(UNUSED_FP.upper().replace("SHA256", "sha256"), row="'t.parquet row 3, instruction'")
    )
    allow = parse_allowlist(text, "x.yaml")
    first, second = allow.entries
    assert (first.index, first.line, first.rule, first.shard, first.column, first.expires, first.row) == (
        1, 4, "github", "train-*", "instruction", date(2027, 1, 1), 7,
    )
    assert (second.fingerprint, second.row, second.line) == (UNUSED_FP, "t.parquet row 3, instruction", 13)
    assert parse_allowlist("version: 1\nentries:\n", "x").entries == ()


def test_cli_reports_an_invalid_allowlist_as_a_usage_error(tmp_path, cli):
    write_trace_shard(tmp_path / "data" / "s.parquet", [trace_row()])
    (tmp_path / "allowlist.yaml").write_text("version: 1\nentries:\n" + entry() + "    reveiwer: bob\n")
    code, stderr = cli("scan", "data")
    assert code == 2
    assert "allowlist.yaml:7: entry 1: unknown key 'reveiwer'" in stderr


# ---- hostile input ----------------------------------------------------------------------------

VALID = "version: 1\nentries:\n" + entry(rule="github", shard="'a-*'") + entry(UNUSED_FP, expires="2027-01-01")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=VALID.count("\n") - 1), max_size=4), st.text(max_size=30))
def test_any_edit_of_a_valid_file_parses_or_fails_with_an_allowlist_error(drop, noise):
    lines = VALID.split("\n")
    for i in sorted(set(drop), reverse=True):
        lines[i] = noise if i % 2 else lines[i].replace(":", noise, 1)
    try:
        allow = parse_allowlist("\n".join(lines), "f.yaml")
    except AllowlistError as err:
        assert all(p.startswith("f.yaml") for p in err.problems)
    else:
        assert all(e.fingerprint.startswith("sha256:") and e.reason and e.reviewer for e in allow.entries)


@pytest.mark.parametrize(
    "text",
    [
        # an alias bomb: the composer shares nodes, and validation never expands them
        "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "version: 1\nentries: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
        "version: 1\nentries: !!python/object/apply:os.system ['false']\n",  # never constructed
        "version: 1\nentries:\n\t- fingerprint: x\n",
        "version: 1\nentries: []\n---\nversion: 1\n",
        "- just\n- a list\n",
        "",
    ],
)
def test_hostile_files_fail_cleanly(text):
    with pytest.raises(AllowlistError) as err:
        parse_allowlist(text, "f.yaml")
    assert all(p.startswith("f.yaml") for p in err.value.problems)


def test_scan_table_reconciles_in_memory_tables(ruleset, options):
    import pyarrow as pa

    from shardscan.api import scan_table

    table = pa.table({"text": [f"a {TOKEN}", "nothing", f"b {OTHER}"]})
    allow = parse_allowlist("version: 1\nentries:\n" + entry(column="text", shard="upload"), "mem.yaml")
    report = scan_table(table, "upload", ruleset=ruleset, options=options, allowlist=allow)
    assert locations(report) == {("upload", 0, "text"): "allowlisted", ("upload", 2, "text"): "new"}
    assert report.allowlist.path == "mem.yaml" and len(report.allowlist.matched) == 1
