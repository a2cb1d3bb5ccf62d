"""JSON report: the stable, versioned contract the publish pipeline reads."""

from __future__ import annotations

from shardscan.report import Report

# The document itself is built in ``shardscan.report`` (``report_dict``), below every reporter, so
# that the report module imports no reporter: this format is ``Report.to_json``.


def render(report: Report, _options: object = None) -> str:
    """Pretty-printed JSON, keys in contract order."""
    return report.to_json()
