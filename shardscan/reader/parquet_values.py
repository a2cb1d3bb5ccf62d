"""The values pyarrow decoded from a row group, counted the way the footer counts them (one per definition level)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def leaf_count(dtype: pa.DataType) -> int:
    """How many Parquet leaf columns an Arrow type is stored as."""
    if isinstance(dtype, pa.ExtensionType):
        return leaf_count(dtype.storage_type)
    if pa.types.is_dictionary(dtype):
        return 1
    if pa.types.is_map(dtype):
        return leaf_count(dtype.key_type) + leaf_count(dtype.item_type)
    if pa.types.is_struct(dtype):
        return sum(leaf_count(dtype.field(i).type) for i in range(dtype.num_fields))
    if _is_list(dtype):
        return leaf_count(dtype.value_type)
    return 1


def _is_list(dtype: pa.DataType) -> bool:
    return (pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)
            or getattr(pa.types, "is_list_view", lambda _t: False)(dtype)
            or getattr(pa.types, "is_large_list_view", lambda _t: False)(dtype))


def leaf_slots(array: pa.Array | pa.ChunkedArray) -> list[int]:
    """For each Parquet leaf of ``array``, the values (definition levels) it takes to store it.

    A row of a flat column is one value; a null or empty list is one value; a list of n items is
    the values of its items. This is what each column chunk's ``num_values`` counts, so comparing
    the two tells whether pyarrow decoded every value the pages hold.
    """
    if isinstance(array, pa.ChunkedArray):
        totals = [0] * leaf_count(array.type)
        for chunk in array.chunks:
            totals = [a + b for a, b in zip(totals, leaf_slots(chunk), strict=True)]
        return totals
    return [int(per.sum()) for per in _slots(array)]


def _slots(array: pa.Array) -> list[np.ndarray]:
    """Per leaf, the values each element of ``array`` takes."""
    dtype = array.type
    if isinstance(array, pa.ExtensionArray):
        return _slots(array.storage)
    if pa.types.is_struct(dtype):
        out: list[np.ndarray] = []
        for i in range(dtype.num_fields):
            out += _slots(array.field(i))
        return out
    if pa.types.is_map(dtype) or (_is_list(dtype) and not pa.types.is_dictionary(dtype)):
        if pa.types.is_fixed_size_list(dtype):
            size = dtype.list_size
            offsets = (array.offset + np.arange(len(array) + 1, dtype=np.int64)) * size
        elif hasattr(array, "sizes"):  # list views: offsets and sizes per element
            starts = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
            sizes = np.asarray(array.sizes.to_numpy(zero_copy_only=False), dtype=np.int64)
            return _list_slots(array, starts, starts + sizes, array.values)
        else:
            offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        return _list_slots(array, offsets[:-1], offsets[1:], array.values)
    return [np.ones(len(array), dtype=np.int64)]


def _list_slots(array: pa.Array, starts: np.ndarray, ends: np.ndarray, values: pa.Array) -> list[np.ndarray]:
    nulls = ~np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool) if array.null_count else None
    out = []
    for child in _slots(values):
        cumulative = np.concatenate(([0], np.cumsum(child, dtype=np.int64)))
        per = cumulative[ends] - cumulative[starts]
        per[ends <= starts] = 1  # an empty list is one value
        if nulls is not None:
            per[nulls] = 1  # so is a null one, whatever its offsets say
        out.append(per)
    return out
