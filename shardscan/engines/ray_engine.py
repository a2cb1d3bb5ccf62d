"""The Ray engine: the executor's (shard, row group) work items as Ray tasks, assembled in the driver.

The driver discovers shards (listing object stores is cheap); one task per shard plans its work
items (``scanning.items.plan_shard``: Parquet row groups plus the footer's metadata; a JSONL or
Arrow stream, a text or CSV file, a tar archive with all its members is one item); one task per
item scans it with ``scanning.items.scan_item`` and the same Scanner the local engine uses; the
driver assembles each shard's results in item order (``scanning.items.assemble``). Findings, issues
and counts are therefore identical to a local scan. A task that fails (worker died, object lost,
out of memory) becomes an "unreadable" issue for its item: exit code 3, never a crash and never a
silently missing shard.

Workers must be able to import shardscan and reach the shards: install shardscan in the
cluster's image (or ``ray job submit --runtime-env-json '{"pip": ["shardscan"]}'``) and scan
object-store URLs, whose credentials come from each worker's own environment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from shardscan.engine import Scanner
from shardscan.errors import ConfigError, describe_exception
from shardscan.model import IssueKind, ScanIssue, ShardResult
from shardscan.reader.sources import ShardRef
from shardscan.scanning.items import (
    FOOTER,
    STREAM,
    FooterCache,
    ItemResult,
    ShardPlan,
    WorkItem,
    assemble,
    plan_shard,
    scan_item,
)

INSTALL_HINT = "the ray engine needs Ray: pip install 'shardscan[ray]' (or pip install ray)"

# Per worker process: the Scanner of the current scan (deserialised once, not once per task: its
# compiled patterns are rebuilt on unpickling) and the recently opened Parquet footers.
_worker_scanner: tuple[str, Scanner] | None = None
_worker_footers = FooterCache()


def require_ray() -> ModuleType:
    """Import Ray, or raise ConfigError with the install command."""
    try:
        import ray
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def scan_item_in_worker(boxed_scanner: list[Any], item: WorkItem) -> ItemResult:
    """A Ray task: scan one work item. The Scanner's object ref comes boxed in a list so that Ray
    does not resolve it for every task; each worker fetches it once per scan."""
    global _worker_scanner
    import ray

    ref = boxed_scanner[0]
    if _worker_scanner is None or _worker_scanner[0] != ref.hex():
        _worker_scanner = (ref.hex(), ray.get(ref))
    return scan_item(_worker_scanner[1], item, _worker_footers)


def run_ray(
    shards: list[ShardRef],
    scanner: Scanner,
    *,
    address: str | None = None,
    on_shard: Callable[[ShardResult], None] | None = None,
) -> list[ShardResult]:
    """Scan shards as Ray tasks and return one result per shard, in the input order.

    Connects to ``address`` (``auto``, ``ray://host:10001``, ``host:6379``) or, without one, uses
    the Ray already initialised in this process or starts a local one (shut down afterwards).
    """
    ray = require_ray()
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
        started_here = True
    try:
        return _run(ray, shards, scanner, on_shard)
    finally:
        if started_here:
            ray.shutdown()


def _run(
    ray: ModuleType, shards: list[ShardRef], scanner: Scanner, on_shard: Callable[[ShardResult], None] | None
) -> list[ShardResult]:
    plan_task = ray.remote(plan_shard).options(max_retries=2)
    scan_task = ray.remote(scan_item_in_worker).options(max_retries=2)
    boxed = [ray.put(scanner)]
    plan_refs = [plan_task.remote(shard) for shard in shards]
    submitted: list[tuple[ShardPlan, list[tuple[WorkItem, object]]]] = []
    for shard, plan_ref in zip(shards, plan_refs, strict=True):
        try:
            plan = ray.get(plan_ref)
        except Exception as exc:  # the planning task itself failed (worker died): the shard is unread
            issue = ScanIssue(shard.display, IssueKind.UNREADABLE, f"ray task failed ({describe_exception(exc)})")
            plan = ShardPlan(shard, issue=issue)
        submitted.append((plan, [(item, scan_task.remote(boxed, item)) for item in plan.items]))
    results = []
    for plan, items in submitted:
        item_results = []
        for item, ref in items:
            try:
                item_results.append(ray.get(ref))
            except Exception as exc:  # RayTaskError, WorkerCrashedError, ObjectLostError...
                row_group = None if item.row_group in (FOOTER, STREAM) else item.row_group
                reason = f"ray task failed ({describe_exception(exc)})"
                issue = ScanIssue(item.shard.display, IssueKind.UNREADABLE, reason, row_group)
                item_results.append(ItemResult(item, issues=(issue,)))
        result = assemble(plan, item_results, scanner.shard_finding_cap())
        results.append(result)
        if on_shard:
            on_shard(result)
    return results
