"""SARIF 2.1.0 report, for CI code-scanning services (e.g. GitHub's upload-sarif action).

Mapping decisions (the SARIF spec has no notion of a table cell):

* one run; one ``reportingDescriptor`` per shardscan rule (id, name, description, severity);
* each finding is a ``result``: the shard is the ``artifactLocation`` (relative URI under
  ``%SRCROOT%``); the row and column path are a logical location (``shard[row].column``) and
  properties. GitHub's code scanning only places results that have ``region.startLine``, and a
  Parquet file has no lines, so ``region.startLine`` holds the 1-based row (row 0 -> line 1;
  file metadata, row -1, -> line 1); the exact row is always in the properties; in a text file
  the row is the line and ``region.startColumn`` the finding's first character;
* ``partialFingerprints`` carry our fingerprint (a hash of the secret, so an alert follows the
  secret when rows move). It is also given as ``primaryLocationLineHash`` so GitHub does not try
  to hash "lines" of a binary Parquet file itself;
* allowlisted findings carry an ``external`` ``accepted`` suppression whose justification is the
  reviewed reason;
* unreadable shards and limits hit are ``toolExecutionNotifications`` of the invocation, which
  is marked unsuccessful when the scan is incomplete (exit 3); stale or expired allowlist entries
  are ``toolConfigurationNotifications``.
"""

from __future__ import annotations

from urllib.parse import quote

from shardscan.model import Finding, ScanIssue, Severity, Status, Verdict
from shardscan.report import JsonObject, Report
from shardscan.reporters._common import entry_text, files_dict, pretty_json, summary_numbers

# The column of text-file cells (shardscan.filescan.TEXT_COLUMN; reporters import no engine module).
TEXT_COLUMN = "__text__"
SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "shardscan/secretSha256/v1"

# SARIF ``level`` per rule severity (the rule default) ...
_SEVERITY_LEVEL: dict[str, str] = {
    Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning",
    Severity.LOW: "note", Severity.INFO: "note",
}
# ... and GitHub's ``security-severity`` score, which drives its critical/high/medium/low labels.
_SECURITY_SEVERITY: dict[str, str] = {
    Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "3.0", Severity.INFO: "1.0",
}


def _uri(shard: str) -> str:
    # A relative URI reference: percent-encode everything but path separators, so odd shard names
    # (spaces, '#', '?') stay one path and the result still validates as a URI reference.
    return quote(shard.replace("\\", "/"), safe="/")


def _level(finding: Finding, report: Report) -> str:
    """``error`` for what the policy treats as blocking (before allowlisting), ``warning`` for expired
    credentials, ``note`` for the rest (invalid, example, redacted)."""
    policy = report.policy
    if finding.blocking or policy.strict or finding.verdict in policy.blocking_verdicts:
        return "error"
    return "warning" if finding.verdict == Verdict.EXPIRED else "note"


def _region(finding: Finding) -> JsonObject:
    """The 1-based row as the line; in a text file (column ``__text__``) the row is the line and
    ``start`` the character in it, so the region is exact."""
    region = {"startLine": max(finding.location.row, 0) + 1}
    if finding.location.column == TEXT_COLUMN:
        region["startColumn"] = finding.start + 1
    return region


def _result(finding: Finding, rule_index: dict[str, int], report: Report) -> JsonObject:
    loc = finding.location
    where = f"{loc.shard} row {loc.row} {loc.column}" + (f" (role {loc.role})" if loc.role else "")
    text = f"{finding.kind} credential ({finding.verdict}: {finding.detail}) {finding.preview} at {where}"
    result: JsonObject = {
        "ruleId": finding.rule_id,
        "level": _level(finding, report),
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(loc.shard), "uriBaseId": "%SRCROOT%"},
                    "region": _region(finding),
                },
                "logicalLocations": [
                    {
                        "name": loc.column,
                        "fullyQualifiedName": f"{loc.shard}[{loc.row}].{loc.column}",
                        "kind": "member",
                    }
                ],
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint, "primaryLocationLineHash": finding.fingerprint},
        "properties": {
            "shard": loc.shard,
            "row": loc.row,
            "column": loc.column,
            "role": loc.role,
            "start": finding.start,
            "end": finding.end,
            "kind": finding.kind,
            "severity": finding.severity,
            "verdict": str(finding.verdict),
            "detail": finding.detail,
            "encoding": list(finding.encoding),
            "preview": finding.preview,
            "fingerprint": finding.fingerprint,
            "context": finding.context,
            "blocking": finding.blocking,
            "status": str(finding.status),
        },
    }
    if finding.rule_id in rule_index:
        result["ruleIndex"] = rule_index[finding.rule_id]
    if finding.status == Status.ALLOWLISTED:
        allow = finding.allowlist
        suppression: JsonObject = {"kind": "external", "status": "accepted"}
        if allow is not None:
            suppression["justification"] = allow.reason
            suppression["properties"] = {
                "allowlistEntry": allow.entry, "reviewer": allow.reviewer, "reviewed": allow.reviewed,
            }
        result["suppressions"] = [suppression]
    return result


def _issue_notification(issue: ScanIssue) -> JsonObject:
    where = issue.shard
    if issue.row_group is not None:
        where += f" row group {issue.row_group}"
    if issue.row is not None:
        where += f" row {issue.row}"
    note: JsonObject = {
        "level": "error",
        "message": {"text": f"{issue.kind}: {where}: {issue.message}"},
        "descriptor": {"id": f"shardscan/{issue.kind}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(issue.shard), "uriBaseId": "%SRCROOT%"}}}],
        "properties": {
            "shard": issue.shard, "kind": issue.kind, "row_group": issue.row_group, "row": issue.row,
            "column": issue.column,
        },
    }
    return note


def sarif_dict(report: Report) -> JsonObject:
    """The SARIF log as plain data."""
    rules = list(report.rules)
    known = {r.id for r in rules}
    rule_index = {r.id: i for i, r in enumerate(rules)}
    descriptors = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.name},
            "fullDescription": {"text": r.description or r.name},
            "help": {"text": f"{r.description} Remove or rotate the credential, or accept it with a reviewed allowlist "
                             "entry."},
            "defaultConfiguration": {"level": _SEVERITY_LEVEL.get(r.severity, "warning")},
            "properties": {
                "kind": r.kind,
                "severity": r.severity,
                "security-severity": _SECURITY_SEVERITY.get(r.severity, "5.0"),
                "tags": ["security", "secret", r.kind],
            },
        }
        for r in rules
    ]
    # A report built without rule metadata (older callers) still names every rule it has results for.
    for rule_id in sorted({f.rule_id for f in report.findings} - known):
        rule_index[rule_id] = len(descriptors)
        descriptors.append({"id": rule_id, "shortDescription": {"text": rule_id}})

    decision = report.decision
    allow = report.allowlist
    config_notes = []
    if allow is not None:
        for state, entries in (("stale", allow.stale), ("expired", allow.expired)):
            for entry in entries:
                config_notes.append(
                    {
                        "level": "error" if report.policy.fail_on_stale else "warning",
                        "message": {"text": f"{state} allowlist entry: {entry_text(entry)}"},
                        "descriptor": {"id": f"shardscan/allowlist-{state}"},
                        "properties": {"entry": entry.to_dict()},
                    }
                )
    invocation: JsonObject = {
        "executionSuccessful": decision.exit_code != 3,
        "exitCode": decision.exit_code,
        "exitCodeDescription": decision.reason,
        "toolExecutionNotifications": [_issue_notification(i) for i in report.issues],
        "toolConfigurationNotifications": config_notes,
        "properties": {"gate": {"passed": decision.passed, "exit_code": decision.exit_code, "reason": decision.reason}},
    }
    if not invocation["toolExecutionNotifications"]:
        del invocation["toolExecutionNotifications"]
    if not config_notes:
        del invocation["toolConfigurationNotifications"]
    s = report.stats
    run: JsonObject = {
        "tool": {
            "driver": {
                "name": "shardscan",
                "version": report.tool_version,
                "semanticVersion": report.tool_version,
                "rules": descriptors,
                "properties": {"ruleset": report.ruleset_digest},
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The folder the shards were scanned from."}}},
        "invocations": [invocation],
        "results": [_result(f, rule_index, report) for f in report.findings],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "summary": summary_numbers(report),
            "scanned_at": report.scanned_at.isoformat(timespec="seconds"),
            "scanned": {
                "shards": s.shards, "row_groups": s.row_groups, "rows": s.rows, "cells": s.cells, "bytes": s.bytes,
            },
            "policy": report.policy.to_dict(),
        },
    }
    if report.files is not None:  # not-scanned files are also toolExecutionNotifications (issues)
        run["properties"]["files"] = files_dict(report)
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(report: Report, _options: object = None) -> str:
    """The SARIF log, pretty-printed."""
    return pretty_json(sarif_dict(report)) + "\n"
