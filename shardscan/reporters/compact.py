"""Compact terminal report for hooks: one line per finding and per error, then the gate decision."""

from __future__ import annotations

import re

from shardscan.model import Status
from shardscan.report import Report

# Shard names, column paths and messages come from the data: no terminal control sequences.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def render(report: Report, _options: object = None) -> str:
    """Plain text, no colour, one line per item: short enough for a commit hook's output."""
    s = report.stats
    cached = f" ({s.cached_shards} from cache)" if s.cached_shards else ""
    if s.cache_rejected:
        cached += f" ({s.cache_rejected} cache entr{'y' if s.cache_rejected == 1 else 'ies'} rejected: not replayed)"
    lines = [
        f"shardscan: {s.shards} shard(s){cached}, {s.rows:,} rows, {s.cells:,} string cells; "
        f"findings: {len(report.findings)}, blocking: {len(report.blocking)}, errors: {len(report.issues)}"
    ]
    files = report.files
    # Kept short for commit hooks: the file line only when some file was left out or not read.
    if files is not None and (files.excluded_total or files.not_scanned or files.excluded_members):
        lines.append(_safe(f"  files: {files.summary()}"))
    for f in report.findings:
        loc = f.location
        role = f" ({loc.role})" if loc.role else ""
        mark = "BLOCKING" if f.blocking else ("allowlisted" if f.status == Status.ALLOWLISTED else "notice")
        lines.append(_safe(
            f"  {mark:11} {loc.shard}:{loc.row} {loc.column}{role} {f.rule_id} {f.verdict} {f.preview} "
            f"{f.fingerprint[:19]}…"
            + (f" x{f.count} (aggregated)" if f.count > 1 else "")
        ))
    for issue in report.issues:
        where = issue.shard + (f" row group {issue.row_group}" if issue.row_group is not None else "")
        where += f" row {issue.row}" if issue.row is not None else ""
        where += f" {issue.column}" if issue.column else ""
        lines.append(_safe(f"  ERROR       {where}: [{issue.kind}] {issue.message}"))
    decision = report.decision
    lines.append(f"gate: {'PASS' if decision.passed else 'FAIL'} (exit {decision.exit_code}): {decision.reason}")
    return "\n".join(lines) + "\n"
