"""Markdown report, for pasting into a release pull request. Deterministic: no wall-clock durations."""

from __future__ import annotations

import re
from collections.abc import Sequence

from shardscan.report import Report
from shardscan.reporters._common import (
    VERDICTS,
    entry_text,
    gate_why,
    issue_where,
    shard_rows,
    sorted_by_kind,
    summary_numbers,
)
from shardscan.sizes import format_size

# Characters that would change Markdown structure inside a table cell or a list item, or inject
# HTML/links from scanned data (column paths and contexts come from the dataset, which is hostile).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def md(text: object) -> str:
    """``text`` escaped for a Markdown table cell or inline text; line breaks become spaces."""
    flat = " ".join(str(text).splitlines()) if text is not None else ""
    return _MD_SPECIAL.sub(r"\\\1", _CONTROL.sub("", flat))


def table(headers: list[str], rows: Sequence[Sequence[object]], align: list[str] | None = None) -> list[str]:
    """A GitHub-flavoured Markdown table; ``align`` is 'l' or 'r' per column."""
    align = align or ["l"] * len(headers)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return lines


def render(report: Report, _options: object = None) -> str:
    """The audit as Markdown: gate decision, numbers, shards, findings by kind, errors, allowlist."""
    decision = report.decision
    n = summary_numbers(report)
    s = report.stats
    verdict = "PASS" if decision.passed else "FAIL"
    out = [f"## shardscan audit: {verdict}", ""]
    out += [f"**Gate: {verdict}** (exit {decision.exit_code}): {md(decision.reason)}", ""]
    out += [f"- {md(line)}" for line in gate_why(report)]
    out += [""]
    out += table(
        ["scanned", "count"],
        [
            ["shards", s.shards], ["row groups", s.row_groups], ["rows", f"{s.rows:,}"],
            ["string cells", f"{s.cells:,}"], ["bytes", format_size(s.bytes)], ["findings", n["findings"]],
            ["blocking", n["blocking"]], ["allowlisted", n["allowlisted"]], ["errors", n["errors"]],
            *([["files scanned", report.files.scanned], ["files excluded", report.files.excluded_total],
               ["files not scanned", len(report.files.not_scanned)]] if report.files is not None else []),
        ],
        ["l", "r"],
    )
    by_verdict = ", ".join(f"{c} {v}" for v, c in n["by_verdict"].items() if c) or "none"
    out += ["", f"Findings by verdict: {by_verdict}.", ""]

    rows = [r for r in shard_rows(report) if r.findings or r.issues]
    if rows:
        verdicts = [v for v in VERDICTS if any(r.by_verdict[v] for r in rows)]
        clean = len(shard_rows(report)) - len(rows)
        out += [f"### Shards with findings or errors ({len(rows)}; {clean} clean)", ""]
        out += table(
            ["shard", "rows", "findings", *verdicts, "blocking", "errors"],
            [[r.shard, r.rows, r.findings, *(r.by_verdict[v] for v in verdicts), r.blocking, len(r.issues)]
             for r in rows],
            ["l", "r", "r", *("r" for _ in verdicts), "r", "r"],
        )
        out += [""]

    if report.findings:
        out += ["### Findings", ""]
        for kind, findings in sorted_by_kind(report.findings).items():
            out += [f"#### {md(kind)} ({len(findings)})", ""]
            out += table(
                ["rule", "shard", "row", "column", "role", "verdict", "status", "preview", "detail"],
                [
                    [f.rule_id, f.location.shard, f.location.row, f.location.column, f.location.role or "",
                     f.verdict, str(f.status) + (" (blocking)" if f.blocking else ""), f.preview,
                     f.detail + (f"; allowlisted: {f.allowlist.reason}" if f.allowlist else "")]
                    for f in findings
                ],
                ["l", "l", "r", "l", "l", "l", "l", "l", "l"],
            )
            out += [""]

    if report.issues:
        out += [f"### Errors ({len(report.issues)}): the scan is incomplete where these are", ""]
        out += [f"- **{md(i.kind)}** {md(issue_where(i))}: {md(i.message)}" for i in report.issues]
        out += [""]

    if report.known_secrets:
        out += ["### Known secrets", ""]
        out += [f"- `{k.label.replace('`', '')}`: {k.outcome}" for k in report.known_secrets]
        out += [""]

    allow = report.allowlist
    if allow is not None:
        out += ["### Allowlist", ""]
        out += [
            f"{md(allow.path or '(none)')}: {allow.entries} entries, {len(allow.matched)} matched, "
            f"{len(allow.stale)} stale, {len(allow.expired)} expired.",
            "",
        ]
        accepted = [(f, f.allowlist) for f in report.findings if f.allowlist is not None]
        if accepted:
            out += table(
                ["shard", "row", "column", "rule", "preview", "entry", "reviewer", "reviewed", "reason"],
                [[f.location.shard, f.location.row, f.location.column, f.rule_id, f.preview, a.entry,
                  a.reviewer, a.reviewed, a.reason] for f, a in accepted],
                ["l", "r", "l", "l", "l", "r", "l", "l", "l"],
            )
            out += [""]
        out += [f"- stale (matched nothing): {md(entry_text(e))}" for e in allow.stale]
        out += [f"- expired: {md(entry_text(e))}" for e in allow.expired]
        if allow.stale or allow.expired:
            out += [""]

    out += [
        f"<sub>shardscan {md(report.tool_version)}, rule set {md(report.ruleset_digest)}, "
        f"scanned {report.scanned_at.date().isoformat()}</sub>",
    ]
    return "\n".join(out) + "\n"
