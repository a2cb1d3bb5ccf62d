"""Terminal report (rich): per-shard summary, findings grouped by kind, allowlist, and the gate decision."""

from __future__ import annotations

import io
import re
import textwrap

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from shardscan.model import Finding, Verdict
from shardscan.report import Report
from shardscan.reporters import RenderOptions
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

_VERDICT_STYLE: dict[str, str] = {
    Verdict.VALID: "bold red",
    Verdict.UNVERIFIED: "red",
    Verdict.ENCRYPTED: "yellow",
    Verdict.EXPIRED: "green",
    Verdict.INVALID: "green",
    Verdict.EXAMPLE: "cyan",
    Verdict.REDACTED: "cyan",
    Verdict.TEST_MODE: "yellow",
    Verdict.LOCAL_ONLY: "yellow",
}

# Above this many shards the summary lists only shards with findings or errors: a 1,000-shard
# release should not print 1,000 clean lines before the part a reviewer needs.
MAX_CLEAN_SHARD_LINES = 20
# rich lays out a table in time that grows quickly with its rows (minutes for thousands); above this
# many findings each one is a block of lines instead (as below the table's width).
MAX_TABLE_FINDINGS = 300


def _t(value: object, style: str = "") -> Text:
    # Every cell is a Text, never a str: rich would parse "[...]" in scanned data (column paths,
    # contexts) as markup, mangling it or raising on a stray "[/]". Text also drops control codes.
    return Text(str(value), style=style)


def _say(console: Console, text: Text, hang: int = 2) -> None:
    """Print one line of the report. On a terminal (``wrap``) it folds between words and its
    continuation lines are indented by ``hang`` under the first; elsewhere it stays one line."""
    console.print(_hung(console, text, hang), soft_wrap=True)


def _hung(console: Console, text: Text, hang: int) -> Text:
    """``text`` folded to the console's width with a hanging indent, when the console wraps."""
    if console.soft_wrap:
        return text
    width = max(console.width - hang, 20)
    breaks: list[int] = []
    line_start = 0
    # Break before a word that would cross the width. Overlong words (a column path, a URL) stay
    # whole on their own line: a folded identifier cannot be searched for.
    for word in _WORD.finditer(text.plain):
        if word.start() > line_start and word.start() + len(word[0].rstrip()) - line_start > width:
            breaks.append(word.start())
            line_start = word.start()
    if not breaks:
        return text
    out = Text()
    for i, line in enumerate(text.divide(breaks)):
        if i:
            out.append("\n" + " " * hang)
        line.rstrip()
        out.append_text(line)
    return out


_WORD = re.compile(r"\S+\s*")


def render(report: Report, options: RenderOptions) -> str:
    """The human-readable audit as text, with ANSI colour only when ``options.color``.

    ``options.quiet`` prints just the gate decision line.
    """
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=options.color, no_color=not options.color, width=options.width,
        highlight=False, soft_wrap=not options.wrap, emoji=False, markup=False,
    )
    # A terminal gets a light rule under the headers; plain output (a CI log, a file) no rules at
    # all: a "|" or "+---" in a log reads as part of the data.
    table_box = box.SIMPLE_HEAD if options.color else None
    if not options.quiet:
        _header(console, report)
        _shards(console, report, table_box, options.width)
        _findings(console, report, table_box, options.width)
        _issues(console, report)
        _allowlist(console, report)
        _known_secrets(console, report)
        _revealed(console, report)
    _decision(console, report, options.quiet)
    # Text lines fold between words in a terminal and stay whole elsewhere (greppable in CI logs);
    # tables and finding blocks fit the width.
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
    _say(console, _t("SECRETS SHOWN IN PLAIN TEXT (--show-secrets): do not share this output", "bold red"))
    for f in shown:
        loc = f.location
        console.print(_t(f"  {loc.shard} row {loc.row} {loc.column} [{f.rule_id}]: {f.revealed}"), soft_wrap=True)


def _header(console: Console, report: Report) -> None:
    s = report.stats
    n = summary_numbers(report)
    _say(
        console,
        _t(f"shardscan {report.tool_version} (rules {report.ruleset_digest}), "
           f"{report.scanned_at.date().isoformat()}", "bold")
    )
    _say(
        console,
        _t(f"scanned {s.shards} shard(s) ({s.cached_shards} from cache), {s.row_groups} row group(s), {s.rows:,} rows, "
           f"{s.cells:,} string cells, {format_size(s.bytes)} in {s.seconds:.2f}s")
    )
    by_verdict = ", ".join(f"{c} {v}" for v, c in n["by_verdict"].items() if c) or "none"
    _say(
        console,
        _t(f"findings: {n['findings']} ({by_verdict}); blocking: {n['blocking']}; allowlisted: {n['allowlisted']}; "
           f"errors: {n['errors']}")
    )


def _shards(console: Console, report: Report, table_box: box.Box | None, width: int) -> None:
    rows = shard_rows(report)
    if not rows:
        return
    shown = rows if len(rows) <= MAX_CLEAN_SHARD_LINES else [r for r in rows if r.findings or r.issues]
    hidden = len(rows) - len(shown)
    if not shown:
        _say(console, _t(f"Shards: all {len(rows)} clean and read completely"))
        return
    title = "Shards"
    if hidden:
        title += f" ({len(shown)} with findings or errors; {hidden} clean shard(s) not listed)"
    headers = ("rows", "cells", "bytes", "findings", "by verdict", "blocking", "errors")
    longest = max(len(_one_line(r.shard)) for r in shown)
    # The numbers need about 60 columns next to the shard name; below that, a line per shard.
    if longest + 62 > width:
        _say(console, _t(title, "bold"))
        for r in shown:
            line = Text(f"  {_one_line(r.shard)}: ", style="bold red" if r.failed else "")
            line.append(f"{r.rows:,} rows, {r.findings} finding(s)")
            _append_verdicts(line, r.by_verdict, " (", ")")
            if r.blocking:
                line.append(f"; {r.blocking} blocking", "bold red")
            if r.issues:
                line.append(f"; {len(r.issues)} error(s)", "bold yellow")
            _say(console, line, hang=6)
        return
    table = Table(title=title, title_justify="left", box=table_box, expand=False, show_edge=table_box is not None)
    table.add_column("shard", no_wrap=True)
    for header in headers:
        table.add_column(header, justify="left" if header == "by verdict" else "right", no_wrap=header != "by verdict")
    for r in shown:
        by_verdict = Text(", ").join(_t(f"{n} {v}", _VERDICT_STYLE[v]) for v, n in r.by_verdict.items() if n)
        table.add_row(
            _t(_one_line(r.shard), "bold red" if r.failed else ""), _t(f"{r.rows:,}"), _t(f"{r.cells:,}"),
            _t(format_size(r.bytes)), _t(r.findings), by_verdict, _t(r.blocking or "", "bold red"),
            _t(len(r.issues) or "", "bold yellow"),
        )
    console.print(table)


def _append_verdicts(line: Text, by_verdict: dict[str, int], before: str, after: str) -> None:
    counted = [(v, n) for v, n in by_verdict.items() if n]
    if not counted:
        return
    line.append(before)
    for i, (verdict, n) in enumerate(counted):
        line.append(", " if i else "")
        line.append(f"{n} {verdict}", _VERDICT_STYLE.get(verdict, ""))
    line.append(after)


def _one_line(value: object) -> str:
    """An identifier (shard, column path, role) on one line: a line break in a column name or a
    JSON key would otherwise split a finding's lines and misalign the report."""
    return str(value).translate(_LINE_BREAKS)


_LINE_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _status(finding: Finding) -> tuple[str, str]:
    """A finding's standing with the gate in words, and its style."""
    if finding.blocking:
        return "BLOCKING", "bold red"
    if finding.allowlist is not None:
        return "allowlisted", ""
    return "not blocking", ""


def _allowlist_note(finding: Finding) -> str:
    assert finding.allowlist is not None
    ref = finding.allowlist
    return f"allowlisted by entry #{ref.entry}, reviewed by {ref.reviewer} on {ref.reviewed}: {ref.reason}"


def _findings(console: Console, report: Report, table_box: box.Box | None, width: int) -> None:
    if not report.findings:
        return
    groups = sorted_by_kind(report.findings)
    if len(report.findings) > MAX_TABLE_FINDINGS or _table_width(report.findings) + MIN_DETAIL_WIDTH > width:
        _finding_records(console, groups, width)
        return
    for kind, findings in groups.items():
        table = Table(title=f"{kind}: {len(findings)} finding(s)", title_justify="left", box=table_box,
                      expand=False, show_edge=table_box is not None)
        for header in _TABLE_COLUMNS:
            # Identifiers stay on one line (a folded shard name is unreadable); the detail takes the
            # width that is left and wraps at word boundaries.
            table.add_column(header, no_wrap=header != "detail", overflow="fold",
                             justify="right" if header == "row" else "left")
        for f in findings:
            loc = f.location
            status, status_style = _status(f)
            detail = f.detail + (f"\n{_allowlist_note(f)}" if f.allowlist is not None else "")
            table.add_row(
                _t(f.rule_id), _t(_one_line(loc.shard)), _t(loc.row), _t(_one_line(loc.column)),
                _t(_one_line(loc.role or "")), _t(f.verdict, _VERDICT_STYLE.get(str(f.verdict), "")),
                _t(status, status_style), _t(f.preview), Text(detail),
            )
        console.print(table)


_TABLE_COLUMNS = ("rule", "shard", "row", "column", "role", "verdict", "status", "preview", "detail")
# Below this width for the detail column, a finding is printed as a block of lines instead.
MIN_DETAIL_WIDTH = 40


def _table_width(findings: tuple[Finding, ...]) -> int:
    """Columns the findings table needs for everything but the detail: the widest value of each
    identifier column, its header, and three columns of padding and rule per column."""
    widths = [len(h) for h in _TABLE_COLUMNS[:-1]]
    for f in findings:
        loc = f.location
        values = (f.rule_id, _one_line(loc.shard), str(loc.row), _one_line(loc.column), _one_line(loc.role or ""),
                  str(f.verdict), _status(f)[0], f.preview)
        widths = [max(w, len(v)) for w, v in zip(widths, values, strict=True)]
    return sum(widths) + 3 * len(_TABLE_COLUMNS) + 1


def _finding_records(console: Console, groups: dict[str, list[Finding]], width: int) -> None:
    """One block of lines per finding, in the style of compiler and linter output:

        shard:row  column path  (role)
            rule  verdict  status  preview
            detail, wrapped at word boundaries
            allowlisted by entry #N: reason

    It reads at any width and in CI logs, and greps by shard or rule."""
    indent = "    "
    wrap_width = max(width - len(indent), 30)
    # One Text per kind, printed once: rich's per-print overhead dominates for thousands of findings.
    for kind, findings in groups.items():
        text = Text()
        text.append(f"{kind}: {len(findings)} finding(s)\n", "bold")
        for f in findings:
            loc = f.location
            where = f"{_one_line(loc.shard)}:{loc.row}  {_one_line(loc.column)}"
            where += f"  ({_one_line(loc.role)})" if loc.role else ""
            text.append_text(_hung(console, Text(where, style="bold"), len(indent)))
            status, status_style = _status(f)
            line = Text(f"{indent}{f.rule_id}  ")
            line.append(str(f.verdict), _VERDICT_STYLE.get(str(f.verdict), ""))
            line.append("  ")
            line.append(status, status_style)
            line.append(f"  {f.preview}")
            text.append("\n")
            text.append_text(_hung(console, line, 2 * len(indent)))
            text.append("\n")
            notes = [f.detail] + ([_allowlist_note(f)] if f.allowlist is not None else [])
            for note in notes:
                for wrapped in textwrap.wrap(note, wrap_width, break_long_words=False, break_on_hyphens=False):
                    text.append(f"{indent}{wrapped}\n")
        text.rstrip()
        console.print(text, soft_wrap=True)


def _issues(console: Console, report: Report) -> None:
    if not report.issues:
        return
    _say(console, _t(f"errors: {len(report.issues)} (the scan is incomplete where these are)", "bold yellow"))
    for issue in report.issues:
        _say(console, _t(f"  [{issue.kind}] {issue_where(issue)}: {issue.message}"), hang=6)


def _allowlist(console: Console, report: Report) -> None:
    allow = report.allowlist
    if allow is None:
        return
    _say(
        console,
        _t(f"allowlist {allow.path}: {allow.entries} entr{'y' if allow.entries == 1 else 'ies'}, "
           f"{len(allow.matched)} matched, {len(allow.stale)} stale, {len(allow.expired)} expired", "bold")
    )
    for entry in allow.stale:
        _say(console, _t(f"  stale (matched nothing): {entry_text(entry)}", "yellow"), hang=6)
    for entry in allow.expired:
        _say(console, _t(f"  expired: {entry_text(entry)}", "yellow"), hang=6)


def _decision(console: Console, report: Report, quiet: bool) -> None:
    style = "bold green" if report.decision.passed else "bold red"
    _say(console, _t(decision_line(report), style))
    if not quiet:
        for line in gate_why(report):
            _say(console, _t(f"  why: {line}"), hang=7)
