"""JSON report: the stable, versioned contract the publish pipeline reads."""

from __future__ import annotations

from shardscan.pretty_json import pretty_json
from shardscan.report import Report
from shardscan.report import finding_dict as finding_dict
from shardscan.report import issue_dict as issue_dict
from shardscan.report import report_dict as report_dict

# The document itself is built in ``shardscan.report`` (``report_dict``), below every reporter:
# ``Report.to_json`` writes it too, and the report module imports no reporter.


def render(report: Report, _options: object = None) -> str:
    """Pretty-printed JSON, keys in contract order."""
    return pretty_json(report_dict(report)) + "\n"
