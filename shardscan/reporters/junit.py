"""JUnit XML report, for CI test dashboards: one test case per shard.

A shard's test case fails when it has blocking findings and errors when it could not be read
completely (unreadable data or a limit hit); otherwise it passes. Non-blocking findings are listed
in the case's ``system-out`` so a dashboard still shows them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from shardscan.model import Finding
from shardscan.report import Report
from shardscan.reporters._common import issue_where, shard_rows, summary_numbers

# XML 1.0 cannot carry most control characters even escaped; scanned data can contain them.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _x(text: object) -> str:
    return _XML_INVALID.sub("\ufffd", str(text))


def render(report: Report, _options: object = None) -> str:
    """The JUnit XML document (one ``testsuite`` named shardscan inside ``testsuites``)."""
    rows = shard_rows(report)
    by_shard: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_shard.setdefault(f.location.shard, []).append(f)
    failures = sum(1 for r in rows if r.blocking and not r.issues)
    errors = sum(1 for r in rows if r.issues)
    n = summary_numbers(report)
    suites = ET.Element("testsuites", name="shardscan", tests=str(len(rows)), failures=str(failures),
                        errors=str(errors), time=f"{report.stats.seconds:.3f}")
    suite = ET.SubElement(
        suites, "testsuite", name="shardscan", tests=str(len(rows)), failures=str(failures), errors=str(errors),
        skipped="0", time=f"{report.stats.seconds:.3f}", timestamp=report.scanned_at.isoformat(timespec="seconds"),
    )
    props = ET.SubElement(suite, "properties")
    decision = report.decision
    for name, value in (
        ("shardscan.version", report.tool_version), ("shardscan.ruleset", report.ruleset_digest),
        ("gate.exit_code", decision.exit_code), ("gate.reason", decision.reason),
        ("findings", n["findings"]), ("blocking", n["blocking"]), ("allowlisted", n["allowlisted"]),
        ("errors", n["errors"]), ("shards", n["shards"]),
    ):
        ET.SubElement(props, "property", name=name, value=_x(value))
    if report.files is not None:  # each not-scanned file is also a testcase with an error (an issue)
        for name, value in (
            ("files.scanned", report.files.scanned), ("files.excluded", report.files.excluded_total),
            ("files.not_scanned", len(report.files.not_scanned)), ("files.summary", report.files.summary()),
        ):
            ET.SubElement(props, "property", name=name, value=_x(value))
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname="shardscan.shards", name=_x(r.shard), time="0")
        findings = by_shard.get(r.shard, [])
        lines = [
            f"{f.rule_id} {f.verdict} {f.status}{' BLOCKING' if f.blocking else ''} row {f.location.row} "
            f"{f.location.column} {f.preview} {f.fingerprint}: {f.detail}"
            for f in findings
        ]
        if r.issues:
            err = ET.SubElement(case, "error", type=r.issues[0].kind,
                                message=_x(f"{len(r.issues)} problem(s): shard not fully scanned"))
            err.text = _x("\n".join(f"[{i.kind}] {issue_where(i)}: {i.message}" for i in r.issues))
        elif r.blocking:
            fail = ET.SubElement(case, "failure", type="blocking-findings",
                                 message=_x(f"{r.blocking} blocking finding(s)"))
            fail.text = _x("\n".join(line for line, f in zip(lines, findings, strict=True) if f.blocking))
        if lines:
            ET.SubElement(case, "system-out").text = _x("\n".join(lines))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
