"""One reader interface over every input format, and the registry from format name to reader."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from shardscan.errors import ShardReadError
from shardscan.reader.arrow_ipc import ArrowIpcReader
from shardscan.reader.cells import LeafCells
from shardscan.reader.jsonl import JsonlReader
from shardscan.reader.parquet import ParquetReader, RowGroupBatch
from shardscan.reader.sources import InputFormat, ShardRef


class ShardReader(Protocol):
    """An opened shard: its file-level metadata cells and its rows in batches, in order.

    Parquet row groups are also read independently, as work items (``shardscan.executor``); the
    other formats are read only through ``batches()``.
    """

    shard: ShardRef

    def metadata_leaves(self) -> tuple[LeafCells, ...]:
        """File-level key/value metadata as cells in row -1, if the format has any."""
        ...

    def batches(self) -> Iterator[RowGroupBatch | ShardReadError]:
        """Every batch in order. A part that cannot be read is yielded as its error (and reading
        goes on where it can); a stream that breaks yields its error last."""
        ...


def _json(shard: ShardRef) -> ShardReader:
    return JsonlReader(shard, documents=True)


READERS: dict[InputFormat, Callable[[ShardRef], ShardReader]] = {
    InputFormat.PARQUET: ParquetReader,
    InputFormat.JSONL: JsonlReader,
    InputFormat.JSON: _json,
    InputFormat.ARROW: ArrowIpcReader,
}


def open_shard(shard: ShardRef) -> ShardReader:
    """Open a shard with the reader of its format; raise ShardReadError naming it when that fails."""
    try:
        reader = READERS[shard.format]
    except KeyError:
        raise ShardReadError(shard.display, f"unknown input format {str(shard.format)!r}") from None
    return reader(shard)
