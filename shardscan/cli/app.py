"""The Typer application: its commands, one metavar style, the one place errors become exit codes, the entry point."""

# No ``from __future__ import annotations``: Typer evaluates the commands' annotations on every run.
import contextlib
import difflib
import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, ParamSpec, Protocol, cast

import typer

from shardscan import __version__
from shardscan.atomic import MISSING_FOLDER, CheckedStream
from shardscan.cli.remediation import allowlist_add, allowlist_check, redact, review, rules_check, rules_list
from shardscan.cli.scanning import demo, gate, hook, scan
from shardscan.errors import ConfigError, IncompleteInputError, OutputError, ShardscanError
from shardscan.policy import EXIT_INCOMPLETE, EXIT_USAGE

P = ParamSpec("P")

# The one place errors become exit codes: commands raise, ``exits`` prints one line naming the
# file (or flag) and what is wrong, and exits with the code of the error's nearest class listed.
EXIT_CODES: dict[type[ShardscanError], int] = {
    ConfigError: EXIT_USAGE,  # also MissingDependencyError: a bad rule file, allowlist, option or missing extra
    OutputError: EXIT_USAGE,  # a report, copy, manifest, allowlist or standard output that cannot be written
    IncompleteInputError: EXIT_INCOMPLETE,  # an input that names nothing: nothing was done
}


def error_message(err: ShardscanError, mkdir_hint: bool = False) -> str:
    """The one line an error prints; a missing output folder says how to create it where the command can."""
    if mkdir_hint and isinstance(err, OutputError) and err.reason == MISSING_FOLDER:
        return f"{err} (--mkdir creates it)"
    return str(err)


def exits(command: Callable[P, None]) -> Callable[P, None]:
    """``command`` with its errors mapped to exit codes (see EXIT_CODES); every command is registered through it."""
    mkdir_hint = "mkdir" in inspect.signature(command).parameters

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except ShardscanError as err:
            code = next((EXIT_CODES[c] for c in type(err).__mro__ if c in EXIT_CODES), None)
            if code is None:
                raise
            typer.echo(f"shardscan: error: {error_message(err, mkdir_hint)}", err=True)
            raise typer.Exit(code) from None

    return run


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Scan Parquet dataset shards for credentials before you publish them.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"shardscan {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose", "-v", count=True, show_default=False,
            help="Log progress to stderr: -v each shard, -vv each finding too (repeat the flag; it takes no value).",
        ),
    ] = 0,
    _version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the shardscan version and exit."),
    ] = False,
) -> None:
    """Scan Parquet dataset shards for credentials before you publish them."""
    if not verbose:
        # Problems are in the report; without -v, Python's last-resort handler would print each
        # unreadable shard a second time on stderr.
        library = logging.getLogger("shardscan")
        if not any(isinstance(h, logging.NullHandler) for h in library.handlers):
            library.addHandler(logging.NullHandler())
    else:
        logging.basicConfig(
            level=logging.DEBUG if verbose > 1 else logging.INFO,
            format="shardscan: %(levelname)s: %(message)s",
            stream=sys.stderr,
        )


def version() -> None:
    """Print the shardscan version."""
    typer.echo(f"shardscan {__version__}")


rules_app = typer.Typer(no_args_is_help=True, help="List and check detection rules.")
allowlist_app = typer.Typer(no_args_is_help=True, help="Add reviewed findings to the allowlist and check it.")
app.add_typer(rules_app, name="rules")
app.add_typer(allowlist_app, name="allowlist")

# The commands, in the order ``shardscan --help`` lists them.
app.command("scan")(exits(scan))
app.command("hook")(exits(hook))
app.command("gate")(exits(gate))
app.command("demo")(exits(demo))
app.command("redact")(exits(redact))
rules_app.command("list")(exits(rules_list))
rules_app.command("check")(exits(rules_check))
allowlist_app.command("add")(exits(allowlist_add))
allowlist_app.command("check")(exits(allowlist_check))
app.command("review")(exits(review))
app.command("version")(exits(version))


# Metavars by option name, so that every command's help reads the same (``--now DATE`` wherever it
# appears); an option not listed gets one from its type. Typer would print ``<str>`` and ``<path>``.
METAVARS: dict[str, str] = {
    "--format": "FORMAT[:PATH]", "--output": "PATH", "--rules": "PATH", "--disable": "RULE|KIND",
    "--now": "DATE", "--regex-timeout": "SECONDS", "--max-decode-depth": "N", "--max-decode-bytes": "N",
    "--allowlist": "PATH", "--cache-dir": "DIR", "--jobs": "N", "--engine": "local|ray", "--ray-address": "ADDRESS",
    "--report-dir": "DIR", "--out": "DIR", "--from": "REPORT", "--verdicts": "VERDICT[,VERDICT...]",
    "--replacement": "TEMPLATE", "--finding": "N", "--reason": "TEXT", "--reviewer": "NAME", "--expires": "DATE",
    "--rule": "RULE|KIND", "--shard": "GLOB", "--column": "GLOB", "--exclude": "GLOB",
}
_TYPE_METAVARS: dict[str, str] = {"integer": "N", "float": "NUMBER", "path": "PATH", "text": "TEXT"}


def _fix_metavars(cmd: Any) -> None:
    # Duck-typed (Any): typer vendors click in some versions, so the classes are not click's.
    for param in cmd.params:
        if param.param_type_name == "argument":
            # ``PATHS...`` in the usage line and the help, as click writes it; typer would
            # print ``{paths}...`` and ``paths...``.
            metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
            metavar = metavar if param.required else f"[{metavar}]"
            param.make_metavar = lambda *_args, _metavar=metavar, **_kwargs: _metavar
        elif param.param_type_name == "option" and not param.is_flag and not param.count:
            long = next((o for o in param.opts if o.startswith("--")), "")
            if long in METAVARS:
                param.metavar = METAVARS[long]
            elif not param.metavar or param.metavar.startswith("<"):
                param.metavar = _TYPE_METAVARS.get(param.type.name, param.type.name.upper())
    for sub in getattr(cmd, "commands", {}).values():
        _fix_metavars(sub)


def command() -> Any:
    """The click command behind ``app``, with one metavar style across commands (see METAVARS)."""
    root = typer.main.get_command(app)
    _fix_metavars(root)
    return root


class _ClickError(Protocol):
    """What the usage-error path uses of click's exceptions (found at run time, see _USAGE_ERROR)."""

    exit_code: int
    option_name: str
    possibilities: list[str] | None

    def show(self) -> None:
        """Print the error as click does."""


# click's exception classes, found through typer (which vendors click in some versions).
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _run_command() -> int | str | None:
    """Run the command line; usage errors are shown as click shows them, with stricter suggestions."""
    root = command()
    try:
        outcome = root.main(prog_name="shardscan", standalone_mode=False)
    except _USAGE_ERROR as exc:
        err = cast(_ClickError, exc)
        if type(exc).__name__ == "NoSuchOption":
            # difflib's default cutoff suggests --jobs for --bogus; suggest only near-misses (typos).
            name = err.option_name
            err.possibilities = [p for p in err.possibilities or []
                                 if difflib.SequenceMatcher(None, name, p).ratio() >= 0.8] or None
        err.show()
        return err.exit_code
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        return 1
    return outcome if isinstance(outcome, int) else 0


def main() -> None:
    """Console entry point.

    Once the command is done the process ends without tearing the interpreter down: reports are
    written and closed and worker pools joined by then, and unloading pyarrow and numpy costs
    about 0.15 s, a tenth of a hook-sized run. When Ray was used, its exit handlers shut it down,
    so the normal exit runs.
    """
    # Every write to standard output is checked: a full disk under ``> report.json`` or a closed
    # pipe is exit 2 with one line, never a truncated report with exit 0 (nor click's exit 1).
    sys.stdout = CheckedStream(sys.stdout)
    code: int | str | None
    try:
        code = _run_command()
    except SystemExit as done:
        code = done.code
    except OutputError as err:  # outside a command: writing what click printed
        code = _output_failed(err)
    if code in (0, 1, 3, None):
        try:
            sys.stdout.flush()
        except OutputError as err:
            code = _output_failed(err)
    if "ray" in sys.modules:
        raise SystemExit(code)
    _exit_now(code)


def _output_failed(err: OutputError) -> int:
    """Say on stderr that an output could not be written; the usage/config exit code."""
    with contextlib.suppress(OSError):
        sys.stderr.write(f"shardscan: error: {error_message(err)}\n")
    return EXIT_CODES[OutputError]


def _exit_now(code: int | str | None) -> None:
    """Flush what is buffered and end the process with ``code`` (SystemExit's meaning of it)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe or full disk (already reported), a closed stream.
        with contextlib.suppress(OSError, ValueError, OutputError):
            stream.flush()
    os._exit(code or 0)
