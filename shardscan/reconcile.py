"""Reconcile stage: apply the allowlist and the gate policy to raw findings."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from shardscan.allowlist import Allowlist, AllowlistEntry
from shardscan.model import AllowlistRef, Finding, ShardResult, Status
from shardscan.policy import Policy
from shardscan.report import AllowlistSummary, EntryState, ReconciledEntry


def apply_allowlist(
    results: list[ShardResult], allowlist: Allowlist, today: date
) -> tuple[list[ShardResult], AllowlistSummary]:
    """Mark findings an unexpired entry accepts as ``allowlisted`` and give every entry its state.

    A finding is accepted by the first unexpired entry (in file order) that matches it; every
    unexpired entry that matches at least one finding is ``matched``, the others are ``stale``.
    An entry past its ``expires`` date is ``expired`` whatever it matches, and accepts nothing:
    its findings are ``new`` again.
    """
    index = allowlist.by_fingerprint()
    hits: dict[int, int] = {}
    would_hit: dict[int, int] = {}

    def reconcile(finding: Finding) -> Finding:
        accepted: AllowlistEntry | None = None
        for entry in index.get(finding.fingerprint, ()):
            if not entry.matches(finding):
                continue
            if entry.is_expired(today):
                would_hit[entry.index] = would_hit.get(entry.index, 0) + 1
                continue
            hits[entry.index] = hits.get(entry.index, 0) + 1
            accepted = accepted or entry
        if accepted is None:
            if finding.status is Status.NEW and finding.allowlist is None:
                return finding  # as it came (most findings): a copy costs 10 us each, 80 ms per 8000
            return replace(finding, status=Status.NEW, allowlist=None)
        ref = AllowlistRef(accepted.index, accepted.reason, accepted.reviewer, accepted.reviewed.isoformat())
        return replace(finding, status=Status.ALLOWLISTED, allowlist=ref)

    out = [replace(r, findings=tuple(reconcile(f) for f in r.findings)) for r in results]
    matched: list[ReconciledEntry] = []
    stale: list[ReconciledEntry] = []
    expired: list[ReconciledEntry] = []
    for entry in allowlist.entries:
        if entry.is_expired(today):
            expired.append(_reconciled(entry, EntryState.EXPIRED, would_hit.get(entry.index, 0)))
        elif entry.index in hits:
            matched.append(_reconciled(entry, EntryState.MATCHED, hits[entry.index]))
        else:
            stale.append(_reconciled(entry, EntryState.STALE, 0))
    summary = AllowlistSummary(
        path=allowlist.path,
        entries=len(allowlist.entries),
        matched=tuple(matched),
        stale=tuple(stale),
        expired=tuple(expired),
    )
    return out, summary


def _reconciled(entry: AllowlistEntry, state: EntryState, findings: int) -> ReconciledEntry:
    """The entry as reports list it (metadata only), in ``state`` with the findings it matched."""
    # AllowlistEntry.to_dict names exactly the entry's fields of a ReconciledEntry, in its order.
    return ReconciledEntry(**entry.to_dict(), state=state, findings=findings)


def apply_policy(results: list[ShardResult], policy: Policy) -> list[ShardResult]:
    """Set ``blocking`` on every finding according to the policy (after allowlisting)."""
    return [replace(r, findings=tuple(_decided(f, policy.is_blocking(f)) for f in r.findings)) for r in results]


def _decided(finding: Finding, blocking: bool) -> Finding:
    return finding if finding.blocking == blocking else replace(finding, blocking=blocking)
