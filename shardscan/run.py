"""The run layer: scan shards on an executor (local processes or Ray), replaying unchanged ones from the cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from shardscan import executor
from shardscan.cache import ResultCache, partition
from shardscan.engine import Scanner
from shardscan.errors import ConfigError
from shardscan.model import ShardResult
from shardscan.reader import ShardRef
from shardscan.scanning.items import log_shard

ProgressCallback = Callable[[ShardResult], None]
ENGINES: tuple[str, ...] = ("local", "ray")
# Formats whose results the cache cannot replay: a tar archive's findings name its members (the
# cache names every finding by the file), and which members are read depends on --exclude.
UNCACHED_FORMATS: frozenset[str] = frozenset({"tar"})


def run_shards(
    shards: list[ShardRef],
    scanner: Scanner,
    *,
    engine: str = "local",
    jobs: int | None = 1,
    ray_address: str | None = None,
    on_shard: ProgressCallback | None = None,
    cache: ResultCache | None = None,
) -> list[ShardResult]:
    """Scan shards on ``engine`` and return one result per shard, in shard order.

    ``"local"`` runs ``jobs`` worker processes (``None``: all cores); ``"ray"`` runs Ray tasks on the
    cluster at ``ray_address`` (or a local Ray). With ``cache``, shards whose bytes and
    configuration are unchanged are replayed from it (listed first) and complete fresh results are
    stored. Raises ConfigError for an unknown engine.
    """
    check_engine(engine)

    def execute(todo: list[ShardRef]) -> list[ShardResult]:
        if engine == "ray":
            from shardscan.engines.ray_engine import run_ray  # (start-up: see check_engine)

            return run_ray(todo, scanner, address=ray_address, on_shard=on_shard)
        return executor.run_local(todo, scanner, jobs or executor.default_jobs(), on_shard)

    if cache is None:
        return execute(shards)
    return _replay_or_execute(shards, cache, on_shard, execute)


def check_engine(engine: str) -> None:
    """Raise ConfigError for an unknown engine, or for Ray when it is not installed.

    The Ray engine's module is imported only when it is chosen: a local scan (the pre-commit hook,
    the gate) loads nothing of it (``tests/cli/test_startup.py``).
    """
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if engine == "ray":
        from shardscan.engines.ray_engine import require_ray

        require_ray()


def _replay_or_execute(
    shards: list[ShardRef],
    cache: ResultCache,
    on_shard: ProgressCallback | None,
    execute: Callable[[list[ShardRef]], list[ShardResult]],
) -> list[ShardResult]:
    """Replay unchanged shards from the cache, scan the rest (with ``execute``), store their complete results."""
    replayed, todo = partition(cache, [s for s in shards if s.format not in UNCACHED_FORMATS])
    todo += [(s, None) for s in shards if s.format in UNCACHED_FORMATS]
    for result in replayed:
        log_shard(result, cached=True)
        if on_shard:
            on_shard(result)
    fresh = execute([shard for shard, _ in todo])
    fresh = [
        replace(result, stats=replace(result.stats, cache_rejected=result.stats.cache_rejected + 1))
        if result.shard in cache.rejected_shards else result
        for result in fresh
    ]
    for (shard, content), result in zip(todo, fresh, strict=True):
        if content is not None:
            cache.store(shard, content, result)
    cache.save_index()
    return replayed + fresh
