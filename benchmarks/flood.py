"""Measure one hostile cell: a million ``ghp_`` look-alikes and one valid token (wall time, peak RSS, report size).

The cell is generated here (look-alikes fail the token checksum; the valid token is made by
``shardscan.synth``), written as a one-row Parquet shard into a temporary folder, and scanned by
``shardscan scan --jobs 1 -f json:PATH`` in a separate process, whose process tree's RSS is
sampled (:func:`benchmarks.run.measure`). The README's bound on the cost of a cell comes from it.

Usage: ``python -m benchmarks.flood [--lookalikes 1000000]``
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.run import measure
from shardscan.synth import github_token

ALNUM = string.ascii_letters + string.digits


def flood_cell(lookalikes: int, seed: int = 1) -> str:
    """``lookalikes`` look-alikes separated by spaces, one valid token in the middle."""
    rng = random.Random(seed)
    parts = ["ghp_" + "".join(rng.choices(ALNUM, k=36)) for _ in range(lookalikes)]
    parts.insert(lookalikes // 2, github_token(rng))
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookalikes", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="shardscan-flood-") as tmp:
        folder = Path(tmp)
        cell = flood_cell(args.lookalikes)
        pq.write_table(pa.table({"text": [cell]}), folder / "flood.parquet")
        report = folder / "report.json"
        run = measure([sys.executable, "-m", "shardscan.cli", "scan", str(folder / "flood.parquet"), "--jobs", "1",
                       "--no-cache", "--no-allowlist", "-f", f"json:{report}"])
        data = json.loads(report.read_text())
        counted = sum(f.get("count", 1) for f in data["findings"])
        print(f"cell: {len(cell) / 1e6:.1f} MB, {args.lookalikes:,} look-alikes and 1 valid token")
        print(f"exit {run.returncode}, wall {run.seconds:.1f} s, CPU {run.cpu_seconds:.1f} s, "
              f"peak RSS {run.peak_rss / 2**20:.0f} MiB (process tree)")
        print(f"report: {report.stat().st_size / 1e6:.2f} MB, {len(data['findings'])} findings listed, "
              f"{counted:,} counted; errors: {[(e['kind'], e['message']) for e in data['errors']]}")


if __name__ == "__main__":
    main()
