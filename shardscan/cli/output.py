"""Where reports go: ``--format``/``--output`` parsed, reports rendered to files and standard output."""

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import typer

from shardscan.atomic import write_stream
from shardscan.errors import ConfigError
from shardscan.report import Report
from shardscan.reporters import FORMATS, RenderOptions, render
from shardscan.reporters import write as write_report
from shardscan.reporters._common import decision_line


@dataclass(frozen=True, slots=True)
class Output:
    """One report to write: its format and file (None: standard output)."""

    format: str
    path: Path | None = None


def parse_outputs(formats: list[str], output: Path | None) -> list[Output]:
    """Parse ``--format`` values (FORMAT[:PATH]) and ``--output`` into outputs; terminal when none."""
    parsed: list[Output] = []
    for value in formats or ["terminal"]:
        name, _, path = value.partition(":")
        if name not in FORMATS:
            raise ConfigError(f"--format: unknown format {name!r} (known: {', '.join(FORMATS)})")
        parsed.append(Output(name, Path(path) if path else None))
    without_path = [i for i, o in enumerate(parsed) if o.path is None]
    if output is not None:
        if len(without_path) != 1:
            raise ConfigError("--output needs exactly one --format without its own path")
        parsed[without_path[0]] = Output(parsed[without_path[0]].format, output)
    elif len(without_path) > 1:
        raise ConfigError("only one --format may go to standard output; give the others a path (FORMAT:PATH)")
    return parsed


def use_color() -> bool:
    """Whether the terminal report may use colour: standard output is a terminal and NO_COLOR is unset."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def output_width(to_terminal: bool) -> int:
    """Columns to lay the report out in: the terminal's; for files and pipes (CI logs) $COLUMNS when
    set, else 160 (wide lines rather than folded cells)."""
    if to_terminal:
        return shutil.get_terminal_size().columns
    try:
        return max(int(os.environ.get("COLUMNS", "")), 20)
    except ValueError:
        return 160


def emit(report: Report, outputs: list[Output], quiet: bool, mkdir: bool = False) -> None:
    """Write every output (OutputError naming one that cannot be written: a file or standard output),
    then warn about allowlist entries that accepted nothing."""
    for fmt, path in ((o.format, o.path) for o in outputs):
        to_terminal = path is None and sys.stdout.isatty()
        color = to_terminal and use_color() and fmt == "terminal"
        options = RenderOptions(color=color, quiet=quiet, width=output_width(to_terminal), wrap=to_terminal)
        if path is None:
            write_stream(sys.stdout, render(report, fmt, options))
        else:
            write_report(report, fmt, path, options, mkdir=mkdir)
    if all(o.path is not None for o in outputs):
        # Files were written; still tell a person (or CI log) what the gate decided (plain text:
        # the terminal reporter would import rich for one line).
        write_stream(sys.stdout, decision_line(report) + "\n")
    allow = report.allowlist
    if allow and (allow.stale or allow.expired) and not report.policy.fail_on_stale:
        # A warning by default: say so where CI logs show it, whatever the formats were.
        entries = ", ".join(
            f"entry #{e.entry} ({e.state}, line {e.line})" for e in allow.stale + allow.expired
        )
        typer.echo(f"shardscan: warning: {allow.path}: allowlist entries that accepted nothing: {entries}; "
                   "--fail-on-stale makes them fail the gate", err=True)


def print_text(text: str) -> None:
    """Write ``text`` to standard output (OutputError when it cannot be written)."""
    write_stream(sys.stdout, text)
