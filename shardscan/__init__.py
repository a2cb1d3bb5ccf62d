"""shardscan: find credentials in every decoded string cell of Parquet dataset shards."""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

# The public names are imported on first use (PEP 562), so that importing one submodule (the CLI,
# a reporter, the model) does not import them all first: the command line decides which parts of
# the package a run needs.
_EXPORTS = {
    "Allowlist": "shardscan.allowlist",
    "load_allowlist": "shardscan.allowlist",
    "scan": "shardscan.api",
    "scan_table": "shardscan.api",
    "CellLocation": "shardscan.model",
    "Finding": "shardscan.model",
    "ScanIssue": "shardscan.model",
    "Verdict": "shardscan.model",
    "Report": "shardscan.report",
}

__all__ = [
    "Allowlist", "CellLocation", "Finding", "Report", "ScanIssue", "Verdict", "__version__", "load_allowlist", "scan",
    "scan_table",
]

if TYPE_CHECKING:
    from shardscan.allowlist import Allowlist, load_allowlist
    from shardscan.api import scan, scan_table
    from shardscan.model import CellLocation, Finding, ScanIssue, Verdict
    from shardscan.report import Report


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'shardscan' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
