"""shardscan: find credentials in every decoded string cell of Parquet dataset shards."""

__version__ = "0.1.0"

from shardscan.allowlist import Allowlist, load_allowlist  # noqa: E402
from shardscan.api import scan, scan_table  # noqa: E402
from shardscan.model import CellLocation, Finding, ScanIssue, Verdict  # noqa: E402
from shardscan.report import Report  # noqa: E402

__all__ = [
    "Allowlist", "CellLocation", "Finding", "Report", "ScanIssue", "Verdict", "__version__", "load_allowlist", "scan",
    "scan_table",
]
