"""Reporters: one module per output format; each renders a Report and never sees a plaintext secret."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardscan.report import Report


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """Presentation choices shared by reporters."""

    color: bool = False
    width: int = 120
    quiet: bool = False


Renderer = Callable[[Report, RenderOptions], str]


def _registry() -> dict[str, Renderer]:
    from shardscan.reporters import json_report, terminal

    return {
        "terminal": terminal.render,
        "json": json_report.render,
    }


FORMATS: tuple[str, ...] = ("terminal", "json")


def render(report: Report, fmt: str, options: RenderOptions | None = None) -> str:
    """Render ``report`` in format ``fmt`` (one of FORMATS)."""
    registry = _registry()
    if fmt not in registry:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return registry[fmt](report, options or RenderOptions())
