"""Reporters: one module per output format; each renders a Report and never sees a plaintext secret."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shardscan.atomic import write_file
from shardscan.report import Report


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """Presentation choices shared by reporters."""

    color: bool = False
    width: int = 120
    quiet: bool = False
    # Fold long text lines at ``width`` between words (a terminal). Off for files and pipes, where a
    # line a finding or an error greps better; tables and finding blocks fit ``width`` either way.
    wrap: bool = False


Renderer = Callable[[Report, RenderOptions], str]


# The single list of formats: format name -> module in this package that renders it. A module is
# imported only when its format is asked for (the terminal one pulls in rich, which a gate
# writing JSON does not need).
MODULES: dict[str, str] = {
    "terminal": "terminal",
    "json": "json_report",
    "jsonl": "jsonl",
    "sarif": "sarif",
    "markdown": "markdown",
    "html": "html",
    "card": "card",
    "junit": "junit",
    "compact": "compact",
}


def renderer(fmt: str) -> Renderer:
    """The render function of format ``fmt`` (ValueError for an unknown format)."""
    if fmt not in MODULES:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return importlib.import_module(f"{__name__}.{MODULES[fmt]}").render


FORMATS: tuple[str, ...] = tuple(MODULES)

# File name suffix per format, for callers that write every format into one folder (e.g. the gate).
EXTENSIONS: dict[str, str] = {
    "terminal": ".txt", "json": ".json", "jsonl": ".jsonl", "sarif": ".sarif", "markdown": ".md",
    "html": ".html", "card": ".md", "junit": ".xml", "compact": ".txt",
}


def render(report: Report, fmt: str, options: RenderOptions | None = None) -> str:
    """Render ``report`` in format ``fmt`` (one of FORMATS)."""
    return renderer(fmt)(report, options or RenderOptions())


def write(report: Report, fmt: str, path: Path, options: RenderOptions | None = None, *, mkdir: bool = False) -> Path:
    """Render ``report`` in format ``fmt`` and write it to ``path`` (UTF-8), completely or not at all.

    Parent folders are created only with ``mkdir``. A failure raises OutputError naming ``path``
    and leaves no partial file (see :mod:`shardscan.atomic`).
    """
    text = render(report, fmt, options)
    return write_file(path, text, mkdir=mkdir)
