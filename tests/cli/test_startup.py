"""Start-up contract: what importing the CLI and running a local scan load, and what worker pools leave behind.

Each check runs in a fresh interpreter: this test process has long imported everything.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from shardscan import synth
from tests.conftest import trace_row, write_trace_shard

REPO = Path(__file__).resolve().parents[2]

# Modules a local scan in one process never needs: key parsing (only when a private-key candidate
# is verified), the progress bar (only on a terminal), remote readers (only for URLs), the worker
# pool (only with several work items and --jobs > 1), and commands other than scan.
NOT_AT_START = (
    "cryptography", "rich", "fsspec", "s3fs", "shardscan.reader.remote", "shardscan.review", "shardscan.remediate",
    "shardscan.demo", "shardscan.engines.ray_engine", "multiprocessing", "concurrent.futures",
    # Arrow's kernels are called by name (shardscan.arrow_compute): this module's wrappers cost 40 ms.
    "pyarrow.compute",
)


def run_python(code: str, cwd: Path) -> dict:
    """Run ``code`` in a fresh interpreter that imports this checkout; return the JSON it prints last."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def loaded(names: tuple[str, ...] = NOT_AT_START) -> str:
    """Python expression: which of ``names`` are in sys.modules."""
    return f"sorted(m for m in {names!r} if m in sys.modules)"


def test_importing_the_cli_loads_no_optional_module(tmp_path):
    out = run_python(f"import json, sys, shardscan.cli; print(json.dumps({loaded()}))", tmp_path)
    assert out == []


def test_importing_the_package_loads_no_engine(tmp_path):
    code = (
        f"import json, sys, shardscan; before = {loaded(('pyarrow', 'shardscan.api', 'shardscan.engine'))}; "
        "from shardscan import scan, Report, Verdict; "
        f"print(json.dumps([before, scan.__module__, Report.__module__, Verdict.VALID.value, "
        f"{loaded(('shardscan.api',))}]))"
    )
    assert run_python(code, tmp_path) == [[], "shardscan.api", "shardscan.report", "valid", ["shardscan.api"]]


def scan_in_fresh_interpreter(tmp_path: Path, secret: str, jobs: int) -> dict:
    """Scan a one-row shard holding ``secret`` with ``jobs`` workers in a fresh interpreter."""
    shard = write_trace_shard(tmp_path / "data" / "train-0.parquet",
                              [trace_row([("user", "hello")]), trace_row([("assistant", f"export TOKEN={secret}")])])
    code = (
        "import gc, json, sys\n"
        "from datetime import UTC, datetime\n"
        "from shardscan.api import scan\n"
        "from shardscan.engine import ScanOptions\n"
        "options = ScanOptions(now=datetime(2026, 12, 2, tzinfo=UTC))\n"
        f"report = scan([{str(shard.parent)!r}], options=options, jobs={jobs})\n"
        "found = [(f.location.row, f.location.column, f.rule_id, f.verdict.value) for f in report.findings]\n"
        f"print(json.dumps([found, {loaded()}, gc.get_freeze_count(), gc.isenabled()]))\n"
    )
    return run_python(code, tmp_path)


@pytest.mark.slow
def test_local_scan_without_private_keys_never_imports_cryptography(tmp_path):
    token = synth.github_token(random.Random(7))
    found, modules, _, _ = scan_in_fresh_interpreter(tmp_path, token, jobs=1)
    assert found == [[1, "conversations[0].content", "github-pat", "valid"]]
    assert modules == []


@pytest.mark.slow
def test_private_key_candidate_is_verified_with_cryptography_imported_on_demand(tmp_path):
    pem = synth.private_key_pem("ec", seed=3).replace("\n", "\\n")  # as a JSON-escaped log line holds it
    found, modules, _, _ = scan_in_fresh_interpreter(tmp_path, pem, jobs=1)
    assert [(row, rule, verdict) for row, _, rule, verdict in found] == [(1, "private-key", "valid")]
    assert modules == ["cryptography"]


@pytest.mark.slow
def test_worker_pool_leaves_the_collector_as_it_found_it(tmp_path):
    # Workers are forked with the heap frozen (their collector skips what they inherit); the
    # calling process gets its collector back unchanged, with the same findings as one worker.
    token = synth.github_token(random.Random(8))
    one = scan_in_fresh_interpreter(tmp_path / "one", token, jobs=1)
    two = scan_in_fresh_interpreter(tmp_path / "two", token, jobs=2)
    assert two[0] == one[0] == [[1, "conversations[0].content", "github-pat", "valid"]]
    assert two[2:] == [0, True]
