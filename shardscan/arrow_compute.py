"""The Arrow compute kernels the scan uses, called by name so that ``pyarrow.compute`` is never imported.

Importing ``pyarrow.compute`` generates a Python wrapper for each of Arrow's ~500 kernels, about
40 ms of every run's start-up (a tenth of a small scan), and ``Array.cast``, ``take``, ``filter``
and ``is_valid`` import it on first use. The kernels themselves live in ``pyarrow._compute``,
which ``pyarrow.parquet`` has already loaded; ``pyarrow.compute`` re-exports the same
``call_function``, which is the fallback should a pyarrow release move it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

try:
    from pyarrow._compute import (
        CastOptions,
        MatchSubstringOptions,
        ScalarAggregateOptions,
        call_function,
    )
except ImportError:  # a pyarrow that moved its internals: the public module has the same names
    from pyarrow.compute import (
        CastOptions,
        MatchSubstringOptions,
        ScalarAggregateOptions,
        call_function,
    )


def cast(values: Any, target: pa.DataType) -> Any:
    """``values`` (array or chunked array) as ``target``, refusing lossy conversions like ``Array.cast``."""
    return call_function("cast", [values], CastOptions.safe(target))


def take(values: Any, indices: Any) -> Any:
    """The elements of ``values`` at ``indices`` (an Arrow or Python sequence of integers)."""
    return call_function("take", [values, indices if isinstance(indices, pa.Array) else pa.array(indices)])


def filter_by(values: Any, mask: Any) -> Any:
    """The elements of ``values`` where ``mask`` (booleans) is true."""
    return call_function("filter", [values, mask if isinstance(mask, pa.Array) else pa.array(mask, pa.bool_())])


def is_valid(values: Any) -> Any:
    """Boolean array: which slots are not null."""
    return call_function("is_valid", [values])


def fill_null(values: Any, fill: Any) -> Any:
    """``values`` with nulls replaced by the scalar ``fill``."""
    return call_function("coalesce", [values, pa.scalar(fill, values.type)])


def match_substring_regex(values: Any, pattern: str) -> Any:
    """Boolean array: which strings or binaries hold a match of the RE2 ``pattern`` (null stays null)."""
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def binary_length(values: Any) -> Any:
    """Byte length of each string or binary."""
    return call_function("binary_length", [values])


def total(values: Any) -> Any:
    """The sum of a numeric array, as a scalar (0 when it is empty or all null)."""
    return call_function("sum", [values], ScalarAggregateOptions(skip_nulls=True, min_count=0))


def list_flatten(values: Any) -> Any:
    """The values of a list array's lists, in order (slices and null lists respected, like ``ListArray.flatten``)."""
    return call_function("list_flatten", [values])


def list_parent_indices(values: Any) -> Any:
    """For each element of a list array's values, the index of the list that holds it."""
    return call_function("list_parent_indices", [values])


def list_value_length(values: Any) -> Any:
    """The length of each list (null for a null list)."""
    return call_function("list_value_length", [values])
