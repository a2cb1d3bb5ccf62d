"""Reporters: one module per output format; each renders a Report and never sees a plaintext secret."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shardscan.report import Report


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """Presentation choices shared by reporters."""

    color: bool = False
    width: int = 120
    quiet: bool = False


Renderer = Callable[[Report, RenderOptions], str]


def _registry() -> dict[str, Renderer]:
    # Imported lazily so `import shardscan` stays cheap; the dict is the single list of formats.
    from shardscan.reporters import card, compact, html, json_report, jsonl, junit, markdown, sarif, terminal

    return {
        "terminal": terminal.render,
        "json": json_report.render,
        "jsonl": jsonl.render,
        "sarif": sarif.render,
        "markdown": markdown.render,
        "html": html.render,
        "card": card.render,
        "junit": junit.render,
        "compact": compact.render,
    }


FORMATS: tuple[str, ...] = ("terminal", "json", "jsonl", "sarif", "markdown", "html", "card", "junit", "compact")

# File name suffix per format, for callers that write every format into one folder (e.g. the gate).
EXTENSIONS: dict[str, str] = {
    "terminal": ".txt", "json": ".json", "jsonl": ".jsonl", "sarif": ".sarif", "markdown": ".md",
    "html": ".html", "card": ".md", "junit": ".xml", "compact": ".txt",
}


def render(report: Report, fmt: str, options: RenderOptions | None = None) -> str:
    """Render ``report`` in format ``fmt`` (one of FORMATS)."""
    registry = _registry()
    if fmt not in registry:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return registry[fmt](report, options or RenderOptions())


def write(report: Report, fmt: str, path: Path, options: RenderOptions | None = None) -> Path:
    """Render ``report`` in format ``fmt`` and write it to ``path`` (UTF-8; parent folders created)."""
    text = render(report, fmt, options)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
