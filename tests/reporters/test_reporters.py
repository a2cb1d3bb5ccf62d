"""Every report format: renders, carries the same numbers, escapes hostile data, matches golden files."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from shardscan.model import Status
from shardscan.policy import Policy
from shardscan.reporters import EXTENSIONS, FORMATS, RenderOptions, render
from shardscan.reporters.sarif import FINGERPRINT_KEY
from tests.report_samples import (
    ALLOW_REF,
    FINDINGS,
    MISSING,
    SHARD_A,
    SHARD_B,
    SHARD_BAD,
    SHARD_CLEAN,
    sample_report,
)

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden"
SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def sarif_validate(text: str) -> dict:
    """Parse a SARIF log and validate it against the official OASIS 2.1.0 schema (raises on error)."""
    log = json.loads(text)
    jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)
    return log


# ---- numbers every format carries -------------------------------------------------------------


class _HtmlNumbers(HTMLParser):
    """Collects the finding rows, error rows and summary cards of the HTML report."""

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[dict[str, str]] = []
        self.errors = 0
        self.metrics: dict[str, str] = {}
        self._metric: str | None = None
        self._in_b = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and "finding" in a.get("class", ""):
            self.findings.append(a)
        if tag == "tr" and a.get("class") == "issue":
            self.errors += 1
        if tag == "div" and "data-metric" in a:
            self._metric = a["data-metric"]
        if tag == "b" and self._metric:
            self._in_b = True

    def handle_data(self, data: str) -> None:
        if self._in_b and self._metric:
            self.metrics[self._metric] = data
            self._in_b = False
            self._metric = None


def numbers(fmt: str, text: str) -> dict[str, int]:
    """(findings, blocking, shards, errors) as each format states them, parsed from its own syntax."""
    if fmt == "json":
        d = json.loads(text)
        assert d["summary"]["findings"] == len(d["findings"])
        return {"findings": len(d["findings"]), "blocking": sum(f["blocking"] for f in d["findings"]),
                "shards": d["scanned"]["shards"], "errors": len(d["errors"])}
    if fmt == "jsonl":
        lines = [json.loads(line) for line in text.splitlines()]
        assert lines[-1]["type"] == "summary" and all(line["type"] != "summary" for line in lines[:-1])
        fs = [line for line in lines if line["type"] == "finding"]
        return {"findings": len(fs), "blocking": sum(f["blocking"] for f in fs),
                "shards": lines[-1]["scanned"]["shards"], "errors": sum(line["type"] == "error" for line in lines)}
    if fmt == "sarif":
        run = json.loads(text)["runs"][0]
        notes = run["invocations"][0].get("toolExecutionNotifications", [])
        return {"findings": len(run["results"]), "blocking": sum(r["properties"]["blocking"] for r in run["results"]),
                "shards": run["properties"]["scanned"]["shards"], "errors": len(notes)}
    if fmt == "junit":
        suite = ET.fromstring(text).find("testsuite")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        return {k: int(props[k]) for k in ("findings", "blocking", "shards", "errors")}
    if fmt == "html":
        parser = _HtmlNumbers()
        parser.feed(text)
        assert int(parser.metrics["findings"]) == len(parser.findings)
        assert int(parser.metrics["errors"]) == parser.errors
        return {"findings": len(parser.findings),
                "blocking": sum(f["data-blocking"] == "true" for f in parser.findings),
                "shards": int(parser.metrics["shards"]), "errors": parser.errors}
    if fmt == "markdown":
        table = dict(re.findall(r"^\| (shards|findings|blocking|errors) \| (\d+) \|$", text, re.M))
        rows = re.findall(r"^\| [a-z0-9-]+ \| train-\S+ \| -?\d+ \|", text, re.M)
        assert len(rows) == int(table["findings"])
        return {k: int(v) for k, v in table.items()}
    if fmt == "terminal":
        m = re.search(r"findings: (\d+) \(.*\); blocking: (\d+); allowlisted: \d+; errors: (\d+)", text, re.S)
        shards = re.search(r"scanned (\d+) shard\(s\)", text)
        return {"findings": int(m[1]), "blocking": int(m[2]), "shards": int(shards[1]), "errors": int(m[3])}
    if fmt == "compact":
        m = re.match(r"shardscan: (\d+) shard\(s\).*; findings: (\d+), blocking: (\d+), errors: (\d+)$",
                     text.splitlines()[0])
        items = [line.split()[0] for line in text.splitlines()[1:-1]]
        assert len(items) == int(m[2]) + int(m[4])
        assert items.count("BLOCKING") == int(m[3]) and items.count("ERROR") == int(m[4])
        return {"findings": int(m[2]), "blocking": int(m[3]), "shards": int(m[1]), "errors": int(m[4])}
    if fmt == "card":
        shards = re.search(r"^\| Shards \| (\d+)", text, re.M)
        blocking = re.search(r"^(\d+) blocking finding\(s\) must be removed", text, re.M)
        return {"shards": int(shards[1]), "blocking": int(blocking[1]) if blocking else 0}
    raise AssertionError(f"no number parser for format {fmt!r}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_the_sample(fmt):
    text = render(sample_report(), fmt)
    assert text.strip()
    assert fmt in EXTENSIONS
    # Previews and the gate outcome reach every human format; identifiers reach every machine format.
    if fmt != "card":
        assert ("git\\_…(41)" if fmt == "markdown" else "git_…(41)") in text
    assert ("FAIL" in text or "Failed" in text) if fmt in ("terminal", "markdown", "html", "card") else True


def test_every_format_carries_the_same_numbers():
    report = sample_report()
    expected = {"findings": 7, "blocking": 3, "shards": 4, "errors": 3}
    for fmt in FORMATS:
        got = numbers(fmt, render(report, fmt))
        assert got == {k: expected[k] for k in got}, fmt


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_a_scan_of_nothing(fmt):
    """Every path missing: no shards, no findings, one error. Nothing divides by zero; exit 3 is stated."""
    from dataclasses import replace

    from shardscan.model import ScanIssue, ScanStats

    report = replace(sample_report(), stats=ScanStats(), findings=(), shards=(), allowlist=None,
                     issues=(ScanIssue("data/", "unreadable", "no such file, folder or glob match"),))
    text = render(report, fmt)
    assert numbers(fmt, text) == {k: v for k, v in {"findings": 0, "blocking": 0, "shards": 0, "errors": 1}.items()
                                  if k in numbers(fmt, text)}
    if fmt == "sarif":
        assert sarif_validate(text)["runs"][0]["invocations"][0]["exitCode"] == 3


def test_terminal_many_clean_shards_are_summarised():
    from dataclasses import replace

    from shardscan.report import ShardSummary

    shards = tuple(ShardSummary(f"s{i:03d}.parquet", s.stats, 0, 0, 0) for i,
                   s in enumerate(sample_report().shards * 10))
    report = replace(sample_report(), findings=(), issues=(), allowlist=None, shards=shards)
    text = render(report, "terminal")
    assert "Shards: all 40 clean and read completely" in text
    assert "s001.parquet" not in text


@pytest.mark.parametrize("seed", range(40))
def test_pretty_json_is_byte_identical_to_json_dumps(seed):
    """The JSON and SARIF reports' fast printer writes exactly what json.dumps(indent=2) writes."""
    import enum
    import random

    from shardscan.reporters._common import pretty_json

    class Level(enum.IntEnum):
        HIGH = 3

    class Word(str, enum.Enum):  # noqa: UP042 -- the mixin form on purpose, as older code and libraries write it
        VALID = "valid"

    rng = random.Random(seed)
    scalars = [None, True, False, 0, -7, 2**70, 1.5, -0.0, 1e300, float("nan"), float("inf"), float("-inf"),
               "", "plain", 'quote " and \\ back', "line\nbreak\ttab\x00\x1f", "é ✓ 𝄞 \u2028", Level.HIGH,
               Word.VALID, [], {}, ()]

    def build(depth: int) -> object:
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(scalars)
        if roll < 0.7:
            items = [build(depth + 1) for _ in range(rng.randrange(4))]
            return items if rng.random() < 0.8 else tuple(items)
        keys = ["k", "é", "", "a b", 'q"uote', 3, 1.5, True, None, False, Level.HIGH]
        return {rng.choice(keys): build(depth + 1) for _ in range(rng.randrange(5))}

    for _ in range(25):
        value = build(0)
        assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False)
    with pytest.raises(TypeError):
        pretty_json({"when": object()})
    with pytest.raises(TypeError):
        pretty_json([{"nested": [1, object()]}])


def test_json_and_sarif_reports_are_what_json_dumps_writes():
    for fmt in ("json", "sarif"):
        text = render(sample_report(), fmt)
        assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


def test_registry_rejects_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render(sample_report(), "pdf")


# ---- SARIF -------------------------------------------------------------------------------------


def test_sarif_validates_and_maps_every_part():
    log = sarif_validate(render(sample_report(), "sarif"))
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [
        "github-pat", "jwt", "private-key", "aws-access-key-id", "openai-api-key",
    ]
    assert driver["rules"][0]["fullDescription"]["text"] == ("Grants the token owner's access to GitHub repositories "
                                                             "and APIs.")
    assert driver["rules"][0]["properties"]["severity"] == "critical"
    results = run["results"]
    assert [r["ruleId"] for r in results] == [f.rule_id for f in FINDINGS]
    for result, finding in zip(results, FINDINGS, strict=True):
        assert driver["rules"][result["ruleIndex"]]["id"] == finding.rule_id
        assert result["partialFingerprints"][FINGERPRINT_KEY] == finding.fingerprint
        loc = result["locations"][0]
        assert loc["physicalLocation"]["artifactLocation"]["uri"] == finding.location.shard
        assert loc["physicalLocation"]["region"]["startLine"] == finding.location.row + 1
        assert loc["logicalLocations"][0]["name"] == finding.location.column
        assert (result["properties"]["row"], result["properties"]["column"]) == (
            finding.location.row, finding.location.column)
    assert [r["level"] for r in results] == ["error", "error", "error", "warning", "note", "note", "note"]
    suppressed = [r for r in results if "suppressions" in r]
    assert len(suppressed) == 1 and suppressed[0]["properties"]["row"] == 4
    assert suppressed[0]["suppressions"] == [{
        "kind": "external", "status": "accepted", "justification": ALLOW_REF.reason,
        "properties": {"allowlistEntry": 1, "reviewer": "dana", "reviewed": "2026-11-30"},
    }]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 3
    notes = invocation["toolExecutionNotifications"]
    assert [(n["descriptor"]["id"], n["properties"]["shard"]) for n in notes] == [
        ("shardscan/unreadable", MISSING), ("shardscan/unreadable", SHARD_BAD), ("shardscan/limit", SHARD_B),
    ]
    # A glob that matched nothing is still a valid relative URI reference.
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "extra/missing-%2A.parquet"
    config = invocation["toolConfigurationNotifications"]
    assert [n["descriptor"]["id"] for n in config] == ["shardscan/allowlist-stale", "shardscan/allowlist-expired"]


def test_sarif_of_a_clean_scan_validates_and_succeeds():
    from dataclasses import replace

    report = replace(sample_report(), findings=(), issues=(), allowlist=None)
    log = sarif_validate(render(report, "sarif"))
    invocation = log["runs"][0]["invocations"][0]
    assert log["runs"][0]["results"] == []
    assert invocation["executionSuccessful"] is True and invocation["exitCode"] == 0
    assert "toolExecutionNotifications" not in invocation


# ---- JSONL, JUnit, terminal ----------------------------------------------------------------------


def test_jsonl_is_one_finding_per_line_then_errors_then_summary():
    lines = [json.loads(line) for line in render(sample_report(), "jsonl").splitlines()]
    assert [line["type"] for line in lines] == ["finding"] * 7 + ["error"] * 3 + ["summary"]
    assert [(f["shard"], f["row"], f["column"]) for f in lines[:7]] == [
        (f.location.shard, f.location.row, f.location.column) for f in FINDINGS
    ]
    assert lines[-1]["gate"] == {"passed": False, "exit_code": 3, "reason": "scan incomplete: 3 problem(s) in "
        "extra/missing-*.parquet, train-00001-of-00004.parquet, train-00002-of-00004.parquet"}


def test_junit_has_one_test_case_per_shard_failing_or_erroring_as_the_gate_would():
    root = ET.fromstring(render(sample_report(), "junit"))
    suite = root.find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert sorted(cases) == sorted([MISSING, SHARD_A, SHARD_B, SHARD_BAD, SHARD_CLEAN])
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "3")
    assert cases[SHARD_A].find("failure").get("message") == "3 blocking finding(s)"
    assert cases[SHARD_A].find("error") is None
    assert cases[SHARD_BAD].find("error").get("type") == "unreadable"
    assert cases[MISSING].find("error") is not None
    assert cases[SHARD_B].find("error").get("type") == "limit"  # incomplete beats non-blocking findings
    assert list(cases[SHARD_CLEAN]) == []  # a clean shard passes
    # The hostile column's control character cannot be carried by XML 1.0: it is replaced, the XML parses.
    assert "\ufffd" in cases[SHARD_B].find("system-out").text


def test_terminal_quiet_is_just_the_decision_line():
    text = render(sample_report(), "terminal", RenderOptions(quiet=True))
    assert text == ("gate: FAIL (exit 3): scan incomplete: 3 problem(s) in extra/missing-*.parquet, "
                    "train-00001-of-00004.parquet, train-00002-of-00004.parquet\n")


def test_terminal_plain_has_no_escape_codes_and_color_has_them():
    plain = render(sample_report(), "terminal", RenderOptions(color=False, width=300))
    colored = render(sample_report(), "terminal", RenderOptions(color=True, width=300))
    assert "\x1b[" not in plain
    assert "\x1b[" in colored
    # Hostile data is shown literally (never parsed as rich markup); its control character is dropped.
    assert "meta{<script>alert(1)</script>|*x*[y](z)]]>`}" in plain


def test_terminal_sections_and_why():
    text = render(sample_report(), "terminal", RenderOptions(width=200))
    assert "Shards" in text and "github: 1 finding(s)" in text and "private-key: 2 finding(s)" in text
    assert "  [unreadable] train-00002-of-00004.parquet: not a Parquet file (bad magic bytes)" in text
    assert "stale (matched nothing): entry 2 (line 17), rule=github-pat" in text
    assert "expired: entry 3 (line 24), rule=jwt" in text
    assert ("train-00000-of-00004.parquet:4  verifier_output\n    jwt  expired  allowlisted  jwt_…(44)\n"
            "    expired because of check 4\n    allowlisted by entry #1, reviewed by dana on 2026-11-30: ") in text
    assert text.splitlines()[-5:] == [
        "gate: FAIL (exit 3): scan incomplete: 3 problem(s) in extra/missing-*.parquet, train-00001-of-00004.parquet, "
        "train-00002-of-00004.parquet",
        "  why: blocking verdicts: valid, unverified, encrypted; allowlisted findings never block",
        "  why: 2 unreadable problem(s): exit 3: an unread shard cannot be certified clean",
        "  why: 1 limit(s) hit: exit 3, part of the data was not fully scanned",
        "  why: 1 stale and 1 expired allowlist entr(ies): reported, not failing",
    ]


def test_use_color_respects_tty_and_no_color(monkeypatch):
    from shardscan.cli.output import use_color

    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color() is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color() is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert use_color() is False


# ---- HTML (static checks; the browser checks are in test_reporters_html.py) ----------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, set[str]]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.seen.append((tag, {k for k, _ in attrs}))


def test_html_is_self_contained_and_escapes_hostile_data():
    text = render(sample_report(), "html")
    assert "<script>alert(1)" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # No network: nothing to fetch (no src/href attributes, no embedding tags, no CSS url()); the
    # Content-Security-Policy forbids fetches anyway.
    tags = _Tags()
    tags.feed(text)
    assert not {"link", "iframe", "img", "object", "embed", "base", "frame"} & {t for t, _ in tags.seen}
    assert not [(t, a) for t, attrs in tags.seen for a in attrs if a in ("src", "href", "action", "srcset", "poster")]
    assert "url(" not in text and "@import" not in text
    assert "default-src 'none'" in text
    assert text.count("<script>") == 2  # the error marker in <head>, the table behaviour at the end


def test_markdown_escapes_hostile_data():
    text = render(sample_report(), "markdown")
    assert "<script>" not in text and "\x07" not in text
    assert r"meta{\<script\>alert(1)\</script\>\|\*x\*\[y\](z)\]\]\>\`}" in text


# ---- golden files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "name"), [("markdown", "sample.md"), ("card", "sample-card.md")])
def test_golden(fmt, name):
    """Set SHARDSCAN_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change (review the diff)."""
    text = render(sample_report(), fmt)
    path = GOLDEN / name
    if os.environ.get("SHARDSCAN_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_card_lists_every_allowlisted_row_and_never_a_preview():
    text = render(sample_report(), "card")
    accepted = [f for f in FINDINGS if f.status == Status.ALLOWLISTED]
    for f in accepted:
        assert f"| {f.location.shard} | {f.location.row} | verifier\\_output |" in text
        assert f.allowlist.reason in text
    for f in FINDINGS:
        assert f.preview not in text and f.fingerprint not in text


def test_card_under_strict_policy_says_failed():
    text = render(sample_report(Policy(strict=True)), "card")
    assert "| Result | **Failed**: scan incomplete" in text
    assert "6 blocking finding(s) must be removed before publication." in text


def test_terminal_lists_many_findings_as_blocks():
    from dataclasses import replace

    from shardscan.reporters.terminal import MAX_TABLE_FINDINGS

    report = sample_report()
    copies = MAX_TABLE_FINDINGS // len(report.findings) + 1
    findings = tuple(replace(f, location=replace(f.location, row=f.location.row + 10 * i, column="c"))
                     for i in range(copies) for f in report.findings)
    text = render(replace(report, findings=findings), "terminal", RenderOptions(width=400))
    assert f"github: {copies} finding(s)\n" in text
    assert "train-00000-of-00004.parquet:10  c  (tool)\n    github-pat  valid  BLOCKING  git_…(41)\n" \
           "    valid because of check 1\n" in text
    assert numbers("terminal", text)["findings"] == len(findings)


def test_html_shard_chart_keeps_the_shards_that_matter_when_there_are_many():
    from dataclasses import replace

    from shardscan.reporters.html import MAX_CHART_SHARDS

    base = sample_report().findings[0]  # one blocking finding
    findings = tuple(replace(base, location=replace(base.location, shard=f"s{i:03d}.parquet"), blocking=i % 10 == 0)
                     for i in range(MAX_CHART_SHARDS + 20))
    text = render(replace(sample_report(), findings=findings, issues=(), allowlist=None), "html")
    charted = set(re.findall(r'<rect data-shard="([^"]+)"', text))
    assert len(charted) == MAX_CHART_SHARDS
    assert {f"s{i:03d}.parquet" for i in range(0, MAX_CHART_SHARDS + 20, 10)} <= charted  # every blocking shard
    assert "… and 20 more shard(s) with fewer findings" in text
