"""Every member of every closed vocabulary (verdict, issue kind, severity, status) through every format.

Modelled on pip-audit's format tests: a report holding the member renders in every format, and the
member's text appears in each format that shows that field. A member added to an enum without a
reporter handling it (a colour, a legend, a SARIF level) fails here rather than in a user's report.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum

import pytest

from shardscan.model import IssueKind, ScanIssue, Severity, Status, Verdict
from shardscan.report import VERDICTS, EntryState
from shardscan.reporters import EXTENSIONS, FORMATS, MODULES, OutputFormat, html, render, sarif, terminal
from shardscan.reporters._common import VERDICT_MEANING
from tests.report_samples import ALLOW_REF, FINDINGS, sample_report

# Which vocabularies each format writes out per finding or issue. The card is a dataset-card
# summary (counts and families, no per-finding fields); the terminal and compact layouts leave out
# the severity, and the terminal marks only allowlisted findings.
SHOWN: dict[str, tuple[type[StrEnum], ...]] = {
    "terminal": (Verdict, IssueKind),
    "json": (Verdict, IssueKind, Severity, Status),
    "jsonl": (Verdict, IssueKind, Severity, Status),
    "sarif": (Verdict, IssueKind, Severity, Status),
    "markdown": (Verdict, IssueKind, Status),
    "html": (Verdict, IssueKind, Severity, Status),
    "card": (),
    "junit": (Verdict, IssueKind, Status),
    "compact": (Verdict, IssueKind),
}

MEMBERS = [pytest.param(member, id=f"{type(member).__name__}.{member.name}")
           for enum in (Verdict, IssueKind, Severity, Status) for member in enum]


def _report_with(member: StrEnum):
    """The sample report reduced to one finding (or one issue) carrying ``member``."""
    base = sample_report()
    finding = FINDINGS[0]
    if isinstance(member, IssueKind):
        return replace(base, findings=(), issues=(ScanIssue("train-00009.parquet", member, "what went wrong"),))
    if isinstance(member, Verdict):
        finding = replace(finding, verdict=member)
    elif isinstance(member, Severity):
        finding = replace(finding, severity=member)
    elif isinstance(member, Status):
        finding = replace(finding, status=member, blocking=False,
                          allowlist=ALLOW_REF if member == Status.ALLOWLISTED else None)
    return replace(base, findings=(finding,), issues=())


def test_every_format_is_a_member_with_a_module_and_an_extension():
    assert tuple(str(f) for f in OutputFormat) == FORMATS
    assert set(MODULES) == set(OutputFormat) == set(EXTENSIONS) == set(SHOWN)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("member", MEMBERS)
def test_every_member_renders_in_every_format(fmt, member):
    text = render(_report_with(member), fmt)
    assert text
    if type(member) in SHOWN[fmt]:
        assert str(member) in text


def test_every_verdict_and_severity_is_handled_by_the_reporters_tables():
    verdicts, severities = set(Verdict), set(Severity)
    assert set(VERDICTS) == verdicts and list(VERDICTS) == [str(v) for v in Verdict]
    assert set(VERDICT_MEANING) == verdicts
    assert set(html.VERDICT_COLOR) == verdicts
    assert set(terminal._VERDICT_STYLE) == verdicts
    assert set(html._SEVERITY_RANK) == severities
    assert set(sarif._SEVERITY_LEVEL) == severities
    assert set(sarif._SECURITY_SEVERITY) == severities


def test_enum_members_are_written_as_their_text():
    # Reports, caches and digests predate the enums: a member must read exactly as the string did.
    for enum in (Verdict, IssueKind, Severity, Status, EntryState, OutputFormat):
        for member in enum:
            assert f"{member}" == str(member) == member.value and member == member.value


def test_an_issue_kind_given_as_text_becomes_the_member_and_an_unknown_one_is_refused():
    assert type(ScanIssue("s.parquet", "limit", "m").kind) is IssueKind
    with pytest.raises(ValueError):
        ScanIssue("s.parquet", "lmit", "m")
