"""Byte sizes for options and messages: ``512MB`` → 536870912, 536870912 → ``512 MiB``."""

from __future__ import annotations

import re

# Powers of 1024 for every spelling: ``2GB``, ``2G`` and ``2GiB`` all mean 2 × 1024³ bytes, as in
# most memory settings (ulimit, container limits).
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes of a size such as ``512MB``, ``2GiB``, ``1.5G`` or ``1048576``; ValueError when malformed."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (expected e.g. 512MB, 2GB, 1.5GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_size(nbytes: float) -> str:
    """A byte count for messages, in the largest unit that keeps it >= 1: ``200 MiB``, ``1.5 GiB``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            break
        value /= 1024
    return f"{value:.0f} {unit}" if unit == "B" or value == round(value) else f"{value:.1f} {unit}"
