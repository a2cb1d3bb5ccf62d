"""``shardscan demo``: the bundled dataset and its four documented rows, found at exact locations."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from shardscan import demo
from shardscan.cli import app

# (shard, row, column, role, kind) of the four rows the last release documented (see demo.py).
DOCUMENTED = [
    ("train-00012-of-00104.parquet", 4, "instruction", None, "private-key"),  # structure, body omitted
    ("train-00068-of-00104.parquet", 3, "conversations[3].content", "tool", "jwt"),  # expired HS256 JWT in a page
    ("train-00089-of-00104.parquet", 1, "conversations[2].content", "assistant", "jwt"),  # raw.githubusercontent URL
    ("train-00100-of-00104.parquet", 2, "conversations[2].content", "assistant", "private-key"),  # snakeoil edit
]


@pytest.mark.slow
def test_demo_finds_exactly_the_four_documented_rows(tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["demo", str(tmp_path / "ds"), "--format", "json", "--output", str(out)])
    assert result.exit_code in (0, 1), result.stderr  # complete scan; verdicts decide 0 or 1
    report = json.loads(out.read_text())
    assert report["errors"] == []
    found = [(f["shard"], f["row"], f["column"], f["role"], f["kind"]) for f in report["findings"]]
    assert found == DOCUMENTED
    for f in report["findings"]:
        assert {"verdict", "blocking", "status", "fingerprint", "preview"} <= set(f)
    assert report["scanned"]["shards"] == demo.NUM_SHARDS == 104
    assert report["scanned"]["rows"] == 104 * demo.ROWS_PER_SHARD
    shards = sorted(p.name for p in (tmp_path / "ds").iterdir())
    assert len(shards) == 104 and all(re.fullmatch(r"train-\d{5}-of-00104\.parquet", s) for s in shards)


def test_demo_rows_match_the_documented_content(tmp_path):
    """The findings are what the docstring says they are, not just at the right places."""
    import pyarrow.parquet as pq

    demo.write_demo_dataset(tmp_path)

    def cell(shard: int, row: int, column: str) -> str:
        table = pq.read_table(tmp_path / demo.shard_name(shard))
        record = table.slice(row, 1).to_pylist()[0]
        if column.startswith("conversations["):
            return record["conversations"][int(column[14:15])]["content"]
        return record[column]

    assert "<key body omitted>" in cell(12, 4, "instruction")
    assert "<html>" in cell(68, 3, "conversations[3]")
    assert "raw.githubusercontent.com" in cell(89, 1, "conversations[2]")
    assert "ssl-cert-snakeoil.key" in cell(100, 2, "conversations[2]")


def test_demo_dataset_is_deterministic(tmp_path):
    first = demo.write_demo_dataset(tmp_path / "a")
    second = demo.write_demo_dataset(tmp_path / "b")
    import pyarrow.parquet as pq

    for a, b in zip(first[60:70], second[60:70], strict=True):
        assert pq.read_table(a).equals(pq.read_table(b))
