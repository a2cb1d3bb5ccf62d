"""Property tests: random nested schemas and contents are read completely, with exact locations."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardscan.engine import Scanner
from shardscan.reader import METADATA_ROW
from shardscan.reader.parquet import batch_from_table
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand

# Hypothesis fuzzing: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

TOKEN = expand("{{hf}}", seed="fuzz")
RULESET = load_ruleset()

names = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
leaf_types = st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.int32(), pa.float64()])


def types(depth: int = 3) -> st.SearchStrategy[pa.DataType]:
    if depth == 0:
        return leaf_types
    inner = types(depth - 1)
    return st.one_of(
        leaf_types,
        inner.map(pa.list_),
        inner.map(pa.large_list),
        st.lists(st.tuples(names, inner), min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
            lambda fields: pa.struct([pa.field(n, t) for n, t in fields])
        ),
        inner.map(lambda t: pa.map_(pa.string(), t)),
    )


def values(dtype: pa.DataType, draw) -> object:
    if draw(st.integers(0, 6)) == 0:
        return None
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return draw(st.sampled_from(["", "plain", "héllo wörld", f"key {TOKEN} end", "hf_hub_download"]))
    if pa.types.is_binary(dtype):
        return draw(st.sampled_from([b"", b"\xff\xfe", f"x {TOKEN}".encode(), b"bytes"]))
    if pa.types.is_integer(dtype):
        return draw(st.integers(-5, 5))
    if pa.types.is_floating(dtype):
        return 1.5
    if pa.types.is_map(dtype):
        n = draw(st.integers(0, 2))
        return [(f"k{i}", values(dtype.item_type, draw)) for i in range(n)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [values(dtype.value_type, draw) for _ in range(draw(st.integers(0, 3)))]
    if pa.types.is_struct(dtype):
        return {f.name: values(f.type, draw) for f in dtype}
    raise AssertionError(dtype)


def expected_cells(value: object, dtype: pa.DataType, path: str) -> list[tuple[str, str]]:
    """Independent walk of Python values: (column path, text) of every non-null string leaf."""
    if value is None:
        return []
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return [(path, value)]
    if pa.types.is_binary(dtype):
        return [(path, value.decode("utf-8", "replace"))]
    if pa.types.is_map(dtype):
        out = []
        for i, (key, item) in enumerate(value):
            out.append((f"{path}{{#{i}}}.key", key))
            out += expected_cells(item, dtype.item_type, f"{path}{{{key}}}")
        return out
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [c for i, v in enumerate(value) for c in expected_cells(v, dtype.value_type, f"{path}[{i}]")]
    if pa.types.is_struct(dtype):
        return [c for f in dtype for c in expected_cells(value[f.name], f.type, f"{path}.{f.name}")]
    return []


@st.composite
def tables(draw) -> pa.Table:
    fields = draw(st.lists(st.tuples(names, types()), min_size=1, max_size=3, unique_by=lambda f: f[0]))
    schema = pa.schema([pa.field(n, t) for n, t in fields])
    rows = [{f.name: values(f.type, draw) for f in schema} for _ in range(draw(st.integers(0, 6)))]
    return pa.Table.from_pylist(rows, schema=schema)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4))
def test_every_string_leaf_is_a_cell_at_its_exact_location(table: pa.Table, row_group_size: int):
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=row_group_size)
    read = pq.ParquetFile(io.BytesIO(buffer.getvalue()))

    expected = sorted(
        (row, path, text)
        for row, record in enumerate(table.to_pylist())
        for name in table.column_names
        for path, text in expected_cells(record[name], table.schema.field(name).type, name)
    )
    seen = []
    offset = 0
    for index in range(read.num_row_groups):
        batch = batch_from_table(read.read_row_group(index), index, offset)
        for leaf in batch.leaves:
            for i in range(len(leaf.values)):
                value = leaf.values[i].as_py()
                if value is None:
                    continue
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                seen.append((offset + int(leaf.rows[i]), leaf.column_path(i), text))
        offset += batch.num_rows
    assert sorted(seen) == expected

    result = Scanner(RULESET).scan_table(table)
    planted = sorted({(row, path) for row, path, text in expected if TOKEN in text and "{#" not in path})
    found = sorted({(f.location.row, f.location.column) for f in result.findings})
    assert found == planted
    assert result.issues == ()
    assert all(f.location.row != METADATA_ROW for f in result.findings)
