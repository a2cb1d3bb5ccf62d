"""Command line: parse options, call the library, render reports, map outcomes to exit codes.

The commands live in ``scanning`` (scan, hook, gate, demo) and ``remediation`` (redact, allowlist,
review, rules), their shared options and the one builder of a scan's setup in ``options``, report
output in ``output``, and the application, error-to-exit-code mapping and entry point in ``app``.

Start-up: ``shardscan --help`` and the pre-commit hook must start fast (tests/cli/test_startup.py), so a
module that only some commands need (the scan machinery, rich's progress bar, the redaction
writers, the allowlist editor, the demo data, the rule checker) is imported inside those commands,
each such import marked "Start-up:"; every other import is at the top of its module.
"""

# No ``from __future__ import annotations`` in this package: Typer reads every command's parameter
# types on every run, and string annotations would make it compile and evaluate each of them (about 15 ms).
import gc
import os

# pyarrow allocates through mimalloc, which hands freed pages back to the OS after 10 ms; each row
# group then faults its buffers in again, which made reading a row group in a worker about 1.7x
# slower than reading it alone. A command ends when its scan ends and its memory is bounded by
# the slices it reads (``--memory-budget``), so it keeps freed pages for reuse instead. Set
# before pyarrow loads; a value the user exported wins. (The library leaves its host's
# allocator alone.)
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")

# The imports below create tens of thousands of objects that live as long as the process: the
# collector's passes over them while they load cost 20-25 ms of every run and free nothing.
_collecting = gc.isenabled()
gc.disable()
try:
    from shardscan.cli.app import app, main
finally:
    if _collecting:
        gc.freeze()
        gc.enable()

__all__ = ["app", "main"]
