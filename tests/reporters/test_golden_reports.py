"""Every output format of three fixed reports, byte for byte against ``tests/data/golden/reports/``.

The reports (``full``, ``clean``, ``empty``) are built in ``tests/report_samples.py``, which is also the
one place where everything that would differ between runs (clock, durations, tool version, ruleset
digest, paths) is fixed. After an intended change to a reporter, regenerate and review the diff:

    SHARDSCAN_UPDATE_GOLDEN=1 python -m pytest tests/reporters/test_golden_reports.py

Without the variable a difference, or a missing golden file, fails: nothing is written.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import jsonschema
import pytest

from shardscan.model import Status, Verdict
from shardscan.policy import Policy
from shardscan.reporters import EXTENSIONS, FORMATS, RenderOptions, render
from shardscan.reporters._common import gate_why
from tests.report_samples import GOLDEN_REPORTS, GOLDEN_SECRETS, ISSUE_KINDS, full_report

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden" / "reports"
UPDATE = bool(os.environ.get("SHARDSCAN_UPDATE_GOLDEN"))
# What ``--output FILE`` writes: no colour, lines not folded, 120 columns for the terminal layout
# (the terminal layout at other widths and on a terminal has its own snapshots in golden/terminal/).
OPTIONS = RenderOptions()
REGENERATE = "SHARDSCAN_UPDATE_GOLDEN=1 python -m pytest tests/reporters/test_golden_reports.py"


def golden_path(name: str, fmt: str) -> Path:
    """``reports/<report>/<format><extension>``: one folder per report, one file per format."""
    return GOLDEN / name / f"{fmt}{EXTENSIONS[fmt]}"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", list(GOLDEN_REPORTS))
def test_every_format_matches_its_golden_file(name: str, fmt: str) -> None:
    data = render(GOLDEN_REPORTS[name](), fmt, OPTIONS).encode("utf-8")
    path = golden_path(name, fmt)
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert path.is_file(), f"no golden file {path.relative_to(DATA.parent)}: run {REGENERATE}"
    # Bytes, not text: reading text would translate line endings a reporter must not emit.
    expected = path.read_bytes()
    hint = f"{name} {fmt} differs from its golden file; if the change is intended, run {REGENERATE} and review the diff"
    assert data.decode("utf-8") == expected.decode("utf-8"), hint


def test_the_golden_folder_holds_only_current_reports() -> None:
    """A renamed or removed format or report leaves no stale golden file behind."""
    expected = {golden_path(name, fmt) for name in GOLDEN_REPORTS for fmt in FORMATS}
    assert set(p for p in GOLDEN.rglob("*") if p.is_file()) == expected


def test_the_golden_reports_reach_every_verdict_status_and_issue_kind() -> None:
    """A new verdict, status or issue kind must be added to the golden reports to be covered."""
    reports = [build() for build in GOLDEN_REPORTS.values()]
    full = full_report()
    assert {f.verdict for f in full.findings} == set(Verdict)
    assert {f.status for f in full.findings} == set(Status)
    assert {str(i.kind) for r in reports for i in r.issues} == set(ISSUE_KINDS)
    assert [r.exit_code for r in reports] == [3, 0, 3]
    assert any(f.count > 1 for f in full.findings) and any(f.rule_id == "known-secret" for f in full.findings)
    assert full.files is not None and full.files.not_scanned and full.files.excluded and full.known_secrets
    assert full.allowlist is not None and full.allowlist.matched and full.allowlist.stale and full.allowlist.expired


def _leak_forms(secret: str) -> set[str]:
    """The secret as each output syntax would spell it if a reporter printed it."""
    escaped = secret.replace("\r", "\\r").replace("\n", "\\n")
    return {secret, escaped, json.dumps(secret)[1:-1], html.escape(secret), html.escape(escaped)}


def _windows(secret: str, size: int = 16) -> set[str]:
    """Every run of ``size`` characters of the secret that is not PEM armour (a header is no secret)."""
    body = "".join(line for line in secret.splitlines() if not line.startswith("-----"))
    return {body[i:i + size] for i in range(len(body) - size + 1)}


def test_no_golden_file_holds_a_secret_of_the_reports() -> None:
    """Reports carry previews and fingerprints only: no golden file (these, the Markdown and card
    samples, the terminal snapshots) holds a secret whole, escaped, or any 16 characters of one."""
    files = [p for p in (DATA / "golden").rglob("*") if p.is_file()]
    assert len(files) > len(GOLDEN_REPORTS) * len(FORMATS)
    for path in files:
        text = path.read_text(encoding="utf-8")
        for secret in GOLDEN_SECRETS:
            # A count, not the forms: a failure message must not print what it found.
            leaked = sum(form in text for form in _leak_forms(secret) | _windows(secret))
            assert leaked == 0, f"{path.name} holds part of a secret ({leaked} form(s))"


@pytest.mark.parametrize("name", list(GOLDEN_REPORTS))
def test_the_sarif_golden_files_are_valid_sarif(name: str) -> None:
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    log = json.loads(golden_path(name, "sarif").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)


@pytest.mark.parametrize("name", list(GOLDEN_REPORTS))
def test_the_json_golden_files_state_the_gate_of_their_report(name: str) -> None:
    """The JSON golden files are the contract: their gate block is the report's decision."""
    report = GOLDEN_REPORTS[name]()
    gate = json.loads(golden_path(name, "json").read_text(encoding="utf-8"))["gate"]
    assert gate == {"passed": report.decision.passed, "exit_code": report.exit_code, "reason": report.decision.reason}


def test_a_finding_cap_allowed_by_the_policy_is_not_explained_as_exit_3() -> None:
    report = full_report(Policy(allow_truncated_findings=True))
    why = [line for line in gate_why(report) if "finding cap" in line]
    assert why == ["1 finding cap(s) hit: reported but not failing (--allow-truncated-findings)"]
