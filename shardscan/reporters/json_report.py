"""JSON report: the stable, versioned contract the publish pipeline reads."""

from __future__ import annotations

from shardscan.model import Finding, ScanIssue
from shardscan.report import REPORT_VERSION, Report
from shardscan.reporters._common import files_dict, pretty_json, shard_rows, summary_numbers


def finding_dict(finding: Finding) -> dict:
    """One finding as the JSON contract spells it."""
    loc = finding.location
    allow = finding.allowlist
    entry = {
        "rule_id": finding.rule_id,
        "kind": finding.kind,
        "severity": finding.severity,
        "shard": loc.shard,
        "row": loc.row,
        "column": loc.column,
        "role": loc.role,
        "start": finding.start,
        "end": finding.end,
        "encoding": list(finding.encoding),
        "fingerprint": finding.fingerprint,
        "preview": finding.preview,
        "verdict": str(finding.verdict),
        "detail": finding.detail,
        "blocking": finding.blocking,
        "status": str(finding.status),
        "allowlist": (
            {"entry": allow.entry, "reason": allow.reason, "reviewer": allow.reviewer, "reviewed": allow.reviewed}
            if allow
            else None
        ),
        "context": finding.context,
    }
    if finding.count > 1:  # findings over a cap aggregated into this one (absent: 1)
        entry["count"] = finding.count
    return entry


def issue_dict(issue: ScanIssue) -> dict:
    """One scan issue (unreadable data or a limit hit)."""
    return {
        "shard": issue.shard,
        "kind": issue.kind,
        "row_group": issue.row_group,
        "row": issue.row,
        "column": issue.column,
        "message": issue.message,
    }


def report_dict(report: Report) -> dict:
    """The whole report as plain data (used by the JSON, JSONL and other machine formats)."""
    stats = report.stats
    decision = report.decision
    allowlist = report.allowlist
    per_shard = {row.shard: row for row in shard_rows(report)}
    return _with_files({
        "version": REPORT_VERSION,
        "tool": {"name": "shardscan", "version": report.tool_version, "ruleset": report.ruleset_digest},
        "scanned_at": report.scanned_at.isoformat(timespec="seconds"),
        "scanned": {
            "shards": stats.shards,
            "row_groups": stats.row_groups,
            "rows": stats.rows,
            "cells": stats.cells,
            "bytes": stats.bytes,
            "candidate_cells": stats.candidate_cells,
            "seconds": round(stats.seconds, 3),
        },
        "summary": summary_numbers(report),
        "kinds": list(report.kinds),
        "rules": [
            {"id": r.id, "kind": r.kind, "name": r.name, "severity": r.severity, "description": r.description}
            for r in report.rules
        ],
        "policy": report.policy.to_dict(),
        "gate": {"passed": decision.passed, "exit_code": decision.exit_code, "reason": decision.reason},
        "findings": [finding_dict(f) for f in report.findings],
        "known_secrets": [
            {"entry": k.label, "cells_searched": k.cells, "occurrences": k.occurrences, "statement": k.sentence}
            for k in report.known_secrets
        ],
        "errors": [issue_dict(i) for i in report.issues],
        "allowlist": (
            {
                "path": allowlist.path,
                "entries": allowlist.entries,
                "matched": list(allowlist.matched),
                "stale": list(allowlist.stale),
                "expired": list(allowlist.expired),
            }
            if allowlist
            else None
        ),
        "shards": [
            {
                "shard": s.shard,
                "rows": s.stats.rows,
                "row_groups": s.stats.row_groups,
                "cells": s.stats.cells,
                "bytes": s.stats.bytes,
                "findings": s.findings,
                "blocking": s.blocking,
                "allowlisted": per_shard[s.shard].allowlisted,
                "by_verdict": per_shard[s.shard].by_verdict,
                "errors": s.issues,
            }
            for s in report.shards
        ],
    }, report)


def render(report: Report, _options: object = None) -> str:
    """Pretty-printed JSON, keys in contract order."""
    return pretty_json(report_dict(report)) + "\n"


def _with_files(data: dict, report: Report) -> dict:
    """Add ``files`` (scanned / excluded / not scanned) after ``scanned``, for scans of files."""
    files = files_dict(report)
    if files is None:
        return data
    out: dict = {}
    for key, value in data.items():
        out[key] = value
        if key == "scanned":
            out["files"] = files
    return out
