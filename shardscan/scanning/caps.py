"""Finding caps: a cell's or a shard's findings over its cap are aggregated with a count, never dropped."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import replace

from shardscan.known_secrets import RULE_ID as KNOWN_RULE
from shardscan.model import Finding, IssueKind, ScanIssue, Verdict
from shardscan.redaction import context_snippet, fingerprint, preview
from shardscan.ruleset import Ruleset
from shardscan.scanning.resolve import VERDICT_RANK, position_order
from shardscan.scanning.values import TRUNCATED_PREFIX, CellFinding, Reading
from shardscan.scanning.verification import Verifications
from shardscan.severity import derive_severity

# In a cell over its cap, the candidates that pass their rule's own structural check (a checksum)
# are fully verified up to this many times the cap; the rest are reported as unverified (blocking).
VERIFY_FACTOR = 4


def cap_shard_findings(findings: list[Finding], cap: int, shard: str) -> tuple[list[Finding], list[ScanIssue]]:
    """A shard's findings within its cap: the most telling listed, the rest aggregated per (rule, verdict, column).

    Blocking verdicts are listed first; an aggregate keeps its members' verdict, so a blocking
    finding is never hidden, only counted. Returns the findings and the "truncated" issue (none
    when within the cap).
    """
    if len(findings) <= cap:
        return findings, []
    ranked = sorted(findings, key=lambda f: (VERDICT_RANK.get(str(f.verdict), 9), f.sort_key()))
    listed, rest = ranked[:cap], sorted(ranked[cap:], key=Finding.sort_key)
    groups: dict[tuple[str, str, str, str], list[Finding]] = defaultdict(list)
    for f in rest:
        # A known secret's occurrences stay apart per entry, under its fingerprint: the report's
        # "N occurrences" per entry counts them through the aggregate.
        own = f.fingerprint if f.rule_id == KNOWN_RULE else ""
        groups[(f.rule_id, str(f.verdict), f.location.column, own)].append(f)
    aggregates: list[Finding] = []
    for (rule_id, verdict, column, own), members in groups.items():
        first = members[0]
        digest = hashlib.sha256(f"aggregate:{rule_id}:{verdict}:{column}".encode())
        for f in members:
            digest.update(f.fingerprint.encode())
        count = sum(f.count for f in members)
        rows = sorted({f.location.row for f in members})
        aggregates.append(
            replace(
                first,
                fingerprint=own or "sha256:" + digest.hexdigest(),
                detail=f"{count} findings of this rule in column {column} aggregated (over the cap per shard), "
                f"in {len(rows)} row(s) from {rows[0]} to {rows[-1]}; located at the first",
                count=count,
                revealed=None,
            )
        )
    total = sum(f.count for f in findings)
    issue = ScanIssue(
        shard, IssueKind.TRUNCATED,
        f"{TRUNCATED_PREFIX}{len(findings)} in this shard ({total} counted), more than the cap of {cap} per shard "
        f"(--max-findings-per-shard, and the memory budget): {len(rest)} aggregated by rule, verdict and column "
        f"into {len(aggregates)} finding(s) with a count",
    )
    return listed + aggregates, [issue]


def listed_over_cap(kept: list[Reading], cap: int, verifications: Verifications, ruleset: Ruleset) -> list[Reading]:
    """Which findings of a cell over its cap are listed one by one, the most telling first.

    Candidates that fail their rule's own structural check (a checksum: a look-alike) cannot
    block; the others are fully verified (up to ``VERIFY_FACTOR`` times the cap) and listed
    by verdict, valid first, so that no blocking finding hides in an aggregate while room is
    left. What room remains goes to the look-alikes, in cell order.
    """
    failing = [item for item in kept
               if verifications.fails_structure(item.candidate, ruleset.get(item.candidate.rule_id))]
    failed = {id(item) for item in failing}
    others = [item for item in kept if id(item) not in failed][: VERIFY_FACTOR * cap]

    def rank(item: Reading) -> tuple[int, int, int]:
        verification, _clock = verifications.full(item.candidate, ruleset.get(item.candidate.rule_id))
        return (VERDICT_RANK.get(str(verification.verdict), 9), item.start, item.end)

    listed = sorted(others, key=rank)[:cap]
    listed += failing[: cap - len(listed)]
    return sorted(listed, key=position_order)


def cell_aggregates(
    kept: list[Reading], listed: list[Reading], verifications: Verifications, ruleset: Ruleset, text: str,
    spans: list[tuple[int, int, str]], reach: list[int],
) -> list[CellFinding]:
    """The findings of a cell not listed, one per (rule, verdict), with a count.

    A candidate not fully verified is counted under the verdict of its rule's structural check
    (``invalid``) when it failed it, else as ``unverified`` (blocking): the verification
    limit never turns a possible secret into a pass.
    """
    chosen = {id(item) for item in listed}
    groups: dict[tuple[str, str], list[Reading]] = defaultdict(list)
    details: dict[tuple[str, str], str] = {}
    for item in kept:
        if id(item) in chosen:
            continue
        cand = item.candidate
        rule = ruleset.get(cand.rule_id)
        known = verifications.known(cand, rule)
        if known is not None:
            verdict, detail = known.verdict, "verified one by one"
        elif verifications.fails_structure(cand, rule):
            verdict, detail = Verdict.INVALID, "fail the rule's own structural check (look-alikes)"
        else:
            verdict, detail = Verdict.UNVERIFIED, "not verified (verification limit per cell)"
        groups[(rule.id, str(verdict))].append(item)
        details.setdefault((rule.id, str(verdict)), detail)
    out: list[CellFinding] = []
    for (rule_id, verdict_name), items in groups.items():
        rule = ruleset.get(rule_id)
        verdict = Verdict(verdict_name)
        first = items[0]
        start, end = min(i.start for i in items), max(i.end for i in items)
        # Its own identity: an allowlist entry for one member does not accept the aggregate.
        digest = hashlib.sha256(f"aggregate:{rule_id}:{verdict_name}".encode())
        for item in items:
            digest.update(fingerprint(item.candidate.secret, rule.kind).encode())
        out.append(
            CellFinding(
                rule_id=rule.id,
                kind=rule.kind,
                severity=derive_severity(rule.severity, verdict),
                start=start,
                end=end,
                fingerprint="sha256:" + digest.hexdigest(),
                preview=preview(first.candidate.secret),
                verdict=verdict,
                detail=f"{len(items)} findings of this rule aggregated (over the cap per cell); they "
                f"{details[(rule_id, verdict_name)]}; the span runs from the first to the last",
                encoding=first.candidate.encoding,
                context=context_snippet(text, first.start, first.end, spans, reach),
                clock=verifications.clock,
                count=len(items),
            )
        )
    return out
