"""Reading stage: find shards and stream their string cells with exact locations."""

from shardscan.reader.cells import LeafCells, flatten_column
from shardscan.reader.discovery import Discovery, Excluded, NotScanned, discover, discover_files
from shardscan.reader.parquet import METADATA_ROW, RowGroupBatch, batch_from_table, iter_row_groups
from shardscan.reader.sources import ShardRef

__all__ = [
    "METADATA_ROW",
    "Discovery",
    "Excluded",
    "NotScanned",
    "discover_files",
    "LeafCells",
    "RowGroupBatch",
    "ShardRef",
    "batch_from_table",
    "discover",
    "flatten_column",
    "iter_row_groups",
]
