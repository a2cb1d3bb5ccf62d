"""JSONL (plain, gz, zst), Arrow IPC and in-memory tables give exactly the findings of the same rows in Parquet."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import shardscan
from shardscan.filescan import FILE_SCANNERS
from shardscan.reader import discover
from shardscan.reader.formats import READERS
from shardscan.reader.sources import FORMAT_SUFFIXES, InputFormat
from shardscan.synth import expand
from tests.planted import finding_keys, planted_rows, planted_table


def _jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    data = _jsonl_bytes(rows)
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
        path.write_bytes(data)
    elif path.name.endswith((".zst", ".bz2")):
        with pa.CompressedOutputStream(str(path), "zstd" if path.name.endswith(".zst") else "bz2") as out:
            out.write(data)
    else:
        path.write_bytes(data)
    return path


def write_arrow_file(path: Path, table: pa.Table) -> Path:
    with ipc.new_file(str(path), table.schema) as writer:
        for batch in table.to_batches(max_chunksize=5):
            writer.write_batch(batch)
    return path


def write_arrow_stream(path: Path, table: pa.Table) -> Path:
    with ipc.new_stream(str(path), table.schema) as writer:
        for batch in table.to_batches(max_chunksize=5):
            writer.write_batch(batch)
    return path


def write_feather(path: Path, table: pa.Table) -> Path:
    feather.write_feather(table, str(path), chunksize=3)
    return path


@pytest.fixture
def parquet_keys(tmp_path, options):
    path = tmp_path / "reference.parquet"
    pq.write_table(planted_table(), path, row_group_size=4)
    report = shardscan.scan([str(path)], options=options)
    keys = finding_keys(report)
    assert len(keys) == 10 and report.issues == ()
    return keys


WRITERS = {
    "train.jsonl": lambda p: write_jsonl(p, planted_rows()),
    "train.jsonl.gz": lambda p: write_jsonl(p, planted_rows()),
    "train.jsonl.zst": lambda p: write_jsonl(p, planted_rows()),
    "train.jsonl.bz2": lambda p: write_jsonl(p, planted_rows()),
    # .json: JSON Lines (the Hub's usual .json shard), or one document, an array of records.
    "train.json": lambda p: write_jsonl(p, planted_rows()),
    "train.json.gz": lambda p: write_jsonl(p, planted_rows()),
    "records.json": lambda p: p.write_text(json.dumps(planted_rows(), indent=2)) and p,
    "train.arrow": lambda p: write_arrow_file(p, planted_table()),
    "cache-stream.arrow": lambda p: write_arrow_stream(p, planted_table()),
    "train.feather": lambda p: write_feather(p, planted_table()),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WRITERS))
def test_format_gives_the_findings_of_the_same_rows_in_parquet(tmp_path, options, parquet_keys, name):
    path = WRITERS[name](tmp_path / name)
    report = shardscan.scan([str(path)], options=options)
    assert report.issues == ()
    assert finding_keys(report) == parquet_keys
    assert {f.location.shard for f in report.findings} == {str(path)}
    assert report.stats.rows == 12


def test_folder_discovery_picks_every_format_by_suffix_and_sniffs_the_rest(tmp_path):
    for name, write in WRITERS.items():
        write(tmp_path / name)
    (tmp_path / "README.md").write_text("not a shard")
    (tmp_path / "notes.txt").write_text("{}")
    shards, unresolved = discover([str(tmp_path)])
    assert [(s.display, s.format) for s in shards] == [
        ("README.md", "text"),
        ("cache-stream.arrow", "arrow"),
        ("notes.txt", "jsonl"),  # sniffed: its first line is a JSON object
        ("records.json", "json"),
        ("train.arrow", "arrow"),
        ("train.feather", "arrow"),
        ("train.json", "json"),
        ("train.json.gz", "json"),
        ("train.jsonl", "jsonl"),
        ("train.jsonl.bz2", "jsonl"),
        ("train.jsonl.gz", "jsonl"),
        ("train.jsonl.zst", "jsonl"),
    ]
    assert unresolved == []
    assert all(isinstance(s.format, InputFormat) for s in shards)


def test_every_input_format_is_read_by_a_reader_or_a_file_scanner():
    """Input formats are a closed vocabulary: every member but "undecided" has exactly one reader."""
    readers, scanners = set(READERS), set(FILE_SCANNERS)
    assert readers.isdisjoint(scanners)
    assert readers | scanners == {f for f in InputFormat if f is not InputFormat.UNDECIDED}
    assert {fmt for _, fmt in FORMAT_SUFFIXES} <= readers | scanners


@pytest.mark.slow
def test_in_memory_table_and_record_batch_match_parquet(options, parquet_keys):
    table = planted_table()
    assert finding_keys(shardscan.scan_table(table, options=options)) == parquet_keys
    # Small slices: rows keep counting from the start of the table across batches.
    from shardscan.engine import Scanner
    from shardscan.ruleset import load_ruleset

    result = Scanner(load_ruleset(), options).scan_table(table, "t", rows_per_batch=5)
    found = [(f.rule_id, f.location.row, f.location.column, f.start, f.end, f.fingerprint) for f in result.findings]
    assert sorted(found) == [
        (k[0], k[1], k[2], k[4], k[5], k[6]) for k in parquet_keys
    ]
    batch = table.combine_chunks().to_batches()[0]
    report = shardscan.scan_table(batch, "batch", options=options)
    assert finding_keys(report) == parquet_keys
    assert {f.location.shard for f in report.findings} == {"batch"}


class _Backing:
    """What ``datasets.Dataset.data`` is: a wrapper whose ``.table`` is the Arrow table."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table


class MiniDataset:
    """The attributes of ``datasets.Dataset`` that scan_table relies on, backed by a real Arrow table."""

    def __init__(self, table: pa.Table, indices: list[int] | None = None) -> None:
        self.data = _Backing(table)
        self._indices = pa.table({"indices": pa.array(indices, pa.uint64())}) if indices is not None else None

    def with_format(self, kind: str) -> MiniDataset:
        assert kind == "arrow"
        return self

    def __getitem__(self, key: slice) -> pa.Table:
        table = self.data.table
        if self._indices is not None:
            table = table.take(self._indices.column("indices"))
        return table[key]


@pytest.mark.slow
def test_dataset_duck_type_is_scanned_through_its_arrow_table(options, parquet_keys):
    report = shardscan.scan_table(MiniDataset(planted_table()), "train", options=options)
    assert finding_keys(report) == parquet_keys


def test_dataset_view_with_indices_is_scanned_in_view_order(options):
    # A shuffled/selected view: row numbers are positions in the view, not in the backing table.
    view = MiniDataset(planted_table(), indices=[1, 0])
    report = shardscan.scan_table(view, "train", options=options)
    assert [(f.rule_id, f.location.row, f.location.column) for f in report.findings] == [
        ("github-pat", 0, "conversations[1].content")
    ]


def test_dataset_dict_scans_each_split_as_a_shard(options):
    table = planted_table()
    splits = {"train": MiniDataset(table.slice(0, 6)), "test": MiniDataset(table.slice(6))}
    report = shardscan.scan_table(splits, "ds", options=options)
    shards = sorted({(f.location.shard, f.location.row, f.rule_id) for f in report.findings})
    assert ("ds/train", 1, "github-pat") in shards and ("ds/test", 0, "jwt") in shards
    assert len(report.findings) == 10


def test_scan_table_rejects_unknown_objects_by_type_name():
    with pytest.raises(TypeError, match="builtins.list"):
        shardscan.scan_table([1, 2, 3])


# ---- messy JSON Lines ----------------------------------------------------------------------------


def _gen(template: str) -> str:
    return expand(template, seed="messy")


def test_jsonl_rows_are_line_numbers_and_blank_lines_count(tmp_path, options):
    token = _gen("{{github:ghp_}}")
    lines = ["", json.dumps({"text": "hi"}), "   ", json.dumps({"text": f"GITHUB_TOKEN={token}"}), ""]
    path = tmp_path / "blank.jsonl"
    path.write_text("\r\n".join(lines))
    report = shardscan.scan([str(path)], options=options)
    assert [(f.location.row, f.location.column, f.start) for f in report.findings] == [(3, "text", 13)]
    assert report.issues == ()


def test_jsonl_type_changes_between_lines_are_parsed_line_by_line(tmp_path, options):
    token = _gen("{{hf}}")
    rows = [
        {"content": "plain text"},
        {"content": [{"type": "text", "text": f"HF_TOKEN={token}"}]},  # multi-part message: a list, not a string
        {"content": 42},
        {"content": f"again HF_TOKEN={token}"},
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = shardscan.scan([str(path)], options=options)
    assert [(f.location.row, f.location.column) for f in report.findings] == [
        (1, "content[0].text"),
        (3, "content"),
    ]
    assert report.issues == ()
    assert report.decision.exit_code == 1


def test_jsonl_type_changes_within_a_line_keep_exact_paths_and_roles(tmp_path, options):
    """Chat logs mix a string content and a list of content parts in one line, which pyarrow's reader
    refuses; the line is walked instead, with the paths and roles the reader would have given."""
    hf, gh, cut = _gen("{{hf}}"), _gen("{{github:ghp_}}"), _gen("{{github:gho_}}")
    hidden_key = _gen("{{hf}}")
    messages = [
        {"role": "user", "content": f"my token is {hf}"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "input": {"cmd": gh}}]},
        {"role": "tool", "content": [{"type": "tool_result", "content": 7}], "extra": {hidden_key: "x"}},
    ]
    lines = [
        json.dumps({"id": 1, "messages": messages}),
        # Repeating a key would hide the earlier value once parsed: the line stays text.
        '{"note": "GITHUB_TOKEN=' + cut + '", "note": "x", "n": [1, "a"]}',
        json.dumps({"emoji": "\ud83d cut", "parts": ["a", {"b": f"HF_TOKEN={hf}"}]}),
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = shardscan.scan([str(path)], options=options)
    assert [(f.location.row, f.location.column, f.location.role, f.start) for f in report.findings] == [
        (0, "messages[0].content", "user", len("my token is ")),
        (0, "messages[1].content[1].input.cmd", "assistant", 0),
        (0, "messages[2].extra.#0.name", "tool", 0),
        (1, "__line__", None, len('{"note": "GITHUB_TOKEN=')),
        (2, "parts[1].b", None, len("HF_TOKEN=")),
    ]
    assert report.issues == ()
    assert hidden_key not in json.dumps([f.location.column for f in report.findings])


def test_jsonl_whose_every_line_mixes_types_is_walked_whole(tmp_path, options, monkeypatch):
    """When both halves of a refused batch are refused too, the batch is walked in Python rather
    than split line by line (each split would parse every line again)."""
    from shardscan.reader import jsonl

    token = _gen("{{hf}}")
    lines = []
    for i in range(64):
        text = f"HF_TOKEN={token}" if i == 40 else "nothing here"
        lines.append(json.dumps({"messages": [{"role": "user", "content": "q"},
                                              {"role": "assistant", "content": [{"type": "text", "text": text}]}]}))
    lines[7] = '{"messages": "cut'
    path = tmp_path / "dense.jsonl"
    path.write_text("\n".join(lines) + "\n")
    reads = []
    real = jsonl._read_json
    monkeypatch.setattr(jsonl, "_read_json", lambda texts: reads.append(len(texts)) or real(texts))
    report = shardscan.scan([str(path)], options=options)
    assert [(f.location.row, f.location.column, f.location.role) for f in report.findings] == [
        (40, "messages[1].content[0].text", "assistant")
    ]
    assert [(i.row, i.message) for i in report.issues] == [(7, "line is not valid JSON (scanned as text)")]
    assert reads == [64, 32, 32]


@pytest.mark.slow
def test_jsonl_malformed_line_is_scanned_as_text_and_makes_the_scan_incomplete(tmp_path, options):
    token = _gen("{{github:ghp_}}")
    good = json.dumps({"text": "fine"})
    path = tmp_path / "broken.jsonl"
    path.write_text(f'{good}\n{{"text": "GITHUB_TOKEN={token}", "cut\n[1, 2, "valid json, not an object"]\n{good}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "scan", str(path), "--format", "json"], capture_output=True, text=True
    )
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert [(f["row"], f["column"], f["rule_id"]) for f in report["findings"]] == [(1, "__line__", "github-pat")]
    assert [(e["shard"], e["row"]) for e in report["errors"]] == [(str(path), 1)]
    assert "not valid JSON" in report["errors"][0]["message"]
    assert token not in proc.stdout + proc.stderr


def test_json_document_object_is_one_row_and_a_broken_one_is_scanned_as_text(tmp_path, options):
    token = _gen("{{github:ghp_}}")
    (tmp_path / "dataset_info.json").write_text(json.dumps({"description": "benign", "splits": ["train"]}, indent=2))
    (tmp_path / "config.json").write_text(json.dumps({"hub": {"token": token}}, indent=2))
    (tmp_path / "cut.json").write_text('{\n  "notes": "GITHUB_TOKEN=' + token + '",\n')
    report = shardscan.scan([str(tmp_path)], options=options)
    assert [(f.location.shard, f.location.row, f.location.column) for f in report.findings] == [
        ("config.json", 0, "hub.token"),
        ("cut.json", 0, "__line__"),
    ]
    assert [(i.shard, i.row, i.message) for i in report.issues] == [
        ("cut.json", 0, "line is not valid JSON (scanned as text)")
    ]
    assert report.decision.exit_code == 3


def test_json_document_over_the_limit_is_unreadable_not_skipped(tmp_path, options, monkeypatch):
    from shardscan.reader import jsonl

    monkeypatch.setattr(jsonl, "DOCUMENT_LIMIT", 1000)
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"text": "x" * 100} for _ in range(20)], indent=2))
    report = shardscan.scan([str(path)], options=options)
    assert report.findings == ()
    assert [(i.kind, i.message) for i in report.issues] == [
        ("unreadable", "a JSON document (not JSON Lines) over 1000 B is not read; convert it to JSON Lines")
    ]
    assert report.decision.exit_code == 3


def test_json_documents_lose_nothing_to_parsing(tmp_path, options):
    """Repeated keys, a cut emoji, a huge integer and a JSON Lines file whose first line is no object."""
    token = _gen("{{github:ghp_}}")
    cases = {
        "repeated-key.json": '[{"text": "GITHUB_TOKEN=' + token + '", "text": "benign"}]',
        "cut-emoji.json": '[{"text": "cut emoji \\ud83d"}, {"text": "GITHUB_TOKEN=' + token + '"}]',
        "big-int.json": '[{"n": ' + "7" * 5000 + ', "text": "GITHUB_TOKEN=' + token + '"}]',
        "lines.json": '["meta"]\n{"text": "hi"}\n{"text": "GITHUB_TOKEN=' + token + '"}\n',
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    report = shardscan.scan([str(tmp_path)], options=options)
    assert sorted((f.location.shard, f.location.row, f.location.column) for f in report.findings) == [
        ("big-int.json", 0, "text"),
        ("cut-emoji.json", 1, "text"),
        ("lines.json", 2, "text"),
        ("repeated-key.json", 0, "__line__"),
    ]
    assert report.issues == ()


def test_single_line_json_document_over_the_limit_is_unreadable(tmp_path, options, monkeypatch):
    from shardscan.reader import jsonl

    monkeypatch.setattr(jsonl, "DOCUMENT_LIMIT", 1000)
    (tmp_path / "minified.json").write_text(json.dumps([{"text": "x" * 100} for _ in range(20)]))
    report = shardscan.scan([str(tmp_path)], options=options)
    assert [i.message for i in report.issues] == [
        "a JSON document (not JSON Lines) over 1000 B is not read; convert it to JSON Lines"
    ]


def test_json_lines_that_would_crash_pyarrow_are_scanned_as_text(tmp_path, options):
    """pyarrow's JSON reader kills the process on a batch of bare nulls and on very deep nesting."""
    token = _gen("{{github:ghp_}}")
    (tmp_path / "nulls.jsonl").write_text("null\nnull\n")
    deep = '{"note": "GITHUB_TOKEN=' + token + '", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (tmp_path / "deep.jsonl").write_text(json.dumps({"text": "fine"}) + "\n" + deep + "\n")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    report = shardscan.scan([str(tmp_path)], options=options)
    assert [(f.location.shard, f.location.row, f.location.column) for f in report.findings] == [
        ("deep.jsonl", 1, "__line__")
    ]
    assert sorted((i.shard, i.row, i.message) for i in report.issues) == [
        ("deep.json", 0, "line is nested too deeply to read (scanned as text)"),
        ("deep.jsonl", 1, "line is nested too deeply to read (scanned as text)"),
    ]
    assert {s.shard: s.stats.rows for s in report.shards} == {"deep.json": 1, "deep.jsonl": 2, "nulls.jsonl": 2}


def test_jsonl_invalid_utf8_is_replaced_not_fatal(tmp_path, options):
    token = _gen("{{openai}}")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"text": "caf\xe9 key ' + token.encode() + b'"}\n')
    report = shardscan.scan([str(path)], options=options)
    assert [(f.rule_id, f.location.row, f.location.column) for f in report.findings] == [("openai-api-key", 0, "text")]
    assert report.issues == ()


def test_truncated_gzip_keeps_findings_read_so_far_and_exits_3(tmp_path, options):
    rows = planted_rows() * 200  # large enough that the cut lands after the first planted secrets
    data = gzip.compress(_jsonl_bytes(rows))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) * 3 // 4])
    report = shardscan.scan([str(path)], options=options)
    assert report.decision.exit_code == 3
    [issue] = report.issues
    assert issue.kind == "unreadable" and issue.shard == str(path) and "read failed after" in issue.message
    assert report.findings and all(f.location.row < len(rows) for f in report.findings)
    assert finding_keys(report)[0][0] == "anthropic-api-key"


@pytest.mark.slow
def test_worker_processes_give_the_same_findings_for_every_format(tmp_path, options):
    for name, write in WRITERS.items():
        write(tmp_path / name)
    pq.write_table(planted_table(), tmp_path / "train.parquet", row_group_size=4)
    one = shardscan.scan([str(tmp_path)], options=options, jobs=1)
    two = shardscan.scan([str(tmp_path)], options=options, jobs=2)
    shards = len(WRITERS) + 1
    assert len(one.findings) == 10 * shards and one.issues == ()
    assert [(f.location, f.rule_id, f.start, f.fingerprint) for f in two.findings] == [
        (f.location, f.rule_id, f.start, f.fingerprint) for f in one.findings
    ]
    assert two.stats.rows == one.stats.rows == 12 * shards
