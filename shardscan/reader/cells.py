"""Flatten nested Arrow columns into leaf string arrays with vectorised cell locations.

A leaf is every string-like array at any depth of a column (inside lists, structs and maps).
Locations stay columnar: a column path is a template such as ``conversations[{}].content`` plus
one aligned array per ``{}``; only the few cells the prefilter selects are ever formatted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from shardscan import arrow_compute as compute

# Map keys are used in column paths only when they look like identifiers: a key could itself be
# a secret, and a column path is printed everywhere. Other keys are shown by entry index.
_SAFE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,39}")
# Column and struct field names are freer (spaces, any script), but bounded and printable; JSON
# objects read from JSON Lines turn their keys, which can be anything, into field names.
_SAFE_NAME = re.compile(r"[^\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]{1,64}")
_ROLE = re.compile(r"[A-Za-z][A-Za-z0-9_.\- ]{0,31}")

# One argument of a path template, aligned with the cells: positions in lists (an integer array)
# or labels already formatted (field and key labels, whole statistics paths).
PathArg: TypeAlias = np.ndarray | Sequence[str | int]


@dataclass(frozen=True, slots=True)
class LeafCells:
    """One string-like leaf of a column, flattened to a single array of cells.

    ``values`` is string, large_string, binary, large_binary, or a dictionary of those.
    ``rows`` gives each value's row index within the batch. ``path_args`` holds one array per
    ``{}`` placeholder of ``template``; ``roles`` the sibling ``role`` field, when there is one.
    """

    template: str
    values: pa.Array
    rows: np.ndarray
    path_args: tuple[PathArg, ...] = ()
    roles: pa.Array | None = None

    def column_path(self, index: int) -> str:
        """The column path of the cell at ``index`` in ``values``."""
        # Always format, even without arguments: the template escapes braces of column names.
        return self.template.format(*(arg[index] for arg in self.path_args))

    def role(self, index: int) -> str | None:
        """The role of the message the cell at ``index`` belongs to, if known.

        A role is printed next to every finding in the message, so only a value that reads as a
        role name (``user``, ``tool``, ``ipython``) is given; anything else, which could be a
        secret written into the wrong field, is left out (the value is scanned as a cell).
        """
        if self.roles is None:
            return None
        return _role_name(self.roles[index].as_py())

    def locations(self, indices: np.ndarray) -> tuple[list[str], list[str | None]]:
        """The column paths and roles of the cells at ``indices``, converted in a few calls
        (what :meth:`column_path` and :meth:`role` give one cell at a time)."""
        picked = [arg[indices].tolist() if isinstance(arg, np.ndarray) else [arg[i] for i in indices]
                  for arg in self.path_args]
        paths = [self.template.format(*args) for args in zip(*picked, strict=True)] if picked else [
            self.template.format()] * len(indices)
        if self.roles is None:
            return paths, [None] * len(indices)
        roles = compute.take(self.roles, pa.array(indices, pa.int64())).to_pylist()
        return paths, [_role_name(value) for value in roles]


def _role_name(value: object) -> str | None:
    """A role value as printed next to a finding, or None when it does not read as a role name."""
    # Only short values can be role names (32 characters, 128 bytes at most): a long one (a
    # hostile role column) is refused before it could be kept in the cache.
    if not isinstance(value, (str, bytes)) or len(value) > 128:
        return None
    return _short_role_name(value)


@lru_cache(maxsize=256)
def _short_role_name(value: str | bytes) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if _ROLE.fullmatch(value) and not _looks_secret(value) else None


def is_string_like(dtype: pa.DataType) -> bool:
    """True for Arrow types whose values are scanned as text."""
    if pa.types.is_dictionary(dtype):
        return is_string_like(dtype.value_type)
    return (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
        or _is_view(dtype)
    )


def _is_view(dtype: pa.DataType) -> bool:
    return getattr(pa.types, "is_string_view", lambda _t: False)(dtype) or getattr(
        pa.types, "is_binary_view", lambda _t: False
    )(dtype)


def _normalise_leaf(array: pa.Array) -> pa.Array:
    """Cast view and fixed-size types to ones the compute kernels accept."""
    dtype = array.type
    if getattr(pa.types, "is_string_view", lambda _t: False)(dtype):
        return compute.cast(array, pa.large_string())
    if getattr(pa.types, "is_binary_view", lambda _t: False)(dtype) or pa.types.is_fixed_size_binary(dtype):
        return compute.cast(array, pa.large_binary())
    if pa.types.is_dictionary(dtype) and not (
        pa.types.is_string(dtype.value_type)
        or pa.types.is_large_string(dtype.value_type)
        or pa.types.is_binary(dtype.value_type)
        or pa.types.is_large_binary(dtype.value_type)
    ):
        return compute.cast(array, pa.large_string() if "string" in str(dtype.value_type) else pa.large_binary())
    return array


def _is_list(dtype: pa.DataType) -> bool:
    return (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or getattr(pa.types, "is_list_view", lambda _t: False)(dtype)
        or getattr(pa.types, "is_large_list_view", lambda _t: False)(dtype)
    )


def _role_array(array: pa.StructArray, children: list[pa.Array]) -> pa.Array | None:
    for i, fld in enumerate(array.type):
        if fld.name == "role" and is_string_like(fld.type):
            return _normalise_leaf(children[i])
    return None


def escape_template(name: str) -> str:
    """A name as it appears in a path template (braces doubled)."""
    return name.replace("{", "{{").replace("}", "}}")


def flatten_column(name: str, array: pa.Array, position: int = 0) -> Iterator[LeafCells]:
    """Yield every string-like leaf of one top-level column (one chunk of a row-group batch).

    ``position`` is the column's index in the table, its label when its name could be a secret.
    """
    rows = np.arange(len(array), dtype=np.int64)
    label = field_label(name, position)
    if label != name:
        yield from _name_cell(name, array, rows, label, ())
    yield from _flatten(array, rows, escape_template(label), (), None)


def field_label(name: str, position: int) -> str:
    """How a column or struct field appears in a column path: its name, or ``#<position>`` when
    the name could itself be a secret (too long, control characters, a token-like run)."""
    return name if _SAFE_NAME.fullmatch(name) and not _token_like(name) else f"#{position}"


_ANY_LONG_RUN = re.compile(r"[A-Za-z0-9]{24,}")


def _token_like(name: str) -> bool:
    # A long alphanumeric run, or a shorter one holding a digit or in capitals only (AKIA…,
    # hf_…); a descriptive name (conversationHistory, verifier_output_2) is kept.
    if _ANY_LONG_RUN.search(name):
        return True
    return any(re.search(r"[0-9]", run) or run.isupper() for run in _LONG_RUN.findall(name))


def _name_cell(
    name: str, array: pa.Array, rows: np.ndarray, path: str, args: tuple[PathArg, ...]
) -> Iterator[LeafCells]:
    """A field name that is not shown as such, as a cell of its own (``<path>.name``, the path
    ending in ``#<i>``) at every row that holds the field: a JSON key read into a field name is
    scanned like a map key, and reported (and redacted) on each line that has it. One dictionary
    value, so the name is scanned once however many rows hold it."""
    valid = np.flatnonzero(np.asarray(compute.is_valid(array).to_numpy(zero_copy_only=False)))
    if len(valid) == 0:
        return
    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(valid), dtype=np.int32)),
                                            pa.array([name], pa.large_string()))
    yield LeafCells(f"{path}.name", values, rows[valid], tuple(_take(arg, valid) for arg in args))


def _flatten(
    array: pa.Array,
    rows: np.ndarray,
    template: str,
    args: tuple[PathArg, ...],
    roles: pa.Array | None,
) -> Iterator[LeafCells]:
    dtype = array.type
    if is_string_like(dtype):
        yield LeafCells(template, _normalise_leaf(array), rows, args, roles)
        return
    if pa.types.is_struct(dtype):
        children = array.flatten()  # applies the struct's own nulls to its children
        own_roles = _role_array(array, children)
        if own_roles is not None:
            roles = own_roles
        for position, (fld, child) in enumerate(zip(dtype, children, strict=True)):
            label = field_label(fld.name, position)
            if label != fld.name:
                yield from _name_cell(fld.name, child, rows, f"{template}.{label}", args)
            yield from _flatten(child, rows, f"{template}.{escape_template(label)}", args, roles)
        return
    if pa.types.is_map(dtype):
        yield from _flatten_map(array, rows, template, args, roles)
        return
    if _is_list(dtype):
        values, parent, in_list = _unnest(array)
        if len(values) == 0:
            return
        rows = rows[parent]
        args = tuple(_take(arg, parent) for arg in args) + (in_list,)
        roles = compute.take(roles, parent) if roles is not None else None
        yield from _flatten(values, rows, template + "[{}]", args, roles)
        return
    if pa.types.is_union(dtype):
        yield from _flatten_union(array, rows, template, args, roles)
        return
    # Numbers, booleans, dates and the like cannot carry a credential: not cells.


def _flatten_union(
    array: pa.Array,
    rows: np.ndarray,
    template: str,
    args: tuple[PathArg, ...],
    roles: pa.Array | None,
) -> Iterator[LeafCells]:
    """Each child's *active* values only, aligned with their rows.

    A sparse child holds a slot for every row, but only the rows whose type code selects it are
    values (the others are filler that must not be reported); a dense child is indexed through
    the value offsets, so its positions are not row positions.
    """
    dtype = array.type
    dense = dtype.mode == "dense"
    # Read the buffers: pyarrow's type_codes/offsets accessors ignore the offset of a sliced union.
    window = slice(array.offset, array.offset + len(array))
    buffers = array.buffers()
    codes = np.frombuffer(buffers[1], dtype=np.int8)[window]
    offsets = np.frombuffer(buffers[2], dtype=np.int32)[window] if dense else None
    for i in range(dtype.num_fields):
        active = np.flatnonzero(codes == dtype.type_codes[i])
        if len(active) == 0:
            continue
        child = array.field(i)
        values = compute.take(child, offsets[active] if offsets is not None else active)
        child_roles = compute.take(roles, active) if roles is not None else None
        label = field_label(dtype[i].name, i)
        child_args = tuple(_take(arg, active) for arg in args)
        if label != dtype[i].name:
            yield from _name_cell(dtype[i].name, values, rows[active], f"{template}.{label}", child_args)
        yield from _flatten(values, rows[active], f"{template}.{escape_template(label)}", child_args, child_roles)


def _take(arg: PathArg, parent: np.ndarray) -> PathArg:
    if isinstance(arg, np.ndarray):
        taken: np.ndarray = arg[parent]
        return taken
    return [arg[i] for i in parent]


def _unnest(array: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Values of a list array with, for each value, its parent index and its index in the list."""
    dtype = array.type
    if pa.types.is_fixed_size_list(dtype):
        # flatten() keeps the slots behind null lists of a fixed-size list; drop them here.
        size = dtype.list_size
        values = array.values.slice(array.offset * size, len(array) * size)
        parent = np.repeat(np.arange(len(array), dtype=np.int64), size)
        position = np.tile(np.arange(size, dtype=np.int64), len(array))
        if array.null_count:
            keep = np.repeat(np.asarray(compute.is_valid(array).to_numpy(zero_copy_only=False)), size)
            values = compute.filter_by(values, keep)
            parent, position = parent[keep], position[keep]
        return values, parent, position
    values = compute.list_flatten(array)
    parent = compute.list_parent_indices(array).to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = compute.fill_null(compute.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    position = np.arange(len(values), dtype=np.int64) - starts[parent] if len(values) else np.zeros(0, np.int64)
    return values, parent, position


def _flatten_map(
    array: pa.Array,
    rows: np.ndarray,
    template: str,
    args: tuple[PathArg, ...],
    roles: pa.Array | None,
) -> Iterator[LeafCells]:
    dtype = array.type
    entry_type = pa.struct([pa.field("key", dtype.key_type), pa.field("value", dtype.item_type)])
    as_list = compute.cast(array, pa.list_(entry_type))
    entries, parent, position = _unnest(as_list)
    if len(entries) == 0:
        return
    rows = rows[parent]
    args = tuple(_take(arg, parent) for arg in args)
    roles = compute.take(roles, parent) if roles is not None else None
    keys, items = entries.flatten()
    labels = [key_label(key, pos) for key, pos in zip(keys.to_pylist(), position, strict=True)]
    yield from _flatten(keys, rows, template + "{{{}}}.key", args + (_entry_labels(position),), roles)
    yield from _flatten(items, rows, template + "{{{}}}", args + (labels,), roles)


def _entry_labels(position: np.ndarray) -> list[str]:
    return [f"#{p}" for p in position]


def key_label(key: object, position: int) -> str:
    """How a map or metadata key appears in a column path: itself when it looks like an identifier,
    else ``#<position>``."""
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    if isinstance(key, (int, float)) or (isinstance(key, str) and _SAFE_KEY.fullmatch(key) and not _looks_secret(key)):
        return str(key)
    return f"#{position}"


_LONG_RUN = re.compile(r"[A-Za-z0-9]{16,}")


def _looks_secret(key: str) -> bool:
    # Long unbroken alphanumeric runs (AKIA…, tokens) stay out of paths; OPENAI_API_KEY is fine.
    return _LONG_RUN.search(key) is not None
