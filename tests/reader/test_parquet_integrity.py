"""A Parquet footer is verified, not trusted: hand-mutated shards end as exit 3 naming the shard and
the reason, or with the token found; intact shards of every writer setting pass untouched."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.api import scan
from shardscan.engine import Scanner
from shardscan.executor import FOOTER, plan_shard, scan_item
from shardscan.model import ScanIssue
from shardscan.reader import ShardRef
from shardscan.reader.parquet import footer_integrity, open_parquet
from shardscan.reader.parquet_integrity import (
    file_size,
    layout_problems,
    leaf_slots,
    read_footer,
    reader_for,
    walk_pages,
)
from shardscan.synth import expand
from tests.conftest import TRACE_SCHEMA, trace_row, write_trace_shard
from tests.parquet_mutation import BINARY, I64, ParquetFooter, TList, read_struct_at

TOKEN_ROW = 9  # in the last of three row groups of four rows


def _token(seed: str) -> str:
    return expand("{{github:ghp_}}", seed=seed)


def _rows(token: str, at: int = TOKEN_ROW, count: int = 12) -> list[dict]:
    return [trace_row([("user", "hi"), ("tool", f"GITHUB_TOKEN={token}" if i == at else "ok")]) for i in range(count)]


def _shard(tmp_path: Path, token: str, name: str = "train.parquet", **write_options: object) -> Path:
    path = tmp_path / "data" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(_rows(token), schema=TRACE_SCHEMA)
    pq.write_table(table, path, row_group_size=4, **write_options)
    return path


def _nested_only(tmp_path: Path, token: str, **write_options: object) -> Path:
    """A shard whose only column is a list of messages: no flat column to count rows by."""
    path = tmp_path / "data" / "messages.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"conversations": r["conversations"]} for r in _rows(token)]
    table = pa.Table.from_pylist(rows, schema=pa.schema([TRACE_SCHEMA.field("conversations")]))
    pq.write_table(table, path, row_group_size=4, **write_options)
    return path


def _issues(report) -> list[tuple[str, int | None, str]]:
    return [(i.shard, i.row_group, i.message) for i in report.issues]


def _cells(report) -> list[tuple[str, int, str, str]]:
    return [(f.location.shard, f.location.row, f.location.column, f.rule_id) for f in report.findings]


# ---- intact shards pass ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"use_dictionary": False, "compression": "zstd"},
        {"data_page_version": "2.0"},
        {"write_page_index": True},
        {"write_page_checksum": True, "compression": "none"},
        {"data_page_size": 64, "write_statistics": False},
    ],
    ids=["default", "plain-zstd", "v2-pages", "page-index", "checksums", "tiny-pages"],
)
def test_intact_shards_have_no_integrity_issue(tmp_path, ruleset, options, request):
    token = _token("intact")
    flat = _shard(tmp_path, token, **options)
    _nested_only(tmp_path, token, **options)  # in the same folder: scanned with the flat one
    report = scan([str(flat.parent)], ruleset=ruleset, options=Scanner(ruleset).options)
    assert report.issues == ()
    assert sorted(_cells(report)) == [
        ("messages.parquet", TOKEN_ROW, "conversations[1].content", "github-pat"),
        ("train.parquet", TOKEN_ROW, "conversations[1].content", "github-pat"),
    ]
    assert report.exit_code == 1


def test_empty_and_null_lists_count_as_one_value_each(tmp_path):
    """The decoded-values count matches Parquet's num_values whatever the nesting holds."""
    conversations = [None, [], [{"role": "user", "content": None}], [None, {"role": None, "content": "x"}], []]
    table = pa.table({"conversations": pa.array(conversations, type=TRACE_SCHEMA.field("conversations").type),
                      "tags": pa.array([{"a": "1"}, None, {}, {"b": "2", "c": None}, {"d": "4"}],
                                       type=pa.map_(pa.string(), pa.string()))})
    path = tmp_path / "levels.parquet"
    pq.write_table(table, path)
    meta = pq.ParquetFile(path).metadata.row_group(0)
    expected = [meta.column(j).num_values for j in range(meta.num_columns)]
    assert expected == [6, 6, 6, 6]  # the counts Parquet stores: one value per slot, empty/null lists included
    assert leaf_slots(table.column("conversations")) + leaf_slots(table.column("tags")) == expected
    assert leaf_slots(table.column("conversations").chunk(0).slice(1, 3)) == [4, 4]  # [], [one], [two]


def test_zero_padding_between_row_groups_is_not_a_gap(tmp_path):
    path = _shard(tmp_path, _token("padding"))
    footer = ParquetFooter.read(path)
    second = min(footer.column_meta(1, 0)[11], footer.column_meta(1, 0)[9])
    padding = 64
    body = footer.body[:second] + bytes(padding) + footer.body[second:]
    _shift(footer, second, padding)
    ParquetFooter(body, footer.meta).write(path)
    parquet = open_parquet(ShardRef("train.parquet", str(path)))
    read = reader_for(parquet.handle)
    assert layout_problems(read, read_footer(read, file_size(parquet.handle))) == []
    (non_zero := bytearray(path.read_bytes()))[second + 10] = 7
    path.write_bytes(bytes(non_zero))
    parquet = open_parquet(ShardRef("train.parquet", str(path)))
    read = reader_for(parquet.handle)
    problems = layout_problems(read, read_footer(read, file_size(parquet.handle)))
    assert problems == [f"unreferenced bytes {second}-{second + padding} (between the pages of row group 0 column "
                        f"{len(footer.row_groups[0][1].items) - 1} and the pages of row group 1 column 0): "
                        "no column chunk, index or footer covers them"]


def _shift(footer: ParquetFooter, after: int, by: int) -> None:
    """Move every offset at or after ``after`` by ``by`` bytes (pages moved by an insertion)."""
    for group in footer.row_groups:
        for chunk in group[1].items:
            meta = chunk[3]
            for fid in (9, 11):
                if fid in meta and meta[fid] >= after:
                    meta[fid] = meta[fid] + by
        if 5 in group and group[5] >= after:
            group[5] = group[5] + by


# ---- the footer's num_rows lowered ----------------------------------------------------------------


@pytest.mark.parametrize("pages", ["1.0", "2.0"])
@pytest.mark.parametrize("layout", ["flat-and-nested", "nested-only"])
def test_lowered_num_rows_is_exit_3_naming_the_row_group(tmp_path, ruleset, options, layout, pages):
    token = _token(f"rows-{layout}-{pages}")
    make = _shard if layout == "flat-and-nested" else _nested_only
    path = make(tmp_path, token, data_page_version=pages)
    footer = ParquetFooter.read(path)
    footer.row_groups[2][3] = 1  # row group 2 holds rows 8-11; the token is in row 9
    footer.meta[3] = 9
    footer.write(path)
    assert pq.ParquetFile(path).read_row_group(2).num_rows == 1  # pyarrow alone: one row, the token unread

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    # The token is the column's min in the row group's statistics (of the chunk, and of its page):
    # found there, not in its unread row.
    stats = "__statistics__.row_group[2].conversations.list.element.content"
    assert _cells(report) == [(path.name, -1, f"{stats}.min", "github-pat"),
                              (path.name, -1, f"{stats}.page[0].min", "github-pat")]
    assert report.exit_code == 3
    messages = [m for shard, row_group, m in _issues(report) if (shard, row_group) == (path.name, 2)]
    assert len(messages) == len(report.issues) >= 1
    message = " ".join(messages)
    if layout == "flat-and-nested":  # a flat column has one value per row: the footer alone disagrees
        assert "column agent: 4 values for 1 rows (the footer's num_rows disagrees" in message
        return
    # No flat column: the values decoded tell (2 messages decoded, 8 in the chunk). With v2 pages
    # their headers' row counts tell too; the row group is reported once, by its own item.
    assert message.startswith("integrity: column conversations.list.element.content: ")
    assert "2 values decoded from 1 rows, the column chunk holds 8" in message
    if pages == "2.0":
        footer_item = scan_item(Scanner(ruleset, options), plan_shard(ShardRef(path.name, str(path))).items[0])
        assert footer_item.item.row_group == FOOTER
        assert [(i.row_group, i.message) for i in footer_item.issues] == [
            (2, f"integrity: column conversations.list.element.{leaf}: its pages hold 4 rows, the footer says 1")
            for leaf in ("content", "role")
        ]


def test_lowered_num_rows_and_num_values_are_caught_by_the_pages(tmp_path, ruleset, options):
    """A footer made consistent with itself (rows and every chunk's values lowered) still
    disagrees with the page headers."""
    token = _token("rows-and-values")
    path = _nested_only(tmp_path, token)
    footer = ParquetFooter.read(path)
    footer.row_groups[2][3] = 1
    footer.meta[3] = 9
    for column in footer.row_groups[2][1].items:
        column[3][5] = 2  # num_values of the first row's two messages
    footer.write(path)
    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert all(f.location.row == -1 for f in report.findings) and report.exit_code == 3
    assert _issues(report) == [
        (path.name, 2,
         f"integrity: column conversations.list.element.{leaf}: its pages hold 8 values, the footer says 2")
        for leaf in ("content", "role")
    ]


# ---- bytes the footer does not point at ----------------------------------------------------------


def test_a_row_group_dropped_from_the_footer_is_exit_3_naming_the_byte_range(tmp_path, ruleset, options):
    token = _token("dropped")
    path = _shard(tmp_path, token)
    footer = ParquetFooter.read(path)
    dropped = footer.row_groups[2]
    chunks = [c[3] for c in dropped[1].items]
    start = min(min(m[9], m[11]) if 11 in m else m[9] for m in chunks)
    end = max((min(m[9], m[11]) if 11 in m else m[9]) + m[7] for m in chunks)
    footer.meta[4] = TList(footer.meta.fields[4][1].kind, footer.row_groups[:2])
    footer.meta[3] = 8
    footer.write(path)
    assert pq.ParquetFile(path).metadata.num_rows == 8  # pyarrow alone: a clean, smaller shard

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3
    assert all(f.location.column.startswith("__statistics__.row_group[2].") for f in report.findings)
    [(shard, row_group, message)] = _issues(report)
    assert (shard, row_group) == (path.name, None)
    assert message == (f"integrity: unreferenced bytes {start}-{end} (between the pages of row group 1 column 13 and "
                       "the footer): no column chunk, index or footer covers them")


def test_a_column_chunk_pointed_at_another_row_groups_pages_is_exit_3(tmp_path, ruleset, options):
    token = _token("pointed")
    path = _shard(tmp_path, token)
    footer = ParquetFooter.read(path)
    mine, other = footer.column_meta(2, 0), footer.column_meta(0, 0)  # conversations...content
    original = (min(mine[9], mine[11]), min(mine[9], mine[11]) + mine[7])
    for fid in (9, 11, 5, 7, 6):
        mine[fid] = other[fid]
    footer.write(path)
    assert "GITHUB_TOKEN" not in str(pq.ParquetFile(path).read_row_group(2).to_pylist())  # pyarrow reads rows 0-3 again

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3
    messages = [m for _, _, m in _issues(report)]
    assert any(m.startswith(f"integrity: unreferenced bytes {original[0]}-{original[1]} ") for m in messages)
    assert any("the pages of row group 2 column 0 (bytes" in m and "overlaps the pages of row group 0 column" in m
               for m in messages)


def test_the_footers_total_rows_must_match_its_row_groups(tmp_path, ruleset, options):
    path = _shard(tmp_path, _token("total"))
    footer = ParquetFooter.read(path)
    footer.meta[3] = 11
    footer.write(path)
    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3
    assert ("train.parquet", None, "integrity: the footer says 11 rows but its row groups hold 12") in _issues(report)


def test_the_footer_checks_give_the_scans_issues_directly(tmp_path):
    """The reader builds the issue (kind, message, row group) itself: no second type to convert."""
    path = _shard(tmp_path, _token("typed"))
    footer = ParquetFooter.read(path)
    footer.meta[3] = 11
    footer.write(path)
    checked = footer_integrity("data/train.parquet", open_parquet(ShardRef("train.parquet", str(path))))
    assert checked.issues == (
        ScanIssue("data/train.parquet", "unreadable", "integrity: the footer says 11 rows but its row groups hold 12"),
    )
    [statistics] = checked.statistics
    assert set(statistics.rows.tolist()) == {-1}
    paths = [statistics.column_path(i) for i in range(len(statistics.values))]
    assert all(path.startswith("__statistics__.row_group[") for path in paths) and len(set(paths)) == len(paths)


# ---- statistics are cells ------------------------------------------------------------------------


def test_a_token_only_in_column_statistics_is_found_where_the_statistics_are(tmp_path, ruleset, options):
    token = _token("statistics")
    path = _shard(tmp_path, "no-token-here")
    footer = ParquetFooter.read(path)
    instruction = [i for i, c in enumerate(footer.row_groups[1][1].items) if c[3][3].items == [b"instruction"]][0]
    stats = footer.column_meta(1, instruction)[12]
    stats.put(5, BINARY, f"zz GITHUB_TOKEN={token}".encode())  # max_value
    stats.put(1, BINARY, stats[5])  # and the deprecated max
    footer.write(path)
    assert token not in str(pq.read_table(path).to_pylist())

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.issues == ()
    assert _cells(report) == [("train.parquet", -1, "__statistics__.row_group[1].instruction.max", "github-pat")]
    assert report.exit_code == 1
    assert token not in report.to_json()


def test_statistics_that_repeat_a_cell_are_not_a_second_finding(tmp_path, ruleset, options):
    """A token that is a column's min in the footer and in the page index, and a cell, is one finding:
    the cell (rewriting the shard rewrites its statistics)."""
    token = _token("repeat")
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"note": [f"GITHUB_TOKEN={token}", "ok"]}), path, write_page_index=True)
    shard = ShardRef("one.parquet", str(path))
    scanner = Scanner(ruleset, options)
    footer_item = scan_item(scanner, plan_shard(shard).items[0])
    assert footer_item.item.row_group == FOOTER
    assert sorted(f.location.column for f in footer_item.findings) == [
        "__statistics__.row_group[0].note.min", "__statistics__.row_group[0].note.page[0].min"]
    report = scan([str(tmp_path)], ruleset=ruleset, options=options)
    assert _cells(report) == [("one.parquet", 0, "note", "github-pat")]


# ---- page checksums ------------------------------------------------------------------------------


def test_a_page_failing_its_checksum_is_exit_3_naming_shard_row_group_and_column(tmp_path, ruleset, options):
    path = _shard(tmp_path, _token("crc"), write_page_checksum=True, compression="none", use_dictionary=False)
    footer = ParquetFooter.read(path)
    instruction = [i for i, c in enumerate(footer.row_groups[1][1].items) if c[3][3].items == [b"instruction"]][0]
    data_page = footer.column_meta(1, instruction)[9]
    raw = bytearray(path.read_bytes())
    header, body = read_struct_at(bytes(raw), data_page)
    assert header[4] != 0  # the page carries a CRC
    raw[body + header[3] - 1] ^= 0x20  # one bit of the page's last byte (a value's character)
    path.write_bytes(bytes(raw))
    assert pq.ParquetFile(path).read_row_group(1).num_rows == 4  # without verification: decoded as if intact

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3
    [(shard, row_group, message)] = _issues(report)
    assert (shard, row_group) == ("train.parquet", 1)
    assert message.startswith("row group unreadable (OSError: ")
    assert "CRC checksum verification failed" in message
    assert message.endswith(") in column instruction")
    assert [f.location.row for f in report.findings] == [TOKEN_ROW]  # the other row groups are still scanned


# ---- remote shards: the same checks over ranged reads ---------------------------------------------


def test_remote_shards_are_checked_like_local_ones(tmp_path, ruleset, options):
    fsspec = pytest.importorskip("fsspec")
    token = _token("remote")
    path = _shard(tmp_path, token)
    footer = ParquetFooter.read(path)
    footer.meta[4] = TList(footer.meta.fields[4][1].kind, footer.row_groups[:2])
    footer.meta[3] = 8
    footer.write(path)
    memory = fsspec.filesystem("memory")
    memory.pipe("/integrity/train.parquet", path.read_bytes())
    try:
        report = scan(["memory://integrity/train.parquet"], ruleset=ruleset, options=options)
    finally:
        memory.rm("/integrity", recursive=True)
    assert report.exit_code == 3
    [issue] = report.issues
    assert issue.shard.endswith("integrity/train.parquet") and "unreferenced bytes" in issue.message


def test_writing_helpers_keep_types(tmp_path):
    """The footer helper round-trips a shard byte for byte (so a mutation changes only its field)."""
    path = write_trace_shard(tmp_path / "t.parquet", _rows("x"), row_group_size=4)
    before = path.read_bytes()
    ParquetFooter.read(path).write(path)
    assert path.read_bytes() == before
    assert ParquetFooter.read(path).meta.fields[3][0] == I64


def test_page_headers_with_large_statistics_are_walked(tmp_path):
    """Pages of 100 KB whose headers carry min/max values of 3 KB each: the header is read again,
    larger, when the first small read ends inside it."""
    values = [("abcdefghij"[i % 10] * 3000) + str(i) for i in range(400)]
    path = tmp_path / "big-stats.parquet"
    pq.write_table(pa.table({"text": values}), path, data_page_size=100_000, use_dictionary=False, compression="none",
                   write_batch_size=10)
    parquet = open_parquet(ShardRef("big-stats.parquet", str(path)))
    chunk = parquet.metadata.row_group(0).column(0)
    raw = path.read_bytes()
    header, after = read_struct_at(raw, chunk.data_page_offset)
    assert after - chunk.data_page_offset > 4096  # a header larger than the first read
    counts = walk_pages(reader_for(parquet.handle), chunk.data_page_offset,
                        chunk.data_page_offset + chunk.total_compressed_size)
    assert (counts.values, counts.rows) == (400, None) and counts.pages >= 10


def test_a_token_only_in_a_page_headers_statistics_is_found_there(tmp_path, ruleset, options):
    """Page headers carry min/max values too: a token whose cell was overwritten in place (and
    that is gone from the footer's statistics) still stands in its page's header."""
    token = _token("page-header")
    path = tmp_path / "data" / "train.parquet"
    path.parent.mkdir()
    rows = [trace_row(instruction=f"zz GITHUB_TOKEN={token}" if i == 5 else "instruction-value") for i in range(8)]
    pq.write_table(pa.Table.from_pylist(rows, schema=TRACE_SCHEMA), path, row_group_size=4, use_dictionary=False,
                   compression="none")
    footer = ParquetFooter.read(path)
    instruction = [i for i, c in enumerate(footer.row_groups[1][1].items) if c[3][3].items == [b"instruction"]][0]
    meta = footer.column_meta(1, instruction)
    for fid in (1, 2, 5, 6):
        meta[12].fields.pop(fid, None)  # the footer's statistics no longer hold it
    header, body = read_struct_at(footer.body, meta[9])
    assert token.encode() in footer.body[meta[9] : body]  # the page header's max
    page = footer.body[body : body + header[3]].replace(token.encode(), b"x" * len(token))
    footer.body = footer.body[:body] + page + footer.body[body + header[3] :]
    footer.write(path)
    assert token not in str(pq.read_table(path).to_pylist())

    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.issues == ()
    assert _cells(report) == [
        ("train.parquet", -1, "__statistics__.row_group[1].instruction.page[0].max", "github-pat"),
    ]
    assert report.exit_code == 1


@pytest.mark.slow
def test_redact_removes_a_token_only_in_statistics_by_rewriting_the_shard(tmp_path, ruleset, options):
    from typer.testing import CliRunner

    from shardscan.cli import app

    token = _token("redact-statistics")
    path = _shard(tmp_path, "no-token-here")
    footer = ParquetFooter.read(path)
    footer.column_meta(0, 2)[12].put(5, BINARY, f"zz GITHUB_TOKEN={token}".encode())  # the `agent` column's max
    footer.write(path)
    assert _cells(scan([str(path.parent)], ruleset=ruleset, options=options)) == [
        ("train.parquet", -1, "__statistics__.row_group[0].agent.max", "github-pat")]
    clean = tmp_path / "clean"
    result = CliRunner().invoke(app, ["redact", str(path.parent), "--out", str(clean), "--now", "2026-12-02",
                                      "--no-allowlist"])
    assert result.exit_code == 0, result.output
    after = scan([str(clean)], ruleset=ruleset, options=options)
    assert after.findings == () and after.issues == () and after.exit_code == 0
    assert pq.read_table(clean / "train.parquet").equals(pq.read_table(path))  # the cells are unchanged


def test_the_thrift_reader_refuses_malformed_bytes_with_its_own_error():
    import random

    from shardscan.reader.thrift_compact import ThriftError, read_struct

    rng = random.Random(28)
    for size in (0, 1, 2, 5, 40, 400):
        for _ in range(300):
            blob = bytes(rng.randrange(256) for _ in range(size))
            with contextlib.suppress(ThriftError):  # any error but its own would fail the test
                read_struct(blob)
    deep = bytes([0x1C]) * 100  # a struct in a struct in a struct…
    with pytest.raises(ThriftError, match="nested too deeply"):
        read_struct(deep)
    with pytest.raises(ThriftError):
        read_struct(bytes([0x19, 0xF8]) + b"\xff\xff\xff\x7f")  # a list claiming 268 million items


@pytest.mark.slow
def test_damaged_footers_never_end_in_an_internal_error(tmp_path, ruleset, options):
    import random

    path = _shard(tmp_path, _token("fuzz"))
    original = path.read_bytes()
    length = int.from_bytes(original[-8:-4], "little")
    start = len(original) - 8 - length
    rng = random.Random(7)
    scanner = Scanner(ruleset, options)
    for _ in range(60):
        damaged = bytearray(original)
        damaged[rng.randrange(start, len(original) - 8)] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(damaged))
        result = scanner.scan_shard(ShardRef("train.parquet", str(path)))
        assert not any("internal error" in issue.message for issue in result.issues), result.issues
        assert result.issues or [f.location.row for f in result.findings if f.location.row >= 0] == [TOKEN_ROW]


def test_a_footer_that_would_abort_pyarrow_is_refused_before_pyarrow_reads_it(tmp_path, ruleset, options):
    """pyarrow kills the process (an uncaught C++ exception, no Python error) when a level histogram
    has the wrong size: the shard is refused as unreadable before pyarrow builds its column metadata."""
    path = _shard(tmp_path, _token("abort"))
    footer = ParquetFooter.read(path)
    sizes = footer.column_meta(1, 4)[16]  # a flat column: one repetition level
    sizes[2] = TList(I64, [4, 4, 4, 4])
    footer.write(path)
    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3 and report.findings == ()
    assert _issues(report) == [("train.parquet", None, "not a readable Parquet file (malformed footer: row group 1 "
                                "column 4: repetition level histogram of 4 entries for 1 levels)")]


@pytest.mark.slow
def test_a_copy_of_column_metadata_after_the_pages_is_not_a_gap_unless_it_differs(tmp_path, ruleset, options):
    """Writers that follow the format's original layout (polars, among others) put a copy of each
    column's metadata right after its pages: that copy is accounted for; a copy whose statistics
    differ from the footer's (a value that would be published unscanned) is not."""
    from tests.parquet_mutation import encode_struct

    token = _token("metadata-copy")
    path = _shard(tmp_path, token)
    footer = ParquetFooter.read(path)
    last = len(footer.row_groups[2][1].items) - 1
    meta = footer.column_meta(2, last)
    ParquetFooter(footer.body + encode_struct(meta), footer.meta).write(path)
    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.issues == () and [f.location.row for f in report.findings] == [TOKEN_ROW]

    copy = ParquetFooter.read(path)
    altered = ParquetFooter.read(path).column_meta(2, last)
    altered[12].put(5, BINARY, f"zz GITHUB_TOKEN={token}".encode())
    start = len(footer.body)
    ParquetFooter(footer.body + encode_struct(altered), copy.meta).write(path)
    report = scan([str(path.parent)], ruleset=ruleset, options=options)
    assert report.exit_code == 3
    end = len(ParquetFooter.read(path).body)
    assert _issues(report) == [("train.parquet", None, f"integrity: the copy of the column metadata after the pages of "
                                                       f"row group 2 column {last} (bytes {start}-{end}) differs from "
                                                       "the footer's")]


def test_nested_columns_with_the_same_name_are_counted_apart(tmp_path, ruleset, options):
    """Two top-level list columns named alike (then every column is read): each is checked against
    its own column chunks, no false alarm."""
    kind = TRACE_SCHEMA.field("conversations").type
    first = pa.array([[{"role": "user", "content": "a"}], [], None], type=kind)
    second = pa.array([[{"role": "user", "content": "b"}, {"role": "tool", "content": "c"}], [None], []], type=kind)
    table = pa.Table.from_arrays([first, second], names=["messages", "messages"])
    path = tmp_path / "twins.parquet"
    pq.write_table(table, path)
    report = scan([str(path)], ruleset=ruleset, options=options)
    assert report.issues == () and report.exit_code == 0
