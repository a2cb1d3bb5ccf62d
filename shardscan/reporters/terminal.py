"""Terminal report (rich): summary, findings table, allowlist section and the gate decision."""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from shardscan.report import Report

_VERDICT_STYLE = {
    "valid": "bold red",
    "unverified": "red",
    "encrypted": "yellow",
    "expired": "green",
    "invalid": "green",
    "example": "cyan",
    "redacted": "cyan",
}


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def render(report: Report, options) -> str:
    """The human-readable audit, as text (with ANSI colour when ``options.color``)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=options.color, no_color=not options.color, width=options.width,
        highlight=False, soft_wrap=False,
    )
    decision = report.decision
    if not options.quiet:
        _summary(console, report)
        _findings(console, report)
        _issues(console, report)
        _allowlist(console, report)
    style = "bold green" if decision.passed else "bold red"
    verdict = "PASS" if decision.passed else "FAIL"
    console.print(Text(f"gate: {verdict} (exit {decision.exit_code}): {decision.reason}", style=style))
    return buffer.getvalue()


def _summary(console: Console, report: Report) -> None:
    s = report.stats
    verdicts = Counter(str(f.verdict) for f in report.findings)
    by_verdict = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())) or "none"
    console.print(
        f"shardscan {report.tool_version} (rules {report.ruleset_digest}): scanned {s.shards} shard(s), "
        f"{s.row_groups} row group(s), {s.rows:,} rows, {s.cells:,} string cells, {_human_bytes(s.bytes)} "
        f"in {s.seconds:.2f}s"
    )
    console.print(f"findings: {len(report.findings)} ({by_verdict}); blocking: {len(report.blocking)}")


def _findings(console: Console, report: Report) -> None:
    if not report.findings:
        return
    table = Table(title="Findings", title_justify="left", show_lines=False, expand=False)
    for header in ("kind", "rule", "shard", "row", "column", "role", "verdict", "status", "preview", "detail"):
        table.add_column(header, overflow="fold")
    for f in sorted(report.findings, key=lambda f: (f.kind, f.sort_key())):
        loc = f.location
        verdict = Text(str(f.verdict), style=_VERDICT_STYLE.get(str(f.verdict), ""))
        status = str(f.status) + (" BLOCKING" if f.blocking else "")
        table.add_row(
            f.kind, f.rule_id, loc.shard, str(loc.row), loc.column, loc.role or "", verdict, status, f.preview,
            f.detail,
        )
    console.print(table)


def _issues(console: Console, report: Report) -> None:
    if not report.issues:
        return
    console.print(Text(f"errors: {len(report.issues)} (the scan is incomplete where these are)", style="bold yellow"))
    for issue in report.issues:
        where = issue.shard
        if issue.row_group is not None:
            where += f" row group {issue.row_group}"
        if issue.row is not None:
            where += f" row {issue.row}"
        if issue.column:
            where += f" {issue.column}"
        console.print(f"  [{issue.kind}] {where}: {issue.message}", markup=False)


def _allowlist(console: Console, report: Report) -> None:
    allow = report.allowlist
    if allow is None:
        return
    console.print(
        f"allowlist {allow.path}: {allow.entries} entr{'y' if allow.entries == 1 else 'ies'}, "
        f"{len(allow.matched)} matched, {len(allow.stale)} stale, {len(allow.expired)} expired"
    )
    for entry in allow.stale:
        console.print(f"  stale: entry {entry.get('entry')} ({entry.get('fingerprint', '')[:19]}…) matched nothing",
                      markup=False)
    for entry in allow.expired:
        console.print(f"  expired: entry {entry.get('entry')} expired {entry.get('expires')}", markup=False)
