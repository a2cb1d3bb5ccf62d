"""JSON Lines report: one finding per line, for streaming into other tools (jq, log pipelines, BigQuery)."""

from __future__ import annotations

import json

from shardscan.report import Report, report_dict


def render(report: Report, _options: object = None) -> str:
    """Every finding as one JSON object per line (``"type": "finding"``), then one line per scan error
    (``"type": "error"``), then one ``"type": "summary"`` line with everything else the JSON report holds.

    Each record carries ``type`` first so a consumer can keep only findings with
    ``jq -c 'select(.type == "finding")'``; the summary comes last because a stream reader learns
    the gate decision once the scan is over.
    """
    data = report_dict(report)
    lines = [{"type": "finding", **f} for f in data.pop("findings")]
    lines += [{"type": "error", **e} for e in data.pop("errors")]
    lines.append({"type": "summary", **data})
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)
