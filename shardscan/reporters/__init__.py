"""Reporters: one module per output format; each renders a Report and never sees a plaintext secret."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
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


class OutputFormat(StrEnum):
    """The report formats, by the name ``--format`` takes."""

    TERMINAL = "terminal"
    JSON = "json"
    JSONL = "jsonl"
    SARIF = "sarif"
    MARKDOWN = "markdown"
    HTML = "html"
    CARD = "card"
    JUNIT = "junit"
    COMPACT = "compact"


# The single list of formats: format -> module in this package that renders it. A module is
# imported only when its format is asked for (the terminal one pulls in rich, which a gate
# writing JSON does not need).
MODULES: dict[OutputFormat, str] = {
    OutputFormat.TERMINAL: "terminal",
    OutputFormat.JSON: "json_report",
    OutputFormat.JSONL: "jsonl",
    OutputFormat.SARIF: "sarif",
    OutputFormat.MARKDOWN: "markdown",
    OutputFormat.HTML: "html",
    OutputFormat.CARD: "card",
    OutputFormat.JUNIT: "junit",
    OutputFormat.COMPACT: "compact",
}


def renderer(fmt: str) -> Renderer:
    """The render function of format ``fmt`` (ValueError for an unknown format)."""
    if fmt not in MODULES:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    render_function: Renderer = importlib.import_module(f"{__name__}.{MODULES[OutputFormat(fmt)]}").render
    return render_function


# The format names, in the order help and documentation list them.
FORMATS: tuple[str, ...] = tuple(str(f) for f in OutputFormat)

# File name suffix per format, for callers that write every format into one folder (e.g. the gate).
# Keyed by the members; typed by name, which is how callers look a format up.
EXTENSIONS: dict[str, str] = {
    OutputFormat.TERMINAL: ".txt", OutputFormat.JSON: ".json", OutputFormat.JSONL: ".jsonl",
    OutputFormat.SARIF: ".sarif", OutputFormat.MARKDOWN: ".md", OutputFormat.HTML: ".html",
    OutputFormat.CARD: ".md", OutputFormat.JUNIT: ".xml", OutputFormat.COMPACT: ".txt",
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
