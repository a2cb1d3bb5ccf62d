"""Read Arrow IPC files (Feather v2, ``.arrow``) and IPC streams (the Hugging Face datasets cache) batch by batch."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from shardscan.errors import ShardReadError, describe_remote_error
from shardscan.reader.cells import LeafCells
from shardscan.reader.parquet import RowGroupBatch, batch_from_table, schema_metadata_leaves
from shardscan.reader.sources import ShardRef


class ArrowIpcReader:
    """An Arrow IPC shard: schema metadata, then one batch per record batch (row = record index).

    The IPC *file* format is tried first; a shard that is not one is read as an IPC *stream*.
    Both are read in order as one sequence (record batch sizes are unknown until read).
    """

    def __init__(self, shard: ShardRef) -> None:
        self.shard = shard
        self._file: ipc.RecordBatchFileReader | None = None
        self._stream: ipc.RecordBatchStreamReader | None = None
        try:
            self._file = ipc.open_file(shard.open())
        except ShardReadError:
            raise
        except Exception:
            try:
                self._stream = ipc.open_stream(shard.open_stream())
            except ShardReadError:
                raise
            except Exception as exc:
                reason = f"not a readable Arrow IPC file or stream ({describe_remote_error(exc)})"
                raise ShardReadError(shard.display, reason) from None

    @property
    def schema(self) -> pa.Schema:
        """The shard's schema."""
        opened = self._file if self._file is not None else self._stream
        schema: pa.Schema = opened.schema if opened is not None else pa.schema([])
        return schema

    def metadata_leaves(self) -> tuple[LeafCells, ...]:
        """Schema key/value metadata as cells in column ``__metadata__.<key>`` (row -1)."""
        return schema_metadata_leaves(self.schema)

    def batches(self) -> Iterator[RowGroupBatch | ShardReadError]:
        """Each record batch with rows counted from the start of the shard; a read error ends the stream."""
        offset = 0
        index = 0
        while True:
            try:
                if self._file is not None:
                    if index >= self._file.num_record_batches:
                        return
                    batch = self._file.get_batch(index)
                elif self._stream is not None:
                    batch = self._stream.read_next_batch()
                else:
                    return
            except StopIteration:
                return
            except Exception as exc:
                reason = f"record batch unreadable ({describe_remote_error(exc)})"
                yield ShardReadError(self.shard.display, reason, index)
                return
            yield batch_from_table(pa.Table.from_batches([batch]), index, offset)
            offset += batch.num_rows
            index += 1
