"""Reading stage: find shards and stream their string cells with exact locations.

Two entry points, one per job of the stage:

* :func:`discover_files` turns the paths and URLs a user gives into a :class:`Discovery`: every
  file is a shard to scan (a :class:`ShardRef`), excluded, or not scanned (why).
* :func:`open_shard` opens one shard in its format as a :class:`ShardReader`: its file-level
  metadata cells (row -1) and its rows as :class:`RowGroupBatch` es of :class:`LeafCells` (flattened
  string leaves with columnar locations); a part that cannot be read is yielded as its
  ``ShardReadError``. Parquet row groups are also read one at a time, as work items, through
  :mod:`shardscan.reader.parquet` (``open_parquet``, ``iter_row_group_slices``, ``footer_integrity``).

Dependencies point down: this package imports :mod:`shardscan.model` and :mod:`shardscan.errors`,
never the engine. Remote filesystems (:mod:`shardscan.reader.remote`) load only for URLs.
"""

from shardscan.model import NotScanned
from shardscan.reader.cells import LeafCells, flatten_column
from shardscan.reader.discovery import Discovery, Excluded, discover, discover_files
from shardscan.reader.formats import ShardReader, open_shard
from shardscan.reader.parquet import RowGroupBatch, batch_from_table, iter_row_groups
from shardscan.reader.parquet_integrity import METADATA_ROW
from shardscan.reader.sources import ShardRef

__all__ = [
    "METADATA_ROW",
    "Discovery",
    "Excluded",
    "NotScanned",
    "discover_files",
    "LeafCells",
    "RowGroupBatch",
    "ShardReader",
    "ShardRef",
    "batch_from_table",
    "discover",
    "flatten_column",
    "iter_row_groups",
    "open_shard",
]
