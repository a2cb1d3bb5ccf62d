"""The benchmark baseline: pyarrow reads every row group and touches every string cell, nothing else.

Prints one JSON line: ``{"bytes": total string bytes, "seconds": time inside the process}``.
It is the physical floor shardscan is compared with: decoding the shards' string columns.
Usage: ``python -m benchmarks.baseline PATH...`` (files or folders of ``*.parquet``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def _string_leaves(array: pa.Array):
    dtype = array.type
    if (pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_binary(dtype)
            or pa.types.is_large_binary(dtype)):
        yield array
    elif pa.types.is_dictionary(dtype):
        yield array.dictionary
    elif pa.types.is_struct(dtype):
        for child in array.flatten():
            yield from _string_leaves(child)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        yield from _string_leaves(array.flatten())


def string_bytes(paths: list[Path]) -> int:
    """Read every row group of every shard and sum the lengths of every string cell."""
    total = 0
    for path in paths:
        parquet = pq.ParquetFile(path)
        for index in range(parquet.num_row_groups):
            table = parquet.read_row_group(index)
            for column in table.columns:
                for chunk in column.chunks:
                    for leaf in _string_leaves(chunk):
                        total += pc.sum(pc.binary_length(leaf)).as_py() or 0
    return total


def shard_paths(args: list[str]) -> list[Path]:
    """Expand files and folders into a sorted list of shard paths."""
    out: list[Path] = []
    for arg in args:
        path = Path(arg)
        out += sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    return out


def main() -> None:
    """Command-line entry point."""
    started = time.perf_counter()
    total = string_bytes(shard_paths(sys.argv[1:]))
    print(json.dumps({"bytes": total, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
