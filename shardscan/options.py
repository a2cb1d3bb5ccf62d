"""Every knob of a scan (``ScanOptions``) and its defaults, shared by the engine, the run layer and the cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from shardscan.decoders import DecodeLimits
from shardscan.known_secrets import KnownSecret

DEFAULT_MEMORY_BUDGET = 2 * 1024**3
# Findings listed one by one per cell and per shard (``--max-findings-per-cell``/``-shard``).
# Beyond, findings of one shape are aggregated into one finding with a count and the scan reports
# a "truncated" issue. A real cell holds a handful of secrets and a real shard a few hundred
# findings; a flood of look-alikes (a hostile cell of a million ``ghp_…``) would otherwise cost a
# finding object, a context snippet and a report entry each (4.8 GB and 239 s for a million).
DEFAULT_MAX_FINDINGS_PER_CELL = 1000
DEFAULT_MAX_FINDINGS_PER_SHARD = 10000


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """Every knob of a scan, passed explicitly (no global settings)."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    regex_timeout: float = 2.0
    decode: DecodeLimits = field(default_factory=DecodeLimits)
    # Cells longer than this are scanned in overlapping windows, so that no secret is lost at a
    # window boundary as long as it is shorter than the overlap.
    window_chars: int = 4 * 1024 * 1024
    window_overlap: int = 64 * 1024
    # A candidate cell longer than this is scanned in windows around the prefilter's hits
    # (``shardscan.hit_windows``) instead of whole; None: always whole (the same findings, slower).
    hit_windows_above: int | None = 4 * 1024
    # Attach plaintext to findings for local manual review (``--show-secrets``); never in CI.
    reveal_secrets: bool = False
    # Bytes the scan's data may take, shared by all worker processes: it sets how many rows of a
    # row group are read at once, and a row group whose single rows cannot fit is not read (a
    # limit hit). See ``Scanner.slice_bytes`` and ``scanning.budget.over_budget``.
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    # Worker processes sharing ``memory_budget`` (set by the executor; does not change results).
    workers: int = 1
    # Whether pyarrow may decode a row group's columns on its own thread pool. The executor turns
    # it off when every requested core already runs a worker (``--jobs 1`` means one core), and
    # leaves it on when there are fewer work items than requested cores (does not change results).
    read_threads: bool = True
    # Folder of sealed compiled pattern databases (Hyperscan) to reuse, or None to compile them in
    # memory and read no file (the library default, and ``--no-cache``). Does not change results.
    pattern_cache: Path | None = None
    # Caps on findings listed one by one (see DEFAULT_MAX_FINDINGS_PER_CELL).
    max_findings_per_cell: int = DEFAULT_MAX_FINDINGS_PER_CELL
    max_findings_per_shard: int = DEFAULT_MAX_FINDINGS_PER_SHARD
    # Your own secrets (``--known-secrets``): every occurrence of each is a blocking finding. The
    # values are left out of repr, so the result cache is keyed on their fingerprints only.
    known_secrets: tuple[KnownSecret, ...] = ()

    def __post_init__(self) -> None:
        # A clock without a timezone is taken as UTC: expiry claims are UTC instants, and comparing
        # a naive clock with them would fail every time check.
        if self.now.tzinfo is None:
            object.__setattr__(self, "now", self.now.replace(tzinfo=UTC))
