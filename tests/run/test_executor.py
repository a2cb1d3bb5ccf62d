"""Parallel scanning: identical output for any --jobs, exact unreadable-part handling, --stats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.api import scan
from shardscan.engine import Scanner
from shardscan.executor import FOOTER, ItemResult, ShardPlan, WorkItem, assemble, plan_shard, run_items, scan_item
from shardscan.model import IssueKind, ScanIssue
from shardscan.reader import ShardRef, discover
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

NOW = "2026-12-02"


def _corpus(root: Path) -> dict[str, tuple[str, int, str]]:
    """Three readable shards of several row groups with planted tokens, plus a corrupt shard.

    Returns rule id -> (shard, row, column) of each planted token.
    """
    planted: dict[str, tuple[str, int, str]] = {}
    github = expand("{{github:ghp_}}", seed="exec-1")
    hf = expand("{{hf}}", seed="exec-2")
    aws = expand("{{aws_id:AKIA}}", seed="exec-3")
    system = "You are a helpful agent. Tools: bash, python. " * 20
    for s in range(3):
        rows = []
        for r in range(40):
            messages = [("system", system), ("user", f"task {s}-{r}"), ("assistant", f"running step {r}"),
                        ("tool", f"commit {'ab12' * 10}\n" * 3)]
            rows.append(trace_row(messages))
        # The same token in two row groups of one shard, and in the repeated system prompt slot.
        rows[3]["conversations"][3]["content"] = f"export GITHUB_TOKEN={github}"
        rows[27]["conversations"][3]["content"] = f"export GITHUB_TOKEN={github}"
        if s == 1:
            rows[11]["instruction"] = f"login with huggingface-cli login --token {hf}"
            planted["huggingface-token"] = (f"train-{s}.parquet", 11, "instruction")
        if s == 2:
            rows[39]["verifier_output"] = f"aws_access_key_id = {aws}"
            planted["aws-access-key-id"] = (f"train-{s}.parquet", 39, "verifier_output")
        write_trace_shard(root / f"train-{s}.parquet", rows, row_group_size=8)
    planted["github-pat"] = ("train-0.parquet", 3, "conversations[3].content")
    (root / "train-3.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    return planted


def _cli(*args: str) -> subprocess.CompletedProcess:
    # --no-cache: a second run must really scan, not replay the first one's results.
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args, "--no-cache"], capture_output=True, text=True)


@pytest.mark.slow
def test_jobs_1_and_2_give_identical_reports(tmp_path):
    data = tmp_path / "data"
    planted = _corpus(data)
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"report-{jobs}.json"
        proc = _cli("scan", str(data), "--jobs", jobs, "--now", NOW, "--format", "json", "--output", str(out))
        assert proc.returncode == 3, proc.stderr  # the corrupt shard makes the scan incomplete
        outputs[jobs] = json.loads(out.read_text())
    one, two = outputs["1"], outputs["2"]
    assert one["findings"] == two["findings"]
    assert one["errors"] == two["errors"]
    assert [s["shard"] for s in one["shards"]] == [s["shard"] for s in two["shards"]]
    located = {(f["rule_id"], f["shard"], f["row"], f["column"]) for f in one["findings"]}
    for rule_id, where in planted.items():
        assert (rule_id, *where) in located
    # Both copies of the GitHub token, in row groups 0 and 3 of each shard.
    assert sorted((f["shard"], f["row"]) for f in one["findings"] if f["rule_id"] == "github-pat") == [
        (f"train-{s}.parquet", row) for s in range(3) for row in (3, 27)
    ]
    [error] = one["errors"]
    assert error["shard"] == "train-3.parquet"


@pytest.mark.slow
def test_parallel_items_keep_row_group_errors_exact(tmp_path, ruleset, options):
    """A corrupt row group is reported with its index; the other row groups' findings stay."""
    path = tmp_path / "broken.parquet"
    token = expand("{{github:ghp_}}", seed="exec-rg")
    rows = [trace_row([("tool", f"GITHUB_TOKEN={token}" if i in (1, 9) else "ok")]) for i in range(12)]
    write_trace_shard(path, rows, row_group_size=4)
    meta = pq.ParquetFile(path).metadata
    # Corrupt the data pages of row group 1's first column chunk.
    column = meta.row_group(1).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    raw = bytearray(path.read_bytes())
    raw[start : start + column.total_compressed_size] = b"\xff" * column.total_compressed_size
    path.write_bytes(bytes(raw))
    scanner = Scanner(ruleset, options)
    shard = ShardRef("broken.parquet", str(path))
    plan = plan_shard(shard)
    assert [item.row_group for item in plan.items] == [FOOTER, 0, 1, 2]
    for jobs in (1, 2):
        results = list(run_items(scanner, list(plan.items), jobs))
        assert [r.item for r in results] == list(plan.items)
        cells = [f for r in results for f in r.findings if not f.location.column.startswith("__statistics__")]
        assert [f.location.row for f in cells] == [1, 9]
        # (The footer item's page checks see the damage too; a shard's result keeps one issue.)
        [issue] = [i for r in results if r.item.row_group != FOOTER for i in r.issues]
        assert (issue.shard, issue.kind, issue.row_group) == ("broken.parquet", "unreadable", 1)


def test_footer_metadata_is_its_own_work_item(tmp_path, ruleset, options):
    token = expand("{{hf}}", seed="exec-meta")
    table = pa.Table.from_pylist([trace_row([("user", "hi")])])
    table = table.replace_schema_metadata({b"note": f"HF_TOKEN={token}".encode()})
    path = tmp_path / "meta.parquet"
    pq.write_table(table, path)
    shard = ShardRef("meta.parquet", str(path))
    plan = plan_shard(shard)
    assert plan.items == (WorkItem(shard, FOOTER), WorkItem(shard, 0))
    result = scan_item(Scanner(ruleset, options), plan.items[0])
    [finding] = result.findings
    assert (finding.location.row, finding.location.column, finding.rule_id) == (
        -1, "__metadata__.note", "huggingface-token")


@pytest.mark.slow
def test_library_scan_is_identical_for_any_jobs(tmp_path, ruleset, options):
    data = tmp_path / "data"
    _corpus(data)
    reports = [scan([str(data)], ruleset=ruleset, options=options, jobs=jobs) for jobs in (1, 2, 3)]
    assert reports[0].findings == reports[1].findings == reports[2].findings
    assert reports[0].issues == reports[1].issues == reports[2].issues
    assert reports[0].stats.cells == reports[2].stats.cells > 0
    assert reports[0].decision.exit_code == 3


@pytest.mark.slow
def test_jobs_is_the_number_of_cores_a_scan_reads_with(tmp_path, ruleset, options, monkeypatch):
    """--jobs 1 decodes Parquet on one thread; pyarrow's pool only gets requested cores no worker uses."""
    import pyarrow.parquet as pq_module

    data = tmp_path / "data"
    _corpus(data)
    seen: list[bool] = []
    original = pq_module.ParquetFile.read_row_group

    def spy(self, i, columns=None, use_threads=True, **kwargs):
        seen.append(use_threads)
        return original(self, i, columns=columns, use_threads=use_threads, **kwargs)

    monkeypatch.setattr(pq_module.ParquetFile, "read_row_group", spy)
    [shard, *_] = sorted(discover([str(data)])[0], key=lambda s: s.display)
    items = [item for item in plan_shard(shard).items if item.row_group >= 0]
    assert len(items) >= 2
    list(run_items(Scanner(ruleset, options), items, jobs=1))
    assert seen and not any(seen)
    seen.clear()
    list(run_items(Scanner(ruleset, options), items[:1], jobs=4))  # one item, four cores asked for
    assert seen == [True]


def test_work_items_are_picklable_plain_values(tmp_path):
    import pickle

    write_trace_shard(tmp_path / "a.parquet", [trace_row()])
    [shard], _ = discover([str(tmp_path)])
    item = WorkItem(shard, 0)
    assert pickle.loads(pickle.dumps(item)) == item
    with pytest.raises(AttributeError):
        item.row_group = 1  # type: ignore[misc]


def test_findings_keep_every_field_through_pickling():
    """Findings travel from workers by pickle, built from their constructor's arguments."""
    import copy
    import pickle

    from shardscan.model import AllowlistRef, CellLocation, Finding, Status, Verdict

    finding = Finding("rule", "kind", "high", CellLocation("a.parquet", 3, "task", "user"), 1, 9, "f" * 16,
                      "ghp_…", Verdict.EXPIRED, "why", ("base64",), "ctx", False, Status.ALLOWLISTED,
                      AllowlistRef(2, "kept on purpose", "reviewer", "2026-11-30"), revealed="plain")
    for clone in (pickle.loads(pickle.dumps(finding)), copy.copy(finding)):
        assert clone == finding
        assert clone.revealed == "plain"  # compare=False: checked on its own
        assert type(clone.verdict) is Verdict and type(clone.location) is CellLocation


@pytest.mark.slow
def test_stats_option_prints_stage_times(tmp_path):
    data = tmp_path / "data"
    token = expand("{{github:ghp_}}", seed="exec-stats")
    write_trace_shard(data / "a.parquet", [trace_row([("tool", f"token {token}")]), trace_row()])
    proc = _cli("scan", str(data), "--stats", "--jobs", "1", "--quiet", "--now", NOW)
    assert proc.returncode == 1
    err = proc.stderr
    assert "shardscan stats: 1 shard(s), 1 row group(s), 2 rows" in err
    for stage in ("read", "prefilter", "match", "verify"):
        assert f"\n  {stage} " in err
    assert "jobs=1" in err and "MB/s" in err
    assert token not in proc.stdout + err


def test_jobs_must_be_positive(tmp_path):
    proc = _cli("scan", str(tmp_path), "--jobs", "0")
    assert proc.returncode == 2
    assert "--jobs" in proc.stderr


def test_scanner_options_survive_the_trip_to_workers(tmp_path, ruleset):
    """Expiry is judged with the caller's clock inside workers too (the Scanner is pickled whole)."""
    import pickle

    scanner = Scanner(ruleset, __import__("shardscan.engine", fromlist=["ScanOptions"]).ScanOptions(now=FIXED_NOW))
    clone = pickle.loads(pickle.dumps(scanner))
    assert clone.options.now == FIXED_NOW
    assert clone.gate == scanner.gate
    assert [r.id for r in clone.rules] == [r.id for r in scanner.rules]


def test_dictionary_column_values_are_decoded_once_and_every_row_reported(tmp_path, ruleset, options):
    token = expand("{{hf}}", seed="exec-dict")
    prompts = pa.array([f"HF_TOKEN={token}" if i % 3 == 0 else "You are a helpful agent." for i in range(30)])
    table = pa.table({"system": prompts.dictionary_encode(), "task": pa.array([f"t{i}" for i in range(30)])})
    path = tmp_path / "dict.parquet"
    pq.write_table(table, path, row_group_size=10)
    assert pa.types.is_dictionary(pq.ParquetFile(path).schema_arrow.field("system").type)
    report = scan([str(path)], ruleset=ruleset, options=options, jobs=2)
    assert [(f.location.row, f.location.column, f.rule_id) for f in report.findings] == [
        (row, "system", "huggingface-token") for row in range(0, 30, 3)
    ]
    assert report.stats.candidate_cells == 10


def _crash_on(row_groups: set[int]):
    """A scan_item that kills its worker process on the given row groups (workers are forked, so
    they run the patched module)."""
    import os

    from shardscan import executor

    original = executor.scan_item

    def crashing(scanner, item, footers=None):
        if item.row_group in row_groups:
            os._exit(9)  # what the kernel's OOM killer or a native crash looks like from outside
        return original(scanner, item, footers)

    return crashing


@pytest.mark.skipif(sys.platform != "linux", reason="the patched function reaches workers by fork")
def test_a_worker_that_dies_loses_only_the_item_it_was_scanning(tmp_path, ruleset, options, monkeypatch):
    from shardscan import executor

    monkeypatch.delenv("SHARDSCAN_START_METHOD", raising=False)
    token = expand("{{github:ghp_}}", seed="exec-died")
    rows = [trace_row([("tool", f"GITHUB_TOKEN={token}" if i % 4 == 1 else "ok")]) for i in range(24)]
    path = tmp_path / "six.parquet"
    write_trace_shard(path, rows, row_group_size=4)
    plan = plan_shard(ShardRef("six.parquet", str(path)))
    assert [item.row_group for item in plan.items] == [FOOTER, 0, 1, 2, 3, 4, 5]
    monkeypatch.setattr(executor, "scan_item", _crash_on({2}))
    results = list(run_items(Scanner(ruleset, options), list(plan.items), jobs=2))
    assert [r.item for r in results] == list(plan.items)
    [issue] = [i for r in results for i in r.issues]
    assert (issue.shard, issue.kind, issue.row_group) == ("six.parquet", "unreadable", 2)
    assert "worker process died" in issue.message
    # Every other row group was scanned (by the worker left, after the crash): none is lost.
    cells = [f for r in results for f in r.findings if not f.location.column.startswith("__statistics__")]
    assert [f.location.row for f in cells] == [1, 5, 13, 17, 21]


@pytest.mark.skipif(sys.platform != "linux", reason="the patched function reaches workers by fork")
def test_when_every_worker_dies_the_rest_is_reported_not_waited_for(tmp_path, ruleset, options, monkeypatch):
    from shardscan import executor

    monkeypatch.delenv("SHARDSCAN_START_METHOD", raising=False)
    path = tmp_path / "six.parquet"
    write_trace_shard(path, [trace_row([("tool", "ok")]) for _ in range(24)], row_group_size=4)
    plan = plan_shard(ShardRef("six.parquet", str(path)))
    monkeypatch.setattr(executor, "scan_item", _crash_on({0, 1, 2, 3, 4, 5}))
    results = list(run_items(Scanner(ruleset, options), list(plan.items), jobs=2))
    assert [r.item for r in results] == list(plan.items)
    assert [[i.row_group for i in r.issues] for r in results] == [[], [0], [1], [2], [3], [4], [5]]
    assert all("worker process died" in i.message for r in results for i in r.issues)


def test_a_cell_limit_in_a_row_group_does_not_hide_the_footers_damage_report(tmp_path):
    shard = ShardRef(display="s.parquet", path=str(tmp_path / "s.parquet"), format="parquet")
    footer, group = WorkItem(shard, FOOTER), WorkItem(shard, 0)
    damage = ScanIssue("s.parquet", IssueKind.UNREADABLE, "integrity: its pages hold 9 values, the footer says 5", 0)
    capped = ScanIssue("s.parquet", IssueKind.TRUNCATED, "findings: too many", 0, 3, "text")
    plan = ShardPlan(shard, (footer, group))
    result = assemble(plan, [ItemResult(footer, issues=(damage,)), ItemResult(group, issues=(capped,))])
    assert [(i.kind, i.row_group) for i in result.issues] == [
        (IssueKind.UNREADABLE, 0), (IssueKind.TRUNCATED, 0)]
    # The row group's own read failure still reports the damage once, by its item.
    unread = ScanIssue("s.parquet", IssueKind.UNREADABLE, "row group unreadable", 0)
    result = assemble(plan, [ItemResult(footer, issues=(damage,)), ItemResult(group, issues=(unread,))])
    assert [i.message for i in result.issues] == ["row group unreadable"]
