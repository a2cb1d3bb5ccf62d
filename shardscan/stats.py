"""Where a scan's time went: the per-stage table printed by ``scan --stats``."""

from __future__ import annotations

from shardscan.report import Report

# Stages in pipeline order; any other stage a future engine part records is listed after them.
STAGES = ("read", "prefilter", "gate", "decode", "match", "verify")


def format_stats(report: Report, jobs: int) -> str:
    """A plain-text table of stage times, throughput and work avoided (no cell content)."""
    stats = report.stats
    timings = dict(report.timings)
    stages = [s for s in STAGES if s in timings] + sorted(s for s in timings if s not in STAGES)
    busy = sum(timings.values())
    mb = stats.bytes / 1e6
    wall = stats.seconds
    lines = [
        f"shardscan stats: {stats.shards} shard(s), {stats.row_groups} row group(s), {stats.rows} rows, "
        f"{stats.cells} cells, {mb:.1f} MB of strings",
        f"  wall time    {wall:9.3f} s   {mb / wall if wall > 0 else 0.0:9.1f} MB/s   jobs={jobs}",
        f"  candidates   {stats.candidate_cells} cell(s) selected by the prefilter "
        f"({100.0 * stats.candidate_cells / stats.cells if stats.cells else 0.0:.2f}% of cells)",
        "  stage        seconds (summed over workers)   share",
    ]
    for stage in stages:
        secs = timings[stage]
        lines.append(f"  {stage:12} {secs:9.3f} s{'':21}{100.0 * secs / busy if busy else 0.0:5.1f}%")
    lines.append(f"  {'total':12} {busy:9.3f} s")
    return "\n".join(lines) + "\n"
