"""Terminal report (rich): per-shard summary, findings grouped by kind, allowlist, and the gate decision."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from shardscan.report import Report
from shardscan.reporters._common import (
    decision_line,
    entry_text,
    gate_why,
    issue_where,
    shard_rows,
    sorted_by_kind,
    summary_numbers,
)
from shardscan.sizes import format_size

_VERDICT_STYLE = {
    "valid": "bold red",
    "unverified": "red",
    "encrypted": "yellow",
    "expired": "green",
    "invalid": "green",
    "example": "cyan",
    "redacted": "cyan",
    "test-mode": "yellow",
    "local-only": "yellow",
}

# Above this many shards the summary lists only shards with findings or errors: a 1,000-shard
# release should not print 1,000 clean lines before the part a reviewer needs.
MAX_CLEAN_SHARD_LINES = 20
# rich lays out a table in time that grows quickly with its rows (minutes for thousands); above this
# many findings each one is a single tab-separated line instead, which is also what one greps for.
MAX_TABLE_FINDINGS = 300


def _t(value: object, style: str = "") -> Text:
    # Every cell is a Text, never a str: rich would parse "[...]" in scanned data (column paths,
    # contexts) as markup, mangling it or raising on a stray "[/]". Text also drops control codes.
    return Text(str(value), style=style)


def render(report: Report, options) -> str:
    """The human-readable audit as text, with ANSI colour only when ``options.color``.

    ``options.quiet`` prints just the gate decision line.
    """
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=options.color, no_color=not options.color, width=options.width,
        highlight=False, soft_wrap=True, emoji=False, markup=False,
    )
    table_box = box.SIMPLE_HEAD if options.color else box.ASCII2
    if not options.quiet:
        _header(console, report)
        _shards(console, report, table_box)
        _findings(console, report, table_box)
        _issues(console, report)
        _allowlist(console, report)
        _known_secrets(console, report)
        _revealed(console, report)
    _decision(console, report, options.quiet)
    # Text lines soft-wrap (one finding or error per line, greppable in CI logs); tables fit the width.
    # rich pads titles and cells to the table width; trailing blanks only add noise to logs and diffs.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _known_secrets(console: Console, report: Report) -> None:
    """One line per ``--known-secrets`` entry: cells searched and occurrences (the entry's label only)."""
    for k in report.known_secrets:
        console.print(_t(f"known secret {k.sentence}", "bold red" if k.occurrences else "green"))


def _revealed(console: Console, report: Report) -> None:
    """Plaintext secrets, present only under ``--show-secrets`` (refused in CI)."""
    shown = [f for f in report.findings if f.revealed is not None]
    if not shown:
        return
    console.print(_t("SECRETS SHOWN IN PLAIN TEXT (--show-secrets): do not share this output", "bold red"))
    for f in shown:
        loc = f.location
        console.print(_t(f"  {loc.shard} row {loc.row} {loc.column} [{f.rule_id}]: {f.revealed}"))


def _header(console: Console, report: Report) -> None:
    s = report.stats
    n = summary_numbers(report)
    console.print(
        _t(f"shardscan {report.tool_version} (rules {report.ruleset_digest}), "
           f"{report.scanned_at.date().isoformat()}", "bold")
    )
    console.print(
        _t(f"scanned {s.shards} shard(s), {s.row_groups} row group(s), {s.rows:,} rows, {s.cells:,} string cells, "
           f"{format_size(s.bytes)} in {s.seconds:.2f}s")
    )
    by_verdict = ", ".join(f"{c} {v}" for v, c in n["by_verdict"].items() if c) or "none"
    console.print(
        _t(f"findings: {n['findings']} ({by_verdict}); blocking: {n['blocking']}; allowlisted: {n['allowlisted']}; "
           f"errors: {n['errors']}")
    )


def _shards(console: Console, report: Report, table_box: box.Box) -> None:
    rows = shard_rows(report)
    if not rows:
        return
    shown = rows if len(rows) <= MAX_CLEAN_SHARD_LINES else [r for r in rows if r.findings or r.issues]
    hidden = len(rows) - len(shown)
    if not shown:
        console.print(_t(f"Shards: all {len(rows)} clean and read completely"))
        return
    title = "Shards" + (f" ({len(shown)} with findings or errors; {hidden} clean shard(s) not listed)" if hidden else "")
    table = Table(title=title, title_justify="left", box=table_box, expand=False)
    table.add_column("shard", no_wrap=True)
    for header in ("rows", "cells", "bytes", "findings", "by verdict", "blocking", "errors"):
        table.add_column(header, justify="left" if header == "by verdict" else "right", no_wrap=header != "by verdict")
    for r in shown:
        by_verdict = Text(", ").join(_t(f"{n} {v}", _VERDICT_STYLE[v]) for v, n in r.by_verdict.items() if n)
        table.add_row(
            _t(r.shard, "bold red" if r.failed else ""), _t(f"{r.rows:,}"), _t(f"{r.cells:,}"), _t(format_size(r.bytes)),
            _t(r.findings), by_verdict, _t(r.blocking or "", "bold red"), _t(len(r.issues) or "", "bold yellow"),
        )
    console.print(table)


def _findings(console: Console, report: Report, table_box: box.Box) -> None:
    if len(report.findings) > MAX_TABLE_FINDINGS:
        _finding_lines(console, report)
        return
    for kind, findings in sorted_by_kind(report.findings).items():
        table = Table(title=f"{kind}: {len(findings)} finding(s)", title_justify="left", box=table_box, expand=False)
        for header in ("rule", "shard", "row", "column", "role", "verdict", "status", "preview", "detail"):
            # Identifiers stay on one line (a folded shard name is unreadable); free text wraps.
            table.add_column(header, overflow="fold", no_wrap=header not in ("column", "detail"),
                             justify="right" if header == "row" else "left")
        for f in findings:
            loc = f.location
            status = str(f.status) + (" BLOCKING" if f.blocking else "")
            detail = f.detail
            if f.allowlist is not None:
                detail += f" | allowlist entry {f.allowlist.entry}: {f.allowlist.reason}"
            table.add_row(
                _t(f.rule_id), _t(loc.shard), _t(loc.row), _t(loc.column), _t(loc.role or ""),
                _t(f.verdict, _VERDICT_STYLE.get(str(f.verdict), "")), _t(status, "bold red" if f.blocking else ""),
                _t(f.preview), _t(detail),
            )
        console.print(table)


def _finding_lines(console: Console, report: Report) -> None:
    # One line per finding, fields separated by " | " (tabs would go through rich's slow tab expansion).
    for kind, findings in sorted_by_kind(report.findings).items():
        console.print(_t(f"{kind}: {len(findings)} finding(s)  [rule | shard | row | column | role | verdict | status | "
                         "preview | detail]", "bold"))
        # One Text per kind, printed once: rich's per-print overhead dominates for thousands of lines.
        text = Text()
        for f in findings:
            loc = f.location
            status = str(f.status) + (" BLOCKING" if f.blocking else "")
            detail = f.detail + (f"; allowlist entry {f.allowlist.entry}: {f.allowlist.reason}" if f.allowlist else "")
            text.append(_t(f"  {f.rule_id} | {loc.shard} | {loc.row} | {loc.column} | {loc.role or '-'} | "))
            text.append(str(f.verdict), _VERDICT_STYLE.get(str(f.verdict), ""))
            text.append(" | ")
            text.append(status, "bold red" if f.blocking else "")
            text.append(_t(f" | {f.preview} | {detail}\n"))
        text.rstrip()
        console.print(text)


def _issues(console: Console, report: Report) -> None:
    if not report.issues:
        return
    console.print(_t(f"errors: {len(report.issues)} (the scan is incomplete where these are)", "bold yellow"))
    for issue in report.issues:
        console.print(_t(f"  [{issue.kind}] {issue_where(issue)}: {issue.message}"))


def _allowlist(console: Console, report: Report) -> None:
    allow = report.allowlist
    if allow is None:
        return
    console.print(
        _t(f"allowlist {allow.path}: {allow.entries} entr{'y' if allow.entries == 1 else 'ies'}, "
           f"{len(allow.matched)} matched, {len(allow.stale)} stale, {len(allow.expired)} expired", "bold")
    )
    for f in report.findings:
        if f.allowlist is not None:
            console.print(
                _t(f"  accepted: {f.location.shard} row {f.location.row} {f.location.column} ({f.rule_id}, "
                   f"{f.preview}) by entry {f.allowlist.entry}, reviewed by {f.allowlist.reviewer} "
                   f"on {f.allowlist.reviewed}: {f.allowlist.reason}")
            )
    for entry in allow.stale:
        console.print(_t(f"  stale (matched nothing): {entry_text(entry)}", "yellow"))
    for entry in allow.expired:
        console.print(_t(f"  expired: {entry_text(entry)}", "yellow"))


def _decision(console: Console, report: Report, quiet: bool) -> None:
    style = "bold green" if report.decision.passed else "bold red"
    console.print(_t(decision_line(report), style))
    if not quiet:
        for line in gate_why(report):
            console.print(_t(f"  why: {line}"))
