"""Reader: every string-like leaf at any depth is a cell with an exact (row, column path, role).

Each test writes a real Parquet shard with pyarrow, scans it with the real engine, and compares the
exact set of finding locations (or the exact list of cells) with what the issue promises.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.engine import Scanner
from shardscan.reader import METADATA_ROW, discover, iter_row_groups
from shardscan.reader.parquet import metadata_leaves, open_parquet
from shardscan.reader.sources import ShardRef
from shardscan.synth import expand

TOKEN = expand("{{github:ghp_}}", seed="reader")
OTHER = expand("{{hf}}", seed="reader")
MESSAGE = pa.struct([pa.field("content", pa.string()), pa.field("role", pa.string())])


@pytest.fixture(scope="module")
def scanner(ruleset) -> Scanner:
    return Scanner(ruleset)


def write(tmp_path: Path, table: pa.Table, name: str = "shard.parquet", **kwargs) -> ShardRef:
    path = tmp_path / name
    pq.write_table(table, path, **kwargs)
    return ShardRef(display=name, path=str(path))


def located(result) -> list[tuple[int, str, str | None, int, int]]:
    """(row, column, role, start, end) of every finding, in report order."""
    assert result.issues == ()
    return [(f.location.row, f.location.column, f.location.role, f.start, f.end) for f in result.findings]


def cells(shard: ShardRef) -> list[tuple[int, str, str | None, object]]:
    """Every non-null cell of a shard as (row within shard, column path, role, value)."""
    out = []
    for batch in iter_row_groups(shard):
        assert not isinstance(batch, Exception)
        for leaf in batch.leaves:
            # The engine locates its selected cells in bulk; that must agree with one at a time.
            paths, roles = leaf.locations(np.arange(len(leaf.values), dtype=np.int64))
            for i in range(len(leaf.values)):
                assert (paths[i], roles[i]) == (leaf.column_path(i), leaf.role(i))
                value = leaf.values[i].as_py()
                if value is not None:
                    out.append((batch.row_offset + int(leaf.rows[i]), leaf.column_path(i), leaf.role(i), value))
    return sorted(out, key=lambda c: (c[0], c[1]))


# ---- string-like leaf types ---------------------------------------------------------------------

STRING_TYPES = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "string_view": pa.string_view(),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    "dictionary_int8": pa.dictionary(pa.int8(), pa.string()),
}


@pytest.mark.parametrize("type_name", list(STRING_TYPES))
def test_every_string_type_is_scanned_with_exact_rows(tmp_path, scanner, type_name):
    values = ["hello", None, f"token: {TOKEN}", "world", f"token: {TOKEN}"]
    table = pa.table({"text": pa.array(values, type=STRING_TYPES[type_name])})
    shard = write(tmp_path, table)
    assert pq.read_schema(shard.path).field("text").type == STRING_TYPES[type_name]  # survives the round trip
    result = scanner.scan_shard(shard)
    assert located(result) == [(2, "text", None, 7, 47), (4, "text", None, 7, 47)]
    assert result.stats.cells == 4  # the null is not a cell


@pytest.mark.parametrize("dtype", [pa.binary(), pa.large_binary(), pa.binary_view()], ids=str)
def test_binary_cells_are_decoded_as_utf8_with_replacement(tmp_path, scanner, dtype):
    # Two invalid bytes, then a multi-byte character, then the token: offsets count characters
    # of the decoded text (each invalid byte becomes one U+FFFD, "é" is one character).
    raw = b"\xff\xfe" + "é ".encode() + TOKEN.encode() + b" \xc3"
    table = pa.table({"blob": pa.array([b"\x00\x01", None, raw], type=dtype)})
    result = scanner.scan_shard(write(tmp_path, table))
    assert located(result) == [(2, "blob", None, 4, 44)]


def test_binary_with_only_invalid_utf8_does_not_crash(tmp_path, scanner):
    table = pa.table({"blob": pa.array([bytes(range(256)) * 4, b"\x80" * 1000], type=pa.binary())})
    result = scanner.scan_shard(write(tmp_path, table))
    assert result.findings == () and result.issues == ()
    assert result.stats.cells == 2


# ---- nesting: lists, structs, maps ---------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    [pa.list_(pa.string()), pa.large_list(pa.string()), pa.list_(pa.large_string()),
     pa.list_(pa.dictionary(pa.int32(), pa.string()))],
    ids=str,
)
def test_list_elements_are_cells_with_bracket_index(tmp_path, scanner, dtype):
    values = [["a", "b", TOKEN], None, [], [None, TOKEN], ["x"]]
    result = scanner.scan_shard(write(tmp_path, pa.table({"items": pa.array(values, type=dtype)})))
    assert located(result) == [(0, "items[2]", None, 0, 40), (3, "items[1]", None, 0, 40)]


def test_fixed_size_list_with_null_lists_and_null_items(tmp_path, scanner):
    dtype = pa.list_(pa.string(), 3)
    values = [["a", "b", "c"], None, [None, TOKEN, None], [TOKEN, "x", "y"]]
    result = scanner.scan_shard(write(tmp_path, pa.table({"triple": pa.array(values, type=dtype)})))
    assert located(result) == [(2, "triple[1]", None, 0, 40), (3, "triple[0]", None, 0, 40)]


def test_struct_fields_are_dotted_paths_and_null_structs_hide_children(tmp_path, scanner):
    dtype = pa.struct([pa.field("meta", pa.struct([pa.field("note", pa.string()), pa.field("n", pa.int64())])),
                       pa.field("title", pa.string())])
    values = [
        {"meta": {"note": TOKEN, "n": 1}, "title": "t"},
        None,
        {"meta": None, "title": f"title {TOKEN}"},
        {"meta": {"note": None, "n": None}, "title": None},
    ]
    result = scanner.scan_shard(write(tmp_path, pa.table({"info": pa.array(values, type=dtype)})))
    assert located(result) == [(0, "info.meta.note", None, 0, 40), (2, "info.title", None, 6, 46)]


def test_map_values_are_addressed_by_key_and_keys_are_cells_too(tmp_path, scanner):
    dtype = pa.map_(pa.string(), pa.string())
    values = [
        [("OPENAI_API_KEY", "none"), ("GITHUB_TOKEN", TOKEN)],
        None,
        [],
        # A key that is itself a secret: scanned as a key cell, never printed in a column path.
        [("safe", "v"), (TOKEN, "value of an odd key"), ("has space", f"x {TOKEN}")],
    ]
    result = scanner.scan_shard(write(tmp_path, pa.table({"env": pa.array(values, type=dtype)})))
    assert located(result) == [
        (0, "env{GITHUB_TOKEN}", None, 0, 40),
        (3, "env{#1}.key", None, 0, 40),
        (3, "env{#2}", None, 2, 42),
    ]
    assert all(TOKEN not in f.location.column for f in result.findings)


def test_map_with_nested_list_values(tmp_path, scanner):
    dtype = pa.map_(pa.string(), pa.list_(pa.string()))
    values = [[("headers", ["a", f"Authorization: token {TOKEN}"])], [("headers", None)]]
    result = scanner.scan_shard(write(tmp_path, pa.table({"req": pa.array(values, type=dtype)})))
    assert located(result) == [(0, "req{headers}[1]", None, 21, 61)]


def test_conversations_paths_roles_and_nulls_at_every_level(tmp_path, scanner):
    values = [
        [{"role": "system", "content": "be nice"}, {"role": "user", "content": "hi"},
         {"role": "assistant", "content": "ok"}, {"role": "tool", "content": f"GITHUB_TOKEN={TOKEN}"}],
        None,  # null list
        [],  # empty list
        [None, {"role": None, "content": TOKEN}, {"role": "user", "content": None}],  # null message, null role
        [{"role": "assistant", "content": f"{TOKEN} and {OTHER}"}],
    ]
    table = pa.table({"conversations": pa.array(values, type=pa.list_(MESSAGE))})
    result = scanner.scan_shard(write(tmp_path, table))
    assert [(f.rule_id, *loc) for f, loc in zip(result.findings, located(result), strict=True)] == [
        ("github-pat", 0, "conversations[3].content", "tool", 13, 53),
        ("github-pat", 3, "conversations[1].content", None, 0, 40),
        ("github-pat", 4, "conversations[0].content", "assistant", 0, 40),
        ("huggingface-token", 4, "conversations[0].content", "assistant", 45, 82),
    ]


def test_role_sibling_of_any_string_type_and_nested_leaves_inherit_it(tmp_path, scanner):
    message = pa.struct([
        pa.field("role", pa.dictionary(pa.int32(), pa.large_string())),
        pa.field("content", pa.large_string()),
        pa.field("tool_calls",
                 pa.list_(pa.struct([pa.field("name", pa.string()), pa.field("arguments", pa.string())]))),
    ])
    values = [[
        {"role": "user", "content": "run it", "tool_calls": None},
        {"role": "assistant", "content": None,
         "tool_calls": [{"name": "bash", "arguments": "ls"}, {"name": "bash", "arguments": f"export T={TOKEN}"}]},
    ]]
    table = pa.table({"messages": pa.array(values, type=pa.large_list(message))})
    result = scanner.scan_shard(write(tmp_path, table))
    assert located(result) == [(0, "messages[1].tool_calls[1].arguments", "assistant", 9, 49)]


def test_arbitrarily_nested_schema_has_exact_paths(tmp_path, scanner):
    leaf_map = pa.map_(pa.string(), pa.list_(pa.list_(pa.binary())))
    dtype = pa.struct([
        pa.field("runs", pa.large_list(pa.struct([
            pa.field("role", pa.string()),
            pa.field("steps",
                     pa.list_(pa.struct([pa.field("env", leaf_map), pa.field("pair", pa.list_(pa.string(), 2))]))),
        ]))),
    ])
    values = [
        {"runs": [
            {"role": "tool", "steps": [
                {"env": [("A", [[b"a"], None])], "pair": ["p", "q"]},
                {"env": [("B", [[], [b"b", TOKEN.encode()]])], "pair": None},
            ]},
        ]},
        {"runs": None},
        {"runs": [None, {"role": None, "steps": [{"env": None, "pair": [None, TOKEN]}]}]},
    ]
    shard = write(tmp_path, pa.table({"doc": pa.array(values, type=dtype)}))
    result = scanner.scan_shard(shard)
    assert located(result) == [
        (0, "doc.runs[0].steps[1].env{B}[1][1]", "tool", 0, 40),
        (2, "doc.runs[1].steps[0].pair[1]", None, 0, 40),
    ]
    # Every non-null string-like leaf is a cell, at its exact path (non-string leaves are not).
    assert [(r, c, v) for r, c, _, v in cells(shard)] == [
        (0, "doc.runs[0].role", "tool"),
        (0, "doc.runs[0].steps[0].env{#0}.key", "A"),
        (0, "doc.runs[0].steps[0].env{A}[0][0]", b"a"),
        (0, "doc.runs[0].steps[0].pair[0]", "p"),
        (0, "doc.runs[0].steps[0].pair[1]", "q"),
        (0, "doc.runs[0].steps[1].env{#0}.key", "B"),
        (0, "doc.runs[0].steps[1].env{B}[1][0]", b"b"),
        (0, "doc.runs[0].steps[1].env{B}[1][1]", TOKEN.encode()),
        (2, "doc.runs[1].steps[0].pair[1]", TOKEN),
    ]


def test_column_names_with_template_characters(tmp_path, scanner):
    table = pa.table({"we{ir}d.name": pa.array([TOKEN]), "x": pa.array([[{"a{0}": TOKEN}]],
                      type=pa.list_(pa.struct([pa.field("a{0}", pa.string())])))})
    result = scanner.scan_shard(write(tmp_path, table))
    assert located(result) == [(0, "we{ir}d.name", None, 0, 40), (0, "x[0].a{0}", None, 0, 40)]


def test_non_string_columns_are_not_cells(tmp_path, scanner):
    table = pa.table({"n": [1, 2], "f": [0.5, None], "b": [True, False], "s": ["a", None]})
    result = scanner.scan_shard(write(tmp_path, table))
    assert result.stats.cells == 1 and result.stats.rows == 2


# ---- row groups ---------------------------------------------------------------------------------


def test_row_indices_are_within_the_shard_across_row_groups(tmp_path, scanner):
    planted = {0, 6, 7, 13, 24}
    rows = [[{"role": "user", "content": "q"}] * (i % 3)
            + [{"role": "tool", "content": TOKEN if i in planted else "no"}]
            for i in range(25)]
    shard = write(tmp_path, pa.table({"conversations": pa.array(rows, type=pa.list_(MESSAGE))}), row_group_size=7)
    assert pq.ParquetFile(shard.path).metadata.num_row_groups == 4
    result = scanner.scan_shard(shard)
    assert located(result) == [(i, f"conversations[{i % 3}].content", "tool", 0, 40) for i in sorted(planted)]
    assert (result.stats.row_groups, result.stats.rows) == (4, 25)


def test_empty_row_groups_do_not_shift_row_indices(tmp_path, scanner):
    schema = pa.schema([pa.field("text", pa.string())])
    path = tmp_path / "shard.parquet"
    with pq.ParquetWriter(path, schema) as writer:
        writer.write_table(pa.table({"text": ["a", TOKEN]}, schema=schema))
        writer.write_table(pa.table({"text": pa.array([], pa.string())}, schema=schema))
        writer.write_table(pa.table({"text": [None, None, TOKEN]}, schema=schema))
    meta = pq.ParquetFile(path).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [2, 0, 3]
    result = scanner.scan_shard(ShardRef("shard.parquet", str(path)))
    assert located(result) == [(1, "text", None, 0, 40), (4, "text", None, 0, 40)]
    assert (result.stats.row_groups, result.stats.rows, result.stats.cells) == (3, 5, 3)


def test_shard_with_zero_rows_is_scanned_clean(tmp_path, scanner):
    shard = write(tmp_path, pa.table({"text": pa.array([], pa.string())}))
    result = scanner.scan_shard(shard)
    assert result.findings == () and result.issues == () and result.stats.rows == 0


# ---- file key/value metadata --------------------------------------------------------------------


def test_file_metadata_is_scanned_as_row_minus_one(tmp_path, scanner):
    long_key = "k" * 80
    table = pa.table({"text": ["clean"]}).replace_schema_metadata(
        {"note": f"uploaded by {TOKEN}", "clean": "nothing here", long_key: OTHER, TOKEN: "a key that is a secret"}
    )
    shard = write(tmp_path, table)
    # Entries are numbered in file order, without the schema pyarrow adds itself.
    order = [k.decode() for k in pq.ParquetFile(shard.path).metadata.metadata if k != b"ARROW:schema"]
    assert sorted(order) == sorted(["note", "clean", long_key, TOKEN])
    result = scanner.scan_shard(shard)
    assert METADATA_ROW == -1
    assert sorted(located(result)) == sorted([
        (-1, "__metadata__.note", None, 12, 52),
        (-1, f"__metadata__.#{order.index(long_key)}", None, 0, 37),  # a long key is shown by index
        (-1, f"__metadata__.#{order.index(TOKEN)}.key", None, 0, 40),  # a key that is a secret: found, not printed
    ])
    assert all(TOKEN not in f.location.column and OTHER not in f.location.column for f in result.findings)
    assert result.stats.row_groups == 1 and result.stats.rows == 1


def test_pyarrow_schema_metadata_is_not_a_cell(tmp_path):
    shard = write(tmp_path, pa.table({"text": ["a"]}))
    assert b"ARROW:schema" in pq.ParquetFile(shard.path).metadata.metadata
    assert metadata_leaves(open_parquet(shard)) == ()


# ---- discovery ----------------------------------------------------------------------------------


def test_discover_folders_recursively_files_and_globs(tmp_path):
    table = pa.table({"text": ["a"]})
    for name in ("data/train-00000-of-00002.parquet", "data/sub/train-00001-of-00002.parquet", "data/readme.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".parquet"):
            pq.write_table(table, tmp_path / name)
        else:
            (tmp_path / name).write_text("not a shard")
    shards, missing = discover([str(tmp_path / "data")])
    assert [(s.display, s.format) for s in shards] == [
        ("readme.md", "text"), ("sub/train-00001-of-00002.parquet", "parquet"),
        ("train-00000-of-00002.parquet", "parquet"),
    ]
    assert missing == []
    shards, missing = discover([str(tmp_path / "data" / "**" / "*.parquet"), str(tmp_path / "nope"),
                                str(tmp_path / "none-*.parquet")])
    assert sorted(Path(s.path).name for s in shards) == ["train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]
    assert [(m.path, m.reason) for m in missing] == [
        (str(tmp_path / "nope"), "no such file, folder or glob match"),
        (str(tmp_path / "none-*.parquet"), "no such file, folder or glob match"),
    ]


# ---- unions (in-memory tables only: Parquet has no union type) -----------------------------------


@pytest.mark.parametrize("mode", ["dense", "sparse"])
@pytest.mark.parametrize("sliced", [False, True])
def test_union_children_are_read_at_their_rows_and_filler_is_not_a_cell(scanner, mode, sliced):
    codes = pa.array([0, 1, 0, 1, 0], type=pa.int8())
    if mode == "dense":
        strings = pa.array(["a", "b", f"key {TOKEN}"])
        array = pa.UnionArray.from_dense(codes, pa.array([0, 0, 1, 1, 2], pa.int32()), [strings, pa.array([1, 2])],
                                         ["text", "n"])
    else:
        # Rows 1 and 3 select "n": their "text" slots are filler and must not be reported.
        strings = pa.array(["a", f"filler {TOKEN}", "b", f"filler {TOKEN}", f"key {TOKEN}"])
        array = pa.UnionArray.from_sparse(codes, [strings, pa.array([1, 2, 3, 4, 5])], ["text", "n"])
    if sliced:
        array = array.slice(1)
    result = scanner.scan_table(pa.table({"u": array}), "t")
    found = [(f.location.row, f.location.column, f.start) for f in result.findings]
    assert found == [(3 if sliced else 4, "u.text", 4)]


def test_a_long_role_value_is_no_role_and_is_not_kept():
    """Role names are short; a hostile role column of megabyte values must not fill the role cache."""
    from shardscan.reader import cells as cells_module

    before = cells_module._short_role_name.cache_info().currsize
    roles = pa.array(["assistant", "x" * 1_000_000, b"tool", None])
    leaf = cells_module.LeafCells("c[{}]", pa.array(["a", "b", "c", "d"]), np.arange(4), (np.arange(4),), roles)
    assert leaf.locations(np.arange(4)) == (["c[0]", "c[1]", "c[2]", "c[3]"], ["assistant", None, "tool", None])
    assert cells_module._short_role_name.cache_info().currsize <= before + 2  # the two short ones at most
