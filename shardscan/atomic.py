"""Reserved names for files shardscan writes partway: discovery never reads them as data."""

from __future__ import annotations

# Every file shardscan writes is first written under its final name plus this suffix and renamed
# when complete, so an interrupted run never leaves a file that looks finished. Discovery skips
# names ending with it (they are shardscan's own half-written output, not data to publish).
TEMP_SUFFIX = ".shardscan-partial"
