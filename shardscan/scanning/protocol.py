"""What work items and text/CSV/tar files need from a Scanner: a Protocol importable without the engine."""

from __future__ import annotations

from typing import Protocol

import pyarrow.parquet as pq

from shardscan.model import BatchResult, ShardResult
from shardscan.reader import RowGroupBatch, ShardRef
from shardscan.scanning.values import Timer


class ShardScanner(Protocol):
    """A compiled rule set able to scan the parts of a shard (``shardscan.engine.Scanner``)."""

    def for_workers(self, workers: int, *, read_threads: bool) -> ShardScanner:
        """This scanner for one of ``workers`` processes sharing the memory budget."""
        ...

    def shard_finding_cap(self) -> int:
        """Findings listed one by one per shard."""
        ...

    def scan_shard(self, shard: ShardRef) -> ShardResult:
        """Scan a whole shard of any format in this process (a tar archive's members are shards too)."""
        ...

    def scan_footer(self, shard: str, parquet: pq.ParquetFile, timer: Timer | None = None) -> BatchResult:
        """Scan a Parquet shard's file metadata and check its footer."""
        ...

    def scan_row_group(
        self, shard: ShardRef, parquet: pq.ParquetFile, index: int, timer: Timer | None = None
    ) -> BatchResult:
        """Read and scan one row group."""
        ...

    def scan_stream(self, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
        """Read and scan a shard that is one sequential stream."""
        ...

    def scan_batch(self, batch: RowGroupBatch, shard: str, timer: Timer | None = None) -> BatchResult:
        """Scan one batch of cells."""
        ...
