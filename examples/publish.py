"""Export, scan, and upload only when the gate passes: the pipeline API in one script."""

from __future__ import annotations

import sys
from pathlib import Path

from shardscan import scan


def publish(folder: Path) -> int:
    """Scan every shard under ``folder``; upload only when nothing blocks and everything was read."""
    report = scan([str(folder)], cache=Path(".shardscan-cache"))  # findings never raise
    Path("shardscan-report.json").write_text(report.to_json(), encoding="utf-8")
    for finding in report.blocking:
        loc = finding.location
        print(f"blocking: {finding.rule_id} at {loc.shard} row {loc.row} {loc.column} ({finding.preview})")
    for issue in report.issues:
        print(f"error: {issue.shard}: {issue.message}")
    if report.exit_code != 0:
        print(f"not published: {report.decision.reason}")
        return report.exit_code
    # upload(folder)  # e.g. huggingface_hub.upload_folder(...)
    return 0


if __name__ == "__main__":
    sys.exit(publish(Path(sys.argv[1] if len(sys.argv) > 1 else "data")))
