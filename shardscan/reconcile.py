"""Reconcile stage: apply the allowlist and the gate policy to raw findings."""

from __future__ import annotations

from dataclasses import replace

from shardscan.model import ShardResult
from shardscan.policy import Policy


def apply_policy(results: list[ShardResult], policy: Policy) -> list[ShardResult]:
    """Set ``blocking`` on every finding according to the policy (after allowlisting)."""
    return [
        replace(r, findings=tuple(replace(f, blocking=policy.is_blocking(f)) for f in r.findings)) for r in results
    ]
