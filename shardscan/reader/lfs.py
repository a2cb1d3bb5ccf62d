"""Recognise Git LFS pointer files, which stand in for a shard whose content was never fetched."""

from __future__ import annotations

import re

from shardscan.reader.sources import ShardRef

# A pointer is a few short "key value" lines; the spec caps it well below 1024 bytes.
MAX_POINTER_BYTES = 1024
_POINTER = re.compile(
    rb"\Aversion https://(?:git-lfs\.github\.com/spec/v1|hawser\.github\.com/spec/v1)\r?\n"
    rb"(?:[a-z0-9.\-]+ [^\r\n]*\r?\n)*\Z"
)
_OID = re.compile(rb"^oid sha256:[0-9a-f]{64}\r?$", re.MULTILINE)

LFS_POINTER_MESSAGE = (
    "this is a Git LFS pointer file, not the shard: its content is not present in the working tree, "
    "so it cannot be scanned (run `git lfs pull`, or `git lfs install` then check it out again)"
)


def is_lfs_pointer(head: bytes) -> bool:
    """True when ``head`` (a whole small file) is a Git LFS pointer text."""
    return len(head) <= MAX_POINTER_BYTES and bool(_POINTER.match(head)) and bool(_OID.search(head))


def lfs_pointer_reason(shard: ShardRef) -> str | None:
    """The error message for a shard that is an LFS pointer, or None (also when it cannot be read:
    the reader reports that itself)."""
    size = shard.size()
    if size is None or size > MAX_POINTER_BYTES:
        return None
    try:
        with shard.open() as handle:
            head = handle.read(MAX_POINTER_BYTES + 1)
    except Exception:  # unreadable files are the reader's to report, with its own message
        return None
    return LFS_POINTER_MESSAGE if is_lfs_pointer(head) else None
