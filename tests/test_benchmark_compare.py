"""The before/after benchmark times the tree it names: its runs refuse to scan with another tree's package."""

from __future__ import annotations

from pathlib import Path

from benchmarks import compare
from benchmarks.run import ROOT
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard


def _token_shard(folder: Path) -> Path:
    token = expand("{{github:ghp_}}", seed="benchmark-compare")
    return write_trace_shard(folder / "leak.parquet", [trace_row([("tool", f"export GITHUB_TOKEN={token}")])])


def test_a_run_scans_with_the_tree_it_names_or_not_at_all(tmp_path: Path) -> None:
    shard = _token_shard(tmp_path / "data")
    report = tmp_path / "report.json"
    run = compare.scan_once(ROOT, str(shard), report, cwd=tmp_path)
    assert run.returncode == 1 and run.cpu_seconds > 0  # (the token blocks)
    assert [f["rule_id"] for f in compare.findings_of(report)] == ["github-pat"]
    # A tree that is not where the package is imported from: the run says so instead of scanning.
    elsewhere = compare.scan_once(tmp_path / "not-a-tree", str(shard), tmp_path / "other.json", cwd=tmp_path)
    assert elsewhere.returncode == compare.WRONG_TREE and "not the tree" in elsewhere.stderr
    assert not (tmp_path / "other.json").exists()


def test_the_comparison_table_names_both_trees_and_compares_findings(tmp_path: Path) -> None:
    shard = _token_shard(tmp_path / "data")
    lines = compare.compare({"before": ROOT, "after": ROOT}, [str(shard)], 1, 1, tmp_path)
    assert lines[0].startswith("| path | wall before (best / median) | wall after |")
    [row] = lines[2:]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[0] == str(shard) and cells[5] == "1 / 1" and cells[6] == "identical"
