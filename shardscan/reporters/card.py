"""Dataset-card section (``--format card``): a short Markdown block for the dataset's README on the Hub.

Deterministic: the same data, rules and ``--now`` give byte-identical text (the date comes from the
scan's clock, never the wall clock's seconds; durations are left out). It never shows a secret, not
even its preview: a card is public, and a preview plus the row is more than a reader needs.
"""

from __future__ import annotations

from shardscan.model import Status
from shardscan.report import Report
from shardscan.reporters._common import KIND_NAMES, summary_numbers
from shardscan.reporters.markdown import md, table


def render(report: Report, _options: object = None) -> str:
    """The card section as Markdown."""
    decision = report.decision
    n = summary_numbers(report)
    s = report.stats
    families = ", ".join(KIND_NAMES.get(k, k) for k in report.kinds) or "none"
    result = "**Passed**: no blocking findings" if decision.passed else f"**Failed**: {md(decision.reason)}"
    unreadable = len(report.unreadable)
    out = [
        "## Secret scan",
        "",
        f"Every shard of this dataset was scanned for credentials with shardscan {md(report.tool_version)} "
        f"(rule set `{md(report.ruleset_digest)}`) on {report.scanned_at.date().isoformat()}. The scan reads every "
        "decoded string cell, including messages nested in conversations, and verifies candidates offline.",
        "",
    ]
    out += table(
        ["Scanned", ""],
        [
            ["Shards", f"{s.shards:,}" + (f" ({unreadable} problem(s) reading them)" if unreadable else "")],
            ["Rows", f"{s.rows:,}"],
            ["Decoded string cells", f"{s.cells:,}"],
            *([["Files", report.files.summary()]] if report.files is not None else []),
            ["Credential families", families],
        ],
    )
    # The result line is built from already-escaped parts; it bypasses ``table`` to keep the bold.
    out += [f"| Result | {result} |", ""]
    if report.files is not None and report.files.not_scanned:
        out += ["Files not scanned (not a format shardscan reads):", ""]
        out += [f"- {md(n.path)}: {md(n.reason)}" for n in report.files.not_scanned] + [""]

    accepted = [f for f in report.findings if f.status == Status.ALLOWLISTED]
    dismissed = [f for f in report.findings if f.status != Status.ALLOWLISTED and not f.blocking]
    if accepted:
        out += [
            "### Reviewed rows kept in the release",
            "",
            f"{len(accepted)} value(s) look like credentials but were reviewed and kept deliberately, for the "
            "reason given. The values themselves are not reproduced here.",
            "",
        ]
        out += table(
            ["Shard", "Row", "Column", "Kind", "Verdict", "Reviewed", "Reason"],
            [
                [f.location.shard, f.location.row, f.location.column, KIND_NAMES.get(f.kind, f.kind), f.verdict,
                 f.allowlist.reviewed if f.allowlist else "", f.allowlist.reason if f.allowlist else ""]
                for f in accepted
            ],
            ["l", "r", "l", "l", "l", "l", "l"],
        )
        out += [""]
    if dismissed:
        verdicts = sorted({str(f.verdict) for f in dismissed})
        out += [
            f"{len(dismissed)} further match(es) were judged not to be usable credentials "
            f"({', '.join(verdicts)}) and do not block publication.",
            "",
        ]
    if report.known_secrets:
        out += [
            "The publisher's own credentials (the values are not reproduced) were searched for in every cell, "
            "plain and in every decoded form:",
            "",
        ]
        out += [f"- `{k.label.replace('`', '')}`: {k.outcome}" for k in report.known_secrets]
        out += [""]
    if n["blocking"]:
        out += [f"{n['blocking']} blocking finding(s) must be removed before publication.", ""]
    return "\n".join(out)
